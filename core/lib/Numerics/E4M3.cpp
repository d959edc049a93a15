//===- E4M3.cpp - float8_e4m3fn rounding -----------------------------------===//
//
// The scalar conversions are inline in E4M3.h; this file holds the array form.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Numerics/E4M3.h"

namespace dsa::numerics {

void roundE4M3InPlace(float *data, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    data[i] = roundE4M3(data[i]);
}

} // namespace dsa::numerics
