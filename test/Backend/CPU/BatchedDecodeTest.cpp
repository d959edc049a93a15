//===- BatchedDecodeTest.cpp - a batched decode step against its sequences' batch-1 steps ---===//
//
// Issue 13 scope 1 (attention-semantics.md section 13: "each row equals its own batch-1 run"). One window-only
// layer is built twice with mlir::dsa::buildAttentionFunction: as the batch-1 function (x [s, dim], start_pos i64,
// ring [W, hd]) and as the batched decode step (x [B, 1, dim], start_pos tensor<B x i64>, ring [B, W, hd];
// DSAOps.td). Several sequences, each with its own history (a prefill of its own length, then decode steps), are
// advanced together: every batched step serves the sequences that are active at that step, at their own
// positions (some still filling the ring, some wrapped), and sequences join (after their prefill) and leave between
// steps, so the batch's size and order change.
//
// The oracle is each sequence's own batch-1 decode step on the INTERPRETER (the reference implementation of the
// math), with that sequence's ring threaded step to step. Checked bit for bit (NaN = NaN) at every step, for every
// sequence: out row b and ring b of
//   - the batched step on the interpreter (the batched decomposition: row-wise ops over B rows, an scf.for over the
//     sequences), and
//   - the batched step compiled by the CPU backend (JIT; serial and OpenMP).
// Nothing here is produced by the code under test: the expected rows are separate batch-1 runs.
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

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace mlir;
namespace interp = ::dsa::interp;
namespace cpu = ::dsa::cpu;
namespace runtime = ::dsa::runtime;
using ::dsa::ElementType;
using ::dsa::Tensor;
using ::dsa::test::Random;
using ::dsa::test::randomTensor;
using ::dsa::test::sameBits;

namespace {

struct Geometry {
  const char *name;
  int64_t dim, nHeads, headDim, ropeDim, qLora, oLora, oGroups, window;
};

mlir::dsa::AttentionLayerConfig layerConfig(const Geometry &g, const std::string &name) {
  mlir::dsa::AttentionLayerConfig c;
  c.name = name;
  c.layerId = 3;
  c.dim = g.dim;
  c.nHeads = g.nHeads;
  c.headDim = g.headDim;
  c.ropeHeadDim = g.ropeDim;
  c.qLoraRank = g.qLora;
  c.oGroups = g.oGroups;
  c.oLoraRank = g.oLora;
  c.windowSize = g.window;
  c.normEps = 1e-20;
  c.ropeTheta = 1e4;
  return c;
}

/// Rows [b, b + 1) of a row-major tensor whose leading dimension is the batch, as a tensor of `shape`.
Tensor row(const Tensor &t, int64_t b, std::vector<int64_t> shape) {
  Tensor r(t.elementType(), shape);
  const int64_t n = r.numElements();
  for (int64_t i = 0; i < n; ++i)
    r.floats()[i] = t.floats()[b * n + i];
  return r;
}

/// `rows` stacked along a new leading dimension.
Tensor stack(const std::vector<Tensor> &rows, std::vector<int64_t> rowShape) {
  std::vector<int64_t> shape{static_cast<int64_t>(rows.size())};
  shape.insert(shape.end(), rowShape.begin(), rowShape.end());
  Tensor t(rows.front().elementType(), shape);
  const int64_t n = rows.front().numElements();
  for (size_t b = 0; b < rows.size(); ++b)
    for (int64_t i = 0; i < n; ++i)
      t.floats()[b * n + i] = rows[b].floats()[i];
  return t;
}

/// One sequence: when it joins (the batched step index at which it first decodes; its prefill runs just before),
/// its prefill length, when it leaves (the first batched step it is no longer in).
struct SequencePlan {
  int64_t joinStep, prefill, leaveStep;
};

class BatchedDecodeTest : public ::testing::Test {
protected:
  BatchedDecodeTest() {
    context.loadDialect<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, tensor::TensorDialect,
                        scf::SCFDialect>();
    context.printOpOnDiagnostic(false);
    handler = std::make_unique<ScopedDiagnosticHandler>(&context, [this](Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return success();
    });
  }

