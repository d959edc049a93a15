//===- EmbeddedKernels.h - the kernel library of dsa-to-gpu (Kernels.mlir, embedded) -------------------------===//
//
// Kernels.mlir (plain gpu-dialect MLIR: one gpu.func per kernel family and the device helpers they call) is compiled
// into the dsa-to-gpu pass as a string (EmbedKernels.cmake). EmbeddedKernels parses it once per pass run and clones,
// on demand, a kernel and the helpers it calls (transitively) into the module's `gpu.module @dsa_kernels`.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CONVERSION_DSATOGPU_EMBEDDEDKERNELS_H
#define DSA_CONVERSION_DSATOGPU_EMBEDDEDKERNELS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <memory>

namespace mlir::dsa {

class EmbeddedKernels {
public:
  /// The symbol of the gpu.module the kernels are cloned into.
  static constexpr llvm::StringLiteral kModuleName = "dsa_kernels";

  /// Parses the embedded library and creates the (empty) `gpu.module @dsa_kernels` at the end of `module`. Errors
  /// (emitted on `module`): the library does not parse, or the module already has a symbol of that name.
  static FailureOr<std::unique_ptr<EmbeddedKernels>> create(ModuleOp module);

  /// The kernel `name` in the module's gpu.module, cloned from the library (with its helpers) at the first request.
  /// Asserts that the library has it (the lowering asks only for kernels of core's dsa/ABI/GpuKernels.def).
  gpu::GPUFuncOp kernel(StringRef name);

  /// Erases the gpu.module when no kernel was cloned; otherwise marks `module` as a gpu.container_module.
  void finish();

private:
  EmbeddedKernels(ModuleOp module, OwningOpRef<ModuleOp> library, gpu::GPUModuleOp kernels)
      : module_(module), library_(std::move(library)), kernels_(kernels) {}
  ModuleOp module_;
  OwningOpRef<ModuleOp> library_;
  gpu::GPUModuleOp kernels_;
};

} // namespace mlir::dsa

#endif
