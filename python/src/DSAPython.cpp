//===- DSAPython.cpp - dsa._dsa: the Python package's extension (nanobind) -------------------------------------===//
//
// Thin bindings of the project's public C++ APIs; every rule lives in the libraries, nothing here decides numerics,
// shapes or state. The pure-Python modules python/dsa/*.py wrap this module (numpy arrays, ml_dtypes bf16).
//
// Arrays cross the boundary "raw": a pair (element, array) where element is "bf16", "f32", "i1", "i32", "i64" or
// "index" (dsa::ElementType) and array a C-contiguous numpy array of uint16 (bf16 bit patterns), float32, bool,
// int32, int64, int64. python/dsa/_arrays.py converts numpy / ml_dtypes arrays to and from it.
//
// Errors: every dsa::Result / dsa::Status error and every MLIR error diagnostic becomes dsa.Error (a RuntimeError)
// carrying the library's message, which names the bad argument or field; a failed call changes nothing it was given
// (the runtime's sequences keep their state and position, Sequence.h).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "EmitLibraries.h"
#include "GoldenReplay.h"

#include "dsa/Backend/CPU/CPUModule.h"
#include "dsa/Backend/GPU/GPUStepLibrary.h"
#include "dsa/Conversion/Passes.h"
#include "dsa/Core/Tensor.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"
#include "dsa/Interpreter/Interpreter.h"
#include "dsa/Runtime/CPU/StepLibrary.h"
#include "dsa/Runtime/Host/Batch.h"
#include "dsa/Runtime/Host/Sequence.h"
#include "dsa/Runtime/Host/StackChunk.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace nb = nanobind;
using dsa::ElementType;
using dsa::Tensor;
namespace runtime = dsa::runtime;
namespace interp = dsa::interp;

namespace {

/// dsa.Error.
struct DsaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throwError(const std::string &message) { throw DsaError(message); }

template <typename T> T check(dsa::Result<T> r, const std::string &prefix = "") {
  if (!r)
    throwError(prefix + r.error());
  return r.take();
}
void check(const dsa::Status &s, const std::string &prefix = "") {
  if (!s)
    throwError(prefix + s.error());
}

//===- Arrays ----------------------------------------------------------------------------------------------------===//

using InArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using Raw = std::pair<std::string, nb::object>; // (element, numpy array)

ElementType elementFromName(const std::string &what, const std::string &name) {
  for (ElementType t : {ElementType::BF16, ElementType::F32, ElementType::I1, ElementType::I32, ElementType::I64,
                        ElementType::Index})
    if (name == dsa::elementTypeName(t))
      return t;
  throwError(what + ": unknown element type '" + name + "' (bf16, f32, i1, i32, i64, index)");
}

/// The Tensor of a raw array; errors name `what` (e.g. "x", "args[2]").
Tensor tensorFromRaw(const std::string &what, const std::string &element, const InArray &a) {
  const ElementType type = elementFromName(what, element);
  std::vector<int64_t> shape;
  for (size_t d = 0; d < a.ndim(); ++d)
    shape.push_back(static_cast<int64_t>(a.shape(d)));
  auto expect = [&](nb::dlpack::dtype dt, const char *numpy) {
    if (a.dtype() != dt)
      throwError(what + ": a " + element + " array must be stored as numpy " + numpy);
  };
  Tensor t = check(Tensor::zeros(type, shape), what + ": ");
  const int64_t n = t.numElements();
  switch (type) {
  case ElementType::BF16: {
    expect(nb::dtype<uint16_t>(), "uint16 (bf16 bit patterns)");
    const uint16_t *p = static_cast<const uint16_t *>(a.data());
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t bits = static_cast<uint32_t>(p[i]) << 16;
      std::memcpy(&t.floats()[i], &bits, 4);
    }
    break;
  }
  case ElementType::F32:
    expect(nb::dtype<float>(), "float32");
    if (n)
      std::memcpy(t.floats(), a.data(), static_cast<size_t>(n) * 4);
    break;
  case ElementType::I1: {
    expect(nb::dtype<bool>(), "bool");
    const bool *p = static_cast<const bool *>(a.data());
    for (int64_t i = 0; i < n; ++i)
      t.ints()[i] = p[i] ? 1 : 0;
    break;
  }
  case ElementType::I32: {
    expect(nb::dtype<int32_t>(), "int32");
    const int32_t *p = static_cast<const int32_t *>(a.data());
    for (int64_t i = 0; i < n; ++i)
      t.ints()[i] = p[i];
    break;
  }
  case ElementType::I64:
  case ElementType::Index:
    expect(nb::dtype<int64_t>(), "int64");
    if (n)
      std::memcpy(t.ints(), a.data(), static_cast<size_t>(n) * 8);
    break;
  }
  return t;
}

Tensor tensorFromPair(const std::string &what, const std::pair<std::string, InArray> &raw) {
  return tensorFromRaw(what, raw.first, raw.second);
}

template <typename T> nb::object numpyArray(const Tensor &t, T (*convert)(const Tensor &, int64_t)) {
  const int64_t n = t.numElements();
  T *data = new T[static_cast<size_t>(n > 0 ? n : 1)];
  for (int64_t i = 0; i < n; ++i)
    data[i] = convert(t, i);
  nb::capsule owner(data, [](void *p) noexcept { delete[] static_cast<T *>(p); });
  std::vector<size_t> shape;
  for (int64_t d : t.shape())
    shape.push_back(static_cast<size_t>(d));
  return nb::ndarray<nb::numpy, T>(data, shape.size(), shape.data(), owner).cast();
}

