//===- CompressKernelsTest.cpp - the compressed-attention kernels against hand-derived values ---------===//
//
// Every expected value here is derived by hand from shared/spec/attention-semantics.md (sections 2, 5, 6, 7) or by
// a brute-force loop written in the test; none is produced by the kernels under test.
//
//===----------------------------------------------------------------------------------------------------------===//

#include "dsa/Kernels/CompressKernels.h"
#include "dsa/Numerics/BF16.h"

#include "TestSupport.h"

#include <limits>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

using namespace dsa;
using namespace dsa::kernels;
using namespace dsa::test;

namespace {

Tensor zerosState(int64_t r, int64_t hd) { return Tensor(ElementType::F32, {r, hd}); }
Tensor negInfState(int64_t r, int64_t hd) {
  return f32({r, hd}, std::vector<float>(static_cast<size_t>(r * hd), -kInf));
}

template <typename T> void expectError(const Result<T> &r, const std::string &needle) {
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_NE(r.error().find(needle), std::string::npos) << "error was: " << r.error();
}

std::vector<float> floatsOf(const Tensor &t) { return t.floatVector(); }
std::vector<int64_t> intsOf(const Tensor &t) { return t.intVector(); }

/// softmax-weighted pooling of r rows in double: the brute-force oracle of section 5.
std::vector<double> poolDouble(const std::vector<std::vector<float>> &kv, const std::vector<std::vector<float>> &sc) {
  size_t r = kv.size(), hd = kv[0].size();
  std::vector<double> out(hd);
  for (size_t d = 0; d < hd; ++d) {
    double m = -INFINITY;
    for (size_t j = 0; j < r; ++j)
      m = std::max(m, static_cast<double>(sc[j][d]));
    double den = 0;
    for (size_t j = 0; j < r; ++j)
      den += std::exp(static_cast<double>(sc[j][d]) - m);
    double acc = 0;
    for (size_t j = 0; j < r; ++j)
      acc += kv[j][d] * std::exp(static_cast<double>(sc[j][d]) - m) / den;
    out[d] = acc;
  }
  return out;
}

//===----------------------------------------------------------------------------------------------------------===//
// compress_pool (section 5)
//===----------------------------------------------------------------------------------------------------------===//

TEST(CompressKernelsPool, PrefillShorterThanRatioProducesNoLatentAndFillsState) {
  // r = 4, s = 3: no group completes (g = 0); rows 0..2 go to slots 0..2; slot 3 keeps its initial value.
  Tensor kv = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor sc = f32({3, 2}, {-1, -2, -3, -4, -5, -6});
  auto r = compressPool(kv, sc, zerosState(4, 2), negInfState(4, 2), 0, 4);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->pooled.shape(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(r->pooled.elementType(), ElementType::F32);
  EXPECT_EQ(floatsOf(r->kvState), (std::vector<float>{1, 2, 3, 4, 5, 6, 0, 0}));
  EXPECT_EQ(floatsOf(r->scoreState), (std::vector<float>{-1, -2, -3, -4, -5, -6, -kInf, -kInf}));
}

TEST(CompressKernelsPool, PrefillPoolsFullGroupsExactly) {
  // r = 2, s = 4, hd = 3. Per dimension: equal scores -> weights 1/2 each (exact); a score gap of 200 -> the
  // smaller member's weight exp(-200) underflows to 0 in f32, so the larger one's row is taken exactly.
  Tensor kv = f32({4, 3}, {2, 10, -6, /**/ 4, 30, 8, /**/ 1, 5, 7, /**/ 3, 9, 11});
  Tensor sc = f32({4, 3}, {0.5f, 0, 200, /**/ 0.5f, -200, 0, /**/ 7, 1, -3, /**/ 7, 201, -3});
  auto r = compressPool(kv, sc, zerosState(2, 3), negInfState(2, 3), 0, 2);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->pooled.shape(), (std::vector<int64_t>{2, 3}));
  // group 0: d0 mean(2,4) = 3; d1 row 0 (score 0 vs -200) = 10; d2 row 0 (200 vs 0) = -6
  // group 1: d0 mean(1,3) = 2; d1 row 3 (1 vs 201) = 9; d2 mean(7,11) = 9
  EXPECT_EQ(floatsOf(r->pooled), (std::vector<float>{3, 10, -6, 2, 9, 9}));
  // rem = 0: the state is untouched.
  EXPECT_EQ(floatsOf(r->kvState), std::vector<float>(6, 0.0f));
  EXPECT_EQ(floatsOf(r->scoreState), std::vector<float>(6, -kInf));
}

TEST(CompressKernelsPool, PrefillRemainderThenDecodeCompletesTheGroup) {
  // r = 3, prefill s = 5: group 0 = rows 0..2, rows 3, 4 -> slots 0, 1. Decode at 5 writes slot 2 and pools
  // rows (3, 4, 5) = group 1 (position 3). Decode at 6 writes slot 0 and pools nothing.
  const int64_t r = 3, hd = 2;
  std::vector<std::vector<float>> kvRows = {{0.5f, -1}, {1.5f, 2}, {-2, 0.25f}, {3, 1}, {-1, 4}, {2, -3}, {9, 9}};
  std::vector<std::vector<float>> scRows = {{0.1f, 1}, {0.2f, -1}, {0.3f, 0}, {1, 2}, {-0.5f, 0.5f}, {0.25f, 3},
                                            {1, 1}};
  std::vector<float> kvFlat, scFlat;
  for (int t = 0; t < 5; ++t) {
    kvFlat.insert(kvFlat.end(), kvRows[t].begin(), kvRows[t].end());
    scFlat.insert(scFlat.end(), scRows[t].begin(), scRows[t].end());
  }
  auto pre = compressPool(f32({5, hd}, kvFlat), f32({5, hd}, scFlat), zerosState(r, hd), negInfState(r, hd), 0, r);
  ASSERT_TRUE(pre.ok()) << pre.error();
  ASSERT_EQ(pre->pooled.shape(), (std::vector<int64_t>{1, hd}));
  std::vector<double> want0 = poolDouble({kvRows[0], kvRows[1], kvRows[2]}, {scRows[0], scRows[1], scRows[2]});
  for (int d = 0; d < hd; ++d)
    EXPECT_NEAR(pre->pooled.floats()[d], want0[d], 1e-6 * std::fabs(want0[d]) + 1e-7) << "d " << d;
  EXPECT_EQ(floatsOf(pre->kvState), (std::vector<float>{3, 1, -1, 4, 0, 0}));
  EXPECT_EQ(floatsOf(pre->scoreState), (std::vector<float>{1, 2, -0.5f, 0.5f, -kInf, -kInf}));

  auto dec = compressPool(f32({1, hd}, kvRows[5]), f32({1, hd}, scRows[5]), pre->kvState, pre->scoreState, 5, r);
  ASSERT_TRUE(dec.ok()) << dec.error();
  ASSERT_EQ(dec->pooled.shape(), (std::vector<int64_t>{1, hd}));
  std::vector<double> want1 = poolDouble({kvRows[3], kvRows[4], kvRows[5]}, {scRows[3], scRows[4], scRows[5]});
  for (int d = 0; d < hd; ++d)
    EXPECT_NEAR(dec->pooled.floats()[d], want1[d], 1e-6 * std::fabs(want1[d]) + 1e-7) << "d " << d;
  EXPECT_EQ(floatsOf(dec->kvState), (std::vector<float>{3, 1, -1, 4, 2, -3}));

  auto dec6 = compressPool(f32({1, hd}, kvRows[6]), f32({1, hd}, scRows[6]), dec->kvState, dec->scoreState, 6, r);
  ASSERT_TRUE(dec6.ok()) << dec6.error();
  EXPECT_EQ(dec6->pooled.shape(), (std::vector<int64_t>{0, hd}));
  EXPECT_EQ(floatsOf(dec6->kvState), (std::vector<float>{9, 9, -1, 4, 2, -3}));
  EXPECT_EQ(floatsOf(dec6->scoreState), (std::vector<float>{1, 1, -0.5f, 0.5f, 0.25f, 3}));
}

TEST(CompressKernelsPool, DecodeExactPoolingOfTwoSlots) {
  // r = 2, decode at 1 completes group 0 with slot 0 from the given state: equal scores -> the mean.
  Tensor kvState = f32({2, 1}, {6, 0});
  Tensor scState = f32({2, 1}, {-1.5f, -kInf});
  auto r = compressPool(f32({1, 1}, {-2}), f32({1, 1}, {-1.5f}), kvState, scState, 1, 2);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(floatsOf(r->pooled), (std::vector<float>{2}));
}

TEST(CompressKernelsPool, Errors) {
  Tensor kv = f32({2, 4}, std::vector<float>(8, 1));
  expectError(compressPool(kv, kv, zerosState(1, 4), negInfState(1, 4), 0, 1), "ratio must be >= 2");
  expectError(compressPool(kv, f32({2, 3}, std::vector<float>(6, 1)), zerosState(2, 4), negInfState(2, 4), 0, 2),
              "score must have kv's shape");
  expectError(compressPool(bf16({2, 4}, std::vector<float>(8, 1)), kv, zerosState(2, 4), negInfState(2, 4), 0, 2),
              "kv must be a rank-2 f32");
  expectError(compressPool(kv, kv, zerosState(3, 4), negInfState(3, 4), 0, 2), "kv_state must be [ratio, hd]");
  expectError(compressPool(kv, kv, zerosState(2, 4), negInfState(2, 3), 0, 2), "score_state must have");
  expectError(compressPool(kv, kv, zerosState(2, 4), Tensor(ElementType::BF16, {2, 4}), 0, 2),
              "score_state must be a rank-2 f32");
  expectError(compressPool(kv, kv, zerosState(2, 4), negInfState(2, 4), -1, 2), "start_pos must be >= 0");
  expectError(compressPool(kv, kv, zerosState(2, 4), negInfState(2, 4), std::numeric_limits<int64_t>::max(), 2),
              "last position start_pos + s - 1");
  Tensor empty(ElementType::F32, {0, 4});
  expectError(compressPool(empty, empty, zerosState(2, 4), negInfState(2, 4), 0, 2), "at least one token");
}

//===----------------------------------------------------------------------------------------------------------===//
// fp4 round trips (section 2)
//===----------------------------------------------------------------------------------------------------------===//

TEST(CompressKernelsFp4, E8M0HandDerived) {
  // Row 0, block 0: amax 6 -> s = pow2_ceil(1) = 1: the e2m1 grid with ties to the even code.
  //   0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4, 6->6, -0.75->-1, 2.9->3.
  // Row 0, block 1: amax 12 -> s = pow2_ceil(2) = 2: x/2 rounded then *2: 12->12, 5->(2.5->2)->4, 1->(0.5)->1,
  //   -7->(-3.5->-4)->-8, 0.4->(0.2->0)->0.
  // Row 1, block 0: bf16(1e-3) = 1.0234375 * 2^-10 = amax; amax/6 = 1.666e-4 in [2^-13, 2^-12) -> s = 2^-12;
  //   x/s = 4.09375 -> 4 -> 2^-10.
  // Row 1, block 1: all zero -> amax floor 6*2^-126, s = 2^-126 (exact: pow2_ceil(2^-126)): stays 0.
  std::vector<float> row0a = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, 6, -0.75f, 2.9f};
  std::vector<float> want0a = {0, 1, 1, 2, 2, 4, 4, 6, -1, 3};
  std::vector<float> row0b = {12, 5, 1, -7, 0.4f};
  std::vector<float> want0b = {12, 4, 1, -8, 0};
  std::vector<float> x(64, 0.0f), want(64, 0.0f);
  for (size_t i = 0; i < row0a.size(); ++i) {
    x[i] = row0a[i];
    want[i] = want0a[i];
  }
  for (size_t i = 0; i < row0b.size(); ++i) {
    x[16 + i] = row0b[i];
    want[16 + i] = want0b[i];
  }
  x[32] = 1e-3f;
  want[32] = std::ldexp(1.0f, -10);
  // Rows of 32 with block 16: row 0 = blocks 0, 1; row 1 = blocks 2 (x[32..47]), 3.
  auto r = fp4QuantE8M0(bf16({2, 32}, x), 16);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->elementType(), ElementType::BF16);
  EXPECT_EQ(r->shape(), (std::vector<int64_t>{2, 32}));
  // (bf16(2.9) = 2.90625 -> 3; bf16(0.4) = 0.400390625 -> /2 -> 0.2 -> 0.)
  EXPECT_EQ(floatsOf(*r), want);
}

