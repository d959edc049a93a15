//===- DSAAttrs.cpp - dsa attributes -----------------------------------------===//
#include "dsa/Dialect/DSA/IR/DSAAttrs.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dsa;

#include "dsa/Dialect/DSA/IR/DSAEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dsa/Dialect/DSA/IR/DSAAttrs.cpp.inc"

void DSADialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dsa/Dialect/DSA/IR/DSAAttrs.cpp.inc"
      >();
}

// Every message below has an expected-error case in test/Dialect/invalid.mlir (the null-attribute guards are only
// reachable from C++, where an attribute built with get() is re-verified by the ops that carry it).

static LogicalResult checkF64(function_ref<InFlightDiagnostic()> emitError, FloatAttr attr, StringRef name) {
  if (!attr || !attr.getType().isF64())
    return emitError() << name << " must be an f64 float attribute";
  return success();
}

static LogicalResult checkFinitePositive(function_ref<InFlightDiagnostic()> emitError, FloatAttr attr, StringRef name) {
  double v = attr.getValueAsDouble();
  if (!std::isfinite(v) || !(v > 0.0))
    return emitError() << name << " must be finite and > 0, got " << v;
  return success();
}

LogicalResult YarnAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t originalSeqLen, FloatAttr factor,
                               FloatAttr betaFast, FloatAttr betaSlow) {
  if (failed(checkF64(emitError, factor, "factor")) || failed(checkF64(emitError, betaFast, "beta_fast")) ||
      failed(checkF64(emitError, betaSlow, "beta_slow")))
    return failure();
  // cdim(rot) takes ln(original_seq_len / (rot*2*pi)) (section 2): both must be positive.
  if (originalSeqLen <= 0)
    return emitError() << "original_seq_len must be positive, got " << originalSeqLen;
  if (failed(checkFinitePositive(emitError, factor, "factor")) ||
      failed(checkFinitePositive(emitError, betaFast, "beta_fast")) ||
      failed(checkFinitePositive(emitError, betaSlow, "beta_slow")))
    return failure();
  return success();
}

LogicalResult RopeAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t ropeDim, FloatAttr theta,
                               YarnAttr yarn) {
  // Pairs are adjacent elements (2k, 2k+1), so the rotated width is even.
  if (ropeDim <= 0 || ropeDim % 2 != 0)
    return emitError() << "rope_dim must be positive and even, got " << ropeDim;
  if (failed(checkF64(emitError, theta, "theta")))
    return failure();
  // f[k] = theta^(-2k/rope_dim) must decrease with k, and ln(theta) divides cdim.
  double t = theta.getValueAsDouble();
  if (!std::isfinite(t) || !(t > 1.0))
    return emitError() << "theta must be finite and > 1, got " << t;
  if (yarn && failed(YarnAttr::verify(emitError, yarn.getOriginalSeqLen(), yarn.getFactor(), yarn.getBetaFast(),
                                      yarn.getBetaSlow())))
    return failure();
  return success();
}

// A weight dimension that is the product of two positive sizes (n_heads * head_dim, ...) must be an int64 static
// size: without the check the product wraps, possibly to ShapedType::kDynamic, and shapes built from it are garbage.
static LogicalResult checkProduct(function_ref<InFlightDiagnostic()> emitError, int64_t a, int64_t b, StringRef what) {
  int64_t product = 0;
  if (llvm::MulOverflow(a, b, product) || product == ShapedType::kDynamic)
    return emitError() << what << " = " << a << " * " << b << " overflows int64";
  return success();
}

// The fp8 block of the window KV row (act_quant_fp8 over the whole row, section 4); section 1 requires the block
// sizes to divide the rows they quantise.
static constexpr int64_t kKvFp8Block = 32;

