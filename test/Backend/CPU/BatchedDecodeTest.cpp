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
#include "dsa/Runtime/Host/Batch.h"

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
#include <algorithm>
#include <cstring>
#include <limits>
#include <iostream>
#include <map>
#include <random>
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

// The runtime's Batch (runtime/host/include/dsa/Runtime/Host/Batch.h) over the JIT module's batched function:
// sequences prefilled through the batch-1 function (a runtime::Sequence) join at their positions, decode together,
// leave and continue batch-1; every out row and every ring bit-exact with the sequence's own batch-1 decode on the
// interpreter; the error paths leave the batch unchanged.
class BatchRuntimeTest : public BatchedDecodeTest {
protected:
  void SetUp() override {
    Random rng(11);
    weights = ::dsa::test::randomWindowWeights(rng, {g.dim, g.nHeads, g.headDim, g.qLora, g.oLora, g.oGroups});
    module = ModuleOp::create(UnknownLoc::get(&context));
    OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
    ASSERT_TRUE(succeeded(mlir::dsa::buildAttentionFunction(builder, module->getLoc(), layerConfig(g, "one"))));
    FailureOr<mlir::dsa::AttentionOperandTypes> types =
        mlir::dsa::batchedAttentionOperandTypes(module->getLoc(), layerConfig(g, "batched"), ShapedType::kDynamic);
    ASSERT_TRUE(succeeded(types)) << diagnostics;
    ASSERT_TRUE(succeeded(mlir::dsa::buildAttentionFunction(builder, module->getLoc(), layerConfig(g, "batched"),
                                                            *types)));
    decomposed = OwningOpRef<ModuleOp>(module->clone());
    PassManager pm(&context);
    pm.addPass(mlir::dsa::createDSADecomposeAttention());
    ASSERT_TRUE(succeeded(pm.run(*decomposed))) << diagnostics;
    ::dsa::Result<std::unique_ptr<cpu::CPUModule>> m = cpu::compileForCPU(*module, {});
    ASSERT_TRUE(m.ok()) << m.error();
    compiled = m.take();
    for (const char *name : {"one", "batched"}) {
      runtime::FunctionSignature sig = *compiled->signature(name);
      cpu::addStepRoles(*module, sig);
      signatures[name] = sig;
    }
  }

  runtime::Batch::ValueRunner runner(const std::string &name) {
    return [this, name](const std::vector<runtime::HostValue> &a, std::vector<runtime::NamedTensor> *) {
      return compiled->runValues(name, a);
    };
  }
  std::map<size_t, runtime::HostValue> fixedWeights() const {
    std::map<size_t, runtime::HostValue> fixed;
    for (size_t i = 0; i < weights.size(); ++i)
      fixed.emplace(3 + i, runtime::HostBuffer::fromTensor(weights[i]));
    return fixed;
  }
  /// The batch-1 decode on the interpreter: out, and `ring` advanced.
  Tensor oracle(const Tensor &x, int64_t startPos, Tensor &ring) {
    std::vector<Tensor> args = {x, Tensor::scalarI64(startPos), ring};
    args.insert(args.end(), weights.begin(), weights.end());
    FailureOr<std::vector<Tensor>> got =
        interp::interpretFunction(decomposed->lookupSymbol<func::FuncOp>("one"), args, nullptr);
    EXPECT_TRUE(succeeded(got)) << diagnostics;
    if (failed(got))
      return Tensor();
    ring = (*got)[1];
    return (*got)[0];
  }

  const Geometry g = kTiny;
  std::vector<Tensor> weights;
  OwningOpRef<ModuleOp> module, decomposed;
  std::unique_ptr<cpu::CPUModule> compiled;
  std::map<std::string, runtime::FunctionSignature> signatures;
};