TEST(CompressKernelsFp4, E4M3HandDerived) {
  // block 16. Block 0: amax 7.5 -> s = e4m3(1.25) = 1.25: 7.5 -> 6*1.25 = 7.5; 3 -> 2.4 -> 2 -> 2.5;
  //   -1 -> -0.8 -> -1 -> -1.25; 0.3 -> 0.24 -> 0. Block 1: amax 6 -> s = 1: 0.75 -> 1, 2.5 -> 2.
  // Block 2 (row 1): amax 13 -> 13/6 = 2.1667 -> e4m3 = 2.25 (grid step 0.25 in [2,4)): 13/2.25 = 5.78 -> 6 -> 13.5;
  //   4 -> 1.78 -> 2 -> 4.5.
  std::vector<float> x(48, 0.0f), want(48, 0.0f);
  float in0[] = {7.5f, 3, -1, 0.3f}, out0[] = {7.5f, 2.5f, -1.25f, 0};
  for (int i = 0; i < 4; ++i) {
    x[i] = in0[i];
    want[i] = out0[i];
  }
  x[16] = 6; want[16] = 6;
  x[17] = 0.75f; want[17] = 1;
  x[18] = 2.5f; want[18] = 2;
  x[32] = 13; want[32] = 13.5f;
  x[33] = 4; want[33] = 4.5f;
  auto r = fp4QuantE4M3(f32({3, 16}, x), 16);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->elementType(), ElementType::BF16);
  EXPECT_EQ(floatsOf(*r), want);
}

