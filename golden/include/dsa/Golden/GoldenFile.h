//===- GoldenFile.h - reader of the tiny-model golden (MLIR-free) --------------===//
//
// Reads a golden JSON file in the format of shared/spec/tiny-model-harness.md ("File format"):
//   { "fixture": {...config, "engram": {...tables}, "regimes": [...], "lcg_probe": [...]},
//     "weights_meta": { "<param name>": {shape, n, scale, offset, kind, dtype, ck}, ... },
//     "<regime>": { "<capture name>": {shape, n, stride, ck, data}, ... }, ... }
// Every value is validated on load: a missing or mistyped key is an Error whose message names the key path
// (e.g. `fixture.engram.primes`, `prefill12.L0.sa_q.data`). Nothing here throws; nlohmann_json stays private to
// golden/lib.
//
// Hostile input (docs/robustness.md, issue 12): every size, count and index is checked on load, before anything is
// allocated or looped over, and an impossible value is an Error naming its JSON path and the allowed range:
// - a key that an object holds twice (JSON leaves it open; the parser would keep the last): `<path>: duplicate key`;
// - a key the format does not have (a misspelt optional key would be silently ignored) in the top level (fixture,
//   weights_meta and the regimes fixture.regimes names), the fixture (the keys of tiny-model-harness.md and
//   attention-semantics.md section 1, the optional steps and n_tokens, the provenance strings reference, kernels,
//   torch, filler, input_ids_rule and storage), fixture.engram, a fixture.steps entry, a weights_meta entry
//   (shape, n, scale, offset, kind, dtype, ck) or a capture (shape, n, stride, ck, data):
//   `fixture.window_sise: unknown key (expected one of: vocab_size, dim, ...)`. Weight and capture NAMES are data,
//   not keys of the format: a capture no replay produces fails the replay ("nothing produced this capture"), a weight
//   nobody reads is unused;
// - the bounds below (far above DeepSeek-V4.1-Flash, attention-semantics.md section 1: dim 5120, head_dim 512,
//   window 128, max_seq_len up to 1M, 20 Sinkhorn iterations):
//     widths (kMaxWidth = 65536): dim, head_dim, rope_head_dim, q_lora_rank, o_lora_rank, moe_inter_dim,
//       index_head_dim, candidate_block_size, engram_head_dim, engram.head_dim, engram.scale_block, dspark_block_size;
//     counts (kMaxCount = 4096): n_layers, n_heads, o_groups, n_routed_experts, n_activated_experts,
//       n_shared_experts (>= 0), index_n_heads, engram_n_heads, engram.n_heads, vision_n_layers, n_mtp_layers,
//       max_batch_size;
//     window_size in [1, kMaxWindowSize = 2^20]; max_seq_len in [1, kMaxSeqLen = 2^22]; prefill_len in
//     [0, max_seq_len]; steps[i].seqlen in [1, kMaxSeqLen]; compress_ratios[l] in [0, kMaxCompressRatio = 65536];
//     hc_mult in [1, kMaxHcMult = 64]; hc_sinkhorn_iters in [1, kMaxSinkhornIters = 1000] (each iteration is a
//     loop over every token: an absurd count is a hang); candidate_source_layer in [-1, n_layers);
//     vocab_size, index_topk, candidate_topk_blocks, n_tokens, the engram vocabulary sizes, pad id and
//     num_embeddings at most kMaxVocabSize = 2^24; original_seq_len in [1, 2^40]; engram max_ngram_size <= 64;
//   and the products the replays allocate from them (the ring window_size * head_dim, the caches
//   max_seq_len * head_dim and max_seq_len * index_head_dim, n_heads * head_dim * q_lora_rank, vocab_size * dim,
//   the hc and expert weights, ...), overflow-checked (dsa/Support/CheckedArithmetic.h) and each at most
//   dsa::Tensor::tensorByteLimit() bytes (4 per element);
// - batch must be 1 (the captures are [1, ...]; the harness and the replays run one sequence); dtype must be
//   "bf16" and expert_dtype null or "bf16" (what the harness implements); the real numbers the forward and the
//   compiled attention use are finite (rope_theta, compress_rope_theta, rope_factor > 0);
// - weights_meta: a shape without negative extents whose product is n; kind one of "f32", "fp8", "e8m0" and dtype
//   one of "bfloat16", "float32" (kind f32), "float8_e4m3fn" (fp8), "float8_e8m0fnu" (e8m0); regenerating a weight
//   (Filler.h) refuses an n above the tensor byte limit before allocating;
// - captures: a shape without negative extents, n its product and at most kMaxCaptureElements = 2^48, stride in
//   [1, kMaxCaptureStride = 2^31] (so that the comparator's n + stride never overflows), data of ceil(n / stride)
//   samples.
// What the step libraries were compiled for is checked against the fixture by the replays (tools/dsa-golden).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_GOLDEN_GOLDENFILE_H
#define DSA_GOLDEN_GOLDENFILE_H

