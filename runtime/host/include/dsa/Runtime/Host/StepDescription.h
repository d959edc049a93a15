//===- StepDescription.h - the step description of an AOT step library (MLIR-free) ---===//
//
// An AOT step library is what dsa::cpu::emitCPUStepLibrary (lib/Backend/CPU, MLIR side) writes for a module:
//   <base>.so    the functions lowered by --dsa-cpu-pipeline; it exports only their packed entries `_mlir_<name>`
//                (Values.h), `dsa_cpu_fail_hook`, a function pointer the loader points at dsaCpuRecordFailure, and
//                `dsa_step_library_signature`, its own signature (below; dsa/ABI/StepLibrary.h);
//   <base>.json  the step description: format/version, the library file (relative to the JSON) and its SHA-256,
//                the ABI version, target CPU and features, parallel (OpenMP), and per function its signature
//                (args, results, probe names, state bindings, step roles, writable arguments, in-place results).
// This file reads and writes the description and the signature compiled into the library (the CPU runtime loads the
// library: dsa/Runtime/CPU/StepLibrary.h; the CUDA runtime's GPU step description extends it:
// dsa/Runtime/Cuda/GpuStepLibrary.h). Nothing here needs MLIR.
//
// Description JSON (version 5; older versions are refused with an error saying to emit the library again: they
// record no digest and their libraries no signature):
//   {"format": "dsa-cpu-step-library", "version": 5, "library": "l0.so",
//    "library_sha256": "9f86d0...", "abi_version": 1, "target_cpu": "x86-64-v3",
//    "target_features": ["avx", "avx2", "bmi", ..., "xsave"], "parallel": false,
//    "functions": [{"name": "attention_L0", "symbol": "_mlir_attention_L0",
//                   "args": [{"type": "tensor<?x64xbf16>", "element": "bf16", "shape": [-1, 64]},
//                            {"type": "i64", "element": "i64", "shape": null}, ...],
//                   "results": [...], "num_results": 2, "probes": ["L0.sa_q", ...],
//                   "state": [{"arg": 2, "result": 1, "init": "zeros"}],
//                   "step": {"x": 0, "start_pos": 1, "output": 0, "max_seq_len": null, "shared": [],
//                            "chunked": true},
//                   "writable": [], "in_place": [],
//                   "attention": [{"layer_id": 0, "dim": 64, "n_heads": 4, "head_dim": 32, "rope_head_dim": 8,
//                                  "q_lora_rank": 16, "o_groups": 2, "o_lora_rank": 16, "window_size": 8,
//                                  "compress_ratio": 0, "norm_eps": 9.999999682655225e-21,
//                                  "rope": {"rope_dim": 8, "theta": 10000.0, "yarn": null}, "compress": null}]}]}
// "shape": null marks a scalar; -1 a dynamic dimension; "type" is the spelling of element and shape (kindSpelling;
// a "type" that says something else is an error). "results" lists the function's own results, then one per probe.
// "state": result -> argument of the next step, "init" "zeros" or "-inf" (the first step's value). "step"
// (optional, StepRoles): which argument is x (token rows) and start_pos, which result is the output, the capacity
// max_seq_len (null: none), the shared-slot bindings [{"arg": A, "result": R}] of a compressed layer, and
// "chunked" (optional, default false: StepRoles::chunked, whether a multi-token step at start_pos > 0 is one call;
// not part of the signature compiled into the library: a description claiming it for a GPU library gets dsa-to-gpu's
// run-time check error, code 6).
// "writable" (FunctionSignature::writableArgs): the arguments the code updates in place (a compressed layer's
// compressed-KV and index-key caches); "in_place" [{"arg": A, "result": R}] (FunctionSignature::inPlace): result R is
// argument A's buffer after the call and the entry does not return it (Values.h). "target_features": the LLVM target
// features the code was compiled with (the CPU target_cpu names, with every implied feature; the host's features for
// a library built for the host): CPUStepLibrary::open refuses the library, before loading it, when the running CPU
// lacks any (HostFeatures.h: "step library l0.so was built for sapphirerapids; this host lacks amx-bf16, ...").
// "library_sha256": the SHA-256 of the library file (FileDigest.h), checked before the file is loaded.
// "abi_version": dsa/ABI/StepLibrary.h's kStepLibraryAbiVersion the library was compiled for.
// "attention" (optional; FunctionSignature::attention, Values.h AttentionConfig): the #dsa.attn_config of every
// dsa.attention the function was compiled from, in IR order, named as the attribute's parameters: the sizes, the
// f32 norm_eps (its exact value as a double), "rope" {"rope_dim", "theta", "yarn": null or {"original_seq_len",
// "factor", "beta_fast", "beta_slow"}} and "compress": null or {"is_kv_source", "is_index_source",
// "is_candidate_source", "uses_candidates", "index_n_heads", "index_head_dim", "index_topk",
// "candidate_topk_blocks", "candidate_block_size", "max_seq_len", "index_k_source", "tie_order"} (the enums by
// mnemonic). Canonical: every key present, reals as JSON numbers that read back to the same double. Written by the
// emitters (dsa::cpu::addAttentionConfigs) when the module still holds its dsa.attention ops; absent otherwise and
// in descriptions written before it was recorded (still version 5: a reader that needs it, tools/dsa-golden, says
// to emit the library again).
// Every key is required except "probes", "state", "step" and "attention"; an unknown key anywhere is an error naming its path
// ("functions[0].args[2].sahpe: unknown key (expected one of: type, element, shape)"), and so is a key an object
// holds twice ("functions[0].num_results: duplicate key ...", dsa/Support/StrictJson.h). Other errors name the field
// too (e.g. "functions[0].args[2].element: unknown element type 'f16' ...", "functions[0].step.x: ...").
//
// The library's own signature (dsa/ABI/StepLibrary.h: the exported NUL-terminated text dsa_step_library_signature,
// written by compiledSignatureText when the library is compiled): the ABI version, the target (cpu, features,
// parallel, and a backend's extra fields such as a GPU library's chip) and per function name, args, results,
// num_results, writable, in_place, attention (when recorded) as above and "chunked" (a function with step roles:
// StepRoles::chunked, whether the code runs a multi-token step at start_pos > 0 as one call; absent = false, so a
// description claiming chunked for a library that splits is refused naming "step.chunked"), so that the library itself says which
// model configuration its constants are. The loaders read it after loading the library and compare it with
// the description (checkCompiledSignature) before resolving any entry: the description may be edited or belong to
// another library, the compiled-in text cannot disagree with the code it was compiled with.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_HOST_STEPDESCRIPTION_H
#define DSA_RUNTIME_HOST_STEPDESCRIPTION_H

