//===- GoldenReplay.cpp - replay a DeepSeek golden through the dsa dialect ---===//
#include "GoldenReplay.h"
#include "EmitLibraries.h"

#include "dsa/Backend/CPU/CPUModule.h"
#include "dsa/Dialect/DSA/IR/AttentionBuilder.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"
#include "dsa/Golden/Golden.h"
#include "dsa/Golden/ModelConfig.h"
#include "dsa/Golden/Replay.h"
#include "dsa/Golden/TinyModel.h"
#include "dsa/Interpreter/Interpreter.h"
#include "dsa/Numerics/BF16.h"
#include "dsa/Support/CheckedArithmetic.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

using namespace mlir;
namespace golden = ::dsa::golden;
namespace interp = ::dsa::interp;
using ::dsa::ElementType;
using ::dsa::Tensor;

namespace dsa::tools {
namespace {

/// Attention weights from which the replay reports its progress on stderr (production geometry; one V4.1-Flash
/// window-only layer has 126M).
constexpr int64_t kProgressWeightElements = int64_t(32) << 20;

/// The attention captures every layer's probes produce (tiny-model-harness.md capture names).
const char *const kAttentionCaptures[] = {"sa_q", "sa_kv", "sa_topk_idxs", "sa_o", "attn_out"};

/// Everything the driver holds for one layer: weights by operand group, and the state it threads between steps.
struct Layer {
  int64_t id = 0;
  golden::LayerRole role;
  std::vector<Tensor> weights, compressor, indexKeys, indexer; // dsa.attention's operand groups
  bool weightsLoaded = false; // false while the weights are dropped
  bool resident = true;       // false: the weights are regenerated for each step and dropped after it
  int64_t weightElements = 0; // elements of the four groups
  std::vector<std::string> weightNames; // the golden names of the four groups' tensors, in argument order
  Tensor ring;
  std::vector<Tensor> state; // kv sources: [kv_state, score_state (ratio >= 2)], kv cache, index-key cache
  func::FuncOp fn;
};

/// The four shared slots of section 8, in dsa.attention's `shared(...)` order.
struct SharedSlots {
  std::vector<Tensor> slots; // compress_kv, index_k, topk_idxs, candidates
};

Result<Tensor> weight(const golden::GoldenFile &file, int64_t layer, const std::string &suffix) {
  std::string name = "layers." + std::to_string(layer) + "." + suffix;
  const golden::WeightMeta *meta = file.weight(name);
  if (!meta)
    return makeError("the golden has no weight '" + name + "' in weights_meta");
  return golden::regenerateWeight(*meta);
}

Status loadWeights(const golden::GoldenFile &file, const std::vector<std::string> &suffixes, int64_t layer,
                   std::vector<Tensor> &into, std::vector<std::string> &names) {
  for (const std::string &suffix : suffixes) {
    names.push_back("layers." + std::to_string(layer) + "." + suffix);
    Result<Tensor> w = weight(file, layer, suffix);
    if (!w)
      return makeError(w.error());
    into.push_back(w.take());
  }
  return Status::success();
}

/// The configuration of layer `layer.id` from the fixture (section 1): ratio-0 layers use rope_theta without YaRN,
/// ratio > 0 layers compress_rope_theta with YaRN and their role (golden::layerRole) in #dsa.compress.
mlir::dsa::AttentionLayerConfig layerConfig(const golden::Fixture &f, const Layer &layer,
                                            mlir::dsa::IndexKSource indexKSource) {
  mlir::dsa::AttentionLayerConfig c;
  c.layerId = layer.id;
  c.dim = f.dim;
  c.nHeads = f.nHeads;
  c.headDim = f.headDim;
  c.ropeHeadDim = f.ropeHeadDim;
  c.qLoraRank = f.qLoraRank;
  c.oGroups = f.oGroups;
  c.oLoraRank = f.oLoraRank;
  c.windowSize = f.windowSize;
  c.compressRatio = layer.role.ratio;
  c.normEps = f.normEps;
  if (layer.role.ratio == 0) {
    c.ropeTheta = f.ropeTheta;
    return c;
  }
  c.ropeTheta = f.compressRopeTheta;
  c.yarn = mlir::dsa::AttentionYarn{f.originalSeqLen, f.ropeFactor, f.betaFast, f.betaSlow};
  const golden::LayerRole &r = layer.role;
  mlir::dsa::AttentionCompress cc;
  cc.isKvSource = r.isKvSource;
  cc.isIndexSource = r.isIndexSource;
  cc.isCandidateSource = r.isCandidateSource;
  cc.usesCandidates = r.usesCandidates;
  cc.indexNHeads = f.indexNHeads;
  cc.indexHeadDim = f.indexHeadDim;
  cc.indexTopk = f.indexTopk;
  cc.candidateTopkBlocks = f.candidateTopkBlocks;
  cc.candidateBlockSize = f.candidateBlockSize;
  cc.maxSeqLen = f.maxSeqLen;
  cc.indexKSource = indexKSource;
  c.compress = cc;
  return c;
}

/// The MLIR type of a tensor the driver passes (so that the function's operand types are those of the tensors).
Type typeOf(MLIRContext *ctx, const Tensor &t) {
  Builder b(ctx);
  Type element;
  switch (t.elementType()) {
  case ElementType::BF16: element = b.getBF16Type(); break;
  case ElementType::F32: element = b.getF32Type(); break;
  case ElementType::I1: element = b.getI1Type(); break;
  case ElementType::I32: element = b.getI32Type(); break;
  case ElementType::I64: element = b.getI64Type(); break;
  case ElementType::Index: element = b.getIndexType(); break;
  }
  return RankedTensorType::get(t.shape(), element);
}

/// Builds `@attention_L<l>` at the end of `module`: one dsa.attention configured from the fixture, its operands
/// typed by the tensors the driver will pass (x: [?, dim] bf16; the shared slots: [?, head_dim], [?, index_head_dim]
/// bf16, [?, ?] i32, [?, ?] i1).
FailureOr<func::FuncOp> buildLayerFunction(ModuleOp module, const golden::Fixture &f, const Layer &layer,
                                           mlir::dsa::IndexKSource indexKSource, bool batched = false) {
  MLIRContext *ctx = module.getContext();
  mlir::dsa::AttentionLayerConfig config = layerConfig(f, layer, indexKSource);
  Location loc = NameLoc::get(StringAttr::get(ctx, config.functionName()));
  // Batched: x [B, 1, dim], start_pos [B], the ring, state and slots with a leading B (the builder's types); the
  // weights are the golden's either way.
  FailureOr<mlir::dsa::AttentionOperandTypes> types =
      batched ? mlir::dsa::batchedAttentionOperandTypes(loc, config, ShapedType::kDynamic)
              : mlir::dsa::canonicalAttentionOperandTypes(loc, config);
  if (failed(types))
    return failure();
  if (!batched)
    types->ring = typeOf(ctx, layer.ring);
  auto typesOf = [&](const std::vector<Tensor> &tensors) {
    SmallVector<Type> out;
    for (const Tensor &t : tensors)
      out.push_back(typeOf(ctx, t));
    return out;
  };
  types->weights = typesOf(layer.weights);
  types->compressor = typesOf(layer.compressor);
  types->indexKeys = typesOf(layer.indexKeys);
  types->indexer = typesOf(layer.indexer);
  if (!batched)
    types->state = typesOf(layer.state);
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  return mlir::dsa::buildAttentionFunction(builder, loc, config, *types);
}

/// Progress on stderr, flushed, for the phases of a large replay (production-geometry weights): a phase prints a
/// line when it starts and one with its duration when it ends if `always`, else only an end line when it took at
/// least kProgressSeconds. The tiny golden's replay prints nothing.
class Progress {
public:
  static constexpr double kProgressSeconds = 2.0;
  explicit Progress(bool always) : always_(always) {}
  template <typename Fn> auto run(const std::string &what, Fn &&fn) {
    if (always_)
      say(what + " ...");
    const auto start = std::chrono::steady_clock::now();
    auto result = fn();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (always_ || seconds >= kProgressSeconds) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f", seconds);
      say(what + ": " + buf + " s");
    }
    return result;
  }
  void say(const std::string &line) const {
    llvm::outs().flush();
    llvm::errs() << "dsa-run: " << line << "\n";
    llvm::errs().flush();
  }
  bool always() const { return always_; }

private:
  bool always_;
};

/// Regenerates the weights of `layer` (ck-checked) into its four operand groups.
Status loadLayerWeights(const golden::GoldenFile &file, Layer &layer) {
  const int64_t l = layer.id, r = layer.role.ratio;
  layer.weights.clear();
  layer.compressor.clear();
  layer.indexKeys.clear();
  layer.indexer.clear();
  layer.weightNames.clear();
  if (Status s = loadWeights(file,
                             {"attn.attn_sink", "attn.wq_a.weight", "attn.q_norm.weight", "attn.wq_b.weight",
                              "attn.wkv.weight", "attn.kv_norm.weight", "attn.wo_a.weight", "attn.wo_b.weight"},
                             l, layer.weights, layer.weightNames);
      !s)
    return s;
  if (layer.role.isKvSource) {
    std::vector<std::string> comp = {"attn.compressor.wkv.weight"};
    if (r >= 2)
      comp.push_back("attn.compressor.wgate.weight");
    comp.push_back("attn.compressor.norm.weight");
    if (Status s = loadWeights(file, comp, l, layer.compressor, layer.weightNames); !s)
      return s;
    if (Status s = loadWeights(file, {"attn.indexer.wk.weight", "attn.indexer.k_norm.weight"}, l, layer.indexKeys,
                               layer.weightNames);
        !s)
      return s;
  }
  if (layer.role.isIndexSource)
    if (Status s = loadWeights(file, {"attn.indexer.wq_b.weight", "attn.indexer.weights_proj.weight"}, l,
                               layer.indexer, layer.weightNames);
        !s)
      return s;
  layer.weightElements = 0;
  for (const auto *group : {&layer.weights, &layer.compressor, &layer.indexKeys, &layer.indexer})
    for (const Tensor &t : *group)
      layer.weightElements += t.numElements();
  layer.weightsLoaded = true;
  return Status::success();
}

/// Frees the weights of a layer that is not resident; the shapes stay known through the built function.
void dropLayerWeights(Layer &layer) {
  for (auto *group : {&layer.weights, &layer.compressor, &layer.indexKeys, &layer.indexer})
    std::vector<Tensor>().swap(*group);
  layer.weightsLoaded = false;
}

/// Regenerates a layer's weights (ck-checked) and creates its initial state (section 4, 5: zero ring, zero kv state,
/// -inf score state, zero caches of ceil(max_seq_len / ratio) rows).
Result<Layer> makeLayer(const golden::GoldenFile &file, int64_t l) {
  const golden::Fixture &f = file.fixture();
  Layer layer;
  layer.id = l;
  layer.role = golden::layerRole(f, l);
  if (Status s = loadLayerWeights(file, layer); !s)
    return makeError(s.error());
  // The state's sizes come from the golden (bounded on load, GoldenFile.h): allocated with Tensor::zeros, so a
  // size above the tensor byte limit is an error naming the fields rather than an abort.
  auto zeros = [&](ElementType type, std::vector<int64_t> shape, const std::string &what) -> Result<Tensor> {
    Result<Tensor> t = Tensor::zeros(type, std::move(shape));
    if (!t)
      return makeError("layer " + std::to_string(l) + ": " + what + ": " + t.error());
    return t;
  };
  const std::string ratio = "fixture.compress_ratios[" + std::to_string(l) + "]";
  Result<Tensor> ring = zeros(ElementType::BF16, {f.windowSize, f.headDim},
                              "the ring [fixture.window_size, fixture.head_dim]");
  if (!ring)
    return makeError(ring.error());
  layer.ring = ring.take();
  int64_t r = layer.role.ratio;
  if (layer.role.isKvSource) {
    if (r >= 2) {
      Result<Tensor> kvState = zeros(ElementType::F32, {r, f.headDim}, "the kv state [" + ratio + ", fixture.head_dim]");
      if (!kvState)
        return makeError(kvState.error());
      Tensor scoreState = *kvState;
      std::fill(scoreState.floats(), scoreState.floats() + scoreState.numElements(),
                -std::numeric_limits<float>::infinity());
      layer.state.push_back(kvState.take());
      layer.state.push_back(std::move(scoreState));
    }
    const int64_t capacity = ceilDivNonNegative(f.maxSeqLen, r);
    for (auto [width, field] : {std::pair<int64_t, const char *>{f.headDim, "fixture.head_dim"},
                                {f.indexHeadDim, "fixture.index_head_dim"}}) {
      Result<Tensor> cache = zeros(ElementType::BF16, {capacity, width},
                                   "a cache [ceil(fixture.max_seq_len / " + ratio + "), " + field + "]");
      if (!cache)
        return makeError(cache.error());
      layer.state.push_back(cache.take());
    }
  }
  return layer;
}

SharedSlots emptySlots(const golden::Fixture &f) {
  SharedSlots s;
  s.slots = {Tensor(ElementType::BF16, {0, f.headDim}), Tensor(ElementType::BF16, {0, f.indexHeadDim}),
             Tensor(ElementType::I32, {0, 0}), Tensor(ElementType::I1, {0, 0})};
  return s;
}

/// A tensor from a capture stored in full, without the golden's leading batch dimension of 1.
Result<Tensor> tensorFromCapture(const golden::Capture &capture, ElementType type) {
  if (capture.stride != 1)
    return makeError("capture '" + capture.name + "' is stored at stride " + std::to_string(capture.stride) +
                     ", but it is used as an input and must be stored in full (stride 1): replay the whole model "
                     "(omit --layers), or use a golden that stores it in full (e.g. ds41_tiny_golden_full.json)");
  std::vector<int64_t> shape = capture.shape;
  if (!shape.empty() && shape.front() == 1)
    shape.erase(shape.begin());
  std::vector<float> values(capture.data.begin(), capture.data.end());
  return Tensor::fromFloats(type, shape, std::move(values));
}

/// Overwrites the first rows of the rank-2 float tensor `dst` with a full capture of rows of the same width.
/// False (nothing written) when the capture does not fit.
bool overwriteRows(Tensor &dst, const golden::Capture &c) {
  if (!dst.isFloat() || dst.rank() != 2 || c.shape.empty() || c.shape.back() != dst.dim(1) ||
      c.n > dst.numElements() || c.isInteger)
    return false;
  const bool bf16 = dst.elementType() == ElementType::BF16;
  for (int64_t i = 0; i < c.n; ++i) {
    const float v = static_cast<float>(c.data[static_cast<size_t>(i)]);
    dst.floats()[i] = bf16 ? ::dsa::numerics::roundBf16(v) : v;
  }
  return true;
}

/// --force after a layer's step (attention-semantics.md section 12): the layer's state and the shared slots
/// continue with the golden's values wherever the golden stores them in full and compares them
/// (golden::forceableCapture):
///   the ring from L<l>.sa_kv's window rows (decode: the W ring rows in slot order; prefill: token t's row in slot
///     t % W for the last min(s, W) tokens);
///   a kv source's compressed-KV cache rows [0, end // r) from shared.L<l>.compress_kv, and its index-key cache
///     from shared.L<l>.index_k when it published it this step (it produced a latent; otherwise the slot holds
///     another source's cache, section 8);
///   the slots: compress_kv and index_k rows [0, end // r), topk_idxs and candidates whole.
/// Not forced: the ratio >= 2 compressor state (no capture holds it).
void forceLayerState(const golden::GoldenFile &file, const golden::Regime &regime, Layer &layer,
                     SharedSlots &shared, int64_t startPos, int64_t s) {
  const golden::Fixture &f = file.fixture();
  const std::string L = "L" + std::to_string(layer.id) + ".", S = "shared." + L;
  const int64_t r = layer.role.ratio, end = startPos + s, W = f.windowSize, hd = f.headDim;
  if (const golden::Capture *kv = golden::forceableCapture(file, regime, L + "sa_kv")) {
    const int64_t rows = hd > 0 ? kv->n / hd : 0;
    const int64_t windowRows = rows - (r > 0 ? end / r : 0);
    auto copyRow = [&](int64_t from, int64_t slot) {
      for (int64_t d = 0; d < hd; ++d)
        layer.ring.floats()[slot * hd + d] = static_cast<float>(kv->data[static_cast<size_t>(from * hd + d)]);
    };
    if (startPos > 0 && windowRows == W)
      for (int64_t slot = 0; slot < W; ++slot)
        copyRow(slot, slot);
    else if (startPos == 0 && windowRows == s)
      for (int64_t t = std::max<int64_t>(0, s - W); t < s; ++t)
        copyRow(t, t % W);
  }
  if (r <= 0)
    return;
  const size_t n = layer.state.size();
  if (const golden::Capture *c = golden::forceableCapture(file, regime, S + "compress_kv")) {
    if (layer.role.isKvSource && n >= 2)
      overwriteRows(layer.state[n - 2], *c);
    overwriteRows(shared.slots[0], *c);
  }
  if (const golden::Capture *c = golden::forceableCapture(file, regime, S + "index_k")) {
    const bool published = end / r > startPos / r; // a latent this step: the slot is this layer's cache
    if (layer.role.isKvSource && n >= 2 && published)
      overwriteRows(layer.state[n - 1], *c);
    overwriteRows(shared.slots[1], *c);
  }
  golden::forceFromGolden(file, regime, S + "topk_idxs", shared.slots[2]);
  golden::forceFromGolden(file, regime, S + "candidates", shared.slots[3]);
}

/// Runs one layer's attention function for a step on the interpreter or, when `cpu` is set, on the compiled CPU
/// module, updating the layer's ring and state and the shared slots, and records every probe into `probed`.
/// `force` (interpreter only, may be empty): applied at every probe (the layer reads the replacement from then on).
Result<Tensor> runLayer(Layer &layer, SharedSlots &shared, const Tensor &x, int64_t startPos,
                        std::map<std::string, Tensor> &probed, const ::dsa::cpu::CPUModule *cpu,
                        const interp::ProbeOverride &force = {}) {
  // The weights are moved into the argument list for the call and back after it (no copy of ~0.5 GB per step at
  // production geometry); the call only reads its arguments.
  std::vector<Tensor> args = {x, Tensor::scalarI64(startPos), layer.ring};
  const std::vector<std::vector<Tensor> *> weightGroups = {&layer.weights, &layer.compressor, &layer.indexKeys,
                                                           &layer.indexer};
  for (std::vector<Tensor> *group : weightGroups)
    for (Tensor &w : *group)
      args.push_back(std::move(w));
  args.insert(args.end(), layer.state.begin(), layer.state.end());
  if (layer.role.ratio > 0)
    args.insert(args.end(), shared.slots.begin(), shared.slots.end());
  struct GiveBack {
    std::vector<Tensor> &args;
    const std::vector<std::vector<Tensor> *> &groups;
    ~GiveBack() {
      size_t next = 3;
      for (std::vector<Tensor> *group : groups)
        for (Tensor &w : *group)
          w = std::move(args[next++]);
    }
  } giveBack{args, weightGroups};
  interp::ProbeLog probes;
  std::vector<Tensor> r;
  if (cpu) {
    Result<std::vector<Tensor>> results = cpu->call("attention_L" + std::to_string(layer.id), args, &probes);
    if (!results)
      return makeError("layer " + std::to_string(layer.id) + " at start_pos " + std::to_string(startPos) +
                       " on the CPU backend: " + results.error());
    r = results.take();
  } else {
    FailureOr<std::vector<Tensor>> results = interp::interpretFunction(layer.fn, args, &probes, force);
    if (failed(results))
      return makeError("interpreting layer " + std::to_string(layer.id) + " at start_pos " +
                       std::to_string(startPos) + " failed (see the diagnostic above)");
    r = std::move(*results);
  }
  layer.ring = r[1];
  size_t next = 2;
  for (Tensor &s : layer.state)
    s = r[next++];
  if (layer.role.ratio > 0)
    for (Tensor &slot : shared.slots)
      slot = r[next++];
  for (interp::ProbeRecord &record : probes)
    probed[record.name] = std::move(record.value);
  return r[0];
}

} // namespace

