//===- Evaluator.h - the interpreter's evaluator class, shared by its two halves (private) ---===//
//
// The interpreter is one class (Evaluator) whose eval() overloads are split by what they evaluate:
//   Interpreter.cpp   the function driver (scope, func.call), the TypeSwitch dispatcher, the dsa ops (each one call
//                     of its reference kernel, dsa/Kernels/Kernels.h or CompressKernels.h);
//   UpstreamOps.cpp   the upstream ops the decomposed IR uses around them (func.call, scf.for, arith, tensor: data
//                     movement, element access, integer index math, bf16 <-> f32 casts).
// The helpers below are what both halves use to read operands and build results.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_LIB_INTERPRETER_EVALUATOR_H
#define DSA_LIB_INTERPRETER_EVALUATOR_H

#include "dsa/Interpreter/Interpreter.h"

#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Dialect/DSA/IR/RopeParams.h"
#include "dsa/Kernels/CompressKernels.h"
#include "dsa/Kernels/Kernels.h"
#include "dsa/Numerics/BF16.h"
#include "dsa/Support/CheckedArithmetic.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <limits>
#include <string>

namespace dsa::interp::detail {

using namespace mlir;


/// Deepest func.call nesting accepted (guards against unbounded recursion in the interpreted program).
constexpr unsigned kMaxCallDepth = 64;
/// Deepest nesting of scf.for bodies being run at once (over all functions of the call stack): the interpreter
/// recurses once per nested loop, so this bounds its own stack as kMaxCallDepth does for calls.
constexpr unsigned kMaxLoopNesting = 64;
/// Call sites and loop iterations reported ("called from here", "in iteration ...") when an error unwinds through
/// func.call or scf.for.
constexpr unsigned kMaxTraceFrames = 4;

using Scope = llvm::DenseMap<Value, Tensor>;

/// One level of the interpreter's scope: the values defined in one run of a block (a function body, or one
/// iteration of an scf.for body: a fresh Frame per iteration, so nothing defined in an iteration outlives it) and
/// the level that encloses it, whose values the block reads (an scf.for body sees its function's values; a
/// function body, isolated from above, has no parent).
struct Frame {
  Scope values;
  Frame *parent = nullptr;

  /// The value of `v` in this frame or the nearest enclosing one that holds it; null if none does.
  Tensor *lookup(Value v) {
    for (Frame *f = this; f; f = f->parent) {
      auto it = f->values.find(v);
      if (it != f->values.end())
        return &it->second;
    }
    return nullptr;
  }
};
using Operands = ArrayRef<const Tensor *>;
using OpResults = FailureOr<std::vector<Tensor>>;

inline std::string shapeText(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

inline InFlightDiagnostic opError(Operation *op) {
  return op->emitError() << "dsa interpreter: '" << op->getName() << "' ";
}

/// The value of scalar integer operand `index` (a rank-0 i1/i32/i64/index tensor).
inline FailureOr<int64_t> scalarInt(Operation *op, Operands in, unsigned index) {
  const Tensor &value = *in[index];
  if (value.rank() != 0 || value.isFloat())
    return opError(op) << "operand #" << index << " must be an integer scalar, got " << value.typeString();
  return value.scalarInt();
}

/// A result that shares `source`'s data with another row-major shape.
inline Tensor reshaped(const Tensor &source, std::vector<int64_t> shape) {
  if (source.isFloat())
    return Tensor::fromFloats(source.elementType(), std::move(shape), source.floatVector());
  return Tensor::fromInts(source.elementType(), std::move(shape), source.intVector());
}

inline int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// Bit width of an integer element type (index is 64-bit here).
inline unsigned intWidth(ElementType type) {
  switch (type) {
  case ElementType::I1:
    return 1;
  case ElementType::I32:
    return 32;
  default:
    return 64;
  }
}

/// `v` wrapped to the two's-complement range of `type`; i1 is stored as 0/1.
inline int64_t wrapTo(uint64_t v, ElementType type) {
  unsigned width = intWidth(type);
  if (width == 64)
    return static_cast<int64_t>(v);
  if (width == 1)
    return static_cast<int64_t>(v & 1u);
  return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)));
}

/// The signed value of an element (i1 true is -1, as arith's sign extension treats it).
inline int64_t signedValue(int64_t stored, ElementType type) {
  return type == ElementType::I1 ? -stored : stored;
}

/// The smallest value of a signed integer of `type`'s width (i1: -1).
inline int64_t signedMin(ElementType type) {
  switch (intWidth(type)) {
  case 1:
    return -1;
  case 32:
    return std::numeric_limits<int32_t>::min();
  default:
    return std::numeric_limits<int64_t>::min();
  }
}

