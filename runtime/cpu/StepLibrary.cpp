//===- StepLibrary.cpp - loading AOT dsa CPU step libraries (MLIR-free) ----------------===//
#include "dsa/Runtime/CPU/StepLibrary.h"

#include "dsa/Runtime/CPU/HostFeatures.h"
#include "dsa/Runtime/Host/FileDigest.h"

#include "dsa/ABI/StepLibrary.h"

#include <dlfcn.h>

#include <fstream>
#include <sstream>

namespace dsa::cpu {

namespace {

std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

} // namespace

Result<std::unique_ptr<CPUStepLibrary>> CPUStepLibrary::open(const std::string &descriptionPath) {
  std::ifstream in(descriptionPath);
  if (!in)
    return makeError("cannot read step description '" + descriptionPath + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  Result<StepLibraryDescription> d = runtime::parseStepLibrary(ss.str());
  if (!d)
    return makeError(descriptionPath + ": " + d.error());
  std::unique_ptr<CPUStepLibrary> lib(new CPUStepLibrary());
  lib->description_ = d.take();
  const std::string &libName = lib->description_.library;
  const std::string libPath = libName.front() == '/' ? libName : directoryOf(descriptionPath) + "/" + libName;
  // Before dlopen: code compiled for features this CPU lacks would stop at its first such instruction (SIGILL).
  if (Status st = checkHostHasFeatures("step library " + libName, lib->description_.targetCpu,
                                       lib->description_.targetFeatures);
      !st)
    return makeError(descriptionPath + ": " + st.error());
  // Before dlopen: a truncated or damaged file would be mapped and die in the dynamic loader (SIGBUS, SIGSEGV).
  if (Status st = runtime::checkFileDigest(libPath, lib->description_.librarySha256); !st)
    return makeError(descriptionPath + ": step library: " + st.error());
  lib->handle_ = dlopen(libPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) {
    const char *why = dlerror();
    return makeError("cannot load step library '" + libPath + "': " + (why ? why : "unknown dlopen error"));
  }
  // The library's own signature against the description, before anything is called (an error closes the library:
  // `lib` goes with the return).
  const char *compiled = static_cast<const char *>(dlsym(lib->handle_, abi::kStepLibrarySignatureSymbol));
  if (Status st = runtime::checkCompiledSignature(lib->description_, {}, compiled); !st)
    return makeError(descriptionPath + ": step library '" + libPath + "': " + st.error());
  void *hook = dlsym(lib->handle_, abi::kFailHookSymbol);
  if (!hook)
    return makeError("step library '" + libPath + "' has no " + abi::kFailHookSymbol);
  *reinterpret_cast<void (**)(int32_t)>(hook) = &dsaCpuRecordFailure;
  for (const FunctionSignature &f : lib->description_.functions) {
    const std::string symbol = abi::kPackedEntryPrefix + f.name;
    void *entry = dlsym(lib->handle_, symbol.c_str());
    if (!entry)
      return makeError("step library '" + libPath + "' has no symbol " + symbol + " (function @" + f.name + ")");
    lib->entries_[f.name] = reinterpret_cast<PackedFunction>(entry);
  }
  return lib;
}

CPUStepLibrary::~CPUStepLibrary() {
  if (handle_)
    dlclose(handle_);
}

const FunctionSignature *CPUStepLibrary::signature(const std::string &name) const {
  for (const FunctionSignature &f : description_.functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

Result<std::vector<dsa::Tensor>> CPUStepLibrary::run(const std::string &name, const std::vector<HostValue> &args,
                                                        std::vector<NamedTensor> *probes) const {
  const FunctionSignature *sig = signature(name);
  if (!sig) {
    std::string known;
    for (const FunctionSignature &f : description_.functions)
      known += (known.empty() ? "@" : ", @") + f.name;
    return makeError("cpu step library: no function @" + name + " (it has " + (known.empty() ? "none" : known) +
                     ")");
  }
  return invokePacked(*sig, entries_.at(name), args, probes);
}

Result<std::vector<HostValue>> CPUStepLibrary::runValues(const std::string &name, const std::vector<HostValue> &args,
                                                        std::vector<NamedTensor> *probes) const {
  const FunctionSignature *sig = signature(name);
  if (!sig) {
    Result<std::vector<dsa::Tensor>> unknown = run(name, args, probes);
    return makeError(unknown ? std::string("cpu step library: no function @" + name) : unknown.error());
  }
  return invokePackedValues(*sig, entries_.at(name), args, probes);
}

} // namespace dsa::cpu
