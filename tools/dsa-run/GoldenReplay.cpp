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

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

using namespace mlir;
namespace golden = ::dsa::golden;
namespace interp = ::dsa::interp;
using interp::ElementType;
using interp::Tensor;

namespace dsa::tools {
namespace {

/// The attention captures every layer's probes produce (tiny-model-harness.md capture names).
const char *const kAttentionCaptures[] = {"sa_q", "sa_kv", "sa_topk_idxs", "sa_o", "attn_out"};

/// Everything the driver holds for one layer: weights by operand group, and the state it threads between steps.
struct Layer {
  int64_t id = 0;
  golden::LayerRole role;
  std::vector<Tensor> weights, compressor, indexKeys, indexer; // dsa.attention's operand groups
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
                                           mlir::dsa::IndexKSource indexKSource) {
  MLIRContext *ctx = module.getContext();
  mlir::dsa::AttentionLayerConfig config = layerConfig(f, layer, indexKSource);
  Location loc = NameLoc::get(StringAttr::get(ctx, config.functionName()));
  FailureOr<mlir::dsa::AttentionOperandTypes> types = mlir::dsa::canonicalAttentionOperandTypes(loc, config);
  if (failed(types))
    return failure();
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
  types->state = typesOf(layer.state);
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  return mlir::dsa::buildAttentionFunction(builder, loc, config, *types);
}

/// Regenerates a layer's weights (ck-checked) and creates its initial state (section 4, 5: zero ring, zero kv state,
/// -inf score state, zero caches of ceil(max_seq_len / ratio) rows).
Result<Layer> makeLayer(const golden::GoldenFile &file, int64_t l) {
  const golden::Fixture &f = file.fixture();
  Layer layer;
  layer.id = l;
  layer.role = golden::layerRole(f, l);
  if (Status s = loadWeights(file,
                             {"attn.attn_sink", "attn.wq_a.weight", "attn.q_norm.weight", "attn.wq_b.weight",
                              "attn.wkv.weight", "attn.kv_norm.weight", "attn.wo_a.weight", "attn.wo_b.weight"},
                             l, layer.weights, layer.weightNames);
      !s)
    return makeError(s.error());
  layer.ring = Tensor(ElementType::BF16, {f.windowSize, f.headDim});
  int64_t r = layer.role.ratio;
  if (layer.role.isKvSource) {
    std::vector<std::string> comp = {"attn.compressor.wkv.weight"};
    if (r >= 2)
      comp.push_back("attn.compressor.wgate.weight");
    comp.push_back("attn.compressor.norm.weight");
    if (Status s = loadWeights(file, comp, l, layer.compressor, layer.weightNames); !s)
      return makeError(s.error());
    if (Status s = loadWeights(file, {"attn.indexer.wk.weight", "attn.indexer.k_norm.weight"}, l, layer.indexKeys,
                               layer.weightNames);
        !s)
      return makeError(s.error());
    if (r >= 2) {
      layer.state.push_back(Tensor(ElementType::F32, {r, f.headDim}));
      std::vector<float> negInf(static_cast<size_t>(r * f.headDim), -std::numeric_limits<float>::infinity());
      layer.state.push_back(Tensor::fromFloats(ElementType::F32, {r, f.headDim}, negInf));
    }
    int64_t capacity = (f.maxSeqLen + r - 1) / r;
    layer.state.push_back(Tensor(ElementType::BF16, {capacity, f.headDim}));
    layer.state.push_back(Tensor(ElementType::BF16, {capacity, f.indexHeadDim}));
  }
  if (layer.role.isIndexSource)
    if (Status s = loadWeights(file, {"attn.indexer.wq_b.weight", "attn.indexer.weights_proj.weight"}, l,
                               layer.indexer, layer.weightNames);
        !s)
      return makeError(s.error());
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

/// Runs one layer's attention function for a step on the interpreter or, when `cpu` is set, on the compiled CPU
/// module, updating the layer's ring and state and the shared slots, and records every probe into `probed`.
Result<Tensor> runLayer(Layer &layer, SharedSlots &shared, const Tensor &x, int64_t startPos,
                        std::map<std::string, Tensor> &probed, const ::dsa::cpu::CPUModule *cpu) {
  std::vector<Tensor> args = {x, Tensor::scalarI64(startPos), layer.ring};
  for (const auto *group : {&layer.weights, &layer.compressor, &layer.indexKeys, &layer.indexer, &layer.state})
    args.insert(args.end(), group->begin(), group->end());
  if (layer.role.ratio > 0)
    args.insert(args.end(), shared.slots.begin(), shared.slots.end());
  interp::ProbeLog probes;
  std::vector<Tensor> r;
  if (cpu) {
    Result<std::vector<Tensor>> results = cpu->call("attention_L" + std::to_string(layer.id), args, &probes);
    if (!results)
      return makeError("layer " + std::to_string(layer.id) + " at start_pos " + std::to_string(startPos) +
                       " on the CPU backend: " + results.error());
    r = results.take();
  } else {
    FailureOr<std::vector<Tensor>> results = interp::interpretFunction(layer.fn, args, &probes);
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

int runGoldenReplay(const GoldenReplayOptions &options) {
  auto fail = [](const std::string &message) {
    llvm::outs().flush();
    llvm::errs() << "dsa-run: error: " << message << "\n";
    return 2;
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
  context.loadDialect<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, tensor::TensorDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));

  std::vector<Layer> layers;
  for (int64_t l : layerIds) {
    Result<Layer> layer = makeLayer(file, l);
    if (!layer)
      return fail(layer.error());
    if (failed(buildLayerFunction(*module, fixture, *layer, *indexKSource)))
      return fail("could not build the attention function of layer " + std::to_string(l) +
                  " (see the diagnostic above)");
    layers.push_back(layer.take());
  }
  if (options.emit == "attention")
    module->print(llvm::outs());
  if (!options.emitLibraries.empty()) { // AOT step libraries of the layers (EmitLibraries.h), then stop
    std::vector<LayerLibrary> libraries;
    for (const Layer &layer : layers)
      libraries.push_back(LayerLibrary{layer.id, layer.weightNames});
    Status s = emitGoldenLayerLibraries(*module, libraries, fixture.nLayers, options.emitLibraries,
                                        options.backend == "gpu", options.cpu);
    return s ? 0 : fail(s.error());
  }

  PassManager pm(&context);
  pm.addPass(mlir::dsa::createDSADecomposeAttention());
  if (failed(pm.run(*module)))
    return fail("dsa-decompose-attention failed (see the diagnostic above)");
  if (options.emit == "primitives")
    module->print(llvm::outs());
  std::unique_ptr<::dsa::cpu::CPUModule> cpuModule;
  if (options.backend == "cpu") {
    ::dsa::cpu::CPUCompileOptions cpuOptions;
    cpuOptions.probesAsResults = true;
    cpuOptions.targetCpu = options.cpu;
    Result<std::unique_ptr<::dsa::cpu::CPUModule>> compiled = ::dsa::cpu::compileForCPU(*module, cpuOptions);
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

  SharedSlots shared = emptySlots(fixture);
  std::vector<golden::Verdict> verdicts;
  for (const golden::Regime &regime : file.regimes()) {
    std::map<std::string, Tensor> produced;
    std::set<std::string> inputs;
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
        Result<Tensor> out = runLayer(*byId[l], shared, x, startPos, produced, cpuModule.get());
        if (!out || !options.resync)
          return out;
        Result<const golden::Capture *> want = file.capture(regime.name, prefix + "attn_out");
        if (want && (*want)->stride == 1)
          if (Result<Tensor> t = tensorFromCapture(**want, ElementType::BF16))
            return t;
        return out;
      };
      Result<golden::StepOutputs> step = model->step(*ids, regime.startPos, attention, sink);
      if (!step)
        return fail("regime '" + regime.name + "': " + step.error());
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
        Result<Tensor> out = runLayer(layer, shared, *x, regime.startPos, produced, cpuModule.get());
        if (!out)
          return fail(out.error());
      }
      // Every attention capture of a replayed layer must have been probed.
      for (Layer &layer : layers)
        for (const char *name : kAttentionCaptures) {
          std::string full = "L" + std::to_string(layer.id) + "." + name;
          if (!file.capture(regime.name, full))
            return fail(file.capture(regime.name, full).error());
        }
    }

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
        llvm::outs() << golden::formatVerdict(verdicts.back()) << "\n";
      } else if (auto it = produced.find(name); it != produced.end()) {
        verdicts.push_back(golden::compareCapture(regime.name, **want, it->second));
        llvm::outs() << golden::formatVerdict(verdicts.back()) << "\n";
      } else {
        notCompared.push_back(name);
      }
    }
    if (options.verbose) {
      for (const std::string &name : notCompared)
        llvm::outs() << "NOT COMPARED " << regime.name << " " << name
                     << " (outside the replayed layers' attention: replay the whole model)\n";
    } else if (!notCompared.empty()) {
      llvm::outs() << "not compared in " << regime.name << ": " << notCompared.size()
                   << " captures outside the replayed layers' attention (--verbose lists them)\n";
    }
  }
  golden::Summary summary = golden::summarize(verdicts);
  llvm::outs() << golden::formatSummary(summary) << "\n";
  return summary.allPassed() ? 0 : 1;
}

} // namespace dsa::tools
