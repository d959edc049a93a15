//===- Values.h - calling compiled dsa CPU functions on Tensors (MLIR-free) ----===//
//
// The calling convention of functions lowered by --dsa-cpu-pipeline, shared by the JIT (lib/Backend/CPU) and the
// AOT step libraries (StepLibrary.h). A function's arguments and results are
//   - ranked tensors of bf16 / f32 / i1 / i32 / i64 / index: memref descriptors (allocated ptr, aligned ptr, offset,
//     sizes[rank], strides[rank]) over row-major data; bf16 as 16-bit patterns, i1 as one byte, index as int64;
//   - scalars i64 / index / i32 / i1 / f32.
// A function is called through its packed entry `void _mlir_<name>(void **args)`: args[i] points to the i-th
// LLVM-level argument (each descriptor field is one), and the last pointer receives the result struct (fields in
// order, natural alignment). Result buffers are malloc'ed by the compiled code and owned by the caller.
// Arguments are read-only for the compiled code (marked bufferization.writable = false) except the ones listed in
// FunctionSignature::writableArgs (the compressed-KV and index-key caches of a compressed dsa.attention layer): those
// are updated IN PLACE, and the results that are such an argument after the update (FunctionSignature::inPlace) are
// not returned by the packed entry (its result struct holds the other results, in order). invokePacked passes a
// caller's buffer to a writable argument only when it was given as CPUValue::inPlace; otherwise it passes a fresh
// copy, so a Tensor or a shared CPUBuffer is never modified. A failed run-time check of the compiled code calls
// dsa_cpu_fail(code) (dsa/Backend/CPU/RuntimeErrors.h); invokePacked() turns the first one into an error.
//
// In-place caches and failures: a cache update (dsa.cache_write) writes only rows start_pos // ratio .. of the
// cache, rows past the sequence's visible compressed state (positions < start_pos). A call that fails part-way may
// have written some of them; the visible rows, and every other argument, are unchanged, and the retried (or next)
// step writes those rows again before anything reads them.
//
// Tensor <-> memory: a Tensor of ElementType BF16/F32/I1/I32/I64/Index matches a tensor of bf16/f32/i1/i32/i64/
// index of the same rank whose static dimensions it has; a scalar is a rank-0 Tensor.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_CPU_VALUES_H
#define DSA_RUNTIME_CPU_VALUES_H

#include "dsa/Interpreter/Tensor.h"
#include "dsa/Support/Result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dsa::cpu {

/// One argument or result of a compiled function.
struct ValueKind {
  bool isTensor = false;
  interp::ElementType elem = interp::ElementType::F32;
  std::vector<int64_t> shape; ///< tensors: the static sizes, -1 for a dynamic one (rank <= 16)
  std::string typeString;     ///< the MLIR spelling, for messages (e.g. "tensor<?x64xbf16>")
};

/// How a state argument starts a sequence (attention-semantics.md sections 4-5): zeros (the ring, the compressor's
/// kv_state, the caches) or -inf (the compressor's score_state).
enum class StateInit { Zeros, NegInf };

/// A result of one step that is an argument of the next (the window ring: dsa.attention's new_ring -> ring). As a
/// shared-slot binding (StepRoles::shared): the slot as it stands before the layer -> the slot after it.
struct StateBinding {
  int64_t arg = 0;
  int64_t result = 0;
  StateInit init = StateInit::Zeros; ///< the state's value before the first step (unused for shared slots)
};

