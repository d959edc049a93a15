//===- Tensor.h - the interpreter's value type (MLIR-free) --------------------===//
//
// A small dense tensor: element type, shape, row-major data. Floating tensors (bf16, f32) store f32 values (a bf16
// tensor's values are bf16-exact); integer tensors (i1, i32, i64) store int64 values. Scalars (i64 / index SSA
// values) are rank-0 tensors. Follows the value type of StableHLO's reference interpreter.
//
// The factories and at() have preconditions (documented per function). Violating one is a programming error of
// the caller, not bad user input (the kernels and the interpreter validate operands before building tensors): it
// prints a message naming the problem to stderr and aborts, instead of producing a tensor whose storage does not
// match its shape.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CORE_TENSOR_H
#define DSA_CORE_TENSOR_H

#include "dsa/Support/Result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dsa {

enum class ElementType { BF16, F32, I1, I32, I64, Index };

/// "bf16", "f32", "i1", "i32", "i64", "index".
const char *elementTypeName(ElementType type);
bool isFloatType(ElementType type);

class Tensor {
public:
  /// A placeholder (rank-0 f32 with no storage) to assign to; not a valid scalar.
  Tensor() = default;
  /// A zero-filled tensor. Precondition: every dimension >= 0 (the element count fits in int64).
  Tensor(ElementType type, std::vector<int64_t> shape);

  /// A zero-filled tensor whose shape comes from user input (IR operands, runtime values, files): the checks of the
  /// constructor's precondition as errors, before anything is allocated. Errors (naming the shape): a negative
  /// dimension; an element count or byte size that overflows int64; a byte size (4 per float element, 8 per integer
  /// element, as stored) above tensorByteLimit(); an allocation the system refuses.
  static Result<Tensor> zeros(ElementType type, std::vector<int64_t> shape);
  /// The largest tensor zeros() allocates, in bytes: setTensorByteLimit's value, else $DSA_MAX_TENSOR_BYTES (a
  /// decimal byte count) when set, else the machine's physical memory. An absurd size from a file or an operand is
  /// then an error instead of an out-of-memory abort.
  static int64_t tensorByteLimit();
  /// Sets tensorByteLimit() for this process (bytes >= 1); 0 restores the default.
  static void setTensorByteLimit(int64_t bytes);
  static Tensor scalarI64(int64_t value);
  static Tensor scalarIndex(int64_t value);
  /// A float tensor from row-major values, each rounded to bf16 (RNE, numerics::roundBf16) when type is BF16 and
  /// kept as is for F32. Preconditions: type is BF16 or F32; values.size() == product(shape).
  static Tensor fromFloats(ElementType type, std::vector<int64_t> shape, std::vector<float> values);
  /// An integer tensor from row-major values. Preconditions: type is I1/I32/I64/Index; values.size() ==
  /// product(shape); I1 values are 0 or 1; I32 values fit in int32.
  static Tensor fromInts(ElementType type, std::vector<int64_t> shape, std::vector<int64_t> values);

  ElementType elementType() const { return type_; }
  bool isFloat() const { return isFloatType(type_); }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t numElements() const;

  /// Float storage (bf16/f32 tensors only).
  float *floats() { return floats_.data(); }
  const float *floats() const { return floats_.data(); }
  const std::vector<float> &floatVector() const { return floats_; }
  /// Integer storage (i1/i32/i64/index tensors only).
  int64_t *ints() { return ints_.data(); }
  const int64_t *ints() const { return ints_.data(); }
  const std::vector<int64_t> &intVector() const { return ints_; }

  /// The value of a rank-0 integer tensor (element 0 of any integer tensor). Precondition: an integer tensor with
  /// at least one element.
  int64_t scalarInt() const;
  /// Element `flat` (row-major) as double, whatever the element type. Precondition: 0 <= flat < numElements().
  double at(int64_t flat) const;

  /// The MLIR spelling of the type, e.g. "tensor<12x64xbf16>"; "tensor<i64>" for a scalar.
  std::string typeString() const;

private:
  ElementType type_ = ElementType::F32;
  std::vector<int64_t> shape_;
  std::vector<float> floats_;
  std::vector<int64_t> ints_;
};

} // namespace dsa

#endif
