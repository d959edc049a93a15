//===- StepLibrary.h - AOT-compiled dsa CPU steps: description, loader, sequence (MLIR-free) ---===//
//
// An AOT step library is what dsa::cpu::emitCPUStepLibrary (lib/Backend/CPU, MLIR side) writes for a module:
//   <base>.so    the functions lowered by --dsa-cpu-pipeline, each with its packed entry `_mlir_<name>` (Values.h),
//                and `dsa_cpu_fail_hook`, a function pointer the loader points at dsaCpuRecordFailure;
//   <base>.json  the step description: format/version, the library file (relative to the JSON), target CPU,
//                parallel (OpenMP), and per function its signature (args, results, probe names, state bindings).
// This file reads/writes the description, loads the library (dlopen) and runs its functions on Tensors, and keeps
// a sequence's state (e.g. the window ring of every layer) from step to step. Nothing here needs MLIR or LLVM.
//
// Description JSON (version 1):
//   {"format": "dsa-cpu-step-library", "version": 1, "library": "l0.so", "target_cpu": "skylake-avx512",
//    "parallel": false,
//    "functions": [{"name": "attention_L0", "symbol": "_mlir_attention_L0",
//                   "args": [{"type": "tensor<?x64xbf16>", "element": "bf16", "shape": [-1, 64]},
//                            {"type": "i64", "element": "i64", "shape": null}, ...],
//                   "results": [...], "num_results": 2, "probes": ["L0.sa_q", ...],
//                   "state": [{"arg": 2, "result": 1}]}]}
// "shape": null marks a scalar; -1 a dynamic dimension. "results" lists the function's own results, then one per
// probe. Errors name the JSON field (e.g. "functions[0].args[2].element: unknown element type 'f16' ...").
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_CPU_STEPLIBRARY_H
#define DSA_RUNTIME_CPU_STEPLIBRARY_H

#include "dsa/Runtime/CPU/Values.h"

#include <functional>
#include <map>

namespace dsa::cpu {

inline constexpr const char *kStepLibraryFormat = "dsa-cpu-step-library";
inline constexpr int kStepLibraryVersion = 1;

struct StepLibraryDescription {
  std::string library;   ///< the shared object, relative to the description's directory
  std::string targetCpu; ///< the CPU the code was compiled for (LLVM's name, e.g. "skylake-avx512")
  bool parallel = false; ///< OpenMP loops: the library needs libomp (linked into it)
  std::vector<FunctionSignature> functions;
};

/// The description as JSON text (version 1).
std::string describeStepLibrary(const StepLibraryDescription &description);
/// Parses a description; errors name the field.
Result<StepLibraryDescription> parseStepLibrary(const std::string &jsonText);

/// A loaded step library. Thread-safe for run().
class CPUStepLibrary {
public:
  /// Reads the description at `descriptionPath` and loads its library (dlopen, RTLD_NOW): errors name the file and
  /// the loader's message or the missing `_mlir_<name>` symbol.
  static Result<std::unique_ptr<CPUStepLibrary>> open(const std::string &descriptionPath);
  ~CPUStepLibrary();
  CPUStepLibrary(const CPUStepLibrary &) = delete;
  CPUStepLibrary &operator=(const CPUStepLibrary &) = delete;

  const StepLibraryDescription &description() const { return description_; }
  /// The function called `name`, or null.
  const FunctionSignature *signature(const std::string &name) const;
  /// Runs `name` (Values.h invokePacked); an unknown name is an error listing the library's functions.
  Result<std::vector<interp::Tensor>> run(const std::string &name, const std::vector<CPUValue> &args,
                                          std::vector<NamedTensor> *probes = nullptr) const;

private:
  CPUStepLibrary() = default;
  StepLibraryDescription description_;
  void *handle_ = nullptr;
  std::map<std::string, PackedFunction> entries_;
};

/// One sequence's steps through one function whose signature has state bindings (FunctionSignature::state): the
/// state arguments of each step are the bound results of the previous one. `runner` runs the function (a
/// CPUStepLibrary's or a JIT CPUModule's).
class CPUSequence {
public:
  using Runner = std::function<Result<std::vector<interp::Tensor>>(const std::vector<CPUValue> &,
                                                                   std::vector<NamedTensor> *)>;
  /// `initialArgs` is a full argument list; its state arguments are the first step's state (e.g. a zero ring), the
  /// others are kept for every step unless a step replaces them. Errors: a count that does not match `signature`,
  /// a state binding outside the argument or result lists.
  static Result<CPUSequence> create(FunctionSignature signature, Runner runner, std::vector<CPUValue> initialArgs);
  /// Runs one step with `stepArgs` replacing arguments by index (e.g. {{0, x}, {1, start_pos}}; a state argument
  /// may not be replaced); on success the state advances. Errors leave the state as it was.
  Result<std::vector<interp::Tensor>> step(const std::vector<std::pair<size_t, CPUValue>> &stepArgs,
                                           std::vector<NamedTensor> *probes = nullptr);
  /// The current value of state argument `arg` (after the last successful step), or null if `arg` is not state.
  const CPUValue *state(size_t arg) const;

private:
  FunctionSignature signature_;
  Runner runner_;
  std::vector<CPUValue> args_;
};

} // namespace dsa::cpu

#endif
