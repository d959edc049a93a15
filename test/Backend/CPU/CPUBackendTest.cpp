//===- CPUBackendTest.cpp - the JIT CPU backend against the interpreter and the golden ---===//
//
// Expected values come from outside the code under test (dsa-to-cpu + --dsa-cpu-pipeline + the JIT):
//   - the reference interpreter (compiler/lib/Interpreter + the MLIR-free kernels) on the SAME module and inputs: results
//     must be bit-identical (float bit patterns, NaN = NaN) and index tensors equal;
//   - the golden (test/Golden/ds41_tiny_golden.json) through the section 12 comparator;
//   - hand-written expectations for the error paths;
//   - torch itself for the top-k sets (test/Golden/topk_tie_cases.json).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "BitExact.h"
#include "CPUTestSupport.h"
#include "dsa/Backend/CPU/CPUModule.h"
#include "dsa/ABI/BufferCache.h"
#include "dsa/ABI/RuntimeErrors.h"
#include "dsa/ABI/RuntimeFunctions.h"
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
#include <nlohmann/json.hpp>

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
namespace runtime = ::dsa::runtime;
using ::dsa::ElementType;
using ::dsa::Tensor;

using ::dsa::test::sameBits;

namespace {

using ::dsa::test::haveOpenMP;

class CPUBackendTest : public ::dsa::test::MlirTestContext {
protected:

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
    std::unique_ptr<cpu::CPUModule> compiled = compile(*m, options);
    ASSERT_TRUE(compiled);
    expectCallMatchesInterpreter(*m, *compiled, fn, args);
  }

  /// `fn` of `m` (compiled once into `compiled`, to check it on many inputs) on the interpreter and on the CPU
  /// backend: bit-identical results expected.
  void expectCallMatchesInterpreter(ModuleOp m, cpu::CPUModule &compiled, const std::string &fn,
                                    const std::vector<Tensor> &args) {
    auto f = m.lookupSymbol<func::FuncOp>(fn);
    ASSERT_TRUE(f) << fn;
    FailureOr<std::vector<Tensor>> want = interp::interpretFunction(f, args, nullptr);
    ASSERT_TRUE(succeeded(want)) << diagnostics;
    ::dsa::Result<std::vector<Tensor>> got = compiled.call(fn, args);
    ASSERT_TRUE(got.ok()) << got.error();
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i)
      EXPECT_TRUE(sameBits((*got)[i], (*want)[i])) << fn << " result #" << i;
  }

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
  const runtime::FunctionSignature *sig = compiled->signature("attention_L0");
  ASSERT_TRUE(sig);
  ASSERT_EQ(sig->state.size(), 1u);
  EXPECT_EQ(sig->state[0].arg, 2);
  EXPECT_EQ(sig->state[0].result, 1);
  EXPECT_EQ(sig->probeNames, (std::vector<std::string>{"L0.sa_q", "L0.sa_kv", "L0.sa_topk_idxs", "L0.sa_o",
                                                       "L0.attn_out"}));

  std::vector<runtime::HostValue> preparedWeights;
  for (const Tensor &w : weights)
    preparedWeights.push_back(runtime::HostBuffer::fromTensor(w));
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
    std::vector<runtime::HostValue> cpuArgs = {x, Tensor::scalarI64(regime.startPos), ringCpu};
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
/// Sequence from the state binding), bit-identical to the interpreter.
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
  const runtime::FunctionSignature *sig = (*lib)->signature("attention_L0");
  ASSERT_TRUE(sig);
  ASSERT_EQ(sig->state.size(), 1u);
  std::vector<runtime::HostValue> initial = {Tensor(ElementType::BF16, {0, f.dim}), Tensor::scalarI64(0),
                                        Tensor(ElementType::BF16, {f.windowSize, f.headDim})};
  for (const Tensor &w : weights)
    initial.push_back(runtime::HostBuffer::fromTensor(w));
  const cpu::CPUStepLibrary *library = lib->get();
  auto seq = runtime::Sequence::create(
      *sig,
      [library](const std::vector<runtime::HostValue> &args, std::vector<runtime::NamedTensor> *probes) {
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

    std::vector<runtime::NamedTensor> gotProbes;
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
    const runtime::HostValue *state = seq->state(2);
    ASSERT_TRUE(state && state->tensor());
    EXPECT_TRUE(sameBits(*state->tensor(), ring));
  }
  // A run-time check failing inside the AOT code reaches the runtime through dsa_cpu_fail_hook.
  auto bad = seq->step({{0, Tensor(ElementType::BF16, {2, f.dim})}, {1, Tensor::scalarI64(-1)}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("start is negative"), std::string::npos) << bad.error();
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

/// The buffer cache limited to `bytes` and emptied for one test; the previous limit comes back at the end of the
/// scope, also when an ASSERT returns early (the cache is process-wide: later tests must not inherit the limit).
class ScopedBufferCacheLimit {
public:
  explicit ScopedBufferCacheLimit(size_t bytes) : previous_(::dsa::abi::bufferCacheLimit()) {
    ::dsa::abi::setBufferCacheLimit(bytes);
    ::dsa::abi::releaseCachedBuffers();
  }
  ~ScopedBufferCacheLimit() { ::dsa::abi::setBufferCacheLimit(previous_); }
  ScopedBufferCacheLimit(const ScopedBufferCacheLimit &) = delete;
  ScopedBufferCacheLimit &operator=(const ScopedBufferCacheLimit &) = delete;

private:
  size_t previous_;
};

// The compiled code's malloc / free are the buffer cache's (core's dsa/ABI/BufferCache.h): a 2 MiB f32 temporary
// (the first product's [1024, 512] result, consumed by the second) freed inside the call is kept for the next
// call, which reuses it (the bytes held do not grow), and without the cache (limit 0) nothing is kept; the results
// are the interpreter's bits every time. The JIT's transformer would have left a call of libc's free otherwise.
TEST_F(CPUBackendTest, CompiledCodeAllocatesThroughTheBufferCache) {
  const char *text = R"mlir(
func.func @two(%x: tensor<?x64xf32>, %w1: tensor<512x64xf32>, %w2: tensor<8x512xf32>) -> tensor<?x8xf32> {
  %h = dsa.linear %x, %w1 : (tensor<?x64xf32>, tensor<512x64xf32>) -> tensor<?x512xf32>
  %y = dsa.linear %h, %w2 : (tensor<?x512xf32>, tensor<8x512xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
)mlir";
  OwningOpRef<ModuleOp> m = parse(text);
  ASSERT_TRUE(m);
  std::unique_ptr<cpu::CPUModule> compiled = compile(*m, {});
  ASSERT_TRUE(compiled);
  const std::vector<Tensor> args = {randomFloats(ElementType::F32, {1024, 64}),
                                    randomFloats(ElementType::F32, {512, 64}, 0.1f),
                                    randomFloats(ElementType::F32, {8, 512}, 0.1f)};
  ScopedBufferCacheLimit cache(size_t(64) << 20);
  ASSERT_EQ(::dsa::abi::bufferCacheBytes(), 0u);
  expectCallMatchesInterpreter(*m, *compiled, "two", args);
  const size_t afterFirst = ::dsa::abi::bufferCacheBytes();
  EXPECT_GE(afterFirst, size_t(1024) * 512 * 4) << "the [1024, 512] f32 temporary was not kept";
  expectCallMatchesInterpreter(*m, *compiled, "two", args);
  EXPECT_EQ(::dsa::abi::bufferCacheBytes(), afterFirst) << "the second call did not reuse the kept blocks";
  ::dsa::abi::setBufferCacheLimit(0);
  EXPECT_EQ(::dsa::abi::bufferCacheBytes(), 0u);
  expectCallMatchesInterpreter(*m, *compiled, "two", args);
  EXPECT_EQ(::dsa::abi::bufferCacheBytes(), 0u);
}

// A result buffer the compiled code allocated goes back to the buffer cache when its last HostValue is dropped
// (CPUModule passes dsa_cpu_free to invokePackedValues / invokePacked), so the next call takes that block instead of
// mapping fresh pages (a batched step's padded index-key slot: [B, 16640, 128] bf16 every step). With libc's free
// the cache would not grow when the result is dropped, and the second call would not take it back.
TEST_F(CPUBackendTest, DroppedResultsGoBackToTheBufferCache) {
  const char *text = R"mlir(
func.func @wide(%x: tensor<?x64xf32>, %w: tensor<1024x64xf32>) -> tensor<?x1024xf32> {
  %y = dsa.linear %x, %w : (tensor<?x64xf32>, tensor<1024x64xf32>) -> tensor<?x1024xf32>
  return %y : tensor<?x1024xf32>
}
)mlir";
  OwningOpRef<ModuleOp> m = parse(text);
  ASSERT_TRUE(m);
  std::unique_ptr<cpu::CPUModule> compiled = compile(*m, {});
  ASSERT_TRUE(compiled);
  const std::vector<Tensor> args = {randomFloats(ElementType::F32, {1024, 64}),
                                    randomFloats(ElementType::F32, {1024, 64}, 0.1f)};
  const size_t resultBytes = size_t(1024) * 1024 * 4; // the 4 MiB result, above kCachedMinBytes
  ScopedBufferCacheLimit cache(size_t(64) << 20);
  const std::vector<runtime::HostValue> values(args.begin(), args.end());
  Tensor first;
  size_t held = 0;
  {
    ::dsa::Result<std::vector<runtime::HostValue>> r = compiled->runValues("wide", values);
    ASSERT_TRUE(r) << r.error();
    first = (*r)[0].toTensor();
    held = ::dsa::abi::bufferCacheBytes();
  }
  EXPECT_GE(::dsa::abi::bufferCacheBytes(), held + resultBytes) << "the dropped result was not kept";
  const size_t kept = ::dsa::abi::bufferCacheBytes();
  {
    ::dsa::Result<std::vector<runtime::HostValue>> r = compiled->runValues("wide", values);
    ASSERT_TRUE(r) << r.error();
    EXPECT_LE(::dsa::abi::bufferCacheBytes() + resultBytes, kept) << "the second call did not take the kept block";
    EXPECT_TRUE(sameBits((*r)[0].toTensor(), first));
  }
  // The Tensor route (run) converts and drops its results: the block comes back too.
  ::dsa::Result<std::vector<Tensor>> t = compiled->run("wide", values);
  ASSERT_TRUE(t) << t.error();
  EXPECT_TRUE(sameBits((*t)[0], first));
  EXPECT_EQ(::dsa::abi::bufferCacheBytes(), kept);
  expectCallMatchesInterpreter(*m, *compiled, "wide", args);
}

/// The products' tile modes: the target's vector registers and 32 (the AVX-512 tiles, whose 16-lane vectors LLVM
/// splits on a host without AVX-512), each serial and, where libomp is found, with OpenMP.
std::vector<cpu::CPUCompileOptions> tileModes() {
  std::vector<cpu::CPUCompileOptions> modes;
  for (int64_t registers : {0, 32})
    for (bool parallel : {false, true}) {
      if (parallel && !haveOpenMP())
        continue;
      modes.emplace_back();
      modes.back().vectorRegisters = registers;
      modes.back().parallel = parallel;
    }
  return modes;
}

// The blocked product's k-loop is fused multiply-adds when every product of x and w is exact in f32, and acc + a * b
// otherwise (emitGroupedDots' productsExact). Two inputs where the two differ, 4, 8 and 70 tokens (the few-rows bands,
// which are unfused; the widened panel, whose check must send these to the few-rows bands; the phase kernel, whose
// check must send them to the blocks) x 5 outputs, K = 16 (lane 0 sums k = 0 and k = 8): a product below f32's
// normal range and a product that overflows. Each must give the interpreter's (unfused) bits; the checks on the
// host first make sure the inputs do tell the two apart, so a lowering that fused them unguarded would fail here.
TEST_F(CPUBackendTest, LinearFusesMultiplyAddOnlyWhenProductsAreExact) {
  const char *text = R"mlir(
func.func @lin(%x: tensor<?x16xbf16>, %w: tensor<5x16xbf16>) -> tensor<?x5xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x16xbf16>, tensor<5x16xbf16>) -> tensor<?x5xbf16>
  return %y : tensor<?x5xbf16>
}
)mlir";
  auto bf16 = [](float v) { return ::dsa::numerics::bf16BitsToF32(::dsa::numerics::f32ToBf16Bits(v)); };
  // Output (m, 0) = bf16(lane1 + lane0): lane 0 = x0*w0 then + x8*w8, lane 1 = x1*w1; the other lanes and columns 0.
  auto unfusedFused = [&](float x0, float w0, float x8, float w8, float x1, float w1) {
    volatile float p0 = x0 * w0, p8 = x8 * w8, p1 = x1 * w1; // products rounded on their own
    float unfused = bf16((p0 + p8) + p1);
    float fused = bf16(std::fma(x8, w8, p0) + p1);
    return std::make_pair(unfused, fused);
  };
  struct Case {
    const char *name;
    float x0, w0, x8, w8, x1, w1;
  };
  const Case cases[] = {
      // Below the normal range: 2^-149 - 1.5 * 2^-149 is -2^-149 unfused (the product rounds to -2^-148 first) but
      // -0 fused; added to 3 * 2^-134 (a tie between two bf16 subnormals) it rounds down unfused, to even fused.
      {"underflow", 0x1p-75f, 0x1p-74f, -0x1.8p-75f, 0x1p-74f, 0x1.8p-66f, 0x1p-67f},
      // Overflow: -1.5 * 2^127 + 2^128 is inf unfused (the product 2^128 rounds to inf) and 2^126 fused.
      {"overflow", -0x1.8p64f, 0x1p63f, 0x1p64f, 0x1p64f, 0.0f, 0.0f},
  };
  for (const Case &c : cases) {
    auto [unfused, fused] = unfusedFused(c.x0, c.w0, c.x8, c.w8, c.x1, c.w1);
    ASSERT_NE(::dsa::numerics::f32ToBf16Bits(unfused), ::dsa::numerics::f32ToBf16Bits(fused)) << c.name;
    for (const int64_t M : {4, 8, 70}) { // few-rows bands; a block of the widened panel; the phase kernel (from 64)
    SCOPED_TRACE("rows " + std::to_string(M));
    const int64_t N = 5, K = 16;
    std::vector<float> x(M * K, 0.0f), w(N * K, 0.0f);
    for (int64_t m = 0; m < M; ++m) {
      x[m * K + 0] = c.x0, x[m * K + 8] = c.x8, x[m * K + 1] = c.x1;
      for (int64_t k = 3; k < K; k += 4) // ordinary values elsewhere (not k = 0, 1, 8): the other columns' dots
        x[m * K + k] = bf16(0.25f * static_cast<float>(m + k));
    }
    w[0] = c.w0, w[8] = c.w8, w[1] = c.w1;
    for (int64_t n = 1; n < N; ++n)
      for (int64_t k = 0; k < K; ++k)
        w[n * K + k] = bf16(0.5f - 0.125f * static_cast<float>((n * 7 + k) % 9));
    SCOPED_TRACE(c.name);
    expectMatchesInterpreter(text, "lin", {Tensor::fromFloats(ElementType::BF16, {M, K}, x),
                                           Tensor::fromFloats(ElementType::BF16, {N, K}, w)});
    if (haveOpenMP()) {
      cpu::CPUCompileOptions par;
      par.parallel = true;
      expectMatchesInterpreter(text, "lin", {Tensor::fromFloats(ElementType::BF16, {M, K}, x),
                                             Tensor::fromFloats(ElementType::BF16, {N, K}, w)},
                               par);
    }
    }
  }
}

