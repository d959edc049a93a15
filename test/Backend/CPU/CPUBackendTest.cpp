//===- CPUBackendTest.cpp - the JIT CPU backend against the interpreter and the golden ---===//
//
// Expected values come from outside the code under test (dsa-to-cpu + --dsa-cpu-pipeline + the JIT):
//   - the reference interpreter (lib/Interpreter + the MLIR-free kernels) on the SAME module and inputs: results
//     must be bit-identical (float bit patterns, NaN = NaN) and index tensors equal;
//   - the golden (test/Golden/ds41_tiny_golden.json) through the section 12 comparator;
//   - ::dsa::numerics (roundBf16) for the pipeline's bf16 rounding;
//   - hand-written expectations for the error paths.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Backend/CPU/CPUModule.h"
#include "dsa/Backend/CPU/RuntimeErrors.h"
#include "dsa/Runtime/CPU/StepLibrary.h"

#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"
#include "dsa/Golden/Golden.h"
#include "dsa/Interpreter/Interpreter.h"
#include "dsa/Numerics/BF16.h"
#include "dsa/Numerics/Bits.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace mlir;
namespace interp = ::dsa::interp;
namespace golden = ::dsa::golden;
namespace cpu = ::dsa::cpu;
using interp::ElementType;
using interp::Tensor;

namespace {

class CPUBackendTest : public ::testing::Test {
protected:
  CPUBackendTest() {
    DialectRegistry registry;
    registerAllDialects(registry);
    registry.insert<mlir::dsa::DSADialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    context.printOpOnDiagnostic(false);
    handler = std::make_unique<ScopedDiagnosticHandler>(&context, [this](Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return success();
    });
  }

  OwningOpRef<ModuleOp> parse(const std::string &text) {
    OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(m) << diagnostics;
    return m;
  }

  std::unique_ptr<cpu::CPUModule> compile(ModuleOp m, cpu::CPUCompileOptions options = {}) {
    ::dsa::Result<std::unique_ptr<cpu::CPUModule>> r = cpu::compileForCPU(m, options);
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() ? r.take() : nullptr;
  }

  /// Runs `fn` of `text` on the interpreter and on the CPU backend and expects bit-identical results.
  void expectMatchesInterpreter(const std::string &text, const std::string &fn, const std::vector<Tensor> &args,
                                cpu::CPUCompileOptions options = {}) {
    OwningOpRef<ModuleOp> m = parse(text);
    ASSERT_TRUE(m);
    auto f = m->lookupSymbol<func::FuncOp>(fn);
    ASSERT_TRUE(f) << fn;
    FailureOr<std::vector<Tensor>> want = interp::interpretFunction(f, args, nullptr);
    ASSERT_TRUE(succeeded(want)) << diagnostics;
    std::unique_ptr<cpu::CPUModule> compiled = compile(*m, options);
    ASSERT_TRUE(compiled);
    ::dsa::Result<std::vector<Tensor>> got = compiled->call(fn, args);
    ASSERT_TRUE(got.ok()) << got.error();
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i)
      EXPECT_TRUE(sameBits((*got)[i], (*want)[i])) << fn << " result #" << i;
  }

  static ::testing::AssertionResult sameBits(const Tensor &got, const Tensor &want) {
    if (got.elementType() != want.elementType())
      return ::testing::AssertionFailure() << "element type " << interp::elementTypeName(got.elementType())
                                           << " vs " << interp::elementTypeName(want.elementType());
    if (got.shape() != want.shape())
      return ::testing::AssertionFailure() << "shape " << got.typeString() << " vs " << want.typeString();
    int64_t mismatches = 0;
    std::ostringstream first;
    for (int64_t i = 0; i < want.numElements(); ++i) {
      bool same;
      if (want.isFloat()) {
        float a = got.floats()[i], b = want.floats()[i];
        same = (std::isnan(a) && std::isnan(b)) || ::dsa::numerics::f32Bits(a) == ::dsa::numerics::f32Bits(b);
        if (!same && mismatches == 0)
          first << "element " << i << ": got " << a << " want " << b;
      } else {
        same = got.ints()[i] == want.ints()[i];
        if (!same && mismatches == 0)
          first << "element " << i << ": got " << got.ints()[i] << " want " << want.ints()[i];
      }
      mismatches += same ? 0 : 1;
    }
    if (mismatches)
      return ::testing::AssertionFailure() << mismatches << " of " << want.numElements()
                                           << " elements differ; first: " << first.str();
    return ::testing::AssertionSuccess();
  }

  MLIRContext context;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::string diagnostics;
};

std::mt19937 &rng() {
  static std::mt19937 gen(20240611);
  return gen;
}

/// A tensor of random values (normal, times `scale`), rounded to bf16 for BF16.
Tensor randomFloats(ElementType type, std::vector<int64_t> shape, float scale = 1.0f) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(rng());
  return Tensor::fromFloats(type, std::move(shape), std::move(v));
}

//===----------------------------------------------------------------------------------------------------------===//
// Golden layer 0: prefill12, decode12, decode13 through dsa.attention on the CPU
//===----------------------------------------------------------------------------------------------------------===//

std::string exactDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17e", v);
  return buf;
}

