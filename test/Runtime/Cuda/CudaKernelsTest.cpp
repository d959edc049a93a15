//===- CudaKernelsTest.cpp - the compiled dsa kernels on a GPU against the reference kernels -----------------===//
//
// Runs the PTX that --dsa-gpu-pipeline produced (test/Runtime/Cuda/Inputs/dsa_kernels.sm_90.ptx, or the file named by
// $DSA_CUDA_KERNELS_PTX) through runtime/cuda's KernelLibrary and compares every kernel family with the MLIR-free
// reference kernels (kernels/include/dsa/Kernels/Kernels.h), which the golden files pin. Expected values come from
// those reference kernels, never from the GPU code.
//
//   bit-exact: positions, linear and grouped_output (the kernels keep dotF32's accumulation order), rms_norm,
//              act_quant_fp8 (every bf16 input, and wide-range blocks), ring_update, window_indices;
//   within one bf16 ulp: apply_rope (cos/sin are f64 libdevice rounded to f32, the reference uses glibc's cosf/sinf);
//   within the spec's tolerance (section 12): sparse_attn (exp likewise) and a whole window-only layer chained
//   over a prefill and two decode steps (indices exact).
// Compressed attention (kernels/include/dsa/Kernels/CompressKernels.h):
//   bit-exact: f32 linear, the bf16<->f32 casts, both fp4 round trips (every bf16 input, wide-range blocks),
//              compress_pool's state update, cache_write, indexer_scores, compress_visibility, apply_candidates,
//              select_candidate_blocks and indexer_topk (block scores / widened scores on the GPU, the top-k set on
//              the host with the reference's numerics::torchCpuTopkSet, the mask / mapping on the GPU), concat;
//   within the section 12 tolerance: compress_pool's pooled rows (exp as above).
//
// Skipped (GTEST_SKIP) without a CUDA device; DSA_REQUIRE_CUDA_DEVICE=1 turns that into a failure.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Kernels/CompressKernels.h"
#include "dsa/Kernels/Kernels.h"
#include "dsa/Numerics/BF16.h"
#include "dsa/Numerics/TopK.h"
#include "Runtime/Cuda/KernelLibrary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

using namespace dsa;
using namespace dsa::cuda;
using dsa::ElementType;
using dsa::Tensor;

namespace {

std::string kernelsPtxPath() {
  if (const char *p = std::getenv("DSA_CUDA_KERNELS_PTX"); p && *p)
    return p;
  return std::string(DSA_CUDA_KERNELS_DIR) + "/dsa_kernels.sm_90.ptx";
}

class CudaKernels : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    auto c = Context::open(0);
    if (!c.ok()) {
      skipReason = "no CUDA device here (" + c.error() + ")";
      return;
    }
    ctx = c.take().release();
    std::ifstream in(kernelsPtxPath(), std::ios::binary);
    if (!in) {
      loadError = "cannot read " + kernelsPtxPath() + " (scripts/gpu-check.sh --ptx regenerates it)";
      return;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    auto l = KernelLibrary::load(*ctx, ss.str());
    if (!l.ok()) {
      loadError = "loading " + kernelsPtxPath() + " on " + ctx->device().name + ": " + l.error();
      return;
    }
    lib = new KernelLibrary(l.take());
  }
  static void TearDownTestSuite() {
    delete lib;
    lib = nullptr;
    delete ctx;
    ctx = nullptr;
  }
  void SetUp() override {
    if (!skipReason.empty()) {
      const char *req = std::getenv("DSA_REQUIRE_CUDA_DEVICE");
      if (req && std::string(req) == "1")
        FAIL() << "DSA_REQUIRE_CUDA_DEVICE=1: " << skipReason;
      GTEST_SKIP() << skipReason;
    }
    ASSERT_TRUE(loadError.empty()) << loadError;
  }

  // ---- device buffers ----------------------------------------------------------------------------------------
  static DeviceBuffer alloc(size_t bytes) {
    auto b = ctx->alloc(bytes);
    EXPECT_TRUE(b.ok()) << b.error();
    return b.ok() ? b.take() : DeviceBuffer();
  }
  static DeviceBuffer upBf16(const std::vector<float> &v) {
    std::vector<uint16_t> bits(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      bits[i] = numerics::f32ToBf16Bits(v[i]);
    DeviceBuffer b = alloc(bits.size() * 2);
    EXPECT_TRUE(b.upload(bits.data(), bits.size() * 2).ok());
    return b;
  }
  template <typename T> static DeviceBuffer upRaw(const std::vector<T> &v) {
    DeviceBuffer b = alloc(v.size() * sizeof(T));
    EXPECT_TRUE(b.upload(v.data(), v.size() * sizeof(T)).ok());
    return b;
  }
  static std::vector<float> downBf16(const DeviceBuffer &b, size_t n) {
    EXPECT_TRUE(ctx->synchronize().ok());
    std::vector<uint16_t> bits(n);
    EXPECT_TRUE(b.download(bits.data(), n * 2).ok());
    std::vector<float> out(n);
    for (size_t i = 0; i < n; ++i)
      out[i] = numerics::bf16BitsToF32(bits[i]);
    return out;
  }
  template <typename T> static std::vector<T> downRaw(const DeviceBuffer &b, size_t n) {
    EXPECT_TRUE(ctx->synchronize().ok());
    std::vector<T> out(n);
    EXPECT_TRUE(b.download(out.data(), n * sizeof(T)).ok());
    return out;
  }

  static Context *ctx;
  static KernelLibrary *lib;
  static std::string skipReason, loadError;
};
Context *CudaKernels::ctx = nullptr;
KernelLibrary *CudaKernels::lib = nullptr;
std::string CudaKernels::skipReason, CudaKernels::loadError;

/// Deterministic bf16-exact values: uniform in [-scale, scale], rounded to bf16.
std::vector<float> randomBf16(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = numerics::roundBf16(u(rng));
  return v;
}

Tensor bf16Tensor(std::vector<int64_t> shape, const std::vector<float> &v) {
  return Tensor::fromFloats(ElementType::BF16, std::move(shape), v);
}

bool sameBits(float a, float b) {
  if (std::isnan(a) && std::isnan(b))
    return true;
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

/// Distance in bf16 steps between two bf16-exact finite values of the same sign (a large number otherwise).
int64_t bf16Ulps(float a, float b) {
  if (sameBits(a, b))
    return 0;
  if (std::isnan(a) || std::isnan(b) || std::signbit(a) != std::signbit(b))
    return a == b ? 0 : std::numeric_limits<int64_t>::max(); // +0 vs -0 compare equal
  return std::abs(static_cast<int64_t>(numerics::f32ToBf16Bits(a) & 0x7FFF) -
                  static_cast<int64_t>(numerics::f32ToBf16Bits(b) & 0x7FFF));
}

void expectBitExact(const std::vector<float> &got, const Tensor &want, const std::string &what) {
  ASSERT_EQ(static_cast<int64_t>(got.size()), want.numElements()) << what;
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!sameBits(got[i], want.floats()[i]) && bad++ < 10)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", the reference gives " << want.floats()[i];
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " elements differ";
}

/// attention-semantics.md section 12: |got - want| <= 2^-6 |want| + 2^-8 max|want|. Returns the exact matches.
int64_t expectWithinTolerance(const std::vector<float> &got, const Tensor &want, const std::string &what) {
  EXPECT_EQ(static_cast<int64_t>(got.size()), want.numElements()) << what;
  float maxAbs = 0.0f;
  for (int64_t i = 0; i < want.numElements(); ++i)
    maxAbs = std::max(maxAbs, std::fabs(want.floats()[i]));
  int64_t bad = 0, exact = 0;
  for (size_t i = 0; i < got.size() && static_cast<int64_t>(i) < want.numElements(); ++i) {
    const float w = want.floats()[i];
    exact += sameBits(got[i], w);
    const float tol = std::ldexp(std::fabs(w), -6) + std::ldexp(maxAbs, -8);
    if (!(std::fabs(got[i] - w) <= tol) && bad++ < 10)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", the reference gives " << w
                    << " (tolerance " << tol << ")";
  }
  EXPECT_EQ(bad, 0) << what;
  std::cout << "[ info ] " << what << ": " << exact << " of " << got.size() << " elements bit-identical\n";
  return exact;
}

Tensor expectOk(Result<Tensor> r) {
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r.take() : Tensor();
}

} // namespace

