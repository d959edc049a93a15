//===- BatchedCompressedTest.cpp - batched decode of a stack of compressed layers vs batch-1 steps ---------===//
//
// Issue 13 scope 1 for compressed layers (attention-semantics.md section 13: "each row equals its own batch-1 run").
// A stack with the golden's roles at the tiny geometry (dim 64, 4 heads of 32, window 8, max_seq_len 32):
//   A  ratio 2, kv + index source (index_k published_slot: the section-8 quirk; or own_cache),
//   B  ratio 2, reads A's compress_kv and topk_idxs,
//   C  ratio 1, kv + index + candidate source,
//   D  ratio 1, index source using C's candidates,
// each layer built twice with mlir::dsa::buildAttentionFunction: the batch-1 function and the batched decode step
// (x [B, 1, dim], start_pos tensor<B x i64>, ring and state [B, ...], slots [B, ...]; DSAOps.td). Sequences with
// prefills of their own lengths join and leave between steps; every batched step runs the active sequences, each
// at its own position, through the four layers (each layer's output the next layer's input), the slots passed from
// layer to layer and step to step as the batched code returns them (re-stacked when the membership changes).
//
// The oracle is each sequence's own batch-1 steps on the INTERPRETER, its state and slots threaded through the
// stack. Checked bit for bit at every step, for every sequence and layer: out row b, every state row b, and row b
// of each slot: the batch-1 slot followed by the padding the batched form specifies (compress_kv / index_k: rows past
// the sequence's slot are not compared, they are never read; topk_idxs: -1; candidates: false), on
//   - the batched step on the interpreter (the batched decomposition), and
//   - the batched step compiled by the CPU backend (JIT).
// Nothing here is produced by the code under test: the expected rows are separate batch-1 runs.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "BitExact.h"
#include "CPUTestSupport.h"
#include "RandomLayer.h"
#include "dsa/Backend/CPU/CPUModule.h"
#include "dsa/Runtime/Host/Batch.h"

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

#include <algorithm>
#include <cstdint>
#include <limits>
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

constexpr int64_t kDim = 64, kHeadDim = 32, kWindow = 8, kMaxSeqLen = 32;

/// A layer of the stack: ratio and role.
struct Role {
  const char *name;
  int64_t ratio;
  bool kvSource, indexSource, candidateSource, usesCandidates;
};

mlir::dsa::AttentionLayerConfig layerConfig(const Role &role, int64_t layerId, mlir::dsa::IndexKSource indexKSource,
                                            const std::string &name) {
  mlir::dsa::AttentionLayerConfig c;
  c.name = name;
  c.layerId = layerId;
  c.dim = kDim;
  c.nHeads = 4;
  c.headDim = kHeadDim;
  c.ropeHeadDim = 8;
  c.qLoraRank = 16;
  c.oGroups = 2;
  c.oLoraRank = 16;
  c.windowSize = kWindow;
  c.compressRatio = role.ratio;
  c.normEps = 1e-20;
  c.ropeTheta = 40000.0;
  c.yarn = mlir::dsa::AttentionYarn{32, 2.0, 32.0, 1.0};
  mlir::dsa::AttentionCompress cc;
  cc.isKvSource = role.kvSource;
  cc.isIndexSource = role.indexSource;
  cc.isCandidateSource = role.candidateSource;
  cc.usesCandidates = role.usesCandidates;
  cc.indexNHeads = 2;
  cc.indexHeadDim = 32;
  cc.indexTopk = 6;
  cc.candidateTopkBlocks = 3;
  cc.candidateBlockSize = 2;
  cc.maxSeqLen = kMaxSeqLen;
  cc.indexKSource = role.kvSource ? indexKSource : mlir::dsa::IndexKSource::published_slot;
  c.compress = cc;
  return c;
}

/// A random weight of the static tensor type `t` (bf16 or f32; norms around 1).
Tensor randomWeight(Random &rng, Type t) {
  auto rt = cast<RankedTensorType>(t);
  std::vector<int64_t> shape(rt.getShape().begin(), rt.getShape().end());
  ElementType type = rt.getElementType().isBF16() ? ElementType::BF16 : ElementType::F32;
  if (shape.size() == 1)
    return randomTensor(rng, type, shape, 0.1f, type == ElementType::F32 ? 0.0f : 1.0f);
  return randomTensor(rng, type, shape, ::dsa::test::fanIn(shape[1]));
}

/// Element i of `t` as a double (float and integer tensors alike).
double at(const Tensor &t, int64_t i) {
  return t.isFloat() ? static_cast<double>(t.floats()[i]) : static_cast<double>(t.ints()[i]);
}

