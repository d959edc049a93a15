//===- Interpreter.cpp - scope, function driver and op dispatcher -------------===//
//
// StableHLO-style reference interpreter: a Scope maps SSA values to Tensors; ops of a single-block function body
// run in order; each op's operands are looked up, the op is evaluated (dsa ops by their kernel in Kernels.h or
// CompressKernels.h, upstream ops here: data movement, integer index math, bf16 <-> f32 casts), and its results
// are checked against the op's result types and bound in the scope. See Interpreter.h for the supported ops and the error contract.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Interpreter/Interpreter.h"

#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Dialect/DSA/IR/RopeParams.h"
#include "dsa/Kernels/CompressKernels.h"
#include "dsa/Kernels/Kernels.h"
#include "dsa/Numerics/BF16.h"
#include "dsa/Support/CheckedArithmetic.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
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

using namespace mlir;

namespace dsa::interp {
namespace {

/// Deepest func.call nesting accepted (guards against unbounded recursion in the interpreted program).
constexpr unsigned kMaxCallDepth = 64;
/// Call sites reported ("called from here") when an error unwinds through func.call.
constexpr unsigned kMaxTraceFrames = 4;

using Scope = llvm::DenseMap<Value, Tensor>;
using Operands = ArrayRef<const Tensor *>;
using OpResults = FailureOr<std::vector<Tensor>>;

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

InFlightDiagnostic opError(Operation *op) {
  return op->emitError() << "dsa interpreter: '" << op->getName() << "' ";
}

/// The value of scalar integer operand `index` (a rank-0 i1/i32/i64/index tensor).
FailureOr<int64_t> scalarInt(Operation *op, Operands in, unsigned index) {
  const Tensor &value = *in[index];
  if (value.rank() != 0 || value.isFloat())
    return opError(op) << "operand #" << index << " must be an integer scalar, got " << value.typeString();
  return value.scalarInt();
}

/// A result that shares `source`'s data with another row-major shape.
Tensor reshaped(const Tensor &source, std::vector<int64_t> shape) {
  if (source.isFloat())
    return Tensor::fromFloats(source.elementType(), std::move(shape), source.floatVector());
  return Tensor::fromInts(source.elementType(), std::move(shape), source.intVector());
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// Bit width of an integer element type (index is 64-bit here).
unsigned intWidth(ElementType type) {
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
int64_t wrapTo(uint64_t v, ElementType type) {
  unsigned width = intWidth(type);
  if (width == 64)
    return static_cast<int64_t>(v);
  if (width == 1)
    return static_cast<int64_t>(v & 1u);
  return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)));
}

/// The signed value of an element (i1 true is -1, as arith's sign extension treats it).
int64_t signedValue(int64_t stored, ElementType type) {
  return type == ElementType::I1 ? -stored : stored;
}

/// The smallest value of a signed integer of `type`'s width (i1: -1).
int64_t signedMin(ElementType type) {
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
uint64_t unsignedValue(int64_t stored, ElementType type) {
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
FailureOr<std::vector<int64_t>> mixedValues(Operation *op, Operands in, ArrayRef<int64_t> statics,
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
std::string checkBox(ArrayRef<int64_t> shape, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
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
/// in the row-major order of the box.
std::vector<int64_t> boxIndices(ArrayRef<int64_t> shape, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                                ArrayRef<int64_t> strides) {
  const size_t rank = shape.size();
  std::vector<int64_t> dimStride(rank, 1);
  for (size_t d = rank; d-- > 1;)
    dimStride[d - 1] = dimStride[d] * shape[d];
  const int64_t count = product(sizes);
  std::vector<int64_t> indices;
  indices.reserve(static_cast<size_t>(count));
  std::vector<int64_t> at(rank, 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t flat = 0;
    for (size_t d = 0; d < rank; ++d)
      flat += (offsets[d] + at[d] * strides[d]) * dimStride[d];
    indices.push_back(flat);
    for (size_t d = rank; d-- > 0;) {
      if (++at[d] < sizes[d])
        break;
      at[d] = 0;
    }
  }
  return indices;
}

/// A tensor of `shape` holding source's elements at `indices` (row-major).
Tensor gather(const Tensor &source, const std::vector<int64_t> &indices, std::vector<int64_t> shape) {
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

/// dest[indices[i]] = source element i (row-major), for tensors of one element type.
void scatter(Tensor &dest, const Tensor &source, const std::vector<int64_t> &indices) {
  for (size_t i = 0; i < indices.size(); ++i) {
    if (dest.isFloat())
      dest.floats()[indices[i]] = source.floats()[i];
    else
      dest.ints()[indices[i]] = source.ints()[i];
  }
}

/// The kernels' tie order of a #dsa.tie_order.
FailureOr<numerics::TopkTieOrder> tieOrderOf(Operation *op, mlir::dsa::TieOrder order) {
  switch (order) {
  case mlir::dsa::TieOrder::torch_cpu:
    return numerics::TopkTieOrder::TorchCpu;
  }
  return opError(op) << "tie_order " << static_cast<int>(order) << " has no top-k implementation";
}

std::vector<Tensor> single(Tensor value) {
  std::vector<Tensor> results;
  results.push_back(std::move(value));
  return results;
}

class Interpreter {
public:
  explicit Interpreter(ProbeLog *probes, const ProbeOverride *override = nullptr)
      : probes_(probes), override_(override) {}

  OpResults callFunction(func::FuncOp fn, ArrayRef<Tensor> args);

private:
  OpResults evalOp(Operation *op, Operands in);
  OpResults kernel(Operation *op, Result<Tensor> result);

  // Upstream ops.
  OpResults eval(func::CallOp op, Operands in);
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
  /// The scope of the function body being executed (values an op's regions capture, e.g. tensor.pad's padding).
  const Scope *scope_ = nullptr;
  unsigned depth_ = 0;
  unsigned traceFrames_ = 0;
};

//===- Function driver --------------------------------------------------------------------------------------===//

OpResults Interpreter::callFunction(func::FuncOp fn, ArrayRef<Tensor> args) {
  std::string fnName = "function '" + fn.getSymName().str() + "'";
  if (fn.isExternal())
    return fn.emitError() << "dsa interpreter: " << fnName << " has no body";
  Region &body = fn.getBody();
  if (!body.hasOneBlock())
    return fn.emitError() << "dsa interpreter: " << fnName << " has " << body.getBlocks().size()
                          << " blocks; only single-block bodies are supported";
  Block &block = body.front();
  if (args.size() != block.getNumArguments())
    return fn.emitError() << "dsa interpreter: " << fnName << " takes " << block.getNumArguments()
                          << " arguments, got " << args.size();
  if (depth_ >= kMaxCallDepth)
    return fn.emitError() << "dsa interpreter: call depth exceeds " << kMaxCallDepth << " entering " << fnName
                          << " (unbounded recursion?)";

  Scope scope;
  for (auto [i, arg] : llvm::enumerate(block.getArguments())) {
    Status check = checkTensorMatchesType(args[i], arg.getType(), "argument #" + std::to_string(i));
    if (!check.ok())
      return fn.emitError() << "dsa interpreter: " << fnName << ": " << check.error();
    scope[arg] = args[i];
  }

  ++depth_;
  struct FrameGuard {
    unsigned &depth;
    const Scope *&current;
    const Scope *saved;
    ~FrameGuard() {
      --depth;
      current = saved;
    }
  } guard{depth_, scope_, scope_};
  scope_ = &scope;

  for (Operation &op : block) {
    std::vector<const Tensor *> in;
    in.reserve(op.getNumOperands());
    for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
      auto it = scope.find(operand);
      if (it == scope.end())
        return opError(&op) << "operand #" << i << " has no value in the interpreter's scope";
      in.push_back(&it->second);
    }

    if (isa<func::ReturnOp>(op)) {
      std::vector<Tensor> results;
      for (const Tensor *value : in)
        results.push_back(*value);
      return results;
    }

    OpResults results = evalOp(&op, in);
    if (failed(results))
      return failure();
    if (results->size() != op.getNumResults())
      return opError(&op) << "produced " << results->size() << " results, expected " << op.getNumResults();
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      Status check = checkTensorMatchesType((*results)[i], result.getType(), "result #" + std::to_string(i));
      if (!check.ok())
        return opError(&op) << check.error();
      scope[result] = std::move((*results)[i]);
    }
    if (auto probe = dyn_cast<mlir::dsa::ProbeOp>(op); probe && override_ && *override_) {
      Value probed = probe.getValue();
      Tensor value = scope[probed];
      if ((*override_)(probe.getName().str(), value)) {
        Status check = checkTensorMatchesType(value, probed.getType(), "the override of the probed value");
        if (!check.ok())
          return opError(&op) << check.error();
        scope[probed] = std::move(value);
      }
    }
  }
  return fn.emitError() << "dsa interpreter: " << fnName << " ends without func.return";
}

OpResults Interpreter::evalOp(Operation *op, Operands in) {
  return llvm::TypeSwitch<Operation *, OpResults>(op)
      .Case<func::CallOp, arith::ConstantOp, arith::IndexCastOp, arith::CmpIOp, arith::SelectOp, arith::ExtFOp,
            arith::TruncFOp, tensor::DimOp, tensor::CastOp, tensor::ReshapeOp, tensor::ExpandShapeOp,
            tensor::CollapseShapeOp, tensor::EmptyOp, tensor::ExtractSliceOp, tensor::InsertSliceOp,
            tensor::ConcatOp, tensor::PadOp>([&](auto concrete) { return eval(concrete, in); })
      .Case<mlir::dsa::LinearOp, mlir::dsa::RmsNormOp, mlir::dsa::PositionsOp, mlir::dsa::ApplyRopeOp,
            mlir::dsa::ActQuantFp8Op, mlir::dsa::RingUpdateOp, mlir::dsa::WindowKvOp, mlir::dsa::WindowIndicesOp,
            mlir::dsa::SparseAttnOp, mlir::dsa::GroupedOutputOp, mlir::dsa::ProbeOp, mlir::dsa::CompressPoolOp,
            mlir::dsa::Fp4QuantE8M0Op, mlir::dsa::Fp4QuantE4M3Op, mlir::dsa::CacheWriteOp,
            mlir::dsa::IndexerScoresOp, mlir::dsa::CompressVisibilityOp, mlir::dsa::SelectCandidateBlocksOp,
            mlir::dsa::ApplyCandidatesOp, mlir::dsa::IndexerTopkOp>([&](auto concrete) { return eval(concrete, in); })
      .Case<arith::AddIOp>([&](arith::AddIOp add) {
        return evalIntBinary(add, in, [](uint64_t a, uint64_t b) { return a + b; });
      })
      .Case<arith::SubIOp>([&](arith::SubIOp sub) {
        return evalIntBinary(sub, in, [](uint64_t a, uint64_t b) { return a - b; });
      })
      .Case<arith::MulIOp>([&](arith::MulIOp mul) {
        return evalIntBinary(mul, in, [](uint64_t a, uint64_t b) { return a * b; });
      })
      .Case<arith::AndIOp>([&](arith::AndIOp andi) {
        return evalIntBinary(andi, in, [](uint64_t a, uint64_t b) { return a & b; });
      })
      .Case<arith::OrIOp>([&](arith::OrIOp ori) {
        return evalIntBinary(ori, in, [](uint64_t a, uint64_t b) { return a | b; });
      })
      .Case<arith::XOrIOp>([&](arith::XOrIOp xori) {
        return evalIntBinary(xori, in, [](uint64_t a, uint64_t b) { return a ^ b; });
      })
      .Case<arith::MaxSIOp>([&](arith::MaxSIOp max) {
        return evalSignedBinary(max, in, [](int64_t a, int64_t b, int64_t) -> Result<int64_t> {
          return std::max(a, b);
        });
      })
      .Case<arith::MinSIOp>([&](arith::MinSIOp min) {
        return evalSignedBinary(min, in, [](int64_t a, int64_t b, int64_t) -> Result<int64_t> {
          return std::min(a, b);
        });
      })
      .Case<arith::DivSIOp>([&](arith::DivSIOp div) {
        return evalSignedBinary(div, in, [](int64_t a, int64_t b, int64_t minValue) -> Result<int64_t> {
          if (b == 0)
            return makeError("division by zero");
          if (a == minValue && b == -1)
            return makeError("signed division overflow (the minimum value divided by -1)");
          return a / b;
        });
      })
      .Case<arith::FloorDivSIOp>([&](arith::FloorDivSIOp div) {
        return evalSignedBinary(div, in, [](int64_t a, int64_t b, int64_t minValue) -> Result<int64_t> {
          if (b == 0)
            return makeError("division by zero");
          if (a == minValue && b == -1)
            return makeError("signed division overflow (the minimum value divided by -1)");
          int64_t q = a / b;
          return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
        });
      })
      .Case<arith::CeilDivSIOp>([&](arith::CeilDivSIOp div) {
        return evalSignedBinary(div, in, [](int64_t a, int64_t b, int64_t minValue) -> Result<int64_t> {
          if (b == 0)
            return makeError("division by zero");
          if (a == minValue && b == -1)
            return makeError("signed division overflow (the minimum value divided by -1)");
          int64_t q = a / b;
          return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
        });
      })
      .Case<arith::RemSIOp>([&](arith::RemSIOp rem) {
        return evalSignedBinary(rem, in, [](int64_t a, int64_t b, int64_t) -> Result<int64_t> {
          if (b == 0)
            return makeError("division by zero");
          return b == -1 ? 0 : a % b; // b == -1: 0 without the trap of INT64_MIN % -1
        });
      })
      .Case<mlir::dsa::AttentionOp>([&](mlir::dsa::AttentionOp attention) -> OpResults {
        InFlightDiagnostic diag = attention.emitError()
                                  << "dsa interpreter: unsupported op '" << op->getName() << "'";
        diag.attachNote() << "decompose it first, e.g. --pass-pipeline='builtin.module(dsa-decompose-attention)'";
        return diag;
      })
      .Default([&](Operation *other) -> OpResults {
        return other->emitError() << "dsa interpreter: unsupported op '" << other->getName() << "'";
      });
}

OpResults Interpreter::kernel(Operation *op, Result<Tensor> result) {
  if (!result.ok())
    return opError(op) << "failed: " << result.error();
  return single(result.take());
}

//===- func / arith / tensor --------------------------------------------------------------------------------===//

OpResults Interpreter::eval(func::CallOp op, Operands in) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(op, op.getCalleeAttr());
  if (!callee)
    return opError(op) << "callee '" << op.getCallee() << "' is not a func.func in scope";
  std::vector<Tensor> args;
  for (const Tensor *value : in)
    args.push_back(*value);
  OpResults results = callFunction(callee, args);
  if (failed(results)) {
    // A short call trace: the innermost kMaxTraceFrames call sites (a runaway recursion would print 64).
    if (traceFrames_++ < kMaxTraceFrames)
      op.emitRemark() << "dsa interpreter: called from here";
    return failure();
  }
  return results;
}

OpResults Interpreter::eval(arith::ConstantOp op, Operands) {
  Attribute value = op.getValue();
  std::vector<Tensor> results;
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    Result<Tensor> tensor = tensorFromAttr(dense);
    if (!tensor.ok())
      return opError(op) << tensor.error();
    results.push_back(tensor.take());
    return results;
  }
  if (auto integer = dyn_cast<IntegerAttr>(value)) {
    Result<ElementType> type = elementTypeFromMlir(integer.getType());
    if (!type.ok())
      return opError(op) << type.error();
    const APInt &bits = integer.getValue();
    int64_t v = *type == ElementType::I1 ? static_cast<int64_t>(bits.getZExtValue()) : bits.getSExtValue();
    results.push_back(Tensor::fromInts(*type, {}, {v}));
    return results;
  }
  if (auto floating = dyn_cast<FloatAttr>(value)) {
    Result<ElementType> type = elementTypeFromMlir(floating.getType());
    if (!type.ok())
      return opError(op) << type.error();
    results.push_back(Tensor::fromFloats(*type, {}, {static_cast<float>(floating.getValueAsDouble())}));
    return results;
  }
  return opError(op) << "unsupported constant attribute " << value;
}

OpResults Interpreter::eval(arith::IndexCastOp op, Operands in) {
  const Tensor &source = *in[0];
  Type resultType = getElementTypeOrSelf(op.getType());
  Result<ElementType> target = elementTypeFromMlir(resultType);
  if (!target.ok())
    return opError(op) << target.error();
  if (source.isFloat() || isFloatType(*target))
    return opError(op) << "operand must be an integer or index value, got " << source.typeString();
  std::vector<int64_t> values;
  values.reserve(source.intVector().size());
  for (int64_t v : source.intVector())
    values.push_back(wrapTo(static_cast<uint64_t>(signedValue(v, source.elementType())), *target));
  std::vector<Tensor> results;
  results.push_back(Tensor::fromInts(*target, source.shape(), std::move(values)));
  return results;
}

template <typename Fn> OpResults Interpreter::evalIntBinary(Operation *op, Operands in, Fn fn) {
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

template <typename Fn> OpResults Interpreter::evalSignedBinary(Operation *op, Operands in, Fn fn) {
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

OpResults Interpreter::eval(arith::CmpIOp op, Operands in) {
  const Tensor &lhs = *in[0];
  const Tensor &rhs = *in[1];
  if (lhs.isFloat() || rhs.isFloat() || lhs.elementType() != rhs.elementType() || lhs.shape() != rhs.shape())
    return opError(op) << "operands must be integers of one type and shape, got " << lhs.typeString() << " and "
                       << rhs.typeString();
  const ElementType type = lhs.elementType();
  const arith::CmpIPredicate predicate = op.getPredicate();
  std::vector<int64_t> values;
  values.reserve(lhs.intVector().size());
  for (size_t i = 0; i < lhs.intVector().size(); ++i) {
    const int64_t sa = signedValue(lhs.intVector()[i], type), sb = signedValue(rhs.intVector()[i], type);
    const uint64_t ua = unsignedValue(lhs.intVector()[i], type), ub = unsignedValue(rhs.intVector()[i], type);
    bool r = false;
    switch (predicate) {
    case arith::CmpIPredicate::eq:
      r = sa == sb;
      break;
    case arith::CmpIPredicate::ne:
      r = sa != sb;
      break;
    case arith::CmpIPredicate::slt:
      r = sa < sb;
      break;
    case arith::CmpIPredicate::sle:
      r = sa <= sb;
      break;
    case arith::CmpIPredicate::sgt:
      r = sa > sb;
      break;
    case arith::CmpIPredicate::sge:
      r = sa >= sb;
      break;
    case arith::CmpIPredicate::ult:
      r = ua < ub;
      break;
    case arith::CmpIPredicate::ule:
      r = ua <= ub;
      break;
    case arith::CmpIPredicate::ugt:
      r = ua > ub;
      break;
    case arith::CmpIPredicate::uge:
      r = ua >= ub;
      break;
    }
    values.push_back(r ? 1 : 0);
  }
  return single(Tensor::fromInts(ElementType::I1, lhs.shape(), std::move(values)));
}

OpResults Interpreter::eval(arith::SelectOp op, Operands in) {
  const Tensor &condition = *in[0];
  const Tensor &onTrue = *in[1];
  const Tensor &onFalse = *in[2];
  if (condition.elementType() != ElementType::I1)
    return opError(op) << "condition (operand #0) must be i1, got " << condition.typeString();
  if (onTrue.elementType() != onFalse.elementType())
    return opError(op) << "true value (operand #1) " << onTrue.typeString() << " and false value (operand #2) "
                       << onFalse.typeString() << " have different element types";
  // A scalar condition picks one whole value (the two may have different runtime shapes).
  if (condition.rank() == 0)
    return single(condition.scalarInt() ? onTrue : onFalse);
  if (onTrue.shape() != condition.shape())
    return opError(op) << "true value (operand #1) " << onTrue.typeString() << " must have the shape of the condition "
                       << condition.typeString();
  if (onFalse.shape() != condition.shape())
    return opError(op) << "false value (operand #2) " << onFalse.typeString()
                       << " must have the shape of the condition " << condition.typeString();
  const int64_t n = condition.numElements();
  if (onTrue.isFloat()) {
    std::vector<float> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      values[i] = condition.ints()[i] ? onTrue.floats()[i] : onFalse.floats()[i];
    return single(Tensor::fromFloats(onTrue.elementType(), condition.shape(), std::move(values)));
  }
  std::vector<int64_t> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    values[i] = condition.ints()[i] ? onTrue.ints()[i] : onFalse.ints()[i];
  return single(Tensor::fromInts(onTrue.elementType(), condition.shape(), std::move(values)));
}

OpResults Interpreter::evalFloatCast(Operation *op, Operands in) {
  const Tensor &source = *in[0];
  Result<ElementType> target = elementTypeFromMlir(getElementTypeOrSelf(op->getResult(0).getType()));
  if (!target.ok())
    return opError(op) << target.error();
  if (!source.isFloat() || !isFloatType(*target))
    return opError(op) << "operand #0 must be a bf16 or f32 value, got " << source.typeString();
  // bf16 -> f32 is exact; f32 -> bf16 rounds to nearest, ties to even (section 2's bf16 rounding).
  std::vector<float> values = source.floatVector();
  if (*target == ElementType::BF16)
    for (float &v : values)
      v = numerics::roundBf16(v);
  return single(Tensor::fromFloats(*target, source.shape(), std::move(values)));
}

OpResults Interpreter::eval(arith::ExtFOp op, Operands in) { return evalFloatCast(op, in); }

OpResults Interpreter::eval(arith::TruncFOp op, Operands in) {
  std::optional<arith::RoundingMode> mode = op.getRoundingmode();
  if (mode && *mode != arith::RoundingMode::to_nearest_even)
    return opError(op) << "rounding mode '" << arith::stringifyRoundingMode(*mode)
                       << "' is not supported (only to_nearest_even, the default)";
  return evalFloatCast(op, in);
}

OpResults Interpreter::eval(tensor::DimOp op, Operands in) {
  const Tensor &source = *in[0];
  FailureOr<int64_t> index = scalarInt(op, in, 1);
  if (failed(index))
    return failure();
  if (*index < 0 || *index >= source.rank())
    return opError(op) << "dimension index " << *index << " is out of range for " << source.typeString();
  std::vector<Tensor> results;
  results.push_back(Tensor::scalarIndex(source.dim(*index)));
  return results;
}

OpResults Interpreter::eval(tensor::CastOp, Operands in) {
  // The result-type check after the op rejects a cast to an incompatible static shape.
  std::vector<Tensor> results;
  results.push_back(*in[0]);
  return results;
}

OpResults Interpreter::eval(tensor::ReshapeOp op, Operands in) {
  const Tensor &source = *in[0];
  const Tensor &shapeTensor = *in[1];
  if (shapeTensor.rank() != 1 || shapeTensor.isFloat())
    return opError(op) << "shape operand must be a 1-D integer tensor, got " << shapeTensor.typeString();
  std::vector<int64_t> shape = shapeTensor.intVector();
  for (int64_t d : shape)
    if (d < 0)
      return opError(op) << "shape " << shapeText(shape) << " has a negative dimension";
  if (product(shape) != source.numElements())
    return opError(op) << "shape " << shapeText(shape) << " holds " << product(shape) << " elements, the source "
                       << source.typeString() << " has " << source.numElements();
  std::vector<Tensor> results;
  results.push_back(reshaped(source, std::move(shape)));
  return results;
}

OpResults Interpreter::eval(tensor::ExpandShapeOp op, Operands in) {
  const Tensor &source = *in[0];
  ArrayRef<int64_t> staticShape = op.getStaticOutputShape();
  std::vector<int64_t> shape;
  unsigned nextDynamic = 1; // output_shape operands follow the source
  for (int64_t d : staticShape) {
    if (!ShapedType::isDynamic(d)) {
      shape.push_back(d);
      continue;
    }
    if (nextDynamic >= in.size())
      return opError(op) << "missing an output_shape operand for a dynamic dimension";
    FailureOr<int64_t> size = scalarInt(op, in, nextDynamic++);
    if (failed(size))
      return failure();
    if (*size < 0)
      return opError(op) << "output_shape has a negative size " << *size;
    shape.push_back(*size);
  }
  SmallVector<ReassociationIndices> groups = op.getReassociationIndices();
  if (static_cast<int64_t>(groups.size()) != source.rank())
    return opError(op) << "reassociation has " << groups.size() << " groups, the source " << source.typeString()
                       << " has rank " << source.rank();
  for (auto [g, group] : llvm::enumerate(groups)) {
    int64_t n = 1;
    for (int64_t d : group)
      n *= shape[static_cast<size_t>(d)];
    if (n != source.dim(static_cast<int64_t>(g)))
      return opError(op) << "output shape " << shapeText(shape) << " does not expand source dimension " << g
                         << " of " << source.typeString();
  }
  std::vector<Tensor> results;
  results.push_back(reshaped(source, std::move(shape)));
  return results;
}

OpResults Interpreter::eval(tensor::CollapseShapeOp op, Operands in) {
  const Tensor &source = *in[0];
  std::vector<int64_t> shape;
  for (const ReassociationIndices &group : op.getReassociationIndices()) {
    int64_t n = 1;
    for (int64_t d : group) {
      if (d >= source.rank())
        return opError(op) << "reassociation names dimension " << d << " of " << source.typeString();
      n *= source.dim(d);
    }
    shape.push_back(n);
  }
  std::vector<Tensor> results;
  results.push_back(reshaped(source, std::move(shape)));
  return results;
}

OpResults Interpreter::eval(tensor::EmptyOp op, Operands in) {
  RankedTensorType type = op.getType();
  Result<ElementType> elementType = elementTypeFromMlir(type.getElementType());
  if (!elementType.ok())
    return opError(op) << elementType.error();
  std::vector<int64_t> shape;
  unsigned next = 0;
  for (int64_t d : type.getShape()) {
    if (!ShapedType::isDynamic(d)) {
      shape.push_back(d);
      continue;
    }
    if (next >= in.size())
      return opError(op) << "missing a dynamic size operand for " << type;
    FailureOr<int64_t> size = scalarInt(op, in, next);
    if (failed(size))
      return failure();
    if (*size < 0)
      return opError(op) << "dynamic size (operand #" << next << ") is negative: " << *size;
    ++next;
    shape.push_back(*size);
  }
  // The contents of tensor.empty are unspecified; the interpreter makes them zeros (deterministic).
  Result<Tensor> out = Tensor::zeros(*elementType, std::move(shape));
  if (!out.ok())
    return opError(op) << out.error();
  return single(std::move(*out));
}

OpResults Interpreter::eval(tensor::ExtractSliceOp op, Operands in) {
  const Tensor &source = *in[0];
  FailureOr<std::vector<int64_t>> offsets = mixedValues(op, in, op.getStaticOffsets(), op.getOffsets(), "offset");
  if (failed(offsets))
    return failure();
  FailureOr<std::vector<int64_t>> sizes = mixedValues(op, in, op.getStaticSizes(), op.getSizes(), "size");
  if (failed(sizes))
    return failure();
  FailureOr<std::vector<int64_t>> strides = mixedValues(op, in, op.getStaticStrides(), op.getStrides(), "stride");
  if (failed(strides))
    return failure();
  if (static_cast<int64_t>(offsets->size()) != source.rank() || sizes->size() != offsets->size() ||
      strides->size() != offsets->size())
    return opError(op) << "source (operand #0) " << source.typeString() << " has rank " << source.rank()
                       << ", the slice has " << offsets->size() << " offsets, " << sizes->size() << " sizes and "
                       << strides->size() << " strides";
  std::string bad = checkBox(source.shape(), *offsets, *sizes, *strides);
  if (!bad.empty())
    return opError(op) << "slice [offsets " << shapeText(*offsets) << ", sizes " << shapeText(*sizes)
                       << ", strides " << shapeText(*strides) << "] is out of bounds of the source (operand #0) "
                       << source.typeString() << ": " << bad;
  // A rank-reducing slice drops unit dimensions of the sizes.
  llvm::SmallBitVector dropped = op.getDroppedDims();
  std::vector<int64_t> shape;
  for (size_t d = 0; d < sizes->size(); ++d) {
    if (d < dropped.size() && dropped.test(d)) {
      if ((*sizes)[d] != 1)
        return opError(op) << "drops dimension " << d << " of the slice, whose size is " << (*sizes)[d] << ", not 1";
      continue;
    }
    shape.push_back((*sizes)[d]);
  }
  return single(gather(source, boxIndices(source.shape(), *offsets, *sizes, *strides), std::move(shape)));
}

OpResults Interpreter::eval(tensor::InsertSliceOp op, Operands in) {
  const Tensor &source = *in[0];
  const Tensor &dest = *in[1];
  if (source.elementType() != dest.elementType())
    return opError(op) << "source (operand #0) " << source.typeString() << " and dest (operand #1) "
                       << dest.typeString() << " have different element types";
  FailureOr<std::vector<int64_t>> offsets = mixedValues(op, in, op.getStaticOffsets(), op.getOffsets(), "offset");
  if (failed(offsets))
    return failure();
  FailureOr<std::vector<int64_t>> sizes = mixedValues(op, in, op.getStaticSizes(), op.getSizes(), "size");
  if (failed(sizes))
    return failure();
  FailureOr<std::vector<int64_t>> strides = mixedValues(op, in, op.getStaticStrides(), op.getStrides(), "stride");
  if (failed(strides))
    return failure();
  if (static_cast<int64_t>(offsets->size()) != dest.rank() || sizes->size() != offsets->size() ||
      strides->size() != offsets->size())
    return opError(op) << "dest (operand #1) " << dest.typeString() << " has rank " << dest.rank()
                       << ", the slice has " << offsets->size() << " offsets, " << sizes->size() << " sizes and "
                       << strides->size() << " strides";
  // The source is the slice, possibly without some unit dimensions (a rank-extending insert).
  llvm::SmallBitVector dropped = op.getDroppedDims();
  std::vector<int64_t> expected;
  for (size_t d = 0; d < sizes->size(); ++d)
    if (!(d < dropped.size() && dropped.test(d)) || (*sizes)[d] != 1)
      expected.push_back((*sizes)[d]);
  if (source.shape() != expected)
    return opError(op) << "source (operand #0) " << source.typeString() << " does not have the slice's shape "
                       << shapeText(expected) << " (sizes " << shapeText(*sizes) << ")";
  std::string bad = checkBox(dest.shape(), *offsets, *sizes, *strides);
  if (!bad.empty())
    return opError(op) << "slice [offsets " << shapeText(*offsets) << ", sizes " << shapeText(*sizes)
                       << ", strides " << shapeText(*strides) << "] is out of bounds of the dest (operand #1) "
                       << dest.typeString() << ": " << bad;
  Tensor out = dest;
  scatter(out, source, boxIndices(dest.shape(), *offsets, *sizes, *strides));
  return single(std::move(out));
}

OpResults Interpreter::eval(tensor::ConcatOp op, Operands in) {
  if (in.empty())
    return opError(op) << "has no operands";
  const Tensor &first = *in[0];
  const int64_t dim = static_cast<int64_t>(op.getDim());
  if (dim >= first.rank())
    return opError(op) << "dim " << dim << " is out of range for operand #0 " << first.typeString();
  std::vector<int64_t> shape = first.shape();
  shape[dim] = 0;
  for (auto [i, value] : llvm::enumerate(in)) {
    if (value->elementType() != first.elementType() || value->rank() != first.rank())
      return opError(op) << "operand #" << i << " " << value->typeString()
                         << " must have the element type and rank of operand #0 " << first.typeString();
    for (int64_t d = 0; d < first.rank(); ++d)
      if (d != dim && value->dim(d) != first.dim(d))
        return opError(op) << "operand #" << i << " " << value->typeString() << " differs from operand #0 "
                           << first.typeString() << " in dimension " << d << " (only dim " << dim
                           << " may differ)";
    shape[dim] += value->dim(dim);
  }
  const int64_t outer = product(ArrayRef<int64_t>(shape).take_front(dim));
  const int64_t inner = product(ArrayRef<int64_t>(shape).drop_front(dim + 1));
  std::vector<int64_t> indices; // (operand, flat index) pairs flattened, in the result's row-major order
  std::vector<size_t> operandOf;
  indices.reserve(static_cast<size_t>(product(shape)));
  operandOf.reserve(static_cast<size_t>(product(shape)));
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < in.size(); ++i) {
      const int64_t chunk = in[i]->dim(dim) * inner;
      for (int64_t j = 0; j < chunk; ++j) {
        indices.push_back(o * chunk + j);
        operandOf.push_back(i);
      }
    }
  if (first.isFloat()) {
    std::vector<float> values;
    values.reserve(indices.size());
    for (size_t n = 0; n < indices.size(); ++n)
      values.push_back(in[operandOf[n]]->floats()[indices[n]]);
    return single(Tensor::fromFloats(first.elementType(), std::move(shape), std::move(values)));
  }
  std::vector<int64_t> values;
  values.reserve(indices.size());
  for (size_t n = 0; n < indices.size(); ++n)
    values.push_back(in[operandOf[n]]->ints()[indices[n]]);
  return single(Tensor::fromInts(first.elementType(), std::move(shape), std::move(values)));
}

OpResults Interpreter::eval(tensor::PadOp op, Operands in) {
  const Tensor &source = *in[0];
  FailureOr<std::vector<int64_t>> low = mixedValues(op, in, op.getStaticLow(), op.getLow(), "low padding");
  if (failed(low))
    return failure();
  FailureOr<std::vector<int64_t>> high = mixedValues(op, in, op.getStaticHigh(), op.getHigh(), "high padding");
  if (failed(high))
    return failure();
  if (static_cast<int64_t>(low->size()) != source.rank() || high->size() != low->size())
    return opError(op) << "source (operand #0) " << source.typeString() << " has rank " << source.rank()
                       << ", the padding has " << low->size() << " low and " << high->size() << " high entries";
  // The padding value: a constant in the region or a value captured from the function body.
  Value padValue = op.getConstantPaddingValue();
  if (!padValue)
    return opError(op) << "padding value depends on the region's indices; only a constant or a value defined "
                          "outside the region is supported";
  Tensor pad;
  if (Operation *def = padValue.getDefiningOp(); def && op->isProperAncestor(def)) {
    auto constant = dyn_cast<arith::ConstantOp>(def);
    if (!constant)
      return opError(op) << "padding value is produced by '" << def->getName()
                         << "' inside the region; only arith.constant is supported there";
    OpResults value = eval(constant, {});
    if (failed(value))
      return failure();
    pad = std::move(value->front());
  } else {
    auto it = scope_ ? scope_->find(padValue) : Scope::const_iterator();
    if (!scope_ || it == scope_->end())
      return opError(op) << "padding value has no value in the interpreter's scope";
    pad = it->second;
  }
  if (pad.rank() != 0 || pad.elementType() != source.elementType())
    return opError(op) << "padding value " << pad.typeString() << " must be a scalar of the source's element type "
                       << elementTypeName(source.elementType());
  std::vector<int64_t> shape;
  std::vector<int64_t> ones(source.shape().size(), 1);
  for (int64_t d = 0; d < source.rank(); ++d) {
    if ((*low)[d] < 0 || (*high)[d] < 0)
      return opError(op) << "dimension " << d << ": negative padding (low " << (*low)[d] << ", high " << (*high)[d]
                         << ")";
    std::optional<int64_t> padded = checkedAdd((*low)[d], source.dim(d));
    if (padded)
      padded = checkedAdd(*padded, (*high)[d]);
    if (!padded)
      return opError(op) << "dimension " << d << ": low " << (*low)[d] << " + size " << source.dim(d) << " + high "
                         << (*high)[d] << " overflows int64";
    shape.push_back(*padded);
  }
  Result<Tensor> allocated = Tensor::zeros(source.elementType(), shape);
  if (!allocated.ok())
    return opError(op) << allocated.error();
  Tensor out = std::move(*allocated);
  const int64_t n = out.numElements();
  for (int64_t i = 0; i < n; ++i) {
    if (out.isFloat())
      out.floats()[i] = pad.floats()[0];
    else
      out.ints()[i] = pad.ints()[0];
  }
  scatter(out, source, boxIndices(shape, *low, source.shape(), ones));
  return single(std::move(out));
}

//===- dsa --------------------------------------------------------------------------------------------------===//

OpResults Interpreter::eval(mlir::dsa::LinearOp op, Operands in) { return kernel(op, kernels::linear(*in[0], *in[1])); }

OpResults Interpreter::eval(mlir::dsa::RmsNormOp op, Operands in) {
  float eps = static_cast<float>(op.getEpsAttr().getValueAsDouble());
  return kernel(op, kernels::rmsNorm(*in[0], *in[1], eps));
}

OpResults Interpreter::eval(mlir::dsa::PositionsOp op, Operands in) {
  FailureOr<int64_t> start = scalarInt(op, in, 0);
  FailureOr<int64_t> count = scalarInt(op, in, 1);
  if (failed(start) || failed(count))
    return failure();
  return kernel(op, kernels::positions(*start, *count, op.getStrideAttr().getInt()));
}

OpResults Interpreter::eval(mlir::dsa::ApplyRopeOp op, Operands in) {
  mlir::dsa::RopeAttr rope = op.getRope();
  RopeParams params = mlir::dsa::ropeParams(rope);
  return kernel(op, kernels::applyRope(*in[0], *in[1], params, op.getInverse()));
}

OpResults Interpreter::eval(mlir::dsa::ActQuantFp8Op op, Operands in) {
  return kernel(op, kernels::actQuantFp8(*in[0], op.getBlockSizeAttr().getInt()));
}

OpResults Interpreter::eval(mlir::dsa::RingUpdateOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 2);
  if (failed(startPos))
    return failure();
  return kernel(op, kernels::ringUpdate(*in[0], *in[1], *startPos));
}

OpResults Interpreter::eval(mlir::dsa::WindowKvOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 2);
  if (failed(startPos))
    return failure();
  return kernel(op, kernels::windowKv(*in[0], *in[1], *startPos));
}

OpResults Interpreter::eval(mlir::dsa::WindowIndicesOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 0);
  FailureOr<int64_t> count = scalarInt(op, in, 1);
  if (failed(startPos) || failed(count))
    return failure();
  return kernel(op, kernels::windowIndices(*startPos, *count, op.getWindowSizeAttr().getInt()));
}