#include "dsa/Support/Result.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dsa::golden {

/// Bounds of the fixture's sizes and counts, checked on load (see the file comment).
inline constexpr int64_t kMaxWidth = int64_t(1) << 16;
inline constexpr int64_t kMaxCount = int64_t(1) << 12;
inline constexpr int64_t kMaxWindowSize = int64_t(1) << 20;
inline constexpr int64_t kMaxSeqLen = int64_t(1) << 22;
inline constexpr int64_t kMaxCompressRatio = int64_t(1) << 16;
inline constexpr int64_t kMaxHcMult = 64;
inline constexpr int64_t kMaxSinkhornIters = 1000;
inline constexpr int64_t kMaxVocabSize = int64_t(1) << 24;
inline constexpr int64_t kMaxOriginalSeqLen = int64_t(1) << 40;
inline constexpr int64_t kMaxNgramSize = 64;
inline constexpr int64_t kMaxCaptureStride = int64_t(1) << 31;
inline constexpr int64_t kMaxCaptureElements = int64_t(1) << 48;

/// `fixture.engram`: the tables of the engram hash and embedding (tiny-model-harness.md, `engram_hash`, `engram`).
/// `e` indexes the engram layers in the order of `layerIds`. All integers are i64 as stored in the file.
struct EngramTables {
  std::vector<int64_t> layerIds;      ///< layer_ids: the model layers that run an engram, ascending.
  int64_t maxNgramSize = 0;           ///< max_ngram_size: shifts i in 0..maxNgramSize-1.
  int64_t nHeads = 0;                 ///< n_heads: hash heads per shift.
  int64_t headDim = 0;                ///< head_dim: width of one embedding row.
  int64_t nHashCols = 0;              ///< n_hash_cols = (maxNgramSize-1) * nHeads (checked on load).
  std::vector<int64_t> numEmbeddings; ///< num_embeddings[e]: rows of layer e's table.
  int64_t padIdCompressed = 0;        ///< pad_id_compressed: the token used for blocked shifts.
  std::vector<int64_t> tokenMap;      ///< token_map[id]: compressed id (-1 = no compressed id); size vocab_size.
  /// multipliers[e][i], i < maxNgramSize. The file stores them as JSON integers; values above INT64_MAX (if any)
  /// are kept as their two's-complement i64 bit pattern, which is what the i64 wrap-around multiply needs.
  std::vector<std::vector<int64_t>> multipliers;
  std::vector<std::vector<std::vector<int64_t>>> primes; ///< primes[e][i-1][h], i in 1..maxNgramSize-1, h < nHeads.
  std::vector<std::vector<int64_t>> offsets;             ///< offsets[e][col], col < nHashCols.
  int64_t scaleBlock = 0;                                ///< scale_block: columns sharing one e8m0 scale.
  /// scales[e][row]: the e8m0 scale of each table row (powers of two, exactly representable). Must equal the
  /// e8m0-rounded filler of `layers.<layerIds[e]>.engram.embed.scale` (see Filler.h, checkEngramScales).
  std::vector<std::vector<double>> scales;
};

