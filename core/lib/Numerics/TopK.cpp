//===- TopK.cpp - torch CPU top-k index set --------------------------------===//
//
// attention-semantics.md section 9. Mirrors torch's CPU topk loop for largest=True: the same pair type (value
// widened to double, the accumulation type torch uses for float), the same fill order, the same comparator and
// the same libstdc++ algorithm per branch. Do not "simplify" any of these: the tie order depends on all of them.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Numerics/TopK.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace dsa::numerics {

Result<std::vector<int64_t>> torchCpuTopkSet(const float *values, int64_t n, int64_t k) {
  if (n < 0)
    return makeError("torch_cpu_topk: n must be >= 0, got " + std::to_string(n));
  if (k < 0 || k > n)
    return makeError("torch_cpu_topk: k must be in [0, n=" + std::to_string(n) + "], got " + std::to_string(k));
  if (n > 0 && values == nullptr)
    return makeError("torch_cpu_topk: values is null but n is " + std::to_string(n));
  if (k == 0)
    return std::vector<int64_t>{};

  using Elem = std::pair<double, int64_t>;
  std::vector<Elem> queue(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    queue[j].first = values[j];
    queue[j].second = j;
  }
  auto comp = [](const Elem &x, const Elem &y) -> bool {
    return (std::isnan(x.first) && !std::isnan(y.first)) || (x.first > y.first);
  };
  if (k * 64 <= n)
    std::partial_sort(queue.begin(), queue.begin() + k, queue.end(), comp);
  else
    std::nth_element(queue.begin(), queue.begin() + (k - 1), queue.end(), comp);

  std::vector<int64_t> set(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j)
    set[j] = queue[j].second;
  std::sort(set.begin(), set.end());
  return set;
}

} // namespace dsa::numerics