TEST_F(BatchRuntimeTest, SequencesJoinDecodeTogetherLeaveAndContinueAlone) {
  ::dsa::Result<runtime::Batch> started = runtime::Batch::start(signatures["batched"], runner("batched"), fixedWeights());
  ASSERT_TRUE(started.ok()) << started.error();
  runtime::Batch batch = started.take();
  Random inputs(12);
  struct Seq {
    std::unique_ptr<runtime::Sequence> alone; // the runtime's batch-1 path (prefill, and after leaving)
    Tensor oracleRing;
    int64_t pos = 0;
    runtime::Batch::SequenceId id = -1;
  };
  std::vector<Seq> seqs(4);
  auto prefill = [&](Seq &s, int64_t tokens) {
    ::dsa::Result<runtime::Sequence> seq = runtime::Sequence::start(signatures["one"], runner("one"), fixedWeights());
    ASSERT_TRUE(seq.ok()) << seq.error();
    s.alone = std::make_unique<runtime::Sequence>(seq.take());
    s.oracleRing = Tensor(ElementType::BF16, {g.window, g.headDim});
    Tensor x = randomTensor(inputs, ElementType::BF16, {tokens, g.dim}, 1.0f);
    ::dsa::Result<std::vector<runtime::HostValue>> out = s.alone->runValues(x, 0);
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_TRUE(sameBits(out->front().toTensor(), oracle(x, 0, s.oracleRing)));
    s.pos = tokens;
    // Join with the ring the batch-1 sequence holds after its prefill.
    const runtime::HostValue *ring = s.alone->state(2);
    ASSERT_NE(ring, nullptr);
    ::dsa::Result<runtime::Batch::SequenceId> id = batch.join(*ring, s.pos);
    ASSERT_TRUE(id.ok()) << id.error();
    s.id = *id;
  };
  auto stepAll = [&]() {
    const std::vector<runtime::Batch::SequenceId> &ids = batch.members();
    const int64_t b = static_cast<int64_t>(ids.size());
    Tensor x = randomTensor(inputs, ElementType::BF16, {b, 1, g.dim}, 1.0f);
    ::dsa::Result<runtime::HostValue> out = batch.step(x);
    ASSERT_TRUE(out.ok()) << out.error();
    Tensor outT = out->toTensor();
    ASSERT_EQ(outT.shape(), (std::vector<int64_t>{b, 1, g.dim}));
    for (int64_t r = 0; r < b; ++r) {
      Seq &s = *std::find_if(seqs.begin(), seqs.end(), [&](const Seq &q) { return q.id == ids[r]; });
      SCOPED_TRACE("member " + std::to_string(s.id) + " at position " + std::to_string(s.pos));
      Tensor want = oracle(row(x, r, {1, g.dim}), s.pos, s.oracleRing);
      EXPECT_TRUE(sameBits(row(outT, r, {1, g.dim}), want)) << "out row";
      ++s.pos;
      EXPECT_EQ(batch.position(s.id), s.pos);
      ::dsa::Result<runtime::HostValue> ring = batch.ring(s.id);
      ASSERT_TRUE(ring.ok());
      EXPECT_TRUE(sameBits(ring->toTensor(), s.oracleRing)) << "ring";
    }
  };
  prefill(seqs[0], 3);
  prefill(seqs[1], 6); // wrapped ring (W = 4)
  stepAll();
  stepAll();
  prefill(seqs[2], 1); // joins a running batch
  stepAll();
  // Leave: continue alone on a batch-1 Sequence resumed from the batch's ring.
  ::dsa::Result<runtime::Batch::Member> left = batch.leave(seqs[0].id);
  ASSERT_TRUE(left.ok()) << left.error();
  EXPECT_EQ(left->position, seqs[0].pos);
  EXPECT_EQ(batch.members(), (std::vector<runtime::Batch::SequenceId>{seqs[1].id, seqs[2].id}));
  {
    std::vector<runtime::HostValue> args = {Tensor(ElementType::BF16, {1, g.dim}), Tensor::scalarI64(0), left->ring()};
    for (const Tensor &w : weights)
      args.push_back(runtime::HostBuffer::fromTensor(w));
    ::dsa::Result<runtime::Sequence> resumed =
        runtime::Sequence::create(signatures["one"], runner("one"), args, left->position);
    ASSERT_TRUE(resumed.ok()) << resumed.error();
    Tensor x = randomTensor(inputs, ElementType::BF16, {1, g.dim}, 1.0f);
    ::dsa::Result<std::vector<Tensor>> out = resumed->run(x, seqs[0].pos);
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_TRUE(sameBits(out->front(), oracle(x, seqs[0].pos, seqs[0].oracleRing))) << "after leaving";
  }
  stepAll();
  prefill(seqs[3], 9);
  stepAll();
  stepAll();
}