/// Which arguments and results of a step function are what (a function around one dsa.attention), so that
/// CPUSequence::run can check and split steps. Absent (x < 0) for other functions.
struct StepRoles {
  int64_t x = -1;        ///< argument: the step's token rows, [s, ...] (s = dimension 0)
  int64_t startPos = -1; ///< argument: the step's first position, i64 scalar
  int64_t output = -1;   ///< result: one row per token, [s, ...]
  /// The sequence capacity in positions (dsa.attention's compress max_seq_len: a step must have
  /// start_pos + s <= maxSeqLen); -1: none (window-only layers: positions up to INT64_MAX).
  int64_t maxSeqLen = -1;
  /// The shared runtime slots (section 8) of a compressed layer: argument = a slot as it stands before this layer,
  /// result = the slot after it (what it published, or the argument passed through). Threaded between LAYERS of a
  /// step by the caller, not between steps.
  std::vector<StateBinding> shared;
  bool present() const { return x >= 0; }
};

/// The signature of a compiled function.
struct FunctionSignature {
  std::string name;
  std::vector<ValueKind> args;
  /// The function's results, then one per probe kept as a result (CPUCompileOptions::probesAsResults).
  std::vector<ValueKind> results;
  size_t numResults = 0;               ///< the function's own results (the first ones of `results`)
  std::vector<std::string> probeNames; ///< the kept probes' names, in result order
  std::vector<StateBinding> state;     ///< state threaded from step to step (may be empty)
  StepRoles step;                      ///< x / start_pos / output / capacity / shared slots, if known
  /// Arguments the compiled code updates in place (ascending; tensors): a compressed layer's compressed-KV and
  /// index-key cache state operands. Empty: every argument is read-only.
  std::vector<int64_t> writableArgs;
  /// Results that are an argument's buffer after the call ({arg, result}: result #result IS argument #arg): the
  /// updated caches (writable arguments), a shared slot passed through unchanged, and results repeating them (a
  /// published slot that is the updated cache). The packed entry does not return them.
  std::vector<StateBinding> inPlace;
};

/// A tensor in the compiled code's memory format (row-major, contiguous). Made from a Tensor (fromTensor, shared
/// by any number of calls, also concurrent ones, of any module or library: never modified), or a result of a call
/// (invokePackedValues: the compiled code's malloc'ed buffer adopted as is), or a copy. A buffer handed to calls as
/// CPUValue::inPlace may be updated by them (writable arguments, Values.h file comment); nothing else writes one.
class CPUBuffer {
public:
  /// Converts `t` (any element type of the calling convention, any rank). bf16 values are rounded to bf16 (a BF16
  /// Tensor's values are bf16-exact already).
  static std::shared_ptr<const CPUBuffer> fromTensor(const interp::Tensor &t);
  /// fromTensor as a buffer its owner may hand to calls as CPUValue::inPlace.
  static std::shared_ptr<CPUBuffer> mutableFromTensor(const interp::Tensor &t);
  /// A copy of `b` (same type, shape and bytes) its owner may hand to calls as CPUValue::inPlace.
  static std::shared_ptr<CPUBuffer> copyOf(const CPUBuffer &b);
  /// Adopts memory: `data` holds the row-major elements, `owner` keeps it alive (frees it when the last buffer
  /// sharing it goes; results of one call that share an allocation share the owner).
  static std::shared_ptr<CPUBuffer> adopt(interp::ElementType type, std::vector<int64_t> shape,
                                          std::shared_ptr<void> owner, void *data);

