//===- Batch.cpp - many sequences' decode steps through one batched step function (MLIR-free) ----------===//
#include "dsa/Runtime/Host/Batch.h"

#include "dsa/Runtime/Host/MemoryFormat.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace dsa::runtime {

namespace {

std::shared_ptr<const HostBuffer> bufferOf(const HostValue &v) {
  if (const dsa::Tensor *t = v.tensor())
    return HostBuffer::fromTensor(*t);
  return v.sharedBuffer();
}

/// A new buffer of `type` and `shape` (zero-initialised), writable by its owner.
std::shared_ptr<HostBuffer> newBuffer(dsa::ElementType type, std::vector<int64_t> shape) {
  const size_t bytes = static_cast<size_t>(elementCount(shape) * elementBytes(type));
  std::shared_ptr<uint8_t> owner(new uint8_t[std::max<size_t>(bytes, 1)](), std::default_delete<uint8_t[]>());
  void *data = owner.get();
  return HostBuffer::adopt(type, std::move(shape), std::shared_ptr<void>(owner, data), data);
}

} // namespace

Result<Batch> Batch::start(FunctionSignature signature, ValueRunner runner, std::map<size_t, HostValue> fixed) {
  const std::string where = "batch @" + signature.name + ": ";
  const StepRoles &roles = signature.step;
  const int64_t numArgs = static_cast<int64_t>(signature.args.size());
  const int64_t numResults = static_cast<int64_t>(signature.numResults);
  if (!roles.present())
    return makeError(where + "the function has no step roles (x, start_pos, output)");
  if (roles.x >= numArgs || roles.startPos < 0 || roles.startPos >= numArgs || roles.output < 0 ||
      roles.output >= numResults)
    return makeError(where + "step roles x #" + std::to_string(roles.x) + " / start_pos #" +
                     std::to_string(roles.startPos) + " / output #" + std::to_string(roles.output) +
                     " outside the function's arguments or results");
  const ValueKind &sp = signature.args[static_cast<size_t>(roles.startPos)];
  if (!sp.isTensor || sp.elem != dsa::ElementType::I64 || sp.shape.size() != 1)
    return makeError(where + "start_pos: argument #" + std::to_string(roles.startPos) + " (" + sp.typeString +
                     ") is not a tensor<B x i64>: not a batched step function (use runtime::Sequence)");
  const ValueKind &xk = signature.args[static_cast<size_t>(roles.x)];
  if (!xk.isTensor || xk.shape.size() != 3 || xk.shape[1] != 1)
    return makeError(where + "x: argument #" + std::to_string(roles.x) + " (" + xk.typeString +
                     ") is not [B, 1, dim] (one token per sequence)");
  if (signature.state.empty())
    return makeError(where + "the function has no state bindings (a batched step has at least the ring)");
  for (const StateBinding &slot : roles.shared)
    if (slot.arg < 0 || slot.arg >= numArgs || slot.result < 0 || slot.result >= numResults)
      return makeError(where + "shared slot binding arg " + std::to_string(slot.arg) + " / result " +
                       std::to_string(slot.result) + " out of range");

  Batch batch;
  for (const StateBinding &s : signature.state) {
    if (s.arg < 0 || s.arg >= numArgs || s.result < 0 || s.result >= numResults)
      return makeError(where + "state binding arg " + std::to_string(s.arg) + " / result " +
                       std::to_string(s.result) + " out of range");
    const ValueKind &k = signature.args[static_cast<size_t>(s.arg)];
    std::vector<int64_t> row = k.shape.empty() ? std::vector<int64_t>{} : std::vector<int64_t>(k.shape.begin() + 1,
                                                                                                  k.shape.end());
    if (!k.isTensor || k.shape.size() < 2 || std::any_of(row.begin(), row.end(), [](int64_t d) { return d < 0; }))
      return makeError(where + "state: argument #" + std::to_string(s.arg) + " (" + k.typeString +
                       ") is not [B, ...] with static trailing dimensions");
    Binding b;
    b.arg = static_cast<size_t>(s.arg);
    b.result = static_cast<size_t>(s.result);
    b.type = k.elem;
    b.rowShape = std::move(row);
    b.writable = std::find(signature.writableArgs.begin(), signature.writableArgs.end(), s.arg) !=
                 signature.writableArgs.end();
    batch.bindings_.push_back(std::move(b));
  }
  for (int64_t a : signature.writableArgs)
    if (std::none_of(signature.state.begin(), signature.state.end(),
                     [&](const StateBinding &s) { return s.arg == a; }))
      return makeError(where + "argument #" + std::to_string(a) +
                       " is written in place but is no state argument (the batch owns only its state buffers)");

  std::vector<HostValue> args;
  for (size_t i = 0; i < signature.args.size(); ++i) {
    const ValueKind &k = signature.args[i];
    const std::string what = "argument #" + std::to_string(i) + " (" + k.typeString + ")";
    const int64_t arg = static_cast<int64_t>(i);
    const bool isState = std::any_of(signature.state.begin(), signature.state.end(),
                                     [&](const StateBinding &s) { return s.arg == arg; });
    const bool isSlot = std::any_of(roles.shared.begin(), roles.shared.end(),
                                    [&](const StateBinding &s) { return s.arg == arg; });
    const char *role = arg == roles.x ? "x" : arg == roles.startPos ? "start_pos" : isState ? "state" : isSlot ? "a shared slot" : nullptr;
    auto given = fixed.find(i);
    if (role) {
      if (given != fixed.end())
        return makeError(where + what + " is " + role + ", which the batch supplies: do not pass it");
      args.push_back(dsa::Tensor::scalarI64(0)); // a placeholder until step()
      continue;
    }
    if (given == fixed.end())
      return makeError(where + what + " is missing (every argument that is not x, start_pos, state or a shared slot "
                                   "must be given)");
    args.push_back(given->second);
  }
  for (const auto &[index, value] : fixed)
    if (index >= signature.args.size())
      return makeError(where + "argument #" + std::to_string(index) + " does not exist (the function takes " +
                       std::to_string(signature.args.size()) + ")");
  batch.x_ = static_cast<size_t>(roles.x);
  batch.startPos_ = static_cast<size_t>(roles.startPos);
  batch.output_ = static_cast<size_t>(roles.output);
  batch.signature_ = std::move(signature);
  batch.runner_ = std::move(runner);
  batch.args_ = std::move(args);
  return batch;
}

