//===- E2M1.h - fp4 e2m1 rounding ---------------------------------------------===//
//
// e2m1 rounding of attention-semantics.md section 2: onto the grid {0, 0.5, 1, 1.5, 2, 3, 4, 6} by magnitude, ties
// to the EVEN code (codes 0..7 in grid order: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4,
// 5 -> 4), magnitudes above 6 (and +-inf) saturate to 6, the sign is kept (-0.25 -> -0).
//   code layout: bit 3 sign, bits 2..0 the grid index (which is also the standard e2m1 exponent/mantissa layout).
// e2m1 has no NaN: f32ToE2M1Bits maps NaN to the zero code with NaN's sign, while roundE2M1 passes NaN through
// unchanged so that a NaN never silently becomes a number in a round trip.
// These are total functions, inline so that per-element loops pay no call.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_NUMERICS_E2M1_H
#define DSA_NUMERICS_E2M1_H

#include "dsa/Numerics/Bits.h"

#include <cstdint>

namespace dsa::numerics {

/// Largest e2m1 magnitude.
inline constexpr float kE2M1Max = 6.0f;

/// The e2m1 code (bit 3 = sign, bits 2..0 = grid index) nearest to v, ties to the even code, saturating at 6.
inline uint8_t f32ToE2M1Bits(float v) {
  const uint32_t u = f32Bits(v);
  const float a = f32FromBits(u & 0x7FFFFFFFu);
  // The grid index is the number of decision points below a. A tie belongs to the even neighbour: midpoints
  // below an odd code (0.25, 1.25, 2.5, 5) stay down (strict >), those below an even code (0.75, 1.75, 3.5) go up.
  const uint32_t code = static_cast<uint32_t>(a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) +
                        (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
  return static_cast<uint8_t>(((u >> 28) & 0x8u) | code);
}

/// The f32 value of an e2m1 code (low 4 bits; code 8 is -0).
inline float e2m1BitsToF32(uint8_t code) {
  static constexpr float kGrid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float mag = kGrid[code & 0x7u];
  return (code & 0x8u) ? -mag : mag;
}

/// e2m1(v): round to the e2m1 grid and widen back to f32 (sign kept, also for zero; NaN stays NaN).
inline float roundE2M1(float v) {
  if (v != v)
    return v;
  return e2m1BitsToF32(f32ToE2M1Bits(v));
}

/// roundE2M1 on data[0..n) in place (n <= 0 does nothing).
void roundE2M1InPlace(float *data, int64_t n);

} // namespace dsa::numerics

#endif
