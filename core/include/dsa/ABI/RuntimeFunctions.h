//===- RuntimeFunctions.h - C functions that code compiled by dsa-to-cpu calls (MLIR-free) ---===//
//
// Besides dsa_cpu_fail (RuntimeErrors.h), code lowered by `dsa-to-cpu` calls the functions declared here. They live
// in the MLIR-free CPU runtime (runtime/cpu/TopkRuntime.cpp, library DSACPURuntime): the JIT (compiler/lib/Backend/CPU) binds
// them in its symbol map, and an AOT step library links them in statically (libDSACPURuntime.a + libDSANumerics.a),
// so a step library needs nothing from the process that loads it.
//
// The IR declares `func.func private @dsa_cpu_topk_set(memref<?x?xf32>, i64, memref<?x?xi64>) -> i32` with
// `llvm.emit_c_interface`; the LLVM lowering defines a wrapper of that name in the compiled module which passes the
// two memref descriptors BY POINTER to `_mlir_ciface_dsa_cpu_topk_set`, the symbol the runtime provides.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_ABI_RUNTIMEFUNCTIONS_H
#define DSA_ABI_RUNTIMEFUNCTIONS_H

#include <cstdint>

namespace dsa::abi {

/// The function the IR declares (dsa.indexer_topk and dsa.select_candidate_blocks call it).
inline constexpr const char *kTopkSymbol = "dsa_cpu_topk_set";
/// The symbol the runtime defines for it (MLIR's C interface: `_mlir_ciface_` + name).
inline constexpr const char *kTopkEntrySymbol = "_mlir_ciface_dsa_cpu_topk_set";

/// A rank-2 memref descriptor as MLIR lays it out (allocated and aligned pointers, offset, sizes, strides; offset
/// and strides in elements).
struct MemRefF32Rank2 {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
};
struct MemRefI64Rank2 {
  int64_t *allocated;
  int64_t *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
};

/// The torch-CPU top-k index SET of every row (attention-semantics.md section 9; tie_order torch_cpu): for each
/// row r of `values` [rows, n] (row-major, contiguous), out[r*k .. r*k + k) receives the k indices that torch's CPU
/// topk(k, largest=True) returns for that row, sorted ascending (dsa::numerics::torchCpuTopkSet: the libstdc++
/// partial_sort / nth_element with torch's comparator, so ties among equal values fall exactly as in the
/// reference). Returns 0 on success, 1 on bad arguments (rows < 0, n < 0, k outside [0, n], a null pointer while
/// there is data), in which case `out` is left as it was.
int32_t topkSetRows(const float *values, int64_t rows, int64_t n, int64_t k, int64_t *out);

} // namespace dsa::abi

extern "C" {

/// The C-interface entry of `dsa_cpu_topk_set(values, k, picks)`: values f32 [rows, n], picks i64 [rows, k] (any
/// strides), each picks row the ascending top-k set of the values row (topkSetRows). Returns 0 on success, 1 when
/// a descriptor is null, picks is not [rows, k], or topkSetRows rejects the arguments (picks is then untouched).
int32_t _mlir_ciface_dsa_cpu_topk_set(const dsa::abi::MemRefF32Rank2 *values, int64_t k,
                                      dsa::abi::MemRefI64Rank2 *picks);

} // extern "C"

#endif
