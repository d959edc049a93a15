//===- Values.h - calling compiled dsa CPU functions on Tensors (MLIR-free) ----===//
//
// The calling convention of functions lowered by --dsa-cpu-pipeline, shared by the JIT (lib/Backend/CPU) and the
// AOT step libraries (StepLibrary.h). A function's arguments and results are
//   - ranked tensors of bf16 / f32 / i1 / i32 / i64 / index: memref descriptors (allocated ptr, aligned ptr, offset,
//     sizes[rank], strides[rank]) over row-major data; bf16 as 16-bit patterns, i1 as one byte, index as int64;
//   - scalars i64 / index / i32 / i1 / f32.
// A function is called through its packed entry `void _mlir_<name>(void **args)`: args[i] points to the i-th
// LLVM-level argument (each descriptor field is one), and the last pointer receives the result struct (fields in
// order, natural alignment). Result buffers are malloc'ed by the compiled code and owned by the caller;
// argument buffers are never written (the pipeline marks them non-writable). A failed run-time check of the compiled
// code calls dsa_cpu_fail(code) (dsa/Backend/CPU/RuntimeErrors.h); invokePacked() turns the first one into an error.
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
};

/// A tensor in the compiled code's memory format, converted once from a Tensor and shared by any number of calls
/// (also concurrent ones, of any module or library): it is never modified after construction.
class CPUBuffer {
public:
  /// Converts `t` (any element type of the calling convention, any rank). bf16 values are rounded to bf16 (a BF16
  /// Tensor's values are bf16-exact already).
  static std::shared_ptr<const CPUBuffer> fromTensor(const interp::Tensor &t);

  interp::ElementType elementType() const { return type_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  /// The element data (8-byte aligned).
  const void *data() const { return storage_.data(); }

private:
  CPUBuffer() = default;
  interp::ElementType type_ = interp::ElementType::F32;
  std::vector<int64_t> shape_;
  std::vector<int64_t> storage_;
};

/// One argument of a call: a Tensor (converted for this call) or a prepared CPUBuffer. Scalars are rank-0 Tensors.
class CPUValue {
public:
  CPUValue(interp::Tensor tensor) : tensor_(std::move(tensor)) {}
  CPUValue(std::shared_ptr<const CPUBuffer> buffer) : isBuffer_(true), buffer_(std::move(buffer)) {}
  /// The Tensor, or null for a buffer argument.
  const interp::Tensor *tensor() const { return isBuffer_ ? nullptr : &tensor_; }
  /// The buffer (null for a Tensor argument, or a null buffer, which a call reports).
  const CPUBuffer *buffer() const { return buffer_.get(); }

private:
  bool isBuffer_ = false;
  interp::Tensor tensor_;
  std::shared_ptr<const CPUBuffer> buffer_;
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

/// The compiled code's hook (RuntimeErrors.h): records the first code of the current call on this thread. The JIT
/// binds `dsa_cpu_fail` to it; an AOT step library calls it through its `dsa_cpu_fail_hook` pointer.
extern "C" void dsaCpuRecordFailure(int32_t code);

/// "bf16", "f32", ... (interp::elementTypeName) and back; nullopt-like failure as an Error naming `text`.
Result<interp::ElementType> elementTypeFromName(const std::string &text);

} // namespace dsa::cpu

#endif
