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
#ifndef DSA_RUNTIME_CPU_STEPLIBRARY_H
#define DSA_RUNTIME_CPU_STEPLIBRARY_H

#include "dsa/Runtime/CPU/Values.h"

#include <functional>
#include <map>

namespace dsa::cpu {

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
  Result<std::vector<interp::Tensor>> run(const std::string &name, const std::vector<CPUValue> &args,
                                          std::vector<NamedTensor> *probes = nullptr) const;
  /// run() without converting the results to Tensors (Values.h invokePackedValues): the runner of a sequence that
  /// keeps its state resident (CPUSequence::ValueRunner).
  Result<std::vector<CPUValue>> runValues(const std::string &name, const std::vector<CPUValue> &args,
                                          std::vector<NamedTensor> *probes = nullptr) const;

private:
  CPUStepLibrary() = default;
  StepLibraryDescription description_;
  void *handle_ = nullptr;
  std::map<std::string, PackedFunction> entries_;
};

/// One call of a step function within a sequence step: rows [firstRow, firstRow + rows) of x at `startPos`.
struct SubStep {
  int64_t firstRow = 0, rows = 0, startPos = 0;
};

/// The part of CPUSequence::run that does not depend on where tensors live (shared with sequences of other
/// backends, e.g. device-resident tensors): checks a step of token rows of element type `xType` and shape `xShape`
/// at `startPos`, for a sequence whose next position is `position`, against `signature`'s step roles, with
/// `sharedGiven` shared slots (-1: none given), and returns the calls to make: one {0, s, start_pos}, or s 1-token
/// calls for a multi-token step at start_pos > 0. Errors: those listed at CPUSequence::run (naming x, start_pos,
/// max_seq_len, shared), prefixed "sequence @<name>: ".
Result<std::vector<SubStep>> planStep(const FunctionSignature &signature, int64_t position,
                                      interp::ElementType xType, const std::vector<int64_t> &xShape,
                                      int64_t startPos, int64_t sharedGiven);

/// One sequence's steps through one function whose signature has state bindings (FunctionSignature::state): the
/// state arguments of each step are the bound results of the previous one. `runner` runs the function (a
/// CPUStepLibrary's or a JIT CPUModule's).
///
/// Two ways to drive it:
///   - run(x, start_pos, shared): for a function with step roles (FunctionSignature::step, a dsa.attention layer).
///     The sequence owns its position: prefill at 0 (any length), decode, and a multi-token step at start_pos > 0,
///     which is DEFINED as the same tokens fed one decode step at a time (attention-semantics.md section 13; the
///     compiled code rejects it): run() splits it into 1-token steps, threads the state through them and
///     concatenates their outputs. A multi-layer model keeps one sequence per layer and passes the shared slots
///     (a SlotSet, from initialSlots()) from layer to layer: each run() reads them and replaces them with what
///     the layer published.
///   - step(stepArgs): the low-level call, any function with state bindings; no position or capacity checks.
/// Errors of either leave the state (and the position, and the shared slots) as they were; with in-place caches
/// (a ValueRunner over a function with FunctionSignature::writableArgs) "the state" is the visible state: a failed
/// call may have written cache rows past it (Values.h), which the next successful step writes again.
///
/// Resident state: with a ValueRunner (CPUModule::runValues, CPUStepLibrary::runValues) the state and the slots are
/// kept as the compiled code's buffers from step to step (no Tensor conversion), and the caches of a compressed
/// layer are updated in place (CPUValue::inPlace buffers the sequence owns; the published compress_kv / index_k
/// slots are the same buffers, so a SlotSet shows a later step's new rows too). runValues() returns the results as
/// such values; run() converts them to Tensors (the whole state: use runValues() for decode). The sequence never
/// writes a buffer it did not get from its runner: initial state given as an inPlace buffer is copied on first use.
class CPUSequence {
public:
  using Runner = std::function<Result<std::vector<interp::Tensor>>(const std::vector<CPUValue> &,
                                                                   std::vector<NamedTensor> *)>;
  /// A runner returning the compiled code's buffers (no conversion to Tensors).
  using ValueRunner = std::function<Result<std::vector<CPUValue>>(const std::vector<CPUValue> &,
                                                                  std::vector<NamedTensor> *)>;
  /// The shared slots of a model's step, in a layer's `shared` argument order (compress_kv, index_k, topk_idxs,
  /// candidates for dsa.attention).
  using SlotSet = std::vector<CPUValue>;

