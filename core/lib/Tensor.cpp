//===- Tensor.cpp - the interpreter's value type ----------------------------===//

#include "dsa/Core/Tensor.h"

#include "dsa/Numerics/BF16.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <unistd.h>

namespace dsa {

namespace {

/// Contract violations of the Tensor factories are programming errors of the caller (the kernels and the
/// interpreter validate user-visible operands before building tensors): report and stop instead of producing
/// a tensor whose storage does not match its shape.
[[noreturn]] void fatal(const std::string &message) {
  std::fprintf(stderr, "dsa::Tensor: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t checkedNumElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      fatal("negative dimension in shape " + shapeString(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      fatal("element count of shape " + shapeString(shape) + " overflows int64");
    n *= d;
  }
  return n;
}

std::atomic<int64_t> gTensorByteLimit{0}; // 0: the default

int64_t defaultTensorByteLimit() {
  if (const char *env = std::getenv("DSA_MAX_TENSOR_BYTES")) {
    char *end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end != env && *end == '\0' && v > 0)
      return v;
  }
  const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageSize > 0 && pages <= std::numeric_limits<int64_t>::max() / pageSize)
    return static_cast<int64_t>(pages) * pageSize;
  return std::numeric_limits<int64_t>::max();
}

} // namespace

int64_t Tensor::tensorByteLimit() {
  const int64_t set = gTensorByteLimit.load();
  return set > 0 ? set : defaultTensorByteLimit();
}

void Tensor::setTensorByteLimit(int64_t bytes) { gTensorByteLimit.store(bytes > 0 ? bytes : 0); }

Result<Tensor> Tensor::zeros(ElementType type, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return makeError("tensor shape " + shapeString(shape) + " has a negative dimension");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return makeError("tensor shape " + shapeString(shape) + ": the element count overflows int64");
    n *= d;
  }
  const int64_t elementBytes = isFloatType(type) ? 4 : 8;
  if (n > std::numeric_limits<int64_t>::max() / elementBytes)
    return makeError("tensor shape " + shapeString(shape) + ": the byte size overflows int64");
  const int64_t limit = tensorByteLimit();
  if (n * elementBytes > limit)
    return makeError("tensor shape " + shapeString(shape) + " (" + elementTypeName(type) + ") needs " +
                     std::to_string(n * elementBytes) + " bytes, more than the limit of " + std::to_string(limit) +
                     " bytes (DSA_MAX_TENSOR_BYTES)");
  try {
    return Tensor(type, shape);
  } catch (const std::bad_alloc &) {
    return makeError("tensor shape " + shapeString(shape) + ": cannot allocate " + std::to_string(n * elementBytes) +
                     " bytes");
  }
}

const char *elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::BF16:
    return "bf16";
  case ElementType::F32:
    return "f32";
  case ElementType::I1:
    return "i1";
  case ElementType::I32:
    return "i32";
  case ElementType::I64:
    return "i64";
  case ElementType::Index:
    return "index";
  }
  return "<invalid element type>";
}

bool isFloatType(ElementType type) { return type == ElementType::BF16 || type == ElementType::F32; }

Tensor::Tensor(ElementType type, std::vector<int64_t> shape) : type_(type), shape_(std::move(shape)) {
  int64_t n = checkedNumElements(shape_);
  if (isFloatType(type_))
    floats_.assign(static_cast<size_t>(n), 0.0f);
  else
    ints_.assign(static_cast<size_t>(n), 0);
}

Tensor Tensor::scalarI64(int64_t value) {
  Tensor t(ElementType::I64, {});
  t.ints_[0] = value;
  return t;
}

Tensor Tensor::scalarIndex(int64_t value) {
  Tensor t(ElementType::Index, {});
  t.ints_[0] = value;
  return t;
}

Tensor Tensor::fromFloats(ElementType type, std::vector<int64_t> shape, std::vector<float> values) {
  if (!isFloatType(type))
    fatal(std::string("fromFloats needs a float element type, got ") + elementTypeName(type));
  int64_t n = checkedNumElements(shape);
  if (static_cast<int64_t>(values.size()) != n)
    fatal("fromFloats: " + std::to_string(values.size()) + " values for shape " + shapeString(shape) + " (" +
          std::to_string(n) + " elements)");
  Tensor t;
  t.type_ = type;
  t.shape_ = std::move(shape);
  t.floats_ = std::move(values);
  if (type == ElementType::BF16)
    for (float &v : t.floats_)
      v = numerics::roundBf16(v);
  return t;
}

Tensor Tensor::fromInts(ElementType type, std::vector<int64_t> shape, std::vector<int64_t> values) {
  if (isFloatType(type))
    fatal(std::string("fromInts needs an integer element type, got ") + elementTypeName(type));
  int64_t n = checkedNumElements(shape);
  if (static_cast<int64_t>(values.size()) != n)
    fatal("fromInts: " + std::to_string(values.size()) + " values for shape " + shapeString(shape) + " (" +
          std::to_string(n) + " elements)");
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t v = values[i];
    if (type == ElementType::I1 && v != 0 && v != 1)
      fatal("fromInts: i1 element " + std::to_string(i) + " is " + std::to_string(v) + ", expected 0 or 1");
    if (type == ElementType::I32 &&
        (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()))
      fatal("fromInts: i32 element " + std::to_string(i) + " is " + std::to_string(v) + ", out of i32 range");
  }
  Tensor t;
  t.type_ = type;
  t.shape_ = std::move(shape);
  t.ints_ = std::move(values);
  return t;
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape_)
    n *= d;
  return n;
}

int64_t Tensor::scalarInt() const {
  if (isFloat() || ints_.empty())
    fatal("scalarInt() of " + typeString() + " (needs an integer tensor with an element)");
  return ints_[0];
}

double Tensor::at(int64_t flat) const {
  const int64_t stored = static_cast<int64_t>(isFloat() ? floats_.size() : ints_.size());
  if (flat < 0 || flat >= stored)
    fatal("at(" + std::to_string(flat) + ") out of range for " + typeString());
  return isFloat() ? static_cast<double>(floats_[static_cast<size_t>(flat)])
                   : static_cast<double>(ints_[static_cast<size_t>(flat)]);
}

std::string Tensor::typeString() const {
  std::string s = "tensor<";
  for (int64_t d : shape_)
    s += std::to_string(d) + "x";
  return s + elementTypeName(type_) + ">";
}

} // namespace dsa
