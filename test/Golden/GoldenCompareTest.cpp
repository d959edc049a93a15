//===- GoldenCompareTest.cpp - the section 12 comparator --------------------------===//
//
// Hand-built captures whose tolerances are worked out by hand from attention-semantics.md section 12, and the
// golden's own captures turned into tensors (they must pass; one perturbed element must fail exactly that capture).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Golden/Compare.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace dsa::golden;
using namespace dsa::test;
using dsa::ElementType;
using dsa::Tensor;

namespace {

/// The tensor of a full (stride 1) capture: i64 for integer captures, f32 otherwise; batch dims dropped when asked.
Tensor tensorOf(const Capture &c, bool dropLeadingOnes = true) {
  std::vector<int64_t> shape = dropLeadingOnes ? dropBatch(c.shape) : c.shape;
  if (c.isInteger) {
    std::vector<int64_t> v(c.data.begin(), c.data.end());
    return Tensor::fromInts(ElementType::I64, shape, v);
  }
  std::vector<float> v(c.data.begin(), c.data.end());
  return Tensor::fromFloats(ElementType::F32, shape, v);
}


} // namespace

TEST(GoldenCompare, Bf16Ulp) {
  EXPECT_EQ(bf16Ulp(1.0), 0x1p-7);
  EXPECT_EQ(bf16Ulp(1.5), 0x1p-7);
  EXPECT_EQ(bf16Ulp(0.75), 0x1p-8);
  EXPECT_EQ(bf16Ulp(-3.0), 0x1p-6);
  EXPECT_EQ(bf16Ulp(0.0), 0x1p-133);
  EXPECT_TRUE(std::isnan(bf16Ulp(std::numeric_limits<double>::infinity())));
}

// 100 ones: max|want| = 1, so element i passes iff |got - 1| <= 2^-6 + 2^-8 = 0.01953125 (exactly representable);
// ck = 5050 and its tolerance is 2e-3 * sum |got_i| (i+1), about 10.1: one element moved by 0.0195 leaves it.
TEST(GoldenCompare, FloatElementToleranceByHand) {
  std::vector<double> ones(100, 1.0);
  Capture want = handCapture("hand", {1, 100}, ones, 1, false);
  std::vector<float> got(100, 1.0f);

  Verdict same = compareCapture(want, Tensor::fromFloats(ElementType::F32, {100}, got));
  EXPECT_EQ(same.status, Verdict::Pass) << formatVerdict(same);
  EXPECT_EQ(same.maxAbsErr, 0.0);
  EXPECT_EQ(same.ckGot, 5050.0);
  EXPECT_EQ(same.compared, 100);

  got[7] = 1.01953125f; // exactly at the bound
  Verdict edge = compareCapture(want, Tensor::fromFloats(ElementType::F32, {100}, got));
  EXPECT_EQ(edge.status, Verdict::Pass) << formatVerdict(edge);
  EXPECT_EQ(edge.maxAbsErr, 0.01953125);
  EXPECT_EQ(edge.maxUlpErr, 2.5); // 0.01953125 / 2^-7

  got[7] = 1.01953125f + 0x1p-20f; // just beyond
  Verdict beyond = compareCapture(want, Tensor::fromFloats(ElementType::F32, {100}, got));
  EXPECT_EQ(beyond.status, Verdict::Fail);
  EXPECT_EQ(beyond.mismatches, 1);
  EXPECT_TRUE(beyond.ckOk); // the element rule alone fails it
  EXPECT_TRUE(contains(beyond.detail, "first at flat 7 [0,7]")) << beyond.detail;

  got[7] = 0.98046875f; // 1 - 0.01953125: the bound is symmetric
  EXPECT_EQ(compareCapture(want, Tensor::fromFloats(ElementType::F32, {100}, got)).status, Verdict::Pass);
  got[7] = std::numeric_limits<float>::quiet_NaN();
  Verdict nan = compareCapture(want, Tensor::fromFloats(ElementType::F32, {100}, got));
  EXPECT_EQ(nan.status, Verdict::Fail);
  EXPECT_FALSE(nan.ckOk);
}

