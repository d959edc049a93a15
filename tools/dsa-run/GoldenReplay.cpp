//===- GoldenReplay.cpp - replay a DeepSeek golden through the dsa dialect ---===//
#include "GoldenReplay.h"

#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"
#include "dsa/Golden/Golden.h"
#include "dsa/Interpreter/Interpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <algorithm>
#include <set>
#include <sstream>

using namespace mlir;
namespace golden = ::dsa::golden;
namespace interp = ::dsa::interp;

namespace dsa::tools {
namespace {

/// The attention captures a layer's probes produce (attention-semantics.md; tiny-model-harness.md capture names).
const char *const kAttentionCaptures[] = {"sa_q", "sa_kv", "sa_topk_idxs", "sa_o", "attn_out"};

/// The weights of a window-only layer, in dsa.attention's operand order, with their parameter names.
const char *const kWindowLayerWeights[] = {"attn.attn_sink", "attn.wq_a.weight", "attn.q_norm.weight",
                                           "attn.wq_b.weight", "attn.wkv.weight",   "attn.kv_norm.weight",
                                           "attn.wo_a.weight", "attn.wo_b.weight"};

std::string exactDouble(double v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.17e", v);
  return s;
}

std::string tensorType(const std::vector<int64_t> &shape, const char *elementType) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + elementType + ">";
}

/// Text of a module holding `@attention_L<l>`: one dsa.attention configured from the fixture.
std::string attentionModuleText(const golden::Fixture &f, int64_t layer,
                                const std::vector<interp::Tensor> &weights) {
  std::ostringstream os;
  std::string xType = tensorType({-1, f.dim}, "bf16");
  std::string ringType = tensorType({f.windowSize, f.headDim}, "bf16");
  std::vector<std::string> weightTypes;
  for (const interp::Tensor &w : weights)
    weightTypes.push_back(w.typeString());

  os << "func.func @attention_L" << layer << "(%x: " << xType << ", %start_pos: i64, %ring: " << ringType;
  for (size_t i = 0; i < weights.size(); ++i)
    os << ", %w" << i << ": " << weightTypes[i];
  os << ") -> (" << xType << ", " << ringType << ") {\n";
  os << "  %out, %new_ring = dsa.attention %x, %start_pos, %ring weights(";
  for (size_t i = 0; i < weights.size(); ++i)
    os << (i ? ", " : "") << "%w" << i;
  os << ") {config = #dsa.attn_config<layer_id = " << layer << ", dim = " << f.dim << ", n_heads = " << f.nHeads
     << ", head_dim = " << f.headDim << ", rope_head_dim = " << f.ropeHeadDim << ", q_lora_rank = " << f.qLoraRank
     << ", o_groups = " << f.oGroups << ", o_lora_rank = " << f.oLoraRank << ", window_size = " << f.windowSize
     << ", compress_ratio = " << f.compressRatios[static_cast<size_t>(layer)]
     << ", norm_eps = " << exactDouble(f.normEps) << " : f32"
     << ", rope = #dsa.rope<rope_dim = " << f.ropeHeadDim << ", theta = " << exactDouble(f.ropeTheta) << ">>}\n";
  os << "      : (" << xType << ", i64, " << ringType;
  for (const std::string &t : weightTypes)
    os << ", " << t;
  os << ") -> (" << xType << ", " << ringType << ")\n";
  os << "  return %out, %new_ring : " << xType << ", " << ringType << "\n}\n";
  return os.str();
}

/// A tensor from a capture stored in full, without the golden's leading batch dimension of 1.
Result<interp::Tensor> tensorFromCapture(const golden::Capture &capture, interp::ElementType type) {
  if (capture.stride != 1)
    return makeError("capture '" + capture.name + "' is stored at stride " + std::to_string(capture.stride) +
                     ", but it is used as an input and must be stored in full (stride 1)");
  std::vector<int64_t> shape = capture.shape;
  if (!shape.empty() && shape.front() == 1)
    shape.erase(shape.begin());
  std::vector<float> values(capture.data.begin(), capture.data.end());
  return interp::Tensor::fromFloats(type, shape, std::move(values));
}

struct Layer {
  int64_t id = 0;
  std::vector<interp::Tensor> weights;
  interp::Tensor ring;
  func::FuncOp fn;
};

} // namespace

