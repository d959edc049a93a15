//===- DSAAttrs.cpp - dsa attributes -----------------------------------------===//
#include "dsa/Dialect/DSA/IR/DSAAttrs.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dsa;

#define GET_ATTRDEF_CLASSES
#include "dsa/Dialect/DSA/IR/DSAAttrs.cpp.inc"

void DSADialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dsa/Dialect/DSA/IR/DSAAttrs.cpp.inc"
      >();
}

static LogicalResult checkF64(function_ref<InFlightDiagnostic()> emitError, FloatAttr attr, StringRef name) {
  if (!attr || !attr.getType().isF64())
    return emitError() << name << " must be an f64 float attribute";
  return success();
}

LogicalResult YarnAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t originalSeqLen,
                               FloatAttr factor, FloatAttr betaFast, FloatAttr betaSlow) {
  if (failed(checkF64(emitError, factor, "factor")) || failed(checkF64(emitError, betaFast, "beta_fast")) ||
      failed(checkF64(emitError, betaSlow, "beta_slow")))
    return failure();
  if (originalSeqLen <= 0)
    return emitError() << "original_seq_len must be positive, got " << originalSeqLen;
  if (!(factor.getValueAsDouble() > 0.0))
    return emitError() << "factor must be > 0, got " << factor.getValueAsDouble();
  if (!(betaFast.getValueAsDouble() > 0.0) || !(betaSlow.getValueAsDouble() > 0.0))
    return emitError() << "beta_fast and beta_slow must be > 0";
  return success();
}

LogicalResult RopeAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t ropeDim, FloatAttr theta,
                               YarnAttr yarn) {
  if (ropeDim <= 0 || ropeDim % 2 != 0)
    return emitError() << "rope_dim must be positive and even, got " << ropeDim;
  if (failed(checkF64(emitError, theta, "theta")))
    return failure();
  if (!(theta.getValueAsDouble() > 1.0))
    return emitError() << "theta must be > 1, got " << theta.getValueAsDouble();
  return success();
}

LogicalResult AttnConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t layerId, int64_t dim,
                                     int64_t nHeads, int64_t headDim, int64_t ropeHeadDim, int64_t qLoraRank,
                                     int64_t oGroups, int64_t oLoraRank, int64_t windowSize, int64_t compressRatio,
                                     FloatAttr normEps, RopeAttr rope) {
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
  if (ropeHeadDim > headDim)
    return emitError() << "rope_head_dim (" << ropeHeadDim << ") must not exceed head_dim (" << headDim << ")";
  if (ropeHeadDim % 2 != 0)
    return emitError() << "rope_head_dim must be even, got " << ropeHeadDim;
  if (nHeads % oGroups != 0)
    return emitError() << "n_heads (" << nHeads << ") must be divisible by o_groups (" << oGroups << ")";
  if (compressRatio < 0)
    return emitError() << "compress_ratio must be >= 0, got " << compressRatio;
  if (!normEps || !normEps.getType().isF32())
    return emitError() << "norm_eps must be an f32 attribute";
  if (rope.getRopeDim() != ropeHeadDim)
    return emitError() << "rope.rope_dim (" << rope.getRopeDim() << ") must equal rope_head_dim (" << ropeHeadDim
                       << ")";
  return success();
}
