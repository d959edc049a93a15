//===- DifferentialTest.cpp - the CPU backend against the interpreter on random window-only layers ---===//
//
// Differential test of the JIT CPU backend (compiler/include/dsa/Backend/CPU/CPUModule.h) against the reference interpreter
// (compiler/include/dsa/Interpreter/Interpreter.h, interpretFunction on the decomposed module, i.e. the MLIR-free kernels).
// The expected values come from the interpreter, not from the code under test.
//
// Each case builds one window-only `dsa.attention` (compress_ratio = 0) with mlir::dsa::buildAttentionFunction
// (compiler/include/dsa/Dialect/DSA/IR/AttentionBuilder.h, as tools/dsa-run/GoldenReplay.cpp does), fills its weights and inputs with seeded random bf16 values (uniform, scaled
// by 1/sqrt(fan_in) so that activations stay O(1)), and runs a step sequence (a prefill at start_pos 0, then decode
// steps or multi-token chunks at start_pos = tokens so far, the ring threaded by each side separately) on both. Every result (out,
// new_ring) and every probe (L<l>.sa_q, sa_kv, sa_topk_idxs, sa_o, attn_out) is compared at every step:
//   - index tensors (sa_topk_idxs, i32) exactly;
//   - float tensors BIT-EXACTLY (NaN = NaN): the backend evaluates every f32 operation in the kernels' order
//     (docs/cpu-backend.md), so nothing looser than identical bits is accepted here. (The golden's section 12
//     tolerance, golden/include/dsa/Golden/Compare.h, is for comparisons against DeepSeek's reference, whose accumulation
//     order differs; it is not needed between these two.)
//
// Geometries: a tiny one whose sequence crosses the window boundary (prefill 5 with W = 4, then decode to position
// 12: the ring wraps three times and the fill-phase -1 indices disappear), one with K % 8 tails in every dot product
// and a prefill longer than the window, and DeepSeek-V4.1-Flash's window-only layer (dim 5120, 64 heads, head_dim 512,
// rope 64, q_lora 1280, o_lora 1024, 8 groups, window 128) with a short sequence (prefill 3, two decode steps) to keep
// the interpreter's time small.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "BitExact.h"
#include "CPUTestSupport.h"
#include "RandomLayer.h"
#include "dsa/Backend/CPU/CPUModule.h"

#include "dsa/Dialect/DSA/IR/AttentionBuilder.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"
#include "dsa/Interpreter/Interpreter.h"
#include "dsa/Numerics/Bits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

using namespace mlir;
namespace interp = ::dsa::interp;
namespace cpu = ::dsa::cpu;
namespace runtime = ::dsa::runtime;
using ::dsa::ElementType;
using ::dsa::Tensor;

using ::dsa::test::sameBits;

