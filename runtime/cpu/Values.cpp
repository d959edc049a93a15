//===- Values.cpp - Tensors <-> memref descriptors, packed calls (MLIR-free) ---===//
#include "dsa/Runtime/CPU/Values.h"

#include "dsa/Backend/CPU/RuntimeErrors.h"
#include "dsa/Numerics/BF16.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>

namespace dsa::cpu {

namespace {

using interp::ElementType;
using interp::Tensor;

/// The first failed run-time check of the current call on this thread (0 = none).
thread_local int32_t tFirstFailure = 0;

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

size_t alignUp(size_t offset, size_t align) { return (offset + align - 1) & ~(align - 1); }

/// Size and alignment of a value of `kind` in the LLVM result struct.
std::pair<size_t, size_t> fieldLayout(const ValueKind &kind) {
  if (kind.isTensor)
    return {8 * (3 + 2 * kind.shape.size()), 8};
  size_t bytes = static_cast<size_t>(elementBytes(kind.elem));
  return {bytes, bytes};
}

} // namespace

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

std::shared_ptr<const CPUBuffer> CPUBuffer::fromTensor(const Tensor &t) {
  auto buffer = std::shared_ptr<CPUBuffer>(new CPUBuffer());
  buffer->type_ = t.elementType();
  buffer->shape_ = t.shape();
  const int64_t n = t.numElements(), eb = elementBytes(t.elementType());
  buffer->storage_.assign(static_cast<size_t>((n * eb + 7) / 8 + 1), 0);
  uint8_t *data = reinterpret_cast<uint8_t *>(buffer->storage_.data());
  for (int64_t e = 0; e < n; ++e)
    storeElement(t, e, data + e * eb);
  return buffer;
}

Result<std::vector<Tensor>> invokePacked(const FunctionSignature &sig, PackedFunction fn,
                                         const std::vector<CPUValue> &args, std::vector<NamedTensor> *probes) {
  const std::string where = "cpu backend: @" + sig.name + ": ";
  if (!fn)
    return makeError(where + "no compiled entry point");
  if (args.size() != sig.args.size())
    return makeError(where + std::to_string(args.size()) + " arguments given, the function takes " +
                     std::to_string(sig.args.size()));

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

  std::vector<std::shared_ptr<const CPUBuffer>> converted(args.size());
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
    if (!b) {
      converted[i] = CPUBuffer::fromTensor(*args[i].tensor());
      b = converted[i].get();
    }
    // The compiled code never writes its arguments: the pointer only travels through the descriptor.
    const void *data = b->data();
    argAllocations.insert(data);
    const int64_t address = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
    push(address); // allocated
    push(address); // aligned
    push(0);       // offset
    const std::vector<int64_t> &shape = b->shape();
    for (int64_t d : shape)
      push(d);
    std::vector<int64_t> strides(shape.size());
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      strides[d] = stride;
      stride *= shape[d];
    }
    for (int64_t s : strides)
      push(s);
  }

  // The result struct.
  std::vector<size_t> offsets;
  size_t bytes = 0, maxAlign = 1;
  for (const ValueKind &k : sig.results) {
    auto [size, align] = fieldLayout(k);
    bytes = alignUp(bytes, align);
    offsets.push_back(bytes);
    bytes += size;
    maxAlign = std::max(maxAlign, align);
  }
  std::vector<int64_t> resultStorage(alignUp(bytes, maxAlign) / 8 + 1);
  if (!sig.results.empty())
    packed.push_back(resultStorage.data());

  tFirstFailure = 0;
  fn(packed.data());
  const int32_t failure = tFirstFailure;
  tFirstFailure = 0;

  // Read the results back (also after a failed check, to free their buffers).
  const uint8_t *base = reinterpret_cast<const uint8_t *>(resultStorage.data());
  std::vector<Tensor> results;
  std::set<void *> toFree;
  for (size_t r = 0; r < sig.results.size(); ++r) {
    const ValueKind &k = sig.results[r];
    const uint8_t *field = base + offsets[r];
    if (!k.isTensor) {
      if (interp::isFloatType(k.elem))
        results.push_back(Tensor::fromFloats(k.elem, {}, {loadFloat(k.elem, field)}));
      else
        results.push_back(Tensor::fromInts(k.elem, {}, {loadInt(k.elem, field)}));
      continue;
    }
    const size_t rank = k.shape.size();
    int64_t words[3 + 2 * 16];
    std::memcpy(words, field, 8 * (3 + 2 * rank));
    void *allocated = reinterpret_cast<void *>(static_cast<intptr_t>(words[0]));
    const uint8_t *aligned = reinterpret_cast<const uint8_t *>(static_cast<intptr_t>(words[1]));
    const int64_t offset = words[2];
    std::vector<int64_t> shape(words + 3, words + 3 + rank);
    std::vector<int64_t> strides(words + 3 + rank, words + 3 + 2 * rank);
    const int64_t eb = elementBytes(k.elem);
    Tensor out(k.elem, shape);
    const int64_t n = out.numElements();
    std::vector<int64_t> index(rank, 0);
    for (int64_t e = 0; e < n; ++e) {
      int64_t at = offset;
      for (size_t d = 0; d < rank; ++d)
        at += index[d] * strides[d];
      const uint8_t *src = aligned + at * eb;
      if (out.isFloat())
        out.floats()[e] = loadFloat(k.elem, src);
      else
        out.ints()[e] = loadInt(k.elem, src);
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < shape[d])
          break;
        index[d] = 0;
      }
    }
    results.push_back(std::move(out));
    if (allocated && !argAllocations.count(allocated))
      toFree.insert(allocated);
  }
  // Result buffers belong to the caller (the pipeline's ownership-based deallocation returns owned buffers). Two
  // results may share one (a value returned twice, e.g. a probe of a result): free each once, after every read.
  for (void *p : toFree)
    std::free(p);
  if (failure != 0)
    return makeError(where + "run-time check failed: " + runtimeErrorMessage(failure));
  if (probes)
    for (size_t p = 0; p < sig.probeNames.size(); ++p)
      probes->push_back(NamedTensor{sig.probeNames[p], std::move(results[sig.numResults + p])});
  results.resize(sig.numResults);
  return results;
}

} // namespace dsa::cpu
