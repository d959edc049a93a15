//===- GpuTestSupport.h - shared pieces of the GPU step library tests (MLIR-free) ----------------------------===//
//
// - FakeDriver: the test double libcuda (FakeCudaDriver.c) and its inspection hooks;
// - the window-only layer of test/Conversion/DSAToGPU/Inputs/window-layer.mlir (the tiny golden's L0 geometry):
//   seeded weights in its argument order and one step computed by the reference kernels
//   (kernels/include/dsa/Kernels/Kernels.h, as the decomposition chains them: attention-semantics.md sections 2-4, 10,
//   11), the expected values of the device tests;
// - the section 12 tolerance check and the device requirement (DSA_REQUIRE_CUDA_DEVICE=1: a skip is a failure).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_TEST_BACKEND_GPU_GPUTESTSUPPORT_H
#define DSA_TEST_BACKEND_GPU_GPUTESTSUPPORT_H

#include "dsa/Kernels/Kernels.h"
#include "dsa/Numerics/BF16.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace dsa::gputest {

using dsa::ElementType;
using dsa::Tensor;

inline bool deviceRequired() {
  const char *v = std::getenv("DSA_REQUIRE_CUDA_DEVICE");
  return v && std::string(v) == "1";
}

inline bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

/// The test double driver (DSA_FAKE_CUDA_DRIVER, a path given by CMake) and its hooks.
struct FakeDriver {
  static const char *path() { return DSA_FAKE_CUDA_DRIVER; }
  static void *handle() {
    static void *h = dlopen(path(), RTLD_NOW | RTLD_LOCAL);
    return h;
  }
  template <typename F> static F fn(const char *name) {
    void *p = handle() ? dlsym(handle(), name) : nullptr;
    if (!p)
      ADD_FAILURE() << "fake driver " << path() << " has no " << name;
    return reinterpret_cast<F>(p);
  }
  static void reset() { fn<void (*)()>("fakeCudaReset")(); }
  static long liveAllocations() { return fn<long (*)()>("fakeCudaLiveAllocations")(); }
  static long liveStreams() { return fn<long (*)()>("fakeCudaLiveStreams")(); }
  static long loadedModules() { return fn<long (*)()>("fakeCudaLoadedModules")(); }
  static long launches() { return fn<long (*)()>("fakeCudaLaunchCount")(); }
  static std::string launchName(long i) {
    const char *n = fn<const char *(*)(long)>("fakeCudaLaunchName")(i);
    return n ? n : "";
  }
  static long downloads() { return fn<long (*)()>("fakeCudaDtoHCount")(); }
  static void failLaunchAt(long n) { fn<void (*)(long)>("fakeCudaFailLaunchAt")(n); }
  static void failModuleLoad(int f) { fn<void (*)(int)>("fakeCudaFailModuleLoad")(f); }
  static void setComputeCapability(int major, int minor) {
    fn<void (*)(int, int)>("fakeCudaSetComputeCapability")(major, minor);
  }
};

/// Deterministic bf16-exact values, uniform in [-scale, scale].
inline std::vector<float> randomBf16(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = numerics::roundBf16(u(rng));
  return v;
}

inline Tensor bf16(std::vector<int64_t> shape, const std::vector<float> &v) {
  return Tensor::fromFloats(ElementType::BF16, std::move(shape), v);
}

/// window-layer.mlir's @layer0: dim 64, 4 heads of 32, rope 8 (theta 1e4), q_lora 16, 2 groups of rank 16,
/// window 8, eps 9.99999968e-21. Arguments: x [s, 64], start_pos, ring [8, 32], then the weights below.
struct WindowLayer {
  static constexpr int64_t dim = 64, H = 4, hd = 32, rd = 8, qLora = 16, G = 2, R = 16, W = 8;
  static constexpr float eps = 9.99999968e-21f;
  static constexpr const char *function = "layer0";
  /// sink [4] f32, wq_a [16, 64], q_norm [16], wq_b [128, 16], wkv [32, 64], kv_norm [32], wo_a [32, 64],
  /// wo_b [64, 32] (bf16): arguments #3 .. #10.
  std::vector<Tensor> weights;