/// @attention_L<l>: one window-only dsa.attention configured from the fixture (weights as arguments).
std::string attentionModule(const golden::Fixture &f, int64_t layer, const std::vector<Tensor> &weights) {
  std::ostringstream os;
  std::string xType = "tensor<?x" + std::to_string(f.dim) + "xbf16>";
  std::string ringType = "tensor<" + std::to_string(f.windowSize) + "x" + std::to_string(f.headDim) + "xbf16>";
  os << "func.func @attention_L" << layer << "(%x: " << xType << ", %start_pos: i64, %ring: " << ringType;
  for (size_t i = 0; i < weights.size(); ++i)
    os << ", %w" << i << ": " << weights[i].typeString();
  os << ") -> (" << xType << ", " << ringType << ") {\n  %out, %new_ring = dsa.attention %x, %start_pos, %ring weights(";
  for (size_t i = 0; i < weights.size(); ++i)
    os << (i ? ", " : "") << "%w" << i;
  os << ") {config = #dsa.attn_config<layer_id = " << layer << ", dim = " << f.dim << ", n_heads = " << f.nHeads
     << ", head_dim = " << f.headDim << ", rope_head_dim = " << f.ropeHeadDim << ", q_lora_rank = " << f.qLoraRank
     << ", o_groups = " << f.oGroups << ", o_lora_rank = " << f.oLoraRank << ", window_size = " << f.windowSize
     << ", compress_ratio = 0, norm_eps = " << exactDouble(f.normEps) << " : f32, rope = #dsa.rope<rope_dim = "
     << f.ropeHeadDim << ", theta = " << exactDouble(f.ropeTheta) << ">>}\n      : (" << xType << ", i64, "
     << ringType;
  for (const Tensor &w : weights)
    os << ", " << w.typeString();
  os << ") -> (" << xType << ", " << ringType << ")\n  return %out, %new_ring : " << xType << ", " << ringType
     << "\n}\n";
  return os.str();
}

/// True when compileForCPU can find an OpenMP runtime for CPUCompileOptions::parallel.
bool haveOpenMP() {
  if (const char *env = std::getenv("DSA_OPENMP_LIB"))
    return std::ifstream(env).good();
  for (const char *p : {"/usr/lib/llvm-22/lib/libomp.so", "/usr/lib/x86_64-linux-gnu/libomp.so.5",
                        "/usr/lib/x86_64-linux-gnu/libiomp5.so"})
    if (std::ifstream(p).good())
      return true;
  return false;
}

class CPUBackendGoldenTest : public CPUBackendTest, public ::testing::WithParamInterface<bool> {};

TEST_P(CPUBackendGoldenTest, Layer0MatchesInterpreterBitExactAndGolden) {
  const bool parallel = GetParam();
  if (parallel && !haveOpenMP())
    GTEST_SKIP() << "no OpenMP runtime (libomp) for parallel=true";
  auto loaded = golden::GoldenFile::load(std::string(DSA_TEST_DATA_DIR) + "/ds41_tiny_golden.json");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  const golden::GoldenFile &file = *loaded;
  const golden::Fixture &f = file.fixture();
  ASSERT_EQ(f.compressRatios.at(0), 0);

  std::vector<Tensor> weights;
  for (const char *suffix : {"attn.attn_sink", "attn.wq_a.weight", "attn.q_norm.weight", "attn.wq_b.weight",
                             "attn.wkv.weight", "attn.kv_norm.weight", "attn.wo_a.weight", "attn.wo_b.weight"}) {
    const golden::WeightMeta *meta = file.weight(std::string("layers.0.") + suffix);
    ASSERT_TRUE(meta) << suffix;
    auto w = golden::regenerateWeight(*meta);
    ASSERT_TRUE(w.ok()) << w.error();
    weights.push_back(w.take());
  }
  OwningOpRef<ModuleOp> m = parse(attentionModule(f, 0, weights));
  ASSERT_TRUE(m);

  // The interpreter runs the decomposed module; the CPU backend compiles the dsa.attention module itself.
  OwningOpRef<ModuleOp> decomposed(m->clone());
  PassManager pm(&context);
  pm.addPass(mlir::dsa::createDSADecomposeAttention());
  ASSERT_TRUE(succeeded(pm.run(*decomposed))) << diagnostics;
  auto interpFn = decomposed->lookupSymbol<func::FuncOp>("attention_L0");
  cpu::CPUCompileOptions options;
  options.probesAsResults = true;
  options.parallel = parallel;
  std::unique_ptr<cpu::CPUModule> compiled = compile(*m, options);
  ASSERT_TRUE(compiled);
  EXPECT_EQ(compiled->functionNames(), std::vector<std::string>{"attention_L0"});
  // The ring is state: result #1 (new_ring) feeds argument #2 (ring) of the next step.
  const cpu::FunctionSignature *sig = compiled->signature("attention_L0");
  ASSERT_TRUE(sig);
  ASSERT_EQ(sig->state.size(), 1u);
  EXPECT_EQ(sig->state[0].arg, 2);
  EXPECT_EQ(sig->state[0].result, 1);
  EXPECT_EQ(sig->probeNames, (std::vector<std::string>{"L0.sa_q", "L0.sa_kv", "L0.sa_topk_idxs", "L0.sa_o",
                                                       "L0.attn_out"}));

  std::vector<cpu::CPUValue> preparedWeights;
  for (const Tensor &w : weights)
    preparedWeights.push_back(cpu::CPUBuffer::fromTensor(w));
  Tensor ringInterp(ElementType::BF16, {f.windowSize, f.headDim});
  Tensor ringCpu = ringInterp;
  const std::vector<std::string> captures = {"sa_q", "sa_kv", "sa_topk_idxs", "sa_o", "attn_out"};
  std::vector<std::string> regimesSeen;
  for (const golden::Regime &regime : file.regimes()) {
    regimesSeen.push_back(regime.name);
    auto in = file.capture(regime.name, "L0.attn_in");
    ASSERT_TRUE(in.ok()) << in.error();
    std::vector<int64_t> shape = (*in)->shape;
    shape.erase(shape.begin()); // batch 1
    Tensor x = Tensor::fromFloats(ElementType::BF16, shape, std::vector<float>((*in)->data.begin(), (*in)->data.end()));

    std::vector<Tensor> args = {x, Tensor::scalarI64(regime.startPos), ringInterp};
    args.insert(args.end(), weights.begin(), weights.end());
    interp::ProbeLog wantProbes;
    FailureOr<std::vector<Tensor>> want = interp::interpretFunction(interpFn, args, &wantProbes);
    ASSERT_TRUE(succeeded(want)) << diagnostics;

    // The CPU gets the weights as prepared CPUBuffers (converted once, shared by the three steps).
    std::vector<cpu::CPUValue> cpuArgs = {x, Tensor::scalarI64(regime.startPos), ringCpu};
    cpuArgs.insert(cpuArgs.end(), preparedWeights.begin(), preparedWeights.end());
    interp::ProbeLog gotProbes;
    ::dsa::Result<std::vector<Tensor>> got = compiled->run("attention_L0", cpuArgs, &gotProbes);
    ASSERT_TRUE(got.ok()) << got.error();
    ASSERT_EQ(got->size(), 2u);
    EXPECT_TRUE(sameBits((*got)[0], (*want)[0])) << regime.name << " out";
    EXPECT_TRUE(sameBits((*got)[1], (*want)[1])) << regime.name << " new_ring";
    ringInterp = (*want)[1];
    ringCpu = (*got)[1];

    ASSERT_EQ(gotProbes.size(), wantProbes.size()) << regime.name;
    for (size_t p = 0; p < wantProbes.size(); ++p) {
      EXPECT_EQ(gotProbes[p].name, wantProbes[p].name);
      EXPECT_TRUE(sameBits(gotProbes[p].value, wantProbes[p].value)) << regime.name << " " << wantProbes[p].name;
    }
    std::map<std::string, const Tensor *> byName;
    for (const interp::ProbeRecord &r : gotProbes)
      byName[r.name] = &r.value;
    for (const std::string &c : captures) {
      const std::string name = "L0." + c;
      ASSERT_TRUE(byName.count(name)) << name;
      auto cap = file.capture(regime.name, name);
      ASSERT_TRUE(cap.ok()) << cap.error();
      golden::Verdict v = golden::compareCapture(regime.name, **cap, *byName[name]);
      EXPECT_EQ(v.status, golden::Verdict::Pass) << golden::formatVerdict(v);
    }
  }
  EXPECT_EQ(regimesSeen, (std::vector<std::string>{"prefill12", "decode12", "decode13"}));
}

