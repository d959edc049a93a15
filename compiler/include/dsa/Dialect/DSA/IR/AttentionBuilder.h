//===- AttentionBuilder.h - build a dsa.attention layer function -------------===//
//
// One `func.func` holding one `dsa.attention` (DSAOps.td, attention-semantics.md sections 1-11), built with
// OpBuilder and the generated attribute getters from a typed layer configuration. The one place that writes such a
// function: tools/dsa-run (golden replay), the CPU differential tests and bench/dsa-bench all call it.
//
// The function is
//
//   func.func @<name>(%x, %start_pos: i64, %ring, weights..., compressor..., index_keys..., indexer..., state...,
//                     shared...) -> (out, new_ring, new_state..., new_shared...)
//
// with one dsa.attention over its arguments in that order (each group as dsa.attention's operand group of that
// name) returning its results. `out` has the type of `x`, `new_ring` that of `ring`, `new_state` / `new_shared`
// those of `state` / `shared`.
//
// Errors: every function here reports a bad configuration or operand type as an MLIR error diagnostic at the given
// location, naming the function and the bad field (the #dsa.attn_config / #dsa.rope / #dsa.yarn / #dsa.compress
// verifiers' messages, prefixed with the attribute they come from) or the bad operand (dsa.attention's verifier), and
// returns failure; nothing is left behind in the IR on failure.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_DIALECT_DSA_IR_ATTENTIONBUILDER_H
#define DSA_DIALECT_DSA_IR_ATTENTIONBUILDER_H

#include "dsa/Dialect/DSA/IR/DSAAttrs.h"

#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
class OpBuilder;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace mlir::dsa {

/// YaRN parameters of a compress_ratio > 0 layer's RoPE table (section 2; #dsa.yarn): the reference's
/// original_seq_len, rope_factor, beta_fast, beta_slow.
struct AttentionYarn {
  int64_t originalSeqLen = 0;
  double factor = 0, betaFast = 0, betaSlow = 0;
};

/// Role and indexer geometry of a compress_ratio > 0 layer (sections 1, 5-8; #dsa.compress).
struct AttentionCompress {
  bool isKvSource = false, isIndexSource = false, isCandidateSource = false, usesCandidates = false;
  int64_t indexNHeads = 0, indexHeadDim = 0, indexTopk = 0;
  int64_t candidateTopkBlocks = 0, candidateBlockSize = 0;
  /// Cache capacity in tokens: the kv source's caches hold ceil(max_seq_len / compress_ratio) rows.
  int64_t maxSeqLen = 0;
  IndexKSource indexKSource = IndexKSource::published_slot;
  TieOrder tieOrder = TieOrder::torch_cpu;
};

/// One attention layer (section 1; #dsa.attn_config), named as in the reference's ModelArgs.
struct AttentionLayerConfig {
  /// The function's symbol; empty: "attention_L<layerId>".
  std::string name;
  int64_t layerId = 0;
  int64_t dim = 0, nHeads = 0, headDim = 0, ropeHeadDim = 0, qLoraRank = 0, oGroups = 0, oLoraRank = 0;
  int64_t windowSize = 0;
  /// 0: window only. > 0 needs `yarn` and `compress`.
  int64_t compressRatio = 0;
  /// Stored as an f32 attribute (rounded to nearest, as the parser rounds an f32 literal).
  double normEps = 0;
  /// Theta of this layer's RoPE table (f64): rope_theta for ratio 0, compress_rope_theta for ratio > 0.
  double ropeTheta = 0;
  std::optional<AttentionYarn> yarn;
  std::optional<AttentionCompress> compress;

  /// `name`, or "attention_L<layerId>" when it is empty.
  std::string functionName() const;
};

/// The operand types of a layer function, by dsa.attention operand group (each group in the order the op's
/// description lists it: weights = attn_sink, wq_a, q_norm, wq_b, wkv, kv_norm, wo_a, wo_b; and so on).
struct AttentionOperandTypes {
  Type x, ring;
  /// Null: `i64` (one sequence). A `tensor<B x i64>`: a batched decode step (x `[B, 1, dim]`, ring
  /// `[B, window_size, head_dim]`; DSAOps.td).
  Type startPos;
  SmallVector<Type> weights, compressor, indexKeys, indexer, state, shared;
};

/// The #dsa.attn_config of `config` (with its #dsa.rope, #dsa.yarn, #dsa.compress), built with the verifying
/// getters: failure, with an error at `loc` naming the field, for a configuration the attributes reject.
FailureOr<AttnConfigAttr> buildAttnConfig(Location loc, const AttentionLayerConfig &config);

/// The canonical operand types of `config`'s layer (DSAOps.td, dsa.attention): x `[?, dim]` bf16; ring
/// `[window_size, head_dim]` bf16; the eight weights (attn_sink f32, the rest bf16) with their static shapes;
/// for a kv source the compressor (ratio 1: wkv bf16; ratio >= 2: wkv and wgate f32; norm bf16), index_keys
/// (wk, k_norm) and state (ratio >= 2: kv_state, score_state [ratio, head_dim] f32; then the compressed-KV cache
/// [C, head_dim] and the index-key cache [C, index_head_dim] bf16, C = ceil(max_seq_len / ratio)); for an index
/// source the indexer (wq_b, weights_proj); for every ratio > 0 layer the four shared slots
/// `[?, head_dim]` bf16, `[?, index_head_dim]` bf16, `[?, ?]` i32, `[?, ?]` i1. Failure (error at `loc`) when
/// `config` is invalid (checked first, as buildAttnConfig).
FailureOr<AttentionOperandTypes> canonicalAttentionOperandTypes(Location loc, const AttentionLayerConfig &config);

/// The operand types of `config`'s layer as a batched decode step of `batch` sequences (ShapedType::kDynamic: any
/// number, fixed per call): x `[B, 1, dim]`, start_pos `tensor<B x i64>`, ring `[B, window_size, head_dim]`, the
/// weights as canonicalAttentionOperandTypes; a compressed layer's state with a leading B (`[B, ratio, head_dim]`,
/// `[B, C, ...]`) and its slots `[B, ?, head_dim]`, `[B, ?, index_head_dim]`, `[B, 1, ?]` i32, `[B, 1, ?]` i1.
/// Failure (error at `loc`) for an invalid `config` or a batch < 1.
FailureOr<AttentionOperandTypes> batchedAttentionOperandTypes(Location loc, const AttentionLayerConfig &config,
                                                              int64_t batch);

/// Builds the layer function at `builder`'s insertion point (e.g. the end of a module's body) with the given
/// operand types, and verifies it (dsa.attention's verifier checks every operand type against the configuration).
/// On failure: an error at `loc` (the configuration's field, a null or non-tensor operand type, the wrong number of
/// weights, or the verifier's message naming the operand), nothing inserted.
FailureOr<func::FuncOp> buildAttentionFunction(OpBuilder &builder, Location loc, const AttentionLayerConfig &config,
                                               const AttentionOperandTypes &types);

/// As above with canonicalAttentionOperandTypes(loc, config).
FailureOr<func::FuncOp> buildAttentionFunction(OpBuilder &builder, Location loc, const AttentionLayerConfig &config);

} // namespace mlir::dsa

#endif // DSA_DIALECT_DSA_IR_ATTENTIONBUILDER_H
