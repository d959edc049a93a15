//===- CompressKernels.h - evaluators of the compressed-attention primitives (MLIR-free) ------===//
//
// The reference math of the primitives that docs/design-compressed.md adds for compress_ratio > 0 layers: the
// ratio >= 2 compressor pooling, the fp4 round trips, the compressed cache write, and the indexer's score /
// visibility / candidate / top-k stages. The MLIR interpreter's dispatcher calls exactly these. Each function
// follows the section of shared/spec/attention-semantics.md named in its comment, validates every operand and
// returns an Error whose message names the primitive and the bad operand instead of crashing.
//
// Regimes (as in the window kernels of Kernels.h): start_pos == 0 is a prefill of any s >= 1 tokens; start_pos > 0
// is a 1-token decode. Multi-token steps at start_pos > 0 (section 13) are the caller's business (feed the tokens
// one decode step at a time): the kernels whose result depends on the regime (compressPool, compressVisibility,
// selectCandidateBlocks, indexerTopk) reject them, and reject s == 0.
//
// Per query t of a step of s tokens at start_pos, with r = ratio and end = start_pos + s:
//   width          = end // r                      (compressed positions the step can see)
//   compress_len[t] = (t + 1) // r in prefill, end // r in decode   (section 6 step 5)
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_KERNELS_COMPRESSKERNELS_H
#define DSA_KERNELS_COMPRESSKERNELS_H

#include "dsa/Core/Tensor.h"
#include "dsa/Numerics/TopK.h"
#include "dsa/Support/Result.h"

#include <cstdint>

