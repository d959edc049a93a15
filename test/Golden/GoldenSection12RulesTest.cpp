//===- GoldenSection12RulesTest.cpp - the comparator's rules for production geometry ---------------------------===//
//
// attention-semantics.md section 12: quantisation boundary flips and near-tie top-k swaps, on hand-made cases. The
// expected captures are written here from the spec's grids (e4m3: 384 and 416 are neighbours in [256, 512);
// e2m1: {0, 0.5, 1, 1.5, 2, 3, 4, 6} times the block scale) and the bf16 ulp (1/64 in [2, 4)); checksums by the
// harness doc's formula. Nothing expected is computed by the comparator under test.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Golden/Compare.h"
#include "dsa/Numerics/BF16.h"
#include "dsa/Numerics/E4M3.h"
#include "dsa/Numerics/E8M0.h"
#include "dsa/Numerics/Quant.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace dsa::golden;
using dsa::ElementType;
using dsa::Tensor;
using namespace dsa::test;

namespace {

const double kNegInf = -std::numeric_limits<double>::infinity();


Tensor floats(std::vector<int64_t> shape, const std::vector<double> &values) {
  return Tensor::fromFloats(ElementType::F32, std::move(shape), std::vector<float>(values.begin(), values.end()));
}

Tensor ints(std::vector<int64_t> shape, const std::vector<int64_t> &values) {
  return Tensor::fromInts(ElementType::I32, std::move(shape), values);
}

/// `head` followed by zeros up to n.
std::vector<double> padded(std::vector<double> head, size_t n) {
  head.resize(n, 0.0);
  return head;
}

CaptureRules quant(QuantGrid grid, int64_t n, int64_t block) {
  CaptureRules r;
  r.quant.push_back(QuantSpan{0, n, grid, block});
  return r;
}

} // namespace

//===- Quantisation boundary flips ---------------------------------------------------------------------------===//

// act_quant_fp8, block 32, scale 1 (the block's largest value 448): 384 and 416 are adjacent e4m3 values, 352 is
// two steps below 416. |416 - 384| = 32 exceeds the tolerance 2^-6 * 384 + 2^-8 * 448 = 7.75.
TEST(Section12Flips, OneE4M3StepPassesAndIsCounted) {
  const std::vector<double> got = padded({448, 416, -96, 12}, 32);
  const std::vector<double> want = padded({448, 384, -96, 12}, 32);
  const Capture c = handCapture("L0.sa_kv", {1, 1, 32}, want);
  const Tensor t = floats({1, 32}, got);

  Verdict plain = compareCapture(c, t);
  EXPECT_EQ(plain.status, Verdict::Fail) << formatVerdict(plain); // without the rule: out of tolerance
  EXPECT_EQ(plain.flips, 0);

  Verdict v = compareCapture(c, t, quant(QuantGrid::E4M3Pow2, 32, 32));
  EXPECT_EQ(v.status, Verdict::Pass) << formatVerdict(v);
  EXPECT_EQ(v.flips, 1);
  EXPECT_EQ(v.mismatches, 0);
  EXPECT_TRUE(v.ckOk); // the flip's difference is taken out of the checksum
  EXPECT_TRUE(contains(formatVerdict(v), "bad 0/32 ck ")) << formatVerdict(v);
  EXPECT_TRUE(contains(formatVerdict(v), " flips 1 -- 1 quantisation flip, first at flat 1 [0,0,1]: got 416 want 384"))
      << formatVerdict(v);
}

TEST(Section12Flips, TwoE4M3StepsFail) {
  const Capture c = handCapture("L0.sa_kv", {1, 1, 32}, padded({448, 352, -96, 12}, 32));
  Verdict v = compareCapture(c, floats({1, 32}, padded({448, 416, -96, 12}, 32)), quant(QuantGrid::E4M3Pow2, 32, 32));
  EXPECT_EQ(v.status, Verdict::Fail) << formatVerdict(v);
  EXPECT_EQ(v.flips, 0);
  EXPECT_EQ(v.mismatches, 1);
}