TEST_F(CudaKernels, Positions) {
  for (auto [start, count, stride] : {std::tuple<int64_t, int64_t, int64_t>{0, 12, 1}, {12, 1, 1}, {5, 1000, 3},
                                       {(int64_t(1) << 40), 300, 2}}) {
    DeviceBuffer out = alloc(count * 8);
    ASSERT_TRUE(lib->positions(out.ptr(), start, count, stride).ok());
    std::vector<int64_t> got = downRaw<int64_t>(out, count);
    Tensor want = expectOk(kernels::positions(start, count, stride));
    EXPECT_EQ(got, want.intVector()) << "start " << start << " count " << count << " stride " << stride;
  }
  EXPECT_FALSE(lib->positions(0, -1, 1, 1).ok());
}

TEST_F(CudaKernels, LinearIsBitExact) {
  // Shapes of the tiny model (K = 64, 16, 32) and awkward ones: M and N not multiples of the 16x16 tile, K not a
  // multiple of 8 (dotF32's tail) or of the 32-wide k tile, K < 8 (tail only).
  const int64_t shapes[][3] = {{1, 16, 64}, {12, 16, 64}, {12, 128, 16}, {12, 64, 32}, {37, 45, 70}, {3, 7, 13},
                               {20, 33, 5},  {64, 80, 200}};
  uint32_t seed = 1;
  for (auto &s : shapes) {
    const int64_t M = s[0], N = s[1], K = s[2];
    std::vector<float> x = randomBf16(M * K, 2.0f, seed++), w = randomBf16(N * K, 0.5f, seed++);
    DeviceBuffer dx = upBf16(x), dw = upBf16(w), dy = alloc(M * N * 2);
    ASSERT_TRUE(lib->linearBf16(dx.ptr(), dw.ptr(), dy.ptr(), M, N, K).ok());
    Tensor want = expectOk(kernels::linear(bf16Tensor({M, K}, x), bf16Tensor({N, K}, w)));
    expectBitExact(downBf16(dy, M * N), want,
                   "linear " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
  }
}

TEST_F(CudaKernels, GroupedOutputIsBitExact) {
  const int64_t cases[][5] = {{13, 4, 32, 2, 16}, {1, 4, 32, 2, 16}, {5, 2, 64, 1, 8}, {17, 8, 16, 4, 20}};
  uint32_t seed = 100;
  for (auto &c : cases) {
    const int64_t s = c[0], H = c[1], hd = c[2], G = c[3], R = c[4], gw = H * hd / G;
    std::vector<float> o = randomBf16(s * H * hd, 1.0f, seed++), w = randomBf16(G * R * gw, 0.25f, seed++);
    DeviceBuffer dO = upBf16(o), dw = upBf16(w), dy = alloc(s * G * R * 2);
    ASSERT_TRUE(lib->groupedOutput(dO.ptr(), dw.ptr(), dy.ptr(), s, H, hd, G, R).ok());
    Tensor want = expectOk(kernels::groupedOutput(bf16Tensor({s, H, hd}, o), bf16Tensor({G * R, gw}, w), G));
    expectBitExact(downBf16(dy, s * G * R), want, "grouped_output s=" + std::to_string(s) + " G=" + std::to_string(G));
  }
}

TEST_F(CudaKernels, RmsNormIsBitExact) {
  uint32_t seed = 200;
  for (int64_t D : {16, 32, 100, 5120})
    for (float eps : {9.99999968e-21f, 1e-6f}) {
      const int64_t rows = 9;
      std::vector<float> x = randomBf16(rows * D, 3.0f, seed++), w = randomBf16(D, 1.5f, seed++);
      // Rows of very different magnitudes (a tiny one stresses eps, a huge one the f32 range).
      for (int64_t d = 0; d < D; ++d) {
        x[d] = numerics::roundBf16(x[d] * 1e-18f);
        x[D + d] = numerics::roundBf16(x[D + d] * 1e15f);
      }
      DeviceBuffer dx = upBf16(x), dw = upBf16(w), dy = alloc(rows * D * 2);
      ASSERT_TRUE(lib->rmsNormBf16(dx.ptr(), dw.ptr(), dy.ptr(), rows, D, eps).ok());
      Tensor want = expectOk(kernels::rmsNorm(bf16Tensor({rows, D}, x), bf16Tensor({D}, w), eps));
      expectBitExact(downBf16(dy, rows * D), want, "rms_norm D=" + std::to_string(D));
    }
}

TEST_F(CudaKernels, ApplyRopeIsWithinOneBf16Ulp) {
  dsa::RopeParams plain;
  plain.ropeDim = 8;
  plain.theta = 1e4;
  dsa::RopeParams yarn = plain;
  yarn.theta = 4e4;
  yarn.yarn = dsa::YarnParams{32, 2.0, 32.0, 1.0};
  dsa::RopeParams wide;
  wide.ropeDim = 64;
  wide.theta = 1e4;
  const std::vector<int64_t> positions = {0, 1, 2, 7, 12, 13, 63, 100, 1000, 4095, 65535, 1000000};
  uint32_t seed = 300;
  int64_t total = 0, exact = 0;
  for (const dsa::RopeParams &p : {plain, yarn, wide})
    for (bool inverse : {false, true}) {
      const int64_t s = static_cast<int64_t>(positions.size()), H = 4, hd = p.ropeDim == 64 ? 128 : 32;
      std::vector<float> x = randomBf16(s * H * hd, 4.0f, seed++);
      std::vector<float> freqs = dsa::ropeFrequencies(p);
      DeviceBuffer dx = upBf16(x), dp = upRaw(positions), df = upRaw(freqs), dy = alloc(s * H * hd * 2);
      ASSERT_TRUE(lib->applyRope(dx.ptr(), dp.ptr(), df.ptr(), dy.ptr(), s, H, hd, p.ropeDim, inverse).ok());
      std::vector<float> got = downBf16(dy, s * H * hd);
      Tensor want = expectOk(kernels::applyRope(bf16Tensor({s, H, hd}, x),
                                               Tensor::fromInts(ElementType::I64, {s}, positions), p, inverse));
      for (size_t i = 0; i < got.size(); ++i) {
        ++total;
        exact += sameBits(got[i], want.floats()[i]);
        EXPECT_LE(bf16Ulps(got[i], want.floats()[i]), 1)
            << "rope_dim " << p.ropeDim << (inverse ? " inverse" : "") << " element " << i << ": " << got[i]
            << " vs " << want.floats()[i];
      }
      // The pass-through head of each row is copied exactly.
      for (int64_t r = 0; r < s * H; ++r)
        for (int64_t d = 0; d < hd - p.ropeDim; ++d)
          ASSERT_TRUE(sameBits(got[r * hd + d], x[r * hd + d]));
    }
  std::cout << "[ info ] apply_rope: " << exact << " of " << total << " elements bit-identical\n";
}

TEST_F(CudaKernels, ActQuantFp8IsBitExactOnEveryBf16AndWideBlocks) {
  // Every bf16 bit pattern once (NaN and inf included), 32 consecutive patterns per block; then blocks whose
  // values span 2^-30 .. 2^12, so that e4m3's subnormals, its underflow to zero and saturation are all reached.
  std::vector<float> x;
  for (uint32_t b = 0; b < 65536; ++b)
    x.push_back(numerics::bf16BitsToF32(static_cast<uint16_t>(b)));
  std::mt19937 rng(400);
  std::uniform_int_distribution<int> ex(-30, 12), mant(0, 127), sign(0, 1);
  for (int i = 0; i < 32 * 4096; ++i) {
    float v = std::ldexp(1.0f + mant(rng) / 128.0f, ex(rng));
    x.push_back(numerics::roundBf16(sign(rng) ? -v : v));
  }
  const int64_t block = 32, nblocks = static_cast<int64_t>(x.size()) / block;
  DeviceBuffer dx = upBf16(x), dy = alloc(x.size() * 2);
  ASSERT_TRUE(lib->actQuantFp8(dx.ptr(), dy.ptr(), nblocks, block).ok());
  Tensor want = expectOk(kernels::actQuantFp8(bf16Tensor({nblocks, block}, x), block));
  expectBitExact(downBf16(dy, x.size()), want, "act_quant_fp8");
  // Another block size.
  DeviceBuffer dz = alloc(x.size() * 2);
  ASSERT_TRUE(lib->actQuantFp8(dx.ptr(), dz.ptr(), static_cast<int64_t>(x.size()) / 16, 16).ok());
  Tensor want16 = expectOk(kernels::actQuantFp8(bf16Tensor({static_cast<int64_t>(x.size()) / 16, 16}, x), 16));
  expectBitExact(downBf16(dz, x.size()), want16, "act_quant_fp8 block 16");
}

TEST_F(CudaKernels, RingUpdateIsExact) {
  const int64_t W = 8, hd = 32;
  // (start_pos, s): prefill shorter, equal and longer than the window (twice over), decode while filling and
  // after wrapping, a multi-token step at start_pos > 0.
  const int64_t cases[][2] = {{0, 3}, {0, 8}, {0, 12}, {0, 20}, {3, 1}, {12, 1}, {13, 1}, {6, 5}, {100, 1}};
  uint32_t seed = 500;
  for (auto &c : cases) {
    const int64_t start = c[0], s = c[1];
    std::vector<float> ring = randomBf16(W * hd, 1.0f, seed++), kv = randomBf16(s * hd, 1.0f, seed++);
    DeviceBuffer dr = upBf16(ring), dk = upBf16(kv), dout = alloc(W * hd * 2);
    ASSERT_TRUE(lib->ringUpdate(dr.ptr(), dk.ptr(), dout.ptr(), W, hd, s, start).ok());
    Tensor want = expectOk(kernels::ringUpdate(bf16Tensor({W, hd}, ring), bf16Tensor({s, hd}, kv), start));
    expectBitExact(downBf16(dout, W * hd), want,
                   "ring_update start " + std::to_string(start) + " s " + std::to_string(s));
  }
}

TEST_F(CudaKernels, WindowIndicesAreExact) {
  auto check = [&](int64_t start, int64_t count, int64_t W) {
    const int64_t width = start == 0 ? std::min(count, W) : W;
    DeviceBuffer out = alloc(count * width * 4);
    Status st = lib->windowIndices(out.ptr(), start, count, W, width);
    ASSERT_TRUE(st.ok()) << st.error();
    std::vector<int32_t> got = downRaw<int32_t>(out, count * width);
    Tensor want = expectOk(kernels::windowIndices(start, count, W));
    ASSERT_EQ(static_cast<int64_t>(got.size()), want.numElements());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], want.ints()[i]) << "start " << start << " count " << count << " W " << W << " at " << i;
  };
  for (int64_t W : {1, 4, 8, 128}) {
    for (int64_t count : {1, 2, 3, 7, 8, 9, 12, 20, 300})
      check(0, count, W);
    for (int64_t start : {1, 2, 3, 4, 7, 8, 12, 13, 40, 127, 128, 129, 1000})
      check(start, 1, W);
  }
  // The runtime's checks (the MLIR host code asserts the same).
  EXPECT_FALSE(lib->windowIndices(0, 3, 2, 8, 8).ok());  // multi-token step at start_pos > 0
  EXPECT_FALSE(lib->windowIndices(0, 0, 12, 8, 12).ok()); // width not min(count, W)
  EXPECT_FALSE(lib->windowIndices(0, -1, 1, 8, 8).ok());
}

