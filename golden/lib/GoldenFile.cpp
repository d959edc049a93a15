//===- GoldenFile.cpp - reader of the tiny-model golden ------------------------===//
//
// Format: shared/spec/tiny-model-harness.md ("File format"). nlohmann_json is used here only; its exceptions are
// caught in this file and turned into dsa::Error messages that name the offending key path.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Golden/GoldenFile.h"

#include "dsa/Core/Tensor.h"
#include "dsa/Support/CheckedArithmetic.h"
#include "dsa/Support/StrictJson.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

namespace dsa::golden {
namespace {

using Json = nlohmann::ordered_json;

std::string typeName(const Json &j) { return j.type_name(); }

/// Typed fields of one object in the golden file's wording ("fixture.dim: missing", "fixture.n_heads: expected an
/// integer, got string"): dsa/Support/StrictJson.h.
using ObjectReader = dsa::json::FieldReader<Json>;

std::string joinInts(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// Product of a shape, or -1 on overflow / negative extent.
int64_t shapeProduct(const std::vector<int64_t> &shape) {
  int64_t p = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && p > std::numeric_limits<int64_t>::max() / d))
      return -1;
    p *= d;
  }
  return p;
}

// The keys each object of the format may hold (shared/spec/tiny-model-harness.md "File format", shared/golden's
// goldens): any other key is an error naming its path and these (a misspelt optional key would be ignored).
// Weight names and capture names are data (a capture the replays do not produce fails the replay: "nothing
// produced this capture"); the keys inside a weight or a capture are the format's.
const std::vector<std::string> kFixtureKeys = {
    // the model (attention-semantics.md section 1)
    "vocab_size", "dim", "n_layers", "n_heads", "head_dim", "rope_head_dim", "q_lora_rank", "o_lora_rank", "o_groups",
    "moe_inter_dim", "n_routed_experts", "n_shared_experts", "n_activated_experts", "score_func", "route_scale",
    "norm_topk_prob", "swiglu_limit", "window_size", "compress_ratios", "kv_source_layers", "index_source_layers",
    "candidate_source_layer", "candidate_topk_blocks", "candidate_block_size", "index_n_heads", "index_head_dim",
    "index_topk", "hc_mult", "hc_sinkhorn_iters", "hc_eps", "engram", "engram_layer_ids", "engram_max_ngram_size",
    "engram_vocab_size", "engram_n_heads", "engram_head_dim", "engram_pad_id", "engram_compressed_vocab_size",
    "engram_num_embeddings", "rope_theta", "compress_rope_theta", "rope_factor", "original_seq_len", "beta_fast",
    "beta_slow", "norm_eps", "gate_temp", "vision_n_layers", "dtype", "expert_dtype", "n_mtp_layers",
    "dspark_block_size", "max_batch_size", "max_seq_len", "temperature", "batch",
    // the run
    "prefill_len", "regimes", "steps", "n_tokens", "lcg_probe", "input_ids_rule", "filler",
    // provenance (strings)
    "reference", "kernels", "torch", "storage"};
const std::vector<std::string> kEngramKeys = {"layer_ids",    "max_ngram_size", "n_heads",     "head_dim",
                                              "n_hash_cols",  "num_embeddings", "pad_id_compressed",
                                              "token_map",    "multipliers",    "primes",      "offsets",
                                              "scale_block",  "scales"};
const std::vector<std::string> kStepKeys = {"regime", "start_pos", "seqlen", "input_ids_slice"};
const std::vector<std::string> kWeightKeys = {"shape", "n", "scale", "offset", "kind", "dtype", "ck"};
const std::vector<std::string> kCaptureKeys = {"shape", "n", "stride", "ck", "data"};