  void run(const Geometry &g, const std::vector<SequencePlan> &plans, int64_t steps, uint64_t seed, bool parallel,
           bool interpretBatched = true) {
    Random rng(seed);
    std::vector<Tensor> weights =
        ::dsa::test::randomWindowWeights(rng, {g.dim, g.nHeads, g.headDim, g.qLora, g.oLora, g.oGroups});
    OwningOpRef<ModuleOp> m = ModuleOp::create(UnknownLoc::get(&context));
    OpBuilder builder = OpBuilder::atBlockEnd(m->getBody());
    ASSERT_TRUE(succeeded(mlir::dsa::buildAttentionFunction(builder, m->getLoc(), layerConfig(g, "one"))))
        << diagnostics;
    FailureOr<mlir::dsa::AttentionOperandTypes> batchedTypes =
        mlir::dsa::batchedAttentionOperandTypes(m->getLoc(), layerConfig(g, "batched"), ShapedType::kDynamic);
    ASSERT_TRUE(succeeded(batchedTypes)) << diagnostics;
    ASSERT_TRUE(succeeded(
        mlir::dsa::buildAttentionFunction(builder, m->getLoc(), layerConfig(g, "batched"), *batchedTypes)))
        << diagnostics;

    OwningOpRef<ModuleOp> decomposed(m->clone());
    PassManager pm(&context);
    pm.addPass(mlir::dsa::createDSADecomposeAttention());
    ASSERT_TRUE(succeeded(pm.run(*decomposed))) << diagnostics;
    auto one = decomposed->lookupSymbol<func::FuncOp>("one");
    auto batched = decomposed->lookupSymbol<func::FuncOp>("batched");
    ASSERT_TRUE(one && batched);

    cpu::CPUCompileOptions options;
    options.parallel = parallel;
    ::dsa::Result<std::unique_ptr<cpu::CPUModule>> compiled = cpu::compileForCPU(*m, options);
    ASSERT_TRUE(compiled.ok()) << compiled.error();
    std::vector<runtime::HostValue> prepared;
    for (const Tensor &w : weights)
      prepared.push_back(runtime::HostBuffer::fromTensor(w));

    // Each sequence's state on each side: its position and three rings (the batch-1 oracle's, the batched
    // interpreter's, the CPU backend's), all threaded separately.
    struct State {
      int64_t pos = 0;
      Tensor oracle, interp, cpu;
    };
    std::map<size_t, State> active;
    Random inputs(seed ^ 0x7171717171717171ull);
    auto runOne = [&](Tensor x, int64_t startPos, Tensor &ring) -> Tensor {
      std::vector<Tensor> args = {x, Tensor::scalarI64(startPos), ring};
      args.insert(args.end(), weights.begin(), weights.end());
      FailureOr<std::vector<Tensor>> got = interp::interpretFunction(one, args, nullptr);
      EXPECT_TRUE(succeeded(got)) << diagnostics;
      if (failed(got))
        return Tensor();
      ring = (*got)[1];
      return (*got)[0];
    };

    size_t rowsChecked = 0;
    for (int64_t step = 0; step < steps; ++step) {
      for (size_t id = 0; id < plans.size(); ++id) {
        if (plans[id].leaveStep == step)
          active.erase(id);
        if (plans[id].joinStep == step) {
          // The sequence's prefill (batch 1, at start_pos 0); every side starts its ring from the result.
          State s;
          s.oracle = Tensor(ElementType::BF16, {g.window, g.headDim});
          Tensor x = randomTensor(inputs, ElementType::BF16, {plans[id].prefill, g.dim}, 1.0f);
          (void)runOne(x, 0, s.oracle);
          s.interp = s.cpu = s.oracle;
          s.pos = plans[id].prefill;
          active.emplace(id, s);
        }
      }
      if (active.empty())
        continue;
      // This step's batch: the active sequences in id order, one token each at its own position.
      std::vector<size_t> ids;
      std::vector<Tensor> xs, rings, cpuRings;
      std::vector<int64_t> positions;
      for (auto &[id, s] : active) {
        ids.push_back(id);
        xs.push_back(randomTensor(inputs, ElementType::BF16, {1, g.dim}, 1.0f));
        positions.push_back(s.pos);
        rings.push_back(s.interp);
        cpuRings.push_back(s.cpu);
      }
      const int64_t batch = static_cast<int64_t>(ids.size());
      SCOPED_TRACE(std::string(g.name) + ", batched step " + std::to_string(step) + " of " + std::to_string(batch) +
                   " sequence(s)");
      Tensor x = stack(xs, {1, g.dim});
      Tensor startPos(ElementType::I64, {batch});
      for (int64_t b = 0; b < batch; ++b)
        startPos.ints()[b] = positions[b];

      std::vector<Tensor> interpOut;
      if (interpretBatched) {
        std::vector<Tensor> args = {x, startPos, stack(rings, {g.window, g.headDim})};
        args.insert(args.end(), weights.begin(), weights.end());
        FailureOr<std::vector<Tensor>> got = interp::interpretFunction(batched, args, nullptr);
        ASSERT_TRUE(succeeded(got)) << diagnostics;
        interpOut = *got;
        ASSERT_EQ(interpOut.size(), 2u);
        ASSERT_EQ(interpOut[0].shape(), (std::vector<int64_t>{batch, 1, g.dim}));
        ASSERT_EQ(interpOut[1].shape(), (std::vector<int64_t>{batch, g.window, g.headDim}));
      }
      std::vector<runtime::HostValue> cpuArgs = {x, startPos, stack(cpuRings, {g.window, g.headDim})};
      cpuArgs.insert(cpuArgs.end(), prepared.begin(), prepared.end());
      ::dsa::Result<std::vector<Tensor>> got = (*compiled)->run("batched", cpuArgs);
      ASSERT_TRUE(got.ok()) << got.error();
      ASSERT_EQ(got->size(), 2u);
      ASSERT_EQ((*got)[0].shape(), (std::vector<int64_t>{batch, 1, g.dim}));

      for (int64_t b = 0; b < batch; ++b) {
        State &s = active.at(ids[b]);
        SCOPED_TRACE("sequence " + std::to_string(ids[b]) + " at start_pos " + std::to_string(s.pos));
        Tensor want = runOne(row(x, b, {1, g.dim}), s.pos, s.oracle);
        ASSERT_EQ(want.shape(), (std::vector<int64_t>{1, g.dim}));
        if (interpretBatched) {
          EXPECT_TRUE(sameBits(row(interpOut[0], b, {1, g.dim}), want)) << "interpreter, batched: out row";
          s.interp = row(interpOut[1], b, {g.window, g.headDim});
          EXPECT_TRUE(sameBits(s.interp, s.oracle)) << "interpreter, batched: ring";
        } else {
          s.interp = s.oracle;
        }
        EXPECT_TRUE(sameBits(row((*got)[0], b, {1, g.dim}), want)) << "cpu, batched: out row";
        s.cpu = row((*got)[1], b, {g.window, g.headDim});
        EXPECT_TRUE(sameBits(s.cpu, s.oracle)) << "cpu, batched: ring";
        ++s.pos;
        ++rowsChecked;
      }
    }
    EXPECT_GT(rowsChecked, 0u);
  }