// The absolute part uses max|want| over the compared samples: want [4, 0]: element 1 may be off by 2^-8 * 4.
TEST(GoldenCompare, AbsoluteToleranceUsesMaxWant) {
  std::vector<double> values(200, 0.0);
  values[0] = 4.0;
  Capture want = handCapture("hand", {200}, values, 1, false);
  std::vector<float> got(values.begin(), values.end());
  // 2^-8 * 4 on the last element: allowed elementwise, but ck moves by 0.015625 * 200 = 3.125 while its tolerance
  // is 2e-3 * (4 + 3.125) = 0.01425, so the checksum fails although every element passes.
  got[199] = 0.015625f;
  Verdict v = compareCapture(want, Tensor::fromFloats(ElementType::F32, {200}, got));
  EXPECT_EQ(v.mismatches, 0);
  EXPECT_FALSE(v.ckOk);
  EXPECT_EQ(v.status, Verdict::Fail);
  EXPECT_TRUE(contains(v.detail, "ck got")) << v.detail;
  got[199] = 0.0f;
  got[1] = 0.015625f; // weight 2 in the ck: moves it by 0.03125 > 2e-3 * (4 + 0.03125) = 0.0080625: still fails
  EXPECT_EQ(compareCapture(want, Tensor::fromFloats(ElementType::F32, {200}, got)).status, Verdict::Fail);
  got[1] = 0.001f; // ck moves by 0.002 <= 2e-3 * 4.002
  EXPECT_EQ(compareCapture(want, Tensor::fromFloats(ElementType::F32, {200}, got)).status, Verdict::Pass);
  got[1] = 0.0171875f; // beyond 2^-8 * 4 = 0.015625 elementwise
  Verdict bad = compareCapture(want, Tensor::fromFloats(ElementType::F32, {200}, got));
  EXPECT_EQ(bad.mismatches, 1);
}

// A strided capture: an element that is not stored is still covered by the checksum.
TEST(GoldenCompare, UnstoredElementCaughtByChecksum) {
  std::vector<double> ones(100, 1.0);
  Capture want = handCapture("hand", {100}, ones, 2, false);
  ASSERT_EQ(want.data.size(), 50u);
  std::vector<float> got(100, 1.0f);
  got[99] = 1.2f; // odd index: not sampled; ck moves by 0.2 * 100 = 20 > 2e-3 * 5070 = 10.14
  Verdict v = compareCapture(want, Tensor::fromFloats(ElementType::F32, {100}, got));
  EXPECT_EQ(v.status, Verdict::Fail);
  EXPECT_EQ(v.mismatches, 0);
  EXPECT_EQ(v.compared, 50);
  EXPECT_FALSE(v.ckOk);
  got[99] = 1.05f; // ck moves by 5 <= 10.11
  EXPECT_EQ(compareCapture(want, Tensor::fromFloats(ElementType::F32, {100}, got)).status, Verdict::Pass);
}

TEST(GoldenCompare, IntegersExact) {
  // ck = 3*1 + 1*2 + 4*3 + 1*4 + 5*5 = 46.
  Capture want = handCapture("hand", {1, 5}, {3, 1, 4, 1, 5}, 2, true);
  EXPECT_EQ(want.ck, 46.0);
  Verdict same = compareCapture(want, Tensor::fromInts(ElementType::I32, {5}, {3, 1, 4, 1, 5}));
  EXPECT_EQ(same.status, Verdict::Pass) << formatVerdict(same);
  EXPECT_EQ(same.maxUlpErr, 0.0);
  Verdict sampled = compareCapture(want, Tensor::fromInts(ElementType::I32, {5}, {3, 1, 5, 1, 5}));
  EXPECT_EQ(sampled.status, Verdict::Fail);
  EXPECT_EQ(sampled.mismatches, 1);
  EXPECT_TRUE(contains(sampled.detail, "got 5 want 4")) << sampled.detail;
  Verdict unsampled = compareCapture(want, Tensor::fromInts(ElementType::I32, {5}, {3, 2, 4, 1, 5}));
  EXPECT_EQ(unsampled.status, Verdict::Fail); // ck 48 != 46, exactly compared
  EXPECT_EQ(unsampled.mismatches, 0);
  EXPECT_TRUE(contains(unsampled.detail, "(exact)")) << unsampled.detail;
}