GoldenReplayReport replayGolden(const GoldenReplayOptions &options, llvm::raw_ostream &out) {
  auto fail = [](const std::string &message) {
    GoldenReplayReport report;
    report.exitStatus = 2;
    report.error = message;
    return report;
  };
  if (options.backend != "interpret" && options.backend != "cpu" && options.backend != "gpu")
    return fail("--backend must be 'interpret', 'cpu' or 'gpu', got '" + options.backend + "'");
  if (options.backend == "gpu" && options.emitLibraries.empty())
    return fail("--backend=gpu needs --emit-libraries=DIR: the GPU step libraries run MLIR-free, with "
                "`dsa-golden --golden FILE --libraries DIR` on a machine with a CUDA device");
  const bool cpuCode = options.backend == "cpu" || (options.backend == "interpret" && !options.emitLibraries.empty());
  if (!options.cpu.empty() && !cpuCode)
    return fail("--cpu applies to compiled CPU code: --backend=cpu or --emit-libraries (CPU step libraries)");
  std::optional<mlir::dsa::IndexKSource> indexKSource = mlir::dsa::symbolizeIndexKSource(options.indexKSource);
  if (!indexKSource)
    return fail("--index-k-source must be 'published_slot' or 'own_cache', got '" + options.indexKSource + "'");
  if (options.force && *indexKSource == mlir::dsa::IndexKSource::own_cache)
    return fail("--force continues with the golden's values, which follow the reference's index_k slot; "
                "--index-k-source=own_cache differs from it by design (use one or the other)");
  if (options.force && !options.emitLibraries.empty())
    return fail("--force applies to a replay, not to --emit-libraries (dsa-golden --force replays the libraries)");

  Result<golden::GoldenFile> loaded = golden::GoldenFile::load(options.goldenPath);
  if (!loaded)
    return fail(loaded.error());
  const golden::GoldenFile &file = *loaded;
  const golden::Fixture &fixture = file.fixture();
  if (Status s = golden::validateModelConfig(fixture); !s)
    return fail("invalid model configuration: " + s.error());

  const bool wholeModel = options.layers.empty();
  std::vector<int64_t> layerIds = options.layers;
  if (wholeModel)
    for (int64_t l = 0; l < fixture.nLayers; ++l)
      layerIds.push_back(l);
  for (int64_t l : layerIds) {
    if (l < 0 || l >= fixture.nLayers)
      return fail("--layers: layer " + std::to_string(l) + " does not exist (the fixture has " +
                  std::to_string(fixture.nLayers) + " layers)");
    if (!wholeModel && fixture.compressRatios[static_cast<size_t>(l)] != 0)
      return fail("--layers: layer " + std::to_string(l) + " has compress_ratio " +
                  std::to_string(fixture.compressRatios[static_cast<size_t>(l)]) +
                  " and reads the shared runtime of the layers before it: replay the whole model (omit --layers)");
  }

  MLIRContext context;
  context.loadDialect<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, scf::SCFDialect,
                      tensor::TensorDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));

  // Weights: the layers' weights stay resident up to options.residentWeightsMb of f32 storage; the layers past it
  // regenerate theirs for each step and drop them after it, so a production-geometry golden needs one layer's
  // weights at a time. Large goldens report their progress on stderr.
  int64_t weightElements = 0;
  for (int64_t l : layerIds)
    for (const golden::WeightMeta &w : file.weights())
      if (w.name.rfind("layers." + std::to_string(l) + ".attn.", 0) == 0)
        weightElements += w.n;
  Progress progress(weightElements >= kProgressWeightElements);
  if (progress.always())
    progress.say("attention weights of " + std::to_string(layerIds.size()) + " layers: " +
                 std::to_string(weightElements * 4 / (1 << 20)) + " MB as f32 (" +
                 std::to_string(options.residentWeightsMb) + " MB kept resident)");
  std::vector<Layer> layers;
  int64_t residentBytes = 0;
  for (int64_t l : layerIds) {
    Result<Layer> layer = progress.run("layer " + std::to_string(l) + ": regenerating its weights",
                                       [&] { return makeLayer(file, l); });
    if (!layer)
      return fail(layer.error());
    if (failed(buildLayerFunction(*module, fixture, *layer, *indexKSource)))
      return fail("could not build the attention function of layer " + std::to_string(l) +
                  " (see the diagnostic above)");
    residentBytes += layer->weightElements * 4;
    if (residentBytes > options.residentWeightsMb * (int64_t(1) << 20)) {
      layer->resident = false;
      dropLayerWeights(*layer);
    }
    layers.push_back(layer.take());
  }
  if (options.emit == "attention")
    module->print(out);
  if (!options.emitLibraries.empty()) { // AOT step libraries of the layers (EmitLibraries.h), then stop
    std::vector<LayerLibrary> libraries;
    for (const Layer &layer : layers)
      libraries.push_back(LayerLibrary{layer.id, layer.weightNames});
    Status s = emitGoldenLayerLibraries(*module, libraries, fixture.nLayers, options.emitLibraries,
                                        options.backend == "gpu", options.cpu);
    if (!s)
      return fail(s.error());
    return GoldenReplayReport{};
  }

  PassManager pm(&context);
  if (progress.always())
    progress.say("decomposing the layers (dsa-decompose-attention)");
  // The index sources' top-k scores are probed too (L<l>.index_score): the comparator's near-tie rule reads them.
  mlir::dsa::DSADecomposeAttentionOptions decomposeOptions;
  decomposeOptions.probeIndexScores = true;
  pm.addPass(mlir::dsa::createDSADecomposeAttention(decomposeOptions));
  if (failed(pm.run(*module)))
    return fail("dsa-decompose-attention failed (see the diagnostic above)");
  if (options.emit == "primitives")
    module->print(out);
  std::unique_ptr<::dsa::cpu::CPUModule> cpuModule;
  if (options.backend == "cpu") {
    ::dsa::cpu::CPUCompileOptions cpuOptions;
    cpuOptions.probesAsResults = true;
    cpuOptions.targetCpu = options.cpu;
    Result<std::unique_ptr<::dsa::cpu::CPUModule>> compiled =
        progress.run("compiling the layers for the CPU", [&] { return ::dsa::cpu::compileForCPU(*module, cpuOptions); });
    if (!compiled)
      return fail("--backend=cpu: compiling the layers failed: " + compiled.error());
    cpuModule = compiled.take();
  }
  std::map<int64_t, Layer *> byId;
  for (Layer &layer : layers) {
    layer.fn = module->lookupSymbol<func::FuncOp>("attention_L" + std::to_string(layer.id));
    byId[layer.id] = &layer;
  }

  std::optional<golden::TinyModel> model;
  if (wholeModel) {
    Result<golden::TinyModel> created = golden::TinyModel::create(file);
    if (!created)
      return fail(created.error());
    model.emplace(created.take());
  }
  if (progress.always())
    progress.say("replaying " + std::to_string(file.regimes().size()) + " regimes");

  SharedSlots shared = emptySlots(fixture);
  std::vector<golden::Verdict> verdicts;
  for (const golden::Regime &regime : file.regimes()) {
    std::map<std::string, Tensor> produced;
    std::set<std::string> inputs;
    // --force inside a layer (the interpreter): the attention internals sa_q, sa_kv, sa_topk_idxs, sa_o continue
    // with the golden's full values. attn_out is forced by the harness, after it has recorded the layer's result.
    interp::ProbeOverride inLayer;
    if (options.force && !cpuModule)
      inLayer = [&](const std::string &name, Tensor &value) {
        const size_t dot = name.find('.');
        if (name.rfind("L", 0) != 0 || dot == std::string::npos || name.compare(dot + 1, 3, "sa_") != 0)
          return false;
        return golden::forceFromGolden(file, regime, name, value);
      };
    auto step = [&](Layer &layer, const Tensor &x, int64_t startPos) -> Result<Tensor> {
      const std::string where = regime.name + " layer " + std::to_string(layer.id);
      if (!layer.weightsLoaded) {
        Status loaded = progress.run(where + ": regenerating its weights", [&] { return loadLayerWeights(file, layer); });
        if (!loaded)
          return makeError(loaded.error());
      }
      Result<Tensor> out = progress.run(where + " (" + std::to_string(x.dim(0)) + " tokens at " +
                                            std::to_string(startPos) + ")",
                                        [&] { return runLayer(layer, shared, x, startPos, produced,
                                                              cpuModule.get(), inLayer); });
      if (!layer.resident)
        dropLayerWeights(layer);
      if (out && options.force)
        forceLayerState(file, regime, layer, shared, startPos, x.dim(0));
      return out;
    };
    if (wholeModel) {
      Result<std::vector<int64_t>> ids = golden::regimeInputIds(fixture, regime);
      if (!ids)
        return fail(ids.error());
      golden::CaptureSink sink = golden::recordInto(produced);
      golden::AttentionFn attention = [&](int64_t l, const Tensor &attnIn, int64_t startPos) -> Result<Tensor> {
        std::string prefix = "L" + std::to_string(l) + ".";
        Tensor x = attnIn;
        if (options.resync) {
          Result<const golden::Capture *> in = file.capture(regime.name, prefix + "attn_in");
          if (in && (*in)->stride == 1)
            if (Result<Tensor> t = tensorFromCapture(**in, ElementType::BF16))
              x = t.take();
        }
        Result<Tensor> out = step(*byId[l], x, startPos);
        if (!out || !options.resync)
          return out;
        Result<const golden::Capture *> want = file.capture(regime.name, prefix + "attn_out");
        if (want && (*want)->stride == 1)
          if (Result<Tensor> t = tensorFromCapture(**want, ElementType::BF16))
            return t;
        return out;
      };
      golden::CaptureOverride force;
      if (options.force)
        force = [&](const std::string &name, Tensor &value) { golden::forceFromGolden(file, regime, name, value); };
      Result<golden::StepOutputs> stepped = model->step(*ids, regime.startPos, attention, sink, force);
      if (!stepped)
        return fail("regime '" + regime.name + "': " + stepped.error());
    } else {
      for (Layer &layer : layers) {
        std::string in = "L" + std::to_string(layer.id) + ".attn_in";
        Result<const golden::Capture *> capture = file.capture(regime.name, in);
        if (!capture)
          return fail(capture.error());
        Result<Tensor> x = tensorFromCapture(**capture, ElementType::BF16);
        if (!x)
          return fail(x.error());
        inputs.insert(in);
        Result<Tensor> out = step(layer, *x, regime.startPos);
        if (!out)
          return fail(out.error());
      }
    }
    // The attention captures of the replayed layers (a golden may store fewer): each one the golden has must have
    // been produced, else it fails like a missing capture of the whole model.
    std::set<std::string> attentionCaptures;
    if (!wholeModel)
      for (Layer &layer : layers)
        for (const char *name : kAttentionCaptures)
          attentionCaptures.insert("L" + std::to_string(layer.id) + "." + name);

    std::vector<std::string> notCompared;
    for (const std::string &name : regime.captureOrder) {
      if (inputs.count(name))
        continue;
      Result<const golden::Capture *> want = file.capture(regime.name, name);
      if (!want)
        return fail(want.error());
      if (wholeModel) {
        Result<golden::Verdict> verdict = golden::judgeWholeModelCapture(file, regime, name, produced);
        if (!verdict)
          return fail(verdict.error());
        verdicts.push_back(verdict.take());
        out << golden::formatVerdict(verdicts.back()) << "\n";
      } else if (auto it = produced.find(name); it != produced.end()) {
        verdicts.push_back(golden::compareCapture(
            regime.name, **want, it->second, golden::captureRules(fixture, regime, name, it->second, produced)));
        out << golden::formatVerdict(verdicts.back()) << "\n";
      } else if (attentionCaptures.count(name)) {
        verdicts.push_back(golden::notCompared(regime.name, name, "nothing produced this capture"));
        verdicts.back().status = golden::Verdict::Fail;
        out << golden::formatVerdict(verdicts.back()) << "\n";
      } else {
        notCompared.push_back(name);
      }
    }
    if (options.verbose) {
      for (const std::string &name : notCompared)
        out << "NOT COMPARED " << regime.name << " " << name
                     << " (outside the replayed layers' attention: replay the whole model)\n";
    } else if (!notCompared.empty()) {
      out << "not compared in " << regime.name << ": " << notCompared.size()
                   << " captures outside the replayed layers' attention (--verbose lists them)\n";
    }
  }
  GoldenReplayReport report;
  report.summary = golden::summarize(verdicts);
  report.verdicts = std::move(verdicts);
  out << golden::formatSummary(report.summary) << "\n";
  report.exitStatus = report.summary.allPassed() ? 0 : 1;
  return report;
}