/// The raw array of a Tensor (a copy).
Raw rawFromTensor(const Tensor &t) {
  const std::string element = dsa::elementTypeName(t.elementType());
  switch (t.elementType()) {
  case ElementType::BF16:
    return {element, numpyArray<uint16_t>(t, [](const Tensor &t, int64_t i) {
              uint32_t bits;
              std::memcpy(&bits, &t.floats()[i], 4);
              return static_cast<uint16_t>(bits >> 16); // bf16-exact values: the low half is zero
            })};
  case ElementType::F32:
    return {element, numpyArray<float>(t, [](const Tensor &t, int64_t i) { return t.floats()[i]; })};
  case ElementType::I1:
    return {element, numpyArray<bool>(t, [](const Tensor &t, int64_t i) { return t.ints()[i] != 0; })};
  case ElementType::I32:
    return {element,
            numpyArray<int32_t>(t, [](const Tensor &t, int64_t i) { return static_cast<int32_t>(t.ints()[i]); })};
  case ElementType::I64:
  case ElementType::Index:
    return {element, numpyArray<int64_t>(t, [](const Tensor &t, int64_t i) { return t.ints()[i]; })};
  }
  throwError("unreachable element type");
}

std::vector<Raw> rawsFromTensors(const std::vector<Tensor> &ts) {
  std::vector<Raw> out;
  for (const Tensor &t : ts)
    out.push_back(rawFromTensor(t));
  return out;
}

//===- Modules ---------------------------------------------------------------------------------------------------===//

void registerEverything() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::registerAllPasses();
    mlir::dsa::registerDSAPasses();
    mlir::dsa::registerDSAConversionPasses();
    mlir::dsa::registerDSACPUPipeline();
    mlir::dsa::registerDSAGPUPipeline();
  });
}

std::shared_ptr<mlir::MLIRContext> makeContext() {
  registerEverything();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  registry.insert<mlir::dsa::DSADialect>();
  auto ctx = std::make_shared<mlir::MLIRContext>(registry);
  ctx->loadDialect<mlir::dsa::DSADialect, mlir::func::FuncDialect>();
  return ctx;
}

/// FILE:LINE:COL for a file location (as mlir-opt prints diagnostics), MLIR's form otherwise.
void printLocation(llvm::raw_ostream &os, mlir::Location loc) {
  if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(loc))
    os << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn();
  else
    os << loc;
}

/// Collects the error diagnostics of a context while alive (instead of printing them on stderr).
class Diagnostics {
public:
  explicit Diagnostics(mlir::MLIRContext *ctx)
      : handler_(ctx, [this](mlir::Diagnostic &d) {
          if (d.getSeverity() != mlir::DiagnosticSeverity::Error && d.getSeverity() != mlir::DiagnosticSeverity::Warning)
            return mlir::success();
          llvm::raw_string_ostream os(text_);
          if (!text_.empty())
            os << "\n";
          printLocation(os, d.getLocation());
          os << ": " << (d.getSeverity() == mlir::DiagnosticSeverity::Error ? "error" : "warning") << ": " << d;
          for (mlir::Diagnostic &note : d.getNotes()) {
            os << "\n";
            printLocation(os, note.getLocation());
            os << ": note: " << note;
          }
          return mlir::success();
        }) {}
  /// `message`, then the diagnostics.
  std::string withMessage(const std::string &message) const {
    return text_.empty() ? message : message + ":\n" + text_;
  }
  [[noreturn]] void throwWith(const std::string &message) const { throwError(withMessage(message)); }

private:
  std::string text_;
  mlir::ScopedDiagnosticHandler handler_;
};

/// A module and the context it lives in (one context per parsed or built module; clones share it).
struct Module {
  std::shared_ptr<mlir::MLIRContext> ctx;
  mlir::OwningOpRef<mlir::ModuleOp> op;

  mlir::ModuleOp get() const { return op.get(); }
  std::string print(bool generic) const {
    std::string text;
    llvm::raw_string_ostream os(text);
    mlir::OpPrintingFlags flags;
    if (generic)
      flags.printGenericOpForm();
    get()->print(os, flags);
    return text;
  }
  std::shared_ptr<Module> clone() const {
    auto m = std::make_shared<Module>();
    m->ctx = ctx;
    m->op = mlir::OwningOpRef<mlir::ModuleOp>(get().clone());
    return m;
  }
  mlir::func::FuncOp function(const std::string &name) const {
    auto fn = get().lookupSymbol<mlir::func::FuncOp>(name);
    if (!fn || fn.isExternal()) {
      std::string names;
      for (auto f : get().getOps<mlir::func::FuncOp>())
        if (!f.isExternal())
          names += (names.empty() ? "" : ", ") + f.getName().str();
      throwError("function: the module has no function @" + name + " (it has: " + (names.empty() ? "none" : names) + ")");
    }
    return fn;
  }
};

std::shared_ptr<Module> parseModule(const std::string &text, const std::string &sourceName) {
  auto m = std::make_shared<Module>();
  m->ctx = makeContext();
  Diagnostics diags(m->ctx.get());
  mlir::ParserConfig config(m->ctx.get());
  m->op = mlir::parseSourceString<mlir::ModuleOp>(text, config, sourceName);
  if (!m->op)
    diags.throwWith("text: " + sourceName + " is not a valid module");
  return m;
}

