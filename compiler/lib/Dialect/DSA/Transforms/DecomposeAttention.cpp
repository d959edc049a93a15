//===- DecomposeAttention.cpp - dsa.attention -> primitives ------------------===//
//
// Rewrites a `dsa.attention` into the dsa primitives and a few upstream arith/tensor ops, in the order of the
// reference's Attention.forward (attention-semantics.md sections 3-11; design: docs/design-compressed.md).
//
// Every layer (sections 3, 4):
//   c0 = arith.constant 0 : index   s = tensor.dim x, c0   pos = dsa.positions start_pos, s
//   qr   = rms_norm(linear(x, wq_a), q_norm)
//   q    = apply_rope(expand(linear(qr, wq_b)) [s, H, hd], pos)                        probe L<l>.sa_q
//   kv   = act_quant_fp8(apply_rope(rms_norm(linear(x, wkv), kv_norm), pos), block 32)
//   ring'= ring_update(ring, kv, start_pos)    wrows = window_kv(kv, ring, start_pos) (the ring BEFORE the step:
//   decode reads it with this step's row written, a chunk at start_pos > 0 reads it followed by the chunk's rows)
//   widx = window_indices(start_pos, s, W)
// compress_ratio 0: rows = wrows (probe L<l>.sa_kv), idx = widx (probe L<l>.sa_topk_idxs).
// compress_ratio r > 0, section 8's order, with the four shared slots threaded as SSA values:
//   1. kv source: latent = compressor(x) (section 5: ratio 1 rms_norm(linear(x, wkv_c), norm_c); ratio >= 2
//      extf, two f32 linears, compress_pool, truncf, rms_norm); g = tensor.dim latent, 0;
//      gpos = positions((start_pos // r) * r, g, stride r);
//      index_k_cache' = cache_write(fp4_quant_e8m0(apply_rope(rms_norm(linear(latent, wk), k_norm), gpos)));
//      index_k slot = (g > 0) ? cast(index_k_cache') : index_k slot (published_slot, the reference quirk), or
//      cast(index_k_cache') every step (own_cache).
//   2. index source: iq = fp4_quant_e8m0(apply_rope(expand(linear(qr, idx_wq_b)) [s, IH, ihd], pos));
//      w = linear(x, weights_proj); sc = compress_visibility(indexer_scores(iq, w, index_k slot, start_pos));
//      a published_slot kv source of ratio >= 2 adds `entry_keys` = the index_k slot as it entered the layer (a
//      row closing no group reads it: the quirk per token, so a chunk's rows see their decode steps' keys).
//      candidate source: candidates slot = cast(select_candidate_blocks(sc)); uses_candidates:
//      sc = apply_candidates(sc, candidates slot); topk = indexer_topk(sc); topk_idxs slot = cast(topk).
//      With the pass option probe-index-scores: probe L<l>.index_score = sc, the scores topk reads.
//      Other layers take topk = topk_idxs slot.
//   3. kv source: kv_cache' = cache_write(fp4_quant_e4m3(apply_rope(latent, gpos), block 16));
//      compress_kv slot = cast(kv_cache') (every step).
//   4. crows = extract_slice(compress_kv slot, rows [0, (start_pos + s) // r));
//      rows = concat(wrows, crows) along 0 (probe sa_kv), idx = concat(widx, topk) along 1 (probe sa_topk_idxs).
// Every layer (sections 10, 11):
//   o   = sparse_attn(q, rows, idx, attn_sink, scale = f32(head_dim^-0.5))                probe L<l>.sa_o
//   out = linear(grouped_output(apply_rope(o, pos, inverse), wo_a, o_groups), wo_b)    probe L<l>.attn_out
// ratio > 0: probes shared.L<l>.compress_kv (= crows), .index_k (the index_k slot cut to (start_pos+s)//r rows),
// .topk_idxs, .candidates (the slots after this layer). Results: out, ring', new_state (the state operands in
// their order, updated), new_shared (the four slots after this layer).
//
//===----------------------------------------------------------------------===//
#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

#include <cmath>
#include <functional>
#include <string>

