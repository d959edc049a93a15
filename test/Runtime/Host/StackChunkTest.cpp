//===- StackChunkTest.cpp - planStackChunk: where a chunk runs layer-major through a stack ---------------------===//
//
// The layer-major plan of runtime::planStackChunk (StackChunk.h) on the golden's stack, a V4.1-Flash-like stack
// and single layers, from hand-derived reads (section 8's publication rules). That the plans are exact on real
// layers: CPURuntimeAOTTest.ChunksThroughTheGoldensStackEqualTokenByTokenDecode (interpreter and step libraries).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Runtime/Host/StackChunk.h"

#include <gtest/gtest.h>

#include <random>

namespace runtime = ::dsa::runtime;
using runtime::StackLayerRoles;

namespace {

StackLayerRoles window() { return StackLayerRoles{}; }
/// A kv + index source (section 1), published_slot unless `own`.
StackLayerRoles source(int64_t ratio, bool candidateSource = false, bool own = false) {
  StackLayerRoles r;
  r.ratio = ratio;
  r.kvSource = r.indexSource = true;
  r.candidateSource = candidateSource;
  r.ownIndexKeys = own;
  return r;
}
/// A layer reading another's compress_kv and topk_idxs (neither kv nor index source).
StackLayerRoles reader(int64_t ratio) {
  StackLayerRoles r;
  r.ratio = ratio;
  return r;
}
/// An index source that is not a kv source, using candidates.
StackLayerRoles candidateUser(int64_t ratio) {
  StackLayerRoles r;
  r.ratio = ratio;
  r.indexSource = r.usesCandidates = true;
  return r;
}

/// The golden's stack (ds41_tiny_golden.json): L0, L1 window only; L2 ratio-2 kv + index source; L3 its reader;
/// L4 ratio-1 kv + index + candidate source; L5 ratio-1 index source using L4's candidates. index_k_source
/// published_slot (the quirk).
std::vector<StackLayerRoles> golden() {
  return {window(), window(), source(2), reader(2), source(1, true), candidateUser(1)};
}

TEST(StackChunk, TheGoldensDecodeStepsTwelveAndThirteenAreOneChunk) {
  // Token by token, L2 at 12 (closing no group: 13 % 2 != 0) scores against L4's keys of token 11 (12 rows, 6
  // visible): layer-major, the slot as it entered the chunk, which is L4's as of token 11. Token 13 closes a group:
  // L2's own keys. L3 reads L2's compress_kv (6 / 7 rows visible), L5 L4's keys and candidates of the same token.
  auto plan = runtime::planStackChunk(golden(), 12, 12, 2);
  ASSERT_TRUE(plan.ok()) << plan.error();
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ((*plan)[0].first, 0);
  EXPECT_EQ((*plan)[0].count, 2);
  // Plain threading: L2 gets the slot as it entered, L3 .. L5 the previous layer's.
  EXPECT_EQ((*plan)[0].indexKFrom, (std::vector<int64_t>{-1, -1, -1, 2, 3, 4}));
  EXPECT_EQ((*plan)[0].indexKAfter, 5);
}

TEST(StackChunk, TheGoldensLongChunkIsCutWhereLayerTwoWouldSeeKeysNotWrittenYet) {
  // 20 tokens at 12: L2's row at position 30 (closing no group) sees (30 + 1) // 2 = 15 rows of L4's keys, which
  // token by token has 30 rows then, but layer-major only the 12 it had when the chunk entered L2 (L4 runs after
  // L2). 10 tokens (positions 12 .. 21: at most 11 visible rows) and 10 more at 22 (at most 16 of 22) are exact.
  std::string why;
  EXPECT_FALSE(runtime::layerMajorIsExact(golden(), 12, 12, 20, &why));
  EXPECT_NE(why.find("layer 2 at position"), std::string::npos) << why;
  EXPECT_NE(why.find("index_k layer 4's"), std::string::npos) << why;
  auto plan = runtime::planStackChunk(golden(), 12, 12, 20);
  ASSERT_TRUE(plan.ok()) << plan.error();
  ASSERT_EQ(plan->size(), 2u);
  EXPECT_EQ((*plan)[0].first, 0);
  EXPECT_EQ((*plan)[0].count, 10);
  EXPECT_EQ((*plan)[1].first, 10);
  EXPECT_EQ((*plan)[1].count, 10);
  // Far from the start the whole chunk is one: 512 tokens at 4096 see at most 2304 of 4096 rows.
  auto far = runtime::planStackChunk(golden(), 4096, 4096, 512);
  ASSERT_TRUE(far.ok()) << far.error();
  ASSERT_EQ(far->size(), 1u);
  EXPECT_EQ((*far)[0].count, 512);
}

TEST(StackChunk, AFlashLikeStackRoutesTheSecondRatioTwoSourceToTheRatioOneSourcesKeys) {
  // Two ratio-2 kv + index sources (as V4.1-Flash's layers 2 and 8), readers, then a ratio-1 source (as layer 20).
  // Token by token the second ratio-2 source, at a token closing no group, reads the ratio-1 source's keys of the
  // previous token (the first ratio-2 source did not publish either); threaded layer-major it would get the first
  // one's keys (published in the chunk): routed to the slot as it entered the chunk instead.
  const std::vector<StackLayerRoles> flash = {window(), window(), source(2), reader(2), source(2), reader(2),
                                              source(1, true), candidateUser(1)};
  auto plan = runtime::planStackChunk(flash, 4096, 4096, 512);
  ASSERT_TRUE(plan.ok()) << plan.error();
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ((*plan)[0].count, 512);
  EXPECT_EQ((*plan)[0].indexKFrom, (std::vector<int64_t>{-1, -1, -1, 2, -1, 4, 5, 6}));
  EXPECT_EQ((*plan)[0].indexKAfter, 7);
}

TEST(StackChunk, ALoneQuirkLayerIsCutAtItsGroups) {
  // One ratio-2 published_slot source: token by token, a row after a group closed in the chunk reads the layer's
  // own new keys (published at the previous token), layer-major the slot as it entered: exact only up to the first
  // group the chunk closes past its first row... own_cache instead: one chunk.
  std::string why;
  EXPECT_FALSE(runtime::layerMajorIsExact({source(2)}, 4, 4, 6, &why));
  EXPECT_TRUE(runtime::layerMajorIsExact({source(2)}, 4, 4, 2)); // 4 reads the entry slot, 5 closes
  EXPECT_TRUE(runtime::layerMajorIsExact({source(2, false, true)}, 4, 4, 6));
  EXPECT_TRUE(runtime::layerMajorIsExact({source(2, false, true)}, 4, 4, 4096));
}

TEST(StackChunk, EveryPlanCoversTheChunkWithExactPieces) {
  // Random stacks of the roles above, random histories: the pieces are contiguous, cover the chunk, and each is
  // exact (a 1-token piece always is).
  std::mt19937_64 rng(7);
  const std::vector<StackLayerRoles> pool = {window(), source(2), source(4), source(1, true), source(2, false, true),
                                             reader(2), reader(4), candidateUser(1)};
  int64_t multiToken = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<StackLayerRoles> stack = {source(static_cast<int64_t>(1 + rng() % 4), true)};
    const size_t layers = 1 + rng() % 6;
    for (size_t l = 0; l < layers; ++l)
      stack.push_back(pool[rng() % pool.size()]);
    if (stack.back().usesCandidates && stack.back().ratio != 1)
      continue;
    const int64_t prefill = 1 + static_cast<int64_t>(rng() % 40);
    const int64_t start = prefill + static_cast<int64_t>(rng() % 40), s = 1 + static_cast<int64_t>(rng() % 60);
    auto plan = runtime::planStackChunk(stack, prefill, start, s);
    ASSERT_TRUE(plan.ok()) << plan.error();
    int64_t next = 0;
    for (const runtime::StackSubChunk &sub : *plan) {
      ASSERT_EQ(sub.first, next);
      ASSERT_GE(sub.count, 1);
      EXPECT_TRUE(runtime::layerMajorIsExact(stack, prefill, start + sub.first, sub.count));
      EXPECT_EQ(sub.indexKFrom.size(), stack.size());
      multiToken += sub.count > 1;
      next += sub.count;
    }
    EXPECT_EQ(next, s);
  }
  EXPECT_GT(multiToken, 100) << "the random stacks should mostly allow multi-token pieces";
}

