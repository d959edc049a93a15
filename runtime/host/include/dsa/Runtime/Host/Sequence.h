//===- Sequence.h - one sequence's steps through a compiled step function, any backend (MLIR-free) ---===//
//
// A Sequence keeps a sequence's state (the window ring of a layer, a compressed layer's compressor state and caches)
// from step to step and checks and splits the steps (planStep), calling the compiled function through a Runner:
// a CPU step library's or JIT module's (dsa/Runtime/CPU), or a GPU step library's on host tensors
// (dsa/Runtime/Cuda/GpuStepLibrary.h makeSequenceRunner). Nothing here needs MLIR or a particular backend.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_HOST_SEQUENCE_H
#define DSA_RUNTIME_HOST_SEQUENCE_H

#include "dsa/Runtime/Host/Values.h"

#include <functional>
#include <map>

namespace dsa::runtime {

/// One call of a step function within a sequence step: rows [firstRow, firstRow + rows) of x at `startPos`.
struct SubStep {
  int64_t firstRow = 0, rows = 0, startPos = 0;
};

/// The part of Sequence::run that does not depend on where tensors live (shared with sequences of other
/// backends, e.g. device-resident tensors): checks a step of token rows of element type `xType` and shape `xShape`
/// at `startPos`, for a sequence whose next position is `position`, against `signature`'s step roles, with
/// `sharedGiven` shared slots (-1: none given), and returns the calls to make: one {0, s, start_pos}, or s 1-token
/// calls for a multi-token step at start_pos > 0 of a function that does not run chunks (StepRoles::chunked). Errors: those listed at Sequence::run (naming x, start_pos,
/// max_seq_len, shared), prefixed "sequence @<name>: ".
/// `stackChunk`: the step is a sub-chunk of runtime::planStackChunk (StackChunk.h) that the model driver runs
/// layer-major through the whole stack: a multi-token step at start_pos > 0 of a layer with shared slots is then one
/// call instead of the "shared:" refusal (the plan, which sees the stack, vouches for the bits; the compiled code
/// refuses a chunk it cannot run with its own run-time error: the GPU libraries).
Result<std::vector<SubStep>> planStep(const FunctionSignature &signature, int64_t position,
                                      dsa::ElementType xType, const std::vector<int64_t> &xShape,
                                      int64_t startPos, int64_t sharedGiven, bool stackChunk = false);

/// One sequence's steps through one function whose signature has state bindings (FunctionSignature::state): the
/// state arguments of each step are the bound results of the previous one. `runner` runs the function (a
/// CPUStepLibrary's or a JIT CPUModule's).
///
/// Two ways to drive it:
///   - run(x, start_pos, shared): for a function with step roles (FunctionSignature::step, a dsa.attention layer).
///     The sequence owns its position: prefill at 0 (any length), decode, and a multi-token step at start_pos > 0,
///     which is DEFINED as the same tokens fed one decode step at a time (attention-semantics.md section 13): one
///     call when the compiled code runs such a chunk (StepRoles::chunked: a window-only layer on the CPU), else
///     run() splits it into 1-token steps, threads the state through them and concatenates their outputs. A
///     multi-layer model keeps one sequence per layer and passes the shared slots
///     (a SlotSet, from initialSlots()) from layer to layer: each run() reads them and replaces them with what
///     the layer published.
///   - step(stepArgs): the low-level call, any function with state bindings; no position or capacity checks.
/// Errors of either leave the state (and the position, and the shared slots) as they were; with in-place caches
/// (a ValueRunner over a function with FunctionSignature::writableArgs) "the state" is the visible state: a failed
/// call may have written cache rows past it (Values.h), which the next successful step writes again.
///
/// Resident state: with a ValueRunner (CPUModule::runValues, CPUStepLibrary::runValues) the state and the slots are
/// kept as the compiled code's buffers from step to step (no Tensor conversion), and the caches of a compressed
/// layer are updated in place (HostValue::inPlace buffers the sequence owns; the published compress_kv / index_k
/// slots are the same buffers, so a SlotSet shows a later step's new rows too). runValues() returns the results as
/// such values; run() converts them to Tensors (the whole state: use runValues() for decode). The sequence never
/// writes a buffer it did not get from its runner: initial state given as an inPlace buffer is copied on first use.
class Sequence {
public:
  using Runner = std::function<Result<std::vector<dsa::Tensor>>(const std::vector<HostValue> &,
                                                                   std::vector<NamedTensor> *)>;
  /// A runner returning the compiled code's buffers (no conversion to Tensors).
  using ValueRunner = std::function<Result<std::vector<HostValue>>(const std::vector<HostValue> &,
                                                                  std::vector<NamedTensor> *)>;
  /// The shared slots of a model's step, in a layer's `shared` argument order (compress_kv, index_k, topk_idxs,
  /// candidates for dsa.attention).
  using SlotSet = std::vector<HostValue>;