// The phase kernel (from 64 rows of x: docs/cpu-backend.md "Phase kernel") at its tile edges: rows that are not a
// multiple of its 6 (or 12) tokens, outputs not a multiple of its 16 (or 32), K below 8, not a multiple of 8 (the
// tail), a single output, f32 operands (the unfused loop), grouped_output's groups; serial and OpenMP, with the
// host's tiles and with the 32-register (AVX-512) ones, whose 16-lane vectors LLVM splits on a host without AVX-512
// (CPUCompileOptions::vectorRegisters). 63 rows: the blocks below the phase kernel's threshold. Every result
// bit-identical to the interpreter's. One compiled module per mode, its functions called at several row counts.
TEST_F(CPUBackendTest, PhaseKernelTileEdgesMatchInterpreter) {
  const char *text = R"mlir(
func.func @n1k1(%x: tensor<?x1xbf16>, %w: tensor<1x1xbf16>) -> tensor<?x1xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x1xbf16>, tensor<1x1xbf16>) -> tensor<?x1xbf16>
  return %y : tensor<?x1xbf16>
}
func.func @n17k5(%x: tensor<?x5xbf16>, %w: tensor<17x5xbf16>) -> tensor<?x17xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x5xbf16>, tensor<17x5xbf16>) -> tensor<?x17xbf16>
  return %y : tensor<?x17xbf16>
}
func.func @n32k8(%x: tensor<?x8xbf16>, %w: tensor<32x8xbf16>) -> tensor<?x32xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x8xbf16>, tensor<32x8xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}
func.func @n33k77(%x: tensor<?x77xbf16>, %w: tensor<33x77xbf16>) -> tensor<?x33xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x77xbf16>, tensor<33x77xbf16>) -> tensor<?x33xbf16>
  return %y : tensor<?x33xbf16>
}
func.func @n301k1003(%x: tensor<?x1003xbf16>, %w: tensor<301x1003xbf16>) -> tensor<?x301xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x1003xbf16>, tensor<301x1003xbf16>) -> tensor<?x301xbf16>
  return %y : tensor<?x301xbf16>
}
func.func @f32(%x: tensor<?x21xf32>, %w: tensor<70x21xf32>) -> tensor<?x70xf32> {
  %y = dsa.linear %x, %w : (tensor<?x21xf32>, tensor<70x21xf32>) -> tensor<?x70xf32>
  return %y : tensor<?x70xf32>
}
func.func @grouped(%o: tensor<?x6x20xbf16>, %w: tensor<51x40xbf16>) -> tensor<?x51xbf16> {
  %og = dsa.grouped_output %o, %w {groups = 3 : i64} : (tensor<?x6x20xbf16>, tensor<51x40xbf16>) -> tensor<?x51xbf16>
  return %og : tensor<?x51xbf16>
}
)mlir";
  OwningOpRef<ModuleOp> m = parse(text);
  ASSERT_TRUE(m);
  struct Fn {
    const char *name;
    std::vector<int64_t> xTail; // x's shape after the row count
    std::vector<int64_t> wShape;
    ElementType type;
  };
  const Fn fns[] = {{"n1k1", {1}, {1, 1}, ElementType::BF16},          {"n17k5", {5}, {17, 5}, ElementType::BF16},
                    {"n32k8", {8}, {32, 8}, ElementType::BF16},        {"n33k77", {77}, {33, 77}, ElementType::BF16},
                    {"n301k1003", {1003}, {301, 1003}, ElementType::BF16}, {"f32", {21}, {70, 21}, ElementType::F32},
                    {"grouped", {6, 20}, {51, 40}, ElementType::BF16}};
  const std::vector<cpu::CPUCompileOptions> modes = tileModes();
  for (const cpu::CPUCompileOptions &mode : modes) {
    SCOPED_TRACE(mode.vectorRegisters ? "32 vector registers" : "the target's vector registers");
    std::unique_ptr<cpu::CPUModule> compiled = compile(*m, mode);
    ASSERT_TRUE(compiled);
    for (const Fn &fn : fns) {
      Tensor w = randomFloats(fn.type, fn.wShape, 0.1f);
      for (int64_t rows : {63, 64, 67, 72, 133}) {
        SCOPED_TRACE(std::string(fn.name) + " rows " + std::to_string(rows) + (mode.parallel ? " (OpenMP)" : ""));
        std::vector<int64_t> xShape{rows};
        xShape.insert(xShape.end(), fn.xTail.begin(), fn.xTail.end());
        std::vector<Tensor> args{randomFloats(fn.type, xShape), w};
        auto f = m->lookupSymbol<func::FuncOp>(fn.name);
        ASSERT_TRUE(f);
        FailureOr<std::vector<Tensor>> want = interp::interpretFunction(f, args, nullptr);
        ASSERT_TRUE(succeeded(want)) << diagnostics;
        ::dsa::Result<std::vector<Tensor>> got = compiled->call(fn.name, args);
        ASSERT_TRUE(got.ok()) << got.error();
        ASSERT_EQ(got->size(), 1u);
        EXPECT_TRUE(sameBits(got->front(), want->front()));
      }
    }
  }
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
    std::shared_ptr<const runtime::HostBuffer> prepared = runtime::HostBuffer::fromTensor(ring);
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
    auto null = compiled->run("ring_only", {std::shared_ptr<const runtime::HostBuffer>(), kv, Tensor::scalarI64(0)});
    ASSERT_FALSE(null.ok());
    EXPECT_NE(null.error().find("argument #0 is a null HostBuffer"), std::string::npos) << null.error();
    auto wrongShape = compiled->run("ring_only", {runtime::HostBuffer::fromTensor(kv), kv, Tensor::scalarI64(0)});
    ASSERT_FALSE(wrongShape.ok());
    EXPECT_NE(wrongShape.error().find("argument #0 has shape [3, 32], expected tensor<8x32xbf16> (dimension 0)"),
              std::string::npos)
        << wrongShape.error();
  }
  // Multi-token update at start_pos > 0 (ring_update alone defines it) and an empty step.
  expectMatchesInterpreter(text, "ring_only", {ring, randomFloats(ElementType::BF16, {11, 32}), Tensor::scalarI64(5)});
  expectMatchesInterpreter(text, "ring_only", {ring, Tensor(ElementType::BF16, {0, 32}), Tensor::scalarI64(5)});
  // start_pos near 2^63 (start_pos + i would wrap): the same slots as the reference kernel. W = 6 does not divide
  // 2^64, so arithmetic that wrapped would pick other slots; 10 tokens: lo = 4, start_pos + lo wraps.
  const char *ring6 = R"mlir(
