//===- GoldenFillerTest.cpp - weight filler, probe and input ids ----------------===//
//
// Expected values: published FNV-1a / splitmix64 test vectors, hand-rounded dtype cases (tiny-model-harness.md
// rounding rules), and the golden's own ck / lcg_probe / engram scales / input_ids captures.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Golden/Filler.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace dsa::golden;
using dsa::Status;
using dsa::ElementType;
using namespace dsa::test;

TEST(GoldenFiller, Fnv1a64PublishedVectors) {
  EXPECT_EQ(fnv1a64(""), 0xCBF29CE484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xAF63DC4C8601EC8Cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171F73967E8ull);
}

TEST(GoldenFiller, Splitmix64PublishedVectors) {
  // The splitmix64 generator seeded with 0 outputs splitmix64(k * gamma) for k = 0, 1, 2, ...
  EXPECT_EQ(splitmix64(0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(splitmix64(kGoldenGamma), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(splitmix64(2 * kGoldenGamma), 0x06C45D188009454Full);
}

TEST(GoldenFiller, FillerRangeAndOffset) {
  // (2u - 1) * scale + offset with u in [0, 1): values in [offset - scale, offset + scale).
  std::vector<float> v = fillerValues("x", 1000, 0.25, 3.0);
  ASSERT_EQ(v.size(), 1000u);
  for (float x : v) {
    EXPECT_GE(x, 2.75f);
    EXPECT_LT(x, 3.25f);
  }
  EXPECT_TRUE(fillerValues("x", 0, 1.0, 0.0).empty());
  std::vector<float> c = fillerValues("y", 5, 0.0, -1.5);
  EXPECT_EQ(c, std::vector<float>(5, -1.5f));
}

TEST(GoldenFiller, RoundToDtypeHandCases) {
  // bf16 RNE: ulp at 1 is 2^-7. 1 + 2^-8 is a tie -> even (1); 1 + 2^-7 + 2^-8 is a tie -> even (1 + 2^-6).
  auto b = roundToDtype({1.0f + 0x1p-8f, 1.0f + 0x1p-7f + 0x1p-8f, -3.0f}, "bfloat16");
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(*b, (std::vector<float>{1.0f, 1.0f + 0x1p-6f, -3.0f}));
  // e4m3fn: ulp on [0.25, 0.5) is 2^-5, 0.3 / 2^-5 = 9.6 -> 10 * 2^-5 = 0.3125; saturates at 448.
  auto e = roundToDtype({0.3f, 500.0f, -1000.0f, 1.0f}, "float8_e4m3fn");
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(*e, (std::vector<float>{0.3125f, 448.0f, -448.0f, 1.0f}));
  // e8m0 (torch cast): 1.5 has guard set, e = 127 > 0 -> 2; 1.25 has no guard -> 1; 0.75 = 1.5 * 2^-1 -> 1;
  // sign ignored: -3 = -1.5 * 2 -> 4; 0 -> 2^-127.
  auto s = roundToDtype({1.5f, 1.25f, 0.75f, -3.0f, 0.0f}, "float8_e8m0fnu");
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(*s, (std::vector<float>{2.0f, 1.0f, 1.0f, 4.0f, std::ldexp(1.0f, -127)}));
  auto f = roundToDtype({0.1f}, "float32");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)[0], 0.1f);
  auto bad = roundToDtype({0.1f}, "float16");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.error(), "float16")) << bad.error();
}

// All 226 weights regenerate and match the ck of weights_meta (checked by regenerateWeight, and recomputed here).
TEST(GoldenFiller, AllWeightsRegenerateWithTheirCk) {
  const auto &weights = golden().weights();
  ASSERT_EQ(weights.size(), 226u);
  int dtypes[4] = {0, 0, 0, 0};
  for (const WeightMeta &meta : weights) {
    auto t = regenerateWeight(meta);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->shape(), meta.shape) << meta.name;
    EXPECT_EQ(t->elementType(), meta.dtype == "bfloat16" ? ElementType::BF16 : ElementType::F32) << meta.name;
    ASSERT_EQ(static_cast<int64_t>(t->floatVector().size()), meta.n) << meta.name;
    double ck = 0, mass = 0;
    for (size_t i = 0; i < t->floatVector().size(); ++i) {
      double v = t->floatVector()[i];
      ck += v * static_cast<double>(i + 1);
      mass += std::fabs(v) * static_cast<double>(i + 1);
    }
    EXPECT_LE(std::fabs(ck - meta.ck), 1e-13 * mass) << meta.name << " ck " << ck << " want " << meta.ck;
    dtypes[meta.dtype == "bfloat16" ? 0 : meta.dtype == "float32" ? 1 : meta.dtype == "float8_e4m3fn" ? 2 : 3]++;
  }
  // Counts read off weights_meta: 171 bf16, 51 f32, 2 e4m3 tables, 2 e8m0 scales.
  EXPECT_EQ(dtypes[0], 171);
  EXPECT_EQ(dtypes[1], 51);
  EXPECT_EQ(dtypes[2], 2);
  EXPECT_EQ(dtypes[3], 2);
}

