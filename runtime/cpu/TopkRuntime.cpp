//===- TopkRuntime.cpp - the top-k set called by code compiled by dsa-to-cpu (MLIR-free) -------------------===//
//
// core/include/dsa/ABI/RuntimeFunctions.h: one call of dsa::numerics::torchCpuTopkSet per row. The tie order among
// equal values is the one the reference's libstdc++ algorithms leave (section 9), so it is never re-implemented
// in the IR.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/ABI/RuntimeFunctions.h"

#include "dsa/Numerics/TopK.h"

#include <vector>

namespace dsa::abi {

int32_t topkSetRows(const float *values, int64_t rows, int64_t n, int64_t k, int64_t *out) {
  if (rows < 0 || n < 0 || k < 0 || k > n)
    return 1;
  if (rows == 0 || k == 0)
    return 0;
  if (values == nullptr || out == nullptr)
    return 1;
  // Every row is computed before anything is written, so a failure leaves `out` untouched.
  std::vector<int64_t> picks(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r) {
    Result<std::vector<int64_t>> set = numerics::torchCpuTopkSet(values + r * n, n, k);
    if (!set || static_cast<int64_t>(set->size()) != k)
      return 1;
    for (int64_t j = 0; j < k; ++j)
      picks[static_cast<size_t>(r * k + j)] = (*set)[static_cast<size_t>(j)];
  }
  for (size_t i = 0; i < picks.size(); ++i)
    out[i] = picks[i];
  return 0;
}

} // namespace dsa::abi

extern "C" int32_t _mlir_ciface_dsa_cpu_topk_set(const dsa::abi::MemRefF32Rank2 *values, int64_t k,
                                                 dsa::abi::MemRefI64Rank2 *picks) {
  if (values == nullptr || picks == nullptr)
    return 1;
  const int64_t rows = values->sizes[0], n = values->sizes[1];
  if (rows < 0 || n < 0 || k < 0 || k > n || picks->sizes[0] != rows || picks->sizes[1] != k)
    return 1;
  if (rows == 0 || k == 0)
    return 0;
  // Gather into contiguous rows (the compiled code passes identity layouts; the strides are honoured anyway).
  std::vector<float> dense(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j)
      dense[static_cast<size_t>(r * n + j)] =
          values->aligned[values->offset + r * values->strides[0] + j * values->strides[1]];
  std::vector<int64_t> out(static_cast<size_t>(rows * k));
  if (int32_t rc = dsa::abi::topkSetRows(dense.data(), rows, n, k, out.data()); rc != 0)
    return rc;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j)
      picks->aligned[picks->offset + r * picks->strides[0] + j * picks->strides[1]] =
          out[static_cast<size_t>(r * k + j)];
  return 0;
}
