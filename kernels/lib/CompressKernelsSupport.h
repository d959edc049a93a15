//===- CompressKernelsSupport.h - operand checks shared by the compressed-attention kernels (private) -----===//
//
// Not installed: used by Compressor.cpp and Indexer.cpp only. Every check returns an empty string on success and
// otherwise a message "<op>: <operand> ..." naming the primitive and the bad operand.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_LIB_INTERPRETER_KERNELS_COMPRESSKERNELSSUPPORT_H
#define DSA_LIB_INTERPRETER_KERNELS_COMPRESSKERNELSSUPPORT_H

#include "dsa/Core/Tensor.h"
#include "dsa/Support/CheckedArithmetic.h"
#include "dsa/Support/Result.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace dsa::kernels::compress_detail {

inline Error opError(const char *op, const std::string &message) {
  return makeError(std::string(op) + ": " + message);
}

/// "" when t has element type `type` and rank `rank`, else a message naming `operand`.
inline std::string checkTypeRank(const Tensor &t, const char *operand, ElementType type, int64_t rank) {
  if (t.elementType() != type || t.rank() != rank)
    return std::string(operand) + " must be a rank-" + std::to_string(rank) + " " + elementTypeName(type) +
           " tensor, got " + t.typeString();
  return "";
}

/// "" when t is a rank-`rank` bf16 or f32 tensor.
inline std::string checkFloatRank(const Tensor &t, const char *operand, int64_t rank) {
  if (!t.isFloat() || t.rank() != rank)
    return std::string(operand) + " must be a rank-" + std::to_string(rank) + " bf16 or f32 tensor, got " +
           t.typeString();
  return "";
}

/// The step checks of the regime-dependent kernels: s >= 1 tokens, start_pos >= 0, and one token when
/// start_pos > 0 (section 13 chunking is done by the caller).
inline std::string checkStep(int64_t s, int64_t startPos) {
  if (startPos < 0)
    return "start_pos must be >= 0, got " + std::to_string(startPos);
  if (s < 1)
    return "a step needs at least one token, got s = 0";
  return "";
}

/// compress_len of query t of a step of s tokens (section 6 step 5): (t + 1) // ratio in prefill, (start_pos + 1) //
/// ratio in decode, and in a chunk at start_pos > 0 token t's own decode value (start_pos + t + 1) // ratio
/// (docs/architecture.md "Steps the reference does not have"); one formula covers the three. The callers checked
/// that start_pos + s fits int64.
inline int64_t compressLen(int64_t t, int64_t startPos, int64_t ratio) { return (startPos + t + 1) / ratio; }

/// The width of the scores a query of the step ranks (candidate blocks, indexer top-k): the step's width in prefill
/// (the reference's top-k runs over the whole row), token t's own decode width compress_len in a step at
/// start_pos > 0 (decode: the width itself), so that a chunk picks, among ties, what its decode steps would.
inline int64_t rankedWidth(int64_t t, int64_t width, int64_t startPos, int64_t ratio) {
  return startPos == 0 ? width : std::min(width, compressLen(t, startPos, ratio));
}

/// The number of rows attention reads before the compressed ones (window_kv's rows): s in prefill, the ring's W in
/// decode, W + s in a chunk at start_pos > 0.
inline int64_t windowRows(int64_t s, int64_t startPos, int64_t windowSize) {
  return startPos == 0 ? s : s == 1 ? windowSize : windowSize + s;
}

/// "" when scores is a rank-2 float [s, (start_pos+s)//ratio] tensor.
inline std::string checkScores(const Tensor &scores, int64_t startPos, int64_t ratio) {
  std::string msg = checkFloatRank(scores, "scores", 2);
  if (!msg.empty())
    return msg;
  int64_t s = scores.dim(0);
  std::optional<int64_t> end = checkedAdd(startPos, s);
  if (!end)
    return "start_pos + s = " + std::to_string(startPos) + " + " + std::to_string(s) + " overflows int64";
  int64_t width = *end / ratio;
  if (scores.dim(1) != width)
    return "scores must have width (start_pos + s) // ratio = (" + std::to_string(startPos) + " + " +
           std::to_string(s) + ") // " + std::to_string(ratio) + " = " + std::to_string(width) + " columns, got " +
           scores.typeString();
  return "";
}

} // namespace dsa::kernels::compress_detail

#endif
