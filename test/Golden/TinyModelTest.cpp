//===- TinyModelTest.cpp - the tiny-model harness against the goldens ---------===//
//
// Replays the three regimes of test/Golden/ds41_tiny_golden.json in order with golden::TinyModel. The attention of
// every layer is the stored `L<l>.attn_out` of the FULL debug golden (../shared/golden/ds41_tiny_golden_full.json,
// every capture stride 1; the tests that need it skip when it is absent); nothing else is resynchronised. Every
// harness capture is compared with golden::compareCapture (attention-semantics.md section 12) against BOTH files;
// the compact golden is the authority.
//
//===----------------------------------------------------------------------------------------------------------===//

#include "dsa/Golden/Golden.h"
#include "dsa/Golden/TinyModel.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <set>

using namespace dsa;
using namespace dsa::golden;
using dsa::ElementType;
using dsa::Tensor;
using namespace dsa::test;

namespace {

/// The captures the attention produces itself (not the harness's): sa_* and the shared slots.
bool isAttentionInternal(const std::string &name) {
  if (name.rfind("shared.", 0) == 0)
    return true;
  const size_t dot = name.find('.');
  return dot != std::string::npos && name.compare(dot + 1, 3, "sa_") == 0;
}

class TinyModelGoldenTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    auto compact = GoldenFile::load(kTinyGoldenPath);
    ASSERT_TRUE(compact.ok()) << compact.error();
    compact_ = new GoldenFile(compact.take());
    if (fileExists(kFullGoldenPath)) {
      auto full = GoldenFile::load(kFullGoldenPath);
      ASSERT_TRUE(full.ok()) << full.error();
      full_ = new GoldenFile(full.take());
    }
  }
  static void TearDownTestSuite() {
    delete compact_;
    delete full_;
    compact_ = full_ = nullptr;
  }

  /// An attention callback that returns the full golden's `L<l>.attn_out` of `regime` as bf16 [s, dim].
  static AttentionFn storedAttention(const std::string &regime) {
    return [regime](int64_t layer, const Tensor &attnIn, int64_t) -> Result<Tensor> {
      auto cap = full_->capture(regime, "L" + std::to_string(layer) + ".attn_out");
      if (!cap)
        return Error{cap.error()};
      const Capture &c = **cap;
      if (c.stride != 1 || c.isInteger)
        return makeError(c.name + " is not a full float capture (stride " + std::to_string(c.stride) + ")");
      std::vector<float> values(c.data.begin(), c.data.end());
      Tensor t = Tensor::fromFloats(ElementType::BF16, attnIn.shape(), std::move(values));
      if (t.numElements() != c.n)
        return makeError(c.name + " has " + std::to_string(c.n) + " elements, attn_in " +
                         std::to_string(attnIn.numElements()));
      for (int64_t i = 0; i < c.n; ++i) // the stored values are bf16: fromFloats must not have changed them
        if (static_cast<double>(t.floats()[i]) != c.data[static_cast<size_t>(i)])
          return makeError(c.name + " holds a value that is not bf16 at " + std::to_string(i));
      return t;
    };
  }

  static GoldenFile *compact_;
  static GoldenFile *full_;
};

GoldenFile *TinyModelGoldenTest::compact_ = nullptr;
GoldenFile *TinyModelGoldenTest::full_ = nullptr;

TEST_F(TinyModelGoldenTest, InputIdsRegenerateFromFixedInts) {
  const Fixture &f = compact_->fixture();
  auto all = fixedInts("input_ids", f.batch * (f.prefillLen + 2), f.vocabSize);
  ASSERT_TRUE(all.ok()) << all.error();
  ASSERT_EQ(compact_->regimes().size(), 3u);
  for (const Regime &r : compact_->regimes()) {
    auto ids = regimeInputIds(f, r);
    ASSERT_TRUE(ids.ok()) << ids.error();
    auto cap = compact_->capture(r.name, "input_ids");
    ASSERT_TRUE(cap.ok()) << cap.error();
    ASSERT_EQ((*cap)->stride, 1);
    ASSERT_EQ(ids->size(), (*cap)->data.size()) << r.name;
    for (size_t t = 0; t < ids->size(); ++t) {
      EXPECT_EQ(static_cast<double>((*ids)[t]), (*cap)->data[t]) << r.name << " token " << t;
      EXPECT_EQ((*ids)[t], (*all)[static_cast<size_t>(r.startPos) + t]) << r.name << " token " << t;
    }
  }
  // The regimes run in order on one sequence: prefill12 at 0 (12 tokens), decode12 at 12, decode13 at 13.
  EXPECT_EQ(compact_->regimes()[0].startPos, 0);
  EXPECT_EQ(compact_->regimes()[0].numTokens, f.prefillLen);
  EXPECT_EQ(compact_->regimes()[1].startPos, f.prefillLen);
  EXPECT_EQ(compact_->regimes()[2].startPos, f.prefillLen + 1);
}

