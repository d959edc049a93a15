//===- CApi.cpp - the C API of the MLIR-free runtime (dsa-c/runtime.h) over the C++ runtime ----------------------===//
//
// Every entry point is noexcept and runs its body under guard(): an exception (std::bad_alloc included) becomes a
// status. The checks of a step are the C++ runtime's (runtime::planStep and Sequence::runValues, the packed call's
// argument checks); what is checked here is only what C adds: NULL pointers and the buffer descriptors (rank, shape,
// size), then weights against their arguments through runtime::checkValueKind (the packed call's own check).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa-c/runtime.h"

#include "dsa/Runtime/CPU/StepLibrary.h"
#include "dsa/Runtime/Cuda/GpuStepLibrary.h"
#include "dsa/Runtime/Host/Batch.h"
#include "dsa/Runtime/Host/MemoryFormat.h"
#include "dsa/Runtime/Host/Sequence.h"
#include "dsa/Runtime/Host/StackChunk.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace runtime = ::dsa::runtime;
using dsa::ElementType;
using runtime::FunctionSignature;
using runtime::HostBuffer;
using runtime::HostValue;

struct dsa_status_s {
  dsa_status_code_t code;
  std::string message;
};

namespace {

/// Returned when even a status cannot be allocated; never freed.
dsa_status_s gOutOfMemory{DSA_STATUS_RESOURCE_EXHAUSTED, "out of memory (while reporting an error)"};

dsa_status_t makeStatus(dsa_status_code_t code, const std::string &message) noexcept {
  try {
    return new dsa_status_s{code, message};
  } catch (...) {
    return &gOutOfMemory;
  }
}

/// A status carried through C++ code as a value (thrown nowhere).
struct Failure {
  dsa_status_code_t code;
  std::string message;
};

template <typename F> dsa_status_t guard(const char *fn, F &&body) noexcept {
  try {
    std::optional<Failure> f = body();
    if (!f)
      return nullptr;
    return makeStatus(f->code, std::string(fn) + ": " + f->message);
  } catch (const std::bad_alloc &) {
    return makeStatus(DSA_STATUS_RESOURCE_EXHAUSTED, std::string(fn) + ": out of memory");
  } catch (const std::exception &e) {
    return makeStatus(DSA_STATUS_INTERNAL, std::string(fn) + ": internal error: " + e.what());
  } catch (...) {
    return makeStatus(DSA_STATUS_INTERNAL, std::string(fn) + ": internal error: unknown exception");
  }
}

std::optional<Failure> fail(dsa_status_code_t code, std::string message) {
  return Failure{code, std::move(message)};
}
const std::optional<Failure> ok = std::nullopt;

std::optional<Failure> requireNonNull(const void *p, const char *name) {
  if (!p)
    return fail(DSA_STATUS_INVALID_ARGUMENT, std::string(name) + " is NULL");
  return ok;
}

/// The element type of a dtype given as its integer (a C caller may pass any int: reading it as the C++ enum would be
/// undefined for values outside the enumerators' range).
std::optional<ElementType> elementTypeOf(int d) {
  switch (d) {
  case DSA_DTYPE_BF16:
    return ElementType::BF16;
  case DSA_DTYPE_F32:
    return ElementType::F32;
  case DSA_DTYPE_I1:
    return ElementType::I1;
  case DSA_DTYPE_I32:
    return ElementType::I32;
  case DSA_DTYPE_I64:
    return ElementType::I64;
  case DSA_DTYPE_INDEX:
    return ElementType::Index;
  }
  return std::nullopt;
}

dsa_dtype_t dtypeOf(ElementType t) {
  switch (t) {
  case ElementType::BF16:
    return DSA_DTYPE_BF16;
  case ElementType::F32:
    return DSA_DTYPE_F32;
  case ElementType::I1:
    return DSA_DTYPE_I1;
  case ElementType::I32:
    return DSA_DTYPE_I32;
  case ElementType::I64:
    return DSA_DTYPE_I64;
  case ElementType::Index:
    return DSA_DTYPE_INDEX;
  }
  return DSA_DTYPE_F32;
}

/// A caller's buffer descriptor, checked: its element type, shape and byte size.
struct CheckedBuffer {
  ElementType type = ElementType::F32;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  void *data = nullptr;
};

/// The checks every buffer gets before it is used (header, "Buffers"); `what` names it in the message.
std::optional<Failure> checkBuffer(const dsa_buffer_t *b, const std::string &what, CheckedBuffer &out) {
  if (!b)
    return fail(DSA_STATUS_INVALID_ARGUMENT, what + " is NULL");
  std::underlying_type_t<dsa_dtype_t> rawDtype;
  static_assert(sizeof rawDtype == sizeof b->dtype, "dsa_dtype_t is its underlying type's size");
  std::memcpy(&rawDtype, &b->dtype, sizeof rawDtype);
  std::optional<ElementType> type = elementTypeOf(static_cast<int>(rawDtype));
  if (!type)
    return fail(DSA_STATUS_INVALID_ARGUMENT,
                what + ": dtype " + std::to_string(static_cast<long long>(rawDtype)) + " is no dsa_dtype_t");
  if (b->rank < 0 || b->rank > DSA_MAX_RANK)
    return fail(DSA_STATUS_INVALID_ARGUMENT, what + ": rank " + std::to_string(b->rank) + " is outside 0.." +
                                                 std::to_string(DSA_MAX_RANK));
  if (b->rank > 0 && !b->shape)
    return fail(DSA_STATUS_INVALID_ARGUMENT, what + ": shape is NULL for rank " + std::to_string(b->rank));
  out.type = *type;
  out.shape.assign(b->shape, b->shape + b->rank);
  int64_t elements = 1;
  for (int32_t d = 0; d < b->rank; ++d) {
    if (out.shape[d] < 0)
      return fail(DSA_STATUS_INVALID_ARGUMENT, what + ": dimension " + std::to_string(d) + " of shape " +
                                                   runtime::shapeString(out.shape) + " is negative");
    if (out.shape[d] != 0 && elements > std::numeric_limits<int64_t>::max() / out.shape[d])
      return fail(DSA_STATUS_INVALID_ARGUMENT, what + ": shape " + runtime::shapeString(out.shape) +
                                                   " has more elements than int64 counts");
    elements *= out.shape[d];
  }
  const int64_t elemBytes = runtime::elementBytes(*type);
  if (elements > std::numeric_limits<int64_t>::max() / elemBytes)
    return fail(DSA_STATUS_INVALID_ARGUMENT,
                what + ": shape " + runtime::shapeString(out.shape) + " has more bytes than int64 counts");
  out.bytes = elements * elemBytes;
  if (static_cast<uint64_t>(out.bytes) > static_cast<uint64_t>(b->size_bytes))
    return fail(DSA_STATUS_INVALID_ARGUMENT,
                what + ": size_bytes " + std::to_string(b->size_bytes) + " is less than the " +
                    std::to_string(out.bytes) + " bytes of a " + dsa::elementTypeName(*type) + " tensor of shape " +
                    runtime::shapeString(out.shape));
  if (!b->data && out.bytes > 0)
    return fail(DSA_STATUS_INVALID_ARGUMENT, what + ": data is NULL");
  out.data = b->data;
  return ok;
}

/// A copy of the caller's bytes as a buffer the runtime owns.
std::shared_ptr<const HostBuffer> copyBuffer(const CheckedBuffer &b) {
  std::shared_ptr<void> memory = runtime::allocateBytes(b.bytes);
  if (b.bytes > 0)
    std::memcpy(memory.get(), b.data, static_cast<size_t>(b.bytes));
  void *data = memory.get();
  return HostBuffer::adopt(b.type, b.shape, std::move(memory), data);
}

/// The caller's bytes as a Tensor (read now; nothing is kept).
dsa::Tensor tensorOf(const CheckedBuffer &b) {
  std::shared_ptr<HostBuffer> view = HostBuffer::adopt(b.type, b.shape, nullptr, b.data);
  return view->toTensor();
}

/// The bytes of `v` in the compiled code's memory format (a buffer's own, or a Tensor converted).
std::shared_ptr<const HostBuffer> bytesOf(const HostValue &v) {
  if (v.buffer())
    return v.sharedBuffer();
  return HostBuffer::fromTensor(*v.tensor());
}

/// Copies `v` to the caller's checked buffer `dst` whose shape the caller was told; a value of another shape or
/// type is an internal error (the runtime's own results are what the signature says).
std::optional<Failure> copyOut(const HostValue &v, const CheckedBuffer &dst, const std::string &what) {
  std::shared_ptr<const HostBuffer> b = bytesOf(v);
  if (!b || b->elementType() != dst.type || b->shape() != dst.shape)
    return fail(DSA_STATUS_INTERNAL, what + ": the runtime's value is " +
                                         (b ? std::string(dsa::elementTypeName(b->elementType())) + " " +
                                                  runtime::shapeString(b->shape())
                                            : std::string("missing")) +
                                         ", the buffer " + dsa::elementTypeName(dst.type) + " " +
                                         runtime::shapeString(dst.shape));
  if (dst.bytes > 0)
    std::memcpy(dst.data, b->data(), static_cast<size_t>(dst.bytes));
  return ok;
}

/// The status code of a C++ runtime error (its message names the field: Sequence.h run(), PackedCall.h).
dsa_status_code_t codeOfStepError(const std::string &message) {
  if (message.find("max_seq_len: ") != std::string::npos)
    return DSA_STATUS_OUT_OF_RANGE;
  if (message.find("run-time check failed") != std::string::npos)
    return DSA_STATUS_RUN_FAILED;
  if (message.find("out of memory") != std::string::npos)
    return DSA_STATUS_RESOURCE_EXHAUSTED;
  return DSA_STATUS_INVALID_ARGUMENT;
}

bool fileExists(const std::string &path) {
  std::ifstream in(path);
  return static_cast<bool>(in);
}

} // namespace

