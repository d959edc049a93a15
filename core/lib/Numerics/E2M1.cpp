//===- E2M1.cpp - fp4 e2m1 rounding ----------------------------------------===//
//
// The scalar conversions are inline in E2M1.h; this file holds the array form.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Numerics/E2M1.h"

namespace dsa::numerics {

void roundE2M1InPlace(float *data, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    data[i] = roundE2M1(data[i]);
}

} // namespace dsa::numerics
