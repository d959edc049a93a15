//===- NumericsQuantTest.cpp - act_quant_fp8, fp4_quant_e8m0, fp4_quant_e4m3 ---===//
//
// attention-semantics.md section 2. Every expected value is worked by hand from the spec's formulas (the scale,
// the grid step at that magnitude, the tie rule); the working is in the comment next to each value.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Numerics/Quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace dsa::numerics;

namespace {

/// Exact comparison that also distinguishes -0 from +0.
void expectSame(const std::vector<float> &got, const std::vector<float> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], want[i]) << "element " << i;
    EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << "sign of element " << i;
  }
}

} // namespace

TEST(NumericsQuant, ActQuantFp8HandWorked) {
  std::vector<float> x(96, 0.0f), want(96, 0.0f);
  // Block 0: amax = 14336.0009765625 (next float above 32 * 448): amax/448 -> 32 + 2^-18 in f32, s = 64.
  const float in0[] = {14336.0009765625f, 100.0f, -7.0f, 0.01f,   1.0f,   0.0625f, 0.0626f, 300.0f, -14000.0f,
                       0.5f,              0.3f,   0.4f,  -0.0f,   0.09375f, 0.15625f, 0.1875f, 0.3125f};
  const float out0[] = {
      14336.0f,  // 224.0000153 -> [128,256) step 16 -> 224 -> * 64
      96.0f,     // 1.5625: tie of 1.5 (m=4) and 1.625 (m=5) -> 1.5
      -7.0f,     // -0.109375 = -1.75 * 2^-4 exactly
      0.0f,      // 1.5625e-4 < 2^-10 -> 0
      1.0f,      // 2^-6, the smallest normal
      0.0f,      // 2^-10 exactly: tie of 0 and 2^-9 -> code 0
      0.125f,    // just above 2^-10 -> 2^-9 -> * 64
      288.0f,    // 4.6875 -> [4,8) step 0.5 -> 4.5
      -14336.0f, // -218.75 -> [128,256) step 16: 208 or 224 -> 224
      0.5f,      // 2^-7 = 4 * 2^-9 exactly
      0.25f,     // 2.4 * 2^-9 -> 2 * 2^-9
      0.375f,    // 3.2 * 2^-9 -> 3 * 2^-9
      -0.0f,     // -0 stays -0
      0.125f,    // 0.75 * 2^-9 -> 1 * 2^-9
      0.125f,    // 1.25 * 2^-9 -> 1 * 2^-9
      0.25f,     // 1.5 * 2^-9: tie of 1 and 2 -> 2
      0.25f,     // 2.5 * 2^-9: tie of 2 and 3 -> 2
  };
  std::copy(std::begin(in0), std::end(in0), x.begin());
  std::copy(std::begin(out0), std::end(out0), want.begin());
  // Block 1: amax = 448 -> s = pow2_ceil(1) = 1: plain e4m3 rounding.
  const float in1[] = {448.0f, 300.0f, 447.0f, -0.001f, 17.0f, 19.0f, -500.0f};
  const float out1[] = {
      448.0f,
      288.0f,       // [256,512) step 32: 288 or 320
      448.0f,       // 416 or 448 -> 448
      -0.001953125f, // 0.001 > 2^-10 -> -2^-9
      16.0f,        // tie of 16 (m=0) and 18 (m=1) -> 16
      20.0f,        // tie of 18 (m=1) and 20 (m=2) -> 20
      -448.0f,      // (amax is 500 then!) -- replaced below
  };
  (void)out1;
  // Keep block 1's amax at 448: drop the -500 case (it would change the scale) and use it in block 2 of its own.
  const float in1b[] = {448.0f, 300.0f, 447.0f, -0.001f, 17.0f, 19.0f};
  const float out1b[] = {448.0f, 288.0f, 448.0f, -0.001953125f, 16.0f, 20.0f};
  (void)in1;
  std::copy(std::begin(in1b), std::end(in1b), x.begin() + 32);
  std::copy(std::begin(out1b), std::end(out1b), want.begin() + 32);
  // Block 2: amax 1e-5 < 1e-4 -> floor; 1e-4/448 = 2.23e-7 -> s = 2^-22.
  x[64] = 1e-5f;  // 1e-5 * 2^22 = 41.94 -> [32,64) step 4 -> 40 -> 40 * 2^-22 = 1.25 * 2^-17
  x[65] = -3e-6f; // 12.58 -> [8,16) step 1 -> 13 -> -13 * 2^-22 = -1.625 * 2^-19
  x[66] = 1.2e-9f; // 1.2e-9 * 2^22 = 2.577 * 2^-9 (e4m3 subnormal range) -> 3 * 2^-9 -> 3 * 2^-31
  want[64] = std::ldexp(1.25f, -17);
  want[65] = -std::ldexp(1.625f, -19);
  want[66] = std::ldexp(1.5f, -30);
  ASSERT_TRUE(actQuantFp8(x.data(), 96, kActQuantBlock).ok());
  expectSame(x, want);
}

