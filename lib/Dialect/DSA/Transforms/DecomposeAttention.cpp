//===- DecomposeAttention.cpp - dsa.attention -> primitives ------------------===//
//
// Rewrites a window-only `dsa.attention` (compress_ratio 0) into the dsa primitives, in the order of the
// reference's Attention.forward (attention-semantics.md sections 3, 4, 10, 11):
//
//   s    = tensor.dim x, 0                     pos = dsa.positions start_pos, s
//   q    = apply_rope(expand(linear(rms_norm(linear(x, wq_a), q_norm), wq_b)), pos)     probe L<l>.sa_q
//   kv   = act_quant_fp8(apply_rope(rms_norm(linear(x, wkv), kv_norm), pos), block 32)
//   ring'= ring_update(ring, kv, start_pos)    rows = window_kv(kv, ring', start_pos)  probe L<l>.sa_kv
//   idx  = window_indices(start_pos, s, W)                                             probe L<l>.sa_topk_idxs
//   o    = sparse_attn(q, rows, idx, attn_sink, scale = f32(head_dim^-0.5))            probe L<l>.sa_o
//   out  = linear(grouped_output(apply_rope(o, pos, inverse), wo_a, o_groups), wo_b)   probe L<l>.attn_out
//
// Layers with compress_ratio > 0 are rejected with a diagnostic (not supported yet).
//
//===----------------------------------------------------------------------===//
#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

#include <cmath>
#include <string>

namespace mlir::dsa {
#define GEN_PASS_DEF_DSADECOMPOSEATTENTION
#include "dsa/Dialect/DSA/Transforms/Passes.h.inc"

namespace {

/// The reference's fp8_block_size (model.py): the window KV row's act_quant block (section 4).
constexpr int64_t kFp8BlockSize = 32;

/// Why `op` cannot be decomposed by DecomposeWindowAttention, or an empty string when it can.
std::string unsupportedReason(AttentionOp op) {
  AttnConfigAttr config = op.getConfig();
  if (config.getCompressRatio() != 0)
    return "compress_ratio " + std::to_string(config.getCompressRatio()) +
           " is not supported yet by dsa-decompose-attention (only window-only layers, compress_ratio = 0)";
  auto xType = dyn_cast<RankedTensorType>(op.getX().getType());
  if (!xType || xType.getRank() != 2)
    return "operand 'x' must be a rank-2 tensor [s, dim] to be decomposed";
  return {};
}

/// The capture name of a probe: "L" + layer_id + "." + capture (tiny-model-harness.md).
std::string probeName(AttnConfigAttr config, StringRef capture) {
  return "L" + std::to_string(config.getLayerId()) + "." + capture.str();
}

struct DecomposeWindowAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op, PatternRewriter &rewriter) const override {
    std::string reason = unsupportedReason(op);
    if (!reason.empty())
      return rewriter.notifyMatchFailure(op, reason);

    AttnConfigAttr config = op.getConfig();
    Location loc = op.getLoc();
    const int64_t nHeads = config.getNHeads();
    const int64_t headDim = config.getHeadDim();
    const int64_t groups = config.getOGroups();
    RopeAttr rope = config.getRope();
    FloatAttr eps = config.getNormEps();

    Type bf16 = rewriter.getBF16Type();
    Type i64 = rewriter.getI64Type();
    Type i32 = rewriter.getI32Type();
    // The step's token count: static when x's is, else dynamic. Every per-token tensor has it as dim 0.
    const int64_t tokens = cast<RankedTensorType>(op.getX().getType()).getDimSize(0);
    auto perToken = [&](ArrayRef<int64_t> rest, Type elem) {
      SmallVector<int64_t> shape{tokens};
      shape.append(rest.begin(), rest.end());
      return RankedTensorType::get(shape, elem);
    };
    auto probe = [&](StringRef capture, Value value) {
      ProbeOp::create(rewriter, loc, rewriter.getStringAttr(probeName(config, capture)), value);
    };

    Value x = op.getX();
    Value startPos = op.getStartPos();

    // Positions of the step's tokens: start_pos .. start_pos + s - 1.
    Value s = tensor::DimOp::create(rewriter, loc, x, 0);
    Value pos = PositionsOp::create(rewriter, loc, perToken({}, i64), startPos, s, rewriter.getI64IntegerAttr(1));