TEST_F(CudaKernels, SparseAttnIsWithinTolerance) {
  const int64_t s = 6, H = 4, hd = 32, n = 12, k = 8;
  const float scale = 0.176776692f;
  std::vector<float> q = randomBf16(s * H * hd, 2.0f, 600), kv = randomBf16(n * hd, 2.0f, 601);
  std::vector<float> sink = {0.5f, -1.25f, 3.0f, -std::numeric_limits<float>::infinity()};
  std::mt19937 rng(602);
  std::uniform_int_distribution<int> pick(-1, n - 1);
  std::vector<int32_t> idx(s * k);
  for (auto &v : idx)
    v = pick(rng);
  for (int64_t j = 0; j < k; ++j) {
    idx[2 * k + j] = -1;                        // a row with no valid index: zeros
    idx[3 * k + j] = static_cast<int32_t>(j % 3); // duplicates count once per occurrence
  }
  DeviceBuffer dq = upBf16(q), dkv = upBf16(kv), di = upRaw(idx), ds = upRaw(sink), dout = alloc(s * H * hd * 2),
               scratch = alloc(s * H * k * 4);
  ASSERT_TRUE(lib->sparseAttn(dq.ptr(), dkv.ptr(), di.ptr(), ds.ptr(), dout.ptr(), scratch.ptr(), s, H, hd, n, k,
                              scale)
                  .ok());
  std::vector<int64_t> idx64(idx.begin(), idx.end());
  Tensor want = expectOk(kernels::sparseAttn(bf16Tensor({s, H, hd}, q), bf16Tensor({n, hd}, kv),
                                            Tensor::fromInts(ElementType::I32, {s, k}, idx64),
                                            Tensor::fromFloats(ElementType::F32, {H}, sink), scale));
  std::vector<float> got = downBf16(dout, s * H * hd);
  expectWithinTolerance(got, want, "sparse_attn");
  for (int64_t i = 2 * H * hd; i < 3 * H * hd; ++i)
    ASSERT_EQ(got[i], 0.0f) << "the all -1 row must be zeros";

  // An index outside [-1, n) poisons its (t, h) rows with NaN instead of reading out of bounds.
  idx[0] = static_cast<int32_t>(n + 5);
  DeviceBuffer di2 = upRaw(idx), dout2 = alloc(s * H * hd * 2);
  ASSERT_TRUE(lib->sparseAttn(dq.ptr(), dkv.ptr(), di2.ptr(), ds.ptr(), dout2.ptr(), scratch.ptr(), s, H, hd, n, k,
                              scale)
                  .ok());
  std::vector<float> poisoned = downBf16(dout2, s * H * hd);
  for (int64_t i = 0; i < H * hd; ++i)
    ASSERT_TRUE(std::isnan(poisoned[i])) << "token 0 reads an out-of-range row";
  for (int64_t i = H * hd; i < s * H * hd; ++i)
    ASSERT_TRUE(sameBits(poisoned[i], got[i])) << "other tokens are unaffected";
}