/// `rows` (each of rank r) stacked along a new leading dimension, each padded at the end of every dimension to
/// `shape` with `fill`.
Tensor padStack(const std::vector<Tensor> &rows, const std::vector<int64_t> &shape, double fill) {
  std::vector<int64_t> full{static_cast<int64_t>(rows.size())};
  full.insert(full.end(), shape.begin(), shape.end());
  Tensor out(rows.front().elementType(), full);
  int64_t per = 1;
  for (int64_t d : shape)
    per *= d;
  for (size_t b = 0; b < rows.size(); ++b) {
    const Tensor &r = rows[b];
    for (int64_t i = 0; i < per; ++i) {
      // The coordinates of i in `shape`; inside r's shape: r's element, else the fill.
      int64_t rest = i, src = 0, stride = 1;
      bool inside = true;
      std::vector<int64_t> coord(shape.size());
      for (size_t d = shape.size(); d-- > 0;) {
        coord[d] = rest % shape[d];
        rest /= shape[d];
      }
      for (size_t d = shape.size(); d-- > 0;) {
        if (coord[d] >= r.dim(static_cast<int64_t>(d)))
          inside = false;
        src += coord[d] * stride;
        stride *= r.dim(static_cast<int64_t>(d));
      }
      const double v = inside ? at(r, src) : fill;
      const int64_t dst = static_cast<int64_t>(b) * per + i;
      if (out.isFloat())
        out.floats()[dst] = static_cast<float>(v);
      else
        out.ints()[dst] = static_cast<int64_t>(v);
    }
  }
  return out;
}

/// Row b of a batched tensor, cut to `shape` (a prefix of each trailing dimension).
Tensor rowOf(const Tensor &t, int64_t b, const std::vector<int64_t> &shape) {
  Tensor out(t.elementType(), shape);
  std::vector<int64_t> full(t.shape().begin() + 1, t.shape().end());
  int64_t per = 1;
  for (int64_t d : full)
    per *= d;
  for (int64_t i = 0; i < out.numElements(); ++i) {
    int64_t rest = i, src = 0, stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      src += (rest % shape[d]) * stride;
      rest /= shape[d];
      stride *= full[d];
    }
    if (out.isFloat())
      out.floats()[i] = t.floats()[b * per + src];
    else
      out.ints()[i] = t.ints()[b * per + src];
  }
  return out;
}

/// The last row of a rank-2 tensor, as [1, width].
Tensor lastRow(const Tensor &t) {
  Tensor out(t.elementType(), {1, t.dim(1)});
  const int64_t base = (t.dim(0) - 1) * t.dim(1);
  for (int64_t i = 0; i < t.dim(1); ++i) {
    if (out.isFloat())
      out.floats()[i] = t.floats()[base + i];
    else
      out.ints()[i] = t.ints()[base + i];
  }
  return out;
}

/// Whether every element of row b of `t` outside the prefix `shape` equals `fill`.
bool paddedWith(const Tensor &t, int64_t b, const std::vector<int64_t> &shape, double fill) {
  std::vector<int64_t> full(t.shape().begin() + 1, t.shape().end());
  int64_t per = 1;
  for (int64_t d : full)
    per *= d;
  for (int64_t i = 0; i < per; ++i) {
    int64_t rest = i;
    bool inside = true;
    for (size_t d = full.size(); d-- > 0;) {
      if (rest % full[d] >= shape[d])
        inside = false;
      rest /= full[d];
    }
    if (!inside && at(t, b * per + i) != fill)
      return false;
  }
  return true;
}

/// One sequence: the batched step at which it first decodes (its prefill runs just before), its prefill length,
/// the first batched step it is no longer in.
struct SequencePlan {
  int64_t joinStep, prefill, leaveStep;
};

class BatchedCompressedTest : public ::testing::Test {
protected:
  BatchedCompressedTest() {
    context.loadDialect<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, tensor::TensorDialect,
                        scf::SCFDialect>();
    context.printOpOnDiagnostic(false);
    handler = std::make_unique<ScopedDiagnosticHandler>(&context, [this](Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return success();
    });
  }