    // Section 3: queries.
    Value qa = LinearOp::create(rewriter, loc, perToken({config.getQLoraRank()}, bf16), x, op.getWqA());
    Value qr = RmsNormOp::create(rewriter, loc, qa.getType(), qa, op.getQNorm(), eps);
    Value qFlat = LinearOp::create(rewriter, loc, perToken({nHeads * headDim}, bf16), qr, op.getWqB());
    OpFoldResult tokensOfr =
        ShapedType::isDynamic(tokens) ? OpFoldResult(s) : OpFoldResult(rewriter.getIndexAttr(tokens));
    Value qHeads = tensor::ExpandShapeOp::create(
        rewriter, loc, perToken({nHeads, headDim}, bf16), qFlat, ArrayRef<ReassociationIndices>{{0}, {1, 2}},
        ArrayRef<OpFoldResult>{tokensOfr, rewriter.getIndexAttr(nHeads), rewriter.getIndexAttr(headDim)});
    Value q = ApplyRopeOp::create(rewriter, loc, qHeads.getType(), qHeads, pos, rope, /*inverse=*/UnitAttr());
    probe("sa_q", q);

    // Section 4: the window KV row (fp8 round trip over the whole row), the ring, the rows attention reads.
    Value kvLin = LinearOp::create(rewriter, loc, perToken({headDim}, bf16), x, op.getWkv());
    Value kvNorm = RmsNormOp::create(rewriter, loc, kvLin.getType(), kvLin, op.getKvNorm(), eps);
    Value kvRope = ApplyRopeOp::create(rewriter, loc, kvNorm.getType(), kvNorm, pos, rope, UnitAttr());
    Value kv = ActQuantFp8Op::create(rewriter, loc, kvRope.getType(), kvRope, rewriter.getI64IntegerAttr(kFp8BlockSize));
    Value newRing = RingUpdateOp::create(rewriter, loc, op.getNewRing().getType(), op.getRing(), kv, startPos);
    // s rows in prefill, W rows in decode: dynamic either way.
    Value rows = WindowKvOp::create(rewriter, loc, RankedTensorType::get({ShapedType::kDynamic, headDim}, bf16), kv,
                                    newRing, startPos);
    probe("sa_kv", rows);
    // Width min(s, W) in prefill, W in decode.
    Value idx = WindowIndicesOp::create(rewriter, loc, perToken({ShapedType::kDynamic}, i32), startPos, s,
                                        rewriter.getI64IntegerAttr(config.getWindowSize()));
    probe("sa_topk_idxs", idx);

    // Section 10: sparse attention with the sink; scale = head_dim ** -0.5 (Python float) as f32.
    const float scale = static_cast<float>(std::pow(static_cast<double>(headDim), -0.5));
    Value o = SparseAttnOp::create(rewriter, loc, q.getType(), q, rows, idx, op.getAttnSink(),
                                   rewriter.getF32FloatAttr(scale));
    probe("sa_o", o);

    // Section 11: inverse RoPE, grouped wo_a, wo_b.
    Value oRot = ApplyRopeOp::create(rewriter, loc, o.getType(), o, pos, rope, rewriter.getUnitAttr());
    Value og = GroupedOutputOp::create(rewriter, loc, perToken({groups * config.getOLoraRank()}, bf16), oRot,
                                       op.getWoA(), rewriter.getI64IntegerAttr(groups));
    Value out = LinearOp::create(rewriter, loc, op.getOut().getType(), og, op.getWoB());
    probe("attn_out", out);

    rewriter.replaceOp(op, ValueRange{out, newRing});
    return success();
  }
};

struct DecomposeAttentionPass : impl::DSADecomposeAttentionBase<DecomposeAttentionPass> {
  void runOnOperation() override {
    // Reject what the pattern cannot rewrite with a diagnostic on the op, before rewriting anything.
    bool unsupported = false;
    getOperation()->walk([&](AttentionOp op) {
      std::string reason = unsupportedReason(op);
      if (!reason.empty()) {
        op.emitOpError() << reason;
        unsupported = true;
      }
    });
    if (unsupported)
      return signalPassFailure();

    RewritePatternSet patterns(&getContext());
    populateDecomposeAttentionPatterns(patterns);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace

void populateDecomposeAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeWindowAttention>(patterns.getContext());
}

} // namespace mlir::dsa
