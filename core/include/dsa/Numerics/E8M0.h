//===- E8M0.h - power-of-two scales (e8m0) -------------------------------------===//
//
// pow2_ceil of attention-semantics.md section 2 (the scale of act_quant_fp8 and fp4_quant_e8m0), and the torch
// cast f32 -> float8_e8m0fnu that tiny-model-harness.md ("Weights: regenerated") uses for the engram table scales.
// Both work on the IEEE fields of the f32, never through a float log2 (which rounds wrongly near powers of two).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_NUMERICS_E8M0_H
#define DSA_NUMERICS_E8M0_H

#include "dsa/Numerics/Bits.h"

#include <cstdint>

namespace dsa::numerics {

/// pow2Ceil for the inputs outside the fast path (zero, denormal, inf, NaN); see pow2Ceil.
float pow2CeilSlow(float v);

/// pow2_ceil(v) for a positive normal f32: 2^e where e is v's unbiased exponent, plus one when any mantissa bit
/// is set (so exact powers of two map to themselves and values above 2^127 give +inf). Bit-exact.
/// The spec only needs positive normal v (the quantisers' amax floors guarantee it); for completeness the function
/// is total: a negative v gives -pow2Ceil(-v), +-0 stays +-0, a denormal gives the smallest power of two >= it
/// (possibly denormal), +-inf stays +-inf, NaN stays NaN.
inline float pow2Ceil(float v) {
  const uint32_t u = f32Bits(v);
  if ((u & 0x7F800000u) - 0x00800000u < 0x7F000000u) { // exponent field 1..254: a normal number
    uint32_t r = u & 0xFF800000u;                       // sign and exponent: 2^e
    if (u & 0x007FFFFFu)
      r += 0x00800000u; // 2^(e+1); from 2^127 this carries into the inf pattern, as it should
    return f32FromBits(r);
  }
  return pow2CeilSlow(v);
}

/// torch's cast f32 -> float8_e8m0fnu: sign ignored, keep the exponent field e and add one when
/// guard && (round || sticky || e > 0) (guard = mantissa bit 22, round = bit 21, sticky = bits 20..0).
/// Returns the e8m0 code (the biased exponent); 0 encodes 2^-127 (so +-0 maps to 2^-127). NaN and +-inf map to
/// code 0xFF (NaN), and so do finite values that round up past 2^127 (exponent field 254 with guard set).
uint8_t f32ToE8M0TorchBits(float v);
/// The f32 value of an e8m0 code: 2^(code-127); code 0xFF is NaN. 2^-127 is an f32 denormal (exact).
float e8m0BitsToF32(uint8_t code);

} // namespace dsa::numerics

#endif