/// A loaded step library, shared by its handle, its sequences and its slot sets.
struct LoadedLibrary {
  std::string backend, target;
  std::shared_ptr<const dsa::cpu::CPUStepLibrary> cpu;
  std::shared_ptr<const dsa::cuda::GpuStepLibrary> gpu;

  const std::vector<FunctionSignature> &functions() const {
    return cpu ? cpu->description().functions : gpu->description().base.functions;
  }
  const FunctionSignature *find(const std::string &name) const {
    for (const FunctionSignature &f : functions())
      if (f.name == name)
        return &f;
    return nullptr;
  }
  std::optional<Failure> lookup(const char *name, const FunctionSignature *&sig) const {
    if (std::optional<Failure> f = requireNonNull(name, "function"))
      return f;
    sig = find(name);
    if (sig)
      return ok;
    std::string known;
    for (const FunctionSignature &f : functions())
      known += (known.empty() ? "@" : ", @") + f.name;
    return fail(DSA_STATUS_NOT_FOUND, "function: no function @" + std::string(name) + " in the library (it has " +
                                          (known.empty() ? std::string("none") : known) + ")");
  }
};

struct dsa_library_s {
  std::shared_ptr<const LoadedLibrary> lib;
};

struct dsa_sequence_s {
  std::shared_ptr<const LoadedLibrary> lib;
  const FunctionSignature *sig = nullptr;
  std::optional<runtime::Sequence> seq;
  std::vector<size_t> stateArgs; ///< the state arguments, ascending
  std::vector<std::string> stateNames;
};

struct dsa_batch_s {
  std::shared_ptr<const LoadedLibrary> lib;
  const FunctionSignature *sig = nullptr;
  std::optional<runtime::Batch> batch;
};

struct dsa_slots_s {
  std::shared_ptr<const LoadedLibrary> lib;
  std::string function;
  runtime::Sequence::SlotSet slots;
};

struct dsa_stack_plan_s {
  std::vector<dsa_sequence_t *> layers; ///< not owned
  bool hasShared = false;               ///< some layer takes the shared slots
  int64_t startPos = 0;
  std::vector<runtime::StackChunkRouter> pieces;
  size_t next = 0;                   ///< the next piece to begin
  std::optional<size_t> current;     ///< the piece begun and not finished
  size_t layersRun = 0;              ///< layers of the current piece run
  const dsa_slots_t *slots = nullptr; ///< the set the current piece began with
};

namespace {

dsa_arg_role_t roleOf(const FunctionSignature &sig, size_t arg) {
  const int64_t a = static_cast<int64_t>(arg);
  if (sig.step.present() && a == sig.step.x)
    return DSA_ARG_X;
  if (sig.step.present() && a == sig.step.startPos)
    return DSA_ARG_START_POS;
  for (const runtime::StateBinding &b : sig.state)
    if (b.arg == a)
      return DSA_ARG_STATE;
  for (const runtime::StateBinding &b : sig.step.shared)
    if (b.arg == a)
      return DSA_ARG_SHARED;
  return DSA_ARG_WEIGHT;
}

void fillValueInfo(const runtime::ValueKind &k, dsa_value_info_t &out) {
  out.is_tensor = k.isTensor ? 1 : 0;
  out.dtype = dtypeOf(k.elem);
  out.rank = static_cast<int32_t>(std::min<size_t>(k.shape.size(), DSA_MAX_RANK));
  for (int32_t d = 0; d < DSA_MAX_RANK; ++d)
    out.shape[d] = d < out.rank ? k.shape[static_cast<size_t>(d)] : 0;
  out.type = k.typeString.c_str();
  out.role = DSA_ARG_WEIGHT;
}

/// The description's "format" field ("" when the file is no JSON object with one: the CPU loader reports why).
std::string formatOf(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("format") && j["format"].is_string())
    return j["format"].get<std::string>();
  return "";
}