Status parseEngram(const Json &j, EngramTables &e) {
  if (Status st = dsa::json::checkKnownKeys(j, "fixture.engram", kEngramKeys); !st)
    return st;
  ObjectReader r(j, "fixture.engram");
  e.layerIds = r.i64s("layer_ids");
  e.maxNgramSize = r.i64("max_ngram_size");
  e.nHeads = r.i64("n_heads");
  e.headDim = r.i64("head_dim");
  e.nHashCols = r.i64("n_hash_cols");
  e.numEmbeddings = r.i64s("num_embeddings");
  e.padIdCompressed = r.i64("pad_id_compressed");
  e.tokenMap = r.i64s("token_map");
  if (const Json *m = r.list("multipliers"))
    e.multipliers = r.i64Matrix(*m, r.keyPath("multipliers"), /*wrapUnsigned=*/true);
  if (const Json *p = r.list("primes")) {
    for (size_t i = 0; i < p->size() && r.ok(); ++i)
      e.primes.push_back(r.i64Matrix((*p)[i], r.keyPath("primes") + "[" + std::to_string(i) + "]"));
  }
  if (const Json *o = r.list("offsets"))
    e.offsets = r.i64Matrix(*o, r.keyPath("offsets"));
  e.scaleBlock = r.i64("scale_block");
  if (const Json *s = r.list("scales")) {
    for (size_t i = 0; i < s->size() && r.ok(); ++i)
      e.scales.push_back(r.f64s((*s)[i], r.keyPath("scales") + "[" + std::to_string(i) + "]"));
  }
  if (!r.ok())
    return makeError(r.error());

  // Consistency of the tables (the hash of tiny-model-harness.md indexes them this way).
  const size_t nE = e.layerIds.size();
  auto bad = [](const std::string &key, const std::string &what) {
    return makeError("fixture.engram." + key + ": " + what);
  };
  if (e.maxNgramSize < 1)
    return bad("max_ngram_size", "must be >= 1, got " + std::to_string(e.maxNgramSize));
  if (e.nHeads < 1)
    return bad("n_heads", "must be >= 1, got " + std::to_string(e.nHeads));
  if (e.maxNgramSize > kMaxNgramSize)
    return bad("max_ngram_size", "must be <= " + std::to_string(kMaxNgramSize) + ", got " +
                                     std::to_string(e.maxNgramSize));
  if (e.nHeads > kMaxCount)
    return bad("n_heads", "must be <= " + std::to_string(kMaxCount) + ", got " + std::to_string(e.nHeads));
  const std::optional<int64_t> cols = checkedMul(e.maxNgramSize - 1, e.nHeads);
  if (!cols || e.nHashCols != *cols)
    return bad("n_hash_cols", "expected (max_ngram_size-1)*n_heads = " + (cols ? std::to_string(*cols) : "overflow") +
                                  ", got " + std::to_string(e.nHashCols));
  if (e.numEmbeddings.size() != nE)
    return bad("num_embeddings", "has " + std::to_string(e.numEmbeddings.size()) + " entries, layer_ids has " +
                                     std::to_string(nE));
  if (e.multipliers.size() != nE)
    return bad("multipliers", "has " + std::to_string(e.multipliers.size()) + " rows, expected " +
                                  std::to_string(nE) + " (one per engram layer)");
  if (e.primes.size() != nE)
    return bad("primes", "has " + std::to_string(e.primes.size()) + " entries, expected " + std::to_string(nE));
  if (e.offsets.size() != nE)
    return bad("offsets", "has " + std::to_string(e.offsets.size()) + " rows, expected " + std::to_string(nE));
  if (e.scales.size() != nE)
    return bad("scales", "has " + std::to_string(e.scales.size()) + " rows, expected " + std::to_string(nE));
  for (size_t l = 0; l < nE; ++l) {
    const std::string idx = "[" + std::to_string(l) + "]";
    if (static_cast<int64_t>(e.multipliers[l].size()) != e.maxNgramSize)
      return bad("multipliers" + idx, "has " + std::to_string(e.multipliers[l].size()) +
                                          " entries, expected max_ngram_size = " + std::to_string(e.maxNgramSize));
    if (static_cast<int64_t>(e.primes[l].size()) != e.maxNgramSize - 1)
      return bad("primes" + idx, "has " + std::to_string(e.primes[l].size()) + " entries, expected " +
                                     std::to_string(e.maxNgramSize - 1));
    for (size_t i = 0; i < e.primes[l].size(); ++i) {
      if (static_cast<int64_t>(e.primes[l][i].size()) != e.nHeads)
        return bad("primes" + idx + "[" + std::to_string(i) + "]",
                   "has " + std::to_string(e.primes[l][i].size()) + " entries, expected n_heads = " +
                       std::to_string(e.nHeads));
      for (int64_t p : e.primes[l][i])
        if (p <= 0)
          return bad("primes" + idx + "[" + std::to_string(i) + "]", "modulus must be > 0, got " + std::to_string(p));
    }
    if (static_cast<int64_t>(e.offsets[l].size()) != e.nHashCols)
      return bad("offsets" + idx, "has " + std::to_string(e.offsets[l].size()) +
                                      " entries, expected n_hash_cols = " + std::to_string(e.nHashCols));
    if (static_cast<int64_t>(e.scales[l].size()) != e.numEmbeddings[l])
      return bad("scales" + idx, "has " + std::to_string(e.scales[l].size()) +
                                     " entries, expected num_embeddings = " + std::to_string(e.numEmbeddings[l]));
  }
  return Status::success();
}

