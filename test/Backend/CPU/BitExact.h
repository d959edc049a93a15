//===- BitExact.h - bit-identical tensor comparison for the CPU backend tests --===//
//
// The CPU backend accumulates in the interpreter's order, so its tests require bit-identical results: the same
// element type and shape, float elements with the same bit pattern (any NaN equals any NaN), integers equal.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_TEST_BACKEND_CPU_BITEXACT_H
#define DSA_TEST_BACKEND_CPU_BITEXACT_H

#include "dsa/Core/Tensor.h"
#include "dsa/Numerics/Bits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace dsa::test {

/// Success iff `got` and `want` are bit-identical; the failure message counts the differing elements and shows the
/// first one and the largest absolute float difference.
inline ::testing::AssertionResult sameBits(const dsa::Tensor &got, const dsa::Tensor &want) {
  if (got.elementType() != want.elementType())
    return ::testing::AssertionFailure() << "element type " << dsa::elementTypeName(got.elementType()) << " vs "
                                         << dsa::elementTypeName(want.elementType());
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << "shape " << got.typeString() << " vs " << want.typeString();
  int64_t mismatches = 0;
  double maxAbs = 0;
  std::ostringstream first;
  for (int64_t i = 0; i < want.numElements(); ++i) {
    bool same;
    if (want.isFloat()) {
      float a = got.floats()[i], b = want.floats()[i];
      same = (std::isnan(a) && std::isnan(b)) || numerics::f32Bits(a) == numerics::f32Bits(b);
      if (!same) {
        maxAbs = std::fmax(maxAbs, std::fabs(static_cast<double>(a) - static_cast<double>(b)));
        if (mismatches == 0)
          first << "element " << i << ": got " << a << " want " << b;
      }
    } else {
      same = got.ints()[i] == want.ints()[i];
      if (!same && mismatches == 0)
        first << "element " << i << ": got " << got.ints()[i] << " want " << want.ints()[i];
    }
    mismatches += same ? 0 : 1;
  }
  if (mismatches)
    return ::testing::AssertionFailure() << mismatches << " of " << want.numElements()
                                         << " elements differ (max |diff| " << maxAbs << "); first: " << first.str();
  return ::testing::AssertionSuccess();
}

} // namespace dsa::test

#endif
