//===- Bits.h - f32 <-> bit pattern helpers for the numerics headers --------===//
//
// Bit-exact reinterpretation of an IEEE-754 binary32 value. memcpy is the portable C++17 spelling of bit_cast;
// every compiler the project uses turns it into a register move, so these are free in hot loops.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_NUMERICS_BITS_H
#define DSA_NUMERICS_BITS_H

#include <cstdint>
#include <cstring>

namespace dsa::numerics {

/// The IEEE-754 binary32 bit pattern of v.
inline uint32_t f32Bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

/// The f32 whose IEEE-754 binary32 bit pattern is u.
inline float f32FromBits(uint32_t u) {
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

} // namespace dsa::numerics

#endif