/// The common prologue of the dsa_function_* queries: `library` and `out_info` non-null, `function` one of the
/// library's (its signature in `sig`).
template <typename Out>
std::optional<Failure> lookupFunction(const dsa_library_t *library, const char *function, const Out *out_info,
                                      const FunctionSignature *&sig) {
  if (std::optional<Failure> f = requireNonNull(library, "library"))
    return f;
  if (std::optional<Failure> f = requireNonNull(out_info, "out_info"))
    return f;
  return library->lib->lookup(function, sig);
}

/// The weights of a dsa_sequence_create / dsa_batch_create call, checked and copied: `weights[i]` is argument
/// `weight_args[i]` of `sig`, every DSA_ARG_WEIGHT argument exactly once.
std::optional<Failure> bindWeights(const FunctionSignature &sig, size_t num_weights, const size_t *weight_args,
                                   const dsa_buffer_t *weights, std::map<size_t, HostValue> &fixed) {
  if (num_weights > 0) {
    if (std::optional<Failure> f = requireNonNull(weight_args, "weight_args"))
      return f;
    if (std::optional<Failure> f = requireNonNull(weights, "weights"))
      return f;
  }
  for (size_t i = 0; i < num_weights; ++i) {
    const size_t a = weight_args[i];
    const std::string what = "weights[" + std::to_string(i) + "] (argument #" + std::to_string(a) + ")";
    if (a >= sig.args.size())
      return fail(DSA_STATUS_INVALID_ARGUMENT, "weight_args[" + std::to_string(i) + "]: argument #" +
                                                   std::to_string(a) + " does not exist (@" + sig.name +
                                                   " takes " + std::to_string(sig.args.size()) + ")");
    if (roleOf(sig, a) != DSA_ARG_WEIGHT)
      return fail(DSA_STATUS_INVALID_ARGUMENT,
                  "weight_args[" + std::to_string(i) + "]: argument #" + std::to_string(a) +
                      " is not a weight (it is x, start_pos, state or a shared slot, which the sequence supplies)");
    if (fixed.count(a))
      return fail(DSA_STATUS_INVALID_ARGUMENT, "weight_args[" + std::to_string(i) + "]: argument #" +
                                                   std::to_string(a) + " is given twice");
    CheckedBuffer b;
    if (std::optional<Failure> f = checkBuffer(&weights[i], what, b))
      return f;
    if (dsa::Status st = runtime::checkValueKind(sig.args[a], b.type, b.shape, what); !st)
      return fail(DSA_STATUS_INVALID_ARGUMENT, st.error());
    if (sig.args[a].isTensor)
      fixed.emplace(a, HostValue(copyBuffer(b)));
    else
      fixed.emplace(a, HostValue(tensorOf(b)));
  }
  for (size_t a = 0; a < sig.args.size(); ++a)
    if (roleOf(sig, a) == DSA_ARG_WEIGHT && !fixed.count(a))
      return fail(DSA_STATUS_INVALID_ARGUMENT, "weights: argument #" + std::to_string(a) + " (" +
                                                   sig.args[a].typeString + ") of @" + sig.name +
                                                   " is a weight and was not given");
  return ok;
}

/// A function's step roles, which sequences and batches need.
std::optional<Failure> requireStepRoles(const FunctionSignature &sig) {
  if (!sig.step.present())
    return fail(DSA_STATUS_FAILED_PRECONDITION,
                "function: @" + sig.name + " has no step roles (x, start_pos, output): not a layer's step function");
  return ok;
}

/// The runner of a sequence or batch over function `name` of a CPU step library (its buffers kept resident).
runtime::Sequence::ValueRunner cpuRunner(std::shared_ptr<const dsa::cpu::CPUStepLibrary> cpu, std::string name) {
  return [cpu = std::move(cpu), name = std::move(name)](const std::vector<HostValue> &args,
                                                       std::vector<runtime::NamedTensor> *probes) {
    return cpu->runValues(name, args, probes);
  };
}

/// The checks of a caller's output buffer (may be NULL: nothing to check) against the step's output `outKind`
/// for `rows` rows of x; `rowsText` ends the shape message (" for x's N rows").
std::optional<Failure> checkOutputBuffer(const dsa_buffer_t *output, const runtime::ValueKind &outKind, int64_t rows,
                                         const std::string &rowsText, CheckedBuffer &ob) {
  if (!output)
    return ok;
  if (std::optional<Failure> f = checkBuffer(output, "output", ob))
    return f;
  std::vector<int64_t> want = outKind.shape;
  if (!want.empty())
    want[0] = rows;
  if (ob.type != outKind.elem)
    return fail(DSA_STATUS_INVALID_ARGUMENT, std::string("output: dtype ") + dsa::elementTypeName(ob.type) +
                                                 ", the output is " + outKind.typeString);
  if (ob.shape != want)
    return fail(DSA_STATUS_INVALID_ARGUMENT, "output: shape " + runtime::shapeString(ob.shape) + ", expected " +
                                                 runtime::shapeString(want) + " (" + outKind.typeString + rowsText +
                                                 ")");
  return ok;
}

/// The checks of a caller's ring buffer `dst` against member `id`'s ring (which it returns in `ring`).
std::optional<Failure> checkRingOut(const dsa_batch_t *batch, dsa_batch_id_t id, const dsa_buffer_t *dst,
                                    const char *what, CheckedBuffer &b, std::shared_ptr<const HostBuffer> &ring) {
  dsa::Result<HostValue> r = batch->batch->ring(id);
  if (!r)
    return fail(DSA_STATUS_INVALID_ARGUMENT, r.error());
  ring = bytesOf(*r);
  if (!dst)
    return ok;
  if (std::optional<Failure> f = checkBuffer(dst, what, b))
    return f;
  if (b.type != ring->elementType() || b.shape != ring->shape())
    return fail(DSA_STATUS_INVALID_ARGUMENT, std::string(what) + ": " + dsa::elementTypeName(b.type) + " " +
                                                 runtime::shapeString(b.shape) + ", the ring is " +
                                                 dsa::elementTypeName(ring->elementType()) + " " +
                                                 runtime::shapeString(ring->shape()));
  return ok;
}

