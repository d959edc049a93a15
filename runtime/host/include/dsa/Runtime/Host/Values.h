//===- Values.h - host values of compiled dsa functions: signatures, buffers (MLIR-free) -------------------===//
//
// What every backend's runtime shares about the functions a step library or JIT module holds: their signatures
// (FunctionSignature: argument and result kinds, state threaded from step to step, step roles, in-place caches)
// and the host-side values passed to and returned by them (HostBuffer: a tensor in the compiled code's memory
// format, MemoryFormat.h; HostValue: a Tensor, a read-only buffer or a buffer calls may update in place). The CPU
// runtime calls compiled code on them (dsa/Runtime/CPU/PackedCall.h); the CUDA runtime uploads them.
//
// Tensor <-> memory: a Tensor of ElementType BF16/F32/I1/I32/I64/Index matches a tensor of bf16/f32/i1/i32/i64/
// index of the same rank whose static dimensions it has; a scalar is a rank-0 Tensor.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_HOST_VALUES_H
#define DSA_RUNTIME_HOST_VALUES_H

#include "dsa/Core/Tensor.h"
#include "dsa/Support/Result.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dsa::runtime {

/// One argument or result of a compiled function.
struct ValueKind {
  bool isTensor = false;
  dsa::ElementType elem = dsa::ElementType::F32;
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
/// Sequence::run can check and split steps. Absent (x < 0) for other functions.
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
  /// Whether the compiled code runs a multi-token step at start_pos > 0 as ONE call (a chunk: bit for bit the
  /// tokens fed one decode step at a time, docs/architecture.md "Steps the reference does not have"): true for a
  /// window-only layer of a CPU step library or JIT module, and for a compressed one that reads only the slots it
  /// publishes itself (AOT.cpp readsOnlyItsOwnSlots). False: planStep splits such a step into 1-token calls, or
  /// refuses it ("shared: ...") for a layer with shared slots (the GPU libraries; compressed layers reading
  /// other layers' slots, which token-by-token decode of a stack interleaves with those layers).
  bool chunked = false;
  bool present() const { return x >= 0; }
};

/// The configuration of one dsa.attention op a step function was compiled from: its #dsa.attn_config attribute
/// (DSAAttrs.td; the fields are named as its parameters, in the same units), which the compiled code holds as
/// constants (loop bounds, RoPE tables, epsilons, top-k counts) and which the function's argument and result shapes
/// show only in part (nothing shows rope theta, the YaRN parameters, norm_eps, index_topk or the candidate sizes).
/// Recorded by the step-library emitters (dsa::cpu::addAttentionConfigs) in the description and in the library's
/// own signature (StepDescription.h), so that a caller can check that a library was compiled for the model it is
/// about to run (tools/dsa-golden: the golden's fixture) and the loader that the two agree.
struct AttentionConfig {
  int64_t layerId = 0; ///< layer_id: the layer whose probes the code names (L<layer_id>.sa_q, ...)
  int64_t dim = 0, nHeads = 0, headDim = 0, ropeHeadDim = 0, qLoraRank = 0, oGroups = 0, oLoraRank = 0;
  int64_t windowSize = 0;    ///< window_size (ring rows)
  int64_t compressRatio = 0; ///< compress_ratio (0: window only)
  double normEps = 0;        ///< norm_eps: the f32 attribute's value (exact as a double)
  int64_t ropeDim = 0;       ///< rope.rope_dim
  double ropeTheta = 0;      ///< rope.theta (f64)
  /// rope.yarn (present exactly when compress_ratio > 0): original_seq_len and the f64 factor, beta_fast, beta_slow.
  struct Yarn {
    int64_t originalSeqLen = 0;
    double factor = 0, betaFast = 0, betaSlow = 0;
  };
  std::optional<Yarn> yarn;
  /// compress (#dsa.compress; present exactly when compress_ratio > 0): the role, the indexer and candidate sizes,
  /// the capacity in positions, and the two enums by their mnemonic ("published_slot" / "own_cache", "torch_cpu").
  struct Compress {
    bool isKvSource = false, isIndexSource = false, isCandidateSource = false, usesCandidates = false;
    int64_t indexNHeads = 0, indexHeadDim = 0, indexTopk = 0, candidateTopkBlocks = 0, candidateBlockSize = 0;
    int64_t maxSeqLen = 0;
    std::string indexKSource, tieOrder;
  };
  std::optional<Compress> compress;
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
  /// The dsa.attention ops the function was compiled from, in IR order (empty: none recorded: a function without
  /// one, or a library emitted before the emitters recorded them).
  std::vector<AttentionConfig> attention;
};

