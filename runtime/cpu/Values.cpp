//===- Values.cpp - Tensors <-> memref descriptors, packed calls (MLIR-free) ---===//
#include "dsa/Runtime/CPU/Values.h"
#include "dsa/Runtime/CPU/MemoryFormat.h"

#include "dsa/Backend/CPU/RuntimeErrors.h"
#include "dsa/Numerics/BF16.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

namespace dsa::cpu {

namespace {

using interp::ElementType;
using interp::Tensor;

/// The first failed run-time check of the current call on this thread (0 = none).
thread_local int32_t tFirstFailure = 0;

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

} // namespace

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


extern "C" void dsaCpuRecordFailure(int32_t code) {
  if (tFirstFailure == 0)
    tFirstFailure = code;
}

Result<ElementType> elementTypeFromName(const std::string &text) {
  for (ElementType t : {ElementType::BF16, ElementType::F32, ElementType::I1, ElementType::I32, ElementType::I64,
                        ElementType::Index})
    if (text == interp::elementTypeName(t))
      return t;
  return makeError("unknown element type '" + text + "' (expected bf16, f32, i1, i32, i64 or index)");
}

namespace {

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

int64_t countOf(const std::vector<int64_t> &shape) {
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

} // namespace

std::shared_ptr<CPUBuffer> CPUBuffer::mutableFromTensor(const Tensor &t) {
  auto buffer = std::shared_ptr<CPUBuffer>(new CPUBuffer());
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

std::shared_ptr<const CPUBuffer> CPUBuffer::fromTensor(const Tensor &t) { return mutableFromTensor(t); }

std::shared_ptr<CPUBuffer> CPUBuffer::copyOf(const CPUBuffer &b) {
  auto buffer = std::shared_ptr<CPUBuffer>(new CPUBuffer());
  buffer->type_ = b.type_;
  buffer->shape_ = b.shape_;
  const int64_t bytes = b.numElements() * elementBytes(b.type_);
  buffer->owner_ = allocateBytes(bytes);
  buffer->data_ = buffer->owner_.get();
  if (bytes > 0)
    std::memcpy(buffer->data_, b.data_, static_cast<size_t>(bytes));
  return buffer;
}

std::shared_ptr<CPUBuffer> CPUBuffer::adopt(ElementType type, std::vector<int64_t> shape, std::shared_ptr<void> owner,
                                            void *data) {
  auto buffer = std::shared_ptr<CPUBuffer>(new CPUBuffer());
  buffer->type_ = type;
  buffer->shape_ = std::move(shape);
  buffer->owner_ = std::move(owner);
  buffer->data_ = data;
  return buffer;
}

int64_t CPUBuffer::numElements() const { return countOf(shape_); }

Tensor CPUBuffer::toTensor() const {
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

Tensor CPUValue::toTensor() const {
  if (!isBuffer_)
    return tensor_;
  if (!buffer_)
    return Tensor(ElementType::F32, {0});
  return buffer_->toTensor();
}

Result<std::vector<CPUValue>> invokePackedValues(const FunctionSignature &sig, PackedFunction fn,
                                                 const std::vector<CPUValue> &args,
                                                 std::vector<NamedTensor> *probes) {
  const std::string where = "cpu backend: @" + sig.name + ": ";
  if (!fn)
    return makeError(where + "no compiled entry point");
  if (args.size() != sig.args.size())
    return makeError(where + std::to_string(args.size()) + " arguments given, the function takes " +
                     std::to_string(sig.args.size()));

  // Writable arguments and in-place results.
  std::vector<bool> writable(args.size(), false);
  for (int64_t a : sig.writableArgs) {
    if (a < 0 || a >= static_cast<int64_t>(args.size()) || !sig.args[static_cast<size_t>(a)].isTensor)
      return makeError(where + "writable argument #" + std::to_string(a) + " is not a tensor argument");
    writable[static_cast<size_t>(a)] = true;
  }
  std::vector<int64_t> inPlaceArg(sig.results.size(), -1);
  for (const StateBinding &b : sig.inPlace) {
    if (b.arg < 0 || b.arg >= static_cast<int64_t>(args.size()) || b.result < 0 ||
        b.result >= static_cast<int64_t>(sig.results.size()) || !sig.args[static_cast<size_t>(b.arg)].isTensor)
      return makeError(where + "in-place result #" + std::to_string(b.result) + " / argument #" +
                       std::to_string(b.arg) + " outside the signature");
    inPlaceArg[static_cast<size_t>(b.result)] = b.arg;
  }

  // Argument checks, then the buffers and the expanded LLVM arguments (each slot is one 8-byte word).
  size_t numSlots = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const ValueKind &k = sig.args[i];
    const std::string what = "argument #" + std::to_string(i);
    const Tensor *t = args[i].tensor();
    const CPUBuffer *b = args[i].buffer();
    if (!t && !b)
      return makeError(where + what + " is a null CPUBuffer");
    const ElementType type = t ? t->elementType() : b->elementType();
    const std::vector<int64_t> &shape = t ? t->shape() : b->shape();
    if (type != k.elem)
      return makeError(where + what + " has element type " + interp::elementTypeName(type) + ", expected " +
                       interp::elementTypeName(k.elem) + " (" + k.typeString + ")");
    if (!k.isTensor) {
      if (!shape.empty() || !t)
        return makeError(where + what + " has shape " + shapeString(shape) + ", expected a scalar (" +
                         k.typeString + ")");
      numSlots += 1;
      continue;
    }
    if (shape.size() != k.shape.size())
      return makeError(where + what + " has rank " + std::to_string(shape.size()) + " (shape " + shapeString(shape) +
                       "), expected " + k.typeString);
    for (size_t d = 0; d < k.shape.size(); ++d)
      if (k.shape[d] >= 0 && shape[d] != k.shape[d])
        return makeError(where + what + " has shape " + shapeString(shape) + ", expected " + k.typeString +
                         " (dimension " + std::to_string(d) + ")");
    numSlots += 3 + 2 * k.shape.size();
  }
  for (size_t i = 0; i < args.size(); ++i)
    for (size_t j = i + 1; j < args.size(); ++j)
      if (writable[i] && writable[j] && args[i].isInPlace() && args[i].inPlaceBuffer() == args[j].inPlaceBuffer())
        return makeError(where + "arguments #" + std::to_string(i) + " and #" + std::to_string(j) +
                         " are one in-place buffer, and the function updates both");

  // Per argument: the buffer the compiled code sees. A writable argument gets the caller's inPlace buffer or a
  // fresh copy; a read-only one the caller's buffer or this call's conversion of a Tensor.
  std::vector<std::shared_ptr<const CPUBuffer>> converted(args.size());
  std::vector<std::shared_ptr<CPUBuffer>> writableBuffers(args.size());
  std::vector<int64_t> slots(numSlots);
  std::vector<void *> packed;
  std::set<const void *> argAllocations;
  size_t slot = 0;
  auto push = [&](int64_t v) {
    slots[slot] = v;
    packed.push_back(&slots[slot]);
    ++slot;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const ValueKind &k = sig.args[i];
    if (!k.isTensor) {
      int64_t word = 0;
      storeElement(*args[i].tensor(), 0, reinterpret_cast<uint8_t *>(&word));
      push(word);
      continue;
    }
    const CPUBuffer *b = args[i].buffer();
    if (writable[i]) {
      if (args[i].isInPlace())
        writableBuffers[i] = args[i].inPlaceBuffer();
      else
        writableBuffers[i] = b ? CPUBuffer::copyOf(*b) : CPUBuffer::mutableFromTensor(*args[i].tensor());
      b = writableBuffers[i].get();
    } else if (!b) {
      converted[i] = CPUBuffer::fromTensor(*args[i].tensor());
      b = converted[i].get();
    }
    const void *data = b->data();
    argAllocations.insert(data);
    const int64_t address = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
    push(address); // allocated
    push(address); // aligned
    push(0);       // offset
    const std::vector<int64_t> &shape = b->shape();
    for (int64_t d : shape)
      push(d);
    for (int64_t s : rowMajorStrides(shape))
      push(s);
  }

  // The result struct: the results the entry returns (not the in-place ones).
  std::vector<size_t> returned, offsets;
  size_t bytes = 0, maxAlign = 1;
  for (size_t r = 0; r < sig.results.size(); ++r) {
    if (inPlaceArg[r] >= 0)
      continue;
    auto [size, align] = fieldLayout(sig.results[r]);
    bytes = alignUp(bytes, align);
    returned.push_back(r);
    offsets.push_back(bytes);
    bytes += size;
    maxAlign = std::max(maxAlign, align);
  }
  std::vector<int64_t> resultStorage(alignUp(bytes, maxAlign) / 8 + 1);
  if (!returned.empty())
    packed.push_back(resultStorage.data());

  tFirstFailure = 0;
  fn(packed.data());
  const int32_t failure = tFirstFailure;
  tFirstFailure = 0;

  // Adopt the returned buffers (also after a failed check, so that they are freed). Result buffers belong to the
  // caller (the pipeline's ownership-based deallocation returns owned buffers); results sharing an allocation (a
  // value returned twice) share its owner, so it is freed once.
  const uint8_t *base = reinterpret_cast<const uint8_t *>(resultStorage.data());
  std::vector<CPUValue> results(sig.results.size(), CPUValue(Tensor()));
  std::map<void *, std::shared_ptr<void>> owners;
  for (size_t j = 0; j < returned.size(); ++j) {
    const size_t r = returned[j];
    const ValueKind &k = sig.results[r];
    const uint8_t *field = base + offsets[j];
    if (!k.isTensor) {
      if (interp::isFloatType(k.elem))
        results[r] = Tensor::fromFloats(k.elem, {}, {loadFloat(k.elem, field)});
      else
        results[r] = Tensor::fromInts(k.elem, {}, {loadInt(k.elem, field)});
      continue;
    }
    const size_t rank = k.shape.size();
    int64_t words[3 + 2 * 16];
    std::memcpy(words, field, 8 * (3 + 2 * rank));
    void *allocated = reinterpret_cast<void *>(static_cast<intptr_t>(words[0]));
    uint8_t *aligned = reinterpret_cast<uint8_t *>(static_cast<intptr_t>(words[1]));
    const int64_t offset = words[2];
    std::vector<int64_t> shape(words + 3, words + 3 + rank);
    std::vector<int64_t> strides(words + 3 + rank, words + 3 + 2 * rank);
    const int64_t eb = elementBytes(k.elem);
    const int64_t n = countOf(shape);
    const bool fromArgument = allocated && argAllocations.count(allocated);
    std::shared_ptr<void> owner;
    if (allocated && !fromArgument) {
      auto it = owners.find(allocated);
      if (it == owners.end())
        it = owners.emplace(allocated, std::shared_ptr<void>(allocated, [](void *q) { std::free(q); })).first;
      owner = it->second;
    }
    bool contiguous = true;
    const std::vector<int64_t> dense = rowMajorStrides(shape);
    for (size_t d = 0; d < rank; ++d)
      if (shape[d] > 1 && strides[d] != dense[d])
        contiguous = false;
    if (owner && contiguous) {
      results[r] = CPUValue::inPlace(CPUBuffer::adopt(k.elem, shape, owner, aligned + offset * eb));
      continue;
    }
    // A view of an argument, or strided: copy it into a buffer of the caller's (compact).
    std::shared_ptr<void> fresh = allocateBytes(n * eb);
    uint8_t *dst = static_cast<uint8_t *>(fresh.get());
    std::shared_ptr<CPUBuffer> copy = CPUBuffer::adopt(k.elem, shape, fresh, dst);
    std::vector<int64_t> index(rank, 0);
    for (int64_t e = 0; e < n; ++e) {
      int64_t at = offset;
      for (size_t d = 0; d < rank; ++d)
        at += index[d] * strides[d];
      std::memcpy(dst + e * eb, aligned + at * eb, static_cast<size_t>(eb));
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < shape[d])
          break;
        index[d] = 0;
      }
    }
    results[r] = CPUValue::inPlace(copy);
  }
  if (failure != 0)
    return makeError(where + "run-time check failed: " + runtimeErrorMessage(failure));
  // In-place results: the argument's buffer after the call.
  for (size_t r = 0; r < sig.results.size(); ++r) {
    const int64_t a = inPlaceArg[r];
    if (a < 0)
      continue;
    const size_t ai = static_cast<size_t>(a);
    results[r] = writable[ai] ? CPUValue::inPlace(writableBuffers[ai]) : args[ai];
  }
  if (probes)
    for (size_t p = 0; p < sig.probeNames.size(); ++p)
      probes->push_back(NamedTensor{sig.probeNames[p], results[sig.numResults + p].toTensor()});
  results.erase(results.begin() + static_cast<std::ptrdiff_t>(sig.numResults), results.end());
  return results;
}

Result<std::vector<Tensor>> invokePacked(const FunctionSignature &sig, PackedFunction fn,
                                         const std::vector<CPUValue> &args, std::vector<NamedTensor> *probes) {
  Result<std::vector<CPUValue>> values = invokePackedValues(sig, fn, args, probes);
  if (!values)
    return makeError(values.error());
  std::vector<Tensor> results;
  results.reserve(values->size());
  for (const CPUValue &v : *values)
    results.push_back(v.toTensor());
  return results;
}

} // namespace dsa::cpu