namespace {

using ::dsa::test::fanIn;
using ::dsa::test::haveOpenMP;
using ::dsa::test::Random;
using ::dsa::test::randomTensor;

/// One window-only layer's configuration (attention-semantics.md section 1).
struct Geometry {
  const char *name;
  int64_t dim, nHeads, headDim, ropeDim, qLora, oLora, oGroups, window;
  double normEps = 1e-20;
  double ropeTheta = 1e4;
};


/// The layer's weights in dsa.attention's `weights(...)` order (RandomLayer.h).
std::vector<Tensor> randomWeights(const Geometry &g, uint64_t seed) {
  ::dsa::test::Random rng(seed);
  return ::dsa::test::randomWindowWeights(rng, {g.dim, g.nHeads, g.headDim, g.qLora, g.oLora, g.oGroups});
}

/// The window-only layer's configuration (compress_ratio = 0: rope_theta without YaRN, no compress); the function is
/// @attention_L<layer>(x, start_pos, ring, weights...) -> (out, new_ring) with the canonical operand types.
mlir::dsa::AttentionLayerConfig layerConfig(const Geometry &g, int64_t layer) {
  mlir::dsa::AttentionLayerConfig c;
  c.layerId = layer;
  c.dim = g.dim;
  c.nHeads = g.nHeads;
  c.headDim = g.headDim;
  c.ropeHeadDim = g.ropeDim;
  c.qLoraRank = g.qLora;
  c.oGroups = g.oGroups;
  c.oLoraRank = g.oLora;
  c.windowSize = g.window;
  c.normEps = g.normEps;
  c.ropeTheta = g.ropeTheta;
  return c;
}

/// A float tensor that is finite everywhere and not all zero (so that a bit-exact match means something).
::testing::AssertionResult finiteAndNonZero(const Tensor &t) {
  bool nonZero = false;
  for (int64_t i = 0; i < t.numElements(); ++i) {
    float v = t.floats()[i];
    if (!std::isfinite(v))
      return ::testing::AssertionFailure() << "element " << i << " is " << v;
    nonZero |= v != 0.0f;
  }
  if (!nonZero)
    return ::testing::AssertionFailure() << "all " << t.numElements() << " elements are zero";
  return ::testing::AssertionSuccess();
}

/// One step of a sequence: `tokens` new tokens at `startPos`.
struct Step {
  int64_t startPos, tokens;
};

/// A prefill of `prefill` tokens, then one decode step per position prefill .. lastPos.
std::vector<Step> sequence(int64_t prefill, int64_t lastPos) {
  std::vector<Step> steps = {{0, prefill}};
  for (int64_t p = prefill; p <= lastPos; ++p)
    steps.push_back({p, 1});
  return steps;
}

class DifferentialTest : public ::testing::Test {
protected:
  DifferentialTest() {
    context.loadDialect<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, tensor::TensorDialect>();
    context.printOpOnDiagnostic(false);
    handler = std::make_unique<ScopedDiagnosticHandler>(&context, [this](Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return success();
    });
  }

