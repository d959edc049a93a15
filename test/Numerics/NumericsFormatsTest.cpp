//===- NumericsFormatsTest.cpp - bf16, e4m3, e2m1, e8m0 and pow2_ceil --------===//
//
// attention-semantics.md section 2 and tiny-model-harness.md (the e8m0 torch cast). Every expected value here is
// worked by hand or computed by an independent formula in this file (decoding by ldexp in double, brute-force
// nearest-grid search with ties to the even code), never by the code under test.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Numerics/BF16.h"
#include "dsa/Numerics/E2M1.h"
#include "dsa/Numerics/E4M3.h"
#include "dsa/Numerics/E8M0.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace dsa::numerics;

namespace {

uint32_t bitsOf(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}
float fromBits(uint32_t u) {
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}
const float kInf = std::numeric_limits<float>::infinity();

//---- independent references ------------------------------------------------------------------------------------

/// e4m3fn by its definition: bias 7, 3 mantissa bits, e == 0 subnormal, S.1111.111 NaN.
double refE4M3Decode(int code) {
  const int s = (code >> 7) & 1, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7)
    return std::nan("");
  const double mag = e == 0 ? std::ldexp(double(m), -9) : std::ldexp(double(8 + m), e - 10);
  return s ? -mag : mag;
}

/// Nearest positive finite e4m3 code to magnitude a (all of 0x00..0x7E searched), ties to the even code.
/// Beyond 448 the nearest finite code is 448 itself, which is the saturation rule (stated explicitly: for huge a
/// the double distances to the top codes would compare equal).
int refE4M3NearestMagnitude(double a) {
  if (a >= 448.0)
    return 0x7E;
  int best = 0;
  double bestDist = std::fabs(a);
  for (int c = 1; c <= 0x7E; ++c) {
    const double d = std::fabs(a - refE4M3Decode(c));
    if (d < bestDist || (d == bestDist && c % 2 == 0)) {
      best = c;
      bestDist = d;
    }
  }
  return best;
}

int refE4M3Encode(float v) {
  const int sign = std::signbit(v) ? 0x80 : 0;
  return sign | refE4M3NearestMagnitude(std::fabs(double(v)));
}

const double kE2M1GridRef[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

int refE2M1Encode(float v) {
  const int sign = std::signbit(v) ? 8 : 0;
  const double a = std::fabs(double(v));
  if (a >= 6.0) // saturation (for huge a the double distances to 4 and 6 would compare equal)
    return sign | 7;
  int best = 0;
  double bestDist = a;
  for (int c = 1; c < 8; ++c) {
    const double d = std::fabs(a - kE2M1GridRef[c]);
    if (d < bestDist || (d == bestDist && c % 2 == 0)) {
      best = c;
      bestDist = d;
    }
  }
  return sign | best;
}

/// bf16 RNE by comparing the two neighbouring bf16 magnitudes in double. The neighbour above the largest finite
/// bf16 is 2^128 (IEEE rounds as if the exponent were unbounded, then overflows to inf).
uint16_t refBf16(float v) {
  const uint32_t u = bitsOf(v);
  const uint32_t sign = u & 0x80000000u, mag = u & 0x7FFFFFFFu;
  const uint32_t lo = mag & 0xFFFF0000u;
  if (lo == mag)
    return uint16_t((sign | lo) >> 16);
  const uint32_t hi = lo + 0x10000u;
  const double a = double(fromBits(mag));
  const double vlo = double(fromBits(lo));
  const double vhi = hi == 0x7F800000u ? std::ldexp(1.0, 128) : double(fromBits(hi));
  const double dlo = a - vlo, dhi = vhi - a;
  uint32_t pick;
  if (dlo < dhi)
    pick = lo;
  else if (dhi < dlo)
    pick = hi;
  else
    pick = ((lo >> 16) & 1u) == 0 ? lo : hi;
  return uint16_t((sign | pick) >> 16);
}

} // namespace

//==== bf16 ========================================================================================================