/// A tensor in the compiled code's memory format (row-major, contiguous). Made from a Tensor (fromTensor, shared
/// by any number of calls, also concurrent ones, of any module or library: never modified), or a result of a call
/// (invokePackedValues: the compiled code's malloc'ed buffer adopted as is), or a copy. A buffer handed to calls as
/// HostValue::inPlace may be updated by them (writable arguments, Values.h file comment); nothing else writes one.
class HostBuffer {
public:
  /// Converts `t` (any element type of the calling convention, any rank). bf16 values are rounded to bf16 (a BF16
  /// Tensor's values are bf16-exact already).
  static std::shared_ptr<const HostBuffer> fromTensor(const dsa::Tensor &t);
  /// fromTensor as a buffer its owner may hand to calls as HostValue::inPlace.
  static std::shared_ptr<HostBuffer> mutableFromTensor(const dsa::Tensor &t);
  /// A copy of `b` (same type, shape and bytes) its owner may hand to calls as HostValue::inPlace.
  static std::shared_ptr<HostBuffer> copyOf(const HostBuffer &b);
  /// Adopts memory: `data` holds the row-major elements, `owner` keeps it alive (frees it when the last buffer
  /// sharing it goes; results of one call that share an allocation share the owner).
  static std::shared_ptr<HostBuffer> adopt(dsa::ElementType type, std::vector<int64_t> shape,
                                          std::shared_ptr<void> owner, void *data);

  dsa::ElementType elementType() const { return type_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t numElements() const;
  /// The element data (at least 8-byte aligned for buffers made here; as the compiled code aligned it otherwise).
  const void *data() const { return data_; }
  void *mutableData() { return data_; }
  /// The values as a Tensor (bf16 widened to f32, i1/i32 to int64).
  dsa::Tensor toTensor() const;

private:
  HostBuffer() = default;
  dsa::ElementType type_ = dsa::ElementType::F32;
  std::vector<int64_t> shape_;
  std::shared_ptr<void> owner_;
  void *data_ = nullptr;
};

/// One argument or result of a call: a Tensor (converted for this call), a prepared HostBuffer (read-only), or a
/// buffer its owner lets calls update in place (inPlace: a sequence's resident caches). Scalars are rank-0 Tensors.
class HostValue {
public:
  HostValue(dsa::Tensor tensor) : tensor_(std::move(tensor)) {}
  HostValue(std::shared_ptr<const HostBuffer> buffer) : isBuffer_(true), buffer_(std::move(buffer)) {}
  /// A buffer that calls may update in place when it is passed for a writable argument
  /// (FunctionSignature::writableArgs); read-only for every other argument. The caller must not share it with
  /// anyone expecting it constant; passing it for two writable arguments of one call is an error.
  static HostValue inPlace(std::shared_ptr<HostBuffer> buffer) {
    HostValue v{std::shared_ptr<const HostBuffer>(buffer)};
    v.mutable_ = std::move(buffer);
    return v;
  }
  /// The Tensor, or null for a buffer argument.
  const dsa::Tensor *tensor() const { return isBuffer_ ? nullptr : &tensor_; }
  /// The buffer (null for a Tensor argument, or a null buffer, which a call reports).
  const HostBuffer *buffer() const { return buffer_.get(); }
  /// The buffer as shared, or null for a Tensor.
  const std::shared_ptr<const HostBuffer> &sharedBuffer() const { return buffer_; }
  /// Whether calls may update this buffer in place, and the buffer (null if not).
  bool isInPlace() const { return mutable_ != nullptr; }
  const std::shared_ptr<HostBuffer> &inPlaceBuffer() const { return mutable_; }
  /// The value as a Tensor (a copy; a null buffer gives an empty f32 tensor).
  dsa::Tensor toTensor() const;

private:
  bool isBuffer_ = false;
  dsa::Tensor tensor_;
  std::shared_ptr<const HostBuffer> buffer_;
  std::shared_ptr<HostBuffer> mutable_;
};

/// A probe kept as a result: its name and value.
struct NamedTensor {
  std::string name;
  dsa::Tensor value;
};

/// Whether a value of element type `type` and shape `shape` (empty: a scalar or a rank-0 tensor) fits `kind`:
/// the element type, a scalar for a scalar kind, the rank and every static dimension. The one check of a call's
/// values against a signature (PackedCall's invokePacked, the C API's weights, GpuStepLibrary::run's arguments).
/// Errors start with `what`:
/// "<what> has element type f32, expected bf16 (tensor<4x8xbf16>)", "<what> has shape [2, 5], expected a scalar
/// (i64)", "<what> has rank 1 (shape [4]), expected tensor<4x8xbf16>", "<what> has shape [2, 5], expected
/// tensor<2x4xbf16> (dimension 1)".
Status checkValueKind(const ValueKind &kind, dsa::ElementType type, const std::vector<int64_t> &shape,
                      const std::string &what);

/// "bf16", "f32", ... (dsa::elementTypeName) and back; nullopt-like failure as an Error naming `text`.
Result<dsa::ElementType> elementTypeFromName(const std::string &text);

} // namespace dsa::runtime

#endif
