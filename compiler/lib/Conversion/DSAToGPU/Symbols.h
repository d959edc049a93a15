//===- Symbols.h - the functions dsa-to-gpu's host code calls, shared by its passes --------------------------===//
//
// dsa-to-gpu leaves calls of private declarations that the passes after bufferization resolve
// (docs/gpu-backend.md "dsa-to-gpu, bufferization, deallocation"):
//   @__dsa_gpu_launch_<kernel>(grid x, y, z, kernel arguments...)   a kernel launch (dsa-gpu-launch-kernels)
//   @__dsa_gpu_host_topk(values, k, picks) -> i32                    the host top-k round trip (same pass)
// and calls of the runtime's functions: dsa_cpu_fail (RuntimeErrors.h), dsa_cpu_topk_set (RuntimeFunctions.h).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CONVERSION_DSATOGPU_SYMBOLS_H
#define DSA_CONVERSION_DSATOGPU_SYMBOLS_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::dsa {

inline constexpr llvm::StringLiteral kLaunchPrefix = "__dsa_gpu_launch_";
inline constexpr llvm::StringLiteral kHostTopkSymbol = "__dsa_gpu_host_topk";

/// Declares `func.func private @name(type)` at the start of `module` (with the C interface when `cInterface`) unless
/// it exists with that type; a symbol taken by something else is an error naming `what` it should have been
/// (conversion::declareRuntimeFunction, shared with dsa-to-cpu: ../Common/RuntimeDeclarations.h).
LogicalResult declareFunction(ModuleOp module, StringRef name, FunctionType type, StringRef what,
                              bool cInterface = false);

/// Declares the host top-k of the runtime (core/include/dsa/ABI/RuntimeFunctions.h):
/// `func.func private @dsa_cpu_topk_set(memref<?x?xf32>, i64, memref<?x?xi64>) -> i32 {llvm.emit_c_interface}`,
/// which the LLVM lowering turns into a call of `_mlir_ciface_dsa_cpu_topk_set` with the descriptors by pointer.
LogicalResult declareTopk(ModuleOp module);

} // namespace mlir::dsa

#endif
