//===- DifferentialCompressedTest.cpp - the CPU backend against the interpreter on compressed layers ---===//
//
// Differential test of the JIT CPU backend (compiler/include/dsa/Backend/CPU/CPUModule.h) against the reference interpreter
// (compiler/include/dsa/Interpreter/Interpreter.h, interpretFunction on the decomposed module) for every compressed role
// (attention-semantics.md sections 5-8). The expected values come from the interpreter, not from the code under test.
//
// A stack of `dsa.attention` layers is built with mlir::dsa::buildAttentionFunction (AttentionBuilder.h), as
// tools/dsa-run/GoldenReplay.cpp does (operand groups weights / compressor / index_keys / indexer / state / shared,
// #dsa.compress, the reference's index_k quirk `published_slot`), with seeded random bf16/f32 weights and inputs. Initial state: zero ring, zero kv_state, -inf
// score_state, zero caches of ceil(max_seq_len / ratio) rows; the four shared slots start as [0, hd] bf16,
// [0, ihd] bf16, [0, 0] i32, [0, 0] i1 and are threaded from layer to layer and step to step. Each side (interpreter,
// CPU) threads its OWN ring, state and slots; at every layer of every step every result (out, new_ring, new_state...,
// new shared slots) and every probe (L<l>.sa_*, shared.L<l>.*, ...) is compared:
//   - integer / i1 tensors exactly, float tensors BIT-EXACTLY (NaN = NaN; docs/cpu-backend.md);
//   - both sides must produce the same probe names in the same order.
// Every layer takes the same random input x per step (the stack is a set of layers sharing a runtime; the model's
// residual path between them is not what is under test).
//
// Cases:
//   - StackEveryRoleCrossesBoundaries: L0 ratio-2 kv+index source, L1 ratio-2 reader, L2 ratio-1
//     kv+index+candidate source, L3 ratio-1 index source using candidates; W = 4, prefill 5 (ratio 2 leaves a
//     remainder in kv_state), decode to position 14: L0 completes a group on alternate steps, and on the others it
//     scores against L2's index-key cache published in the previous step (the section 8 quirk); index_topk 3 < the
//     compressed positions, so top-k really selects.
//   - FlashIndexerGeometry: one ratio-1 kv+index source with V4.1-Flash's indexer (32 heads x 128, index_topk 512)
//     and a small dim/heads; prefill 600 and one decode step: 600 > 512 compressed positions, so the runtime's top-k
//     takes its nth_element branch (k * 64 > n). The partial_sort branch (k * 64 <= n, n >= 32768 here) is not run:
//     its prefill would cost minutes in the interpreter at k = 512; PartialSortBranch covers it instead:
//   - PartialSortBranch: ratio-1 kv+index+candidate source and a ratio-1 index source using candidates with
//     index_topk 1 and 1 candidate block of 1 position, prefill 70 then two decode steps: n >= 64 compressed
//     positions and blocks, so both the indexer's and the candidate blocks' top-k take the partial_sort branch.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "BitExact.h"
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

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
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
using ::dsa::test::Random;
using ::dsa::test::randomTensor;

/// The model-wide configuration of the stack (attention-semantics.md section 1).
struct Config {
  int64_t dim, nHeads, headDim, ropeDim, qLora, oLora, oGroups, window;
  int64_t indexNHeads, indexHeadDim, indexTopk, candidateTopkBlocks, candidateBlockSize, maxSeqLen;
  int64_t originalSeqLen;
  double ropeFactor, betaFast = 32, betaSlow = 1;
  double normEps = 1e-20, compressRopeTheta = 4e4;
};

/// One layer's role (section 1).
struct Role {
  int64_t ratio;
  bool kvSource, indexSource, candidateSource, usesCandidates;
};


/// A layer's operand groups and its threaded ring and state (as GoldenReplay's Layer).
struct Layer {
  int64_t id;
  Role role;
  std::vector<Tensor> weights, compressor, indexKeys, indexer, state;
  Tensor ring;
};