TEST(NumericsQuant, ActQuantFp8AllZeroAndSaturatingBlocks) {
  // All-zero block: amax floor 1e-4 keeps s positive and finite; the block stays zero (no 0/0).
  std::vector<float> z(32, 0.0f);
  z[3] = -0.0f;
  ASSERT_TRUE(actQuantFp8(z.data(), 32, 32).ok());
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(z[i], 0.0f);
  EXPECT_TRUE(std::signbit(z[3]));
  // amax = 500: s = pow2_ceil(500/448) = 2; -500/2 = -250 -> [128,256) step 16 -> -256 -> -512 (rounds past amax);
  // 3 -> 1.5 -> 3.
  std::vector<float> y(32, 0.0f);
  y[0] = -500.0f;
  y[1] = 3.0f;
  ASSERT_TRUE(actQuantFp8(y.data(), 32, 32).ok());
  EXPECT_EQ(y[0], -512.0f);
  EXPECT_EQ(y[1], 3.0f);
}

TEST(NumericsQuant, Fp4QuantE8M0HandWorked) {
  std::vector<float> x(96, 0.0f), want(96, 0.0f);
  // Block 0: amax 3 -> s = pow2_ceil(0.5) = 0.5.
  const float in0[] = {3.0f, 1.0f, 0.3f, 0.375f, -0.125f, 1.25f, 1.75f, 2.5f, -3.0f, 0.1f};
  const float out0[] = {
      3.0f,  // 6 -> 6
      1.0f,  // 2 -> 2
      0.25f, // 0.6 -> 0.5
      0.5f,  // 0.75: tie -> 1 (code 2)
      -0.0f, // -0.25: tie -> -0
      1.0f,  // 2.5: tie -> 2
      2.0f,  // 3.5: tie -> 4
      2.0f,  // 5: tie -> 4
      -3.0f, // -6
      0.0f,  // 0.2 -> 0
  };
  std::copy(std::begin(in0), std::end(in0), x.begin());
  std::copy(std::begin(out0), std::end(out0), want.begin());
  // Block 1: amax 7 -> 7/6 = 1.1667 -> s = 2.
  const float in1[] = {7.0f, -5.0f, 0.6f, 1.4f, 1.6f};
  const float out1[] = {
      8.0f,  // 3.5 -> 4
      -4.0f, // -2.5 -> -2
      1.0f,  // 0.3 -> 0.5
      1.0f,  // 0.7 -> 0.5
      2.0f,  // 0.8 -> 1
  };
  std::copy(std::begin(in1), std::end(in1), x.begin() + 32);
  std::copy(std::begin(out1), std::end(out1), want.begin() + 32);
  // Block 2: all zero: amax floor 6 * 2^-126 -> s = 2^-126; stays zero.
  ASSERT_TRUE(fp4QuantE8M0(x.data(), 96, kFp4E8M0Block).ok());
  expectSame(x, want);
}

TEST(NumericsQuant, Fp4QuantE8M0ScaleEdges) {
  // amax = 6 -> s = 1 exactly; amax = next float above 6 -> amax/6 rounds to 1 + 2^-23 -> s = 2.
  std::vector<float> a(32, 0.0f), b(32, 0.0f);
  a[0] = 6.0f;
  a[1] = 2.5f; // s = 1: tie -> 2
  b[0] = std::nextafter(6.0f, 7.0f);
  b[1] = 2.5f; // s = 2: 1.25 -> 1 -> 2
  ASSERT_TRUE(fp4QuantE8M0(a.data(), 32, 32).ok());
  ASSERT_TRUE(fp4QuantE8M0(b.data(), 32, 32).ok());
  EXPECT_EQ(a[0], 6.0f);
  EXPECT_EQ(a[1], 2.0f);
  EXPECT_EQ(b[0], 6.0f); // 3.00000024 -> 3 -> 6
  EXPECT_EQ(b[1], 2.0f);
  // amax below the floor: 1e-38 (an f32 denormal) -> s = 2^-126 -> x/s = 0.85 -> 1 -> 2^-126.
  std::vector<float> t(32, 0.0f);
  t[0] = 1e-38f;
  ASSERT_TRUE(fp4QuantE8M0(t.data(), 32, 32).ok());
  EXPECT_EQ(t[0], std::ldexp(1.0f, -126));
}