TEST(Section12Flips, WantOffTheGridIsNoFlip) {
  // 400 is no e4m3 value: a difference of 16 there is not a grid step.
  const Capture c = handCapture("L0.sa_kv", {1, 1, 32}, padded({448, 400, -96, 12}, 32));
  Verdict v = compareCapture(c, floats({1, 32}, padded({448, 416, -96, 12}, 32)), quant(QuantGrid::E4M3Pow2, 32, 32));
  EXPECT_EQ(v.status, Verdict::Fail) << formatVerdict(v);
}

TEST(Section12Flips, OnlyInsideTheRoundTripSpans) {
  // The same flip in a second block that the rules do not name as a round trip fails; in a named one it passes.
  const std::vector<double> blockGot = padded({448, 416, -96, 12}, 32), blockWant = padded({448, 384, -96, 12}, 32);
  std::vector<double> got = blockGot, want = blockWant;
  got.insert(got.end(), blockGot.begin(), blockGot.end());
  want.insert(want.end(), blockWant.begin(), blockWant.end());
  const Capture c = handCapture("L2.sa_kv", {1, 2, 32}, want);
  Verdict v = compareCapture(c, floats({2, 32}, got), quant(QuantGrid::E4M3Pow2, 32, 32));
  EXPECT_EQ(v.status, Verdict::Fail) << formatVerdict(v);
  EXPECT_EQ(v.flips, 1);
  EXPECT_EQ(v.mismatches, 1);
  v = compareCapture(c, floats({2, 32}, got), quant(QuantGrid::E4M3Pow2, 64, 32));
  EXPECT_EQ(v.status, Verdict::Pass) << formatVerdict(v);
  EXPECT_EQ(v.flips, 2);
}

// fp4_quant_e8m0 (index keys): got's block has scale 1 (largest value 6 = 6*1, and 1.5 is only on the grid at
// scale 1), the reference's block scale 2 (its amax just crossed 6: largest 6 = 3*2, every value a multiple of 2's
// grid {0, 1, 2, 3, 4, 6, 8, 12}). Then 1.5*1 against 0.5*2 and -0.5*1 against -0.5*2 differ by 0.5, beyond the
// tolerance 2^-6 + 2^-8 * 6 = 0.039, and are adjacent values of the two grids' union. (Within a block's range the
// coarser grid is part of the finer one, so such pairs are also neighbours on got's own grid.)
TEST(Section12Flips, ScaleOnePowerOfTwoOffPassesAndIsCounted) {
  const std::vector<double> got = padded({6, 1.5, 3, -0.5, 4}, 32);
  const std::vector<double> want = padded({6, 1, 3, -1, 4}, 32);
  const Capture c = handCapture("shared.L2.index_k", {1, 1, 32}, want);
  Verdict v = compareCapture(c, floats({1, 32}, got), quant(QuantGrid::E2M1Pow2, 32, 32));
  EXPECT_EQ(v.status, Verdict::Pass) << formatVerdict(v);
  EXPECT_EQ(v.flips, 2);
  EXPECT_EQ(v.mismatches, 0);
  EXPECT_TRUE(v.ckOk);
}

TEST(Section12Flips, TwoStepsAtTheOtherScaleFail) {
  // 1.5 against 4 (= 2*2): no scale one step away makes them neighbours.
  const Capture c = handCapture("shared.L2.index_k", {1, 1, 32}, padded({6, 4, 3, -1, 4}, 32));
  Verdict v =
      compareCapture(c, floats({1, 32}, padded({6, 1.5, 3, -0.5, 4}, 32)), quant(QuantGrid::E2M1Pow2, 32, 32));
  EXPECT_EQ(v.status, Verdict::Fail) << formatVerdict(v);
  EXPECT_EQ(v.flips, 0);
  // Values of the grid at scale 4 (6 = 1.5*4, 2 = 0.5*4, -2 = -0.5*4): -0.5 against -2 are not neighbours.
  const Capture far = handCapture("shared.L2.index_k", {1, 1, 32}, padded({6, 2, 4, -2, 4}, 32));
  v = compareCapture(far, floats({1, 32}, padded({6, 1.5, 3, -0.5, 4}, 32)), quant(QuantGrid::E2M1Pow2, 32, 32));
  EXPECT_EQ(v.status, Verdict::Fail) << formatVerdict(v);
}

