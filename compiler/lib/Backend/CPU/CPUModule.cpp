//===- CPUModule.cpp - JIT execution of dsa modules on the CPU ----------------===//
//
// compileForCPU: lowerForCPU (Lowering.cpp), then MLIR's ExecutionEngine (ORC JIT) with a target machine for the
// target CPU (the host's, or CPUCompileOptions::targetCpu / $DSA_CPU when this host has its features), whose packed
// entries `_mlir_<name>` follow the runtime's calling convention (runtime/cpu: Values.h), so call()/run() are the
// runtime's invokePacked. dsa_cpu_fail is bound to the runtime's dsaCpuRecordFailure, the C interface of
// dsa_cpu_topk_set to the runtime's (RuntimeFunctions.h).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Backend/CPU/CPUModule.h"

#include "Lowering.h"

#include "../Common/HostObject.h"

#include "dsa/ABI/BufferCache.h"
#include "dsa/ABI/RuntimeErrors.h"
#include "dsa/ABI/RuntimeFunctions.h"
#include "dsa/Runtime/CPU/HostFeatures.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Support/TargetSelect.h"
#include <cstdlib>
#include <string>

namespace dsa::cpu {

struct CPUModule::Impl {
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::vector<FunctionSignature> functions;
  std::vector<PackedFunction> entries;
  std::string lowered;
};

CPUModule::CPUModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CPUModule::~CPUModule() = default;

std::vector<std::string> CPUModule::functionNames() const {
  std::vector<std::string> names;
  for (const FunctionSignature &f : impl_->functions)
    names.push_back(f.name);
  return names;
}

const FunctionSignature *CPUModule::signature(const std::string &name) const {
  for (const FunctionSignature &f : impl_->functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

const std::string &CPUModule::loweredModule() const { return impl_->lowered; }

Result<std::vector<dsa::Tensor>> CPUModule::call(const std::string &name, const std::vector<dsa::Tensor> &args,
                                                    interp::ProbeLog *probes) const {
  std::vector<HostValue> values(args.begin(), args.end());
  return run(name, values, probes);
}

Result<std::vector<dsa::Tensor>> CPUModule::run(const std::string &name, const std::vector<HostValue> &args,
                                                   interp::ProbeLog *probes) const {
  for (size_t i = 0; i < impl_->functions.size(); ++i) {
    if (impl_->functions[i].name != name)
      continue;
    std::vector<NamedTensor> named;
    Result<std::vector<dsa::Tensor>> results =
        invokePacked(impl_->functions[i], impl_->entries[i], args, probes ? &named : nullptr, &dsa_cpu_free);
    if (results && probes)
      for (NamedTensor &p : named)
        probes->push_back(interp::ProbeRecord{std::move(p.name), std::move(p.value)});
    return results;
  }
  std::string known;
  for (const FunctionSignature &f : impl_->functions)
    known += (known.empty() ? "@" : ", @") + f.name;
  return makeError("cpu backend: no function @" + name + " in the module (it has " +
                   (known.empty() ? std::string("none") : known) + ")");
}

Result<std::vector<HostValue>> CPUModule::runValues(const std::string &name, const std::vector<HostValue> &args,
                                                   interp::ProbeLog *probes) const {
  for (size_t i = 0; i < impl_->functions.size(); ++i) {
    if (impl_->functions[i].name != name)
      continue;
    std::vector<NamedTensor> named;
    Result<std::vector<HostValue>> results =
        invokePackedValues(impl_->functions[i], impl_->entries[i], args, probes ? &named : nullptr,
                           &dsa_cpu_free);
    if (results && probes)
      for (NamedTensor &p : named)
        probes->push_back(interp::ProbeRecord{std::move(p.name), std::move(p.value)});
    return results;
  }
  Result<std::vector<dsa::Tensor>> unknown = run(name, args, probes);
  return makeError(unknown ? "cpu backend: no function @" + name : unknown.error());
}

Result<std::unique_ptr<CPUModule>> compileForCPU(mlir::ModuleOp module, const CPUCompileOptions &options) {
  Result<LoweredModule> lowered = lowerForCPU(module, options);
  if (!lowered)
    return makeError(lowered.error());
  const mlir::dsa::CPUTarget &target = lowered->target;
  // The JIT runs the code here: a CPU whose features this host lacks would stop at the first such instruction.
  if (!target.host)
    if (Status st = checkHostHasFeatures("cpu backend: JIT code", target.cpu, target.enabledFeatures()); !st)
      return makeError(st.error() + " (JIT code runs on this host; a step library can be built for another CPU)");
  auto impl = std::make_unique<CPUModule::Impl>();
  impl->functions = std::move(lowered->functions);
  impl->lowered = std::move(lowered->text);

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  const unsigned opt = std::min(options.optLevel, 3u);
  // The engine's code generator: the target CPU with exactly its features (ExecutionEngine's default would be the
  // host's; every function also carries target_cpu / target_features, which override a target machine's).
  llvm::orc::JITTargetMachineBuilder builder{llvm::Triple(llvm::sys::getProcessTriple())};
  builder.setCPU(target.cpu);
  for (const std::string &f : target.features)
    builder.getFeatures().AddFeature(f);
  builder.setCodeGenOptLevel(static_cast<llvm::CodeGenOptLevel>(opt));
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> tm = builder.createTargetMachine();
  if (!tm)
    return makeError("cpu backend: no target machine for " + target.cpu + ": " + llvm::toString(tm.takeError()));
  // Optimised, then checked for bf16 conversions left to LLVM before any code is generated (the engine compiles
  // lazily, at the first lookup below). The engine cannot take an error from its transformer: it is kept here.
  auto optimize = mlir::makeOptimizingTransformer(opt, /*sizeLevel=*/0, /*targetMachine=*/nullptr);
  std::string irError;
  auto transformer = [&](llvm::Module *m) -> llvm::Error {
    if (llvm::Error err = optimize(m))
      return err;
    if (Status st = backend::checkNoBf16Conversions(*m, "cpu backend"); !st)
      irError = st.error();
    // malloc / free as dsa_cpu_alloc / dsa_cpu_free (the buffer cache, bound below), once LLVM has optimised.
    else if (Status st = backend::routeAllocationsToBufferCache(*m, "cpu backend"); !st)
      irError = st.error();
    return llvm::Error::success();
  };
  mlir::ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = static_cast<llvm::CodeGenOptLevel>(opt);
  engineOptions.enableGDBNotificationListener = false;
  // DSA_JIT_PERF=1: LLVM's perf listener (jit-<pid>.dump for `perf record -k 1` + `perf inject --jit`), so that
  // profiles name the JIT's functions (the step, and with parallel=true each OpenMP region) instead of [JIT].
  const char *perfEnv = std::getenv("DSA_JIT_PERF");
  engineOptions.enablePerfNotificationListener = perfEnv && std::string(perfEnv) == "1";
  std::string openmpLib;
  llvm::SmallVector<llvm::StringRef, 1> sharedLibs;
  if (options.parallel) {
    Result<std::string> lib = findOpenMPRuntime();
    if (!lib)
      return makeError(lib.error());
    openmpLib = lib.take();
    sharedLibs.push_back(openmpLib);
    engineOptions.sharedLibPaths = sharedLibs;
  }
  auto engine = mlir::ExecutionEngine::create(*lowered->module, engineOptions, std::move(*tm));
  if (!engine)
    return makeError("cpu backend: JIT compilation failed: " + llvm::toString(engine.takeError()));
  if (!irError.empty())
    return makeError(irError);
  impl->engine = std::move(*engine);
  impl->engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    symbols[interner(abi::kFailSymbol)] = {llvm::orc::ExecutorAddr::fromPtr(&dsaCpuRecordFailure),
                                      llvm::JITSymbolFlags::Exported};
    // The compiled code's malloc and free (routeAllocationsToBufferCache): core's dsa/ABI/BufferCache.h.
    symbols[interner(abi::kAllocSymbol)] = {llvm::orc::ExecutorAddr::fromPtr(&dsa_cpu_alloc),
                                            llvm::JITSymbolFlags::Exported};
    symbols[interner(abi::kFreeSymbol)] = {llvm::orc::ExecutorAddr::fromPtr(&dsa_cpu_free),
                                           llvm::JITSymbolFlags::Exported};
    // The runtime functions of RuntimeFunctions.h, called through their C interface (memref descriptors by pointer).
    symbols[interner(abi::kTopkEntrySymbol)] = {
        llvm::orc::ExecutorAddr::fromPtr(&_mlir_ciface_dsa_cpu_topk_set), llvm::JITSymbolFlags::Exported};
    return symbols;
  });
  impl->engine->initialize();
  for (const FunctionSignature &sig : impl->functions) {
    auto fn = impl->engine->lookupPacked(sig.name);
    if (!fn)
      return makeError("cpu backend: JIT lookup of @" + sig.name + " failed: " + llvm::toString(fn.takeError()));
    impl->entries.push_back(*fn);
  }
  if (!irError.empty()) // should the transformer have run at a lookup rather than in create
    return makeError(irError);
  return std::unique_ptr<CPUModule>(new CPUModule(std::move(impl)));
}

} // namespace dsa::cpu
