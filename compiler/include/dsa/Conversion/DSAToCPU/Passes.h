//===- Passes.h - the passes and pipeline of dsa's CPU conversion (DSA::ConversionCPU) ----------------------===//
//
// dsa-to-cpu and the other dsa passes --dsa-cpu-pipeline runs (DSAToCPU/Passes.td), and the pipeline itself. Linking
// this part (CMake target DSAToCPU, DSA::ConversionCPU when installed) does not pull in the GPU conversion
// (dsa/Conversion/DSAToGPU/Passes.h); dsa/Conversion/Passes.h has both.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CONVERSION_DSATOCPU_PASSES_H
#define DSA_CONVERSION_DSATOCPU_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class DialectRegistry;
namespace arith { class ArithDialect; }
namespace linalg { class LinalgDialect; }
namespace tensor { class TensorDialect; }
namespace math { class MathDialect; }
namespace scf { class SCFDialect; }
namespace LLVM { class LLVMDialect; }
} // namespace mlir

namespace mlir::dsa {

#define GEN_PASS_DECL
#include "dsa/Conversion/DSAToCPU/Passes.h.inc"

/// registerDSAToCPUPasses(): registers the passes of DSAToCPU/Passes.td (dsa-to-cpu, dsa-cpu-*). Idempotent.
#define GEN_PASS_REGISTRATION
#include "dsa/Conversion/DSAToCPU/Passes.h.inc"

/// Registers --dsa-cpu-pipeline (compiler/lib/Conversion/DSAToCPU) and every dsa pass it runs (DSAToCPU/Passes.td:
/// dsa-to-cpu, dsa-cpu-drop-in-place-results, dsa-cpu-strided-copies-to-linalg, dsa-cpu-expand-bf16,
/// dsa-cpu-set-target, dsa-cpu-check-bf16, dsa-cpu-bf16-as-i16; with dsa/Dialect/DSA's dsa-decompose-attention and
/// dsa-strip-probes), so the pipeline's --dump-pass-pipeline output replays through --pass-pipeline (the upstream
/// passes it runs are registered by mlir::registerAllPasses). Idempotent.
void registerDSACPUPipeline();
/// Adds the passes of --dsa-cpu-pipeline to `pm` (on a ModuleOp): dsa (dsa.attention or the window-only
/// primitives, with or without probes) -> the LLVM dialect, functions taking and returning plain memrefs
/// (docs/cpu-backend.md). Used by the registration above and by compiler/lib/Backend/CPU. `parallel`: OpenMP loops
/// over the outputs of every op (the generated code then needs an OpenMP runtime, libomp; results are the same bits).
/// `cpu`: when not empty, every llvm.func gets target_cpu / target_features for that CPU ('host' or an LLVM CPU
/// name: dsa/Conversion/CPUTarget.h); the pipeline fails on an unknown name. Every bf16 conversion is expanded
/// into integer ops, the pipeline fails if one is left for LLVM (dsa-cpu-check-bf16), and the output has no bf16
/// type at all (dsa-cpu-bf16-as-i16: bf16 values are carried as i16). `phaseMinRows`: dsa-to-cpu's phase-min-rows
/// (the products' phase kernel from that many rows of x; 0: never; the same bits either way). `vectorRegisters`:
/// when > 0, dsa-to-cpu's vector-registers instead of the one `cpu` implies (16 without AVX-512, else 32), e.g. to
/// run the 32-register tiles' code on a host without AVX-512 (LLVM splits their 16-lane vectors; the same bits).
void buildDSACPUPipeline(OpPassManager &pm, bool parallel = false, llvm::StringRef cpu = "", int64_t phaseMinRows = 64,
                         int64_t vectorRegisters = 0);

} // namespace mlir::dsa

#endif
