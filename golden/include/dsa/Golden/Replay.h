//===- Replay.h - judging a whole-model replay against the golden (MLIR-free) -----------------------------===//
//
// The one rule set every whole-model golden replay applies (dsa-run --golden in interpret/cpu mode, dsa-golden on
// AOT step libraries, CPU or GPU): for each capture of a regime, in file order,
//   - not compared: the stale decode `shared.L<l>.candidates` of a layer before the candidate source (it holds the
//     previous step's mask; shared/spec/tiny-model-harness.md, "Known quirks");
//   - compared with the section 12 tolerance (Compare.h) when the replay produced it, with the section 12 rules
//     for production geometry where they apply (captureRules: the round trips' elements of sa_kv and the shared
//     caches, the selections of the index captures with the scores the replay probed);
//   - FAIL "nothing produced this capture" otherwise (a whole-model replay produces every capture).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_GOLDEN_REPLAY_H
#define DSA_GOLDEN_REPLAY_H

#include "dsa/Golden/Compare.h"
#include "dsa/Golden/GoldenFile.h"
#include "dsa/Golden/TinyModel.h"
#include "dsa/Support/Result.h"

#include <optional>
#include <string>

namespace dsa::golden {

/// The scores an index source's top-k read, as the replay records them (dsa-decompose-attention's option
/// probe-index-scores): `L<l>.index_score`, bf16 [s, width].
std::string indexScoreName(int64_t layer);

/// What the comparator may know about capture `name` of `regime` (attention-semantics.md sections 2, 4, 6-8; names
/// of tiny-model-harness.md), `got` being what the replay produced:
///   L<l>.sa_kv: the window rows (s in prefill, W in decode) are act_quant_fp8 output (e4m3, block 32), the
///     compressed rows after them (end // r) fp4_quant_e4m3 output (block 16);
///   shared.L<l>.compress_kv: fp4_quant_e4m3 (block 16); shared.L<l>.index_k: fp4_quant_e8m0 (block 32);
///   L<l>.sa_topk_idxs of a ratio > 0 layer (after its window columns) and shared.L<l>.topk_idxs: the top-k of the
///     most recent index source at or before l, offset by the window rows, with that layer's `index_score` from
///     `produced`; shared.L<l>.candidates: the candidate source's blocks with its `index_score`.
/// A selection without its scores in `produced` (a replay that does not probe them) gets no selection rule. Any
/// other capture: no rules.
CaptureRules captureRules(const Fixture &fixture, const Regime &regime, const std::string &name,
                          const dsa::Tensor &got, const CaptureMap &produced);

/// Why capture `name` of `regime` is not compared in a whole-model replay, or "" when it is compared. Only the stale
/// decode (startPos > 0) `shared.L<l>.candidates` with l < fixture.candidate_source_layer is skipped.
std::string wholeModelSkipReason(const Fixture &fixture, const Regime &regime, const std::string &name);

/// Whether capture `name` is a shared cache a step leaves behind, `shared.L<l>.compress_kv` / `shared.L<l>.index_k`
/// (the slot after layer l: some layer's cache, its visible rows), rather than rows per token. A replay that runs
/// several decode regimes as ONE step (dsa-golden --chunk-decodes) observes these only after the step's last token
/// (inside it a slot may hold another layer's cache than token-by-token decode leaves there at that token).
bool isStepStateCapture(const std::string &name);

/// A multi-token step at start_pos > 0 (a chunk: `chunkTokens` = s tokens at `chunkStart`) attends to kv rows in
/// its own coordinates: the ring as it entered the step (W rows, slot i), then the chunk's s new rows (row W + j:
/// position chunkStart + j), then the compressed rows (row W + s + c: compressed row c). A 1-token decode at
/// p = chunkStart + t attends to the ring after writing p (slot i), then the compressed rows (row W + c). This is
/// capture `name` of the chunk (`chunkValue`, all s tokens) as the decode at row `t` would have captured it, for the
/// captures written in those coordinates (attention-semantics.md sections 4, 6-8; names of tiny-model-harness.md):
///   L<l>.sa_kv         [W + s + C, hd] -> [W + (p + 1) / ratio, hd]: slot i the newest chunk row j <= t at slot i
///                      ((chunkStart + j) % W == i), else the entering ring's slot i; the compressed rows visible at p;
///   L<l>.sa_topk_idxs  [s, width] -> [1, width]: every index mapped (ring slot i -> i, chunk row j -> its slot,
///                      compressed row c -> W + c, -1 kept), each a row the decode at p reads (a ring slot whose
///                      position is in p's window, a chunk row j <= t, a compressed row c < (p + 1) / ratio);
///   shared.L<l>.topk_idxs [s, k] -> [1, k]: compressed rows, offset W + s -> W;
///   shared.L<l>.candidates [s, C] -> [1, (p + 1) / ratio of the candidate source]: the columns visible at p (the
///                      others must be unset);
/// every other per-token capture: row t. Returns nullopt for a shared cache (isStepStateCapture). Errors (naming
/// the capture): a shape that is not the chunk's, an index that does not exist in the chunk's coordinates or that a
/// decode at p cannot see, a candidate column set past what p sees.
Result<std::optional<dsa::Tensor>> decodeRowOfChunkCapture(const Fixture &fixture, const std::string &name,
                                                           const dsa::Tensor &chunkValue, int64_t chunkStart,
                                                           int64_t chunkTokens, int64_t t);

/// The verdict of capture `name` of `regime` for a whole-model replay that produced `produced` (the rules above).
/// Error: the golden has no such capture (names regime and capture).
Result<Verdict> judgeWholeModelCapture(const GoldenFile &file, const Regime &regime, const std::string &name,
                                       const CaptureMap &produced);

/// --force (attention-semantics.md section 12: continue with ONE value so that a flip or a swap does not propagate):
/// the capture `name` of `regime` when a replay may continue with it: the golden has it, the whole-model rule
/// compares it (wholeModelSkipReason is empty) and it is stored in full (stride 1). Else nullptr: a tensor stored
/// only at a stride cannot be forced.
const Capture *forceableCapture(const GoldenFile &file, const Regime &regime, const std::string &name);

/// --force: replaces `value` by the golden's capture `name` when forceableCapture has it and it matches value's
/// shape (leading 1s dropped) and kind (integers for an integer tensor, floats for a float one); value keeps its
/// element type and shape. Returns whether it replaced.
bool forceFromGolden(const GoldenFile &file, const Regime &regime, const std::string &name, dsa::Tensor &value);

} // namespace dsa::golden

#endif // DSA_GOLDEN_REPLAY_H