TEST(GoldenCompare, ShapeAndKindMismatch) {
  const Capture &q = **golden().capture("prefill12", "L0.sa_q"); // [1,12,4,32] f32 samples
  Tensor wrong(ElementType::BF16, {12, 4, 31});
  Verdict v = compareCapture("prefill12", q, wrong);
  EXPECT_EQ(v.status, Verdict::Fail);
  EXPECT_TRUE(contains(v.detail, "shape mismatch: capture [1,12,4,32] vs got tensor<12x4x31xbf16>")) << v.detail;
  EXPECT_TRUE(contains(formatVerdict(v), "FAIL  prefill12 L0.sa_q -- shape mismatch")) << formatVerdict(v);
  // Same element count, other shape.
  EXPECT_EQ(compareCapture(q, Tensor(ElementType::BF16, {12, 128})).status, Verdict::Fail);
  // Leading 1s are dropped on both sides.
  Verdict batch = compareCapture(q, Tensor(ElementType::BF16, {1, 12, 4, 32}));
  EXPECT_TRUE(batch.detail.find("shape") == std::string::npos) << batch.detail;

  const Capture &idx = **golden().capture("decode12", "L0.sa_topk_idxs");
  ASSERT_TRUE(idx.isInteger);
  Verdict kind = compareCapture(idx, Tensor(ElementType::F32, dropBatch(idx.shape)));
  EXPECT_EQ(kind.status, Verdict::Fail);
  EXPECT_TRUE(contains(kind.detail, "element kind mismatch")) << kind.detail;

  Capture broken = idx;
  broken.data.pop_back();
  Verdict nc = compareCapture(broken, tensorOf(idx));
  EXPECT_EQ(nc.status, Verdict::NotCompared);
  EXPECT_TRUE(contains(nc.detail, "inconsistent capture")) << nc.detail;
}

// The golden's full captures, turned into tensors, pass with zero error; perturbing one element fails exactly
// that capture.
TEST(GoldenCompare, GoldenCapturesPassAndPerturbationsFailExactlyThatCapture) {
  int full = 0;
  for (const Regime &r : golden().regimes()) {
    for (const auto &[name, c] : r.captures) {
      if (c.stride != 1)
        continue;
      ++full;
      Verdict v = compareCapture(r.name, c, tensorOf(c, /*dropLeadingOnes=*/full % 2 == 0));
      EXPECT_EQ(v.status, Verdict::Pass) << formatVerdict(v);
      EXPECT_EQ(v.maxAbsErr, 0.0) << r.name << "." << name;
      EXPECT_EQ(v.ckGot, c.ck) << r.name << "." << name;
    }
  }
  EXPECT_EQ(full, 156);

  auto runAll = [](const Regime &r, const std::string &target, const Tensor &perturbed) {
    std::vector<Verdict> verdicts;
    for (const auto &[name, c] : r.captures)
      if (c.stride == 1)
        verdicts.push_back(compareCapture(r.name, c, name == target ? perturbed : tensorOf(c)));
    return verdicts;
  };

  // Float: one element of decode12 L0.attn_in moved by 2^-6*|w| + 2^-8*max|w| plus a margin.
  const Regime &d12 = golden().regimes()[1];
  const Capture &attnIn = d12.captures.at("L0.attn_in");
  ASSERT_FALSE(attnIn.isInteger);
  Tensor t = tensorOf(attnIn);
  double maxWant = 0;
  for (double w : attnIn.data)
    maxWant = std::max(maxWant, std::fabs(w));
  const int64_t k = 17;
  const double w = attnIn.data[k];
  t.floats()[k] = static_cast<float>(w + 1.25 * (std::fabs(w) / 64 + maxWant / 256));
  std::vector<Verdict> verdicts = runAll(d12, "L0.attn_in", t);
  Summary s = summarize(verdicts);
  EXPECT_EQ(s.failed, 1);
  for (const Verdict &v : verdicts)
    if (v.status == Verdict::Fail) {
      EXPECT_EQ(v.name, "L0.attn_in");
      EXPECT_EQ(v.mismatches, 1);
      EXPECT_TRUE(contains(v.detail, "first at flat 17")) << v.detail;
    }

  // Integer: one window index of decode12 L0.sa_topk_idxs changed by one.
  const Capture &idx = d12.captures.at("L0.sa_topk_idxs");
  ASSERT_TRUE(idx.isInteger);
  Tensor ti = tensorOf(idx);
  ti.ints()[3] += 1;
  verdicts = runAll(d12, "L0.sa_topk_idxs", ti);
  s = summarize(verdicts);
  EXPECT_EQ(s.failed, 1);
  for (const Verdict &v : verdicts)
    if (v.status == Verdict::Fail) {
      EXPECT_EQ(v.name, "L0.sa_topk_idxs");
      EXPECT_EQ(v.mismatches, 1);
      EXPECT_FALSE(v.ckOk);
    }
}