Status parseFixtureFields(const Json &j, Fixture &f) {
  if (Status st = dsa::json::checkKnownKeys(j, "fixture", kFixtureKeys); !st)
    return st;
  ObjectReader r(j, "fixture");
  f.vocabSize = r.i64("vocab_size");
  f.dim = r.i64("dim");
  f.nLayers = r.i64("n_layers");
  f.nHeads = r.i64("n_heads");
  f.headDim = r.i64("head_dim");
  f.ropeHeadDim = r.i64("rope_head_dim");
  f.qLoraRank = r.i64("q_lora_rank");
  f.oLoraRank = r.i64("o_lora_rank");
  f.oGroups = r.i64("o_groups");

  f.moeInterDim = r.i64("moe_inter_dim");
  f.nRoutedExperts = r.i64("n_routed_experts");
  f.nSharedExperts = r.i64("n_shared_experts");
  f.nActivatedExperts = r.i64("n_activated_experts");
  f.scoreFunc = r.str("score_func");
  f.routeScale = r.f64("route_scale");
  f.normTopkProb = r.boolean("norm_topk_prob");
  f.swigluLimit = r.f64("swiglu_limit");

  f.windowSize = r.i64("window_size");
  f.compressRatios = r.i64s("compress_ratios");
  f.kvSourceLayers = r.i64s("kv_source_layers");
  f.indexSourceLayers = r.i64s("index_source_layers");
  f.candidateSourceLayer = r.i64("candidate_source_layer");
  f.candidateTopkBlocks = r.i64("candidate_topk_blocks");
  f.candidateBlockSize = r.i64("candidate_block_size");
  f.indexNHeads = r.i64("index_n_heads");
  f.indexHeadDim = r.i64("index_head_dim");
  f.indexTopk = r.i64("index_topk");

  f.hcMult = r.i64("hc_mult");
  f.hcSinkhornIters = r.i64("hc_sinkhorn_iters");
  f.hcEps = r.f64("hc_eps");

  // `engram: null` (a model without engram layers): the other engram_* keys may be absent.
  const Json *engram = r.field("engram");
  f.hasEngram = engram && !engram->is_null();
  f.engramLayerIds = r.i64s("engram_layer_ids");
  if (f.hasEngram) {
    f.engramMaxNgramSize = r.i64("engram_max_ngram_size");
    f.engramVocabSize = r.i64("engram_vocab_size");
    f.engramNHeads = r.i64("engram_n_heads");
    f.engramHeadDim = r.i64("engram_head_dim");
    f.engramPadId = r.i64("engram_pad_id");
    f.engramCompressedVocabSize = r.i64("engram_compressed_vocab_size");
    f.engramNumEmbeddings = r.i64s("engram_num_embeddings");
  } else {
    f.engramMaxNgramSize = r.optionalI64("engram_max_ngram_size").value_or(0);
    f.engramVocabSize = r.optionalI64("engram_vocab_size").value_or(0);
    f.engramNHeads = r.optionalI64("engram_n_heads").value_or(0);
    f.engramHeadDim = r.optionalI64("engram_head_dim").value_or(0);
    f.engramPadId = r.optionalI64("engram_pad_id").value_or(0);
    f.engramCompressedVocabSize = r.optionalI64("engram_compressed_vocab_size").value_or(0);
    if (r.ok() && r.has("engram_num_embeddings"))
      f.engramNumEmbeddings = r.i64s("engram_num_embeddings");
  }

  f.ropeTheta = r.f64("rope_theta");
  f.compressRopeTheta = r.f64("compress_rope_theta");
  f.ropeFactor = r.f64("rope_factor");
  f.originalSeqLen = r.i64("original_seq_len");
  f.betaFast = r.f64("beta_fast");
  f.betaSlow = r.f64("beta_slow");
  f.normEps = r.f64("norm_eps");
  f.gateTemp = r.f64("gate_temp");

  f.visionNLayers = r.i64("vision_n_layers");
  f.dtype = r.str("dtype");
  f.expertDtype = r.nullableStr("expert_dtype");
  f.nMtpLayers = r.i64("n_mtp_layers");
  f.dsparkBlockSize = r.i64("dspark_block_size");
  f.maxBatchSize = r.i64("max_batch_size");
  f.maxSeqLen = r.i64("max_seq_len");
  f.temperature = r.f64("temperature");
  f.batch = r.i64("batch");
  f.prefillLen = r.i64("prefill_len");
  f.regimes = r.strs("regimes");
  f.nTokens = r.optionalI64("n_tokens");
  const Json *steps = r.ok() && r.has("steps") ? r.list("steps") : nullptr;

  f.reference = r.optionalStr("reference");
  f.kernels = r.optionalStr("kernels");
  f.torch = r.optionalStr("torch");
  f.filler = r.optionalStr("filler");
  f.inputIdsRule = r.optionalStr("input_ids_rule");

  f.lcgProbe = r.u64s("lcg_probe");
  if (!r.ok())
    return makeError(r.error());
  if (f.hasEngram) {
    if (Status s = parseEngram(*engram, f.engram); !s)
      return s;
  } else if (!f.engramLayerIds.empty()) {
    return makeError("fixture.engram is null (no engram layer) but fixture.engram_layer_ids is " +
                     joinInts(f.engramLayerIds));
  }
  if (f.nTokens && *f.nTokens < 1)
    return makeError("fixture.n_tokens: must be >= 1, got " + std::to_string(*f.nTokens));
  if (steps) {
    for (size_t i = 0; i < steps->size(); ++i) {
      const std::string path = "fixture.steps[" + std::to_string(i) + "]";
      if (Status st = dsa::json::checkKnownKeys((*steps)[i], path, kStepKeys); !st)
        return st;
      ObjectReader sr((*steps)[i], path);
      Fixture::Step step;
      step.regime = sr.str("regime");
      step.startPos = sr.i64("start_pos");
      step.seqlen = sr.i64("seqlen");
      std::vector<int64_t> slice;
      if (const Json *sl = sr.list("input_ids_slice"))
        slice = sr.i64s(*sl, sr.keyPath("input_ids_slice"));
      if (!sr.ok())
        return makeError(sr.error());
      if (slice.size() != 2)
        return makeError(path + ".input_ids_slice: expected [begin, end), got " + joinInts(slice));
      step.idsBegin = slice[0];
      step.idsEnd = slice[1];
      if (step.seqlen < 1)
        return makeError(path + ".seqlen: must be >= 1, got " + std::to_string(step.seqlen));
      if (step.startPos < 0)
        return makeError(path + ".start_pos: must be >= 0, got " + std::to_string(step.startPos));
      if (step.idsBegin < 0 || step.idsEnd - step.idsBegin != step.seqlen)
        return makeError(path + ".input_ids_slice: " + joinInts(slice) + " does not hold seqlen = " +
                         std::to_string(step.seqlen) + " ids");
      f.steps.push_back(std::move(step));
    }
    if (f.steps.size() != f.regimes.size())
      return makeError("fixture.steps: has " + std::to_string(f.steps.size()) + " entries, fixture.regimes " +
                       std::to_string(f.regimes.size()) + " (one step per regime)");
    for (size_t i = 0; i < f.steps.size(); ++i)
      if (f.steps[i].regime != f.regimes[i])
        return makeError("fixture.steps[" + std::to_string(i) + "].regime: '" + f.steps[i].regime +
                         "', but fixture.regimes[" + std::to_string(i) + "] is '" + f.regimes[i] +
                         "' (steps list the regimes in order)");
  }

  // Cross-checks that keep later code from indexing out of range.
  if (f.nLayers < 1)
    return makeError("fixture.n_layers: must be >= 1, got " + std::to_string(f.nLayers));
  if (static_cast<int64_t>(f.compressRatios.size()) != f.nLayers)
    return makeError("fixture.compress_ratios: has " + std::to_string(f.compressRatios.size()) +
                     " entries, expected n_layers = " + std::to_string(f.nLayers));
  auto checkLayers = [&](const std::vector<int64_t> &layers, const char *key) -> Status {
    for (int64_t l : layers)
      if (l < 0 || l >= f.nLayers)
        return makeError(std::string("fixture.") + key + ": layer " + std::to_string(l) + " out of range [0, " +
                         std::to_string(f.nLayers) + ")");
    return Status::success();
  };
  for (auto [layers, key] : {std::pair{&f.kvSourceLayers, "kv_source_layers"},
                             std::pair{&f.indexSourceLayers, "index_source_layers"},
                             std::pair{&f.engramLayerIds, "engram_layer_ids"}})
    if (Status s = checkLayers(*layers, key); !s)
      return s;
  if (f.regimes.empty())
    return makeError("fixture.regimes: empty (no step to replay)");
  if (f.batch < 1)
    return makeError("fixture.batch: must be >= 1, got " + std::to_string(f.batch));
  if (f.vocabSize < 1)
    return makeError("fixture.vocab_size: must be >= 1, got " + std::to_string(f.vocabSize));
  if (!f.hasEngram)
    return Status::success();
  if (static_cast<int64_t>(f.engram.tokenMap.size()) != f.vocabSize)
    return makeError("fixture.engram.token_map: has " + std::to_string(f.engram.tokenMap.size()) +
                     " entries, expected vocab_size = " + std::to_string(f.vocabSize));

  // The top-level engram_* keys duplicate the tables: they must agree.
  if (f.engramLayerIds != f.engram.layerIds)
    return makeError("fixture.engram_layer_ids " + joinInts(f.engramLayerIds) + " != fixture.engram.layer_ids " +
                     joinInts(f.engram.layerIds));
  if (f.engramNumEmbeddings != f.engram.numEmbeddings)
    return makeError("fixture.engram_num_embeddings " + joinInts(f.engramNumEmbeddings) +
                     " != fixture.engram.num_embeddings " + joinInts(f.engram.numEmbeddings));
  for (auto [top, table, key] :
       {std::tuple{f.engramMaxNgramSize, f.engram.maxNgramSize, "max_ngram_size"},
        std::tuple{f.engramNHeads, f.engram.nHeads, "n_heads"},
        std::tuple{f.engramHeadDim, f.engram.headDim, "head_dim"}})
    if (top != table)
      return makeError(std::string("fixture.engram_") + key + " = " + std::to_string(top) + " != fixture.engram." +
                       key + " = " + std::to_string(table));
  return Status::success();
}

