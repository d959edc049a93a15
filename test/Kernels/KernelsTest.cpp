//===- KernelsTest.cpp - dsa::interp kernels on hand-worked cases ------------===//
//
// Every expected value here is worked out by hand from shared/spec/attention-semantics.md (the arithmetic is in
// the comments) or computed by an independent brute-force f64 implementation written in this file.
//
//===----------------------------------------------------------------------------------------------------------===//

#include "dsa/Kernels/Kernels.h"

#include "TestSupport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

using namespace dsa;
using namespace dsa::kernels;
using namespace dsa::test;
using ::testing::HasSubstr;

namespace {

/// One bf16 ulp at |v| (normal range).
double bf16Ulp(double v) { return std::ldexp(1.0, std::ilogb(v == 0 ? 1e-30 : v) - 7); }

/// Random bf16-exact values in [-range, range): 8 significant bits times a power of two (range must be one).
std::vector<float> randomBf16(std::mt19937 &gen, size_t n, float range) {
  EXPECT_EQ(std::ldexp(1.0f, std::ilogb(range)), range) << "range must be a power of two";
  std::uniform_int_distribution<int> mant(-255, 255);
  std::uniform_int_distribution<int> ex(-3, 0);
  std::vector<float> v(n);
  for (float &x : v)
    x = std::ldexp(static_cast<float>(mant(gen)) / 256.0f, ex(gen)) * range;
  return v;
}

template <typename T> std::string errorOf(const dsa::Result<T> &r) {
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string("<no error>") : r.error();
}

} // namespace

//===----------------------------------------------------------------------------------------------------------===//
// linear
//===----------------------------------------------------------------------------------------------------------===//

TEST(KernelsLinear, HandWorkedBf16) {
  // y[m,n] = sum_k x[m,k] * W[n,k].
  auto y = linear(bf16({2, 3}, {1, 2, 3, 0.5f, -1, 2}), bf16({2, 3}, {1, 0, -1, 2, 1, 0.25f}));
  ASSERT_TRUE(y.ok()) << y.error();
  EXPECT_EQ(y->typeString(), "tensor<2x2xbf16>");
  // row 0: 1-3 = -2; 2+2+0.75 = 4.75. row 1: 0.5-2 = -1.5; 1-1+0.5 = 0.5.
  EXPECT_EQ(y->floatVector(), (std::vector<float>{-2, 4.75f, -1.5f, 0.5f}));
}

TEST(KernelsLinear, AccumulatesInF32AndRoundsOnceToBf16) {
  const float e7 = std::ldexp(1.0f, -7), e8 = std::ldexp(1.0f, -8);
  // [1+2^-7, 1] . [1, 2^-8] = 1 + 2^-7 + 2^-8: halfway between 1+2^-7 (odd) and 1+2^-6 (even) -> 1+2^-6.
  // [1, 1] . [1, 2^-8] = 1 + 2^-8: halfway between 1 (even) and 1+2^-7 -> 1.
  auto y = linear(bf16({2, 2}, {1 + e7, 1, 1, 1}), bf16({1, 2}, {1, e8}));
  ASSERT_TRUE(y.ok()) << y.error();
  EXPECT_EQ(y->floats()[0], 1 + 2 * e7);
  EXPECT_EQ(y->floats()[1], 1.0f);
  // 2^-8 summed 9 times onto 1 in f32 is exact (1 + 9*2^-8 = 1.03515625), then rounds to 1+2^-5+2^-7 ... by hand:
  // 1.03515625 = 1 + 4.5 * 2^-7: halfway between 1+4*2^-7 (even mantissa 4) and 1+5*2^-7 -> 1 + 2^-5.
  std::vector<float> x(10, 1.0f), w(10, e8);
  w[0] = 1.0f;
  auto z = linear(bf16({1, 10}, x), bf16({1, 10}, w));
  ASSERT_TRUE(z.ok()) << z.error();
  EXPECT_EQ(z->floats()[0], 1.0f + std::ldexp(1.0f, -5));
}

TEST(KernelsLinear, F32OperandsGiveUnroundedF32) {
  const float e8 = std::ldexp(1.0f, -8);
  auto y = linear(f32({1, 2}, {1, 1}), f32({1, 2}, {1, e8}));
  ASSERT_TRUE(y.ok()) << y.error();
  EXPECT_EQ(y->elementType(), ElementType::F32);
  EXPECT_EQ(y->floats()[0], 1.0f + e8);
}

TEST(KernelsLinear, LeadingDimensionsAreKept) {
  // x [2,1,2] -> [2,1,3].
  auto y = linear(bf16({2, 1, 2}, {1, 2, 3, 4}), bf16({3, 2}, {1, 0, 0, 1, 1, 1}));
  ASSERT_TRUE(y.ok()) << y.error();
  EXPECT_EQ(y->typeString(), "tensor<2x1x3xbf16>");
  EXPECT_EQ(y->floatVector(), (std::vector<float>{1, 2, 3, 3, 4, 7}));
}

TEST(KernelsLinear, MatchesBruteForceF64) {
  // Shapes that exercise the 8-lane body, the tail and the row blocking (M not a multiple of 4).
  std::mt19937 gen(1234);
  const int64_t M = 7, N = 13, K = 37;
  auto xs = randomBf16(gen, M * K, 2.0f), ws = randomBf16(gen, N * K, 0.5f);
  auto y = linear(bf16({M, K}, xs), bf16({N, K}, ws));
  ASSERT_TRUE(y.ok()) << y.error();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double want = 0;
      for (int64_t k = 0; k < K; ++k)
        want += static_cast<double>(xs[m * K + k]) * ws[n * K + k];
      const double got = y->floats()[m * N + n];
      EXPECT_LE(std::fabs(got - want), bf16Ulp(want)) << "m=" << m << " n=" << n;
    }
}

TEST(KernelsLinear, Errors) {
  Tensor x = bf16({2, 32}, std::vector<float>(64, 1.0f));
  EXPECT_EQ(errorOf(linear(x, bf16({4, 64}, std::vector<float>(256, 0.0f)))),
            "linear: weight has 64 columns but x's last dimension is 32");
  EXPECT_THAT(errorOf(linear(x, f32({4, 32}, std::vector<float>(128, 0.0f)))),
              HasSubstr("weight has element type f32 but x has bf16"));
  EXPECT_THAT(errorOf(linear(x, bf16({32}, std::vector<float>(32, 0.0f)))), HasSubstr("weight has rank 1"));
  EXPECT_THAT(errorOf(linear(i32({2}, {1, 2}), bf16({1, 2}, {1, 1}))), HasSubstr("x has element type i32"));
  EXPECT_THAT(errorOf(linear(Tensor(ElementType::BF16, {}), bf16({1, 1}, {1}))), HasSubstr("x has rank 0"));
}

//===----------------------------------------------------------------------------------------------------------===//
// rms_norm
//===----------------------------------------------------------------------------------------------------------===//