/// The value of an element's bits read as an unsigned integer of `type`'s width.
inline uint64_t unsignedValue(int64_t stored, ElementType type) {
  switch (intWidth(type)) {
  case 1:
    return static_cast<uint64_t>(stored) & 1u;
  case 32:
    return static_cast<uint32_t>(stored);
  default:
    return static_cast<uint64_t>(stored);
  }
}

/// The values of an offsets / sizes / strides / padding list of an op: the static entries as written, each dynamic
/// one (ShapedType::kDynamic) from the next operand of `dynamics`, an integer scalar at run time.
inline FailureOr<std::vector<int64_t>> mixedValues(Operation *op, Operands in, ArrayRef<int64_t> statics,
                                            OperandRange dynamics, StringRef what) {
  std::vector<int64_t> values;
  unsigned next = dynamics.empty() ? 0 : dynamics.getBeginOperandIndex();
  unsigned end = next + static_cast<unsigned>(dynamics.size());
  for (int64_t v : statics) {
    if (!ShapedType::isDynamic(v)) {
      values.push_back(v);
      continue;
    }
    if (next >= end)
      return opError(op) << "has more dynamic " << what << " entries than " << what << " operands";
    FailureOr<int64_t> value = scalarInt(op, in, next++);
    if (failed(value))
      return failure();
    values.push_back(*value);
  }
  return values;
}

/// "" when the box of `sizes` elements starting at `offsets` with `strides` lies inside a tensor of `shape` (every
/// size >= 0, stride >= 1, offset >= 0, last index < the dimension), else a message naming the first bad dimension.
inline std::string checkBox(ArrayRef<int64_t> shape, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                     ArrayRef<int64_t> strides) {
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string where = "dimension " + std::to_string(d) + ": ";
    if (sizes[d] < 0)
      return where + "size " + std::to_string(sizes[d]) + " is negative";
    if (strides[d] < 1)
      return where + "stride " + std::to_string(strides[d]) + " is not positive";
    if (offsets[d] < 0)
      return where + "offset " + std::to_string(offsets[d]) + " is negative";
    if (sizes[d] == 0) {
      if (offsets[d] > shape[d])
        return where + "offset " + std::to_string(offsets[d]) + " is past the size " + std::to_string(shape[d]);
      continue;
    }
    int64_t span = 0, last = 0;
    bool overflow = __builtin_mul_overflow(sizes[d] - 1, strides[d], &span) ||
                    __builtin_add_overflow(offsets[d], span, &last);
    if (overflow || last >= shape[d])
      return where + "offset " + std::to_string(offsets[d]) + " + (size " + std::to_string(sizes[d]) +
             " - 1) * stride " + std::to_string(strides[d]) + " reaches index " +
             (overflow ? std::string("past int64") : std::to_string(last)) + ", out of bounds for size " +
             std::to_string(shape[d]);
  }
  return "";
}

/// The row-major flat indices, in a tensor of `shape`, of the elements of a box (checkBox must accept it), listed
/// in the row-major order of the box. The innermost dimension is one run of `sizes.back()` indices `strides.back()`
/// apart (a slice of a cache of thousands of rows: no walk over the outer dimensions per element).
inline std::vector<int64_t> boxIndices(ArrayRef<int64_t> shape, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                                ArrayRef<int64_t> strides) {
  const size_t rank = shape.size();
  const int64_t count = product(sizes);
  if (rank == 0)
    return {0};
  std::vector<int64_t> indices(static_cast<size_t>(count));
  if (count == 0)
    return indices;
  std::vector<int64_t> dimStride(rank, 1);
  for (size_t d = rank; d-- > 1;)
    dimStride[d - 1] = dimStride[d] * shape[d];
  const size_t inner = rank - 1;
  const int64_t run = sizes[inner], step = strides[inner];
  std::vector<int64_t> at(rank, 0); // the box position of the run's first element (at[inner] stays 0)
  int64_t *out = indices.data();
  for (int64_t n = 0; n < count; n += run) {
    int64_t first = 0;
    for (size_t d = 0; d < rank; ++d)
      first += (offsets[d] + at[d] * strides[d]) * dimStride[d];
    for (int64_t k = 0; k < run; ++k)
      *out++ = first + k * step;
    for (size_t d = inner; d-- > 0;) {
      if (++at[d] < sizes[d])
        break;
      at[d] = 0;
    }
  }
  return indices;
}

