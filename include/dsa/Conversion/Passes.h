//===- Passes.h - dsa conversion passes --------------------------------------===//
#ifndef DSA_CONVERSION_PASSES_H
#define DSA_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class DialectRegistry;
namespace arith { class ArithDialect; }
namespace linalg { class LinalgDialect; }
namespace tensor { class TensorDialect; }
namespace math { class MathDialect; }
namespace scf { class SCFDialect; }
namespace gpu { class GPUDialect; }
namespace memref { class MemRefDialect; }
} // namespace mlir

namespace mlir::dsa {

#define GEN_PASS_DECL
#include "dsa/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dsa/Conversion/Passes.h.inc"

/// Registers --dsa-cpu-pipeline (lib/Conversion/DSAToCPU).
void registerDSACPUPipeline();
/// Adds the passes of --dsa-cpu-pipeline to `pm` (on a ModuleOp): dsa (dsa.attention or the window-only
/// primitives, with or without probes) -> the LLVM dialect, functions taking and returning plain memrefs
/// (docs/cpu-backend.md). Used by the registration above and by lib/Backend/CPU. `parallel`: OpenMP loops over the
/// outputs of every op (the generated code then needs an OpenMP runtime, libomp; results are the same bits).
void buildDSACPUPipeline(OpPassManager &pm, bool parallel = false);
/// Registers --dsa-gpu-pipeline (lib/Conversion/DSAToGPU).
void registerDSAGPUPipeline();

} // namespace mlir::dsa

#endif
