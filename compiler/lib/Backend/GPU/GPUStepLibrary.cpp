//===- GPUStepLibrary.cpp - ahead-of-time GPU step libraries ---------------------------------------------===//
//
// emitGPUStepLibrary: the CPU backend's prepareModule (signatures, read-only arguments, probes as results), then
// --dsa-gpu-pipeline (host code in the LLVM dialect + a gpu.binary), translation to LLVM IR (the gpu.binary becomes a
// global blob and a constructor/destructor pair calling mgpuModuleLoad[JIT]/mgpuModuleUnload), then:
//   - the run-time check hook: dsa_cpu_fail(code) (the codes of dsa/ABI/RuntimeErrors.h, shared with the CPU
//     backend) is defined as a call through the global function pointer dsa_cpu_fail_hook, which the loader sets
//     (runtime/cuda: ends the call with the code's message), then abort (no hook, or a hook that returns);
//   - the packed entries (compiler/lib/Backend/Common/HostObject.h);
//   - the library's own signature `dsa_step_library_signature` (with the backend, chip and binary format), and
//     internal linkage for everything else (the function bodies, `dealloc_helper`, the module globals, the
//     constructor/destructor pair): it exports `_mlir_<name>`, `dsa_cpu_fail_hook` and the signature only;
// compiled for generic x86-64 and linked with `cc -shared`; the description (with the .so's SHA-256) via the MLIR-free
// runtime's writer.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Backend/GPU/GPUStepLibrary.h"

#include "../CPU/Lowering.h"
#include "../Common/HostObject.h"

#include "dsa/Backend/CPU/CPUModule.h"
#include "dsa/ABI/RuntimeErrors.h"
#include "dsa/Conversion/DSAToGPU/Passes.h"
#include "dsa/Runtime/Cuda/GpuStepLibrary.h"
#include "dsa/Runtime/Host/FileDigest.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <fstream>
#include <mutex>

namespace dsa::gpu {

namespace {

/// --dsa-gpu-pipeline registered once per process (dsa-opt style tools may have registered it already).
void ensurePipelineRegistered() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!mlir::PassPipelineInfo::lookup("dsa-gpu-pipeline"))
      mlir::dsa::registerDSAGPUPipeline();
  });
}

} // namespace