// One window-only layer (L0's geometry) as the decomposition chains the primitives (attention-semantics.md
// sections 3, 4, 10, 11), on the GPU kernels and on the reference kernels, over a prefill of 12 tokens and decode
// steps at 12 and 13, the ring carried across steps on each side.
TEST_F(CudaKernels, WindowLayerChainMatchesTheReference) {
  const int64_t dim = 64, H = 4, hd = 32, rd = 8, qLora = 16, G = 2, R = 16, W = 8;
  const float eps = 9.99999968e-21f, scale = 0.176776692f;
  dsa::RopeParams rope;
  rope.ropeDim = rd;
  rope.theta = 1e4;
  const std::vector<float> freqs = dsa::ropeFrequencies(rope);
  auto wq_a = randomBf16(qLora * dim, 0.2f, 700), q_norm = randomBf16(qLora, 1.0f, 701),
       wq_b = randomBf16(H * hd * qLora, 0.3f, 702), wkv = randomBf16(hd * dim, 0.2f, 703),
       kv_norm = randomBf16(hd, 1.0f, 704), wo_a = randomBf16(G * R * (H * hd / G), 0.1f, 705),
       wo_b = randomBf16(dim * G * R, 0.2f, 706);
  std::vector<float> sink = {0.25f, -0.5f, 1.0f, 0.0f};
  DeviceBuffer d_wq_a = upBf16(wq_a), d_q_norm = upBf16(q_norm), d_wq_b = upBf16(wq_b), d_wkv = upBf16(wkv),
               d_kv_norm = upBf16(kv_norm), d_wo_a = upBf16(wo_a), d_wo_b = upBf16(wo_b), d_sink = upRaw(sink),
               d_freqs = upRaw(freqs);
  std::vector<float> ringInit(W * hd, 0.0f);
  DeviceBuffer gpuRing = upBf16(ringInit);
  Tensor cpuRing = bf16Tensor({W, hd}, ringInit);

  for (auto [start, s] : {std::pair<int64_t, int64_t>{0, 12}, {12, 1}, {13, 1}}) {
    const std::string step = "step at " + std::to_string(start);
    std::vector<float> x = randomBf16(s * dim, 1.0f, 800 + static_cast<uint32_t>(start));
    // ---- reference ----
    Tensor X = bf16Tensor({s, dim}, x);
    Tensor pos = expectOk(kernels::positions(start, s, 1));
    Tensor qr = expectOk(kernels::rmsNorm(expectOk(kernels::linear(X, bf16Tensor({qLora, dim}, wq_a))),
                                         bf16Tensor({qLora}, q_norm), eps));
    Tensor qflat = expectOk(kernels::linear(qr, bf16Tensor({H * hd, qLora}, wq_b)));
    Tensor qh = Tensor::fromFloats(ElementType::BF16, {s, H, hd}, qflat.floatVector());
    Tensor q = expectOk(kernels::applyRope(qh, pos, rope, false));
    Tensor kvn = expectOk(kernels::rmsNorm(expectOk(kernels::linear(X, bf16Tensor({hd, dim}, wkv))),
                                          bf16Tensor({hd}, kv_norm), eps));
    Tensor kv = expectOk(kernels::actQuantFp8(expectOk(kernels::applyRope(kvn, pos, rope, false)), 32));
    Tensor newRing = expectOk(kernels::ringUpdate(cpuRing, kv, start));
    Tensor rows = expectOk(kernels::windowKv(kv, newRing, start));
    Tensor idx = expectOk(kernels::windowIndices(start, s, W));
    Tensor o = expectOk(kernels::sparseAttn(q, rows, idx, Tensor::fromFloats(ElementType::F32, {H}, sink), scale));
    Tensor orot = expectOk(kernels::applyRope(o, pos, rope, true));
    Tensor og = expectOk(kernels::groupedOutput(orot, bf16Tensor({G * R, H * hd / G}, wo_a), G));
    Tensor out = expectOk(kernels::linear(og, bf16Tensor({dim, G * R}, wo_b)));
    cpuRing = newRing;

    // ---- GPU: the same chain of kernels, as dsa-to-gpu launches it ----
    DeviceBuffer dx = upBf16(x), dpos = alloc(s * 8), dqa = alloc(s * qLora * 2), dqr = alloc(s * qLora * 2),
                 dqb = alloc(s * H * hd * 2), dq = alloc(s * H * hd * 2), dkva = alloc(s * hd * 2),
                 dkvn = alloc(s * hd * 2), dkvr = alloc(s * hd * 2), dkv = alloc(s * hd * 2),
                 dring = alloc(W * hd * 2);
    ASSERT_TRUE(lib->positions(dpos.ptr(), start, s, 1).ok());
    ASSERT_TRUE(lib->linearBf16(dx.ptr(), d_wq_a.ptr(), dqa.ptr(), s, qLora, dim).ok());
    ASSERT_TRUE(lib->rmsNormBf16(dqa.ptr(), d_q_norm.ptr(), dqr.ptr(), s, qLora, eps).ok());
    ASSERT_TRUE(lib->linearBf16(dqr.ptr(), d_wq_b.ptr(), dqb.ptr(), s, H * hd, qLora).ok());
    ASSERT_TRUE(lib->applyRope(dqb.ptr(), dpos.ptr(), d_freqs.ptr(), dq.ptr(), s, H, hd, rd, false).ok());
    ASSERT_TRUE(lib->linearBf16(dx.ptr(), d_wkv.ptr(), dkva.ptr(), s, hd, dim).ok());
    ASSERT_TRUE(lib->rmsNormBf16(dkva.ptr(), d_kv_norm.ptr(), dkvn.ptr(), s, hd, eps).ok());
    ASSERT_TRUE(lib->applyRope(dkvn.ptr(), dpos.ptr(), d_freqs.ptr(), dkvr.ptr(), s, 1, hd, rd, false).ok());
    ASSERT_TRUE(lib->actQuantFp8(dkvr.ptr(), dkv.ptr(), s * hd / 32, 32).ok());
    ASSERT_TRUE(lib->ringUpdate(gpuRing.ptr(), dkv.ptr(), dring.ptr(), W, hd, s, start).ok());
    const DeviceBuffer &drows = start == 0 ? dkv : dring;
    const int64_t n = start == 0 ? s : W, width = start == 0 ? std::min(s, W) : W;
    DeviceBuffer didx = alloc(s * width * 4), dO = alloc(s * H * hd * 2), dscr = alloc(s * H * width * 4),
                 dorot = alloc(s * H * hd * 2), dog = alloc(s * G * R * 2), dout = alloc(s * dim * 2);
    ASSERT_TRUE(lib->windowIndices(didx.ptr(), start, s, W, width).ok());
    ASSERT_TRUE(lib->sparseAttn(dq.ptr(), drows.ptr(), didx.ptr(), d_sink.ptr(), dO.ptr(), dscr.ptr(), s, H, hd, n,
                                width, scale)
                    .ok());
    ASSERT_TRUE(lib->applyRope(dO.ptr(), dpos.ptr(), d_freqs.ptr(), dorot.ptr(), s, H, hd, rd, true).ok());
    ASSERT_TRUE(lib->groupedOutput(dorot.ptr(), d_wo_a.ptr(), dog.ptr(), s, H, hd, G, R).ok());
    ASSERT_TRUE(lib->linearBf16(dog.ptr(), d_wo_b.ptr(), dout.ptr(), s, dim, G * R).ok());

    std::vector<int32_t> gotIdx = downRaw<int32_t>(didx, s * width);
    ASSERT_EQ(static_cast<int64_t>(gotIdx.size()), idx.numElements());
    for (size_t i = 0; i < gotIdx.size(); ++i)
      ASSERT_EQ(gotIdx[i], idx.ints()[i]) << step << ": window index " << i;
    expectWithinTolerance(downBf16(dq, s * H * hd), q, step + " sa_q");
    expectWithinTolerance(downBf16(dring, W * hd), newRing, step + " ring");
    expectWithinTolerance(downBf16(dO, s * H * hd), o, step + " sa_o");
    expectWithinTolerance(downBf16(dout, s * dim), out, step + " attn_out");
    gpuRing = std::move(dring);
  }
}