Layer makeLayer(const Config &c, int64_t id, Role role, uint64_t seed) {
  Random rng(seed);
  Layer l{id, role, {}, {}, {}, {}, {}, Tensor(ElementType::BF16, {c.window, c.headDim})};
  l.weights = ::dsa::test::randomWindowWeights(rng, {c.dim, c.nHeads, c.headDim, c.qLora, c.oLora, c.oGroups});
  const int64_t r = role.ratio;
  if (role.kvSource) {
    // compressor: wkv [hd, dim] (f32 for ratio >= 2, bf16 for ratio 1), wgate [hd, dim] f32 (ratio >= 2), norm [hd].
    l.compressor.push_back(
        randomTensor(rng, r >= 2 ? ElementType::F32 : ElementType::BF16, {c.headDim, c.dim}, fanIn(c.dim)));
    if (r >= 2)
      l.compressor.push_back(randomTensor(rng, ElementType::F32, {c.headDim, c.dim}, fanIn(c.dim)));
    l.compressor.push_back(randomTensor(rng, ElementType::BF16, {c.headDim}, 0.1f, 1.0f));
    // index_keys: wk [ihd, hd], k_norm [ihd].
    l.indexKeys.push_back(randomTensor(rng, ElementType::BF16, {c.indexHeadDim, c.headDim}, fanIn(c.headDim)));
    l.indexKeys.push_back(randomTensor(rng, ElementType::BF16, {c.indexHeadDim}, 0.1f, 1.0f));
    // state: [kv_state 0, score_state -inf (ratio >= 2)], kv cache, index-key cache of ceil(max_seq_len / r) rows.
    if (r >= 2) {
      l.state.push_back(Tensor(ElementType::F32, {r, c.headDim}));
      l.state.push_back(Tensor::fromFloats(ElementType::F32, {r, c.headDim},
                                           std::vector<float>(static_cast<size_t>(r * c.headDim),
                                                              -std::numeric_limits<float>::infinity())));
    }
    const int64_t capacity = (c.maxSeqLen + r - 1) / r;
    l.state.push_back(Tensor(ElementType::BF16, {capacity, c.headDim}));
    l.state.push_back(Tensor(ElementType::BF16, {capacity, c.indexHeadDim}));
  }
  if (role.indexSource) {
    // indexer: wq_b [IH * ihd, q_lora], weights_proj [IH, dim].
    l.indexer.push_back(
        randomTensor(rng, ElementType::BF16, {c.indexNHeads * c.indexHeadDim, c.qLora}, fanIn(c.qLora)));
    l.indexer.push_back(randomTensor(rng, ElementType::BF16, {c.indexNHeads, c.dim}, fanIn(c.dim)));
  }
  return l;
}

std::vector<Tensor> emptySlots(const Config &c) {
  return {Tensor(ElementType::BF16, {0, c.headDim}), Tensor(ElementType::BF16, {0, c.indexHeadDim}),
          Tensor(ElementType::I32, {0, 0}), Tensor(ElementType::I1, {0, 0})};
}

