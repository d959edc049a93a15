//===- dsa-golden.cpp - replay a DeepSeek golden on AOT CPU or GPU step libraries, without MLIR ===//
//
//   dsa-golden --golden FILE --libraries DIR [--verbose] [--force | --chunk-decodes]
//
// The MLIR-free counterpart of `dsa-run --golden FILE --backend=cpu`: the whole model of FILE (the tiny-model harness,
// dsa::golden::TinyModel) with every layer's attention run by the CPU step library that
// `dsa-run --golden FILE --emit-libraries=DIR` wrote (DIR/golden_layers.json + DIR/attention_L<l>.{so,json}),
// through the runtime's sequence API (dsa/Runtime/CPU/StepLibrary.h: one Sequence per layer, owning its ring,
// compressor state and caches; the four shared slots passed from layer to layer). Links DSAGolden and DSACPURuntime
// only (builds with -DDSA_ENABLE_MLIR=OFF).
//
// GPU step libraries (`dsa-run --golden FILE --emit-libraries=DIR --backend=gpu`; their descriptions have format
// dsa-gpu-step-library) run the same way on the CUDA device 0 (runtime/cuda GpuStepLibrary.h: the mgpu* runtime
// over the dlopen'd driver; makeSequenceRunner: weights uploaded once). Without a driver or device that is an
// error naming it.
//
// Before anything is allocated or run, each layer's step function is checked against the golden's configuration as
// far as its signature shows it (checkCompiledFor: dim, window_size, head_dim, index_head_dim, max_seq_len, the
// layer's ratio and role, n_heads, the weights' shapes) and as its recorded dsa.attention configuration shows the
// rest (rope_theta, compress_rope_theta, the YaRN parameters, norm_eps, index_n_heads, index_topk, the candidate
// sizes, q_lora_rank, o_groups, o_lora_rank, the candidate roles): a golden whose configuration is not what the libraries were
// compiled for is an error naming the golden's field, never a replay of the libraries' own configuration. The golden
// itself is bounded on load (dsa/Golden/GoldenFile.h).
//
// Prints what dsa-run --golden prints in whole-model mode: one verdict line per capture of the golden (section 12
// tolerance; the stale decode `shared.L<l>.candidates` of layers before the candidate source not compared), then
// `golden: N passed, M failed`. --force continues with the golden's value of every harness capture the golden stores
// in full (attn_in, attn_out, h, the mixes, the routing, ...; golden::forceFromGolden through TinyModel's override),
// as dsa-run --force does; the layers' state and the shared slots stay the libraries' own (the sequences own them),
// so a flip inside a layer's ring or caches still propagates here. Exit status: 0 all passed, 1 a capture failed, 2 an error stopped the replay (bad
// arguments, golden, manifest, library, or a step's error).
//
// --chunk-decodes runs the regimes after the prefill whose positions continue one another (the golden's decode12 and
// decode13) as ONE multi-token step at start_pos > 0 (attention-semantics.md section 13: defined as its tokens fed
// one decode step at a time, which is what the golden captured): the model (TinyModel) steps once over the chunk's
// tokens, every layer's sequence once over its rows, a layer with shared slots through
// Sequence::runStackChunkValues with index_k routed per runtime::planStackChunk's piece (StackChunk.h; a chunk the
// plan cuts runs as one model step per piece). Each regime is judged on its rows of the per-token captures by the
// same rules; the captures of the state a step leaves behind (golden::isStepStateCapture: sa_kv, the shared caches)
// after the chunk's last token only, those of the regimes before it reported as not compared.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Golden/Golden.h"
#include "dsa/Golden/ModelConfig.h"
#include "dsa/Golden/Replay.h"
#include "dsa/Golden/TinyModel.h"
#include "dsa/Runtime/CPU/StepLibrary.h"
#include "dsa/Runtime/Host/StackChunk.h"
#include "dsa/Runtime/Cuda/GpuStepLibrary.h"

#include <nlohmann/json.hpp>

#include "dsa/Support/CheckedArithmetic.h"
#include "dsa/Support/StrictJson.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

namespace cpu = ::dsa::cpu;
namespace runtime = ::dsa::runtime;
namespace golden = ::dsa::golden;
using dsa::Tensor;