//===----------------------------------------------------------------------===//
// Compressed attention
//===----------------------------------------------------------------------===//

namespace {
Tensor f32Tensor(std::vector<int64_t> shape, const std::vector<float> &v) {
  return Tensor::fromFloats(ElementType::F32, std::move(shape), v);
}

/// Random f32 values (not bf16-rounded) uniform in [-scale, scale].
std::vector<float> randomF32(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng);
  return v;
}

/// bf16 scores full of ties: small integers, with a share of -inf (masked positions).
std::vector<float> tiedScores(size_t n, uint32_t seed, int distinct, double negInfShare) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> v(0, distinct - 1);
  std::bernoulli_distribution inf(negInfShare);
  std::vector<float> out(n);
  for (float &x : out)
    x = inf(rng) ? -std::numeric_limits<float>::infinity() : static_cast<float>(v(rng)) * 0.5f;
  return out;
}
} // namespace

TEST_F(CudaKernels, LinearF32IsBitExact) {
  const int64_t shapes[][3] = {{12, 32, 64}, {1, 32, 64}, {7, 5, 9}, {3, 3, 5}, {40, 64, 4096}};
  uint32_t seed = 1000;
  for (auto &sh : shapes) {
    const int64_t M = sh[0], N = sh[1], K = sh[2];
    std::vector<float> x = randomF32(M * K, 3.0f, seed++), w = randomF32(N * K, 0.5f, seed++);
    DeviceBuffer dx = upRaw(x), dw = upRaw(w), dy = alloc(M * N * 4);
    ASSERT_TRUE(lib->linearF32(dx.ptr(), dw.ptr(), dy.ptr(), M, N, K).ok());
    Tensor want = expectOk(kernels::linear(f32Tensor({M, K}, x), f32Tensor({N, K}, w)));
    expectBitExact(downRaw<float>(dy, M * N), want, "linear f32 " + std::to_string(M) + "x" + std::to_string(N) +
                                                         "x" + std::to_string(K));
  }
}

