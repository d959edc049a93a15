//===- Values.cpp - host values in the compiled code's memory format (MLIR-free) ---===//
#include "dsa/Runtime/Host/Values.h"
#include "dsa/Runtime/Host/MemoryFormat.h"

#include "dsa/Numerics/BF16.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace dsa::runtime {

using dsa::ElementType;
using dsa::Tensor;

float loadFloat(ElementType t, const uint8_t *src) {
  if (t == ElementType::BF16) {
    uint16_t bits;
    std::memcpy(&bits, src, 2);
    return numerics::bf16BitsToF32(bits);
  }
  float v;
  std::memcpy(&v, src, 4);
  return v;
}

int64_t loadInt(ElementType t, const uint8_t *src) {
  switch (t) {
  case ElementType::I1:
    return (*src & 1) ? 1 : 0;
  case ElementType::I32: {
    int32_t v;
    std::memcpy(&v, src, 4);
    return v;
  }
  default: {
    int64_t v;
    std::memcpy(&v, src, 8);
    return v;
  }
  }
}

Status checkValueKind(const ValueKind &k, ElementType type, const std::vector<int64_t> &shape,
                      const std::string &what) {
  if (type != k.elem)
    return makeError(what + " has element type " + dsa::elementTypeName(type) + ", expected " +
                     dsa::elementTypeName(k.elem) + " (" + k.typeString + ")");
  if (!k.isTensor) {
    if (!shape.empty())
      return makeError(what + " has shape " + shapeString(shape) + ", expected a scalar (" + k.typeString + ")");
    return Status::success();
  }
  if (shape.size() != k.shape.size())
    return makeError(what + " has rank " + std::to_string(shape.size()) + " (shape " + shapeString(shape) +
                     "), expected " + k.typeString);
  for (size_t d = 0; d < k.shape.size(); ++d)
    if (k.shape[d] >= 0 && shape[d] != k.shape[d])
      return makeError(what + " has shape " + shapeString(shape) + ", expected " + k.typeString + " (dimension " +
                       std::to_string(d) + ")");
  return Status::success();
}

//===----------------------------------------------------------------------------------------------------------===//
// MemoryFormat.h
//===----------------------------------------------------------------------------------------------------------===//

int64_t elementBytes(ElementType t) {
  switch (t) {
  case ElementType::BF16:
    return 2;
  case ElementType::F32:
  case ElementType::I32:
    return 4;
  case ElementType::I1:
    return 1;
  case ElementType::I64:
  case ElementType::Index:
    return 8;
  }
  return 8;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s + "]";
}

/// Writes element `i` of `t` to `dst` in the memory format of its element type.
void storeElement(const Tensor &t, int64_t i, uint8_t *dst) {
  switch (t.elementType()) {
  case ElementType::BF16: {
    uint16_t bits = numerics::f32ToBf16Bits(t.floats()[i]);
    std::memcpy(dst, &bits, 2);
    return;
  }
  case ElementType::F32:
    std::memcpy(dst, &t.floats()[i], 4);
    return;
  case ElementType::I1:
    *dst = t.ints()[i] ? 1 : 0;
    return;
  case ElementType::I32: {
    int32_t v = static_cast<int32_t>(t.ints()[i]);
    std::memcpy(dst, &v, 4);
    return;
  }
  case ElementType::I64:
  case ElementType::Index:
    std::memcpy(dst, &t.ints()[i], 8);
    return;
  }
}

void loadElement(ElementType type, const uint8_t *src, Tensor &t, int64_t i) {
  if (type == ElementType::BF16 || type == ElementType::F32)
    t.floats()[i] = loadFloat(type, src);
  else
    t.ints()[i] = loadInt(type, src);
}

size_t alignUp(size_t offset, size_t align) { return (offset + align - 1) & ~(align - 1); }

/// Size and alignment of a value of `kind` in the LLVM result struct.
std::pair<size_t, size_t> fieldLayout(const ValueKind &kind) {
  if (kind.isTensor)
    return {8 * (3 + 2 * kind.shape.size()), 8};
  size_t bytes = static_cast<size_t>(elementBytes(kind.elem));
  return {bytes, bytes};
}


/// Row-major strides of `shape`.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// malloc'ed memory for `bytes` (at least 8), freed with the last owner.
std::shared_ptr<void> allocateBytes(int64_t bytes) {
  void *p = std::calloc(static_cast<size_t>(std::max<int64_t>(bytes, 8)), 1);
  if (!p)
    std::abort();
  return std::shared_ptr<void>(p, [](void *q) { std::free(q); });
}

Result<ElementType> elementTypeFromName(const std::string &text) {
  for (ElementType t : {ElementType::BF16, ElementType::F32, ElementType::I1, ElementType::I32, ElementType::I64,
                        ElementType::Index})
    if (text == dsa::elementTypeName(t))
      return t;
  return makeError("unknown element type '" + text + "' (expected bf16, f32, i1, i32, i64 or index)");
}

std::shared_ptr<HostBuffer> HostBuffer::mutableFromTensor(const Tensor &t) {
  auto buffer = std::shared_ptr<HostBuffer>(new HostBuffer());
  buffer->type_ = t.elementType();
  buffer->shape_ = t.shape();
  const int64_t n = t.numElements(), eb = elementBytes(t.elementType());
  buffer->owner_ = allocateBytes(n * eb);
  buffer->data_ = buffer->owner_.get();
  uint8_t *data = static_cast<uint8_t *>(buffer->data_);
  for (int64_t e = 0; e < n; ++e)
    storeElement(t, e, data + e * eb);
  return buffer;
}

std::shared_ptr<const HostBuffer> HostBuffer::fromTensor(const Tensor &t) { return mutableFromTensor(t); }

std::shared_ptr<HostBuffer> HostBuffer::copyOf(const HostBuffer &b) {
  auto buffer = std::shared_ptr<HostBuffer>(new HostBuffer());
  buffer->type_ = b.type_;
  buffer->shape_ = b.shape_;
  const int64_t bytes = b.numElements() * elementBytes(b.type_);
  buffer->owner_ = allocateBytes(bytes);
  buffer->data_ = buffer->owner_.get();
  if (bytes > 0)
    std::memcpy(buffer->data_, b.data_, static_cast<size_t>(bytes));
  return buffer;
}

std::shared_ptr<HostBuffer> HostBuffer::adopt(ElementType type, std::vector<int64_t> shape, std::shared_ptr<void> owner,
                                            void *data) {
  auto buffer = std::shared_ptr<HostBuffer>(new HostBuffer());
  buffer->type_ = type;
  buffer->shape_ = std::move(shape);
  buffer->owner_ = std::move(owner);
  buffer->data_ = data;
  return buffer;
}

int64_t HostBuffer::numElements() const { return elementCount(shape_); }

Tensor HostBuffer::toTensor() const {
  Tensor out(type_, shape_);
  const int64_t n = out.numElements(), eb = elementBytes(type_);
  const uint8_t *src = static_cast<const uint8_t *>(data_);
  if (out.isFloat())
    for (int64_t e = 0; e < n; ++e)
      out.floats()[e] = loadFloat(type_, src + e * eb);
  else
    for (int64_t e = 0; e < n; ++e)
      out.ints()[e] = loadInt(type_, src + e * eb);
  return out;
}

Tensor HostValue::toTensor() const {
  if (!isBuffer_)
    return tensor_;
  if (!buffer_)
    return Tensor(ElementType::F32, {0});
  return buffer_->toTensor();
}

} // namespace dsa::runtime
