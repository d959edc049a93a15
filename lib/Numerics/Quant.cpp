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

} // namespace

Status actQuantFp8(float *row, int64_t n, int64_t block) {
  if (Status st = checkArgs("act_quant_fp8", row, n, block); !st.ok())
    return st;
  for (int64_t b = 0; b < n; b += block) {
    float *x = row + b;
    const float s = pow2Ceil(blockAmax(x, block, 1e-4f) / kE4M3Max);
    for (int64_t i = 0; i < block; ++i)
      x[i] = roundBf16(roundE4M3(clampSym(x[i] / s, kE4M3Max)) * s);
  }
  return Status::success();
}

Status fp4QuantE8M0(float *row, int64_t n, int64_t block) {
  if (Status st = checkArgs("fp4_quant_e8m0", row, n, block); !st.ok())
    return st;
  const float floor = kE2M1Max * 0x1p-126f;
  for (int64_t b = 0; b < n; b += block) {
    float *x = row + b;
    const float s = pow2Ceil(blockAmax(x, block, floor) / kE2M1Max);
    for (int64_t i = 0; i < block; ++i)
      x[i] = roundBf16(roundE2M1(clampSym(x[i] / s, kE2M1Max)) * s);
  }
  return Status::success();
}

Status fp4QuantE4M3(float *row, int64_t n, int64_t block) {
  if (Status st = checkArgs("fp4_quant_e4m3", row, n, block); !st.ok())
    return st;
  const float floor = kE2M1Max * 0x1p-9f;
  for (int64_t b = 0; b < n; b += block) {
    float *x = row + b;
    const float s = roundE4M3(blockAmax(x, block, floor) / kE2M1Max);
    for (int64_t i = 0; i < block; ++i)
      x[i] = roundBf16(roundE2M1(clampSym(x[i] / s, kE2M1Max)) * s);
  }
  return Status::success();
}

} // namespace dsa::numerics