TEST(Section12Flips, OneBlockOneReferenceScale) {
  // Two flips in one block that need different reference scales (0.25 is on the grid at 0.5 only, 8 at 2 only).
  const Capture c = handCapture("shared.L2.index_k", {1, 1, 32}, padded({6, 0.25, 3, 8, 4}, 32));
  Verdict v =
      compareCapture(c, floats({1, 32}, padded({6, 0.5, 3, 6, 4}, 32)), quant(QuantGrid::E2M1Pow2, 32, 32));
  EXPECT_EQ(v.status, Verdict::Fail) << formatVerdict(v);
}

// fp4_quant_e4m3 (compressed latent), block 16: got's e4m3 scale 0.875 (largest 6 * 0.875 = 5.25), the reference's
// the next e4m3 value 0.9375 (5.625, 1.5 * 0.9375 = 1.40625): 0.375 apart, beyond 2^-6*5.625 + 2^-8*5.625.
TEST(Section12Flips, E4M3ScaleOneStepOffPasses) {
  const std::vector<double> got = padded({5.25, 1.3125, -2.625}, 16);
  const std::vector<double> want = padded({5.625, 1.40625, -2.8125}, 16);
  const Capture c = handCapture("shared.L4.compress_kv", {1, 1, 16}, want);
  Verdict v = compareCapture(c, floats({1, 16}, got), quant(QuantGrid::E2M1E4M3, 16, 16));
  EXPECT_EQ(v.status, Verdict::Pass) << formatVerdict(v);
  EXPECT_EQ(v.flips, 3); // each beyond 2^-6 * |want| + 2^-8 * 5.625 (0.375, 0.094, 0.1875 apart)
  // Two e4m3 steps (1.0 = 0.875 + 2/16): not a flip.
  const Capture far = handCapture("shared.L4.compress_kv", {1, 1, 16}, padded({6, 1.5, -3}, 16));
  v = compareCapture(far, floats({1, 16}, got), quant(QuantGrid::E2M1E4M3, 16, 16));
  EXPECT_EQ(v.status, Verdict::Fail) << formatVerdict(v);
}

TEST(Section12Flips, StridedCaptureComparesItsSamples) {
  // Stride 2 over two blocks: the flip is in a stored sample; the unstored elements only enter the checksum.
  std::vector<double> got = padded({448, 0, 416, 0, -96}, 32), want = padded({448, 0, 384, 0, -96}, 32);
  const Capture c = handCapture("L0.sa_kv", {1, 1, 32}, want, /*stride=*/2);
  Verdict v = compareCapture(c, floats({1, 32}, got), quant(QuantGrid::E4M3Pow2, 32, 32));
  EXPECT_EQ(v.status, Verdict::Pass) << formatVerdict(v);
  EXPECT_EQ(v.flips, 1);
  EXPECT_EQ(v.compared, 16);
}

