//===- BF16.h - bfloat16 rounding ------------------------------------------===//
//
// bf16(v) of attention-semantics.md: round an f32 to bfloat16 with round-to-nearest-even and back.
// NaN stays NaN (quiet), +-inf stays +-inf, values that round past the largest bf16 become +-inf (IEEE RNE
// overflow), f32 denormals are rounded like any other value (no flush to zero).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_NUMERICS_BF16_H
#define DSA_NUMERICS_BF16_H

#include <cstdint>

namespace dsa::numerics {

/// The bf16 bit pattern nearest to v (RNE). NaN maps to a quiet NaN with v's sign.
uint16_t f32ToBf16Bits(float v);
/// The f32 value of a bf16 bit pattern (exact).
float bf16BitsToF32(uint16_t bits);
/// bf16(v): round to bf16 with RNE and widen back to f32.
float roundBf16(float v);

} // namespace dsa::numerics

#endif
