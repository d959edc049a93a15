//===- E2M1.h - fp4 e2m1 rounding ---------------------------------------------===//
//
// e2m1 rounding of attention-semantics.md section 2: onto the grid {0, 0.5, 1, 1.5, 2, 3, 4, 6} by magnitude, ties
// to the EVEN code (codes 0..7 in grid order: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4,
// 5 -> 4), magnitudes above 6 saturate to 6, the sign is kept (-0.25 -> -0).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_NUMERICS_E2M1_H
#define DSA_NUMERICS_E2M1_H

#include <cstdint>

namespace dsa::numerics {

/// The e2m1 code (bit 3 = sign, bits 2..0 = grid index) nearest to v, ties to the even code, saturating at 6.
uint8_t f32ToE2M1Bits(float v);
/// The f32 value of an e2m1 code (low 4 bits).
float e2m1BitsToF32(uint8_t code);
/// e2m1(v): round to the e2m1 grid and widen back to f32 (sign kept, also for zero).
float roundE2M1(float v);

} // namespace dsa::numerics

#endif
