//===- AOT.cpp - dsa CPU step libraries for the MLIR-free runtime -------------===//
//
// emitCPUStepLibrary: lowerForCPU (Lowering.cpp), translation to LLVM IR, then what the JIT would add itself:
//   - the packed entry `void _mlir_<name>(void **args)` of every callable function (args[i] -> i-th LLVM argument,
//     the last pointer receives the result), the convention of runtime/cpu/Values.h;
//   - `dsa_cpu_fail(i32)`, defined here as a call through the global function pointer `dsa_cpu_fail_hook` (null =
//     ignore), which the runtime's loader sets: the shared object needs no symbol from the executable;
//   - `dsa_step_library_signature`, the library's own signature (runtime::compiledSignatureText, with the
//     #dsa.attn_config of every dsa.attention: addAttentionConfigs), which the loader compares with the description;
//   - internal linkage for everything else (backend::keepOnlyEntryPoints: the function bodies, `dealloc_helper`);
//     the dynamic symbol table lists `_mlir_<name>`, `dsa_cpu_fail_hook` and the signature only.
// Optimised like the JIT (makeOptimizingTransformer: no fast-math, so the f32 order is kept), checked for bf16
// conversions left to LLVM, compiled for the target CPU (CPUCompileOptions::targetCpu, $DSA_CPU, else the host) to
// <base>.o, linked to <base>.so with `cc -shared` (these steps: compiler/lib/Backend/Common/HostObject.h, shared with the GPU
// step libraries; the runtime functions of RuntimeFunctions.h from the static DSACPURuntime/DSANumerics archives,
// -lstdc++ -lm; libomp with parallel), described in <base>.json with the target's CPU name and features and the .so's SHA-256.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Backend/CPU/CPUModule.h"

#include "Lowering.h"

#include "../Common/HostObject.h"

#include "dsa/ABI/RuntimeErrors.h"
#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Runtime/CPU/StepLibrary.h"
#include "dsa/Runtime/Host/FileDigest.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Target/TargetMachine.h"

#include <fstream>

