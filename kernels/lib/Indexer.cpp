//===- Indexer.cpp - indexer scores, visibility, candidate blocks, top-k -------------------------------===//
//
// attention-semantics.md sections 6 (steps 3-7), 7 and 9. See kernels/include/dsa/Kernels/CompressKernels.h.
//
//===----------------------------------------------------------------------------------------------------------===//

#include "CompressKernelsSupport.h"

#include "dsa/Kernels/CompressKernels.h"
#include "dsa/Numerics/BF16.h"
#include "dsa/Numerics/TopK.h"
#include "dsa/Support/CheckedArithmetic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace dsa::kernels {

using compress_detail::checkScores;
using compress_detail::checkStep;
using compress_detail::checkTypeRank;
using compress_detail::compressLen;
using compress_detail::opError;
using compress_detail::rankedWidth;
using compress_detail::windowRows;
using numerics::roundBf16;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();

/// The checks every scores-consuming kernel starts with.
std::string checkScoresStep(const Tensor &scores, int64_t startPos, int64_t ratio) {
  if (ratio < 1)
    return "ratio must be >= 1, got " + std::to_string(ratio);
  if (startPos < 0)
    return "start_pos must be >= 0, got " + std::to_string(startPos);
  std::string msg = compress_detail::checkFloatRank(scores, "scores", 2);
  if (!msg.empty())
    return msg;
  msg = checkStep(scores.dim(0), startPos);
  if (!msg.empty())
    return msg;
  return checkScores(scores, startPos, ratio);
}

/// The top-k index set of values[0..n) in the given tie order, ascending. Only the reference's order exists so far
/// (section 9).
Result<std::vector<int64_t>> topkSet(numerics::TopkTieOrder order, const float *values, int64_t n, int64_t k) {
  switch (order) {
  case numerics::TopkTieOrder::TorchCpu:
    return numerics::torchCpuTopkSet(values, n, k);
  }
  return makeError("unknown tie order " + std::to_string(static_cast<int>(order)));
}

} // namespace

