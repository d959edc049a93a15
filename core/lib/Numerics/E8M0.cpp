//===- E8M0.cpp - power-of-two scales (e8m0) -------------------------------===//
//
// pow2Ceil's rare inputs and the torch cast to float8_e8m0fnu (E8M0.h), all on the IEEE fields.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Numerics/E8M0.h"

namespace dsa::numerics {

float pow2CeilSlow(float v) {
  const uint32_t u = f32Bits(v);
  const uint32_t sign = u & 0x80000000u;
  const uint32_t mag = u & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) // NaN: keep it, quiet
    return f32FromBits(u | 0x00400000u);
  if (mag == 0x7F800000u || mag == 0) // +-inf, +-0
    return v;
  if (mag >= 0x00800000u) { // normal (callers normally take the inline fast path)
    uint32_t r = u & 0xFF800000u;
    if (u & 0x007FFFFFu)
      r += 0x00800000u;
    return f32FromBits(r);
  }
  // Denormal: the value is mag * 2^-149, so the answer is the smallest power of two >= mag, as an integer, times
  // 2^-149. That integer's pattern is the answer's pattern; 2^23 is the pattern of 2^-126, the smallest normal.
  uint32_t p = 1;
  while (p < mag)
    p <<= 1;
  return f32FromBits(sign | p);
}

uint8_t f32ToE8M0TorchBits(float v) {
  const uint32_t u = f32Bits(v);
  const uint32_t e = (u >> 23) & 0xFFu;
  if (e == 0xFFu) // NaN and +-inf
    return 0xFF;
  const bool guard = (u >> 22) & 1u;
  const bool round = (u >> 21) & 1u;
  const bool sticky = (u & 0x001FFFFFu) != 0;
  const uint32_t code = e + ((guard && (round || sticky || e > 0)) ? 1u : 0u);
  return static_cast<uint8_t>(code); // e == 254 rounding up gives 0xFF, the NaN code
}

float e8m0BitsToF32(uint8_t code) {
  if (code == 0xFF)
    return f32FromBits(0x7FC00000u);
  if (code == 0)
    return f32FromBits(0x00400000u); // 2^-127, denormal
  return f32FromBits(static_cast<uint32_t>(code) << 23);
}

} // namespace dsa::numerics