/// Layer `l`'s configuration in the stack `c` (ratio > 0: compress_rope_theta with YaRN, its role in #dsa.compress,
/// the reference's index_k quirk `published_slot`). The function is @attention_L<id>(x, start_pos, ring, weights...,
/// compressor..., index_keys..., indexer..., state..., slots...) -> (out, new_ring, new_state..., new slots...) with
/// the canonical operand types (those of the tensors makeLayer and emptySlots create).
mlir::dsa::AttentionLayerConfig layerConfig(const Config &c, const Layer &l) {
  mlir::dsa::AttentionLayerConfig lc;
  lc.layerId = l.id;
  lc.dim = c.dim;
  lc.nHeads = c.nHeads;
  lc.headDim = c.headDim;
  lc.ropeHeadDim = c.ropeDim;
  lc.qLoraRank = c.qLora;
  lc.oGroups = c.oGroups;
  lc.oLoraRank = c.oLora;
  lc.windowSize = c.window;
  lc.compressRatio = l.role.ratio;
  lc.normEps = c.normEps;
  lc.ropeTheta = c.compressRopeTheta;
  lc.yarn = mlir::dsa::AttentionYarn{c.originalSeqLen, c.ropeFactor, c.betaFast, c.betaSlow};
  mlir::dsa::AttentionCompress cc;
  cc.isKvSource = l.role.kvSource;
  cc.isIndexSource = l.role.indexSource;
  cc.isCandidateSource = l.role.candidateSource;
  cc.usesCandidates = l.role.usesCandidates;
  cc.indexNHeads = c.indexNHeads;
  cc.indexHeadDim = c.indexHeadDim;
  cc.indexTopk = c.indexTopk;
  cc.candidateTopkBlocks = c.candidateTopkBlocks;
  cc.candidateBlockSize = c.candidateBlockSize;
  cc.maxSeqLen = c.maxSeqLen;
  cc.indexKSource = mlir::dsa::IndexKSource::published_slot;
  lc.compress = cc;
  return lc;
}

struct Step {
  int64_t startPos, tokens;
};

std::vector<Step> sequence(int64_t prefill, int64_t lastPos) {
  std::vector<Step> steps = {{0, prefill}};
  for (int64_t p = prefill; p <= lastPos; ++p)
    steps.push_back({p, 1});
  return steps;
}

/// What a run saw, so that a case can check that its sequence exercised what it claims to.
struct Coverage {
  int64_t steps = 0, comparedTensors = 0;
  int64_t maxTopkWidth = 0;      // widest sa_topk_idxs row
  bool compressedIndexSeen = false; // an sa_topk_idxs index >= window (a compressed row was attended)
  // A ratio >= 2 kv+index source ran a decode step with an index_k slot of another cache's row count (the section 8
  // quirk: it scores against the index-key cache a later ratio-1 source published in the previous step).
  bool indexKQuirkSeen = false;
};

class DifferentialCompressedTest : public ::testing::Test {
protected:
  DifferentialCompressedTest() {
    context.loadDialect<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, tensor::TensorDialect>();
    context.printOpOnDiagnostic(false);
    handler = std::make_unique<ScopedDiagnosticHandler>(&context, [this](Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return success();
    });
  }