INSTANTIATE_TEST_SUITE_P(SerialAndOpenMP, CPUBackendGoldenTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return std::string(info.param ? "Parallel" : "Serial");
                         });

/// The AOT path: a step library for the MLIR-free runtime, run as one sequence (the ring threaded by the runtime's
/// CPUSequence from the state binding), bit-identical to the interpreter.
TEST_F(CPUBackendTest, AotStepLibrarySequenceMatchesInterpreter) {
  auto loaded = golden::GoldenFile::load(std::string(DSA_TEST_DATA_DIR) + "/ds41_tiny_golden.json");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  const golden::GoldenFile &file = *loaded;
  const golden::Fixture &f = file.fixture();
  std::vector<Tensor> weights;
  for (const char *suffix : {"attn.attn_sink", "attn.wq_a.weight", "attn.q_norm.weight", "attn.wq_b.weight",
                             "attn.wkv.weight", "attn.kv_norm.weight", "attn.wo_a.weight", "attn.wo_b.weight"}) {
    auto w = golden::regenerateWeight(*file.weight(std::string("layers.0.") + suffix));
    ASSERT_TRUE(w.ok()) << w.error();
    weights.push_back(w.take());
  }
  OwningOpRef<ModuleOp> m = parse(attentionModule(f, 0, weights));
  ASSERT_TRUE(m);
  const std::string dir = ::testing::TempDir() + "dsa-cpu-aot-" + std::to_string(::getpid());
  cpu::CPUCompileOptions options;
  options.probesAsResults = true;
  ::dsa::Result<std::string> json = cpu::emitCPUStepLibrary(*m, dir, "layer0", options);
  ASSERT_TRUE(json.ok()) << json.error();
  EXPECT_EQ(*json, dir + "/layer0.json");

  // From here on only the MLIR-free runtime.
  auto lib = cpu::CPUStepLibrary::open(*json);
  ASSERT_TRUE(lib.ok()) << lib.error();
  const cpu::FunctionSignature *sig = (*lib)->signature("attention_L0");
  ASSERT_TRUE(sig);
  ASSERT_EQ(sig->state.size(), 1u);
  std::vector<cpu::CPUValue> initial = {Tensor(ElementType::BF16, {0, f.dim}), Tensor::scalarI64(0),
                                        Tensor(ElementType::BF16, {f.windowSize, f.headDim})};
  for (const Tensor &w : weights)
    initial.push_back(cpu::CPUBuffer::fromTensor(w));
  const cpu::CPUStepLibrary *library = lib->get();
  auto seq = cpu::CPUSequence::create(
      *sig,
      [library](const std::vector<cpu::CPUValue> &args, std::vector<cpu::NamedTensor> *probes) {
        return library->run("attention_L0", args, probes);
      },
      initial);
  ASSERT_TRUE(seq.ok()) << seq.error();

  OwningOpRef<ModuleOp> decomposed(m->clone());
  PassManager pm(&context);
  pm.addPass(mlir::dsa::createDSADecomposeAttention());
  ASSERT_TRUE(succeeded(pm.run(*decomposed))) << diagnostics;
  auto interpFn = decomposed->lookupSymbol<func::FuncOp>("attention_L0");
  Tensor ring(ElementType::BF16, {f.windowSize, f.headDim});
  for (const golden::Regime &regime : file.regimes()) {
    auto in = file.capture(regime.name, "L0.attn_in");
    ASSERT_TRUE(in.ok()) << in.error();
    std::vector<int64_t> shape = (*in)->shape;
    shape.erase(shape.begin());
    Tensor x = Tensor::fromFloats(ElementType::BF16, shape, std::vector<float>((*in)->data.begin(), (*in)->data.end()));
    std::vector<Tensor> args = {x, Tensor::scalarI64(regime.startPos), ring};
    args.insert(args.end(), weights.begin(), weights.end());
    interp::ProbeLog wantProbes;
    FailureOr<std::vector<Tensor>> want = interp::interpretFunction(interpFn, args, &wantProbes);
    ASSERT_TRUE(succeeded(want)) << diagnostics;
    ring = (*want)[1];

    std::vector<cpu::NamedTensor> gotProbes;
    auto got = seq->step({{0, x}, {1, Tensor::scalarI64(regime.startPos)}}, &gotProbes);
    ASSERT_TRUE(got.ok()) << got.error();
    ASSERT_EQ(got->size(), 2u);
    EXPECT_TRUE(sameBits((*got)[0], (*want)[0])) << regime.name << " out";
    EXPECT_TRUE(sameBits((*got)[1], (*want)[1])) << regime.name << " new_ring";
    ASSERT_EQ(gotProbes.size(), wantProbes.size());
    for (size_t p = 0; p < wantProbes.size(); ++p) {
      EXPECT_EQ(gotProbes[p].name, wantProbes[p].name);
      EXPECT_TRUE(sameBits(gotProbes[p].value, wantProbes[p].value)) << regime.name << " " << wantProbes[p].name;
    }
    const cpu::CPUValue *state = seq->state(2);
    ASSERT_TRUE(state && state->tensor());
    EXPECT_TRUE(sameBits(*state->tensor(), ring));
  }
  // A run-time check failing inside the AOT code reaches the runtime through dsa_cpu_fail_hook.
  auto bad = seq->step({{0, Tensor(ElementType::BF16, {2, f.dim})}, {1, Tensor::scalarI64(20)}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("multi-token steps at start_pos > 0 are split into decode steps"), std::string::npos)
      << bad.error();
  // The state is unchanged by the failed step; replacing a state argument is refused.
  EXPECT_TRUE(sameBits(*seq->state(2)->tensor(), ring));
  auto refused = seq->step({{2, ring}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("argument #2 is state"), std::string::npos) << refused.error();
}

TEST_F(CPUBackendTest, ParallelLinearAndAttentionAreBitExact) {
  if (!haveOpenMP())
    GTEST_SKIP() << "no OpenMP runtime (libomp) for parallel=true";
  cpu::CPUCompileOptions parallel;
  parallel.parallel = true;
  const char *text = R"mlir(
func.func @lin(%x: tensor<?x200xbf16>, %w: tensor<96x200xbf16>) -> tensor<?x96xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x200xbf16>, tensor<96x200xbf16>) -> tensor<?x96xbf16>
  return %y : tensor<?x96xbf16>
}
func.func @attn(%q: tensor<?x4x32xbf16>, %kv: tensor<?x32xbf16>, %idx: tensor<?x?xi32>, %sink: tensor<4xf32>)
    -> tensor<?x4x32xbf16> {
  %o = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.176776692 : f32}
      : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
  return %o : tensor<?x4x32xbf16>
}
)mlir";
  expectMatchesInterpreter(text, "lin", {randomFloats(ElementType::BF16, {37, 200}),
                                         randomFloats(ElementType::BF16, {96, 200}, 0.1f)}, parallel);
  std::vector<int64_t> idx;
  for (int t = 0; t < 9; ++t)
    for (int j = 0; j < 16; ++j)
      idx.push_back((t * 7 + j * 3) % 21 - 1);
  expectMatchesInterpreter(text, "attn", {randomFloats(ElementType::BF16, {9, 4, 32}),
                                          randomFloats(ElementType::BF16, {20, 32}),
                                          Tensor::fromInts(ElementType::I32, {9, 16}, idx),
                                          Tensor::fromFloats(ElementType::F32, {4}, {0.f, 1.f, -2.f, 0.5f})},
                           parallel);
}