TEST(KernelsRmsNorm, HandWorked) {
  // x = [2,2,2,2]: mean(x^2) = 4, r = 1/2; y = w * 1.
  auto y = rmsNorm(bf16({1, 4}, {2, 2, 2, 2}), bf16({4}, {1, 0.5f, 2, -1}), 0.0f);
  ASSERT_TRUE(y.ok()) << y.error();
  EXPECT_EQ(y->floatVector(), (std::vector<float>{1, 0.5f, 2, -1}));
  // eps enters under the root: x = [1,1,1,1], eps 3 -> r = 1/sqrt(4) = 1/2.
  auto e = rmsNorm(bf16({4}, {1, 1, 1, 1}), bf16({4}, {1, 1, 1, 1}), 3.0f);
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->floatVector(), (std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f}));
}

TEST(KernelsRmsNorm, RoundsToBf16PerRow) {
  // Row [3,4]: mean = 12.5, r = 1/sqrt(12.5) = 0.28284271. 3r = 0.84852814 = 217.22 * 2^-8 -> 217/256;
  // 4r = 1.13137085 = 144.81 * 2^-7 -> 145/128. Row [0,-8]: mean 32, r = 0.1767767, y = [0, -1.41421356 * 2]...
  // -8 * r * w(=2) = -2.82842712 = -181.02 * 2^-6 -> -181/64.
  auto y = rmsNorm(f32({2, 1, 2}, {3, 4, 0, -8}), bf16({2}, {1, 2}), 0.0f);
  ASSERT_TRUE(y.ok()) << y.error();
  EXPECT_EQ(y->typeString(), "tensor<2x1x2xbf16>");
  EXPECT_EQ(y->floats()[0], 217.0f / 256.0f);
  EXPECT_EQ(y->floats()[1], 2 * 145.0f / 128.0f); // w=2 doubles 4r exactly before rounding: 290/128
  EXPECT_EQ(y->floats()[2], 0.0f);
  EXPECT_EQ(y->floats()[3], -181.0f / 64.0f);
}

TEST(KernelsRmsNorm, Errors) {
  Tensor x = bf16({2, 4}, std::vector<float>(8, 1.0f));
  EXPECT_EQ(errorOf(rmsNorm(x, bf16({3}, {1, 1, 1}), 1e-6f)),
            "rms_norm: weight has 3 elements but x's last dimension is 4");
  EXPECT_THAT(errorOf(rmsNorm(x, f32({4}, {1, 1, 1, 1}), 1e-6f)),
              HasSubstr("weight has element type f32, expected bf16"));
  EXPECT_THAT(errorOf(rmsNorm(x, bf16({1, 4}, {1, 1, 1, 1}), 1e-6f)), HasSubstr("weight has rank 2"));
  EXPECT_THAT(errorOf(rmsNorm(i64({4}, {1, 1, 1, 1}), bf16({4}, {1, 1, 1, 1}), 1e-6f)),
              HasSubstr("x has element type i64"));
  EXPECT_THAT(errorOf(rmsNorm(x, bf16({4}, {1, 1, 1, 1}), -1.0f)), HasSubstr("eps is"));
  EXPECT_THAT(errorOf(rmsNorm(x, bf16({4}, {1, 1, 1, 1}), std::nanf(""))), HasSubstr("eps is"));
  EXPECT_THAT(errorOf(rmsNorm(Tensor(ElementType::BF16, {2, 0}), Tensor(ElementType::BF16, {0}), 0.0f)),
              HasSubstr("last dimension is 0"));
}

//===----------------------------------------------------------------------------------------------------------===//
// positions, RoPE
//===----------------------------------------------------------------------------------------------------------===//

TEST(KernelsPositions, Values) {
  auto p = positions(3, 4, 2);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->typeString(), "tensor<4xi64>");
  EXPECT_EQ(p->intVector(), (std::vector<int64_t>{3, 5, 7, 9}));
  auto e = positions(0, 0, 1);
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->numElements(), 0);
}

TEST(KernelsPositions, Errors) {
  EXPECT_THAT(errorOf(positions(-1, 2, 1)), HasSubstr("start is -1"));
  EXPECT_THAT(errorOf(positions(0, -2, 1)), HasSubstr("count is -2"));
  EXPECT_THAT(errorOf(positions(0, 2, 0)), HasSubstr("stride is 0"));
  EXPECT_THAT(errorOf(positions(std::numeric_limits<int64_t>::max() - 1, 3, 1)), HasSubstr("overflows"));
}

TEST(KernelsRope, FrequenciesPlain) {
  // rd 8, base 1e4: f[k] = 1/1e4^(2k/8) = 1, 1/10, 1/100, 1/1000 (the powers are exact).
  auto f = ropeFrequencies({8, 1e4, std::nullopt});
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], 1.0f / 10.0f);
  EXPECT_EQ(f[2], 1.0f / 100.0f);
  EXPECT_EQ(f[3], 1.0f / 1000.0f);
  EXPECT_TRUE(ropeFrequencies({7, 1e4, std::nullopt}).empty());
  EXPECT_TRUE(ropeFrequencies({0, 1e4, std::nullopt}).empty());
}

TEST(KernelsRope, FrequenciesYarn) {
  // The tiny golden's ratio > 0 layers: rd 8, base 4e4, original_seq_len 32, factor 2, beta_fast 32, beta_slow 1.
  // cdim(32) = 8*ln(32/(64 pi)) / (2 ln 4e4) = 8*(-1.83788)/21.1933 = -0.6938 -> low = max(floor, 0) = 0.
  // cdim(1)  = 8*ln(32/(2 pi))  / (2 ln 4e4) = 8*( 1.62786)/21.1933 =  0.6145 -> high = min(ceil, 7) = 1.
  // ramp = clamp(k/1, 0, 1) = [0,1,1,1], smooth = [1,0,0,0]: f[0] kept, f[1..3] divided by the factor.
  // 4e4^(1/4) = sqrt(200), 4e4^(1/2) = 200, 4e4^(3/4) = 200 sqrt(200) (each rounded to f32, then 1/x in f32).
  auto f = ropeFrequencies({8, 4e4, YarnParams{32, 2.0, 32.0, 1.0}});
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], 1.0f / static_cast<float>(std::sqrt(200.0)) / 2.0f);
  EXPECT_EQ(f[2], 1.0f / 200.0f / 2.0f);
  EXPECT_EQ(f[3], 1.0f / static_cast<float>(200.0 * std::sqrt(200.0)) / 2.0f);

  // low == high: original_seq_len 1, base 1e4, rd 8: cdim(32) < 0 -> low 0; cdim(1) = 8 ln(1/2pi)/(2 ln 1e4)
  // = -0.798 -> high = ceil = 0. The ramp divides by 0.001: ramp = [0, 1, 1, 1] again.
  auto g = ropeFrequencies({8, 1e4, YarnParams{1, 4.0, 32.0, 1.0}});
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0], 1.0f);
  EXPECT_EQ(g[1], 0.1f / 4.0f);
  EXPECT_EQ(g[3], 0.001f / 4.0f);

  // original_seq_len 0 means no YaRN even when the struct is present.
  auto h = ropeFrequencies({8, 1e4, YarnParams{0, 4.0, 32.0, 1.0}});
  EXPECT_EQ(h, ropeFrequencies({8, 1e4, std::nullopt}));
}