// Many steps of random membership: each step, a new sequence may join (after a batch-1 prefill of 1 .. 10 tokens)
// and a member may leave; every member's row and ring after every batched step is compared with that sequence's own
// batch-1 Sequence on the same JIT module (itself bit-exact with the interpreter: CPUDifferentialTest), which is
// stepped with the same token. 300 steps, up to 8 members, the ring (W = 4) wrapping many times.
TEST_F(BatchRuntimeTest, RandomJoinsAndLeavesOverManySteps) {
  runtime::Batch batch = runtime::Batch::start(signatures["batched"], runner("batched"), fixedWeights()).take();
  Random inputs(21);
  std::mt19937_64 coin(22);
  struct Alone {
    std::unique_ptr<runtime::Sequence> seq;
    runtime::Batch::SequenceId id;
  };
  std::vector<Alone> members;
  int64_t joins = 0, leaves = 0, rows = 0;
  size_t largest = 0;
  for (int step = 0; step < 300; ++step) {
    if (members.size() < 8 && (members.empty() || coin() % 3 == 0)) {
      ::dsa::Result<runtime::Sequence> seq =
          runtime::Sequence::start(signatures["one"], runner("one"), fixedWeights());
      ASSERT_TRUE(seq.ok()) << seq.error();
      auto alone = std::make_unique<runtime::Sequence>(seq.take());
      const int64_t tokens = 1 + static_cast<int64_t>(coin() % 10);
      ASSERT_TRUE(alone->runValues(randomTensor(inputs, ElementType::BF16, {tokens, g.dim}, 1.0f), 0).ok());
      ::dsa::Result<runtime::Batch::SequenceId> id = batch.join(*alone->state(2), alone->position());
      ASSERT_TRUE(id.ok()) << id.error();
      members.push_back({std::move(alone), *id});
      ++joins;
    }
    if (members.size() > 1 && coin() % 4 == 0) {
      const size_t which = static_cast<size_t>(coin() % members.size());
      ::dsa::Result<runtime::Batch::Member> left = batch.leave(members[which].id);
      ASSERT_TRUE(left.ok()) << left.error();
      EXPECT_EQ(left->position, members[which].seq->position());
      EXPECT_TRUE(sameBits(left->ring().toTensor(), members[which].seq->state(2)->toTensor())) << "ring on leaving";
      members.erase(members.begin() + static_cast<std::ptrdiff_t>(which));
      ++leaves;
    }
    ASSERT_EQ(batch.members().size(), members.size());
    largest = std::max(largest, members.size());
    const int64_t b = static_cast<int64_t>(members.size());
    Tensor x = randomTensor(inputs, ElementType::BF16, {b, 1, g.dim}, 1.0f);
    ::dsa::Result<runtime::HostValue> out = batch.step(x);
    ASSERT_TRUE(out.ok()) << out.error();
    Tensor got = out->toTensor();
    for (int64_t r = 0; r < b; ++r) {
      Alone &m = members[static_cast<size_t>(r)];
      ASSERT_EQ(batch.members()[static_cast<size_t>(r)], m.id);
      SCOPED_TRACE("step " + std::to_string(step) + ", member " + std::to_string(m.id) + " at position " +
                   std::to_string(m.seq->position()));
      ::dsa::Result<std::vector<runtime::HostValue>> want = m.seq->runValues(row(x, r, {1, g.dim}), m.seq->position());
      ASSERT_TRUE(want.ok()) << want.error();
      ASSERT_TRUE(sameBits(row(got, r, {1, g.dim}), want->front().toTensor())) << "out row";
      ASSERT_TRUE(sameBits(batch.ring(m.id)->toTensor(), m.seq->state(2)->toTensor())) << "ring";
      ASSERT_EQ(batch.position(m.id), m.seq->position());
      ++rows;
    }
  }
  EXPECT_GT(joins, 50);
  EXPECT_GT(leaves, 30);
  EXPECT_GE(largest, 6u);
  std::cout << "[ info ] " << rows << " rows checked over 300 steps, " << joins << " joins, " << leaves
            << " leaves, up to " << largest << " members\n";
}