//===----------------------------------------------------------------------------------------------------------===//
// Each primitive against the interpreter, on random data and edge cases
//===----------------------------------------------------------------------------------------------------------===//

TEST_F(CPUBackendTest, LinearMatchesInterpreter) {
  const char *text = R"mlir(
func.func @k64(%x: tensor<?x64xbf16>, %w: tensor<24x64xbf16>) -> tensor<?x24xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x64xbf16>, tensor<24x64xbf16>) -> tensor<?x24xbf16>
  return %y : tensor<?x24xbf16>
}
func.func @k13(%x: tensor<2x3x13xbf16>, %w: tensor<5x13xbf16>) -> tensor<2x3x5xbf16> {
  %y = dsa.linear %x, %w : (tensor<2x3x13xbf16>, tensor<5x13xbf16>) -> tensor<2x3x5xbf16>
  return %y : tensor<2x3x5xbf16>
}
func.func @f32(%x: tensor<?x21xf32>, %w: tensor<7x21xf32>) -> tensor<?x7xf32> {
  %y = dsa.linear %x, %w : (tensor<?x21xf32>, tensor<7x21xf32>) -> tensor<?x7xf32>
  return %y : tensor<?x7xf32>
}
func.func @k5(%x: tensor<?x5xbf16>, %w: tensor<3x5xbf16>) -> tensor<?x3xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x5xbf16>, tensor<3x5xbf16>) -> tensor<?x3xbf16>
  return %y : tensor<?x3xbf16>
}
)mlir";
  expectMatchesInterpreter(text, "k64", {randomFloats(ElementType::BF16, {7, 64}),
                                         randomFloats(ElementType::BF16, {24, 64}, 0.1f)});
  expectMatchesInterpreter(text, "k13", {randomFloats(ElementType::BF16, {2, 3, 13}),
                                         randomFloats(ElementType::BF16, {5, 13})});
  expectMatchesInterpreter(text, "f32", {randomFloats(ElementType::F32, {4, 21}, 3.0f),
                                         randomFloats(ElementType::F32, {7, 21})});
  expectMatchesInterpreter(text, "k5", {randomFloats(ElementType::BF16, {2, 5}), randomFloats(ElementType::BF16, {3, 5})});
}

