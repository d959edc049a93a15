//===- StepLibrary.h - loading and running an AOT-compiled dsa CPU step library (MLIR-free) ---===//
//
// An AOT step library is what dsa::cpu::emitCPUStepLibrary (compiler/lib/Backend/CPU) writes for a module: <base>.so
// (the functions lowered by --dsa-cpu-pipeline; it exports only their packed entries `_mlir_<name>`, PackedCall.h,
// `dsa_cpu_fail_hook`, a function pointer the loader points at dsaCpuRecordFailure, and its compiled-in signature,
// dsa/ABI/StepLibrary.h) and <base>.json (the step description, dsa/Runtime/Host/StepDescription.h).
// CPUStepLibrary::open reads the description, checks the host's CPU features (HostFeatures.h) and the file's digest,
// loads the library and checks its signature against the description; a runtime::Sequence (dsa/Runtime/Host/Sequence.h) drives its
// functions step by step.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_CPU_STEPLIBRARY_H
#define DSA_RUNTIME_CPU_STEPLIBRARY_H

#include "dsa/Runtime/CPU/PackedCall.h"
#include "dsa/Runtime/Host/Sequence.h"
#include "dsa/Runtime/Host/StepDescription.h"

#include <map>
#include <memory>

namespace dsa::cpu {

using runtime::StepLibraryDescription;

/// A loaded step library. Thread-safe for run().
class CPUStepLibrary {
public:
  /// Reads the description at `descriptionPath` (StepDescription.h: version 5, unknown and duplicate keys refused),
  /// then, each before the next:
  ///   - checks that this host has its target_features (HostFeatures.h: an error naming the missing ones);
  ///   - checks the library file's SHA-256 against library_sha256 (FileDigest.h: an error naming the file and both
  ///     digests; a truncated or replaced file never reaches the dynamic loader);
  ///   - loads the library (dlopen, RTLD_NOW: an error with the loader's message);
  ///   - compares the signature compiled into it (dsa_step_library_signature) with the description
  ///     (runtime::checkCompiledSignature: an error naming the function, argument or result and field);
  ///   - resolves `dsa_cpu_fail_hook` and each `_mlir_<name>` (an error naming the missing symbol).
  /// On any error nothing stays loaded. run()/runValues() then check every argument against the verified signature.
  static Result<std::unique_ptr<CPUStepLibrary>> open(const std::string &descriptionPath);
  ~CPUStepLibrary();
  CPUStepLibrary(const CPUStepLibrary &) = delete;
  CPUStepLibrary &operator=(const CPUStepLibrary &) = delete;

  const StepLibraryDescription &description() const { return description_; }
  /// The function called `name`, or null.
  const FunctionSignature *signature(const std::string &name) const;
  /// Runs `name` (Values.h invokePacked); an unknown name is an error listing the library's functions.
  Result<std::vector<dsa::Tensor>> run(const std::string &name, const std::vector<HostValue> &args,
                                          std::vector<NamedTensor> *probes = nullptr) const;
  /// run() without converting the results to Tensors (Values.h invokePackedValues): the runner of a sequence that
  /// keeps its state resident (Sequence::ValueRunner).
  Result<std::vector<HostValue>> runValues(const std::string &name, const std::vector<HostValue> &args,
                                          std::vector<NamedTensor> *probes = nullptr) const;

private:
  CPUStepLibrary() = default;
  StepLibraryDescription description_;
  void *handle_ = nullptr;
  std::map<std::string, PackedFunction> entries_;
};

} // namespace dsa::cpu

#endif