namespace mlir::dsa {
#define GEN_PASS_DEF_DSADECOMPOSEATTENTION
#include "dsa/Dialect/DSA/Transforms/Passes.h.inc"

namespace {

/// The reference's fp8_block_size (model.py): the window KV row's act_quant block (section 4).
constexpr int64_t kFp8BlockSize = 32;
/// fp4_quant_e8m0's block for the indexer queries and keys (section 6 steps 1-2).
constexpr int64_t kIndexFp4BlockSize = 32;
/// fp4_quant_e4m3's block for the compressed KV latent (section 8 step 3).
constexpr int64_t kLatentFp4BlockSize = 16;

/// The shared slots, in the order of dsa.attention's `shared(...)` operands and `new_shared` results.
enum SharedSlot : unsigned { kCompressKv = 0, kIndexK = 1, kTopkIdxs = 2, kCandidates = 3, kNumSlots = 4 };
const char *const kSlotNames[kNumSlots] = {"compress_kv", "index_k", "topk_idxs", "candidates"};

/// The operand group sizes a layer with `config` must have (dsa.attention's description).
struct GroupSizes {
  unsigned compressor = 0, indexKeys = 0, indexer = 0, state = 0, shared = 0;
};
GroupSizes expectedGroupSizes(AttnConfigAttr config) {
  GroupSizes sizes;
  CompressConfigAttr compress = config.getCompress();
  const int64_t ratio = config.getCompressRatio();
  if (ratio == 0 || !compress)
    return sizes;
  sizes.shared = kNumSlots;
  if (compress.getIsKvSource().getValue()) {
    sizes.compressor = ratio == 1 ? 2 : 3; // wkv, (wgate,) norm
    sizes.indexKeys = 2;                   // wk, k_norm
    sizes.state = ratio == 1 ? 2 : 4;      // (kv_state, score_state,) kv cache, index-key cache
  }
  if (compress.getIsIndexSource().getValue())
    sizes.indexer = 2; // wq_b, weights_proj
  return sizes;
}

/// Why `op` cannot be decomposed, or an empty string when it can. The op verifier checks the same and more; these
/// are the facts the rewrite relies on, re-checked so that an op built without verification gets a diagnostic
/// instead of malformed IR.
std::string unsupportedReason(AttentionOp op) {
  AttnConfigAttr config = op.getConfig();
  auto xType = dyn_cast<RankedTensorType>(op.getX().getType());
  const int64_t ratio = config.getCompressRatio();
  const bool batched = isa<RankedTensorType>(op.getStartPos().getType());
  if (batched) {
    auto ringType = dyn_cast<RankedTensorType>(op.getRing().getType());
    if (!xType || xType.getRank() != 3 || xType.getDimSize(1) != 1)
      return "operand 'x' of a batched step must be a rank-3 tensor [B, 1, dim] to be decomposed";
    if (!ringType || ringType.getRank() != 3 || ShapedType::isDynamic(ringType.getDimSize(1)) ||
        ShapedType::isDynamic(ringType.getDimSize(2)))
      return "operand 'ring' of a batched step must be a rank-3 tensor [B, window_size, head_dim] to be decomposed";
  } else if (!xType || xType.getRank() != 2) {
    return "operand 'x' must be a rank-2 tensor [s, dim] to be decomposed";
  }
  if (ratio < 0)
    return "compress_ratio must be >= 0, got " + std::to_string(ratio);
  if (ratio > 0 && !config.getCompress())
    return "a compress_ratio > 0 layer needs config.compress (its role and indexer geometry)";

  GroupSizes want = expectedGroupSizes(config);
  const bool wide = ratio >= 2;
  auto count = [](size_t got, unsigned expected, const char *group, const char *names) -> std::string {
    if (got == expected)
      return {};
    return "operand group '" + std::string(group) + "' has " + std::to_string(got) + " operands, this layer's " +
           "config needs " + std::to_string(expected) + (expected ? " (" + std::string(names) + ")" : "");
  };
  for (const std::string &reason :
       {count(op.getCompressor().size(), want.compressor, "compressor", wide ? "wkv, wgate, norm" : "wkv, norm"),
        count(op.getIndexKeys().size(), want.indexKeys, "index_keys", "wk, k_norm"),
        count(op.getIndexer().size(), want.indexer, "indexer", "wq_b, weights_proj"),
        count(op.getState().size(), want.state, "state",
              wide ? "kv_state, score_state, kv_cache, index_k_cache" : "kv_cache, index_k_cache"),
        count(op.getShared().size(), want.shared, "shared", "compress_kv, index_k, topk_idxs, candidates")})
    if (!reason.empty())
      return reason;
  if (op.getNewState().size() != want.state)
    return "result group 'new_state' has " + std::to_string(op.getNewState().size()) + " results, 'state' has " +
           std::to_string(want.state) + " operands";
  if (op.getNewShared().size() != want.shared)
    return "result group 'new_shared' has " + std::to_string(op.getNewShared().size()) + " results, 'shared' has " +
           std::to_string(want.shared) + " operands";
  const int64_t slotRank = batched ? 3 : 2;
  for (unsigned i = 0; i < want.shared; ++i)
    if (cast<RankedTensorType>(op.getShared()[i].getType()).getRank() != slotRank)
      return std::string("shared slot '") + kSlotNames[i] + "' must be a rank-" + std::to_string(slotRank) +
             " tensor" + (batched ? " [B, rows, width] (a batched step)" : "");
  if (batched) {
    // The per-sequence slices the rewrite takes: static trailing sizes of the state, one token row per sequence.
    for (Value state : op.getState()) {
      auto type = cast<RankedTensorType>(state.getType());
      if (type.getRank() != 3 || llvm::any_of(type.getShape().drop_front(), ShapedType::isDynamic))
        return "a batched step's state operands must be [B, rows, width] with static rows and width";
    }
    for (unsigned i : {kTopkIdxs, kCandidates})
      if (want.shared && cast<RankedTensorType>(op.getShared()[i].getType()).getDimSize(1) != 1)
        return std::string("shared slot '") + kSlotNames[i] + "' of a batched step must be [B, 1, ?]";
  }
  return {};
}

/// The capture name of a probe: prefix + "L" + layer_id + "." + capture (tiny-model-harness.md).
std::string probeName(AttnConfigAttr config, StringRef capture, StringRef prefix = "") {
  return prefix.str() + "L" + std::to_string(config.getLayerId()) + "." + capture.str();
}

struct DecomposeAttention : OpRewritePattern<AttentionOp> {
  DecomposeAttention(MLIRContext *context, bool probeIndexScores)
      : OpRewritePattern(context), probeIndexScores(probeIndexScores) {}
  bool probeIndexScores;

