//===- RandomLayer.h - seeded random inputs and window weights for the CPU backend tests (header-only) -----===//
//
// The one generator of the differential tests (and bench/DsaBench.cpp): they compare the compiled code with the
// reference interpreter on the same seeded random inputs, so any values work; nothing here computes an expected
// value. splitmix64 (fast enough for the 127M weights of a V4.1-Flash layer), uniform in [-1, 1).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_TEST_BACKEND_CPU_RANDOMLAYER_H
#define DSA_TEST_BACKEND_CPU_RANDOMLAYER_H

#include "dsa/Core/Tensor.h"

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace dsa::test {

/// A deterministic uniform generator (splitmix64).
class Random {
public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1).
  float symmetric() { return static_cast<float>(static_cast<double>(next() >> 40) / 8388608.0 - 1.0); }

private:
  uint64_t state_;
};

/// A bf16 (or f32) tensor of `offset + scale * U[-1, 1)` values.
inline dsa::Tensor randomTensor(Random &rng, dsa::ElementType type, std::vector<int64_t> shape, float scale,
                                   float offset = 0.0f) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = offset + scale * rng.symmetric();
  return dsa::Tensor::fromFloats(type, std::move(shape), std::move(v));
}

/// sqrt(3 / k): the scale that gives a k-term dot product of unit-variance inputs about unit variance.
inline float fanIn(int64_t k) { return static_cast<float>(std::sqrt(3.0 / static_cast<double>(k))); }

/// The sizes the window part of a layer's weights depends on (attention-semantics.md section 1).
struct WindowWeightSizes {
  int64_t dim, nHeads, headDim, qLora, oLora, oGroups;
};

/// A layer's weights in dsa.attention's `weights(...)` order, drawn from `rng`: attn_sink f32 [H], wq_a
/// [q_lora, dim], q_norm [q_lora] (around 1), wq_b [H*hd, q_lora], wkv [hd, dim], kv_norm [hd] (around 1),
/// wo_a [G*R, H*hd/G], wo_b [dim, G*R] (bf16).
inline std::vector<dsa::Tensor> randomWindowWeights(Random &rng, const WindowWeightSizes &s) {
  using dsa::ElementType;
  const int64_t groupWidth = s.nHeads * s.headDim / s.oGroups;
  std::vector<dsa::Tensor> w;
  w.push_back(randomTensor(rng, ElementType::F32, {s.nHeads}, 0.5f));
  w.push_back(randomTensor(rng, ElementType::BF16, {s.qLora, s.dim}, fanIn(s.dim)));
  w.push_back(randomTensor(rng, ElementType::BF16, {s.qLora}, 0.1f, 1.0f));
  w.push_back(randomTensor(rng, ElementType::BF16, {s.nHeads * s.headDim, s.qLora}, fanIn(s.qLora)));
  w.push_back(randomTensor(rng, ElementType::BF16, {s.headDim, s.dim}, fanIn(s.dim)));
  w.push_back(randomTensor(rng, ElementType::BF16, {s.headDim}, 0.1f, 1.0f));
  w.push_back(randomTensor(rng, ElementType::BF16, {s.oGroups * s.oLora, groupWidth}, fanIn(groupWidth)));
  w.push_back(randomTensor(rng, ElementType::BF16, {s.dim, s.oGroups * s.oLora}, fanIn(s.oGroups * s.oLora)));
  return w;
}

} // namespace dsa::test

#endif // DSA_TEST_BACKEND_CPU_RANDOMLAYER_H