TEST_F(CPUBackendTest, RmsNormMatchesInterpreter) {
  const char *text = R"mlir(
func.func @bf(%x: tensor<?x16xbf16>, %w: tensor<16xbf16>) -> tensor<?x16xbf16> {
  %y = dsa.rms_norm %x, %w {eps = 9.99999968E-21 : f32} : (tensor<?x16xbf16>, tensor<16xbf16>) -> tensor<?x16xbf16>
  return %y : tensor<?x16xbf16>
}
func.func @f(%x: tensor<2x3x20xf32>, %w: tensor<20xbf16>) -> tensor<2x3x20xbf16> {
  %y = dsa.rms_norm %x, %w {eps = 1.0e-3 : f32} : (tensor<2x3x20xf32>, tensor<20xbf16>) -> tensor<2x3x20xbf16>
  return %y : tensor<2x3x20xbf16>
}
)mlir";
  expectMatchesInterpreter(text, "bf", {randomFloats(ElementType::BF16, {9, 16}, 5.0f),
                                        randomFloats(ElementType::BF16, {16})});
  // A zero row: mean 0, r = 1/sqrt(eps).
  Tensor x = randomFloats(ElementType::F32, {2, 3, 20}, 0.01f);
  for (int i = 0; i < 20; ++i)
    x.floats()[i] = 0.0f;
  expectMatchesInterpreter(text, "f", {x, randomFloats(ElementType::BF16, {20})});
}

TEST_F(CPUBackendTest, RopeAndPositionsMatchInterpreter) {
  const char *text = R"mlir(
func.func @fwd(%x: tensor<?x4x32xbf16>, %start: i64) -> tensor<?x4x32xbf16> {
  %c0 = arith.constant 0 : index
  %s = tensor.dim %x, %c0 : tensor<?x4x32xbf16>
  %pos = dsa.positions %start, %s : (i64, index) -> tensor<?xi64>
  %y = dsa.apply_rope %x, %pos {rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>}
      : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
  return %y : tensor<?x4x32xbf16>
}
func.func @inv(%x: tensor<?x12xbf16>, %pos: tensor<?xi64>) -> tensor<?x12xbf16> {
  %y = dsa.apply_rope %x, %pos {inverse, rope = #dsa.rope<rope_dim = 12, theta = 4.000000e+04 : f64,
      yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64,
              beta_slow = 1.000000e+00 : f64>>}
      : (tensor<?x12xbf16>, tensor<?xi64>) -> tensor<?x12xbf16>
  return %y : tensor<?x12xbf16>
}
func.func @strided(%start: i64, %n: index) -> tensor<?xi64> {
  %pos = dsa.positions %start, %n {stride = 3 : i64} : (i64, index) -> tensor<?xi64>
  return %pos : tensor<?xi64>
}
)mlir";
  expectMatchesInterpreter(text, "fwd", {randomFloats(ElementType::BF16, {5, 4, 32}), Tensor::scalarI64(0)});
  expectMatchesInterpreter(text, "fwd", {randomFloats(ElementType::BF16, {1, 4, 32}), Tensor::scalarI64(123457)});
  expectMatchesInterpreter(text, "inv", {randomFloats(ElementType::BF16, {6, 12}),
                                         Tensor::fromInts(ElementType::I64, {6}, {0, 1, 31, 1000, 65535, 1 << 20})});
  expectMatchesInterpreter(text, "strided", {Tensor::scalarI64(4), Tensor::scalarIndex(5)});
}

TEST_F(CPUBackendTest, ActQuantFp8MatchesInterpreterOnEveryBf16Value) {
  const char *text = R"mlir(
func.func @q(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %y = dsa.act_quant_fp8 %x {block_size = 32 : i64} : (tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
)mlir";
  // Every bf16 bit pattern, 31 per block after a first element of 448 (so amax = 448 and the scale is exactly 1
  // whenever the others are <= 448 in magnitude: the e4m3 rounding itself is tested on every bf16 value, incl.
  // subnormal e4m3, ties, saturation, inf and NaN, which make their block's scale inf/NaN).
  std::vector<float> v;
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    if (v.size() % 32 == 0)
      v.push_back(448.0f);
    v.push_back(::dsa::numerics::bf16BitsToF32(static_cast<uint16_t>(bits)));
  }
  while (v.size() % 64 != 0)
    v.push_back(0.0f);
  const int64_t rows = static_cast<int64_t>(v.size()) / 64;
  expectMatchesInterpreter(text, "q", {Tensor::fromFloats(ElementType::BF16, {rows, 64}, v)});
  // Random blocks over a wide range of magnitudes (the pow2_ceil scale and the division), plus an all-zero block
  // (amax floor 1e-4) and blocks whose amax/448 is an exact power of two.
  std::vector<float> r;
  std::uniform_real_distribution<float> expo(-40.0f, 20.0f);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  for (int b = 0; b < 400; ++b) {
    float mag = std::exp2(expo(rng()));
    for (int i = 0; i < 32; ++i)
      r.push_back(b == 0 ? 0.0f : n01(rng()) * mag);
    if (b % 7 == 3)
      r.back() = 448.0f * std::exp2(static_cast<float>(b % 23 - 11));
  }
  expectMatchesInterpreter(text, "q", {Tensor::fromFloats(ElementType::BF16, {200, 64}, r)});
}

