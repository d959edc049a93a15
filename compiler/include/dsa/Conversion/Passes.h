//===- Passes.h - dsa conversion passes --------------------------------------===//
#ifndef DSA_CONVERSION_PASSES_H
#define DSA_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

#include <string>

namespace mlir {
class DialectRegistry;
namespace arith { class ArithDialect; }
namespace linalg { class LinalgDialect; }
namespace tensor { class TensorDialect; }
namespace math { class MathDialect; }
namespace scf { class SCFDialect; }
namespace gpu { class GPUDialect; }
namespace memref { class MemRefDialect; }
namespace bufferization { class BufferizationDialect; }
namespace func { class FuncDialect; }
namespace LLVM { class LLVMDialect; }
namespace index { class IndexDialect; }
} // namespace mlir

namespace mlir::dsa {

#define GEN_PASS_DECL
#include "dsa/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dsa/Conversion/Passes.h.inc"

/// Registers --dsa-cpu-pipeline (compiler/lib/Conversion/DSAToCPU) and every dsa pass it runs (Passes.td: dsa-to-cpu,
/// dsa-cpu-drop-in-place-results, dsa-cpu-strided-copies-to-linalg, dsa-cpu-expand-bf16, dsa-cpu-set-target,
/// dsa-cpu-check-bf16, dsa-cpu-bf16-as-i16; with dsa/Dialect/DSA's dsa-decompose-attention and dsa-strip-probes),
/// so the pipeline's --dump-pass-pipeline output replays through --pass-pipeline (the upstream passes it runs are
/// registered by mlir::registerAllPasses). Idempotent.
void registerDSACPUPipeline();
/// Adds the passes of --dsa-cpu-pipeline to `pm` (on a ModuleOp): dsa (dsa.attention or the window-only
/// primitives, with or without probes) -> the LLVM dialect, functions taking and returning plain memrefs
/// (docs/cpu-backend.md). Used by the registration above and by compiler/lib/Backend/CPU. `parallel`: OpenMP loops over the
/// outputs of every op (the generated code then needs an OpenMP runtime, libomp; results are the same bits).
/// `cpu`: when not empty, every llvm.func gets target_cpu / target_features for that CPU ('host' or an LLVM CPU
/// name: dsa/Conversion/CPUTarget.h); the pipeline fails on an unknown name. Every bf16 conversion is expanded
/// into integer ops, the pipeline fails if one is left for LLVM (dsa-cpu-check-bf16), and the output has no bf16
/// type at all (dsa-cpu-bf16-as-i16: bf16 values are carried as i16).
void buildDSACPUPipeline(OpPassManager &pm, bool parallel = false, llvm::StringRef cpu = "");
/// Registers --dsa-gpu-pipeline and its host part --dsa-gpu-host-pipeline (compiler/lib/Conversion/DSAToGPU/Pipeline.cpp;
/// their passes are registered by registerDSAConversionPasses and upstream's registerAllPasses).
void registerDSAGPUPipeline();
/// Adds the host part of --dsa-gpu-pipeline to `pm` (registered as --dsa-gpu-host-pipeline): dsa-decompose-attention,
/// dsa-strip-probes, dsa-to-gpu, one-shot bufferization, ownership-based deallocation with
/// dsa-gpu-share-returned-buffers, dsa-gpu-device-buffers, dsa-gpu-launch-kernels, canonicalize, cse: host code on
/// memrefs launching the kernels of a gpu.module (not yet NVVM).
void buildDSAGPUHostPipeline(OpPassManager &pm);
/// Adds the passes of --dsa-gpu-pipeline to `pm` (on a ModuleOp): dsa -> host code in the LLVM dialect calling the
/// GPU runtime (mgpu*) plus a gpu.binary of the kernels (docs/gpu-backend.md). `cudaPath` empty: resolveCudaPath.
void buildDSAGPUPipeline(OpPassManager &pm, llvm::StringRef chip = "sm_90", llvm::StringRef features = "",
                         llvm::StringRef format = "isa", int optLevel = 3, llvm::StringRef cudaPath = "");
/// The CUDA toolkit: `option` when not empty, else $CUDA_ROOT, $CUDA_HOME, $CUDA_PATH, else /usr/local/cuda.
std::string resolveCudaPath(llvm::StringRef option);

} // namespace mlir::dsa

#endif
