//===- CPURuntimeAOTTest.cpp - the runtime's sequences on real AOT step libraries (MLIR builds) ---===//
//
// Layers built with mlir::dsa::buildAttentionFunction (random weights and inputs, fixed seeds), written as step
// libraries by emitCPUStepLibrary, then run by the MLIR-free runtime's Sequence::run. Expected values come from
// the reference interpreter on the decomposed layer, stepped one token at a time with the state threaded by this
// test (the definition of a multi-token step at start_pos > 0, attention-semantics.md section 13), and from the
// same library stepped token by token.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Backend/CPU/CPUModule.h"
#include "dsa/Dialect/DSA/IR/AttentionBuilder.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"
#include "dsa/Golden/Golden.h"
#include "dsa/Interpreter/Interpreter.h"
#include "dsa/Runtime/CPU/HostFeatures.h"
#include "dsa/Runtime/CPU/StepLibrary.h"
#include "dsa/Runtime/Host/Batch.h"
#include "dsa/Runtime/Host/StackChunk.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include <dlfcn.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <nlohmann/json.hpp>

#include <unistd.h>

namespace cpu = ::dsa::cpu;
namespace runtime = ::dsa::runtime;
namespace interp = ::dsa::interp;
using ::dsa::ElementType;
using ::dsa::Tensor;
using namespace mlir;

namespace {

bool sameBits(const Tensor &a, const Tensor &b) {
  if (a.shape() != b.shape() || a.elementType() != b.elementType())
    return false;
  if (a.isFloat())
    return a.numElements() == 0 ||
           std::memcmp(a.floats(), b.floats(), sizeof(float) * static_cast<size_t>(a.numElements())) == 0;
  return a.intVector() == b.intVector();
}

Tensor randomTensor(std::mt19937_64 &rng, ElementType type, std::vector<int64_t> shape, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = u(rng);
  return Tensor::fromFloats(type, std::move(shape), std::move(v));
}

/// A random weight of the static tensor type `t` (bf16 or f32).
Tensor randomWeight(std::mt19937_64 &rng, Type t) {
  auto rt = llvm::cast<RankedTensorType>(t);
  std::vector<int64_t> shape(rt.getShape().begin(), rt.getShape().end());
  const float scale = shape.size() == 2 ? std::sqrt(3.0f / static_cast<float>(shape[1])) : 0.5f;
  return randomTensor(rng, rt.getElementType().isBF16() ? ElementType::BF16 : ElementType::F32, shape, scale);
}

/// The tiny golden's geometry (dim 64, 4 heads of 32, window 8).
mlir::dsa::AttentionLayerConfig tinyLayer(int64_t ratio) {
  mlir::dsa::AttentionLayerConfig c;
  c.layerId = 7;
  c.dim = 64;
  c.nHeads = 4;
  c.headDim = 32;
  c.ropeHeadDim = 8;
  c.qLoraRank = 16;
  c.oGroups = 2;
  c.oLoraRank = 16;
  c.windowSize = 8;
  c.compressRatio = ratio;
  c.normEps = 1e-20;
  c.ropeTheta = ratio == 0 ? 10000.0 : 40000.0;
  if (ratio > 0) {
    c.yarn = mlir::dsa::AttentionYarn{32, 2.0, 32.0, 1.0};
    mlir::dsa::AttentionCompress cc;
    cc.isKvSource = true;
    cc.isIndexSource = true;
    cc.indexNHeads = 2;
    cc.indexHeadDim = 32;
    cc.indexTopk = 6;
    cc.candidateTopkBlocks = 3;
    cc.candidateBlockSize = 2;
    cc.maxSeqLen = 16;
    c.compress = cc;
  }
  return c;
}

/// The interpreter-side initial state of tinyLayer(2) (sections 4, 5): ring [8, 32], kv_state [2, 32] zero,
/// score_state [2, 32] -inf, the compressed-KV and index-key caches [8, 32] zero, then the four empty shared slots.
std::vector<Tensor> tinyRatio2InitialState() {
  const float inf = std::numeric_limits<float>::infinity();
  return {Tensor(ElementType::BF16, {8, 32}),        Tensor(ElementType::F32, {2, 32}),
          Tensor::fromFloats(ElementType::F32, {2, 32}, std::vector<float>(64, -inf)),
          Tensor(ElementType::BF16, {8, 32}),        Tensor(ElementType::BF16, {8, 32}),
          Tensor(ElementType::BF16, {0, 32}),        Tensor(ElementType::BF16, {0, 32}),
          Tensor(ElementType::I32, {0, 0}),          Tensor(ElementType::I1, {0, 0})};
}

class CPURuntimeAOTTest : public ::testing::Test {
protected:
  CPURuntimeAOTTest() {
    context.loadDialect<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, tensor::TensorDialect>();
    handler = std::make_unique<ScopedDiagnosticHandler>(&context, [this](Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return success();
    });
  }

  /// Builds the layer, emits its step library (probes as results; for `targetCpu`, by default the host or
  /// $DSA_CPU) and, with `load`, opens it; `weights` receives random weights (weights, compressor, index_keys,
  /// indexer groups in argument order), `decomposed` the interpreter's module and `jsonPath` the description.
  void build(const mlir::dsa::AttentionLayerConfig &config, uint64_t seed,
             const std::vector<Tensor> *given = nullptr, const std::string &targetCpu = "", bool load = true) {
    module = ModuleOp::create(UnknownLoc::get(&context));
    OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
    FailureOr<mlir::dsa::AttentionOperandTypes> types =
        batched ? mlir::dsa::batchedAttentionOperandTypes(module->getLoc(), config, ShapedType::kDynamic)
                : mlir::dsa::canonicalAttentionOperandTypes(module->getLoc(), config);
    ASSERT_TRUE(succeeded(types)) << diagnostics;
    ASSERT_TRUE(succeeded(mlir::dsa::buildAttentionFunction(builder, module->getLoc(), config, *types)))
        << diagnostics;
    std::mt19937_64 rng(seed);
    weights.clear();
    for (const auto *group : {&types->weights, &types->compressor, &types->indexKeys, &types->indexer})
      for (Type t : *group)
        weights.push_back(randomWeight(rng, t));
    if (given) {
      ASSERT_EQ(given->size(), weights.size());
      weights = *given;
    }
    cpu::CPUCompileOptions options;
    options.probesAsResults = true;
    options.targetCpu = targetCpu;
    options.parallel = parallel;
    const std::string dir = ::testing::TempDir() + "dsa-cpu-runtime-aot-" + std::to_string(::getpid());
    // One file name per layer function and target: a library still loaded is never confused with a new one of the
    // same path.
    ::dsa::Result<std::string> json = cpu::emitCPUStepLibrary(
        *module, dir,
        config.functionName() + "_r" + std::to_string(config.compressRatio) +
            (targetCpu.empty() ? "" : "_" + targetCpu) + (parallel ? "_omp" : "") + (batched ? "_batched" : ""),
        options);
    ASSERT_TRUE(json.ok()) << json.error();
    jsonPath = *json;
    name = config.functionName();
    if (load) {
      auto lib = cpu::CPUStepLibrary::open(*json);
      ASSERT_TRUE(lib.ok()) << lib.error();
      library = lib.take();
    }
    decomposed = OwningOpRef<ModuleOp>(module->clone());
    PassManager pm(&context);
    pm.addPass(mlir::dsa::createDSADecomposeAttention());
    ASSERT_TRUE(succeeded(pm.run(*decomposed))) << diagnostics;
  }

  /// A sequence over the library with the weights at arguments 3.. (after x, start_pos, ring).
  runtime::Sequence sequence() {
    std::map<size_t, runtime::HostValue> fixed;
    for (size_t i = 0; i < weights.size(); ++i)
      fixed.emplace(3 + i, runtime::HostBuffer::fromTensor(weights[i]));
    const cpu::CPUStepLibrary *lib = library.get();
    const std::string fn = name;
    auto seq = runtime::Sequence::start(
        *library->signature(name),
        [lib, fn](const std::vector<runtime::HostValue> &args, std::vector<runtime::NamedTensor> *probes) {
          return lib->run(fn, args, probes);
        },
        std::move(fixed));
    EXPECT_TRUE(seq.ok()) << seq.error();
    return seq.take();
  }

  /// The same with the state kept resident between steps (CPUStepLibrary::runValues: in-place caches written).
  runtime::Sequence residentSequence() {
    std::map<size_t, runtime::HostValue> fixed;
    for (size_t i = 0; i < weights.size(); ++i)
      fixed.emplace(3 + i, runtime::HostBuffer::fromTensor(weights[i]));
    const cpu::CPUStepLibrary *lib = library.get();
    const std::string fn = name;
    runtime::Sequence::ValueRunner runner = [lib, fn](const std::vector<runtime::HostValue> &args,
                                                     std::vector<runtime::NamedTensor> *probes) {
      return lib->runValues(fn, args, probes);
    };
    auto seq = runtime::Sequence::start(*library->signature(name), runner, std::move(fixed));
    EXPECT_TRUE(seq.ok()) << seq.error();
    return seq.take();
  }

  /// One interpreter step: args = x, start_pos, then `state` = ring, state..., slots...; returns the results and
  /// replaces `state` by the updated values (results 1..).
  std::vector<Tensor> interpret(const Tensor &x, int64_t startPos, std::vector<Tensor> &state, size_t numState) {
    std::vector<Tensor> args = {x, Tensor::scalarI64(startPos), state[0]};
    args.insert(args.end(), weights.begin(), weights.end());
    args.insert(args.end(), state.begin() + 1, state.end());
    (void)numState;
    FailureOr<std::vector<Tensor>> r =
        interp::interpretFunction(decomposed->lookupSymbol<func::FuncOp>(name), args, nullptr);
    EXPECT_TRUE(succeeded(r)) << diagnostics;
    if (failed(r))
      return {};
    for (size_t i = 0; i < state.size(); ++i)
      state[i] = (*r)[1 + i];
    return *r;
  }

  /// The body of the window-layer chunk tests (after build()).
  void chunksEqualTokenByTokenDecode();

