//===- Rope.cpp - the reference's RoPE frequency table (MLIR-free) -----------------===//
//
// attention-semantics.md section 2. Floating-point contraction is disabled for the core library (CMakeLists.txt:
// -ffp-contract=off) so that every f32 operation below rounds once, as the reference's does.
//
//===----------------------------------------------------------------------------------------------------------===//

#include "dsa/Core/Rope.h"

#include <algorithm>
#include <cmath>

namespace dsa {

std::vector<float> ropeFrequencies(const RopeParams &params) {
  const int64_t rd = params.ropeDim;
  if (rd <= 0 || rd % 2 != 0 || !(params.theta > 0.0))
    return {};
  const int64_t half = rd / 2;
  const float base = static_cast<float>(params.theta);
  std::vector<float> f(static_cast<size_t>(half));
  for (int64_t k = 0; k < half; ++k) {
    // The exponent 2k/rd is an f32 division; base^e is rounded to f32 (computed in f64 and rounded once), then the
    // reciprocal is an f32 division.
    float e = static_cast<float>(2 * k) / static_cast<float>(rd);
    float p = static_cast<float>(std::pow(static_cast<double>(base), static_cast<double>(e)));
    f[static_cast<size_t>(k)] = 1.0f / p;
  }
  if (params.yarn && params.yarn->originalSeqLen > 0) {
    const YarnParams &y = *params.yarn;
    const double pi = 3.14159265358979323846;
    const double logBase = std::log(params.theta);
    auto cdim = [&](double rot) {
      return static_cast<double>(rd) * std::log(static_cast<double>(y.originalSeqLen) / (rot * 2.0 * pi)) /
             (2.0 * logBase);
    };
    int64_t low = std::max<int64_t>(static_cast<int64_t>(std::floor(cdim(y.betaFast))), 0);
    int64_t high = std::min<int64_t>(static_cast<int64_t>(std::ceil(cdim(y.betaSlow))), rd - 1);
    // linear_ramp_factor: (k - low) / (high - low) in f32, with high - low replaced by 0.001 when they are equal.
    float span = high == low ? static_cast<float>(static_cast<double>(high) + 0.001 - static_cast<double>(low))
                             : static_cast<float>(high - low);
    span = std::max(span, 0.001f);
    const float factor = static_cast<float>(y.factor);
    for (int64_t k = 0; k < half; ++k) {
      float ramp = (static_cast<float>(k) - static_cast<float>(low)) / span;
      ramp = std::min(std::max(ramp, 0.0f), 1.0f);
      float smooth = 1.0f - ramp;
      float fk = f[static_cast<size_t>(k)];
      f[static_cast<size_t>(k)] = fk / factor * (1.0f - smooth) + fk * smooth;
    }
  }
  return f;
}

} // namespace dsa