/// One step of `seq` on x (checked) at startPos with `shared` (NULL: none), the output rows written to `output`
/// (NULL: not written). `router` (a piece of a stack plan, layer `layer`): a layer with shared slots runs the rows as
/// ONE call with index_k routed (Sequence::runStackChunkValues); else a plain step (Sequence::runValues). The step's
/// own checks (x, start_pos, max_seq_len, shared) are reported before the output's; the sequence makes them again.
/// A failure changes nothing: the sequence, the slots, the router.
std::optional<Failure> runSequenceStep(dsa_sequence_t &sequence, const CheckedBuffer &xb, int64_t startPos,
                                       dsa_slots_t *shared, const dsa_buffer_t *output,
                                       runtime::StackChunkRouter *router, size_t layer) {
  const FunctionSignature &sig = *sequence.sig;
  runtime::Sequence &seq = *sequence.seq;
  if (shared && sig.step.shared.empty())
    return fail(DSA_STATUS_INVALID_ARGUMENT,
                "shared: @" + sig.name +
                    " takes no shared slots (pass NULL; the slots go only to the layers that take them)");
  const bool stackChunk = router && !sig.step.shared.empty();
  dsa::Result<std::vector<runtime::SubStep>> plan =
      runtime::planStep(sig, seq.position(), xb.type, xb.shape, startPos,
                        shared ? static_cast<int64_t>(shared->slots.size()) : -1, stackChunk);
  if (!plan)
    return fail(codeOfStepError(plan.error()), plan.error());
  const runtime::ValueKind &outKind = sig.results[static_cast<size_t>(sig.step.output)];
  CheckedBuffer ob;
  if (std::optional<Failure> f = checkOutputBuffer(output, outKind, xb.shape[0],
                                                   " for x's " + std::to_string(xb.shape[0]) + " rows", ob))
    return f;
  dsa::Result<std::vector<HostValue>> results = [&]() -> dsa::Result<std::vector<HostValue>> {
    if (!stackChunk)
      return seq.runValues(tensorOf(xb), startPos, shared ? &shared->slots : nullptr);
    runtime::Sequence::SlotSet routed = shared->slots;
    if (dsa::Status st = router->beforeLayer(layer, routed); !st)
      return dsa::makeError(st.error());
    dsa::Result<std::vector<HostValue>> r = seq.runStackChunkValues(tensorOf(xb), startPos, routed);
    if (!r)
      return r;
    if (dsa::Status st = router->afterLayer(layer, routed); !st)
      return dsa::makeError(st.error());
    shared->slots = std::move(routed);
    return r;
  }();
  if (!results)
    return fail(codeOfStepError(results.error()), results.error());
  if (output)
    return copyOut((*results)[static_cast<size_t>(sig.step.output)], ob, "output");
  return ok;
}

} // namespace

extern "C" {

uint32_t dsa_c_api_version(void) { return DSA_C_API_VERSION; }

dsa_status_code_t dsa_status_code(dsa_status_t status) { return status ? status->code : DSA_STATUS_OK; }

const char *dsa_status_message(dsa_status_t status) { return status ? status->message.c_str() : ""; }

const char *dsa_status_code_name(dsa_status_code_t code) {
  switch (code) {
  case DSA_STATUS_OK:
    return "OK";
  case DSA_STATUS_INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case DSA_STATUS_NOT_FOUND:
    return "NOT_FOUND";
  case DSA_STATUS_VERSION_MISMATCH:
    return "VERSION_MISMATCH";
  case DSA_STATUS_OUT_OF_RANGE:
    return "OUT_OF_RANGE";
  case DSA_STATUS_FAILED_PRECONDITION:
    return "FAILED_PRECONDITION";
  case DSA_STATUS_UNAVAILABLE:
    return "UNAVAILABLE";
  case DSA_STATUS_RUN_FAILED:
    return "RUN_FAILED";
  case DSA_STATUS_RESOURCE_EXHAUSTED:
    return "RESOURCE_EXHAUSTED";
  case DSA_STATUS_INTERNAL:
    return "INTERNAL";
  }
  return "UNKNOWN";
}

void dsa_status_free(dsa_status_t status) {
  if (status && status != &gOutOfMemory)
    delete status;
}

size_t dsa_dtype_size(dsa_dtype_t dtype) {
  std::optional<ElementType> t = elementTypeOf(dtype);
  return t ? static_cast<size_t>(runtime::elementBytes(*t)) : 0;
}

const char *dsa_dtype_name(dsa_dtype_t dtype) {
  std::optional<ElementType> t = elementTypeOf(dtype);
  return t ? dsa::elementTypeName(*t) : "?";
}

dsa_status_t dsa_library_open(uint32_t api_version, const char *description_path, dsa_library_t **out_library) {
  return guard("dsa_library_open", [&]() -> std::optional<Failure> {
    if (api_version != DSA_C_API_VERSION)
      return fail(DSA_STATUS_VERSION_MISMATCH,
                  "api_version: the caller was compiled against the DSA C API version " +
                      std::to_string(api_version) + ", this libdsa_runtime_c implements version " +
                      std::to_string(DSA_C_API_VERSION) +
                      " (rebuild the caller against this library's dsa-c/runtime.h)");
    if (std::optional<Failure> f = requireNonNull(description_path, "description_path"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_library, "out_library"))
      return f;
    const std::string path = description_path;
    if (!fileExists(path))
      return fail(DSA_STATUS_NOT_FOUND, "description_path: cannot read step description '" + path + "'");
    auto lib = std::make_shared<LoadedLibrary>();
    if (formatOf(path) == dsa::cuda::kGpuStepLibraryFormat) {
      dsa::Result<std::shared_ptr<dsa::cuda::MgpuRuntime>> rt = dsa::cuda::MgpuRuntime::open();
      if (!rt)
        return fail(DSA_STATUS_UNAVAILABLE, path + ": " + rt.error());
      dsa::Result<std::unique_ptr<dsa::cuda::GpuStepLibrary>> g = dsa::cuda::GpuStepLibrary::open(rt.take(), path);
      if (!g)
        return fail(DSA_STATUS_UNAVAILABLE, g.error());
      lib->gpu = g.take();
      lib->backend = "cuda";
      lib->target = lib->gpu->description().chip;
    } else {
      dsa::Result<std::unique_ptr<dsa::cpu::CPUStepLibrary>> c = dsa::cpu::CPUStepLibrary::open(path);
      if (!c)
        return fail(DSA_STATUS_UNAVAILABLE, c.error());
      lib->cpu = c.take();
      lib->backend = "cpu";
      lib->target = lib->cpu->description().targetCpu;
    }
    *out_library = new dsa_library_t{std::move(lib)};
    return ok;
  });
}

void dsa_library_release(dsa_library_t *library) { delete library; }

dsa_status_t dsa_library_backend(const dsa_library_t *library, const char **out_backend, const char **out_target) {
  return guard("dsa_library_backend", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(library, "library"))
      return f;
    if (out_backend)
      *out_backend = library->lib->backend.c_str();
    if (out_target)
      *out_target = library->lib->target.c_str();
    return ok;
  });
}