  explicit WindowLayer(uint32_t seed) {
    weights.push_back(Tensor::fromFloats(ElementType::F32, {H}, {0.25f, -0.5f, 1.0f, 0.0f}));
    weights.push_back(bf16({qLora, dim}, randomBf16(qLora * dim, 0.2f, seed + 0)));
    weights.push_back(bf16({qLora}, randomBf16(qLora, 1.0f, seed + 1)));
    weights.push_back(bf16({H * hd, qLora}, randomBf16(H * hd * qLora, 0.3f, seed + 2)));
    weights.push_back(bf16({hd, dim}, randomBf16(hd * dim, 0.2f, seed + 3)));
    weights.push_back(bf16({hd}, randomBf16(hd, 1.0f, seed + 4)));
    weights.push_back(bf16({G * R, H * hd / G}, randomBf16(G * R * H * hd / G, 0.1f, seed + 5)));
    weights.push_back(bf16({dim, G * R}, randomBf16(dim * G * R, 0.2f, seed + 6)));
  }

  /// One step of the layer on the reference kernels: {out [s, 64], new ring [8, 32]}.
  Result<std::vector<Tensor>> reference(const Tensor &x, int64_t start, const Tensor &ring) const {
    dsa::RopeParams rope;
    rope.ropeDim = rd;
    rope.theta = 1e4;
    const int64_t s = x.dim(0);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    auto pos = kernels::positions(start, s, 1);
    if (!pos)
      return makeError(pos.error());
    auto qa = kernels::linear(x, weights[1]);
    if (!qa)
      return makeError(qa.error());
    auto qr = kernels::rmsNorm(*qa, weights[2], eps);
    auto qflat = kernels::linear(*qr, weights[3]);
    Tensor qh = Tensor::fromFloats(ElementType::BF16, {s, H, hd}, qflat->floatVector());
    auto q = kernels::applyRope(qh, *pos, rope, false);
    auto kva = kernels::linear(x, weights[4]);
    auto kvn = kernels::rmsNorm(*kva, weights[5], eps);
    auto kvr = kernels::applyRope(*kvn, *pos, rope, false);
    auto kv = kernels::actQuantFp8(*kvr, 32);
    auto newRing = kernels::ringUpdate(ring, *kv, start);
    if (!newRing)
      return makeError(newRing.error());
    auto rows = kernels::windowKv(*kv, *newRing, start);
    auto idx = kernels::windowIndices(start, s, W);
    if (!rows || !idx)
      return makeError(!rows ? rows.error() : idx.error());
    auto o = kernels::sparseAttn(*q, *rows, *idx, weights[0], scale);
    if (!o)
      return makeError(o.error());
    auto orot = kernels::applyRope(*o, *pos, rope, true);
    auto og = kernels::groupedOutput(*orot, weights[6], G);
    auto out = kernels::linear(*og, weights[7]);
    if (!out)
      return makeError(out.error());
    return std::vector<Tensor>{out.take(), newRing.take()};
  }
};

/// attention-semantics.md section 12: |got - want| <= 2^-6 |want| + 2^-8 max|want|. Returns the number outside.
inline int64_t expectWithinTolerance(const Tensor &got, const Tensor &want, const std::string &what) {
  EXPECT_EQ(got.shape(), want.shape()) << what;
  if (got.shape() != want.shape())
    return want.numElements();
  float maxAbs = 0.0f;
  for (int64_t i = 0; i < want.numElements(); ++i)
    maxAbs = std::max(maxAbs, std::fabs(want.floats()[i]));
  int64_t bad = 0, exact = 0;
  for (int64_t i = 0; i < want.numElements(); ++i) {
    const float g = got.floats()[i], w = want.floats()[i];
    exact += std::memcmp(&g, &w, 4) == 0;
    const float tol = std::ldexp(std::fabs(w), -6) + std::ldexp(maxAbs, -8);
    if (!(std::fabs(g - w) <= tol) && bad++ < 10)
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", the reference gives " << w << " (tolerance "
                    << tol << ")";
  }
  EXPECT_EQ(bad, 0) << what;
  std::cout << "[ info ] " << what << ": " << exact << " of " << want.numElements() << " elements bit-identical\n";
  return bad;
}

} // namespace dsa::gputest

#endif