  LogicalResult matchAndRewrite(AttentionOp op, PatternRewriter &rewriter) const override {
    std::string reason = unsupportedReason(op);
    if (!reason.empty())
      return rewriter.notifyMatchFailure(op, reason);

    if (isa<RankedTensorType>(op.getStartPos().getType()))
      return rewriteBatched(op, rewriter);

    AttnConfigAttr config = op.getConfig();
    Location loc = op.getLoc();
    const int64_t headDim = config.getHeadDim();
    const int64_t ratio = config.getCompressRatio();
    FloatAttr eps = config.getNormEps();

    Type bf16 = rewriter.getBF16Type();
    Type i64 = rewriter.getI64Type();
    Type i32 = rewriter.getI32Type();
    const int64_t dyn = ShapedType::kDynamic;
    // The step's token count: static when x's is, else dynamic. Every per-token tensor has it as dim 0.
    const int64_t tokens = cast<RankedTensorType>(op.getX().getType()).getDimSize(0);
    auto perToken = [&](ArrayRef<int64_t> rest, Type elem) {
      SmallVector<int64_t> shape{tokens};
      shape.append(rest.begin(), rest.end());
      return RankedTensorType::get(shape, elem);
    };
    auto probe = [&](StringRef name, Value value) {
      ProbeOp::create(rewriter, loc, rewriter.getStringAttr(name), value);
    };
    auto layerProbe = [&](StringRef capture, Value value) { probe(probeName(config, capture), value); };
    auto i64Attr = [&](int64_t v) { return rewriter.getI64IntegerAttr(v); };

    Value x = op.getX();
    Value startPos = op.getStartPos();

    // Positions of the step's tokens: start_pos .. start_pos + s - 1.
    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value s = tensor::DimOp::create(rewriter, loc, x, c0);
    Value pos = PositionsOp::create(rewriter, loc, perToken({}, i64), startPos, s, i64Attr(1));
    OpFoldResult tokensOfr =
        ShapedType::isDynamic(tokens) ? OpFoldResult(s) : OpFoldResult(rewriter.getIndexAttr(tokens));

    // Section 3: queries.
    auto [qr, q] = emitQueries(rewriter, loc, op, x, pos, tokens, tokensOfr);
    layerProbe("sa_q", q);

    // Section 4: the window KV row (fp8 round trip over the whole row), the ring, the rows attention reads.
    Value kv = emitKvRows(rewriter, loc, op, x, pos, tokens);
    Value newRing = RingUpdateOp::create(rewriter, loc, op.getNewRing().getType(), op.getRing(), kv, startPos);
    // s rows in prefill, W rows in decode, W + s in a chunk at start_pos > 0: dynamic. window_kv reads the ring as
    // it stood before this step (a chunk needs the rows its own tokens overwrite).
    Value rows =
        WindowKvOp::create(rewriter, loc, RankedTensorType::get({dyn, headDim}, bf16), kv, op.getRing(), startPos);
    if (ratio == 0)
      layerProbe("sa_kv", rows);
    // Width min(s, W) in prefill, W in decode and in a chunk at start_pos > 0.
    Value idx = WindowIndicesOp::create(rewriter, loc, perToken({dyn}, i32), startPos, s,
                                        i64Attr(config.getWindowSize()));
    if (ratio == 0)
      layerProbe("sa_topk_idxs", idx);

    // Sections 5-8: the compressed part. `slots` holds the shared slots as they stand so far in this layer.
    SmallVector<Value> newState;
    SmallVector<Value> slots(op.getShared().begin(), op.getShared().end());
    Value compressedRows, endRows;
    if (ratio > 0) {
      // The row-wise inputs, emitted where the step needs them.
      CompressedInputs inputs;
      ValueRange compressor = op.getCompressor();
      inputs.latent = [&]() -> Value {
        Value lin = LinearOp::create(rewriter, loc, perToken({headDim}, bf16), x, compressor[0]);
        return RmsNormOp::create(rewriter, loc, lin.getType(), lin, compressor[1], eps);
      };
      inputs.pool = [&]() -> std::pair<Value, Value> {
        Type f32 = rewriter.getF32Type();
        Value xf = arith::ExtFOp::create(rewriter, loc, perToken({config.getDim()}, f32), x);
        return {LinearOp::create(rewriter, loc, perToken({headDim}, f32), xf, compressor[0]),
                LinearOp::create(rewriter, loc, perToken({headDim}, f32), xf, compressor[1])};
      };
      inputs.indexer = [&]() -> std::pair<Value, Value> {
        return emitIndexerRows(rewriter, loc, op, x, qr, pos, tokens, tokensOfr);
      };
      SmallVector<Type> slotTypes(op.getShared().getTypes());
      CompressedStep step =
          emitCompressedStep(rewriter, loc, op, inputs, startPos, s, c0, tokens, rows, idx, op.getState(), slotTypes,
                             slots, probeIndexScores ? llvm::function_ref<void(StringRef, Value)>(layerProbe) : nullptr);
      newState = std::move(step.newState);
      rows = step.rows;
      idx = step.idx;
      compressedRows = step.compressedRows;
      endRows = step.endRows;
      layerProbe("sa_kv", rows);
      layerProbe("sa_topk_idxs", idx);
    }

    // Section 10: sparse attention with the sink; scale = head_dim ** -0.5 (Python float) as f32.
    const float scale = static_cast<float>(std::pow(static_cast<double>(headDim), -0.5));
    Value o = SparseAttnOp::create(rewriter, loc, q.getType(), q, rows, idx, op.getAttnSink(),
                                   rewriter.getF32FloatAttr(scale));
    layerProbe("sa_o", o);

    // Section 11: inverse RoPE, grouped wo_a, wo_b.
    Value out = emitOutput(rewriter, loc, op, o, pos, tokens, op.getOut().getType());
    layerProbe("attn_out", out);

    SmallVector<Value> results{out, newRing};
    if (ratio > 0) {
      // The slots after this layer (tiny-model-harness.md): compress_kv and index_k cut to end//r rows.
      probe(probeName(config, kSlotNames[kCompressKv], "shared."), compressedRows);
      probe(probeName(config, kSlotNames[kIndexK], "shared."), firstRows(rewriter, loc, slots[kIndexK], endRows));
      probe(probeName(config, kSlotNames[kTopkIdxs], "shared."), slots[kTopkIdxs]);
      probe(probeName(config, kSlotNames[kCandidates], "shared."), slots[kCandidates]);
      results.append(newState.begin(), newState.end());
      for (unsigned i = 0; i < kNumSlots; ++i) {
        Type want = op.getNewShared()[i].getType();
        results.push_back(slots[i].getType() == want ? slots[i]
                                                     : Value(tensor::CastOp::create(rewriter, loc, want, slots[i])));
      }
    }
    rewriter.replaceOp(op, results);
    return success();
  }

private:
  /// Section 3 over `rows` token rows (x [rows, dim], pos [rows] their positions): qr = rms_norm(linear(x, wq_a)),
  /// q = apply_rope(split heads(linear(qr, wq_b)), pos). The batch-1 step and the batched one share it: the same
  /// ops, so each row gets the same bits.
  struct Queries {
    Value qr, q;
  };
  static Queries emitQueries(PatternRewriter &rewriter, Location loc, AttentionOp op, Value x, Value pos,
                             int64_t rows, OpFoldResult rowsOfr) {
    AttnConfigAttr config = op.getConfig();
    Type bf16 = rewriter.getBF16Type();
    const int64_t heads = config.getNHeads(), headDim = config.getHeadDim();
    Value qa = LinearOp::create(rewriter, loc, RankedTensorType::get({rows, config.getQLoraRank()}, bf16), x,
                                op.getWqA());
    Value qr = RmsNormOp::create(rewriter, loc, qa.getType(), qa, op.getQNorm(), config.getNormEps());
    Value qFlat =
        LinearOp::create(rewriter, loc, RankedTensorType::get({rows, heads * headDim}, bf16), qr, op.getWqB());
    Value qHeads = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get({rows, heads, headDim}, bf16), qFlat,
        ArrayRef<ReassociationIndices>{{0}, {1, 2}},
        ArrayRef<OpFoldResult>{rowsOfr, rewriter.getIndexAttr(heads), rewriter.getIndexAttr(headDim)});
    Value q = ApplyRopeOp::create(rewriter, loc, qHeads.getType(), qHeads, pos, config.getRope(),
                                  /*inverse=*/UnitAttr());
    return {qr, q};
  }

  /// Section 4's window KV rows: act_quant_fp8(apply_rope(rms_norm(linear(x, wkv)), pos)), block 32.
  static Value emitKvRows(PatternRewriter &rewriter, Location loc, AttentionOp op, Value x, Value pos, int64_t rows) {
    AttnConfigAttr config = op.getConfig();
    auto type = RankedTensorType::get({rows, config.getHeadDim()}, rewriter.getBF16Type());
    Value kvLin = LinearOp::create(rewriter, loc, type, x, op.getWkv());
    Value kvNorm = RmsNormOp::create(rewriter, loc, type, kvLin, op.getKvNorm(), config.getNormEps());
    Value kvRope = ApplyRopeOp::create(rewriter, loc, type, kvNorm, pos, config.getRope(), UnitAttr());
    return ActQuantFp8Op::create(rewriter, loc, type, kvRope, rewriter.getI64IntegerAttr(kFp8BlockSize));
  }

