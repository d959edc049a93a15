//===- Compressor.cpp - compress_pool, fp4 round trips, cache_write ----------------------------------===//
//
// attention-semantics.md sections 2, 5, 6 step 1 and 8 step 3. See kernels/include/dsa/Kernels/CompressKernels.h.
//
//===----------------------------------------------------------------------------------------------------------===//

#include "CompressKernelsSupport.h"

#include "dsa/Kernels/CompressKernels.h"
#include "dsa/Numerics/Quant.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace dsa::kernels {

using compress_detail::checkStep;
using compress_detail::checkTypeRank;
using compress_detail::opError;

namespace {

/// Pools r member rows (kv rows kvRows[j], score rows scoreRows[j], j < r, each hd wide) into out[hd]:
/// per dimension d, sum_j kv[j,d] * softmax_j(score[j,d]), all f32 (section 5).
void poolGroup(const float *kvRows, const float *scoreRows, int64_t r, int64_t hd, float *out) {
  for (int64_t d = 0; d < hd; ++d) {
    float m = scoreRows[d];
    for (int64_t j = 1; j < r; ++j)
      m = std::fmax(m, scoreRows[j * hd + d]);
    float den = 0.0f;
    for (int64_t j = 0; j < r; ++j)
      den += std::exp(scoreRows[j * hd + d] - m);
    float acc = 0.0f;
    for (int64_t j = 0; j < r; ++j)
      acc += kvRows[j * hd + d] * (std::exp(scoreRows[j * hd + d] - m) / den);
    out[d] = acc;
  }
}

using RowQuantiser = Status (*)(float *, int64_t, int64_t);

Result<Tensor> fp4Quant(const char *op, const Tensor &x, int64_t blockSize, RowQuantiser quantise) {
  if (!x.isFloat() || x.rank() < 1)
    return opError(op, "x must be a bf16 or f32 tensor of rank >= 1, got " + x.typeString());
  if (blockSize < 1)
    return opError(op, "block_size must be >= 1, got " + std::to_string(blockSize));
  int64_t n = x.dim(x.rank() - 1);
  if (n % blockSize != 0)
    return opError(op, "block_size " + std::to_string(blockSize) + " does not divide the last dim of x (" +
                           x.typeString() + ")");
  // The round trip quantises the values as given (bf16 in the model) and leaves bf16-exact values.
  Tensor out(ElementType::BF16, x.shape());
  std::copy(x.floatVector().begin(), x.floatVector().end(), out.floats());
  if (n > 0) {
    int64_t rows = x.numElements() / n;
    for (int64_t i = 0; i < rows; ++i) {
      Status st = quantise(out.floats() + i * n, n, blockSize);
      if (!st.ok())
        return opError(op, "row " + std::to_string(i) + " of x: " + st.error());
    }
  }
  return out;
}

} // namespace

