//===- StripProbes.cpp - erase dsa.probe ops ----------------------------------===//
#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"

namespace mlir::dsa {
#define GEN_PASS_DEF_DSASTRIPPROBES
#include "dsa/Dialect/DSA/Transforms/Passes.h.inc"

namespace {
struct StripProbesPass : impl::DSAStripProbesBase<StripProbesPass> {
  void runOnOperation() override {
    SmallVector<ProbeOp> probes;
    getOperation()->walk([&](ProbeOp probe) { probes.push_back(probe); });
    for (ProbeOp probe : probes)
      probe.erase();
  }
};
} // namespace
} // namespace mlir::dsa