  /// Section 11: linear(grouped_output(apply_rope(o, pos, inverse), wo_a, o_groups), wo_b) of type `outType`.
  static Value emitOutput(PatternRewriter &rewriter, Location loc, AttentionOp op, Value o, Value pos, int64_t rows,
                          Type outType) {
    AttnConfigAttr config = op.getConfig();
    const int64_t groups = config.getOGroups();
    Value oRot = ApplyRopeOp::create(rewriter, loc, o.getType(), o, pos, config.getRope(), rewriter.getUnitAttr());
    Value og = GroupedOutputOp::create(
        rewriter, loc, RankedTensorType::get({rows, groups * config.getOLoraRank()}, rewriter.getBF16Type()), oRot,
        op.getWoA(), rewriter.getI64IntegerAttr(groups));
    return LinearOp::create(rewriter, loc, outType, og, op.getWoB());
  }

  /// Section 6 steps 2-3 over `rows` token rows: iq = fp4_quant_e8m0(apply_rope(split heads(linear(qr, wq_b)),
  /// pos)) [rows, IH, ihd] and the head weights linear(x, weights_proj) [rows, IH].
  static std::pair<Value, Value> emitIndexerRows(OpBuilder &b, Location loc, AttentionOp op, Value x, Value qr,
                                                 Value pos, int64_t rows, OpFoldResult rowsOfr) {
    AttnConfigAttr config = op.getConfig();
    CompressConfigAttr compress = config.getCompress();
    const int64_t ihd = compress.getIndexHeadDim(), indexHeads = compress.getIndexNHeads();
    Type bf16 = b.getBF16Type();
    ValueRange indexer = op.getIndexer();
    Value iqFlat =
        LinearOp::create(b, loc, RankedTensorType::get({rows, indexHeads * ihd}, bf16), qr, indexer[0]);
    Value iqHeads = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({rows, indexHeads, ihd}, bf16), iqFlat,
        ArrayRef<ReassociationIndices>{{0}, {1, 2}},
        ArrayRef<OpFoldResult>{rowsOfr, b.getIndexAttr(indexHeads), b.getIndexAttr(ihd)});
    Value iqRope =
        ApplyRopeOp::create(b, loc, iqHeads.getType(), iqHeads, pos, config.getRope(), /*inverse=*/UnitAttr());
    Value iq = Fp4QuantE8M0Op::create(b, loc, iqRope.getType(), iqRope, b.getI64IntegerAttr(kIndexFp4BlockSize));
    Value weights = LinearOp::create(b, loc, RankedTensorType::get({rows, indexHeads}, bf16), x, indexer[1]);
    return {iq, weights};
  }

  /// Where the compressed part's row-wise inputs come from: emitted where the step needs them (the batch-1 step:
  /// over its token rows), or sliced out of values the batched step computed once over its B rows.
  struct CompressedInputs {
    std::function<Value()> latent;                    ///< ratio-1 kv source: rms_norm(linear(x, wkv_c), norm_c)
    std::function<std::pair<Value, Value>()> pool;    ///< ratio >= 2 kv source: f32 kv and score projections
    std::function<std::pair<Value, Value>()> indexer; ///< index source: iq and the head weights
    /// A published_slot kv source (the section-8 quirk): the index_k slot after the layer from (g > 0, the new
    /// index-key cache, the slot as it entered). Unset: arith.select of the two. The batched step writes the cache
    /// into its padded published slot instead (a select would join the cache's buffer with the read-only incoming
    /// slot's, and bufferization would copy the whole cache slice every step).
    std::function<Value(Value hasLatent, Value newCache, Value previous)> publishIndexK;
  };
  struct CompressedStep {
    Value rows, idx;               ///< window rows ++ compress_kv[0 .. end//r), window ++ compressed indices
    Value compressedRows, endRows; ///< compress_kv[0 .. end//r) and end//r
    SmallVector<Value> newState;   ///< the state operands updated, in their order
  };

