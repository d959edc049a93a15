//===- Conversion.cpp - MLIR types/attributes <-> interpreter Tensors ---------===//
//
// The mapping between MLIR's builtin types and attributes and ::dsa::Tensor (see Interpreter.h).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Interpreter/Interpreter.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace dsa::interp {

namespace {
std::string typeToString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

std::string shapeToString(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += ShapedType::isDynamic(shape[i]) ? std::string("?") : std::to_string(shape[i]);
  }
  return text + "]";
}
} // namespace

Result<ElementType> elementTypeFromMlir(Type type) {
  if (!type)
    return makeError("null element type");
  if (type.isBF16())
    return ElementType::BF16;
  if (type.isF32())
    return ElementType::F32;
  if (type.isSignlessInteger(1))
    return ElementType::I1;
  if (type.isSignlessInteger(32))
    return ElementType::I32;
  if (type.isSignlessInteger(64))
    return ElementType::I64;
  if (type.isIndex())
    return ElementType::Index;
  return makeError("unsupported element type '" + typeToString(type) +
                   "' (the interpreter handles bf16, f32, i1, i32, i64 and index)");
}

Result<Tensor> tensorFromAttr(DenseElementsAttr attr) {
  if (!attr)
    return makeError("null dense elements attribute");
  ShapedType shapedType = attr.getType();
  Result<ElementType> elementType = elementTypeFromMlir(shapedType.getElementType());
  if (!elementType.ok())
    return makeError("dense constant of type '" + typeToString(shapedType) + "': " + elementType.error());
  std::vector<int64_t> shape(shapedType.getShape().begin(), shapedType.getShape().end());
  const size_t count = static_cast<size_t>(attr.getNumElements());

  if (isFloatType(*elementType)) {
    std::vector<float> values;
    values.reserve(count);
    for (APFloat value : attr.getValues<APFloat>()) {
      bool losesInfo = false;
      value.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &losesInfo);
      values.push_back(value.convertToFloat());
    }
    return Tensor::fromFloats(*elementType, std::move(shape), std::move(values));
  }

  std::vector<int64_t> values;
  values.reserve(count);
  const bool isBool = *elementType == ElementType::I1;
  for (const APInt &value : attr.getValues<APInt>())
    values.push_back(isBool ? static_cast<int64_t>(value.getZExtValue()) : value.getSExtValue());
  return Tensor::fromInts(*elementType, std::move(shape), std::move(values));
}

Status checkTensorMatchesType(const Tensor &value, Type type, const std::string &what) {
  auto mismatch = [&](const std::string &detail) {
    return makeError(what + ": " + detail + " (value " + value.typeString() + ", expected type '" +
                     typeToString(type) + "')");
  };
  Type elementMlirType = type;
  if (auto shaped = dyn_cast<TensorType>(type))
    elementMlirType = shaped.getElementType();
  else if (!type.isIntOrIndexOrFloat())
    return makeError(what + ": unsupported type '" + typeToString(type) + "'");

  Result<ElementType> expected = elementTypeFromMlir(elementMlirType);
  if (!expected.ok())
    return makeError(what + ": " + expected.error());
  if (value.elementType() != *expected)
    return mismatch(std::string("element type is ") + elementTypeName(value.elementType()) + ", expected " +
                    elementTypeName(*expected));

  if (isa<UnrankedTensorType>(type))
    return Status::success();
  ArrayRef<int64_t> expectedShape;
  if (auto ranked = dyn_cast<RankedTensorType>(type))
    expectedShape = ranked.getShape();
  if (value.rank() != static_cast<int64_t>(expectedShape.size()))
    return mismatch("rank is " + std::to_string(value.rank()) + ", expected " +
                    std::to_string(expectedShape.size()));
  for (size_t d = 0; d < expectedShape.size(); ++d) {
    if (ShapedType::isDynamic(expectedShape[d]))
      continue;
    if (value.dim(static_cast<int64_t>(d)) != expectedShape[d])
      return mismatch("shape is " + shapeToString(value.shape()) + ", expected " + shapeToString(expectedShape));
  }
  return Status::success();
}

} // namespace dsa::interp