func.func @ring_only(%ring: tensor<6x32xbf16>, %kv: tensor<?x32xbf16>, %start: i64) -> tensor<6x32xbf16> {
  %r1 = dsa.ring_update %ring, %kv, %start : (tensor<6x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<6x32xbf16>
  return %r1 : tensor<6x32xbf16>
}
)mlir";
  for (int64_t start : {std::numeric_limits<int64_t>::max() - 1, std::numeric_limits<int64_t>::max() - 10})
    expectMatchesInterpreter(ring6, "ring_only", {randomFloats(ElementType::BF16, {6, 32}),
                                                  randomFloats(ElementType::BF16, {10, 32}), Tensor::scalarI64(start)});
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

/// The blocked products of linear and grouped_output (emitGroupedDots): several panels of w rows (the last one
/// partial; a bf16 panel widened to f32 from 8 rows of x, GemmTiling::widenMinRows), blocks of tokens x outputs with
/// leftover tokens and columns (M, N and K multiples of no tile size: tokens 1 .. 9 and 11, N = 301 / 70 / 531 per
/// group, K = 1003 / 2056 / 500), the few-rows bands over the bf16 rows (2 .. 7 tokens: the last band's rows past
/// the end clamped to the last row), the strided one-token path (with a leftover column), the K % 8 tail, serial
/// and OpenMP, with the host's tiles and the 32-register ones (3 or 4 tokens per band, paired or not): every output
/// bit-identical to the interpreter's one dotF32 at a time.
TEST_F(CPUBackendTest, BlockedLinearAndGroupedOutputMatchInterpreter) {
  const char *text = R"mlir(
func.func @lin(%x: tensor<?x1003xbf16>, %w: tensor<301x1003xbf16>) -> tensor<?x301xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x1003xbf16>, tensor<301x1003xbf16>) -> tensor<?x301xbf16>
  return %y : tensor<?x301xbf16>
}
func.func @lin32(%x: tensor<?x2056xf32>, %w: tensor<70x2056xf32>) -> tensor<?x70xf32> {
  %y = dsa.linear %x, %w : (tensor<?x2056xf32>, tensor<70x2056xf32>) -> tensor<?x70xf32>
  return %y : tensor<?x70xf32>
}
func.func @grouped(%o: tensor<?x4x250xbf16>, %w: tensor<1062x500xbf16>) -> tensor<?x1062xbf16> {
  %og = dsa.grouped_output %o, %w {groups = 2 : i64} : (tensor<?x4x250xbf16>, tensor<1062x500xbf16>) -> tensor<?x1062xbf16>
  return %og : tensor<?x1062xbf16>
}
)mlir";
  const std::vector<cpu::CPUCompileOptions> modes = tileModes();
  Tensor w = randomFloats(ElementType::BF16, {301, 1003}, 0.05f);
  Tensor w32 = randomFloats(ElementType::F32, {70, 2056}, 0.05f);
  Tensor wo = randomFloats(ElementType::BF16, {1062, 500}, 0.05f);
  OwningOpRef<ModuleOp> m = parse(text);
  ASSERT_TRUE(m);
  for (const cpu::CPUCompileOptions &mode : modes) {
    std::unique_ptr<cpu::CPUModule> compiled = compile(*m, mode); // once per mode: every token count runs it
    ASSERT_TRUE(compiled);
    for (int64_t tokens : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11}) {
      SCOPED_TRACE("tokens " + std::to_string(tokens) + (mode.parallel ? " (OpenMP)" : "") +
                   (mode.vectorRegisters ? " (32 vector registers)" : ""));
      expectCallMatchesInterpreter(*m, *compiled, "lin", {randomFloats(ElementType::BF16, {tokens, 1003}), w});
      expectCallMatchesInterpreter(*m, *compiled, "lin32", {randomFloats(ElementType::F32, {tokens, 2056}), w32});
      expectCallMatchesInterpreter(*m, *compiled, "grouped",
                                   {randomFloats(ElementType::BF16, {tokens, 4, 250}), wo});
    }
  }
}

/// sparse_attn's blocked q.k scores (blocks of 4, 2 or 1 heads x 4 indices, leftover indices) and its chunked p.v
/// sums (chunks of 8 vectors, a chunk of 1 vector + the hd % 8 tail, a tail-only chunk), with -1 indices; in every
/// tile mode (the host's registers and 32, serial and OpenMP: the scf.forall loops as OpenMP loops too).
TEST_F(CPUBackendTest, BlockedSparseAttnMatchesInterpreter) {
  const char *text = R"mlir(
func.func @h3(%q: tensor<?x3x77xbf16>, %kv: tensor<?x77xbf16>, %idx: tensor<?x?xi32>, %sink: tensor<3xf32>)
    -> tensor<?x3x77xbf16> {
  %o = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.125 : f32}
      : (tensor<?x3x77xbf16>, tensor<?x77xbf16>, tensor<?x?xi32>, tensor<3xf32>) -> tensor<?x3x77xbf16>
  return %o : tensor<?x3x77xbf16>
}
func.func @h6(%q: tensor<?x6x69xbf16>, %kv: tensor<?x69xbf16>, %idx: tensor<?x?xi32>, %sink: tensor<6xf32>)
    -> tensor<?x6x69xbf16> {
  %o = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.125 : f32}
      : (tensor<?x6x69xbf16>, tensor<?x69xbf16>, tensor<?x?xi32>, tensor<6xf32>) -> tensor<?x6x69xbf16>
  return %o : tensor<?x6x69xbf16>
}
func.func @h8(%q: tensor<?x8x136xbf16>, %kv: tensor<?x136xbf16>, %idx: tensor<?x?xi32>, %sink: tensor<8xf32>)
    -> tensor<?x8x136xbf16> {
  %o = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.125 : f32}
      : (tensor<?x8x136xbf16>, tensor<?x136xbf16>, tensor<?x?xi32>, tensor<8xf32>) -> tensor<?x8x136xbf16>
  return %o : tensor<?x8x136xbf16>
}
)mlir";
  auto indices = [](int64_t s, int64_t k, int64_t n) {
    std::vector<int64_t> v;
    for (int64_t t = 0; t < s; ++t)
      for (int64_t j = 0; j < k; ++j)
        v.push_back((t * 5 + j * 3) % (n + 2) - 1); // -1 .. n: clamp below n
    for (int64_t &x : v)
      x = std::min(x, n - 1);
    return Tensor::fromInts(ElementType::I32, {s, k}, v);
  };
  const std::vector<Tensor> h3 = {randomFloats(ElementType::BF16, {3, 3, 77}), randomFloats(ElementType::BF16, {9, 77}),
                                  indices(3, 7, 9), randomFloats(ElementType::F32, {3})};
  const std::vector<Tensor> h6 = {randomFloats(ElementType::BF16, {2, 6, 69}), randomFloats(ElementType::BF16, {5, 69}),
                                  indices(2, 9, 5), randomFloats(ElementType::F32, {6})};
  const std::vector<Tensor> h8 = {randomFloats(ElementType::BF16, {4, 8, 136}),
                                  randomFloats(ElementType::BF16, {20, 136}), indices(4, 13, 20),
                                  randomFloats(ElementType::F32, {8})};
  OwningOpRef<ModuleOp> m = parse(text);
  ASSERT_TRUE(m);
  for (const cpu::CPUCompileOptions &options : tileModes()) {
    SCOPED_TRACE("vector registers " + std::to_string(options.vectorRegisters) +
                 (options.parallel ? ", OpenMP" : ", serial"));
    std::unique_ptr<cpu::CPUModule> compiled = compile(*m, options);
    ASSERT_TRUE(compiled);
    expectCallMatchesInterpreter(*m, *compiled, "h3", h3);
    expectCallMatchesInterpreter(*m, *compiled, "h6", h6);
    expectCallMatchesInterpreter(*m, *compiled, "h8", h8);
  }
}

