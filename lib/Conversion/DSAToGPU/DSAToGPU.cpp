//===- DSAToGPU.cpp - dsa -> gpu dialect kernels -------------------------------===//
#include "dsa/Conversion/Passes.h"
#include "dsa/Dialect/DSA/IR/DSAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::dsa {
#define GEN_PASS_DEF_CONVERTDSATOGPU
#include "dsa/Conversion/Passes.h.inc"

namespace {
struct ConvertDSAToGPUPass : impl::ConvertDSAToGPUBase<ConvertDSAToGPUPass> {
  void runOnOperation() override {
    getOperation()->emitError("dsa-to-gpu: not implemented yet");
    signalPassFailure();
  }
};
} // namespace

void registerDSAGPUPipeline() {}
} // namespace mlir::dsa
