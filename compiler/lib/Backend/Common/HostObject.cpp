//===- HostObject.cpp - shared AOT steps of the CPU and GPU step libraries --------------------------------===//
#include "HostObject.h"

#include "dsa/ABI/BufferCache.h"
#include "dsa/ABI/RuntimeErrors.h"
#include "dsa/ABI/StepLibrary.h"

#include "dsa/Conversion/CPUTarget.h"

#include "mlir/ExecutionEngine/OptUtils.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/Transforms/IPO/Internalize.h"
#include "llvm/TargetParser/Host.h"

#include <cstdlib>

#include <algorithm>
#include <set>

namespace dsa::backend {

Result<std::unique_ptr<llvm::TargetMachine>> createHostTargetMachine(const HostTarget &target, unsigned optLevel,
                                                                     std::string &resolvedCpu, const std::string &what) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget)
    return makeError(what + ": no LLVM target for " + triple.str() + ": " + error);
  std::string features;
  if (target.cpu.empty()) {
    resolvedCpu = llvm::sys::getHostCPUName().str();
    for (const auto &f : llvm::sys::getHostCPUFeatures())
      features += (features.empty() ? "" : ",") + std::string(f.second ? "+" : "-") + f.first().str();
  } else {
    resolvedCpu = target.cpu;
    features = target.features;
  }
  const unsigned opt = std::min(optLevel, 3u);
  std::unique_ptr<llvm::TargetMachine> tm(llvmTarget->createTargetMachine(
      triple, resolvedCpu, features, llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
      static_cast<llvm::CodeGenOptLevel>(opt)));
  if (!tm)
    return makeError(what + ": cannot create a target machine for " + triple.str() + " / " + resolvedCpu);
  return tm;
}

void configureModule(llvm::Module &m, llvm::TargetMachine &tm) {
  m.setTargetTriple(tm.getTargetTriple());
  m.setDataLayout(tm.createDataLayout());
}

void addPackedEntries(llvm::Module &m, const std::vector<runtime::FunctionSignature> &functions) {
  llvm::LLVMContext &ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Type *ptr = b.getPtrTy();
  for (const runtime::FunctionSignature &sig : functions) {
    llvm::Function *fn = m.getFunction(sig.name);
    if (!fn || fn->isDeclaration())
      continue;
    auto *entry = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr}, false),
                                         llvm::GlobalValue::ExternalLinkage, "_mlir_" + sig.name, m);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
    llvm::Value *list = entry->getArg(0);
    llvm::SmallVector<llvm::Value *> args;
    for (auto [i, arg] : llvm::enumerate(fn->args())) {
      llvm::Value *slot = b.CreateLoad(ptr, b.CreateGEP(ptr, list, b.getInt64(i)));
      args.push_back(b.CreateLoad(arg.getType(), slot));
    }
    llvm::Value *result = b.CreateCall(fn, args);
    if (!result->getType()->isVoidTy()) {
      llvm::Value *slot = b.CreateLoad(ptr, b.CreateGEP(ptr, list, b.getInt64(fn->arg_size())));
      b.CreateStore(result, slot);
    }
    b.CreateRetVoid();
  }
}