TEST_F(CPUBackendTest, SparseAttnFusesQueryKeyDotsOnlyWhereEveryProductIsExact) {
  // The q.k dots are fused multiply-adds only where one pass over q and kv shows every product exact in f32
  // (bf16ProductsExact); here one product is 2^128, which overflows as the kernel's mulf (the dot becomes +inf,
  // the softmax NaN) but not inside an fma whose accumulator holds -1.9921875 * 2^127 (the dot 2^120): the CPU
  // matches the interpreter only if it took the unfused dots. The second call (the same data scaled down to
  // ordinary magnitudes) takes the fused ones.
  const char *text = R"mlir(
func.func @attn(%q: tensor<?x4x16xbf16>, %kv: tensor<?x16xbf16>, %idx: tensor<?x?xi32>, %sink: tensor<4xf32>)
    -> tensor<?x4x16xbf16> {
  %o = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.125 : f32}
      : (tensor<?x4x16xbf16>, tensor<?x16xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x16xbf16>
  return %o : tensor<?x4x16xbf16>
}
)mlir";
  auto inputs = [](float big) {
    std::vector<float> q(2 * 4 * 16, 0.25f), kv(3 * 16, 0.5f);
    q[0] = big;          // q[0, 0, 0]
    q[8] = big;          // q[0, 0, 8]: lane 0's second k-step
    kv[0] = -1.9921875f * big * 0.5f; // kv[0, 0]: q * kv = -1.9921875 * 2^127 at big = 2^64
    kv[8] = big;         // kv[0, 8]: q * kv = 2^128 at big = 2^64
    return std::vector<Tensor>{Tensor::fromFloats(ElementType::BF16, {2, 4, 16}, q),
                               Tensor::fromFloats(ElementType::BF16, {3, 16}, kv),
                               Tensor::fromInts(ElementType::I32, {2, 3}, {0, 1, 2, 2, -1, 0}),
                               Tensor::fromFloats(ElementType::F32, {4}, {0.5f, -1.0f, 0.0f, 2.0f})};
  };
  OwningOpRef<ModuleOp> m = parse(text);
  ASSERT_TRUE(m);
  for (const cpu::CPUCompileOptions &options : tileModes()) {
    SCOPED_TRACE("vector registers " + std::to_string(options.vectorRegisters) +
                 (options.parallel ? ", OpenMP" : ", serial"));
    std::unique_ptr<cpu::CPUModule> compiled = compile(*m, options);
    ASSERT_TRUE(compiled);
    expectCallMatchesInterpreter(*m, *compiled, "attn", inputs(std::ldexp(1.0f, 64)));
    expectCallMatchesInterpreter(*m, *compiled, "attn", inputs(4.0f));
  }
}

//===----------------------------------------------------------------------------------------------------------===//
// The compressed-attention primitives against the interpreter (its kernels: kernels/lib/{Compressor,
// Indexer}.cpp), on random data and edge cases
//===----------------------------------------------------------------------------------------------------------===//