  MLIRContext context;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::string diagnostics;
};

const Geometry kTiny = {"tiny", 64, 4, 32, 8, 16, 16, 2, 4};
// K % 8 tails in every product.
const Geometry kTails = {"tails", 100, 6, 64, 16, 20, 13, 3, 16};
// DeepSeek-V4.1-Flash's window-only layer (attention-semantics.md section 1).
const Geometry kFlash = {"V4.1-Flash", 5120, 64, 512, 64, 1280, 1024, 8, 128};

// Five sequences: different prefill lengths (inside and beyond W = 4), joining at steps 0, 0, 2, 3, 5 and leaving
// at 4 and 7: the batch goes 2, 2, 3, 4, 3, 4, 4, 3, 3 sequences; positions cross the window boundary (fill phase
// and wrapped rings side by side in one batch).
const std::vector<SequencePlan> kJoinLeave = {
    {0, 1, 100}, {0, 6, 4}, {2, 3, 100}, {3, 9, 7}, {5, 2, 100}};

TEST_F(BatchedDecodeTest, TinySequencesJoinAndLeave) { run(kTiny, kJoinLeave, 9, 1, /*parallel=*/false); }

TEST_F(BatchedDecodeTest, TinySequencesJoinAndLeaveOpenMP) {
  if (!::dsa::test::haveOpenMP())
    GTEST_SKIP() << "libomp not found";
  run(kTiny, kJoinLeave, 9, 2, /*parallel=*/true);
}

TEST_F(BatchedDecodeTest, TailsSequencesJoinAndLeave) {
  run(kTails, {{0, 20, 100}, {0, 3, 100}, {1, 16, 3}, {2, 1, 100}}, 5, 3, /*parallel=*/false);
}

TEST_F(BatchedDecodeTest, SingleSequenceBatchEqualsBatchOne) { run(kTails, {{0, 17, 100}}, 3, 4, false); }

// Flash geometry: three sequences, one step each side of the ring's wrap (positions 127 and 128) and one early;
// the batched interpreter is skipped here (the oracle's batch-1 interpreter runs already dominate the time).
TEST_F(BatchedDecodeTest, FlashGeometryThreeSequences) {
  run(kFlash, {{0, 127, 100}, {0, 3, 100}, {0, 1, 100}}, 2, 5, /*parallel=*/false, /*interpretBatched=*/false);
}

} // namespace