TEST(GoldenFiller, CkMismatchIsReported) {
  const WeightMeta *embed = golden().weight("embed.weight");
  ASSERT_NE(embed, nullptr);
  auto values = regenerateValues(*embed);
  ASSERT_TRUE(values.ok());
  // One bf16 ulp on element 0 (weight 1 in the checksum) must not go unnoticed.
  int exp = 0;
  std::frexp((*values)[0], &exp);
  WeightMeta tampered = *embed;
  tampered.ck += std::ldexp(1.0, exp - 1 - 7);
  auto r = regenerateWeight(tampered);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error(), "embed.weight")) << r.error();
  EXPECT_TRUE(contains(r.error(), "regenerated ck")) << r.error();
  EXPECT_TRUE(contains(r.error(), "want 51667.90")) << r.error();

  WeightMeta renamed = *embed; // another name -> another stream -> another ck
  renamed.name = "embed.weights";
  EXPECT_FALSE(regenerateWeight(renamed).ok());
  WeightMeta wrongDtype = *embed;
  wrongDtype.dtype = "float32"; // unrounded values -> another ck
  EXPECT_FALSE(regenerateWeight(wrongDtype).ok());
  WeightMeta unknown = *embed;
  unknown.dtype = "int8";
  auto u = regenerateWeight(unknown);
  ASSERT_FALSE(u.ok());
  EXPECT_TRUE(contains(u.error(), "embed.weight") && contains(u.error(), "int8")) << u.error();
  WeightMeta badShape = *embed;
  badShape.shape = {64, 63};
  auto s = regenerateWeight(badShape);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.error(), "embed.weight")) << s.error();
}

TEST(GoldenFiller, LcgProbeMatchesFixture) {
  const Fixture &f = golden().fixture();
  auto probe = lcgProbe(static_cast<int64_t>(f.lcgProbe.size()));
  ASSERT_TRUE(probe.ok());
  EXPECT_EQ(*probe, f.lcgProbe);
  Status ok = checkLcgProbe(f);
  EXPECT_TRUE(ok.ok()) << ok.error();

  Fixture tampered = f;
  tampered.lcgProbe[3] ^= 1;
  Status bad = checkLcgProbe(tampered);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.error(), "lcg_probe[3]")) << bad.error();
  tampered.lcgProbe.clear();
  EXPECT_FALSE(checkLcgProbe(tampered).ok());
  EXPECT_FALSE(lcgProbe(-1).ok());
}

// fixture.engram.scales equals the e8m0-rounded filler of layers.<l>.engram.embed.scale.
TEST(GoldenFiller, EngramScalesEqualTheE8M0Filler) {
  const GoldenFile &g = golden();
  Status s = checkEngramScales(g);
  EXPECT_TRUE(s.ok()) << s.error();
  const EngramTables &e = g.fixture().engram;
  ASSERT_EQ(e.layerIds.size(), 2u);
  for (size_t l = 0; l < e.layerIds.size(); ++l) {
    const WeightMeta *meta = g.weight("layers." + std::to_string(e.layerIds[l]) + ".engram.embed.scale");
    ASSERT_NE(meta, nullptr);
    auto t = regenerateWeight(*meta);
    ASSERT_TRUE(t.ok()) << t.error();
    ASSERT_EQ(t->floatVector().size(), e.scales[l].size());
    for (size_t i = 0; i < e.scales[l].size(); ++i)
      ASSERT_EQ(static_cast<double>(t->floatVector()[i]), e.scales[l][i]) << meta->name << "[" << i << "]";
  }

  // An edited table is caught, naming the row.
  std::string edited = readText(kTinyGoldenPath);
  size_t at = edited.find("\"scales\":[[0.5,");
  ASSERT_NE(at, std::string::npos);
  edited.replace(at, 15, "\"scales\":[[0.25,");
  auto g2 = GoldenFile::parse(edited, "edited.json");
  ASSERT_TRUE(g2.ok()) << g2.error();
  Status bad = checkEngramScales(*g2);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.error(), "layers.1.engram.embed.scale[0]")) << bad.error();
}