  /// Runs `steps` of layer `g` (random weights and inputs from `seed`) on the interpreter and on the CPU backend
  /// and expects every result and probe of every step to be identical.
  void runDifferential(const Geometry &g, const std::vector<Step> &steps, uint64_t seed, bool parallel) {
    const int64_t layer = 3;
    std::vector<Tensor> weights = randomWeights(g, seed);
    OwningOpRef<ModuleOp> m = ModuleOp::create(UnknownLoc::get(&context));
    OpBuilder builder = OpBuilder::atBlockEnd(m->getBody());
    ASSERT_TRUE(succeeded(mlir::dsa::buildAttentionFunction(builder, m->getLoc(), layerConfig(g, layer))))
        << diagnostics;
    const std::string fn = "attention_L" + std::to_string(layer);

    // The interpreter runs the decomposed module; the CPU backend compiles the dsa.attention module (its pipeline
    // decomposes it and keeps the probes as results).
    OwningOpRef<ModuleOp> decomposed(m->clone());
    PassManager pm(&context);
    pm.addPass(mlir::dsa::createDSADecomposeAttention());
    ASSERT_TRUE(succeeded(pm.run(*decomposed))) << diagnostics;
    auto interpFn = decomposed->lookupSymbol<func::FuncOp>(fn);
    ASSERT_TRUE(interpFn);

    cpu::CPUCompileOptions options;
    options.probesAsResults = true;
    options.parallel = parallel;
    ::dsa::Result<std::unique_ptr<cpu::CPUModule>> compiled = cpu::compileForCPU(*m, options);
    ASSERT_TRUE(compiled.ok()) << compiled.error();

    std::vector<runtime::HostValue> prepared;
    for (const Tensor &w : weights)
      prepared.push_back(runtime::HostBuffer::fromTensor(w));

    const std::string prefix = "L" + std::to_string(layer) + ".";
    const std::vector<std::string> probeNames = {prefix + "sa_q", prefix + "sa_kv", prefix + "sa_topk_idxs",
                                                 prefix + "sa_o", prefix + "attn_out"};
    Random inputs(seed ^ 0x5151515151515151ull);
    Tensor ringInterp(ElementType::BF16, {g.window, g.headDim});
    Tensor ringCpu = ringInterp;
    for (const Step &step : steps) {
      SCOPED_TRACE(std::string(g.name) + " step at start_pos " + std::to_string(step.startPos) + ", " +
                   std::to_string(step.tokens) + " token(s)");
      Tensor x = randomTensor(inputs, ElementType::BF16, {step.tokens, g.dim}, 1.0f);

      std::vector<Tensor> args = {x, Tensor::scalarI64(step.startPos), ringInterp};
      args.insert(args.end(), weights.begin(), weights.end());
      interp::ProbeLog wantProbes;
      FailureOr<std::vector<Tensor>> want = interp::interpretFunction(interpFn, args, &wantProbes);
      ASSERT_TRUE(succeeded(want)) << diagnostics;

      std::vector<runtime::HostValue> cpuArgs = {x, Tensor::scalarI64(step.startPos), ringCpu};
      cpuArgs.insert(cpuArgs.end(), prepared.begin(), prepared.end());
      interp::ProbeLog gotProbes;
      ::dsa::Result<std::vector<Tensor>> got = (*compiled)->run(fn, cpuArgs, &gotProbes);
      ASSERT_TRUE(got.ok()) << got.error();

      ASSERT_EQ(want->size(), 2u);
      ASSERT_EQ(got->size(), 2u);
      EXPECT_TRUE(finiteAndNonZero((*want)[0])) << "interpreter out (degenerate random data?)";
      EXPECT_TRUE(sameBits((*got)[0], (*want)[0])) << "out";
      EXPECT_TRUE(sameBits((*got)[1], (*want)[1])) << "new_ring";
      ringInterp = (*want)[1];
      ringCpu = (*got)[1];

      ASSERT_EQ(wantProbes.size(), probeNames.size());
      ASSERT_EQ(gotProbes.size(), probeNames.size());
      for (size_t p = 0; p < probeNames.size(); ++p) {
        EXPECT_EQ(wantProbes[p].name, probeNames[p]);
        EXPECT_EQ(gotProbes[p].name, probeNames[p]);
        EXPECT_TRUE(sameBits(gotProbes[p].value, wantProbes[p].value)) << probeNames[p];
      }
      // The window indices are integers, compared exactly above; check they are what the step implies, too
      // (section 4), so that the sequence really exercises the fill phase and the wrap of the ring.
      const Tensor &idx = wantProbes[2].value;
      ASSERT_EQ(idx.elementType(), ElementType::I32);
      if (step.startPos > 0 && step.tokens > 1) {
        // A chunk (docs/architecture.md): token t at p reads position pos = p - W + 1 + i as the chunk's row
        // W + pos - start_pos, the ring's slot pos % W before it, -1 before position 0.
        ASSERT_EQ(idx.shape(), (std::vector<int64_t>{step.tokens, g.window}));
        for (int64_t t = 0; t < step.tokens; ++t)
          for (int64_t i = 0; i < g.window; ++i) {
            const int64_t pos = step.startPos + t - g.window + 1 + i;
            const int64_t want = pos < 0 ? -1 : pos >= step.startPos ? g.window + pos - step.startPos : pos % g.window;
            EXPECT_EQ(idx.ints()[t * g.window + i], want) << "chunk token " << t << " index " << i;
          }
      } else if (step.startPos > 0) {
        ASSERT_EQ(idx.shape(), (std::vector<int64_t>{1, g.window}));
        int64_t oldest = step.startPos % g.window + 1;
        for (int64_t i = 0; i < g.window; ++i) {
          int64_t slot = (oldest + i) % g.window;
          EXPECT_EQ(idx.ints()[i], slot > step.startPos ? -1 : slot) << "decode index " << i;
        }
      }
    }
  }