namespace {

int fail(const std::string &message) {
  std::cout.flush();
  std::cerr << "dsa-golden: error: " << message << "\n";
  return 2;
}

const char *const kUsage =
    "usage: dsa-golden --golden FILE --libraries DIR [--verbose] [--force | --chunk-decodes]\n"
    "  Replays the golden FILE's whole model with each layer's attention run by the step libraries in DIR, CPU or\n"
    "  GPU (written by `dsa-run --golden FILE --emit-libraries=DIR [--backend=gpu]`; GPU ones on CUDA device 0),\n"
    "  without MLIR, and prints one verdict per capture.\n"
    "  --verbose  print each layer's library and step roles first\n"
    "  --force    after comparing each harness capture the golden stores in full, continue with the golden's value\n"
    "             (the layers' rings, caches and shared slots stay the libraries' own)\n"
    "  --chunk-decodes  run the regimes after the prefill whose positions continue one another (decode12,\n"
    "             decode13) as ONE multi-token step through the whole stack, layer-major (runtime::planStackChunk),\n"
    "             and judge each regime's rows of it; the state captures only after the chunk's last token\n";

/// One layer: its loaded library and its sequence.
struct LayerRun {
  int64_t layer = 0;
  std::unique_ptr<cpu::CPUStepLibrary> library;
  std::shared_ptr<dsa::cuda::GpuStepLibrary> gpuLibrary; ///< instead of `library` for a GPU step library
  std::unique_ptr<runtime::Sequence> sequence;
  bool hasShared = false;
};

/// Whether the step description at `path` is a GPU step library's (format dsa-gpu-step-library).
bool isGpuStepLibrary(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("format") && j["format"] == dsa::cuda::kGpuStepLibraryFormat;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s + "]";
}

/// The golden weights of layer `l`'s attention, in the step function's argument order, for its role (what
/// dsa-run --golden --emit-libraries lists; tiny-model-harness.md parameter names).
std::vector<std::string> attentionWeightNames(int64_t l, const golden::LayerRole &role) {
  std::vector<std::string> suffixes = {"attn_sink",        "wq_a.weight",    "q_norm.weight", "wq_b.weight",
                                       "wkv.weight",       "kv_norm.weight", "wo_a.weight",   "wo_b.weight"};
  if (role.isKvSource) {
    suffixes.push_back("compressor.wkv.weight");
    if (role.ratio >= 2)
      suffixes.push_back("compressor.wgate.weight");
    for (const char *s : {"compressor.norm.weight", "indexer.wk.weight", "indexer.k_norm.weight"})
      suffixes.push_back(s);
  }
  if (role.isIndexSource)
    for (const char *s : {"indexer.wq_b.weight", "indexer.weights_proj.weight"})
      suffixes.push_back(s);
  std::vector<std::string> names;
  for (const std::string &s : suffixes)
    names.push_back("layers." + std::to_string(l) + ".attn." + s);
  return names;
}

/// Checks that layer `l`'s step function was compiled for the golden's configuration, as far as its signature
/// shows it (the step description: argument and result shapes, step roles, state and shared slots, probe shapes),
/// before anything is allocated or run: x and the output [?, dim]; the ring [window_size, head_dim]; a compressed
/// layer (compress_ratios[l] > 0) has the four shared slots ([?, head_dim], [?, index_head_dim], ...) and the
/// capacity max_seq_len, a window-only one neither; a kv source has the compressor state ([r, head_dim] twice for
/// r >= 2) and the caches [ceil(max_seq_len / r), head_dim], [ceil(max_seq_len / r), index_head_dim]; the manifest's
/// weights are those of the layer's role (kv_source_layers, index_source_layers) and each weight argument has the
/// golden's weights_meta shape; the probe L<l>.sa_q is [?, n_heads, head_dim]. Then what no shape shows, from the
/// dsa.attention configuration the library records (FunctionSignature::attention, the same in its compiled-in
/// signature): layer_id is l; dim, n_heads, head_dim, rope_head_dim, q_lora_rank, o_groups, o_lora_rank,
/// window_size, the ratio, norm_eps (as the f32 it compiles to), the RoPE theta (rope_theta for ratio 0, else
/// compress_rope_theta) and YaRN (original_seq_len, rope_factor, beta_fast, beta_slow), the role flags
/// (kv_source_layers, index_source_layers, candidate_source_layer), index_n_heads, index_head_dim, index_topk,
/// candidate_topk_blocks, candidate_block_size, max_seq_len; a library that records none is refused (emit it again).
/// Errors name the golden's field, its value and what the library was compiled for.
dsa::Status checkCompiledFor(const golden::GoldenFile &file, int64_t l, const runtime::FunctionSignature &sig,
                             const nlohmann::json &manifestWeights, const std::string &description) {
  const golden::Fixture &f = file.fixture();
  const golden::LayerRole role = golden::layerRole(f, l);
  const std::string lib = "layer " + std::to_string(l) + "'s step library " + description + " (@" + sig.name + ")";
  auto mismatch = [&](const std::string &field, int64_t want, const std::string &compiled) {
    return dsa::makeError(field + ": " + std::to_string(want) + " in the golden, but " + lib + " was compiled for " +
                          compiled);
  };
  auto argKind = [&](int64_t a) -> const runtime::ValueKind * {
    return a >= 0 && a < static_cast<int64_t>(sig.args.size()) ? &sig.args[static_cast<size_t>(a)] : nullptr;
  };
  // A tensor shape [d0, d1] against the golden's (field0, want0), (field1, want1); -1 = a dynamic size expected.
  auto checkShape = [&](const runtime::ValueKind *k, const std::string &what, const std::string &field0,
                        int64_t want0, const std::string &field1, int64_t want1) -> dsa::Status {
    if (!k || !k->isTensor || k->shape.size() != 2)
      return dsa::makeError(lib + ": " + what + " is not a rank-2 tensor (" + (k ? k->typeString : "absent") + ")");
    const std::string compiled = what + " " + k->typeString;
    if (k->shape[0] != want0)
      return mismatch(field0, want0, compiled);
    if (k->shape[1] != want1)
      return mismatch(field1, want1, compiled);
    return dsa::Status::success();
  };
  const std::string ratioField = "fixture.compress_ratios[" + std::to_string(l) + "]";

  if (dsa::Status s = checkShape(argKind(sig.step.x), "x (argument #" + std::to_string(sig.step.x) + ")", "x rows",
                                 -1, "fixture.dim", f.dim);
      !s)
    return s;
  const runtime::ValueKind *out = sig.step.output >= 0 && sig.step.output < static_cast<int64_t>(sig.results.size())
                                      ? &sig.results[static_cast<size_t>(sig.step.output)]
                                      : nullptr;
  if (dsa::Status s = checkShape(out, "the output (result #" + std::to_string(sig.step.output) + ")", "output rows",
                                 -1, "fixture.dim", f.dim);
      !s)
    return s;

  // Window-only or compressed: the capacity and the shared slots.
  if (role.ratio == 0 && (sig.step.maxSeqLen >= 0 || !sig.step.shared.empty()))
    return mismatch(ratioField, 0, "a compressed layer (" + std::to_string(sig.step.shared.size()) +
                                       " shared slots, max_seq_len " + std::to_string(sig.step.maxSeqLen) + ")");
  if (role.ratio > 0) {
    if (sig.step.shared.size() != 4)
      return mismatch(ratioField, role.ratio,
                      "a window-only layer (" + std::to_string(sig.step.shared.size()) + " shared slots, not 4)");
    if (sig.step.maxSeqLen != f.maxSeqLen)
      return mismatch("fixture.max_seq_len", f.maxSeqLen, "max_seq_len " + std::to_string(sig.step.maxSeqLen));
    if (dsa::Status s = checkShape(argKind(sig.step.shared[0].arg), "the compress_kv slot", "compress_kv rows", -1,
                                   "fixture.head_dim", f.headDim);
        !s)
      return s;
    if (dsa::Status s = checkShape(argKind(sig.step.shared[1].arg), "the index_k slot", "index_k rows", -1,
                                   "fixture.index_head_dim", f.indexHeadDim);
        !s)
      return s;
  }

  // The state: the ring first (dsa.attention's operand order), then a kv source's compressor state and caches.
  std::vector<int64_t> stateArgs;
  for (const runtime::StateBinding &b : sig.state)
    stateArgs.push_back(b.arg);
  std::sort(stateArgs.begin(), stateArgs.end());
  const size_t wantState = 1 + (role.isKvSource ? (role.ratio >= 2 ? 4 : 2) : 0);
  if (stateArgs.size() != wantState)
    return dsa::makeError("fixture.kv_source_layers / " + ratioField + ": layer " + std::to_string(l) + " is " +
                          (role.isKvSource ? "a kv source of ratio " + std::to_string(role.ratio) : "not a kv source") +
                          " in the golden (" + std::to_string(wantState) + " state arguments), but " + lib +
                          " has " + std::to_string(stateArgs.size()));
  if (dsa::Status s = checkShape(argKind(stateArgs[0]), "the ring (argument #" + std::to_string(stateArgs[0]) + ")",
                                 "fixture.window_size", f.windowSize, "fixture.head_dim", f.headDim);
      !s)
    return s;
  if (role.isKvSource) {
    size_t next = 1;
    if (role.ratio >= 2)
      for (const char *what : {"the compressor's kv_state", "the compressor's score_state"})
        if (dsa::Status s = checkShape(argKind(stateArgs[next++]), what, ratioField, role.ratio, "fixture.head_dim",
                                       f.headDim);
            !s)
          return s;
    const int64_t capacity = dsa::ceilDivNonNegative(f.maxSeqLen, role.ratio);
    const std::string rows = "ceil(fixture.max_seq_len / " + ratioField + ")";
    if (dsa::Status s = checkShape(argKind(stateArgs[next++]), "the compressed-KV cache", rows, capacity,
                                   "fixture.head_dim", f.headDim);
        !s)
      return s;
    if (dsa::Status s = checkShape(argKind(stateArgs[next++]), "the index-key cache", rows, capacity,
                                   "fixture.index_head_dim", f.indexHeadDim);
        !s)
      return s;
  }

  // The weights: the role's, each of the golden's shape.
  const std::vector<std::string> want = attentionWeightNames(l, role);
  std::vector<std::string> listed;
  for (const nlohmann::json &w : manifestWeights)
    listed.push_back(w.is_string() ? w.get<std::string>() : std::string("<not a string>"));
  if (listed != want) {
    auto join = [](const std::vector<std::string> &v) {
      std::string s;
      for (size_t i = 0; i < v.size(); ++i)
        s += (i ? ", " : "") + v[i];
      return s;
    };
    return dsa::makeError("fixture.kv_source_layers / fixture.index_source_layers / " + ratioField + ": layer " +
                          std::to_string(l) + "'s role in the golden (ratio " + std::to_string(role.ratio) +
                          (role.isKvSource ? ", kv source" : "") + (role.isIndexSource ? ", index source" : "") +
                          ") takes the weights [" + join(want) + "], but " + lib + " takes [" + join(listed) + "]");
  }
  std::set<int64_t> roles = {sig.step.x, sig.step.startPos};
  for (const runtime::StateBinding &b : sig.state)
    roles.insert(b.arg);
  for (const runtime::StateBinding &b : sig.step.shared)
    roles.insert(b.arg);
  size_t next = 0;
  for (size_t a = 0; a < sig.args.size() && next < want.size(); ++a) {
    if (roles.count(static_cast<int64_t>(a)))
      continue;
    const std::string &name = want[next++];
    const golden::WeightMeta *meta = file.weight(name);
    if (!meta)
      continue; // named by the caller
    if (!sig.args[a].isTensor || sig.args[a].shape != meta->shape)
      return dsa::makeError("weights_meta." + name + ".shape: " + shapeText(meta->shape) + " in the golden, but " +
                            lib + " was compiled for argument #" + std::to_string(a) + " " + sig.args[a].typeString);
  }

  // The queries' probe: [?, n_heads, head_dim].
  const std::string saQ = "L" + std::to_string(l) + ".sa_q";
  for (size_t p = 0; p < sig.probeNames.size(); ++p) {
    if (sig.probeNames[p] != saQ || sig.numResults + p >= sig.results.size())
      continue;
    const runtime::ValueKind &k = sig.results[sig.numResults + p];
    if (k.shape.size() == 3 && k.shape[1] >= 0 && k.shape[1] != f.nHeads)
      return mismatch("fixture.n_heads", f.nHeads, "the probe " + saQ + " " + k.typeString);
    if (k.shape.size() == 3 && k.shape[2] >= 0 && k.shape[2] != f.headDim)
      return mismatch("fixture.head_dim", f.headDim, "the probe " + saQ + " " + k.typeString);
  }

  // What no shape shows: the dsa.attention configuration the code was compiled from (its constants), recorded in
  // the description and checked against the library's own signature when it was opened.
  if (sig.attention.size() != 1)
    return dsa::makeError(lib + " records " + std::to_string(sig.attention.size()) +
                          " dsa.attention configurations, not the one of a layer (a library emitted before they were "
                          "recorded? emit the libraries again with dsa-run --golden FILE --emit-libraries=DIR)");
  const runtime::AttentionConfig &a = sig.attention.front();
  auto compiledFor = [&](const std::string &attr, const std::string &value) {
    return "dsa.attention " + attr + " = " + value;
  };
  auto integer = [&](const std::string &field, int64_t want, const char *attr, int64_t got) -> dsa::Status {
    if (want == got)
      return dsa::Status::success();
    return mismatch(field, want, compiledFor(attr, std::to_string(got)));
  };
  // Reals compare exactly, as the compiled attribute holds them: an f64 attribute the golden's double, norm_eps the
  // f32 it rounds to (shortest round-trip spelling in messages).
  auto real = [&](const std::string &field, double want, const char *attr, double got,
                  std::optional<double> written = std::nullopt) -> dsa::Status {
    if (want == got)
      return dsa::Status::success();
    const std::string golden = written ? nlohmann::json(*written).dump() + " (" + nlohmann::json(want).dump() +
                                             " as f32)"
                                       : nlohmann::json(want).dump();
    return dsa::makeError(field + ": " + golden + " in the golden, but " + lib + " was compiled for " +
                          compiledFor(attr, nlohmann::json(got).dump()));
  };
  auto flag = [&](const std::string &field, bool want, const std::string &what, const char *attr,
                  bool got) -> dsa::Status {
    if (want == got)
      return dsa::Status::success();
    return dsa::makeError(field + ": layer " + std::to_string(l) + " is " + (want ? "" : "not ") + what +
                          " in the golden, but " + lib + " was compiled for " +
                          compiledFor(attr, got ? "true" : "false"));
  };
  if (a.layerId != l)
    return dsa::makeError("layer " + std::to_string(l) + ": " + lib + " was compiled for " +
                          compiledFor("layer_id", std::to_string(a.layerId)) +
                          " (another layer's attention: its probes are that layer's)");
  const double normEps = static_cast<double>(static_cast<float>(f.normEps)); // the attribute is f32
  const dsa::Status checks[] = {
      integer("fixture.dim", f.dim, "dim", a.dim),
      integer("fixture.n_heads", f.nHeads, "n_heads", a.nHeads),
      integer("fixture.head_dim", f.headDim, "head_dim", a.headDim),
      integer("fixture.rope_head_dim", f.ropeHeadDim, "rope_head_dim", a.ropeHeadDim),
      integer("fixture.rope_head_dim", f.ropeHeadDim, "rope.rope_dim", a.ropeDim),
      integer("fixture.q_lora_rank", f.qLoraRank, "q_lora_rank", a.qLoraRank),
      integer("fixture.o_groups", f.oGroups, "o_groups", a.oGroups),
      integer("fixture.o_lora_rank", f.oLoraRank, "o_lora_rank", a.oLoraRank),
      integer("fixture.window_size", f.windowSize, "window_size", a.windowSize),
      integer(ratioField, role.ratio, "compress_ratio", a.compressRatio),
      real("fixture.norm_eps", normEps, "norm_eps", a.normEps, f.normEps),
      // Section 2: ratio-0 layers rotate with rope_theta, ratio > 0 layers with compress_rope_theta and YaRN.
      role.ratio == 0 ? real("fixture.rope_theta", f.ropeTheta, "rope.theta", a.ropeTheta)
                      : real("fixture.compress_rope_theta", f.compressRopeTheta, "rope.theta", a.ropeTheta),
  };
  for (const dsa::Status &st : checks)
    if (!st)
      return st;
  if ((role.ratio > 0) != a.yarn.has_value() || (role.ratio > 0) != a.compress.has_value())
    return mismatch(ratioField, role.ratio,
                    std::string("a layer ") + (a.yarn ? "with" : "without") + " YaRN and " +
                        (a.compress ? "with" : "without") + " a #dsa.compress");
  if (role.ratio == 0)
    return dsa::Status::success();
  const runtime::AttentionConfig::Yarn &y = *a.yarn;
  const runtime::AttentionConfig::Compress &c = *a.compress;
  const std::string kv = "a kv source", index = "an index source", candidates = "the candidate source",
                    user = "an index source using the candidate source's mask";
  const dsa::Status more[] = {
      integer("fixture.original_seq_len", f.originalSeqLen, "rope.yarn.original_seq_len", y.originalSeqLen),
      real("fixture.rope_factor", f.ropeFactor, "rope.yarn.factor", y.factor),
      real("fixture.beta_fast", f.betaFast, "rope.yarn.beta_fast", y.betaFast),
      real("fixture.beta_slow", f.betaSlow, "rope.yarn.beta_slow", y.betaSlow),
      flag("fixture.kv_source_layers", role.isKvSource, kv, "compress.is_kv_source", c.isKvSource),
      flag("fixture.index_source_layers", role.isIndexSource, index, "compress.is_index_source", c.isIndexSource),
      flag("fixture.candidate_source_layer", role.isCandidateSource, candidates, "compress.is_candidate_source",
           c.isCandidateSource),
      flag("fixture.candidate_source_layer", role.usesCandidates, user, "compress.uses_candidates", c.usesCandidates),
      integer("fixture.index_n_heads", f.indexNHeads, "compress.index_n_heads", c.indexNHeads),
      integer("fixture.index_head_dim", f.indexHeadDim, "compress.index_head_dim", c.indexHeadDim),
      integer("fixture.index_topk", f.indexTopk, "compress.index_topk", c.indexTopk),
      integer("fixture.candidate_topk_blocks", f.candidateTopkBlocks, "compress.candidate_topk_blocks",
              c.candidateTopkBlocks),
      integer("fixture.candidate_block_size", f.candidateBlockSize, "compress.candidate_block_size",
              c.candidateBlockSize),
      integer("fixture.max_seq_len", f.maxSeqLen, "compress.max_seq_len", c.maxSeqLen),
  };
  for (const dsa::Status &st : more)
    if (!st)
      return st;
  // index_k_source (a replay option, not the golden's: the golden is the reference's published_slot) and the
  // top-k tie_order (torch_cpu, the only one) are not golden fields.
  return dsa::Status::success();
}

/// Reads DIR/golden_layers.json (tools/dsa-run/EmitLibraries.h) and builds one sequence per layer of `file`.
dsa::Result<std::vector<LayerRun>> loadLayers(const golden::GoldenFile &file, const std::string &dir, bool verbose) {
  const std::string path = dir + "/golden_layers.json";
  std::ifstream in(path);
  if (!in)
    return dsa::makeError("cannot read '" + path + "' (write it with dsa-run --golden FILE --emit-libraries=" + dir +
                          ")");
  std::stringstream text;
  text << in.rdbuf();
  // Duplicate and unknown keys are errors naming their path (dsa/Support/StrictJson.h).
  dsa::Result<nlohmann::json> parsed = dsa::json::parseRejectingDuplicates(text.str());
  if (!parsed)
    return dsa::makeError(path + ": " + parsed.error());
  const nlohmann::json j = parsed.take();
  if (!j.is_object())
    return dsa::makeError(path + ": not a JSON object");
  if (dsa::Status st = dsa::json::checkKnownKeys(j, "", {"format", "version", "n_layers", "layers"}); !st)
    return dsa::makeError(path + ": " + st.error());
  if (!j.contains("format") || j["format"] != "dsa-golden-layers")
    return dsa::makeError(path + ": format: expected \"dsa-golden-layers\"");
  if (!j.contains("version") || j["version"] != 1)
    return dsa::makeError(path + ": version: expected 1");
  const int64_t nLayers = file.fixture().nLayers;
  if (!j.contains("layers") || !j["layers"].is_array())
    return dsa::makeError(path + ": layers: missing or not an array");
  std::vector<LayerRun> layers(static_cast<size_t>(nLayers));
  std::set<int64_t> seen;
  for (size_t i = 0; i < j["layers"].size(); ++i) {
    const nlohmann::json &lj = j["layers"][i];
    const std::string where = path + ": layers[" + std::to_string(i) + "]";
    if (!lj.is_object() || !lj.contains("layer") || !lj["layer"].is_number_integer())
      return dsa::makeError(where + ".layer: missing or not an integer");
    if (dsa::Status st = dsa::json::checkKnownKeys(lj, "layers[" + std::to_string(i) + "]",
                                                   {"layer", "description", "function", "weights"});
        !st)
      return dsa::makeError(path + ": " + st.error());
    const int64_t l = lj["layer"].get<int64_t>();
    if (l < 0 || l >= nLayers || !seen.insert(l).second)
      return dsa::makeError(where + ".layer: " + std::to_string(l) + " is not a new layer of the golden's " +
                            std::to_string(nLayers));
    for (const char *key : {"description", "function"})
      if (!lj.contains(key) || !lj[key].is_string())
        return dsa::makeError(where + "." + key + ": missing or not a string");
    if (!lj.contains("weights") || !lj["weights"].is_array())
      return dsa::makeError(where + ".weights: missing or not an array");
    LayerRun &run = layers[static_cast<size_t>(l)];
    run.layer = l;
    const std::string descriptionPath = dir + "/" + lj["description"].get<std::string>();
    const std::string function = lj["function"].get<std::string>();
    const runtime::FunctionSignature *sig = nullptr;
    if (isGpuStepLibrary(descriptionPath)) {
      static std::shared_ptr<dsa::cuda::MgpuRuntime> runtime; // one device context for every layer
      if (!runtime) {
        dsa::Result<std::shared_ptr<dsa::cuda::MgpuRuntime>> rt = dsa::cuda::MgpuRuntime::open();
        if (!rt)
          return dsa::makeError("layer " + std::to_string(l) + " (a GPU step library): " + rt.error());
        runtime = rt.take();
      }
      dsa::Result<std::unique_ptr<dsa::cuda::GpuStepLibrary>> lib =
          dsa::cuda::GpuStepLibrary::open(runtime, descriptionPath);
      if (!lib)
        return dsa::makeError("layer " + std::to_string(l) + ": " + lib.error());
      run.gpuLibrary = lib.take();
      sig = run.gpuLibrary->signature(function);
    } else {
      dsa::Result<std::unique_ptr<cpu::CPUStepLibrary>> lib = cpu::CPUStepLibrary::open(descriptionPath);
      if (!lib)
        return dsa::makeError("layer " + std::to_string(l) + ": " + lib.error());
      run.library = lib.take();
      sig = run.library->signature(function);
    }
    if (!sig)
      return dsa::makeError(where + ".function: the library has no @" + function);
    if (!sig->step.present())
      return dsa::makeError("layer " + std::to_string(l) + ": @" + function +
                            " has no step roles (a version 1 description? re-emit the libraries)");
    if (dsa::Status s = checkCompiledFor(file, l, *sig, lj["weights"], descriptionPath); !s)
      return dsa::makeError(s.error());
    // The weight arguments: every argument that is not x, start_pos, state or a shared slot, in order.
    std::set<int64_t> roles = {sig->step.x, sig->step.startPos};
    for (const runtime::StateBinding &b : sig->state)
      roles.insert(b.arg);
    for (const runtime::StateBinding &b : sig->step.shared)
      roles.insert(b.arg);
    std::map<size_t, runtime::HostValue> weights;
    size_t next = 0;
    for (size_t a = 0; a < sig->args.size(); ++a) {
      if (roles.count(static_cast<int64_t>(a)))
        continue;
      if (next >= lj["weights"].size() || !lj["weights"][next].is_string())
        return dsa::makeError(where + ".weights[" + std::to_string(next) + "]: missing or not a string (@" +
                              function + " argument #" + std::to_string(a) + ")");
      const std::string name = lj["weights"][next++].get<std::string>();
      const golden::WeightMeta *meta = file.weight(name);
      if (!meta)
        return dsa::makeError(where + ".weights: the golden has no weight '" + name + "' in weights_meta");
      dsa::Result<Tensor> w = golden::regenerateWeight(*meta);
      if (!w)
        return dsa::makeError(w.error());
      weights.emplace(a, runtime::HostBuffer::fromTensor(*w));
    }
    if (next != lj["weights"].size())
      return dsa::makeError(where + ".weights: " + std::to_string(lj["weights"].size()) + " names, @" + function +
                            " has " + std::to_string(next) + " weight arguments");
    const cpu::CPUStepLibrary *library = run.library.get();
    runtime::Sequence::Runner runner =
        run.gpuLibrary
            ? dsa::cuda::makeSequenceRunner(run.gpuLibrary, function)
            : runtime::Sequence::Runner([library, function](const std::vector<runtime::HostValue> &args,
                                                           std::vector<runtime::NamedTensor> *probes) {
                return library->run(function, args, probes);
              });
    dsa::Result<runtime::Sequence> seq = runtime::Sequence::start(*sig, std::move(runner), std::move(weights));
    if (!seq)
      return dsa::makeError("layer " + std::to_string(l) + ": " + seq.error());
    run.sequence = std::make_unique<runtime::Sequence>(seq.take());
    run.hasShared = !sig->step.shared.empty();
    if (verbose)
      std::cout << "layer " << l << ": " << dir << "/" << lj["description"].get<std::string>() << " @" << function
                << " x #" << sig->step.x << ", start_pos #" << sig->step.startPos << ", " << sig->state.size()
                << " state, " << sig->step.shared.size() << " shared slots, max_seq_len "
                << (sig->step.maxSeqLen < 0 ? std::string("none") : std::to_string(sig->step.maxSeqLen))
                << ", chunks " << (sig->step.chunked ? "in one call" : sig->step.shared.empty() ? "split" : "refused")
                << "\n";
  }
  for (int64_t l = 0; l < nLayers; ++l)
    if (!seen.count(l))
      return dsa::makeError(path + ": layers: no library for layer " + std::to_string(l) + " of the golden's " +
                            std::to_string(nLayers));
  return layers;
}

} // namespace

