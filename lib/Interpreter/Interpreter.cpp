//===- Interpreter.cpp - scope, function driver and op dispatcher -------------===//
//
// StableHLO-style reference interpreter: a Scope maps SSA values to Tensors; ops of a single-block function body
// run in order; each op's operands are looked up, the op is evaluated (dsa ops by their kernel in Kernels.h,
// upstream ops here, since they only move data), and its results are checked against the op's result types and
// bound in the scope. See Interpreter.h for the supported ops and the error contract.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Interpreter/Interpreter.h"

#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Interpreter/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

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

class Interpreter {
public:
  explicit Interpreter(ProbeLog *probes) : probes_(probes) {}

  OpResults callFunction(func::FuncOp fn, ArrayRef<Tensor> args);

private:
  OpResults evalOp(Operation *op, Operands in);
  OpResults kernel(Operation *op, Result<Tensor> result);

  // Upstream ops.
  OpResults eval(func::CallOp op, Operands in);
  OpResults eval(arith::ConstantOp op, Operands in);
  OpResults eval(arith::IndexCastOp op, Operands in);
  template <typename Fn> OpResults evalIntBinary(Operation *op, Operands in, Fn fn);
  OpResults eval(tensor::DimOp op, Operands in);
  OpResults eval(tensor::CastOp op, Operands in);
  OpResults eval(tensor::ReshapeOp op, Operands in);
  OpResults eval(tensor::ExpandShapeOp op, Operands in);
  OpResults eval(tensor::CollapseShapeOp op, Operands in);
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

  ProbeLog *probes_;
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
  struct DepthGuard {
    unsigned &depth;
    ~DepthGuard() { --depth; }
  } guard{depth_};

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
  }
  return fn.emitError() << "dsa interpreter: " << fnName << " ends without func.return";
}

OpResults Interpreter::evalOp(Operation *op, Operands in) {
  return llvm::TypeSwitch<Operation *, OpResults>(op)
      .Case<func::CallOp, arith::ConstantOp, arith::IndexCastOp, tensor::DimOp, tensor::CastOp, tensor::ReshapeOp,
            tensor::ExpandShapeOp, tensor::CollapseShapeOp, mlir::dsa::LinearOp, mlir::dsa::RmsNormOp,
            mlir::dsa::PositionsOp, mlir::dsa::ApplyRopeOp, mlir::dsa::ActQuantFp8Op, mlir::dsa::RingUpdateOp,
            mlir::dsa::WindowKvOp, mlir::dsa::WindowIndicesOp, mlir::dsa::SparseAttnOp,
            mlir::dsa::GroupedOutputOp, mlir::dsa::ProbeOp>([&](auto concrete) { return eval(concrete, in); })
      .Case<arith::AddIOp>([&](arith::AddIOp add) {
        return evalIntBinary(add, in, [](uint64_t a, uint64_t b) { return a + b; });
      })
      .Case<arith::SubIOp>([&](arith::SubIOp sub) {
        return evalIntBinary(sub, in, [](uint64_t a, uint64_t b) { return a - b; });
      })
      .Case<arith::MulIOp>([&](arith::MulIOp mul) {
        return evalIntBinary(mul, in, [](uint64_t a, uint64_t b) { return a * b; });
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
  std::vector<Tensor> results;
  results.push_back(result.take());
  return results;
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

//===- dsa --------------------------------------------------------------------------------------------------===//

OpResults Interpreter::eval(mlir::dsa::LinearOp op, Operands in) { return kernel(op, linear(*in[0], *in[1])); }

OpResults Interpreter::eval(mlir::dsa::RmsNormOp op, Operands in) {
  float eps = static_cast<float>(op.getEpsAttr().getValueAsDouble());
  return kernel(op, rmsNorm(*in[0], *in[1], eps));
}

OpResults Interpreter::eval(mlir::dsa::PositionsOp op, Operands in) {
  FailureOr<int64_t> start = scalarInt(op, in, 0);
  FailureOr<int64_t> count = scalarInt(op, in, 1);
  if (failed(start) || failed(count))
    return failure();
  return kernel(op, positions(*start, *count, op.getStrideAttr().getInt()));
}

OpResults Interpreter::eval(mlir::dsa::ApplyRopeOp op, Operands in) {
  mlir::dsa::RopeAttr rope = op.getRope();
  RopeParams params;
  params.ropeDim = rope.getRopeDim();
  params.theta = rope.getTheta().getValueAsDouble();
  if (mlir::dsa::YarnAttr yarn = rope.getYarn()) {
    YarnParams y;
    y.originalSeqLen = yarn.getOriginalSeqLen();
    y.factor = yarn.getFactor().getValueAsDouble();
    y.betaFast = yarn.getBetaFast().getValueAsDouble();
    y.betaSlow = yarn.getBetaSlow().getValueAsDouble();
    params.yarn = y;
  }
  return kernel(op, applyRope(*in[0], *in[1], params, op.getInverse()));
}

OpResults Interpreter::eval(mlir::dsa::ActQuantFp8Op op, Operands in) {
  return kernel(op, actQuantFp8(*in[0], op.getBlockSizeAttr().getInt()));
}

OpResults Interpreter::eval(mlir::dsa::RingUpdateOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 2);
  if (failed(startPos))
    return failure();
  return kernel(op, ringUpdate(*in[0], *in[1], *startPos));
}

OpResults Interpreter::eval(mlir::dsa::WindowKvOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 2);
  if (failed(startPos))
    return failure();
  return kernel(op, windowKv(*in[0], *in[1], *startPos));
}

OpResults Interpreter::eval(mlir::dsa::WindowIndicesOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 0);
  FailureOr<int64_t> count = scalarInt(op, in, 1);
  if (failed(startPos) || failed(count))
    return failure();
  return kernel(op, windowIndices(*startPos, *count, op.getWindowSizeAttr().getInt()));
}

OpResults Interpreter::eval(mlir::dsa::SparseAttnOp op, Operands in) {
  float scale = static_cast<float>(op.getScaleAttr().getValueAsDouble());
  return kernel(op, sparseAttn(*in[0], *in[1], *in[2], *in[3], scale));
}

OpResults Interpreter::eval(mlir::dsa::GroupedOutputOp op, Operands in) {
  return kernel(op, groupedOutput(*in[0], *in[1], op.getGroupsAttr().getInt()));
}

OpResults Interpreter::eval(mlir::dsa::ProbeOp op, Operands in) {
  if (probes_)
    probes_->push_back(ProbeRecord{op.getName().str(), *in[0]});
  return std::vector<Tensor>{};
}

} // namespace

FailureOr<std::vector<Tensor>> interpretFunction(func::FuncOp fn, ArrayRef<Tensor> args, ProbeLog *probes) {
  Interpreter interpreter(probes);
  return interpreter.callFunction(fn, args);
}

} // namespace dsa::interp