Result<Tensor> indexerScores(const Tensor &iq, const Tensor &weights, const Tensor &keys, int64_t startPos,
                             int64_t ratio, float weightScale, const Tensor *entryKeys) {
  const char *op = "indexer_scores";
  if (ratio < 1)
    return opError(op, "ratio must be >= 1, got " + std::to_string(ratio));
  if (startPos < 0)
    return opError(op, "start_pos must be >= 0, got " + std::to_string(startPos));
  std::string msg = checkTypeRank(iq, "iq", ElementType::BF16, 3);
  if (msg.empty())
    msg = checkTypeRank(weights, "weights", ElementType::BF16, 2);
  if (msg.empty())
    msg = checkTypeRank(keys, "keys", ElementType::BF16, 2);
  if (msg.empty() && entryKeys)
    msg = checkTypeRank(*entryKeys, "entry_keys", ElementType::BF16, 2);
  if (!msg.empty())
    return opError(op, msg);
  const int64_t s = iq.dim(0), heads = iq.dim(1), ihd = iq.dim(2);
  if (weights.dim(0) != s || weights.dim(1) != heads)
    return opError(op, "weights must be [s, IH] = [" + std::to_string(s) + ", " + std::to_string(heads) +
                           "] to match iq " + iq.typeString() + ", got " + weights.typeString());
  if (keys.dim(1) != ihd)
    return opError(op, "keys must be [n, ihd] with ihd = " + std::to_string(ihd) + " (iq " + iq.typeString() +
                           "), got " + keys.typeString());
  if (entryKeys && entryKeys->dim(1) != ihd)
    return opError(op, "entry_keys must be [n, ihd] with ihd = " + std::to_string(ihd) + " (iq " + iq.typeString() +
                           "), got " + entryKeys->typeString());
  if (!std::isfinite(weightScale))
    return opError(op, "weight_scale must be finite, got " + std::to_string(weightScale));
  std::optional<int64_t> end = checkedAdd(startPos, s);
  if (!end)
    return opError(op, "start_pos + s = " + std::to_string(startPos) + " + " + std::to_string(s) + " overflows int64");
  const int64_t width = *end / ratio;
  if (keys.dim(0) < width)
    return opError(op, "keys must hold at least width = (start_pos + s) // ratio = " + std::to_string(width) +
                           " rows, got " + keys.typeString());
  // A row reading entry_keys reads its first width rows; none reads it in a prefill, at ratio 1, or in a one-token
  // step closing a group (the empty slot a prefill enters with is then fine).
  const bool readsEntry = entryKeys && startPos > 0 && ratio > 1 && (s > 1 || (startPos + 1) % ratio != 0);
  if (readsEntry && entryKeys->dim(0) < width)
    return opError(op, "entry_keys must hold at least width = (start_pos + s) // ratio = " + std::to_string(width) +
                           " rows (a row closing no group reads it), got " + entryKeys->typeString());

  Tensor out(ElementType::BF16, {s, width});
  std::vector<float> w(static_cast<size_t>(heads));
  for (int64_t t = 0; t < s; ++t) {
    for (int64_t h = 0; h < heads; ++h)
      w[h] = roundBf16(weights.floats()[t * heads + h] * weightScale);
    // A token closing no group at start_pos > 0 scores against the entry keys (the quirk, per token).
    const bool entry = entryKeys && startPos > 0 && (startPos + t + 1) % ratio != 0;
    const float *rowKeys = entry ? entryKeys->floats() : keys.floats();
    for (int64_t p = 0; p < width; ++p) {
      const float *k = rowKeys + p * ihd;
      float sum = 0.0f;
      for (int64_t h = 0; h < heads; ++h) {
        const float *q = iq.floats() + (t * heads + h) * ihd;
        float dot = 0.0f;
        for (int64_t d = 0; d < ihd; ++d)
          dot += q[d] * k[d];
        float relu = std::fmax(roundBf16(dot), 0.0f);
        sum += roundBf16(relu * w[h]);
      }
      out.floats()[t * width + p] = roundBf16(sum);
    }
  }
  return out;
}

Result<Tensor> compressVisibility(const Tensor &scores, int64_t startPos, int64_t ratio) {
  std::string msg = checkScoresStep(scores, startPos, ratio);
  if (!msg.empty())
    return opError("compress_visibility", msg);
  Tensor out = scores;
  const int64_t s = scores.dim(0), width = scores.dim(1);
  for (int64_t t = 0; t < s; ++t)
    for (int64_t p = compressLen(t, startPos, ratio); p < width; ++p)
      out.floats()[t * width + p] = kNegInf;
  return out;
}

Result<Tensor> selectCandidateBlocks(const Tensor &scores, int64_t startPos, int64_t ratio, int64_t topkBlocks,
                                     int64_t blockSize, numerics::TopkTieOrder tieOrder) {
  const char *op = "select_candidate_blocks";
  if (topkBlocks < 0)
    return opError(op, "topk_blocks must be >= 0, got " + std::to_string(topkBlocks));
  if (blockSize < 1)
    return opError(op, "block_size must be >= 1, got " + std::to_string(blockSize));
  std::string msg = checkScoresStep(scores, startPos, ratio);
  if (!msg.empty())
    return opError(op, msg);
  const int64_t s = scores.dim(0), width = scores.dim(1);
  Tensor mask(ElementType::I1, {s, width});
  std::vector<float> blockScore(static_cast<size_t>(ceilDivNonNegative(width, blockSize)));
  for (int64_t t = 0; t < s; ++t) {
    const float *row = scores.floats() + t * width;
    // The row's ranked width: the whole row in prefill, token t's decode width in a step at start_pos > 0.
    const int64_t n = rankedWidth(t, width, startPos, ratio);
    const int64_t nBlocks = ceilDivNonNegative(n, blockSize); // no n + blockSize - 1: blockSize may be huge
    const int64_t k = std::min(topkBlocks, nBlocks);
    for (int64_t b = 0; b < nBlocks; ++b) {
      float m = kNegInf; // also the value of the -inf padding past n
      const int64_t first = b * blockSize, end = first + std::min(blockSize, n - first); // b < nBlocks: no overflow
      for (int64_t p = first; p < end; ++p) {
        if (std::isnan(row[p])) { // max propagates NaN, as torch's amax does
          m = row[p];
          break;
        }
        m = std::max(m, row[p]);
      }
      blockScore[b] = m;
    }
    // Floor division: compress_len 0 gives block -1, which pins nothing.
    const int64_t len = compressLen(t, startPos, ratio);
    if (len > 0)
      blockScore[(len - 1) / blockSize] = kPosInf;
    Result<std::vector<int64_t>> picks = topkSet(tieOrder, blockScore.data(), nBlocks, k);
    if (!picks.ok())
      return opError(op, "top-k of the block scores of row " + std::to_string(t) + ": " + picks.error());
    for (int64_t b : *picks) {
      if (!(blockScore[b] > kNegInf))
        continue; // an unreachable block picked only to fill k
      const int64_t first = b * blockSize, end = first + std::min(blockSize, n - first);
      for (int64_t p = first; p < end; ++p)
        mask.ints()[t * width + p] = 1;
    }
  }
  return mask;
}

