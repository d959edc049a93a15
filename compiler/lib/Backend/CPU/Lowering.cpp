//===- Lowering.cpp - shared front of the CPU JIT and AOT paths ----------------===//
//
// Signatures of the callable functions (Values.h calling convention), state bindings of dsa.attention layers,
// probes kept as results, read-only arguments (writable caches, updated in place, for the CPU), and
// --dsa-cpu-pipeline on a clone of the caller's module.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "Lowering.h"

#include "dsa/Conversion/DSAToCPU/InPlaceResults.h"
#include "dsa/Conversion/DSAToCPU/Passes.h"
#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace dsa::cpu {

namespace {

using dsa::ElementType;

std::optional<ElementType> elementTypeOf(mlir::Type t) {
  if (t.isBF16())
    return ElementType::BF16;
  if (t.isF32())
    return ElementType::F32;
  if (t.isIndex())
    return ElementType::Index;
  if (t.isInteger(1))
    return ElementType::I1;
  if (t.isInteger(32))
    return ElementType::I32;
  if (t.isInteger(64))
    return ElementType::I64;
  return std::nullopt;
}

Result<ValueKind> kindOf(mlir::Type t, const std::string &what, const std::string &backend = "CPU") {
  ValueKind k;
  llvm::raw_string_ostream os(k.typeString);
  os << t;
  mlir::Type elem = t;
  if (auto ranked = llvm::dyn_cast<mlir::RankedTensorType>(t)) {
    k.isTensor = true;
    for (int64_t d : ranked.getShape())
      k.shape.push_back(mlir::ShapedType::isDynamic(d) ? -1 : d);
    elem = ranked.getElementType();
    if (k.shape.size() > 16)
      return makeError(what + " has type " + k.typeString + ": rank > 16");
  }
  std::optional<ElementType> e = elementTypeOf(elem);
  if (!e || (!k.isTensor && *e == ElementType::BF16))
    return makeError(what + " has type " + k.typeString + ", which the " + backend +
                     " backend cannot pass (ranked tensors of bf16/f32/i1/i32/i64/index, scalars i64/index/i32/i1/f32)");
  k.elem = *e;
  return k;
}

/// State bindings of `f`: a result returned straight from a dsa.attention's new_ring (new_state[i]) whose ring
/// (state[i]) operand is an argument of `f`.
std::vector<StateBinding> attentionState(mlir::func::FuncOp f) {
  std::vector<StateBinding> state;
  auto ret = llvm::dyn_cast<mlir::func::ReturnOp>(f.getBody().back().getTerminator());
  if (!ret)
    return state;
  for (auto [resultIndex, value] : llvm::enumerate(ret.getOperands())) {
    auto att = value.getDefiningOp<mlir::dsa::AttentionOp>();
    if (!att)
      continue;
    mlir::Value operand;
    if (value == att.getNewRing())
      operand = att.getRing();
    for (auto [i, r] : llvm::enumerate(att.getNewState()))
      if (value == r)
        operand = att.getState()[i];
    auto arg = llvm::dyn_cast_or_null<mlir::BlockArgument>(operand);
    if (arg && arg.getOwner() == &f.front())
      state.push_back(StateBinding{static_cast<int64_t>(arg.getArgNumber()), static_cast<int64_t>(resultIndex)});
  }
  return state;
}

/// The arguments of `f` that are a compressed dsa.attention's compressed-KV or index-key cache: the last two
/// `state` operands (DSAOps.td: kv_state, score_state for ratio >= 2, then the two caches), when they are arguments.
std::vector<int64_t> attentionCaches(mlir::func::FuncOp f) {
  std::vector<int64_t> caches;
  f.walk([&](mlir::dsa::AttentionOp att) {
    auto state = att.getState();
    if (state.size() < 2)
      return;
    for (size_t i = state.size() - 2; i < state.size(); ++i) {
      auto arg = llvm::dyn_cast<mlir::BlockArgument>(state[i]);
      if (arg && arg.getOwner() == &f.front() &&
          std::find(caches.begin(), caches.end(), arg.getArgNumber()) == caches.end())
        caches.push_back(static_cast<int64_t>(arg.getArgNumber()));
    }
  });
  std::sort(caches.begin(), caches.end());
  return caches;
}

/// Turns the probes of `f`'s entry block into extra results (appended in program order) and records their names
/// and kinds in `sig`.
Status probesToResults(mlir::func::FuncOp f, FunctionSignature &sig) {
  std::vector<mlir::dsa::ProbeOp> probes;
  bool nested = false;
  f.walk([&](mlir::dsa::ProbeOp p) {
    if (p->getBlock() != &f.front() || !f.getBody().hasOneBlock())
      nested = true;
    probes.push_back(p);
  });
  if (nested)
    return makeError("@" + sig.name + ": a dsa.probe in a nested region or a multi-block function cannot be kept "
                     "as a result (probesAsResults)");
  if (probes.empty())
    return Status::success();
  auto ret = llvm::dyn_cast<mlir::func::ReturnOp>(f.front().getTerminator());
  if (!ret)
    return makeError("@" + sig.name + ": the body does not end with func.return");
  llvm::SmallVector<mlir::Value> values(ret.getOperands().begin(), ret.getOperands().end());
  for (mlir::dsa::ProbeOp p : probes) {
    Result<ValueKind> k = kindOf(p.getValue().getType(), "@" + sig.name + " probe '" + p.getName().str() + "'");
    if (!k)
      return makeError(k.error());
    sig.results.push_back(k.take());
    sig.probeNames.push_back(p.getName().str());
    values.push_back(p.getValue());
  }
  ret->setOperands(values);
  llvm::SmallVector<mlir::Type> resultTypes;
  for (mlir::Value v : values)
    resultTypes.push_back(v.getType());
  f.setType(mlir::FunctionType::get(f.getContext(), f.getFunctionType().getInputs(), resultTypes));
  for (mlir::dsa::ProbeOp p : probes)
    p.erase();
  return Status::success();
}

} // namespace