/// A tensor of `shape` holding source's elements at `indices` (row-major).
inline Tensor gather(const Tensor &source, const std::vector<int64_t> &indices, std::vector<int64_t> shape) {
  if (source.isFloat()) {
    std::vector<float> values;
    values.reserve(indices.size());
    for (int64_t i : indices)
      values.push_back(source.floats()[i]);
    return Tensor::fromFloats(source.elementType(), std::move(shape), std::move(values));
  }
  std::vector<int64_t> values;
  values.reserve(indices.size());
  for (int64_t i : indices)
    values.push_back(source.ints()[i]);
  return Tensor::fromInts(source.elementType(), std::move(shape), std::move(values));
}

/// gather(source, boxIndices(source.shape(), offsets, sizes, strides), shape) (checkBox must accept the box), the
/// elements copied as one range when the box is contiguous in `source` (unit strides, every dimension after the
/// first whole: a slice of rows).
inline Tensor gatherBox(const Tensor &source, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                        ArrayRef<int64_t> strides, std::vector<int64_t> shape) {
  const size_t rank = source.shape().size();
  bool rows = rank > 0;
  for (size_t d = 0; d < rank && rows; ++d)
    rows = strides[d] == 1 && (d == 0 || (offsets[d] == 0 && sizes[d] == source.shape()[d]));
  if (!rows)
    return gather(source, boxIndices(source.shape(), offsets, sizes, strides), std::move(shape));
  const int64_t rowElements = product(ArrayRef<int64_t>(source.shape()).drop_front());
  const int64_t begin = offsets[0] * rowElements, count = sizes[0] * rowElements;
  if (source.isFloat())
    return Tensor::fromFloats(source.elementType(), std::move(shape),
                              std::vector<float>(source.floats() + begin, source.floats() + begin + count));
  return Tensor::fromInts(source.elementType(), std::move(shape),
                          std::vector<int64_t>(source.ints() + begin, source.ints() + begin + count));
}

/// dest[indices[i]] = source element i (row-major), for tensors of one element type.
inline void scatter(Tensor &dest, const Tensor &source, const std::vector<int64_t> &indices) {
  for (size_t i = 0; i < indices.size(); ++i) {
    if (dest.isFloat())
      dest.floats()[indices[i]] = source.floats()[i];
    else
      dest.ints()[indices[i]] = source.ints()[i];
  }
}

/// The kernels' tie order of a #dsa.tie_order.
inline FailureOr<numerics::TopkTieOrder> tieOrderOf(Operation *op, mlir::dsa::TieOrder order) {
  switch (order) {
  case mlir::dsa::TieOrder::torch_cpu:
    return numerics::TopkTieOrder::TorchCpu;
  }
  return opError(op) << "tie_order " << static_cast<int>(order) << " has no top-k implementation";
}

inline std::vector<Tensor> single(Tensor value) {
  std::vector<Tensor> results;
  results.push_back(std::move(value));
  return results;
}


class Evaluator {
public:
  explicit Evaluator(ProbeLog *probes, const ProbeOverride *override = nullptr)
      : probes_(probes), override_(override) {}

  OpResults callFunction(func::FuncOp fn, ArrayRef<Tensor> args);

private:
  /// Runs the ops of `block` in order in `frame` (whose values, block arguments included, the caller has bound)
  /// up to its terminator, func.return or scf.yield, and returns the terminator's operands.
  OpResults runBlock(Block &block, Frame &frame);
  OpResults evalOp(Operation *op, Operands in);
  OpResults kernel(Operation *op, Result<Tensor> result);