OpResults Interpreter::eval(mlir::dsa::SparseAttnOp op, Operands in) {
  float scale = static_cast<float>(op.getScaleAttr().getValueAsDouble());
  return kernel(op, kernels::sparseAttn(*in[0], *in[1], *in[2], *in[3], scale));
}

OpResults Interpreter::eval(mlir::dsa::GroupedOutputOp op, Operands in) {
  return kernel(op, kernels::groupedOutput(*in[0], *in[1], op.getGroupsAttr().getInt()));
}

OpResults Interpreter::eval(mlir::dsa::ProbeOp op, Operands in) {
  if (probes_)
    probes_->push_back(ProbeRecord{op.getName().str(), *in[0]});
  return std::vector<Tensor>{};
}

OpResults Interpreter::eval(mlir::dsa::CompressPoolOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 4);
  if (failed(startPos))
    return failure();
  Result<kernels::CompressPoolResult> pooled =
      kernels::compressPool(*in[0], *in[1], *in[2], *in[3], *startPos, op.getRatioAttr().getInt());
  if (!pooled.ok())
    return opError(op) << "failed: " << pooled.error();
  std::vector<Tensor> results;
  results.push_back(std::move(pooled->pooled));
  results.push_back(std::move(pooled->kvState));
  results.push_back(std::move(pooled->scoreState));
  return results;
}