TEST(KernelsRope, AdjacentPairsOnTheTail) {
  // hd 6, rd 4: elements 0,1 untouched; pairs (2,3) and (4,5). base 1e4: f = [1, 1/100].
  // Position 1: pair 0 rotates by 1 rad, pair 1 by 0.01 rad. Tail [1,0,1,0] -> [cos1, sin1, cos.01, sin.01]:
  // cos 1 = 0.54030231 = 138.32*2^-8 -> 138/256; sin 1 = 0.84147098 = 215.42*2^-8 -> 215/256;
  // cos .01 = 0.99995 -> 1; sin .01 = 0.00999983 = 163.84 * 2^-14 -> 164/16384.
  // (Rotating halves (2,4),(3,5) instead would give [cos1, cos.01, sin1, sin.01]-like values: caught here.)
  RopeParams p{4, 1e4, std::nullopt};
  Tensor x = bf16({2, 1, 6}, {5, -7, 1, 0, 1, 0, /*token at position 0*/ 5, -7, 1, 0, 1, 0});
  auto y = applyRope(x, i64({2}, {1, 0}), p, /*inverse=*/false);
  ASSERT_TRUE(y.ok()) << y.error();
  EXPECT_EQ(y->typeString(), "tensor<2x1x6xbf16>");
  std::vector<float> want{5, -7, 138.0f / 256, 215.0f / 256, 1.0f, 164.0f / 16384, 5, -7, 1, 0, 1, 0};
  EXPECT_EQ(y->floatVector(), want);
  // Inverse multiplies by (cos, -sin).
  auto inv = applyRope(x, i64({2}, {1, 0}), p, /*inverse=*/true);
  ASSERT_TRUE(inv.ok()) << inv.error();
  std::vector<float> wantInv{5, -7, 138.0f / 256, -215.0f / 256, 1.0f, -164.0f / 16384, 5, -7, 1, 0, 1, 0};
  EXPECT_EQ(inv->floatVector(), wantInv);
}

TEST(KernelsRope, SecondComponentAndHeads) {
  // Tail pair (0, 1) at position 1 (angle 1): (0 + i)(cos + i sin) = -sin + i cos -> [-215/256, 138/256].
  // Both heads of the token get the same rotation.
  RopeParams p{2, 1e4, std::nullopt};
  auto y = applyRope(bf16({1, 2, 2}, {0, 1, 0, 1}), i64({1}, {1}), p, false);
  ASSERT_TRUE(y.ok()) << y.error();
  EXPECT_EQ(y->floatVector(), (std::vector<float>{-215.0f / 256, 138.0f / 256, -215.0f / 256, 138.0f / 256}));
}

TEST(KernelsRope, MatchesBruteForce) {
  // Independent f64 rotation with the f32 angle of the spec; the result must be within one bf16 ulp.
  std::mt19937 gen(7);
  const int64_t s = 5, H = 3, hd = 16, rd = 8;
  auto xs = randomBf16(gen, s * H * hd, 4.0f);
  std::vector<int64_t> pos{0, 1, 17, 40, 63};
  RopeParams p{rd, 1e4, std::nullopt};
  for (bool inverse : {false, true}) {
    auto y = applyRope(bf16({s, H, hd}, xs), i64({s}, pos), p, inverse);
    ASSERT_TRUE(y.ok()) << y.error();
    for (int64_t t = 0; t < s; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < hd; ++d) {
          const int64_t i = (t * H + h) * hd + d;
          double want = xs[i];
          if (d >= hd - rd) {
            const int64_t k = (d - (hd - rd)) / 2;
            const float fk = 1.0f / static_cast<float>(std::pow(1e4, 2.0 * k / rd));
            const double a = static_cast<float>(pos[t]) * fk;
            const double c = std::cos(a), sn = inverse ? -std::sin(a) : std::sin(a);
            const int64_t e = (t * H + h) * hd + (hd - rd) + 2 * k;
            want = (d - (hd - rd)) % 2 == 0 ? xs[e] * c - xs[e + 1] * sn : xs[e] * sn + xs[e + 1] * c;
          }
          EXPECT_LE(std::fabs(y->floats()[i] - want), bf16Ulp(want) + 1e-6) << "t=" << t << " d=" << d;
        }
  }
}

TEST(KernelsRope, Errors) {
  RopeParams p{4, 1e4, std::nullopt};
  Tensor x = bf16({2, 8}, std::vector<float>(16, 1.0f));
  Tensor pos = i64({2}, {0, 1});
  EXPECT_EQ(errorOf(applyRope(x, i64({3}, {0, 1, 2}), p, false)),
            "apply_rope: positions has 3 elements but x has 2 rows (dimension 0)");
  EXPECT_THAT(errorOf(applyRope(f32({2, 8}, std::vector<float>(16, 1.0f)), pos, p, false)),
              HasSubstr("x has element type f32, expected bf16"));
  EXPECT_THAT(errorOf(applyRope(bf16({8}, std::vector<float>(8, 1.0f)), pos, p, false)),
              HasSubstr("x has rank 1"));
  EXPECT_THAT(errorOf(applyRope(x, f32({2}, {0, 1}), p, false)), HasSubstr("positions has element type f32"));
  EXPECT_THAT(errorOf(applyRope(x, i64({2, 1}, {0, 1}), p, false)), HasSubstr("positions has rank 2"));
  EXPECT_THAT(errorOf(applyRope(x, i64({2}, {0, -1}), p, false)), HasSubstr("positions[1] is -1"));
  EXPECT_THAT(errorOf(applyRope(x, pos, RopeParams{3, 1e4, std::nullopt}, false)),
              HasSubstr("rope_head_dim is 3"));
  EXPECT_THAT(errorOf(applyRope(x, pos, RopeParams{10, 1e4, std::nullopt}, false)),
              HasSubstr("rope_head_dim 10 exceeds x's last dimension 8"));
  EXPECT_THAT(errorOf(applyRope(x, pos, RopeParams{4, 0.0, std::nullopt}, false)), HasSubstr("rope theta"));
  EXPECT_THAT(errorOf(applyRope(x, pos, RopeParams{4, 1e4, YarnParams{32, 0.0, 32, 1}}, false)),
              HasSubstr("yarn factor"));
  EXPECT_THAT(errorOf(applyRope(x, pos, RopeParams{4, 1e4, YarnParams{32, 2.0, -1, 1}}, false)),
              HasSubstr("beta_fast"));
}

//===----------------------------------------------------------------------------------------------------------===//
// act_quant_fp8
//===----------------------------------------------------------------------------------------------------------===//