void verifyModule(const Module &m) {
  Diagnostics diags(m.ctx.get());
  if (mlir::failed(mlir::verify(m.get())))
    diags.throwWith("module: verification failed");
}

/// Runs a textual pass pipeline on the module in place: "builtin.module(p1, p2)" or the passes alone ("p1, p2",
/// nested on the module), with the dsa passes and pipelines and upstream's registered.
void runPipeline(Module &m, const std::string &pipeline) {
  Diagnostics diags(m.ctx.get());
  std::string errors;
  llvm::raw_string_ostream es(errors);
  mlir::PassManager pm(m.ctx.get());
  const std::string anchor = "builtin.module(";
  std::string passes = pipeline;
  if (passes.rfind(anchor, 0) == 0 && !passes.empty() && passes.back() == ')')
    passes = passes.substr(anchor.size(), passes.size() - anchor.size() - 1);
  if (mlir::failed(mlir::parsePassPipeline(passes, pm, es)))
    throwError("pipeline: cannot parse '" + pipeline + "': " + errors);
  if (mlir::failed(pm.run(m.get())))
    diags.throwWith("pipeline '" + pipeline + "' failed");
}

/// A copy of `m` with dsa.attention decomposed (dsa-decompose-attention; nothing changes without one).
std::shared_ptr<Module> decomposed(const Module &m) {
  std::shared_ptr<Module> c = m.clone();
  Diagnostics diags(c->ctx.get());
  mlir::PassManager pm(c->ctx.get());
  pm.addPass(mlir::dsa::createDSADecomposeAttention());
  if (mlir::failed(pm.run(c->get())))
    diags.throwWith("dsa-decompose-attention failed");
  return c;
}

//===- Interpreter -----------------------------------------------------------------------------------------------===//

/// `fn` on tensors through the reference interpreter; an I64 tensor given for an `index` operand is taken as index.
std::pair<std::vector<Tensor>, interp::ProbeLog> interpretTensors(const Module &m, mlir::func::FuncOp fn,
                                                                   std::vector<Tensor> args) {
  Diagnostics diags(m.ctx.get());
  mlir::FunctionType type = fn.getFunctionType();
  if (args.size() != type.getNumInputs())
    throwError("args: " + std::to_string(args.size()) + " given, @" + fn.getName().str() + " takes " +
          std::to_string(type.getNumInputs()));
  for (size_t i = 0; i < args.size(); ++i) {
    mlir::Type t = type.getInput(static_cast<unsigned>(i));
    if (auto shaped = mlir::dyn_cast<mlir::ShapedType>(t))
      t = shaped.getElementType();
    if (t.isIndex() && args[i].elementType() == ElementType::I64) {
      Tensor idx(ElementType::Index, args[i].shape());
      std::copy(args[i].ints(), args[i].ints() + args[i].numElements(), idx.ints());
      args[i] = std::move(idx);
    }
  }
  interp::ProbeLog probes;
  mlir::FailureOr<std::vector<Tensor>> results = interp::interpretFunction(fn, args, &probes);
  if (mlir::failed(results))
    diags.throwWith("interpreting @" + fn.getName().str() + " failed");
  return {std::move(*results), std::move(probes)};
}

//===- Runtime ---------------------------------------------------------------------------------------------------===//

/// A function's signature (a copy), for Python.
struct Signature {
  runtime::FunctionSignature sig;

  /// The arguments a sequence does not supply itself (x, start_pos, state, shared slots): the weights, in order.
  std::vector<int64_t> weightArgs() const {
    std::vector<int64_t> out;
    for (int64_t a = 0; a < static_cast<int64_t>(sig.args.size()); ++a) {
      bool supplied = a == sig.step.x || a == sig.step.startPos;
      for (const runtime::StateBinding &b : sig.state)
        supplied = supplied || b.arg == a;
      for (const runtime::StateBinding &b : sig.step.shared)
        supplied = supplied || b.arg == a;
      if (!supplied)
        out.push_back(a);
    }
    return out;
  }
};

struct StepLibrary {
  std::string path;
  std::shared_ptr<const dsa::cpu::CPUStepLibrary> lib;

  const runtime::FunctionSignature &signature(const std::optional<std::string> &name) const {
    const auto &fns = lib->description().functions;
    if (!name) {
      if (fns.size() != 1)
        throwError("function: " + path + " holds " + std::to_string(fns.size()) + " functions: name one");
      return fns.front();
    }
    const runtime::FunctionSignature *s = lib->signature(*name);
    if (!s) {
      std::string names;
      for (const auto &f : fns)
        names += (names.empty() ? "" : ", ") + f.name;
      throwError("function: " + path + " has no function '" + *name + "' (it has: " + names + ")");
    }
    return *s;
  }
};

/// The shared slots a model's layers pass from one to the next (Sequence::SlotSet).
struct SlotSet {
  runtime::Sequence::SlotSet slots;
};

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s + "]";
}

