//===- UpstreamOps.cpp - the interpreter's evaluation of upstream ops (func, scf, arith, tensor) ---===//
//
// The upstream ops the decomposed dsa IR uses between the primitives: func.call, scf.for, arith constants / index
// casts / integer arithmetic / comparisons / selects / bf16 <-> f32 casts, tensor element access (extract, insert) and
// data movement (dim, cast, reshape, expand/collapse_shape, empty, extract/insert_slice, concat, pad). Semantics are
// upstream's; values are core's Tensors. The dsa ops and the dispatcher are in Interpreter.cpp (Evaluator.h).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "Evaluator.h"

using namespace mlir;

namespace dsa::interp::detail {

//===- func / scf / arith / tensor ----------------------------------------------------------------------------===//

OpResults Evaluator::eval(func::CallOp op, Operands in) {
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

OpResults Evaluator::eval(scf::ForOp op, Operands in) {
  // Bounds and step are integer scalars of the induction variable's type (index, i64, i32, ...), compared signed
  // (or unsigned with `unsigned`, the bits read at the type's width). The trip count is computed up front, so the
  // induction variable never steps past the upper bound (no overflow near the type's maximum).
  FailureOr<int64_t> lower = scalarInt(op, in, 0);
  FailureOr<int64_t> upper = scalarInt(op, in, 1);
  FailureOr<int64_t> stepStored = scalarInt(op, in, 2);
  if (failed(lower) || failed(upper) || failed(stepStored))
    return failure();
  const ElementType type = in[0]->elementType();
  const int64_t step = signedValue(*stepStored, type);
  if (step <= 0)
    return opError(op) << "step (operand #2) must be positive, got " << step;
  const bool isUnsigned = op.getUnsignedCmp();
  uint64_t first = 0, span = 0;
  if (isUnsigned) {
    first = unsignedValue(*lower, type);
    uint64_t last = unsignedValue(*upper, type);
    span = last > first ? last - first : 0;
  } else {
    int64_t lo = signedValue(*lower, type), hi = signedValue(*upper, type);
    first = static_cast<uint64_t>(lo);
    span = hi > lo ? static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) : 0; // < 2^64: exact in uint64
  }
  const uint64_t ustep = static_cast<uint64_t>(step);
  const uint64_t trips = span / ustep + (span % ustep != 0);

  if (loopNesting_ >= kMaxLoopNesting)
    return opError(op) << "loop nesting exceeds " << kMaxLoopNesting;
  ++loopNesting_;
  struct NestingGuard {
    unsigned &nesting;
    ~NestingGuard() { --nesting; }
  } guard{loopNesting_};

  Block &body = *op.getBody();
  std::vector<Tensor> iter;
  iter.reserve(in.size() - 3);
  for (const Tensor *init : in.drop_front(3))
    iter.push_back(*init);
  const int64_t limit = loopIterationLimit();
  for (uint64_t k = 0; k < trips; ++k) {
    if (limit >= 0 && ++loopIterations_ > limit)
      return opError(op) << "more than " << limit << " scf.for iterations in one run (the limit set by "
                         << "dsa::interp::setLoopIterationLimit)";
    // A fresh frame per iteration: the body's values of one iteration are gone before the next begins; the
    // enclosing frame's values (the function's, or an outer loop body's) are read through the parent.
    Frame frame;
    frame.parent = frame_;
    const int64_t iv = wrapTo(first + k * ustep, type);
    frame.values[op.getInductionVar()] = Tensor::fromInts(type, {}, {iv});
    for (auto [i, arg] : llvm::enumerate(op.getRegionIterArgs())) {
      Status check = checkTensorMatchesType(iter[i], arg.getType(), "iter_arg #" + std::to_string(i));
      if (!check.ok())
        return opError(op) << "iteration " << k << ": " << check.error();
      frame.values[arg] = std::move(iter[i]);
    }
    OpResults next = runBlock(body, frame);
    if (failed(next)) {
      if (traceFrames_++ < kMaxTraceFrames)
        op.emitRemark() << "dsa interpreter: in iteration " << k << " of this loop (induction variable "
                        << signedValue(iv, type) << ")";
      return failure();
    }
    if (next->size() != iter.size())
      return opError(op) << "body yields " << next->size() << " values, the loop carries " << iter.size();
    iter = std::move(*next);
  }
  return iter; // zero trips: the inits
}

OpResults Evaluator::eval(arith::ConstantOp op, Operands) {
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

OpResults Evaluator::eval(arith::IndexCastOp op, Operands in) {
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



OpResults Evaluator::eval(arith::CmpIOp op, Operands in) {
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

OpResults Evaluator::eval(arith::SelectOp op, Operands in) {
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

OpResults Evaluator::evalFloatCast(Operation *op, Operands in) {
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

OpResults Evaluator::eval(arith::ExtFOp op, Operands in) { return evalFloatCast(op, in); }

OpResults Evaluator::eval(arith::TruncFOp op, Operands in) {
  std::optional<arith::RoundingMode> mode = op.getRoundingmode();
  if (mode && *mode != arith::RoundingMode::to_nearest_even)
    return opError(op) << "rounding mode '" << arith::stringifyRoundingMode(*mode)
                       << "' is not supported (only to_nearest_even, the default)";
  return evalFloatCast(op, in);
}

OpResults Evaluator::eval(tensor::DimOp op, Operands in) {
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

OpResults Evaluator::eval(tensor::CastOp, Operands in) {
  // The result-type check after the op rejects a cast to an incompatible static shape.
  std::vector<Tensor> results;
  results.push_back(*in[0]);
  return results;
}

OpResults Evaluator::eval(tensor::ReshapeOp op, Operands in) {
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

OpResults Evaluator::eval(tensor::ExpandShapeOp op, Operands in) {
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

OpResults Evaluator::eval(tensor::CollapseShapeOp op, Operands in) {
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

OpResults Evaluator::eval(tensor::EmptyOp op, Operands in) {
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

/// The row-major flat index of the element of `tensor` (operand #`tensorOperand`) at the integer scalar operands
/// from `first` on (one per dimension); an index outside its dimension is an error naming it.
static FailureOr<int64_t> elementIndex(Operation *op, Operands in, unsigned tensorOperand, unsigned first) {
  const Tensor &tensor = *in[tensorOperand];
  const size_t rank = static_cast<size_t>(tensor.rank());
  const std::string what = (tensorOperand == 0 ? "source" : "dest") + std::string(" (operand #") +
                           std::to_string(tensorOperand) + ") " + tensor.typeString();
  if (in.size() - first != rank)
    return opError(op) << "has " << in.size() - first << " indices for the " << what << " of rank " << rank;
  std::vector<int64_t> indices;
  for (size_t d = 0; d < rank; ++d) {
    FailureOr<int64_t> index = scalarInt(op, in, static_cast<unsigned>(first + d));
    if (failed(index))
      return failure();
    indices.push_back(*index);
  }
  int64_t flat = 0;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t size = tensor.dim(static_cast<int64_t>(d));
    if (indices[d] < 0 || indices[d] >= size)
      return opError(op) << "index " << shapeText(indices) << " is out of bounds of the " << what << ": dimension "
                         << d << ": index " << indices[d] << " is not in [0, " << size << ")";
    flat = flat * size + indices[d];
  }
  return flat;
}

OpResults Evaluator::eval(tensor::ExtractOp op, Operands in) {
  const Tensor &source = *in[0];
  FailureOr<int64_t> flat = elementIndex(op, in, 0, 1);
  if (failed(flat))
    return failure();
  if (source.isFloat())
    return single(Tensor::fromFloats(source.elementType(), {}, {source.floats()[*flat]}));
  return single(Tensor::fromInts(source.elementType(), {}, {source.ints()[*flat]}));
}

OpResults Evaluator::eval(tensor::InsertOp op, Operands in) {
  const Tensor &scalar = *in[0];
  const Tensor &dest = *in[1];
  if (scalar.rank() != 0 || scalar.elementType() != dest.elementType())
    return opError(op) << "scalar (operand #0) " << scalar.typeString()
                       << " must be a scalar of the dest's element type " << elementTypeName(dest.elementType());
  FailureOr<int64_t> flat = elementIndex(op, in, 1, 2);
  if (failed(flat))
    return failure();
  Tensor out = dest;
  if (out.isFloat())
    out.floats()[*flat] = scalar.floats()[0];
  else
    out.ints()[*flat] = scalar.ints()[0];
  return single(std::move(out));
}

OpResults Evaluator::eval(tensor::ExtractSliceOp op, Operands in) {
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
  return single(gatherBox(source, *offsets, *sizes, *strides, std::move(shape)));
}

OpResults Evaluator::eval(tensor::InsertSliceOp op, Operands in) {
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

OpResults Evaluator::eval(tensor::ConcatOp op, Operands in) {
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

OpResults Evaluator::eval(tensor::PadOp op, Operands in) {
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
    const Tensor *captured = frame_ ? frame_->lookup(padValue) : nullptr;
    if (!captured)
      return opError(op) << "padding value has no value in the interpreter's scope";
    pad = *captured;
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


} // namespace dsa::interp::detail
