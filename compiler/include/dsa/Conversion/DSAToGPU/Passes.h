//===- Passes.h - the passes and pipelines of dsa's GPU conversion (DSA::ConversionGPU) ---------------------===//
//
// dsa-to-gpu and the passes --dsa-gpu-pipeline runs after bufferization (DSAToGPU/Passes.td), and the pipelines.
// Apart from the CPU conversion (dsa/Conversion/DSAToCPU/Passes.h); dsa/Conversion/Passes.h has both.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CONVERSION_DSATOGPU_PASSES_H
#define DSA_CONVERSION_DSATOGPU_PASSES_H

#include "mlir/Pass/Pass.h"

#include <string>

namespace mlir {
class DialectRegistry;
namespace arith { class ArithDialect; }
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
#include "dsa/Conversion/DSAToGPU/Passes.h.inc"

/// registerDSAToGPUPasses(): registers the passes of DSAToGPU/Passes.td (dsa-to-gpu, dsa-gpu-*,
/// dsa-check-libdevice). Idempotent.
#define GEN_PASS_REGISTRATION
#include "dsa/Conversion/DSAToGPU/Passes.h.inc"

/// Registers --dsa-gpu-pipeline and its host part --dsa-gpu-host-pipeline (compiler/lib/Conversion/DSAToGPU/
/// Pipeline.cpp) with every dsa pass they run, so their --dump-pass-pipeline output replays (the upstream passes
/// are registered by mlir::registerAllPasses). Idempotent.
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