/// `weights[i]` as argument weightArgs()[i] of `sig` (errors name "weights" / "weights[i] (argument #a, type)").
std::map<size_t, runtime::HostValue> fixedWeights(const runtime::FunctionSignature &sig,
                                                  const std::vector<std::pair<std::string, InArray>> &weights) {
  Signature s{sig};
  const std::vector<int64_t> weightArgs = s.weightArgs();
  if (weights.size() != weightArgs.size())
    throwError("weights: " + std::to_string(weights.size()) + " given, @" + sig.name + " takes " +
               std::to_string(weightArgs.size()) + " (the arguments other than x, start_pos, state and shared slots)");
  std::map<size_t, runtime::HostValue> fixed;
  for (size_t i = 0; i < weights.size(); ++i) {
    const int64_t a = weightArgs[i];
    const runtime::ValueKind &kind = sig.args[static_cast<size_t>(a)];
    const std::string what = "weights[" + std::to_string(i) + "] (argument #" + std::to_string(a) + ", " +
                             kind.typeString + ")";
    Tensor t = tensorFromPair(what, weights[i]);
    bool ok = kind.isTensor && t.elementType() == kind.elem && t.rank() == static_cast<int64_t>(kind.shape.size());
    for (size_t d = 0; ok && d < kind.shape.size(); ++d)
      ok = kind.shape[d] < 0 || kind.shape[d] == t.dim(static_cast<int64_t>(d));
    if (!ok)
      throwError(what + ": got " + dsa::elementTypeName(t.elementType()) + " " + shapeString(t.shape()));
    fixed.emplace(static_cast<size_t>(a), runtime::HostValue(runtime::HostBuffer::fromTensor(t)));
  }
  return fixed;
}

/// One piece of runtime::planStackChunk's plan with its index_k router (StackChunk.h).
struct StackPiece {
  runtime::StackChunkRouter router;
};

/// One sequence: runtime::Sequence over a compiled step library or over the reference interpreter.
struct PySequence {
  runtime::FunctionSignature sig;
  std::optional<runtime::Sequence> seq;
  std::shared_ptr<void> keepAlive; // the library or the module the runner calls

  static std::unique_ptr<PySequence> start(const runtime::FunctionSignature &sig, runtime::Sequence::ValueRunner runner,
                                           const std::vector<std::pair<std::string, InArray>> &weights,
                                           std::shared_ptr<void> keepAlive) {
    if (!sig.step.present())
      throwError("function: @" + sig.name + " has no step roles (not a function around one dsa.attention): a sequence "
            "needs x, start_pos and the output");
    std::map<size_t, runtime::HostValue> fixed = fixedWeights(sig, weights);
    auto out = std::make_unique<PySequence>();
    out->sig = sig;
    out->seq.emplace(check(runtime::Sequence::start(sig, std::move(runner), std::move(fixed))));
    out->keepAlive = std::move(keepAlive);
    return out;
  }

  /// The output of the step (and the probes the runner returned).
  std::pair<Raw, std::vector<std::pair<std::string, Raw>>>
  step(const std::pair<std::string, InArray> &x, int64_t startPos, SlotSet *slots, bool wantProbes) {
    Tensor xt = tensorFromPair("x", x);
    if (!sig.step.shared.empty() && !slots)
      throwError("shared: @" + sig.name + " reads and publishes the shared slots: pass slots= (initial_slots())");
    std::vector<runtime::NamedTensor> probes;
    dsa::Result<std::vector<runtime::HostValue>> r = [&] {
      nb::gil_scoped_release release;
      return seq->runValues(xt, startPos, sig.step.shared.empty() ? nullptr : &slots->slots,
                            wantProbes ? &probes : nullptr);
    }();
    if (!r)
      throwError(r.error());
    std::vector<std::pair<std::string, Raw>> named;
    for (const runtime::NamedTensor &p : probes)
      named.emplace_back(p.name, rawFromTensor(p.value));
    return {rawFromTensor((*r)[static_cast<size_t>(sig.step.output)].toTensor()), std::move(named)};
  }

  /// Layer `layer` of a stack chunk's piece (runtime::Sequence::runStackChunkValues with the piece's index_k route;
  /// a layer without shared slots: a plain step). Returns the output rows.
  Raw stepPiece(const std::pair<std::string, InArray> &x, int64_t startPos, SlotSet &slots, StackPiece &piece,
                size_t layer) {
    Tensor xt = tensorFromPair("x", x);
    if (sig.step.shared.empty()) {
      dsa::Result<std::vector<runtime::HostValue>> r = [&] {
        nb::gil_scoped_release release;
        return seq->runValues(xt, startPos, nullptr, nullptr);
      }();
      if (!r)
        throwError(r.error());
      return rawFromTensor((*r)[static_cast<size_t>(sig.step.output)].toTensor());
    }
    runtime::Sequence::SlotSet routed = slots.slots;
    if (dsa::Status st = piece.router.beforeLayer(layer, routed); !st)
      throwError(st.error());
    dsa::Result<std::vector<runtime::HostValue>> r = [&] {
      nb::gil_scoped_release release;
      return seq->runStackChunkValues(xt, startPos, routed, nullptr);
    }();
    if (!r)
      throwError(r.error());
    if (dsa::Status st = piece.router.afterLayer(layer, routed); !st)
      throwError(st.error());
    slots.slots = std::move(routed);
    return rawFromTensor((*r)[static_cast<size_t>(sig.step.output)].toTensor());
  }

  std::vector<std::pair<int64_t, Raw>> state() const {
    std::vector<std::pair<int64_t, Raw>> out;
    for (const runtime::StateBinding &b : sig.state)
      if (const runtime::HostValue *v = seq->state(static_cast<size_t>(b.arg)))
        out.emplace_back(b.arg, rawFromTensor(v->toTensor()));
    return out;
  }
};

/// Batched decode: runtime::Batch over a batched step function (Batch.h). Every check is the Batch's.
struct PyBatch {
  std::optional<runtime::Batch> batch;
  std::shared_ptr<void> keepAlive; // the library the runner calls