  MLIRContext context;
  bool parallel = false; ///< build() compiles with OpenMP
  bool batched = false;  ///< build() builds the layer as a batched decode step (window-only layers)
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::string diagnostics;
  OwningOpRef<ModuleOp> module, decomposed;
  std::vector<Tensor> weights;
  std::unique_ptr<cpu::CPUStepLibrary> library;
  std::string name, jsonPath;
};

Tensor rows(const Tensor &x, int64_t begin, int64_t count) {
  std::vector<int64_t> shape = x.shape();
  const int64_t width = x.numElements() / shape[0];
  shape[0] = count;
  return Tensor::fromFloats(x.elementType(), shape,
                            std::vector<float>(x.floats() + begin * width, x.floats() + (begin + count) * width));
}

/// A window-only layer: a multi-token step at start_pos > 0 is ONE call of the library (a chunk) and ONE interpreter
/// step, and both equal, bit for bit, the interpreter stepped one token at a time (the definition, section 13) and
/// the same library stepped one token at a time: the output, the ring, and the probes of the last token. The steps
/// cover the ring still filling (chunks at 1 and 4), a chunk crossing the wrap (6 at 6), s == W, s > W, s > 2W.
void CPURuntimeAOTTest::chunksEqualTokenByTokenDecode() {
  const runtime::FunctionSignature *sig = library->signature(name);
  ASSERT_TRUE(sig && sig->step.present());
  EXPECT_EQ(sig->step.x, 0);
  EXPECT_EQ(sig->step.startPos, 1);
  EXPECT_EQ(sig->step.output, 0);
  EXPECT_EQ(sig->step.maxSeqLen, -1);
  EXPECT_TRUE(sig->step.shared.empty());
  EXPECT_TRUE(sig->step.chunked);
  int64_t calls = 0;
  const cpu::CPUStepLibrary *lib = library.get();
  const std::string fn = name;
  std::map<size_t, runtime::HostValue> fixed;
  for (size_t i = 0; i < weights.size(); ++i)
    fixed.emplace(3 + i, runtime::HostBuffer::fromTensor(weights[i]));
  auto counted = runtime::Sequence::start(
      *sig,
      [lib, fn, &calls](const std::vector<runtime::HostValue> &args, std::vector<runtime::NamedTensor> *probes) {
        ++calls;
        return lib->run(fn, args, probes);
      },
      std::move(fixed));
  ASSERT_TRUE(counted.ok()) << counted.error();
  runtime::Sequence whole = counted.take(), single = sequence();
  std::mt19937_64 rng(12);
  std::vector<Tensor> state = {Tensor(ElementType::BF16, {8, 32})}, chunkState = state;
  int64_t pos = 0;
  for (int64_t tokens : {1, 3, 2, 6, 1, 8, 11, 17}) {
    SCOPED_TRACE("step of " + std::to_string(tokens) + " at " + std::to_string(pos));
    const Tensor x = randomTensor(rng, ElementType::BF16, {tokens, 64}, 1.0f);
    calls = 0;
    auto got = whole.run(x, pos);
    ASSERT_TRUE(got.ok()) << got.error();
    EXPECT_EQ(calls, 1) << "one call of the library for the whole step";
    std::vector<Tensor> chunk = interpret(x, pos, chunkState, 1); // the interpreter, one step
    ASSERT_FALSE(chunk.empty());
    std::vector<float> want, oneByOne;
    for (int64_t t = 0; t < tokens; ++t) {
      const Tensor xt = rows(x, t, 1);
      // Token by token: a prefill of one token at 0, then decode steps.
      std::vector<Tensor> r = interpret(xt, pos + t, state, 1);
      ASSERT_FALSE(r.empty());
      want.insert(want.end(), r[0].floats(), r[0].floats() + r[0].numElements());
      auto s = single.run(xt, pos + t);
      ASSERT_TRUE(s.ok()) << s.error();
      oneByOne.insert(oneByOne.end(), (*s)[0].floats(), (*s)[0].floats() + (*s)[0].numElements());
    }
    const Tensor wantOut = Tensor::fromFloats(ElementType::BF16, {tokens, 64}, want);
    EXPECT_TRUE(std::any_of(want.begin(), want.end(), [](float v) { return v != 0.0f; })) << "degenerate data";
    EXPECT_TRUE(std::all_of(want.begin(), want.end(), [](float v) { return std::isfinite(v); }));
    EXPECT_TRUE(sameBits(chunk[0], wantOut)) << "the interpreter's chunk vs token by token";
    EXPECT_TRUE(sameBits(chunkState[0], state[0])) << "the interpreter's ring after the chunk";
    EXPECT_TRUE(sameBits((*got)[0], wantOut)) << "out vs the interpreter";
    EXPECT_TRUE(sameBits((*got)[0], Tensor::fromFloats(ElementType::BF16, {tokens, 64}, oneByOne)))
        << "out vs one by one";
    EXPECT_TRUE(sameBits((*got)[1], state[0])) << "new_ring";
    EXPECT_TRUE(sameBits(*whole.state(2)->tensor(), state[0])) << "the sequence's ring";
    EXPECT_TRUE(sameBits(*single.state(2)->tensor(), state[0])) << "the one-by-one sequence's ring";
    // The library's probes (results after out and new_ring) equal the interpreter's chunk step's.
    ASSERT_EQ(got->size(), chunk.size());
    for (size_t r = 2; r < chunk.size(); ++r)
      EXPECT_TRUE(sameBits((*got)[r], chunk[r])) << "probe result " << r;
    pos += tokens;
    EXPECT_EQ(whole.position(), pos);
  }
}

TEST_F(CPURuntimeAOTTest, MultiTokenStepsOfAWindowLayerAreOneChunkEqualToTokenByTokenDecode) {
  build(tinyLayer(0), 11);
  chunksEqualTokenByTokenDecode();
}

TEST_F(CPURuntimeAOTTest, MultiTokenStepsOfAWindowLayerAreOneChunkEqualToTokenByTokenDecodeOpenMP) {
  parallel = true;
  build(tinyLayer(0), 11);
  chunksEqualTokenByTokenDecode();
}

/// A batched decode step library (issue 13 scope 1): its description says start_pos is a tensor<B x i64> and the
/// step is not chunked; runtime::Batch over CPUStepLibrary::runValues decodes sequences at different positions
/// (the ring still filling, wrapped) together, one joining later and one leaving, every row and ring bit-exact with
/// that sequence's own batch-1 step on the interpreter (the batch-1 function of the same layer, built separately).
TEST_F(CPURuntimeAOTTest, BatchedDecodeLibraryRunsSequencesJoiningAndLeaving) {
  // The oracle: the batch-1 layer's decomposed module (its weights are the batched build's, passed below).
  build(tinyLayer(0), 31);
  OwningOpRef<ModuleOp> one(decomposed->clone());
  const std::vector<Tensor> oneWeights = weights;
  batched = true;
  build(tinyLayer(0), 31, &oneWeights);
  const runtime::FunctionSignature *sig = library->signature(name);
  ASSERT_TRUE(sig && sig->step.present());
  EXPECT_EQ(sig->args[1].typeString, "tensor<?xi64>");
  EXPECT_FALSE(sig->step.chunked);
  std::map<size_t, runtime::HostValue> fixed;
  for (size_t i = 0; i < weights.size(); ++i)
    fixed.emplace(3 + i, runtime::HostBuffer::fromTensor(weights[i]));
  const cpu::CPUStepLibrary *lib = library.get();
  const std::string fn = name;
  int64_t calls = 0;
  ::dsa::Result<runtime::Batch> started = runtime::Batch::start(
      *sig,
      [lib, fn, &calls](const std::vector<runtime::HostValue> &args, std::vector<runtime::NamedTensor> *probes) {
        ++calls;
        return lib->runValues(fn, args, probes);
      },
      std::move(fixed));
  ASSERT_TRUE(started.ok()) << started.error();
  runtime::Batch batch = started.take();
  std::mt19937_64 rng(32);
  struct Seq {
    runtime::Batch::SequenceId id;
    int64_t pos;
    Tensor ring;
  };
  std::vector<Seq> seqs;
  auto oracle = [&](const Tensor &x, int64_t pos, Tensor &ring) {
    std::vector<Tensor> args = {x, Tensor::scalarI64(pos), ring};
    args.insert(args.end(), weights.begin(), weights.end());
    FailureOr<std::vector<Tensor>> r =
        interp::interpretFunction(one->lookupSymbol<func::FuncOp>(name), args, nullptr);
    EXPECT_TRUE(succeeded(r)) << diagnostics;
    ring = (*r)[1];
    return (*r)[0];
  };
  auto join = [&](int64_t pos) {
    Tensor ring = randomTensor(rng, ElementType::BF16, {8, 32}, 1.0f); // as a prefill of `pos` tokens left it
    ::dsa::Result<runtime::Batch::SequenceId> id = batch.join(ring, pos);
    ASSERT_TRUE(id.ok()) << id.error();
    seqs.push_back({*id, pos, ring});
  };
  auto stepAll = [&] {
    const int64_t b = static_cast<int64_t>(seqs.size());
    const Tensor x = randomTensor(rng, ElementType::BF16, {b, 1, 64}, 1.0f);
    calls = 0;
    ::dsa::Result<runtime::HostValue> out = batch.step(x);
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_EQ(calls, 1) << "one library call for the whole batch";
    const Tensor got = out->toTensor();
    for (int64_t r = 0; r < b; ++r) {
      Seq &s = seqs[static_cast<size_t>(r)];
      SCOPED_TRACE("sequence at " + std::to_string(s.pos));
      EXPECT_TRUE(sameBits(rows(Tensor::fromFloats(ElementType::BF16, {b, 64},
                                                   std::vector<float>(got.floats(), got.floats() + b * 64)),
                                r, 1),
                           oracle(rows(Tensor::fromFloats(ElementType::BF16, {b, 64},
                                                          std::vector<float>(x.floats(), x.floats() + b * 64)),
                                       r, 1),
                                  s.pos, s.ring)));
      ++s.pos;
      EXPECT_TRUE(sameBits(batch.ring(s.id)->toTensor(), s.ring)) << "ring";
    }
  };
  join(3);
  join(13);
  join(100);
  stepAll();
  stepAll();
  join(6);
  stepAll();
  ASSERT_TRUE(batch.leave(seqs[1].id).ok());
  seqs.erase(seqs.begin() + 1);
  stepAll();
  stepAll();
}

/// A compressed layer (ratio 2, kv + index source): the sequence starts its five state tensors from their init
/// (score_state at -inf), threads them and the four shared slots like the interpreter; capacity, order and split
/// errors name the field and change nothing.
TEST_F(CPURuntimeAOTTest, CompressedLayerThreadsStateAndSlotsAndReportsErrors) {
  build(tinyLayer(2), 21);
  const runtime::FunctionSignature *sig = library->signature(name);
  ASSERT_TRUE(sig && sig->step.present());
  EXPECT_EQ(sig->step.maxSeqLen, 16);
  ASSERT_EQ(sig->step.shared.size(), 4u);
  ASSERT_EQ(sig->state.size(), 5u);
  EXPECT_EQ(sig->state[2].init, runtime::StateInit::NegInf); // ring, kv_state, score_state, caches
  for (size_t i : {0, 1, 3, 4})
    EXPECT_EQ(sig->state[i].init, runtime::StateInit::Zeros);
  runtime::Sequence seq = sequence();
  auto slots = runtime::Sequence::initialSlots(*sig);
  ASSERT_TRUE(slots.ok()) << slots.error();

  std::vector<Tensor> state = tinyRatio2InitialState();
  std::mt19937_64 rng(22);
  int64_t pos = 0;
  for (int64_t tokens : {10, 1, 1, 1}) {
    SCOPED_TRACE("step of " + std::to_string(tokens) + " at " + std::to_string(pos));
    const Tensor x = randomTensor(rng, ElementType::BF16, {tokens, 64}, 1.0f);
    auto got = seq.run(x, pos, &*slots);
    ASSERT_TRUE(got.ok()) << got.error();
    std::vector<Tensor> want = interpret(x, pos, state, 5);
    ASSERT_EQ(want.size(), 10u);
    ASSERT_EQ(got->size(), 10u);
    for (size_t r = 0; r < 10; ++r)
      EXPECT_TRUE(sameBits((*got)[r], want[r])) << "result " << r;
    for (size_t i = 0; i < 4; ++i)
      EXPECT_TRUE(sameBits(*(*slots)[i].tensor(), state[5 + i])) << "slot " << i;
    pos += tokens;
  }
  // The threaded state is not trivial: the compressed-KV cache holds 6 pooled rows (positions 0 .. 12, ratio 2),
  // the published topk_idxs slot has a row.
  const Tensor &cache = *seq.state(20)->tensor();
  EXPECT_TRUE(std::any_of(cache.floats(), cache.floats() + 6 * 32, [](float v) { return v != 0.0f; }));
  EXPECT_TRUE(std::all_of(cache.floats() + 6 * 32, cache.floats() + 8 * 32, [](float v) { return v == 0.0f; }));
  EXPECT_EQ((*slots)[2].tensor()->dim(0), 1);
  // Errors: nothing changes.
  const std::vector<Tensor> before = {*seq.state(2)->tensor(), *seq.state(18)->tensor(), *seq.state(19)->tensor(),
                                      *seq.state(20)->tensor(), *seq.state(21)->tensor()};
  const runtime::Sequence::SlotSet slotsBefore = *slots;
  auto expectError = [&](const Tensor &x, int64_t startPos, const std::string &needle) {
    auto r = seq.run(x, startPos, &*slots);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.error().find(needle), std::string::npos) << r.error();
    EXPECT_EQ(seq.position(), 13);
    size_t i = 0;
    for (size_t arg : {2, 18, 19, 20, 21})
      EXPECT_TRUE(sameBits(*seq.state(arg)->tensor(), before[i++])) << needle << ": state argument " << arg;
    for (size_t s = 0; s < 4; ++s)
      EXPECT_TRUE(sameBits(*(*slots)[s].tensor(), *slotsBefore[s].tensor())) << needle << ": slot " << s;
  };
  expectError(Tensor(ElementType::BF16, {4, 64}), 13, "max_seq_len: positions 13 .. 16 exceed the capacity of 16");
  expectError(Tensor(ElementType::BF16, {2, 64}), 13, "shared: a step of 2 tokens at start_pos 13 > 0");
  expectError(Tensor(ElementType::BF16, {1, 64}), 12, "start_pos: 12 is not the sequence's next position 13");
  expectError(Tensor(ElementType::BF16, {1, 32}), 13, "x: shape [1, 32], expected tensor<?x64xbf16>");
  // Within the capacity the sequence goes on.
  auto last = seq.run(randomTensor(rng, ElementType::BF16, {1, 64}, 1.0f), 13, &*slots);
  ASSERT_TRUE(last.ok()) << last.error();
}

