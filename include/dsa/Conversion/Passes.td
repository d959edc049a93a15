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
    Rewrites every function of dsa primitives into host code on memrefs that launches (`gpu.launch_func`) the
    kernels of lib/Conversion/DSAToGPU/Kernels.mlir, cloned into a `gpu.module @dsa_kernels`; run-time checks call
    `dsa_cpu_fail(code)` (the codes of include/dsa/Backend/CPU/RuntimeErrors.h, shared with the CPU backend).
    `--dsa-gpu-pipeline="chip=sm_90"` lowers the result on to NVVM and a cubin/PTX blob (docs/gpu-backend.md).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect"];
}

def DSACheckLibdevice : Pass<"dsa-check-libdevice", "::mlir::ModuleOp"> {
  let summary = "Fail unless the CUDA toolkit's libdevice is where the NVVM stage of --dsa-gpu-pipeline looks";
  let description = [{
    The dsa kernels call libdevice (__nv_exp, __nv_cos, __nv_sin, __nv_fsqrt_rn, __nv_fabsf); without it
    gpu-module-to-binary would emit PTX with unresolved calls. Checks `<cuda-path>/nvvm/libdevice/libdevice.10.bc`
    and changes nothing. The first pass of --dsa-gpu-pipeline.
  }];
  let options = [
    Option<"cudaPath", "cuda-path", "std::string", /*default=*/"\"\"",
           "CUDA toolkit; empty: $CUDA_ROOT, $CUDA_HOME, $CUDA_PATH, else /usr/local/cuda">
  ];
}

#endif
