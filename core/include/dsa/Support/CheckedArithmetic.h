//===- CheckedArithmetic.h - overflow-checked int64 size and index arithmetic (MLIR-free core) ----------------===//
//
// Sizes and positions that come from runtime values or files (start_pos, block sizes, dimensions of a golden) are
// combined with these instead of the plain operators, so that an impossible value becomes an error naming it rather
// than a wrapped (undefined) result that indexes out of bounds. Each returns std::nullopt on overflow.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_SUPPORT_CHECKEDARITHMETIC_H
#define DSA_SUPPORT_CHECKEDARITHMETIC_H

#include <cstdint>
#include <optional>

namespace dsa {

/// a + b, or nullopt when it does not fit in int64.
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// a * b, or nullopt when it does not fit in int64.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// ceil(n / d) for n >= 0 and d >= 1, without forming n + d - 1 (which overflows for a huge d).
inline int64_t ceilDivNonNegative(int64_t n, int64_t d) { return n == 0 ? 0 : (n - 1) / d + 1; }

/// (a + b) mod m for a, b >= 0 and m >= 1, without forming a + b.
inline int64_t addMod(int64_t a, int64_t b, int64_t m) {
  const int64_t x = a % m, y = b % m;
  return x >= m - y ? x - (m - y) : x + y;
}

} // namespace dsa

#endif // DSA_SUPPORT_CHECKEDARITHMETIC_H