/// The same compressed layer with resident state (a ValueRunner over CPUStepLibrary::runValues): the
/// compressed-KV cache is updated in place (a writable argument, its result and the published compress_kv slot not
/// returned by the library), the sequence keeps it in one buffer from step to step, which the compress_kv slot is,
/// and every result and slot equals the interpreter's, bit for bit, over prefill and decode steps with and without
/// a completed group. A failed run-time check of the compiled code (a cache write past the capacity) leaves the
/// cache's bytes as they were.
TEST_F(CPURuntimeAOTTest, CompressedLayerWithResidentStateUpdatesTheCacheInPlace) {
  build(tinyLayer(2), 21);
  const runtime::FunctionSignature *sig = library->signature(name);
  ASSERT_TRUE(sig && sig->step.present());
  EXPECT_NE(std::find(sig->writableArgs.begin(), sig->writableArgs.end(), 20), sig->writableArgs.end());
  bool cacheInPlace = false, slotInPlace = false;
  for (const runtime::StateBinding &b : sig->inPlace) {
    cacheInPlace |= b.arg == 20 && b.result == 4; // new compressed-KV cache
    slotInPlace |= b.arg == 20 && b.result == 6;  // the compress_kv slot it publishes
  }
  EXPECT_TRUE(cacheInPlace);
  EXPECT_TRUE(slotInPlace);

  runtime::Sequence seq = residentSequence();
  auto slots = runtime::Sequence::initialSlots(*sig);
  ASSERT_TRUE(slots.ok()) << slots.error();
  std::vector<Tensor> state = tinyRatio2InitialState();
  std::mt19937_64 rng(23);
  int64_t pos = 0;
  const void *cacheData = nullptr;
  for (int64_t tokens : {7, 1, 1, 1, 1, 1}) {
    SCOPED_TRACE("step of " + std::to_string(tokens) + " at " + std::to_string(pos));
    const Tensor x = randomTensor(rng, ElementType::BF16, {tokens, 64}, 1.0f);
    std::vector<runtime::NamedTensor> probes;
    auto got = seq.runValues(x, pos, &*slots, &probes);
    ASSERT_TRUE(got.ok()) << got.error();
    std::vector<Tensor> want = interpret(x, pos, state, 5);
    ASSERT_EQ(want.size(), 10u);
    ASSERT_EQ(got->size(), 10u);
    for (size_t r = 0; r < 10; ++r)
      EXPECT_TRUE(sameBits((*got)[r].toTensor(), want[r])) << "result " << r;
    for (size_t i = 0; i < 4; ++i)
      EXPECT_TRUE(sameBits((*slots)[i].toTensor(), state[5 + i])) << "slot " << i;
    EXPECT_FALSE(probes.empty());
    const runtime::HostValue *cache = seq.state(20);
    ASSERT_TRUE(cache && cache->isInPlace());
    if (!cacheData)
      cacheData = cache->buffer()->data();
    EXPECT_EQ(cache->buffer()->data(), cacheData) << "the cache moved";
    EXPECT_EQ((*slots)[0].buffer()->data(), cacheData) << "compress_kv is not the cache";
    pos += tokens;
  }
  const Tensor cache = seq.state(20)->toTensor();
  EXPECT_TRUE(std::any_of(cache.floats(), cache.floats() + 6 * 32, [](float v) { return v != 0.0f; }));

  // A call that fails in the compiled code: position 17 completes a group whose row (17 // 2 = 8) is past the 8
  // rows of the cache. The in-place cache is left as it was.
  auto copy = runtime::HostBuffer::copyOf(*seq.state(20)->buffer());
  const Tensor before = copy->toTensor();
  std::vector<runtime::HostValue> args = {randomTensor(rng, ElementType::BF16, {1, 64}, 1.0f), Tensor::scalarI64(17),
                                     state[0]};
  for (const Tensor &w : weights)
    args.push_back(w);
  args.push_back(state[1]);
  args.push_back(state[2]);
  args.push_back(runtime::HostValue::inPlace(copy));
  for (size_t i = 4; i < state.size(); ++i)
    args.push_back(state[i]);
  auto bad = library->runValues(name, args);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("run-time check failed"), std::string::npos) << bad.error();
  EXPECT_TRUE(sameBits(copy->toTensor(), before));
}

/// With index_k_source = own_cache (the named correction of the section-8 quirk: no select between the new
/// index-key cache and the incoming slot), both caches of a kv + index source are updated in place, and resident
/// state still equals the interpreter bit for bit.
TEST_F(CPURuntimeAOTTest, OwnCacheIndexSourceUpdatesBothCachesInPlace) {
  mlir::dsa::AttentionLayerConfig config = tinyLayer(2);
  config.compress->indexKSource = mlir::dsa::IndexKSource::own_cache;
  build(config, 41);
  const runtime::FunctionSignature *sig = library->signature(name);
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->writableArgs, (std::vector<int64_t>{20, 21}));
  bool kvCache = false, indexCache = false, indexSlot = false;
  for (const runtime::StateBinding &b : sig->inPlace) {
    kvCache |= b.arg == 20 && b.result == 4;
    indexCache |= b.arg == 21 && b.result == 5;
    indexSlot |= b.arg == 21 && b.result == 7;
  }
  EXPECT_TRUE(kvCache);
  EXPECT_TRUE(indexCache);
  EXPECT_TRUE(indexSlot);
  runtime::Sequence seq = residentSequence();
  auto slots = runtime::Sequence::initialSlots(*sig);
  ASSERT_TRUE(slots.ok()) << slots.error();
  std::vector<Tensor> state = tinyRatio2InitialState();
  std::mt19937_64 rng(42);
  int64_t pos = 0;
  const void *indexData = nullptr;
  for (int64_t tokens : {5, 1, 1, 1, 1}) {
    SCOPED_TRACE("step of " + std::to_string(tokens) + " at " + std::to_string(pos));
    const Tensor x = randomTensor(rng, ElementType::BF16, {tokens, 64}, 1.0f);
    auto got = seq.runValues(x, pos, &*slots);
    ASSERT_TRUE(got.ok()) << got.error();
    std::vector<Tensor> want = interpret(x, pos, state, 5);
    ASSERT_EQ(got->size(), want.size());
    for (size_t r = 0; r < want.size(); ++r)
      EXPECT_TRUE(sameBits((*got)[r].toTensor(), want[r])) << "result " << r;
    const runtime::HostValue *index = seq.state(21);
    ASSERT_TRUE(index && index->isInPlace());
    if (!indexData)
      indexData = index->buffer()->data();
    EXPECT_EQ(index->buffer()->data(), indexData) << "the index-key cache moved";
    EXPECT_EQ((*slots)[1].buffer()->data(), indexData) << "index_k is not the index-key cache";
    pos += tokens;
  }
}

/// Two compressed layers as one model, stepped with resident state (ValueRunner) and, side by side, with Tensor
/// state (Runner): A, a ratio-2 kv + index source, then B, a ratio-1 kv source that is not an index source (it
/// takes A's topk_idxs), like the golden's L2 and L4. The slots go A -> B -> A of the next step, so A reads, in a
/// step that completes no group, the index-key cache B published at the previous step (the section-8 quirk), and
/// B's in-place cache writes happen after A read that buffer. Every result of both layers is bit-identical between
/// the two ways over prefill and decode steps; on the resident side B's kv cache stays one buffer, which A's
/// incoming compress_kv slot is.
TEST_F(CPURuntimeAOTTest, TwoCompressedLayersWithResidentStateMatchTensorState) {
  struct Layer {
    std::unique_ptr<cpu::CPUStepLibrary> library;
    std::vector<Tensor> weights;
    std::string name;
  };
  auto take = [&]() {
    Layer l{std::move(library), weights, name};
    return l;
  };
  build(tinyLayer(2), 31);
  Layer a = take();
  mlir::dsa::AttentionLayerConfig bConfig = tinyLayer(1);
  bConfig.compress->isIndexSource = false;
  build(bConfig, 32);
  Layer b = take();
  auto fixedOf = [](const Layer &l) {
    std::map<size_t, runtime::HostValue> fixed;
    for (size_t i = 0; i < l.weights.size(); ++i)
      fixed.emplace(3 + i, runtime::HostBuffer::fromTensor(l.weights[i]));
    return fixed;
  };
  auto valueSequence = [&](const Layer &l) {
    const cpu::CPUStepLibrary *lib = l.library.get();
    const std::string fn = l.name;
    runtime::Sequence::ValueRunner runner = [lib, fn](const std::vector<runtime::HostValue> &args,
                                                     std::vector<runtime::NamedTensor> *probes) {
      return lib->runValues(fn, args, probes);
    };
    auto seq = runtime::Sequence::start(*lib->signature(fn), runner, fixedOf(l));
    EXPECT_TRUE(seq.ok()) << seq.error();
    return std::make_unique<runtime::Sequence>(seq.take());
  };
  auto tensorSequence = [&](const Layer &l) {
    const cpu::CPUStepLibrary *lib = l.library.get();
    const std::string fn = l.name;
    runtime::Sequence::Runner runner = [lib, fn](const std::vector<runtime::HostValue> &args,
                                                std::vector<runtime::NamedTensor> *probes) {
      return lib->run(fn, args, probes);
    };
    auto seq = runtime::Sequence::start(*lib->signature(fn), runner, fixedOf(l));
    EXPECT_TRUE(seq.ok()) << seq.error();
    return std::make_unique<runtime::Sequence>(seq.take());
  };
  const runtime::FunctionSignature *bSig = b.library->signature(b.name);
  ASSERT_TRUE(bSig);
  const int64_t bCacheArg = bSig->state[1].arg; // ring, then the kv cache (ratio 1: no compressor state)
  EXPECT_NE(std::find(bSig->writableArgs.begin(), bSig->writableArgs.end(), bCacheArg), bSig->writableArgs.end());
  auto aValues = valueSequence(a), bValues = valueSequence(b);
  auto aTensors = tensorSequence(a), bTensors = tensorSequence(b);
  auto slots = runtime::Sequence::initialSlots(*a.library->signature(a.name));
  ASSERT_TRUE(slots.ok()) << slots.error();
  runtime::Sequence::SlotSet valueSlots = *slots, tensorSlots = *slots;
  std::mt19937_64 rng(33);
  int64_t pos = 0;
  for (int64_t tokens : {5, 1, 1, 1, 1, 1, 1, 1}) {
    SCOPED_TRACE("step of " + std::to_string(tokens) + " at " + std::to_string(pos));
    Tensor x = randomTensor(rng, ElementType::BF16, {tokens, 64}, 1.0f);
    for (auto [valueSeq, tensorSeq] : {std::pair{aValues.get(), aTensors.get()}, std::pair{bValues.get(), bTensors.get()}}) {
      auto got = valueSeq->runValues(x, pos, &valueSlots);
      ASSERT_TRUE(got.ok()) << got.error();
      auto want = tensorSeq->run(x, pos, &tensorSlots);
      ASSERT_TRUE(want.ok()) << want.error();
      ASSERT_EQ(got->size(), want->size());
      for (size_t r = 0; r < want->size(); ++r)
        EXPECT_TRUE(sameBits((*got)[r].toTensor(), (*want)[r])) << "@" << valueSeq->signature().name << " result " << r;
      x = (*want)[0]; // the next layer's input: this layer's output (a model would add the residual)
    }
    for (size_t i = 0; i < 4; ++i)
      EXPECT_TRUE(sameBits(valueSlots[i].toTensor(), *tensorSlots[i].tensor())) << "slot " << i;
    EXPECT_EQ(valueSlots[0].buffer()->data(), bValues->state(static_cast<size_t>(bCacheArg))->buffer()->data())
        << "compress_kv is not B's cache";
    pos += tokens;
  }
}

