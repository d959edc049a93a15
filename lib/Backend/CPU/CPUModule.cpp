//===- CPUModule.cpp - JIT execution of dsa modules on the CPU ----------------===//
//
// compileForCPU: clone, --dsa-cpu-pipeline, MLIR ExecutionEngine (ORC JIT, host CPU). call(): Tensors -> expanded
// memref descriptors for the packed entry `_mlir_<name>` (one void* per LLVM argument, then one for the result
// struct), results read back through their descriptors (offset, sizes, strides) and freed.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Backend/CPU/CPUModule.h"

#include "dsa/Backend/CPU/RuntimeErrors.h"
#include "dsa/Conversion/Passes.h"
#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"
#include "dsa/Numerics/BF16.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"

#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <set>

namespace dsa::cpu {

namespace {

using interp::ElementType;
using interp::Tensor;

/// The first failed run-time check of the current call on this thread (0 = none).
thread_local int32_t tFirstFailure = 0;

/// The compiled code's dsa_cpu_fail (RuntimeErrors.h).
void dsaCpuFailHook(int32_t code) {
  if (tFirstFailure == 0)
    tFirstFailure = code;
}

/// One argument or result of a callable function.
struct ValueKind {
  bool isTensor = false;
  ElementType elem = ElementType::F32;
  std::vector<int64_t> shape; ///< tensors: the static sizes, -1 for a dynamic one
  std::string typeString;     ///< the MLIR spelling, for messages
};

struct FunctionSig {
  std::string name;
  std::vector<ValueKind> args;
  /// The function's results, then one per kept probe (probesAsResults).
  std::vector<ValueKind> results;
  size_t numResults = 0;                ///< the function's own results (the first ones of `results`)
  std::vector<std::string> probeNames; ///< the names of the kept probes, in result order
  void (*packed)(void **) = nullptr;
};

int64_t elementBytes(ElementType t) {
  switch (t) {
  case ElementType::BF16:
    return 2;
  case ElementType::F32:
  case ElementType::I32:
    return 4;
  case ElementType::I1:
    return 1;
  case ElementType::I64:
  case ElementType::Index:
    return 8;
  }
  return 8;
}

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

std::string typeString(mlir::Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

Result<ValueKind> kindOf(mlir::Type t, const std::string &what) {
  ValueKind k;
  k.typeString = typeString(t);
  mlir::Type elem = t;
  if (auto ranked = llvm::dyn_cast<mlir::RankedTensorType>(t)) {
    k.isTensor = true;
    for (int64_t d : ranked.getShape())
      k.shape.push_back(mlir::ShapedType::isDynamic(d) ? -1 : d);
    elem = ranked.getElementType();
  }
  std::optional<ElementType> e = elementTypeOf(elem);
  if (!e || (!k.isTensor && *e == ElementType::BF16))
    return makeError(what + " has type " + k.typeString +
                     ", which the CPU backend cannot pass (ranked tensors of bf16/f32/i1/i32/i64/index, scalars "
                     "i64/index/i32/i1/f32)");
  k.elem = *e;
  return k;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s + "]";
}

/// Appends one element of `t` (flat index i) to `dst` in the memory format of its element type.
void storeElement(const Tensor &t, int64_t i, uint8_t *dst) {
  switch (t.elementType()) {
  case ElementType::BF16: {
    uint16_t bits = numerics::f32ToBf16Bits(t.floats()[i]);
    std::memcpy(dst, &bits, 2);
    return;
  }
  case ElementType::F32:
    std::memcpy(dst, &t.floats()[i], 4);
    return;
  case ElementType::I1:
    *dst = t.ints()[i] ? 1 : 0;
    return;
  case ElementType::I32: {
    int32_t v = static_cast<int32_t>(t.ints()[i]);
    std::memcpy(dst, &v, 4);
    return;
  }
  case ElementType::I64:
  case ElementType::Index:
    std::memcpy(dst, &t.ints()[i], 8);
    return;
  }
}

double loadFloat(ElementType t, const uint8_t *src) {
  if (t == ElementType::BF16) {
    uint16_t bits;
    std::memcpy(&bits, src, 2);
    return numerics::bf16BitsToF32(bits);
  }
  float v;
  std::memcpy(&v, src, 4);
  return v;
}

int64_t loadInt(ElementType t, const uint8_t *src) {
  switch (t) {
  case ElementType::I1:
    return (*src & 1) ? 1 : 0;
  case ElementType::I32: {
    int32_t v;
    std::memcpy(&v, src, 4);
    return v;
  }
  default: {
    int64_t v;
    std::memcpy(&v, src, 8);
    return v;
  }
  }
}

/// Aligns `offset` up to `align` (a power of two).
size_t alignUp(size_t offset, size_t align) { return (offset + align - 1) & ~(align - 1); }

/// Size and alignment of a value of `kind` in the LLVM result struct.
std::pair<size_t, size_t> fieldLayout(const ValueKind &kind) {
  if (kind.isTensor)
    return {8 * (3 + 2 * kind.shape.size()), 8};
  size_t bytes = static_cast<size_t>(elementBytes(kind.elem));
  return {bytes, bytes};
}

/// Turns the probes of `f`'s entry block into extra results (appended in program order) and records their names
/// and kinds in `sig`.
Status probesToResults(mlir::func::FuncOp f, FunctionSig &sig) {
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

struct CPUModule::Impl {
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::vector<FunctionSig> functions;
  std::string lowered;
};

CPUModule::CPUModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CPUModule::~CPUModule() = default;

std::vector<std::string> CPUModule::functionNames() const {
  std::vector<std::string> names;
  for (const FunctionSig &f : impl_->functions)
    names.push_back(f.name);
  return names;
}

const std::string &CPUModule::loweredModule() const { return impl_->lowered; }

std::shared_ptr<const CPUBuffer> CPUBuffer::fromTensor(const Tensor &t) {
  auto buffer = std::shared_ptr<CPUBuffer>(new CPUBuffer());
  buffer->type_ = t.elementType();
  buffer->shape_ = t.shape();
  const int64_t n = t.numElements(), eb = elementBytes(t.elementType());
  buffer->storage_.assign(static_cast<size_t>((n * eb + 7) / 8 + 1), 0);
  uint8_t *data = reinterpret_cast<uint8_t *>(buffer->storage_.data());
  for (int64_t e = 0; e < n; ++e)
    storeElement(t, e, data + e * eb);
  return buffer;
}

Result<std::vector<Tensor>> CPUModule::call(const std::string &name, const std::vector<Tensor> &args,
                                            interp::ProbeLog *probes) const {
  std::vector<CPUValue> values(args.begin(), args.end());
  return run(name, values, probes);
}

Result<std::vector<Tensor>> CPUModule::run(const std::string &name, const std::vector<CPUValue> &args,
                                           interp::ProbeLog *probes) const {
  const FunctionSig *fn = nullptr;
  for (const FunctionSig &f : impl_->functions)
    if (f.name == name)
      fn = &f;
  if (!fn) {
    std::string known;
    for (const FunctionSig &f : impl_->functions)
      known += (known.empty() ? "@" : ", @") + f.name;
    return makeError("cpu backend: no function @" + name + " in the module (it has " +
                     (known.empty() ? std::string("none") : known) + ")");
  }
  const std::string where = "cpu backend: @" + name + ": ";
  if (args.size() != fn->args.size())
    return makeError(where + std::to_string(args.size()) + " arguments given, the function takes " +
                     std::to_string(fn->args.size()));

  // Argument checks, then the buffers and the expanded LLVM arguments (each slot is one 8-byte word).
  size_t numSlots = 0;
  std::vector<std::shared_ptr<const CPUBuffer>> converted(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const ValueKind &k = fn->args[i];
    const std::string what = "argument #" + std::to_string(i);
    const Tensor *t = args[i].tensor();
    const CPUBuffer *b = args[i].buffer();
    if (!t && !b)
      return makeError(where + what + " is a null CPUBuffer");
    const ElementType type = t ? t->elementType() : b->elementType();
    const std::vector<int64_t> &shape = t ? t->shape() : b->shape();
    if (type != k.elem)
      return makeError(where + what + " has element type " + interp::elementTypeName(type) + ", expected " +
                       interp::elementTypeName(k.elem) + " (" + k.typeString + ")");
    if (!k.isTensor) {
      if (!shape.empty() || !t)
        return makeError(where + what + " has shape " + shapeString(shape) + ", expected a scalar (" +
                         k.typeString + ")");
      numSlots += 1;
      continue;
    }
    if (shape.size() != k.shape.size())
      return makeError(where + what + " has rank " + std::to_string(shape.size()) + " (shape " + shapeString(shape) +
                       "), expected " + k.typeString);
    for (size_t d = 0; d < k.shape.size(); ++d)
      if (k.shape[d] >= 0 && shape[d] != k.shape[d])
        return makeError(where + what + " has shape " + shapeString(shape) + ", expected " + k.typeString +
                         " (dimension " + std::to_string(d) + ")");
    numSlots += 3 + 2 * k.shape.size();
  }

  std::vector<int64_t> slots(numSlots);
  std::vector<void *> packed;
  std::set<void *> argAllocations;
  size_t slot = 0;
  auto push = [&](int64_t v) {
    slots[slot] = v;
    packed.push_back(&slots[slot]);
    ++slot;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const ValueKind &k = fn->args[i];
    if (!k.isTensor) {
      int64_t word = 0;
      storeElement(*args[i].tensor(), 0, reinterpret_cast<uint8_t *>(&word));
      push(word);
      continue;
    }
    const CPUBuffer *b = args[i].buffer();
    if (!b) {
      converted[i] = CPUBuffer::fromTensor(*args[i].tensor());
      b = converted[i].get();
    }
    // The compiled code never writes its arguments (bufferization.writable = false): the const_cast only passes
    // the pointer through the memref descriptor.
    void *data = const_cast<void *>(b->data());
    argAllocations.insert(data);
    push(static_cast<int64_t>(reinterpret_cast<intptr_t>(data))); // allocated
    push(static_cast<int64_t>(reinterpret_cast<intptr_t>(data))); // aligned
    push(0);                                                       // offset
    const std::vector<int64_t> &shape = b->shape();
    for (int64_t d : shape)
      push(d);
    std::vector<int64_t> strides(shape.size());
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      strides[d] = stride;
      stride *= shape[d];
    }
    for (int64_t st : strides)
      push(st);
  }

  // The result struct.
  std::vector<size_t> offsets;
  size_t bytes = 0, maxAlign = 1;
  for (const ValueKind &k : fn->results) {
    auto [size, align] = fieldLayout(k);
    bytes = alignUp(bytes, align);
    offsets.push_back(bytes);
    bytes += size;
    maxAlign = std::max(maxAlign, align);
  }
  std::vector<int64_t> resultStorage(alignUp(bytes, maxAlign) / 8 + 1);
  if (!fn->results.empty())
    packed.push_back(resultStorage.data());

  tFirstFailure = 0;
  fn->packed(packed.data());
  const int32_t failure = tFirstFailure;
  tFirstFailure = 0;

  // Read the results back (also after a failed check, to free their buffers).
  const uint8_t *base = reinterpret_cast<const uint8_t *>(resultStorage.data());
  std::vector<Tensor> results;
  std::set<void *> toFree;
  for (size_t r = 0; r < fn->results.size(); ++r) {
    const ValueKind &k = fn->results[r];
    const uint8_t *field = base + offsets[r];
    if (!k.isTensor) {
      if (interp::isFloatType(k.elem)) {
        float v;
        std::memcpy(&v, field, 4);
        results.push_back(Tensor::fromFloats(k.elem, {}, {v}));
      } else {
        results.push_back(Tensor::fromInts(k.elem, {}, {loadInt(k.elem, field)}));
      }
      continue;
    }
    const size_t rank = k.shape.size();
    int64_t words[3 + 2 * 16];
    std::memcpy(words, field, 8 * (3 + 2 * rank));
    void *allocated = reinterpret_cast<void *>(static_cast<intptr_t>(words[0]));
    const uint8_t *aligned = reinterpret_cast<const uint8_t *>(static_cast<intptr_t>(words[1]));
    const int64_t offset = words[2];
    std::vector<int64_t> shape(words + 3, words + 3 + rank);
    std::vector<int64_t> strides(words + 3 + rank, words + 3 + 2 * rank);
    const int64_t eb = elementBytes(k.elem);
    Tensor out(k.elem, shape);
    const int64_t n = out.numElements();
    std::vector<int64_t> index(rank, 0);
    for (int64_t e = 0; e < n; ++e) {
      int64_t at = offset;
      for (size_t d = 0; d < rank; ++d)
        at += index[d] * strides[d];
      const uint8_t *src = aligned + at * eb;
      if (out.isFloat())
        out.floats()[e] = static_cast<float>(loadFloat(k.elem, src));
      else
        out.ints()[e] = loadInt(k.elem, src);
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < shape[d])
          break;
        index[d] = 0;
      }
    }
    results.push_back(std::move(out));
    if (allocated && !argAllocations.count(allocated))
      toFree.insert(allocated);
  }
  // Result buffers belong to the caller (the pipeline's ownership-based deallocation returns owned buffers). Two
  // results may share one (a value returned twice, e.g. a probe of a result): free each once, after every read.
  for (void *p : toFree)
    std::free(p);
  if (failure != 0)
    return makeError(where + "run-time check failed: " + runtimeErrorMessage(failure));
  if (probes)
    for (size_t p = 0; p < fn->probeNames.size(); ++p)
      probes->push_back(interp::ProbeRecord{fn->probeNames[p], std::move(results[fn->numResults + p])});
  results.resize(fn->numResults);
  return results;
}

Result<std::unique_ptr<CPUModule>> compileForCPU(mlir::ModuleOp module, const CPUCompileOptions &options) {
  mlir::MLIRContext *ctx = module.getContext();
  {
    mlir::DialectRegistry registry;
    mlir::registerAllDialects(registry);
    mlir::registerAllExtensions(registry);
    mlir::registerBuiltinDialectTranslation(registry);
    mlir::registerLLVMDialectTranslation(registry);
    mlir::registerOpenMPDialectTranslation(registry);
    ctx->appendDialectRegistry(registry);
  }
  std::string diagnostics;
  llvm::raw_string_ostream diagOs(diagnostics);
  mlir::ScopedDiagnosticHandler handler(ctx, [&](mlir::Diagnostic &d) {
    diagOs << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });

  auto impl = std::make_unique<CPUModule::Impl>();
  for (mlir::func::FuncOp f : module.getOps<mlir::func::FuncOp>()) {
    if (f.isDeclaration() || !f.isPublic())
      continue;
    FunctionSig sig;
    sig.name = f.getName().str();
    mlir::FunctionType type = f.getFunctionType();
    for (unsigned i = 0; i < type.getNumInputs(); ++i) {
      Result<ValueKind> k = kindOf(type.getInput(i), "@" + sig.name + " argument #" + std::to_string(i));
      if (!k)
        return makeError("cpu backend: " + k.error());
      sig.args.push_back(k.take());
    }
    for (unsigned i = 0; i < type.getNumResults(); ++i) {
      Result<ValueKind> k = kindOf(type.getResult(i), "@" + sig.name + " result #" + std::to_string(i));
      if (!k)
        return makeError("cpu backend: " + k.error());
      if (k->isTensor && k->shape.size() > 16)
        return makeError("cpu backend: @" + sig.name + " result #" + std::to_string(i) + " has rank > 16");
      sig.results.push_back(k.take());
    }
    sig.numResults = sig.results.size();
    impl->functions.push_back(std::move(sig));
  }
  if (impl->functions.empty())
    return makeError("cpu backend: the module has no public function with a body to compile");

  mlir::OwningOpRef<mlir::ModuleOp> lowered(module.clone());
  // Arguments are read-only (CPUBuffers are shared between calls): bufferization copies instead of writing them.
  for (mlir::func::FuncOp f : lowered->getOps<mlir::func::FuncOp>()) {
    if (f.isDeclaration())
      continue;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (llvm::isa<mlir::TensorType>(f.getArgument(i).getType()))
        f.setArgAttr(i, "bufferization.writable", mlir::BoolAttr::get(ctx, false));
  }
  if (options.probesAsResults) {
    mlir::PassManager decompose(ctx);
    decompose.addPass(mlir::dsa::createDSADecomposeAttention());
    if (mlir::failed(decompose.run(*lowered)))
      return makeError("cpu backend: dsa-decompose-attention failed:\n" + diagnostics);
    for (FunctionSig &sig : impl->functions) {
      Status st = probesToResults(lowered->lookupSymbol<mlir::func::FuncOp>(sig.name), sig);
      if (!st)
        return makeError("cpu backend: " + st.error());
    }
  }
  mlir::PassManager pm(ctx);
  mlir::dsa::buildDSACPUPipeline(pm, options.parallel);
  if (mlir::failed(pm.run(*lowered)))
    return makeError("cpu backend: --dsa-cpu-pipeline failed:\n" + diagnostics);
  {
    llvm::raw_string_ostream os(impl->lowered);
    lowered->print(os);
  }

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  const unsigned opt = std::min(options.optLevel, 3u);
  auto transformer = mlir::makeOptimizingTransformer(opt, /*sizeLevel=*/0, /*targetMachine=*/nullptr);
  mlir::ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = static_cast<llvm::CodeGenOptLevel>(opt);
  engineOptions.enableGDBNotificationListener = false;
  engineOptions.enablePerfNotificationListener = false;
  std::string openmpLib;
  llvm::SmallVector<llvm::StringRef, 1> sharedLibs;
  if (options.parallel) {
    std::vector<std::string> candidates;
    if (const char *env = std::getenv("DSA_OPENMP_LIB"))
      candidates.push_back(env);
    else
      candidates = {"/usr/lib/llvm-22/lib/libomp.so", "/usr/lib/x86_64-linux-gnu/libomp.so.5",
                    "/usr/lib/x86_64-linux-gnu/libiomp5.so"};
    for (const std::string &c : candidates)
      if (llvm::sys::fs::exists(c)) {
        openmpLib = c;
        break;
      }
    if (openmpLib.empty()) {
      std::string list;
      for (const std::string &c : candidates)
        list += (list.empty() ? "" : ", ") + c;
      return makeError("cpu backend: parallel needs an OpenMP runtime; none of " + list +
                       " exists (set DSA_OPENMP_LIB to libomp's path)");
    }
    sharedLibs.push_back(openmpLib);
    engineOptions.sharedLibPaths = sharedLibs;
  }
  auto engine = mlir::ExecutionEngine::create(*lowered, engineOptions);
  if (!engine)
    return makeError("cpu backend: JIT compilation failed: " + llvm::toString(engine.takeError()) + "\n" +
                     diagnostics);
  impl->engine = std::move(*engine);
  impl->engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    symbols[interner(kFailSymbol)] = {llvm::orc::ExecutorAddr::fromPtr(&dsaCpuFailHook),
                                      llvm::JITSymbolFlags::Exported};
    return symbols;
  });
  impl->engine->initialize();
  for (FunctionSig &sig : impl->functions) {
    auto fn = impl->engine->lookupPacked(sig.name);
    if (!fn)
      return makeError("cpu backend: JIT lookup of @" + sig.name + " failed: " + llvm::toString(fn.takeError()));
    sig.packed = *fn;
  }
  return std::unique_ptr<CPUModule>(new CPUModule(std::move(impl)));
}

} // namespace dsa::cpu