int64_t Batch::indexOf(SequenceId id) const {
  auto it = std::find(ids_.begin(), ids_.end(), id);
  return it == ids_.end() ? -1 : static_cast<int64_t>(it - ids_.begin());
}

int64_t Batch::position(SequenceId id) const {
  const int64_t b = indexOf(id);
  return b < 0 ? -1 : positions_[static_cast<size_t>(b)];
}

namespace {

/// Row `b` of a [B, ...] buffer as a new buffer of `rowShape`.
std::shared_ptr<HostBuffer> rowOf(const HostBuffer &all, int64_t b, const std::vector<int64_t> &rowShape) {
  std::shared_ptr<HostBuffer> row = newBuffer(all.elementType(), rowShape);
  const size_t bytes = static_cast<size_t>(elementCount(rowShape) * elementBytes(all.elementType()));
  std::memcpy(row->mutableData(), static_cast<const uint8_t *>(all.data()) + static_cast<size_t>(b) * bytes, bytes);
  return row;
}

} // namespace

Result<std::vector<HostValue>> Batch::state(SequenceId id) const {
  const int64_t b = indexOf(id);
  if (b < 0)
    return makeError("batch @" + signature_.name + ": sequence " + std::to_string(id) + ": not a member");
  std::vector<HostValue> out;
  for (size_t i = 0; i < bindings_.size(); ++i) {
    if (!batched_.empty())
      out.emplace_back(std::shared_ptr<const HostBuffer>(rowOf(*batched_[i], b, bindings_[i].rowShape)));
    else
      out.emplace_back(std::shared_ptr<const HostBuffer>(HostBuffer::copyOf(*rows_[static_cast<size_t>(b)][i])));
  }
  return out;
}