  static std::unique_ptr<PyBatch> start(const runtime::FunctionSignature &sig, runtime::Batch::ValueRunner runner,
                                        const std::vector<std::pair<std::string, InArray>> &weights,
                                        std::shared_ptr<void> keepAlive) {
    auto out = std::make_unique<PyBatch>();
    out->batch.emplace(check(runtime::Batch::start(sig, std::move(runner), fixedWeights(sig, weights))));
    out->keepAlive = std::move(keepAlive);
    return out;
  }

  /// `state`: one array per state binding (the ring first); one array for a window-only layer.
  int64_t join(const std::vector<std::pair<std::string, InArray>> &state, int64_t position) {
    std::vector<runtime::HostValue> values;
    for (size_t i = 0; i < state.size(); ++i)
      values.emplace_back(runtime::HostBuffer::fromTensor(
          tensorFromPair(state.size() == 1 ? std::string("ring") : "state[" + std::to_string(i) + "]", state[i])));
    return check(batch->join(values, position));
  }

  std::pair<std::vector<Raw>, int64_t> leave(int64_t id) {
    runtime::Batch::Member m = check(batch->leave(id));
    std::vector<Raw> state;
    for (const runtime::HostValue &v : m.state)
      state.push_back(rawFromTensor(v.toTensor()));
    return {std::move(state), m.position};
  }

  Raw step(const std::pair<std::string, InArray> &x, SlotSet *slots) {
    Tensor xt = tensorFromPair("x", x);
    dsa::Result<runtime::HostValue> r = [&] {
      nb::gil_scoped_release release;
      return batch->step(runtime::HostValue(runtime::HostBuffer::fromTensor(xt)), slots ? &slots->slots : nullptr);
    }();
    return rawFromTensor(check(std::move(r)).toTensor());
  }

  std::vector<Raw> state(int64_t id) const {
    std::vector<Raw> out;
    for (const runtime::HostValue &v : check(batch->state(id)))
      out.push_back(rawFromTensor(v.toTensor()));
    return out;
  }

  SlotSet stackSlots(const std::vector<const SlotSet *> &members) const {
    std::vector<runtime::Sequence::SlotSet> sets;
    for (const SlotSet *m : members)
      sets.push_back(m->slots);
    return SlotSet{check(runtime::stackSlots(batch->signature(), sets), "slots: ")};
  }

  SlotSet slotsOf(const SlotSet &batched, int64_t b) const {
    return SlotSet{check(runtime::slotsOf(batched.slots, b), "slots: ")};
  }

  int64_t position(int64_t id) const {
    const int64_t p = batch->position(id);
    if (p < 0)
      throwError("sequence " + std::to_string(id) + ": not a member");
    return p;
  }

  Raw ring(int64_t id) const { return rawFromTensor(check(batch->ring(id)).toTensor()); }
};

runtime::Sequence::ValueRunner libraryRunner(std::shared_ptr<const dsa::cpu::CPUStepLibrary> lib,
                                             const std::string &name) {
  return [lib, name](const std::vector<runtime::HostValue> &args, std::vector<runtime::NamedTensor> *probes) {
    return lib->runValues(name, args, probes);
  };
}

/// The reference interpreter as a sequence's runner: `fn` (decomposed) on the arguments as Tensors, its results
/// as the function's results and its probes as the probes. The runner is called with the GIL released: it touches
/// no Python object.
runtime::Sequence::ValueRunner interpreterRunner(std::shared_ptr<Module> m, std::string name) {
  return [m, name](const std::vector<runtime::HostValue> &args,
                   std::vector<runtime::NamedTensor> *probes) -> dsa::Result<std::vector<runtime::HostValue>> {
    mlir::func::FuncOp fn = m->get().lookupSymbol<mlir::func::FuncOp>(name);
    std::vector<Tensor> tensors;
    for (const runtime::HostValue &v : args)
      tensors.push_back(v.toTensor());
    Diagnostics diags(m->ctx.get());
    interp::ProbeLog log;
    mlir::FailureOr<std::vector<Tensor>> results = interp::interpretFunction(fn, tensors, probes ? &log : nullptr);
    if (mlir::failed(results))
      return dsa::makeError(diags.withMessage("interpreting @" + name + " failed"));
    if (probes)
      for (interp::ProbeRecord &p : log)
        probes->push_back(runtime::NamedTensor{p.name, std::move(p.value)});
    std::vector<runtime::HostValue> out;
    for (Tensor &t : *results)
      out.emplace_back(std::move(t));
    return out;
  };
}

//===- Golden ----------------------------------------------------------------------------------------------------===//

const char *statusName(dsa::golden::Verdict::Status s) {
  switch (s) {
  case dsa::golden::Verdict::Pass: return "PASS";
  case dsa::golden::Verdict::Fail: return "FAIL";
  case dsa::golden::Verdict::NotCompared: return "SKIP";
  }
  return "?";
}

struct GoldenLayer {
  dsa::tools::GoldenLayer layer;
  std::shared_ptr<Module> module;
};

} // namespace

