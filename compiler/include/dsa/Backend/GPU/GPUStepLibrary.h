//===- GPUStepLibrary.h - ahead-of-time GPU step libraries for the MLIR-free CUDA runtime ---------------------===//
//
// emitGPUStepLibrary() compiles a module of dsa functions (dsa.attention of window-only layers, or the window-only
// primitives) with --dsa-gpu-pipeline (compiler/lib/Conversion/DSAToGPU: kernels to a cubin or PTX embedded in host code
// that calls MLIR's GPU runtime, mgpu*), then compiles the host code to an x86-64 object and links a shared library
// that the MLIR-free runtime loads and runs on a GPU machine without MLIR
// (runtime/cuda/include/dsa/Runtime/Cuda/GpuStepLibrary.h; docs/gpu-backend.md "Step libraries"):
//
//   <dir>/<base>.o     the host code for a generic x86-64 CPU (it only marshals and launches: the GPU machine's CPU
//                      may differ from this one), the packed entry `_mlir_<name>` of every public function, and the
//                      run-time check hook (a failed check calls dsa_cpu_fail(code) with the codes of
//                      dsa/ABI/RuntimeErrors.h, defined as a call of dsa_cpu_fail_hook, which the loader
//                      sets, then libc's abort);
//   <dir>/<base>.so    linked with `cc -shared`; undefined symbols: the mgpu* entry points and libc's;
//   <dir>/<base>.json  the step description: the CPU step library's signature format (runtime/cpu StepLibrary.h)
//                      with "format": "dsa-gpu-step-library", "backend": "cuda", "chip", "binary_format".
//
// Errors (dsa::Result): a bad base name, chip or format; an argument type the calling convention cannot pass; the
// pipeline's diagnostics (an op dsa-to-gpu does not lower, a missing libdevice/ptxas); translation, code
// generation and link failures.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_BACKEND_GPU_GPUSTEPLIBRARY_H
#define DSA_BACKEND_GPU_GPUSTEPLIBRARY_H

#include "dsa/Support/Result.h"

#include <string>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace dsa::gpu {

struct GPUCompileOptions {
  /// The SM the kernels are compiled for (--dsa-gpu-pipeline chip): sm_80, sm_90 (the H100/H200), sm_100, ...
  std::string chip = "sm_90";
  /// The kernels' form in the library: "bin" (a cubin: ptxas runs here, nothing is JIT-compiled on the GPU
  /// machine; it runs on the chip's major architecture only), "isa" (PTX, JIT-compiled by the driver when loaded;
  /// runs on any newer device) or "fatbin".
  std::string format = "bin";
  /// PTX features (e.g. "+ptx80"); empty: the chip's minimum PTX ISA.
  std::string features;
  /// The CUDA toolkit (libdevice, ptxas); empty: the pipeline's default ($CUDA_HOME..., /usr/local/cuda).
  std::string cudaPath;
  /// NVVM optimisation level of the kernels, and LLVM optimisation level of the host code (0..3).
  unsigned kernelOptLevel = 3;
  unsigned hostOptLevel = 2;
  /// Keep the dsa.probe values as extra results (downloaded by GpuStepLibrary::run into its probe list), as
  /// dsa::cpu::CPUCompileOptions::probesAsResults does.
  bool probesAsResults = false;
};

/// Writes <directory>/<baseName>.{o,so,json} for `module` (the caller's module is not modified; its context gets
/// the dialects and translations it needs registered). Returns the description's path.
Result<std::string> emitGPUStepLibrary(mlir::ModuleOp module, const std::string &directory,
                                       const std::string &baseName, const GPUCompileOptions &options = {});

} // namespace dsa::gpu

#endif