TEST(Section12Flips, BlockScalesOfRealRoundTrips) {
  // The scale a quantiser used is among those the comparator reads off its output (spec scale rules, section 2).
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> x(32);
    const float gain = std::ldexp(1.0f, trial % 20 - 10);
    for (float &v : x)
      v = dsa::numerics::roundBf16(dist(rng) * gain);
    float amax = 0;
    for (float v : x)
      amax = std::max(amax, std::fabs(v));
    std::vector<float> fp8 = x, e8m0 = x, e4m3 = x;
    ASSERT_TRUE(dsa::numerics::actQuantFp8(fp8.data(), 32, 32).ok());
    ASSERT_TRUE(dsa::numerics::fp4QuantE8M0(e8m0.data(), 32, 32).ok());
    ASSERT_TRUE(dsa::numerics::fp4QuantE4M3(e4m3.data(), 16, 16).ok());
    const double sFp8 = dsa::numerics::pow2Ceil(std::max(amax, 1e-4f) / 448.0f);
    const double sE8m0 = dsa::numerics::pow2Ceil(std::max(amax, 6.0f * 0x1p-126f) / 6.0f);
    float amax16 = 0;
    for (int i = 0; i < 16; ++i)
      amax16 = std::max(amax16, std::fabs(x[static_cast<size_t>(i)]));
    const double sE4m3 = dsa::numerics::roundE4M3(std::max(amax16, 6.0f * 0x1p-9f) / 6.0f);
    auto has = [](const std::vector<double> &v, double s) { return std::find(v.begin(), v.end(), s) != v.end(); };
    EXPECT_TRUE(has(quantBlockScales(fp8.data(), 32, QuantGrid::E4M3Pow2), sFp8)) << trial;
    EXPECT_TRUE(has(quantBlockScales(e8m0.data(), 32, QuantGrid::E2M1Pow2), sE8m0)) << trial;
    EXPECT_TRUE(has(quantBlockScales(e4m3.data(), 16, QuantGrid::E2M1E4M3), sE4m3)) << trial;
  }
  // Values that no round trip produces have no scale: 1.1015625 (bf16 of 1.1) is on no e2m1 or e4m3 grid at a
  // power-of-two or e4m3 scale (too many mantissa bits), whatever the block's largest value.
  std::vector<float> raw = {6.0f, 1.1015625f};
  raw.resize(32, 0.0f);
  EXPECT_TRUE(quantBlockScales(raw.data(), 32, QuantGrid::E2M1Pow2).empty());
  EXPECT_TRUE(quantBlockScales(raw.data(), 32, QuantGrid::E4M3Pow2).empty());
  EXPECT_TRUE(quantBlockScales(raw.data(), 16, QuantGrid::E2M1E4M3).empty());
}

//===- Near-tie top-k swaps ---------------------------------------------------------------------------------===//

// One row, k = 3 of 6 positions, mapped with offset 8 (the window rows). bf16 ulp of the 3rd score 3.0 is 1/64.
TEST(Section12NearTies, SwapWithinOneUlpPassesAndIsCounted) {
  const Tensor scores = floats({1, 6}, {5.0, 4.0, 3.0, 3.0 - 1.0 / 64, 1.0, 0.0});
  SelectionRule rule;
  rule.kind = SelectionRule::IndexSet;
  rule.offset = 8;
  rule.scores = scores;
  CaptureRules rules;
  rules.selection = rule;
  // got took positions 0, 1, 2 (its own top 3); the reference 0, 1, 3.
  const Capture c = handCapture("shared.L2.topk_idxs", {1, 1, 3}, {8, 9, 11}, 1, true);
  const Tensor got = ints({1, 3}, {8, 9, 10});
  Verdict plain = compareCapture(c, got);
  EXPECT_EQ(plain.status, Verdict::Fail);
  Verdict v = compareCapture(c, got, rules);
  EXPECT_EQ(v.status, Verdict::Pass) << formatVerdict(v);
  EXPECT_EQ(v.nearTies, 1);
  EXPECT_EQ(v.mismatches, 0);
  EXPECT_TRUE(contains(formatVerdict(v), " near_ties 1 -- 1 near-tie swap")) << formatVerdict(v);
}