Status optimizeAndEmitObject(llvm::Module &m, llvm::TargetMachine &tm, unsigned optLevel, const std::string &objPath,
                             const std::string &what, const std::function<Status(llvm::Module &)> &beforeCodegen) {
  const unsigned opt = std::min(optLevel, 3u);
  if (llvm::Error err = mlir::makeOptimizingTransformer(opt, /*sizeLevel=*/0, &tm)(&m))
    return makeError(what + ": LLVM optimisation failed: " + llvm::toString(std::move(err)));
  if (beforeCodegen)
    if (Status st = beforeCodegen(m); !st)
      return st;
  std::error_code ec;
  llvm::raw_fd_ostream os(objPath, ec, llvm::sys::fs::OF_None);
  if (ec)
    return makeError(what + ": cannot write '" + objPath + "': " + ec.message());
  llvm::legacy::PassManager codegen;
  if (tm.addPassesToEmitFile(codegen, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return makeError(what + ": the target cannot emit object files");
  codegen.run(m);
  os.flush();
  if (os.has_error())
    return makeError(what + ": writing '" + objPath + "' failed: " + os.error().message());
  return Status::success();
}

Status routeAllocationsToBufferCache(llvm::Module &m, const std::string &what) {
  const std::pair<const char *, const char *> renames[] = {{"malloc", abi::kAllocSymbol}, {"free", abi::kFreeSymbol}};
  for (const auto &[from, to] : renames) {
    if (m.getNamedValue(to))
      return makeError(what + ": the module already has a symbol named " + to);
    llvm::Function *f = m.getFunction(from);
    if (!f)
      continue;
    if (!f->isDeclaration())
      return makeError(what + ": the module defines " + from + " (expected only its declaration)");
    f->setName(to);
  }
  return Status::success();
}

namespace {

bool hasBfloat(llvm::Type *t) {
  if (t->isBFloatTy())
    return true;
  if (auto *v = llvm::dyn_cast<llvm::VectorType>(t))
    return v->getElementType()->isBFloatTy();
  if (auto *a = llvm::dyn_cast<llvm::ArrayType>(t))
    return hasBfloat(a->getElementType());
  if (auto *st = llvm::dyn_cast<llvm::StructType>(t))
    return llvm::any_of(st->elements(), hasBfloat);
  return false;
}

} // namespace

Status checkNoBf16Conversions(const llvm::Module &m, const std::string &what) {
  const std::string why = ": x86 code generation converts bf16 values (a call of __truncsfbf2, or vcvtneps2bf16, "
                          "which flushes denormals to zero), even one that only crosses blocks; --dsa-cpu-pipeline "
                          "expands every conversion and carries bf16 data as i16 (dsa-cpu-bf16-as-i16)";
  for (const llvm::GlobalVariable &g : m.globals())
    if (hasBfloat(g.getValueType()))
      return makeError(what + ": the global @" + g.getName().str() + " holds bfloat values" + why);
  for (const llvm::Function &f : m) {
    if (mlir::dsa::isBf16ConversionRoutine(f.getName()))
      return makeError(what + ": the module references the bf16 conversion routine " + f.getName().str() + why);
    if (hasBfloat(f.getFunctionType()->getReturnType()) ||
        llvm::any_of(f.getFunctionType()->params(), [](llvm::Type *t) { return hasBfloat(t); }))
      return makeError(what + ": @" + f.getName().str() + " takes or returns bfloat values" + why);
    for (const llvm::Instruction &inst : llvm::instructions(f)) {
      bool bf16 = hasBfloat(inst.getType());
      for (const llvm::Value *op : inst.operands())
        bf16 = bf16 || hasBfloat(op->getType());
      if (const auto *gep = llvm::dyn_cast<llvm::GetElementPtrInst>(&inst))
        bf16 = bf16 || hasBfloat(gep->getSourceElementType());
      if (const auto *alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst))
        bf16 = bf16 || hasBfloat(alloca->getAllocatedType());
      if (!bf16)
        continue;
      std::string text;
      llvm::raw_string_ostream os(text);
      inst.print(os);
      return makeError(what + ": @" + f.getName().str() + " holds a bfloat value (" +
                       llvm::StringRef(text).trim().str() + ")" + why);
    }
  }
  return Status::success();
}

Status linkSharedObject(const std::string &objPath, const std::string &soPath, const std::vector<std::string> &extraArgs,
                        const std::string &what) {
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    return makeError(what + ": no C compiler 'cc' on PATH to link " + soPath + " from " + objPath);
  std::vector<std::string> argStrings = {*cc, "-shared", "-o", soPath, objPath};
  argStrings.insert(argStrings.end(), extraArgs.begin(), extraArgs.end());
  llvm::SmallVector<llvm::StringRef> args(argStrings.begin(), argStrings.end());
  std::string execError;
  int status = llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0, &execError);
  if (status != 0) {
    std::string cmd;
    for (const std::string &a : argStrings)
      cmd += (cmd.empty() ? "" : " ") + a;
    return makeError(what + ": linking failed (exit status " + std::to_string(status) + "): " + cmd +
                     (execError.empty() ? "" : ": " + execError));
  }
  return Status::success();
}