  /// `initialArgs` is a full argument list; its state arguments are the first step's state (e.g. a zero ring), the
  /// others are kept for every step unless a step replaces them. Errors: a count that does not match `signature`,
  /// a state binding outside the argument or result lists.
  static Result<Sequence> create(FunctionSignature signature, Runner runner, std::vector<HostValue> initialArgs);
  /// `position`: where the initial state stands (0: a new sequence; a sequence resumed from a saved state at a
  /// later position, whose first run() must start there; reset() returns to it).
  static Result<Sequence> create(FunctionSignature signature, ValueRunner runner,
                                    std::vector<HostValue> initialArgs, int64_t position = 0);
  /// For a function with step roles: the state arguments start from their StateBinding::init (their shapes must be
  /// static), x / start_pos / shared slots are supplied by run(), and `fixed` gives every other argument (the
  /// weights, by argument index; CPUBuffers to convert them once). Errors name the missing, extra or
  /// role-taken argument, or a state argument with a dynamic shape.
  static Result<Sequence> start(FunctionSignature signature, Runner runner, std::map<size_t, HostValue> fixed);
  static Result<Sequence> start(FunctionSignature signature, ValueRunner runner, std::map<size_t, HostValue> fixed);

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
  ///                     model driver: one token through every layer at a time, or the pieces of
  ///                     runtime::planStackChunk through runStackChunkValues);
  ///   "token k (position p): ..." the function's own error on a sub-step of a split step;
  ///   the function's error (a failed run-time check) otherwise.
  Result<std::vector<dsa::Tensor>> run(const dsa::Tensor &x, int64_t startPos, SlotSet *shared = nullptr,
                                          std::vector<NamedTensor> *probes = nullptr);
  /// run() without converting the results to Tensors (resident state, see the class comment): the output, the
  /// state (the sequence's own buffers: read them, do not hand them to other calls as inPlace), the rest.
  Result<std::vector<HostValue>> runValues(const dsa::Tensor &x, int64_t startPos, SlotSet *shared = nullptr,
                                          std::vector<NamedTensor> *probes = nullptr);
  /// runValues() for one sub-chunk of runtime::planStackChunk (StackChunk.h) of a layer with shared slots: a
  /// multi-token step at start_pos > 0 is ONE call, not refused (planStep's `stackChunk`). The model driver runs the
  /// sub-chunk through every layer in stack order, giving each layer the index_k slot the plan names
  /// (StackSubChunk::indexKFrom: the slot as it entered the sub-chunk or what an earlier layer's call returned) and
  /// leaving the one it names after the last layer (indexKAfter); then every layer's results equal its tokens fed
  /// one decode step at a time through the stack (CPURuntimeAOTTest.ChunksThroughTheGoldensStack...). Errors: those
  /// of run(), state, position and slots unchanged.
  Result<std::vector<HostValue>> runStackChunkValues(const dsa::Tensor &x, int64_t startPos, SlotSet &shared,
                                                     std::vector<NamedTensor> *probes = nullptr);
  /// The next position run() accepts (tokens consumed so far).
  int64_t position() const { return position_; }
  /// Back to the initial state at its position (0 unless create() was given one).
  void reset();

  /// Runs one step with `stepArgs` replacing arguments by index (e.g. {{0, x}, {1, start_pos}}; a state argument
  /// may not be replaced); on success the state advances. Errors leave the state as it was.
  Result<std::vector<dsa::Tensor>> step(const std::vector<std::pair<size_t, HostValue>> &stepArgs,
                                           std::vector<NamedTensor> *probes = nullptr);
  /// The current value of state argument `arg` (after the last successful step), or null if `arg` is not state.
  const HostValue *state(size_t arg) const;
  const FunctionSignature &signature() const { return signature_; }

private:
  Result<std::vector<HostValue>> runPlanned(const dsa::Tensor &x, int64_t startPos, SlotSet *shared,
                                            std::vector<NamedTensor> *probes, bool stackChunk);
  FunctionSignature signature_;
  ValueRunner runner_;
  std::vector<HostValue> args_, initialArgs_;
  int64_t position_ = 0, initialPosition_ = 0;
};

} // namespace dsa::runtime

#endif
