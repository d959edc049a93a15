//===- TinyModel.h - the non-attention part of the tiny golden model (MLIR-free) -===//
//
// Test scaffolding that replays the toy model of shared/spec/tiny-model-harness.md ("Model forward") around a
// per-layer attention CALLBACK: embedding, hyper-connections (hc_mixes with the Sinkhorn normalisation, hc_pre,
// hc_post), the engram hash (with its per-sequence cache of compressed ids) and the engram gate, the MoE with
// sqrt-softplus routing and the shared expert, the final norm and the f32 head. The attention of every layer is
// whatever the callback returns, so the dsa dialect (or a stored golden tensor) can supply it while the harness
// feeds each layer its true input. Not part of the dialect.
//
// Precision (harness doc + attention-semantics.md section 2): every bf16 GEMM and the f32 head go through
// kernels::linear, every RMSNorm through kernels::rmsNorm; the rest is f32 with the bf16 rounding points the
// harness doc names (hc_pre, hc_post, each expert output, the MoE sum, the engram output).
//
// All configuration comes from the golden's fixture (golden::Fixture) and the shapes of weights_meta; a golden of
// other sizes works unchanged. Unspecified semantics are rejected on create() with an error naming the field:
// score_func other than "sqrtsoftplus", gate_temp != 1.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_GOLDEN_TINYMODEL_H
#define DSA_GOLDEN_TINYMODEL_H

#include "dsa/Golden/GoldenFile.h"
#include "dsa/Core/Tensor.h"
#include "dsa/Support/Result.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dsa::golden {

/// The attention of layer `layer` (0-based) for one step: attnIn is `L<layer>.attn_in`, bf16 [s, dim] (after
/// attn_norm); startPos is the step's first position. Must return `L<layer>.attn_out`: bf16 [s, dim] (f32 tensors
/// holding values are accepted and rounded to bf16). An Error is passed through, prefixed with the layer.
using AttentionFn =
    std::function<Result<dsa::Tensor>(int64_t layer, const dsa::Tensor &attnIn, int64_t startPos)>;

/// Receives every named capture of a step (names and meanings: tiny-model-harness.md "File format"), in the
/// order the forward computes them. Shapes are the golden's minus its leading batch 1 (s = tokens of the step):
///   input_ids [s] i64; engram_hashes [s, n_engram_layers, cols] i64 (only with engram layers);
///   embed [s, dim] bf16;
///   per layer `L<l>.`: engram layers first `engram_in` [s, hc, dim] bf16, `engram_hash_ids` [s, cols] i64,
///   `engram_embed` [s, cols, engram_head_dim] bf16, `engram_kv` [s, dim*(hc+1)] bf16, `engram_out` [s, hc, dim]
///   bf16; then `h_in` [s, hc, dim] bf16, `pre_mix_in` [s, hc] f32, `attn_pre`/`attn_post` [s, hc] f32,
///   `attn_comb` [s, hc, hc] f32 (comb[j][k]: residual copy j, output copy k), `attn_in` [s, dim] bf16,
///   `attn_out` [s, dim] bf16 (the callback's result), `ffn_pre`/`ffn_post` [s, hc] f32, `ffn_comb` [s, hc, hc]
///   f32, `ffn_in` [s, dim] bf16, `moe_weights` [s, k] f32, `moe_indices` [s, k] i64 (descending sc + bias),
///   `ffn_out` [s, dim] bf16, `h_out` [s, hc, dim] bf16, `pre_mix_out` [s, hc] f32;
///   finally `h_final` [s, dim] bf16, `head_in` [s, dim] bf16, `logits_full` [s, vocab] f32.
/// (k = n_activated_experts, cols = engram.n_hash_cols.)
using CaptureSink = std::function<void(const std::string &name, const dsa::Tensor &value)>;

/// Called after each capture has gone to the sink, with the value the forward goes on with: it may replace it (same
/// element type and shape), e.g. by the golden's stored value (the replay's --force, Replay.h forceFromGolden).
using CaptureOverride = std::function<void(const std::string &name, dsa::Tensor &value)>;

/// Captures by name (a convenience for tests and drivers).
using CaptureMap = std::map<std::string, dsa::Tensor>;
/// A sink that stores every capture into `map` (overwriting same-named entries). `map` must outlive the sink.
CaptureSink recordInto(CaptureMap &map);

/// What one step returns.
struct StepOutputs {
  dsa::Tensor logits; ///< logits_full: f32 [s, vocab]
  dsa::Tensor hashes; ///< engram_hashes: i64 [s, n_engram_layers, cols] ([s, 0, 0] without engram layers)
};

/// The toy model of tiny-model-harness.md without its attention. Holds the regenerated non-attention weights
/// and the per-sequence state (the engram cache of compressed ids by position). Movable, not copyable.
class TinyModel {
public:
  /// Regenerates every non-attention weight of `golden` (golden::regenerateWeight, each ck-checked), checks the
  /// engram scales against fixture.engram.scales and every weight shape against the fixture. Errors name the
  /// weight / fixture field. Attention weights (`layers.L.attn.*`) are not touched.
  static Result<TinyModel> create(const GoldenFile &golden);

  TinyModel(TinyModel &&) noexcept;
  TinyModel &operator=(TinyModel &&) noexcept;
  ~TinyModel();

  /// One forward step (tiny-model-harness.md "Model forward") of tokens `ids` at positions
  /// startPos .. startPos+s-1. The sequence is defined as the tokens seen at positions < startPos plus `ids`:
  /// cached positions >= startPos+s are forgotten. Errors: empty ids, an id outside [0, vocab_size), startPos < 0,
  /// startPos + s > max_seq_len, an attention callback error or a result of the wrong shape (naming the layer).
  /// On error the engram cache is left as it was before the call. `sink` may be empty. `override` (may be empty)
  /// sees every capture after the sink and may replace it: the rest of the step reads the replacement (the ids
  /// after `input_ids`, the hash ids after `engram_hash_ids`, the routing after `moe_weights`/`moe_indices`, the
  /// mixes after `attn_pre`...; the attention callback gets the replaced `attn_in` and its result goes through
  /// `attn_out`). A replacement of another element type or shape is an error; replaced ids must be in the
  /// vocabulary and replaced expert indices below n_routed_experts.
  Result<StepOutputs> step(const std::vector<int64_t> &ids, int64_t startPos, const AttentionFn &attention,
                           const CaptureSink &sink = {}, const CaptureOverride &override = {});

  /// Forgets the sequence (every cached position).
  void reset();

  const Fixture &fixture() const;

private:
  struct Impl;
  explicit TinyModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace dsa::golden

#endif // DSA_GOLDEN_TINYMODEL_H
