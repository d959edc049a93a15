//===- Pipeline.cpp - --dsa-gpu-pipeline: dsa -> host code + a gpu.binary ------------------------------------===//
//
// dsa-check-libdevice (the toolkit the NVVM stage links), then the host part (buildDSAGPUHostPipeline, also
// registered alone as --dsa-gpu-host-pipeline for the host IR tests): dsa-decompose-attention, dsa-strip-probes,
// dsa-to-gpu (patterns on tensors: checks, buffers, kernel launch calls), upstream one-shot bufferization across
// function boundaries (identity layouts), upstream ownership-based deallocation written out (its clones of returned
// buffers the function does not own dropped by dsa-gpu-share-returned-buffers: a returned argument is shared),
// dsa-gpu-device-buffers (every buffer is device memory: gpu.alloc/dealloc/memcpy), dsa-gpu-launch-kernels
// (gpu.launch_func of the embedded kernels, the host top-k round trips), canonicalize/cse; then gpu-async-region and
// upstream's NVVM lowering written out (nvvm-attach-target, convert-gpu-to-nvvm on the gpu.module, gpu-to-llvm on the
// host, gpu-module-to-binary with the toolkit path). Every pass here is registered (upstream's by registerAllPasses,
// dsa's by registerDSAGPUPipeline itself), and the toolkit path is resolved once, when the pipeline is built, and passed to the
// passes as an option: `dsa-opt --dsa-gpu-pipeline --dump-pass-pipeline` prints a pipeline that
// `dsa-opt --pass-pipeline=...` replays to the same IR (test/Conversion/DSAToGPU/pipeline-replay.test).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Conversion/DSAToGPU/Passes.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>
#include <string>

namespace mlir::dsa {
#define GEN_PASS_DEF_DSACHECKLIBDEVICE
#include "dsa/Conversion/DSAToGPU/Passes.h.inc"

std::string resolveCudaPath(llvm::StringRef option) {
  if (!option.empty())
    return option.str();
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *v = std::getenv(var); v && *v)
      return v;
  return "/usr/local/cuda";
}

namespace {

/// Fails the pipeline up front when libdevice is missing: the kernels call libdevice (__nv_exp, __nv_cos,
/// __nv_sin, __nv_fsqrt_rn, __nv_fabsf), and gpu-module-to-binary would otherwise emit PTX with unresolved calls.
struct CheckLibdevicePass : impl::DSACheckLibdeviceBase<CheckLibdevicePass> {
  using DSACheckLibdeviceBase::DSACheckLibdeviceBase;
  void runOnOperation() override {
    llvm::SmallString<256> path(resolveCudaPath(cudaPath));
    llvm::sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
    if (!llvm::sys::fs::is_regular_file(path)) {
      mlir::emitError(getOperation().getLoc(), "--dsa-gpu-pipeline: libdevice not found at '")
          << path << "': pass cuda-path=<CUDA toolkit> or set CUDA_HOME (the dsa kernels call libdevice)";
      signalPassFailure();
    }
  }
};

struct DSAGPUPipelineOptions : PassPipelineOptions<DSAGPUPipelineOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("Target SM (sm_80, sm_90, sm_100, ...)"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features such as +ptx80; empty: the chip's minimum PTX ISA"),
                               llvm::cl::init("")};
  Option<std::string> format{*this, "format",
                             llvm::cl::desc("gpu.binary payload: isa (PTX text), bin (cubin, runs ptxas), fatbin"),
                             llvm::cl::init("isa")};
  Option<int> optLevel{*this, "opt-level", llvm::cl::desc("NVVM optimisation level"), llvm::cl::init(3)};
  Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("CUDA toolkit (libdevice, ptxas); empty: $CUDA_ROOT, $CUDA_HOME, $CUDA_PATH, /usr/local/cuda"),
      llvm::cl::init("")};
};

void buildPipeline(OpPassManager &pm, const DSAGPUPipelineOptions &options) {
  buildDSAGPUPipeline(pm, options.chip, options.features, options.format, options.optLevel, options.cudaPath);
}

} // namespace

void buildDSAGPUHostPipeline(OpPassManager &pm) {
  // dsa -> tensors with buffers and launch calls.
  pm.addPass(createDSADecomposeAttention());
  pm.addPass(createDSAStripProbes());
  pm.addPass(createConvertDSAToGPU());
  // Tensors -> memrefs: function arguments and results are identity-layout memrefs (the caller's device buffers).
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.unknownTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Frees: upstream's buffer-deallocation-pipeline, written out to drop the clones of returned buffers.
  pm.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
  pm.addPass(createDSAGPUShareReturnedBuffers());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  // Device memory, then the launches of the kernels.
  pm.addPass(createDSAGPUDeviceBuffers());
  pm.addPass(createDSAGPULaunchKernels());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildDSAGPUPipeline(OpPassManager &pm, llvm::StringRef chip, llvm::StringRef features, llvm::StringRef format,
                         int optLevel, llvm::StringRef cudaPath) {
  const std::string cuda = resolveCudaPath(cudaPath);
  DSACheckLibdeviceOptions check;
  check.cudaPath = cuda;
  pm.addPass(createDSACheckLibdevice(check));
  // dsa -> host code on memrefs + a gpu.module of kernels.
  buildDSAGPUHostPipeline(pm);
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  // Device: NVVM (upstream's gpu-lower-to-nvvm-pipeline, with the toolkit path made explicit).
  GpuNVVMAttachTargetOptions target;
  target.chip = chip.str();
  target.features = features.str();
  target.optLevel = optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createSCFToControlFlowPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  // Host: the LLVM dialect with calls into the GPU runtime (mgpu*), then the gpu.module -> gpu.binary.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = format.str();
  binary.toolkitPath = cuda;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void registerDSAGPUPipeline() {
  PassPipelineRegistration<DSAGPUPipelineOptions>(
      "dsa-gpu-pipeline",
      "dsa (dsa.attention or primitives) -> gpu kernels -> NVVM -> a gpu.binary (PTX with format=isa, a cubin with "
      "format=bin) plus host code in the LLVM dialect calling the GPU runtime",
      buildPipeline);
  PassPipelineRegistration<>(
      "dsa-gpu-host-pipeline",
      "The host part of --dsa-gpu-pipeline: dsa -> host code on memrefs launching the kernels of a gpu.module "
      "(bufferized, deallocated; not yet NVVM)",
      buildDSAGPUHostPipeline);
  // Every dsa pass the pipelines run, so that their --dump-pass-pipeline output replays. Idempotent.
  registerDSADecomposeAttention();
  registerDSAStripProbes();
  registerDSAToGPUPasses();
}

} // namespace mlir::dsa
