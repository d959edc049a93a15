//===- StepLibrary.h - loading and running an AOT-compiled dsa CPU step library (MLIR-free) ---===//
//
// An AOT step library is what dsa::cpu::emitCPUStepLibrary (compiler/lib/Backend/CPU) writes for a module: <base>.so
// (the functions lowered by --dsa-cpu-pipeline, each with its packed entry `_mlir_<name>`, PackedCall.h, and
// `dsa_cpu_fail_hook`, a function pointer the loader points at dsaCpuRecordFailure) and <base>.json (the step
// description, dsa/Runtime/Host/StepDescription.h). CPUStepLibrary::open reads the description, checks the host's
// CPU features (HostFeatures.h) and loads the library; a runtime::Sequence (dsa/Runtime/Host/Sequence.h) drives its
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
  /// Reads the description at `descriptionPath`, checks that this host has its target_features (HostFeatures.h:
  /// an error naming the missing ones, before anything is loaded) and loads its library (dlopen, RTLD_NOW): errors
  /// name the file and the loader's message or the missing `_mlir_<name>` symbol.
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