TEST(NumericsBf16, HandWorkedTiesAndNeighbours) {
  // 1 + 2^-8 lies halfway between bf16 1.0 (0x3F80, even) and 1.0078125 (0x3F81): goes down to even.
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x3F808000u)), 0x3F80);
  // halfway between 0x3F81 (odd) and 0x3F82 (even): goes up to even.
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x3F818000u)), 0x3F82);
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x3F808001u)), 0x3F81); // just above the tie
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x3F807FFFu)), 0x3F80); // just below the tie
  EXPECT_EQ(f32ToBf16Bits(fromBits(0xBF818000u)), 0xBF82); // negative tie, up in magnitude to even
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x3FFF8000u)), 0x4000); // tie whose rounding carries into the exponent
  EXPECT_EQ(f32ToBf16Bits(1.0f), 0x3F80);
  EXPECT_EQ(roundBf16(3.0f), 3.0f);
  EXPECT_EQ(roundBf16(1.00390625f), 1.0f);        // 1 + 2^-8: tie to even
  EXPECT_EQ(roundBf16(1.01171875f), 1.015625f);   // 1 + 3*2^-8: tie to even (up)
}

TEST(NumericsBf16, OverflowInfAndNaN) {
  // Largest finite bf16 is 0x7F7F; 0x7F7F8000 is the tie between it (odd) and 2^128 (-> inf, even).
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x7F7F7FFFu)), 0x7F7F);
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x7F7F8000u)), 0x7F80);
  EXPECT_EQ(f32ToBf16Bits(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(f32ToBf16Bits(-std::numeric_limits<float>::max()), 0xFF80);
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x7F7E8000u)), 0x7F7E); // tie below the max goes to even 0x7F7E
  EXPECT_EQ(f32ToBf16Bits(kInf), 0x7F80);
  EXPECT_EQ(f32ToBf16Bits(-kInf), 0xFF80);
  // NaN stays NaN (quiet, sign kept), including signalling NaNs whose payload sits in the dropped bits.
  for (uint32_t nanBits : {0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0xFF800001u, 0xFFC00000u}) {
    const uint16_t b = f32ToBf16Bits(fromBits(nanBits));
    EXPECT_TRUE(std::isnan(bf16BitsToF32(b))) << std::hex << nanBits;
    EXPECT_EQ(b & 0x8000u, (nanBits >> 16) & 0x8000u) << std::hex << nanBits;
    EXPECT_NE(b & 0x0040u, 0u) << "quiet bit " << std::hex << nanBits;
    EXPECT_TRUE(std::isnan(roundBf16(fromBits(nanBits))));
  }
}

TEST(NumericsBf16, ZerosAndDenormals) {
  EXPECT_EQ(f32ToBf16Bits(0.0f), 0x0000);
  EXPECT_EQ(f32ToBf16Bits(-0.0f), 0x8000);
  EXPECT_TRUE(std::signbit(roundBf16(-0.0f)));
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x00000001u)), 0x0000); // smallest denormal rounds to +0 (not flushed: rounded)
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x80000001u)), 0x8000); // ... and keeps its sign
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x00008000u)), 0x0000); // tie between 0 and bf16 0x0001: even 0
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x00018000u)), 0x0002); // tie between 0x0001 and 0x0002: even 0x0002
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x00008001u)), 0x0001); // above the tie: the smallest bf16 denormal
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x00010000u)), 0x0001); // exact bf16 denormal stays
  EXPECT_EQ(f32ToBf16Bits(fromBits(0x007FFFFFu)), 0x0080); // largest f32 denormal rounds up to 2^-126
  EXPECT_EQ(roundBf16(fromBits(0x00010000u)), std::ldexp(1.0f, -133));
}

TEST(NumericsBf16, EveryBf16PatternRoundTrips) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float v = bf16BitsToF32(uint16_t(b));
    ASSERT_EQ(bitsOf(v), b << 16);
    if (std::isnan(v))
      continue;
    ASSERT_EQ(f32ToBf16Bits(v), b) << std::hex << b;
  }
}

TEST(NumericsBf16, RandomAgainstBruteForce) {
  std::mt19937_64 rng(0xB16B00B5u);
  for (int i = 0; i < 400000; ++i) {
    const uint32_t u = uint32_t(rng());
    const float v = fromBits(u);
    if (std::isnan(v))
      continue;
    ASSERT_EQ(f32ToBf16Bits(v), refBf16(v)) << std::hex << u;
  }
  // Exact ties everywhere: low half 0x8000 with either parity of the kept bit.
  for (int i = 0; i < 20000; ++i) {
    const uint32_t u = (uint32_t(rng()) & 0xFFFF0000u) | 0x8000u;
    const float v = fromBits(u);
    if (std::isnan(v) || std::isinf(v))
      continue;
    ASSERT_EQ(f32ToBf16Bits(v), refBf16(v)) << std::hex << u;
  }
}