TEST_F(CudaKernels, CastsAreExact) {
  // extf: every bf16 pattern; truncf: f32 patterns around every bf16 rounding boundary (ties, +-1 ulp), specials.
  std::vector<uint16_t> bits(65536);
  for (uint32_t b = 0; b < 65536; ++b)
    bits[b] = static_cast<uint16_t>(b);
  DeviceBuffer db = upRaw(bits), df = alloc(65536 * 4);
  ASSERT_TRUE(lib->extfBf16F32(db.ptr(), df.ptr(), 65536).ok());
  std::vector<float> wide = downRaw<float>(df, 65536);
  for (uint32_t b = 0; b < 65536; ++b)
    ASSERT_TRUE(sameBits(wide[b], numerics::bf16BitsToF32(static_cast<uint16_t>(b)))) << "bf16 pattern " << b;
  std::vector<float> x;
  for (uint32_t b = 0; b < 65536; b += 7)
    for (uint32_t low : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      uint32_t u = (b << 16) | low;
      float f;
      std::memcpy(&f, &u, 4);
      x.push_back(f);
    }
  DeviceBuffer dx = upRaw(x), dy = alloc(x.size() * 2);
  ASSERT_TRUE(lib->truncfF32Bf16(dx.ptr(), dy.ptr(), static_cast<int64_t>(x.size())).ok());
  std::vector<float> got = downBf16(dy, x.size());
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_TRUE(sameBits(got[i], numerics::roundBf16(x[i])) || (std::isnan(x[i]) && std::isnan(got[i])))
        << "truncf of " << x[i] << ": " << got[i] << " vs " << numerics::roundBf16(x[i]);
}

TEST_F(CudaKernels, Fp4QuantIsBitExactOnEveryBf16AndWideBlocks) {
  // Every bf16 bit pattern once (NaN and inf included), then blocks spanning 2^-140 .. 2^12 (the amax floors, the
  // e4m3 scale's subnormals, e2m1's ties and saturation).
  std::vector<float> x;
  for (uint32_t b = 0; b < 65536; ++b)
    x.push_back(numerics::bf16BitsToF32(static_cast<uint16_t>(b)));
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> e(-140, 12);
  std::uniform_real_distribution<float> m(-2.0f, 2.0f);
  for (int i = 0; i < 32 * 512; ++i)
    x.push_back(numerics::roundBf16(std::ldexp(m(rng), e(rng))));
  const int64_t n = static_cast<int64_t>(x.size());
  for (bool e4m3 : {false, true}) {
    const int64_t block = e4m3 ? 16 : 32;
    DeviceBuffer dx = upBf16(x), dy = alloc(n * 2);
    ASSERT_TRUE(lib->fp4Quant(dx.ptr(), dy.ptr(), n / block, block, e4m3).ok());
    Tensor in = bf16Tensor({n / block, block}, x);
    Tensor want = expectOk(e4m3 ? kernels::fp4QuantE4M3(in, block) : kernels::fp4QuantE8M0(in, block));
    expectBitExact(downBf16(dy, n), want, e4m3 ? "fp4_quant_e4m3" : "fp4_quant_e8m0");
  }
  DeviceBuffer d = alloc(64);
  EXPECT_FALSE(lib->fp4Quant(d.ptr(), d.ptr(), 1, 0, false).ok());
}

TEST_F(CudaKernels, CompressPoolMatchesTheReference) {
  // Prefills of every remainder, then decode steps through two completing groups, the state threaded on both sides;
  // the states are copies (bit-exact), the pooled rows go through exp (section 12 tolerance).
  uint32_t seed = 1100;
  for (int64_t ratio : {2, 4})
    for (int64_t hd : {32, 128})
      for (int64_t s0 : {1, 2, 3, 5, 8, 13}) {
        std::vector<float> kvState(ratio * hd, 0.0f), scoreState(ratio * hd, -std::numeric_limits<float>::infinity());
        int64_t start = 0, s = s0;
        for (int step = 0; step < 2 * static_cast<int>(ratio) + 1; ++step) {
          std::vector<float> kv = randomF32(s * hd, 4.0f, seed++), score = randomF32(s * hd, 6.0f, seed++);
          if (step == 0 && s > 1)
            score[hd + 1] = -std::numeric_limits<float>::infinity(); // a member with weight 0
          DeviceBuffer dkv = upRaw(kv), dsc = upRaw(score), dks = upRaw(kvState), dss = upRaw(scoreState);
          const int64_t g = KernelLibrary::pooledRows(s, start, ratio);
          DeviceBuffer dp = alloc(std::max<int64_t>(1, g * hd) * 4), dnk = alloc(ratio * hd * 4),
                       dns = alloc(ratio * hd * 4);
          ASSERT_TRUE(lib->compressPool(dkv.ptr(), dsc.ptr(), dks.ptr(), dss.ptr(), dp.ptr(), dnk.ptr(), dns.ptr(), s,
                                        hd, ratio, start)
                          .ok());
          auto want = kernels::compressPool(f32Tensor({s, hd}, kv), f32Tensor({s, hd}, score),
                                           f32Tensor({ratio, hd}, kvState), f32Tensor({ratio, hd}, scoreState), start,
                                           ratio);
          ASSERT_TRUE(want.ok()) << want.error();
          const std::string what = "compress_pool r=" + std::to_string(ratio) + " hd=" + std::to_string(hd) +
                                   " start=" + std::to_string(start) + " s=" + std::to_string(s);
          ASSERT_EQ(want->pooled.dim(0), g) << what;
          expectBitExact(downRaw<float>(dnk, ratio * hd), want->kvState, what + " kv_state");
          expectBitExact(downRaw<float>(dns, ratio * hd), want->scoreState, what + " score_state");
          if (g > 0)
            expectWithinTolerance(downRaw<float>(dp, g * hd), want->pooled, what + " pooled");
          kvState = want->kvState.floatVector();
          scoreState = want->scoreState.floatVector();
          start += s;
          s = 1;
        }
      }
  DeviceBuffer d = alloc(64);
  EXPECT_FALSE(lib->compressPool(d.ptr(), d.ptr(), d.ptr(), d.ptr(), d.ptr(), d.ptr(), d.ptr(), 2, 1, 2, 5).ok());
  EXPECT_FALSE(lib->compressPool(d.ptr(), d.ptr(), d.ptr(), d.ptr(), d.ptr(), d.ptr(), d.ptr(), 1, 1, 1, 0).ok());
}

