//===- E8M0.h - power-of-two scales (e8m0) -------------------------------------===//
//
// pow2_ceil of attention-semantics.md section 2 (the scale of act_quant_fp8 and fp4_quant_e8m0), and the torch
// cast f32 -> float8_e8m0fnu that tiny-model-harness.md uses for the engram table scales.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_NUMERICS_E8M0_H
#define DSA_NUMERICS_E8M0_H

#include <cstdint>

namespace dsa::numerics {

/// pow2_ceil(v) for a positive normal f32: 2^e where e is v's unbiased exponent, plus one when any mantissa bit
/// is set. Bit-exact (no float log2). Precondition: v is a positive normal f32 (not checked in release builds).
float pow2Ceil(float v);

/// torch's cast f32 -> float8_e8m0fnu: sign ignored, keep the exponent field e and add one when
/// guard && (round || sticky || e > 0) (guard = mantissa bit 22, round = bit 21, sticky = bits 20..0).
/// Returns the e8m0 code (the biased exponent); 0 encodes 2^-127. NaN/inf map to code 0xFF (NaN).
uint8_t f32ToE8M0TorchBits(float v);
/// The f32 value of an e8m0 code: 2^(code-127); code 0xFF is NaN. 2^-127 is an f32 denormal (exact).
float e8m0BitsToF32(uint8_t code);

} // namespace dsa::numerics

#endif
