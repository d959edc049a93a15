//===- DSAToCPU.cpp - dsa -> upstream dialects for the CPU --------------------===//
#include "dsa/Conversion/Passes.h"
#include "dsa/Dialect/DSA/IR/DSAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::dsa {
#define GEN_PASS_DEF_CONVERTDSATOCPU
#include "dsa/Conversion/Passes.h.inc"

namespace {
struct ConvertDSAToCPUPass : impl::ConvertDSAToCPUBase<ConvertDSAToCPUPass> {
  void runOnOperation() override {
    getOperation()->emitError("dsa-to-cpu: not implemented yet");
    signalPassFailure();
  }
};
} // namespace

void registerDSACPUPipeline() {}
} // namespace mlir::dsa