/// The golden's layer 0 (window-only, its real weights) as a step library: prefill12, then decode12 and decode13
/// MERGED into one 2-token step at start_pos 12, which the library runs as one chunk; the two output rows and each
/// token's rows of the per-token probes match the golden's decode12 and decode13 captures (section 12 tolerance,
/// golden::compareCapture), and the window rows each token's chunk indices select, put in the slots the golden's
/// decode indices name, are the golden's decode sa_kv (every slot exactly once).
TEST_F(CPURuntimeAOTTest, GoldenLayer0DecodesMergedIntoOneStepMatchTheGolden) {
  auto loaded = ::dsa::golden::GoldenFile::load(std::string(DSA_TEST_DATA_DIR) + "/ds41_tiny_golden.json");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  const ::dsa::golden::GoldenFile &file = *loaded;
  const ::dsa::golden::Fixture &f = file.fixture();
  ASSERT_EQ(f.compressRatios[0], 0);
  mlir::dsa::AttentionLayerConfig c;
  c.layerId = 0;
  c.dim = f.dim;
  c.nHeads = f.nHeads;
  c.headDim = f.headDim;
  c.ropeHeadDim = f.ropeHeadDim;
  c.qLoraRank = f.qLoraRank;
  c.oGroups = f.oGroups;
  c.oLoraRank = f.oLoraRank;
  c.windowSize = f.windowSize;
  c.normEps = f.normEps;
  c.ropeTheta = f.ropeTheta;
  std::vector<Tensor> goldenWeights;
  for (const char *suffix : {"attn.attn_sink", "attn.wq_a.weight", "attn.q_norm.weight", "attn.wq_b.weight",
                             "attn.wkv.weight", "attn.kv_norm.weight", "attn.wo_a.weight", "attn.wo_b.weight"}) {
    const ::dsa::golden::WeightMeta *meta = file.weight(std::string("layers.0.") + suffix);
    ASSERT_TRUE(meta) << suffix;
    auto w = ::dsa::golden::regenerateWeight(*meta);
    ASSERT_TRUE(w.ok()) << w.error();
    goldenWeights.push_back(w.take());
  }
  build(c, 0, &goldenWeights);
  runtime::Sequence seq = sequence();

  auto rowsOf = [&](const std::string &regime, const std::string &name) {
    auto capture = file.capture(regime, name);
    EXPECT_TRUE(capture.ok()) << capture.error();
    std::vector<int64_t> shape = (*capture)->shape;
    shape.erase(shape.begin());
    EXPECT_EQ((*capture)->stride, 1);
    return Tensor::fromFloats(ElementType::BF16, shape,
                              std::vector<float>((*capture)->data.begin(), (*capture)->data.end()));
  };
  auto expectPass = [&](const std::string &regime, const std::string &name, const Tensor &got) {
    auto want = file.capture(regime, name);
    ASSERT_TRUE(want.ok()) << want.error();
    ::dsa::golden::Verdict v = ::dsa::golden::compareCapture(regime, **want, got);
    EXPECT_EQ(v.status, ::dsa::golden::Verdict::Pass) << ::dsa::golden::formatVerdict(v);
  };
  for (const ::dsa::golden::Regime &r : file.regimes()) {
    if (r.name == "decode12" || r.name == "decode13") {
      EXPECT_EQ(r.startPos, r.name == "decode12" ? 12 : 13);
    }
  }

  auto prefill = seq.run(rowsOf("prefill12", "L0.attn_in"), 0);
  ASSERT_TRUE(prefill.ok()) << prefill.error();
  expectPass("prefill12", "L0.attn_out", (*prefill)[0]);

  const Tensor d12 = rowsOf("decode12", "L0.attn_in"), d13 = rowsOf("decode13", "L0.attn_in");
  std::vector<float> both(d12.floats(), d12.floats() + 64);
  both.insert(both.end(), d13.floats(), d13.floats() + 64);
  std::vector<runtime::NamedTensor> probes;
  auto merged = seq.run(Tensor::fromFloats(ElementType::BF16, {2, 64}, both), 12, nullptr, &probes);
  ASSERT_TRUE(merged.ok()) << merged.error();
  ASSERT_EQ((*merged)[0].shape(), (std::vector<int64_t>{2, 64}));
  expectPass("decode12", "L0.attn_out", rows((*merged)[0], 0, 1));
  expectPass("decode13", "L0.attn_out", rows((*merged)[0], 1, 1));
  // Five probes of the one chunk step.
  ASSERT_EQ(probes.size(), 5u);
  std::map<std::string, Tensor> probe;
  for (const runtime::NamedTensor &p : probes)
    probe[p.name] = p.value;
  for (const char *name : {"L0.sa_q", "L0.sa_o", "L0.attn_out"}) {
    ASSERT_TRUE(probe.count(name)) << name;
    expectPass("decode12", name, rows(probe[name], 0, 1));
    expectPass("decode13", name, rows(probe[name], 1, 1));
  }
  ASSERT_TRUE(probe.count("L0.sa_kv") && probe.count("L0.sa_topk_idxs"));
  const Tensor &chunkRows = probe["L0.sa_kv"], &chunkIdx = probe["L0.sa_topk_idxs"];
  const int64_t W = f.windowSize, hd = f.headDim;
  ASSERT_EQ(chunkRows.shape(), (std::vector<int64_t>{W + 2, hd}));
  ASSERT_EQ(chunkIdx.shape(), (std::vector<int64_t>{2, W}));
  for (int64_t t = 0; t < 2; ++t) {
    const std::string regime = t == 0 ? "decode12" : "decode13";
    auto wantIdx = file.capture(regime, "L0.sa_topk_idxs");
    ASSERT_TRUE(wantIdx.ok()) << wantIdx.error();
    ASSERT_EQ((*wantIdx)->data.size(), static_cast<size_t>(W)) << "the decode's W window indices, stored whole";
    std::vector<float> gathered(static_cast<size_t>(W * hd), 0.0f);
    std::set<int64_t> filled;
    for (int64_t i = 0; i < W; ++i) {
      const int64_t slot = static_cast<int64_t>((*wantIdx)->data[static_cast<size_t>(i)]);
      const int64_t row = chunkIdx.ints()[t * W + i];
      ASSERT_EQ(slot < 0, row < 0) << regime << " entry " << i;
      if (slot < 0)
        continue;
      ASSERT_TRUE(filled.insert(slot).second) << regime << " slot " << slot << " twice";
      std::copy(chunkRows.floats() + row * hd, chunkRows.floats() + (row + 1) * hd,
                gathered.begin() + slot * hd);
    }
    EXPECT_EQ(filled.size(), static_cast<size_t>(W)) << "the ring is full at 12";
    expectPass(regime, "L0.sa_kv", Tensor::fromFloats(ElementType::BF16, {W, hd}, gathered));
  }
  EXPECT_EQ(seq.position(), 14);
}

/// A library for x86-64-v3 (AVX2 + FMA, no AVX-512) records the CPU and its features (the psABI's x86-64-v3
/// list, with LLVM's crc32), loads on any host that has them, and runs a prefill and decodes bit-identical to the
/// interpreter.
TEST_F(CPURuntimeAOTTest, ALibraryForX86_64_v3RecordsItsFeaturesAndRunsBitExactly) {
  const std::vector<std::string> v3 = {"avx",   "avx2",  "bmi",    "bmi2",   "cmov",   "crc32", "cx16",  "cx8",
                                       "f16c",  "fma",   "fxsr",   "lzcnt",  "mmx",    "movbe", "popcnt", "sahf",
                                       "sse",   "sse2",  "sse3",   "sse4.1", "sse4.2", "ssse3", "x87",   "xsave"};
  const std::vector<std::string> &host = cpu::hostCpuFeatures();
  for (const std::string &f : v3)
    if (!std::binary_search(host.begin(), host.end(), f))
      GTEST_SKIP() << "this host is not an x86-64-v3 (no " << f << ")";
  build(tinyLayer(0), 41, nullptr, "x86-64-v3");
  EXPECT_EQ(library->description().targetCpu, "x86-64-v3");
  EXPECT_EQ(library->description().targetFeatures, v3);
  runtime::Sequence seq = sequence();
  std::mt19937_64 rng(42);
  std::vector<Tensor> state = {Tensor(ElementType::BF16, {8, 32})};
  int64_t pos = 0;
  for (int64_t tokens : {5, 1, 1, 1, 1}) { // a prefill, then decodes past the window of 8
    SCOPED_TRACE("step at " + std::to_string(pos));
    const Tensor x = randomTensor(rng, ElementType::BF16, {tokens, 64}, 1.0f);
    std::vector<runtime::NamedTensor> probes;
    auto got = seq.run(x, pos, nullptr, &probes);
    ASSERT_TRUE(got.ok()) << got.error();
    std::vector<Tensor> want = interpret(x, pos, state, 1);
    ASSERT_FALSE(want.empty());
    EXPECT_TRUE(sameBits((*got)[0], want[0])) << "out";
    EXPECT_TRUE(sameBits((*got)[1], want[1])) << "new ring";
    EXPECT_TRUE(std::any_of(want[0].floats(), want[0].floats() + want[0].numElements(),
                            [](float v) { return v != 0.0f; }))
        << "degenerate data";
    pos += tokens;
  }
}

/// A library for sapphirerapids (AMX, AVX512-FP16) on a host without them is refused with the missing features
/// named, before the shared object is loaded: replaced by a file that is no shared object, the error is the same.
TEST_F(CPURuntimeAOTTest, ALibraryForACpuThisHostLacksIsRefusedBeforeItIsLoaded) {
  const std::vector<std::string> &host = cpu::hostCpuFeatures();
  auto has = [&](const char *f) { return std::binary_search(host.begin(), host.end(), std::string(f)); };
  if (has("amx-tile") && has("amx-bf16") && has("avx512fp16"))
    GTEST_SKIP() << "this host has AMX and AVX512-FP16";
  build(tinyLayer(0), 43, nullptr, "sapphirerapids", /*load=*/false);
  const std::string base = name + "_r0_sapphirerapids";
  auto expectRefused = [&](const std::string &what) {
    auto lib = cpu::CPUStepLibrary::open(jsonPath);
    ASSERT_FALSE(lib.ok()) << what;
    const std::string &e = lib.error();
    EXPECT_NE(e.find("step library " + base + ".so was built for sapphirerapids; this host lacks "),
              std::string::npos)
        << what << ": " << e;
    for (const char *f : {"amx-bf16", "amx-tile", "avx512fp16"})
      if (!has(f)) {
        EXPECT_NE(e.find(f), std::string::npos) << what << ": " << f << " not named: " << e;
      }
    EXPECT_EQ(e.find("cannot load"), std::string::npos) << what << ": " << e;
  };
  expectRefused("as written");
  const std::string so = jsonPath.substr(0, jsonPath.size() - std::string(".json").size()) + ".so";
  ASSERT_TRUE(std::ifstream(so).good()) << so;
  std::ofstream(so, std::ios::trunc) << "not a shared object";
  expectRefused("with the shared object replaced");
}

//===----------------------------------------------------------------------------------------------------------===//
// The description against the library (docs/robustness.md class 2): its compiled-in signature, its file's digest
//===----------------------------------------------------------------------------------------------------------===//