TEST_F(BatchRuntimeTest, ErrorsNameTheFieldAndLeaveTheBatchUnchanged) {
  // Not a batched function; weights missing; a role given.
  ::dsa::Result<runtime::Batch> notBatched = runtime::Batch::start(signatures["one"], runner("one"), fixedWeights());
  ASSERT_FALSE(notBatched.ok());
  EXPECT_NE(notBatched.error().find("start_pos: argument #1 (i64) is not a tensor<B x i64>"), std::string::npos)
      << notBatched.error();
  std::map<size_t, runtime::HostValue> missing = fixedWeights();
  missing.erase(5);
  ::dsa::Result<runtime::Batch> noWeight = runtime::Batch::start(signatures["batched"], runner("batched"), missing);
  ASSERT_FALSE(noWeight.ok());
  EXPECT_NE(noWeight.error().find("argument #5 (tensor<16xbf16>) is missing"), std::string::npos) << noWeight.error();
  std::map<size_t, runtime::HostValue> withRing = fixedWeights();
  withRing.emplace(2, Tensor(ElementType::BF16, {1, g.window, g.headDim}));
  ::dsa::Result<runtime::Batch> ringGiven = runtime::Batch::start(signatures["batched"], runner("batched"), withRing);
  ASSERT_FALSE(ringGiven.ok());
  EXPECT_NE(ringGiven.error().find("is state, which the batch supplies: do not pass it"), std::string::npos) << ringGiven.error();
  // A batched function through Sequence: refused, pointing at Batch.
  ::dsa::Result<runtime::Sequence> seq =
      runtime::Sequence::start(signatures["batched"], runner("batched"), fixedWeights());
  ASSERT_FALSE(seq.ok());
  EXPECT_NE(seq.error().find("a batched step function (run it through runtime::Batch"), std::string::npos)
      << seq.error();

  runtime::Batch batch = runtime::Batch::start(signatures["batched"], runner("batched"), fixedWeights()).take();
  Random inputs(13);
  ::dsa::Result<runtime::HostValue> empty = batch.step(Tensor(ElementType::BF16, {0, 1, g.dim}));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().find("x: the batch has no members"), std::string::npos) << empty.error();
  Tensor ring0 = randomTensor(inputs, ElementType::BF16, {g.window, g.headDim}, 1.0f);
  ::dsa::Result<runtime::Batch::SequenceId> badRing = batch.join(Tensor(ElementType::BF16, {g.window, 8}), 5);
  ASSERT_FALSE(badRing.ok());
  EXPECT_NE(badRing.error().find("ring: bf16 [4, 8], expected bf16 [4, 32] (window_size, head_dim)"),
            std::string::npos)
      << badRing.error();
  ::dsa::Result<runtime::Batch::SequenceId> badPos = batch.join(ring0, -1);
  ASSERT_FALSE(badPos.ok());
  EXPECT_NE(badPos.error().find("position: -1 is negative"), std::string::npos) << badPos.error();
  EXPECT_TRUE(batch.members().empty());
  runtime::Batch::SequenceId a = batch.join(ring0, 7).take();
  runtime::Batch::SequenceId b = batch.join(ring0, 2).take();
  ::dsa::Result<runtime::Batch::Member> notMember = batch.leave(a + b + 10);
  ASSERT_FALSE(notMember.ok());
  EXPECT_NE(notMember.error().find("sequence " + std::to_string(a + b + 10) + ": not a member"), std::string::npos);
  // Wrong row count, wrong type: nothing advances.
  for (const Tensor &x : {Tensor(ElementType::BF16, {3, 1, g.dim}), Tensor(ElementType::F32, {2, 1, g.dim}),
                          Tensor(ElementType::BF16, {2, 2, g.dim})}) {
    ::dsa::Result<runtime::HostValue> bad = batch.step(x);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().find("batch @batched: x: "), 0u) << bad.error();
  }
  EXPECT_EQ(batch.position(a), 7);
  EXPECT_EQ(batch.position(b), 2);
  EXPECT_TRUE(sameBits(batch.ring(a)->toTensor(), ring0));
  // A member at INT64_MAX: the step is refused before the call, nobody advances.
  runtime::Batch::SequenceId c = batch.join(ring0, std::numeric_limits<int64_t>::max()).take();
  ::dsa::Result<runtime::HostValue> overflow = batch.step(Tensor(ElementType::BF16, {3, 1, g.dim}));
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.error().find("start_pos: sequence " + std::to_string(c)), std::string::npos) << overflow.error();
  EXPECT_EQ(batch.position(a), 7);
  ASSERT_TRUE(batch.leave(c).ok());
  // And after all that, a step is still its members' batch-1 steps.
  Tensor x = randomTensor(inputs, ElementType::BF16, {2, 1, g.dim}, 1.0f);
  ::dsa::Result<runtime::HostValue> out = batch.step(x);
  ASSERT_TRUE(out.ok()) << out.error();
  Tensor ringA = ring0, ringB = ring0;
  EXPECT_TRUE(sameBits(row(out->toTensor(), 0, {1, g.dim}), oracle(row(x, 0, {1, g.dim}), 7, ringA)));
  EXPECT_TRUE(sameBits(row(out->toTensor(), 1, {1, g.dim}), oracle(row(x, 1, {1, g.dim}), 2, ringB)));
  EXPECT_TRUE(sameBits(batch.ring(a)->toTensor(), ringA));
  EXPECT_TRUE(sameBits(batch.ring(b)->toTensor(), ringB));
}

} // namespace