TEST(CompressKernelsFp4, Errors) {
  expectError(fp4QuantE8M0(bf16({2, 24}, std::vector<float>(48, 1)), 32), "does not divide the last dim");
  expectError(fp4QuantE4M3(bf16({2, 24}, std::vector<float>(48, 1)), 0), "block_size must be >= 1");
  expectError(fp4QuantE4M3(Tensor(ElementType::I32, {2, 16}), 16), "x must be a bf16 or f32 tensor");
  expectError(fp4QuantE8M0(Tensor::scalarI64(3), 16), "x must be a bf16 or f32 tensor");
}

//===----------------------------------------------------------------------------------------------------------===//
// cache_write
//===----------------------------------------------------------------------------------------------------------===//

TEST(CompressKernelsCacheWrite, WritesAtStartPosOverRatio) {
  Tensor cache = bf16({4, 2}, {1, 1, 2, 2, 3, 3, 4, 4});
  // ratio 2, start_pos 5 (decode completing group 2): row 2.
  auto r = cacheWrite(cache, bf16({1, 2}, {-7, 8}), 5, 2);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(floatsOf(*r), (std::vector<float>{1, 1, 2, 2, -7, 8, 4, 4}));
  // prefill: rows 0..2.
  auto p = cacheWrite(cache, bf16({3, 2}, {9, 9, 8, 8, 7, 7}), 0, 3);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(floatsOf(*p), (std::vector<float>{9, 9, 8, 8, 7, 7, 4, 4}));
  // g = 0: unchanged, also with start_pos // ratio == C.
  auto z = cacheWrite(cache, Tensor(ElementType::BF16, {0, 2}), 8, 2);
  ASSERT_TRUE(z.ok()) << z.error();
  EXPECT_EQ(floatsOf(*z), floatsOf(cache));
  // the last row fits, one more overflows.
  EXPECT_TRUE(cacheWrite(cache, bf16({1, 2}, {0, 0}), 3, 1).ok());
  expectError(cacheWrite(cache, bf16({1, 2}, {0, 0}), 8, 2), "overflow the cache capacity of 4 rows");
  expectError(cacheWrite(cache, bf16({2, 2}, {0, 0, 0, 0}), 3, 1), "overflow the cache capacity");
}

TEST(CompressKernelsCacheWrite, Errors) {
  Tensor cache = bf16({4, 2}, std::vector<float>(8, 0));
  expectError(cacheWrite(cache, f32({1, 2}, {0, 0}), 0, 1), "rows must be [g, 2] of the cache's element type bf16");
  expectError(cacheWrite(cache, bf16({1, 3}, {0, 0, 0}), 0, 1), "rows must be [g, 2]");
  expectError(cacheWrite(cache, bf16({1, 2}, {0, 0}), 0, 0), "ratio must be >= 1");
  expectError(cacheWrite(cache, bf16({1, 2}, {0, 0}), -2, 1), "start_pos must be >= 0");
  expectError(cacheWrite(Tensor(ElementType::I32, {4, 2}), bf16({1, 2}, {0, 0}), 0, 1), "cache must be");
}

//===----------------------------------------------------------------------------------------------------------===//
// indexer_scores (section 6 steps 3-4)
//===----------------------------------------------------------------------------------------------------------===//