dsa_status_t dsa_library_function_count(const dsa_library_t *library, size_t *out_count) {
  return guard("dsa_library_function_count", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(library, "library"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_count, "out_count"))
      return f;
    *out_count = library->lib->functions().size();
    return ok;
  });
}

dsa_status_t dsa_library_function_name(const dsa_library_t *library, size_t index, const char **out_name) {
  return guard("dsa_library_function_name", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(library, "library"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_name, "out_name"))
      return f;
    const auto &fns = library->lib->functions();
    if (index >= fns.size())
      return fail(DSA_STATUS_INVALID_ARGUMENT, "index: " + std::to_string(index) + " is past the library's " +
                                                   std::to_string(fns.size()) + " functions");
    *out_name = fns[index].name.c_str();
    return ok;
  });
}

dsa_status_t dsa_function_info(const dsa_library_t *library, const char *function, dsa_function_info_t *out_info) {
  return guard("dsa_function_info", [&]() -> std::optional<Failure> {
    const FunctionSignature *sig = nullptr;
    if (std::optional<Failure> f = lookupFunction(library, function, out_info, sig))
      return f;
    dsa_function_info_t info{};
    info.num_args = sig->args.size();
    info.num_results = sig->numResults;
    info.x_arg = sig->step.present() ? sig->step.x : -1;
    info.start_pos_arg = sig->step.present() ? sig->step.startPos : -1;
    info.output_result = sig->step.present() ? sig->step.output : -1;
    info.max_seq_len = sig->step.maxSeqLen;
    for (size_t a = 0; a < sig->args.size(); ++a)
      info.num_weights += roleOf(*sig, a) == DSA_ARG_WEIGHT ? 1 : 0;
    info.num_state = sig->state.size();
    info.num_shared = sig->step.shared.size();
    info.chunked = sig->step.present() && sig->step.chunked ? 1 : 0;
    *out_info = info;
    return ok;
  });
}

dsa_status_t dsa_function_arg(const dsa_library_t *library, const char *function, size_t index,
                              dsa_value_info_t *out_info) {
  return guard("dsa_function_arg", [&]() -> std::optional<Failure> {
    const FunctionSignature *sig = nullptr;
    if (std::optional<Failure> f = lookupFunction(library, function, out_info, sig))
      return f;
    if (index >= sig->args.size())
      return fail(DSA_STATUS_INVALID_ARGUMENT, "index: " + std::to_string(index) + " is past @" + sig->name + "'s " +
                                                   std::to_string(sig->args.size()) + " arguments");
    dsa_value_info_t info;
    fillValueInfo(sig->args[index], info);
    info.role = roleOf(*sig, index);
    *out_info = info;
    return ok;
  });
}

dsa_status_t dsa_function_result(const dsa_library_t *library, const char *function, size_t index,
                                 dsa_value_info_t *out_info) {
  return guard("dsa_function_result", [&]() -> std::optional<Failure> {
    const FunctionSignature *sig = nullptr;
    if (std::optional<Failure> f = lookupFunction(library, function, out_info, sig))
      return f;
    if (index >= sig->numResults)
      return fail(DSA_STATUS_INVALID_ARGUMENT, "index: " + std::to_string(index) + " is past @" + sig->name + "'s " +
                                                   std::to_string(sig->numResults) + " results");
    dsa_value_info_t info;
    fillValueInfo(sig->results[index], info);
    *out_info = info;
    return ok;
  });
}

dsa_status_t dsa_sequence_create(dsa_library_t *library, const char *function, size_t num_weights,
                                 const size_t *weight_args, const dsa_buffer_t *weights,
                                 dsa_sequence_t **out_sequence) {
  return guard("dsa_sequence_create", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(library, "library"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_sequence, "out_sequence"))
      return f;
    const FunctionSignature *sig = nullptr;
    if (std::optional<Failure> f = library->lib->lookup(function, sig))
      return f;
    if (std::optional<Failure> f = requireStepRoles(*sig))
      return f;
    if (sig->step.output >= 0 && static_cast<size_t>(sig->step.output) < sig->results.size()) {
      const runtime::ValueKind &out = sig->results[static_cast<size_t>(sig->step.output)];
      for (size_t d = 1; d < out.shape.size(); ++d)
        if (out.shape[d] < 0)
          return fail(DSA_STATUS_FAILED_PRECONDITION, "function: @" + sig->name + "'s output " + out.typeString +
                                                          " has a dynamic dimension " + std::to_string(d) +
                                                          " (only the token rows may be dynamic)");
    }
    std::map<size_t, HostValue> fixed;
    if (std::optional<Failure> f = bindWeights(*sig, num_weights, weight_args, weights, fixed))
      return f;
    const std::shared_ptr<const LoadedLibrary> lib = library->lib;
    const std::string name = sig->name;
    dsa::Result<runtime::Sequence> seq = [&]() -> dsa::Result<runtime::Sequence> {
      if (lib->cpu)
        return runtime::Sequence::start(*sig, cpuRunner(lib->cpu, name), std::move(fixed));
      return runtime::Sequence::start(*sig, dsa::cuda::makeSequenceRunner(lib->gpu, name), std::move(fixed));
    }();
    if (!seq)
      return fail(DSA_STATUS_FAILED_PRECONDITION, seq.error());
    auto s = std::make_unique<dsa_sequence_t>();
    s->lib = lib;
    s->sig = sig;
    s->seq.emplace(seq.take());
    for (const runtime::StateBinding &b : sig->state)
      s->stateArgs.push_back(static_cast<size_t>(b.arg));
    std::sort(s->stateArgs.begin(), s->stateArgs.end());
    for (size_t k = 0; k < s->stateArgs.size(); ++k)
      s->stateNames.push_back("state" + std::to_string(k));
    *out_sequence = s.release();
    return ok;
  });
}

void dsa_sequence_release(dsa_sequence_t *sequence) { delete sequence; }

dsa_status_t dsa_sequence_step(dsa_sequence_t *sequence, const dsa_buffer_t *x, int64_t start_pos,
                               dsa_slots_t *shared, const dsa_buffer_t *output) {
  return guard("dsa_sequence_step", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(sequence, "sequence"))
      return f;
    CheckedBuffer xb;
    if (std::optional<Failure> f = checkBuffer(x, "x", xb))
      return f;
    const int64_t startPos = start_pos == DSA_START_POS_NEXT ? sequence->seq->position() : start_pos;
    return runSequenceStep(*sequence, xb, startPos, shared, output, nullptr, 0);
  });
}

dsa_status_t dsa_sequence_position(const dsa_sequence_t *sequence, int64_t *out_position) {
  return guard("dsa_sequence_position", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(sequence, "sequence"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_position, "out_position"))
      return f;
    *out_position = sequence->seq->position();
    return ok;
  });
}