TEST(KernelsActQuant, HandWorked) {
  // Block 0: x[0] = 1, x[1] = bf16(0.3) = 0.30078125, x[2] = bf16(-0.01) = -0.010009765625, rest 0.
  //   amax = 1; s = pow2_ceil(1/448) = 2^-8 (1/448 = 1.14 * 2^-9). x/s = 256 (e4m3-exact), 77 -> e4m3 grid in
  //   [64,128) steps by 8: 77 -> 80 -> 80/256 = 0.3125; -2.5625 -> grid [2,4) steps by 0.25 -> -2.5 -> -2.5/256.
  // Block 1: all zero (amax = 1e-4) stays zero, except x[33] = 448*4 = 1792: s = pow2_ceil(4) = 4 -> exact.
  std::vector<float> row(64, 0.0f);
  row[0] = 1.0f;
  row[1] = 0.3f;
  row[2] = -0.01f;
  row[33] = 1792.0f;
  row[34] = 13.0f; // 13/4 = 3.25 -> e4m3 [2,4) step .25: exact -> 13
  row[35] = 9.0f;  // 9/4 = 2.25 exact -> 9
  row[36] = 1.0f;  // 1/4 = 0.25 = 2^-2 exact -> 1
  row[37] = 0.1f;  // bf16 0.10009765625 / 4 = 0.0250244: e4m3 grid at [2^-6, 2^-5) steps 2^-9 -> 12.81*2^-9 -> 13
  auto y = actQuantFp8(bf16({1, 64}, row), 32);
  ASSERT_TRUE(y.ok()) << y.error();
  std::vector<float> want(64, 0.0f);
  want[0] = 1.0f;
  want[1] = 0.3125f;
  want[2] = -2.5f / 256.0f;
  want[33] = 1792.0f;
  want[34] = 13.0f;
  want[35] = 9.0f;
  want[36] = 1.0f;
  want[37] = 13.0f * std::ldexp(1.0f, -9) * 4.0f;
  EXPECT_EQ(y->floatVector(), want);
  EXPECT_EQ(y->elementType(), ElementType::BF16);
}

TEST(KernelsActQuant, Errors) {
  EXPECT_EQ(errorOf(actQuantFp8(bf16({1, 48}, std::vector<float>(48, 1.0f)), 32)),
            "act_quant_fp8: x's last dimension 48 is not a multiple of block_size 32");
  EXPECT_THAT(errorOf(actQuantFp8(bf16({1, 32}, std::vector<float>(32, 1.0f)), 0)), HasSubstr("block_size is 0"));
  EXPECT_THAT(errorOf(actQuantFp8(i32({2}, {1, 2}), 2)), HasSubstr("x has element type i32"));
  EXPECT_THAT(errorOf(actQuantFp8(Tensor(ElementType::BF16, {}), 32)), HasSubstr("x has rank 0"));
}

//===----------------------------------------------------------------------------------------------------------===//
// ring_update, window_kv, window_indices (section 4)
//===----------------------------------------------------------------------------------------------------------===//

namespace {
/// kv rows [s, 2] for tokens first..first+s-1: row t = [t, -t] (bf16-exact).
Tensor tokenRows(int64_t first, int64_t s) {
  std::vector<float> v;
  for (int64_t t = first; t < first + s; ++t) {
    v.push_back(static_cast<float>(t));
    v.push_back(-static_cast<float>(t));
  }
  return bf16({s, 2}, v);
}
/// The token stored in each slot of a ring made of tokenRows (slot rows [t, -t]; a zero row reads as 0).
std::vector<int64_t> ringTokens(const Tensor &ring) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < ring.dim(0); ++i) {
    EXPECT_EQ(ring.floats()[2 * i], -ring.floats()[2 * i + 1]);
    out.push_back(static_cast<int64_t>(ring.floats()[2 * i]));
  }
  return out;
}
} // namespace

TEST(TensorZeros, ChecksTheShapeAndTheByteLimitBeforeAllocating) {
  auto ok = Tensor::zeros(ElementType::F32, {3, 4});
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->shape(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ok->floatVector(), std::vector<float>(12, 0.0f));
  EXPECT_EQ(errorOf(Tensor::zeros(ElementType::BF16, {2, -1})), "tensor shape [2, -1] has a negative dimension");
  EXPECT_EQ(errorOf(Tensor::zeros(ElementType::I32, {int64_t(1) << 40, int64_t(1) << 40})),
            "tensor shape [1099511627776, 1099511627776]: the element count overflows int64");
  EXPECT_EQ(errorOf(Tensor::zeros(ElementType::I64, {int64_t(1) << 61})),
            "tensor shape [2305843009213693952]: the byte size overflows int64");
  // The limit counts the stored bytes: 4 per float element, 8 per integer element.
  Tensor::setTensorByteLimit(96);
  EXPECT_TRUE(Tensor::zeros(ElementType::BF16, {24}).ok());
  EXPECT_TRUE(Tensor::zeros(ElementType::I64, {12}).ok());
  EXPECT_EQ(errorOf(Tensor::zeros(ElementType::I64, {13})),
            "tensor shape [13] (i64) needs 104 bytes, more than the limit of 96 bytes (DSA_MAX_TENSOR_BYTES)");
  Tensor::setTensorByteLimit(0); // the default again: the machine's memory or $DSA_MAX_TENSOR_BYTES
  EXPECT_GT(Tensor::tensorByteLimit(), 96);
  EXPECT_TRUE(Tensor::zeros(ElementType::I64, {13}).ok());
}

TEST(KernelsRing, PrefillSeedsTheRingWorkedExample) {
  // Section 4, W = 8: prefill of 12 leaves slots 4..7 = tokens 4..7 and slots 0..3 = tokens 8..11.
  Tensor ring(ElementType::BF16, {8, 2});
  auto r = ringUpdate(ring, tokenRows(0, 12), 0);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(ringTokens(*r), (std::vector<int64_t>{8, 9, 10, 11, 4, 5, 6, 7}));
  // decode at 12 writes slot 4; decode at 13 writes slot 5.
  auto d12 = ringUpdate(*r, tokenRows(12, 1), 12);
  ASSERT_TRUE(d12.ok()) << d12.error();
  EXPECT_EQ(ringTokens(*d12), (std::vector<int64_t>{8, 9, 10, 11, 12, 5, 6, 7}));
  auto d13 = ringUpdate(*d12, tokenRows(13, 1), 13);
  ASSERT_TRUE(d13.ok()) << d13.error();
  EXPECT_EQ(ringTokens(*d13), (std::vector<int64_t>{8, 9, 10, 11, 12, 13, 6, 7}));
}

