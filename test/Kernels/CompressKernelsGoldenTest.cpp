//===- CompressKernelsGoldenTest.cpp - compressed-attention kernels against the full debug golden -----===//
//
// Replays the compressor / indexer part of the kv and index sources of the tiny golden (L2: ratio 2, kv + index
// source; L4: ratio 1, kv + index + candidate source; L5: ratio 1 index source using L4's candidates) over the three
// regimes in order, with state (compressor slots, caches, the shared index_k slot) carried between steps, from
// each layer's true `attn_in` and the regenerated weights. Compares:
//   shared.L{2,4}.index_k and .compress_kv  (section 12 tolerance; bit-exactness reported),
//   shared.L4.candidates, shared.L{2,4,5}.topk_idxs  (exactly).
// The inputs exist in full only in the debug golden shared/golden/ds41_tiny_golden_full.json: skipped when it is
// absent. Expected values all come from the golden file.
//
//===----------------------------------------------------------------------------------------------------------===//

#include "dsa/Golden/Golden.h"
#include "dsa/Kernels/CompressKernels.h"
#include "dsa/Kernels/Kernels.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace dsa;
using namespace dsa::kernels;
using dsa::golden::Capture;
using dsa::golden::GoldenFile;
using namespace dsa::test;

namespace {

/// Loaded once for all tests of this file; null when the file is absent (tests skip) or unreadable (tests fail).
struct GoldenHolder {
  bool present = false;
  std::string loadError;
  std::unique_ptr<GoldenFile> golden;
};

const GoldenHolder &holder() {
  static GoldenHolder h = [] {
    GoldenHolder out;
    out.present = fileExists(kFullGoldenPath);
    if (!out.present)
      return out;
    Result<GoldenFile> g = GoldenFile::load(kFullGoldenPath);
    if (!g.ok())
      out.loadError = g.error();
    else
      out.golden = std::make_unique<GoldenFile>(g.take());
    return out;
  }();
  return h;
}

#define REQUIRE_GOLDEN()                                                                                             \
  do {                                                                                                               \
    if (!holder().present)                                                                                           \
      GTEST_SKIP() << "debug golden absent: " << kFullGoldenPath;                                                    \
    ASSERT_TRUE(holder().golden) << holder().loadError;                                                              \
  } while (0)

template <typename T> T unwrap(Result<T> r, const std::string &what) {
  if (!r.ok()) {
    ADD_FAILURE() << what << ": " << r.error();
    return T();
  }
  return r.take();
}
#define UNWRAP(expr) unwrap((expr), #expr)

/// A full (stride 1) float capture as a tensor of `type`, its leading batch dim of 1 dropped.
Tensor captureTensor(const GoldenFile &g, const std::string &regime, const std::string &name, ElementType type) {
  Result<const Capture *> c = g.capture(regime, name);
  if (!c.ok()) {
    ADD_FAILURE() << c.error();
    return Tensor();
  }
  const Capture &cap = **c;
  EXPECT_EQ(cap.stride, 1) << regime << " " << name << " is not stored in full";
  std::vector<int64_t> shape = cap.shape;
  if (!shape.empty() && shape[0] == 1)
    shape.erase(shape.begin());
  std::vector<float> values(cap.data.begin(), cap.data.end());
  return Tensor::fromFloats(type, shape, values);
}

Tensor weight(const GoldenFile &g, const std::string &name) {
  const golden::WeightMeta *meta = g.weight(name);
  if (!meta) {
    ADD_FAILURE() << "no weight " << name;
    return Tensor();
  }
  return unwrap(golden::regenerateWeight(*meta), name);
}

/// Rows 0..n-1 of a rank-2 float tensor.
Tensor firstRows(const Tensor &t, int64_t n) {
  std::vector<float> v(t.floatVector().begin(), t.floatVector().begin() + n * t.dim(1));
  return Tensor::fromFloats(t.elementType(), {n, t.dim(1)}, v);
}

/// Bit-exact comparisons seen, for the report printed at the end of each test.
struct Report {
  std::vector<std::string> lines;
  void add(const golden::Verdict &v, bool exact) {
    lines.push_back(golden::formatVerdict(v) + (v.status == golden::Verdict::Pass && exact ? "  [bit-exact]" : ""));
  }
  ~Report() {
    for (const std::string &l : lines)
      std::printf("%s\n", l.c_str());
  }
};

/// compareCapture; records whether every element matched bit for bit (float captures: max_abs 0 and the same ck).
void expectCapture(Report &report, const GoldenFile &g, const std::string &regime, const std::string &name,
                   const Tensor &got) {
  Result<const Capture *> c = g.capture(regime, name);
  ASSERT_TRUE(c.ok()) << c.error();
  golden::Verdict v = golden::compareCapture(regime, **c, got);
  bool exact = v.mismatches == 0 && v.maxAbsErr == 0 && v.ckGot == v.ckWant;
  report.add(v, exact);
  EXPECT_EQ(v.status, golden::Verdict::Pass) << golden::formatVerdict(v);
}

/// The per-layer replay of the compressor / indexer part (sections 5, 6, 7, 8).
class CompressedReplay {
public:
  explicit CompressedReplay(const GoldenFile &g) : g_(g), fx_(g.fixture()) {
    rope_.ropeDim = fx_.ropeHeadDim;
    rope_.theta = fx_.compressRopeTheta;
    YarnParams y;
    y.originalSeqLen = fx_.originalSeqLen;
    y.factor = fx_.ropeFactor;
    y.betaFast = fx_.betaFast;
    y.betaSlow = fx_.betaSlow;
    rope_.yarn = y;
    eps_ = static_cast<float>(fx_.normEps);
    weightScale_ = static_cast<float>(std::pow(static_cast<double>(fx_.indexHeadDim), -0.5) *
                                      std::pow(static_cast<double>(fx_.indexNHeads), -0.5));
  }