TEST_F(CudaKernels, CacheWriteIsExact) {
  const int64_t C = 32, w = 32;
  std::vector<float> cache = randomBf16(C * w, 2.0f, 1200);
  for (auto [start, g, ratio] :
       {std::tuple<int64_t, int64_t, int64_t>{0, 6, 2}, {13, 1, 2}, {62, 1, 2}, {0, 0, 4}, {31, 1, 1}}) {
    std::vector<float> rows = randomBf16(std::max<int64_t>(1, g * w), 1.0f, 1201 + static_cast<uint32_t>(start));
    DeviceBuffer dc = upBf16(cache), dr = upBf16(rows), dout = alloc(C * w * 2);
    ASSERT_TRUE(lib->cacheWrite(dc.ptr(), dr.ptr(), dout.ptr(), C, w, g, start, ratio).ok());
    rows.resize(g * w);
    Tensor want = expectOk(kernels::cacheWrite(bf16Tensor({C, w}, cache), bf16Tensor({g, w}, rows), start, ratio));
    expectBitExact(downBf16(dout, C * w), want, "cache_write start " + std::to_string(start));
  }
  DeviceBuffer d = alloc(64);
  EXPECT_FALSE(lib->cacheWrite(d.ptr(), d.ptr(), d.ptr(), 4, 1, 2, 6, 2).ok()); // rows 3..4 of 4
  EXPECT_FALSE(lib->cacheWrite(d.ptr(), d.ptr(), d.ptr(), 4, 1, 1, -1, 2).ok());
}

TEST_F(CudaKernels, IndexerScoresIsBitExact) {
  struct Case {
    int64_t s, IH, ihd, n, start, ratio;
  };
  const Case cases[] = {{12, 2, 32, 12, 0, 1}, {12, 2, 32, 32, 0, 2}, {1, 2, 32, 64, 13, 1}, {1, 2, 32, 32, 13, 2},
                        {3, 2, 32, 8, 0, 4},   {5, 64, 128, 40, 0, 1}, {1, 64, 128, 300, 511, 2}};
  uint32_t seed = 1300;
  for (const Case &c : cases) {
    std::vector<float> iq = randomBf16(c.s * c.IH * c.ihd, 2.0f, seed++), w = randomBf16(c.s * c.IH, 3.0f, seed++),
                       keys = randomBf16(c.n * c.ihd, 2.0f, seed++);
    if (c.n > 2) { // specials: an inf key element, a NaN one, a huge one (overflowing products)
      keys[0] = std::numeric_limits<float>::infinity();
      keys[c.ihd + 3] = std::numeric_limits<float>::quiet_NaN();
      keys[2 * c.ihd] = numerics::roundBf16(3e38f);
    }
    const float scale = static_cast<float>(1.0 / std::sqrt(double(c.ihd)) / std::sqrt(double(c.IH)));
    const int64_t width = KernelLibrary::scoresWidth(c.s, c.start, c.ratio);
    DeviceBuffer dq = upBf16(iq), dw = upBf16(w), dk = upBf16(keys);
    DeviceBuffer dout = alloc(std::max<int64_t>(1, c.s * width) * 2);
    ASSERT_TRUE(lib->indexerScores(dq.ptr(), dw.ptr(), dk.ptr(), dout.ptr(), c.s, c.IH, c.ihd, c.n, c.start, c.ratio,
                                   scale)
                    .ok());
    Tensor want = expectOk(kernels::indexerScores(bf16Tensor({c.s, c.IH, c.ihd}, iq), bf16Tensor({c.s, c.IH}, w),
                                                 bf16Tensor({c.n, c.ihd}, keys), c.start, c.ratio, scale));
    expectBitExact(downBf16(dout, c.s * width), want,
                   "indexer_scores s=" + std::to_string(c.s) + " IH=" + std::to_string(c.IH) + " start=" +
                       std::to_string(c.start) + " ratio=" + std::to_string(c.ratio));
  }
  DeviceBuffer d = alloc(64);
  EXPECT_FALSE(lib->indexerScores(d.ptr(), d.ptr(), d.ptr(), d.ptr(), 4, 1, 1, 3, 0, 1, 1.0f).ok()); // n < width
}

TEST_F(CudaKernels, VisibilityAndCandidatesAreExact) {
  uint32_t seed = 1400;
  for (auto [s, start, ratio] : {std::tuple<int64_t, int64_t, int64_t>{12, 0, 1}, {12, 0, 2}, {13, 0, 4}, {1, 12, 2},
                                 {1, 63, 1}}) {
    const int64_t width = KernelLibrary::scoresWidth(s, start, ratio);
    std::vector<float> sc = randomBf16(s * width, 5.0f, seed++);
    DeviceBuffer dsc = upBf16(sc), dv = alloc(std::max<int64_t>(1, s * width) * 2);
    ASSERT_TRUE(lib->compressVisibility(dsc.ptr(), dv.ptr(), s, width, start, ratio).ok());
    Tensor vis = expectOk(kernels::compressVisibility(bf16Tensor({s, width}, sc), start, ratio));
    expectBitExact(downBf16(dv, s * width), vis, "compress_visibility start " + std::to_string(start));
    std::mt19937 rng(seed++);
    std::vector<uint8_t> mask(s * width);
    std::vector<int64_t> mask64(s * width);
    for (size_t i = 0; i < mask.size(); ++i)
      mask64[i] = mask[i] = static_cast<uint8_t>(rng() & 1u);
    DeviceBuffer dm = upRaw(mask), da = alloc(std::max<int64_t>(1, s * width) * 2);
    ASSERT_TRUE(lib->applyCandidates(dv.ptr(), dm.ptr(), da.ptr(), s * width).ok());
    Tensor want = expectOk(kernels::applyCandidates(vis, Tensor::fromInts(ElementType::I1, {s, width}, mask64)));
    expectBitExact(downBf16(da, s * width), want, "apply_candidates");
  }
  DeviceBuffer d = alloc(64);
  EXPECT_FALSE(lib->compressVisibility(d.ptr(), d.ptr(), 2, 1, 0, 1).ok()); // width 1 != 2
  EXPECT_FALSE(lib->compressVisibility(d.ptr(), d.ptr(), 2, 7, 5, 1).ok()); // two tokens at start 5
}