/// Whether the shared object at `path` is loaded in this process.
bool isLoaded(const std::string &path) {
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle)
    dlclose(handle);
  return handle != nullptr;
}

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Each field of a real library's description changed on its own (the description pointing at the library by its
/// absolute path), a wrong digest, a truncated, emptied or damaged copy of the .so, an unknown key and a duplicate
/// key: each open is an error naming the function, argument and field (or the file and both digests, or the key's
/// path), and the library is not left loaded. A truncated .so used to die in the dynamic loader (SIGBUS).
TEST_F(CPURuntimeAOTTest, ADescriptionThatDisagreesWithItsLibraryIsRefusedAndNothingStaysLoaded) {
  build(tinyLayer(2), 47, nullptr, "", /*load=*/false);
  const std::string dir = jsonPath.substr(0, jsonPath.find_last_of('/'));
  nlohmann::json good = nlohmann::json::parse(readBytes(jsonPath));
  const std::string so = dir + "/" + good["library"].get<std::string>();
  const std::string digest = good["library_sha256"].get<std::string>();
  good["library"] = so;
  ASSERT_FALSE(isLoaded(so));
  const std::string bad = dir + "/disagreeing.json";
  auto open = [&](const std::string &text) {
    std::ofstream(bad, std::ios::trunc) << text;
    return cpu::CPUStepLibrary::open(bad);
  };
  {
    auto lib = open(good.dump(2));
    ASSERT_TRUE(lib.ok()) << lib.error();
    EXPECT_TRUE(isLoaded(so));
    // The description records the dsa.attention configuration the code was compiled from (tinyLayer(2)).
    const runtime::FunctionSignature *sig = (*lib)->signature(name);
    ASSERT_NE(sig, nullptr);
    ASSERT_EQ(sig->attention.size(), 1u);
    const runtime::AttentionConfig &a = sig->attention[0];
    EXPECT_EQ(a.layerId, 7);
    EXPECT_EQ(a.windowSize, 8);
    EXPECT_EQ(a.compressRatio, 2);
    EXPECT_EQ(a.normEps, static_cast<double>(1e-20f));
    EXPECT_EQ(a.ropeTheta, 40000.0);
    ASSERT_TRUE(a.yarn && a.compress);
    EXPECT_EQ(a.yarn->originalSeqLen, 32);
    EXPECT_EQ(a.yarn->factor, 2.0);
    EXPECT_EQ(a.compress->indexTopk, 6);
    EXPECT_EQ(a.compress->candidateBlockSize, 2);
    EXPECT_EQ(a.compress->indexKSource, "published_slot");
    EXPECT_EQ(a.compress->tieOrder, "torch_cpu");
  }
  ASSERT_FALSE(isLoaded(so)) << "closed with its object";

  // The arguments a case changes: a read-only weight of static shape, and the first writable cache.
  const nlohmann::json &f = good["functions"][0];
  std::set<int64_t> special = {f["step"]["x"].get<int64_t>(), f["step"]["start_pos"].get<int64_t>()};
  for (const nlohmann::json &s : f["state"])
    special.insert(s["arg"].get<int64_t>());
  for (const nlohmann::json &w : f["writable"])
    special.insert(w.get<int64_t>());
  int64_t weight = -1;
  for (size_t a = 0; a < f["args"].size() && weight < 0; ++a) {
    const nlohmann::json &shape = f["args"][a]["shape"];
    if (!special.count(static_cast<int64_t>(a)) && shape.is_array() && !shape.empty() &&
        std::all_of(shape.begin(), shape.end(), [](const nlohmann::json &d) { return d.get<int64_t>() >= 0; }))
      weight = static_cast<int64_t>(a);
  }
  ASSERT_GE(weight, 0);
  ASSERT_FALSE(f["writable"].empty()) << "a compressed kv source updates its caches in place";
  ASSERT_FALSE(f["in_place"].empty());
  ASSERT_GE(good["target_features"].size(), 1u);
  const int64_t cache = f["writable"][0].get<int64_t>();
  const nlohmann::json weightKind = f["args"][weight];
  const std::string w = std::to_string(weight);
  const std::string weightType = weightKind["type"].get<std::string>();
  auto arg = [&](nlohmann::json &d) -> nlohmann::json & {
    nlohmann::json &a = d["functions"][0]["args"][weight];
    a.erase("type"); // optional; when given it must spell element and shape
    return a;
  };
  const std::string otherElement = weightKind["element"] == "bf16" ? "f32" : "bf16";
  std::vector<int64_t> grown = weightKind["shape"].get<std::vector<int64_t>>();
  grown[0] += 1;

  struct Case {
    std::string what;
    std::function<void(nlohmann::json &)> change;
    std::vector<std::string> errors;
  } cases[] = {
      {"rank", [&](nlohmann::json &d) { arg(d)["shape"].push_back(1); },
       {name + ": argument " + w + ": description says ", ", library was compiled for " + weightType + " (rank)"}},
      {"element type", [&](nlohmann::json &d) { arg(d)["element"] = otherElement; },
       {name + ": argument " + w + ": description says ", weightType + " (element type)"}},
      {"static dimension", [&](nlohmann::json &d) { arg(d)["shape"] = grown; },
       {name + ": argument " + w + ": description says ", weightType + " (dimension 0)"}},
      {"in-place set", [&](nlohmann::json &d) { d["functions"][0]["in_place"].erase(0); },
       {name + ": in-place results: description says [", "], library was compiled for [arg "}},
      {"writable set",
       [&](nlohmann::json &d) {
         nlohmann::json &wr = d["functions"][0]["writable"];
         wr.erase(0);
       },
       {name + ": writable arguments: description says [", "library was compiled for [" + std::to_string(cache)}},
      {"target features", [&](nlohmann::json &d) { d["target_features"].erase(0); },
       {"target_features: description says [", "], library was compiled for ["}},
      {"target cpu", [&](nlohmann::json &d) { d["target_cpu"] = "x86-64"; },
       {"target_cpu: description says x86-64, library was compiled for "}},
      // A compressed layer reading slots other layers publish (index_k_source published_slot) splits a multi-token
      // step at start_pos > 0 into decode calls: a description that claims the code runs it as one chunk is refused
      // at load (layer-major, the chunk would not equal token-by-token decode of the stack).
      {"chunked", [&](nlohmann::json &d) { d["functions"][0]["step"]["chunked"] = true; },
       {name + ": step.chunked: description says true, library was compiled for false"}},
      {"abi version", [&](nlohmann::json &d) { d["abi_version"] = 2; },
       {"abi_version: 2, this runtime calls step libraries of ABI version 1"}},
      {"function missing",
       [&](nlohmann::json &d) {
         d["functions"][0]["name"] = "attention_L99";
         d["functions"][0]["symbol"] = "_mlir_attention_L99";
       },
       {"attention_L99: the library has no such function (it was compiled with @" + name + ")"}},
      {"digest", [&](nlohmann::json &d) { d["library_sha256"] = std::string(64, '0'); },
       {"'" + so + "' has SHA-256 " + digest + ", the description records " + std::string(64, '0')}},
      {"unknown key", [&](nlohmann::json &d) { d["functions"][0]["args"][0]["sahpe"] = nlohmann::json::array(); },
       {"functions[0].args[0].sahpe: unknown key (expected one of: type, element, shape)"}},
      {"unknown top-level key", [&](nlohmann::json &d) { d["signature"] = "trust me"; },
       {"signature: unknown key (expected one of: format, version, "}},
      // The dsa.attention configuration the code was compiled from (tinyLayer(2)), compiled in with the rest.
      {"rope theta", [&](nlohmann::json &d) { d["functions"][0]["attention"][0]["rope"]["theta"] = 10000.0; },
       {name + ": attention[0].rope.theta: description says 10000.0, library was compiled for 40000.0"}},
      {"yarn factor", [&](nlohmann::json &d) { d["functions"][0]["attention"][0]["rope"]["yarn"]["factor"] = 4.0; },
       {name + ": attention[0].rope.yarn.factor: description says 4.0, library was compiled for 2.0"}},
      {"norm_eps", [&](nlohmann::json &d) { d["functions"][0]["attention"][0]["norm_eps"] = 1e-6; },
       {name + ": attention[0].norm_eps: description says 1e-06, library was compiled for "}},
      {"index_topk", [&](nlohmann::json &d) { d["functions"][0]["attention"][0]["compress"]["index_topk"] = 7; },
       {name + ": attention[0].compress.index_topk: description says 7, library was compiled for 6"}},
      {"candidate source",
       [&](nlohmann::json &d) { d["functions"][0]["attention"][0]["compress"]["is_candidate_source"] = true; },
       {name + ": attention[0].compress.is_candidate_source: description says true, library was compiled for false"}},
      {"o_groups", [&](nlohmann::json &d) { d["functions"][0]["attention"][0]["o_groups"] = 4; },
       {name + ": attention[0].o_groups: description says 4, library was compiled for 2"}},
      {"attention dropped", [&](nlohmann::json &d) { d["functions"][0].erase("attention"); },
       {name + ": attention: description says 0 dsa.attention configurations, library was compiled from 1"}},
      {"attention unknown key", [&](nlohmann::json &d) { d["functions"][0]["attention"][0]["rope"]["thetta"] = 1.0; },
       {"functions[0].attention[0].rope.thetta: unknown key (expected one of: rope_dim, theta, yarn)"}},
  };
  for (const Case &c : cases) {
    nlohmann::json d = good;
    c.change(d);
    auto lib = open(d.dump(2));
    ASSERT_FALSE(lib.ok()) << c.what;
    for (const std::string &e : c.errors)
      EXPECT_NE(lib.error().find(e), std::string::npos) << c.what << ": " << lib.error();
    EXPECT_FALSE(isLoaded(so)) << c.what;
  }
  // A duplicate key (the text, not the parsed object, holds it twice).
  std::string twice = good.dump(2);
  const std::string key = "\"num_results\": ";
  const size_t at = twice.find(key);
  ASSERT_NE(at, std::string::npos);
  twice.insert(at, key + "1, ");
  auto dup = open(twice);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().find("functions[0].num_results: duplicate key"), std::string::npos) << dup.error();
  EXPECT_FALSE(isLoaded(so));

  // Copies of the .so truncated to half, emptied, and with one byte flipped: the digest's check refuses each
  // before the dynamic loader sees it.
  const std::string bytes = readBytes(so);
  ASSERT_GT(bytes.size(), 4096u);
  std::string flipped = bytes;
  flipped[bytes.size() / 2] = static_cast<char>(flipped[bytes.size() / 2] ^ 0x40);
  for (const auto &[what, content] : std::vector<std::pair<std::string, std::string>>{
           {"truncated", bytes.substr(0, bytes.size() / 2)}, {"empty", ""}, {"damaged", flipped}}) {
    const std::string copy = dir + "/" + what + ".so";
    std::ofstream(copy, std::ios::binary | std::ios::trunc) << content;
    nlohmann::json d = good;
    d["library"] = copy;
    auto lib = open(d.dump(2));
    ASSERT_FALSE(lib.ok()) << what;
    EXPECT_NE(lib.error().find("step library: '" + copy + "' has SHA-256 "), std::string::npos) << lib.error();
    EXPECT_NE(lib.error().find(", the description records " + digest), std::string::npos) << lib.error();
    EXPECT_FALSE(isLoaded(copy)) << what;
  }

  // Opened as described, every buffer a call passes is checked against the verified signature: an in-place
  // buffer of the wrong shape or element type for the writable cache is an error naming the argument.
  auto lib = open(good.dump(2));
  ASSERT_TRUE(lib.ok()) << lib.error();
  const runtime::FunctionSignature &sig = *(*lib)->signature(name);
  std::vector<runtime::HostValue> args;
  for (const runtime::ValueKind &k : sig.args) {
    std::vector<int64_t> shape = k.shape;
    for (int64_t &dim : shape)
      dim = dim < 0 ? 1 : dim;
    args.push_back(k.isTensor ? Tensor(k.elem, shape) : Tensor::scalarI64(0));
  }
  const runtime::ValueKind &ck = sig.args[static_cast<size_t>(cache)];
  std::vector<int64_t> wrongShape = ck.shape;
  wrongShape[0] += 1;
  args[static_cast<size_t>(cache)] =
      runtime::HostValue::inPlace(runtime::HostBuffer::mutableFromTensor(Tensor(ck.elem, wrongShape)));
  auto shape = (*lib)->runValues(name, args);
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.error().find("argument #" + std::to_string(cache) + " has shape "), std::string::npos)
      << shape.error();
  args[static_cast<size_t>(cache)] = runtime::HostValue::inPlace(runtime::HostBuffer::mutableFromTensor(
      Tensor(ck.elem == ElementType::BF16 ? ElementType::F32 : ElementType::BF16, ck.shape)));
  auto type = (*lib)->runValues(name, args);
  ASSERT_FALSE(type.ok());
  EXPECT_NE(type.error().find("argument #" + std::to_string(cache) + " has element type "), std::string::npos)
      << type.error();
}

