//===- DSAToGPU.h - the patterns of dsa-to-gpu ------------------------------------------------------------===//
//
// One conversion pattern per op family (compiler/lib/Conversion/DSAToGPU/DSAToGPU.cpp; docs/gpu-backend.md): each rewrites
// its op, on tensors, into run-time checks (dsa_cpu_fail), the buffers of its operands and results
// (bufferization.to_buffer / memref.alloc / bufferization.to_tensor restrict writable) and its kernel launches as
// calls of @__dsa_gpu_launch_<kernel> (dsa-gpu-launch-kernels makes them gpu.launch_func once upstream one-shot
// bufferization and ownership-based deallocation have run: --dsa-gpu-pipeline). The `dsa-to-gpu` pass
// (Passes.td) checks what it can lower first (a diagnostic names the op), then applies these patterns with
// configureDSAToGPUTarget's legality and declares the functions the new calls name.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CONVERSION_DSATOGPU_H
#define DSA_CONVERSION_DSATOGPU_H

#include "mlir/IR/Value.h"

#include "llvm/ADT/DenseMap.h"

#include <utility>

namespace mlir {
class ConversionTarget;
class Operation;
class RewritePatternSet;
} // namespace mlir

namespace mlir::dsa {

/// What the patterns share during one conversion: the device copy of each RoPE table per function ((function,
/// memref.global) -> the buffer, made at the table's first use in the function). The globals themselves are
/// created by the pass before the patterns run (a pattern creates nothing outside its op's block).
struct DSAToGPUState {
  llvm::DenseMap<std::pair<Operation *, Operation *>, Value> deviceTables;
};

/// The patterns of dsa-to-gpu: the dsa primitives (window-only and compressed), dsa.probe (dropped), and the upstream
/// tensor ops that need a kernel or a check (bf16 <-> f32 extf/truncf, two-input concat, leading-row extract_slice).
void populateDSAToGPUPatterns(RewritePatternSet &patterns, DSAToGPUState &state);

/// The legality these patterns establish: no dsa op, no tensor extf/truncf or concat, only clamped leading-row
/// slices; everything else (tensor.cast/dim/expand_shape/collapse_shape, arith.select of tensors, scalar ops) is
/// legal and left to bufferization.
void configureDSAToGPUTarget(ConversionTarget &target);

} // namespace mlir::dsa

#endif
