//===- DecomposeAttention.cpp - dsa.attention -> primitives ------------------===//
#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"

namespace mlir::dsa {
#define GEN_PASS_DEF_DSADECOMPOSEATTENTION
#include "dsa/Dialect/DSA/Transforms/Passes.h.inc"

namespace {
struct DecomposeAttentionPass : impl::DSADecomposeAttentionBase<DecomposeAttentionPass> {
  void runOnOperation() override {} // TODO(decompose)
};
} // namespace
} // namespace mlir::dsa
