//===- Lowering.h - shared front of the CPU JIT and AOT paths (private) --------===//
#ifndef DSA_LIB_BACKEND_CPU_LOWERING_H
#define DSA_LIB_BACKEND_CPU_LOWERING_H

#include "dsa/Backend/CPU/CPUModule.h"
#include "dsa/Conversion/CPUTarget.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace dsa::cpu {

/// A module lowered by --dsa-cpu-pipeline (LLVM dialect) with the signatures of its callable functions.
struct LoweredModule {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<FunctionSignature> functions;
  /// Per function (as `functions`): the arguments that are a dsa.attention's compressed-KV or index-key cache
  /// (its last two `state` operands) in the source module: lowerForCPU makes them writable (updated in place).
  std::vector<std::vector<int64_t>> cacheArgs;
  std::string text; ///< the lowered module, printed
  /// What lowerForCPU compiled for (resolveCompileTarget); its functions carry it as target_cpu / target_features.
  mlir::dsa::CPUTarget target;
};

/// The target of `options`: options.targetCpu, else $DSA_CPU when set and not empty, else the host
/// (mlir::dsa::resolveCPUTarget). Errors name an unknown CPU and where the name came from.
Result<mlir::dsa::CPUTarget> resolveCompileTarget(const CPUCompileOptions &options);

/// Registers in `ctx` the dialects, interface models and LLVM IR translations the CPU paths need.
void registerCPUBackendDialects(mlir::MLIRContext *ctx);

/// What lowerForCPU does before its pipeline, shared with the GPU backend (compiler/lib/Backend/GPU): captures the signatures
/// (and state bindings) of `module`'s public functions, then clones it with its arguments marked non-writable and,
/// with `probesAsResults`, dsa.attention decomposed and the probes turned into results. `backend` names the backend
/// in the error for a type the calling convention cannot pass. `text` stays empty.
Result<LoweredModule> prepareModule(mlir::ModuleOp module, bool probesAsResults, const std::string &backend = "CPU");

/// Captures the signatures (and state bindings) of `module`'s public functions, then lowers a clone: decomposition
/// and probes kept as results (options.probesAsResults), arguments marked non-writable except the caches
/// (LoweredModule::cacheArgs: writable, updated in place), --dsa-cpu-pipeline (options.parallel) with the results
/// that are an argument's buffer dropped (FunctionSignature::writableArgs / inPlace filled in), every function
/// targeting resolveCompileTarget(options). The pipeline itself fails if a bf16 conversion is left for LLVM
/// (dsa-cpu-check-bf16, and dsa-cpu-bf16-as-i16 checks again before it removes bf16 from the module), and the JIT
/// and AOT paths check the LLVM IR once more before code generation (backend::checkNoBf16Conversions). Errors carry
/// the pipeline's diagnostics.
Result<LoweredModule> lowerForCPU(mlir::ModuleOp module, const CPUCompileOptions &options);

/// The OpenMP runtime for parallel code: $DSA_OPENMP_LIB, else the first existing of the known paths; an error
/// listing them when none exists.
Result<std::string> findOpenMPRuntime();

} // namespace dsa::cpu

#endif