  std::string p(int layer, const std::string &name) const {
    return "layers." + std::to_string(layer) + ".attn." + name;
  }
  Tensor w(int layer, const std::string &name) const { return weight(g_, p(layer, name)); }
  int64_t ratio(int layer) const { return fx_.compressRatios[static_cast<size_t>(layer)]; }
  int64_t capacity(int layer) const { return (fx_.maxSeqLen + ratio(layer) - 1) / ratio(layer); }

  /// Section 5: the pre-RoPE latent rows [g, hd] of this step (bf16), updating the ratio >= 2 state.
  Tensor latent(int layer, const Tensor &x, int64_t startPos, Tensor &kvState, Tensor &scoreState) const {
    if (ratio(layer) == 1)
      return UNWRAP(rmsNorm(UNWRAP(linear(x, w(layer, "compressor.wkv.weight"))), w(layer, "compressor.norm.weight"),
                            eps_));
    Tensor xf = Tensor::fromFloats(ElementType::F32, x.shape(), x.floatVector());
    Tensor kv = UNWRAP(linear(xf, w(layer, "compressor.wkv.weight")));
    Tensor score = UNWRAP(linear(xf, w(layer, "compressor.wgate.weight")));
    CompressPoolResult pooled = UNWRAP(compressPool(kv, score, kvState, scoreState, startPos, ratio(layer)));
    kvState = pooled.kvState;
    scoreState = pooled.scoreState;
    Tensor rounded = Tensor::fromFloats(ElementType::BF16, pooled.pooled.shape(), pooled.pooled.floatVector());
    if (rounded.dim(0) == 0)
      return rounded;
    return UNWRAP(rmsNorm(rounded, w(layer, "compressor.norm.weight"), eps_));
  }

  /// Section 5: group positions of the g latent rows of this step.
  Tensor groupPositions(int layer, int64_t startPos, int64_t g) const {
    int64_t r = ratio(layer);
    return UNWRAP(positions(startPos == 0 ? 0 : startPos + 1 - r, g, r));
  }

