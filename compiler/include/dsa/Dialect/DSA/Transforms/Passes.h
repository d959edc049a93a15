//===- Passes.h - dsa transformation passes ----------------------------------===//
#ifndef DSA_DIALECT_DSA_TRANSFORMS_PASSES_H
#define DSA_DIALECT_DSA_TRANSFORMS_PASSES_H

#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace mlir::dsa {

#define GEN_PASS_DECL
#include "dsa/Dialect/DSA/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dsa/Dialect/DSA/Transforms/Passes.h.inc"

/// Adds the pattern that rewrites `dsa.attention` into the dsa primitives and upstream arith/tensor ops: window-only
/// layers (compress_ratio 0) per attention-semantics.md sections 3, 4, 10, 11; compress_ratio > 0 layers add their
/// roles (kv source, index source, candidate source, uses_candidates; sections 5-8) with the shared slots threaded
/// as SSA values (docs/design-compressed.md). Probes: `L<layer_id>.{sa_q, sa_kv, sa_topk_idxs, sa_o, attn_out}`
/// and for ratio > 0 `shared.L<layer_id>.{compress_kv, index_k, topk_idxs, candidates}`. The pattern does not match
/// (and reports why through notifyMatchFailure) an op whose `x` is not a rank-2 ranked tensor or whose operand /
/// result groups do not have the sizes its config implies; the `dsa-decompose-attention` pass turns those into
/// errors on the op.
/// `probeIndexScores`: also probe each index source's top-k scores as `L<layer_id>.index_score`.
void populateDecomposeAttentionPatterns(RewritePatternSet &patterns, bool probeIndexScores = false);

} // namespace mlir::dsa

#endif