void registerCPUBackendDialects(mlir::MLIRContext *ctx) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerOpenMPDialectTranslation(registry);
  ctx->appendDialectRegistry(registry);
}

Result<LoweredModule> prepareModule(mlir::ModuleOp module, bool probesAsResults, const std::string &backend) {
  mlir::MLIRContext *ctx = module.getContext();
  registerCPUBackendDialects(ctx);
  std::string prefix = backend + " backend: ";
  for (char &c : prefix)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string diagnostics;
  llvm::raw_string_ostream diagOs(diagnostics);
  mlir::ScopedDiagnosticHandler handler(ctx, [&](mlir::Diagnostic &d) {
    diagOs << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });

  LoweredModule out;
  for (mlir::func::FuncOp f : module.getOps<mlir::func::FuncOp>()) {
    if (f.isDeclaration() || !f.isPublic())
      continue;
    FunctionSignature sig;
    sig.name = f.getName().str();
    mlir::FunctionType type = f.getFunctionType();
    for (unsigned i = 0; i < type.getNumInputs(); ++i) {
      Result<ValueKind> k = kindOf(type.getInput(i), "@" + sig.name + " argument #" + std::to_string(i), backend);
      if (!k)
        return makeError(prefix + k.error());
      sig.args.push_back(k.take());
    }
    for (unsigned i = 0; i < type.getNumResults(); ++i) {
      Result<ValueKind> k = kindOf(type.getResult(i), "@" + sig.name + " result #" + std::to_string(i), backend);
      if (!k)
        return makeError(prefix + k.error());
      sig.results.push_back(k.take());
    }
    sig.numResults = sig.results.size();
    sig.state = attentionState(f);
    out.cacheArgs.push_back(attentionCaches(f));
    out.functions.push_back(std::move(sig));
  }
  if (out.functions.empty())
    return makeError(prefix + "the module has no public function with a body to compile");

  out.module = mlir::OwningOpRef<mlir::ModuleOp>(module.clone());
  // Arguments are read-only (CPUBuffers are shared between calls): bufferization copies instead of writing them.
  // lowerForCPU then makes a compressed layer's caches writable (updated in place); the GPU backend keeps this.
  for (mlir::func::FuncOp f : out.module->getOps<mlir::func::FuncOp>()) {
    if (f.isDeclaration())
      continue;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (llvm::isa<mlir::TensorType>(f.getArgument(i).getType()))
        f.setArgAttr(i, mlir::bufferization::BufferizationDialect::kWritableAttrName,
                     mlir::BoolAttr::get(ctx, false));
  }
  if (probesAsResults) {
    mlir::PassManager decompose(ctx);
    decompose.addPass(mlir::dsa::createDSADecomposeAttention());
    if (mlir::failed(decompose.run(*out.module)))
      return makeError(prefix + "dsa-decompose-attention failed:\n" + diagnostics);
    for (FunctionSignature &sig : out.functions) {
      Status st = probesToResults(out.module->lookupSymbol<mlir::func::FuncOp>(sig.name), sig);
      if (!st)
        return makeError(prefix + st.error());
    }
  }
  return out;
}