  /// `initialArgs` is a full argument list; its state arguments are the first step's state (e.g. a zero ring), the
  /// others are kept for every step unless a step replaces them. Errors: a count that does not match `signature`,
  /// a state binding outside the argument or result lists.
  static Result<CPUSequence> create(FunctionSignature signature, Runner runner, std::vector<CPUValue> initialArgs);
  /// `position`: where the initial state stands (0: a new sequence; a sequence resumed from a saved state at a
  /// later position, whose first run() must start there; reset() returns to it).
  static Result<CPUSequence> create(FunctionSignature signature, ValueRunner runner,
                                    std::vector<CPUValue> initialArgs, int64_t position = 0);
  /// For a function with step roles: the state arguments start from their StateBinding::init (their shapes must be
  /// static), x / start_pos / shared slots are supplied by run(), and `fixed` gives every other argument (the
  /// weights, by argument index; CPUBuffers to convert them once). Errors name the missing, extra or
  /// role-taken argument, or a state argument with a dynamic shape.
  static Result<CPUSequence> start(FunctionSignature signature, Runner runner, std::map<size_t, CPUValue> fixed);
  static Result<CPUSequence> start(FunctionSignature signature, ValueRunner runner, std::map<size_t, CPUValue> fixed);

  /// The empty shared slots a model starts from (each slot argument of `signature` with its dynamic dimensions 0).
  /// Errors: no step roles or no shared slots.
  static Result<SlotSet> initialSlots(const FunctionSignature &signature);

  /// Runs the tokens `x` ([s, ...], s >= 1) at positions start_pos .. start_pos + s - 1 and returns the function's
  /// results: the output's rows of every token (concatenated along dimension 0 for a split step), the state after
  /// the last token, other results from the last token. `shared`: required iff the layer has shared slots; read,
  /// then replaced by the slots after this layer. A split step's probes are appended token by token.
  /// Errors, each naming the field, state, position and slots unchanged:
  ///   "x: ..."          wrong element type / rank / static size, no rows;
  ///   "start_pos: ..."  not the sequence's next position (out of order or repeated), negative, int64 overflow;
  ///   "max_seq_len: ..." start_pos + s beyond the capacity;
  ///   "shared: ..."     missing or wrong number of slots; a multi-token step at start_pos > 0 of a layer with
  ///                     shared slots (token-by-token decode of a stack reads, for token t, slots published by
  ///                     LATER layers at token t - 1 (the index_k quirk), so such a step must be split by the
  ///                     model driver, one token through every layer at a time);
  ///   "token k (position p): ..." the function's own error on a sub-step of a split step;
  ///   the function's error (a failed run-time check) otherwise.
  Result<std::vector<interp::Tensor>> run(const interp::Tensor &x, int64_t startPos, SlotSet *shared = nullptr,
                                          std::vector<NamedTensor> *probes = nullptr);
  /// run() without converting the results to Tensors (resident state, see the class comment): the output, the
  /// state (the sequence's own buffers: read them, do not hand them to other calls as inPlace), the rest.
  Result<std::vector<CPUValue>> runValues(const interp::Tensor &x, int64_t startPos, SlotSet *shared = nullptr,
                                          std::vector<NamedTensor> *probes = nullptr);
  /// The next position run() accepts (tokens consumed so far).
  int64_t position() const { return position_; }
  /// Back to the initial state at its position (0 unless create() was given one).
  void reset();

  /// Runs one step with `stepArgs` replacing arguments by index (e.g. {{0, x}, {1, start_pos}}; a state argument
  /// may not be replaced); on success the state advances. Errors leave the state as it was.
  Result<std::vector<interp::Tensor>> step(const std::vector<std::pair<size_t, CPUValue>> &stepArgs,
                                           std::vector<NamedTensor> *probes = nullptr);
  /// The current value of state argument `arg` (after the last successful step), or null if `arg` is not state.
  const CPUValue *state(size_t arg) const;
  const FunctionSignature &signature() const { return signature_; }

private:
  FunctionSignature signature_;
  ValueRunner runner_;
  std::vector<CPUValue> args_, initialArgs_;
  int64_t position_ = 0, initialPosition_ = 0;
};

} // namespace dsa::cpu

#endif