NB_MODULE(_dsa, m) {
  m.doc() = "dsa's C++ libraries (compiler, interpreter, runtime, golden replay); use the package dsa";
  nb::exception<DsaError>(m, "Error", PyExc_RuntimeError);

  // ---- compiler ----
  nb::class_<Module>(m, "Module")
      .def("print", &Module::print, nb::arg("generic") = false)
      .def("__str__", [](const Module &mod) { return mod.print(false); })
      .def("verify", &verifyModule)
      .def("clone", &Module::clone)
      .def("run_pipeline", &runPipeline, nb::arg("pipeline"))
      .def_prop_ro("functions", [](const Module &mod) {
        std::vector<std::string> names;
        for (auto f : mod.get().getOps<mlir::func::FuncOp>())
          names.push_back(f.getName().str());
        return names;
      });
  m.def("parse", &parseModule, nb::arg("text"), nb::arg("source_name") = "<string>");
  m.def("compile_cpu",
        [](const Module &mod, const std::string &directory, const std::string &baseName, const std::string &cpu,
           bool parallel, bool probes, unsigned optLevel) {
          dsa::cpu::CPUCompileOptions o;
          o.targetCpu = cpu;
          o.parallel = parallel;
          o.probesAsResults = probes;
          o.optLevel = optLevel;
          Diagnostics diags(mod.ctx.get());
          dsa::Result<std::string> path = [&] {
            nb::gil_scoped_release release;
            return dsa::cpu::emitCPUStepLibrary(mod.get(), directory, baseName, o);
          }();
          if (!path)
            diags.throwWith(path.error());
          return path.take();
        },
        nb::arg("module"), nb::arg("directory"), nb::arg("base_name"), nb::arg("cpu") = "",
        nb::arg("parallel") = false, nb::arg("probes") = false, nb::arg("opt_level") = 2);
  m.def("compile_gpu",
        [](const Module &mod, const std::string &directory, const std::string &baseName, const std::string &chip,
           const std::string &format, bool probes) {
          dsa::gpu::GPUCompileOptions o;
          o.chip = chip;
          o.format = format;
          o.probesAsResults = probes;
          Diagnostics diags(mod.ctx.get());
          dsa::Result<std::string> path = [&] {
            nb::gil_scoped_release release;
            return dsa::gpu::emitGPUStepLibrary(mod.get(), directory, baseName, o);
          }();
          if (!path)
            diags.throwWith(path.error());
          return path.take();
        },
        nb::arg("module"), nb::arg("directory"), nb::arg("base_name"), nb::arg("chip") = "sm_90",
        nb::arg("format") = "bin", nb::arg("probes") = false);

  // ---- interpreter ----
  m.def("decompose", &decomposed, nb::arg("module"));
  m.def("interpret",
        [](const Module &mod, const std::string &function, const std::vector<std::pair<std::string, InArray>> &args) {
          mlir::func::FuncOp fn = mod.function(function);
          std::vector<Tensor> tensors;
          for (size_t i = 0; i < args.size(); ++i)
            tensors.push_back(tensorFromPair("args[" + std::to_string(i) + "]", args[i]));
          auto [results, probes] = interpretTensors(mod, fn, std::move(tensors));
          std::vector<std::pair<std::string, Raw>> named;
          for (const interp::ProbeRecord &p : probes)
            named.emplace_back(p.name, rawFromTensor(p.value));
          return std::make_pair(rawsFromTensors(results), named);
        },
        nb::arg("module"), nb::arg("function"), nb::arg("args"));

  // ---- runtime ----
  nb::class_<Signature>(m, "Signature")
      .def_prop_ro("name", [](const Signature &s) { return s.sig.name; })
      .def_prop_ro("args", [](const Signature &s) {
        std::vector<std::string> t;
        for (const auto &k : s.sig.args)
          t.push_back(k.typeString);
        return t;
      })
      .def_prop_ro("results", [](const Signature &s) {
        std::vector<std::string> t;
        for (size_t i = 0; i < s.sig.numResults; ++i)
          t.push_back(s.sig.results[i].typeString);
        return t;
      })
      .def_prop_ro("probes", [](const Signature &s) { return s.sig.probeNames; })
      .def_prop_ro("state_args", [](const Signature &s) {
        std::vector<int64_t> a;
        for (const auto &b : s.sig.state)
          a.push_back(b.arg);
        return a;
      })
      .def_prop_ro("weight_args", &Signature::weightArgs)
      .def_prop_ro("x_arg", [](const Signature &s) { return s.sig.step.x; })
      .def_prop_ro("start_pos_arg", [](const Signature &s) { return s.sig.step.startPos; })
      .def_prop_ro("output", [](const Signature &s) { return s.sig.step.output; })
      .def_prop_ro("max_seq_len", [](const Signature &s) { return s.sig.step.maxSeqLen; })
      .def_prop_ro("has_shared_slots", [](const Signature &s) { return !s.sig.step.shared.empty(); })
      .def_prop_ro("chunked", [](const Signature &s) { return s.sig.step.present() && s.sig.step.chunked; });

  nb::class_<SlotSet>(m, "SlotSet")
      .def("tensors", [](const SlotSet &s) {
        std::vector<Raw> out;
        for (const runtime::HostValue &v : s.slots)
          out.push_back(rawFromTensor(v.toTensor()));
        return out;
      });

  nb::class_<PySequence>(m, "Sequence")
      .def("step", &PySequence::step, nb::arg("x"), nb::arg("start_pos"), nb::arg("slots").none() = nullptr,
           nb::arg("probes") = false)
      .def_prop_ro("position", [](const PySequence &s) { return s.seq->position(); })
      .def("reset", [](PySequence &s) { s.seq->reset(); })
      .def("state", &PySequence::state)
      .def_prop_ro("signature", [](const PySequence &s) { return Signature{s.sig}; })
      .def("step_piece", &PySequence::stepPiece, nb::arg("x"), nb::arg("start_pos"), nb::arg("slots"),
           nb::arg("piece"), nb::arg("layer"));

  nb::class_<StackPiece>(m, "StackPiece")
      .def_prop_ro("first", [](const StackPiece &p) { return p.router.piece().first; })
      .def_prop_ro("count", [](const StackPiece &p) { return p.router.piece().count; })
      .def_prop_ro("index_k_from", [](const StackPiece &p) { return p.router.piece().indexKFrom; })
      .def_prop_ro("index_k_after", [](const StackPiece &p) { return p.router.piece().indexKAfter; })
      .def("begin", [](StackPiece &p, const SlotSet &slots) { check(p.router.begin(slots.slots)); })
      .def("finish", [](StackPiece &p, SlotSet &slots) { check(p.router.finish(slots.slots)); });
  m.def("plan_stack_chunk", [](const std::vector<Signature> &layers, int64_t prefillTokens, int64_t startPos,
                               int64_t s) {
    std::vector<runtime::StackLayerRoles> roles;
    for (const Signature &l : layers)
      roles.push_back(check(runtime::stackLayerRoles(l.sig), "layers: "));
    std::vector<StackPiece> out;
    for (runtime::StackSubChunk &piece : check(runtime::planStackChunk(roles, prefillTokens, startPos, s)))
      out.push_back(StackPiece{runtime::StackChunkRouter(std::move(piece))});
    return out;
  }, nb::arg("layers"), nb::arg("prefill_tokens"), nb::arg("start_pos"), nb::arg("s"));

  nb::class_<PyBatch>(m, "Batch")
      .def("join", &PyBatch::join, nb::arg("state"), nb::arg("position"))
      .def("leave", &PyBatch::leave, nb::arg("id"))
      .def("step", &PyBatch::step, nb::arg("x"), nb::arg("slots").none() = nb::none())
      .def("state", &PyBatch::state, nb::arg("id"))
      .def_prop_ro("state_count", [](const PyBatch &b) { return b.batch->signature().state.size(); })
      .def("stack_slots", &PyBatch::stackSlots, nb::arg("members"))
      .def("slots_of", &PyBatch::slotsOf, nb::arg("slots"), nb::arg("b"))
      .def_prop_ro("members", [](const PyBatch &b) { return b.batch->members(); })
      .def("position", &PyBatch::position, nb::arg("id"))
      .def("ring", &PyBatch::ring, nb::arg("id"));

  nb::class_<StepLibrary>(m, "StepLibrary")
      .def("__init__",
           [](StepLibrary *self, const std::string &path) {
             new (self) StepLibrary{path, check(dsa::cpu::CPUStepLibrary::open(path), "path: ")};
           },
           nb::arg("path"))
      .def_prop_ro("path", [](const StepLibrary &l) { return l.path; })
      .def_prop_ro("functions", [](const StepLibrary &l) {
        std::vector<std::string> names;
        for (const auto &f : l.lib->description().functions)
          names.push_back(f.name);
        return names;
      })
      .def_prop_ro("target_cpu", [](const StepLibrary &l) { return l.lib->description().targetCpu; })
      .def("signature",
           [](const StepLibrary &l, const std::optional<std::string> &name) { return Signature{l.signature(name)}; },
           nb::arg("function").none() = nb::none())
      .def("initial_slots",
           [](const StepLibrary &l, const std::optional<std::string> &name) {
             return SlotSet{check(runtime::Sequence::initialSlots(l.signature(name)), "slots: ")};
           },
           nb::arg("function").none() = nb::none())
      .def("sequence",
           [](const StepLibrary &l, const std::vector<std::pair<std::string, InArray>> &weights,
              const std::optional<std::string> &name) {
             const runtime::FunctionSignature &sig = l.signature(name);
             return PySequence::start(sig, libraryRunner(l.lib, sig.name), weights,
                                      std::const_pointer_cast<dsa::cpu::CPUStepLibrary>(l.lib));
           },
           nb::arg("weights"), nb::arg("function").none() = nb::none())
      .def("batch",
           [](const StepLibrary &l, const std::vector<std::pair<std::string, InArray>> &weights,
              const std::optional<std::string> &name) {
             const runtime::FunctionSignature &sig = l.signature(name);
             return PyBatch::start(sig, libraryRunner(l.lib, sig.name), weights,
                                   std::const_pointer_cast<dsa::cpu::CPUStepLibrary>(l.lib));
           },
           nb::arg("weights"), nb::arg("function").none() = nb::none());

  m.def("interpreter_sequence",
        [](const Module &mod, const Signature &signature, const std::vector<std::pair<std::string, InArray>> &weights) {
          std::shared_ptr<Module> d = decomposed(mod);
          d->function(signature.sig.name);
          return PySequence::start(signature.sig, interpreterRunner(d, signature.sig.name), weights, d);
        },
        nb::arg("module"), nb::arg("signature"), nb::arg("weights"));
  m.def("initial_slots", [](const Signature &s) {
    return SlotSet{check(runtime::Sequence::initialSlots(s.sig), "slots: ")};
  });

  // ---- golden ----
  nb::class_<dsa::golden::Verdict>(m, "Verdict")
      .def_ro("name", &dsa::golden::Verdict::name)
      .def_ro("regime", &dsa::golden::Verdict::regime)
      .def_prop_ro("status", [](const dsa::golden::Verdict &v) { return statusName(v.status); })
      .def_prop_ro("passed", [](const dsa::golden::Verdict &v) { return v.status == dsa::golden::Verdict::Pass; })
      .def_ro("max_abs", &dsa::golden::Verdict::maxAbsErr)
      .def_ro("max_ulp", &dsa::golden::Verdict::maxUlpErr)
      .def_ro("compared", &dsa::golden::Verdict::compared)
      .def_ro("mismatches", &dsa::golden::Verdict::mismatches)
      .def_ro("flips", &dsa::golden::Verdict::flips)
      .def_ro("near_ties", &dsa::golden::Verdict::nearTies)
      .def_ro("ck_got", &dsa::golden::Verdict::ckGot)
      .def_ro("ck_want", &dsa::golden::Verdict::ckWant)
      .def_ro("detail", &dsa::golden::Verdict::detail)
      .def_prop_ro("line", [](const dsa::golden::Verdict &v) { return dsa::golden::formatVerdict(v); })
      .def("__repr__", [](const dsa::golden::Verdict &v) { return "<Verdict " + dsa::golden::formatVerdict(v) + ">"; });

  nb::class_<dsa::tools::GoldenReplayReport>(m, "Report")
      .def_ro("verdicts", &dsa::tools::GoldenReplayReport::verdicts)
      .def_prop_ro("passed", [](const dsa::tools::GoldenReplayReport &r) { return r.summary.passed; })
      .def_prop_ro("failed", [](const dsa::tools::GoldenReplayReport &r) { return r.summary.failed; })
      .def_prop_ro("not_compared", [](const dsa::tools::GoldenReplayReport &r) { return r.summary.notCompared; })
      .def_prop_ro("flips", [](const dsa::tools::GoldenReplayReport &r) { return r.summary.flips; })
      .def_prop_ro("near_ties", [](const dsa::tools::GoldenReplayReport &r) { return r.summary.nearTies; })
      .def_prop_ro("all_passed", [](const dsa::tools::GoldenReplayReport &r) { return r.summary.allPassed(); })
      .def_prop_ro("summary", [](const dsa::tools::GoldenReplayReport &r) {
        return dsa::golden::formatSummary(r.summary);
      })
      .def_ro("exit_status", &dsa::tools::GoldenReplayReport::exitStatus)
      .def("__repr__", [](const dsa::tools::GoldenReplayReport &r) {
        return "<Report " + dsa::golden::formatSummary(r.summary) + ">";
      });

  m.def("replay",
        [](const std::string &path, const std::string &backend, const std::vector<int64_t> &layers, bool force,
           bool resync, const std::string &indexKSource, const std::string &cpu, int64_t residentWeightsMb,
           bool echo) {
          dsa::tools::GoldenReplayOptions o;
          o.goldenPath = path;
          o.backend = backend;
          o.layers = layers;
          o.force = force;
          o.resync = resync;
          o.indexKSource = indexKSource;
          o.cpu = cpu;
          o.residentWeightsMb = residentWeightsMb;
          if (backend == "gpu")
            throwError("backend: 'gpu' replays run MLIR-free on a GPU machine (dsa-golden --libraries); here: "
                  "'interpret' or 'cpu'");
          dsa::tools::GoldenReplayReport report;
          {
            nb::gil_scoped_release release;
            report = dsa::tools::replayGolden(o, echo ? llvm::outs() : llvm::nulls());
            llvm::outs().flush();
          }
          if (report.exitStatus == 2)
            throwError(report.error);
          return report;
        },
        nb::arg("path"), nb::arg("backend") = "interpret", nb::arg("layers") = std::vector<int64_t>{},
        nb::arg("force") = false, nb::arg("resync") = false, nb::arg("index_k_source") = "published_slot",
        nb::arg("cpu") = "", nb::arg("resident_weights_mb") = 4096, nb::arg("echo") = false);

  nb::class_<GoldenLayer>(m, "GoldenLayer")
      .def_prop_ro("layer", [](const GoldenLayer &g) { return g.layer.layer; })
      .def_prop_ro("function", [](const GoldenLayer &g) { return g.layer.function; })
      .def_prop_ro("dim", [](const GoldenLayer &g) { return g.layer.dim; })
      .def_prop_ro("module", [](const GoldenLayer &g) { return g.module; })
      .def_prop_ro("weight_names", [](const GoldenLayer &g) { return g.layer.weightNames; })
      .def_prop_ro("weights", [](const GoldenLayer &g) { return rawsFromTensors(g.layer.weights); })
      .def_prop_ro("ring", [](const GoldenLayer &g) { return rawFromTensor(g.layer.ring); })
      .def_prop_ro("state", [](const GoldenLayer &g) { return rawsFromTensors(g.layer.state); })
      .def_prop_ro("has_shared_slots", [](const GoldenLayer &g) { return g.layer.hasSharedSlots; });
  m.def("golden_layer",
        [](const std::string &path, int64_t layer, const std::string &indexKSource, bool batched) {
          auto g = std::make_unique<GoldenLayer>();
          g->module = std::make_shared<Module>();
          g->module->ctx = makeContext();
          g->module->op = mlir::ModuleOp::create(mlir::UnknownLoc::get(g->module->ctx.get()));
          Diagnostics diags(g->module->ctx.get());
          dsa::Result<dsa::tools::GoldenLayer> built =
              dsa::tools::buildGoldenLayer(g->module->get(), path, layer, indexKSource, batched);
          if (!built)
            diags.throwWith(built.error());
          g->layer = built.take();
          return g;
        },
        nb::arg("path"), nb::arg("layer"), nb::arg("index_k_source") = "published_slot", nb::arg("batched") = false);
}