  // Upstream ops.
  OpResults eval(func::CallOp op, Operands in);
  OpResults eval(scf::ForOp op, Operands in);
  OpResults eval(arith::ConstantOp op, Operands in);
  OpResults eval(arith::IndexCastOp op, Operands in);
  template <typename Fn> OpResults evalIntBinary(Operation *op, Operands in, Fn fn);
  template <typename Fn> OpResults evalSignedBinary(Operation *op, Operands in, Fn fn);
  OpResults eval(arith::CmpIOp op, Operands in);
  OpResults eval(arith::SelectOp op, Operands in);
  OpResults evalFloatCast(Operation *op, Operands in);
  OpResults eval(arith::ExtFOp op, Operands in);
  OpResults eval(arith::TruncFOp op, Operands in);
  OpResults eval(tensor::DimOp op, Operands in);
  OpResults eval(tensor::CastOp op, Operands in);
  OpResults eval(tensor::ReshapeOp op, Operands in);
  OpResults eval(tensor::ExpandShapeOp op, Operands in);
  OpResults eval(tensor::CollapseShapeOp op, Operands in);
  OpResults eval(tensor::EmptyOp op, Operands in);
  OpResults eval(tensor::ExtractOp op, Operands in);
  OpResults eval(tensor::InsertOp op, Operands in);
  OpResults eval(tensor::ExtractSliceOp op, Operands in);
  OpResults eval(tensor::InsertSliceOp op, Operands in);
  OpResults eval(tensor::ConcatOp op, Operands in);
  OpResults eval(tensor::PadOp op, Operands in);
  // dsa ops.
  OpResults eval(mlir::dsa::LinearOp op, Operands in);
  OpResults eval(mlir::dsa::RmsNormOp op, Operands in);
  OpResults eval(mlir::dsa::PositionsOp op, Operands in);
  OpResults eval(mlir::dsa::ApplyRopeOp op, Operands in);
  OpResults eval(mlir::dsa::ActQuantFp8Op op, Operands in);
  OpResults eval(mlir::dsa::RingUpdateOp op, Operands in);
  OpResults eval(mlir::dsa::WindowKvOp op, Operands in);
  OpResults eval(mlir::dsa::WindowIndicesOp op, Operands in);
  OpResults eval(mlir::dsa::SparseAttnOp op, Operands in);
  OpResults eval(mlir::dsa::GroupedOutputOp op, Operands in);
  OpResults eval(mlir::dsa::ProbeOp op, Operands in);
  OpResults eval(mlir::dsa::CompressPoolOp op, Operands in);
  OpResults eval(mlir::dsa::Fp4QuantE8M0Op op, Operands in);
  OpResults eval(mlir::dsa::Fp4QuantE4M3Op op, Operands in);
  OpResults eval(mlir::dsa::CacheWriteOp op, Operands in);
  OpResults eval(mlir::dsa::IndexerScoresOp op, Operands in);
  OpResults eval(mlir::dsa::CompressVisibilityOp op, Operands in);
  OpResults eval(mlir::dsa::SelectCandidateBlocksOp op, Operands in);
  OpResults eval(mlir::dsa::ApplyCandidatesOp op, Operands in);
  OpResults eval(mlir::dsa::IndexerTopkOp op, Operands in);

  ProbeLog *probes_;
  const ProbeOverride *override_;
  /// The innermost frame of the block being run (values an op's regions capture, e.g. tensor.pad's padding; the
  /// parent of an scf.for body's frames).
  Frame *frame_ = nullptr;
  unsigned depth_ = 0;
  unsigned loopNesting_ = 0;
  /// scf.for iterations run so far in this call (checked against loopIterationLimit()).
  int64_t loopIterations_ = 0;
  unsigned traceFrames_ = 0;
};

// The integer binary ops (instantiated by the dispatcher with one lambda per arith op).
template <typename Fn> OpResults Evaluator::evalIntBinary(Operation *op, Operands in, Fn fn) {
  const Tensor &lhs = *in[0];
  const Tensor &rhs = *in[1];
  if (lhs.isFloat() || rhs.isFloat() || lhs.elementType() != rhs.elementType() || lhs.shape() != rhs.shape())
    return opError(op) << "operands must be integers of one type and shape, got " << lhs.typeString() << " and "
                       << rhs.typeString();
  std::vector<int64_t> values;
  values.reserve(lhs.intVector().size());
  for (size_t i = 0; i < lhs.intVector().size(); ++i)
    values.push_back(wrapTo(fn(static_cast<uint64_t>(lhs.intVector()[i]), static_cast<uint64_t>(rhs.intVector()[i])),
                            lhs.elementType()));
  std::vector<Tensor> results;
  results.push_back(Tensor::fromInts(lhs.elementType(), lhs.shape(), std::move(values)));
  return results;
}

template <typename Fn> OpResults Evaluator::evalSignedBinary(Operation *op, Operands in, Fn fn) {
  const Tensor &lhs = *in[0];
  const Tensor &rhs = *in[1];
  if (lhs.isFloat() || rhs.isFloat() || lhs.elementType() != rhs.elementType() || lhs.shape() != rhs.shape())
    return opError(op) << "operands must be integers of one type and shape, got " << lhs.typeString() << " and "
                       << rhs.typeString();
  const ElementType type = lhs.elementType();
  std::vector<int64_t> values;
  values.reserve(lhs.intVector().size());
  for (size_t i = 0; i < lhs.intVector().size(); ++i) {
    int64_t a = signedValue(lhs.intVector()[i], type), b = signedValue(rhs.intVector()[i], type);
    Result<int64_t> value = fn(a, b, signedMin(type));
    if (!value.ok()) {
      InFlightDiagnostic diag = opError(op) << value.error() << " (lhs " << a << ", rhs " << b;
      if (lhs.rank() > 0)
        diag << ", element " << i;
      return diag << ")";
    }
    values.push_back(wrapTo(static_cast<uint64_t>(*value), type));
  }
  return single(Tensor::fromInts(type, lhs.shape(), std::move(values)));
}

} // namespace dsa::interp::detail

#endif