/// The bounds of GoldenFile.h ("Bounds"), checked after the fields have been read and cross-checked: every size,
/// count and index the replays allocate or loop over. Errors name the JSON path and give the allowed range.
Status checkFixtureBounds(const Fixture &f) {
  auto range = [](const std::string &path, int64_t v, int64_t lo, int64_t hi) -> Status {
    if (v < lo || v > hi)
      return makeError(path + ": " + std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " +
                       std::to_string(hi) + "]");
    return Status::success();
  };
  struct Bound {
    const char *key;
    int64_t value, lo, hi;
  };
  const Bound bounds[] = {
      {"vocab_size", f.vocabSize, 1, kMaxVocabSize},
      {"dim", f.dim, 1, kMaxWidth},
      {"n_layers", f.nLayers, 1, kMaxCount},
      {"n_heads", f.nHeads, 1, kMaxCount},
      {"head_dim", f.headDim, 1, kMaxWidth},
      {"rope_head_dim", f.ropeHeadDim, 1, kMaxWidth},
      {"q_lora_rank", f.qLoraRank, 1, kMaxWidth},
      {"o_lora_rank", f.oLoraRank, 1, kMaxWidth},
      {"o_groups", f.oGroups, 1, kMaxCount},
      {"moe_inter_dim", f.moeInterDim, 1, kMaxWidth},
      {"n_routed_experts", f.nRoutedExperts, 1, kMaxCount},
      {"n_shared_experts", f.nSharedExperts, 0, kMaxCount},
      {"n_activated_experts", f.nActivatedExperts, 1, kMaxCount},
      {"window_size", f.windowSize, 1, kMaxWindowSize},
      {"candidate_source_layer", f.candidateSourceLayer, -1, f.nLayers - 1},
      {"candidate_topk_blocks", f.candidateTopkBlocks, 0, kMaxVocabSize},
      {"candidate_block_size", f.candidateBlockSize, 0, kMaxWidth},
      {"index_n_heads", f.indexNHeads, 0, kMaxCount},
      {"index_head_dim", f.indexHeadDim, 0, kMaxWidth},
      {"index_topk", f.indexTopk, 0, kMaxVocabSize},
      {"hc_mult", f.hcMult, 1, kMaxHcMult},
      {"hc_sinkhorn_iters", f.hcSinkhornIters, 1, kMaxSinkhornIters},
      {"engram_max_ngram_size", f.engramMaxNgramSize, 0, kMaxNgramSize},
      {"engram_vocab_size", f.engramVocabSize, 0, kMaxVocabSize},
      {"engram_n_heads", f.engramNHeads, 0, kMaxCount},
      {"engram_head_dim", f.engramHeadDim, 0, kMaxWidth},
      {"engram_pad_id", f.engramPadId, 0, kMaxVocabSize},
      {"engram_compressed_vocab_size", f.engramCompressedVocabSize, 0, kMaxVocabSize},
      {"original_seq_len", f.originalSeqLen, 1, kMaxOriginalSeqLen},
      {"vision_n_layers", f.visionNLayers, 0, kMaxCount},
      {"n_mtp_layers", f.nMtpLayers, 0, kMaxCount},
      {"dspark_block_size", f.dsparkBlockSize, 0, kMaxWidth},
      {"max_batch_size", f.maxBatchSize, 1, kMaxCount},
      {"max_seq_len", f.maxSeqLen, 1, kMaxSeqLen},
      {"prefill_len", f.prefillLen, 0, f.maxSeqLen},
  };
  for (const Bound &b : bounds)
    if (Status s = range(std::string("fixture.") + b.key, b.value, b.lo, b.hi); !s)
      return s;
  if (f.nTokens)
    if (Status s = range("fixture.n_tokens", *f.nTokens, 1, kMaxVocabSize); !s)
      return s;
  for (size_t l = 0; l < f.compressRatios.size(); ++l)
    if (Status s = range("fixture.compress_ratios[" + std::to_string(l) + "]", f.compressRatios[l], 0,
                         kMaxCompressRatio);
        !s)
      return s;
  for (size_t e = 0; e < f.engramNumEmbeddings.size(); ++e)
    if (Status s = range("fixture.engram_num_embeddings[" + std::to_string(e) + "]", f.engramNumEmbeddings[e], 1,
                         kMaxVocabSize);
        !s)
      return s;
  if (f.hasEngram) {
    const EngramTables &e = f.engram;
    if (Status s = range("fixture.engram.head_dim", e.headDim, 1, kMaxWidth); !s)
      return s;
    if (Status s = range("fixture.engram.scale_block", e.scaleBlock, 1, kMaxWidth); !s)
      return s;
    for (size_t i = 0; i < e.numEmbeddings.size(); ++i)
      if (Status s = range("fixture.engram.num_embeddings[" + std::to_string(i) + "]", e.numEmbeddings[i], 1,
                           kMaxVocabSize);
          !s)
        return s;
  }
  for (size_t i = 0; i < f.steps.size(); ++i)
    if (Status s = range("fixture.steps[" + std::to_string(i) + "].seqlen", f.steps[i].seqlen, 1, kMaxSeqLen); !s)
      return s;

  // One sequence (batch 1): the captures are [1, ...] and every replay runs one row.
  if (f.batch != 1)
    return makeError("fixture.batch: " + std::to_string(f.batch) +
                     " is not supported: the harness and the replays run one sequence (batch 1)");
  if (f.dtype != "bf16")
    return makeError("fixture.dtype: '" + f.dtype + "' is not supported: the harness runs a bf16 model (\"bf16\")");
  if (f.expertDtype && *f.expertDtype != "bf16")
    return makeError("fixture.expert_dtype: '" + *f.expertDtype +
                     "' is not supported: the harness runs bf16 experts (null or \"bf16\")");

  // Real numbers the forward and the compiled attention compute with: finite (and positive where a base or a scale).
  struct Real {
    const char *key;
    double value;
    bool positive;
  };
  const Real reals[] = {{"rope_theta", f.ropeTheta, true},     {"compress_rope_theta", f.compressRopeTheta, true},
                        {"rope_factor", f.ropeFactor, true},   {"beta_fast", f.betaFast, false},
                        {"beta_slow", f.betaSlow, false},      {"norm_eps", f.normEps, false},
                        {"hc_eps", f.hcEps, false},            {"route_scale", f.routeScale, false},
                        {"swiglu_limit", f.swigluLimit, false}, {"gate_temp", f.gateTemp, false},
                        {"temperature", f.temperature, false}};
  for (const Real &x : reals)
    if (!std::isfinite(x.value) || (x.positive && !(x.value > 0)))
      return makeError(std::string("fixture.") + x.key + ": " + std::to_string(x.value) + " must be finite" +
                       (x.positive ? " and > 0" : ""));

  // The sizes the replays allocate from the fixture: overflow-checked products, each within the tensor byte limit
  // (Tensor::tensorByteLimit, 4 bytes per stored float element).
  struct Product {
    const char *what;
    std::vector<int64_t> factors;
  };
  int64_t maxRatio1Rows = f.maxSeqLen; // the compressed caches hold ceil(max_seq_len / ratio) rows, at most max_seq_len
  const Product products[] = {
      {"fixture.window_size * fixture.head_dim (the window ring)", {f.windowSize, f.headDim}},
      {"fixture.max_seq_len * fixture.head_dim (a compressed-KV cache)", {maxRatio1Rows, f.headDim}},
      {"fixture.max_seq_len * fixture.index_head_dim (an index-key cache)", {maxRatio1Rows, f.indexHeadDim}},
      {"fixture.n_heads * fixture.head_dim", {f.nHeads, f.headDim}},
      {"fixture.n_heads * fixture.head_dim * fixture.q_lora_rank (wq_b)", {f.nHeads, f.headDim, f.qLoraRank}},
      {"fixture.o_groups * fixture.o_lora_rank * fixture.dim (wo_b)", {f.oGroups, f.oLoraRank, f.dim}},
      {"fixture.index_n_heads * fixture.index_head_dim * fixture.q_lora_rank", {f.indexNHeads, f.indexHeadDim,
                                                                                 f.qLoraRank}},
      {"fixture.candidate_topk_blocks * fixture.candidate_block_size", {f.candidateTopkBlocks, f.candidateBlockSize}},
      {"fixture.vocab_size * fixture.dim (embed, head)", {f.vocabSize, f.dim}},
      {"(2 + fixture.hc_mult) * fixture.hc_mult * fixture.hc_mult * fixture.dim (hc_*_fn)",
       {2 + f.hcMult, f.hcMult, f.hcMult, f.dim}},
      {"fixture.n_shared_experts * fixture.moe_inter_dim * fixture.dim (shared expert)",
       {std::max<int64_t>(f.nSharedExperts, 1), f.moeInterDim, f.dim}},
      {"fixture.max_seq_len (the engram cache, i64)", {f.maxSeqLen, 2}},
  };
  const int64_t limit = dsa::Tensor::tensorByteLimit();
  for (const Product &p : products) {
    std::optional<int64_t> n = 4; // bytes per element
    for (int64_t factor : p.factors)
      if (n)
        n = checkedMul(*n, factor);
    if (!n)
      return makeError(std::string(p.what) + ": the product overflows int64");
    if (*n > limit)
      return makeError(std::string(p.what) + ": " + std::to_string(*n / 4) + " elements (" + std::to_string(*n) +
                       " bytes) are above the tensor byte limit " + std::to_string(limit) +
                       " ($DSA_MAX_TENSOR_BYTES, default the physical memory)");
  }
  return Status::success();
}