TEST(KernelsRing, ShortPrefillAndMultiTokenSteps) {
  // s <= W: slots 0..s-1 get tokens 0..s-1, the rest stays zero.
  Tensor ring(ElementType::BF16, {8, 2});
  auto r = ringUpdate(ring, tokenRows(0, 3), 0);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(ringTokens(*r), (std::vector<int64_t>{0, 1, 2, 0, 0, 0, 0, 0}));
  // s == W exactly: every slot t gets token t.
  auto full = ringUpdate(ring, tokenRows(0, 8), 0);
  ASSERT_TRUE(full.ok()) << full.error();
  EXPECT_EQ(ringTokens(*full), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Prefill of 16 into W 8 (c = 0): the last 8 tokens, token t in slot t % 8.
  auto p16 = ringUpdate(ring, tokenRows(0, 16), 0);
  ASSERT_TRUE(p16.ok()) << p16.error();
  EXPECT_EQ(ringTokens(*p16), (std::vector<int64_t>{8, 9, 10, 11, 12, 13, 14, 15}));
  // Multi-token step at start_pos 5 (s = 3): tokens 5, 6, 7 into slots 5, 6, 7 of the ring that held 0..2.
  auto m = ringUpdate(*r, tokenRows(5, 3), 5);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(ringTokens(*m), (std::vector<int64_t>{0, 1, 2, 0, 0, 5, 6, 7}));
  // start_pos 6, s = 10, W = 4: only tokens 12..15 survive, token t in slot t % 4.
  Tensor ring4(ElementType::BF16, {4, 2});
  auto w = ringUpdate(ring4, tokenRows(6, 10), 6);
  ASSERT_TRUE(w.ok()) << w.error();
  EXPECT_EQ(ringTokens(*w), (std::vector<int64_t>{12, 13, 14, 15}));
  // Wrap inside one step: start_pos 6, s = 3, W = 4: tokens 6, 7, 8 -> slots 2, 3, 0.
  auto wrap = ringUpdate(ring4, tokenRows(6, 3), 6);
  ASSERT_TRUE(wrap.ok()) << wrap.error();
  EXPECT_EQ(ringTokens(*wrap), (std::vector<int64_t>{8, 0, 6, 7}));
}

TEST(KernelsRing, HugeStartPosWrapsWithoutOverflow) {
  // start_pos near INT64_MAX: (start_pos + i) would overflow; the slot is (start_pos + i) mod W computed exactly.
  // INT64_MAX = 9223372036854775807 = 8 * 1152921504606846975 + 7, so start_pos = INT64_MAX - 1 is slot 6 of W = 8
  // and the 4-token step writes slots 6, 7, 0, 1.
  Tensor ring(ElementType::BF16, {8, 2});
  const int64_t sp = std::numeric_limits<int64_t>::max() - 1;
  auto r = ringUpdate(ring, tokenRows(1, 4), sp);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(ringTokens(*r), (std::vector<int64_t>{3, 4, 0, 0, 0, 0, 1, 2}));
}

TEST(KernelsRing, Errors) {
  Tensor ring(ElementType::BF16, {8, 2});
  EXPECT_THAT(errorOf(ringUpdate(ring, tokenRows(0, 1), -1)), HasSubstr("ring_update: start_pos is -1"));
  EXPECT_EQ(errorOf(ringUpdate(ring, bf16({1, 3}, {1, 2, 3}), 0)),
            "ring_update: kv rows have 3 elements but ring rows have 2");
  EXPECT_THAT(errorOf(ringUpdate(Tensor(ElementType::F32, {8, 2}), tokenRows(0, 1), 0)),
              HasSubstr("ring has element type f32, expected bf16"));
  EXPECT_THAT(errorOf(ringUpdate(ring, f32({1, 2}, {1, 2}), 0)), HasSubstr("kv has element type f32"));
  EXPECT_THAT(errorOf(ringUpdate(Tensor(ElementType::BF16, {8}), tokenRows(0, 1), 0)), HasSubstr("ring has rank 1"));
  EXPECT_THAT(errorOf(ringUpdate(ring, bf16({2}, {1, 2}), 0)), HasSubstr("kv has rank 1"));
  EXPECT_THAT(errorOf(ringUpdate(Tensor(ElementType::BF16, {0, 2}), tokenRows(0, 1), 0)),
              HasSubstr("ring has 0 slots"));
}

TEST(KernelsWindowKv, PrefillReadsTheChunkDecodeReadsTheRing) {
  Tensor ring(ElementType::BF16, {8, 2});
  Tensor kv = tokenRows(0, 12);
  auto p = windowKv(kv, ring, 0);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->typeString(), "tensor<12x2xbf16>");
  EXPECT_EQ(p->floatVector(), kv.floatVector());
  auto seeded = ringUpdate(ring, kv, 0);
  ASSERT_TRUE(seeded.ok());
  // Decode at 12 from the ring before the step: the whole ring, slot 12 % 8 = 4 holding token 12.
  auto d = windowKv(tokenRows(12, 1), *seeded, 12);
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->typeString(), "tensor<8x2xbf16>");
  EXPECT_EQ(ringTokens(*d), (std::vector<int64_t>{8, 9, 10, 11, 12, 5, 6, 7}));
}

TEST(KernelsWindowKv, DecodeGivenTheRingBeforeOrAfterTheUpdateReadsTheSameRows) {
  Tensor ring(ElementType::BF16, {8, 2});
  auto seeded = ringUpdate(ring, tokenRows(0, 12), 0);
  ASSERT_TRUE(seeded.ok());
  auto updated = ringUpdate(*seeded, tokenRows(12, 1), 12);
  ASSERT_TRUE(updated.ok());
  auto before = windowKv(tokenRows(12, 1), *seeded, 12), after = windowKv(tokenRows(12, 1), *updated, 12);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_EQ(ringTokens(*before), (std::vector<int64_t>{8, 9, 10, 11, 12, 5, 6, 7}));
  EXPECT_EQ(before->floatVector(), after->floatVector());
}