Result<HostValue> Batch::ring(SequenceId id) const {
  Result<std::vector<HostValue>> s = state(id);
  if (!s)
    return makeError(s.error());
  return std::move(s->front());
}

Result<Batch::SequenceId> Batch::join(const HostValue &ring, int64_t position) {
  return join(std::vector<HostValue>{ring}, position);
}

Result<Batch::SequenceId> Batch::join(const std::vector<HostValue> &state, int64_t position) {
  const std::string where = "batch @" + signature_.name + ": ";
  if (position < 0)
    return makeError(where + "position: " + std::to_string(position) + " is negative");
  if (state.size() != bindings_.size())
    return makeError(where + "state: " + std::to_string(state.size()) + " values, the function has " +
                     std::to_string(bindings_.size()) + " state bindings (the ring first, then the layer's state)");
  std::vector<std::shared_ptr<HostBuffer>> row;
  for (size_t i = 0; i < state.size(); ++i) {
    const Binding &binding = bindings_[i];
    const std::string what = bindings_.size() == 1 ? "ring" : "state " + std::to_string(i);
    std::shared_ptr<const HostBuffer> buffer = bufferOf(state[i]);
    if (!buffer)
      return makeError(where + what + ": no value");
    if (buffer->elementType() != binding.type || buffer->shape() != binding.rowShape)
      return makeError(where + what + ": " + std::string(dsa::elementTypeName(buffer->elementType())) + " " +
                       shapeString(buffer->shape()) + ", expected " + dsa::elementTypeName(binding.type) + " " +
                       shapeString(binding.rowShape) + (i == 0 ? " (window_size, head_dim)" : " (its row of argument #" +
                                                                       std::to_string(binding.arg) + ")"));
    row.push_back(HostBuffer::copyOf(*buffer));
  }
  split(); // before the membership changes (nothing was modified on an error above)
  rows_.push_back(std::move(row));
  ids_.push_back(nextId_);
  positions_.push_back(position);
  return nextId_++;
}

Result<Batch::Member> Batch::leave(SequenceId id) {
  const int64_t b = indexOf(id);
  if (b < 0)
    return makeError("batch @" + signature_.name + ": sequence " + std::to_string(id) + ": not a member");
  split();
  Member m;
  for (std::shared_ptr<HostBuffer> &value : rows_[static_cast<size_t>(b)])
    m.state.emplace_back(std::shared_ptr<const HostBuffer>(std::move(value)));
  m.position = positions_[static_cast<size_t>(b)];
  rows_.erase(rows_.begin() + b);
  ids_.erase(ids_.begin() + b);
  positions_.erase(positions_.begin() + b);
  return m;
}

void Batch::split() {
  if (batched_.empty())
    return;
  std::vector<std::vector<std::shared_ptr<HostBuffer>>> rows(ids_.size());
  for (size_t b = 0; b < ids_.size(); ++b)
    for (size_t i = 0; i < bindings_.size(); ++i)
      rows[b].push_back(rowOf(*batched_[i], static_cast<int64_t>(b), bindings_[i].rowShape));
  rows_ = std::move(rows);
  batched_.clear();
}

void Batch::gather() {
  if (!batched_.empty())
    return;
  for (size_t i = 0; i < bindings_.size(); ++i) {
    const Binding &binding = bindings_[i];
    std::vector<int64_t> shape{static_cast<int64_t>(ids_.size())};
    shape.insert(shape.end(), binding.rowShape.begin(), binding.rowShape.end());
    std::shared_ptr<HostBuffer> all = newBuffer(binding.type, shape);
    const size_t bytes = static_cast<size_t>(elementCount(binding.rowShape) * elementBytes(binding.type));
    for (size_t b = 0; b < rows_.size(); ++b)
      std::memcpy(static_cast<uint8_t *>(all->mutableData()) + b * bytes, rows_[b][i]->data(), bytes);
    batched_.push_back(std::move(all));
  }
  rows_.clear();
}