OpResults Interpreter::eval(mlir::dsa::Fp4QuantE8M0Op op, Operands in) {
  return kernel(op, kernels::fp4QuantE8M0(*in[0], op.getBlockSizeAttr().getInt()));
}

OpResults Interpreter::eval(mlir::dsa::Fp4QuantE4M3Op op, Operands in) {
  return kernel(op, kernels::fp4QuantE4M3(*in[0], op.getBlockSizeAttr().getInt()));
}

OpResults Interpreter::eval(mlir::dsa::CacheWriteOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 2);
  if (failed(startPos))
    return failure();
  return kernel(op, kernels::cacheWrite(*in[0], *in[1], *startPos, op.getRatioAttr().getInt()));
}

OpResults Interpreter::eval(mlir::dsa::IndexerScoresOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 3);
  if (failed(startPos))
    return failure();
  // An f32 attribute: the conversion from double is exact.
  float weightScale = static_cast<float>(op.getWeightScaleAttr().getValueAsDouble());
  return kernel(op, kernels::indexerScores(*in[0], *in[1], *in[2], *startPos, op.getRatioAttr().getInt(), weightScale));
}

OpResults Interpreter::eval(mlir::dsa::CompressVisibilityOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 1);
  if (failed(startPos))
    return failure();
  return kernel(op, kernels::compressVisibility(*in[0], *startPos, op.getRatioAttr().getInt()));
}