namespace dsa::cpu {

namespace {

/// The index of `v` among `f`'s entry-block arguments, or -1.
int64_t argumentIndex(mlir::func::FuncOp f, mlir::Value v) {
  auto arg = llvm::dyn_cast<mlir::BlockArgument>(v);
  return arg && arg.getOwner() == &f.front() ? static_cast<int64_t>(arg.getArgNumber()) : -1;
}

/// The index of the first returned value equal to `v`, or -1.
int64_t resultIndex(mlir::func::ReturnOp ret, mlir::Value v) {
  for (auto [i, r] : llvm::enumerate(ret.getOperands()))
    if (r == v)
      return static_cast<int64_t>(i);
  return -1;
}

/// Whether a compressed layer reads only slot values it published itself earlier in the same step: a kv source
/// (compress_kv) and index source (topk_idxs) scoring against its own index-key cache (index_k_source = own_cache)
/// that does not apply another layer's candidate mask. Its chunk at start_pos > 0 then equals its tokens' decode
/// steps whatever the other layers of the stack do (CPURuntimeAOTTest.ChunksOfASelfContainedCompressedLayer...).
bool readsOnlyItsOwnSlots(mlir::dsa::AttnConfigAttr config) {
  mlir::dsa::CompressConfigAttr c = config.getCompress();
  return c && c.getIsKvSource().getValue() && c.getIsIndexSource().getValue() &&
         c.getIndexKSource().getValue() == mlir::dsa::IndexKSource::own_cache && !c.getUsesCandidates().getValue();
}

} // namespace

void addStepRoles(mlir::ModuleOp module, FunctionSignature &signature) {
  auto f = module.lookupSymbol<mlir::func::FuncOp>(signature.name);
  if (!f || f.isDeclaration() || !f.getBody().hasOneBlock())
    return;
  auto ret = llvm::dyn_cast<mlir::func::ReturnOp>(f.front().getTerminator());
  llvm::SmallVector<mlir::dsa::AttentionOp> layers;
  f.walk([&](mlir::dsa::AttentionOp op) { layers.push_back(op); });
  if (!ret || layers.size() != 1)
    return;
  mlir::dsa::AttentionOp att = layers.front();
  StepRoles roles;
  roles.x = argumentIndex(f, att.getX());
  roles.startPos = argumentIndex(f, att.getStartPos());
  roles.output = resultIndex(ret, att.getOut());
  if (roles.x < 0 || roles.startPos < 0 || roles.output < 0 ||
      roles.output >= static_cast<int64_t>(signature.numResults))
    return;
  mlir::dsa::AttnConfigAttr config = att.getConfig();
  if (config.getCompressRatio() > 0 && config.getCompress())
    roles.maxSeqLen = config.getCompress().getMaxSeqLen();
  // The CPU lowering runs a chunk at start_pos > 0 as one step with the bits of its decode steps: a window-only
  // layer, and a compressed layer that reads only what it publishes itself (readsOnlyItsOwnSlots). A compressed
  // layer that reads slots other layers publish is not equal layer-major (docs/architecture.md, "Steps the
  // reference does not have"): the runtime splits its chunk, or refuses it with shared slots.
  // A batched step (start_pos a tensor<B x i64>) takes one token per sequence: runtime::Batch drives it.
  roles.chunked = (config.getCompressRatio() == 0 || readsOnlyItsOwnSlots(config)) &&
                  !llvm::isa<mlir::RankedTensorType>(att.getStartPos().getType());
  // The shared slots, only when every one is an argument in and a result out.
  for (auto [in, out] : llvm::zip(att.getShared(), att.getNewShared())) {
    StateBinding b{argumentIndex(f, in), resultIndex(ret, out)};
    if (b.arg < 0 || b.result < 0) {
      roles.shared.clear();
      break;
    }
    roles.shared.push_back(b);
  }
  signature.step = roles;
  // The compressor's score_state (state[1] of a ratio >= 2 kv source) starts at -inf (section 5), the rest at 0.
  if (config.getCompressRatio() >= 2 && att.getState().size() == 4) {
    const int64_t scoreState = argumentIndex(f, att.getState()[1]);
    for (StateBinding &b : signature.state)
      if (b.arg == scoreState)
        b.init = StateInit::NegInf;
  }
}

void addAttentionConfigs(mlir::ModuleOp module, FunctionSignature &signature) {
  signature.attention.clear();
  auto f = module.lookupSymbol<mlir::func::FuncOp>(signature.name);
  if (!f || f.isDeclaration())
    return;
  f.walk([&](mlir::dsa::AttentionOp op) {
    mlir::dsa::AttnConfigAttr c = op.getConfig();
    runtime::AttentionConfig a;
    a.layerId = c.getLayerId();
    a.dim = c.getDim();
    a.nHeads = c.getNHeads();
    a.headDim = c.getHeadDim();
    a.ropeHeadDim = c.getRopeHeadDim();
    a.qLoraRank = c.getQLoraRank();
    a.oGroups = c.getOGroups();
    a.oLoraRank = c.getOLoraRank();
    a.windowSize = c.getWindowSize();
    a.compressRatio = c.getCompressRatio();
    a.normEps = c.getNormEps().getValueAsDouble(); // f32 -> f64: exact
    a.ropeDim = c.getRope().getRopeDim();
    a.ropeTheta = c.getRope().getTheta().getValueAsDouble();
    if (mlir::dsa::YarnAttr y = c.getRope().getYarn())
      a.yarn = runtime::AttentionConfig::Yarn{y.getOriginalSeqLen(), y.getFactor().getValueAsDouble(),
                                     y.getBetaFast().getValueAsDouble(), y.getBetaSlow().getValueAsDouble()};
    if (mlir::dsa::CompressConfigAttr cc = c.getCompress()) {
      runtime::AttentionConfig::Compress k;
      k.isKvSource = cc.getIsKvSource().getValue();
      k.isIndexSource = cc.getIsIndexSource().getValue();
      k.isCandidateSource = cc.getIsCandidateSource().getValue();
      k.usesCandidates = cc.getUsesCandidates().getValue();
      k.indexNHeads = cc.getIndexNHeads();
      k.indexHeadDim = cc.getIndexHeadDim();
      k.indexTopk = cc.getIndexTopk();
      k.candidateTopkBlocks = cc.getCandidateTopkBlocks();
      k.candidateBlockSize = cc.getCandidateBlockSize();
      k.maxSeqLen = cc.getMaxSeqLen();
      k.indexKSource = mlir::dsa::stringifyIndexKSource(cc.getIndexKSource().getValue()).str();
      k.tieOrder = mlir::dsa::stringifyTieOrder(cc.getTieOrder().getValue()).str();
      a.compress = k;
    }
    signature.attention.push_back(std::move(a));
  });
}

Result<std::string> emitCPUStepLibrary(mlir::ModuleOp module, const std::string &directory,
                                       const std::string &baseName, const CPUCompileOptions &options) {
  if (baseName.empty() || baseName.find('/') != std::string::npos)
    return makeError("cpu step library: base name '" + baseName + "' must be a non-empty file name");
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return makeError("cpu step library: cannot create directory '" + directory + "': " + ec.message());
  std::string openmpLib;
  if (options.parallel) {
    Result<std::string> lib = findOpenMPRuntime();
    if (!lib)
      return makeError(lib.error());
    openmpLib = lib.take();
  }
  Result<LoweredModule> lowered = lowerForCPU(module, options);
  if (!lowered)
    return makeError(lowered.error());

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = mlir::translateModuleToLLVMIR(*lowered->module, llvmContext, baseName);
  if (!llvmModule)
    return makeError("cpu step library: translation to LLVM IR failed");

  const std::string what = "cpu step library";
  std::string cpu;
  // The CPU lowerForCPU compiled for (its functions carry the same target_cpu / target_features).
  const backend::HostTarget target{lowered->target.cpu, lowered->target.featureString()};
  auto tm = backend::createHostTargetMachine(target, options.optLevel, cpu, what);
  if (!tm)
    return makeError(tm.error());
  backend::configureModule(*llvmModule, **tm);
  backend::addPackedEntries(*llvmModule, lowered->functions);
  // dsa_cpu_fail calls through dsa_cpu_fail_hook (the loader points it at dsaCpuRecordFailure), then returns.
  backend::defineFailHook(*llvmModule, backend::FailHookEnd::Return, /*always=*/true);

  // The description, and the part of it the code fixes compiled into the library (its signature), which the
  // loader compares with the description; then only the entry points stay exported.
  StepLibraryDescription description;
  description.library = baseName + ".so";
  description.targetCpu = cpu;
  description.targetFeatures = lowered->target.enabledFeatures();
  description.parallel = options.parallel;
  description.functions = lowered->functions;
  for (FunctionSignature &f : description.functions) {
    addStepRoles(module, f);
    addAttentionConfigs(module, f); // the configuration the code's constants are, in the signature too
  }
  backend::embedSignature(*llvmModule, runtime::compiledSignatureText(description));
  backend::keepOnlyEntryPoints(*llvmModule, description.functions);

  const std::string objPath = directory + "/" + baseName + ".o";
  const std::string soPath = directory + "/" + baseName + ".so";
  const std::string jsonPath = directory + "/" + baseName + ".json";
  // After optimisation: no bf16 conversions left to LLVM, and malloc / free routed to the buffer cache (linked
  // from libDSACPURuntime.a with the top-k set).
  auto beforeCodegen = [&](llvm::Module &m) -> Status {
    if (Status st = backend::checkNoBf16Conversions(m, what); !st)
      return st;
    return backend::routeAllocationsToBufferCache(m, what);
  };
  if (Status st = backend::optimizeAndEmitObject(*llvmModule, **tm, options.optLevel, objPath, what, beforeCodegen);
      !st)
    return makeError(st.error());
  // The runtime functions the code may call (the top-k set) from the runtime's archives (runtimeLinkArguments).
  Result<std::vector<std::string>> runtime = backend::runtimeLinkArguments();
  if (!runtime)
    return makeError(what + ": " + runtime.error());
  std::vector<std::string> linkArgs = runtime.take();
  if (!openmpLib.empty()) {
    linkArgs.push_back(openmpLib);
    linkArgs.push_back("-Wl,-rpath," + llvm::sys::path::parent_path(openmpLib).str());
  }
  if (Status st = backend::linkSharedObject(objPath, soPath, linkArgs, what); !st)
    return makeError(st.error());

  // The file's digest, which the loader checks before handing the file to the dynamic loader.
  Result<std::string> digest = runtime::sha256OfFile(soPath);
  if (!digest)
    return makeError(what + ": " + digest.error());
  description.librarySha256 = digest.take();
  std::ofstream json(jsonPath);
  json << describeStepLibrary(description);
  if (!json)
    return makeError("cpu step library: cannot write '" + jsonPath + "'");
  return jsonPath;
}

} // namespace dsa::cpu