void defineFailHook(llvm::Module &m, FailHookEnd end, bool always) {
  llvm::LLVMContext &ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::PointerType *ptr = b.getPtrTy();
  auto *hook = new llvm::GlobalVariable(m, ptr, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
                                        llvm::ConstantPointerNull::get(ptr), abi::kFailHookSymbol);
  llvm::FunctionType *type = llvm::FunctionType::get(b.getVoidTy(), {b.getInt32Ty()}, false);
  llvm::Function *fail = m.getFunction(abi::kFailSymbol);
  if (!fail && always)
    fail = llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage, abi::kFailSymbol, m);
  if (!fail || !fail->isDeclaration())
    return;
  fail->setLinkage(llvm::GlobalValue::InternalLinkage);
  auto *entry = llvm::BasicBlock::Create(ctx, "entry", fail);
  auto *call = llvm::BasicBlock::Create(ctx, "hook", fail);
  auto *done = llvm::BasicBlock::Create(ctx, end == FailHookEnd::Abort ? "abort" : "done", fail);
  b.SetInsertPoint(entry);
  llvm::Value *target = b.CreateLoad(ptr, hook);
  b.CreateCondBr(b.CreateIsNotNull(target), call, done);
  b.SetInsertPoint(call);
  b.CreateCall(fail->getFunctionType(), target, {fail->getArg(0)});
  b.CreateBr(done);
  b.SetInsertPoint(done);
  if (end == FailHookEnd::Abort) {
    b.CreateCall(m.getOrInsertFunction("abort", llvm::FunctionType::get(b.getVoidTy(), false)));
    b.CreateUnreachable();
  } else {
    b.CreateRetVoid();
  }
}

void embedSignature(llvm::Module &m, const std::string &text) {
  llvm::Constant *data = llvm::ConstantDataArray::getString(m.getContext(), text, /*AddNull=*/true);
  auto *global = new llvm::GlobalVariable(m, data->getType(), /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
                                          data, abi::kStepLibrarySignatureSymbol);
  global->setAlignment(llvm::Align(1));
}

void keepOnlyEntryPoints(llvm::Module &m, const std::vector<runtime::FunctionSignature> &functions) {
  std::set<std::string> keep = {abi::kFailHookSymbol, abi::kStepLibrarySignatureSymbol};
  for (const runtime::FunctionSignature &f : functions)
    keep.insert(abi::kPackedEntryPrefix + f.name);
  llvm::internalizeModule(m, [&](const llvm::GlobalValue &gv) { return keep.count(gv.getName().str()) > 0; });
}

Result<std::vector<std::string>> runtimeLinkArguments() {
  const char *names[] = {"libDSACPURuntime.a", "libDSANumerics.a"};
  auto in = [&](const std::string &dir) {
    return std::vector<std::string>{dir + "/" + names[0], dir + "/" + names[1]};
  };
  std::vector<std::vector<std::string>> candidates;
  if (const char *dir = std::getenv("DSA_RUNTIME_ARCHIVE_DIR"); dir && *dir)
    candidates.push_back(in(dir));
  else {
    candidates.push_back({DSA_CPU_RUNTIME_ARCHIVE, DSA_NUMERICS_ARCHIVE});
    candidates.push_back(in(DSA_INSTALL_LIBDIR));
  }
  std::string looked;
  for (const std::vector<std::string> &c : candidates) {
    if (llvm::sys::fs::exists(c[0]) && llvm::sys::fs::exists(c[1])) {
      std::vector<std::string> args = c;
      for (const char *arg : {"-Wl,--exclude-libs,ALL", "-lstdc++", "-lm"})
        args.push_back(arg);
      return args;
    }
    looked += (looked.empty() ? "" : ", ") + c[0] + " + " + c[1];
  }
  return makeError("the runtime archives for step libraries are missing (looked for " + looked +
                   "; set DSA_RUNTIME_ARCHIVE_DIR to the directory holding them)");
}

} // namespace dsa::backend
