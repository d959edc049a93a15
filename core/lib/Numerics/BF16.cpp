//===- BF16.cpp - bfloat16 rounding ----------------------------------------===//
//
// The scalar conversions are inline in BF16.h; this file holds the array form.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Numerics/BF16.h"

namespace dsa::numerics {

void roundBf16InPlace(float *data, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    data[i] = roundBf16(data[i]);
}

} // namespace dsa::numerics