TEST_F(TinyModelGoldenTest, ReplayMatchesBothGoldens) {
  if (!full_)
    GTEST_SKIP() << "full debug golden absent: " << kFullGoldenPath;
  auto model = TinyModel::create(*compact_);
  ASSERT_TRUE(model.ok()) << model.error();

  std::vector<Verdict> verdicts;
  int64_t compared = 0;
  for (const Regime &regime : compact_->regimes()) {
    auto ids = regimeInputIds(compact_->fixture(), regime);
    ASSERT_TRUE(ids.ok()) << ids.error();
    CaptureMap got;
    auto out = model->step(*ids, regime.startPos, storedAttention(regime.name), recordInto(got));
    ASSERT_TRUE(out.ok()) << regime.name << ": " << out.error();

    for (const GoldenFile *golden : {compact_, full_}) {
      const Regime *want = golden->regime(regime.name);
      ASSERT_NE(want, nullptr) << regime.name;
      // Every non-attention capture of the golden is produced, and every produced capture exists in the golden.
      std::set<std::string> expected;
      for (const auto &[name, cap] : want->captures)
        if (!isAttentionInternal(name))
          expected.insert(name);
      std::set<std::string> produced;
      for (const auto &[name, t] : got)
        produced.insert(name);
      EXPECT_EQ(produced, expected) << regime.name;
      for (const auto &[name, t] : got) {
        auto it = want->captures.find(name);
        if (it == want->captures.end())
          continue;
        Verdict v = compareCapture(regime.name, it->second, t);
        EXPECT_EQ(v.status, Verdict::Pass) << (golden == full_ ? "[full] " : "[compact] ") << formatVerdict(v);
        compared += v.compared;
        verdicts.push_back(v);
      }
    }

    // engram_hashes exactly, element by element, against the full golden (stride 1).
    auto hashes = full_->capture(regime.name, "engram_hashes");
    ASSERT_TRUE(hashes.ok()) << hashes.error();
    ASSERT_EQ((*hashes)->stride, 1);
    ASSERT_EQ(out->hashes.numElements(), (*hashes)->n);
    for (int64_t i = 0; i < (*hashes)->n; ++i)
      EXPECT_EQ(static_cast<double>(out->hashes.ints()[i]), (*hashes)->data[static_cast<size_t>(i)])
          << regime.name << " engram_hashes[" << i << "]";
    // The returned logits are the logits_full capture.
    ASSERT_EQ(out->logits.shape(), (std::vector<int64_t>{regime.numTokens, compact_->fixture().vocabSize}));
    EXPECT_EQ(out->logits.floatVector(), got.at("logits_full").floatVector());
  }
  Summary summary = summarize(verdicts);
  std::printf("%s (%lld samples)\n", formatSummary(summary).c_str(), static_cast<long long>(compared));
  EXPECT_TRUE(summary.allPassed());
  EXPECT_EQ(summary.notCompared, 0);
  // 3 regimes x 2 files x (6 globals + 6 layers x 16 + 2 engram layers x 5).
  EXPECT_EQ(static_cast<int64_t>(verdicts.size()), 3 * 2 * (6 + 6 * 16 + 2 * 5));
}