//===----------------------------------------------------------------------------------------------------------===//
// Soak (docs/robustness.md): many decode steps of a layer, or of a stack of layers sharing the slots, through the
// runtime with resident state, each step bit-exact against the interpreter, resident memory flat, then a clean
// capacity error with the state intact.
//===----------------------------------------------------------------------------------------------------------===//

/// Resident set size of this process in bytes (/proc/self/statm), after the allocator has returned the free memory
/// it keeps (glibc's malloc_trim): the memory in use, not the peak of the steps' temporaries, which grows with the
/// caches' visible rows and which malloc may keep (10 MB from step 1,000 to 10,000 of a stack, all of it free).
int64_t residentBytes() {
#ifdef __GLIBC__
  ::malloc_trim(0);
#endif
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

/// sameBits(got.toTensor(), want) without the copy: the runtime's value compared in its own memory format (a
/// bf16 element widened to f32 is its bits shifted up 16, as HostBuffer::toTensor widens it; i1 one byte, i32 four,
/// i64 / index eight). A soak compares every result of every step, the caches among them: the conversions would
/// cost more than the compiled step.
bool sameBits(const runtime::HostValue &got, const Tensor &want) {
  if (const Tensor *t = got.tensor())
    return sameBits(*t, want);
  const runtime::HostBuffer *b = got.buffer();
  if (!b)
    return sameBits(got.toTensor(), want);
  if (b->shape() != want.shape() || b->elementType() != want.elementType())
    return false;
  const size_t n = static_cast<size_t>(want.numElements());
  const auto *src = static_cast<const uint8_t *>(b->data());
  switch (want.elementType()) {
  case ElementType::BF16:
    for (size_t e = 0; e < n; ++e) {
      uint16_t bits;
      uint32_t wide;
      std::memcpy(&bits, src + 2 * e, 2);
      std::memcpy(&wide, want.floats() + e, 4);
      if (static_cast<uint32_t>(bits) << 16 != wide)
        return false;
    }
    return true;
  case ElementType::F32:
    return n == 0 || std::memcmp(src, want.floats(), 4 * n) == 0;
  case ElementType::I1:
    for (size_t e = 0; e < n; ++e)
      if ((src[e] & 1) != want.ints()[e])
        return false;
    return true;
  case ElementType::I32:
    for (size_t e = 0; e < n; ++e) {
      int32_t v;
      std::memcpy(&v, src + 4 * e, 4);
      if (v != want.ints()[e])
        return false;
    }
    return true;
  case ElementType::I64:
  case ElementType::Index:
    return n == 0 || std::memcmp(src, want.ints(), 8 * n) == 0;
  }
  return false;
}

class CPURuntimeSoakTest : public CPURuntimeAOTTest {
protected:
  /// One layer of a soak: its step library run by a resident sequence (CPUStepLibrary::runValues: state kept
  /// between steps, caches updated in place), and the interpreter's arguments (the weights, the state threaded by
  /// this test from its init; x, start_pos and the slots set per step).
  struct SoakLayer {
    mlir::dsa::AttentionLayerConfig config;
    std::unique_ptr<cpu::CPUStepLibrary> library;
    OwningOpRef<ModuleOp> decomposed;
    std::string name;
    const runtime::FunctionSignature *sig = nullptr;
    std::optional<runtime::Sequence> seq;
    std::vector<Tensor> args;
  };

  /// Builds `config`'s layer with the weights of `seed` and starts it (see SoakLayer); false (a failure recorded)
  /// when the layer does not build or has no step roles.
  bool startLayer(const mlir::dsa::AttentionLayerConfig &config, uint64_t seed, SoakLayer &layer) {
    build(config, seed);
    if (!library) {
      ADD_FAILURE() << "layer " << config.functionName() << " did not build: " << diagnostics;
      return false;
    }
    layer.config = config;
    layer.sig = library->signature(name);
    if (!layer.sig || !layer.sig->step.present()) {
      ADD_FAILURE() << "layer " << name << " has no step roles";
      return false;
    }
    layer.seq = residentSequence();
    const runtime::FunctionSignature &sig = *layer.sig;
    layer.args.assign(sig.args.size(), Tensor());
    for (size_t i = 0; i < weights.size(); ++i)
      layer.args[3 + i] = weights[i];
    for (const runtime::StateBinding &b : sig.state) {
      const runtime::ValueKind &k = sig.args[static_cast<size_t>(b.arg)];
      Tensor t(k.elem, k.shape);
      if (b.init == runtime::StateInit::NegInf)
        std::fill(t.floats(), t.floats() + t.numElements(), -std::numeric_limits<float>::infinity());
      layer.args[static_cast<size_t>(b.arg)] = std::move(t);
    }
    layer.library = std::move(library);
    layer.decomposed = std::move(decomposed);
    layer.name = name;
    return true;
  }

  /// A stack of layers (each config with its weight seed), the slots shared by every layer with slots, each
  /// layer's x the previous one's output: a prefill of 5 tokens (inputs from `inputSeed`), then decode steps up to
  /// position `end` (or the smallest capacity, whichever is first). Every layer's every result (output, state,
  /// published slots, probes) bit-identical to the interpreter's at every step, the interpreter stepped with the
  /// state and slots threaded by the signatures' bindings. Resident memory measured after a tenth of the steps and
  /// at the end may grow by at most `kFlatBytes`. At the capacity, one more token to each layer gives the
  /// `max_seq_len:` error with its state, its position and the slots unchanged. Returns the position reached.
  int64_t soak(const std::vector<std::pair<mlir::dsa::AttentionLayerConfig, uint64_t>> &stack, uint64_t inputSeed,
               int64_t end) {
    std::vector<SoakLayer> layers(stack.size());
    for (size_t l = 0; l < stack.size(); ++l)
      if (!startLayer(stack[l].first, stack[l].second, layers[l]))
        return -1;
    // The runtime's slots and the interpreter's, both from the first layer with slots.
    runtime::Sequence::SlotSet slots;
    std::vector<Tensor> slotTensors;
    int64_t capacity = std::numeric_limits<int64_t>::max();
    for (const SoakLayer &layer : layers) {
      if (layer.sig->step.maxSeqLen >= 0)
        capacity = std::min(capacity, layer.sig->step.maxSeqLen);
      if (slotTensors.empty() && !layer.sig->step.shared.empty()) {
        auto initial = runtime::Sequence::initialSlots(*layer.sig);
        if (!initial.ok()) {
          ADD_FAILURE() << initial.error();
          return -1;
        }
        slots = *initial;
        for (const runtime::HostValue &v : slots)
          slotTensors.push_back(v.toTensor());
      }
    }
    end = std::min(end, capacity);
    const int64_t dim = stack.front().first.dim;
    std::mt19937_64 rng(inputSeed);
    int64_t pos = 0, rssAfterTenth = 0;
    while (pos < end) {
      const int64_t tokens = pos == 0 ? std::min<int64_t>(5, end) : 1;
      Tensor x = randomTensor(rng, ElementType::BF16, {tokens, dim}, 1.0f);
      for (size_t l = 0; l < layers.size(); ++l) {
        SoakLayer &layer = layers[l];
        const runtime::FunctionSignature &sig = *layer.sig;
        const bool shares = !sig.step.shared.empty();
        auto got = layer.seq->runValues(x, pos, shares ? &slots : nullptr);
        if (!got.ok()) {
          ADD_FAILURE() << "layer " << l << ", step at " << pos << ": " << got.error();
          return pos;
        }
        std::vector<Tensor> &in = layer.args;
        in[static_cast<size_t>(sig.step.x)] = std::move(x);
        in[static_cast<size_t>(sig.step.startPos)] = Tensor::scalarI64(pos);
        for (size_t i = 0; i < sig.step.shared.size(); ++i)
          in[static_cast<size_t>(sig.step.shared[i].arg)] = std::move(slotTensors[i]);
        func::FuncOp fn = layer.decomposed->lookupSymbol<func::FuncOp>(layer.name);
        FailureOr<std::vector<Tensor>> want = interp::interpretFunction(fn, in, nullptr);
        if (failed(want) || want->size() != got->size()) {
          ADD_FAILURE() << "interpreter, layer " << l << " at " << pos << ": " << diagnostics;
          return pos;
        }
        for (size_t r = 0; r < want->size(); ++r)
          if (!sameBits((*got)[r], (*want)[r])) {
            ADD_FAILURE() << "layer " << l << ", step at " << pos << ": result " << r
                          << " differs from the interpreter's";
            return pos;
          }
        // Thread the interpreter's values (distinct results: out, new_ring, new_state..., new_shared...).
        for (const runtime::StateBinding &b : sig.state)
          in[static_cast<size_t>(b.arg)] = std::move((*want)[static_cast<size_t>(b.result)]);
        for (size_t i = 0; i < sig.step.shared.size(); ++i) {
          slotTensors[i] = std::move((*want)[static_cast<size_t>(sig.step.shared[i].result)]);
          in[static_cast<size_t>(sig.step.shared[i].arg)] = Tensor();
        }
        x = std::move((*want)[static_cast<size_t>(sig.step.output)]); // the next layer's input
      }
      pos += tokens;
      if (pos >= end / 10 && rssAfterTenth == 0)
        rssAfterTenth = residentBytes();
    }
    const int64_t growth = residentBytes() - rssAfterTenth;
    EXPECT_LE(growth, kFlatBytes) << "resident memory grew by " << growth << " bytes from step " << end / 10
                                  << " to step " << end;
    for (size_t l = 0; l < layers.size(); ++l) {
      SoakLayer &layer = layers[l];
      const runtime::FunctionSignature &sig = *layer.sig;
      if (pos != capacity || sig.step.maxSeqLen != capacity)
        continue;
      // One more token does not fit: a clean error naming max_seq_len; state, position and slots unchanged.
      SCOPED_TRACE("layer " + std::to_string(l) + " past its capacity");
      const bool shares = !sig.step.shared.empty();
      std::vector<Tensor> before;
      for (const runtime::StateBinding &b : sig.state)
        before.push_back(layer.seq->state(static_cast<size_t>(b.arg))->toTensor());
      auto over = layer.seq->runValues(randomTensor(rng, ElementType::BF16, {1, dim}, 1.0f), pos,
                                       shares ? &slots : nullptr);
      EXPECT_FALSE(over.ok());
      if (!over.ok()) {
        EXPECT_NE(over.error().find("max_seq_len: positions " + std::to_string(pos) + " .. " + std::to_string(pos) +
                                    " exceed the capacity of " + std::to_string(capacity) + " positions"),
                  std::string::npos)
            << over.error();
      }
      EXPECT_EQ(layer.seq->position(), pos);
      for (size_t i = 0; i < sig.state.size(); ++i)
        EXPECT_TRUE(sameBits(*layer.seq->state(static_cast<size_t>(sig.state[i].arg)), before[i]))
            << "state argument " << sig.state[i].arg;
      // The slots as the last step left them: the interpreter's.
      for (size_t i = 0; i < slotTensors.size(); ++i)
        EXPECT_TRUE(sameBits(slots[i], slotTensors[i])) << "slot " << i;
    }
    return pos;
  }

  /// One layer's soak (soak above with a stack of one, the inputs from `seed` + 1).
  int64_t soak(const mlir::dsa::AttentionLayerConfig &config, uint64_t seed, int64_t end) {
    return soak({{config, seed}}, seed + 1, end);
  }

  /// Resident memory in use may grow this much over the measured steps (page-granular allocator noise: about 60 KB
  /// over 5,500 steps measured; a leak of 250 bytes per step over 9,000 steps exceeds it, one leaked ring or cache
  /// row per step is megabytes).
  static constexpr int64_t kFlatBytes = 2 << 20;
  /// Steps of every soak ($DSA_SOAK_STEPS, default 10000).
  static int64_t soakSteps() {
    const char *env = std::getenv("DSA_SOAK_STEPS");
    return env ? std::max<int64_t>(10, std::atoll(env)) : 10000;
  }
};

TEST_F(CPURuntimeSoakTest, WindowLayerDecodesWithTheRingWrappedManyTimes) {
  // W = 8: 10000 steps wrap the ring 1250 times.
  EXPECT_EQ(soak(tinyLayer(0), 41, soakSteps()), soakSteps());
}

TEST_F(CPURuntimeSoakTest, RatioTwoKvAndIndexSourceFillsItsCachesToCapacity) {
  // Compressor groups of 2 completed every other step; the caches (max_seq_len / 2 rows) fill up, then the capacity
  // error.
  mlir::dsa::AttentionLayerConfig config = tinyLayer(2);
  config.compress->maxSeqLen = soakSteps();
  EXPECT_EQ(soak(config, 43, soakSteps()), soakSteps());
}

TEST_F(CPURuntimeSoakTest, RatioOneCandidateSourceFillsItsCachesToCapacity) {
  mlir::dsa::AttentionLayerConfig config = tinyLayer(1);
  config.compress->isCandidateSource = true;
  config.compress->maxSeqLen = soakSteps();
  EXPECT_EQ(soak(config, 47, soakSteps()), soakSteps());
}

/// The golden's L4 and L5 roles as a stack sharing the four slots every step: a ratio-1 kv + index + candidate
/// source, then a ratio-1 index source that is not a kv source (it reads the first's compress_kv) and USES its
/// candidates (section 1), its x the first layer's output. Both to capacity (max_seq_len = the soak's steps), then
/// the capacity error for each.
TEST_F(CPURuntimeSoakTest, CandidateSourceAndAnIndexSourceUsingItShareSlotsEveryStep) {
  const int64_t end = soakSteps();
  mlir::dsa::AttentionLayerConfig a = tinyLayer(1);
  a.compress->isCandidateSource = true;
  a.compress->maxSeqLen = end;
  mlir::dsa::AttentionLayerConfig b = tinyLayer(1);
  b.layerId = 8; // its own library file (the name includes the layer)
  b.compress->isKvSource = false;
  b.compress->usesCandidates = true;
  b.compress->maxSeqLen = end;
  EXPECT_EQ(soak({{a, 51}, {b, 52}}, 53, end), end);
}

/// The golden's L2 and L3 roles as a stack sharing the four slots every step: a ratio-2 kv + index source
/// (publishing compress_kv, index_k and topk_idxs), then a ratio-2 layer that is neither a kv nor an index source:
/// it attends over the first's compress_kv with the first's top-k (section 1), its x the first layer's output.
/// Both to capacity, then the capacity error for each.
TEST_F(CPURuntimeSoakTest, RatioTwoReaderOfAnotherLayersCacheAndTopkSharesSlotsEveryStep) {
  const int64_t end = soakSteps();
  mlir::dsa::AttentionLayerConfig a = tinyLayer(2);
  a.layerId = 2;
  a.compress->maxSeqLen = end;
  mlir::dsa::AttentionLayerConfig b = tinyLayer(2);
  b.layerId = 3;
  b.compress->isKvSource = false;
  b.compress->isIndexSource = false;
  b.compress->maxSeqLen = end;
  EXPECT_EQ(soak({{a, 61}, {b, 62}}, 63, end), end);
}

/// Chunks through a stack of layers sharing slots (runtime::planStackChunk), run layer-major on the interpreter and
/// on the step libraries (one call per layer per sub-chunk), against the interpreter stepped token by token through
/// every layer.
class CPURuntimeStackChunkTest : public CPURuntimeSoakTest {
protected:
  /// One layer's step on `args` (its weights and state; x, start_pos and the slots set here): the interpreter's or,
  /// with `library`, the compiled step library's (Tensors in, Tensors out). The state is threaded in `args`, the
  /// slots in `slots` (index_k as given: the caller routes it). Returns the output, empty on a failure (recorded).
  Tensor step(SoakLayer &layer, std::vector<Tensor> &args, const Tensor &x, int64_t pos, std::vector<Tensor> &slots,
              bool library) {
    const runtime::FunctionSignature &sig = *layer.sig;
    args[static_cast<size_t>(sig.step.x)] = x;
    args[static_cast<size_t>(sig.step.startPos)] = Tensor::scalarI64(pos);
    for (size_t i = 0; i < sig.step.shared.size(); ++i)
      args[static_cast<size_t>(sig.step.shared[i].arg)] = slots[i];
    std::vector<Tensor> results;
    if (library) {
      std::vector<runtime::HostValue> in(args.begin(), args.end());
      auto got = layer.library->run(layer.name, in, nullptr);
      if (!got.ok()) {
        ADD_FAILURE() << layer.name << " at " << pos << ": " << got.error();
        return Tensor();
      }
      results = got.take();
    } else {
      func::FuncOp fn = layer.decomposed->lookupSymbol<func::FuncOp>(layer.name);
      FailureOr<std::vector<Tensor>> got = interp::interpretFunction(fn, args, nullptr);
      if (failed(got)) {
        ADD_FAILURE() << layer.name << " at " << pos << " (interpreter): " << diagnostics;
        return Tensor();
      }
      results = std::move(*got);
    }
    for (const runtime::StateBinding &b : sig.state)
      args[static_cast<size_t>(b.arg)] = results[static_cast<size_t>(b.result)];
    for (size_t i = 0; i < sig.step.shared.size(); ++i)
      slots[i] = results[static_cast<size_t>(sig.step.shared[i].result)];
    return results[static_cast<size_t>(sig.step.output)];
  }
};

/// The golden's stack with a second ratio-2 source (as V4.1-Flash's layers 2 and 8) on tiny layers: a window-only
/// layer; a ratio-2 kv + index source and its reader (the golden's L2, L3); a second ratio-2 kv + index source; a
/// ratio-1 kv + index + candidate source and the index source using its candidates (L4, L5); index_k_source
/// published_slot, the quirk: a ratio-2 source at a token closing no group scores against the ratio-1 source's keys
/// of the previous token, which for the second one is not the slot threaded to it layer-major (the first one's new
/// keys) but the slot as it entered the chunk (the plan routes it). After a prefill of 6, steps of 2 .. 11 tokens at
/// start_pos > 0, each cut by planStackChunk and run layer-major with its index_k routing, on the interpreter, on
/// the step libraries, and through the layers' resident sequences (runStackChunkValues): every layer's output,
/// state and the cache slots bit for bit the interpreter's token by token (candidates: the last token's row).
TEST_F(CPURuntimeStackChunkTest, ChunksThroughTheGoldensStackEqualTokenByTokenDecode) {
  std::vector<mlir::dsa::AttentionLayerConfig> configs;
  const int64_t ratios[] = {0, 2, 2, 2, 1, 1}, ids[] = {0, 2, 3, 8, 4, 5};
  for (size_t l = 0; l < 6; ++l) {
    mlir::dsa::AttentionLayerConfig c = tinyLayer(ratios[l]);
    c.layerId = ids[l];
    if (c.compress) {
      c.compress->maxSeqLen = 48;
      c.compress->isKvSource = l != 2 && l != 5;
      c.compress->isIndexSource = l != 2;
      c.compress->isCandidateSource = l == 4;
      c.compress->usesCandidates = l == 5;
    }
    configs.push_back(c);
  }
  std::vector<SoakLayer> layers(configs.size());
  std::vector<runtime::StackLayerRoles> roles;
  for (size_t l = 0; l < configs.size(); ++l) {
    ASSERT_TRUE(startLayer(configs[l], 70 + l, layers[l]));
    auto r = runtime::stackLayerRoles(*layers[l].sig);
    ASSERT_TRUE(r.ok()) << r.error();
    roles.push_back(*r);
  }
  EXPECT_FALSE(layers[1].sig->step.chunked) << "alone, a ratio-2 source refuses chunks (it reads L4's keys)";
  // Three runs of the stack: token by token (the oracle), layer-major on the interpreter, layer-major on the
  // libraries; each with its own state and slots.
  constexpr int kRuns = 3;
  std::vector<std::vector<Tensor>> args[kRuns];
  std::vector<Tensor> slots[kRuns];
  for (int run = 0; run < kRuns; ++run) {
    for (SoakLayer &layer : layers)
      args[run].push_back(layer.args);
    auto initial = runtime::Sequence::initialSlots(*layers[1].sig);
    ASSERT_TRUE(initial.ok()) << initial.error();
    for (const runtime::HostValue &v : *initial)
      slots[run].push_back(v.toTensor());
  }
  auto initialSequenceSlots = runtime::Sequence::initialSlots(*layers[1].sig);
  ASSERT_TRUE(initialSequenceSlots.ok()) << initialSequenceSlots.error();
  runtime::Sequence::SlotSet sequenceSlots = initialSequenceSlots.take();
  std::mt19937_64 rng(77);
  const int64_t prefill = 6;
  int64_t pos = 0, cut = 0, routed = 0;
  // 9 at 6 is cut (position 14 would see (14 + 1) // 2 = 7 rows of L4's keys, layer-major only the 6 it had).
  for (int64_t tokens : {prefill, int64_t{9}, int64_t{2}, int64_t{3}, int64_t{5}, int64_t{8}, int64_t{4},
                         int64_t{11}}) {
    SCOPED_TRACE(std::to_string(tokens) + " tokens at " + std::to_string(pos));
    const Tensor x = randomTensor(rng, ElementType::BF16, {tokens, 64}, 1.0f);
    // The oracle: the prefill as one step, every later token one decode step through every layer.
    std::vector<Tensor> want(layers.size());
    std::vector<std::vector<float>> wantRows(layers.size());
    for (int64_t t = 0; t < (pos == 0 ? 1 : tokens); ++t) {
      Tensor in = pos == 0 ? x : rows(x, t, 1);
      for (size_t l = 0; l < layers.size(); ++l) {
        in = step(layers[l], args[0][l], in, pos + t, slots[0], false);
        ASSERT_GT(in.numElements(), 0);
        wantRows[l].insert(wantRows[l].end(), in.floats(), in.floats() + in.numElements());
      }
    }
    for (size_t l = 0; l < layers.size(); ++l)
      want[l] = Tensor::fromFloats(ElementType::BF16, {tokens, 64}, wantRows[l]);
    // Layer-major by the plan (the prefill: one step, nothing to plan).
    std::vector<runtime::StackSubChunk> plan{runtime::StackSubChunk{0, tokens, {}, -1}};
    if (pos > 0) {
      auto planned = runtime::planStackChunk(roles, prefill, pos, tokens);
      ASSERT_TRUE(planned.ok()) << planned.error();
      plan = planned.take();
      cut += plan.size() > 1;
    }
    for (int run = 1; run < kRuns; ++run) {
      std::vector<std::vector<float>> got(layers.size());
      for (const runtime::StackSubChunk &sub : plan) {
        Tensor in = rows(x, sub.first, sub.count);
        const Tensor entering = slots[run][1];
        std::vector<Tensor> returned(layers.size());
        for (size_t l = 0; l < layers.size(); ++l) {
          if (!sub.indexKFrom.empty() && roles[l].ratio > 0) {
            const int64_t from = sub.indexKFrom[l];
            slots[run][1] = from < 0 ? entering : returned[static_cast<size_t>(from)];
            if (l > 1 && from != static_cast<int64_t>(l) - 1)
              ++routed;
          }
          in = step(layers[l], args[run][l], in, pos + sub.first, slots[run], run == 2);
          ASSERT_GT(in.numElements(), 0);
          returned[l] = slots[run][1];
          got[l].insert(got[l].end(), in.floats(), in.floats() + in.numElements());
        }
        if (!sub.indexKFrom.empty())
          slots[run][1] = sub.indexKAfter < 0 ? entering : returned[static_cast<size_t>(sub.indexKAfter)];
      }
      const char *who = run == 1 ? "interpreter" : "libraries";
      for (size_t l = 0; l < layers.size(); ++l) {
        EXPECT_TRUE(sameBits(Tensor::fromFloats(ElementType::BF16, {tokens, 64}, got[l]), want[l]))
            << who << ": layer " << l << "'s output";
        for (const runtime::StateBinding &b : layers[l].sig->state)
          EXPECT_TRUE(sameBits(args[run][l][static_cast<size_t>(b.arg)], args[0][l][static_cast<size_t>(b.arg)]))
              << who << ": layer " << l << "'s state argument " << b.arg;
      }
      for (size_t i = 0; i < 2; ++i)
        EXPECT_TRUE(sameBits(slots[run][i], slots[0][i])) << who << ": slot " << i;
      for (size_t i = 2; i < 4; ++i) { // topk_idxs, candidates: the last token's row (a chunk's top-k rows point
        const Tensor &g = slots[run][i], &w = slots[0][i]; // past W + s window rows: compare candidates only)
        ASSERT_EQ(g.dim(1) >= w.dim(1), true) << who << ": slot " << i;
        if (i == 3) {
          for (int64_t p = 0; p < w.dim(1); ++p)
            EXPECT_EQ(g.intVector()[(g.dim(0) - 1) * g.dim(1) + p], w.intVector()[(w.dim(0) - 1) * w.dim(1) + p])
                << who << ": candidates of the last token, column " << p;
        }
      }
    }
    // The runtime's way: each layer's resident sequence (state kept as the libraries' buffers, caches in place),
    // runStackChunkValues for the layers with slots, the HostValue slots routed by a StackChunkRouter.
    std::vector<std::vector<float>> viaSequences(layers.size());
    for (const runtime::StackSubChunk &sub : plan) {
      Tensor in = rows(x, sub.first, sub.count);
      const bool routing = !sub.indexKFrom.empty();
      runtime::StackChunkRouter router(sub);
      if (routing) {
        ASSERT_TRUE(router.begin(sequenceSlots).ok());
      }
      for (size_t l = 0; l < layers.size(); ++l) {
        const bool shares = roles[l].ratio > 0;
        if (shares && routing) {
          ::dsa::Status st = router.beforeLayer(l, sequenceSlots);
          ASSERT_TRUE(st.ok()) << st.error();
        }
        auto got = !shares ? layers[l].seq->runValues(in, pos + sub.first, nullptr)
                   : pos == 0 ? layers[l].seq->runValues(in, pos, &sequenceSlots)
                              : layers[l].seq->runStackChunkValues(in, pos + sub.first, sequenceSlots);
        ASSERT_TRUE(got.ok()) << "sequence of layer " << l << ": " << got.error();
        if (shares && routing) {
          ASSERT_TRUE(router.afterLayer(l, sequenceSlots).ok());
        }
        in = (*got)[static_cast<size_t>(layers[l].sig->step.output)].toTensor();
        viaSequences[l].insert(viaSequences[l].end(), in.floats(), in.floats() + in.numElements());
      }
      if (routing) {
        ASSERT_TRUE(router.finish(sequenceSlots).ok());
      }
    }
    for (size_t l = 0; l < layers.size(); ++l) {
      EXPECT_TRUE(sameBits(Tensor::fromFloats(ElementType::BF16, {tokens, 64}, viaSequences[l]), want[l]))
          << "sequences: layer " << l << "'s output";
      EXPECT_EQ(layers[l].seq->position(), pos + tokens);
      for (const runtime::StateBinding &b : layers[l].sig->state)
        EXPECT_TRUE(sameBits(layers[l].seq->state(static_cast<size_t>(b.arg))->toTensor(),
                             args[0][l][static_cast<size_t>(b.arg)]))
            << "sequences: layer " << l << "'s state argument " << b.arg;
    }
    for (size_t i = 0; i < 2; ++i) // the caches (resident: the live buffers): the visible rows
      EXPECT_TRUE(sameBits(sequenceSlots[i].toTensor(), slots[0][i])) << "sequences: slot " << i;
    pos += tokens;
  }
  EXPECT_GT(cut, 0) << "some step should be cut in sub-chunks";
  EXPECT_GT(routed, 0) << "some layer should get index_k other than by plain threading";
}

} // namespace