TEST(CompressKernelsScores, HandDerivedDecode) {
  // Decode at start_pos 5, ratio 2: width = 6 // 2 = 3. IH = 2, ihd = 2.
  // iq[0,0] = (1, 2), iq[0,1] = (-1, 0.5); keys p0 = (1, 1), p1 = (0.5, -1), p2 = (2, 0), p3 unused.
  // w = (0.5, 3), weight_scale 0.25 -> w' = (0.125, 0.75).
  // dots h0: 3, -1.5, 2 -> relu 3, 0, 2; h1: -0.5, -1, -2 -> relu 0. scores: 0.375, 0, 0.25.
  Tensor iq = bf16({1, 2, 2}, {1, 2, -1, 0.5f});
  Tensor w = bf16({1, 2}, {0.5f, 3});
  Tensor keys = bf16({4, 2}, {1, 1, 0.5f, -1, 2, 0, 100, 100});
  auto r = indexerScores(iq, w, keys, 5, 2, 0.25f);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->elementType(), ElementType::BF16);
  EXPECT_EQ(r->shape(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(floatsOf(*r), (std::vector<float>{0.375f, 0, 0.25f}));
}

/// The score of one query against one key (1, 1) with IH = 2, ihd = 2 (prefill s = 1, ratio 1: width 1).
float oneScore(std::vector<float> iq4, std::vector<float> w2, float weightScale) {
  auto r = indexerScores(bf16({1, 2, 2}, std::move(iq4)), bf16({1, 2}, std::move(w2)), bf16({1, 2}, {1, 1}), 0, 1,
                         weightScale);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r->floats()[0] : std::nanf("");
}

TEST(CompressKernelsScores, EveryBf16StageRounds) {
  const float u8 = std::ldexp(1.0f, -8), u9 = std::ldexp(1.0f, -9);
  // Head 1 contributes relu(-1) * w = 0 in cases A and B.
  // A, bf16(dot): dot = 1 + 2^-8 is a tie between 1 and 1 + 2^-7 -> 1 (even); times w' = 1.5 -> 1.5.
  //    (Unrounded: 1.505859375 -> 1.5078125.)
  EXPECT_EQ(oneScore({1, u8, -1, 0}, {1.5f, 1}, 1.0f), 1.5f);
  // B, w' = bf16(w * weight_scale): 1 * (1 + 3*2^-9) -> 1.0078125 (0.75 ulp rounds up); 1.5 * 1.0078125 =
  //    1.51171875, a tie between 1.5078125 and 1.515625 -> 1.515625 (even). (Unrounded w': 1.5087890625 ->
  //    1.5078125.)
  EXPECT_EQ(oneScore({1.5f, 0, -1, 0}, {1, 1}, 1.0f + 3 * u9), 1.515625f);
  // C, bf16(relu * w'): head 0 1.5 * 1.0078125 = 1.51171875 -> 1.515625; head 1 1 * 3*2^-9 = 0.005859375;
  //    sum 1.521484375 -> 1.5234375. (Unrounded head 0: 1.517578125 -> 1.515625.)
  EXPECT_EQ(oneScore({1.5f, 0, 1, 0}, {1.0078125f, 3 * u9}, 1.0f), 1.5234375f);
  // D, the final bf16 of the h-sum: 1 + 2^-8 -> 1 (tie, even). (Unrounded: 1.00390625.)
  EXPECT_EQ(oneScore({1, 0, 1, 0}, {1, u8}, 1.0f), 1.0f);
}

TEST(CompressKernelsScores, BruteForcePrefill) {
  // Prefill s = 5, ratio 2 -> width 2 (keys has 4 rows; rows 2, 3 are not read). Values are multiples of 1/8 of
  // small magnitude so every dot and product is exact in f32 and the bf16 stages are computed here directly.
  const int64_t s = 5, IH = 3, ihd = 4, n = 4, width = 2;
  std::vector<float> iq(s * IH * ihd), w(s * IH), keys(n * ihd);
  for (size_t i = 0; i < iq.size(); ++i)
    iq[i] = static_cast<float>(static_cast<int>((i * 7 + 3) % 17) - 8) / 8.0f;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>(static_cast<int>((i * 5 + 1) % 11) - 3) / 4.0f;
  for (size_t i = 0; i < keys.size(); ++i)
    keys[i] = static_cast<float>(static_cast<int>((i * 3 + 2) % 13) - 6) / 8.0f;
  const float ws = 0.3f;
  auto r = indexerScores(bf16({s, IH, ihd}, iq), bf16({s, IH}, w), bf16({n, ihd}, keys), 0, 2, ws);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->shape(), (std::vector<int64_t>{s, width}));
  auto rb = [](double v) { return static_cast<double>(numerics::roundBf16(static_cast<float>(v))); };
  for (int64_t t = 0; t < s; ++t)
    for (int64_t p = 0; p < width; ++p) {
      double sum = 0;
      for (int64_t h = 0; h < IH; ++h) {
        double dot = 0;
        for (int64_t d = 0; d < ihd; ++d)
          dot += double(iq[(t * IH + h) * ihd + d]) * keys[p * ihd + d];
        double wp = rb(double(float(w[t * IH + h] * ws)));
        sum += rb(std::max(rb(dot), 0.0) * wp);
      }
      EXPECT_EQ(r->floats()[t * width + p], float(rb(sum))) << "t " << t << " p " << p;
    }
}