  void run(mlir::dsa::IndexKSource indexKSource, const std::vector<SequencePlan> &plans, int64_t steps,
           uint64_t seed, bool parallel) {
    const std::vector<Role> roles = {{"A", 2, true, true, false, false},
                                     {"B", 2, false, false, false, false},
                                     {"C", 1, true, true, true, false},
                                     {"D", 1, false, true, false, true}};
    const size_t numLayers = roles.size();
    OwningOpRef<ModuleOp> m = ModuleOp::create(UnknownLoc::get(&context));
    OpBuilder builder = OpBuilder::atBlockEnd(m->getBody());
    Random rng(seed);
    // Per layer: its weights (every group before state, in argument order) and its initial state.
    std::vector<std::vector<Tensor>> weights(numLayers), initialState(numLayers);
    std::vector<Tensor> initialSlots;
    for (size_t l = 0; l < numLayers; ++l) {
      const std::string one = std::string("one_") + roles[l].name, batched = std::string("batched_") + roles[l].name;
      mlir::dsa::AttentionLayerConfig config = layerConfig(roles[l], static_cast<int64_t>(l), indexKSource, one);
      FailureOr<mlir::dsa::AttentionOperandTypes> types = mlir::dsa::canonicalAttentionOperandTypes(m->getLoc(), config);
      ASSERT_TRUE(succeeded(types)) << diagnostics;
      ASSERT_TRUE(succeeded(mlir::dsa::buildAttentionFunction(builder, m->getLoc(), config, *types))) << diagnostics;
      config.name = batched;
      FailureOr<mlir::dsa::AttentionOperandTypes> batchedTypes =
          mlir::dsa::batchedAttentionOperandTypes(m->getLoc(), config, ShapedType::kDynamic);
      ASSERT_TRUE(succeeded(batchedTypes)) << diagnostics;
      ASSERT_TRUE(succeeded(mlir::dsa::buildAttentionFunction(builder, m->getLoc(), config, *batchedTypes)))
          << diagnostics;
      for (const auto *group : {&types->weights, &types->compressor, &types->indexKeys, &types->indexer})
        for (Type t : *group)
          weights[l].push_back(randomWeight(rng, t));
      // The state starts at zero, a ratio >= 2 compressor's score_state at -inf (section 5).
      for (auto [i, t] : llvm::enumerate(types->state)) {
        auto rt = cast<RankedTensorType>(t);
        std::vector<int64_t> shape(rt.getShape().begin(), rt.getShape().end());
        Tensor s(rt.getElementType().isF32() ? ElementType::F32 : ElementType::BF16, shape);
        if (roles[l].ratio >= 2 && i == 1)
          std::fill(s.floats(), s.floats() + s.numElements(), -std::numeric_limits<float>::infinity());
        initialState[l].push_back(s);
      }
    }
    initialSlots = {Tensor(ElementType::BF16, {0, kHeadDim}), Tensor(ElementType::BF16, {0, 32}),
                    Tensor(ElementType::I32, {0, 0}), Tensor(ElementType::I1, {0, 0})};

    OwningOpRef<ModuleOp> decomposed(m->clone());
    PassManager pm(&context);
    pm.addPass(mlir::dsa::createDSADecomposeAttention());
    ASSERT_TRUE(succeeded(pm.run(*decomposed))) << diagnostics;
    cpu::CPUCompileOptions options;
    options.parallel = parallel;
    ::dsa::Result<std::unique_ptr<cpu::CPUModule>> compiled = cpu::compileForCPU(*m, options);
    ASSERT_TRUE(compiled.ok()) << compiled.error();

    // A sequence's layers: ring, state and the slots; the oracle's and each batched side's, threaded separately.
    struct Side {
      std::vector<Tensor> rings;              // per layer
      std::vector<std::vector<Tensor>> state; // per layer
      std::vector<Tensor> slots;              // batch-1 shapes (oracle) or padded rows (batched sides)
    };
    struct Sequence {
      int64_t pos = 0;
      Side oracle, interp, cpu;
      Tensor prefillX; // the prefill's tokens (the runtime side runs them through batch-1 runtime::Sequences)
    };
    // The batch-1 step of layer l on the interpreter: x [s, dim] at startPos; `side` updated; the output.
    auto runOne = [&](size_t l, const Tensor &x, int64_t startPos, Side &side) -> Tensor {
      auto f = decomposed->lookupSymbol<func::FuncOp>(std::string("one_") + roles[l].name);
      std::vector<Tensor> args = {x, Tensor::scalarI64(startPos), side.rings[l]};
      args.insert(args.end(), weights[l].begin(), weights[l].end());
      args.insert(args.end(), side.state[l].begin(), side.state[l].end());
      args.insert(args.end(), side.slots.begin(), side.slots.end());
      FailureOr<std::vector<Tensor>> got = interp::interpretFunction(f, args, nullptr);
      EXPECT_TRUE(succeeded(got)) << diagnostics;
      if (failed(got))
        return Tensor();
      side.rings[l] = (*got)[1];
      const size_t numState = side.state[l].size();
      for (size_t i = 0; i < numState; ++i)
        side.state[l][i] = (*got)[2 + i];
      for (size_t i = 0; i < 4; ++i)
        side.slots[i] = (*got)[2 + numState + i];
      return (*got)[0];
    };

    // The runtime side: one runtime::Batch per layer over the JIT's batched functions (resident state, caches in
    // place), sequences prefilled through batch-1 runtime::Sequences on the JIT, the batched slots built with
    // runtime::stackSlots / slotsOf whenever the membership changes.
    std::vector<runtime::FunctionSignature> oneSig(numLayers), batchedSig(numLayers);
    std::vector<runtime::Batch> batches;
    auto runnerOf = [&](const std::string &fn) -> runtime::Batch::ValueRunner {
      return [&, fn](const std::vector<runtime::HostValue> &a, std::vector<runtime::NamedTensor> *) {
        return (*compiled)->runValues(fn, a);
      };
    };
    auto fixedOf = [&](size_t l) {
      std::map<size_t, runtime::HostValue> fixed;
      for (size_t i = 0; i < weights[l].size(); ++i)
        fixed.emplace(3 + i, runtime::HostBuffer::fromTensor(weights[l][i]));
      return fixed;
    };
    for (size_t l = 0; l < numLayers; ++l) {
      const std::string one = std::string("one_") + roles[l].name, batched = std::string("batched_") + roles[l].name;
      oneSig[l] = *(*compiled)->signature(one);
      cpu::addStepRoles(*m, oneSig[l]);
      batchedSig[l] = *(*compiled)->signature(batched);
      cpu::addStepRoles(*m, batchedSig[l]);
      ::dsa::Result<runtime::Batch> b = runtime::Batch::start(batchedSig[l], runnerOf(batched), fixedOf(l));
      ASSERT_TRUE(b.ok()) << b.error();
      batches.push_back(b.take());
    }
    runtime::Sequence::SlotSet batchedSlots; // [B, ...] per slot, row b for members()[b]
    std::vector<size_t> members;             // the batches' members (the same on every layer), by plan id

    std::map<size_t, Sequence> active;
    Random inputs(seed ^ 0x5151515151515151ull);
    size_t rowsChecked = 0;
    for (int64_t step = 0; step < steps; ++step) {
      for (size_t id = 0; id < plans.size(); ++id) {
        if (plans[id].leaveStep == step)
          active.erase(id);
        if (plans[id].joinStep != step)
          continue;
        // The sequence's prefill through the stack (batch 1, at start_pos 0); every side starts from the result.
        Sequence s;
        s.oracle.rings.assign(numLayers, Tensor(ElementType::BF16, {kWindow, kHeadDim}));
        s.oracle.state = initialState;
        s.oracle.slots = initialSlots;
        Tensor h = randomTensor(inputs, ElementType::BF16, {plans[id].prefill, kDim}, 1.0f);
        s.prefillX = h;
        for (size_t l = 0; l < numLayers; ++l)
          h = runOne(l, h, 0, s.oracle);
        s.interp = s.cpu = s.oracle;
        s.pos = plans[id].prefill;
        active.emplace(id, s);
      }
      // The runtime side follows the membership: leavers leave every layer's batch (their state handed back as it
      // stood after their last step), joiners' prefills run through batch-1 runtime::Sequences on the JIT and they
      // join every layer's batch; the batched slots are rebuilt from the members' batch-1 slot sets.
      if (members.size() != active.size() ||
          !std::equal(members.begin(), members.end(), active.begin(), [](size_t id, const auto &entry) {
            return id == entry.first;
          })) {
        SCOPED_TRACE("runtime membership before step " + std::to_string(step));
        std::map<size_t, runtime::Sequence::SlotSet> slotSets; // by plan id
        for (size_t b = 0; b < members.size(); ++b) {
          ::dsa::Result<runtime::Sequence::SlotSet> row = runtime::slotsOf(batchedSlots, static_cast<int64_t>(b));
          ASSERT_TRUE(row.ok()) << row.error();
          slotSets.emplace(members[b], row.take());
        }
        for (size_t b = members.size(); b-- > 0;) {
          const size_t id = members[b];
          if (active.count(id))
            continue;
          for (size_t l = 0; l < numLayers; ++l) {
            ::dsa::Result<runtime::Batch::Member> left = batches[l].leave(static_cast<int64_t>(id));
            ASSERT_TRUE(left.ok()) << left.error();
            EXPECT_EQ(left->position, plans[id].prefill + (plans[id].leaveStep - plans[id].joinStep));
            EXPECT_EQ(left->state.size(), 1 + initialState[l].size());
          }
          slotSets.erase(id);
          members.erase(members.begin() + static_cast<std::ptrdiff_t>(b));
        }
        for (auto &[id, s] : active) {
          if (std::find(members.begin(), members.end(), id) != members.end())
            continue;
          ::dsa::Result<runtime::Sequence::SlotSet> slots = runtime::Sequence::initialSlots(oneSig[0]);
          ASSERT_TRUE(slots.ok()) << slots.error();
          Tensor h = s.prefillX;
          for (size_t l = 0; l < numLayers; ++l) {
            const std::string one = std::string("one_") + roles[l].name;
            ::dsa::Result<runtime::Sequence> seq = runtime::Sequence::start(oneSig[l], runnerOf(one), fixedOf(l));
            ASSERT_TRUE(seq.ok()) << seq.error();
            ::dsa::Result<std::vector<Tensor>> got = seq->run(h, 0, &*slots);
            ASSERT_TRUE(got.ok()) << got.error();
            h = (*got)[0];
            std::vector<runtime::HostValue> state;
            for (const runtime::StateBinding &binding : oneSig[l].state)
              state.push_back(*seq->state(static_cast<size_t>(binding.arg)));
            ::dsa::Result<runtime::Batch::SequenceId> joined = batches[l].join(state, s.pos);
            ASSERT_TRUE(joined.ok()) << joined.error();
            EXPECT_EQ(*joined, static_cast<int64_t>(id)); // every batch numbers the sequences in join order
          }
          slotSets.emplace(id, slots.take());
          members.push_back(id);
        }
        std::vector<runtime::Sequence::SlotSet> ordered;
        for (size_t id : members)
          ordered.push_back(slotSets.at(id));
        batchedSlots.clear();
        if (!ordered.empty()) {
          ::dsa::Result<runtime::Sequence::SlotSet> stacked = runtime::stackSlots(batchedSig[0], ordered);
          ASSERT_TRUE(stacked.ok()) << stacked.error();
          batchedSlots = stacked.take();
        }
      }
      if (active.empty())
        continue;
      std::vector<size_t> ids;
      for (auto &entry : active)
        ids.push_back(entry.first);
      const int64_t batch = static_cast<int64_t>(ids.size());
      SCOPED_TRACE("batched step " + std::to_string(step) + " of " + std::to_string(batch) + " sequence(s)");
      Tensor startPos(ElementType::I64, {batch});
      for (int64_t b = 0; b < batch; ++b)
        startPos.ints()[b] = active.at(ids[b]).pos;
      std::vector<Tensor> xs;
      for (int64_t b = 0; b < batch; ++b)
        xs.push_back(randomTensor(inputs, ElementType::BF16, {1, kDim}, 1.0f));

      // The oracle: each sequence's token through the stack, batch 1; every layer's output kept.
      std::vector<std::vector<Tensor>> want(static_cast<size_t>(batch)); // [b][l]
      for (int64_t b = 0; b < batch; ++b) {
        Sequence &s = active.at(ids[b]);
        Tensor h = xs[static_cast<size_t>(b)];
        for (size_t l = 0; l < numLayers; ++l) {
          h = runOne(l, h, s.pos, s.oracle);
          want[static_cast<size_t>(b)].push_back(h);
        }
      }

      // A batched side: the stack's batched functions over the active sequences' stacked state and slots.
      for (bool onCpu : {false, true}) {
        SCOPED_TRACE(onCpu ? "cpu, batched" : "interpreter, batched");
        auto sideOf = [&](Sequence &s) -> Side & { return onCpu ? s.cpu : s.interp; };
        // The slots, stacked and padded: rows / columns to the largest, topk_idxs with -1, candidates false.
        std::vector<Tensor> slots;
        for (size_t i = 0; i < 4; ++i) {
          std::vector<Tensor> rows;
          std::vector<int64_t> shape{i >= 2 ? 1 : 0, i >= 2 ? 0 : 32};
          for (int64_t b = 0; b < batch; ++b) {
            Tensor t = sideOf(active.at(ids[b])).slots[i];
            // topk_idxs / candidates after a prefill hold one row per prefill token: the last token's row is the
            // one a decode step continues from (as runtime::Batch takes it on join).
            if (i >= 2 && t.dim(0) > 1)
              t = lastRow(t);
            rows.push_back(t);
            for (size_t d = 0; d < 2; ++d)
              shape[d] = std::max(shape[d], t.dim(static_cast<int64_t>(d)));
          }
          slots.push_back(padStack(rows, shape, i == 2 ? -1.0 : 0.0));
        }
        Tensor h = padStack(xs, {1, kDim}, 0); // [B, 1, dim]
        for (size_t l = 0; l < numLayers; ++l) {
          SCOPED_TRACE(std::string("layer ") + roles[l].name);
          const std::string fn = std::string("batched_") + roles[l].name;
          std::vector<Tensor> rings, args = {h, startPos};
          for (int64_t b = 0; b < batch; ++b)
            rings.push_back(sideOf(active.at(ids[b])).rings[l]);
          args.push_back(padStack(rings, {kWindow, kHeadDim}, 0));
          args.insert(args.end(), weights[l].begin(), weights[l].end());
          for (size_t i = 0; i < initialState[l].size(); ++i) {
            std::vector<Tensor> rows;
            for (int64_t b = 0; b < batch; ++b)
              rows.push_back(sideOf(active.at(ids[b])).state[l][i]);
            args.push_back(padStack(rows, initialState[l][i].shape(), 0));
          }
          args.insert(args.end(), slots.begin(), slots.end());
          std::vector<Tensor> got;
          if (onCpu) {
            std::vector<runtime::HostValue> values(args.begin(), args.end());
            ::dsa::Result<std::vector<Tensor>> r = (*compiled)->run(fn, values);
            ASSERT_TRUE(r.ok()) << r.error();
            got = *r;
          } else {
            FailureOr<std::vector<Tensor>> r =
                interp::interpretFunction(decomposed->lookupSymbol<func::FuncOp>(fn), args, nullptr);
            ASSERT_TRUE(succeeded(r)) << diagnostics;
            got = *r;
          }
          const size_t numState = initialState[l].size();
          ASSERT_EQ(got.size(), 2 + numState + 4);
          for (int64_t b = 0; b < batch; ++b) {
            Sequence &s = active.at(ids[b]);
            Side &side = sideOf(s);
            SCOPED_TRACE("sequence " + std::to_string(ids[b]) + " at start_pos " + std::to_string(s.pos));
            EXPECT_TRUE(sameBits(rowOf(got[0], b, {1, kDim}), want[static_cast<size_t>(b)][l])) << "out row";
            side.rings[l] = rowOf(got[1], b, {kWindow, kHeadDim});
            EXPECT_TRUE(sameBits(side.rings[l], s.oracle.rings[l])) << "ring";
            for (size_t i = 0; i < numState; ++i) {
              side.state[l][i] = rowOf(got[2 + i], b, initialState[l][i].shape());
              EXPECT_TRUE(sameBits(side.state[l][i], s.oracle.state[l][i])) << "state " << i;
            }
            ++rowsChecked;
          }
          slots.assign(got.begin() + static_cast<std::ptrdiff_t>(2 + numState), got.end());
          h = got[0];
        }
        // The slots after the stack: row b is the sequence's batch-1 slot, then the padding.
        for (int64_t b = 0; b < batch; ++b) {
          Sequence &s = active.at(ids[b]);
          SCOPED_TRACE("sequence " + std::to_string(ids[b]) + "'s slots");
          for (size_t i = 0; i < 4; ++i) {
            const Tensor &oracle = s.oracle.slots[i];
            std::vector<int64_t> full(slots[i].shape().begin() + 1, slots[i].shape().end());
            ASSERT_GE(full[0], oracle.dim(0)) << "slot " << i;
            ASSERT_GE(full[1], oracle.dim(1)) << "slot " << i;
            EXPECT_TRUE(sameBits(rowOf(slots[i], b, oracle.shape()), oracle)) << "slot " << i;
            if (i >= 2) {
              EXPECT_TRUE(paddedWith(slots[i], b, oracle.shape(), i == 2 ? -1.0 : 0.0)) << "slot " << i << " padding";
            }
            sideOf(s).slots[i] = rowOf(slots[i], b, full);
          }
        }
      }

      // The runtime side: x through every layer's Batch, the batched slots passed along.
      {
        SCOPED_TRACE("runtime::Batch over the cpu");
        runtime::HostValue h = padStack(xs, {1, kDim}, 0);
        for (size_t l = 0; l < numLayers; ++l) {
          SCOPED_TRACE(std::string("layer ") + roles[l].name);
          ASSERT_EQ(batches[l].members().size(), static_cast<size_t>(batch));
          ::dsa::Result<runtime::HostValue> out = batches[l].step(h, &batchedSlots);
          ASSERT_TRUE(out.ok()) << out.error();
          const Tensor outs = out->toTensor();
          for (int64_t b = 0; b < batch; ++b) {
            Sequence &s = active.at(ids[b]);
            SCOPED_TRACE("sequence " + std::to_string(ids[b]) + " at start_pos " + std::to_string(s.pos));
            EXPECT_EQ(batches[l].members()[static_cast<size_t>(b)], static_cast<int64_t>(ids[b]));
            EXPECT_EQ(batches[l].position(static_cast<int64_t>(ids[b])), s.pos + 1);
            EXPECT_TRUE(sameBits(rowOf(outs, b, {1, kDim}), want[static_cast<size_t>(b)][l])) << "out row";
            ::dsa::Result<std::vector<runtime::HostValue>> state = batches[l].state(static_cast<int64_t>(ids[b]));
            ASSERT_TRUE(state.ok()) << state.error();
            ASSERT_EQ(state->size(), 1 + initialState[l].size());
            EXPECT_TRUE(sameBits((*state)[0].toTensor(), s.oracle.rings[l])) << "ring";
            for (size_t i = 0; i < initialState[l].size(); ++i)
              EXPECT_TRUE(sameBits((*state)[1 + i].toTensor(), s.oracle.state[l][i])) << "state " << i;
            ++rowsChecked;
          }
          h = *out;
        }
        for (int64_t b = 0; b < batch; ++b) {
          Sequence &s = active.at(ids[b]);
          SCOPED_TRACE("sequence " + std::to_string(ids[b]) + "'s slots");
          ::dsa::Result<runtime::Sequence::SlotSet> row = runtime::slotsOf(batchedSlots, b);
          ASSERT_TRUE(row.ok()) << row.error();
          for (size_t i = 0; i < 4; ++i) {
            const Tensor &oracle = s.oracle.slots[i];
            const Tensor got = (*row)[i].toTensor();
            ASSERT_GE(got.dim(0), oracle.dim(0)) << "slot " << i;
            ASSERT_GE(got.dim(1), oracle.dim(1)) << "slot " << i;
            const Tensor asBatch = padStack({got}, got.shape(), 0); // [1, rows, width]
            EXPECT_TRUE(sameBits(rowOf(asBatch, 0, oracle.shape()), oracle)) << "slot " << i;
            if (i >= 2) {
              EXPECT_TRUE(paddedWith(asBatch, 0, oracle.shape(), i == 2 ? -1.0 : 0.0)) << "slot " << i << " padding";
            }
          }
        }
      }
      for (auto &entry : active)
        ++entry.second.pos;
    }
    EXPECT_GT(rowsChecked, 0u);
  }