// The debug golden stores every capture in full: each of its tensors must pass against the strided captures of
// the authoritative golden (README: bf16 samples identical, f32 within 7e-7 relative). Exercises the strided path
// on real data, and shows that a large change to an unstored element fails through the checksum.
TEST(GoldenCompare, FullDebugGoldenAgainstStridedCaptures) {
  if (!fileExists(kFullGoldenPath))
    GTEST_SKIP() << "no debug golden at " << kFullGoldenPath;
  auto fullOr = GoldenFile::load(kFullGoldenPath);
  ASSERT_TRUE(fullOr.ok()) << fullOr.error();
  const GoldenFile &full = *fullOr;
  std::vector<Verdict> verdicts;
  int strided = 0;
  for (const Regime &r : golden().regimes()) {
    for (const std::string &name : r.captureOrder) {
      const Capture &want = r.captures.at(name);
      auto got = full.capture(r.name, name);
      ASSERT_TRUE(got.ok()) << got.error();
      ASSERT_EQ((*got)->stride, 1) << r.name << "." << name;
      strided += want.stride > 1;
      verdicts.push_back(compareCapture(r.name, want, tensorOf(**got)));
      EXPECT_EQ(verdicts.back().status, Verdict::Pass) << formatVerdict(verdicts.back());
    }
  }
  EXPECT_GT(strided, 200);
  EXPECT_EQ(formatSummary(verdicts), "golden: 443 passed, 0 failed");

  // prefill12 L0.sa_q has stride 131: element 1 is not stored. Make it large.
  const Capture &want = **golden().capture("prefill12", "L0.sa_q");
  Tensor t = tensorOf(**full.capture("prefill12", "L0.sa_q"));
  t.floats()[1] += 1000.0f;
  Verdict v = compareCapture(want, t);
  EXPECT_EQ(v.status, Verdict::Fail);
  EXPECT_EQ(v.mismatches, 0);
  EXPECT_FALSE(v.ckOk);
}

TEST(GoldenCompare, Formatting) {
  Capture want = handCapture("hand", {1, 100}, std::vector<double>(100, 1.0), 1, false);
  want.name = "L0.sa_q";
  std::vector<float> got(100, 1.0f);
  Verdict pass = compareCapture("prefill12", want, Tensor::fromFloats(ElementType::F32, {100}, got));
  EXPECT_EQ(formatVerdict(pass), "PASS  prefill12 L0.sa_q  max_abs 0 max_ulp 0 bad 0/100 ck 5050/5050");
  Verdict noRegime = compareCapture(want, Tensor::fromFloats(ElementType::F32, {100}, got));
  EXPECT_EQ(formatVerdict(noRegime), "PASS  L0.sa_q  max_abs 0 max_ulp 0 bad 0/100 ck 5050/5050");
  got[0] = 1.5f;
  Verdict fail = compareCapture("prefill12", want, Tensor::fromFloats(ElementType::F32, {100}, got));
  EXPECT_EQ(formatVerdict(fail), "FAIL  prefill12 L0.sa_q  max_abs 0.5 max_ulp 64 bad 1/100 ck 5050.5/5050 -- 1 of "
                                 "100 samples differ; first at flat 0 [0,0]: got 1.5 want 1 tol 0.0195312");
  Verdict skip = notCompared("decode12", "shared.L2.candidates", "holds the previous step's L4 mask");
  EXPECT_EQ(formatVerdict(skip), "SKIP  decode12 shared.L2.candidates -- holds the previous step's L4 mask");
  EXPECT_EQ(formatSummary(std::vector<Verdict>{pass, fail, noRegime}), "golden: 2 passed, 1 failed");
  EXPECT_EQ(formatSummary(std::vector<Verdict>{pass, skip}), "golden: 1 passed, 0 failed (1 not compared)");
  EXPECT_FALSE(summarize({pass, fail}).allPassed());
  EXPECT_TRUE(summarize({pass, skip}).allPassed());
}