dsa_status_t dsa_sequence_reset(dsa_sequence_t *sequence) {
  return guard("dsa_sequence_reset", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(sequence, "sequence"))
      return f;
    sequence->seq->reset();
    return ok;
  });
}

dsa_status_t dsa_sequence_state_count(const dsa_sequence_t *sequence, size_t *out_count) {
  return guard("dsa_sequence_state_count", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(sequence, "sequence"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_count, "out_count"))
      return f;
    *out_count = sequence->stateArgs.size();
    return ok;
  });
}

dsa_status_t dsa_sequence_state_info(const dsa_sequence_t *sequence, size_t index, dsa_state_info_t *out_info) {
  return guard("dsa_sequence_state_info", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(sequence, "sequence"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_info, "out_info"))
      return f;
    if (index >= sequence->stateArgs.size())
      return fail(DSA_STATUS_INVALID_ARGUMENT, "index: " + std::to_string(index) + " is past the sequence's " +
                                                   std::to_string(sequence->stateArgs.size()) + " state tensors");
    const FunctionSignature &sig = *sequence->sig;
    const size_t arg = sequence->stateArgs[index];
    dsa_state_info_t info{};
    info.name = sequence->stateNames[index].c_str();
    info.arg = arg;
    for (const runtime::StateBinding &b : sig.state)
      if (static_cast<size_t>(b.arg) == arg) {
        info.result = static_cast<size_t>(b.result);
        info.init_neg_inf = b.init == runtime::StateInit::NegInf ? 1 : 0;
      }
    fillValueInfo(sig.args[arg], info.value);
    info.value.role = DSA_ARG_STATE;
    *out_info = info;
    return ok;
  });
}

dsa_status_t dsa_sequence_read_state(const dsa_sequence_t *sequence, size_t index, const dsa_buffer_t *dst) {
  return guard("dsa_sequence_read_state", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(sequence, "sequence"))
      return f;
    if (index >= sequence->stateArgs.size())
      return fail(DSA_STATUS_INVALID_ARGUMENT, "index: " + std::to_string(index) + " is past the sequence's " +
                                                   std::to_string(sequence->stateArgs.size()) + " state tensors");
    CheckedBuffer b;
    if (std::optional<Failure> f = checkBuffer(dst, "dst", b))
      return f;
    const size_t arg = sequence->stateArgs[index];
    const HostValue *v = sequence->seq->state(arg);
    if (!v)
      return fail(DSA_STATUS_INTERNAL, "state " + std::to_string(index) + ": argument #" + std::to_string(arg) +
                                           " is not the sequence's state");
    std::shared_ptr<const HostBuffer> bytes = bytesOf(*v);
    if (b.type != bytes->elementType() || b.shape != bytes->shape())
      return fail(DSA_STATUS_INVALID_ARGUMENT, "dst: " + std::string(dsa::elementTypeName(b.type)) + " " +
                                                   runtime::shapeString(b.shape) + ", the state is " +
                                                   dsa::elementTypeName(bytes->elementType()) + " " +
                                                   runtime::shapeString(bytes->shape()) + " (" +
                                                   sequence->sig->args[arg].typeString + ")");
    return copyOut(*v, b, "dst");
  });
}

dsa_status_t dsa_stack_plan_create(dsa_sequence_t *const *layers, size_t num_layers, int64_t prefill_tokens,
                                   int64_t start_pos, int64_t tokens, dsa_stack_plan_t **out_plan) {
  return guard("dsa_stack_plan_create", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(layers, "layers"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_plan, "out_plan"))
      return f;
    if (num_layers == 0)
      return fail(DSA_STATUS_INVALID_ARGUMENT, "num_layers: 0 (a plan is for every attention layer of the model)");
    auto plan = std::make_unique<dsa_stack_plan_t>();
    plan->startPos = start_pos;
    std::vector<runtime::StackLayerRoles> roles;
    std::set<const dsa_sequence_t *> seen;
    for (size_t l = 0; l < num_layers; ++l) {
      const std::string what = "layers[" + std::to_string(l) + "]";
      if (!layers[l])
        return fail(DSA_STATUS_INVALID_ARGUMENT, what + " is NULL");
      if (!seen.insert(layers[l]).second)
        return fail(DSA_STATUS_INVALID_ARGUMENT, what + ": the sequence is given twice (one per layer)");
      const FunctionSignature &sig = *layers[l]->sig;
      if (layers[l]->seq->position() != start_pos)
        return fail(DSA_STATUS_INVALID_ARGUMENT,
                    what + ": @" + sig.name + " is at position " + std::to_string(layers[l]->seq->position()) +
                        ", the chunk starts at start_pos " + std::to_string(start_pos) +
                        " (every layer must have run every token before it)");
      dsa::Result<runtime::StackLayerRoles> r = runtime::stackLayerRoles(sig);
      if (!r)
        return fail(DSA_STATUS_FAILED_PRECONDITION, what + ": " + r.error());
      roles.push_back(*r);
      plan->layers.push_back(layers[l]);
      plan->hasShared = plan->hasShared || !sig.step.shared.empty();
    }
    if (tokens < 1)
      return fail(DSA_STATUS_INVALID_ARGUMENT, "tokens: " + std::to_string(tokens) + " (a step has at least one)");
    if (prefill_tokens < 1 || prefill_tokens > start_pos)
      return fail(DSA_STATUS_INVALID_ARGUMENT, "prefill_tokens: " + std::to_string(prefill_tokens) +
                                                   " is outside 1 .. start_pos (" + std::to_string(start_pos) + ")");
    // Every layer's capacity up front, so that a plan never stops half-way through the stack on it.
    for (size_t l = 0; l < num_layers; ++l) {
      const int64_t capacity = layers[l]->sig->step.maxSeqLen;
      if (capacity >= 0 && tokens > capacity - start_pos)
        return fail(DSA_STATUS_OUT_OF_RANGE, "layers[" + std::to_string(l) + "]: max_seq_len: @" +
                                                 layers[l]->sig->name + " holds " + std::to_string(capacity) +
                                                 " positions, the chunk of " + std::to_string(tokens) +
                                                 " tokens at start_pos " + std::to_string(start_pos) + " needs " +
                                                 std::to_string(start_pos) + " + " + std::to_string(tokens));
    }
    dsa::Result<std::vector<runtime::StackSubChunk>> pieces =
        runtime::planStackChunk(roles, prefill_tokens, start_pos, tokens);
    if (!pieces)
      return fail(DSA_STATUS_FAILED_PRECONDITION, pieces.error());
    for (runtime::StackSubChunk &p : *pieces)
      plan->pieces.emplace_back(std::move(p));
    *out_plan = plan.release();
    return ok;
  });
}