LogicalResult AttnConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t layerId, int64_t dim,
                                     int64_t nHeads, int64_t headDim, int64_t ropeHeadDim, int64_t qLoraRank,
                                     int64_t oGroups, int64_t oLoraRank, int64_t windowSize, int64_t compressRatio,
                                     FloatAttr normEps, RopeAttr rope, CompressConfigAttr compress) {
  auto positive = [&](int64_t v, StringRef name) -> LogicalResult {
    if (v <= 0)
      return emitError() << name << " must be positive, got " << v;
    return success();
  };
  if (layerId < 0)
    return emitError() << "layer_id must be >= 0, got " << layerId;
  if (failed(positive(dim, "dim")) || failed(positive(nHeads, "n_heads")) || failed(positive(headDim, "head_dim")) ||
      failed(positive(ropeHeadDim, "rope_head_dim")) || failed(positive(qLoraRank, "q_lora_rank")) ||
      failed(positive(oGroups, "o_groups")) || failed(positive(oLoraRank, "o_lora_rank")) ||
      failed(positive(windowSize, "window_size")))
    return failure();
  if (failed(checkProduct(emitError, nHeads, headDim, "n_heads * head_dim")) ||
      failed(checkProduct(emitError, oGroups, oLoraRank, "o_groups * o_lora_rank")))
    return failure();
  if (ropeHeadDim > headDim)
    return emitError() << "rope_head_dim (" << ropeHeadDim << ") must not exceed head_dim (" << headDim << ")";
  if (ropeHeadDim % 2 != 0)
    return emitError() << "rope_head_dim must be even, got " << ropeHeadDim;
  if (headDim % kKvFp8Block != 0)
    return emitError() << "head_dim (" << headDim << ") must be a multiple of " << kKvFp8Block
                       << ", the fp8 block of the window KV row (section 4)";
  if (nHeads % oGroups != 0)
    return emitError() << "n_heads (" << nHeads << ") must be divisible by o_groups (" << oGroups << ")";
  if (compressRatio < 0)
    return emitError() << "compress_ratio must be >= 0, got " << compressRatio;
  if (!normEps || !normEps.getType().isF32())
    return emitError() << "norm_eps must be an f32 attribute";
  double eps = normEps.getValueAsDouble();
  if (!std::isfinite(eps) || eps < 0.0)
    return emitError() << "norm_eps must be finite and >= 0, got " << eps;
  if (!rope)
    return emitError() << "rope must be a #dsa.rope attribute";
  if (rope.getRopeDim() != ropeHeadDim)
    return emitError() << "rope.rope_dim (" << rope.getRopeDim() << ") must equal rope_head_dim (" << ropeHeadDim
                       << ")";
  // Section 2: ratio-0 layers rotate with rope_theta and no YaRN; ratio > 0 layers with compress_rope_theta and YaRN.
  if (compressRatio == 0 && rope.getYarn())
    return emitError() << "rope of a compress_ratio = 0 layer must not have yarn (section 2)";
  if (compressRatio > 0 && !rope.getYarn())
    return emitError() << "rope of a compress_ratio > 0 layer must have yarn (section 2)";
  if (compressRatio == 0 && compress)
    return emitError() << "compress must be absent on a compress_ratio = 0 layer";
  if (compressRatio > 0 && !compress)
    return emitError() << "a compress_ratio > 0 layer needs compress = #dsa.compress<...> (its role and indexer)";
  // A nested attribute is verified when parsed; re-check it for one built in C++ with CompressConfigAttr::get.
  if (compress && failed(CompressConfigAttr::verify(
                      [&] { return emitError() << "compress: "; }, compress.getIsKvSource(),
                      compress.getIsIndexSource(), compress.getIsCandidateSource(), compress.getUsesCandidates(),
                      compress.getIndexNHeads(), compress.getIndexHeadDim(), compress.getIndexTopk(),
                      compress.getCandidateTopkBlocks(), compress.getCandidateBlockSize(), compress.getMaxSeqLen(),
                      compress.getIndexKSource(), compress.getTieOrder())))
    return failure();
  return success();
}

// The fp4 e8m0 block of the index queries and keys (section 6 steps 1-2: fp4_quant_e8m0, block 32); section 1
// requires the block sizes to divide the rows they quantise.
static constexpr int64_t kIndexFp4Block = 32;

LogicalResult CompressConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError, BoolAttr isKvSource,
                                         BoolAttr isIndexSource, BoolAttr isCandidateSource, BoolAttr usesCandidates,
                                         int64_t indexNHeads, int64_t indexHeadDim, int64_t indexTopk,
                                         int64_t candidateTopkBlocks, int64_t candidateBlockSize, int64_t maxSeqLen,
                                         IndexKSourceAttr indexKSource, TieOrderAttr tieOrder) {
  if (!isKvSource || !isIndexSource || !isCandidateSource || !usesCandidates)
    return emitError() << "is_kv_source, is_index_source, is_candidate_source and uses_candidates must be bool "
                          "attributes";
  if (!indexKSource || !tieOrder)
    return emitError() << "index_k_source and tie_order must be #dsa.index_k_source and #dsa.tie_order attributes";
  const bool kv = isKvSource.getValue(), index = isIndexSource.getValue(), candSource = isCandidateSource.getValue(),
             usesCand = usesCandidates.getValue();
  // Section 1: the candidate source publishes the block mask its indexer selects; uses_candidates applies it in the
  // indexer of an index source after the candidate source.
  if (candSource && !index)
    return emitError() << "is_candidate_source requires is_index_source (the candidate blocks are selected from the "
                          "layer's indexer scores, section 7)";
  if (usesCand && !index)
    return emitError() << "uses_candidates requires is_index_source (only an index source applies the candidate "
                          "mask, section 6 step 6)";
  if (candSource && usesCand)
    return emitError() << "is_candidate_source and uses_candidates are exclusive (a layer uses the mask of a candidate "
                          "source BEFORE it)";
  auto checkSize = [&](int64_t v, StringRef name, bool required, StringRef why) -> LogicalResult {
    if (required && v <= 0)
      return emitError() << name << " must be positive for " << why << ", got " << v;
    if (v < 0)
      return emitError() << name << " must be >= 0, got " << v;
    return success();
  };
  const bool indexer = kv || index;
  const bool candidates = candSource || usesCand;
  if (failed(checkSize(indexNHeads, "index_n_heads", indexer, "a kv or index source")) ||
      failed(checkSize(indexHeadDim, "index_head_dim", indexer, "a kv or index source")) ||
      failed(checkSize(indexTopk, "index_topk", indexer, "a kv or index source")) ||
      failed(checkSize(candidateTopkBlocks, "candidate_topk_blocks", candidates,
                       "a candidate source or a layer that uses candidates")) ||
      failed(checkSize(candidateBlockSize, "candidate_block_size", candidates,
                       "a candidate source or a layer that uses candidates")))
    return failure();
  if (failed(checkProduct(emitError, indexNHeads, indexHeadDim, "index_n_heads * index_head_dim")))
    return failure();
  if (indexHeadDim % kIndexFp4Block != 0)
    return emitError() << "index_head_dim (" << indexHeadDim << ") must be a multiple of " << kIndexFp4Block
                       << ", the fp4 e8m0 block of the index queries and keys (section 6)";
  if (maxSeqLen <= 0)
    return emitError() << "max_seq_len must be positive, got " << maxSeqLen;
  return success();
}