TEST(CompressKernelsScores, EntryKeysPerToken) {
  // A chunk of 6 tokens at start_pos 5, ratio 3: positions 5..10, width 11 // 3 = 3. Tokens 5 and 8 close a group
  // ((p + 1) % 3 == 0) and read keys; 6, 7, 9, 10 read entry_keys. Each row must equal that row of the scores
  // against its own keys alone (the arithmetic itself: BruteForcePrefill). A prefill (start_pos 0) reads keys on
  // every row; at ratio 1 every token closes a group.
  const int64_t s = 6, IH = 2, ihd = 4, width = 3;
  std::vector<float> iq(s * IH * ihd), w(s * IH), keys(5 * ihd), entry(4 * ihd);
  for (size_t i = 0; i < iq.size(); ++i)
    iq[i] = static_cast<float>(static_cast<int>((i * 7 + 3) % 17) - 8) / 8.0f;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>(static_cast<int>((i * 5 + 1) % 11) - 3) / 4.0f;
  for (size_t i = 0; i < keys.size(); ++i)
    keys[i] = static_cast<float>(static_cast<int>((i * 3 + 2) % 13) - 6) / 8.0f;
  for (size_t i = 0; i < entry.size(); ++i)
    entry[i] = static_cast<float>(static_cast<int>((i * 11 + 5) % 9) - 4) / 4.0f;
  Tensor tIq = bf16({s, IH, ihd}, iq), tW = bf16({s, IH}, w), tKeys = bf16({5, ihd}, keys),
         tEntry = bf16({4, ihd}, entry);
  auto chunk = indexerScores(tIq, tW, tKeys, 5, 3, 0.5f, &tEntry);
  auto own = indexerScores(tIq, tW, tKeys, 5, 3, 0.5f);
  auto slot = indexerScores(tIq, tW, tEntry, 5, 3, 0.5f);
  ASSERT_TRUE(chunk.ok() && own.ok() && slot.ok()) << chunk.error();
  ASSERT_EQ(chunk->shape(), (std::vector<int64_t>{s, width}));
  const bool readsEntry[s] = {false, true, true, false, true, true};
  int64_t differing = 0;
  for (int64_t t = 0; t < s; ++t)
    for (int64_t p = 0; p < width; ++p) {
      const float want = (readsEntry[t] ? *slot : *own).floats()[t * width + p];
      EXPECT_EQ(chunk->floats()[t * width + p], want) << "t " << t << " p " << p;
      differing += own->floats()[t * width + p] != slot->floats()[t * width + p];
    }
  EXPECT_GT(differing, 0) << "keys and entry_keys must give different scores for the test to see the choice";
  auto prefill = indexerScores(tIq, tW, tKeys, 0, 3, 0.5f, &tEntry);
  auto prefillOwn = indexerScores(tIq, tW, tKeys, 0, 3, 0.5f);
  ASSERT_TRUE(prefill.ok() && prefillOwn.ok());
  EXPECT_EQ(prefill->floatVector(), prefillOwn->floatVector());
  std::vector<float> wide(11 * ihd);
  for (size_t i = 0; i < wide.size(); ++i)
    wide[i] = keys[i % keys.size()];
  Tensor wideKeys = bf16({11, ihd}, wide), wideEntry = bf16({11, ihd}, std::vector<float>(11 * ihd, 0.25f));
  auto ratio1 = indexerScores(tIq, tW, wideKeys, 5, 1, 0.5f, &wideEntry);
  auto ratio1Own = indexerScores(tIq, tW, wideKeys, 5, 1, 0.5f);
  ASSERT_TRUE(ratio1.ok() && ratio1Own.ok());
  EXPECT_EQ(ratio1->floatVector(), ratio1Own->floatVector());
  // Errors name entry_keys: too few rows (checked whether or not a row reads it), row width, element type.
  Tensor shortEntry = bf16({2, ihd}, std::vector<float>(8, 1));
  expectError(indexerScores(tIq, tW, tKeys, 5, 3, 0.5f, &shortEntry),
              "entry_keys must hold at least width = (start_pos + s) // ratio = 3 rows");
  Tensor empty(ElementType::BF16, {0, ihd});
  EXPECT_TRUE(indexerScores(tIq, tW, tKeys, 0, 3, 0.5f, &empty).ok()) << "a prefill does not read entry_keys";
  Tensor one = bf16({1, IH, ihd}, std::vector<float>(iq.begin(), iq.begin() + IH * ihd));
  Tensor oneW = bf16({1, IH}, std::vector<float>(w.begin(), w.begin() + IH));
  EXPECT_TRUE(indexerScores(one, oneW, tKeys, 8, 3, 0.5f, &empty).ok()) << "token 8 closes a group: keys only";
  expectError(indexerScores(one, oneW, tKeys, 7, 3, 0.5f, &empty), "entry_keys must hold at least width");
  Tensor narrow = bf16({4, 3}, std::vector<float>(12, 1)), wrongType = f32({4, ihd}, std::vector<float>(16, 1));
  expectError(indexerScores(tIq, tW, tKeys, 5, 3, 0.5f, &narrow), "entry_keys must be [n, ihd]");
  expectError(indexerScores(tIq, tW, tKeys, 5, 3, 0.5f, &wrongType), "entry_keys must be a rank-2 bf16");
}

TEST(CompressKernelsScores, WidthZeroAndErrors) {
  Tensor iq = bf16({1, 2, 4}, std::vector<float>(8, 1));
  Tensor w = bf16({1, 2}, {1, 1});
  auto z = indexerScores(iq, w, Tensor(ElementType::BF16, {0, 4}), 0, 2, 1.0f); // width 1 // 2 = 0
  ASSERT_TRUE(z.ok()) << z.error();
  EXPECT_EQ(z->shape(), (std::vector<int64_t>{1, 0}));
  expectError(indexerScores(iq, w, bf16({2, 4}, std::vector<float>(8, 1)), 2, 1, 1.0f),
              "keys must hold at least width = (start_pos + s) // ratio = 3 rows");
  expectError(indexerScores(iq, w, bf16({4, 3}, std::vector<float>(12, 1)), 0, 1, 1.0f), "keys must be [n, ihd]");
  expectError(indexerScores(iq, bf16({1, 3}, {1, 1, 1}), bf16({4, 4}, std::vector<float>(16, 1)), 0, 1, 1.0f),
              "weights must be [s, IH]");
  expectError(indexerScores(f32({1, 2, 4}, std::vector<float>(8, 1)), w, bf16({4, 4}, std::vector<float>(16, 1)), 0,
                            1, 1.0f),
              "iq must be a rank-3 bf16");
  expectError(indexerScores(iq, w, bf16({4, 4}, std::vector<float>(16, 1)), 0, 0, 1.0f), "ratio must be >= 1");
  expectError(indexerScores(iq, w, bf16({4, 4}, std::vector<float>(16, 1)), 0, 1, kInf), "weight_scale");
}

//===----------------------------------------------------------------------------------------------------------===//
// compress_visibility (section 6 step 5)
//===----------------------------------------------------------------------------------------------------------===//

TEST(CompressKernelsVisibility, PrefillMasksUnreachedGroups) {
  // Prefill s = 5, ratio 2: width 2, compress_len = 0, 1, 1, 2, 2.
  std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  auto r = compressVisibility(bf16({5, 2}, v), 0, 2);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(floatsOf(*r), (std::vector<float>{-kInf, -kInf, 3, -kInf, 5, -kInf, 7, 8, 9, 10}));
  EXPECT_EQ(r->elementType(), ElementType::BF16);
}

TEST(CompressKernelsVisibility, DecodeSeesEverything) {
  auto r = compressVisibility(f32({1, 3}, {1, 2, 3}), 6, 2); // width 7 // 2 = 3
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(floatsOf(*r), (std::vector<float>{1, 2, 3}));
}