TEST(Section12NearTies, SwapBeyondOneUlpFails) {
  SelectionRule rule;
  rule.offset = 8;
  rule.scores = floats({1, 6}, {5.0, 4.0, 3.0, 3.0 - 2.0 / 64, 1.0, 0.0}); // two ulps below the 3rd score
  CaptureRules rules;
  rules.selection = rule;
  const Capture c = handCapture("shared.L2.topk_idxs", {1, 1, 3}, {8, 9, 11}, 1, true);
  Verdict v = compareCapture(c, ints({1, 3}, {8, 9, 10}), rules);
  EXPECT_EQ(v.status, Verdict::Fail) << formatVerdict(v);
  EXPECT_EQ(v.nearTies, 0);
  // A swap of a member well above the k-th score fails too, even if the new one is a near tie.
  rule.scores = floats({1, 6}, {5.0, 4.0, 3.0, 3.0 - 1.0 / 64, 1.0, 0.0});
  rules.selection = rule;
  const Capture dropsTop = handCapture("shared.L2.topk_idxs", {1, 1, 3}, {9, 10, 11}, 1, true);
  EXPECT_EQ(compareCapture(dropsTop, ints({1, 3}, {8, 9, 10}), rules).status, Verdict::Fail);
}

TEST(Section12NearTies, MinusInfinityTiesStayExact) {
  // Fewer finite scores than k: the k-th is -inf and the order among -inf picks is section 9's, compared exactly.
  SelectionRule rule;
  rule.offset = 0;
  rule.scores = floats({1, 4}, {2.0, kNegInf, kNegInf, kNegInf});
  CaptureRules rules;
  rules.selection = rule;
  const Capture c = handCapture("shared.L5.topk_idxs", {1, 1, 2}, {0, 2}, 1, true);
  EXPECT_EQ(compareCapture(c, ints({1, 2}, {0, 1}), rules).status, Verdict::Fail);
}

TEST(Section12NearTies, WindowColumnsAreExactAndRowsIndependent) {
  // sa_topk_idxs: two window columns then the k = 2 compressed ones; two rows, the second one swapped.
  SelectionRule rule;
  rule.firstColumn = 2;
  rule.offset = 4;
  rule.scores = floats({2, 4}, {1.0, 0.5, 0.25, 0.0, /*row 1*/ 2.0, 1.0, 1.0 - 1.0 / 256, -1.0});
  CaptureRules rules;
  rules.selection = rule;
  const Capture c = handCapture("L2.sa_topk_idxs", {1, 2, 4}, {0, -1, 4, 5, /*row 1*/ 0, 1, 4, 6}, 1, true);
  Verdict v = compareCapture(c, ints({2, 4}, {0, -1, 4, 5, 0, 1, 4, 5}), rules);
  EXPECT_EQ(v.status, Verdict::Pass) << formatVerdict(v);
  EXPECT_EQ(v.nearTies, 1);
  // A differing window column is never a near tie.
  v = compareCapture(c, ints({2, 4}, {0, -1, 4, 5, 0, 2, 4, 6}), rules);
  EXPECT_EQ(v.status, Verdict::Fail) << formatVerdict(v);
}

TEST(Section12NearTies, StridedRows) {
  // k = 4 of 6 positions, offset 0; got {0, 1, 2, 3}, the reference swapped 2 (3rd score... the band) for 4.
  // Scores: the 4th largest is 1.0 (ulp 1/128); positions 3 and 4 sit at 1.0 and 1.0 - 1/128.
  SelectionRule rule;
  rule.scores = floats({1, 6}, {4.0, 3.0, 2.0, 1.0, 1.0 - 1.0 / 128, 0.0});
  CaptureRules rules;
  rules.selection = rule;
  // The reference {0, 1, 2, 4}: stored at stride 3, columns 0 and 3 (0 and 4).
  const Capture c = handCapture("shared.L4.topk_idxs", {1, 1, 4}, {0, 1, 2, 4}, 3, true);
  Verdict v = compareCapture(c, ints({1, 4}, {0, 1, 2, 3}), rules);
  EXPECT_EQ(v.status, Verdict::Pass) << formatVerdict(v);
  EXPECT_EQ(v.nearTies, 1);
  EXPECT_TRUE(contains(v.detail, "ck not compared: near-tie swaps in a strided capture")) << v.detail;
  // A stored index far below the band fails.
  const Capture bad = handCapture("shared.L4.topk_idxs", {1, 1, 4}, {0, 1, 2, 5}, 3, true);
  EXPECT_EQ(compareCapture(bad, ints({1, 4}, {0, 1, 2, 3}), rules).status, Verdict::Fail);
  // A stored index that got has, at a column that would need a sure member dropped: the reference stores 2 at
  // column 0, so 0 and 1 (scores 4 and 3, far above the band) would be missing from its set.
  const Capture shifted = handCapture("shared.L4.topk_idxs", {1, 1, 4}, {2, 3, 4, 5}, 3, true);
  EXPECT_EQ(compareCapture(shifted, ints({1, 4}, {0, 1, 2, 3}), rules).status, Verdict::Fail);
}