Result<Tensor> applyCandidates(const Tensor &scores, const Tensor &mask) {
  const char *op = "apply_candidates";
  std::string msg = compress_detail::checkFloatRank(scores, "scores", 2);
  if (msg.empty())
    msg = checkTypeRank(mask, "mask", ElementType::I1, 2);
  if (!msg.empty())
    return opError(op, msg);
  if (mask.shape() != scores.shape())
    return opError(op, "mask must have the shape of scores " + scores.typeString() + ", got " + mask.typeString());
  Tensor out = scores;
  for (int64_t i = 0; i < scores.numElements(); ++i)
    if (mask.ints()[i] == 0)
      out.floats()[i] = kNegInf;
  return out;
}

Result<Tensor> indexerTopk(const Tensor &scores, int64_t startPos, int64_t ratio, int64_t indexTopk,
                           int64_t windowSize, numerics::TopkTieOrder tieOrder) {
  const char *op = "indexer_topk";
  if (indexTopk < 0)
    return opError(op, "index_topk must be >= 0, got " + std::to_string(indexTopk));
  if (windowSize < 1)
    return opError(op, "window_size must be >= 1, got " + std::to_string(windowSize));
  std::string msg = checkScoresStep(scores, startPos, ratio);
  if (!msg.empty())
    return opError(op, msg);
  const int64_t s = scores.dim(0), width = scores.dim(1);
  const int64_t k = std::min(indexTopk, width);
  // The number of window rows attention reads before the compressed rows (section 6, inputs).
  const int64_t offset = windowRows(s, startPos, windowSize);
  Tensor out(ElementType::I32, {s, k});
  for (int64_t t = 0; t < s; ++t) {
    const int64_t len = compressLen(t, startPos, ratio);
    // Prefill ranks the whole row (the reference); a step at start_pos > 0 ranks token t's decode width with its
    // decode k, and pads the rest of the row's k entries with -1 (sparse_attn skips them: bit-neutral).
    const int64_t n = rankedWidth(t, width, startPos, ratio), kt = std::min(indexTopk, n);
    Result<std::vector<int64_t>> picks = topkSet(tieOrder, scores.floats() + t * width, n, kt);
    if (!picks.ok())
      return opError(op, "top-k of row " + std::to_string(t) + ": " + picks.error());
    if (static_cast<int64_t>(picks->size()) != kt)
      return opError(op, "internal error: the top-k set of row " + std::to_string(t) + " has " +
                             std::to_string(picks->size()) + " indices, expected " + std::to_string(kt));
    for (int64_t j = 0; j < k; ++j)
      out.ints()[t * k + j] = j < kt && (*picks)[j] < len ? (*picks)[j] + offset : -1;
  }
  return out;
}

} // namespace dsa::kernels