TEST(NumericsBf16, InPlace) {
  std::vector<float> d = {fromBits(0x3F808000u), fromBits(0x3F818000u), -0.0f, 5.0f};
  roundBf16InPlace(d.data(), int64_t(d.size()));
  EXPECT_EQ(bitsOf(d[0]), 0x3F800000u);
  EXPECT_EQ(bitsOf(d[1]), 0x3F820000u);
  EXPECT_EQ(bitsOf(d[2]), 0x80000000u);
  EXPECT_EQ(d[3], 5.0f);
  roundBf16InPlace(nullptr, 0);
}

//==== e4m3 ========================================================================================================

TEST(NumericsE4M3, EveryCodeDecodesAndRoundTrips) {
  for (int c = 0; c < 256; ++c) {
    const double want = refE4M3Decode(c);
    const float got = e4m3BitsToF32(uint8_t(c));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c;
      EXPECT_EQ(std::signbit(got), (c & 0x80) != 0) << c;
      continue;
    }
    EXPECT_EQ(double(got), want) << "code " << c;
    EXPECT_EQ(std::signbit(got), (c & 0x80) != 0) << c; // -0 is code 0x80
    EXPECT_EQ(f32ToE4M3Bits(got), c) << "round trip of code " << c;
    EXPECT_EQ(roundE4M3(got), got);
  }
  // Spot checks of the definition itself.
  EXPECT_EQ(refE4M3Decode(0x7E), 448.0);
  EXPECT_EQ(refE4M3Decode(0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(refE4M3Decode(0x08), std::ldexp(1.0, -6));
  EXPECT_EQ(refE4M3Decode(0x38), 1.0);
  EXPECT_EQ(kE4M3Max, 448.0f);
}

TEST(NumericsE4M3, MidpointsBetweenAdjacentCodes) {
  for (int c = 0; c < 0x7E; ++c) {
    const double lo = refE4M3Decode(c), hi = refE4M3Decode(c + 1);
    const float mid = float((lo + hi) / 2); // at most 5 significant bits: exact in f32
    ASSERT_EQ(double(mid), (lo + hi) / 2);
    const int even = c % 2 == 0 ? c : c + 1;
    EXPECT_EQ(f32ToE4M3Bits(mid), even) << "midpoint of " << c << " and " << c + 1;
    EXPECT_EQ(f32ToE4M3Bits(-mid), 0x80 | even);
    EXPECT_EQ(f32ToE4M3Bits(std::nextafter(mid, 0.0f)), c);
    EXPECT_EQ(f32ToE4M3Bits(std::nextafter(mid, kInf)), c + 1);
    EXPECT_EQ(f32ToE4M3Bits(-std::nextafter(mid, kInf)), 0x80 | (c + 1));
  }
}

TEST(NumericsE4M3, SaturationZeroAndNaN) {
  EXPECT_EQ(f32ToE4M3Bits(448.0f), 0x7E);
  EXPECT_EQ(f32ToE4M3Bits(464.0f), 0x7E); // would be the tie with 480 (the NaN code): saturates
  EXPECT_EQ(f32ToE4M3Bits(std::nextafter(464.0f, kInf)), 0x7E);
  EXPECT_EQ(f32ToE4M3Bits(1e6f), 0x7E);
  EXPECT_EQ(f32ToE4M3Bits(std::numeric_limits<float>::max()), 0x7E);
  EXPECT_EQ(f32ToE4M3Bits(kInf), 0x7E);
  EXPECT_EQ(f32ToE4M3Bits(-kInf), 0xFE);
  EXPECT_EQ(roundE4M3(-1000.0f), -448.0f);
  EXPECT_EQ(f32ToE4M3Bits(std::ldexp(1.0f, -10)), 0x00); // tie between 0 and 2^-9: even code 0
  EXPECT_EQ(f32ToE4M3Bits(std::nextafter(std::ldexp(1.0f, -10), kInf)), 0x01);
  EXPECT_EQ(f32ToE4M3Bits(-std::ldexp(1.0f, -11)), 0x80); // negative underflow keeps the sign
  EXPECT_TRUE(std::signbit(roundE4M3(-1e-20f)));
  EXPECT_EQ(f32ToE4M3Bits(fromBits(0x00000001u)), 0x00);
  EXPECT_EQ(f32ToE4M3Bits(0.0f), 0x00);
  EXPECT_EQ(f32ToE4M3Bits(-0.0f), 0x80);
  EXPECT_EQ(f32ToE4M3Bits(std::nanf("")), 0x7F);
  EXPECT_EQ(f32ToE4M3Bits(-std::nanf("")), 0xFF);
  EXPECT_EQ(f32ToE4M3Bits(fromBits(0x7F800001u)), 0x7F);
  EXPECT_TRUE(std::isnan(roundE4M3(std::nanf(""))));
  // Hand-worked: 1.0625 is the tie between 1.0 (m=0) and 1.125 (m=1): 1.0. 1.1875 ties 1.125/1.25: 1.25.
  EXPECT_EQ(roundE4M3(1.0625f), 1.0f);
  EXPECT_EQ(roundE4M3(1.1875f), 1.25f);
  EXPECT_EQ(roundE4M3(300.0f), 288.0f);
  EXPECT_EQ(roundE4M3(3.0f * std::ldexp(1.0f, -10)), std::ldexp(1.0f, -8)); // 1.5 * 2^-9 ties up to 2 * 2^-9
  EXPECT_EQ(roundE4M3(5.0f * std::ldexp(1.0f, -10)), std::ldexp(1.0f, -8)); // 2.5 * 2^-9 ties down to 2 * 2^-9
  EXPECT_EQ(roundE4M3(15.0f * std::ldexp(1.0f, -10)), std::ldexp(1.0f, -6)); // 7.5 * 2^-9 -> 8 * 2^-9 = 2^-6
}

TEST(NumericsE4M3, RandomAgainstBruteForce) {
  std::mt19937_64 rng(0xE4E3u);
  std::uniform_int_distribution<uint32_t> expo(100, 140); // 2^-27 .. 2^13: around the whole e4m3 range
  for (int i = 0; i < 150000; ++i) {
    const uint32_t u = uint32_t(rng());
    const uint32_t pat = (u & 0x807FFFFFu) | (expo(rng) << 23);
    const float v = fromBits(pat);
    ASSERT_EQ(f32ToE4M3Bits(v), refE4M3Encode(v)) << std::hex << pat;
  }
  for (int i = 0; i < 50000; ++i) { // any f32 at all, denormals and infinities included
    const float v = fromBits(uint32_t(rng()));
    if (std::isnan(v))
      continue;
    ASSERT_EQ(f32ToE4M3Bits(v), refE4M3Encode(v)) << std::hex << bitsOf(v);
  }
  std::vector<float> d = {1.0625f, -300.0f, 1e9f};
  roundE4M3InPlace(d.data(), 3);
  EXPECT_EQ(d, (std::vector<float>{1.0f, -288.0f, 448.0f}));
}

//==== e2m1 ========================================================================================================

TEST(NumericsE2M1, EveryCodeDecodesAndRoundTrips) {
  for (int c = 0; c < 16; ++c) {
    const double want = (c & 8) ? -kE2M1GridRef[c & 7] : kE2M1GridRef[c & 7];
    const float got = e2m1BitsToF32(uint8_t(c));
    EXPECT_EQ(double(got), want) << c;
    EXPECT_EQ(std::signbit(got), (c & 8) != 0) << c;
    EXPECT_EQ(f32ToE2M1Bits(got), c) << c;
  }
}

TEST(NumericsE2M1, SpecTiesToEvenCode) {
  struct Case {
    float in, out;
    int code;
  };
  const Case cases[] = {{0.25f, 0.0f, 0}, {0.75f, 1.0f, 2}, {1.25f, 1.0f, 2}, {1.75f, 2.0f, 4},
                        {2.5f, 2.0f, 4},  {3.5f, 4.0f, 6},  {5.0f, 4.0f, 6}};
  for (const Case &c : cases) {
    EXPECT_EQ(f32ToE2M1Bits(c.in), c.code) << c.in;
    EXPECT_EQ(roundE2M1(c.in), c.out) << c.in;
    EXPECT_EQ(f32ToE2M1Bits(-c.in), 8 | c.code) << -c.in;
    EXPECT_EQ(roundE2M1(-c.in), -c.out) << -c.in;
  }
  // -0.25 -> -0 with the sign bit.
  EXPECT_EQ(f32ToE2M1Bits(-0.25f), 0x8);
  EXPECT_TRUE(std::signbit(roundE2M1(-0.25f)));
  EXPECT_EQ(roundE2M1(-0.25f), 0.0f);
  EXPECT_TRUE(std::signbit(roundE2M1(-0.0f)));
  // Off the ties, to nearest.
  EXPECT_EQ(roundE2M1(0.2500001f), 0.5f);
  EXPECT_EQ(roundE2M1(0.7499999f), 0.5f);
  EXPECT_EQ(roundE2M1(4.9999995f), 4.0f);
  EXPECT_EQ(roundE2M1(5.0000005f), 6.0f);
  // Saturation and non-finite.
  EXPECT_EQ(roundE2M1(7.0f), 6.0f);
  EXPECT_EQ(roundE2M1(-1e30f), -6.0f);
  EXPECT_EQ(f32ToE2M1Bits(kInf), 7);
  EXPECT_EQ(f32ToE2M1Bits(-kInf), 15);
  EXPECT_TRUE(std::isnan(roundE2M1(std::nanf(""))));
  EXPECT_EQ(kE2M1Max, 6.0f);
}

TEST(NumericsE2M1, MidpointsAndRandomAgainstBruteForce) {
  for (int c = 0; c < 7; ++c) {
    const float mid = float((kE2M1GridRef[c] + kE2M1GridRef[c + 1]) / 2);
    const int even = c % 2 == 0 ? c : c + 1;
    EXPECT_EQ(f32ToE2M1Bits(mid), even) << mid;
    EXPECT_EQ(f32ToE2M1Bits(std::nextafter(mid, 0.0f)), c) << mid;
    EXPECT_EQ(f32ToE2M1Bits(std::nextafter(mid, kInf)), c + 1) << mid;
  }
  std::mt19937_64 rng(0xE2E1u);
  std::uniform_real_distribution<float> uni(-8.0f, 8.0f);
  for (int i = 0; i < 200000; ++i) {
    const float v = uni(rng);
    ASSERT_EQ(f32ToE2M1Bits(v), refE2M1Encode(v)) << v;
  }
  for (int i = 0; i < 50000; ++i) {
    const float v = fromBits(uint32_t(rng()));
    if (std::isnan(v))
      continue;
    ASSERT_EQ(f32ToE2M1Bits(v), refE2M1Encode(v)) << v;
  }
  std::vector<float> d = {0.75f, -2.5f, 100.0f};
  roundE2M1InPlace(d.data(), 3);
  EXPECT_EQ(d, (std::vector<float>{1.0f, -2.0f, 6.0f}));
}

//==== pow2_ceil ===================================================================================================

TEST(NumericsPow2Ceil, ActQuantScaleJustAboveAPowerOfTwo) {
  // 14336 = 32 * 448; the next f32 above it divided by 448 rounds (in f32) to 32 + 2^-18, so the scale is 64.
  const float amax = 14336.0009765625f;
  ASSERT_EQ(bitsOf(amax), bitsOf(14336.0f) + 1); // the literal is exactly the next float above 14336
  ASSERT_GT(amax / 448.0f, 32.0f);
  EXPECT_EQ(pow2Ceil(amax / 448.0f), 64.0f);
  EXPECT_EQ(pow2Ceil(14336.0f / 448.0f), 32.0f);
}

TEST(NumericsPow2Ceil, AroundEveryPowerOfTwo) {
  for (int k = -126; k <= 127; ++k) {
    const float p = std::ldexp(1.0f, k);
    EXPECT_EQ(pow2Ceil(p), p) << k;
    const float above = std::nextafter(p, kInf);
    EXPECT_EQ(pow2Ceil(above), k == 127 ? kInf : std::ldexp(1.0f, k + 1)) << k;
    EXPECT_EQ(pow2Ceil(std::nextafter(p, 0.0f)), p) << k; // largest value below 2^k (a denormal for k = -126)
    EXPECT_EQ(pow2Ceil(1.5f * p), k == 127 ? kInf : 2.0f * p) << k;
  }
  EXPECT_EQ(pow2Ceil(0.75f), 1.0f);
  EXPECT_EQ(pow2Ceil(3.0f), 4.0f);
  EXPECT_EQ(pow2Ceil(7.0f / 6.0f), 2.0f);
  EXPECT_EQ(pow2Ceil(std::numeric_limits<float>::max()), kInf);
}

TEST(NumericsPow2Ceil, OutsideTheSpecDomain) {
  EXPECT_EQ(pow2Ceil(fromBits(1)), fromBits(1));                 // 2^-149
  EXPECT_EQ(pow2Ceil(fromBits(3)), fromBits(4));                 // 3 * 2^-149 -> 4 * 2^-149
  EXPECT_EQ(pow2Ceil(fromBits(0x00400001u)), std::ldexp(1.0f, -126));
  EXPECT_EQ(pow2Ceil(fromBits(0x00400000u)), std::ldexp(1.0f, -127));
  EXPECT_EQ(pow2Ceil(-3.0f), -4.0f);
  EXPECT_EQ(pow2Ceil(-fromBits(3)), -fromBits(4));
  EXPECT_EQ(bitsOf(pow2Ceil(0.0f)), 0u);
  EXPECT_EQ(bitsOf(pow2Ceil(-0.0f)), 0x80000000u);
  EXPECT_EQ(pow2Ceil(kInf), kInf);
  EXPECT_TRUE(std::isnan(pow2Ceil(std::nanf(""))));
}

//==== e8m0 (torch cast) ===========================================================================================

TEST(NumericsE8M0, TorchCastHandWorked) {
  // code = exponent field e, plus one when guard && (round || sticky || e > 0).
  EXPECT_EQ(f32ToE8M0TorchBits(1.0f), 127);              // no guard
  EXPECT_EQ(f32ToE8M0TorchBits(1.5f), 128);              // guard, e > 0 -> up (2.0)
  EXPECT_EQ(f32ToE8M0TorchBits(1.25f), 127);             // round bit only, no guard
  EXPECT_EQ(f32ToE8M0TorchBits(fromBits(0x3FBFFFFFu)), 127); // just below 1.5: guard 0
  EXPECT_EQ(f32ToE8M0TorchBits(0.75f), 127);             // e = 126, guard -> 1.0
  EXPECT_EQ(f32ToE8M0TorchBits(3.0f), 129);              // e = 128, guard -> 4.0
  EXPECT_EQ(f32ToE8M0TorchBits(-3.0f), 129);             // sign ignored
  EXPECT_EQ(f32ToE8M0TorchBits(0.0f), 0);                // 0 -> 2^-127
  EXPECT_EQ(f32ToE8M0TorchBits(-0.0f), 0);
  EXPECT_EQ(f32ToE8M0TorchBits(fromBits(0x00400000u)), 0); // 2^-127: e = 0, guard only -> stays
  EXPECT_EQ(f32ToE8M0TorchBits(fromBits(0x00600000u)), 1); // 1.5 * 2^-127: guard and round -> 2^-126
  EXPECT_EQ(f32ToE8M0TorchBits(fromBits(0x00400001u)), 1); // guard and sticky
  EXPECT_EQ(f32ToE8M0TorchBits(fromBits(0x00200000u)), 0); // 2^-128: no guard
  EXPECT_EQ(f32ToE8M0TorchBits(std::ldexp(1.0f, 127)), 254);
  EXPECT_EQ(f32ToE8M0TorchBits(std::numeric_limits<float>::max()), 255); // e = 254 with guard: the NaN code
  EXPECT_EQ(f32ToE8M0TorchBits(kInf), 255);
  EXPECT_EQ(f32ToE8M0TorchBits(std::nanf("")), 255);
  EXPECT_EQ(f32ToE8M0TorchBits(0.01f), 120); // 1.28 * 2^-7: e = 120, fraction .28 < .5 -> no guard -> 2^-7
  EXPECT_EQ(f32ToE8M0TorchBits(0.7f), 126);  // 1.4 * 2^-1: no guard -> 0.5
  EXPECT_EQ(f32ToE8M0TorchBits(0.8f), 127);  // 1.6 * 2^-1: guard -> 1.0
}

TEST(NumericsE8M0, Decode) {
  EXPECT_EQ(e8m0BitsToF32(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(e8m0BitsToF32(1), std::ldexp(1.0f, -126));
  EXPECT_EQ(e8m0BitsToF32(127), 1.0f);
  EXPECT_EQ(e8m0BitsToF32(130), 8.0f);
  EXPECT_EQ(e8m0BitsToF32(254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(e8m0BitsToF32(255)));
}