TEST_F(TinyModelGoldenTest, FailedStepLeavesTheSequenceUnchanged) {
  if (!full_)
    GTEST_SKIP() << "full debug golden absent: " << kFullGoldenPath;
  auto model = TinyModel::create(*compact_);
  ASSERT_TRUE(model.ok()) << model.error();
  const Regime &prefill = compact_->regimes()[0];
  const Regime &decode = compact_->regimes()[1];
  auto ids = regimeInputIds(compact_->fixture(), prefill);
  ASSERT_TRUE(ids.ok());
  ASSERT_TRUE(model->step(*ids, 0, storedAttention(prefill.name)).ok());

  // A step at position 5 would redefine the sequence from there on; it fails at layer 3, so nothing changes.
  AttentionFn failing = [](int64_t layer, const Tensor &attnIn, int64_t) -> Result<Tensor> {
    if (layer == 3)
      return makeError("injected failure");
    return Tensor(ElementType::BF16, attnIn.shape());
  };
  auto bad = model->step({7}, 5, failing);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("layer 3"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("injected failure"), std::string::npos) << bad.error();

  // decode12's hashes read positions 9..12, which the failed step would have forgotten.
  auto decodeIds = regimeInputIds(compact_->fixture(), decode);
  ASSERT_TRUE(decodeIds.ok());
  CaptureMap got;
  auto out = model->step(*decodeIds, decode.startPos, storedAttention(decode.name), recordInto(got));
  ASSERT_TRUE(out.ok()) << out.error();
  auto hashes = compact_->capture(decode.name, "engram_hashes");
  ASSERT_TRUE(hashes.ok());
  Verdict v = compareCapture(decode.name, **hashes, out->hashes);
  EXPECT_EQ(v.status, Verdict::Pass) << formatVerdict(v);
  auto logits = compact_->capture(decode.name, "logits_full");
  ASSERT_TRUE(logits.ok());
  v = compareCapture(decode.name, **logits, out->logits);
  EXPECT_EQ(v.status, Verdict::Pass) << formatVerdict(v);

  // reset() forgets the sequence: the same decode step now hashes with padding and differs from the golden.
  model->reset();
  auto again = model->step(*decodeIds, decode.startPos, storedAttention(decode.name));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(compareCapture(decode.name, **hashes, again->hashes).status, Verdict::Fail);
}

TEST_F(TinyModelGoldenTest, BadStepArgumentsAreErrors) {
  auto model = TinyModel::create(*compact_);
  ASSERT_TRUE(model.ok()) << model.error();
  const int64_t dim = compact_->fixture().dim, maxSeq = compact_->fixture().maxSeqLen;
  AttentionFn zeros = [](int64_t, const Tensor &attnIn, int64_t) -> Result<Tensor> {
    return Tensor(ElementType::BF16, attnIn.shape());
  };
  auto expectError = [](const Result<StepOutputs> &r, const std::string &needle) {
    ASSERT_FALSE(r.ok()) << "expected an error mentioning '" << needle << "'";
    EXPECT_NE(r.error().find(needle), std::string::npos) << r.error();
  };
  expectError(model->step({}, 0, zeros), "ids is empty");
  expectError(model->step({1, 64}, 0, zeros), "ids[1]");
  expectError(model->step({1, -1}, 0, zeros), "ids[1]");
  expectError(model->step({1}, -1, zeros), "start_pos");
  expectError(model->step({1, 2}, maxSeq - 1, zeros), "max_seq_len");
  expectError(model->step({1}, 0, AttentionFn{}), "no attention callback");
  AttentionFn wrongShape = [dim](int64_t layer, const Tensor &attnIn, int64_t) -> Result<Tensor> {
    if (layer == 2)
      return Tensor(ElementType::BF16, {attnIn.dim(0), dim + 1});
    return Tensor(ElementType::BF16, attnIn.shape());
  };
  expectError(model->step({1, 2}, 0, wrongShape), "layer 2");
  AttentionFn intResult = [](int64_t, const Tensor &attnIn, int64_t) -> Result<Tensor> {
    return Tensor(ElementType::I64, attnIn.shape());
  };
  expectError(model->step({1}, 0, intResult), "layer 0");
  // The last position fits.
  EXPECT_TRUE(model->step({1}, maxSeq - 1, zeros).ok());
}