  /// Section 6 step 1: index keys of the latent rows.
  Tensor indexKeys(int layer, const Tensor &latent, const Tensor &pos) const {
    Tensor k = UNWRAP(rmsNorm(UNWRAP(linear(latent, w(layer, "indexer.wk.weight"))), w(layer, "indexer.k_norm.weight"),
                              eps_));
    return UNWRAP(fp4QuantE8M0(UNWRAP(applyRope(k, pos, rope_, false)), 32));
  }

  /// Section 8 step 3: the compressed-KV rows of the latent rows.
  Tensor compressedKv(const Tensor &latent, const Tensor &pos) const {
    return UNWRAP(fp4QuantE4M3(UNWRAP(applyRope(latent, pos, rope_, false)), 16));
  }

  /// Section 6 steps 2-5: visibility-masked scores of the step's queries against `keys`.
  Tensor scores(int layer, const Tensor &x, int64_t startPos, const Tensor &keys) const {
    const int64_t s = x.dim(0);
    Tensor qr = UNWRAP(rmsNorm(UNWRAP(linear(x, w(layer, "wq_a.weight"))), w(layer, "q_norm.weight"), eps_));
    Tensor iq = reshaped(UNWRAP(linear(qr, w(layer, "indexer.wq_b.weight"))), {s, fx_.indexNHeads, fx_.indexHeadDim});
    iq = UNWRAP(fp4QuantE8M0(UNWRAP(applyRope(iq, UNWRAP(positions(startPos, s, 1)), rope_, false)), 32));
    Tensor hw = UNWRAP(linear(x, w(layer, "indexer.weights_proj.weight")));
    Tensor sc = UNWRAP(indexerScores(iq, hw, keys, startPos, ratio(layer), weightScale_));
    return UNWRAP(compressVisibility(sc, startPos, ratio(layer)));
  }

  Tensor topk(int layer, const Tensor &scores, int64_t startPos) const {
    return UNWRAP(indexerTopk(scores, startPos, ratio(layer), fx_.indexTopk, fx_.windowSize));
  }