  MLIRContext context;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::string diagnostics;
};

// Five sequences: prefills of 1 .. 12 tokens (groups of 2 open and closed, no compressed row yet for the first),
// joining at steps 0, 0, 2, 3, 5 and leaving at 4 and 7; positions up to 20 (index_topk 6 exceeded, candidate
// blocks of 2 over up to 10 positions; the quirk's steps that close no group side by side with those that do).
const std::vector<SequencePlan> kJoinLeave = {{0, 1, 100}, {0, 6, 4}, {2, 3, 100}, {3, 12, 7}, {5, 2, 100}};

TEST_F(BatchedCompressedTest, PublishedSlotStackJoinAndLeave) {
  run(mlir::dsa::IndexKSource::published_slot, kJoinLeave, 9, 1, /*parallel=*/false);
}

TEST_F(BatchedCompressedTest, OwnCacheStackJoinAndLeave) {
  run(mlir::dsa::IndexKSource::own_cache, kJoinLeave, 9, 2, /*parallel=*/false);
}

TEST_F(BatchedCompressedTest, PublishedSlotStackOpenMP) {
  if (!::dsa::test::haveOpenMP())
    GTEST_SKIP() << "libomp not found";
  run(mlir::dsa::IndexKSource::published_slot, kJoinLeave, 9, 3, /*parallel=*/true);
}

