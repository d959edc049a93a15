//===- BF16.h - bfloat16 rounding ------------------------------------------===//
//
// bf16(v) of attention-semantics.md (notation, section 2): round an f32 to bfloat16 with round-to-nearest-even
// and back. bfloat16 is the top 16 bits of an f32 (1 sign, 8 exponent, 7 mantissa bits).
//   - ties go to the even bf16 pattern (last kept mantissa bit 0);
//   - values that round past the largest finite bf16 (0x7F7F, about 3.39e38) become +-inf (IEEE RNE overflow:
//     f32 values >= 0x7F7F8000 in magnitude);
//   - NaN stays NaN: the result is a quiet NaN with v's sign and v's top payload bits (a signalling NaN such as
//     0x7F800001 would otherwise truncate to inf);
//   - +-inf and +-0 are kept; f32 denormals are rounded like any other value (no flush to zero).
// These are total functions (defined for every input), inline so that per-element loops pay no call.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_NUMERICS_BF16_H
#define DSA_NUMERICS_BF16_H

#include "dsa/Numerics/Bits.h"

#include <cstdint>

namespace dsa::numerics {

/// The bf16 bit pattern nearest to v (RNE). NaN maps to a quiet NaN with v's sign.
inline uint16_t f32ToBf16Bits(float v) {
  uint32_t u = f32Bits(v);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) // NaN: keep sign and top payload, force the quiet bit.
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  // Adding 0x7FFF plus the lowest kept bit rounds the dropped 16 bits to nearest, ties to even; a carry out of
  // the mantissa bumps the exponent (and turns the largest finite values into inf), which is exactly RNE.
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// The f32 value of a bf16 bit pattern (exact).
inline float bf16BitsToF32(uint16_t bits) { return f32FromBits(static_cast<uint32_t>(bits) << 16); }

/// bf16(v): round to bf16 with RNE and widen back to f32.
inline float roundBf16(float v) { return bf16BitsToF32(f32ToBf16Bits(v)); }

/// roundBf16 on data[0..n) in place (n <= 0 does nothing).
void roundBf16InPlace(float *data, int64_t n);

} // namespace dsa::numerics

#endif
