//===- Quant.cpp - the reference's block quantisers (round trips) ---------===//
//
// attention-semantics.md section 2: act_quant_fp8, fp4_quant_e8m0, fp4_quant_e4m3 (see Quant.h).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Numerics/Quant.h"

#include "dsa/Numerics/BF16.h"
#include "dsa/Numerics/E2M1.h"
#include "dsa/Numerics/E4M3.h"
#include "dsa/Numerics/E8M0.h"

#include <cmath>
#include <string>

namespace dsa::numerics {
namespace {

Status checkArgs(const char *op, const float *row, int64_t n, int64_t block) {
  if (block <= 0)
    return makeError(std::string(op) + ": block must be positive, got " + std::to_string(block));
  if (n < 0)
    return makeError(std::string(op) + ": n must be >= 0, got " + std::to_string(n));
  if (n % block != 0)
    return makeError(std::string(op) + ": n (" + std::to_string(n) + ") is not a multiple of block (" +
                     std::to_string(block) + ")");
  if (n > 0 && row == nullptr)
    return makeError(std::string(op) + ": row is null but n is " + std::to_string(n));
  return Status::success();
}

/// max(max|x|, floor) over one block; NaN if any element is NaN (torch's amax propagates NaN).
inline float blockAmax(const float *x, int64_t block, float floor) {
  float amax = 0.0f;
  bool nan = false;
  for (int64_t i = 0; i < block; ++i) {
    const float a = std::fabs(x[i]);
    nan |= (a != a);
    amax = a > amax ? a : amax;
  }
  if (nan)
    return std::nanf("");
  return amax > floor ? amax : floor;
}

/// clamp(v, -lim, lim) as torch.clamp does it: NaN stays NaN.
inline float clampSym(float v, float lim) {
  if (v > lim)
    return lim;
  if (v < -lim)
    return -lim;
  return v;
}

/// The shared shape of the three round trips: per block, `s = scaleOf(max(max|x|, amaxFloor) / limit)` and
/// `x = bf16(roundValue(clamp(x / s, -limit, limit)) * s)`.
template <typename ScaleFn, typename RoundFn>
Status roundTripBlocks(const char *op, float *row, int64_t n, int64_t block, float amaxFloor, float limit,
                       ScaleFn scaleOf, RoundFn roundValue) {
  if (Status st = checkArgs(op, row, n, block); !st.ok())
    return st;
  for (int64_t b = 0; b < n; b += block) {
    float *x = row + b;
    const float s = scaleOf(blockAmax(x, block, amaxFloor) / limit);
    for (int64_t i = 0; i < block; ++i)
      x[i] = roundBf16(roundValue(clampSym(x[i] / s, limit)) * s);
  }
  return Status::success();
}

} // namespace

Status actQuantFp8(float *row, int64_t n, int64_t block) {
  return roundTripBlocks("act_quant_fp8", row, n, block, 1e-4f, kE4M3Max, pow2Ceil, roundE4M3);
}

Status fp4QuantE8M0(float *row, int64_t n, int64_t block) {
  return roundTripBlocks("fp4_quant_e8m0", row, n, block, kE2M1Max * 0x1p-126f, kE2M1Max, pow2Ceil, roundE2M1);
}

Status fp4QuantE4M3(float *row, int64_t n, int64_t block) {
  return roundTripBlocks("fp4_quant_e4m3", row, n, block, kE2M1Max * 0x1p-9f, kE2M1Max, roundE4M3, roundE2M1);
}

} // namespace dsa::numerics