TEST_F(BatchedCompressedTest, SingleSequenceBatchEqualsBatchOne) {
  run(mlir::dsa::IndexKSource::published_slot, {{0, 5, 100}}, 6, 4, /*parallel=*/false);
}

// runtime::Batch over a compressed layer, and stackSlots / slotsOf: every misuse refused naming the field, the
// members' state and positions unchanged; a correct step after the refused ones is the batch-1 step's.
TEST_F(BatchedCompressedTest, RuntimeBatchErrorsNameTheFieldAndChangeNothing) {
  const Role role{"A", 2, true, true, false, false};
  OwningOpRef<ModuleOp> m = ModuleOp::create(UnknownLoc::get(&context));
  OpBuilder builder = OpBuilder::atBlockEnd(m->getBody());
  mlir::dsa::AttentionLayerConfig config = layerConfig(role, 0, mlir::dsa::IndexKSource::published_slot, "one");
  FailureOr<mlir::dsa::AttentionOperandTypes> types = mlir::dsa::canonicalAttentionOperandTypes(m->getLoc(), config);
  ASSERT_TRUE(succeeded(types)) << diagnostics;
  ASSERT_TRUE(succeeded(mlir::dsa::buildAttentionFunction(builder, m->getLoc(), config, *types))) << diagnostics;
  config.name = "batched";
  FailureOr<mlir::dsa::AttentionOperandTypes> batchedTypes =
      mlir::dsa::batchedAttentionOperandTypes(m->getLoc(), config, ShapedType::kDynamic);
  ASSERT_TRUE(succeeded(batchedTypes)) << diagnostics;
  ASSERT_TRUE(succeeded(mlir::dsa::buildAttentionFunction(builder, m->getLoc(), config, *batchedTypes)))
      << diagnostics;
  Random rng(7);
  std::map<size_t, runtime::HostValue> fixed;
  for (const auto *group : {&types->weights, &types->compressor, &types->indexKeys, &types->indexer})
    for (Type t : *group)
      fixed.emplace(3 + fixed.size(), runtime::HostBuffer::fromTensor(randomWeight(rng, t)));
  ::dsa::Result<std::unique_ptr<cpu::CPUModule>> compiled = cpu::compileForCPU(*m, {});
  ASSERT_TRUE(compiled.ok()) << compiled.error();
  auto runnerOf = [&](const std::string &fn) -> runtime::Batch::ValueRunner {
    return [&, fn](const std::vector<runtime::HostValue> &a, std::vector<runtime::NamedTensor> *) {
      return (*compiled)->runValues(fn, a);
    };
  };
  runtime::FunctionSignature oneSig = *(*compiled)->signature("one"), batchedSig = *(*compiled)->signature("batched");
  cpu::addStepRoles(*m, oneSig);
  cpu::addStepRoles(*m, batchedSig);
  auto contains = [](const auto &r, const std::string &text) {
    return !r.ok() && r.error().find(text) != std::string::npos;
  };

  // Two sequences prefilled (5 and 3 tokens) through the batch-1 function.
  std::vector<std::vector<runtime::HostValue>> states;
  std::vector<runtime::Sequence::SlotSet> slotSets;
  std::vector<runtime::Sequence> ones;
  for (int64_t prefill : {5, 3}) {
    runtime::Sequence seq = runtime::Sequence::start(oneSig, runnerOf("one"), fixed).take();
    runtime::Sequence::SlotSet slots = runtime::Sequence::initialSlots(oneSig).take();
    ASSERT_TRUE(seq.run(randomTensor(rng, ElementType::BF16, {prefill, kDim}, 1.0f), 0, &slots).ok());
    std::vector<runtime::HostValue> state;
    for (const runtime::StateBinding &binding : oneSig.state)
      state.push_back(runtime::HostBuffer::fromTensor(seq.state(static_cast<size_t>(binding.arg))->toTensor()));
    states.push_back(state);
    slotSets.push_back(slots);
    ones.push_back(std::move(seq));
  }

  // stackSlots / slotsOf.
  EXPECT_TRUE(contains(runtime::stackSlots(batchedSig, {}), "stackSlots @batched: no members"));
  EXPECT_TRUE(contains(runtime::stackSlots(batchedSig, {{slotSets[0][0]}}), "member 0: 1 slots, the function takes 4"));
  runtime::Sequence::SlotSet wrongType = slotSets[1];
  wrongType[2] = runtime::HostBuffer::fromTensor(Tensor(ElementType::BF16, {1, 6}));
  EXPECT_TRUE(contains(runtime::stackSlots(batchedSig, {slotSets[0], wrongType}), "member 1's slot 2: bf16 [1, 6]"));
  EXPECT_TRUE(contains(runtime::stackSlots(oneSig, slotSets), "is not a batched slot [B, rows, width]"));
  ::dsa::Result<runtime::Sequence::SlotSet> stacked = runtime::stackSlots(batchedSig, slotSets);
  ASSERT_TRUE(stacked.ok()) << stacked.error();
  EXPECT_TRUE(contains(runtime::slotsOf(*stacked, 2), "slotsOf: b: 2 is outside"));
  EXPECT_TRUE(contains(runtime::slotsOf(*stacked, -1), "slotsOf: b: -1 is outside"));
  EXPECT_TRUE(contains(runtime::slotsOf(slotSets[0], 0), "is not a batched slot"));

  runtime::Batch batch = runtime::Batch::start(batchedSig, runnerOf("batched"), fixed).take();
  runtime::Sequence::SlotSet slots = *stacked;
  const Tensor x = randomTensor(rng, ElementType::BF16, {2, 1, kDim}, 1.0f);
  EXPECT_TRUE(contains(batch.step(x, &slots), "x: the batch has no members"));
  // join: the state's count and each value's type and shape.
  EXPECT_TRUE(contains(batch.join(states[0][0], 5), "state: 1 values, the function has 5 state bindings"));
  std::vector<runtime::HostValue> badState = states[0];
  badState[3] = runtime::HostBuffer::fromTensor(Tensor(ElementType::BF16, {kMaxSeqLen, kHeadDim}));
  EXPECT_TRUE(contains(batch.join(badState, 5), "state 3: bf16 [32, 32], expected"));
  EXPECT_TRUE(contains(batch.join(states[0], -1), "position: -1 is negative"));
  EXPECT_TRUE(batch.members().empty());
  ASSERT_TRUE(batch.join(states[0], 5).ok());
  ASSERT_TRUE(batch.join(states[1], 3).ok());

  // step: the slots missing, miscounted, of the wrong batch size or type; x of the wrong shape.
  auto snapshot = [&]() {
    std::vector<Tensor> all;
    for (runtime::Batch::SequenceId id : batch.members()) {
      const std::vector<runtime::HostValue> state = batch.state(id).take();
      for (const runtime::HostValue &v : state)
        all.push_back(v.toTensor());
    }
    return all;
  };
  const std::vector<Tensor> before = snapshot();
  EXPECT_TRUE(contains(batch.step(x), "shared: the layer takes 4 shared slots, none given"));
  runtime::Sequence::SlotSet three(slots.begin(), slots.begin() + 3);
  EXPECT_TRUE(contains(batch.step(x, &three), "shared: 3 slots given, the layer takes 4"));
  runtime::Sequence::SlotSet oneRow = *runtime::stackSlots(batchedSig, {slotSets[0]});
  EXPECT_TRUE(contains(batch.step(x, &oneRow), "shared: slot 0 is bf16 [1, "));
  runtime::Sequence::SlotSet badSlot = slots;
  badSlot[3] = runtime::HostBuffer::fromTensor(Tensor(ElementType::I32, {2, 1, 4}));
  EXPECT_TRUE(contains(batch.step(x, &badSlot), "shared: slot 3 is i32 [2, 1, 4], expected"));
  EXPECT_TRUE(contains(batch.step(randomTensor(rng, ElementType::BF16, {1, 1, kDim}, 1.0f), &slots),
                       "x: shape [1, 1, 64], expected [2, 1, 64]"));
  const std::vector<Tensor> after = snapshot();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_TRUE(sameBits(after[i], before[i])) << "state value " << i << " changed by a refused step";
  EXPECT_EQ(batch.position(0), 5);
  EXPECT_EQ(batch.position(1), 3);
  EXPECT_EQ(slots.size(), 4u);

  // The step the refused ones would have been: each row equals its sequence's batch-1 step.
  ::dsa::Result<runtime::HostValue> out = batch.step(x, &slots);
  ASSERT_TRUE(out.ok()) << out.error();
  for (int64_t b = 0; b < 2; ++b) {
    ::dsa::Result<std::vector<Tensor>> want =
        ones[static_cast<size_t>(b)].run(rowOf(x, b, {1, kDim}), b == 0 ? 5 : 3, &slotSets[static_cast<size_t>(b)]);
    ASSERT_TRUE(want.ok()) << want.error();
    EXPECT_TRUE(sameBits(rowOf(out->toTensor(), b, {1, kDim}), (*want)[0])) << "out row " << b;
  }

  // max_seq_len: a member at the capacity refuses the step.
  runtime::Batch full = runtime::Batch::start(batchedSig, runnerOf("batched"), fixed).take();
  ASSERT_TRUE(full.join(states[0], kMaxSeqLen).ok());
  runtime::Sequence::SlotSet fullSlots = *runtime::stackSlots(batchedSig, {slotSets[0]});
  EXPECT_TRUE(contains(full.step(padStack({rowOf(x, 0, {1, kDim})}, {1, kDim}, 0), &fullSlots),
                       "max_seq_len: sequence 0 at position 32: the layer holds 32 positions"));
  EXPECT_EQ(full.position(0), kMaxSeqLen);
}

} // namespace