TEST(KernelsWindowKv, ChunkReadsTheRingBeforeTheStepThenItsOwnRows) {
  // W = 4, ring after a prefill of 4 (tokens 0..3), a chunk of 3 at 4: rows = slots 0..3, then tokens 4, 5, 6.
  Tensor ring(ElementType::BF16, {4, 2});
  auto seeded = ringUpdate(ring, tokenRows(0, 4), 0);
  ASSERT_TRUE(seeded.ok());
  auto rows = windowKv(tokenRows(4, 3), *seeded, 4);
  ASSERT_TRUE(rows.ok()) << rows.error();
  EXPECT_EQ(rows->typeString(), "tensor<7x2xbf16>");
  EXPECT_EQ(ringTokens(*rows), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(KernelsWindowKv, Errors) {
  Tensor ring(ElementType::BF16, {8, 2});
  EXPECT_THAT(errorOf(windowKv(tokenRows(0, 1), ring, -3)), HasSubstr("start_pos is -3"));
  EXPECT_THAT(errorOf(windowKv(bf16({1, 4}, {1, 2, 3, 4}), ring, 0)),
              HasSubstr("kv rows have 4 elements but ring rows have 2"));
  EXPECT_THAT(errorOf(windowKv(bf16({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), ring, 5)),
              HasSubstr("kv rows have 4 elements but ring rows have 2"));
  EXPECT_THAT(errorOf(windowKv(tokenRows(0, 1), Tensor(ElementType::F32, {8, 2}), 0)),
              HasSubstr("ring has element type f32"));
}

TEST(KernelsWindowIndices, PrefillWorkedExample) {
  // Prefill of 12 with W = 8: row t lists j = max(0, t-7) + i for i < 8, -1 where j > t.
  auto idx = windowIndices(0, 12, 8);
  ASSERT_TRUE(idx.ok()) << idx.error();
  EXPECT_EQ(idx->typeString(), "tensor<12x8xi32>");
  const int64_t N = -1;
  std::vector<int64_t> want{
      0, N, N, N, N, N, N, N, //
      0, 1, N, N, N, N, N, N, //
      0, 1, 2, N, N, N, N, N, //
      0, 1, 2, 3, N, N, N, N, //
      0, 1, 2, 3, 4, N, N, N, //
      0, 1, 2, 3, 4, 5, N, N, //
      0, 1, 2, 3, 4, 5, 6, N, //
      0, 1, 2, 3, 4, 5, 6, 7, //
      1, 2, 3, 4, 5, 6, 7, 8, //
      2, 3, 4, 5, 6, 7, 8, 9, //
      3, 4, 5, 6, 7, 8, 9, 10, //
      4, 5, 6, 7, 8, 9, 10, 11,
  };
  EXPECT_EQ(idx->intVector(), want);
  // s < W: width min(s, W) = 3.
  auto small = windowIndices(0, 3, 8);
  ASSERT_TRUE(small.ok()) << small.error();
  EXPECT_EQ(small->typeString(), "tensor<3x3xi32>");
  EXPECT_EQ(small->intVector(), (std::vector<int64_t>{0, N, N, 0, 1, N, 0, 1, 2}));
}

TEST(KernelsWindowIndices, DecodeRingOrder) {
  const int64_t N = -1;
  auto at = [](int64_t sp) {
    auto r = windowIndices(sp, 1, 8);
    EXPECT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->typeString(), "tensor<1x8xi32>");
    return r->intVector();
  };
  // Worked example: decode at 12 reads slots 5,6,7,0,1,2,3,4; at 13: 6,7,0,1,2,3,4,5.
  EXPECT_EQ(at(12), (std::vector<int64_t>{5, 6, 7, 0, 1, 2, 3, 4}));
  EXPECT_EQ(at(13), (std::vector<int64_t>{6, 7, 0, 1, 2, 3, 4, 5}));
  // Filling ring (prefill 3, decode at 3): oldest = 4; slots 4..7 exceed start_pos -> -1.
  EXPECT_EQ(at(3), (std::vector<int64_t>{N, N, N, N, 0, 1, 2, 3}));
  // start_pos 7: oldest = 8, no slot after it: 0..7, all filled. start_pos 8: oldest = 1.
  EXPECT_EQ(at(7), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(at(8), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 0}));
  // start_pos 1: oldest 2: slots 2..7 -> -1, then 0, 1.
  EXPECT_EQ(at(1), (std::vector<int64_t>{N, N, N, N, N, N, 0, 1}));
}

TEST(KernelsWindowIndices, ChunkWorkedExamples) {
  const int64_t N = -1;
  // W = 4, a chunk of 3 at 4 over rows [slots 0..3, tokens 4, 5, 6]: token 4 reads positions 1..4 = slots 1, 2, 3
  // then chunk row 4; token 5 positions 2..5; token 6 positions 3..6.
  auto a = windowIndices(4, 3, 4);
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->typeString(), "tensor<3x4xi32>");
  EXPECT_EQ(a->intVector(), (std::vector<int64_t>{1, 2, 3, 4, /**/ 2, 3, 4, 5, /**/ 3, 4, 5, 6}));
  // W = 8 still filling: a prefill of 1, then a chunk of 2 at 1: rows [slots 0..7, tokens 1, 2].
  auto b = windowIndices(1, 2, 8);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->intVector(), (std::vector<int64_t>{N, N, N, N, N, N, 0, 8, /**/ N, N, N, N, N, 0, 8, 9}));
  // Crossing the wrap, W = 4, a chunk of 2 at 6: token 6 reads positions 3, 4, 5 (slots 3, 0, 1), then row 4.
  auto c = windowIndices(6, 2, 4);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->intVector(), (std::vector<int64_t>{3, 0, 1, 4, /**/ 0, 1, 4, 5}));
}

/// The definition (section 13): every token of a chunk reads the same kv values, in the same order and with -1 in
/// the same places, as its own decode step; and the ring after the chunk is the ring after the decodes. Rows are
/// labelled by position (token p's row is [p + 1, -(p + 1)], so an empty slot reads 0), and the label each entry
/// reads is also checked against the window itself: entry i of token p is position p - W + 1 + i, or none.
TEST(KernelsWindowChunk, EqualsTokenByTokenDecodeOverRingBoundaries) {
  for (int64_t W : {1, 4, 8}) {
    for (int64_t prefix : {1, 2, 3, 5, 7, 8, 9, 13}) {
      for (int64_t s : {int64_t{2}, int64_t{3}, W - 1, W, W + 1, 2 * W + 3}) {
        if (s < 2)
          continue;
        SCOPED_TRACE("W " + std::to_string(W) + ", prefix " + std::to_string(prefix) + ", chunk " +
                     std::to_string(s));
        // The ring after a prefill of 1 and decodes up to prefix - 1.
        auto ring0 = ringUpdate(Tensor(ElementType::BF16, {W, 2}), tokenRows(1, 1), 0);
        ASSERT_TRUE(ring0.ok());
        Tensor ring = *ring0;
        for (int64_t p = 1; p < prefix; ++p)
          ring = *ringUpdate(ring, tokenRows(p + 1, 1), p);
        const Tensor chunk = tokenRows(prefix + 1, s);
        auto rows = windowKv(chunk, ring, prefix);
        auto idx = windowIndices(prefix, s, W);
        ASSERT_TRUE(rows.ok()) << rows.error();
        ASSERT_TRUE(idx.ok()) << idx.error();
        ASSERT_EQ(rows->shape(), (std::vector<int64_t>{W + s, 2}));
        ASSERT_EQ(idx->shape(), (std::vector<int64_t>{s, W}));
        const std::vector<int64_t> chunkLabels = ringTokens(*rows);
        Tensor decodeRing = ring;
        for (int64_t t = 0; t < s; ++t) {
          const int64_t p = prefix + t;
          const Tensor one = tokenRows(p + 1, 1);
          auto drows = windowKv(one, decodeRing, p);
          auto didx = windowIndices(p, 1, W);
          ASSERT_TRUE(drows.ok() && didx.ok());
          decodeRing = *ringUpdate(decodeRing, one, p);
          const std::vector<int64_t> decodeLabels = ringTokens(*drows);
          for (int64_t i = 0; i < W; ++i) {
            const int64_t c = idx->ints()[t * W + i], d = didx->ints()[i];
            ASSERT_EQ(c < 0, d < 0) << "token " << t << " entry " << i;
            const int64_t pos = p - W + 1 + i;
            if (d < 0) {
              EXPECT_LT(pos, 0);
              continue;
            }
            EXPECT_EQ(chunkLabels[static_cast<size_t>(c)], decodeLabels[static_cast<size_t>(d)])
                << "token " << t << " entry " << i;
            EXPECT_EQ(chunkLabels[static_cast<size_t>(c)], pos + 1) << "token " << t << " entry " << i;
          }
        }
        auto after = ringUpdate(ring, chunk, prefix);
        ASSERT_TRUE(after.ok());
        EXPECT_EQ(ringTokens(*after), ringTokens(decodeRing));
      }
    }
  }
}