  const golden::Fixture &fixture() const { return fx_; }

private:
  const GoldenFile &g_;
  const golden::Fixture &fx_;
  RopeParams rope_;
  float eps_ = 0;
  float weightScale_ = 0;
};

TEST(CompressKernelsGolden, FixtureIsTheOneTheseTestsAssume) {
  REQUIRE_GOLDEN();
  const golden::Fixture &fx = holder().golden->fixture();
  EXPECT_EQ(fx.compressRatios, (std::vector<int64_t>{0, 0, 2, 2, 1, 1}));
  EXPECT_EQ(fx.kvSourceLayers, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(fx.indexSourceLayers, (std::vector<int64_t>{2, 4, 5}));
  EXPECT_EQ(fx.candidateSourceLayer, 4);
  EXPECT_EQ(fx.regimes, (std::vector<std::string>{"prefill12", "decode12", "decode13"}));
}

/// L2 (ratio 2, kv + index source), L4 (ratio 1, kv + index + candidate source) and L5 (index source applying
/// L4's candidates) over prefill12, decode12, decode13, in stack order, with the shared index_k slot modelled as
/// the reference publishes it (section 8: republished only in a step that produced a latent).
TEST(CompressKernelsGolden, CompressorAndIndexerReplayAllRegimes) {
  REQUIRE_GOLDEN();
  const GoldenFile &g = *holder().golden;
  CompressedReplay rp(g);
  const golden::Fixture &fx = rp.fixture();
  Report report;

  const int64_t hd = fx.headDim, ihd = fx.indexHeadDim;
  const int64_t r2 = rp.ratio(2);
  Tensor kvState2(ElementType::F32, {r2, hd});
  Tensor scoreState2 = Tensor::fromFloats(ElementType::F32, {r2, hd},
                                          std::vector<float>(static_cast<size_t>(r2 * hd), -INFINITY));
  std::map<int, Tensor> kvCache, indexCache;
  for (int l : {2, 4}) {
    kvCache[l] = Tensor(ElementType::BF16, {rp.capacity(l), hd});
    indexCache[l] = Tensor(ElementType::BF16, {rp.capacity(l), ihd});
  }
  Tensor indexSlot; // the shared index_k slot (section 8); empty until the first publication
  Tensor dummyState;

  for (const golden::Regime &regime : g.regimes()) {
    SCOPED_TRACE(regime.name);
    const std::string &rg = regime.name;
    const int64_t sp = regime.startPos, s = regime.numTokens, end = sp + s;

    // ---- L2: ratio 2 --------------------------------------------------------------------------------------
    {
      Tensor x = captureTensor(g, rg, "L2.attn_in", ElementType::BF16);
      Tensor lat = rp.latent(2, x, sp, kvState2, scoreState2);
      const int64_t gRows = lat.dim(0);
      EXPECT_EQ(gRows, sp == 0 ? s / 2 : ((sp + 1) % 2 == 0 ? 1 : 0));
      if (gRows > 0) {
        Tensor pos = rp.groupPositions(2, sp, gRows);
        indexCache[2] = UNWRAP(cacheWrite(indexCache[2], rp.indexKeys(2, lat, pos), sp, 2));
        indexSlot = indexCache[2];
        kvCache[2] = UNWRAP(cacheWrite(kvCache[2], rp.compressedKv(lat, pos), sp, 2));
      }
      // In decode12 the slot still holds L4's ratio-1 cache of the previous step (the reference quirk).
      expectCapture(report, g, rg, "shared.L2.index_k", firstRows(indexSlot, end / 2));
      expectCapture(report, g, rg, "shared.L2.compress_kv", firstRows(kvCache[2], end / 2));
      Tensor sc = rp.scores(2, x, sp, indexSlot);
      expectCapture(report, g, rg, "shared.L2.topk_idxs", rp.topk(2, sc, sp));
    }

    // ---- L4: ratio 1, candidate source ----------------------------------------------------------------------
    Tensor mask;
    {
      Tensor x = captureTensor(g, rg, "L4.attn_in", ElementType::BF16);
      Tensor lat = rp.latent(4, x, sp, dummyState, dummyState);
      ASSERT_EQ(lat.dim(0), s);
      Tensor pos = rp.groupPositions(4, sp, s);
      indexCache[4] = UNWRAP(cacheWrite(indexCache[4], rp.indexKeys(4, lat, pos), sp, 1));
      indexSlot = indexCache[4];
      kvCache[4] = UNWRAP(cacheWrite(kvCache[4], rp.compressedKv(lat, pos), sp, 1));
      expectCapture(report, g, rg, "shared.L4.index_k", firstRows(indexSlot, end));
      expectCapture(report, g, rg, "shared.L4.compress_kv", firstRows(kvCache[4], end));
      Tensor sc = rp.scores(4, x, sp, indexSlot);
      mask = UNWRAP(selectCandidateBlocks(sc, sp, 1, fx.candidateTopkBlocks, fx.candidateBlockSize));
      expectCapture(report, g, rg, "shared.L4.candidates", mask);
      // The candidate source itself does not apply its mask (uses_candidates needs source < l).
      expectCapture(report, g, rg, "shared.L4.topk_idxs", rp.topk(4, sc, sp));
    }

    // ---- L5: ratio 1 index source, applies L4's candidates ---------------------------------------------------
    {
      Tensor x = captureTensor(g, rg, "L5.attn_in", ElementType::BF16);
      Tensor sc = rp.scores(5, x, sp, indexSlot);
      sc = UNWRAP(applyCandidates(sc, mask));
      expectCapture(report, g, rg, "shared.L5.topk_idxs", rp.topk(5, sc, sp));
    }
  }
}

} // namespace