/// The `fixture` object: every configuration value of the golden, typed. Field names are the camelCase of the
/// JSON keys (named in each comment). Meanings: attention-semantics.md section 1 and tiny-model-harness.md.
/// Integer fields must be JSON integers; floating fields accept any JSON number; lists must be lists of that type.
struct Fixture {
  // --- model shape -----------------------------------------------------------------------------------------
  int64_t vocabSize = 0;  ///< vocab_size
  int64_t dim = 0;        ///< dim
  int64_t nLayers = 0;    ///< n_layers
  int64_t nHeads = 0;     ///< n_heads
  int64_t headDim = 0;    ///< head_dim
  int64_t ropeHeadDim = 0; ///< rope_head_dim
  int64_t qLoraRank = 0;  ///< q_lora_rank
  int64_t oLoraRank = 0;  ///< o_lora_rank
  int64_t oGroups = 0;    ///< o_groups

  // --- MoE ---------------------------------------------------------------------------------------------------
  int64_t moeInterDim = 0;       ///< moe_inter_dim
  int64_t nRoutedExperts = 0;    ///< n_routed_experts
  int64_t nSharedExperts = 0;    ///< n_shared_experts
  int64_t nActivatedExperts = 0; ///< n_activated_experts
  std::string scoreFunc;         ///< score_func (the tiny golden: "sqrtsoftplus")
  double routeScale = 0;         ///< route_scale
  bool normTopkProb = false;     ///< norm_topk_prob
  double swigluLimit = 0;        ///< swiglu_limit (0 = no clamp)

  // --- attention: window, compression, indexer, candidates (attention-semantics.md sections 1, 4-8) ----------
  int64_t windowSize = 0;                 ///< window_size (W)
  std::vector<int64_t> compressRatios;    ///< compress_ratios, one per layer (size nLayers, checked)
  std::vector<int64_t> kvSourceLayers;    ///< kv_source_layers
  std::vector<int64_t> indexSourceLayers; ///< index_source_layers
  int64_t candidateSourceLayer = -1;      ///< candidate_source_layer (-1 = off)
  int64_t candidateTopkBlocks = 0;        ///< candidate_topk_blocks
  int64_t candidateBlockSize = 0;         ///< candidate_block_size
  int64_t indexNHeads = 0;                ///< index_n_heads
  int64_t indexHeadDim = 0;               ///< index_head_dim
  int64_t indexTopk = 0;                  ///< index_topk

  // --- hyper-connections -------------------------------------------------------------------------------------
  int64_t hcMult = 0;          ///< hc_mult (copies of the residual stream)
  int64_t hcSinkhornIters = 0; ///< hc_sinkhorn_iters
  double hcEps = 0;            ///< hc_eps

  // --- engram (top-level keys; the tables are in `engram`, and the duplicated values are checked equal) ---------
  // A model without engram layers states `engram: null` and an empty engram_layer_ids (tiny-model-harness.md,
  // "Other goldens in this format"): hasEngram is false, `engram` stays empty, and the other engram_* keys are
  // optional (0 / empty when absent; read and not cross-checked when present).
  bool hasEngram = false;                   ///< fixture.engram is an object (not null)
  std::vector<int64_t> engramLayerIds;      ///< engram_layer_ids (== engram.layerIds)
  int64_t engramMaxNgramSize = 0;           ///< engram_max_ngram_size (== engram.maxNgramSize)
  int64_t engramVocabSize = 0;              ///< engram_vocab_size
  int64_t engramNHeads = 0;                 ///< engram_n_heads (== engram.nHeads)
  int64_t engramHeadDim = 0;                ///< engram_head_dim (== engram.headDim)
  int64_t engramPadId = 0;                  ///< engram_pad_id (uncompressed pad id)
  int64_t engramCompressedVocabSize = 0;    ///< engram_compressed_vocab_size
  std::vector<int64_t> engramNumEmbeddings; ///< engram_num_embeddings (== engram.numEmbeddings)

