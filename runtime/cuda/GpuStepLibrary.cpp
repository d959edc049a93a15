//===- GpuStepLibrary.cpp - AOT dsa GPU step libraries (MLIR-free) ----------------------------------------===//
#include "dsa/Runtime/Cuda/GpuStepLibrary.h"

#include "dsa/Numerics/BF16.h"
#include "dsa/Runtime/Host/FileDigest.h"
#include "dsa/Runtime/Host/MemoryFormat.h"
#include "dsa/Runtime/Host/Values.h"
#include "dsa/Support/StrictJson.h"

#include "dsa/ABI/StepLibrary.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace dsa::cuda {

namespace {

using dsa::ElementType;
using dsa::Tensor;
using runtime::alignUp;
using runtime::elementBytes;
using runtime::fieldLayout;
using runtime::shapeString;

int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// `t`'s elements in the device memory format.
std::vector<uint8_t> encode(const Tensor &t) {
  const int64_t n = t.numElements(), eb = elementBytes(t.elementType());
  std::vector<uint8_t> bytes(static_cast<size_t>(n * eb));
  for (int64_t i = 0; i < n; ++i)
    runtime::storeElement(t, i, bytes.data() + i * eb);
  return bytes;
}

std::string readFile(const std::string &path, bool &ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string directoryOf(const std::string &path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

/// Checks `value` against `kind` ("argument #i"): runtime::checkValueKind (the CPU's packed call and the C API
/// check the same way), and a scalar argument must be a host value (it is passed by value, not as a buffer).
Status checkArgument(const GpuValue &value, const runtime::ValueKind &kind, const std::string &what) {
  const ElementType type = value.isDevice() ? value.device()->elementType() : value.host()->elementType();
  const std::vector<int64_t> &shape = value.isDevice() ? value.device()->shape() : value.host()->shape();
  if (!kind.isTensor && value.isDevice())
    return makeError(what + " is a device buffer of shape " + shapeString(shape) + ", expected a host scalar (" +
                     kind.typeString + ")");
  return runtime::checkValueKind(kind, type, shape, what);
}

} // namespace

//===----------------------------------------------------------------------------------------------------------===//
// Description
//===----------------------------------------------------------------------------------------------------------===//

Result<std::pair<int, int>> parseChip(const std::string &chip) {
  const std::string bad = "chip: expected \"sm_<major><minor>\" (e.g. sm_90), got \"" + chip + "\"";
  if (chip.size() < 5 || chip.compare(0, 3, "sm_") != 0)
    return makeError(bad);
  std::string digits = chip.substr(3);
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f'))
    digits.pop_back(); // sm_90a, sm_100f: the architecture-specific variants
  if (digits.size() < 2 || digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string::npos)
    return makeError(bad);
  return std::make_pair(std::stoi(digits.substr(0, digits.size() - 1)), digits.back() - '0');
}

runtime::TargetFields gpuTargetFields(const GpuStepLibraryDescription &d) {
  return {{"backend", d.backend}, {"chip", d.chip}, {"binary_format", d.binaryFormat}};
}

std::string describeGpuStepLibrary(const GpuStepLibraryDescription &d) {
  nlohmann::json j = nlohmann::json::parse(runtime::describeStepLibrary(d.base));
  j["format"] = kGpuStepLibraryFormat;
  j["backend"] = d.backend;
  j["chip"] = d.chip;
  j["binary_format"] = d.binaryFormat;
  return j.dump(2) + "\n";
}

Result<GpuStepLibraryDescription> parseGpuStepLibrary(const std::string &text) {
  Result<nlohmann::json> parsed = dsa::json::parseRejectingDuplicates(text);
  if (!parsed)
    return makeError("gpu step description: " + parsed.error());
  nlohmann::json j = parsed.take();
  if (!j.is_object())
    return makeError("gpu step description: not a JSON object");
  if (!j.contains("format") || j["format"] != kGpuStepLibraryFormat)
    return makeError(std::string("format: expected \"") + kGpuStepLibraryFormat + "\"" +
                     (j.contains("format") && j["format"] == runtime::kStepLibraryFormat
                          ? " (this is a CPU step library: load it with dsa::cpu::CPUStepLibrary)"
                          : ""));
  GpuStepLibraryDescription d;
  if (!j.contains("backend") || !j["backend"].is_string() || j["backend"] != "cuda")
    return makeError("backend: expected \"cuda\"");
  d.backend = "cuda";
  if (!j.contains("chip") || !j["chip"].is_string())
    return makeError("chip: missing or not a string");
  d.chip = j["chip"].get<std::string>();
  if (Result<std::pair<int, int>> c = parseChip(d.chip); !c)
    return makeError(c.error());
  if (!j.contains("binary_format") || !j["binary_format"].is_string())
    return makeError("binary_format: missing or not a string");
  d.binaryFormat = j["binary_format"].get<std::string>();
  if (d.binaryFormat != "bin" && d.binaryFormat != "isa" && d.binaryFormat != "fatbin")
    return makeError("binary_format: expected \"bin\", \"isa\" or \"fatbin\", got \"" + d.binaryFormat + "\"");
  // The rest is a CPU step description's (library, its digest, target_cpu, functions): parsed by its parser, which
  // refuses any key it does not know.
  for (const char *key : {"backend", "chip", "binary_format"})
    j.erase(key);
  j["format"] = runtime::kStepLibraryFormat;
  Result<runtime::StepLibraryDescription> base = runtime::parseStepLibrary(j.dump());
  if (!base)
    return makeError(base.error());
  d.base = base.take();
  if (d.base.parallel)
    return makeError("parallel: a GPU step library has no OpenMP host code (expected false)");
  return d;
}

//===----------------------------------------------------------------------------------------------------------===//
// GpuTensor, GpuValue
//===----------------------------------------------------------------------------------------------------------===//

int64_t GpuTensor::numElements() const { return product(shape_); }

Result<GpuTensor> GpuTensor::upload(MgpuRuntime &runtime, const Tensor &t) {
  const std::vector<uint8_t> bytes = encode(t);
  Result<std::shared_ptr<DeviceAllocation>> a = runtime.alloc(bytes.size());
  if (!a)
    return makeError("upload of a " + t.typeString() + ": " + a.error());
  if (Status st = runtime.upload((*a)->ptr(), bytes.data(), bytes.size()); !st)
    return makeError("upload of a " + t.typeString() + ": " + st.error());
  return GpuTensor(t.elementType(), t.shape(), a.take());
}

Result<Tensor> GpuTensor::download() const {
  const int64_t n = numElements(), eb = elementBytes(type_);
  std::vector<uint8_t> bytes(static_cast<size_t>(n * eb));
  if (n > 0) {
    if (!allocation_)
      return makeError("download: the tensor of shape " + shapeString(shape_) + " has no device buffer");
    if (allocation_->bytes() < bytes.size())
      return makeError("download: the device buffer holds " + std::to_string(allocation_->bytes()) +
                       " bytes, the tensor needs " + std::to_string(bytes.size()));
    MgpuRuntime *rt = allocation_->runtime();
    if (Status st = rt->synchronize(); !st)
      return makeError("download: " + st.error());
    if (Status st = rt->download(bytes.data(), allocation_->ptr(), bytes.size()); !st)
      return makeError("download: " + st.error());
  }
  Tensor t(type_, shape_);
  for (int64_t i = 0; i < n; ++i)
    runtime::loadElement(type_, bytes.data() + i * eb, t, i);
  return t;
}

Result<Tensor> GpuValue::toHost() const {
  if (!isDevice_)
    return host_;
  return device_.download();
}

//===----------------------------------------------------------------------------------------------------------===//
// GpuStepLibrary
//===----------------------------------------------------------------------------------------------------------===//

Result<std::unique_ptr<GpuStepLibrary>> GpuStepLibrary::open(std::shared_ptr<MgpuRuntime> runtime,
                                                             const std::string &descriptionPath) {
  if (!runtime)
    return makeError("gpu step library: no runtime (MgpuRuntime::open)");
  bool readable = false;
  const std::string text = readFile(descriptionPath, readable);
  if (!readable)
    return makeError("cannot read gpu step description '" + descriptionPath + "'");
  Result<GpuStepLibraryDescription> d = parseGpuStepLibrary(text);
  if (!d)
    return makeError(descriptionPath + ": " + d.error());
  std::unique_ptr<GpuStepLibrary> lib(new GpuStepLibrary());
  lib->runtime_ = std::move(runtime);
  lib->description_ = d.take();
  const std::string &libName = lib->description_.base.library;
  lib->path_ = libName.front() == '/' ? libName : directoryOf(descriptionPath) + "/" + libName;

  // The device must run what was compiled: a cubin needs the same major and at least its minor; PTX (JIT) any
  // device at least as new.
  const auto [major, minor] = *parseChip(lib->description_.chip);
  const DeviceInfo &dev = lib->runtime_->device();
  const bool cubin = lib->description_.binaryFormat == "bin";
  const bool fits = cubin ? (dev.computeMajor == major && dev.computeMinor >= minor)
                          : (dev.computeMajor > major || (dev.computeMajor == major && dev.computeMinor >= minor));
  if (!fits)
    return makeError("gpu step library '" + lib->path_ + "' was compiled for " + lib->description_.chip + " (" +
                     (cubin ? "cubin" : lib->description_.binaryFormat) + "); device " + std::to_string(dev.ordinal) +
                     " is " + dev.name + " (sm_" + std::to_string(dev.computeMajor) +
                     std::to_string(dev.computeMinor) + "): recompile with chip=sm_" +
                     std::to_string(dev.computeMajor) + std::to_string(dev.computeMinor));

  // The library's undefined mgpu* symbols resolve against this executable's: check they are exported.
  if (dlsym(RTLD_DEFAULT, "mgpuLaunchKernel") != reinterpret_cast<void *>(&mgpuLaunchKernel))
    return makeError("gpu step library: this executable does not export the mgpu* entry points the library calls "
                     "(link it with the DSAGpuStepRuntime CMake target, which adds "
                     "-Wl,--export-dynamic-symbol=mgpu*)");
  // Before dlopen: a truncated or damaged file would be mapped and die in the dynamic loader (SIGBUS, SIGSEGV).
  if (Status st = runtime::checkFileDigest(lib->path_, lib->description_.base.librarySha256); !st)
    return makeError(descriptionPath + ": gpu step library: " + st.error());
  if (void *already = dlopen(lib->path_.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(already);
    return makeError("gpu step library '" + lib->path_ + "' is already loaded in this process (a library can be "
                     "open once: its kernel module is a global of the .so)");
  }
  {
    MgpuRuntime::Binding bind(*lib->runtime_);
    (void)lib->runtime_->takeDeferredError();
    dlerror();
    lib->handle_ = dlopen(lib->path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle_) {
      const char *why = dlerror();
      return makeError("cannot load gpu step library '" + lib->path_ + "': " + (why ? why : "unknown dlopen error"));
    }
    // Its constructor has loaded the kernels (mgpuModuleLoad[JIT]) into the runtime's context.
    if (std::string err = lib->runtime_->takeDeferredError(); !err.empty()) {
      dlclose(lib->handle_);
      lib->handle_ = nullptr;
      return makeError("gpu step library '" + lib->path_ + "': its kernels did not load: " + err);
    }
  }
  // The library's own signature against the description, before anything is called (an error closes the library:
  // `lib` goes with the return).
  const char *compiled = static_cast<const char *>(dlsym(lib->handle_, abi::kStepLibrarySignatureSymbol));
  if (Status st = runtime::checkCompiledSignature(lib->description_.base, gpuTargetFields(lib->description_), compiled);
      !st)
    return makeError(descriptionPath + ": gpu step library '" + lib->path_ + "': " + st.error());
  // Failed run-time checks end the call with the code's message (MgpuRuntime.h).
  void *failHook = dlsym(lib->handle_, abi::kFailHookSymbol);
  if (!failHook)
    return makeError("'" + lib->path_ + "' is not a dsa GPU step library: it has no dsa_cpu_fail_hook");
  *reinterpret_cast<void (**)(int32_t)>(failHook) = &dsaGpuCheckFailed;
  for (const runtime::FunctionSignature &f : lib->description_.base.functions) {
    const std::string symbol = abi::kPackedEntryPrefix + f.name;
    void *entry = dlsym(lib->handle_, symbol.c_str());
    if (!entry)
      return makeError("gpu step library '" + lib->path_ + "' has no symbol " + symbol + " (function @" + f.name +
                       ")");
    lib->entries_[f.name] = reinterpret_cast<PackedEntry>(entry);
  }
  return lib;
}

GpuStepLibrary::~GpuStepLibrary() {
  if (!handle_)
    return;
  // Its destructor unloads the kernels (mgpuModuleUnload) from the runtime's context.
  MgpuRuntime::Binding bind(*runtime_);
  dlclose(handle_);
  (void)runtime_->takeDeferredError();
}

const runtime::FunctionSignature *GpuStepLibrary::signature(const std::string &name) const {
  for (const runtime::FunctionSignature &f : description_.base.functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

Result<std::vector<GpuValue>> GpuStepLibrary::run(const std::string &name, const std::vector<GpuValue> &args,
                                                  std::vector<runtime::NamedTensor> *probes) const {
  const runtime::FunctionSignature *sig = signature(name);
  if (!sig) {
    std::string known;
    for (const runtime::FunctionSignature &f : description_.base.functions)
      known += (known.empty() ? "@" : ", @") + f.name;
    return makeError("gpu step library: no function @" + name + " (it has " + (known.empty() ? "none" : known) +
                     ")");
  }
  const std::string where = "gpu step library @" + name + ": ";
  if (args.size() != sig->args.size())
    return makeError(where + std::to_string(args.size()) + " arguments given, the function takes " +
                     std::to_string(sig->args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    if (Status st = checkArgument(args[i], sig->args[i], "argument #" + std::to_string(i)); !st)
      return makeError(where + st.error());

  // Host tensors become device tensors for this call; then the expanded LLVM arguments, one 8-byte word each.
  std::vector<GpuTensor> uploaded(args.size());
  std::map<DevicePtr, std::shared_ptr<DeviceAllocation>> argumentBuffers;
  std::vector<int64_t> slots;
  for (size_t i = 0; i < args.size(); ++i) {
    const runtime::ValueKind &k = sig->args[i];
    if (!k.isTensor) {
      const Tensor &t = *args[i].host();
      int64_t word = 0;
      const std::vector<uint8_t> bytes = encode(t);
      std::memcpy(&word, bytes.data(), bytes.size());
      slots.push_back(word);
      continue;
    }
    const GpuTensor *t = args[i].device();
    if (!t) {
      Result<GpuTensor> up = GpuTensor::upload(*runtime_, *args[i].host());
      if (!up)
        return makeError(where + "argument #" + std::to_string(i) + ": " + up.error());
      uploaded[i] = up.take();
      t = &uploaded[i];
    }
    if (t->ptr())
      argumentBuffers[t->ptr()] = t->allocation();
    const int64_t address = static_cast<int64_t>(t->ptr());
    slots.push_back(address); // allocated
    slots.push_back(address); // aligned
    slots.push_back(0);       // offset
    for (int64_t d : t->shape())
      slots.push_back(d);
    int64_t stride = 1;
    std::vector<int64_t> strides(t->shape().size());
    for (size_t d = t->shape().size(); d-- > 0;) {
      strides[d] = stride;
      stride *= t->shape()[d];
    }
    slots.insert(slots.end(), strides.begin(), strides.end());
  }
  std::vector<void *> packed;
  for (int64_t &s : slots)
    packed.push_back(&s);
  std::vector<size_t> offsets;
  size_t bytes = 0, maxAlign = 1;
  for (const runtime::ValueKind &k : sig->results) {
    auto [size, align] = fieldLayout(k);
    bytes = alignUp(bytes, align);
    offsets.push_back(bytes);
    bytes += size;
    maxAlign = std::max(maxAlign, align);
  }
  std::vector<int64_t> resultStorage(alignUp(bytes, maxAlign) / 8 + 1, 0);
  if (!sig->results.empty())
    packed.push_back(resultStorage.data());

  Result<MgpuRuntime::CallOutcome> outcome = runtime_->call(entries_.at(name), packed.data(), where.substr(0, where.size() - 2));
  if (!outcome)
    return makeError(outcome.error());

  // Results: adopt the buffers the call allocated (once each: two results may share one), share an argument's.
  std::map<DevicePtr, size_t> live = outcome->liveAllocations;
  std::map<DevicePtr, std::shared_ptr<DeviceAllocation>> adopted;
  std::string error;
  std::vector<GpuValue> results;
  const uint8_t *base = reinterpret_cast<const uint8_t *>(resultStorage.data());
  for (size_t r = 0; r < sig->results.size(); ++r) {
    const runtime::ValueKind &k = sig->results[r];
    const uint8_t *field = base + offsets[r];
    if (!k.isTensor) {
      Tensor t(k.elem, {});
      runtime::loadElement(k.elem, field, t, 0);
      results.emplace_back(std::move(t));
      continue;
    }
    const size_t rank = k.shape.size();
    int64_t words[3 + 2 * 16];
    std::memcpy(words, field, 8 * (3 + 2 * rank));
    const auto allocated = static_cast<DevicePtr>(words[0]);
    const auto aligned = static_cast<DevicePtr>(words[1]);
    std::vector<int64_t> shape(words + 3, words + 3 + rank);
    int64_t stride = 1;
    bool identity = words[2] == 0 && allocated == aligned;
    for (size_t d = rank; d-- > 0;) {
      identity = identity && (shape[d] <= 1 || words[3 + rank + d] == stride);
      stride *= shape[d];
    }
    std::shared_ptr<DeviceAllocation> buffer;
    if (allocated != 0) {
      if (auto it = adopted.find(allocated); it != adopted.end()) {
        buffer = it->second;
      } else if (auto lv = live.find(allocated); lv != live.end()) {
        buffer = runtime_->adopt(allocated, lv->second);
        adopted[allocated] = buffer;
        live.erase(lv);
      } else if (auto ab = argumentBuffers.find(allocated); ab != argumentBuffers.end()) {
        buffer = ab->second;
      } else if (error.empty()) {
        error = "result #" + std::to_string(r) + " points to device memory the call neither allocated nor received";
      }
    }
    if (error.empty() && !identity)
      error = "result #" + std::to_string(r) + " of shape " + shapeString(shape) +
              " does not have the identity layout (offset " + std::to_string(words[2]) + ")";
    if (error.empty() && buffer &&
        static_cast<int64_t>(buffer->bytes()) < product(shape) * elementBytes(k.elem))
      error = "result #" + std::to_string(r) + " of shape " + shapeString(shape) + " is larger than its buffer";
    if (error.empty() && !buffer && product(shape) > 0)
      error = "result #" + std::to_string(r) + " of shape " + shapeString(shape) + " has no buffer";
    results.emplace_back(GpuTensor(k.elem, shape, buffer));
  }
  // What the code allocated and neither freed nor returned.
  for (auto &[p, size] : live) {
    runtime_->release(p);
    ++leaked_;
  }
  if (!error.empty())
    return makeError(where + error);
  if (probes)
    for (size_t p = 0; p < sig->probeNames.size(); ++p) {
      Result<Tensor> t = results[sig->numResults + p].toHost();
      if (!t)
        return makeError(where + "probe '" + sig->probeNames[p] + "': " + t.error());
      probes->push_back(runtime::NamedTensor{sig->probeNames[p], t.take()});
    }
  results.resize(sig->numResults, GpuValue(Tensor()));
  return results;
}

//===----------------------------------------------------------------------------------------------------------===//
// GpuSequence
//===----------------------------------------------------------------------------------------------------------===//

Result<GpuSequence> GpuSequence::create(const GpuStepLibrary &library, const std::string &name,
                                        std::vector<GpuValue> initialArgs) {
  const runtime::FunctionSignature *sig = library.signature(name);
  if (!sig)
    return makeError("gpu sequence: the library has no function @" + name);
  if (initialArgs.size() != sig->args.size())
    return makeError("gpu sequence @" + name + ": " + std::to_string(initialArgs.size()) +
                     " initial arguments, the function takes " + std::to_string(sig->args.size()));
  for (const runtime::StateBinding &b : sig->state)
    if (b.arg < 0 || b.arg >= static_cast<int64_t>(sig->args.size()) || b.result < 0 ||
        b.result >= static_cast<int64_t>(sig->numResults))
      return makeError("gpu sequence @" + name + ": state binding arg " + std::to_string(b.arg) + " / result " +
                       std::to_string(b.result) + " out of range");
  return GpuSequence(library, *sig, std::move(initialArgs));
}

Result<std::vector<GpuValue>> GpuSequence::step(const std::vector<std::pair<size_t, GpuValue>> &stepArgs,
                                                std::vector<runtime::NamedTensor> *probes) {
  std::vector<GpuValue> args = args_;
  for (const auto &[index, value] : stepArgs) {
    if (index >= args.size())
      return makeError("gpu sequence @" + signature_->name + ": argument #" + std::to_string(index) +
                       " does not exist");
    for (const runtime::StateBinding &b : signature_->state)
      if (static_cast<size_t>(b.arg) == index)
        return makeError("gpu sequence @" + signature_->name + ": argument #" + std::to_string(index) +
                         " is state (the previous step's result #" + std::to_string(b.result) + ")");
    args[index] = value;
  }
  Result<std::vector<GpuValue>> results = library_->run(signature_->name, args, probes);
  if (!results)
    return results;
  for (const runtime::StateBinding &b : signature_->state)
    args_[static_cast<size_t>(b.arg)] = (*results)[static_cast<size_t>(b.result)];
  return results;
}

runtime::Sequence::Runner makeSequenceRunner(std::shared_ptr<const GpuStepLibrary> library, std::string name) {
  struct Cache {
    // Keyed by the buffer's address: the buffers must outlive the runner (a Sequence holds its fixed arguments,
    // the weights, for as long as it holds the runner).
    std::map<const runtime::HostBuffer *, GpuTensor> uploads;
  };
  auto cache = std::make_shared<Cache>();
  return [library, name, cache](const std::vector<runtime::HostValue> &args,
                                std::vector<runtime::NamedTensor> *probes) -> Result<std::vector<Tensor>> {
    std::vector<GpuValue> gpuArgs;
    gpuArgs.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (const Tensor *t = args[i].tensor()) {
        gpuArgs.emplace_back(*t);
        continue;
      }
      const runtime::HostBuffer *b = args[i].buffer();
      if (!b)
        return makeError("gpu step library @" + name + ": argument #" + std::to_string(i) + " is a null HostBuffer");
      auto it = cache->uploads.find(b);
      if (it == cache->uploads.end()) {
        const size_t bytes = static_cast<size_t>(product(b->shape()) * elementBytes(b->elementType()));
        Result<std::shared_ptr<DeviceAllocation>> a = library->runtime().alloc(bytes);
        if (!a)
          return makeError("gpu step library @" + name + ": argument #" + std::to_string(i) + ": " + a.error());
        if (Status st = library->runtime().upload((*a)->ptr(), b->data(), bytes); !st)
          return makeError("gpu step library @" + name + ": argument #" + std::to_string(i) + ": " + st.error());
        it = cache->uploads.emplace(b, GpuTensor(b->elementType(), b->shape(), a.take())).first;
      }
      gpuArgs.emplace_back(it->second);
    }
    Result<std::vector<GpuValue>> results = library->run(name, gpuArgs, probes);
    if (!results)
      return makeError(results.error());
    std::vector<Tensor> host;
    for (const GpuValue &v : *results) {
      Result<Tensor> t = v.toHost();
      if (!t)
        return makeError("gpu step library @" + name + ": " + t.error());
      host.push_back(t.take());
    }
    return host;
  };
}

const GpuValue *GpuSequence::state(size_t arg) const {
  for (const runtime::StateBinding &b : signature_->state)
    if (static_cast<size_t>(b.arg) == arg)
      return &args_[arg];
  return nullptr;
}

} // namespace dsa::cuda