void dsa_stack_plan_release(dsa_stack_plan_t *plan) { delete plan; }

dsa_status_t dsa_stack_plan_piece_count(const dsa_stack_plan_t *plan, size_t *out_count) {
  return guard("dsa_stack_plan_piece_count", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(plan, "plan"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_count, "out_count"))
      return f;
    *out_count = plan->pieces.size();
    return ok;
  });
}

namespace {

/// Piece `piece` of `plan` exists.
std::optional<Failure> checkPiece(const dsa_stack_plan_t &plan, size_t piece) {
  if (piece >= plan.pieces.size())
    return fail(DSA_STATUS_INVALID_ARGUMENT, "piece: " + std::to_string(piece) + " is past the plan's " +
                                                 std::to_string(plan.pieces.size()) + " pieces");
  return ok;
}

/// Piece `piece` is the one begun, and `shared` the set it began with.
std::optional<Failure> checkCurrentPiece(const dsa_stack_plan_t &plan, size_t piece, const dsa_slots_t *shared) {
  if (std::optional<Failure> f = checkPiece(plan, piece))
    return f;
  if (plan.current != piece)
    return fail(DSA_STATUS_INVALID_ARGUMENT,
                "piece: " + std::to_string(piece) + " is not begun (" +
                    (plan.current ? "piece " + std::to_string(*plan.current) + " is"
                                  : std::string("dsa_stack_piece_begin starts a piece; none is")) +
                    ")");
  if (shared != plan.slots)
    return fail(DSA_STATUS_INVALID_ARGUMENT,
                std::string("shared: ") + (shared ? "not the slot set" : "NULL, not the slot set") + " piece " +
                    std::to_string(piece) + " began with");
  return ok;
}

} // namespace

dsa_status_t dsa_stack_plan_piece(const dsa_stack_plan_t *plan, size_t piece, int64_t *out_first,
                                  int64_t *out_count) {
  return guard("dsa_stack_plan_piece", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(plan, "plan"))
      return f;
    if (std::optional<Failure> f = checkPiece(*plan, piece))
      return f;
    const runtime::StackSubChunk &p = plan->pieces[piece].piece();
    if (out_first)
      *out_first = p.first;
    if (out_count)
      *out_count = p.count;
    return ok;
  });
}

dsa_status_t dsa_stack_piece_begin(dsa_stack_plan_t *plan, size_t piece, const dsa_slots_t *shared) {
  return guard("dsa_stack_piece_begin", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(plan, "plan"))
      return f;
    if (std::optional<Failure> f = checkPiece(*plan, piece))
      return f;
    if (plan->current || piece != plan->next)
      return fail(DSA_STATUS_INVALID_ARGUMENT,
                  "piece: " + std::to_string(piece) + " is not the next piece (" +
                      (plan->current ? "piece " + std::to_string(*plan->current) + " is begun and not finished"
                                     : plan->next < plan->pieces.size()
                                           ? "piece " + std::to_string(plan->next) + " is next"
                                           : std::string("every piece has run")) +
                      ")");
    if (plan->hasShared && !shared)
      return fail(DSA_STATUS_INVALID_ARGUMENT, "shared: NULL, and the stack's layers take the shared slots");
    if (!plan->hasShared && shared)
      return fail(DSA_STATUS_INVALID_ARGUMENT, "shared: no layer of the stack takes shared slots (pass NULL)");
    if (shared)
      if (dsa::Status st = plan->pieces[piece].begin(shared->slots); !st)
        return fail(DSA_STATUS_INVALID_ARGUMENT, "shared: " + st.error());
    plan->current = piece;
    plan->layersRun = 0;
    plan->slots = shared;
    return ok;
  });
}

dsa_status_t dsa_stack_piece_step(dsa_stack_plan_t *plan, size_t piece, size_t layer, const dsa_buffer_t *x,
                                  dsa_slots_t *shared, const dsa_buffer_t *output) {
  return guard("dsa_stack_piece_step", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(plan, "plan"))
      return f;
    if (std::optional<Failure> f = checkCurrentPiece(*plan, piece, shared))
      return f;
    if (layer >= plan->layers.size() || layer != plan->layersRun)
      return fail(DSA_STATUS_INVALID_ARGUMENT,
                  "layer: " + std::to_string(layer) +
                      (layer >= plan->layers.size()
                           ? " is past the stack's " + std::to_string(plan->layers.size()) + " layers"
                           : " is not the next layer of piece " + std::to_string(piece) + " (layer " +
                                 (plan->layersRun < plan->layers.size() ? std::to_string(plan->layersRun) + " is"
                                                                        : std::string("every layer has run")) +
                                 ")"));
    CheckedBuffer xb;
    if (std::optional<Failure> f = checkBuffer(x, "x", xb))
      return f;
    runtime::StackChunkRouter &router = plan->pieces[piece];
    const int64_t rows = router.piece().count;
    if (xb.shape.empty() || xb.shape[0] != rows)
      return fail(DSA_STATUS_INVALID_ARGUMENT, "x: shape " + runtime::shapeString(xb.shape) + ", piece " +
                                                   std::to_string(piece) + " has " + std::to_string(rows) +
                                                   " token rows");
    dsa_sequence_t &seq = *plan->layers[layer];
    dsa_slots_t *slots = seq.sig->step.shared.empty() ? nullptr : shared;
    if (std::optional<Failure> f = runSequenceStep(seq, xb, plan->startPos + router.piece().first, slots, output,
                                                   &router, layer))
      return fail(f->code, "layer " + std::to_string(layer) + ": " + f->message);
    ++plan->layersRun;
    return ok;
  });
}

dsa_status_t dsa_stack_piece_finish(dsa_stack_plan_t *plan, size_t piece, dsa_slots_t *shared) {
  return guard("dsa_stack_piece_finish", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(plan, "plan"))
      return f;
    if (std::optional<Failure> f = checkCurrentPiece(*plan, piece, shared))
      return f;
    if (plan->layersRun != plan->layers.size())
      return fail(DSA_STATUS_INVALID_ARGUMENT, "layer: " + std::to_string(plan->layersRun) + " of piece " +
                                                   std::to_string(piece) + " has not run (the piece runs every "
                                                   "layer of the stack, in order)");
    if (shared)
      if (dsa::Status st = plan->pieces[piece].finish(shared->slots); !st)
        return fail(DSA_STATUS_INVALID_ARGUMENT, "shared: " + st.error());
    plan->current.reset();
    plan->next = piece + 1;
    plan->slots = nullptr;
    return ok;
  });
}