int runGoldenReplay(const GoldenReplayOptions &options) {
  auto fail = [](const std::string &message) {
    llvm::errs() << "dsa-run: error: " << message << "\n";
    return 2;
  };

  Result<golden::GoldenFile> loaded = golden::GoldenFile::load(options.goldenPath);
  if (!loaded)
    return fail(loaded.error());
  const golden::GoldenFile &file = *loaded;
  const golden::Fixture &fixture = file.fixture();

  std::vector<int64_t> layerIds = options.layers;
  if (layerIds.empty())
    for (int64_t l = 0; l < fixture.nLayers; ++l)
      layerIds.push_back(l);
  for (int64_t l : layerIds) {
    if (l < 0 || l >= fixture.nLayers)
      return fail("--layers: layer " + std::to_string(l) + " does not exist (the fixture has " +
                  std::to_string(fixture.nLayers) + " layers)");
    if (fixture.compressRatios[static_cast<size_t>(l)] != 0)
      return fail("--layers: layer " + std::to_string(l) + " has compress_ratio " +
                  std::to_string(fixture.compressRatios[static_cast<size_t>(l)]) +
                  "; only window-only (compress_ratio 0) layers can be replayed so far");
  }

  MLIRContext context;
  context.loadDialect<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, tensor::TensorDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));

  // Weights and the module: one @attention_L<l> per layer.
  std::vector<Layer> layers;
  for (int64_t l : layerIds) {
    Layer layer;
    layer.id = l;
    for (const char *suffix : kWindowLayerWeights) {
      std::string name = "layers." + std::to_string(l) + "." + suffix;
      const golden::WeightMeta *meta = file.weight(name);
      if (!meta)
        return fail("the golden has no weight '" + name + "' in weights_meta");
      Result<interp::Tensor> w = golden::regenerateWeight(*meta);
      if (!w)
        return fail(w.error());
      layer.weights.push_back(w.take());
    }
    layer.ring = interp::Tensor(interp::ElementType::BF16, {fixture.windowSize, fixture.headDim});
    OwningOpRef<ModuleOp> parsed =
        parseSourceString<ModuleOp>(attentionModuleText(fixture, l, layer.weights), &context);
    if (!parsed)
      return fail("could not build the attention module of layer " + std::to_string(l));
    for (Operation &op : llvm::make_early_inc_range(parsed->getBody()->getOperations()))
      op.moveBefore(module->getBody(), module->getBody()->end());
    layers.push_back(std::move(layer));
  }
  if (options.emit == "attention")
    module->print(llvm::outs());

  PassManager pm(&context);
  pm.addPass(mlir::dsa::createDSADecomposeAttention());
  if (failed(pm.run(*module)))
    return fail("dsa-decompose-attention failed");
  if (options.emit == "primitives")
    module->print(llvm::outs());
  for (Layer &layer : layers)
    layer.fn = module->lookupSymbol<func::FuncOp>("attention_L" + std::to_string(layer.id));

  std::vector<golden::Verdict> verdicts;
  for (const golden::Regime &regime : file.regimes()) {
    std::set<std::string> compared;
    for (Layer &layer : layers) {
      std::string prefix = "L" + std::to_string(layer.id) + ".";
      Result<const golden::Capture *> in = file.capture(regime.name, prefix + "attn_in");
      if (!in)
        return fail(in.error());
      Result<interp::Tensor> x = tensorFromCapture(**in, interp::ElementType::BF16);
      if (!x)
        return fail(x.error());

      std::vector<interp::Tensor> args = {x.take(), interp::Tensor::scalarI64(regime.startPos), layer.ring};
      args.insert(args.end(), layer.weights.begin(), layer.weights.end());
      interp::ProbeLog probes;
      FailureOr<std::vector<interp::Tensor>> results = interp::interpretFunction(layer.fn, args, &probes);
      if (failed(results))
        return fail("interpreting layer " + std::to_string(layer.id) + " in regime '" + regime.name + "' failed");
      layer.ring = (*results)[1];

      std::map<std::string, const interp::Tensor *> probed;
      for (const interp::ProbeRecord &record : probes)
        probed[record.name] = &record.value;
      for (const char *name : kAttentionCaptures) {
        std::string full = prefix + name;
        Result<const golden::Capture *> want = file.capture(regime.name, full);
        if (!want)
          return fail(want.error());
        auto it = probed.find(full);
        if (it == probed.end())
          return fail("the decomposed layer " + std::to_string(layer.id) + " produced no probe '" + full + "'");
        verdicts.push_back(golden::compareCapture(regime.name, **want, *it->second));
        llvm::outs() << golden::formatVerdict(verdicts.back()) << "\n";
        compared.insert(full);
      }
    }
    // Everything else the golden holds for this regime (other layers, the model around attention, the shared
    // slots) needs the model harness; the layers' attn_in captures were inputs.
    std::vector<std::string> skipped;
    for (const std::string &name : regime.captureOrder) {
      bool isInput = false;
      for (const Layer &layer : layers)
        isInput |= name == "L" + std::to_string(layer.id) + ".attn_in";
      if (!compared.count(name) && !isInput)
        skipped.push_back(name);
    }
    if (options.verbose) {
      for (const std::string &name : skipped)
        llvm::outs() << "NOT COMPARED " << regime.name << " " << name
                     << " (needs the model harness: replay without --layers)\n";
    } else if (!skipped.empty()) {
      llvm::outs() << "not compared in " << regime.name << ": " << skipped.size()
                   << " captures outside the replayed layers' attention (--verbose lists them)\n";
    }
  }
  golden::Summary summary = golden::summarize(verdicts);
  llvm::outs() << golden::formatSummary(summary) << "\n";
  return summary.allPassed() ? 0 : 1;
}

} // namespace dsa::tools
