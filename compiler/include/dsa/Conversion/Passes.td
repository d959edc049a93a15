//===- Passes.td - dsa conversion passes --------------------------------------===//
#ifndef DSA_CONVERSION_PASSES_TD
#define DSA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertDSAToCPU : Pass<"dsa-to-cpu", "::mlir::ModuleOp"> {
  let summary = "Lower the dsa primitives to upstream dialects for the CPU (linalg/tensor/arith/math/scf)";
  let description = [{
    Rewrites every dsa primitive into upstream ops that the CPU pipeline (`--dsa-cpu-pipeline`) bufferizes and
    lowers to LLVM. The fp8/fp4/e8m0 round trips are lowered with integer/bit arithmetic so they are bit-exact
    (see ../shared/toolchain.md: the stock arith lowerings round these types wrongly).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect", "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect"];
}

def ConvertDSAToGPU : Pass<"dsa-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower the dsa primitives to gpu dialect kernels";
  let description = [{
    Outlines each dsa primitive family into `gpu.func` kernels in a `gpu.module`, launched from the host function;
    `--dsa-gpu-pipeline="chip=sm_90"` lowers them on to NVVM and a cubin/PTX blob.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect"];
}

#endif
