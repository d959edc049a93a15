// Section 1 roles and validity rules, on the tiny golden's fixture and hand-edited variants of it.
#include "dsa/Golden/GoldenFile.h"
#include "dsa/Golden/ModelConfig.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

using namespace dsa::golden;

namespace {

/// A copy of the tiny golden's fixture, to edit.
Fixture tinyFixture() { return dsa::test::golden().fixture(); }

std::string errorOf(const Fixture &f) {
  dsa::Status s = validateModelConfig(f);
  return s.ok() ? std::string("<ok>") : s.error();
}

TEST(ModelConfig, TinyGoldenRoles) {
  Fixture f = tinyFixture();
  ASSERT_EQ(errorOf(f), "<ok>");
  // The golden README: L2 kv+index source, L3 reader, L4 kv+index+candidate source, L5 index source using candidates.
  LayerRole l2 = layerRole(f, 2), l3 = layerRole(f, 3), l4 = layerRole(f, 4), l5 = layerRole(f, 5);
  EXPECT_TRUE(l2.isKvSource && l2.isIndexSource && !l2.isCandidateSource && !l2.usesCandidates);
  EXPECT_TRUE(!l3.isKvSource && !l3.isIndexSource && l3.ratio == 2);
  EXPECT_TRUE(l4.isKvSource && l4.isIndexSource && l4.isCandidateSource && !l4.usesCandidates);
  EXPECT_TRUE(!l5.isKvSource && l5.isIndexSource && l5.usesCandidates && l5.ratio == 1);
  EXPECT_EQ(layerRole(f, 0).ratio, 0);
}

TEST(ModelConfig, ReaderOfAnotherRatio) {
  Fixture f = tinyFixture();
  f.compressRatios[3] = 1; // L3 would read L2's ratio-2 compress_kv
  EXPECT_EQ(errorOf(f), "layer 3 (ratio 1) reads compress_kv, but the most recent kv source before it, layer 2, "
                        "has ratio 2");
}

TEST(ModelConfig, ReaderWithoutSource) {
  Fixture f = tinyFixture();
  f.compressRatios[1] = 2; // L1 becomes a ratio-2 reader before any source
  EXPECT_EQ(errorOf(f), "layer 1 (ratio 2) reads compress_kv, but no kv source comes before it");
}

TEST(ModelConfig, IndexSourceReadsIndexKeysOfAnotherRatio) {
  Fixture f = tinyFixture();
  // L5 (index source, not a kv source) reads index_k and compress_kv from L4; make L5 ratio 2 and stop it using
  // candidates. Both slots come from the same most recent kv source, so the compress_kv rule reports it first.
  f.compressRatios[5] = 2;
  f.candidateSourceLayer = -1;
  EXPECT_EQ(errorOf(f), "layer 5 (ratio 2) reads compress_kv, but the most recent kv source before it, layer 4, has "
                        "ratio 1");
}

TEST(ModelConfig, CandidateMaskOfAnotherWidth) {
  Fixture f = tinyFixture();
  f.compressRatios[5] = 2;
  EXPECT_EQ(errorOf(f), "layer 5 (ratio 2) applies the candidate mask of layer 4, which has ratio 1 (the mask would "
                        "have another width)");
}

TEST(ModelConfig, SourcesMustCompress) {
  Fixture f = tinyFixture();
  f.kvSourceLayers.push_back(1);
  EXPECT_EQ(errorOf(f), "kv_source_layers names layer 1, which has compress_ratio 0 (window only)");
  f = tinyFixture();
  f.candidateSourceLayer = 3;
  EXPECT_EQ(errorOf(f), "candidate_source_layer 3 must be one of index_source_layers");
}

TEST(ModelConfig, BlockSizesAndGroups) {
  Fixture f = tinyFixture();
  f.headDim = 48;
  EXPECT_EQ(errorOf(f), "head_dim 48 is not a multiple of the fp8 block 32");
  f = tinyFixture();
  f.indexHeadDim = 16;
  EXPECT_EQ(errorOf(f), "index_head_dim 16 must be a positive multiple of the fp4 block 32");
  f = tinyFixture();
  f.ropeHeadDim = 7;
  EXPECT_EQ(errorOf(f), "rope_head_dim 7 must be even, positive and <= head_dim 32");
  f = tinyFixture();
  f.oGroups = 3;
  EXPECT_EQ(errorOf(f), "n_heads 4 is not divisible by o_groups 3");
  f = tinyFixture();
  f.compressRatios.pop_back();
  EXPECT_EQ(errorOf(f), "compress_ratios has 5 entries but n_layers is 6");
}

} // namespace