TEST(CompressKernelsVisibility, Errors) {
  expectError(compressVisibility(f32({1, 2}, {1, 2}), 6, 2), "scores must have width");
  expectError(compressVisibility(Tensor(ElementType::I32, {1, 3}), 6, 2), "scores must be a rank-2");
  expectError(compressVisibility(f32({1, 3}, {1, 2, 3}), 6, 0), "ratio must be >= 1");
}

//===----------------------------------------------------------------------------------------------------------===//
// select_candidate_blocks (section 7)
//===----------------------------------------------------------------------------------------------------------===//

TEST(CompressKernelsCandidates, ZeroCompressLenPinsNothingFloorDivision) {
  // Prefill s = 4, ratio 2, block 2: width 2, one block; compress_len = 0, 1, 1, 2 (scores after visibility).
  // t = 0: (0-1) // 2 = -1 pins nothing; the only block is all -inf and is dropped -> mask 0 0. (Truncating
  //        division would give 0 and pin block 0.)
  // t = 1..3: block 0 pinned -> 1 1.
  std::vector<float> v = {-kInf, -kInf, 0.5f, -kInf, -2, -kInf, 1, 3};
  auto r = selectCandidateBlocks(bf16({4, 2}, v), 0, 2, 3, 2);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->elementType(), ElementType::I1);
  EXPECT_EQ(intsOf(*r), (std::vector<int64_t>{0, 0, 1, 1, 1, 1, 1, 1}));
}

TEST(CompressKernelsCandidates, FewerReachableBlocksThanTopkDropsNegInfPicks) {
  // Prefill s = 6, ratio 1, block 2, topk_blocks 3: width 6, 3 blocks, compress_len[t] = t + 1.
  // Visibility-masked scores (row t sees positions 0..t).
  std::vector<float> v(36, -kInf);
  for (int t = 0; t < 6; ++t)
    for (int p = 0; p <= t; ++p)
      v[t * 6 + p] = static_cast<float>((t * 5 + p * 3) % 7) - 3.0f;
  auto r = selectCandidateBlocks(f32({6, 6}, v), 0, 1, 3, 2);
  ASSERT_TRUE(r.ok()) << r.error();
  std::vector<int64_t> want = {
      1, 1, 0, 0, 0, 0, // t0: block 0 pinned, blocks 1, 2 unreachable (-inf) -> dropped
      1, 1, 0, 0, 0, 0, // t1: same
      1, 1, 1, 1, 0, 0, // t2: block 1 pinned, block 0 finite, block 2 dropped
      1, 1, 1, 1, 0, 0, // t3
      1, 1, 1, 1, 1, 1, // t4: all three blocks reachable, k = 3 = n_blocks
      1, 1, 1, 1, 1, 1, // t5
  };
  EXPECT_EQ(intsOf(*r), want);
}

TEST(CompressKernelsCandidates, PicksByBlockMaxWithPaddingAndPin) {
  // Decode at 8, ratio 1: width 9, compress_len 9, block 2 -> 5 blocks (block 4 = position 8 + -inf padding),
  // pinned block (9-1)//2 = 4. Block maxima: b0 max(5, -1) = 5, b1 max(0, 7) = 7, b2 max(6, 6) = 6, b3 max(-9, 2) = 2.
  // topk_blocks 3 -> {4 (+inf), 1 (7), 2 (6)}.
  std::vector<float> v = {5, -1, 0, 7, 6, 6, -9, 2, -100};
  auto r = selectCandidateBlocks(f32({1, 9}, v), 8, 1, 3, 2);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(intsOf(*r), (std::vector<int64_t>{0, 0, 1, 1, 1, 1, 0, 0, 1}));
  // topk_blocks larger than the block count: every block with a finite max or the pin.
  auto all = selectCandidateBlocks(f32({1, 9}, v), 8, 1, 50, 2);
  ASSERT_TRUE(all.ok()) << all.error();
  EXPECT_EQ(intsOf(*all), std::vector<int64_t>(9, 1));
  // topk_blocks 0 selects nothing, not even the pinned block.
  auto none = selectCandidateBlocks(f32({1, 9}, v), 8, 1, 0, 2);
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_EQ(intsOf(*none), std::vector<int64_t>(9, 0));
}

TEST(CompressKernelsCandidates, HugeBlockSizeIsOneBlockAndHugeStartPosIsAnError) {
  // block_size near INT64_MAX: one block holding the whole row (width + block_size - 1 would overflow). Decode at
  // 2, ratio 1: width 3, compress_len 3 pins block 0 -> every position selected.
  const int64_t huge = std::numeric_limits<int64_t>::max();
  auto r = selectCandidateBlocks(f32({1, 3}, {1, 2, 3}), 2, 1, 1, huge);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(intsOf(*r), (std::vector<int64_t>{1, 1, 1}));
  // start_pos + s overflows: an error naming both, not a wrapped width.
  expectError(selectCandidateBlocks(f32({1, 3}, {1, 2, 3}), huge, 1, 1, 2), "start_pos + s = 9223372036854775807 + 1 overflows int64");
}

TEST(CompressKernelsCandidates, WidthZeroAndErrors) {
  auto z = selectCandidateBlocks(f32({1, 0}, {}), 0, 2, 3, 2); // prefill s = 1, ratio 2: width 0
  ASSERT_TRUE(z.ok()) << z.error();
  EXPECT_EQ(z->shape(), (std::vector<int64_t>{1, 0}));
  expectError(selectCandidateBlocks(f32({1, 3}, {1, 2, 3}), 2, 1, 3, 0), "block_size must be >= 1");
  expectError(selectCandidateBlocks(f32({1, 3}, {1, 2, 3}), 2, 1, -1, 2), "topk_blocks must be >= 0");
  expectError(selectCandidateBlocks(f32({1, 3}, {1, 2, 3}), 3, 1, 3, 2), "scores must have width");
}

//===----------------------------------------------------------------------------------------------------------===//
// apply_candidates (section 6 step 6)
//===----------------------------------------------------------------------------------------------------------===//