Result<CompressPoolResult> compressPool(const Tensor &kv, const Tensor &score, const Tensor &kvState,
                                        const Tensor &scoreState, int64_t startPos, int64_t ratio) {
  const char *op = "compress_pool";
  if (ratio < 2)
    return opError(op, "ratio must be >= 2 (ratio 1 has no pooling state), got " + std::to_string(ratio));
  for (auto [t, name] : {std::pair<const Tensor *, const char *>{&kv, "kv"}, {&score, "score"},
                         {&kvState, "kv_state"}, {&scoreState, "score_state"}}) {
    std::string msg = checkTypeRank(*t, name, ElementType::F32, 2);
    if (!msg.empty())
      return opError(op, msg);
  }
  if (score.shape() != kv.shape())
    return opError(op, "score must have kv's shape " + kv.typeString() + ", got " + score.typeString());
  const int64_t s = kv.dim(0), hd = kv.dim(1);
  if (kvState.dim(0) != ratio || kvState.dim(1) != hd)
    return opError(op, "kv_state must be [ratio, hd] = [" + std::to_string(ratio) + ", " + std::to_string(hd) +
                           "], got " + kvState.typeString());
  if (scoreState.shape() != kvState.shape())
    return opError(op, "score_state must have kv_state's shape " + kvState.typeString() + ", got " +
                           scoreState.typeString());
  std::string msg = checkStep(s, startPos);
  if (!msg.empty())
    return opError(op, msg);
  if (!checkedAdd(startPos, s - 1)) // the step's last position; a decode step at INT64_MAX is valid
    return opError(op, "the step's last position start_pos + s - 1 = " + std::to_string(startPos) + " + " +
                           std::to_string(s - 1) + " overflows int64");

  CompressPoolResult result{Tensor(), kvState, scoreState};
  float *kvSt = result.kvState.floats();
  float *scSt = result.scoreState.floats();
  if (startPos == 0) {
    const int64_t rem = s % ratio, cut = s - rem, groups = cut / ratio;
    result.pooled = Tensor(ElementType::F32, {groups, hd});
    for (int64_t g = 0; g < groups; ++g)
      poolGroup(kv.floats() + g * ratio * hd, score.floats() + g * ratio * hd, ratio, hd,
                result.pooled.floats() + g * hd);
    for (int64_t j = 0; j < rem; ++j)
      for (int64_t d = 0; d < hd; ++d) {
        kvSt[j * hd + d] = kv.floats()[(cut + j) * hd + d];
        scSt[j * hd + d] = score.floats()[(cut + j) * hd + d];
      }
    return result;
  }
  // Decode, and a chunk at start_pos > 0 token by token (exactly its decode steps): token t at p = start_pos + t
  // enters state slot p % ratio; when p closes a group (p % ratio == ratio - 1) the state's ratio rows pool into the
  // next output row.
  // The positions p in [start_pos, last] with p % ratio == ratio - 1, without computing last + 1 (INT64_MAX).
  const int64_t last = startPos + (s - 1);
  const int64_t groups = last / ratio + (last % ratio == ratio - 1 ? 1 : 0) - startPos / ratio;
  result.pooled = Tensor(ElementType::F32, {groups, hd});
  int64_t done = 0;
  for (int64_t t = 0; t < s; ++t) {
    const int64_t p = startPos + t, slot = p % ratio;
    for (int64_t d = 0; d < hd; ++d) {
      kvSt[slot * hd + d] = kv.floats()[t * hd + d];
      scSt[slot * hd + d] = score.floats()[t * hd + d];
    }
    if (slot == ratio - 1) // (p + 1) % ratio == 0, no wrap at INT64_MAX
      poolGroup(kvSt, scSt, ratio, hd, result.pooled.floats() + done++ * hd);
  }
  return result;
}

Result<Tensor> fp4QuantE8M0(const Tensor &x, int64_t blockSize) {
  return fp4Quant("fp4_quant_e8m0", x, blockSize, &numerics::fp4QuantE8M0);
}

Result<Tensor> fp4QuantE4M3(const Tensor &x, int64_t blockSize) {
  return fp4Quant("fp4_quant_e4m3", x, blockSize, &numerics::fp4QuantE4M3);
}

Result<Tensor> cacheWrite(const Tensor &cache, const Tensor &rows, int64_t startPos, int64_t ratio) {
  const char *op = "cache_write";
  if (ratio < 1)
    return opError(op, "ratio must be >= 1, got " + std::to_string(ratio));
  if (startPos < 0)
    return opError(op, "start_pos must be >= 0, got " + std::to_string(startPos));
  if (!cache.isFloat() || cache.rank() != 2)
    return opError(op, "cache must be a rank-2 bf16 or f32 tensor, got " + cache.typeString());
  if (rows.elementType() != cache.elementType() || rows.rank() != 2 || rows.dim(1) != cache.dim(1))
    return opError(op, "rows must be [g, " + std::to_string(cache.dim(1)) + "] of the cache's element type " +
                           elementTypeName(cache.elementType()) + ", got " + rows.typeString());
  const int64_t first = startPos / ratio, g = rows.dim(0), w = cache.dim(1);
  if (g > cache.dim(0) - first) // first + g > C without the add (first near INT64_MAX at ratio 1)
    return opError(op, "rows " + std::to_string(first) + ".." +
                           (g == 0 ? std::string("(no row)")
                            : first <= std::numeric_limits<int64_t>::max() - (g - 1) ? std::to_string(first + (g - 1))
                                                                                       : std::string("(past int64)")) +
                           " (start_pos " + std::to_string(startPos) + " // ratio " + std::to_string(ratio) + ", " +
                           std::to_string(g) + " rows) overflow the cache capacity of " +
                           std::to_string(cache.dim(0)) + " rows");
  Tensor out = cache;
  for (int64_t i = 0; i < g * w; ++i)
    out.floats()[first * w + i] = rows.floats()[i];
  return out;
}

} // namespace dsa::kernels