TEST(KernelsWindowIndices, Errors) {
  EXPECT_THAT(errorOf(windowIndices(-1, 1, 8)), HasSubstr("start_pos is -1"));
  EXPECT_THAT(errorOf(windowIndices(0, 0, 8)), HasSubstr("token count is 0"));
  EXPECT_THAT(errorOf(windowIndices(0, 4, 0)), HasSubstr("window_size is 0"));
  EXPECT_EQ(errorOf(windowIndices(std::numeric_limits<int64_t>::max() - 2, 3, 8)),
            "window_indices: start_pos 9223372036854775805 + 3 tokens overflows int64");
  EXPECT_EQ(errorOf(windowIndices(5, 3, std::numeric_limits<int32_t>::max() - 2)),
            "window_indices: window_size 2147483645 + 3 tokens: the rows do not fit i32 indices");
  // Decode at a huge start_pos is fine (no sum is formed).
  EXPECT_TRUE(windowIndices(std::numeric_limits<int64_t>::max() - 1, 1, 8).ok());
}

//===----------------------------------------------------------------------------------------------------------===//
// sparse_attn (section 10)
//===----------------------------------------------------------------------------------------------------------===//

TEST(KernelsSparseAttn, SinkEntersTheDenominatorOnly) {
  // One query, one head, hd 2, scale 1. q = [1, 0]; kv rows [0, 2] and [0, 4]: z = 0 for both.
  // sink 0: m = 0, den = e^0 (sink) + 1 + 1 = 3, o = (1/3)[0,2] + (1/3)[0,4] = [0, 2].
  Tensor q = bf16({1, 1, 2}, {1, 0});
  Tensor kv = bf16({2, 2}, {0, 2, 0, 4});
  auto o = sparseAttn(q, kv, i32({1, 2}, {0, 1}), f32({1}, {0.0f}), 1.0f);
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->typeString(), "tensor<1x1x2xbf16>");
  EXPECT_EQ(o->floatVector(), (std::vector<float>{0, 2}));
  // Without a sink (-inf) it is a plain softmax: o = [0, 3]. A -1 entry contributes nothing.
  auto plain = sparseAttn(q, kv, i32({1, 3}, {0, -1, 1}), f32({1}, {-kInf}), 1.0f);
  ASSERT_TRUE(plain.ok()) << plain.error();
  EXPECT_EQ(plain->floatVector(), (std::vector<float>{0, 3}));
}

TEST(KernelsSparseAttn, ScaleAndWeightsByHand) {
  // q = [1, 0], kv rows r0 = [1, 0], r1 = [0, 4], scale = ln 3: z0 = ln 3, z1 = 0; sink 0.
  // m = ln 3; den = e^-ln3 + 1 + e^-ln3 = 5/3; p0 = 3/5 = 0.6, p1 = 1/5 = 0.2.
  // o = 0.6 r0 + 0.2 r1 = [0.6, 0.8] -> bf16: 0.6 = 153.6 * 2^-8 -> 154/256; 0.8 = 204.8 * 2^-8 -> 205/256.
  auto o = sparseAttn(bf16({1, 1, 2}, {1, 0}), bf16({2, 2}, {1, 0, 0, 4}), i32({1, 2}, {0, 1}), f32({1}, {0.0f}),
                      static_cast<float>(std::log(3.0)));
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->floatVector(), (std::vector<float>{154.0f / 256, 205.0f / 256}));
}

TEST(KernelsSparseAttn, AllMinusOneRowGivesZeros) {
  // Token 0 reads nothing (all -1): zeros, no NaN, even with a large sink. Token 1 reads row 1 only with sink
  // -inf: its output is row 1 exactly. Two heads.
  Tensor q = bf16({2, 2, 2}, {1, 2, 3, 4, 1, 0, 0, 1});
  Tensor kv = bf16({2, 2}, {5, 6, 7, 8});
  Tensor idx = i32({2, 3}, {-1, -1, -1, -1, 1, -1});
  for (float sink : {0.0f, 50.0f, -kInf}) {
    auto o = sparseAttn(q, kv, idx, f32({2}, {sink, -kInf}), 0.5f);
    ASSERT_TRUE(o.ok()) << o.error();
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(o->floats()[i], 0.0f) << "sink " << sink << " element " << i;
    // Token 1, head 1 (sink -inf): plain softmax over one row -> the row itself.
    EXPECT_EQ(o->floats()[6], 7.0f);
    EXPECT_EQ(o->floats()[7], 8.0f);
    for (float v : o->floatVector())
      EXPECT_FALSE(std::isnan(v));
  }
  // Width-0 indices: every row is empty -> zeros.
  auto empty = sparseAttn(q, kv, Tensor(ElementType::I32, {2, 0}), f32({2}, {0.0f, 0.0f}), 0.5f);
  ASSERT_TRUE(empty.ok()) << empty.error();
  for (float v : empty->floatVector())
    EXPECT_EQ(v, 0.0f);
}

TEST(KernelsSparseAttn, MatchesBruteForceSoftmaxOverSinkAndScores) {
  // Independent f64 implementation in the reference's form: softmax over [sink, z_0..z_k-1], the sink's
  // probability dropped; one bf16 ulp of tolerance for the final rounding.
  std::mt19937 gen(99);
  const int64_t s = 4, H = 3, hd = 16, n = 10, k = 6;
  auto qs = randomBf16(gen, s * H * hd, 1.0f), kvs = randomBf16(gen, n * hd, 1.0f);
  std::uniform_int_distribution<int> pick(-1, n - 1);
  std::vector<int64_t> idx(s * k);
  for (auto &v : idx)
    v = pick(gen);
  std::vector<float> sink{0.3f, -1.5f, 2.0f};
  const float scale = 0.25f;
  auto o = sparseAttn(bf16({s, H, hd}, qs), bf16({n, hd}, kvs), i32({s, k}, idx), f32({H}, sink), scale);
  ASSERT_TRUE(o.ok()) << o.error();
  for (int64_t t = 0; t < s; ++t)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> logits{sink[h]};
      std::vector<int64_t> rows;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t r = idx[t * k + j];
        if (r < 0)
          continue;
        double dot = 0;
        for (int64_t d = 0; d < hd; ++d)
          dot += static_cast<double>(qs[(t * H + h) * hd + d]) * kvs[r * hd + d];
        logits.push_back(dot * scale);
        rows.push_back(r);
      }
      double mx = -INFINITY;
      for (double l : logits)
        mx = std::max(mx, l);
      double den = 0;
      for (double l : logits)
        den += std::exp(l - mx);
      for (int64_t d = 0; d < hd; ++d) {
        double want = 0;
        for (size_t j = 0; j < rows.size(); ++j)
          want += std::exp(logits[j + 1] - mx) / den * kvs[rows[j] * hd + d];
        const double got = o->floats()[(t * H + h) * hd + d];
        EXPECT_LE(std::fabs(got - want), bf16Ulp(want) + 1e-7) << "t=" << t << " h=" << h << " d=" << d;
      }
    }
}

