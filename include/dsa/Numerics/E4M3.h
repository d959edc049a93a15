//===- E4M3.h - float8_e4m3fn rounding --------------------------------------===//
//
// e4m3 (float8_e4m3fn) rounding of attention-semantics.md section 2: RNE onto the e4m3fn grid (1 sign, 4 exponent
// bits with bias 7, 3 mantissa bits; max 448, no infinities, subnormals down to 2^-9), saturating to +-448.
// NaN maps to the e4m3fn NaN code (0x7F / 0xFF).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_NUMERICS_E4M3_H
#define DSA_NUMERICS_E4M3_H

#include <cstdint>

namespace dsa::numerics {

/// Largest finite e4m3fn magnitude.
inline constexpr float kE4M3Max = 448.0f;

/// The e4m3fn code nearest to v (RNE, saturating to +-448; |v| below 2^-10 rounds to a signed zero).
uint8_t f32ToE4M3Bits(float v);
/// The f32 value of an e4m3fn code (exact; 0x7F/0xFF are NaN).
float e4m3BitsToF32(uint8_t bits);
/// e4m3(v): round to e4m3fn (RNE, saturating) and widen back to f32.
float roundE4M3(float v);

} // namespace dsa::numerics

#endif
