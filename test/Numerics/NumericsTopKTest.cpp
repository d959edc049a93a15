//===- NumericsTopKTest.cpp - torch CPU top-k index set ----------------------===//
//
// attention-semantics.md section 9. Tie cases come from golden/topk_tie_cases.json (recorded against torch);
// cases with distinct values are checked against a brute-force ranking written here.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Numerics/TopK.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace dsa::numerics;

namespace {

float jsonValue(const nlohmann::json &v) {
  if (v.is_number())
    return v.get<float>();
  const std::string s = v.get<std::string>();
  if (s == "-inf")
    return -std::numeric_limits<float>::infinity();
  if (s == "inf")
    return std::numeric_limits<float>::infinity();
  if (s == "nan")
    return std::nanf("");
  ADD_FAILURE() << "unexpected value string '" << s << "'";
  return 0.0f;
}

/// Brute force for distinct values: NaN ranks first, then by value descending; the first k, sorted ascending.
std::vector<int64_t> bruteTopk(const std::vector<float> &v, int64_t k) {
  std::vector<int64_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
    const bool na = std::isnan(v[a]), nb = std::isnan(v[b]);
    if (na != nb)
      return na;
    return v[a] > v[b];
  });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

std::vector<float> distinctShuffled(int64_t n, uint64_t seed) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = 0.25f * float(i) - 37.0f;
  std::mt19937_64 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

} // namespace

TEST(NumericsTopK, EveryRecordedTieCase) {
  const std::string path = std::string(DSA_TEST_DATA_DIR) + "/topk_tie_cases.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot open " << path;
  const nlohmann::json doc = nlohmann::json::parse(in);
  const auto &cases = doc.at("cases");
  ASSERT_GE(cases.size(), 12u);
  int checked = 0;
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<float> values;
    for (const auto &v : cases[c].at("values"))
      values.push_back(jsonValue(v));
    const int64_t k = cases[c].at("k").get<int64_t>();
    const std::vector<int64_t> want = cases[c].at("set").get<std::vector<int64_t>>();
    auto got = torchCpuTopkSet(values.data(), int64_t(values.size()), k);
    ASSERT_TRUE(got.ok()) << got.error();
    EXPECT_EQ(*got, want) << "case " << c;
    ++checked;
  }
  EXPECT_EQ(checked, int(cases.size()));
}

TEST(NumericsTopK, PartialSortBranchDistinctValues) {
  // k * 64 <= n takes std::partial_sort (the boundary k*64 == n included).
  for (auto [n, k] : {std::pair<int64_t, int64_t>{640, 10}, {1000, 15}, {64, 1}, {5000, 70}}) {
    ASSERT_LE(k * 64, n);
    const std::vector<float> v = distinctShuffled(n, uint64_t(n * 31 + k));
    auto got = torchCpuTopkSet(v.data(), n, k);
    ASSERT_TRUE(got.ok()) << got.error();
    EXPECT_EQ(*got, bruteTopk(v, k)) << "n=" << n << " k=" << k;
  }
}

TEST(NumericsTopK, PartialSortBranchTies) {
  // libstdc++'s partial_sort is heap_select: a heap of the first k pairs, then each later pair enters only when
  // comp(later, heap top) holds, i.e. when it is STRICTLY greater than the smallest value kept. So with all values
  // equal nothing ever enters, and after k leading -inf the first k zeros displace them and no later zero does.
  const int64_t n = 640, k = 10;
  std::vector<float> zeros(n, 0.0f);
  auto a = torchCpuTopkSet(zeros.data(), n, k);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  std::vector<float> v(n, 0.0f);
  for (int64_t i = 0; i < k; ++i)
    v[i] = -std::numeric_limits<float>::infinity();
  auto b = torchCpuTopkSet(v.data(), n, k);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<int64_t>{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}));
}

TEST(NumericsTopK, NthElementBranchDistinctValues) {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{100, 7}, {641, 11}, {12, 6}, {63, 1}, {200, 199}}) {
    ASSERT_GT(k * 64, n);
    const std::vector<float> v = distinctShuffled(n, uint64_t(n * 17 + k));
    auto got = torchCpuTopkSet(v.data(), n, k);
    ASSERT_TRUE(got.ok()) << got.error();
    EXPECT_EQ(*got, bruteTopk(v, k)) << "n=" << n << " k=" << k;
  }
}

TEST(NumericsTopK, NaNAndInfinitiesRankFirst) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {20, 700}) { // nth_element (k=3, n=20) and partial_sort (k=3, n=700) branches
    std::vector<float> v = distinctShuffled(n, 99);
    v[4] = std::nanf("");
    v[n - 2] = inf;
    v[1] = -inf;
    auto got = torchCpuTopkSet(v.data(), n, 3);
    ASSERT_TRUE(got.ok());
    const std::vector<int64_t> want = bruteTopk(v, 3);
    EXPECT_EQ(*got, want);
    EXPECT_TRUE(std::find(want.begin(), want.end(), 4) != want.end());
    EXPECT_TRUE(std::find(want.begin(), want.end(), n - 2) != want.end());
  }
}

TEST(NumericsTopK, ZeroAndFullK) {
  const std::vector<float> v = {0.0f, -std::numeric_limits<float>::infinity(), 0.0f, 1.0f, 0.0f};
  auto none = torchCpuTopkSet(v.data(), 5, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto all = torchCpuTopkSet(v.data(), 5, 5);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  auto empty = torchCpuTopkSet(nullptr, 0, 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(NumericsTopK, BadArgumentsAreErrors) {
  const std::vector<float> v = {1.0f, 2.0f, 3.0f};
  auto tooMany = torchCpuTopkSet(v.data(), 3, 4);
  ASSERT_FALSE(tooMany.ok());
  EXPECT_NE(tooMany.error().find("k must be in [0, n=3], got 4"), std::string::npos) << tooMany.error();
  auto negK = torchCpuTopkSet(v.data(), 3, -1);
  ASSERT_FALSE(negK.ok());
  EXPECT_NE(negK.error().find("got -1"), std::string::npos) << negK.error();
  auto negN = torchCpuTopkSet(v.data(), -3, 0);
  ASSERT_FALSE(negN.ok());
  EXPECT_NE(negN.error().find("n must be >= 0"), std::string::npos) << negN.error();
  auto null = torchCpuTopkSet(nullptr, 3, 1);
  ASSERT_FALSE(null.ok());
  EXPECT_NE(null.error().find("values is null"), std::string::npos) << null.error();
}
