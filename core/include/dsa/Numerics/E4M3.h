//===- E4M3.h - float8_e4m3fn rounding --------------------------------------===//
//
// e4m3 (float8_e4m3fn) rounding of attention-semantics.md section 2: RNE onto the e4m3fn grid (1 sign, 4 exponent
// bits with bias 7, 3 mantissa bits; max 448, no infinities, subnormals m * 2^-9 for m = 1..7), saturating to +-448.
//   code layout: bit 7 sign, bits 6..3 exponent e, bits 2..0 mantissa m;
//   value: e == 0 -> m * 2^-9; else (1 + m/8) * 2^(e-7); 0x7F / 0xFF are NaN (the only non-finite codes).
// Rounding (f32 -> e4m3): ties to the even code (even m), so |v| <= 2^-10 gives a zero with v's sign;
// |v| >= 448 (and +-inf) saturates to +-448 (codes 0x7E / 0xFE); NaN gives the NaN code with v's sign.
// These are total functions, inline so that per-element loops pay no call.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_NUMERICS_E4M3_H
#define DSA_NUMERICS_E4M3_H

#include "dsa/Numerics/Bits.h"

#include <cstdint>

namespace dsa::numerics {

/// Largest finite e4m3fn magnitude.
inline constexpr float kE4M3Max = 448.0f;

/// The e4m3fn code nearest to v (RNE, saturating to +-448; |v| <= 2^-10 rounds to a signed zero).
inline uint8_t f32ToE4M3Bits(float v) {
  const uint32_t u = f32Bits(v);
  const uint32_t sign = (u >> 24) & 0x80u;
  uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) // NaN
    return static_cast<uint8_t>(sign | 0x7Fu);
  if (a >= 0x43E00000u) // >= 448 (1.75 * 2^8), inf included: saturate
    return static_cast<uint8_t>(sign | 0x7Eu);
  if (a >= 0x3C800000u) { // >= 2^-6: normal e4m3 range. Keep 3 of the 23 mantissa bits, RNE on the other 20.
    a += 0x7FFFFu + ((a >> 20) & 1u);
    // (a >> 20) is (f32 exponent field << 3 | m); the exponent biases differ by 127 - 7 = 120.
    const uint32_t code = (a >> 20) - (120u << 3);
    return static_cast<uint8_t>(sign | (code > 0x7Eu ? 0x7Eu : code));
  }
  if (a <= 0x3A800000u) // <= 2^-10: half the smallest subnormal or less (the tie goes to the even code 0)
    return static_cast<uint8_t>(sign);
  // Subnormal range (2^-10, 2^-6): |v| / 2^-9 = sig * 2^(e - 141) with e the f32 exponent field in [117, 120];
  // round sig >> (141 - e) to nearest, ties to even. The result 8 is code 0x08 = 2^-6, the smallest normal.
  const uint32_t sig = (a & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 141u - (a >> 23);
  const uint32_t q = (sig + (1u << (shift - 1)) - 1u + ((sig >> shift) & 1u)) >> shift;
  return static_cast<uint8_t>(sign | q);
}

/// The f32 value of an e4m3fn code (exact; 0x7F/0xFF are quiet NaNs with the code's sign).
inline float e4m3BitsToF32(uint8_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x80u) << 24;
  const uint32_t e = (bits >> 3) & 0xFu, m = bits & 0x7u;
  if (e == 0xFu && m == 0x7u)
    return f32FromBits(sign | 0x7FC00000u);
  if (e == 0)
    return f32FromBits(sign | f32Bits(static_cast<float>(m) * 0x1p-9f));
  return f32FromBits(sign | ((e + 120u) << 23) | (m << 20));
}

/// e4m3(v): round to e4m3fn (RNE, saturating) and widen back to f32.
inline float roundE4M3(float v) { return e4m3BitsToF32(f32ToE4M3Bits(v)); }

/// roundE4M3 on data[0..n) in place (n <= 0 does nothing).
void roundE4M3InPlace(float *data, int64_t n);

} // namespace dsa::numerics

#endif