Result<mlir::dsa::CPUTarget> resolveCompileTarget(const CPUCompileOptions &options) {
  std::string name = options.targetCpu;
  bool fromEnv = false;
  if (name.empty()) {
    const char *env = std::getenv("DSA_CPU");
    fromEnv = env && *env;
    name = fromEnv ? env : mlir::dsa::kHostCPU.str();
  }
  std::string error;
  mlir::FailureOr<mlir::dsa::CPUTarget> target = mlir::dsa::resolveCPUTarget(name, error);
  if (mlir::failed(target))
    return makeError("cpu backend: " + error + (fromEnv ? " (from $DSA_CPU)" : ""));
  return *target;
}

Result<LoweredModule> lowerForCPU(mlir::ModuleOp module, const CPUCompileOptions &options) {
  Result<mlir::dsa::CPUTarget> target = resolveCompileTarget(options);
  if (!target)
    return makeError(target.error());
  Result<LoweredModule> prepared = prepareModule(module, options.probesAsResults);
  if (!prepared)
    return prepared;
  LoweredModule out = prepared.take();
  out.target = target.take();
  mlir::MLIRContext *ctx = module.getContext();
  std::string diagnostics;
  llvm::raw_string_ostream diagOs(diagnostics);
  mlir::ScopedDiagnosticHandler handler(ctx, [&](mlir::Diagnostic &d) {
    diagOs << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  // The caches are updated in place: writable, and the function marked for the pipeline's
  // dsa-cpu-drop-in-place-results (Pipeline.cpp), which drops the results that are an argument's buffer.
  for (size_t i = 0; i < out.functions.size() && options.inPlaceCaches; ++i) {
    auto f = out.module->lookupSymbol<mlir::func::FuncOp>(out.functions[i].name);
    if (!f)
      continue;
    for (int64_t a : out.cacheArgs[i])
      f.setArgAttr(static_cast<unsigned>(a), mlir::bufferization::BufferizationDialect::kWritableAttrName,
                   mlir::BoolAttr::get(ctx, true));
    mlir::dsa::setInPlaceArguments(f, out.cacheArgs[i]);
    out.functions[i].writableArgs = out.cacheArgs[i];
  }
  mlir::PassManager pm(ctx);
  mlir::dsa::buildDSACPUPipeline(pm, options.parallel, out.target.host ? mlir::dsa::kHostCPU.str() : out.target.cpu,
                                options.phaseMinRows, options.vectorRegisters);
  if (mlir::failed(pm.run(*out.module)))
    return makeError("cpu backend: --dsa-cpu-pipeline failed:\n" + diagnostics);
  // The dropped results, recorded by the pass per function: the argument of each result, or -1; and the writable
  // arguments the code may actually write (a cache bufferization copied instead is read-only).
  mlir::dsa::InPlaceRecord record = mlir::dsa::takeInPlaceRecord(*out.module);
  for (FunctionSignature &sig : out.functions) {
    auto perResult = record.resultArgs.find(sig.name);
    if (perResult == record.resultArgs.end())
      continue;
    if (perResult->second.size() != sig.results.size())
      return makeError("cpu backend: @" + sig.name + ": the in-place record has " +
                       std::to_string(perResult->second.size()) + " results, the signature " +
                       std::to_string(sig.results.size()));
    for (auto [r, a] : llvm::enumerate(perResult->second))
      if (a >= 0)
        sig.inPlace.push_back(StateBinding{a, static_cast<int64_t>(r)});
  }
  for (FunctionSignature &sig : out.functions) {
    auto written = record.writtenArgs.find(sig.name);
    if (written != record.writtenArgs.end())
      sig.writableArgs.assign(written->second.begin(), written->second.end());
  }

  llvm::raw_string_ostream os(out.text);
  out.module->print(os);
  return out;
}

Result<std::string> findOpenMPRuntime() {
  std::vector<std::string> candidates;
  if (const char *env = std::getenv("DSA_OPENMP_LIB"))
    candidates.push_back(env);
  else
    candidates = {"/usr/lib/llvm-22/lib/libomp.so", "/usr/lib/x86_64-linux-gnu/libomp.so.5",
                  "/usr/lib/x86_64-linux-gnu/libiomp5.so"};
  for (const std::string &c : candidates)
    if (llvm::sys::fs::exists(c))
      return c;
  std::string list;
  for (const std::string &c : candidates)
    list += (list.empty() ? "" : ", ") + c;
  return makeError("cpu backend: parallel needs an OpenMP runtime; none of " + list +
                   " exists (set DSA_OPENMP_LIB to libomp's path)");
}

} // namespace dsa::cpu