namespace {

/// The element type and shape of a value (a Tensor or a buffer); false for no value.
bool typeAndShape(const HostValue &v, dsa::ElementType &type, std::vector<int64_t> &shape) {
  if (const dsa::Tensor *t = v.tensor()) {
    type = t->elementType();
    shape = t->shape();
    return true;
  }
  if (const HostBuffer *b = v.buffer()) {
    type = b->elementType();
    shape = b->shape();
    return true;
  }
  return false;
}

} // namespace

Result<HostValue> Batch::step(const HostValue &x, Sequence::SlotSet *shared) {
  const std::string where = "batch @" + signature_.name + ": ";
  const int64_t batch = static_cast<int64_t>(ids_.size());
  if (batch == 0)
    return makeError(where + "x: the batch has no members (join() a sequence first)");
  const ValueKind &xk = signature_.args[x_];
  dsa::ElementType xType;
  std::vector<int64_t> xShape;
  if (!typeAndShape(x, xType, xShape))
    return makeError(where + "x: no value");
  if (xType != xk.elem)
    return makeError(where + "x: element type " + std::string(dsa::elementTypeName(xType)) + ", expected " +
                     dsa::elementTypeName(xk.elem) + " (" + xk.typeString + ")");
  if (xShape.size() != 3 || xShape[0] != batch || xShape[1] != 1 || (xk.shape[2] >= 0 && xShape[2] != xk.shape[2]))
    return makeError(where + "x: shape " + shapeString(xShape) + ", expected [" + std::to_string(batch) + ", 1, " +
                     (xk.shape[2] >= 0 ? std::to_string(xk.shape[2]) : std::string("?")) + "] (one row per member, " +
                     std::to_string(batch) + " members)");
  if (xk.shape[0] >= 0 && xk.shape[0] != batch)
    return makeError(where + "x: the function was compiled for B = " + std::to_string(xk.shape[0]) + ", the batch has " +
                     std::to_string(batch) + " members");
  const int64_t capacity = signature_.step.maxSeqLen;
  dsa::Tensor startPos(dsa::ElementType::I64, {batch});
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t p = positions_[static_cast<size_t>(b)];
    const std::string who = "sequence " + std::to_string(ids_[static_cast<size_t>(b)]) + " at position " +
                            std::to_string(p);
    if (p == std::numeric_limits<int64_t>::max())
      return makeError(where + "start_pos: " + who + ": the next position overflows int64");
    if (capacity >= 0 && p >= capacity)
      return makeError(where + "max_seq_len: " + who + ": the layer holds " + std::to_string(capacity) +
                       " positions");
    startPos.ints()[b] = p;
  }
  const std::vector<StateBinding> &slotBindings = signature_.step.shared;
  if (slotBindings.empty() && shared)
    return makeError(where + "shared: the layer takes no shared slots (pass none)");
  if (!slotBindings.empty()) {
    if (!shared)
      return makeError(where + "shared: the layer takes " + std::to_string(slotBindings.size()) +
                       " shared slots, none given");
    if (shared->size() != slotBindings.size())
      return makeError(where + "shared: " + std::to_string(shared->size()) + " slots given, the layer takes " +
                       std::to_string(slotBindings.size()));
    for (size_t i = 0; i < slotBindings.size(); ++i) {
      const ValueKind &k = signature_.args[static_cast<size_t>(slotBindings[i].arg)];
      dsa::ElementType type;
      std::vector<int64_t> shape;
      bool ok = typeAndShape((*shared)[i], type, shape) && type == k.elem && shape.size() == k.shape.size() &&
                !shape.empty() && shape[0] == batch;
      for (size_t d = 1; ok && d < shape.size(); ++d)
        ok = k.shape[d] < 0 || k.shape[d] == shape[d];
      if (!ok)
        return makeError(where + "shared: slot " + std::to_string(i) + " is " +
                         (typeAndShape((*shared)[i], type, shape)
                              ? std::string(dsa::elementTypeName(type)) + " " + shapeString(shape)
                              : std::string("no value")) +
                         ", expected " + k.typeString + " with B = " + std::to_string(batch) +
                         " (batched slots: runtime::stackSlots)");
    }
  }
  gather();

  std::vector<HostValue> args = args_;
  args[x_] = x;
  args[startPos_] = HostValue(std::move(startPos));
  for (size_t i = 0; i < bindings_.size(); ++i)
    args[bindings_[i].arg] = bindings_[i].writable ? HostValue::inPlace(batched_[i])
                                                   : HostValue(std::shared_ptr<const HostBuffer>(batched_[i]));
  for (size_t i = 0; i < slotBindings.size(); ++i)
    args[static_cast<size_t>(slotBindings[i].arg)] = (*shared)[i];
  Result<std::vector<HostValue>> results = runner_(args, nullptr);
  if (!results)
    return makeError(where + results.error());
  if (results->size() < signature_.numResults)
    return makeError(where + "the function returned " + std::to_string(results->size()) + " results, expected " +
                     std::to_string(signature_.numResults));
  // The new state: a writable binding's buffer was updated in place (the result is that buffer); any other one is
  // the result, copied into a buffer the batch owns when the runner kept it.
  std::vector<std::shared_ptr<HostBuffer>> next;
  for (size_t i = 0; i < bindings_.size(); ++i) {
    const Binding &binding = bindings_[i];
    const HostValue &r = (*results)[binding.result];
    std::vector<int64_t> want{batch};
    want.insert(want.end(), binding.rowShape.begin(), binding.rowShape.end());
    std::shared_ptr<const HostBuffer> buffer = bufferOf(r);
    if (!buffer || buffer->shape() != want || buffer->elementType() != binding.type)
      return makeError(where + "the function's new state #" + std::to_string(i) + " is not " + shapeString(want));
    if (buffer.get() == batched_[i].get())
      next.push_back(batched_[i]);
    else if (r.isInPlace())
      next.push_back(r.inPlaceBuffer());
    else
      next.push_back(HostBuffer::copyOf(*buffer));
  }
  batched_ = std::move(next);
  for (size_t i = 0; i < slotBindings.size(); ++i)
    (*shared)[i] = std::move((*results)[static_cast<size_t>(slotBindings[i].result)]);
  for (int64_t &p : positions_)
    ++p;
  return std::move((*results)[output_]);
}