  /// Sections 5-8 for ONE sequence's step of `s` tokens (`tokens`: s when static) at `startPos` (i64): the
  /// compressor, the index keys and their publication, the indexer, the compressed-KV cache, then the rows and
  /// indices attention reads (`windowRows` / `windowIdx` followed by the compressed ones). `state`: the layer's state
  /// values; `slots`: the four shared slots as they stand, each of `slotTypes` (what this layer publishes is cast to
  /// it), replaced by the slots after this layer. `probe` (may be null): receives the scores top-k reads
  /// (`index_score`). The batch-1 step calls it on its operands; the batched step on sequence b's slices.
  static CompressedStep emitCompressedStep(OpBuilder &b, Location loc, AttentionOp op, const CompressedInputs &in,
                                           Value startPos, Value s, Value c0, int64_t tokens, Value windowRows,
                                           Value windowIdx, ValueRange state, ArrayRef<Type> slotTypes,
                                           SmallVectorImpl<Value> &slots,
                                           llvm::function_ref<void(StringRef, Value)> probe) {
    AttnConfigAttr config = op.getConfig();
    CompressConfigAttr compress = config.getCompress();
    const int64_t headDim = config.getHeadDim();
    const int64_t ratio = config.getCompressRatio();
    const bool kvSource = compress.getIsKvSource().getValue();
    const bool indexSource = compress.getIsIndexSource().getValue();
    const int64_t ihd = compress.getIndexHeadDim();
    const int64_t indexHeads = compress.getIndexNHeads();
    TieOrderAttr tieOrder = compress.getTieOrder();
    RopeAttr rope = config.getRope();
    FloatAttr eps = config.getNormEps();
    Type bf16 = b.getBF16Type(), i64 = b.getI64Type(), i32 = b.getI32Type();
    const int64_t dyn = ShapedType::kDynamic;
    auto perToken = [&](ArrayRef<int64_t> rest, Type elem) {
      SmallVector<int64_t> shape{tokens};
      shape.append(rest.begin(), rest.end());
      return RankedTensorType::get(shape, elem);
    };
    auto i64Attr = [&](int64_t v) { return b.getI64IntegerAttr(v); };
    // Publishing a value into a slot: a cast to the slot's type (its row count is dynamic).
    auto publish = [&](SharedSlot slot, Value value) {
      Type slotType = slotTypes[slot];
      slots[slot] = value.getType() == slotType ? value : Value(tensor::CastOp::create(b, loc, slotType, value));
    };
    CompressedStep out;

    // Section 8 step 1 (kv source): the compressor's latent for the groups completed in this step, then its
    // index keys (section 6 step 1, from the PRE-RoPE latent) and the index_k publication.
    Value latent, groupPos, newIndexCache;
    // The quirk's per-token keys (published_slot, ratio >= 2): the index_k slot as it entered the layer, which a
    // token closing no group scores against (dsa.indexer_scores `entry_keys`).
    Value entryIndexKeys;
    const unsigned cacheBase = ratio == 1 ? 0 : 2;
    if (kvSource) {
      ValueRange compressor = op.getCompressor();
      if (ratio == 1) {
        latent = in.latent();
      } else {
        Type f32 = b.getF32Type();
        auto [kvF, scoreF] = in.pool();
        auto pool = CompressPoolOp::create(b, loc, RankedTensorType::get({dyn, headDim}, f32), state[0].getType(),
                                           state[1].getType(), kvF, scoreF, state[0], state[1], startPos,
                                           i64Attr(ratio));
        out.newState.push_back(pool.getNewKvState());
        out.newState.push_back(pool.getNewScoreState());
        Value pooled =
            arith::TruncFOp::create(b, loc, RankedTensorType::get({dyn, headDim}, bf16), pool.getPooled());
        latent = RmsNormOp::create(b, loc, pooled.getType(), pooled, compressor[2], eps);
      }
      // g groups completed in this step; group j stands for position j * r (section 5), so this step's groups
      // start at (start_pos // r) * r.
      const int64_t groupRows = cast<RankedTensorType>(latent.getType()).getDimSize(0);
      Value g = tensor::DimOp::create(b, loc, latent, c0);
      Value ratioI64 = arith::ConstantIntOp::create(b, loc, i64, ratio);
      Value firstGroup = arith::FloorDivSIOp::create(b, loc, startPos, ratioI64);
      Value groupStart = arith::MulIOp::create(b, loc, firstGroup, ratioI64);
      groupPos =
          PositionsOp::create(b, loc, RankedTensorType::get({groupRows}, i64), groupStart, g, i64Attr(ratio));

      ValueRange indexKeys = op.getIndexKeys();
      Value kLin = LinearOp::create(b, loc, RankedTensorType::get({groupRows, ihd}, bf16), latent, indexKeys[0]);
      Value kNorm = RmsNormOp::create(b, loc, kLin.getType(), kLin, indexKeys[1], eps);
      Value kRope = ApplyRopeOp::create(b, loc, kNorm.getType(), kNorm, groupPos, rope, UnitAttr());
      Value kQuant = Fp4QuantE8M0Op::create(b, loc, kRope.getType(), kRope, i64Attr(kIndexFp4BlockSize));
      Value indexCache = state[cacheBase + 1];
      newIndexCache =
          CacheWriteOp::create(b, loc, indexCache.getType(), indexCache, kQuant, startPos, i64Attr(ratio));
      if (compress.getIndexKSource().getValue() == IndexKSource::own_cache) {
        publish(kIndexK, newIndexCache);
      } else {
        // The reference quirk: the index-key cache is republished only in a step that produced a latent.
        Value previous = slots[kIndexK];
        if (ratio >= 2)
          entryIndexKeys = previous;
        if (!in.publishIndexK)
          publish(kIndexK, newIndexCache);
        Value hasLatent = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, g, c0);
        slots[kIndexK] = in.publishIndexK ? in.publishIndexK(hasLatent, newIndexCache, previous)
                                          : arith::SelectOp::create(b, loc, hasLatent, slots[kIndexK], previous);
      }
    }

    // Section 8 step 2 (index source): the indexer (section 6 steps 2-7) against the index_k slot as it stands.
    Value compressedIdx;
    if (indexSource) {
      auto [iq, weights] = in.indexer();
      // weight_scale = ihd^-0.5 * IH^-0.5 (Python floats, f64), then f32.
      const float weightScale = static_cast<float>(std::pow(static_cast<double>(ihd), -0.5) *
                                                   std::pow(static_cast<double>(indexHeads), -0.5));
      Type scoresType = perToken({dyn}, bf16);
      Value scores = IndexerScoresOp::create(b, loc, scoresType, iq, weights, slots[kIndexK], startPos,
                                             entryIndexKeys, i64Attr(ratio), b.getF32FloatAttr(weightScale));
      scores = CompressVisibilityOp::create(b, loc, scoresType, scores, startPos, i64Attr(ratio));
      if (compress.getIsCandidateSource().getValue()) {
        Value mask = SelectCandidateBlocksOp::create(
            b, loc, perToken({dyn}, b.getI1Type()), scores, startPos, i64Attr(ratio),
            i64Attr(compress.getCandidateTopkBlocks()), i64Attr(compress.getCandidateBlockSize()), tieOrder);
        publish(kCandidates, mask);
      }
      if (compress.getUsesCandidates().getValue())
        scores = ApplyCandidatesOp::create(b, loc, scoresType, scores, slots[kCandidates]);
      if (probe)
        probe("index_score", scores);
      compressedIdx = IndexerTopkOp::create(b, loc, perToken({dyn}, i32), scores, startPos, i64Attr(ratio),
                                            i64Attr(compress.getIndexTopk()), i64Attr(config.getWindowSize()),
                                            tieOrder);
      publish(kTopkIdxs, compressedIdx);
    } else {
      compressedIdx = slots[kTopkIdxs];
    }

    // Section 8 step 3 (kv source): the latent rotated at its group positions, fp4 (e4m3 scales), into the
    // compressed-KV cache (g may be 0: nothing is written); the cache is published every step.
    if (kvSource) {
      Value lRope = ApplyRopeOp::create(b, loc, latent.getType(), latent, groupPos, rope, UnitAttr());
      Value lQuant = Fp4QuantE4M3Op::create(b, loc, lRope.getType(), lRope, i64Attr(kLatentFp4BlockSize));
      Value kvCache = state[cacheBase];
      Value newKvCache = CacheWriteOp::create(b, loc, kvCache.getType(), kvCache, lQuant, startPos, i64Attr(ratio));
      out.newState.push_back(newKvCache);
      out.newState.push_back(newIndexCache);
      publish(kCompressKv, newKvCache);
    }