Status parseFixture(const Json &j, Fixture &f) {
  if (Status s = parseFixtureFields(j, f); !s)
    return s;
  return checkFixtureBounds(f);
}

Status parseWeights(const Json &j, std::vector<WeightMeta> &weights) {
  if (!j.is_object())
    return makeError("weights_meta: expected an object, got " + typeName(j));
  for (auto it = j.begin(); it != j.end(); ++it) {
    WeightMeta w;
    w.name = it.key();
    if (Status st = dsa::json::checkKnownKeys(it.value(), "weights_meta." + w.name, kWeightKeys); !st)
      return st;
    ObjectReader r(it.value(), "weights_meta." + w.name);
    w.shape = r.i64s("shape");
    w.n = r.i64("n");
    w.scale = r.f64("scale");
    w.offset = r.f64("offset");
    w.kind = r.str("kind");
    w.dtype = r.str("dtype");
    w.ck = r.f64("ck");
    if (!r.ok())
      return makeError(r.error());
    int64_t prod = shapeProduct(w.shape);
    if (prod < 0)
      return makeError("weights_meta." + w.name + ".shape: " + joinInts(w.shape) +
                       " has a negative extent or more than INT64_MAX elements");
    if (prod != w.n)
      return makeError("weights_meta." + w.name + ": shape " + joinInts(w.shape) + " has " + std::to_string(prod) +
                       " elements but n = " + std::to_string(w.n));
    // kind names the filler's element kind, dtype the stored rounding (tiny-model-harness.md "Weights"): both are
    // one of the known values, and they agree.
    static const std::map<std::string, std::set<std::string>> kDtypesOfKind = {
        {"f32", {"bfloat16", "float32"}}, {"fp8", {"float8_e4m3fn"}}, {"e8m0", {"float8_e8m0fnu"}}};
    auto kind = kDtypesOfKind.find(w.kind);
    if (kind == kDtypesOfKind.end())
      return makeError("weights_meta." + w.name + ".kind: unknown kind '" + w.kind +
                       "' (expected one of f32, fp8, e8m0)");
    if (w.dtype != "bfloat16" && w.dtype != "float32" && w.dtype != "float8_e4m3fn" && w.dtype != "float8_e8m0fnu")
      return makeError("weights_meta." + w.name + ".dtype: unknown dtype '" + w.dtype +
                       "' (expected one of bfloat16, float32, float8_e4m3fn, float8_e8m0fnu)");
    if (!kind->second.count(w.dtype))
      return makeError("weights_meta." + w.name + ".dtype: '" + w.dtype + "' is not a dtype of kind '" + w.kind + "'");
    weights.push_back(std::move(w));
  }
  return Status::success();
}

