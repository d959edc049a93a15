//===- TestSupport.h - helpers shared by the GoogleTest unit tests -------------------------------------------===//
//
// Header-only helpers that several test/unit/*Test.cpp files used to repeat: the golden file paths, a cached
// loader of the tiny golden, file reading, a substring check, shape helpers and small tensor builders. None of
// them computes an expected value; they only locate, load or build test inputs.
//
// Requires the DSA_TEST_DATA_DIR definition that test/unit/CMakeLists.txt gives every unit test (the source
// directory test/Golden). Not a *Test.cpp file, so the CMake glob does not turn it into an executable.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_TEST_UNIT_TESTSUPPORT_H
#define DSA_TEST_UNIT_TESTSUPPORT_H

#include "dsa/Golden/GoldenFile.h"
#include "dsa/Core/Tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#ifndef DSA_TEST_DATA_DIR
#error "DSA_TEST_DATA_DIR must name the source directory test/Golden (test/unit/CMakeLists.txt defines it)"
#endif

namespace dsa::test {

//===----------------------------------------------------------------------------------------------------------===//
// Golden files
//===----------------------------------------------------------------------------------------------------------===//

/// The authoritative tiny golden (test/Golden/ds41_tiny_golden.json; tiny-model-harness.md): always present.
inline const std::string kTinyGoldenPath = DSA_TEST_DATA_DIR "/ds41_tiny_golden.json";

/// The debug copy of the tiny golden with every capture stored in full (stride 1), outside the repository at
/// ../shared/golden/ds41_tiny_golden_full.json. Optional: a test that reads it must GTEST_SKIP when
/// fileExists(kFullGoldenPath) is false.
inline const std::string kFullGoldenPath = DSA_TEST_DATA_DIR "/../../../shared/golden/ds41_tiny_golden_full.json";

/// True when `path` can be opened for reading.
inline bool fileExists(const std::string &path) { return std::ifstream(path).good(); }

/// The whole content of the file at `path` (empty when it cannot be read).
inline std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The tiny golden (kTinyGoldenPath), loaded once per test executable. A load error is reported as a test
/// failure with the reader's message and then aborts the executable: no test can run without the golden.
inline const ::dsa::golden::GoldenFile &golden() {
  static const ::dsa::golden::GoldenFile *g = [] {
    auto r = ::dsa::golden::GoldenFile::load(kTinyGoldenPath);
    if (!r) {
      ADD_FAILURE() << r.error();
      std::abort();
    }
    return new ::dsa::golden::GoldenFile(r.take());
  }();
  return *g;
}

//===----------------------------------------------------------------------------------------------------------===//
// Strings and shapes
//===----------------------------------------------------------------------------------------------------------===//

/// True when `part` occurs in `s` (for checking that an error message names the right thing).
inline bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

/// `shape` without its leading dims of size 1 (the golden's captures carry a batch dim of 1; all leading ones are
/// dropped, so [1,1,4] becomes [4] and [1] becomes []).
inline std::vector<int64_t> dropBatch(const std::vector<int64_t> &shape) {
  size_t i = 0;
  while (i < shape.size() && shape[i] == 1)
    ++i;
  return std::vector<int64_t>(shape.begin() + static_cast<long>(i), shape.end());
}

//===----------------------------------------------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------------------------------------------===//

/// +infinity as f32 (masked scores, the -inf initial score state).
/// A hand-made capture `name` of `shape` holding the whole tensor `values`, sampled at `stride` (`data` =
/// values[::stride]), with ck = sum_i values[i] * (i+1) over the whole tensor (the harness doc's rule).
inline ::dsa::golden::Capture handCapture(const std::string &name, std::vector<int64_t> shape,
                                          const std::vector<double> &values, int64_t stride = 1,
                                          bool isInteger = false) {
  ::dsa::golden::Capture c;
  c.name = name;
  c.shape = std::move(shape);
  c.n = static_cast<int64_t>(values.size());
  c.stride = stride;
  c.isInteger = isInteger;
  for (size_t i = 0; i < values.size(); ++i) {
    c.ck += values[i] * static_cast<double>(i + 1);
    if (static_cast<int64_t>(i) % stride == 0)
      c.data.push_back(values[i]);
  }
  return c;
}

inline constexpr float kInf = std::numeric_limits<float>::infinity();

/// Tensors of the given shape and values, built with Tensor::fromFloats / Tensor::fromInts (values are rounded to
/// bf16 by fromFloats for bf16; the shape's element count must match the number of values).
inline ::dsa::Tensor bf16(std::vector<int64_t> shape, std::vector<float> v) {
  return ::dsa::Tensor::fromFloats(::dsa::ElementType::BF16, std::move(shape), std::move(v));
}
inline ::dsa::Tensor f32(std::vector<int64_t> shape, std::vector<float> v) {
  return ::dsa::Tensor::fromFloats(::dsa::ElementType::F32, std::move(shape), std::move(v));
}
inline ::dsa::Tensor i1(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return ::dsa::Tensor::fromInts(::dsa::ElementType::I1, std::move(shape), std::move(v));
}
inline ::dsa::Tensor i32(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return ::dsa::Tensor::fromInts(::dsa::ElementType::I32, std::move(shape), std::move(v));
}
inline ::dsa::Tensor i64(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return ::dsa::Tensor::fromInts(::dsa::ElementType::I64, std::move(shape), std::move(v));
}

/// A float tensor `t`'s values under a new `shape` of the same element count, in t's element type.
inline ::dsa::Tensor reshaped(const ::dsa::Tensor &t, std::vector<int64_t> shape) {
  return ::dsa::Tensor::fromFloats(t.elementType(), std::move(shape), t.floatVector());
}

} // namespace dsa::test

#endif // DSA_TEST_UNIT_TESTSUPPORT_H
