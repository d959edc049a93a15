//===- RopeParams.h - #dsa.rope -> the kernels' RopeParams ---------------------===//
//
// The one translation of a `#dsa.rope` attribute (and its optional `#dsa.yarn`) into the MLIR-free
// dsa::RopeParams that ropeFrequencies() takes (attention-semantics.md section 2). The interpreter and the
// CPU and GPU lowerings all build their RoPE tables through it.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_DIALECT_DSA_IR_ROPEPARAMS_H
#define DSA_DIALECT_DSA_IR_ROPEPARAMS_H

#include "dsa/Dialect/DSA/IR/DSAAttrs.h"
#include "dsa/Core/Rope.h"

namespace mlir::dsa {

inline ::dsa::RopeParams ropeParams(RopeAttr rope) {
  ::dsa::RopeParams params;
  params.ropeDim = rope.getRopeDim();
  params.theta = rope.getTheta().getValueAsDouble();
  if (YarnAttr yarn = rope.getYarn()) {
    ::dsa::YarnParams y;
    y.originalSeqLen = yarn.getOriginalSeqLen();
    y.factor = yarn.getFactor().getValueAsDouble();
    y.betaFast = yarn.getBetaFast().getValueAsDouble();
    y.betaSlow = yarn.getBetaSlow().getValueAsDouble();
    params.yarn = y;
  }
  return params;
}

} // namespace mlir::dsa

#endif