Result<Capture> parseCapture(const std::string &regime, const std::string &name, const Json &j) {
  Capture c;
  c.name = name;
  const std::string path = regime + "." + name;
  if (Status st = dsa::json::checkKnownKeys(j, path, kCaptureKeys); !st)
    return makeError(st.error());
  ObjectReader r(j, path);
  c.shape = r.i64s("shape");
  c.n = r.i64("n");
  c.stride = r.i64("stride");
  c.ck = r.f64("ck");
  const Json *data = r.list("data");
  if (!r.ok())
    return makeError(r.error());
  int64_t prod = shapeProduct(c.shape);
  if (prod < 0)
    return makeError(path + ".shape: " + joinInts(c.shape) + " has a negative extent or more than INT64_MAX elements");
  if (prod != c.n)
    return makeError(path + ": shape " + joinInts(c.shape) + " has " + std::to_string(prod) +
                     " elements but n = " + std::to_string(c.n));
  if (c.stride < 1)
    return makeError(path + ".stride: must be >= 1, got " + std::to_string(c.stride));
  if (c.stride > kMaxCaptureStride)
    return makeError(path + ".stride: " + std::to_string(c.stride) + " is out of range [1, " +
                     std::to_string(kMaxCaptureStride) + "]");
  if (c.n > kMaxCaptureElements)
    return makeError(path + ".n: " + std::to_string(c.n) + " is out of range [0, " +
                     std::to_string(kMaxCaptureElements) + "]");
  const int64_t expected = ceilDivNonNegative(c.n, c.stride); // n >= 0 (== a shape product); no n + stride - 1
  if (static_cast<int64_t>(data->size()) != expected)
    return makeError(path + ".data: has " + std::to_string(data->size()) + " values, expected ceil(n/stride) = " +
                     std::to_string(expected) + " (n = " + std::to_string(c.n) + ", stride = " +
                     std::to_string(c.stride) + ")");
  size_t nInts = 0;
  c.data.reserve(data->size());
  for (size_t i = 0; i < data->size(); ++i) {
    const Json &v = (*data)[i];
    if (!v.is_number())
      return makeError(path + ".data[" + std::to_string(i) + "]: expected a number, got " + typeName(v));
    if (v.is_number_integer())
      ++nInts;
    c.data.push_back(v.get<double>());
  }
  if (nInts != 0 && nInts != data->size())
    return makeError(path + ".data: mixes integers (" + std::to_string(nInts) + ") and floats (" +
                     std::to_string(data->size() - nInts) + "): cannot tell the element kind");
  c.isInteger = !data->empty() && nInts == data->size();
  return c;
}

} // namespace

