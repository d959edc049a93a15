//===- Passes.td - the passes of dsa's GPU conversion (dsa-to-gpu and --dsa-gpu-pipeline's own) -------===//
//
// TableGen'd into dsa/Conversion/DSAToGPU/Passes.h.inc (-name DSAToGPU: registerDSAToGPUPasses()) and the passes'
// reference docs (build/docs/DSAToGPUPasses.md). Apart from the CPU conversion's (DSAToCPU/Passes.td).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CONVERSION_DSATOGPU_PASSES_TD
#define DSA_CONVERSION_DSATOGPU_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------------------------------------------===//
// GPU (lib/Conversion/DSAToGPU): dsa-to-gpu and the passes --dsa-gpu-pipeline runs after bufferization.
//===----------------------------------------------------------------------------------------------------------===//

def ConvertDSAToGPU : Pass<"dsa-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower the dsa primitives to launches of the GPU kernels, on tensors (before bufferization)";
  let description = [{
    One conversion pattern per op family (populateDSAToGPUPatterns, dsa/Conversion/DSAToGPU.h) rewrites every
    function of dsa primitives, on tensors, into run-time checks calling `dsa_cpu_fail(code)` (the codes of
    include/dsa/Backend/CPU/RuntimeErrors.h, shared with the CPU backend), the buffers of operands and results
    (`bufferization.to_buffer`, `memref.alloc`, `bufferization.to_tensor restrict writable`) and the kernel launches as
    calls of private `@__dsa_gpu_launch_<kernel>` declarations. Upstream one-shot bufferization and ownership-based
    deallocation then make it host code on memrefs, and dsa-gpu-device-buffers / dsa-gpu-launch-kernels make the
    buffers device memory and the calls `gpu.launch_func` of the kernels of lib/Conversion/DSAToGPU/Kernels.mlir
    (`--dsa-gpu-pipeline`, docs/gpu-backend.md). What it does not lower is a diagnostic on the op.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect"];
}

def DSAGPUShareReturnedBuffers : Pass<"dsa-gpu-share-returned-buffers", "::mlir::ModuleOp"> {
  let summary = "Return the buffers that ownership-based deallocation would clone because the function does not own "
                "them";
  let description = [{
    After `ownership-based-buffer-deallocation`: a returned buffer the function does not own (an argument, or a
    select that may be one) is returned itself instead of `bufferization.clone`d. The GPU step libraries' calling
    convention shares a returned argument (runtime/cuda GpuStepLibrary.h); the deallocations that retain the result
    keep whatever it may be.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect", "::mlir::scf::SCFDialect"];
}

def DSAGPUDeviceBuffers : Pass<"dsa-gpu-device-buffers", "::mlir::ModuleOp"> {
  let summary = "Make the buffers of GPU host code device memory (memref.alloc/dealloc/copy -> "
                "gpu.alloc/dealloc/memcpy)";
  let description = [{
    After bufferization and deallocation every buffer of the host code dsa-to-gpu produced is device memory (the
    function arguments are device buffers, the allocations the kernels' results and scratch): `memref.alloc`,
    `memref.dealloc` and `memref.copy` become `gpu.alloc`, `gpu.dealloc` and `gpu.memcpy`. Any other host buffer is
    an error.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def DSAGPULaunchKernels : Pass<"dsa-gpu-launch-kernels", "::mlir::ModuleOp"> {
  let summary = "Turn dsa-to-gpu's launch calls into gpu.launch_func of the embedded kernels, and its host top-k "
                "calls into their host round trip";
  let description = [{
    Each `func.call @__dsa_gpu_launch_<kernel>(grid x, y, z, args...)` becomes a `gpu.launch_func` of the kernel
    (cloned with the device helpers it calls from the embedded Kernels.mlir into `gpu.module @dsa_kernels`) with its
    block (core/include/dsa/ABI/GpuKernels.def), skipped at run time when the grid is empty. Each
    `func.call @__dsa_gpu_host_topk(values, k, picks)` becomes the download of the f32 values, the CPU runtime's
    `dsa_cpu_topk_set` (torch's CPU tie order) and the upload of the picks, the host copies freed.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def DSAGPUToHostEmulation : Pass<"dsa-gpu-to-host-emulation", "::mlir::ModuleOp"> {
  let summary = "Turn the kernels of every gpu.module into host functions run by the host GPU emulator";
  let description = [{
    For running the GPU kernel library on a machine without a GPU, at the kernels' real block and grid sizes
    (docs/gpu-backend.md, "Host emulation"; the C hooks are core/include/dsa/ABI/GpuHostEmulation.h). Upstream's
    global-id rewrite expands `gpu.global_id`; then every `gpu.func` of a `gpu.module` becomes a `func.func` of the
    top module (its device helpers move with it): `gpu.thread_id` / `block_id` / `block_dim` / `grid_dim` become calls
    of the emulator's `dsa_emu_*` hooks, `gpu.barrier` a call of `dsa_emu_barrier(site)` (the emulator runs each work
    item as a coroutine and resumes the block once every item has arrived), each workgroup attribution the block's
    buffer from `dsa_emu_workgroup`, each private attribution a `memref.alloca` (on the work item's own stack), and
    `gpu.return` a `func.return`. With `instrument-accesses` every memref.load / memref.store first reports its
    address to `dsa_emu_access` (the emulator's race and uninitialised-shared-memory checks). Each kernel gets a
    packed entry `<kernel>_dsa_emu(!llvm.ptr)` reading cuLaunchKernel's parameter array and a constant
    `<kernel>_dsa_emu_params`. A gpu op it cannot emulate (shuffles, subgroup and all-reduce ops, host launches)
    and memory accesses it does not see (atomics, copies, vector loads) are errors naming the op.
  }];
  let options = [
    Option<"instrumentAccesses", "instrument-accesses", "bool", /*default=*/"true",
           "report every memref.load / memref.store to dsa_emu_access (the emulator's race checks)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::index::IndexDialect"];
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