  // --- RoPE / YaRN / norms (attention-semantics.md section 2) ------------------------------------------------
  double ropeTheta = 0;         ///< rope_theta (ratio-0 layers)
  double compressRopeTheta = 0; ///< compress_rope_theta (ratio > 0 layers)
  double ropeFactor = 0;        ///< rope_factor (YaRN)
  int64_t originalSeqLen = 0;   ///< original_seq_len (YaRN)
  double betaFast = 0;          ///< beta_fast (YaRN; stored as an integer in the tiny golden)
  double betaSlow = 0;          ///< beta_slow (YaRN)
  double normEps = 0;           ///< norm_eps (RMSNorm epsilon)
  double gateTemp = 0;          ///< gate_temp

  // --- run settings ------------------------------------------------------------------------------------------
  int64_t visionNLayers = 0;              ///< vision_n_layers
  std::string dtype;                      ///< dtype (model dtype, "bf16")
  std::optional<std::string> expertDtype; ///< expert_dtype (null = same as dtype)
  int64_t nMtpLayers = 0;                 ///< n_mtp_layers
  int64_t dsparkBlockSize = 0;            ///< dspark_block_size
  int64_t maxBatchSize = 0;               ///< max_batch_size
  int64_t maxSeqLen = 0;                  ///< max_seq_len (cache capacity in tokens)
  double temperature = 0;                 ///< temperature
  int64_t batch = 0;                      ///< batch
  int64_t prefillLen = 0;                 ///< prefill_len
  std::vector<std::string> regimes;       ///< regimes: names of the steps, in the order they run (one state)
  /// n_tokens (optional): the token count n of one batch row in the input-id rule. Absent: the rule's own count,
  /// prefill_len + 2 (see regimeInputIds in Filler.h).
  std::optional<int64_t> nTokens;
  /// One entry of `steps` (optional; when present one per regime, in regimes order).
  struct Step {
    std::string regime;     ///< regime (== regimes[i], checked)
    int64_t startPos = 0;   ///< start_pos (== the tokens of the regimes before it, checked: one state)
    int64_t seqlen = 0;     ///< seqlen (== s of the regime's input_ids [1, s], checked)
    int64_t idsBegin = 0;   ///< input_ids_slice[0]: the first position of the row's ids this step feeds
    int64_t idsEnd = 0;     ///< input_ids_slice[1] (exclusive; idsEnd - idsBegin == seqlen, checked)
  };
  std::vector<Step> steps; ///< steps; empty when the fixture has none (then every regime feeds ids [start, end))

  // --- provenance (optional strings; empty when absent) ------------------------------------------------------
  std::string reference;    ///< reference
  std::string kernels;      ///< kernels
  std::string torch;        ///< torch
  std::string filler;       ///< filler (the rule as text)
  std::string inputIdsRule; ///< input_ids_rule (the rule as text)

  // --- checks ------------------------------------------------------------------------------------------------
  /// lcg_probe[i] = splitmix64(fnv1a64("probe") ^ i*0x9E3779B97F4A7C15) (u64; see Filler.h, checkLcgProbe).
  std::vector<uint64_t> lcgProbe;
  EngramTables engram; ///< engram
};

/// One entry of `weights_meta`: how to regenerate a parameter (tiny-model-harness.md "Weights: regenerated").
struct WeightMeta {
  std::string name;           ///< parameter name, e.g. "layers.0.attn.wq_a.weight" (the key in weights_meta)
  std::vector<int64_t> shape; ///< shape (product == n, checked)
  int64_t n = 0;              ///< number of elements
  double scale = 0;           ///< filler scale
  double offset = 0;          ///< filler offset
  std::string kind;           ///< kind ("f32", "fp8", "e8m0"): informational
  std::string dtype;          ///< stored dtype: "bfloat16", "float32", "float8_e4m3fn" or "float8_e8m0fnu"
  double ck = 0;              ///< sum_i f64(v_i) * (i+1) over the rounded values
};