TEST(CompressKernelsApplyCandidates, MasksFalsePositions) {
  auto r = applyCandidates(bf16({2, 3}, {1, 2, 3, 4, 5, 6}), i1({2, 3}, {1, 0, 1, 0, 0, 1}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(floatsOf(*r), (std::vector<float>{1, -kInf, 3, -kInf, -kInf, 6}));
  EXPECT_EQ(r->elementType(), ElementType::BF16);
  expectError(applyCandidates(bf16({2, 3}, std::vector<float>(6, 0)), i1({2, 2}, {1, 1, 1, 1})),
              "mask must have the shape of scores");
  expectError(applyCandidates(bf16({2, 3}, std::vector<float>(6, 0)), Tensor(ElementType::I32, {2, 3})),
              "mask must be a rank-2 i1");
}

//===----------------------------------------------------------------------------------------------------------===//
// indexer_topk (section 6 step 7)
//===----------------------------------------------------------------------------------------------------------===//

TEST(CompressKernelsTopk, PrefillOffsetAndMinusOneMapping) {
  // Prefill s = 4, ratio 1, index_topk 2: width 4, compress_len = 1, 2, 3, 4, offset s = 4.
  // Row 0: {0, some invisible -inf position} -> [0+4, -1] whatever -inf position the tie order picks.
  // Row 1: visible 0, 1: scores 2, 9 -> {0, 1} -> [4, 5]. Row 2: 5, 1, 7 -> {0, 2} -> [4, 6].
  // Row 3: 1, 8, 3, 8.5 -> {1, 3} -> [5, 7].
  std::vector<float> v = {3, -kInf, -kInf, -kInf, 2, 9, -kInf, -kInf, 5, 1, 7, -kInf, 1, 8, 3, 8.5f};
  auto r = indexerTopk(bf16({4, 4}, v), 0, 1, 2, 8);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->elementType(), ElementType::I32);
  EXPECT_EQ(intsOf(*r), (std::vector<int64_t>{4, -1, 4, 5, 4, 6, 5, 7}));
}

TEST(CompressKernelsTopk, PrefillRatioTwoVisibility) {
  // Prefill s = 5, ratio 2, index_topk 6 -> k = min(6, width 2) = 2; compress_len 0, 1, 1, 2, 2; offset 5.
  // Row 0: both picks invisible -> [-1, -1]; rows 1, 2: [5, -1]; rows 3, 4: [5, 6].
  std::vector<float> v = {-kInf, -kInf, 1, -kInf, 2, -kInf, 3, 4, 5, 6};
  auto r = indexerTopk(f32({5, 2}, v), 0, 2, 6, 8);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->shape(), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(intsOf(*r), (std::vector<int64_t>{-1, -1, 5, -1, 5, -1, 5, 6, 5, 6}));
}

TEST(CompressKernelsTopk, DecodeCandidateMaskedPicksStillMapToValidRows) {
  // Decode at 7, ratio 1, window 8: width 8 = compress_len, offset W = 8. The candidate mask left only positions
  // 0 and 3 finite; index_topk 4 must take two -inf positions, and they still map to rows p + 8 (not -1),
  // whichever ones the tie order picks.
  std::vector<float> v = {1, -kInf, -kInf, 2, -kInf, -kInf, -kInf, -kInf};
  auto r = indexerTopk(bf16({1, 8}, v), 7, 1, 4, 8);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->shape(), (std::vector<int64_t>{1, 4}));
  std::vector<int64_t> got = intsOf(*r);
  std::set<int64_t> distinct(got.begin(), got.end());
  EXPECT_EQ(distinct.size(), 4u);
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
  EXPECT_TRUE(distinct.count(8) && distinct.count(11));
  for (int64_t g : got) {
    EXPECT_GE(g, 8);
    EXPECT_LT(g, 16);
  }
}

TEST(CompressKernelsTopk, DecodeRatioTwoOffsetIsWindow) {
  // Decode at 9, ratio 2, window 8: width 5; index_topk 3: scores -> {1, 3, 4} -> [9, 11, 12].
  auto r = indexerTopk(f32({1, 5}, {0, 5, -1, 6, 7}), 9, 2, 3, 8);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(intsOf(*r), (std::vector<int64_t>{9, 11, 12}));
}

TEST(CompressKernelsTopk, WidthZeroAndErrors) {
  auto z = indexerTopk(f32({1, 0}, {}), 0, 2, 6, 8);
  ASSERT_TRUE(z.ok()) << z.error();
  EXPECT_EQ(z->shape(), (std::vector<int64_t>{1, 0}));
  auto zd = indexerTopk(f32({1, 0}, {}), 2, 4, 6, 8); // decode at 2, ratio 4: width 3 // 4 = 0
  ASSERT_TRUE(zd.ok()) << zd.error();
  EXPECT_EQ(zd->shape(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(zd->elementType(), ElementType::I32);
  expectError(indexerTopk(f32({1, 2}, {1, 2}), 3, 2, -1, 8), "index_topk must be >= 0");
  expectError(indexerTopk(f32({1, 2}, {1, 2}), 3, 2, 2, 0), "window_size must be >= 1");
  expectError(indexerTopk(f32({1, 3}, {1, 2, 3}), 3, 2, 2, 8), "scores must have width");
  expectError(indexerTopk(f32({1, 2}, {1, 2}), -3, 2, 2, 8), "start_pos must be >= 0");
}

//===----------------------------------------------------------------------------------------------------------===//
// A step of s > 1 tokens at start_pos > 0 (a chunk, section 13): equal to the same tokens fed one decode step at a
// time. The decode steps are the oracle (the reference's own regime); the chunk is what is tested.
//===----------------------------------------------------------------------------------------------------------===//

/// Whether a and b hold the same floats bit for bit.
bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i) {
    uint32_t x, y;
    std::memcpy(&x, &a[i], 4);
    std::memcpy(&y, &b[i], 4);
    if (x != y)
      return false;
  }
  return true;
}

/// A deterministic value of token position `pos`, dimension / column `d`: small integers (many ties) or a spread.
float chunkValue(int64_t pos, int64_t d, bool ties) {
  return ties ? static_cast<float>((pos * 7 + d * 3) % 4) : std::sin(0.37f * static_cast<float>(pos) + 1.3f * d);
}