namespace {

/// Copies `n` elements from `src` at element `j` to `dst` at element `i` (buffers of the same element type).
void copyElements(HostBuffer &dst, int64_t i, const HostBuffer &src, int64_t j, int64_t n) {
  const size_t bytes = static_cast<size_t>(elementBytes(dst.elementType()));
  std::memcpy(static_cast<uint8_t *>(dst.mutableData()) + static_cast<size_t>(i) * bytes,
              static_cast<const uint8_t *>(src.data()) + static_cast<size_t>(j) * bytes, static_cast<size_t>(n) * bytes);
}

} // namespace

Result<Sequence::SlotSet> stackSlots(const FunctionSignature &signature,
                                     const std::vector<Sequence::SlotSet> &members) {
  const std::string where = "stackSlots @" + signature.name + ": ";
  const std::vector<StateBinding> &bindings = signature.step.shared;
  if (bindings.empty())
    return makeError(where + "the function takes no shared slots");
  if (members.empty())
    return makeError(where + "no members");
  Sequence::SlotSet out;
  for (size_t i = 0; i < bindings.size(); ++i) {
    const ValueKind &k = signature.args[static_cast<size_t>(bindings[i].arg)];
    if (!k.isTensor || k.shape.size() != 3)
      return makeError(where + "slot " + std::to_string(i) + ": argument #" + std::to_string(bindings[i].arg) + " (" +
                       k.typeString + ") is not a batched slot [B, rows, width]");
    const bool tokenRow = k.shape[1] == 1; // topk_idxs, candidates: one token row per sequence
    // The members' slots as buffers, then the padded shape: the largest rows and width.
    std::vector<std::shared_ptr<const HostBuffer>> rows;
    int64_t height = tokenRow ? 1 : 0, width = k.shape[2] >= 0 ? k.shape[2] : 0;
    for (size_t b = 0; b < members.size(); ++b) {
      const std::string what = "member " + std::to_string(b) + "'s slot " + std::to_string(i);
      if (members[b].size() != bindings.size())
        return makeError(where + "member " + std::to_string(b) + ": " + std::to_string(members[b].size()) +
                         " slots, the function takes " + std::to_string(bindings.size()));
      std::shared_ptr<const HostBuffer> buffer = bufferOf(members[b][i]);
      if (!buffer)
        return makeError(where + what + ": no value");
      if (buffer->elementType() != k.elem || buffer->shape().size() != 2 ||
          (k.shape[2] >= 0 && buffer->shape()[1] != k.shape[2]))
        return makeError(where + what + ": " + std::string(dsa::elementTypeName(buffer->elementType())) + " " +
                         shapeString(buffer->shape()) + ", expected " + dsa::elementTypeName(k.elem) +
                         " [rows, " + (k.shape[2] >= 0 ? std::to_string(k.shape[2]) : std::string("?")) + "]");
      if (!tokenRow)
        height = std::max(height, buffer->shape()[0]);
      width = std::max(width, buffer->shape()[1]);
      rows.push_back(std::move(buffer));
    }
    const int64_t fill = k.elem == dsa::ElementType::I32 ? -1 : 0;
    std::shared_ptr<HostBuffer> all =
        newBuffer(k.elem, {static_cast<int64_t>(members.size()), height, width});
    if (fill != 0)
      for (int64_t e = 0; e < elementCount(all->shape()); ++e)
        static_cast<int32_t *>(all->mutableData())[e] = static_cast<int32_t>(fill);
    for (size_t b = 0; b < rows.size(); ++b) {
      const HostBuffer &src = *rows[b];
      const int64_t srcRows = src.shape()[0], srcWidth = src.shape()[1];
      // A token-row slot takes the member's last row (a prefill's slot holds one per prefill token).
      const int64_t first = tokenRow ? std::max<int64_t>(srcRows - 1, 0) : 0;
      const int64_t count = tokenRow ? std::min<int64_t>(srcRows, 1) : srcRows;
      for (int64_t r = 0; r < count; ++r)
        copyElements(*all, (static_cast<int64_t>(b) * height + r) * width, src, (first + r) * srcWidth, srcWidth);
    }
    out.emplace_back(std::shared_ptr<const HostBuffer>(std::move(all)));
  }
  return out;
}

Result<Sequence::SlotSet> slotsOf(const Sequence::SlotSet &batched, int64_t b) {
  Sequence::SlotSet out;
  for (size_t i = 0; i < batched.size(); ++i) {
    std::shared_ptr<const HostBuffer> buffer = bufferOf(batched[i]);
    if (!buffer || buffer->shape().size() != 3)
      return makeError("slotsOf: slot " + std::to_string(i) + " is not a batched slot [B, rows, width]");
    if (b < 0 || b >= buffer->shape()[0])
      return makeError("slotsOf: b: " + std::to_string(b) + " is outside the slots' " +
                       std::to_string(buffer->shape()[0]) + " rows");
    out.emplace_back(std::shared_ptr<const HostBuffer>(
        rowOf(*buffer, b, {buffer->shape()[1], buffer->shape()[2]})));
  }
  return out;
}

} // namespace dsa::runtime