/// One capture of a regime: `data` = flat[::stride] of the captured tensor (row-major), `ck` over the WHOLE tensor.
struct Capture {
  std::string name;           ///< capture name, e.g. "L0.sa_q" (the key in the regime object)
  std::vector<int64_t> shape; ///< shape as captured (batch first where the reference had one, e.g. [1,s,H,hd])
  int64_t n = 0;              ///< number of elements of the whole tensor (== product of shape, checked)
  int64_t stride = 1;         ///< sampling stride (>= 1); data.size() == ceil(n / stride), checked
  double ck = 0;              ///< sum_i f64(flat[i]) * (i+1) over all n elements
  /// True when every stored sample is a JSON integer (index tensors, ids, hashes, masks): compared exactly.
  /// Float captures are written with a decimal point or exponent, so the two never mix (mixing is an Error).
  /// An empty capture (n == 0) counts as float.
  bool isInteger = false;
  std::vector<double> data; ///< the stored samples (integers are exact: all stored values are below 2^53)
};

/// One regime (step): its captures, and where it sits in the sequence.
struct Regime {
  std::string name;
  /// Sum of the token counts of the regimes before it (regimes run in order on one state).
  int64_t startPos = 0;
  /// Tokens of this step: s of the `input_ids` capture's shape [1, s] (batch 1).
  int64_t numTokens = 0;
  /// The positions of the batch row's input ids this step feeds, [idsBegin, idsEnd): fixture.steps'
  /// input_ids_slice when the fixture has steps, else [startPos, startPos + numTokens).
  int64_t idsBegin = 0;
  int64_t idsEnd = 0;
  std::map<std::string, Capture> captures;
  /// The capture names in file order (stable reports).
  std::vector<std::string> captureOrder;
};

/// A loaded golden file. Copyable; holds no reference to the file or to any JSON object.
class GoldenFile {
public:
  /// Reads and validates `path`. Errors (message starts with the path): the file cannot be opened; malformed
  /// JSON (with the parser's byte position); a missing/mistyped `fixture` key, `weights_meta` entry or field;
  /// a regime named in fixture.regimes that has no object; a capture without shape/n/stride/ck/data;
  /// data length != ceil(n/stride); shape product != n; a regime without an integer `input_ids` capture of
  /// shape [1, s]; fixture.steps that does not list the regimes in order, or whose start_pos / seqlen /
  /// input_ids_slice disagree with the regimes (start_pos = tokens before it, seqlen = s, slice of seqlen ids);
  /// n_tokens < 1; `engram: null` with a non-empty engram_layer_ids.
  static Result<GoldenFile> load(const std::string &path);
  /// Same, from JSON text (`origin` names the source in messages).
  static Result<GoldenFile> parse(const std::string &text, const std::string &origin = "<string>");

  const Fixture &fixture() const { return fixture_; }
  /// Regimes in fixture.regimes order.
  const std::vector<Regime> &regimes() const { return regimes_; }
  /// The regime called `name`, or nullptr.
  const Regime *regime(const std::string &name) const;
  /// The weight called `name`, or nullptr.
  const WeightMeta *weight(const std::string &name) const;
  /// All weights, in file order.
  const std::vector<WeightMeta> &weights() const { return weights_; }
  /// The capture `name` of regime `regime`; an Error naming both when either is absent.
  Result<const Capture *> capture(const std::string &regime, const std::string &name) const;

private:
  Fixture fixture_;
  std::vector<WeightMeta> weights_;
  std::map<std::string, size_t> weightIndex_;
  std::vector<Regime> regimes_;
};

} // namespace dsa::golden

#endif // DSA_GOLDEN_GOLDENFILE_H