int runGoldenReplay(const GoldenReplayOptions &options) {
  GoldenReplayReport report = replayGolden(options, llvm::outs());
  if (report.exitStatus == 2) {
    llvm::outs().flush();
    llvm::errs() << "dsa-run: error: " << report.error << "\n";
  }
  return report.exitStatus;
}

Result<GoldenLayer> buildGoldenLayer(mlir::ModuleOp module, const std::string &goldenPath, int64_t layer,
                                     const std::string &indexKSource, bool batched) {
  std::optional<mlir::dsa::IndexKSource> source = mlir::dsa::symbolizeIndexKSource(indexKSource);
  if (!source)
    return makeError("index_k_source must be 'published_slot' or 'own_cache', got '" + indexKSource + "'");
  Result<golden::GoldenFile> loaded = golden::GoldenFile::load(goldenPath);
  if (!loaded)
    return makeError(loaded.error());
  const golden::Fixture &fixture = loaded->fixture();
  if (Status s = golden::validateModelConfig(fixture); !s)
    return makeError("invalid model configuration: " + s.error());
  if (layer < 0 || layer >= fixture.nLayers)
    return makeError("layer: " + std::to_string(layer) + " does not exist (the fixture has " +
                     std::to_string(fixture.nLayers) + " layers)");
  const std::string name = "attention_L" + std::to_string(layer);
  if (module.lookupSymbol(name))
    return makeError("layer: the module already holds @" + name);
  module.getContext()->loadDialect<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, scf::SCFDialect,
                                   tensor::TensorDialect>();
  Result<Layer> made = makeLayer(*loaded, layer);
  if (!made)
    return makeError(made.error());
  if (failed(buildLayerFunction(module, fixture, *made, *source, batched)))
    return makeError("could not build the attention function of layer " + std::to_string(layer) +
                     " (see the diagnostic)");
  GoldenLayer out;
  out.layer = layer;
  out.function = name;
  out.dim = fixture.dim;
  out.weightNames = made->weightNames;
  for (auto *group : {&made->weights, &made->compressor, &made->indexKeys, &made->indexer})
    for (Tensor &w : *group)
      out.weights.push_back(std::move(w));
  out.ring = std::move(made->ring);
  out.state = std::move(made->state);
  out.hasSharedSlots = made->role.ratio > 0;
  return out;
}

} // namespace dsa::tools