TEST_F(CPUBackendTest, RingWindowAndIndicesMatchInterpreter) {
  const char *text = R"mlir(
func.func @step(%ring: tensor<8x32xbf16>, %kv: tensor<?x32xbf16>, %start: i64)
    -> (tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>) {
  %c0 = arith.constant 0 : index
  %s = tensor.dim %kv, %c0 : tensor<?x32xbf16>
  %r1 = dsa.ring_update %ring, %kv, %start : (tensor<8x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<8x32xbf16>
  %rows = dsa.window_kv %kv, %r1, %start : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
  %idx = dsa.window_indices %start, %s {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
  return %r1, %rows, %idx : tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>
}
func.func @ring_only(%ring: tensor<8x32xbf16>, %kv: tensor<?x32xbf16>, %start: i64) -> tensor<8x32xbf16> {
  %r1 = dsa.ring_update %ring, %kv, %start : (tensor<8x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<8x32xbf16>
  return %r1 : tensor<8x32xbf16>
}
)mlir";
  Tensor ring = randomFloats(ElementType::BF16, {8, 32});
  for (int64_t s : {1, 3, 8, 12, 20})
    expectMatchesInterpreter(text, "step", {ring, randomFloats(ElementType::BF16, {s, 32}), Tensor::scalarI64(0)});
  for (int64_t start : {1, 3, 7, 8, 12, 13, 100})
    expectMatchesInterpreter(text, "step", {ring, randomFloats(ElementType::BF16, {1, 32}), Tensor::scalarI64(start)});
  // A prepared ring buffer is never written: the updated ring is a new buffer (arguments are read-only).
  {
    OwningOpRef<ModuleOp> m = parse(text);
    ASSERT_TRUE(m);
    std::unique_ptr<cpu::CPUModule> compiled = compile(*m);
    ASSERT_TRUE(compiled);
    std::shared_ptr<const cpu::CPUBuffer> prepared = cpu::CPUBuffer::fromTensor(ring);
    std::vector<uint16_t> before(8 * 32);
    std::memcpy(before.data(), prepared->data(), before.size() * 2);
    Tensor kv = randomFloats(ElementType::BF16, {3, 32});
    auto got = compiled->run("ring_only", {prepared, kv, Tensor::scalarI64(0)});
    ASSERT_TRUE(got.ok()) << got.error();
    EXPECT_EQ(std::memcmp(before.data(), prepared->data(), before.size() * 2), 0);
    auto want = compiled->call("ring_only", {ring, kv, Tensor::scalarI64(0)});
    ASSERT_TRUE(want.ok()) << want.error();
    EXPECT_TRUE(sameBits((*got)[0], (*want)[0]));
    EXPECT_FALSE(sameBits((*got)[0], ring)); // rows 0..2 were replaced
    auto null = compiled->run("ring_only", {std::shared_ptr<const cpu::CPUBuffer>(), kv, Tensor::scalarI64(0)});
    ASSERT_FALSE(null.ok());
    EXPECT_NE(null.error().find("argument #0 is a null CPUBuffer"), std::string::npos) << null.error();
    auto wrongShape = compiled->run("ring_only", {cpu::CPUBuffer::fromTensor(kv), kv, Tensor::scalarI64(0)});
    ASSERT_FALSE(wrongShape.ok());
    EXPECT_NE(wrongShape.error().find("argument #0 has shape [3, 32], expected tensor<8x32xbf16> (dimension 0)"),
              std::string::npos)
        << wrongShape.error();
  }
  // Multi-token update at start_pos > 0 (ring_update alone defines it) and an empty step.
  expectMatchesInterpreter(text, "ring_only", {ring, randomFloats(ElementType::BF16, {11, 32}), Tensor::scalarI64(5)});
  expectMatchesInterpreter(text, "ring_only", {ring, Tensor(ElementType::BF16, {0, 32}), Tensor::scalarI64(5)});
}

TEST_F(CPUBackendTest, SparseAttnAndGroupedOutputMatchInterpreter) {
  const char *text = R"mlir(
func.func @attn(%q: tensor<?x4x32xbf16>, %kv: tensor<?x32xbf16>, %idx: tensor<?x?xi32>, %sink: tensor<4xf32>)
    -> tensor<?x4x32xbf16> {
  %o = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.176776692 : f32}
      : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
  return %o : tensor<?x4x32xbf16>
}
func.func @attn13(%q: tensor<?x2x13xbf16>, %kv: tensor<?x13xbf16>, %idx: tensor<?x?xi32>, %sink: tensor<2xf32>)
    -> tensor<?x2x13xbf16> {
  %o = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.5 : f32}
      : (tensor<?x2x13xbf16>, tensor<?x13xbf16>, tensor<?x?xi32>, tensor<2xf32>) -> tensor<?x2x13xbf16>
  return %o : tensor<?x2x13xbf16>
}
func.func @grouped(%o: tensor<?x4x32xbf16>, %w: tensor<32x64xbf16>) -> tensor<?x32xbf16> {
  %og = dsa.grouped_output %o, %w {groups = 2 : i64} : (tensor<?x4x32xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %og : tensor<?x32xbf16>
}
func.func @grouped13(%o: tensor<?x4x13xbf16>, %w: tensor<12x26xbf16>) -> tensor<?x12xbf16> {
  %og = dsa.grouped_output %o, %w {groups = 2 : i64} : (tensor<?x4x13xbf16>, tensor<12x26xbf16>) -> tensor<?x12xbf16>
  return %og : tensor<?x12xbf16>
}
)mlir";
  Tensor sink = Tensor::fromFloats(ElementType::F32, {4}, {0.5f, -1.25f, -std::numeric_limits<float>::infinity(), 3.0f});
  // Rows with -1s, duplicates, an all -1 row; q large enough that exp underflows for some z.
  Tensor idx = Tensor::fromInts(ElementType::I32, {4, 6},
                                {0, 1, 2, 3, 4, 5, -1, 3, 3, -1, 0, 9, -1, -1, -1, -1, -1, -1, 9, 8, 7, -1, 6, 5});
  expectMatchesInterpreter(text, "attn", {randomFloats(ElementType::BF16, {4, 4, 32}, 2.0f),
                                          randomFloats(ElementType::BF16, {10, 32}, 2.0f), idx, sink});
  // k == 0 and an empty kv with only -1s: zeros.
  expectMatchesInterpreter(text, "attn", {randomFloats(ElementType::BF16, {2, 4, 32}),
                                          randomFloats(ElementType::BF16, {3, 32}), Tensor(ElementType::I32, {2, 0}),
                                          sink});
  expectMatchesInterpreter(text, "attn", {randomFloats(ElementType::BF16, {1, 4, 32}), Tensor(ElementType::BF16, {0, 32}),
                                          Tensor::fromInts(ElementType::I32, {1, 2}, {-1, -1}), sink});
  expectMatchesInterpreter(text, "attn13", {randomFloats(ElementType::BF16, {3, 2, 13}),
                                            randomFloats(ElementType::BF16, {4, 13}),
                                            Tensor::fromInts(ElementType::I32, {3, 3}, {0, 1, 2, 3, -1, 0, 2, 2, 2}),
                                            Tensor::fromFloats(ElementType::F32, {2}, {0.0f, 1.0f})});
  expectMatchesInterpreter(text, "grouped", {randomFloats(ElementType::BF16, {5, 4, 32}),
                                             randomFloats(ElementType::BF16, {32, 64}, 0.1f)});
  expectMatchesInterpreter(text, "grouped13", {randomFloats(ElementType::BF16, {2, 4, 13}),
                                               randomFloats(ElementType::BF16, {12, 26})});
}