OpResults Interpreter::eval(mlir::dsa::SelectCandidateBlocksOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 1);
  if (failed(startPos))
    return failure();
  FailureOr<numerics::TopkTieOrder> order = tieOrderOf(op, op.getTieOrderAttr().getValue());
  if (failed(order))
    return failure();
  return kernel(op, kernels::selectCandidateBlocks(*in[0], *startPos, op.getRatioAttr().getInt(),
                                          op.getTopkBlocksAttr().getInt(), op.getBlockSizeAttr().getInt(), *order));
}

OpResults Interpreter::eval(mlir::dsa::ApplyCandidatesOp op, Operands in) {
  return kernel(op, kernels::applyCandidates(*in[0], *in[1]));
}

OpResults Interpreter::eval(mlir::dsa::IndexerTopkOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 1);
  if (failed(startPos))
    return failure();
  FailureOr<numerics::TopkTieOrder> order = tieOrderOf(op, op.getTieOrderAttr().getValue());
  if (failed(order))
    return failure();
  return kernel(op, kernels::indexerTopk(*in[0], *startPos, op.getRatioAttr().getInt(), op.getIndexTopkAttr().getInt(),
                                op.getWindowSizeAttr().getInt(), *order));
}

} // namespace

FailureOr<std::vector<Tensor>> interpretFunction(func::FuncOp fn, ArrayRef<Tensor> args, ProbeLog *probes) {
  Interpreter interpreter(probes);
  return interpreter.callFunction(fn, args);
}

FailureOr<std::vector<Tensor>> interpretFunction(func::FuncOp fn, ArrayRef<Tensor> args, ProbeLog *probes,
                                                 const ProbeOverride &override) {
  Interpreter interpreter(probes, &override);
  return interpreter.callFunction(fn, args);
}

} // namespace dsa::interp