  /// Runs `steps` through the stack `roles` on both sides; compares every result and probe at every layer and step.
  void runDifferential(const Config &c, const std::vector<Role> &roles, const std::vector<Step> &steps,
                       uint64_t seed, Coverage &coverage) {
    std::vector<Layer> interpLayers;
    OwningOpRef<ModuleOp> m = ModuleOp::create(UnknownLoc::get(&context));
    OpBuilder builder = OpBuilder::atBlockEnd(m->getBody());
    for (size_t i = 0; i < roles.size(); ++i) {
      interpLayers.push_back(makeLayer(c, static_cast<int64_t>(i), roles[i], seed * 1000 + i));
      ASSERT_TRUE(succeeded(
          mlir::dsa::buildAttentionFunction(builder, m->getLoc(), layerConfig(c, interpLayers.back()))))
          << diagnostics;
    }
    std::vector<Layer> cpuLayers = interpLayers;

    OwningOpRef<ModuleOp> decomposed(m->clone());
    PassManager pm(&context);
    pm.addPass(mlir::dsa::createDSADecomposeAttention());
    ASSERT_TRUE(succeeded(pm.run(*decomposed))) << diagnostics;

    cpu::CPUCompileOptions options;
    options.probesAsResults = true;
    ::dsa::Result<std::unique_ptr<cpu::CPUModule>> compiled = cpu::compileForCPU(*m, options);
    ASSERT_TRUE(compiled.ok()) << compiled.error();

    std::vector<Tensor> interpSlots = emptySlots(c), cpuSlots = emptySlots(c);
    Random inputs(seed ^ 0x5151515151515151ull);
    for (const Step &step : steps) {
      Tensor x = randomTensor(inputs, ElementType::BF16, {step.tokens, c.dim}, 1.0f);
      ++coverage.steps;
      for (size_t li = 0; li < roles.size(); ++li) {
        Layer &il = interpLayers[li], &cl = cpuLayers[li];
        const std::string fn = "attention_L" + std::to_string(il.id);
        SCOPED_TRACE("layer " + std::to_string(il.id) + " (ratio " + std::to_string(il.role.ratio) +
                     ") at start_pos " + std::to_string(step.startPos) + ", " + std::to_string(step.tokens) +
                     " token(s)");
        auto arguments = [&](Layer &l, const std::vector<Tensor> &slots) {
          std::vector<Tensor> args = {x, Tensor::scalarI64(step.startPos), l.ring};
          const std::vector<const std::vector<Tensor> *> groups = {&l.weights, &l.compressor, &l.indexKeys,
                                                                   &l.indexer,  &l.state,      &slots};
          for (const std::vector<Tensor> *g : groups)
            args.insert(args.end(), g->begin(), g->end());
          return args;
        };
        if (il.role.ratio >= 2 && il.role.kvSource && il.role.indexSource && step.startPos > 0 &&
            interpSlots[1].shape()[0] != il.state.back().shape()[0])
          coverage.indexKQuirkSeen = true;
        auto interpFn = decomposed->lookupSymbol<func::FuncOp>(fn);
        ASSERT_TRUE(interpFn);
        interp::ProbeLog wantProbes, gotProbes;
        FailureOr<std::vector<Tensor>> want =
            interp::interpretFunction(interpFn, arguments(il, interpSlots), &wantProbes);
        ASSERT_TRUE(succeeded(want)) << diagnostics;
        ::dsa::Result<std::vector<Tensor>> got = (*compiled)->call(fn, arguments(cl, cpuSlots), &gotProbes);
        ASSERT_TRUE(got.ok()) << got.error();

        const size_t nResults = 2 + il.state.size() + 4;
        ASSERT_EQ(want->size(), nResults);
        ASSERT_EQ(got->size(), nResults);
        for (size_t r = 0; r < nResults; ++r) {
          const size_t nState = il.state.size();
          std::string what = r == 0 ? "out"
                             : r == 1 ? "new_ring"
                             : r < 2 + nState ? "new_state" + std::to_string(r - 2)
                                              : "new_slot" + std::to_string(r - 2 - nState);
          EXPECT_TRUE(sameBits((*got)[r], (*want)[r])) << what;
          ++coverage.comparedTensors;
        }
        // Each side threads its own values.
        il.ring = (*want)[1];
        cl.ring = (*got)[1];
        for (size_t s = 0; s < il.state.size(); ++s) {
          il.state[s] = (*want)[2 + s];
          cl.state[s] = (*got)[2 + s];
        }
        for (size_t s = 0; s < 4; ++s) {
          interpSlots[s] = (*want)[2 + il.state.size() + s];
          cpuSlots[s] = (*got)[2 + il.state.size() + s];
        }
        // out is finite and not all zero (a bit-exact match of zeros would mean little).
        bool nonZero = false, finite = true;
        for (int64_t i = 0; i < (*want)[0].numElements(); ++i) {
          nonZero |= (*want)[0].floats()[i] != 0.0f;
          finite &= std::isfinite((*want)[0].floats()[i]);
        }
        EXPECT_TRUE(nonZero && finite) << "interpreter out degenerate";

        ASSERT_EQ(gotProbes.size(), wantProbes.size());
        ASSERT_FALSE(wantProbes.empty());
        for (size_t p = 0; p < wantProbes.size(); ++p) {
          EXPECT_EQ(gotProbes[p].name, wantProbes[p].name);
          EXPECT_TRUE(sameBits(gotProbes[p].value, wantProbes[p].value)) << wantProbes[p].name;
          ++coverage.comparedTensors;
          if (wantProbes[p].name == "L" + std::to_string(il.id) + ".sa_topk_idxs") {
            const Tensor &idx = wantProbes[p].value;
            if (idx.shape().size() == 2)
              coverage.maxTopkWidth = std::max(coverage.maxTopkWidth, idx.shape()[1]);
            for (int64_t i = 0; i < idx.numElements(); ++i)
              coverage.compressedIndexSeen |= idx.ints()[i] >= c.window;
          }
        }
      }
    }
  }