// select_candidate_blocks (section 7): width 8, blocks of 2, k = 2 blocks. Block maxima 5, 2, 2 - 1/64, -inf; the
// 2nd largest is 2 (ulp 1/64).
TEST(Section12NearTies, CandidateBlocks) {
  SelectionRule rule;
  rule.kind = SelectionRule::BlockMask;
  rule.k = 2;
  rule.blockSize = 2;
  rule.pinnedBlock = {-1};
  rule.scores = floats({1, 8}, {5.0, 1.0, 2.0, 0.0, 2.0 - 1.0 / 64, 0.0, kNegInf, kNegInf});
  CaptureRules rules;
  rules.selection = rule;
  const Tensor got = ints({1, 8}, {1, 1, 1, 1, 0, 0, 0, 0}); // blocks 0 and 1
  const Capture c = handCapture("shared.L4.candidates", {1, 1, 8}, {1, 1, 0, 0, 1, 1, 0, 0}, 1, true); // 0 and 2
  Verdict v = compareCapture(c, got, rules);
  EXPECT_EQ(v.status, Verdict::Pass) << formatVerdict(v);
  EXPECT_EQ(v.nearTies, 1);
  // Block 2 two ulps below: fails.
  rule.scores = floats({1, 8}, {5.0, 1.0, 2.0, 0.0, 2.0 - 2.0 / 64, 0.0, kNegInf, kNegInf});
  rules.selection = rule;
  EXPECT_EQ(compareCapture(c, got, rules).status, Verdict::Fail);
  // The pinned block (+inf) is never a near tie: pin block 1, swap it out.
  rule.scores = floats({1, 8}, {5.0, 1.0, 2.0, 0.0, 2.0, 0.0, kNegInf, kNegInf});
  rule.pinnedBlock = {1};
  rules.selection = rule;
  EXPECT_EQ(compareCapture(c, got, rules).status, Verdict::Fail);
}

//===- Reporting ----------------------------------------------------------------------------------------------===//

TEST(Section12Summary, FlipsAndNearTiesOnTheSummaryLine) {
  std::vector<Verdict> verdicts(3);
  verdicts[0].status = Verdict::Pass;
  verdicts[1].status = Verdict::Pass;
  verdicts[2].status = Verdict::NotCompared;
  // Without flips and near ties: exactly the older line.
  EXPECT_EQ(formatSummary(verdicts), "golden: 2 passed, 0 failed (1 not compared)");
  verdicts[2].status = Verdict::Pass;
  EXPECT_EQ(formatSummary(verdicts), "golden: 3 passed, 0 failed");
  verdicts[0].flips = 2;
  verdicts[1].nearTies = 1;
  EXPECT_EQ(formatSummary(verdicts), "golden: 3 passed, 0 failed (0 not compared; 2 flips, 1 near-ties)");
  Summary s = summarize(verdicts);
  EXPECT_EQ(s.flips, 2);
  EXPECT_EQ(s.nearTies, 1);
}