TEST(NumericsQuant, Fp4QuantE4M3HandWorked) {
  std::vector<float> x(48, 0.0f), want(48, 0.0f);
  // Block 0: amax 10 -> 10/6 = 1.6667 -> e4m3 [1,2) step 0.125: 1.625 -> s = 1.625.
  const float in0[] = {10.0f, -3.0f, 1.0f, 0.4f, 0.8125f, 2.4375f, 2.03125f};
  const float out0[] = {
      9.75f,   // 6.15 -> clamp 6 -> 6 * 1.625
      -3.25f,  // -1.846 -> -2 -> -3.25
      0.8125f, // 0.615 -> 0.5
      0.0f,    // 0.246 -> 0
      0.8125f, // 0.5 exactly
      2.4375f, // 1.5 exactly
      1.625f,  // 1.25 exactly: tie -> 1
  };
  std::copy(std::begin(in0), std::end(in0), x.begin());
  std::copy(std::begin(out0), std::end(out0), want.begin());
  // Block 1: amax 6 -> s = e4m3(1) = 1: plain e2m1.
  const float in1[] = {6.0f, 2.5f, 0.25f, -5.0f, 0.8f, -0.75f, -0.25f};
  const float out1[] = {6.0f, 2.0f, 0.0f, -4.0f, 1.0f, -1.0f, -0.0f};
  std::copy(std::begin(in1), std::end(in1), x.begin() + 16);
  std::copy(std::begin(out1), std::end(out1), want.begin() + 16);
  // Block 2: all zero: amax floor 6 * 2^-9 -> s = 2^-9; stays zero.
  ASSERT_TRUE(fp4QuantE4M3(x.data(), 48, kFp4E4M3Block).ok());
  expectSame(x, want);
}

TEST(NumericsQuant, Fp4QuantE4M3DividesByTheScale) {
  // amax 11.25 -> 11.25/6 = 1.875 exactly (an e4m3 value) = s. The others sit exactly on e2m1 ties after x/s;
  // x * (1/s) would land one f32 ulp above each tie and round up instead.
  std::vector<float> a(16, 0.0f);
  a[0] = 11.25f;   // 6 -> 11.25
  a[1] = 2.34375f; // 1.25: tie -> 1 -> 1.875
  a[2] = 4.6875f;  // 2.5: tie -> 2 -> 3.75
  a[3] = 9.375f;   // 5: tie -> 4 -> 7.5
  ASSERT_TRUE(fp4QuantE4M3(a.data(), 16, 16).ok());
  EXPECT_EQ(a[0], 11.25f);
  EXPECT_EQ(a[1], 1.875f);
  EXPECT_EQ(a[2], 3.75f);
  EXPECT_EQ(a[3], 7.5f);
}

TEST(NumericsQuant, Fp4QuantE4M3ScaleSaturatesAndFloors) {
  // amax 3000 -> 500 -> e4m3 saturates to 448 = s. 3000/448 = 6.7 -> clamp 6 -> 2688; -1000/448 = -2.23 -> -2 -> -896.
  std::vector<float> a(16, 0.0f);
  a[0] = 3000.0f;
  a[1] = -1000.0f;
  ASSERT_TRUE(fp4QuantE4M3(a.data(), 16, 16).ok());
  EXPECT_EQ(a[0], 2688.0f);
  EXPECT_EQ(a[1], -896.0f);
  // amax 0.01 < 6 * 2^-9 = 0.01171875 -> s = 2^-9. 0.01 * 512 = 5.12 -> 6 -> 0.01171875; 0.003 -> 1.536 -> 1.5.
  std::vector<float> b(16, 0.0f);
  b[0] = 0.01f;
  b[1] = 0.003f;
  ASSERT_TRUE(fp4QuantE4M3(b.data(), 16, 16).ok());
  EXPECT_EQ(b[0], 0.01171875f);
  EXPECT_EQ(b[1], 1.5f * std::ldexp(1.0f, -9));
}

TEST(NumericsQuant, NaNPoisonsOnlyItsBlock) {
  std::vector<float> x(64, 1.0f);
  x[5] = std::nanf("");
  ASSERT_TRUE(actQuantFp8(x.data(), 64, 32).ok());
  for (int i = 0; i < 32; ++i)
    EXPECT_TRUE(std::isnan(x[i])) << i;
  for (int i = 32; i < 64; ++i)
    EXPECT_EQ(x[i], 1.0f) << i; // amax 1 -> s = pow2_ceil(1/448) = 2^-8; 256 -> 256 -> 1
}

TEST(NumericsQuant, BadArgumentsAreErrorsAndLeaveTheRowAlone) {
  std::vector<float> x(33, 3.3f);
  using Fn = dsa::Status (*)(float *, int64_t, int64_t);
  const Fn fns[] = {actQuantFp8, fp4QuantE8M0, fp4QuantE4M3};
  const char *names[] = {"act_quant_fp8", "fp4_quant_e8m0", "fp4_quant_e4m3"};
  for (int f = 0; f < 3; ++f) {
    dsa::Status st = fns[f](x.data(), 33, 32);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().find(names[f]), std::string::npos) << st.error();
    EXPECT_NE(st.error().find("not a multiple of block"), std::string::npos) << st.error();
    st = fns[f](x.data(), 32, 0);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().find("block must be positive"), std::string::npos) << st.error();
    st = fns[f](x.data(), -32, 32);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().find("n must be >= 0"), std::string::npos) << st.error();
    st = fns[f](nullptr, 32, 32);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().find("row is null"), std::string::npos) << st.error();
    EXPECT_TRUE(fns[f](nullptr, 0, 32).ok()); // empty row: nothing to do
  }
  for (float v : x)
    EXPECT_EQ(v, 3.3f);
}
