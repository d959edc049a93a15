//===- StepDescription.h - the step description of an AOT step library (MLIR-free) ---===//
//
// An AOT step library is what dsa::cpu::emitCPUStepLibrary (lib/Backend/CPU, MLIR side) writes for a module:
//   <base>.so    the functions lowered by --dsa-cpu-pipeline, each with its packed entry `_mlir_<name>` (Values.h),
//                and `dsa_cpu_fail_hook`, a function pointer the loader points at dsaCpuRecordFailure;
//   <base>.json  the step description: format/version, the library file (relative to the JSON), target CPU,
//                parallel (OpenMP), and per function its signature (args, results, probe names, state bindings).
// This file reads and writes the description (the CPU runtime loads the library: dsa/Runtime/CPU/StepLibrary.h; the
// CUDA runtime's GPU step description extends it: dsa/Runtime/Cuda/GpuStepLibrary.h). Nothing here needs MLIR.
//
// Description JSON (version 4; version 3, without "target_features", version 2, also without "writable" and
// "in_place", and version 1, also without "step" and "init", are still read):
//   {"format": "dsa-cpu-step-library", "version": 4, "library": "l0.so", "target_cpu": "x86-64-v3",
//    "target_features": ["avx", "avx2", "bmi", ..., "xsave"], "parallel": false,
//    "functions": [{"name": "attention_L0", "symbol": "_mlir_attention_L0",
//                   "args": [{"type": "tensor<?x64xbf16>", "element": "bf16", "shape": [-1, 64]},
//                            {"type": "i64", "element": "i64", "shape": null}, ...],
//                   "results": [...], "num_results": 2, "probes": ["L0.sa_q", ...],
//                   "state": [{"arg": 2, "result": 1, "init": "zeros"}],
//                   "step": {"x": 0, "start_pos": 1, "output": 0, "max_seq_len": null, "shared": []},
//                   "writable": [], "in_place": []}]}
// "shape": null marks a scalar; -1 a dynamic dimension. "results" lists the function's own results, then one per
// probe. "state": result -> argument of the next step, "init" "zeros" or "-inf" (the first step's value).
// "step" (optional, StepRoles): which argument is x (token rows) and start_pos, which result is the output,
// the capacity max_seq_len (null: none) and the shared-slot bindings [{"arg": A, "result": R}] of a compressed
// layer. "writable" (version 3, FunctionSignature::writableArgs): the arguments the code updates in place (a
// compressed layer's compressed-KV and index-key caches); "in_place" [{"arg": A, "result": R}]
// (FunctionSignature::inPlace): result R is argument A's buffer after the call and the entry does not return it
// (Values.h). A version-2 reader refuses a version-3 description, whose entries return fewer results than listed.
// "target_features" (version 4): the LLVM target features the code was compiled with (the CPU target_cpu names,
// with every implied feature; the host's features for a library built for the host): CPUStepLibrary::open refuses
// the library, before loading it, when the running CPU lacks any (HostFeatures.h: "step library l0.so was built for
// sapphirerapids; this host lacks amx-bf16, amx-tile, ..."). Without it (versions 1-3) nothing is checked.
// Errors name the JSON field (e.g. "functions[0].args[2].element: unknown element type 'f16' ...",
// "functions[0].step.x: ...").
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_HOST_STEPDESCRIPTION_H
#define DSA_RUNTIME_HOST_STEPDESCRIPTION_H

#include "dsa/Runtime/Host/Values.h"

namespace dsa::runtime {

inline constexpr const char *kStepLibraryFormat = "dsa-cpu-step-library";
inline constexpr int kStepLibraryVersion = 4;

struct StepLibraryDescription {
  std::string library;   ///< the shared object, relative to the description's directory
  std::string targetCpu; ///< the CPU the code was compiled for (LLVM's name, e.g. "skylake-avx512")
  /// The features the code may use (LLVM's names, sorted: "avx2", "fma", ...); the host must have all of them.
  /// Empty in descriptions before version 4 (not checked).
  std::vector<std::string> targetFeatures;
  bool parallel = false; ///< OpenMP loops: the library needs libomp (linked into it)
  std::vector<FunctionSignature> functions;
};

/// The description as JSON text (version kStepLibraryVersion).
std::string describeStepLibrary(const StepLibraryDescription &description);
/// Parses a description; errors name the field.
Result<StepLibraryDescription> parseStepLibrary(const std::string &jsonText);

} // namespace dsa::runtime

#endif