dsa_status_t dsa_slots_create(const dsa_library_t *library, const char *function, dsa_slots_t **out_slots) {
  return guard("dsa_slots_create", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(library, "library"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_slots, "out_slots"))
      return f;
    const FunctionSignature *sig = nullptr;
    if (std::optional<Failure> f = library->lib->lookup(function, sig))
      return f;
    dsa::Result<runtime::Sequence::SlotSet> slots = runtime::Sequence::initialSlots(*sig);
    if (!slots)
      return fail(DSA_STATUS_FAILED_PRECONDITION, slots.error());
    *out_slots = new dsa_slots_t{library->lib, sig->name, slots.take()};
    return ok;
  });
}

void dsa_slots_release(dsa_slots_t *slots) { delete slots; }

dsa_status_t dsa_batch_create(dsa_library_t *library, const char *function, size_t num_weights,
                              const size_t *weight_args, const dsa_buffer_t *weights, dsa_batch_t **out_batch) {
  return guard("dsa_batch_create", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(library, "library"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_batch, "out_batch"))
      return f;
    const FunctionSignature *sig = nullptr;
    if (std::optional<Failure> f = library->lib->lookup(function, sig))
      return f;
    const std::shared_ptr<const LoadedLibrary> lib = library->lib;
    if (!lib->cpu)
      return fail(DSA_STATUS_FAILED_PRECONDITION,
                  "library: a " + lib->backend + " step library; batched decode runs on CPU step libraries");
    if (std::optional<Failure> f = requireStepRoles(*sig))
      return f;
    if (!sig->step.shared.empty() || sig->state.size() != 1)
      return fail(DSA_STATUS_FAILED_PRECONDITION,
                  "@" + sig->name + ": a batched compressed layer (state beyond the ring, shared slots): the C API "
                                    "batches window-only layers (C++: runtime::Batch with runtime::stackSlots)");
    std::map<size_t, HostValue> fixed;
    if (std::optional<Failure> f = bindWeights(*sig, num_weights, weight_args, weights, fixed))
      return f;
    dsa::Result<runtime::Batch> batch = runtime::Batch::start(*sig, cpuRunner(lib->cpu, sig->name), std::move(fixed));
    if (!batch)
      return fail(DSA_STATUS_FAILED_PRECONDITION, batch.error());
    auto b = std::make_unique<dsa_batch_t>();
    b->lib = lib;
    b->sig = sig;
    b->batch.emplace(batch.take());
    *out_batch = b.release();
    return ok;
  });
}

void dsa_batch_release(dsa_batch_t *batch) { delete batch; }

dsa_status_t dsa_batch_join(dsa_batch_t *batch, const dsa_buffer_t *ring, int64_t position, dsa_batch_id_t *out_id) {
  return guard("dsa_batch_join", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(batch, "batch"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_id, "out_id"))
      return f;
    CheckedBuffer rb;
    if (std::optional<Failure> f = checkBuffer(ring, "ring", rb))
      return f;
    dsa::Result<runtime::Batch::SequenceId> id = batch->batch->join(HostValue(copyBuffer(rb)), position);
    if (!id)
      return fail(codeOfStepError(id.error()), id.error());
    *out_id = *id;
    return ok;
  });
}

dsa_status_t dsa_batch_leave(dsa_batch_t *batch, dsa_batch_id_t id, const dsa_buffer_t *ring,
                             int64_t *out_position) {
  return guard("dsa_batch_leave", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(batch, "batch"))
      return f;
    CheckedBuffer rb;
    std::shared_ptr<const HostBuffer> current;
    if (std::optional<Failure> f = checkRingOut(batch, id, ring, "ring", rb, current))
      return f;
    dsa::Result<runtime::Batch::Member> left = batch->batch->leave(id);
    if (!left)
      return fail(DSA_STATUS_INVALID_ARGUMENT, left.error());
    if (out_position)
      *out_position = left->position;
    if (ring)
      return copyOut(left->ring(), rb, "ring");
    return ok;
  });
}

dsa_status_t dsa_batch_step(dsa_batch_t *batch, const dsa_buffer_t *x, const dsa_buffer_t *output) {
  return guard("dsa_batch_step", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(batch, "batch"))
      return f;
    CheckedBuffer xb;
    if (std::optional<Failure> f = checkBuffer(x, "x", xb))
      return f;
    const FunctionSignature &sig = *batch->sig;
    const runtime::ValueKind &outKind = sig.results[static_cast<size_t>(sig.step.output)];
    CheckedBuffer ob;
    if (std::optional<Failure> f =
            checkOutputBuffer(output, outKind, xb.shape.empty() ? 0 : xb.shape[0], " for x's rows", ob))
      return f;
    dsa::Result<HostValue> out = batch->batch->step(HostValue(copyBuffer(xb)));
    if (!out)
      return fail(codeOfStepError(out.error()), out.error());
    if (output)
      return copyOut(*out, ob, "output");
    return ok;
  });
}

dsa_status_t dsa_batch_member_count(const dsa_batch_t *batch, size_t *out_count) {
  return guard("dsa_batch_member_count", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(batch, "batch"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_count, "out_count"))
      return f;
    *out_count = batch->batch->members().size();
    return ok;
  });
}

dsa_status_t dsa_batch_member(const dsa_batch_t *batch, size_t index, dsa_batch_id_t *out_id) {
  return guard("dsa_batch_member", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(batch, "batch"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_id, "out_id"))
      return f;
    const std::vector<runtime::Batch::SequenceId> &ids = batch->batch->members();
    if (index >= ids.size())
      return fail(DSA_STATUS_INVALID_ARGUMENT, "index: " + std::to_string(index) + " is past the batch's " +
                                                   std::to_string(ids.size()) + " members");
    *out_id = ids[index];
    return ok;
  });
}

dsa_status_t dsa_batch_position(const dsa_batch_t *batch, dsa_batch_id_t id, int64_t *out_position) {
  return guard("dsa_batch_position", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(batch, "batch"))
      return f;
    if (std::optional<Failure> f = requireNonNull(out_position, "out_position"))
      return f;
    const int64_t p = batch->batch->position(id);
    if (p < 0)
      return fail(DSA_STATUS_INVALID_ARGUMENT, "sequence " + std::to_string(id) + ": not a member");
    *out_position = p;
    return ok;
  });
}

dsa_status_t dsa_batch_read_ring(const dsa_batch_t *batch, dsa_batch_id_t id, const dsa_buffer_t *dst) {
  return guard("dsa_batch_read_ring", [&]() -> std::optional<Failure> {
    if (std::optional<Failure> f = requireNonNull(batch, "batch"))
      return f;
    if (std::optional<Failure> f = requireNonNull(dst, "dst"))
      return f;
    CheckedBuffer b;
    std::shared_ptr<const HostBuffer> ring;
    if (std::optional<Failure> f = checkRingOut(batch, id, dst, "dst", b, ring))
      return f;
    return copyOut(HostValue(ring), b, "dst");
  });
}

} // extern "C"