  MLIRContext context;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::string diagnostics;
};

const Geometry kTiny = {"tiny", /*dim=*/64, /*nHeads=*/4, /*headDim=*/32, /*ropeDim=*/8, /*qLora=*/16, /*oLora=*/16,
                        /*oGroups=*/2, /*window=*/4};
// dim, q_lora and G*R are not multiples of 8 (every dot product has a tail); prefill longer than the window.
const Geometry kTails = {"tails", /*dim=*/100, /*nHeads=*/6, /*headDim=*/64, /*ropeDim=*/16, /*qLora=*/20,
                         /*oLora=*/13, /*oGroups=*/3, /*window=*/16};
// DeepSeek-V4.1-Flash's window-only layer (attention-semantics.md section 1).
const Geometry kFlash = {"V4.1-Flash", /*dim=*/5120, /*nHeads=*/64, /*headDim=*/512, /*ropeDim=*/64, /*qLora=*/1280,
                         /*oLora=*/1024, /*oGroups=*/8, /*window=*/128};

TEST_F(DifferentialTest, TinyCrossesWindowBoundary) {
  // Prefill 5 > W = 4 (slot 0 holds token 4), then decode at 5..12: the ring wraps twice more, and decode indices go
  // from "ring still filling" to full rotation.
  runDifferential(kTiny, sequence(5, 12), 1, /*parallel=*/false);
}

TEST_F(DifferentialTest, TinyFillPhaseThenWrap) {
  // Prefill 2 < W: the decode steps at 2 and 3 read -1 for the slots not yet written, then 4..9 wrap.
  runDifferential(kTiny, sequence(2, 9), 2, /*parallel=*/false);
}

TEST_F(DifferentialTest, TinyCrossesWindowBoundaryOpenMP) {
  if (!haveOpenMP())
    GTEST_SKIP() << "no OpenMP runtime (libomp) for parallel=true";
  runDifferential(kTiny, sequence(5, 12), 3, /*parallel=*/true);
}

TEST_F(DifferentialTest, TailsPrefillLongerThanWindow) {
  runDifferential(kTails, sequence(21, 24), 4, /*parallel=*/false);
}

// Multi-token steps at start_pos > 0 run as one chunk: while the ring fills (5 at 3), s == W (16 at 8), after a
// decode a chunk longer than 2W crossing the wrap (37 at 25); every result and probe equal to the interpreter's.
const std::vector<Step> kChunks = {{0, 3}, {3, 5}, {8, 16}, {24, 1}, {25, 37}};

TEST_F(DifferentialTest, TailsChunksAtPositions) { runDifferential(kTails, kChunks, 6, /*parallel=*/false); }

TEST_F(DifferentialTest, TailsChunksAtPositionsOpenMP) {
  if (!haveOpenMP())
    GTEST_SKIP() << "no OpenMP runtime (libomp) for parallel=true";
  runDifferential(kTails, kChunks, 7, /*parallel=*/true);
}

// Steps of 64 tokens and more take the products' phase kernel (docs/cpu-backend.md "Phase kernel"): a prefill of 70
// (rows not a multiple of its 6), a chunk of 67 at 70 crossing the wrap, a decode (the blocks) and a chunk of 64;
// whole layers, every result and probe equal to the interpreter's, serial and OpenMP.
const std::vector<Step> kPhaseSteps = {{0, 70}, {70, 67}, {137, 1}, {138, 64}};

TEST_F(DifferentialTest, TailsStepsOfThePhaseKernel) {
  runDifferential(kTails, kPhaseSteps, 9, /*parallel=*/false);
}

TEST_F(DifferentialTest, TailsStepsOfThePhaseKernelOpenMP) {
  if (!haveOpenMP())
    GTEST_SKIP() << "no OpenMP runtime (libomp) for parallel=true";
  runDifferential(kTails, kPhaseSteps, 10, /*parallel=*/true);
}

TEST_F(DifferentialTest, FlashGeometryShortSequence) {
  runDifferential(kFlash, sequence(3, 4), 5, /*parallel=*/false);
}

TEST_F(DifferentialTest, FlashGeometryChunk) {
  // A chunk of 3 at 2 (the ring of 128 still filling) at V4.1-Flash's window-only geometry.
  runDifferential(kFlash, {{0, 2}, {2, 3}}, 8, /*parallel=*/false);
}

} // namespace
