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

/// A new buffer of `type` and `shape` (zero-initialised), writable by its creator before it is shared.
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
  if (!roles.shared.empty() || !signature.writableArgs.empty())
    return makeError(where + "the function has shared slots or in-place caches (a compressed layer): batched "
                             "decode covers window-only layers");
  if (signature.state.size() != 1)
    return makeError(where + "the function has " + std::to_string(signature.state.size()) +
                     " state bindings, a batched window-only step has one (the ring)");
  const StateBinding ring = signature.state.front();
  if (ring.arg < 0 || ring.arg >= numArgs || ring.result < 0 || ring.result >= numResults)
    return makeError(where + "state binding arg " + std::to_string(ring.arg) + " / result " +
                     std::to_string(ring.result) + " out of range");
  const ValueKind &rk = signature.args[static_cast<size_t>(ring.arg)];
  if (!rk.isTensor || rk.shape.size() != 3 || rk.shape[1] < 0 || rk.shape[2] < 0)
    return makeError(where + "ring: argument #" + std::to_string(ring.arg) + " (" + rk.typeString +
                     ") is not [B, window_size, head_dim] with static window_size and head_dim");

  Batch batch;
  std::vector<HostValue> args;
  for (size_t i = 0; i < signature.args.size(); ++i) {
    const ValueKind &k = signature.args[i];
    const std::string what = "argument #" + std::to_string(i) + " (" + k.typeString + ")";
    const char *role = static_cast<int64_t>(i) == roles.x          ? "x"
                       : static_cast<int64_t>(i) == roles.startPos ? "start_pos"
                       : static_cast<int64_t>(i) == ring.arg       ? "the ring"
                                                                   : nullptr;
    auto given = fixed.find(i);
    if (role) {
      if (given != fixed.end())
        return makeError(where + what + " is " + role + ", which the batch supplies: do not pass it");
      args.push_back(dsa::Tensor::scalarI64(0)); // a placeholder until step()
      continue;
    }
    if (given == fixed.end())
      return makeError(where + what + " is missing (every argument that is not x, start_pos or the ring must be "
                                   "given)");
    args.push_back(given->second);
  }
  for (const auto &[index, value] : fixed)
    if (index >= signature.args.size())
      return makeError(where + "argument #" + std::to_string(index) + " does not exist (the function takes " +
                       std::to_string(signature.args.size()) + ")");
  batch.x_ = static_cast<size_t>(roles.x);
  batch.startPos_ = static_cast<size_t>(roles.startPos);
  batch.ringArg_ = static_cast<size_t>(ring.arg);
  batch.ringResult_ = static_cast<size_t>(ring.result);
  batch.output_ = static_cast<size_t>(roles.output);
  batch.ringType_ = rk.elem;
  batch.ringShape_ = {rk.shape[1], rk.shape[2]};
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

/// Row `b` of a [B, W, hd] buffer as a new [W, hd] buffer.
std::shared_ptr<const HostBuffer> rowOf(const HostBuffer &all, int64_t b, const std::vector<int64_t> &rowShape) {
  std::shared_ptr<HostBuffer> row = newBuffer(all.elementType(), rowShape);
  const size_t bytes = static_cast<size_t>(elementCount(rowShape) * elementBytes(all.elementType()));
  std::memcpy(row->mutableData(), static_cast<const uint8_t *>(all.data()) + static_cast<size_t>(b) * bytes, bytes);
  return row;
}

} // namespace

Result<HostValue> Batch::ring(SequenceId id) const {
  const int64_t b = indexOf(id);
  if (b < 0)
    return makeError("batch @" + signature_.name + ": sequence " + std::to_string(id) + ": not a member");
  if (batched_)
    return HostValue(rowOf(*batched_, b, ringShape_));
  return HostValue(HostBuffer::copyOf(*rings_[static_cast<size_t>(b)]));
}