  interp::ElementType elementType() const { return type_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t numElements() const;
  /// The element data (at least 8-byte aligned for buffers made here; as the compiled code aligned it otherwise).
  const void *data() const { return data_; }
  void *mutableData() { return data_; }
  /// The values as a Tensor (bf16 widened to f32, i1/i32 to int64).
  interp::Tensor toTensor() const;

private:
  CPUBuffer() = default;
  interp::ElementType type_ = interp::ElementType::F32;
  std::vector<int64_t> shape_;
  std::shared_ptr<void> owner_;
  void *data_ = nullptr;
};

/// One argument or result of a call: a Tensor (converted for this call), a prepared CPUBuffer (read-only), or a
/// buffer its owner lets calls update in place (inPlace: a sequence's resident caches). Scalars are rank-0 Tensors.
class CPUValue {
public:
  CPUValue(interp::Tensor tensor) : tensor_(std::move(tensor)) {}
  CPUValue(std::shared_ptr<const CPUBuffer> buffer) : isBuffer_(true), buffer_(std::move(buffer)) {}
  /// A buffer that calls may update in place when it is passed for a writable argument
  /// (FunctionSignature::writableArgs); read-only for every other argument. The caller must not share it with
  /// anyone expecting it constant; passing it for two writable arguments of one call is an error.
  static CPUValue inPlace(std::shared_ptr<CPUBuffer> buffer) {
    CPUValue v{std::shared_ptr<const CPUBuffer>(buffer)};
    v.mutable_ = std::move(buffer);
    return v;
  }
  /// The Tensor, or null for a buffer argument.
  const interp::Tensor *tensor() const { return isBuffer_ ? nullptr : &tensor_; }
  /// The buffer (null for a Tensor argument, or a null buffer, which a call reports).
  const CPUBuffer *buffer() const { return buffer_.get(); }
  /// The buffer as shared, or null for a Tensor.
  const std::shared_ptr<const CPUBuffer> &sharedBuffer() const { return buffer_; }
  /// Whether calls may update this buffer in place, and the buffer (null if not).
  bool isInPlace() const { return mutable_ != nullptr; }
  const std::shared_ptr<CPUBuffer> &inPlaceBuffer() const { return mutable_; }
  /// The value as a Tensor (a copy; a null buffer gives an empty f32 tensor).
  interp::Tensor toTensor() const;

private:
  bool isBuffer_ = false;
  interp::Tensor tensor_;
  std::shared_ptr<const CPUBuffer> buffer_;
  std::shared_ptr<CPUBuffer> mutable_;
};

/// A probe kept as a result: its name and value.
struct NamedTensor {
  std::string name;
  interp::Tensor value;
};

/// The packed entry of a compiled function.
using PackedFunction = void (*)(void **);

/// Checks `args` against `sig` (count, element type, rank, static sizes; errors name the argument, e.g.
/// "argument #1 has shape [2, 5], expected tensor<2x4xbf16> (dimension 1)"), calls `fn`, and returns the function's
/// own results as Tensors; the probe results are appended to `probes` (may be null). A failed run-time check of the
/// compiled code is an error with the check's message. Thread-safe (the check record is per thread).
Result<std::vector<interp::Tensor>> invokePacked(const FunctionSignature &sig, PackedFunction fn,
                                                 const std::vector<CPUValue> &args,
                                                 std::vector<NamedTensor> *probes);

/// invokePacked without the conversion of the results to Tensors: tensor results are the compiled code's buffers
/// adopted as CPUValue::inPlace buffers (the caller owns them; results sharing one allocation share one owner,
/// freed once), an in-place result (FunctionSignature::inPlace) is its argument's value (the caller's inPlace
/// buffer, the fresh copy made for a writable argument given otherwise, or the argument as given for a read-only
/// one: no copy), scalars rank-0 Tensors. Probes are Tensors as with invokePacked. Errors as invokePacked, plus a
/// writableArgs / inPlace entry outside the signature and one inPlace buffer given for two writable arguments.
Result<std::vector<CPUValue>> invokePackedValues(const FunctionSignature &sig, PackedFunction fn,
                                                 const std::vector<CPUValue> &args,
                                                 std::vector<NamedTensor> *probes);

/// The compiled code's hook (RuntimeErrors.h): records the first code of the current call on this thread. The JIT
/// binds `dsa_cpu_fail` to it; an AOT step library calls it through its `dsa_cpu_fail_hook` pointer.
extern "C" void dsaCpuRecordFailure(int32_t code);

/// "bf16", "f32", ... (interp::elementTypeName) and back; nullopt-like failure as an Error naming `text`.
Result<interp::ElementType> elementTypeFromName(const std::string &text);

} // namespace dsa::cpu

#endif