/// A copy of the compact golden's text with `from` replaced by `to` (exactly once).
std::string editedGolden(const std::string &from, const std::string &to) {
  std::string text = readText(kTinyGoldenPath);
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from << " is not unique";
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

void expectCreateError(const std::string &text, const std::string &needle) {
  auto golden = GoldenFile::parse(text, "edited");
  ASSERT_TRUE(golden.ok()) << golden.error();
  auto model = TinyModel::create(*golden);
  ASSERT_FALSE(model.ok()) << "expected an error mentioning '" << needle << "'";
  EXPECT_NE(model.error().find(needle), std::string::npos) << model.error();
}

TEST(TinyModelCreateTest, MissingWeightIsNamed) {
  expectCreateError(editedGolden("\"layers.3.ffn.experts.1.w2.weight\"", "\"layers.3.ffn.experts.1.w2.weightX\""),
                    "layers.3.ffn.experts.1.w2.weight");
}

TEST(TinyModelCreateTest, WrongChecksumIsNamed) {
  expectCreateError(editedGolden("\"norm.weight\":{\"shape\":[64],\"n\":64,\"scale\":0.05,\"offset\":1.0,\"kind\":"
                                 "\"f32\",\"dtype\":\"bfloat16\",\"ck\":2069.875}",
                                 "\"norm.weight\":{\"shape\":[64],\"n\":64,\"scale\":0.05,\"offset\":1.0,\"kind\":"
                                 "\"f32\",\"dtype\":\"bfloat16\",\"ck\":2070.875}"),
                    "norm.weight");
}

TEST(TinyModelCreateTest, WrongWeightShapeIsNamed) {
  // gate.bias must have n_routed_experts entries.
  expectCreateError(editedGolden("\"n_routed_experts\":4", "\"n_routed_experts\":3"), "ffn.gate.weight");
}

TEST(TinyModelCreateTest, UnspecifiedScoreFuncIsRejected) {
  expectCreateError(editedGolden("\"score_func\":\"sqrtsoftplus\"", "\"score_func\":\"softmax\""), "score_func");
}

TEST(TinyModelCreateTest, WrongEngramScalesAreRejected) {
  // fixture.engram.scales[0][0] is 0.5 and must equal the regenerated e8m0 scale of row 0.
  expectCreateError(editedGolden("\"scales\":[[0.5,", "\"scales\":[[0.25,"), "engram");
}

// The override sees each capture after the sink and the forward continues with its replacement: a replaced
// attn_in is what the attention callback gets, a replaced moe_indices routes the experts, a replaced capture of
// another shape is an error.
TEST(TinyModelCreateTest, OverrideReplacesWhatTheForwardReads) {
  auto model = TinyModel::create(dsa::test::golden());
  ASSERT_TRUE(model.ok()) << model.error();
  std::vector<std::vector<float>> attentionInputs;
  AttentionFn zeros = [&](int64_t layer, const Tensor &attnIn, int64_t) -> Result<Tensor> {
    if (layer == 0)
      attentionInputs.push_back(attnIn.floatVector());
    return Tensor(ElementType::BF16, attnIn.shape());
  };
  const std::vector<int64_t> ids = {3, 1};
  CaptureMap plain, forced;
  ASSERT_TRUE(model->step(ids, 0, zeros, recordInto(plain)).ok());
  CaptureOverride override = [](const std::string &name, Tensor &value) {
    if (name == "L0.attn_in")
      value = Tensor::fromFloats(ElementType::BF16, value.shape(), std::vector<float>(value.floatVector().size(), 0.5f));
    if (name == "L0.moe_indices") // route both tokens to experts 0 and 1
      value = Tensor::fromInts(ElementType::I64, value.shape(), {0, 1, 0, 1});
  };
  ASSERT_TRUE(model->step(ids, 0, zeros, recordInto(forced), override).ok());
  ASSERT_EQ(attentionInputs.size(), 2u);
  EXPECT_EQ(attentionInputs[0], plain.at("L0.attn_in").floatVector());
  EXPECT_EQ(attentionInputs[1], std::vector<float>(attentionInputs[1].size(), 0.5f));
  // The sink saw the computed values, not the replacements.
  EXPECT_EQ(forced.at("L0.attn_in").floatVector(), plain.at("L0.attn_in").floatVector());
  EXPECT_EQ(forced.at("L0.moe_indices").intVector(), plain.at("L0.moe_indices").intVector());
  if (plain.at("L0.moe_indices").intVector() != std::vector<int64_t>{0, 1, 0, 1} &&
      plain.at("L0.moe_indices").intVector() != std::vector<int64_t>{1, 0, 1, 0}) {
    EXPECT_NE(forced.at("L0.ffn_out").floatVector(), plain.at("L0.ffn_out").floatVector());
  }
  // Another shape, or an expert that does not exist, is an error.
  CaptureOverride reshaped = [](const std::string &name, Tensor &value) {
    if (name == "embed")
      value = Tensor(ElementType::BF16, {1, 1});
  };
  auto bad = model->step(ids, 0, zeros, {}, reshaped);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("the override of 'embed' changed"), std::string::npos) << bad.error();
  CaptureOverride noExpert = [](const std::string &name, Tensor &value) {
    if (name == "L0.moe_indices")
      value = Tensor::fromInts(ElementType::I64, value.shape(), {0, 9, 0, 1});
  };
  bad = model->step(ids, 0, zeros, {}, noExpert);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("moe expert index 9"), std::string::npos) << bad.error();
}

