//===- Passes.td - dsa conversion passes --------------------------------------===//
#ifndef DSA_CONVERSION_PASSES_TD
#define DSA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------------------------------------------===//
// CPU (lib/Conversion/DSAToCPU): dsa-to-cpu and the other dsa passes --dsa-cpu-pipeline runs (Pipeline.cpp,
// CPUTarget.cpp). registerDSACPUPipeline() registers them with the pipeline, so its dump replays.
//===----------------------------------------------------------------------------------------------------------===//

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

def DSACPUDropInPlaceResults : Pass<"dsa-cpu-drop-in-place-results", "::mlir::ModuleOp"> {
  let summary = "Drop the results of CPU-backend-marked functions that bufferization made an argument's buffer";
  let description = [{
    For every function marked `dsa.cpu_in_place = array<i64: writable arguments>` (lib/Backend/CPU's lowerForCPU
    sets it; the marker is removed; dsa/Conversion/DSAToCPU/InPlaceResults.h), drops the results that one-shot
    bufferization made an argument's buffer (caches written in place, a slot passed through, a result repeating
    one of them) and records them in the module attribute `dsa.cpu_in_place = {name = array<i64: argument of each
    original result, or -1>}`, and the writable arguments the code may write in `dsa.cpu_written = {name =
    array<i64: ...>}`. Returned, such a result would be cloned by the ownership-based deallocation (an argument is
    not owned by the function). Functions called within the module, or with more than one block, keep their
    results. Runs between one-shot bufferization and the buffer deallocation; unmarked functions are untouched.
  }];
}

def DSACPUStridedCopiesToLinalg : Pass<"dsa-cpu-strided-copies-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Rewrite memref.copy between non-identity layouts into linalg.copy (no runner-utils memrefCopy)";
  let description = [{
    Every memref.copy whose source or target does not have the identity layout (the copies bufferization makes
    for tensor.insert_slice, tensor.concat and tensor.extract_slice on dynamic shapes) becomes linalg.copy, which
    convert-linalg-to-loops turns into loops. finalize-memref-to-llvm would otherwise lower it to a call of the
    runner-utils library's `memrefCopy`, which neither the JIT's process nor an AOT step library has. Copies
    between identity-layout memrefs stay memref.copy (a memcpy).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def DSACPUExpandBf16 : Pass<"dsa-cpu-expand-bf16", "::mlir::ModuleOp"> {
  let summary = "Expand arith.truncf f32 -> bf16 and arith.extf bf16 -> f32 into integer ops (lib/Numerics' rounding)";
  let description = [{
    Rewrites every arith.truncf f32 -> bf16 and arith.extf bf16 -> f32 (scalars and vectors, in any op) into
    integer arithmetic on the bits: numerics::f32ToBf16Bits (round to nearest even, denormals rounded like any
    value, NaN -> quiet NaN keeping the sign and the top payload bits) and the exact 16-bit shift for widening. A
    truncf to bf16 from another type, or with a rounding mode other than to_nearest_even, is an error
    (dsa/Conversion/CPUTarget.h).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def DSACPUCheckBf16 : Pass<"dsa-cpu-check-bf16", "::mlir::ModuleOp"> {
  let summary = "Fail on any LLVM-dialect op that converts or computes on bf16 (or calls __truncsfbf2)";
  let description = [{
    Emits an error naming each LLVM-dialect op that LLVM would convert or compute on as bf16 (llvm.fptrunc to /
    llvm.fpext from bf16, arithmetic on bf16, a call or declaration of __truncsfbf2 / __truncdfbf2 /
    __extendbfsf2) and fails: checkNoBf16Conversions (dsa/Conversion/CPUTarget.h).
  }];
}

def DSACPUBf16AsI16 : Pass<"dsa-cpu-bf16-as-i16", "::mlir::ModuleOp"> {
  let summary = "Carry bf16 values as i16 in the LLVM dialect (after dsa-cpu-check-bf16: only bit moves are left)";
  let description = [{
    Repeats dsa-cpu-check-bf16, then replaces bf16 by i16 in every type and attribute of the module (values, block
    arguments, function types, GEP element types; constants and globals keep their bits) and removes the identity
    bitcasts left, so the LLVM IR holds no bfloat: x86 code generation would convert even a bf16 value that only
    crosses blocks (a phi) through f32 with __truncsfbf2 / vcvtneps2bf16.
  }];
}

def DSACPUSetTarget : Pass<"dsa-cpu-set-target", "::mlir::ModuleOp"> {
  let summary = "Set target_cpu / target_features of every llvm.func definition to a CPU ('host' or an LLVM CPU name)";
  let description = [{
    Writes the CPU and the LLVM target features of resolveCPUTarget(cpu) (dsa/Conversion/CPUTarget.h) on every
    llvm.func definition as target_cpu / target_features, which LLVM's code generation honours per function over
    the target machine's defaults. An unknown CPU name fails the pass with resolveCPUTarget's message.
  }];
  let options = [
    Option<"cpu", "cpu", "std::string", /*default=*/"\"host\"",
           "The CPU to compile for: 'host' (the running CPU with exactly its features) or an LLVM x86-64 CPU name "
           "(x86-64, x86-64-v2, x86-64-v3, x86-64-v4, skylake-avx512, sapphirerapids, znver4, ...; "
           "`llc -mcpu=help` lists them)">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

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