TEST(StackChunk, Errors) {
  auto none = runtime::planStackChunk(golden(), 12, 12, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("0 tokens, expected at least 1"), std::string::npos) << none.error();
  auto history = runtime::planStackChunk(golden(), 13, 12, 2);
  ASSERT_FALSE(history.ok());
  EXPECT_NE(history.error().find("prefill of 13 tokens must be at least 1 and at most start_pos 12"),
            std::string::npos)
      << history.error();
  // A reader before any index source would read topk_idxs of another token.
  auto early = runtime::planStackChunk({reader(2), source(2)}, 4, 4, 2);
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.error().find("layer 0 reads topk_idxs that no earlier layer publishes"), std::string::npos)
      << early.error();
  auto candidates = runtime::planStackChunk({candidateUser(1), source(1, true)}, 4, 4, 2);
  ASSERT_FALSE(candidates.ok());
  EXPECT_NE(candidates.error().find("layer 0 uses candidates that no earlier layer publishes"), std::string::npos)
      << candidates.error();
}

TEST(StackChunk, TheRouterSetsIndexKAsThePlanSays) {
  // The Flash-like plan above, slots as host values whose index_k tells who set it.
  const std::vector<StackLayerRoles> flash = {window(), window(), source(2), reader(2), source(2), reader(2),
                                              source(1, true), candidateUser(1)};
  auto plan = runtime::planStackChunk(flash, 4096, 4096, 512);
  ASSERT_TRUE(plan.ok()) << plan.error();
  auto tagged = [](float v) { return runtime::HostValue(dsa::Tensor::fromFloats(dsa::ElementType::F32, {1}, {v})); };
  std::vector<runtime::HostValue> slots = {tagged(0), tagged(-1), tagged(0), tagged(0)};
  runtime::StackChunkRouter router((*plan)[0]);
  EXPECT_FALSE(router.beforeLayer(2, slots).ok()) << "before begin()";
  ASSERT_TRUE(router.begin(slots).ok());
  for (size_t l = 2; l < flash.size(); ++l) {
    ASSERT_TRUE(router.beforeLayer(l, slots).ok());
    const float want = l == 2 || l == 4 ? -1.0f : static_cast<float>(l - 1); // entering, or the previous layer's
    EXPECT_EQ(slots[1].toTensor().floats()[0], want) << "layer " << l;
    slots[1] = tagged(static_cast<float>(l)); // what layer l's call returned
    ASSERT_TRUE(router.afterLayer(l, slots).ok());
  }
  ASSERT_TRUE(router.finish(slots).ok());
  EXPECT_EQ(slots[1].toTensor().floats()[0], 7.0f);
  // Errors: a layer outside the stack, slots without index_k; a route to a layer whose call was not recorded.
  EXPECT_NE(router.beforeLayer(8, slots).error().find("layer 8 is not in the plan's stack of 8 layers"),
            std::string::npos);
  std::vector<runtime::HostValue> one = {tagged(0)};
  EXPECT_FALSE(router.begin(one).ok());
  runtime::StackChunkRouter fresh((*plan)[0]);
  ASSERT_TRUE(fresh.begin(slots).ok());
  EXPECT_NE(fresh.beforeLayer(3, slots).error().find("names layer 2, whose call was not recorded"),
            std::string::npos);
}

} // namespace