#include "dsa/ABI/StepLibrary.h"
#include "dsa/Runtime/Host/Values.h"

#include <utility>

namespace dsa::runtime {

inline constexpr const char *kStepLibraryFormat = "dsa-cpu-step-library";
inline constexpr int kStepLibraryVersion = 5;

struct StepLibraryDescription {
  std::string library;   ///< the shared object, relative to the description's directory
  std::string librarySha256; ///< its SHA-256 (FileDigest.h: 64 lower-case hex digits)
  int64_t abiVersion = abi::kStepLibraryAbiVersion; ///< the calling convention it was compiled for
  std::string targetCpu; ///< the CPU the code was compiled for (LLVM's name, e.g. "skylake-avx512")
  /// The features the code may use (LLVM's names, sorted: "avx2", "fma", ...); the host must have all of them.
  std::vector<std::string> targetFeatures;
  bool parallel = false; ///< OpenMP loops: the library needs libomp (linked into it)
  std::vector<FunctionSignature> functions;
};

/// The description as JSON text (version kStepLibraryVersion).
std::string describeStepLibrary(const StepLibraryDescription &description);
/// Parses a description; errors name the field (file comment).
Result<StepLibraryDescription> parseStepLibrary(const std::string &jsonText);

/// The MLIR spelling of a kind: "tensor<?x64xbf16>", "tensor<f32>" (rank 0), "i64" (a scalar).
std::string kindSpelling(const ValueKind &kind);

/// A backend's target fields besides cpu / features / parallel (a GPU step library: {"chip", "sm_90"},
/// {"binary_format", "bin"}), recorded in the compiled signature and compared as strings.
using TargetFields = std::vector<std::pair<std::string, std::string>>;

/// The signature an emitter compiles into the library (file comment): canonical JSON of `description`'s
/// abi_version, target and per function name / args / results / num_results / writable / in_place.
std::string compiledSignatureText(const StepLibraryDescription &description, const TargetFields &extraTarget = {});

/// Compares `description` (and a backend's `extraTarget`) with the library's compiled signature `compiledText`
/// (null: the library does not export one). Errors name the function, the argument or result index and the field:
///   "attention_L0: argument 3: description says tensor<8x32xbf16>, library was compiled for tensor<8x16xbf16>
///    (dimension 1)", "attention_L0: writable arguments: description says [], library was compiled for [9]",
///   "target_features: description says [...], library was compiled for [...]", "attention_L0: the library has no
///   such function (...)", "abi_version: the library was compiled for step-library ABI version 2, ...",
///   "attention_L2: attention[0].rope.yarn.factor: description says 4.0, library was compiled for 2.0" (the first
///   field, in sorted key order, where the dsa.attention configurations differ; a configuration one side records
///   and the other does not is "attention: description says 0 dsa.attention configurations, ...").
/// A function the library has and the description does not list is not an error (it is just not callable).
Status checkCompiledSignature(const StepLibraryDescription &description, const TargetFields &extraTarget,
                              const char *compiledText);

} // namespace dsa::runtime

#endif