Result<GoldenFile> GoldenFile::load(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return makeError(path + ": cannot open golden file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return makeError(path + ": read error");
  return parse(text.str(), path);
}

Result<GoldenFile> GoldenFile::parse(const std::string &text, const std::string &origin) {
  // Malformed JSON and duplicate keys (`<path>: duplicate key`): the project's one strict reader.
  Result<Json> parsed = dsa::json::parseRejectingDuplicates<Json>(text);
  if (!parsed)
    return makeError(origin + ": " + parsed.error());
  Json root = parsed.take();
  auto withOrigin = [&](const std::string &message) { return makeError(origin + ": " + message); };

  try {
    if (!root.is_object())
      return withOrigin("top level: expected an object, got " + typeName(root));
    GoldenFile golden;
    auto fixture = root.find("fixture");
    if (fixture == root.end())
      return withOrigin("fixture: missing");
    if (Status s = parseFixture(*fixture, golden.fixture_); !s)
      return withOrigin(s.error());
    // The top level: the fixture, the weights and one object per regime fixture.regimes names.
    std::vector<std::string> topLevel = {"fixture", "weights_meta"};
    topLevel.insert(topLevel.end(), golden.fixture_.regimes.begin(), golden.fixture_.regimes.end());
    if (Status s = dsa::json::checkKnownKeys(root, "", topLevel); !s)
      return withOrigin(s.error() + " (a regime's captures are read only when fixture.regimes names it)");

    auto weights = root.find("weights_meta");
    if (weights == root.end())
      return withOrigin("weights_meta: missing");
    if (Status s = parseWeights(*weights, golden.weights_); !s)
      return withOrigin(s.error());
    for (size_t i = 0; i < golden.weights_.size(); ++i)
      golden.weightIndex_[golden.weights_[i].name] = i;

    int64_t startPos = 0;
    for (const std::string &name : golden.fixture_.regimes) {
      auto it = root.find(name);
      if (it == root.end())
        return withOrigin(name + ": missing (regime named in fixture.regimes)");
      if (!it->is_object())
        return withOrigin(name + ": expected an object of captures, got " + typeName(*it));
      Regime regime;
      regime.name = name;
      for (auto c = it->begin(); c != it->end(); ++c) {
        Result<Capture> capture = parseCapture(name, c.key(), c.value());
        if (!capture)
          return withOrigin(capture.error());
        regime.captureOrder.push_back(c.key());
        regime.captures.emplace(c.key(), capture.take());
      }
      auto ids = regime.captures.find("input_ids");
      if (ids == regime.captures.end())
        return withOrigin(name + ".input_ids: missing (it gives the regime's token count)");
      const Capture &idc = ids->second;
      if (idc.shape.size() != 2 || idc.shape[0] != 1 || !idc.isInteger)
        return withOrigin(name + ".input_ids: expected integer ids of shape [1, s], got shape " +
                          joinInts(idc.shape) + (idc.isInteger ? "" : " (not integers)"));
      regime.startPos = startPos;
      regime.numTokens = idc.shape[1];
      regime.idsBegin = startPos;
      regime.idsEnd = startPos + regime.numTokens;
      if (!golden.fixture_.steps.empty()) {
        const Fixture::Step &step = golden.fixture_.steps[golden.regimes_.size()];
        const std::string at = "fixture.steps[" + std::to_string(golden.regimes_.size()) + "]";
        if (step.startPos != startPos)
          return withOrigin(at + ".start_pos: " + std::to_string(step.startPos) + ", but the regimes before '" +
                            name + "' hold " + std::to_string(startPos) +
                            " tokens (the regimes run in order on one state)");
        if (step.seqlen != regime.numTokens)
          return withOrigin(at + ".seqlen: " + std::to_string(step.seqlen) + ", but " + name +
                            ".input_ids has " + std::to_string(regime.numTokens) + " tokens");
        regime.idsBegin = step.idsBegin;
        regime.idsEnd = step.idsEnd;
      }
      startPos += regime.numTokens;
      golden.regimes_.push_back(std::move(regime));
    }
    return golden;
  } catch (const std::exception &e) {
    // Defensive: the accessors above check types before converting, so nothing should throw.
    return withOrigin(std::string("unexpected JSON error: ") + e.what());
  }
}

const Regime *GoldenFile::regime(const std::string &name) const {
  for (const Regime &r : regimes_)
    if (r.name == name)
      return &r;
  return nullptr;
}

const WeightMeta *GoldenFile::weight(const std::string &name) const {
  auto it = weightIndex_.find(name);
  return it == weightIndex_.end() ? nullptr : &weights_[it->second];
}

Result<const Capture *> GoldenFile::capture(const std::string &regime, const std::string &name) const {
  const Regime *r = this->regime(regime);
  if (!r)
    return makeError("golden: no regime '" + regime + "'");
  auto it = r->captures.find(name);
  if (it == r->captures.end())
    return makeError("golden: regime '" + regime + "' has no capture '" + name + "'");
  return &it->second;
}

} // namespace dsa::golden