const char *kCompressedModule = R"mlir(
func.func @pool4(%kv: tensor<?x12xf32>, %sc: tensor<?x12xf32>, %kvs: tensor<4x12xf32>, %scs: tensor<4x12xf32>,
                 %sp: i64) -> (tensor<?x12xf32>, tensor<4x12xf32>, tensor<4x12xf32>) {
  %p, %a, %b = dsa.compress_pool %kv, %sc, %kvs, %scs, %sp {ratio = 4 : i64}
      : (tensor<?x12xf32>, tensor<?x12xf32>, tensor<4x12xf32>, tensor<4x12xf32>, i64)
      -> (tensor<?x12xf32>, tensor<4x12xf32>, tensor<4x12xf32>)
  return %p, %a, %b : tensor<?x12xf32>, tensor<4x12xf32>, tensor<4x12xf32>
}
func.func @pool2(%kv: tensor<?x32xf32>, %sc: tensor<?x32xf32>, %kvs: tensor<2x32xf32>, %scs: tensor<2x32xf32>,
                 %sp: i64) -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>) {
  %p, %a, %b = dsa.compress_pool %kv, %sc, %kvs, %scs, %sp {ratio = 2 : i64}
      : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, i64)
      -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>)
  return %p, %a, %b : tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>
}
func.func @e8m0(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %y = dsa.fp4_quant_e8m0 %x {block_size = 32 : i64} : (tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
func.func @e4m3(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %y = dsa.fp4_quant_e4m3 %x {block_size = 16 : i64} : (tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
func.func @e8m0_f32_rank3(%x: tensor<?x2x32xf32>) -> tensor<?x2x32xbf16> {
  %y = dsa.fp4_quant_e8m0 %x {block_size = 32 : i64} : (tensor<?x2x32xf32>) -> tensor<?x2x32xbf16>
  return %y : tensor<?x2x32xbf16>
}
func.func @e4m3_f32_b8(%x: tensor<?x24xf32>) -> tensor<?x24xbf16> {
  %y = dsa.fp4_quant_e4m3 %x {block_size = 8 : i64} : (tensor<?x24xf32>) -> tensor<?x24xbf16>
  return %y : tensor<?x24xbf16>
}
func.func @cache(%c: tensor<16x8xbf16>, %r: tensor<?x8xbf16>, %sp: i64) -> tensor<16x8xbf16> {
  %y = dsa.cache_write %c, %r, %sp {ratio = 2 : i64} : (tensor<16x8xbf16>, tensor<?x8xbf16>, i64) -> tensor<16x8xbf16>
  return %y : tensor<16x8xbf16>
}
func.func @cache1(%c: tensor<16x8xbf16>, %r: tensor<?x8xbf16>, %sp: i64) -> tensor<16x8xbf16> {
  %y = dsa.cache_write %c, %r, %sp {ratio = 1 : i64} : (tensor<16x8xbf16>, tensor<?x8xbf16>, i64) -> tensor<16x8xbf16>
  return %y : tensor<16x8xbf16>
}
func.func @pos3(%start: i64, %n: index) -> tensor<?xi64> {
  %pos = dsa.positions %start, %n {stride = 3 : i64} : (i64, index) -> tensor<?xi64>
  return %pos : tensor<?xi64>
}
func.func @scores1(%iq: tensor<?x2x32xbf16>, %w: tensor<?x2xbf16>, %k: tensor<?x32xbf16>, %sp: i64)
    -> tensor<?x?xbf16> {
  %y = dsa.indexer_scores %iq, %w, %k, %sp {ratio = 1 : i64, weight_scale = 1.250000e-01 : f32}
      : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}
func.func @scores2(%iq: tensor<?x3x20xbf16>, %w: tensor<?x3xbf16>, %k: tensor<?x20xbf16>, %sp: i64)
    -> tensor<?x?xbf16> {
  %y = dsa.indexer_scores %iq, %w, %k, %sp {ratio = 2 : i64, weight_scale = 0.129099443 : f32}
      : (tensor<?x3x20xbf16>, tensor<?x3xbf16>, tensor<?x20xbf16>, i64) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}
func.func @scores4e(%iq: tensor<?x8x24xbf16>, %w: tensor<?x8xbf16>, %k: tensor<?x24xbf16>, %sp: i64,
                    %e: tensor<?x24xbf16>) -> tensor<?x?xbf16> {
  %y = dsa.indexer_scores %iq, %w, %k, %sp entry_keys %e {ratio = 4 : i64, weight_scale = 0.25 : f32}
      : (tensor<?x8x24xbf16>, tensor<?x8xbf16>, tensor<?x24xbf16>, i64, tensor<?x24xbf16>) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}
func.func @scores8(%iq: tensor<?x8x24xbf16>, %w: tensor<?x8xbf16>, %k: tensor<?x24xbf16>, %sp: i64)
    -> tensor<?x?xbf16> {
  %y = dsa.indexer_scores %iq, %w, %k, %sp {ratio = 1 : i64, weight_scale = 0.25 : f32}
      : (tensor<?x8x24xbf16>, tensor<?x8xbf16>, tensor<?x24xbf16>, i64) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}
func.func @vis(%s: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xbf16> {
  %y = dsa.compress_visibility %s, %sp {ratio = 2 : i64} : (tensor<?x?xbf16>, i64) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}
func.func @vis1(%s: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xbf16> {
  %y = dsa.compress_visibility %s, %sp {ratio = 1 : i64} : (tensor<?x?xbf16>, i64) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}
func.func @cand(%s: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xi1> {
  %m = dsa.select_candidate_blocks %s, %sp
      {ratio = 1 : i64, topk_blocks = 3 : i64, block_size = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<?x?xbf16>, i64) -> tensor<?x?xi1>
  return %m : tensor<?x?xi1>
}
func.func @cand2(%s: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xi1> {
  %m = dsa.select_candidate_blocks %s, %sp
      {ratio = 2 : i64, topk_blocks = 2 : i64, block_size = 3 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<?x?xbf16>, i64) -> tensor<?x?xi1>
  return %m : tensor<?x?xi1>
}
func.func @cand_partial(%s: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xi1> {
  %m = dsa.select_candidate_blocks %s, %sp
      {ratio = 1 : i64, topk_blocks = 1 : i64, block_size = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<?x?xbf16>, i64) -> tensor<?x?xi1>
  return %m : tensor<?x?xi1>
}
func.func @apply(%s: tensor<?x?xbf16>, %m: tensor<?x?xi1>) -> tensor<?x?xbf16> {
  %y = dsa.apply_candidates %s, %m : (tensor<?x?xbf16>, tensor<?x?xi1>) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}
func.func @topk1(%s: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xi32> {
  %i = dsa.indexer_topk %s, %sp
      {ratio = 1 : i64, index_topk = 6 : i64, window_size = 8 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
  return %i : tensor<?x?xi32>
}
func.func @topk2(%s: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xi32> {
  %i = dsa.indexer_topk %s, %sp
      {ratio = 2 : i64, index_topk = 6 : i64, window_size = 8 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
  return %i : tensor<?x?xi32>
}
func.func @topk_partial(%s: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xi32> {
  %i = dsa.indexer_topk %s, %sp
      {ratio = 1 : i64, index_topk = 2 : i64, window_size = 4 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
  return %i : tensor<?x?xi32>
}
func.func @topk_static(%s: tensor<1x10xbf16>, %sp: i64) -> tensor<1x6xi32> {
  %i = dsa.indexer_topk %s, %sp
      {ratio = 3 : i64, index_topk = 6 : i64, window_size = 8 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<1x10xbf16>, i64) -> tensor<1x6xi32>
  return %i : tensor<1x6xi32>
}
)mlir";

/// The compressed module compiled once; each check runs the interpreter on the same function and arguments.
class CPUBackendCompressedTest : public CPUBackendTest {
protected:
  void SetUp() override {
    module = parse(kCompressedModule);
    ASSERT_TRUE(module);
    compiled = compile(*module);
    ASSERT_TRUE(compiled);
  }

  /// Expects the CPU results of `fn` bit-identical to the interpreter's; returns the interpreter's.
  std::vector<Tensor> expectSame(const std::string &fn, const std::vector<Tensor> &args, const std::string &what) {
    auto f = module->lookupSymbol<func::FuncOp>(fn);
    EXPECT_TRUE(f) << fn;
    if (!f)
      return {};
    FailureOr<std::vector<Tensor>> want = interp::interpretFunction(f, args, nullptr);
    EXPECT_TRUE(succeeded(want)) << what << ": " << diagnostics;
    if (failed(want))
      return {};
    ::dsa::Result<std::vector<Tensor>> got = compiled->call(fn, args);
    EXPECT_TRUE(got.ok()) << what << ": " << got.error();
    if (!got.ok())
      return *want;
    EXPECT_EQ(got->size(), want->size()) << what;
    for (size_t i = 0; i < std::min(got->size(), want->size()); ++i)
      EXPECT_TRUE(sameBits((*got)[i], (*want)[i])) << what << " result #" << i;
    return *want;
  }

  /// Expects both the interpreter and the CPU backend to reject the call; the CPU with `code`'s message.
  void expectBothReject(const std::string &fn, const std::vector<Tensor> &args, ::dsa::abi::RuntimeError code) {
    auto f = module->lookupSymbol<func::FuncOp>(fn);
    ASSERT_TRUE(f) << fn;
    diagnostics.clear();
    EXPECT_TRUE(failed(interp::interpretFunction(f, args, nullptr))) << fn << ": the interpreter accepted it";
    ::dsa::Result<std::vector<Tensor>> got = compiled->call(fn, args);
    ASSERT_FALSE(got.ok()) << fn << ": expected " << ::dsa::abi::runtimeErrorMessage(static_cast<int32_t>(code));
    EXPECT_NE(got.error().find(::dsa::abi::runtimeErrorMessage(static_cast<int32_t>(code))), std::string::npos)
        << got.error();
  }

  OwningOpRef<ModuleOp> module;
  std::unique_ptr<cpu::CPUModule> compiled;
};

/// Scores [s, width] of a few distinct bf16 levels, so that rows are full of ties (the top-k tie order matters),
/// with a fraction of -inf entries.
Tensor tiedScores(int64_t s, int64_t width, double negInfShare, int levels = 3) {
  std::uniform_int_distribution<int> level(0, levels - 1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<float> v;
  for (int64_t i = 0; i < s * width; ++i)
    v.push_back(u(rng()) < negInfShare ? -std::numeric_limits<float>::infinity()
                                       : static_cast<float>(level(rng())) * 0.5f);
  return Tensor::fromFloats(ElementType::BF16, {s, width}, v);
}

Tensor mostlyNegInf(int64_t s, int64_t width) {
  return Tensor::fromFloats(ElementType::BF16, {s, width},
                            std::vector<float>(static_cast<size_t>(s * width),
                                               -std::numeric_limits<float>::infinity()));
}

TEST_F(CPUBackendCompressedTest, CompressPoolPrefillDecodeChainAndEdgesMatchInterpreter) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> negInf(4 * 12, -inf);
  const Tensor zeros(ElementType::F32, {4, 12});
  const Tensor initialScore = Tensor::fromFloats(ElementType::F32, {4, 12}, negInf);
  // Prefills of every remainder (s < ratio: no group; s % 4 == 0: no remainder), from the initial state and from a
  // random one (slots past rem keep their values).
  for (int64_t s : {1, 3, 4, 5, 8, 11}) {
    expectSame("pool4", {randomFloats(ElementType::F32, {s, 12}), randomFloats(ElementType::F32, {s, 12}, 3.0f),
                         zeros, initialScore, Tensor::scalarI64(0)},
               "prefill " + std::to_string(s));
    expectSame("pool4", {randomFloats(ElementType::F32, {s, 12}), randomFloats(ElementType::F32, {s, 12}, 3.0f),
                         randomFloats(ElementType::F32, {4, 12}), randomFloats(ElementType::F32, {4, 12}),
                         Tensor::scalarI64(0)},
               "prefill from a random state " + std::to_string(s));
  }
  // Prefill 6 (slots 0, 1 hold tokens 4, 5), then decode 6 (slot 2), 7 (slot 3: completes the group of 4..7), 8
  // (slot 0), 9, 10, 11 (completes 8..11): the state threaded from the interpreter.
  std::vector<Tensor> st = expectSame(
      "pool4", {randomFloats(ElementType::F32, {6, 12}), randomFloats(ElementType::F32, {6, 12}, 2.0f), zeros,
                initialScore, Tensor::scalarI64(0)},
      "chain prefill 6");
  ASSERT_EQ(st.size(), 3u);
  EXPECT_EQ(st[0].dim(0), 1);
  for (int64_t sp = 6; sp < 12; ++sp) {
    std::vector<Tensor> next = expectSame("pool4",
                                          {randomFloats(ElementType::F32, {1, 12}),
                                           randomFloats(ElementType::F32, {1, 12}, 2.0f), st[1], st[2],
                                           Tensor::scalarI64(sp)},
                                          "chain decode " + std::to_string(sp));
    ASSERT_EQ(next.size(), 3u);
    EXPECT_EQ(next[0].dim(0), (sp + 1) % 4 == 0 ? 1 : 0) << sp;
    st = next;
  }
  // Ratio 2 decode completing from the initial state at start_pos 1 (slot 0 still -inf: its weight is 0), large
  // scores (exp underflow for all but the max), a group whose scores are all -inf (NaN on both sides) and +inf.
  expectSame("pool2", {randomFloats(ElementType::F32, {1, 32}), randomFloats(ElementType::F32, {1, 32}, 60.0f),
                       Tensor(ElementType::F32, {2, 32}),
                       Tensor::fromFloats(ElementType::F32, {2, 32}, std::vector<float>(64, -inf)),
                       Tensor::scalarI64(1)},
             "ratio 2 decode completing at 1");
  std::vector<float> sc(4 * 32);
  for (size_t i = 0; i < sc.size(); ++i)
    sc[i] = i < 64 ? -inf : (i % 5 == 0 ? inf : static_cast<float>(i % 7) * 40.0f);
  expectSame("pool2", {randomFloats(ElementType::F32, {4, 32}), Tensor::fromFloats(ElementType::F32, {4, 32}, sc),
                       Tensor(ElementType::F32, {2, 32}), randomFloats(ElementType::F32, {2, 32}),
                       Tensor::scalarI64(0)},
             "ratio 2 prefill with -inf / +inf / large scores");
  // Decode at a large position that does not complete a group.
  expectSame("pool2", {randomFloats(ElementType::F32, {1, 32}), randomFloats(ElementType::F32, {1, 32}),
                       randomFloats(ElementType::F32, {2, 32}), randomFloats(ElementType::F32, {2, 32}),
                       Tensor::scalarI64(1000)},
             "ratio 2 decode at 1000");
  // Chunks (s > 1 tokens at start_pos > 0), token by token: 3 groups closed inside (positions 3, 7, 11), none
  // closed, one closed by the chunk's last token; states from a previous step.
  for (auto [s, start] : {std::pair<int64_t, int64_t>{9, 3}, {2, 4}, {4, 8}, {7, 1}})
    expectSame("pool4",
               {randomFloats(ElementType::F32, {s, 12}), randomFloats(ElementType::F32, {s, 12}),
                randomFloats(ElementType::F32, {4, 12}), randomFloats(ElementType::F32, {4, 12}),
                Tensor::scalarI64(start)},
               "ratio 4 chunk of " + std::to_string(s) + " at " + std::to_string(start));
  // Errors: negative start_pos, an empty step, score rows != kv rows.
  expectBothReject("pool4",
                   {randomFloats(ElementType::F32, {1, 12}), randomFloats(ElementType::F32, {1, 12}), zeros,
                    initialScore, Tensor::scalarI64(-3)},
                   ::dsa::abi::RuntimeError::CompressPoolNegativeStart);
  expectBothReject("pool4",
                   {Tensor(ElementType::F32, {0, 12}), Tensor(ElementType::F32, {0, 12}), zeros, initialScore,
                    Tensor::scalarI64(0)},
                   ::dsa::abi::RuntimeError::CompressPoolEmptyStep);
  expectBothReject("pool4",
                   {randomFloats(ElementType::F32, {3, 12}), randomFloats(ElementType::F32, {2, 12}), zeros,
                    initialScore, Tensor::scalarI64(0)},
                   ::dsa::abi::RuntimeError::CompressPoolScoreShape);
}

/// Every bf16 bit pattern through both fp4 round trips, 31 per block after an anchor of 6 (amax = 6: the scale is
/// exactly 1 for both scale kinds whenever the others are <= 6 in magnitude, so the e2m1 rounding itself sees every
/// bf16 value: ties to the even code, -0.25 -> -0, saturation; larger values, inf and NaN set their block's scale).
TEST_F(CPUBackendCompressedTest, Fp4QuantMatchesInterpreterOnEveryBf16Value) {
  for (const char *fn : {"e8m0", "e4m3"}) {
    const size_t block = std::string(fn) == "e8m0" ? 32 : 16;
    std::vector<float> v;
    for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
      if (v.size() % block == 0)
        v.push_back(6.0f);
      v.push_back(::dsa::numerics::bf16BitsToF32(static_cast<uint16_t>(bits)));
    }
    while (v.size() % 64 != 0)
      v.push_back(0.0f);
    const int64_t rows = static_cast<int64_t>(v.size()) / 64;
    expectSame(fn, {Tensor::fromFloats(ElementType::BF16, {rows, 64}, v)}, std::string(fn) + " every bf16");
    // Random blocks over a wide range of magnitudes (scales from e4m3 subnormals / the 6*2^-126 floor up), an
    // all-zero block, and blocks whose amax / 6 is an exact power of two (or an e4m3 value).
    std::vector<float> r;
    std::uniform_real_distribution<float> expo(-140.0f, 30.0f);
    std::normal_distribution<float> n01(0.0f, 1.0f);
    for (int b = 0; b < 400; ++b) {
      float mag = std::exp2(expo(rng()));
      for (size_t i = 0; i < block; ++i)
        r.push_back(b == 0 ? 0.0f : n01(rng()) * mag);
      if (b % 7 == 3)
        r.back() = 6.0f * std::exp2(static_cast<float>(b % 23 - 11)) * (b % 2 ? 1.125f : 1.0f);
    }
    expectSame(fn, {Tensor::fromFloats(ElementType::BF16, {static_cast<int64_t>(r.size() / 64), 64}, r)},
               std::string(fn) + " random magnitudes");
  }
  // f32 inputs (quantised as given, not first rounded to bf16), rank 3, and another block size.
  expectSame("e8m0_f32_rank3", {randomFloats(ElementType::F32, {5, 2, 32}, 3.0f)}, "e8m0 f32 rank 3");
  expectSame("e4m3_f32_b8", {randomFloats(ElementType::F32, {7, 24}, 0.01f)}, "e4m3 f32 block 8");
  expectSame("e4m3_f32_b8", {Tensor(ElementType::F32, {0, 24})}, "e4m3 no rows");
}

TEST_F(CPUBackendCompressedTest, CacheWriteMatchesInterpreter) {
  Tensor cache = randomFloats(ElementType::BF16, {16, 8});
  for (int64_t g : {0, 1, 3})
    for (int64_t sp : {0, 1, 5, 9, 20, 26})
      if (sp / 2 + g <= 16)
        expectSame("cache", {cache, randomFloats(ElementType::BF16, {g, 8}), Tensor::scalarI64(sp)},
                   "g " + std::to_string(g) + " at " + std::to_string(sp));
  // Exactly filling the last rows, then one row too many; a negative start_pos.
  expectSame("cache", {cache, randomFloats(ElementType::BF16, {2, 8}), Tensor::scalarI64(28)}, "last rows");
  expectBothReject("cache", {cache, randomFloats(ElementType::BF16, {3, 8}), Tensor::scalarI64(28)},
                   ::dsa::abi::RuntimeError::CacheWriteOverflow);
  expectBothReject("cache", {cache, randomFloats(ElementType::BF16, {1, 8}), Tensor::scalarI64(-2)},
                   ::dsa::abi::RuntimeError::CacheWriteNegativeStart);
}

/// start_pos near INT64_MAX through the JIT API (the runtime refuses positions beyond max_seq_len, a direct
/// CPUModule::call does not): each run-time sum start_pos + s, start + (count - 1) * stride and
/// start_pos // ratio + g is overflow-checked in the compiled code, an error as the interpreter's kernels give one
/// (a wrapped first + g once passed the capacity check and wrote at row INT64_MAX), exact where it fits.
TEST_F(CPUBackendCompressedTest, StartPosNearInt64MaxIsCheckedLikeTheInterpreter) {
  using ::dsa::abi::RuntimeError;
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  // positions: the last of 3 at stride 3 is start + 6.
  std::vector<Tensor> fit = expectSame("pos3", {Tensor::scalarI64(kMax - 6), Tensor::scalarIndex(3)}, "fits");
  if (!fit.empty()) {
    EXPECT_EQ(fit[0].intVector(), (std::vector<int64_t>{kMax - 6, kMax - 3, kMax}));
  }
  expectBothReject("pos3", {Tensor::scalarI64(kMax - 5), Tensor::scalarIndex(3)}, RuntimeError::PositionsOverflow);
  expectBothReject("pos3", {Tensor::scalarI64(kMax), Tensor::scalarIndex(2)}, RuntimeError::PositionsOverflow);
  expectSame("pos3", {Tensor::scalarI64(kMax), Tensor::scalarIndex(1)}, "one position at INT64_MAX");
  // cache_write at ratio 1: first = start_pos; first + g wrapped past the capacity check before.
  Tensor cache = randomFloats(ElementType::BF16, {16, 8});
  for (int64_t g : {1, 2})
    for (int64_t sp : {kMax, kMax - 1})
      expectBothReject("cache1", {cache, randomFloats(ElementType::BF16, {g, 8}), Tensor::scalarI64(sp)},
                       RuntimeError::CacheWriteOverflow);
  // compress_pool decode at start_pos = INT64_MAX - 1 and INT64_MAX: (start_pos + 1) % r without the add.
  for (int64_t sp : {kMax - 1, kMax})
    expectSame("pool4",
               {randomFloats(ElementType::F32, {1, 12}), randomFloats(ElementType::F32, {1, 12}),
                randomFloats(ElementType::F32, {4, 12}), randomFloats(ElementType::F32, {4, 12}),
                Tensor::scalarI64(sp)},
               "pool4 decode at " + std::to_string(sp));
  // The scores' width (start_pos + s) // ratio: s = 1 at INT64_MAX overflows.
  expectBothReject("scores1",
                   {randomFloats(ElementType::BF16, {1, 2, 32}), randomFloats(ElementType::BF16, {1, 2}),
                    randomFloats(ElementType::BF16, {4, 32}), Tensor::scalarI64(kMax)},
                   RuntimeError::IndexerScoresEndOverflow);
  Tensor scores = tiedScores(1, 4, 0.0);
  expectBothReject("vis1", {scores, Tensor::scalarI64(kMax)}, RuntimeError::CompressVisibilityEndOverflow);
  expectBothReject("cand", {scores, Tensor::scalarI64(kMax)}, RuntimeError::SelectCandidateBlocksEndOverflow);
  expectBothReject("topk1", {scores, Tensor::scalarI64(kMax)}, RuntimeError::IndexerTopkEndOverflow);
  // The module stays usable: a normal decode after the errors.
  expectSame("vis1", {tiedScores(1, 6, 0.0), Tensor::scalarI64(5)}, "decode after the errors");
}

TEST_F(CPUBackendCompressedTest, IndexerScoresMatchInterpreter) {
  // Prefill (width = s // ratio), decode (width = (start_pos + 1) // ratio), keys with more rows than width,
  // head dims with and without a multiple of 8, a width-0 step.
  for (int64_t s : {1, 5, 12})
    expectSame("scores1", {randomFloats(ElementType::BF16, {s, 2, 32}), randomFloats(ElementType::BF16, {s, 2}),
                           randomFloats(ElementType::BF16, {s + 3, 32}), Tensor::scalarI64(0)},
               "ratio 1 prefill " + std::to_string(s));
  expectSame("scores1", {randomFloats(ElementType::BF16, {1, 2, 32}), randomFloats(ElementType::BF16, {1, 2}),
                         randomFloats(ElementType::BF16, {14, 32}), Tensor::scalarI64(12)},
             "ratio 1 decode 12");
  for (int64_t s : {1, 7})
    expectSame("scores2", {randomFloats(ElementType::BF16, {s, 3, 20}), randomFloats(ElementType::BF16, {s, 3}),
                           randomFloats(ElementType::BF16, {4, 20}), Tensor::scalarI64(0)},
               "ratio 2 prefill " + std::to_string(s));
  expectSame("scores2", {randomFloats(ElementType::BF16, {1, 3, 20}), randomFloats(ElementType::BF16, {1, 3}),
                         randomFloats(ElementType::BF16, {6, 20}), Tensor::scalarI64(9)},
             "ratio 2 decode 9");
  // Widths past one block of 32 positions (the lowering's vectors of 8 positions, blocks of 4 vectors, a width
  // that is not a multiple of 8), blocks of 4 heads, several tokens.
  expectSame("scores8", {randomFloats(ElementType::BF16, {1, 8, 24}), randomFloats(ElementType::BF16, {1, 8}),
                         randomFloats(ElementType::BF16, {75, 24}), Tensor::scalarI64(70)},
             "8 heads decode 70 (width 71)");
  expectSame("scores8", {randomFloats(ElementType::BF16, {40, 8, 24}), randomFloats(ElementType::BF16, {40, 8}),
                         randomFloats(ElementType::BF16, {40, 24}), Tensor::scalarI64(0)},
             "8 heads prefill 40");
  expectSame("scores2", {randomFloats(ElementType::BF16, {1, 3, 20}), randomFloats(ElementType::BF16, {1, 3}),
                         randomFloats(ElementType::BF16, {40, 20}), Tensor::scalarI64(77)},
             "ratio 2 decode 77 (width 39)");
  // relu of a NaN dot is 0 (fmax), an inf weight, large values whose products overflow bf16.
  Tensor iq = randomFloats(ElementType::BF16, {3, 2, 32}, 40.0f);
  std::vector<float> q = iq.floatVector();
  q[5] = std::nanf("");
  q[70] = std::numeric_limits<float>::infinity();
  std::vector<float> w = randomFloats(ElementType::BF16, {3, 2}, 1e30f).floatVector();
  w[1] = std::numeric_limits<float>::infinity();
  expectSame("scores1", {Tensor::fromFloats(ElementType::BF16, {3, 2, 32}, q), Tensor::fromFloats(ElementType::BF16, {3, 2}, w),
                         randomFloats(ElementType::BF16, {3, 32}, 40.0f), Tensor::scalarI64(0)},
             "NaN / inf / overflow");
  // entry_keys (ratio 4): a chunk at start_pos > 0 whose rows pick keys or entry_keys per token, over widths past
  // one block of 32 positions; a one-token step closing no group (entry) and one closing a group (keys); a prefill
  // (keys only); entry_keys shorter than width (74), checked whether or not a row reads it.
  for (auto [s, sp] : {std::pair<int64_t, int64_t>{37, 150}, {5, 6}, {4, 3}, {1, 150}, {1, 151}, {9, 0}})
    expectSame("scores4e",
               {randomFloats(ElementType::BF16, {s, 8, 24}), randomFloats(ElementType::BF16, {s, 8}),
                randomFloats(ElementType::BF16, {(sp + s) / 4 + 2, 24}), Tensor::scalarI64(sp),
                randomFloats(ElementType::BF16, {(sp + s) / 4 + 1, 24})},
               "entry_keys, " + std::to_string(s) + " tokens at start_pos " + std::to_string(sp));
  // An empty entry_keys where no row reads it: a prefill (the empty slot a prefill enters with), a one-token step
  // closing a group (151 + 1 = 152 = 4 * 38).
  for (auto [s, sp] : {std::pair<int64_t, int64_t>{9, 0}, {1, 151}})
    expectSame("scores4e",
               {randomFloats(ElementType::BF16, {s, 8, 24}), randomFloats(ElementType::BF16, {s, 8}),
                randomFloats(ElementType::BF16, {(sp + s) / 4, 24}), Tensor::scalarI64(sp),
                Tensor(ElementType::BF16, {0, 24})},
               "empty entry_keys, " + std::to_string(s) + " tokens at start_pos " + std::to_string(sp));
  expectBothReject("scores4e", {randomFloats(ElementType::BF16, {3, 8, 24}), randomFloats(ElementType::BF16, {3, 8}),
                                randomFloats(ElementType::BF16, {12, 24}), Tensor::scalarI64(40),
                                randomFloats(ElementType::BF16, {9, 24})}, // width 43 // 4 = 10
                   ::dsa::abi::RuntimeError::IndexerScoresEntryKeysRows);
  // Errors: keys shorter than width, weights rows, negative start_pos.
  expectBothReject("scores1", {randomFloats(ElementType::BF16, {5, 2, 32}), randomFloats(ElementType::BF16, {5, 2}),
                               randomFloats(ElementType::BF16, {4, 32}), Tensor::scalarI64(0)},
                   ::dsa::abi::RuntimeError::IndexerScoresKeysRows);
  expectBothReject("scores1", {randomFloats(ElementType::BF16, {5, 2, 32}), randomFloats(ElementType::BF16, {4, 2}),
                               randomFloats(ElementType::BF16, {5, 32}), Tensor::scalarI64(0)},
                   ::dsa::abi::RuntimeError::IndexerScoresWeightsRows);
  expectBothReject("scores1", {randomFloats(ElementType::BF16, {1, 2, 32}), randomFloats(ElementType::BF16, {1, 2}),
                               randomFloats(ElementType::BF16, {5, 32}), Tensor::scalarI64(-1)},
                   ::dsa::abi::RuntimeError::IndexerScoresNegativeStart);
}

TEST_F(CPUBackendCompressedTest, VisibilityAndApplyCandidatesMatchInterpreter) {
  for (int64_t s : {1, 2, 7, 12})
    expectSame("vis", {randomFloats(ElementType::BF16, {s, s / 2}), Tensor::scalarI64(0)},
               "ratio 2 prefill " + std::to_string(s));
  expectSame("vis1", {randomFloats(ElementType::BF16, {9, 9}), Tensor::scalarI64(0)}, "ratio 1 prefill");
  expectSame("vis", {randomFloats(ElementType::BF16, {1, 5}), Tensor::scalarI64(9)}, "ratio 2 decode 9");
  expectBothReject("vis", {randomFloats(ElementType::BF16, {4, 3}), Tensor::scalarI64(0)},
                   ::dsa::abi::RuntimeError::CompressVisibilityWidth);
  expectSame("vis", {randomFloats(ElementType::BF16, {2, 5}), Tensor::scalarI64(8)}, "ratio 2 chunk of 2 at 8");
  expectSame("vis", {randomFloats(ElementType::BF16, {7, 7}), Tensor::scalarI64(7)}, "ratio 2 chunk of 7 at 7");
  expectBothReject("vis", {Tensor(ElementType::BF16, {0, 0}), Tensor::scalarI64(0)},
                   ::dsa::abi::RuntimeError::CompressVisibilityEmptyStep);
  expectBothReject("vis", {randomFloats(ElementType::BF16, {1, 0}), Tensor::scalarI64(-4)},
                   ::dsa::abi::RuntimeError::CompressVisibilityNegativeStart);

  std::bernoulli_distribution coin(0.5);
  std::vector<int64_t> mask;
  for (int i = 0; i < 6 * 11; ++i)
    mask.push_back(coin(rng()) ? 1 : 0);
  expectSame("apply", {randomFloats(ElementType::BF16, {6, 11}), Tensor::fromInts(ElementType::I1, {6, 11}, mask)},
             "random mask");
  expectSame("apply", {Tensor(ElementType::BF16, {3, 0}), Tensor(ElementType::I1, {3, 0})}, "width 0");
  expectBothReject("apply", {randomFloats(ElementType::BF16, {6, 11}), Tensor(ElementType::I1, {6, 10})},
                   ::dsa::abi::RuntimeError::ApplyCandidatesMaskShape);
}

TEST_F(CPUBackendCompressedTest, SelectCandidateBlocksMatchesInterpreter) {
  // Prefill rows with ties, -inf and a width that is not a multiple of the block size; the pinned block is the one
  // of the newest visible position; rows with fewer reachable blocks than topk_blocks drop their -inf picks.
  for (int64_t s : {1, 5, 12})
    for (double share : {0.0, 0.5, 0.9})
      expectSame("cand", {tiedScores(s, s, share), Tensor::scalarI64(0)},
                 "ratio 1 prefill " + std::to_string(s) + " -inf share " + std::to_string(share));
  // Through compress_visibility first, as in the layer (the future positions are -inf).
  for (int64_t s : {4, 12}) {
    std::vector<Tensor> vis = expectSame("vis1", {tiedScores(s, s, 0.2), Tensor::scalarI64(0)}, "visibility");
    ASSERT_EQ(vis.size(), 1u);
    expectSame("cand", {vis[0], Tensor::scalarI64(0)}, "after visibility " + std::to_string(s));
  }
  // Ratio 2: compress_len 0 for query 0 (nothing pinned; an all -inf row gives an empty mask), block size 3.
  expectSame("cand2", {mostlyNegInf(7, 3), Tensor::scalarI64(0)}, "ratio 2, all -inf");
  expectSame("cand2", {tiedScores(11, 5, 0.3), Tensor::scalarI64(0)}, "ratio 2 prefill 11");
  expectSame("cand2", {tiedScores(1, 7, 0.3), Tensor::scalarI64(14)}, "ratio 2 decode 14");
  expectSame("cand", {tiedScores(1, 13, 0.1), Tensor::scalarI64(12)}, "ratio 1 decode 12");
  // NaN scores rank first in the top-k but are not > -inf, so their blocks are dropped.
  std::vector<float> nan = randomFloats(ElementType::BF16, {1, 10}).floatVector();
  nan[3] = std::nanf("");
  nan[8] = std::nanf("");
  expectSame("cand", {Tensor::fromFloats(ElementType::BF16, {1, 10}, nan), Tensor::scalarI64(9)}, "NaN blocks");
  // k * 64 <= n_blocks: the partial_sort branch, on a row of ties.
  expectSame("cand_partial", {tiedScores(1, 140, 0.0, 1), Tensor::scalarI64(139)}, "partial_sort branch");
  expectSame("cand_partial", {tiedScores(2, 2, 0.0, 1), Tensor::scalarI64(0)}, "two blocks, k = 1");
  expectBothReject("cand", {tiedScores(2, 3, 0.0), Tensor::scalarI64(0)},
                   ::dsa::abi::RuntimeError::SelectCandidateBlocksWidth);
  // Chunks: each row ranked over its own decode width (ties: the width decides torch's pick).
  expectSame("cand", {tiedScores(3, 6, 0.0), Tensor::scalarI64(3)}, "ratio 1 chunk of 3 at 3");
  expectSame("cand", {tiedScores(9, 14, 0.3), Tensor::scalarI64(5)}, "ratio 1 chunk of 9 at 5");
  expectSame("cand2", {tiedScores(6, 5, 0.3), Tensor::scalarI64(5)}, "ratio 2 chunk of 6 at 5");
}

TEST_F(CPUBackendCompressedTest, IndexerTopkMatchesInterpreter) {
  // Ties everywhere (the reference's libstdc++ order decides the set), -inf rows, k = min(index_topk, width),
  // offset s in prefill and window_size in decode, -1 for positions at or past compress_len.
  for (int64_t s : {1, 3, 6, 12})
    for (double share : {0.0, 0.5, 1.0})
      expectSame("topk1", {tiedScores(s, s, share), Tensor::scalarI64(0)},
                 "ratio 1 prefill " + std::to_string(s) + " -inf share " + std::to_string(share));
  for (int64_t s : {1, 4, 12})
    expectSame("topk2", {tiedScores(s, s / 2, 0.3), Tensor::scalarI64(0)}, "ratio 2 prefill " + std::to_string(s));
  expectSame("topk1", {tiedScores(1, 13, 0.2), Tensor::scalarI64(12)}, "ratio 1 decode 12");
  expectSame("topk2", {tiedScores(1, 7, 0.2), Tensor::scalarI64(13)}, "ratio 2 decode 13");
  expectSame("topk1", {randomFloats(ElementType::BF16, {5, 5}), Tensor::scalarI64(0)}, "distinct values");
  // The candidate-masked case of section 6 step 7: fewer than k finite scores, the -inf picks still map to rows.
  std::vector<Tensor> masked = expectSame(
      "apply", {tiedScores(1, 10, 0.0), Tensor::fromInts(ElementType::I1, {1, 10}, {0, 1, 0, 0, 1, 0, 0, 0, 0, 1})},
      "candidate mask");
  ASSERT_EQ(masked.size(), 1u);
  std::vector<Tensor> picked = expectSame("topk1", {masked[0], Tensor::scalarI64(9)}, "after the candidate mask");
  ASSERT_EQ(picked.size(), 1u);
  for (int64_t v : picked[0].intVector())
    EXPECT_GE(v, 8); // 6 picks, all < compress_len = 10, offset W = 8
  // NaN ranks first; the partial_sort branch (k * 64 <= width); width 0 (k = 0); static shapes.
  std::vector<float> nan = randomFloats(ElementType::BF16, {1, 9}).floatVector();
  nan[2] = std::nanf("");
  nan[5] = std::nanf("");
  expectSame("topk1", {Tensor::fromFloats(ElementType::BF16, {1, 9}, nan), Tensor::scalarI64(8)}, "NaN");
  expectSame("topk_partial", {tiedScores(1, 130, 0.0, 2), Tensor::scalarI64(129)}, "partial_sort branch");
  expectSame("topk_partial", {tiedScores(1, 128, 0.5, 1), Tensor::scalarI64(127)}, "partial_sort, exact 64 * k");
  expectSame("topk2", {Tensor(ElementType::BF16, {1, 0}), Tensor::scalarI64(0)}, "width 0");
  for (int64_t sp : {29, 30, 31})
    expectSame("topk_static", {tiedScores(1, 10, 0.2), Tensor::scalarI64(sp)}, "static shapes at " + std::to_string(sp));
  expectBothReject("topk1", {tiedScores(2, 3, 0.0), Tensor::scalarI64(0)}, ::dsa::abi::RuntimeError::IndexerTopkWidth);
  // Chunks: row t ranks its decode width with its decode k (-1 past it), offset W + s.
  expectSame("topk1", {tiedScores(2, 4, 0.0), Tensor::scalarI64(2)}, "ratio 1 chunk of 2 at 2");
  expectSame("topk1", {tiedScores(9, 12, 0.2), Tensor::scalarI64(3)}, "ratio 1 chunk of 9 at 3");
  expectSame("topk_partial", {tiedScores(5, 134, 0.0, 2), Tensor::scalarI64(129)}, "chunk, partial_sort branch");
  expectBothReject("topk1", {Tensor(ElementType::BF16, {0, 0}), Tensor::scalarI64(0)},
                   ::dsa::abi::RuntimeError::IndexerTopkEmptyStep);
  expectBothReject("topk1", {tiedScores(1, 0, 0.0), Tensor::scalarI64(-1)},
                   ::dsa::abi::RuntimeError::IndexerTopkNegativeStart);
}

/// The top-k against torch itself: every recorded tie case of golden/topk_tie_cases.json (index sets returned by
/// torch.topk on CPU), through the runtime's C interface (row-major and with a transposed, strided layout) and,
/// for k = 6, through the compiled dsa.indexer_topk (a decode step whose compress_len covers every position, so
/// each pick p comes back as p + window_size).
TEST_F(CPUBackendCompressedTest, TopkMatchesTorchOnRecordedTieCases) {
  std::ifstream in(std::string(DSA_TEST_DATA_DIR) + "/topk_tie_cases.json");
  ASSERT_TRUE(in);
  const nlohmann::json doc = nlohmann::json::parse(in);
  int compiledCases = 0;
  for (const auto &c : doc.at("cases")) {
    std::vector<float> values;
    for (const auto &v : c.at("values")) {
      if (v.is_string())
        values.push_back(v.get<std::string>() == "-inf" ? -std::numeric_limits<float>::infinity()
                                                         : std::numeric_limits<float>::infinity());
      else
        values.push_back(v.get<float>());
    }
    const int64_t n = static_cast<int64_t>(values.size()), k = c.at("k").get<int64_t>();
    const std::vector<int64_t> want = c.at("set").get<std::vector<int64_t>>();
    // Row-major, one row.
    std::vector<int64_t> picks(static_cast<size_t>(k), -7);
    ::dsa::abi::MemRefF32Rank2 v{values.data(), values.data(), 0, {1, n}, {n, 1}};
    ::dsa::abi::MemRefI64Rank2 o{picks.data(), picks.data(), 0, {1, k}, {k, 1}};
    ASSERT_EQ(_mlir_ciface_dsa_cpu_topk_set(&v, k, &o), 0);
    EXPECT_EQ(picks, want);
    // The same row as column 1 of a column-major [2, n] buffer with an offset; the picks as a column too.
    std::vector<float> colMajor(static_cast<size_t>(3 + 2 * n), std::nanf(""));
    for (int64_t j = 0; j < n; ++j)
      colMajor[static_cast<size_t>(3 + j * 2 + 1)] = values[static_cast<size_t>(j)];
    std::vector<int64_t> picksT(static_cast<size_t>(2 * k + 1), -7);
    ::dsa::abi::MemRefF32Rank2 vt{colMajor.data(), colMajor.data(), 4, {1, n}, {1, 2}};
    ::dsa::abi::MemRefI64Rank2 ot{picksT.data(), picksT.data(), 1, {1, k}, {1, 2}};
    ASSERT_EQ(_mlir_ciface_dsa_cpu_topk_set(&vt, k, &ot), 0);
    for (int64_t j = 0; j < k; ++j)
      EXPECT_EQ(picksT[static_cast<size_t>(1 + 2 * j)], want[static_cast<size_t>(j)]);
    if (k != 6)
      continue;
    ++compiledCases;
    std::vector<Tensor> got = expectSame("topk1", {Tensor::fromFloats(ElementType::BF16, {1, n}, values),
                                                   Tensor::scalarI64(n - 1)},
                                         "tie case");
    ASSERT_EQ(got.size(), 1u);
    std::vector<int64_t> mapped;
    for (int64_t p : want)
      mapped.push_back(p + 8);
    EXPECT_EQ(got[0].intVector(), mapped);
  }
  EXPECT_EQ(compiledCases, 9); // the recorded cases with k = 6
  // Bad arguments: k > n, picks of the wrong shape, null descriptors; the picks are left untouched.
  std::vector<float> three = {1.0f, 2.0f, 3.0f};
  std::vector<int64_t> out(4, -7);
  ::dsa::abi::MemRefF32Rank2 v{three.data(), three.data(), 0, {1, 3}, {3, 1}};
  ::dsa::abi::MemRefI64Rank2 o4{out.data(), out.data(), 0, {1, 4}, {4, 1}};
  ::dsa::abi::MemRefI64Rank2 o2{out.data(), out.data(), 0, {1, 2}, {2, 1}};
  EXPECT_EQ(_mlir_ciface_dsa_cpu_topk_set(&v, 4, &o4), 1);
  EXPECT_EQ(_mlir_ciface_dsa_cpu_topk_set(&v, 3, &o2), 1);
  EXPECT_EQ(_mlir_ciface_dsa_cpu_topk_set(nullptr, 1, &o2), 1);
  EXPECT_EQ(out, std::vector<int64_t>(4, -7));
  EXPECT_EQ(::dsa::abi::topkSetRows(three.data(), 1, 3, -1, out.data()), 1);
  EXPECT_EQ(::dsa::abi::topkSetRows(nullptr, 1, 3, 1, out.data()), 1);
  EXPECT_EQ(::dsa::abi::topkSetRows(nullptr, 0, 3, 1, nullptr), 0);
  ASSERT_EQ(::dsa::abi::topkSetRows(three.data(), 1, 3, 2, out.data()), 0);
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], 2);
}

/// The AOT path with the top-k runtime: the step library links dsa_cpu_topk_set's C interface from the runtime's
/// archive and runs under the MLIR-free loader, bit-identical to the interpreter.
TEST_F(CPUBackendCompressedTest, AotStepLibraryLinksTheTopkRuntime) {
  const std::string dir = ::testing::TempDir() + "dsa-cpu-aot-topk-" + std::to_string(::getpid());
  ::dsa::Result<std::string> json = cpu::emitCPUStepLibrary(*module, dir, "compressed", {});
  ASSERT_TRUE(json.ok()) << json.error();
  auto lib = cpu::CPUStepLibrary::open(*json);
  ASSERT_TRUE(lib.ok()) << lib.error();
  for (int64_t s : {4, 12}) {
    std::vector<Tensor> args = {tiedScores(s, s, 0.3), Tensor::scalarI64(0)};
    for (const char *fn : {"topk1", "cand"}) {
      FailureOr<std::vector<Tensor>> want =
          interp::interpretFunction(module->lookupSymbol<func::FuncOp>(fn), args, nullptr);
      ASSERT_TRUE(succeeded(want)) << diagnostics;
      std::vector<runtime::HostValue> values(args.begin(), args.end());
      auto got = (*lib)->run(fn, values, nullptr);
      ASSERT_TRUE(got.ok()) << got.error();
      ASSERT_EQ(got->size(), 1u);
      EXPECT_TRUE(sameBits((*got)[0], (*want)[0])) << fn << " s " << s;
    }
  }
  // A failed check inside the library comes back through the hook with the primitive's message.
  auto bad = (*lib)->run("topk1", {tiedScores(2, 3, 0.0), Tensor::scalarI64(0)}, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find(::dsa::abi::runtimeErrorMessage(
                static_cast<int32_t>(::dsa::abi::RuntimeError::IndexerTopkWidth))),
            std::string::npos)
      << bad.error();
}

TEST_F(CPUBackendTest, CompressedPrimitivesInParallelAreBitExact) {
  if (!haveOpenMP())
    GTEST_SKIP() << "no OpenMP runtime (libomp) for parallel=true";
  cpu::CPUCompileOptions parallel;
  parallel.parallel = true;
  expectMatchesInterpreter(kCompressedModule, "topk1", {tiedScores(12, 12, 0.3), Tensor::scalarI64(0)}, parallel);
  expectMatchesInterpreter(kCompressedModule, "cand", {tiedScores(12, 12, 0.3), Tensor::scalarI64(0)}, parallel);
  expectMatchesInterpreter(kCompressedModule, "pool4",
                           {randomFloats(ElementType::F32, {9, 12}), randomFloats(ElementType::F32, {9, 12}),
                            randomFloats(ElementType::F32, {4, 12}), randomFloats(ElementType::F32, {4, 12}),
                            Tensor::scalarI64(0)},
                           parallel);
  expectMatchesInterpreter(kCompressedModule, "scores1",
                           {randomFloats(ElementType::BF16, {5, 2, 32}), randomFloats(ElementType::BF16, {5, 2}),
                            randomFloats(ElementType::BF16, {5, 32}), Tensor::scalarI64(0)},
                           parallel);
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
  expectError("idx", {Tensor::scalarI64(std::numeric_limits<int64_t>::max() - 1), Tensor::scalarIndex(2)},
              ::dsa::abi::runtimeErrorMessage(static_cast<int32_t>(::dsa::abi::RuntimeError::WindowIndicesChunkOverflow)));
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