// The input ids rule reproduces every regime's input_ids capture.
TEST(GoldenFiller, InputIdsMatchCaptures) {
  const GoldenFile &g = golden();
  for (const Regime &r : g.regimes()) {
    auto ids = regimeInputIds(g.fixture(), r);
    ASSERT_TRUE(ids.ok()) << ids.error();
    const Capture &want = r.captures.at("input_ids");
    ASSERT_EQ(ids->size(), want.data.size()) << r.name;
    for (size_t t = 0; t < ids->size(); ++t)
      EXPECT_EQ(static_cast<double>((*ids)[t]), want.data[t]) << r.name << " token " << t;
  }
  // tiny-model-harness.md: fixed_ints('input_ids', 14, 64); the prefill takes 0..11, decode12 12, decode13 13.
  auto all = fixedInts("input_ids", 14, 64);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(static_cast<double>((*all)[12]), g.regimes()[1].captures.at("input_ids").data[0]);
  EXPECT_EQ(static_cast<double>((*all)[13]), g.regimes()[2].captures.at("input_ids").data[0]);
  EXPECT_FALSE(fixedInts("input_ids", 3, 0).ok());
  EXPECT_FALSE(fixedInts("input_ids", -1, 64).ok());
  EXPECT_FALSE(regimeInputIds(g.fixture(), g.regimes()[0], 1).ok()); // batch row out of range
}

// tiny-model-harness.md, "Other goldens in this format": n = fixture.n_tokens when stated, else prefill_len + 2;
// the ids at position t of row 0 do not depend on n.
TEST(GoldenFiller, InputIdsPastPrefillLenPlusTwo) {
  const GoldenFile &g = golden();
  Regime later = g.regimes()[2];
  later.idsBegin = 13;
  later.idsEnd = 18; // 18 > prefill_len + 2 = 14: a golden with more decode steps
  auto ids = regimeInputIds(g.fixture(), later);
  ASSERT_TRUE(ids.ok()) << ids.error();
  auto all = fixedInts("input_ids", 18, 64);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*ids, std::vector<int64_t>(all->begin() + 13, all->end()));

  // An explicit n_tokens bounds the row.
  Fixture withN = g.fixture();
  withN.nTokens = 14;
  auto refused = regimeInputIds(withN, later);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.error(), "needs tokens [13, 18) of batch row 0 but the rule gives 14 per row "
                                        "(fixture.n_tokens)"))
      << refused.error();
  // Any n holding the slice gives row 0 the same ids.
  withN.nTokens = 20;
  for (const Regime &r : g.regimes()) {
    auto same = regimeInputIds(withN, r);
    ASSERT_TRUE(same.ok()) << same.error();
    EXPECT_EQ(*same, *regimeInputIds(g.fixture(), r)) << r.name;
  }
  // Row 1 starts at n: fixed_ints('input_ids', batch*n, vocab)[1*n + t].
  withN.batch = 2;
  auto row1 = regimeInputIds(withN, g.regimes()[1], 1);
  ASSERT_TRUE(row1.ok()) << row1.error();
  auto two = fixedInts("input_ids", 40, 64);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*row1, std::vector<int64_t>{(*two)[20 + 12]});
  // Without n_tokens a row > 0 cannot reach past prefill_len + 2.
  Fixture noN = g.fixture();
  noN.batch = 2;
  EXPECT_FALSE(regimeInputIds(noN, later, 1).ok());
  EXPECT_TRUE(regimeInputIds(noN, g.regimes()[2], 1).ok());
}

// Hostile input (issue 12): a weight's n is checked against the tensor byte limit before anything is allocated, and
// its shape's product is overflow-checked.
TEST(GoldenFiller, HugeWeightIsAnErrorBeforeAllocating) {
  WeightMeta meta;
  meta.name = "layers.0.attn.attn_sink";
  meta.shape = {int64_t(1) << 40};
  meta.n = int64_t(1) << 40;
  meta.dtype = "float32";
  auto r = regenerateValues(meta);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error(), "weights_meta.layers.0.attn.attn_sink.n: 1099511627776 values are above the tensor "
                                  "byte limit"))
      << r.error();
  meta.shape = {int64_t(1) << 32, int64_t(1) << 32}; // the product overflows int64
  r = regenerateValues(meta);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error(), "does not match its shape (product overflows)")) << r.error();
}