namespace dsa::kernels {

/// The result of compressPool.
struct CompressPoolResult {
  /// f32 [g, hd]: one pooled (not yet bf16-rounded, not normalised) row per group completed in this step.
  Tensor pooled;
  /// f32 [r, hd]: the updated state slots.
  Tensor kvState;
  Tensor scoreState;
};

/// compress_pool (section 5, ratio r >= 2). kv, score: f32 [s, hd] (linear_f32 of the step's tokens with wkv_c,
/// wgate_c); kvState, scoreState: f32 [r, hd] (initially zeros / -inf).
///   prefill (startPos == 0, s >= 1): rem = s % r; the last rem rows go to state slots 0..rem-1 (the other slots
///     are kept as given); each full group i (rows i*r .. i*r+r-1) pools to one row, per dimension d
///     sum_j kv[j,d] * softmax_j(score[j,d]) (softmax over the r members, f32). g = s // r (0 when s < r).
///   decode (startPos > 0, s == 1): the row goes to slot startPos % r; when (startPos+1) % r == 0 the r state slots
///     pool into one row (g = 1), otherwise g = 0.
/// Errors: ratio < 2, startPos < 0, a non-f32 or mis-shaped operand, s == 0, s > 1 at startPos > 0.
Result<CompressPoolResult> compressPool(const Tensor &kv, const Tensor &score, const Tensor &kvState,
                                        const Tensor &scoreState, int64_t startPos, int64_t ratio);

/// fp4_quant_e8m0 (section 2; indexer queries and keys, block 32): the round trip over consecutive blocks of
/// blockSize elements of the last dim. x: bf16 or f32, rank >= 1 -> bf16 of the same shape.
/// Errors: blockSize <= 0, last dim not a multiple of blockSize, non-float x.
Result<Tensor> fp4QuantE8M0(const Tensor &x, int64_t blockSize);
/// fp4_quant_e4m3 (section 2; the compressed KV latent, block 16): as fp4QuantE8M0 with e4m3-rounded scales.
Result<Tensor> fp4QuantE4M3(const Tensor &x, int64_t blockSize);

/// cache_write (sections 6 step 1, 8 step 3): cache [C, w], rows [g, w] of the same element type (g may be 0) ->
/// cache' with rows written at startPos//ratio .. startPos//ratio + g - 1, the other rows unchanged.
/// Errors: ratio < 1, startPos < 0, element type / row width mismatch, startPos//ratio + g > C (capacity overflow).
Result<Tensor> cacheWrite(const Tensor &cache, const Tensor &rows, int64_t startPos, int64_t ratio);

/// indexer_scores (section 6 steps 3-4). iq: bf16 [s, IH, ihd]; weights: bf16 [s, IH] (linear(x, weights_proj),
/// before the scale); keys: bf16 [n, ihd] with n >= width (rows 0..width-1 are read). With
/// w'[t,h] = bf16(weights[t,h] * weightScale):
///   score[t, p] = bf16( sum_h bf16( relu(bf16(iq[t,h] . keys[p])) * w'[t,h] ) ),  p < width = (startPos+s)//ratio,
/// the dot products and the h-sum accumulated in f32 (h ascending). Result bf16 [s, width] (width may be 0).
/// entryKeys (optional, bf16 [n', ihd]): at startPos > 0, row t with (startPos + t + 1) % ratio != 0 (a token
/// closing no group) reads entryKeys instead of keys (the index_k quirk per token, section 8); n' >= width is
/// required when some row reads it.
/// Errors: ratio < 1, startPos < 0, dtype/shape mismatch (s, IH, ihd), keys (or entryKeys, when read) with fewer than
/// width rows.
Result<Tensor> indexerScores(const Tensor &iq, const Tensor &weights, const Tensor &keys, int64_t startPos,
                             int64_t ratio, float weightScale, const Tensor *entryKeys = nullptr);

/// compress_visibility (section 6 step 5): scores [s, width] (bf16 or f32, width == (startPos+s)//ratio) -> the
/// same with score[t, p] = -inf for p >= compress_len[t] (prefill; a decode step sees all width positions).
/// Errors: ratio < 1, startPos < 0, s > 1 at startPos > 0, width mismatch.
Result<Tensor> compressVisibility(const Tensor &scores, int64_t startPos, int64_t ratio);

/// select_candidate_blocks (section 7): scores [s, width] -> i1 [s, width]. Rows are padded with -inf to whole
/// blocks of blockSize; a block's score is its max; the block (compress_len[t]-1) // blockSize (floor division: none
/// when compress_len[t] == 0) is set to +inf; the top-k SET of min(topkBlocks, n_blocks) blocks (tieOrder, section
/// 9) is taken and the picks whose block score is -inf are dropped; the mask is true on the kept blocks' positions.
/// Errors: ratio < 1, startPos < 0, topkBlocks < 0, blockSize < 1, s > 1 at startPos > 0, width mismatch.
Result<Tensor> selectCandidateBlocks(const Tensor &scores, int64_t startPos, int64_t ratio, int64_t topkBlocks,
                                     int64_t blockSize,
                                     numerics::TopkTieOrder tieOrder = numerics::TopkTieOrder::TorchCpu);

/// apply_candidates (section 6 step 6): scores [s, width] (bf16 or f32), mask i1 [s, width] -> scores with -inf
/// wherever the mask is false. Errors: dtype or shape mismatch.
Result<Tensor> applyCandidates(const Tensor &scores, const Tensor &mask);

/// indexer_topk (section 6 step 7): scores [s, width] -> i32 [s, k], k = min(indexTopk, width). Per row the top-k
/// SET (tieOrder, section 9) sorted ascending, each p mapped to p + offset when p < compress_len[t], else -1;
/// offset = s in prefill (the chunk's own window rows come first), windowSize in decode (the ring). A pick whose
/// score is -inf only because of the candidate mask still maps to a valid row (compress_len decides, not the score).
/// Errors: ratio < 1, startPos < 0, indexTopk < 0, windowSize < 1, s > 1 at startPos > 0, width mismatch.
Result<Tensor> indexerTopk(const Tensor &scores, int64_t startPos, int64_t ratio, int64_t indexTopk,
                           int64_t windowSize,
                           numerics::TopkTieOrder tieOrder = numerics::TopkTieOrder::TorchCpu);

} // namespace dsa::kernels

#endif // DSA_KERNELS_COMPRESSKERNELS_H
