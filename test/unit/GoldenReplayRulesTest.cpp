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

} // namespace
} // namespace dsa::golden