Result<std::string> emitGPUStepLibrary(mlir::ModuleOp module, const std::string &directory,
                                       const std::string &baseName, const GPUCompileOptions &options) {
  const std::string what = "gpu step library";
  if (baseName.empty() || baseName.find('/') != std::string::npos)
    return makeError(what + ": base name '" + baseName + "' must be a non-empty file name");
  if (Result<std::pair<int, int>> chip = cuda::parseChip(options.chip); !chip)
    return makeError(what + ": " + chip.error());
  if (options.format != "bin" && options.format != "isa" && options.format != "fatbin")
    return makeError(what + ": format '" + options.format + "' is not bin, isa or fatbin");
  for (const std::string *s : {&options.features, &options.cudaPath})
    if (s->find_first_of(" {}=") != std::string::npos)
      return makeError(what + ": '" + *s + "' cannot be passed as a pipeline option (spaces, braces or '=')");
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return makeError(what + ": cannot create directory '" + directory + "': " + ec.message());

  Result<cpu::LoweredModule> prepared = cpu::prepareModule(module, options.probesAsResults, "GPU");
  if (!prepared)
    return makeError(prepared.error());
  mlir::ModuleOp lowered = *prepared->module;
  mlir::MLIRContext *ctx = module.getContext();
  {
    mlir::DialectRegistry registry;
    mlir::registerAllExtensions(registry);
    mlir::registerAllToLLVMIRTranslations(registry);
    ctx->appendDialectRegistry(registry);
  }

  std::string diagnostics;
  llvm::raw_string_ostream diagOs(diagnostics);
  mlir::ScopedDiagnosticHandler handler(ctx, [&](mlir::Diagnostic &d) {
    diagOs << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  ensurePipelineRegistered();
  std::string pipeline = "dsa-gpu-pipeline{chip=" + options.chip + " format=" + options.format +
                         " opt-level=" + std::to_string(std::min(options.kernelOptLevel, 3u));
  if (!options.features.empty())
    pipeline += " features=" + options.features;
  if (!options.cudaPath.empty())
    pipeline += " cuda-path=" + options.cudaPath;
  pipeline += "}";
  mlir::PassManager pm(ctx);
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm, diagOs)))
    return makeError(what + ": cannot build '" + pipeline + "':\n" + diagnostics);
  if (mlir::failed(pm.run(lowered)))
    return makeError(what + ": --" + pipeline + " failed:\n" + diagnostics);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = mlir::translateModuleToLLVMIR(lowered, llvmContext, baseName);
  if (!llvmModule)
    return makeError(what + ": translation to LLVM IR failed:\n" + diagnostics);

  // Generic x86-64: the host code only marshals and launches, and the GPU machine's CPU is not this one.
  const backend::HostTarget host{"x86-64", ""};
  std::string cpuName;
  auto tm = backend::createHostTargetMachine(host, options.hostOptLevel, cpuName, what);
  if (!tm)
    return makeError(tm.error());
  backend::configureModule(*llvmModule, **tm);
  // dsa_cpu_fail calls through dsa_cpu_fail_hook (the CUDA runtime points it at dsaGpuCheckFailed, which ends the
  // call with the code's message), then abort(): host code must not launch kernels on sizes a check rejected.
  backend::defineFailHook(*llvmModule, backend::FailHookEnd::Abort, /*always=*/false);
  backend::addPackedEntries(*llvmModule, prepared->functions);

  // The description, and the part of it the code fixes compiled into the library (its signature, with the GPU
  // fields), which the loader compares with the description; then only the entry points stay exported.
  cuda::GpuStepLibraryDescription description;
  description.base.library = baseName + ".so";
  description.base.targetCpu = cpuName;
  description.base.parallel = false;
  description.base.functions = prepared->functions;
  for (runtime::FunctionSignature &f : description.base.functions) {
    cpu::addStepRoles(module, f); // x / start_pos / output / capacity / shared slots, as for the CPU libraries
    f.step.chunked = false;       // dsa-to-gpu rejects a chunk at start_pos > 0: the runtime splits it
    cpu::addAttentionConfigs(module, f); // the dsa.attention configuration the code was compiled from
  }
  description.chip = options.chip;
  description.binaryFormat = options.format;
  backend::embedSignature(*llvmModule,
                          runtime::compiledSignatureText(description.base, cuda::gpuTargetFields(description)));
  backend::keepOnlyEntryPoints(*llvmModule, description.base.functions);

  const std::string objPath = directory + "/" + baseName + ".o";
  const std::string soPath = directory + "/" + baseName + ".so";
  const std::string jsonPath = directory + "/" + baseName + ".json";
  if (Status st = backend::optimizeAndEmitObject(*llvmModule, **tm, options.hostOptLevel, objPath, what); !st)
    return makeError(st.error());
  // The runtime functions the code may call (the top-k set) from the runtime's archives (runtimeLinkArguments).
  Result<std::vector<std::string>> runtime = backend::runtimeLinkArguments();
  if (!runtime)
    return makeError(what + ": " + runtime.error());
  const std::vector<std::string> linkArgs = runtime.take();
  if (Status st = backend::linkSharedObject(objPath, soPath, linkArgs, what); !st)
    return makeError(st.error());

  // The file's digest, which the loader checks before handing the file to the dynamic loader.
  Result<std::string> digest = runtime::sha256OfFile(soPath);
  if (!digest)
    return makeError(what + ": " + digest.error());
  description.base.librarySha256 = digest.take();
  std::ofstream json(jsonPath);
  json << cuda::describeGpuStepLibrary(description);
  if (!json)
    return makeError(what + ": cannot write '" + jsonPath + "'");
  return jsonPath;
}

} // namespace dsa::gpu
