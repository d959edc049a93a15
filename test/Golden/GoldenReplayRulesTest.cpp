//===- GoldenReplayRulesTest.cpp - the whole-model replay's judging rules (dsa/Golden/Replay.h) ---------===//
//
// Expected values come from shared/spec/tiny-model-harness.md ("Known quirks": in decode, shared.L<l>.candidates of
// a layer before the candidate source is stale) and from the tiny golden's fixture (candidate_source_layer = 4).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Golden/Replay.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

namespace dsa::golden {
namespace {

Regime regimeAt(const std::string &name, int64_t startPos) {
  Regime r;
  r.name = name;
  r.startPos = startPos;
  return r;
}

TEST(GoldenReplayRules, SkipsOnlyStaleDecodeCandidatesBeforeTheCandidateSource) {
  Fixture f;
  f.candidateSourceLayer = 4;
  const Regime prefill = regimeAt("prefill12", 0), decode = regimeAt("decode12", 12);
  EXPECT_NE(wholeModelSkipReason(f, decode, "shared.L2.candidates"), "");
  EXPECT_NE(wholeModelSkipReason(f, decode, "shared.L3.candidates"), "");
  EXPECT_EQ(wholeModelSkipReason(f, decode, "shared.L4.candidates"), ""); // the source itself is fresh
  EXPECT_EQ(wholeModelSkipReason(f, decode, "shared.L5.candidates"), "");
  EXPECT_EQ(wholeModelSkipReason(f, prefill, "shared.L2.candidates"), ""); // prefill: computed this step
  EXPECT_EQ(wholeModelSkipReason(f, decode, "shared.L2.index_k"), "");
  EXPECT_EQ(wholeModelSkipReason(f, decode, "L2.candidates"), "");
  EXPECT_EQ(wholeModelSkipReason(f, decode, "shared.Lx.candidates"), ""); // not a layer number: compared
  EXPECT_EQ(wholeModelSkipReason(f, decode, "shared.L.candidates"), "");
  f.candidateSourceLayer = -1; // candidates off: nothing is stale
  EXPECT_EQ(wholeModelSkipReason(f, decode, "shared.L2.candidates"), "");
}

TEST(GoldenReplayRules, JudgesAgainstTheTinyGolden) {
  const GoldenFile &file = test::golden();
  const Regime *decode = file.regime("decode12");
  ASSERT_NE(decode, nullptr);
  CaptureMap produced;
  // Nothing produced: a compared capture fails, the stale one is not compared (and does not fail).
  Result<Verdict> missing = judgeWholeModelCapture(file, *decode, "L0.attn_out", produced);
  ASSERT_TRUE(missing) << missing.error();
  EXPECT_EQ(missing->status, Verdict::Fail);
  Result<Verdict> stale = judgeWholeModelCapture(file, *decode, "shared.L2.candidates", produced);
  ASSERT_TRUE(stale) << stale.error();
  EXPECT_EQ(stale->status, Verdict::NotCompared);
  // A capture the golden does not have is an error naming it.
  Result<Verdict> unknown = judgeWholeModelCapture(file, *decode, "L9.no_such", produced);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("L9.no_such"), std::string::npos) << unknown.error();
}

// Which elements are round trips and which captures are selections, from attention-semantics.md sections 4, 6-8
// and the tiny golden's fixture (W 8, head_dim 32, index_head_dim 32, ratios 0,0,2,2,1,1, index sources 2, 4, 5,
// candidate source 4 with blocks of 2, 3 blocks).
TEST(GoldenReplayRules, CaptureRulesFollowTheSpec) {
  const GoldenFile &file = test::golden();
  const Fixture &f = file.fixture();
  const Regime &prefill = *file.regime("prefill12");
  const Regime &decode = *file.regime("decode12");
  using dsa::ElementType;
  using dsa::Tensor;
  CaptureMap produced;

  // L0 (ratio 0): the window rows only, act_quant_fp8 in blocks of 32: 12 rows in prefill, the ring's 8 in decode.
  CaptureRules r = captureRules(f, prefill, "L0.sa_kv", Tensor(ElementType::BF16, {12, 32}), produced);
  ASSERT_EQ(r.quant.size(), 1u);
  EXPECT_EQ(r.quant[0].begin, 0);
  EXPECT_EQ(r.quant[0].end, 12 * 32);
  EXPECT_EQ(r.quant[0].grid, QuantGrid::E4M3Pow2);
  EXPECT_EQ(r.quant[0].block, 32);
  EXPECT_FALSE(r.selection);
  r = captureRules(f, decode, "L0.sa_kv", Tensor(ElementType::BF16, {8, 32}), produced);
  ASSERT_EQ(r.quant.size(), 1u);
  EXPECT_EQ(r.quant[0].end, 8 * 32);
  // L2 (ratio 2) at decode12: 8 ring rows then 13 // 2 = 6 compressed rows (fp4_quant_e4m3, blocks of 16).
  r = captureRules(f, decode, "L2.sa_kv", Tensor(ElementType::BF16, {14, 32}), produced);
  ASSERT_EQ(r.quant.size(), 2u);
  EXPECT_EQ(r.quant[0].end, 8 * 32);
  EXPECT_EQ(r.quant[1].begin, 8 * 32);
  EXPECT_EQ(r.quant[1].end, 14 * 32);
  EXPECT_EQ(r.quant[1].grid, QuantGrid::E2M1E4M3);
  EXPECT_EQ(r.quant[1].block, 16);
  r = captureRules(f, decode, "shared.L4.compress_kv", Tensor(ElementType::BF16, {13, 32}), produced);
  ASSERT_EQ(r.quant.size(), 1u);
  EXPECT_EQ(r.quant[0].grid, QuantGrid::E2M1E4M3);
  r = captureRules(f, decode, "shared.L2.index_k", Tensor(ElementType::BF16, {6, 32}), produced);
  ASSERT_EQ(r.quant.size(), 1u);
  EXPECT_EQ(r.quant[0].grid, QuantGrid::E2M1Pow2);
  EXPECT_EQ(r.quant[0].block, 32);
  // Captures that are no round trip.
  EXPECT_TRUE(captureRules(f, decode, "L0.sa_q", Tensor(ElementType::BF16, {1, 4, 32}), produced).quant.empty());
  EXPECT_TRUE(captureRules(f, decode, "L0.attn_out", Tensor(ElementType::BF16, {1, 64}), produced).quant.empty());

  // Selections need the replay's scores; without them, no rule.
  const Tensor idx(ElementType::I32, {1, 14});
  EXPECT_FALSE(captureRules(f, decode, "L2.sa_topk_idxs", idx, produced).selection);
  produced[indexScoreName(2)] = Tensor(ElementType::BF16, {1, 6});
  produced[indexScoreName(4)] = Tensor(ElementType::BF16, {1, 13});
  r = captureRules(f, decode, "L2.sa_topk_idxs", idx, produced);
  ASSERT_TRUE(r.selection);
  EXPECT_EQ(r.selection->kind, SelectionRule::IndexSet);
  EXPECT_EQ(r.selection->firstColumn, 8); // decode: W window indices first
  EXPECT_EQ(r.selection->offset, 8);      // compressed rows follow the W ring rows
  EXPECT_EQ(r.selection->scores.shape(), (std::vector<int64_t>{1, 6}));
  // L3 reads L2's selection: L2's scores. The slot holds the indices without window columns.
  r = captureRules(f, decode, "shared.L3.topk_idxs", Tensor(ElementType::I32, {1, 6}), produced);
  ASSERT_TRUE(r.selection);
  EXPECT_EQ(r.selection->firstColumn, 0);
  EXPECT_EQ(r.selection->scores.shape(), (std::vector<int64_t>{1, 6}));
  EXPECT_FALSE(captureRules(f, decode, "L0.sa_topk_idxs", Tensor(ElementType::I32, {1, 8}), produced).selection);
  // Prefill: min(s, W) window columns, s window rows.
  produced[indexScoreName(2)] = Tensor(ElementType::BF16, {12, 6});
  r = captureRules(f, prefill, "L2.sa_topk_idxs", Tensor(ElementType::I32, {12, 14}), produced);
  ASSERT_TRUE(r.selection);
  EXPECT_EQ(r.selection->firstColumn, 8);
  EXPECT_EQ(r.selection->offset, 12);
  // The candidate mask of L4 and L5 (both after the source): L4's scores, min(3, ceil(13 / 2)) blocks, the block
  // of position end//r - 1 = 12 pinned: 12 // 2 = 6.
  r = captureRules(f, decode, "shared.L5.candidates", Tensor(ElementType::I1, {1, 13}), produced);
  ASSERT_TRUE(r.selection);
  EXPECT_EQ(r.selection->kind, SelectionRule::BlockMask);
  EXPECT_EQ(r.selection->blockSize, 2);
  EXPECT_EQ(r.selection->k, 3);
  EXPECT_EQ(r.selection->pinnedBlock, (std::vector<int64_t>{6}));
  // Prefill rows t: compress_len (t + 1) // 1, pinned block t // 2.
  produced[indexScoreName(4)] = Tensor(ElementType::BF16, {12, 12});
  r = captureRules(f, prefill, "shared.L4.candidates", Tensor(ElementType::I1, {12, 12}), produced);
  ASSERT_TRUE(r.selection);
  EXPECT_EQ(r.selection->pinnedBlock, (std::vector<int64_t>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
}

// The judging rule passes the replay's scores to the comparator: decode12's shared.L4.topk_idxs (stored in full)
// against a replay whose own scores (hand-made here) put position 4 one bf16 ulp (2^-10 at 0.19) above position 7:
// it selected 4 where the reference selected 7, and 7 is within one ulp of its 6th largest score.
TEST(GoldenReplayRules, NearTieThroughTheJudgingRule) {
  const GoldenFile &file = test::golden();
  const Regime &decode = *file.regime("decode12");
  const Capture &want = **file.capture("decode12", "shared.L4.topk_idxs");
  ASSERT_EQ(want.stride, 1);
  ASSERT_EQ(want.data, (std::vector<double>{11, 15, 16, 17, 18, 19})); // positions 3, 7, 8, 9, 10, 11 (+ W = 8)
  using dsa::ElementType;
  using dsa::Tensor;
  CaptureMap produced;
  produced["shared.L4.topk_idxs"] = Tensor::fromInts(ElementType::I32, {1, 6}, {11, 12, 16, 17, 18, 19});
  std::vector<float> scores = {-0.25f, 0.0f, 0.0f, 0.5f, 0.1904296875f + 0x1p-10f, 0.0f, 0.0f,
                               0.1904296875f, 0.5f, 0.5f, 0.5f, 0.5f, 0.0f};
  produced[indexScoreName(4)] = Tensor::fromFloats(ElementType::BF16, {1, 13}, scores);
  Result<Verdict> v = judgeWholeModelCapture(file, decode, "shared.L4.topk_idxs", produced);
  ASSERT_TRUE(v) << v.error();
  EXPECT_EQ(v->status, Verdict::Pass) << formatVerdict(*v);
  EXPECT_EQ(v->nearTies, 1);
  // Two ulps apart: a failure.
  scores[4] = 0.1904296875f + 0x1p-9f;
  produced[indexScoreName(4)] = Tensor::fromFloats(ElementType::BF16, {1, 13}, scores);
  v = judgeWholeModelCapture(file, decode, "shared.L4.topk_idxs", produced);
  ASSERT_TRUE(v) << v.error();
  EXPECT_EQ(v->status, Verdict::Fail) << formatVerdict(*v);
}

// decodeRowOfChunkCapture on a hand-made fixture (W = 4; ratios 0, 2, 1; candidate source layer 2), a chunk of 3
// tokens at start_pos 5 (positions 5, 6, 7). Worked by hand from attention-semantics.md section 4: the ring as it
// entered holds slot 0 = position 4, 1 = 1, 2 = 2, 3 = 3 (slot q % 4); the chunk's rows 4, 5, 6 are positions 5, 6,
// 7; a decode at p reads the ring after writing p, oldest first (slot p % 4 + 1 first).
TEST(GoldenReplayRules, DecodeRowsOfAChunksCaptures) {
  using dsa::ElementType;
  using dsa::Tensor;
  Fixture f;
  f.nLayers = 3;
  f.windowSize = 4;
  f.compressRatios = {0, 2, 1};
  f.candidateSourceLayer = 2;
  auto row = [&](const std::string &name, const Tensor &v, int64_t t) {
    Result<std::optional<Tensor>> r = decodeRowOfChunkCapture(f, name, v, 5, 3, t);
    EXPECT_TRUE(r) << r.error();
    EXPECT_TRUE(r && r->has_value()) << name;
    return r && r->has_value() ? **r : Tensor();
  };
  auto error = [&](const std::string &name, const Tensor &v, int64_t t) {
    Result<std::optional<Tensor>> r = decodeRowOfChunkCapture(f, name, v, 5, 3, t);
    EXPECT_FALSE(r) << name << " row " << t;
    return r ? std::string() : r.error();
  };
  auto floats = [](const Tensor &t) { return std::vector<float>(t.floats(), t.floats() + t.numElements()); };
  auto ints = [](const Tensor &t) { return std::vector<int64_t>(t.ints(), t.ints() + t.numElements()); };

  // sa_kv of the window-only layer 0: [W + s, 1], the entering ring (slot 0..3 = positions 4, 1, 2, 3), then
  // positions 5, 6, 7; each value is 10 x its position.
  const Tensor kv0 = Tensor::fromFloats(ElementType::BF16, {7, 1}, {40, 10, 20, 30, 50, 60, 70});
  EXPECT_EQ(floats(row("L0.sa_kv", kv0, 0)), (std::vector<float>{40, 50, 20, 30})); // position 5 in slot 1
  EXPECT_EQ(floats(row("L0.sa_kv", kv0, 1)), (std::vector<float>{40, 50, 60, 30})); // 6 in slot 2
  EXPECT_EQ(floats(row("L0.sa_kv", kv0, 2)), (std::vector<float>{40, 50, 60, 70})); // 7 in slot 3
  EXPECT_EQ(row("L0.sa_kv", kv0, 2).shape(), (std::vector<int64_t>{4, 1}));
  // Layer 1 (ratio 2): the chunk's kv also has its (5 + 3) / 2 = 4 compressed rows (100..103); position 5 sees
  // (5 + 1) / 2 = 3 of them, position 7 all 4.
  const Tensor kv1 =
      Tensor::fromFloats(ElementType::BF16, {11, 1}, {40, 10, 20, 30, 50, 60, 70, 100, 101, 102, 103});
  EXPECT_EQ(floats(row("L1.sa_kv", kv1, 0)), (std::vector<float>{40, 50, 20, 30, 100, 101, 102}));
  EXPECT_EQ(floats(row("L1.sa_kv", kv1, 2)), (std::vector<float>{40, 50, 60, 70, 100, 101, 102, 103}));
  EXPECT_NE(error("L1.sa_kv", kv0, 0).find("expected [11, head_dim]"), std::string::npos);

  // Window indices, chunk coordinates -> the decode's: at position 6 the decode reads slots 3, 0, 1, 2 (positions
  // 3, 4, 5, 6), which the chunk numbers 3 (ring slot 3), 0 (ring slot 0), 4 and 5 (its rows of 5 and 6); at 5
  // slots 2, 3, 0, 1 (positions 2 .. 5), at 7 slots 0 .. 3 (positions 4 .. 7).
  const Tensor idx0 = Tensor::fromInts(ElementType::I32, {3, 4}, {2, 3, 0, 4, 3, 0, 4, 5, 0, 4, 5, 6});
  EXPECT_EQ(ints(row("L0.sa_topk_idxs", idx0, 0)), (std::vector<int64_t>{2, 3, 0, 1}));
  EXPECT_EQ(ints(row("L0.sa_topk_idxs", idx0, 1)), (std::vector<int64_t>{3, 0, 1, 2}));
  EXPECT_EQ(ints(row("L0.sa_topk_idxs", idx0, 2)), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(row("L0.sa_topk_idxs", idx0, 1).shape(), (std::vector<int64_t>{1, 4}));
  // Rows a decode at p does not read: the chunk's row of position 6 at position 5; the entering ring's slot 2
  // (position 2) at position 6 (its window is 3 .. 6); slot 1 (position 1) at position 5 (window 2 .. 5).
  EXPECT_NE(error("L0.sa_topk_idxs", Tensor::fromInts(ElementType::I32, {3, 4}, {0, 2, 3, 5, 3, 0, 4, 5, 0, 4, 5, 6}),
                  0)
                .find("column 3: index 5 is no row a decode at 5 reads"),
            std::string::npos);
  EXPECT_FALSE(decodeRowOfChunkCapture(f, "L0.sa_topk_idxs",
                                       Tensor::fromInts(ElementType::I32, {3, 4}, {0, 2, 3, 4, 2, 0, 4, 5, 0, 4, 5, 6}),
                                       5, 3, 1));
  EXPECT_FALSE(decodeRowOfChunkCapture(f, "L0.sa_topk_idxs",
                                       Tensor::fromInts(ElementType::I32, {3, 4}, {1, 2, 3, 4, 3, 0, 4, 5, 0, 4, 5, 6}),
                                       5, 3, 0));
  // Layer 1's indices: the window's, then compressed rows (chunk row 7 + c -> decode row 4 + c; -1 kept), of those
  // visible at p: (p + 1) / 2 = 3 at 5 and 6, 4 at 7.
  const Tensor idx1 = Tensor::fromInts(ElementType::I32, {3, 6}, {2, 3, 0, 4, 7, 9, 3, 0, 4, 5, 8, -1,
                                                                   0, 4, 5, 6, 10, 7});
  EXPECT_EQ(ints(row("L1.sa_topk_idxs", idx1, 0)), (std::vector<int64_t>{2, 3, 0, 1, 4, 6}));
  EXPECT_EQ(ints(row("L1.sa_topk_idxs", idx1, 1)), (std::vector<int64_t>{3, 0, 1, 2, 5, -1}));
  EXPECT_EQ(ints(row("L1.sa_topk_idxs", idx1, 2)), (std::vector<int64_t>{0, 1, 2, 3, 7, 4}));
  EXPECT_NE(error("L1.sa_topk_idxs", Tensor::fromInts(ElementType::I32, {3, 6}, {2, 3, 0, 4, 7, 10, 3, 0, 4, 5, 8,
                                                                                  -1, 0, 4, 5, 6, 10, 7}),
                  0)
                .find("column 5: index 10 is no row a decode at 5 reads"),
            std::string::npos);
  // shared topk_idxs: compressed rows only, offset by the chunk's W + s = 7 rows, the decode's W = 4.
  const Tensor shared1 = Tensor::fromInts(ElementType::I32, {3, 2}, {7, 9, 8, -1, 10, 7});
  EXPECT_EQ(ints(row("shared.L1.topk_idxs", shared1, 1)), (std::vector<int64_t>{5, -1}));
  EXPECT_EQ(ints(row("shared.L1.topk_idxs", shared1, 2)), (std::vector<int64_t>{7, 4}));
  EXPECT_NE(error("shared.L1.topk_idxs", Tensor::fromInts(ElementType::I32, {3, 2}, {7, 9, 4, -1, 10, 7}), 1)
                .find("index 4 is no row"),
            std::string::npos);

  // Candidates of the ratio-1 source: [s, (5 + 3) / 1 = 8] masks; position 5 sees 6 columns, 7 all 8.
  const Tensor cand = Tensor::fromInts(ElementType::I1, {3, 8}, {1, 0, 1, 0, 0, 1, 0, 0, //
                                                                 0, 1, 1, 0, 0, 0, 1, 0, //
                                                                 1, 1, 0, 0, 0, 0, 0, 1});
  EXPECT_EQ(ints(row("shared.L2.candidates", cand, 0)), (std::vector<int64_t>{1, 0, 1, 0, 0, 1}));
  EXPECT_EQ(ints(row("shared.L2.candidates", cand, 1)), (std::vector<int64_t>{0, 1, 1, 0, 0, 0, 1}));
  EXPECT_EQ(ints(row("shared.L2.candidates", cand, 2)), (std::vector<int64_t>{1, 1, 0, 0, 0, 0, 0, 1}));
  Tensor late = cand;
  late.ints()[6] = 1; // position 5 with column 6 set
  EXPECT_NE(error("shared.L2.candidates", late, 0).find("column 6 set"), std::string::npos);

  // Any other capture: row t of [s, ...]; the shared caches are no rows of a token (nullopt).
  const Tensor out = Tensor::fromFloats(ElementType::BF16, {3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(floats(row("L0.attn_out", out, 1)), (std::vector<float>{3, 4}));
  EXPECT_EQ(row("L0.attn_out", out, 1).shape(), (std::vector<int64_t>{1, 2}));
  EXPECT_NE(error("L0.attn_out", Tensor::fromFloats(ElementType::BF16, {2, 2}, {1, 2, 3, 4}), 0)
                .find("one row per token ([3, ...])"),
            std::string::npos);
  for (const char *cache : {"shared.L1.compress_kv", "shared.L1.index_k"}) {
    Result<std::optional<Tensor>> r = decodeRowOfChunkCapture(f, cache, kv1, 5, 3, 0);
    ASSERT_TRUE(r) << r.error();
    EXPECT_FALSE(r->has_value()) << cache;
    EXPECT_TRUE(isStepStateCapture(cache));
  }
  EXPECT_FALSE(isStepStateCapture("L1.sa_kv"));
  EXPECT_FALSE(isStepStateCapture("shared.L1.topk_idxs"));
  // Not a chunk's token: start_pos 0 (a prefill), a row past s.
  EXPECT_FALSE(decodeRowOfChunkCapture(f, "L0.attn_out", out, 0, 3, 0));
  EXPECT_FALSE(decodeRowOfChunkCapture(f, "L0.attn_out", out, 5, 3, 3));
}

} // namespace
} // namespace dsa::golden