/// A compressed layer (ratio 2) that reads only what it publishes itself (kv + index + candidate source, its own
/// index-key cache): a multi-token step at start_pos > 0 is one step of the interpreter, one call of the
/// compiled library run directly, and one call through runtime::Sequence (step roles `chunked`, resident state,
/// shared slots), and all equal, bit for bit, the interpreter stepped one token at a time (section 13): the output, the ring, the compressor's states, both caches,
/// the four published slots (the top-k and candidate rows of the last token), over chunks that close 0, 1 or
/// several groups, cross the window's wrap and start on either residue.
TEST_F(CPURuntimeAOTTest, ChunksOfASelfContainedCompressedLayerEqualTokenByTokenDecode) {
  mlir::dsa::AttentionLayerConfig config = tinyLayer(2);
  config.compress->isCandidateSource = true; // publishes its mask (a layer cannot also use its own)
  config.compress->indexKSource = mlir::dsa::IndexKSource::own_cache;
  build(config, 23);
  const runtime::FunctionSignature *sig = library->signature(name);
  ASSERT_TRUE(sig && sig->step.present());
  EXPECT_TRUE(sig->step.chunked) << "a layer reading only its own slots runs chunks";
  ASSERT_EQ(sig->step.shared.size(), 4u);
  // The runtime's way: a sequence with resident state (runValues, the caches updated in place) and the slots; a
  // chunk is ONE call.
  int64_t calls = 0;
  std::map<size_t, runtime::HostValue> fixed;
  for (size_t i = 0; i < weights.size(); ++i)
    fixed.emplace(3 + i, runtime::HostBuffer::fromTensor(weights[i]));
  const cpu::CPUStepLibrary *lib = library.get();
  const std::string fn = name;
  runtime::Sequence::ValueRunner runner = [lib, fn, &calls](const std::vector<runtime::HostValue> &args,
                                                            std::vector<runtime::NamedTensor> *probes) {
    ++calls;
    return lib->runValues(fn, args, probes);
  };
  auto started = runtime::Sequence::start(*sig, runner, std::move(fixed));
  ASSERT_TRUE(started.ok()) << started.error();
  runtime::Sequence seq = started.take();
  auto slots = runtime::Sequence::initialSlots(*sig);
  ASSERT_TRUE(slots.ok()) << slots.error();
  std::vector<Tensor> chunkState = tinyRatio2InitialState(), libState = chunkState, state = chunkState;
  std::mt19937_64 rng(24);
  int64_t pos = 0;
  for (int64_t tokens : {3, 2, 5, 1, 3, 2}) {
    SCOPED_TRACE("step of " + std::to_string(tokens) + " at " + std::to_string(pos));
    const Tensor x = randomTensor(rng, ElementType::BF16, {tokens, 64}, 1.0f);
    // The compiled library, one call (arguments in the function's order: x, start_pos, ring, weights, state).
    std::vector<runtime::HostValue> args = {x, Tensor::scalarI64(pos), libState[0]};
    args.insert(args.end(), weights.begin(), weights.end());
    args.insert(args.end(), libState.begin() + 1, libState.end());
    auto got = library->run(name, args, nullptr);
    ASSERT_TRUE(got.ok()) << got.error();
    ASSERT_GE(got->size(), 1 + libState.size());
    for (size_t i = 0; i < libState.size(); ++i)
      libState[i] = (*got)[1 + i];
    calls = 0;
    auto viaSequence = seq.run(x, pos, &*slots);
    ASSERT_TRUE(viaSequence.ok()) << viaSequence.error();
    EXPECT_EQ(calls, 1) << "one call of the library for the whole step";
    std::vector<Tensor> chunk = interpret(x, pos, chunkState, 5); // the interpreter, one step
    ASSERT_FALSE(chunk.empty());
    // The oracle: the first step is the reference's prefill (section 13 defines steps at start_pos > 0), every
    // later one its tokens fed one decode step at a time.
    std::vector<float> want;
    for (int64_t t = 0; t < (pos == 0 ? 1 : tokens); ++t) {
      std::vector<Tensor> r = interpret(pos == 0 ? x : rows(x, t, 1), pos + t, state, 5);
      ASSERT_FALSE(r.empty());
      want.insert(want.end(), r[0].floats(), r[0].floats() + r[0].numElements());
    }
    const Tensor wantOut = Tensor::fromFloats(ElementType::BF16, {tokens, 64}, want);
    EXPECT_TRUE(std::any_of(want.begin(), want.end(), [](float v) { return v != 0.0f; })) << "degenerate data";
    EXPECT_TRUE(sameBits(chunk[0], wantOut)) << "the interpreter's chunk vs token by token";
    EXPECT_TRUE(sameBits((*got)[0], wantOut)) << "the library's chunk vs token by token";
    EXPECT_TRUE(sameBits((*viaSequence)[0], wantOut)) << "the sequence's chunk vs token by token";
    // State and slots after the step. The slots hold the last token's rows in token-by-token decode and the chunk's
    // rows in the chunk: compare the caches, compress_kv and index_k as they are, topk_idxs / candidates by the last
    // row (the chunk's top-k row points past W + s window rows, decode's past W).
    for (size_t i = 0; i < 7; ++i) {
      EXPECT_TRUE(sameBits(chunkState[i], state[i])) << "interpreter state/slot " << i;
      EXPECT_TRUE(sameBits(libState[i], state[i])) << "library state/slot " << i;
    }
    const Tensor &topk = chunkState[7], &wantTopk = state[7];
    ASSERT_EQ(topk.dim(0), tokens);
    ASSERT_EQ(wantTopk.dim(0), pos == 0 ? tokens : 1);
    const int64_t k = topk.dim(1), kd = wantTopk.dim(1);
    ASSERT_LE(kd, k);
    if (pos > 0)
      for (int64_t j = 0; j < k; ++j) { // the chunk's last row: decode's entries + s, then -1 past decode's k
        const int64_t v = topk.intVector()[(tokens - 1) * k + j];
        const int64_t w = j < kd ? wantTopk.intVector()[j] : -1;
        EXPECT_EQ(v, w < 0 ? -1 : tokens == 1 ? w : w + tokens) << "topk_idxs entry " << j;
      }
    const Tensor &mask = chunkState[8], &wantMask = state[8];
    ASSERT_EQ(mask.dim(1), wantMask.dim(1));
    for (int64_t p = 0; p < mask.dim(1); ++p)
      EXPECT_EQ(mask.intVector()[(tokens - 1) * mask.dim(1) + p],
                wantMask.intVector()[(wantMask.dim(0) - 1) * mask.dim(1) + p])
          << "candidates of the last token, column " << p;
    EXPECT_TRUE(sameBits(libState[7], chunkState[7])) << "library topk_idxs";
    EXPECT_TRUE(sameBits(libState[8], chunkState[8])) << "library candidates";
    for (size_t i = 0; i < 4; ++i)
      EXPECT_TRUE(sameBits((*slots)[i].toTensor(), chunkState[5 + i])) << "the sequence's slot " << i;
    EXPECT_TRUE(sameBits(seq.state(2)->toTensor(), state[0])) << "the sequence's ring";
    pos += tokens;
  }
}