TEST(KernelsSparseAttn, Errors) {
  Tensor q = bf16({1, 2, 4}, std::vector<float>(8, 1.0f));
  Tensor kv = bf16({3, 4}, std::vector<float>(12, 1.0f));
  Tensor idx = i32({1, 2}, {0, 2});
  Tensor sink = f32({2}, {0, 0});
  EXPECT_EQ(errorOf(sparseAttn(q, kv, i32({1, 2}, {0, 3}), sink, 0.5f)),
            "sparse_attn: indices[0, 1] is 3, expected -1 or a row of kv in [0, 3)");
  EXPECT_THAT(errorOf(sparseAttn(q, kv, i32({1, 2}, {-2, 0}), sink, 0.5f)), HasSubstr("indices[0, 0] is -2"));
  EXPECT_THAT(errorOf(sparseAttn(q, bf16({3, 2}, std::vector<float>(6, 1.0f)), idx, sink, 0.5f)),
              HasSubstr("kv rows have 2 elements but q's head_dim is 4"));
  EXPECT_THAT(errorOf(sparseAttn(q, kv, i32({2, 1}, {0, 1}), sink, 0.5f)),
              HasSubstr("indices has 2 rows but q has 1 tokens"));
  EXPECT_THAT(errorOf(sparseAttn(q, kv, idx, f32({3}, {0, 0, 0}), 0.5f)),
              HasSubstr("sink has 3 elements but q has 2 heads"));
  EXPECT_THAT(errorOf(sparseAttn(q, kv, idx, f32({2}, {0, std::nanf("")}), 0.5f)), HasSubstr("sink[1] is NaN"));
  EXPECT_THAT(errorOf(sparseAttn(q, kv, idx, sink, kInf)), HasSubstr("scale is"));
  EXPECT_THAT(errorOf(sparseAttn(f32({1, 2, 4}, std::vector<float>(8, 1.0f)), kv, idx, sink, 0.5f)),
              HasSubstr("q has element type f32, expected bf16"));
  EXPECT_THAT(errorOf(sparseAttn(q, f32({3, 4}, std::vector<float>(12, 1.0f)), idx, sink, 0.5f)),
              HasSubstr("kv has element type f32"));
  EXPECT_THAT(errorOf(sparseAttn(q, kv, i64({1, 2}, {0, 1}), sink, 0.5f)),
              HasSubstr("indices has element type i64, expected i32"));
  EXPECT_THAT(errorOf(sparseAttn(q, kv, idx, bf16({2}, {0, 0}), 0.5f)), HasSubstr("sink has element type bf16"));
  EXPECT_THAT(errorOf(sparseAttn(bf16({2, 4}, std::vector<float>(8, 1.0f)), kv, idx, sink, 0.5f)),
              HasSubstr("q has rank 2"));
  EXPECT_THAT(errorOf(sparseAttn(q, kv, i32({2}, {0, 1}), sink, 0.5f)), HasSubstr("indices has rank 1"));
}

//===----------------------------------------------------------------------------------------------------------===//
// grouped_output (section 11)
//===----------------------------------------------------------------------------------------------------------===//

TEST(KernelsGroupedOutput, BlockDiagonal) {
  // s 1, H 2, hd 2, G 2: group g = head g, R = 1. o = [[1,2],[3,4]], wo_a = [[1,1],[1,-1]] -> [1+2, 3-4].
  Tensor o = bf16({1, 2, 2}, {1, 2, 3, 4});
  auto g2 = groupedOutput(o, bf16({2, 2}, {1, 1, 1, -1}), 2);
  ASSERT_TRUE(g2.ok()) << g2.error();
  EXPECT_EQ(g2->typeString(), "tensor<1x2xbf16>");
  EXPECT_EQ(g2->floatVector(), (std::vector<float>{3, -1}));
  // G 1: one group of 4 values, R 2: [1,1,1,1].[1,2,3,4] = 10; [1,0,0,-1]. = -3.
  auto g1 = groupedOutput(o, bf16({2, 4}, {1, 1, 1, 1, 1, 0, 0, -1}), 1);
  ASSERT_TRUE(g1.ok()) << g1.error();
  EXPECT_EQ(g1->floatVector(), (std::vector<float>{10, -3}));
  // bf16 rounding of the f32 sum: 1 + 2^-8 (tie) -> 1 (even).
  auto r = groupedOutput(bf16({1, 1, 2}, {1, 1}), bf16({1, 2}, {1, std::ldexp(1.0f, -8)}), 1);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->floats()[0], 1.0f);
}

TEST(KernelsGroupedOutput, TwoTokensFourHeadsTwoGroups) {
  // H 4, hd 1, G 2: group 0 = heads 0,1; group 1 = heads 2,3; R 1. wo_a = [[1, 10], [100, 1000]].
  auto y = groupedOutput(bf16({2, 4, 1}, {1, 2, 3, 4, 5, 6, 7, 8}), bf16({2, 2}, {1, 10, 100, 1000}), 2);
  ASSERT_TRUE(y.ok()) << y.error();
  // token 0: 1 + 20 = 21; 300 + 4000 = 4300 -> bf16 (ulp 32 at [4096, 8192)): 4300 = 134.375*32 -> 4288.
  // token 1: 5 + 60 = 65; 700 + 8000 = 8700 -> ulp 64: 135.94*64 -> 8704.
  EXPECT_EQ(y->floatVector(), (std::vector<float>{21, 4288, 65, 8704}));
}

TEST(KernelsGroupedOutput, Errors) {
  Tensor o = bf16({1, 4, 2}, std::vector<float>(8, 1.0f));
  EXPECT_EQ(errorOf(groupedOutput(o, bf16({2, 8}, std::vector<float>(16, 1.0f)), 2)),
            "grouped_output: wo_a has 8 columns but one group of o has n_heads*head_dim/o_groups = 4 values");
  EXPECT_THAT(errorOf(groupedOutput(o, bf16({2, 4}, std::vector<float>(8, 1.0f)), 3)),
              HasSubstr("n_heads 4 (o's dimension 1) is not divisible by o_groups 3"));
  EXPECT_THAT(errorOf(groupedOutput(o, bf16({3, 4}, std::vector<float>(12, 1.0f)), 2)),
              HasSubstr("wo_a has 3 rows, not a multiple of o_groups 2"));
  EXPECT_THAT(errorOf(groupedOutput(o, bf16({2, 4}, std::vector<float>(8, 1.0f)), 0)), HasSubstr("o_groups is 0"));
  EXPECT_THAT(errorOf(groupedOutput(o, f32({2, 4}, std::vector<float>(8, 1.0f)), 2)),
              HasSubstr("wo_a has element type f32"));
  EXPECT_THAT(errorOf(groupedOutput(bf16({4, 2}, std::vector<float>(8, 1.0f)), bf16({2, 4}, std::vector<float>(8, 1.0f)), 2)),
              HasSubstr("o has rank 2"));
}
