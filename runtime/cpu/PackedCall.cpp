//===- PackedCall.cpp - calling compiled dsa CPU functions through their packed entries (MLIR-free) ---===//
#include "dsa/Runtime/CPU/PackedCall.h"
#include "dsa/Runtime/Host/MemoryFormat.h"

#include "dsa/ABI/RuntimeErrors.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

namespace dsa::cpu {

using namespace dsa::runtime;
using dsa::ElementType;
using dsa::Tensor;

namespace {

/// The first failed run-time check of the current call on this thread (0 = none).
thread_local int32_t tFirstFailure = 0;

} // namespace

extern "C" void dsaCpuRecordFailure(int32_t code) {
  if (tFirstFailure == 0)
    tFirstFailure = code;
}

Result<std::vector<HostValue>> invokePackedValues(const FunctionSignature &sig, PackedFunction fn,
                                                 const std::vector<HostValue> &args,
                                                 std::vector<NamedTensor> *probes, ReleaseFunction release) {
  if (!release)
    release = &std::free;
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
    const HostBuffer *b = args[i].buffer();
    if (!t && !b)
      return makeError(where + what + " is a null HostBuffer");
    const ElementType type = t ? t->elementType() : b->elementType();
    const std::vector<int64_t> &shape = t ? t->shape() : b->shape();
    if (Status st = checkValueKind(k, type, shape, what); !st)
      return makeError(where + st.error());
    if (!k.isTensor) {
      if (!t) // a scalar travels by value: a Tensor, not a buffer
        return makeError(where + what + " has shape " + shapeString(shape) + ", expected a scalar (" +
                         k.typeString + ")");
      numSlots += 1;
      continue;
    }
    numSlots += 3 + 2 * k.shape.size();
  }
  for (size_t i = 0; i < args.size(); ++i)
    for (size_t j = i + 1; j < args.size(); ++j)
      if (writable[i] && writable[j] && args[i].isInPlace() && args[i].inPlaceBuffer() == args[j].inPlaceBuffer())
        return makeError(where + "arguments #" + std::to_string(i) + " and #" + std::to_string(j) +
                         " are one in-place buffer, and the function updates both");

  // Per argument: the buffer the compiled code sees. A writable argument gets the caller's inPlace buffer or a
  // fresh copy; a read-only one the caller's buffer or this call's conversion of a Tensor.
  std::vector<std::shared_ptr<const HostBuffer>> converted(args.size());
  std::vector<std::shared_ptr<HostBuffer>> writableBuffers(args.size());
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
    const HostBuffer *b = args[i].buffer();
    if (writable[i]) {
      if (args[i].isInPlace())
        writableBuffers[i] = args[i].inPlaceBuffer();
      else
        writableBuffers[i] = b ? HostBuffer::copyOf(*b) : HostBuffer::mutableFromTensor(*args[i].tensor());
      b = writableBuffers[i].get();
    } else if (!b) {
      converted[i] = HostBuffer::fromTensor(*args[i].tensor());
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
  std::vector<HostValue> results(sig.results.size(), HostValue(Tensor()));
  std::map<void *, std::shared_ptr<void>> owners;
  std::string badResult;
  for (size_t j = 0; j < returned.size(); ++j) {
    const size_t r = returned[j];
    const ValueKind &k = sig.results[r];
    const uint8_t *field = base + offsets[j];
    if (!k.isTensor) {
      if (dsa::isFloatType(k.elem))
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
    const int64_t n = elementCount(shape);
    const bool fromArgument = allocated && argAllocations.count(allocated);
    std::shared_ptr<void> owner;
    if (allocated && !fromArgument) {
      auto it = owners.find(allocated);
      if (it == owners.end())
        it = owners.emplace(allocated, std::shared_ptr<void>(allocated, release)).first;
      owner = it->second;
    }
    // What came back must be what the (verified) signature says: a negative extent or another static size means
    // the code does not follow it; the buffer is still adopted, so that it is freed.
    bool fits = true;
    for (size_t d = 0; d < rank; ++d)
      fits = fits && shape[d] >= 0 && (k.shape[d] < 0 || shape[d] == k.shape[d]);
    if (!fits) {
      if (badResult.empty())
        badResult = "result #" + std::to_string(r) + " came back with shape " + shapeString(shape) +
                    ", the signature says " + k.typeString;
      if (owner)
        results[r] = HostValue::inPlace(HostBuffer::adopt(k.elem, {0}, owner, aligned));
      continue;
    }
    bool contiguous = true;
    const std::vector<int64_t> dense = rowMajorStrides(shape);
    for (size_t d = 0; d < rank; ++d)
      if (shape[d] > 1 && strides[d] != dense[d])
        contiguous = false;
    if (owner && contiguous) {
      results[r] = HostValue::inPlace(HostBuffer::adopt(k.elem, shape, owner, aligned + offset * eb));
      continue;
    }
    // A view of an argument, or strided: copy it into a buffer of the caller's (compact).
    std::shared_ptr<void> fresh = allocateBytes(n * eb);
    uint8_t *dst = static_cast<uint8_t *>(fresh.get());
    std::shared_ptr<HostBuffer> copy = HostBuffer::adopt(k.elem, shape, fresh, dst);
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
    results[r] = HostValue::inPlace(copy);
  }
  if (failure != 0)
    return makeError(where + "run-time check failed: " + abi::runtimeErrorMessage(failure));
  if (!badResult.empty())
    return makeError(where + badResult);
  // In-place results: the argument's buffer after the call.
  for (size_t r = 0; r < sig.results.size(); ++r) {
    const int64_t a = inPlaceArg[r];
    if (a < 0)
      continue;
    const size_t ai = static_cast<size_t>(a);
    results[r] = writable[ai] ? HostValue::inPlace(writableBuffers[ai]) : args[ai];
  }
  if (probes)
    for (size_t p = 0; p < sig.probeNames.size(); ++p)
      probes->push_back(NamedTensor{sig.probeNames[p], results[sig.numResults + p].toTensor()});
  results.erase(results.begin() + static_cast<std::ptrdiff_t>(sig.numResults), results.end());
  return results;
}

Result<std::vector<Tensor>> invokePacked(const FunctionSignature &sig, PackedFunction fn,
                                         const std::vector<HostValue> &args, std::vector<NamedTensor> *probes,
                                         ReleaseFunction release) {
  Result<std::vector<HostValue>> values = invokePackedValues(sig, fn, args, probes, release);
  if (!values)
    return makeError(values.error());
  std::vector<Tensor> results;
  results.reserve(values->size());
  for (const HostValue &v : *values)
    results.push_back(v.toTensor());
  return results;
}

} // namespace dsa::cpu
