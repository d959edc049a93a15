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

/// Adds the pattern that rewrites a window-only `dsa.attention` (compress_ratio 0) into the dsa primitives
/// (attention-semantics.md sections 3, 4, 10, 11) with `dsa.probe`s `L<layer_id>.{sa_q, sa_kv, sa_topk_idxs, sa_o,
/// attn_out}`. The pattern does not match (and reports why through notifyMatchFailure) a layer with
/// compress_ratio > 0 or an `x` that is not a rank-2 ranked tensor; the `dsa-decompose-attention` pass turns those
/// into errors on the op.
void populateDecomposeAttentionPatterns(RewritePatternSet &patterns);

} // namespace mlir::dsa

#endif