  MLIRContext context;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::string diagnostics;
};

TEST_F(DifferentialCompressedTest, StackEveryRoleCrossesBoundaries) {
  Config c{/*dim=*/64, /*nHeads=*/4, /*headDim=*/32, /*ropeDim=*/8, /*qLora=*/16, /*oLora=*/16, /*oGroups=*/2,
           /*window=*/4, /*indexNHeads=*/2, /*indexHeadDim=*/32, /*indexTopk=*/3, /*candidateTopkBlocks=*/2,
           /*candidateBlockSize=*/2, /*maxSeqLen=*/32, /*originalSeqLen=*/32, /*ropeFactor=*/2.0};
  std::vector<Role> roles = {{2, true, true, false, false},
                             {2, false, false, false, false},
                             {1, true, true, true, false},
                             {1, false, true, false, true}};
  Coverage coverage;
  runDifferential(c, roles, sequence(5, 14), 11, coverage);
  EXPECT_EQ(coverage.steps, 11);
  EXPECT_TRUE(coverage.indexKQuirkSeen) << "the ratio-2 source never read another layer's published index_k";
  EXPECT_TRUE(coverage.compressedIndexSeen) << "no compressed row was ever selected";
  // window (4) + index_topk (3) columns once enough compressed positions exist.
  EXPECT_EQ(coverage.maxTopkWidth, c.window + c.indexTopk);
}

TEST_F(DifferentialCompressedTest, FlashIndexerGeometry) {
  // V4.1-Flash's indexer (32 heads x 128, index_topk 512, candidate blocks 2048 x 8, YaRN 65536 x 16) with a small
  // attention (dim 64, 4 heads x 64).
  Config c{/*dim=*/64, /*nHeads=*/4, /*headDim=*/64, /*ropeDim=*/16, /*qLora=*/32, /*oLora=*/16, /*oGroups=*/2,
           /*window=*/8, /*indexNHeads=*/32, /*indexHeadDim=*/128, /*indexTopk=*/512, /*candidateTopkBlocks=*/2048,
           /*candidateBlockSize=*/8, /*maxSeqLen=*/640, /*originalSeqLen=*/65536, /*ropeFactor=*/16.0};
  Coverage coverage;
  runDifferential(c, {{1, true, true, false, false}}, sequence(600, 600), 12, coverage);
  EXPECT_EQ(coverage.steps, 2);
  EXPECT_TRUE(coverage.compressedIndexSeen);
  EXPECT_EQ(coverage.maxTopkWidth, c.window + c.indexTopk);
}

TEST_F(DifferentialCompressedTest, PartialSortBranch) {
  Config c{/*dim=*/64, /*nHeads=*/4, /*headDim=*/32, /*ropeDim=*/8, /*qLora=*/16, /*oLora=*/16, /*oGroups=*/2,
           /*window=*/4, /*indexNHeads=*/2, /*indexHeadDim=*/32, /*indexTopk=*/1, /*candidateTopkBlocks=*/1,
           /*candidateBlockSize=*/1, /*maxSeqLen=*/80, /*originalSeqLen=*/32, /*ropeFactor=*/2.0};
  Coverage coverage;
  runDifferential(c, {{1, true, true, true, false}, {1, false, true, false, true}}, sequence(70, 71), 13, coverage);
  EXPECT_EQ(coverage.steps, 3);
  EXPECT_TRUE(coverage.compressedIndexSeen);
  EXPECT_EQ(coverage.maxTopkWidth, c.window + c.indexTopk);
}

} // namespace