TEST(CompressKernelsChunk, PoolEqualsTokenByTokenDecode) {
  const int64_t hd = 3;
  for (int64_t ratio : {2, 3, 4})
    for (int64_t start : {1, 2, 3, 5, 8})
      for (int64_t s : {2, 3, 5, 9}) {
        SCOPED_TRACE("ratio " + std::to_string(ratio) + ", start_pos " + std::to_string(start) + ", s " +
                     std::to_string(s));
        auto rows = [&](int64_t first, int64_t n, bool score) {
          std::vector<float> v;
          for (int64_t t = 0; t < n; ++t)
            for (int64_t d = 0; d < hd; ++d)
              v.push_back(chunkValue(first + t, d + (score ? 5 : 0), false));
          return f32({n, hd}, v);
        };
        // The state after a prefill of `start` tokens.
        auto pre = compressPool(rows(0, start, false), rows(0, start, true), zerosState(ratio, hd),
                                negInfState(ratio, hd), 0, ratio);
        ASSERT_TRUE(pre.ok()) << pre.error();
        auto chunk = compressPool(rows(start, s, false), rows(start, s, true), pre->kvState, pre->scoreState, start,
                                  ratio);
        ASSERT_TRUE(chunk.ok()) << chunk.error();
        Tensor kvState = pre->kvState, scoreState = pre->scoreState;
        std::vector<float> pooled;
        for (int64_t t = 0; t < s; ++t) {
          auto step = compressPool(rows(start + t, 1, false), rows(start + t, 1, true), kvState, scoreState,
                                   start + t, ratio);
          ASSERT_TRUE(step.ok()) << step.error();
          ASSERT_EQ(step->pooled.dim(0), (start + t) % ratio == ratio - 1 ? 1 : 0);
          std::vector<float> p = floatsOf(step->pooled);
          pooled.insert(pooled.end(), p.begin(), p.end());
          kvState = step->kvState;
          scoreState = step->scoreState;
        }
        EXPECT_EQ(chunk->pooled.dim(0), (start + s) / ratio - start / ratio);
        EXPECT_TRUE(sameBits(floatsOf(chunk->pooled), pooled));
        EXPECT_TRUE(sameBits(floatsOf(chunk->kvState), floatsOf(kvState)));
        EXPECT_TRUE(sameBits(floatsOf(chunk->scoreState), floatsOf(scoreState)));
      }
}

/// compress_visibility, select_candidate_blocks, apply_candidates and indexer_topk of a chunk against the decode
/// steps: token t's decode step sees the width (start_pos + t + 1) // ratio (its own scores are the chunk row's first
/// columns) and ranks exactly that width; the chunk's row t must pick the same set (torch's tie order depends on
/// the ranked width and k: many ties here), pointing past W + s window rows instead of W, -1 past its k.
TEST(CompressKernelsChunk, IndexerSelectionEqualsTokenByTokenDecode) {
  const int64_t window = 8, topkBlocks = 2, blockSize = 2;
  int64_t compared = 0, padded = 0;
  for (bool ties : {true, false})
    for (int64_t ratio : {1, 2, 4})
      for (int64_t indexTopk : {1, 3, 5})
        for (int64_t start : {1, 3, 4, 6, 11})
          for (int64_t s : {2, 3, 6, 9}) {
            SCOPED_TRACE("ties " + std::to_string(ties) + ", ratio " + std::to_string(ratio) + ", index_topk " +
                         std::to_string(indexTopk) + ", start_pos " + std::to_string(start) + ", s " +
                         std::to_string(s));
            auto scoresOf = [&](int64_t first, int64_t n, int64_t width) {
              std::vector<float> v;
              for (int64_t t = 0; t < n; ++t)
                for (int64_t p = 0; p < width; ++p)
                  v.push_back(chunkValue(first + t, p, ties));
              return f32({n, width}, v);
            };
            auto select = [&](const Tensor &scores, int64_t pos) -> std::pair<Tensor, Tensor> {
              auto vis = compressVisibility(scores, pos, ratio);
              EXPECT_TRUE(vis.ok()) << vis.error();
              auto mask = selectCandidateBlocks(*vis, pos, ratio, topkBlocks, blockSize);
              EXPECT_TRUE(mask.ok()) << mask.error();
              auto masked = applyCandidates(*vis, *mask);
              EXPECT_TRUE(masked.ok()) << masked.error();
              auto idx = indexerTopk(*masked, pos, ratio, indexTopk, window);
              EXPECT_TRUE(idx.ok()) << idx.error();
              return {*mask, *idx};
            };
            const int64_t width = (start + s) / ratio;
            auto [mask, idx] = select(scoresOf(start, s, width), start);
            if (HasFailure())
              return;
            const int64_t k = std::min(indexTopk, width);
            ASSERT_EQ(idx.shape(), (std::vector<int64_t>{s, k}));
            ASSERT_EQ(mask.shape(), (std::vector<int64_t>{s, width}));
            for (int64_t t = 0; t < s; ++t) {
              const int64_t wt = (start + t + 1) / ratio;
              auto [dmask, didx] = select(scoresOf(start + t, 1, wt), start + t);
              if (HasFailure())
                return;
              for (int64_t p = 0; p < width; ++p)
                EXPECT_EQ(mask.intVector()[t * width + p], p < wt ? dmask.intVector()[p] : 0)
                    << "mask row " << t << " column " << p;
              const int64_t kt = didx.dim(1);
              ASSERT_LE(kt, k);
              for (int64_t j = 0; j < k; ++j) {
                const int64_t got = idx.intVector()[t * k + j];
                if (j >= kt) {
                  EXPECT_EQ(got, -1) << "row " << t << " entry " << j << " past the decode step's k " << kt;
                  ++padded;
                  continue;
                }
                const int64_t want = didx.intVector()[j];
                EXPECT_EQ(got, want < 0 ? -1 : want - window + (window + s)) << "row " << t << " entry " << j;
                ++compared;
              }
            }
          }
  EXPECT_GT(compared, 1000);
  EXPECT_GT(padded, 100);
}

} // namespace