//===----------------------------------------------------------------------------------------------------------===//
// The pipeline's bf16 rounding against ::dsa::numerics::roundBf16
//===----------------------------------------------------------------------------------------------------------===//

TEST_F(CPUBackendTest, Bf16RoundingIsRoundToNearestEven) {
  OwningOpRef<ModuleOp> m = parse(R"mlir(
func.func @round(%x: tensor<?xf32>) -> tensor<?xbf16> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xbf16>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%x : tensor<?xf32>) outs(%e : tensor<?xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<?xbf16>
  return %y : tensor<?xbf16>
}
)mlir");
  ASSERT_TRUE(m);
  std::unique_ptr<cpu::CPUModule> compiled = compile(*m);
  ASSERT_TRUE(compiled);
  // Every 4099th f32 pattern, plus around every bf16 boundary of a sample of exponents: the exact ties (even and
  // odd kept bit), one below and one above; and the specials.
  std::vector<float> in;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4099)
    in.push_back(::dsa::numerics::f32FromBits(static_cast<uint32_t>(bits)));
  for (uint32_t hi = 0; hi < 0x10000u; hi += 37)
    for (uint32_t lo : {0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu, 0x0001u})
      in.push_back(::dsa::numerics::f32FromBits((hi << 16) | lo));
  for (uint32_t bits : {0x7F7F7FFFu, 0x7F7F8000u, 0x7F7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u,
                        0x00000001u, 0x80000000u, 0x00008000u, 0x00018000u})
    in.push_back(::dsa::numerics::f32FromBits(bits));
  const int64_t n = static_cast<int64_t>(in.size());
  ::dsa::Result<std::vector<Tensor>> got = compiled->call("round", {Tensor::fromFloats(ElementType::F32, {n}, in)});
  ASSERT_TRUE(got.ok()) << got.error();
  int64_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    float want = ::dsa::numerics::roundBf16(in[static_cast<size_t>(i)]);
    float g = (*got)[0].floats()[i];
    bool same = (std::isnan(want) && std::isnan(g)) || ::dsa::numerics::f32Bits(want) == ::dsa::numerics::f32Bits(g);
    if (!same && mismatches++ < 5)
      ADD_FAILURE() << "bf16(" << std::hexfloat << in[static_cast<size_t>(i)] << ") = " << g << ", want " << want;
  }
  EXPECT_EQ(mismatches, 0);
}

//===----------------------------------------------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------------------------------------------===//