// A model without engram layers (tiny-model-harness.md, "Other goldens in this format"): engram null and no engram
// weights load; a step hashes nothing and emits no engram capture, and layer 0 (before the first engram layer of
// the tiny golden) computes exactly what it computes with engram tables.
TEST(TinyModelCreateTest, NoEngramLayers) {
  std::string text = readText(kTinyGoldenPath);
  const size_t begin = text.find("\"engram\":{\"layer_ids\"");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = text.find("}", text.find("\"scales\":", begin)); // the scales are the tables' last key
  ASSERT_NE(end, std::string::npos);
  text.replace(begin, end + 1 - begin, "\"engram\":null");
  const std::string ids = "\"engram_layer_ids\":[1,4]";
  ASSERT_NE(text.find(ids), std::string::npos);
  text.replace(text.find(ids), ids.size(), "\"engram_layer_ids\":[]");
  auto noEngram = GoldenFile::parse(text, "no-engram");
  ASSERT_TRUE(noEngram.ok()) << noEngram.error();
  ASSERT_FALSE(noEngram->fixture().hasEngram);
  auto model = TinyModel::create(*noEngram);
  ASSERT_TRUE(model.ok()) << model.error();
  auto withEngram = TinyModel::create(dsa::test::golden());
  ASSERT_TRUE(withEngram.ok()) << withEngram.error();

  AttentionFn zeros = [](int64_t, const Tensor &attnIn, int64_t) -> Result<Tensor> {
    return Tensor(ElementType::BF16, attnIn.shape());
  };
  const std::vector<int64_t> ids5 = {3, 1, 4, 1, 5};
  CaptureMap got, ref;
  auto out = model->step(ids5, 0, zeros, recordInto(got));
  ASSERT_TRUE(out.ok()) << out.error();
  ASSERT_TRUE(withEngram->step(ids5, 0, zeros, recordInto(ref)).ok());
  EXPECT_EQ(out->hashes.shape(), (std::vector<int64_t>{5, 0, 0}));
  for (const auto &[name, value] : got)
    EXPECT_EQ(name.find("engram"), std::string::npos) << name;
  EXPECT_TRUE(ref.count("engram_hashes") && ref.count("L1.engram_out"));
  for (const char *name : {"L0.h_out", "L0.ffn_out", "L0.pre_mix_out"})
    EXPECT_EQ(got.at(name).floatVector(), ref.at(name).floatVector()) << name;
  // Without an engram, layer 1's input is layer 0's output.
  EXPECT_EQ(got.at("L1.h_in").floatVector(), got.at("L0.h_out").floatVector());
  EXPECT_NE(ref.at("L1.h_in").floatVector(), ref.at("L0.h_out").floatVector());
}

} // namespace
