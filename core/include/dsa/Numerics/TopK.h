//===- TopK.h - torch CPU top-k index set -------------------------------------===//
//
// attention-semantics.md section 9: the SET of indices torch's CPU topk(k, largest=True) returns. torch fills
// (value, index) pairs in index order (the value widened to its accumulation type, double for float) and, with
// comp(a, b) = (isnan(a) && !isnan(b)) || a > b, runs std::partial_sort(begin, begin+k, end) when k*64 <= n, else
// std::nth_element(begin, begin+k-1, end). Among equal values (the many -inf and zero scores) the set is whatever
// libstdc++ leaves in front; we call the same libstdc++ algorithms with the same comparator, so the set matches
// torch's bit for bit (golden/topk_tie_cases.json). NaN ranks above everything, +inf above every number.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_NUMERICS_TOPK_H
#define DSA_NUMERICS_TOPK_H

#include "dsa/Support/Result.h"

#include <cstdint>
#include <vector>

namespace dsa::numerics {

/// Which tie order a top-k implements. Only TorchCpu is the reference's.
enum class TopkTieOrder { TorchCpu };

/// The index set of torch.topk(values[0..n), k, largest=True) on CPU, sorted ascending (k indices in [0, n)).
/// k == 0 gives an empty set, k == n every index.
/// Errors: n < 0, k < 0, k > n, values null while n > 0.
Result<std::vector<int64_t>> torchCpuTopkSet(const float *values, int64_t n, int64_t k);

} // namespace dsa::numerics

#endif