    // Section 8 step 4: window rows then compress_kv[0 .. end//r), window indices then the compressed ones.
    Value startIdx = arith::IndexCastOp::create(b, loc, b.getIndexType(), startPos);
    Value end = arith::AddIOp::create(b, loc, startIdx, s);
    Value ratioIdx = arith::ConstantIndexOp::create(b, loc, ratio);
    out.endRows = arith::FloorDivSIOp::create(b, loc, end, ratioIdx);
    out.compressedRows = firstRows(b, loc, slots[kCompressKv], out.endRows);
    out.rows = tensor::ConcatOp::create(b, loc, /*dim=*/0, ValueRange{windowRows, out.compressedRows});
    out.idx = tensor::ConcatOp::create(b, loc, /*dim=*/1, ValueRange{windowIdx, compressedIdx});
    return out;
  }

  /// A batched step (unsupportedReason checked the shapes): the row-wise ops over the B rows, one scf.for over the
  /// sequences for the ring, the window, the compressed part (emitCompressedStep on sequence b's slices of the
  /// state and the slots) and sparse attention, the row-wise output. The slots a layer publishes per sequence are
  /// padded to one shape for the batch (docs/architecture.md "Batch"): index_k (the quirk's per-sequence choice)
  /// to the larger of the incoming rows and C, topk_idxs with -1 to index_topk columns, candidates with false to C
  /// columns; sequence b's slice of a slot is its batch-1 slot followed by the padding.
  LogicalResult rewriteBatched(AttentionOp op, PatternRewriter &rewriter) const {
    AttnConfigAttr config = op.getConfig();
    Location loc = op.getLoc();
    const int64_t nHeads = config.getNHeads();
    const int64_t headDim = config.getHeadDim();
    const int64_t window = config.getWindowSize();
    const int64_t ratio = config.getCompressRatio();
    Type bf16 = rewriter.getBF16Type();
    Type i32 = rewriter.getI32Type();
    const int64_t dyn = ShapedType::kDynamic;
    auto xType = cast<RankedTensorType>(op.getX().getType());
    // B: static when x's leading dimension is.
    const int64_t batch = xType.getDimSize(0);
    auto perRow = [&](ArrayRef<int64_t> rest, Type elem) {
      SmallVector<int64_t> shape{batch};
      shape.append(rest.begin(), rest.end());
      return RankedTensorType::get(shape, elem);
    };
    auto i64Attr = [&](int64_t v) { return rewriter.getI64IntegerAttr(v); };
    auto idx = [&](int64_t v) -> OpFoldResult { return rewriter.getIndexAttr(v); };

    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value b = tensor::DimOp::create(rewriter, loc, op.getX(), c0);
    OpFoldResult batchOfr = ShapedType::isDynamic(batch) ? OpFoldResult(b) : idx(batch);
    // [B, 1, dim] -> [B, dim]: row b is sequence b's token; its position is start_pos[b].
    Value x = tensor::CollapseShapeOp::create(rewriter, loc, perRow({config.getDim()}, bf16), op.getX(),
                                              ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    Value pos = op.getStartPos();
    if (cast<RankedTensorType>(pos.getType()).getDimSize(0) != batch)
      pos = tensor::CastOp::create(rewriter, loc, perRow({}, rewriter.getI64Type()), pos);

    // Section 3 (queries) and section 4's kv row, row-wise over the B rows: the batch-1 step's ops.
    auto [qr, q] = emitQueries(rewriter, loc, op, x, pos, batch, batchOfr);
    Value kv = emitKvRows(rewriter, loc, op, x, pos, batch);

    // The compressed part's row-wise inputs over the B rows, and the padded slots this layer publishes.
    CompressConfigAttr compress = config.getCompress();
    const bool kvSource = ratio > 0 && compress.getIsKvSource().getValue();
    const bool indexSource = ratio > 0 && compress.getIsIndexSource().getValue();
    const bool candidateSource = indexSource && compress.getIsCandidateSource().getValue();
    const bool ownCache = kvSource && compress.getIndexKSource().getValue() == IndexKSource::own_cache;
    const bool publishesIndexK = kvSource && !ownCache; // per sequence: the quirk's choice
    Value latentAll, kvFAll, scoreFAll, iqAll, weightsAll;
    SmallVector<Value> published; // padded inits: index_k (publishesIndexK), topk_idxs (index), candidates
    if (ratio > 0) {
      ValueRange compressor = op.getCompressor();
      FloatAttr eps = config.getNormEps();
      if (kvSource && ratio == 1) {
        Value lin = LinearOp::create(rewriter, loc, perRow({headDim}, bf16), x, compressor[0]);
        latentAll = RmsNormOp::create(rewriter, loc, lin.getType(), lin, compressor[1], eps);
      } else if (kvSource) {
        Type f32 = rewriter.getF32Type();
        Value xf = arith::ExtFOp::create(rewriter, loc, perRow({config.getDim()}, f32), x);
        kvFAll = LinearOp::create(rewriter, loc, perRow({headDim}, f32), xf, compressor[0]);
        scoreFAll = LinearOp::create(rewriter, loc, perRow({headDim}, f32), xf, compressor[1]);
      }
      if (indexSource)
        std::tie(iqAll, weightsAll) = emitIndexerRows(rewriter, loc, op, x, qr, pos, batch, batchOfr);

      const int64_t cap = (compress.getMaxSeqLen() + ratio - 1) / ratio; // C
      SmallVector<Value> batchSizes;
      if (ShapedType::isDynamic(batch))
        batchSizes.push_back(b);
      // [B, 1, width] of `fill`: an empty [B, 1, 0] padded.
      auto filled = [&](Type elem, int64_t width, TypedAttr fill) -> Value {
        Value empty = tensor::EmptyOp::create(rewriter, loc, perRow({1, 0}, elem), batchSizes);
        Value value = arith::ConstantOp::create(rewriter, loc, fill);
        return tensor::PadOp::create(rewriter, loc, perRow({1, width}, elem), empty,
                                     ArrayRef<OpFoldResult>{idx(0), idx(0), idx(0)},
                                     ArrayRef<OpFoldResult>{idx(0), idx(0), idx(width)}, value);
      };
      if (publishesIndexK) {
        // The incoming slot padded with zero rows to max(rows, C): a sequence keeps its slot or takes its cache.
        Value incoming = op.getShared()[kIndexK];
        auto type = cast<RankedTensorType>(incoming.getType());
        Value rowsIn = tensor::DimOp::create(rewriter, loc, incoming, 1);
        Value capIdx = arith::ConstantIndexOp::create(rewriter, loc, cap);
        Value rowsOut = arith::MaxSIOp::create(rewriter, loc, rowsIn, capIdx);
        Value extra = arith::SubIOp::create(rewriter, loc, rowsOut, rowsIn);
        Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(bf16));
        published.push_back(tensor::PadOp::create(
            rewriter, loc, RankedTensorType::get({batch, dyn, type.getDimSize(2)}, bf16), incoming,
            ArrayRef<OpFoldResult>{idx(0), idx(0), idx(0)}, ArrayRef<OpFoldResult>{idx(0), extra, idx(0)}, zero));
      }
      if (indexSource)
        published.push_back(filled(i32, compress.getIndexTopk(), rewriter.getI32IntegerAttr(-1)));
      if (candidateSource)
        published.push_back(filled(rewriter.getI1Type(), cap, rewriter.getBoolAttr(false)));
    }

    // The per-sequence part: sequence b's ring, window, compressed part and sparse attention on its slices.
    SmallVector<Value> dynSizes;
    if (ShapedType::isDynamic(batch))
      dynSizes.push_back(b);
    Value oInit = tensor::EmptyOp::create(rewriter, loc, perRow({nHeads, headDim}, bf16), dynSizes);
    const float scale = static_cast<float>(std::pow(static_cast<double>(headDim), -0.5));
    SmallVector<Value> inits{oInit, op.getRing()};
    inits.append(op.getState().begin(), op.getState().end());
    inits.append(published.begin(), published.end());
    const unsigned stateBase = 2, numState = op.getState().size(), publishedBase = stateBase + numState;
    auto loop = scf::ForOp::create(
        rewriter, loc, c0, b, c1, inits, [&](OpBuilder &builder, Location bodyLoc, Value seq, ValueRange iter) {
          auto ones = [&](int64_t rank) { return SmallVector<OpFoldResult>(rank, idx(1)); };
          auto at = [&](int64_t rank) {
            SmallVector<OpFoldResult> offsets(rank, idx(0));
            offsets[0] = seq;
            return offsets;
          };
          // The size of dimension d of `t` as a fold result.
          auto sizeOf = [&](Value t, int64_t d) -> OpFoldResult {
            int64_t n = cast<RankedTensorType>(t.getType()).getDimSize(d);
            if (!ShapedType::isDynamic(n))
              return idx(n);
            return tensor::DimOp::create(builder, bodyLoc, t, d).getResult();
          };
          // Sequence b's row of a batched tensor `all` [B, ...]: [1, ...] (rank kept).
          auto rowOf = [&](Value all) -> Value {
            auto type = cast<RankedTensorType>(all.getType());
            SmallVector<int64_t> shape(type.getShape());
            shape[0] = 1;
            SmallVector<OpFoldResult> sizes{idx(1)};
            for (int64_t d = 1; d < type.getRank(); ++d)
              sizes.push_back(sizeOf(all, d));
            return tensor::ExtractSliceOp::create(builder, bodyLoc, RankedTensorType::get(shape, type.getElementType()),
                                                  all, at(type.getRank()), sizes, ones(type.getRank()));
          };
          // Sequence b's slice of a batched [B, rows, width] tensor as [rows, width] (rows: `rows` when given).
          auto sliceOf = [&](Value all, std::optional<OpFoldResult> rows = std::nullopt) -> Value {
            auto type = cast<RankedTensorType>(all.getType());
            OpFoldResult r = rows ? *rows : sizeOf(all, 1);
            auto sliceType = RankedTensorType::get(
                {getConstantIntValue(r).value_or(dyn), type.getDimSize(2)}, type.getElementType());
            return tensor::ExtractSliceOp::create(builder, bodyLoc, sliceType, all, at(3),
                                                  ArrayRef<OpFoldResult>{idx(1), r, sizeOf(all, 2)}, ones(3));
          };
          // `value` [rows, width] into sequence b's slice of `all` [B, ..., ...] at [b, 0, 0].
          auto insertInto = [&](Value value, Value all) -> Value {
            return tensor::InsertSliceOp::create(builder, bodyLoc, value, all, at(3),
                                                 ArrayRef<OpFoldResult>{idx(1), sizeOf(value, 0), sizeOf(value, 1)},
                                                 ones(3));
          };
          Value startPos = tensor::ExtractOp::create(builder, bodyLoc, op.getStartPos(), ValueRange{seq});
          auto ringSlice = RankedTensorType::get({window, headDim}, bf16);
          auto qSlice = RankedTensorType::get({1, nHeads, headDim}, bf16);
          Value ring = sliceOf(iter[1]);
          Value kvRow = rowOf(kv);
          Value qRow = rowOf(q);
          Value newRing = RingUpdateOp::create(builder, bodyLoc, ringSlice, ring, kvRow, startPos);
          Value rows = WindowKvOp::create(builder, bodyLoc, RankedTensorType::get({dyn, headDim}, bf16), kvRow, ring,
                                          startPos);
          Value widx = WindowIndicesOp::create(builder, bodyLoc, RankedTensorType::get({1, dyn}, i32), startPos, c1,
                                               i64Attr(window));
          SmallVector<Value> yields(iter.begin(), iter.end());
          SmallVector<Value> newState, publishedSlots;
          Value publishedIndexK; // the padded index_k slot with sequence b's slot written (publishesIndexK)
          if (ratio > 0) {
            CompressedInputs in;
            in.latent = [&]() { return rowOf(latentAll); };
            in.pool = [&]() -> std::pair<Value, Value> { return {rowOf(kvFAll), rowOf(scoreFAll)}; };
            in.indexer = [&]() -> std::pair<Value, Value> { return {rowOf(iqAll), rowOf(weightsAll)}; };
            // The quirk's choice without a select of tensors: the padded slot already holds sequence b's incoming
            // slot, so the new cache is written over its first rows only when the step produced a latent (a
            // dynamic row count, C or 0), and the slot the indexer reads is sequence b's slice of the result, cut
            // to the batch-1 slot's rows (C or the incoming rows).
            if (publishesIndexK) {
              in.publishIndexK = [&](Value hasLatent, Value newCache, Value previous) -> Value {
                Value cacheRows = tensor::DimOp::create(builder, bodyLoc, newCache, 0);
                Value written = arith::SelectOp::create(builder, bodyLoc, hasLatent, cacheRows, c0);
                const int64_t ihd = cast<RankedTensorType>(newCache.getType()).getDimSize(1);
                Value part = tensor::ExtractSliceOp::create(
                    builder, bodyLoc, RankedTensorType::get({dyn, ihd}, bf16), newCache,
                    ArrayRef<OpFoldResult>{idx(0), idx(0)}, ArrayRef<OpFoldResult>{written, idx(ihd)}, ones(2));
                publishedIndexK = insertInto(part, iter[publishedBase]);
                Value rowsIn = tensor::DimOp::create(builder, bodyLoc, previous, 0);
                Value rowsOut = arith::SelectOp::create(builder, bodyLoc, hasLatent, cacheRows, rowsIn);
                return sliceOf(publishedIndexK, OpFoldResult(rowsOut));
              };
            }
            SmallVector<Value> state;
            for (unsigned i = 0; i < numState; ++i)
              state.push_back(sliceOf(iter[stateBase + i]));
            // The slots as they entered the layer, sequence b's slice, as batch-1 slot values: compress_kv and
            // index_k whole (readers take a prefix), topk_idxs [1, columns] (-1 padding: sparse_attn skips it),
            // candidates cut to this row's width (end // ratio; apply_candidates checks it against the scores).
            SmallVector<Type> slotTypes;
            SmallVector<Value> slots;
            for (unsigned i = 0; i < kNumSlots; ++i) {
              auto type = cast<RankedTensorType>(op.getShared()[i].getType());
              const bool tokenRow = i == kTopkIdxs || i == kCandidates;
              slotTypes.push_back(
                  RankedTensorType::get({dyn, tokenRow ? dyn : type.getDimSize(2)}, type.getElementType()));
              std::optional<OpFoldResult> rowsOfSlot;
              if (tokenRow)
                rowsOfSlot = idx(1);
              Value slice;
              if (i == kCandidates) {
                Value startIdx = arith::IndexCastOp::create(builder, bodyLoc, builder.getIndexType(), startPos);
                Value end = arith::AddIOp::create(builder, bodyLoc, startIdx, c1);
                Value width = arith::FloorDivSIOp::create(
                    builder, bodyLoc, end, arith::ConstantIndexOp::create(builder, bodyLoc, ratio));
                Value columns = arith::MinSIOp::create(
                    builder, bodyLoc, width, tensor::DimOp::create(builder, bodyLoc, op.getShared()[i], 2));
                slice = tensor::ExtractSliceOp::create(
                    builder, bodyLoc, RankedTensorType::get({1, dyn}, type.getElementType()), op.getShared()[i],
                    at(3), ArrayRef<OpFoldResult>{idx(1), idx(1), columns}, ones(3));
              } else {
                slice = sliceOf(op.getShared()[i], rowsOfSlot);
              }
              slots.push_back(slice.getType() == slotTypes[i]
                                  ? slice
                                  : Value(tensor::CastOp::create(builder, bodyLoc, slotTypes[i], slice)));
            }
            CompressedStep step = emitCompressedStep(builder, bodyLoc, op, in, startPos, c1, c0, /*tokens=*/1, rows,
                                                     widx, state, slotTypes, slots, nullptr);
            rows = step.rows;
            widx = step.idx;
            newState.assign(step.newState.begin(), step.newState.end());
            publishedSlots = slots;
          }
          Value o = SparseAttnOp::create(builder, bodyLoc, qSlice, qRow, rows, widx, op.getAttnSink(),
                                         builder.getF32FloatAttr(scale));
          // The state and published slots go back into the batched tensors AFTER sparse attention, the last reader
          // of the new caches (its rows are a slice of the new compressed-KV cache): one-shot bufferization then
          // updates sequence b's cache rows in the batched buffer in place. Inserted before that read, the write
          // into the iter_arg would precede a read of an alias of it, and the analysis copies the whole cache
          // slice out and back per sequence (two copies of C x head_dim per sequence and step). The padded index_k
          // slot is the exception: in.publishIndexK wrote it before the indexer, which reads its result.
          if (ratio > 0) {
            unsigned p = publishedBase;
            if (publishesIndexK)
              yields[p++] = publishedIndexK;
            if (indexSource) {
              yields[p] = insertInto(publishedSlots[kTopkIdxs], iter[p]);
              ++p;
            }
            if (candidateSource)
              yields[p] = insertInto(publishedSlots[kCandidates], iter[p]);
            for (unsigned i = 0; i < numState; ++i)
              yields[stateBase + i] = insertInto(newState[i], iter[stateBase + i]);
          }
          yields[0] = tensor::InsertSliceOp::create(builder, bodyLoc, o, iter[0], at(3),
                                                    ArrayRef<OpFoldResult>{idx(1), idx(nHeads), idx(headDim)},
                                                    ones(3));
          yields[1] = insertInto(newRing, iter[1]);
          scf::YieldOp::create(builder, bodyLoc, yields);
        });

    // Section 11, row-wise: inverse RoPE at each row's position, grouped wo_a, wo_b; back to [B, 1, dim].
    Value outRows = emitOutput(rewriter, loc, op, loop.getResult(0), pos, batch, perRow({config.getDim()}, bf16));
    Value out = tensor::ExpandShapeOp::create(rewriter, loc, op.getOut().getType(), outRows,
                                              ArrayRef<ReassociationIndices>{{0, 1}, {2}},
                                              ArrayRef<OpFoldResult>{batchOfr, idx(1), idx(config.getDim())});
    SmallVector<Value> results{out, loop.getResult(1)};
    if (ratio > 0) {
      for (unsigned i = 0; i < numState; ++i)
        results.push_back(loop.getResult(stateBase + i));
      // The slots after this layer: what it published (batched), the others as they came.
      SmallVector<Value> slots(op.getShared().begin(), op.getShared().end());
      const unsigned cacheBase = ratio == 1 ? 0 : 2;
      if (kvSource) {
        slots[kCompressKv] = loop.getResult(stateBase + cacheBase);
        if (ownCache)
          slots[kIndexK] = loop.getResult(stateBase + cacheBase + 1);
      }
      unsigned p = publishedBase;
      if (publishesIndexK)
        slots[kIndexK] = loop.getResult(p++);
      if (indexSource)
        slots[kTopkIdxs] = loop.getResult(p++);
      if (candidateSource)
        slots[kCandidates] = loop.getResult(p);
      for (unsigned i = 0; i < kNumSlots; ++i) {
        Type want = op.getNewShared()[i].getType();
        results.push_back(slots[i].getType() == want ? slots[i]
                                                     : Value(tensor::CastOp::create(rewriter, loc, want, slots[i])));
      }
    }
    rewriter.replaceOp(op, results);
    return success();
  }

  /// Rows [0, n) of a rank-2 tensor: `tensor.extract_slice %t[0, 0] [n, w] [1, 1]` -> [?, w].
  static Value firstRows(OpBuilder &rewriter, Location loc, Value t, Value n) {
    auto type = cast<RankedTensorType>(t.getType());
    const int64_t width = type.getDimSize(1);
    OpFoldResult widthOfr = ShapedType::isDynamic(width)
                                ? OpFoldResult(tensor::DimOp::create(rewriter, loc, t, 1).getResult())
                                : OpFoldResult(rewriter.getIndexAttr(width));
    auto resultType = RankedTensorType::get({ShapedType::kDynamic, width}, type.getElementType());
    return tensor::ExtractSliceOp::create(rewriter, loc, resultType, t,
                                          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0), rewriter.getIndexAttr(0)},
                                          ArrayRef<OpFoldResult>{n, widthOfr},
                                          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
  }
};

struct DecomposeAttentionPass : impl::DSADecomposeAttentionBase<DecomposeAttentionPass> {
  using DSADecomposeAttentionBase::DSADecomposeAttentionBase;
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
    populateDecomposeAttentionPatterns(patterns, probeIndexScores);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace

void populateDecomposeAttentionPatterns(RewritePatternSet &patterns, bool probeIndexScores) {
  patterns.add<DecomposeAttention>(patterns.getContext(), probeIndexScores);
}

} // namespace mlir::dsa