const char *kWindowModule = R"mlir(
func.func @idx(%start: i64, %n: index) -> tensor<?x?xi32> {
  %i = dsa.window_indices %start, %n {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
  return %i : tensor<?x?xi32>
}
func.func @attn(%q: tensor<?x1x8xbf16>, %kv: tensor<?x8xbf16>, %idx: tensor<?x?xi32>, %sink: tensor<1xf32>)
    -> tensor<?x1x8xbf16> {
  %o = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.5 : f32}
      : (tensor<?x1x8xbf16>, tensor<?x8xbf16>, tensor<?x?xi32>, tensor<1xf32>) -> tensor<?x1x8xbf16>
  return %o : tensor<?x1x8xbf16>
}
func.func @lin(%x: tensor<?x4xbf16>, %w: tensor<2x4xbf16>) -> tensor<?x2xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
  return %y : tensor<?x2xbf16>
}
)mlir";

TEST_F(CPUBackendTest, CallRejectsBadArgumentsWithMessages) {
  OwningOpRef<ModuleOp> m = parse(kWindowModule);
  ASSERT_TRUE(m);
  std::unique_ptr<cpu::CPUModule> compiled = compile(*m);
  ASSERT_TRUE(compiled);
  auto expectError = [&](const std::string &fn, const std::vector<Tensor> &args, const std::string &needle) {
    ::dsa::Result<std::vector<Tensor>> r = compiled->call(fn, args);
    ASSERT_FALSE(r.ok()) << fn << ": expected an error containing '" << needle << "'";
    EXPECT_NE(r.error().find(needle), std::string::npos) << r.error();
  };
  expectError("nope", {}, "no function @nope in the module (it has @idx, @attn, @lin)");
  expectError("idx", {Tensor::scalarI64(0)}, "@idx: 1 arguments given, the function takes 2");
  expectError("idx", {Tensor::scalarIndex(0), Tensor::scalarIndex(1)},
              "argument #0 has element type index, expected i64 (i64)");
  expectError("lin", {Tensor(ElementType::BF16, {2, 4}), Tensor(ElementType::BF16, {2, 5})},
              "argument #1 has shape [2, 5], expected tensor<2x4xbf16> (dimension 1)");
  expectError("lin", {Tensor(ElementType::BF16, {4}), Tensor(ElementType::BF16, {2, 4})},
              "argument #0 has rank 1 (shape [4]), expected tensor<?x4xbf16>");
  expectError("lin", {Tensor(ElementType::F32, {1, 4}), Tensor(ElementType::BF16, {2, 4})},
              "argument #0 has element type f32, expected bf16");
  // Run-time checks of the compiled code.
  expectError("idx", {Tensor::scalarI64(5), Tensor::scalarIndex(2)},
              cpu::runtimeErrorMessage(static_cast<int32_t>(cpu::RuntimeError::WindowIndicesMultiTokenDecode)));
  expectError("idx", {Tensor::scalarI64(-1), Tensor::scalarIndex(1)}, "start_pos is negative");
  expectError("idx", {Tensor::scalarI64(0), Tensor::scalarIndex(0)}, "the token count is 0");
  Tensor q(ElementType::BF16, {1, 1, 8}), kv(ElementType::BF16, {2, 8});
  Tensor sink = Tensor::fromFloats(ElementType::F32, {1}, {0.0f});
  expectError("attn", {q, kv, Tensor::fromInts(ElementType::I32, {1, 2}, {0, 2}), sink},
              "dsa.sparse_attn: an index is outside [-1, n)");
  expectError("attn", {q, kv, Tensor::fromInts(ElementType::I32, {2, 1}, {0, 1}), sink},
              "indices does not have one row per token of q");
  expectError("attn", {q, kv, Tensor::fromInts(ElementType::I32, {1, 1}, {0}),
                       Tensor::fromFloats(ElementType::F32, {1}, {std::nanf("")})},
              "the sink holds a NaN");
  // A failed call leaves the module usable.
  ::dsa::Result<std::vector<Tensor>> ok = compiled->call("idx", {Tensor::scalarI64(3), Tensor::scalarIndex(1)});
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ((*ok)[0].intVector(), (std::vector<int64_t>{-1, -1, -1, -1, 0, 1, 2, 3})); // spec section 4 example
}

TEST_F(CPUBackendTest, CompileReportsUnsupportedInput) {
  auto expectCompileError = [&](const std::string &text, const std::string &needle, bool probes = false) {
    diagnostics.clear();
    OwningOpRef<ModuleOp> m = parse(text);
    ASSERT_TRUE(m);
    cpu::CPUCompileOptions options;
    options.probesAsResults = probes;
    ::dsa::Result<std::unique_ptr<cpu::CPUModule>> r = cpu::compileForCPU(*m, options);
    ASSERT_FALSE(r.ok()) << "expected an error containing '" << needle << "'";
    EXPECT_NE(r.error().find(needle), std::string::npos) << r.error();
  };
  expectCompileError(R"mlir(
func.func @f(%x: tensor<?x?xbf16>, %w: tensor<2x?xbf16>) -> tensor<?x2xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x?xbf16>, tensor<2x?xbf16>) -> tensor<?x2xbf16>
  return %y : tensor<?x2xbf16>
}
)mlir",
                     "needs dimension 1 of 'weight' to be static");
  expectCompileError(R"mlir(
func.func @f(%x: tensor<4xf16>) -> tensor<4xf16> {
  return %x : tensor<4xf16>
}
)mlir",
                     "@f argument #0 has type tensor<4xf16>, which the CPU backend cannot pass");
  expectCompileError(R"mlir(
func.func private @g(%x: i64) -> i64
)mlir",
                     "no public function with a body");
  expectCompileError(R"mlir(
func.func @f(%x: tensor<2xf32>, %c: i1) -> tensor<2xf32> {
  scf.if %c {
    dsa.probe "inner" %x : tensor<2xf32>
  }
  return %x : tensor<2xf32>
}
)mlir",
                     "a dsa.probe in a nested region", /*probes=*/true);
}

} // namespace
