//===- DSAToCPU.h - the dsa -> upstream conversion patterns for the CPU ----------------------------------------===//
//
// The patterns of `dsa-to-cpu` (compiler/lib/Conversion/DSAToCPU; docs/cpu-backend.md), for a conversion of one's own:
//
//   if (failed(mlir::dsa::declareDSAToCPURuntimeFunctions(module))) ...  // before the conversion, on the module
//   mlir::ConversionTarget target(*ctx);
//   mlir::dsa::configureDSAToCPUConversionLegality(target);
//   mlir::RewritePatternSet patterns(ctx);
//   mlir::dsa::populateDSAToCPUPatterns(patterns);
//   ... more patterns, target.markUnknownOpDynamicallyLegal(...), ...
//   if (failed(mlir::applyPartialConversion(module, target, std::move(patterns)))) ...
//
// The patterns rewrite each dsa primitive (window-only and compressed-attention ones alike) into linalg / tensor /
// arith / math / scf / vector ops on tensors (plus a func.call of the runtime functions and, for the top-k,
// bufferization.to_buffer / memref.alloc), bit-exact to the reference kernels. dsa.attention must be decomposed
// (dsa-decompose-attention) and dsa.probe removed (dsa-strip-probes) first: no pattern matches them. The `dsa-to-cpu`
// pass is this recipe plus a check naming what it cannot lower; --dsa-cpu-pipeline (dsa/Conversion/Passes.h)
// bufferizes and lowers the result to LLVM.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CONVERSION_DSATOCPU_DSATOCPU_H
#define DSA_CONVERSION_DSATOCPU_DSATOCPU_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir {
class ConversionTarget;
class RewritePatternSet;
} // namespace mlir

namespace mlir::dsa {

/// Adds one conversion pattern per dsa primitive: linear, rms_norm, positions, apply_rope, act_quant_fp8,
/// ring_update, window_kv, window_indices, sparse_attn, grouped_output (DSAToCPU.cpp) and compress_pool, the fp4
/// round trips, cache_write, indexer_scores, compress_visibility, apply_candidates, select_candidate_blocks,
/// indexer_topk (CompressedToCPU.cpp), and the patterns turning arith.extf / arith.truncf on ranked tensors
/// (from dsa-decompose-attention) into elementwise linalg.generic ops. Failed run-time checks call
/// `dsa_cpu_fail(i32)`, the top-k ops `dsa_cpu_topk_set`: declare them first (declareDSAToCPURuntimeFunctions).
/// `vectorRegisters`: the target's vector registers (32 with AVX-512, 16 with AVX2; dsa-to-cpu's
/// vector-registers option), which size the register tile of linear / grouped_output (with 32: 4 tokens x 8 outputs
/// in 16 accumulators of 16 lanes when `pairColumns`, else 4 x 4 of 8 lanes; 3 x 3 of 8 lanes with fewer, so that
/// the accumulators do not spill); the results are the same bits for any values.
/// `pairColumns` (dsa-to-cpu's pair-columns option; only with 32 registers): the prefill blocks' accumulators
/// hold two outputs' 8 lanes each (a widened panel of interleaved w row pairs: one AVX-512 FMA per two dots).
/// `phaseMinRows` (dsa-to-cpu's phase-min-rows option; 0: never): from that many rows of x (a run-time count) the
/// products use the phase kernel (docs/cpu-backend.md "Phase kernel": w packed per panel phase-major, an
/// outer-product register tile of 6 tokens x 16 outputs with 16 registers, 12 x 32 with 32), else the blocks above.
void populateDSAToCPUPatterns(RewritePatternSet &patterns, int64_t vectorRegisters = 32, bool pairColumns = true,
                              int64_t phaseMinRows = 64);

/// Makes the dsa dialect illegal, the dialects the patterns produce (arith, linalg, tensor, math, scf, func,
/// vector, bufferization, memref) legal, and arith.extf / arith.truncf legal only on non-tensor types (the
/// patterns convert the tensor ones).
void configureDSAToCPUConversionLegality(ConversionTarget &target);

/// Declares, at the start of `module`, the runtime functions the patterns call for the dsa ops `module` holds:
/// `func.func private @dsa_cpu_fail(i32)` (core/include/dsa/ABI/RuntimeErrors.h) when an op has run-time
/// checks, `func.func private @dsa_cpu_topk_set(memref<?x?xf32>, i64, memref<?x?xi64>) -> i32` with
/// llvm.emit_c_interface (RuntimeFunctions.h) when one selects the top-k. A symbol already present is kept when it
/// is a func.func of exactly that type; anything else holding the name (another type, another op) is an error on
/// that op ("dsa-to-cpu: the symbol 'dsa_cpu_topk_set' is taken by something other than ...") and failure: calls
/// to it would not verify.
LogicalResult declareDSAToCPURuntimeFunctions(ModuleOp module);

} // namespace mlir::dsa

#endif