Result<Batch::SequenceId> Batch::join(const HostValue &ring, int64_t position) {
  const std::string where = "batch @" + signature_.name + ": ";
  if (position < 0)
    return makeError(where + "position: " + std::to_string(position) + " is negative");
  std::shared_ptr<const HostBuffer> buffer = bufferOf(ring);
  if (!buffer)
    return makeError(where + "ring: no value");
  if (buffer->elementType() != ringType_ || buffer->shape() != ringShape_)
    return makeError(where + "ring: " + std::string(dsa::elementTypeName(buffer->elementType())) + " " +
                     shapeString(buffer->shape()) + ", expected " + dsa::elementTypeName(ringType_) + " " +
                     shapeString(ringShape_) + " (window_size, head_dim)");
  splitRings(); // before the membership changes (nothing was modified on an error above)
  rings_.push_back(HostBuffer::copyOf(*buffer));
  ids_.push_back(nextId_);
  positions_.push_back(position);
  return nextId_++;
}

Result<Batch::Member> Batch::leave(SequenceId id) {
  const int64_t b = indexOf(id);
  if (b < 0)
    return makeError("batch @" + signature_.name + ": sequence " + std::to_string(id) + ": not a member");
  splitRings();
  Member m{HostValue(rings_[static_cast<size_t>(b)]), positions_[static_cast<size_t>(b)]};
  rings_.erase(rings_.begin() + b);
  ids_.erase(ids_.begin() + b);
  positions_.erase(positions_.begin() + b);
  return m;
}

void Batch::splitRings() {
  if (!batched_)
    return;
  std::vector<std::shared_ptr<const HostBuffer>> rings;
  for (size_t b = 0; b < ids_.size(); ++b)
    rings.push_back(rowOf(*batched_, static_cast<int64_t>(b), ringShape_));
  rings_ = std::move(rings);
  batched_.reset();
}

Status Batch::gatherRings() {
  if (batched_)
    return Status::success();
  std::vector<int64_t> shape{static_cast<int64_t>(ids_.size()), ringShape_[0], ringShape_[1]};
  std::shared_ptr<HostBuffer> all = newBuffer(ringType_, shape);
  const size_t bytes = static_cast<size_t>(elementCount(ringShape_) * elementBytes(ringType_));
  for (size_t b = 0; b < rings_.size(); ++b)
    std::memcpy(static_cast<uint8_t *>(all->mutableData()) + b * bytes, rings_[b]->data(), bytes);
  batched_ = all;
  rings_.clear();
  return Status::success();
}

Result<HostValue> Batch::step(const HostValue &x) {
  const std::string where = "batch @" + signature_.name + ": ";
  const int64_t batch = static_cast<int64_t>(ids_.size());
  if (batch == 0)
    return makeError(where + "x: the batch has no members (join() a sequence first)");
  const ValueKind &xk = signature_.args[x_];
  dsa::ElementType xType;
  std::vector<int64_t> xShape;
  if (const dsa::Tensor *t = x.tensor()) {
    xType = t->elementType();
    xShape = t->shape();
  } else if (const HostBuffer *b = x.buffer()) {
    xType = b->elementType();
    xShape = b->shape();
  } else {
    return makeError(where + "x: no value");
  }
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
  dsa::Tensor startPos(dsa::ElementType::I64, {batch});
  for (int64_t b = 0; b < batch; ++b) {
    if (positions_[static_cast<size_t>(b)] == std::numeric_limits<int64_t>::max())
      return makeError(where + "start_pos: sequence " + std::to_string(ids_[static_cast<size_t>(b)]) + " at position " +
                       std::to_string(positions_[static_cast<size_t>(b)]) + ": the next position overflows int64");
    startPos.ints()[b] = positions_[static_cast<size_t>(b)];
  }
  if (Status st = gatherRings(); !st)
    return makeError(st.error());

  std::vector<HostValue> args = args_;
  args[x_] = x;
  args[startPos_] = HostValue(std::move(startPos));
  args[ringArg_] = HostValue(batched_);
  Result<std::vector<HostValue>> results = runner_(args, nullptr);
  if (!results)
    return makeError(where + results.error());
  if (results->size() < signature_.numResults)
    return makeError(where + "the function returned " + std::to_string(results->size()) + " results, expected " +
                     std::to_string(signature_.numResults));
  std::shared_ptr<const HostBuffer> newRing = bufferOf((*results)[ringResult_]);
  std::vector<int64_t> want{batch, ringShape_[0], ringShape_[1]};
  if (!newRing || newRing->shape() != want || newRing->elementType() != ringType_)
    return makeError(where + "the function's new ring is not " + shapeString(want));
  batched_ = std::move(newRing);
  for (int64_t &p : positions_)
    ++p;
  return std::move((*results)[output_]);
}

} // namespace dsa::runtime