namespace {
/// The host half of both top-k ops: the reference's top-k set of each row of values [rows, n].
std::vector<int64_t> hostTopk(const std::vector<float> &values, int64_t rows, int64_t n, int64_t k) {
  std::vector<int64_t> picks;
  for (int64_t r = 0; r < rows; ++r) {
    auto set = numerics::torchCpuTopkSet(values.data() + r * n, n, k);
    EXPECT_TRUE(set.ok()) << set.error();
    if (!set.ok())
      return {};
    picks.insert(picks.end(), set->begin(), set->end());
  }
  return picks;
}
} // namespace

TEST_F(CudaKernels, SelectCandidateBlocksThroughTheHostTopkIsExact) {
  // Scores full of ties and -inf (the cases where only torch's order decides), NaN, compress_len 0, partial blocks.
  uint32_t seed = 1500;
  for (auto [s, start, ratio, bs, topk] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{12, 0, 1, 2, 3}, {12, 0, 2, 2, 3}, {1, 12, 1, 2, 3},
        {1, 40, 1, 3, 4}, {13, 0, 4, 1, 2}, {64, 0, 1, 4, 5}}) {
    const int64_t width = KernelLibrary::scoresWidth(s, start, ratio);
    const int64_t nBlocks = (width + bs - 1) / bs, k = std::min(topk, nBlocks);
    std::vector<float> sc = tiedScores(s * width, seed++, 3, 0.3);
    if (s * width > 5)
      sc[5] = std::numeric_limits<float>::quiet_NaN();
    Tensor scores = expectOk(kernels::compressVisibility(bf16Tensor({s, width}, sc), start, ratio));
    DeviceBuffer dsc = upBf16(scores.floatVector()), dbs = alloc(std::max<int64_t>(1, s * nBlocks) * 4);
    ASSERT_TRUE(lib->candidateBlockScores(dsc.ptr(), dbs.ptr(), s, width, bs, start, ratio).ok());
    std::vector<int64_t> picks = hostTopk(downRaw<float>(dbs, s * nBlocks), s, nBlocks, k);
    DeviceBuffer dp = upRaw(picks.empty() ? std::vector<int64_t>{0} : picks),
                 dm = alloc(std::max<int64_t>(1, s * width));
    ASSERT_TRUE(lib->candidateMask(dbs.ptr(), dp.ptr(), dm.ptr(), s, width, bs, k).ok());
    std::vector<uint8_t> got = downRaw<uint8_t>(dm, s * width);
    Tensor want = expectOk(kernels::selectCandidateBlocks(scores, start, ratio, topk, bs));
    for (int64_t i = 0; i < s * width; ++i)
      ASSERT_EQ(static_cast<int64_t>(got[i]), want.ints()[i])
          << "select_candidate_blocks s=" << s << " start=" << start << " element " << i;
  }
}

TEST_F(CudaKernels, IndexerTopkThroughTheHostTopkIsExact) {
  uint32_t seed = 1600;
  for (auto [s, start, ratio, topk, W] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{12, 0, 1, 6, 8}, {12, 0, 2, 6, 8}, {1, 12, 1, 6, 8},
        {1, 13, 2, 6, 8}, {1, 3, 4, 6, 8}, {64, 0, 1, 40, 128}, {1, 4000, 1, 40, 128}}) {
    const int64_t width = KernelLibrary::scoresWidth(s, start, ratio), k = std::min(topk, width);
    std::vector<float> sc = tiedScores(s * width, seed++, 4, 0.2);
    Tensor scores = expectOk(kernels::compressVisibility(bf16Tensor({s, width}, sc), start, ratio));
    DeviceBuffer dsc = upBf16(scores.floatVector()), dv = alloc(std::max<int64_t>(1, s * width) * 4);
    ASSERT_TRUE(lib->extfBf16F32(dsc.ptr(), dv.ptr(), s * width).ok());
    std::vector<int64_t> picks = hostTopk(downRaw<float>(dv, s * width), s, width, k);
    DeviceBuffer dp = upRaw(picks.empty() ? std::vector<int64_t>{0} : picks),
                 dout = alloc(std::max<int64_t>(1, s * k) * 4);
    ASSERT_TRUE(lib->topkMap(dp.ptr(), dout.ptr(), s, k, start, ratio, W).ok());
    std::vector<int32_t> got = downRaw<int32_t>(dout, s * k);
    Tensor want = expectOk(kernels::indexerTopk(scores, start, ratio, topk, W));
    for (int64_t i = 0; i < s * k; ++i)
      ASSERT_EQ(static_cast<int64_t>(got[i]), want.ints()[i])
          << "indexer_topk s=" << s << " start=" << start << " element " << i;
  }
}

TEST_F(CudaKernels, ConcatIsExact) {
  std::vector<float> a = randomBf16(8 * 32, 1.0f, 1700), b = randomBf16(6 * 32, 1.0f, 1701);
  DeviceBuffer da = upBf16(a), db = upBf16(b), dout = alloc(14 * 32 * 2);
  ASSERT_TRUE(lib->concatRowsBf16(da.ptr(), db.ptr(), dout.ptr(), 8 * 32, 6 * 32).ok());
  std::vector<float> got = downBf16(dout, 14 * 32);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(sameBits(got[i], i < a.size() ? a[i] : b[i - a.size()])) << i;
  const int64_t rows = 12, wa = 8, wb = 6;
  std::vector<int32_t> ia(rows * wa), ib(rows * wb);
  for (size_t i = 0; i < ia.size(); ++i)
    ia[i] = static_cast<int32_t>(i);
  for (size_t i = 0; i < ib.size(); ++i)
    ib[i] = -static_cast<int32_t>(i) - 1;
  DeviceBuffer dia = upRaw(ia), dib = upRaw(ib), dio = alloc(rows * (wa + wb) * 4);
  ASSERT_TRUE(lib->concatColsI32(dia.ptr(), dib.ptr(), dio.ptr(), rows, wa, wb).ok());
  std::vector<int32_t> igot = downRaw<int32_t>(dio, rows * (wa + wb));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < wa + wb; ++c)
      ASSERT_EQ(igot[r * (wa + wb) + c], c < wa ? ia[r * wa + c] : ib[r * wb + c - wa]) << r << "," << c;
}