int main(int argc, char **argv) {
  std::string goldenPath, dir;
  bool verbose = false, force = false, chunkDecodes = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string &flag, std::string &into) {
      if (a.rfind(flag + "=", 0) == 0) {
        into = a.substr(flag.size() + 1);
        return true;
      }
      if (a == flag && i + 1 < argc) {
        into = argv[++i];
        return true;
      }
      return false;
    };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (a == "--verbose")
      verbose = true;
    else if (a == "--force")
      force = true;
    else if (a == "--chunk-decodes")
      chunkDecodes = true;
    else if (!value("--golden", goldenPath) && !value("--libraries", dir))
      return fail("unknown argument '" + a + "'\n" + kUsage);
  }
  if (goldenPath.empty() || dir.empty())
    return fail(std::string("--golden and --libraries are required\n") + kUsage);
  if (force && chunkDecodes)
    return fail("--force continues each regime with the golden's values, which a chunk of several regimes cannot "
                "take row by row: use --force or --chunk-decodes, not both");

  dsa::Result<golden::GoldenFile> loaded = golden::GoldenFile::load(goldenPath);
  if (!loaded)
    return fail(loaded.error());
  const golden::GoldenFile &file = *loaded;
  const golden::Fixture &fixture = file.fixture();
  if (dsa::Status s = golden::validateModelConfig(fixture); !s)
    return fail("invalid model configuration: " + s.error());
  dsa::Result<std::vector<LayerRun>> layers = loadLayers(file, dir, verbose);
  if (!layers)
    return fail(layers.error());
  runtime::Sequence::SlotSet slots;
  for (const LayerRun &run : *layers)
    if (run.hasShared) {
      dsa::Result<runtime::Sequence::SlotSet> initial = runtime::Sequence::initialSlots(run.sequence->signature());
      if (!initial)
        return fail(initial.error());
      slots = initial.take();
      break;
    }
  dsa::Result<golden::TinyModel> model = golden::TinyModel::create(file);
  if (!model)
    return fail(model.error());

  // The steps: one per regime, or with --chunk-decodes the regimes after the prefill whose positions continue one
  // another as ONE multi-token step (a chunk).
  const std::vector<golden::Regime> &regimes = file.regimes();
  std::vector<std::vector<size_t>> steps;
  for (size_t r = 0; r < regimes.size(); ++r) {
    if (chunkDecodes && !steps.empty() && regimes[r].startPos > 0 && regimes[r].numTokens == 1) {
      const golden::Regime &prev = regimes[steps.back().back()];
      if (prev.startPos > 0 && prev.numTokens == 1 && prev.startPos + 1 == regimes[r].startPos) {
        steps.back().push_back(r);
        continue;
      }
    }
    steps.push_back({r});
  }
  std::vector<runtime::StackLayerRoles> stack;
  if (chunkDecodes)
    for (const LayerRun &run : *layers) {
      dsa::Result<runtime::StackLayerRoles> roles = runtime::stackLayerRoles(run.sequence->signature());
      if (!roles)
        return fail("--chunk-decodes: layer " + std::to_string(run.layer) + ": " + roles.error());
      stack.push_back(*roles);
    }

  std::vector<golden::Verdict> verdicts;
  auto judge = [&](const golden::Regime &regime, const std::string &name,
                   const golden::CaptureMap &produced) -> bool {
    dsa::Result<golden::Verdict> verdict = golden::judgeWholeModelCapture(file, regime, name, produced);
    if (!verdict) {
      fail(verdict.error());
      return false;
    }
    verdicts.push_back(verdict.take());
    std::cout << golden::formatVerdict(verdicts.back()) << "\n";
    return true;
  };
  for (const std::vector<size_t> &step : steps) {
    if (step.size() == 1) {
      const golden::Regime &regime = regimes[step.front()];
      dsa::Result<std::vector<int64_t>> ids = golden::regimeInputIds(fixture, regime);
      if (!ids)
        return fail(ids.error());
      golden::CaptureMap produced;
      golden::AttentionFn attention = [&](int64_t l, const Tensor &attnIn,
                                          int64_t startPos) -> dsa::Result<Tensor> {
        LayerRun &run = (*layers)[static_cast<size_t>(l)];
        std::vector<runtime::NamedTensor> probes;
        dsa::Result<std::vector<Tensor>> r =
            run.sequence->run(attnIn, startPos, run.hasShared ? &slots : nullptr, &probes);
        if (!r)
          return dsa::makeError(r.error());
        for (runtime::NamedTensor &p : probes)
          produced[p.name] = std::move(p.value);
        return (*r)[static_cast<size_t>(run.sequence->signature().step.output)];
      };
      golden::CaptureOverride forced;
      if (force)
        forced = [&](const std::string &name, Tensor &value) { golden::forceFromGolden(file, regime, name, value); };
      dsa::Result<golden::StepOutputs> out =
          model->step(*ids, regime.startPos, attention, golden::recordInto(produced), forced);
      if (!out)
        return fail("regime '" + regime.name + "': " + out.error());
      for (const std::string &name : regime.captureOrder)
        if (!judge(regime, name, produced))
          return 2;
      continue;
    }

    // A chunk: its tokens' ids, the pieces that run layer-major exactly (runtime::planStackChunk; the prefill was
    // the first regime), each piece one step of the model with every layer called once over the piece's rows and
    // index_k routed as the piece says (StackChunkRouter).
    const golden::Regime &first = regimes[step.front()], &last = regimes[step.back()];
    std::vector<int64_t> ids;
    std::string names;
    for (size_t r : step) {
      dsa::Result<std::vector<int64_t>> part = golden::regimeInputIds(fixture, regimes[r]);
      if (!part)
        return fail(part.error());
      ids.insert(ids.end(), part->begin(), part->end());
      names += (names.empty() ? "" : " + ") + regimes[r].name;
    }
    const int64_t start = first.startPos, s = static_cast<int64_t>(ids.size());
    dsa::Result<std::vector<runtime::StackSubChunk>> plan =
        runtime::planStackChunk(stack, regimes.front().numTokens, start, s);
    if (!plan)
      return fail("--chunk-decodes: " + names + ": " + plan.error());
    std::cout << "chunk: " << names << " as one step of " << s << " tokens at start_pos " << start << ", pieces";
    for (const runtime::StackSubChunk &piece : *plan)
      std::cout << " [" << start + piece.first << ", " << start + piece.first + piece.count << ")";
    std::cout << "\n";
    std::vector<golden::CaptureMap> perRegime(step.size()); // each decode's view of the chunk's captures
    golden::CaptureMap state;                                 // the shared caches the chunk leaves behind
    for (const runtime::StackSubChunk &piece : *plan) {
      runtime::StackChunkRouter router(piece);
      if (!slots.empty())
        if (dsa::Status st = router.begin(slots); !st)
          return fail(st.error());
      golden::CaptureMap produced;
      golden::AttentionFn attention = [&](int64_t l, const Tensor &attnIn,
                                          int64_t startPos) -> dsa::Result<Tensor> {
        LayerRun &run = (*layers)[static_cast<size_t>(l)];
        std::vector<runtime::NamedTensor> probes;
        std::optional<Tensor> output;
        const size_t out = static_cast<size_t>(run.sequence->signature().step.output);
        if (run.hasShared) {
          runtime::Sequence::SlotSet routed = slots;
          if (dsa::Status st = router.beforeLayer(static_cast<size_t>(l), routed); !st)
            return dsa::makeError(st.error());
          dsa::Result<std::vector<runtime::HostValue>> r =
              run.sequence->runStackChunkValues(attnIn, startPos, routed, &probes);
          if (!r)
            return dsa::makeError(r.error());
          if (dsa::Status st = router.afterLayer(static_cast<size_t>(l), routed); !st)
            return dsa::makeError(st.error());
          slots = std::move(routed);
          output = (*r)[out].toTensor();
        } else {
          dsa::Result<std::vector<Tensor>> r = run.sequence->run(attnIn, startPos, nullptr, &probes);
          if (!r)
            return dsa::makeError(r.error());
          output = (*r)[out];
        }
        for (runtime::NamedTensor &p : probes)
          produced[p.name] = std::move(p.value);
        return *output;
      };
      const std::vector<int64_t> pieceIds(ids.begin() + piece.first, ids.begin() + piece.first + piece.count);
      dsa::Result<golden::StepOutputs> out =
          model->step(pieceIds, start + piece.first, attention, golden::recordInto(produced));
      if (!out)
        return fail("chunk " + names + ": tokens [" + std::to_string(piece.first) + ", " +
                    std::to_string(piece.first + piece.count) + "): " + out.error());
      if (!slots.empty())
        if (dsa::Status st = router.finish(slots); !st)
          return fail(st.error());
      for (auto &[name, value] : produced) {
        // A capture the replay does not compare at start_pos > 0 (the stale candidates of the layers before the
        // candidate source: the slot as the last step left it, not rows of this one) is neither.
        if (!golden::wholeModelSkipReason(fixture, first, name).empty())
          continue;
        if (golden::isStepStateCapture(name)) {
          state[name] = std::move(value);
          continue;
        }
        for (int64_t t = 0; t < piece.count; ++t) {
          dsa::Result<std::optional<Tensor>> row =
              golden::decodeRowOfChunkCapture(fixture, name, value, start + piece.first, piece.count, t);
          if (!row)
            return fail("chunk " + names + ": " + row.error() +
                        " (a layer that splits a chunk per token reports only its last token's probes)");
          perRegime[static_cast<size_t>(piece.first + t)][name] = std::move(**row);
        }
      }
    }
    // Each decode's captures; the shared caches for the chunk's last one only.
    for (size_t i = 0; i < step.size(); ++i) {
      const golden::Regime &regime = regimes[step[i]];
      const bool isLast = i + 1 == step.size();
      golden::CaptureMap &produced = perRegime[i];
      if (isLast)
        for (const auto &[name, value] : state)
          produced[name] = value;
      for (const std::string &name : regime.captureOrder) {
        if (!isLast && golden::isStepStateCapture(name)) {
          verdicts.push_back(golden::notCompared(
              regime.name, name,
              "inside the chunk " + names + ": the slot after position " + std::to_string(regime.startPos) +
                  " is not observable (compared after the chunk's last token, in " + last.name + ")"));
          std::cout << golden::formatVerdict(verdicts.back()) << "\n";
          continue;
        }
        if (!judge(regime, name, produced))
          return 2;
      }
    }
  }
  golden::Summary summary = golden::summarize(verdicts);
  std::cout << golden::formatSummary(summary) << "\n";
  return summary.allPassed() ? 0 : 1;
}
