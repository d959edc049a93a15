//===- Sequence.cpp - a sequence's steps through a compiled function (MLIR-free) ----------------===//
#include "dsa/Runtime/Host/Sequence.h"

#include <algorithm>
#include <limits>

namespace dsa::runtime {

namespace {

/// A Tensor runner as a ValueRunner (its results as Tensor values).
Sequence::ValueRunner valuesOf(Sequence::Runner runner) {
  return [runner = std::move(runner)](const std::vector<HostValue> &args,
                                      std::vector<NamedTensor> *probes) -> Result<std::vector<HostValue>> {
    Result<std::vector<dsa::Tensor>> r = runner(args, probes);
    if (!r)
      return makeError(r.error());
    std::vector<HostValue> values;
    values.reserve(r->size());
    for (dsa::Tensor &t : *r)
      values.emplace_back(std::move(t));
    return values;
  };
}

std::vector<dsa::Tensor> tensorsOf(const std::vector<HostValue> &values) {
  std::vector<dsa::Tensor> out;
  out.reserve(values.size());
  for (const HostValue &v : values)
    out.push_back(v.toTensor());
  return out;
}

} // namespace

Result<Sequence> Sequence::create(FunctionSignature signature, Runner runner, std::vector<HostValue> initialArgs) {
  return create(std::move(signature), valuesOf(std::move(runner)), std::move(initialArgs));
}

Result<Sequence> Sequence::start(FunctionSignature signature, Runner runner, std::map<size_t, HostValue> fixed) {
  return start(std::move(signature), valuesOf(std::move(runner)), std::move(fixed));
}

Result<Sequence> Sequence::create(FunctionSignature signature, ValueRunner runner,
                                        std::vector<HostValue> initialArgs, int64_t position) {
  if (position < 0)
    return makeError("cpu sequence @" + signature.name + ": position " + std::to_string(position) + " is negative");
  if (initialArgs.size() != signature.args.size())
    return makeError("cpu sequence @" + signature.name + ": " + std::to_string(initialArgs.size()) +
                     " initial arguments, the function takes " + std::to_string(signature.args.size()));
  for (const StateBinding &b : signature.state)
    if (b.arg < 0 || b.arg >= static_cast<int64_t>(signature.args.size()) || b.result < 0 ||
        b.result >= static_cast<int64_t>(signature.numResults))
      return makeError("cpu sequence @" + signature.name + ": state binding arg " + std::to_string(b.arg) +
                       " / result " + std::to_string(b.result) + " out of range");
  Sequence seq;
  seq.signature_ = std::move(signature);
  seq.runner_ = std::move(runner);
  // The caller's inPlace buffers become read-only views: the first step copies them (the sequence writes only
  // buffers its runner gave it), and reset() finds them as given.
  for (HostValue &v : initialArgs)
    if (v.isInPlace())
      v = HostValue(v.sharedBuffer());
  seq.args_ = std::move(initialArgs);
  seq.initialArgs_ = seq.args_;
  seq.position_ = seq.initialPosition_ = position;
  return seq;
}

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s + "]";
}

/// Rows [begin, begin + count) of `t` along dimension 0.
dsa::Tensor sliceRows(const dsa::Tensor &t, int64_t begin, int64_t count) {
  std::vector<int64_t> shape = t.shape();
  const int64_t rowSize = shape[0] == 0 ? 0 : t.numElements() / shape[0];
  shape[0] = count;
  dsa::Tensor out(t.elementType(), shape);
  if (t.isFloat())
    std::copy(t.floats() + begin * rowSize, t.floats() + (begin + count) * rowSize, out.floats());
  else
    std::copy(t.ints() + begin * rowSize, t.ints() + (begin + count) * rowSize, out.ints());
  return out;
}

/// `parts` concatenated along dimension 0 (same element type and trailing dimensions, checked).
Result<dsa::Tensor> concatRows(const std::vector<dsa::Tensor> &parts, const std::string &what) {
  std::vector<int64_t> shape = parts.front().shape();
  int64_t rows = 0;
  for (const dsa::Tensor &p : parts) {
    if (p.elementType() != parts.front().elementType() || p.rank() != parts.front().rank() ||
        !std::equal(p.shape().begin() + 1, p.shape().end(), shape.begin() + 1))
      return makeError(what + ": the tokens' outputs have different types (" + p.typeString() + " vs " +
                       parts.front().typeString() + ")");
    rows += p.dim(0);
  }
  shape[0] = rows;
  dsa::Tensor out(parts.front().elementType(), shape);
  int64_t at = 0;
  for (const dsa::Tensor &p : parts) {
    const int64_t n = p.numElements();
    if (out.isFloat())
      std::copy(p.floats(), p.floats() + n, out.floats() + at);
    else
      std::copy(p.ints(), p.ints() + n, out.ints() + at);
    at += n;
  }
  return out;
}

} // namespace

namespace {

/// Step roles within the signature's argument/result lists, x a tensor with a token dimension (a signature built
/// in code rather than parsed from a description may get these wrong).
Status checkRoles(const FunctionSignature &sig, const std::string &where) {
  const StepRoles &r = sig.step;
  const int64_t numArgs = static_cast<int64_t>(sig.args.size()), numResults = static_cast<int64_t>(sig.numResults);
  if (r.x < 0 || r.x >= numArgs || r.startPos < 0 || r.startPos >= numArgs || r.output < 0 || r.output >= numResults)
    return makeError(where + "step roles x #" + std::to_string(r.x) + " / start_pos #" + std::to_string(r.startPos) +
                     " / output #" + std::to_string(r.output) + " outside the function's arguments or results");
  if (!sig.args[static_cast<size_t>(r.x)].isTensor || sig.args[static_cast<size_t>(r.x)].shape.empty())
    return makeError(where + "x: argument #" + std::to_string(r.x) + " is not a tensor of token rows");
  if (const ValueKind &sp = sig.args[static_cast<size_t>(r.startPos)]; sp.isTensor)
    return makeError(where + "start_pos: argument #" + std::to_string(r.startPos) + " is " + sp.typeString +
                     ", not an i64 scalar: a batched step function (run it through runtime::Batch, Batch.h)");
  for (const std::vector<StateBinding> *list : {&sig.state, &r.shared})
    for (const StateBinding &b : *list)
      if (b.arg < 0 || b.arg >= numArgs || b.result < 0 || b.result >= numResults)
        return makeError(where + "binding arg " + std::to_string(b.arg) + " / result " + std::to_string(b.result) +
                         " out of range");
  return Status::success();
}

} // namespace

Result<Sequence> Sequence::start(FunctionSignature signature, ValueRunner runner,
                                       std::map<size_t, HostValue> fixed) {
  const std::string where = "cpu sequence @" + signature.name + ": ";
  const StepRoles &roles = signature.step;
  if (!roles.present())
    return makeError(where + "the function has no step roles (x, start_pos, output): use create()");
  if (Status st = checkRoles(signature, where); !st)
    return makeError(st.error());
  std::vector<std::string> role(signature.args.size());
  role[static_cast<size_t>(roles.x)] = "x";
  role[static_cast<size_t>(roles.startPos)] = "start_pos";
  for (const StateBinding &b : signature.state)
    role[static_cast<size_t>(b.arg)] = "state";
  for (const StateBinding &b : roles.shared)
    role[static_cast<size_t>(b.arg)] = "a shared slot";
  std::vector<HostValue> args;
  for (size_t i = 0; i < signature.args.size(); ++i) {
    const ValueKind &k = signature.args[i];
    const std::string what = "argument #" + std::to_string(i) + " (" + k.typeString + ")";
    auto given = fixed.find(i);
    if (!role[i].empty() && given != fixed.end())
      return makeError(where + what + " is " + role[i] + ", which the sequence supplies: do not pass it");
    if (role[i].empty()) {
      if (given == fixed.end())
        return makeError(where + what + " is missing (every argument that is not x, start_pos, state or a shared "
                                     "slot must be given)");
      args.push_back(given->second);
      continue;
    }
    if (role[i] == "state") {
      if (!k.isTensor || std::any_of(k.shape.begin(), k.shape.end(), [](int64_t d) { return d < 0; }))
        return makeError(where + what + " is state but has no static shape to start from");
      StateInit init = StateInit::Zeros;
      for (const StateBinding &b : signature.state)
        if (static_cast<size_t>(b.arg) == i)
          init = b.init;
      dsa::Tensor t(k.elem, k.shape);
      if (init == StateInit::NegInf) {
        if (!t.isFloat())
          return makeError(where + what + " starts at -inf but is not a float tensor");
        std::fill(t.floats(), t.floats() + t.numElements(), -std::numeric_limits<float>::infinity());
      }
      args.push_back(std::move(t));
      continue;
    }
    // x, start_pos and the slots are placeholders until run().
    std::vector<int64_t> shape = k.shape;
    for (int64_t &d : shape)
      d = std::max<int64_t>(d, 0);
    args.push_back(k.isTensor ? dsa::Tensor(k.elem, shape) : dsa::Tensor::scalarI64(0));
  }
  for (const auto &[index, value] : fixed)
    if (index >= signature.args.size())
      return makeError(where + "argument #" + std::to_string(index) + " does not exist (the function takes " +
                       std::to_string(signature.args.size()) + ")");
  return create(std::move(signature), std::move(runner), std::move(args));
}

Result<Sequence::SlotSet> Sequence::initialSlots(const FunctionSignature &signature) {
  if (signature.step.shared.empty())
    return makeError("cpu sequence @" + signature.name + ": the function has no shared slots");
  SlotSet slots;
  for (const StateBinding &b : signature.step.shared) {
    const ValueKind &k = signature.args[static_cast<size_t>(b.arg)];
    if (!k.isTensor)
      return makeError("cpu sequence @" + signature.name + ": shared slot argument #" + std::to_string(b.arg) +
                       " is not a tensor");
    std::vector<int64_t> shape = k.shape;
    for (int64_t &d : shape)
      d = std::max<int64_t>(d, 0);
    slots.push_back(dsa::Tensor(k.elem, shape));
  }
  return slots;
}

void Sequence::reset() {
  args_ = initialArgs_;
  position_ = initialPosition_;
}

Result<std::vector<SubStep>> planStep(const FunctionSignature &signature, int64_t position,
                                      dsa::ElementType xType, const std::vector<int64_t> &xShape,
                                      int64_t startPos, int64_t sharedGiven, bool stackChunk) {
  const std::string where = "sequence @" + signature.name + ": ";
  const StepRoles &roles = signature.step;
  if (!roles.present())
    return makeError(where + "the function has no step roles (x, start_pos, output)");
  if (Status st = checkRoles(signature, where); !st)
    return makeError(st.error());
  const ValueKind &xk = signature.args[static_cast<size_t>(roles.x)];
  if (xType != xk.elem)
    return makeError(where + "x: element type " + dsa::elementTypeName(xType) + ", expected " +
                     dsa::elementTypeName(xk.elem) + " (" + xk.typeString + ")");
  if (xShape.size() != xk.shape.size())
    return makeError(where + "x: shape " + shapeText(xShape) + " has rank " + std::to_string(xShape.size()) +
                     ", expected " + xk.typeString);
  for (size_t d = 0; d < xk.shape.size(); ++d)
    if (xk.shape[d] >= 0 && xShape[d] != xk.shape[d])
      return makeError(where + "x: shape " + shapeText(xShape) + ", expected " + xk.typeString + " (dimension " +
                       std::to_string(d) + ")");
  const int64_t s = xShape[0];
  if (s < 1)
    return makeError(where + "x: a step needs at least one token row (shape " + shapeText(xShape) + ")");
  if (startPos < 0)
    return makeError(where + "start_pos: " + std::to_string(startPos) + " is negative");
  if (startPos != position)
    return makeError(where + "start_pos: " + std::to_string(startPos) + " is not the sequence's next position " +
                     std::to_string(position) + " (steps run in order, each starting where the last ended" +
                     (startPos == 0 ? std::string("; reset() starts the sequence over") : std::string()) + ")");
  if (startPos > std::numeric_limits<int64_t>::max() - s)
    return makeError(where + "start_pos: " + std::to_string(startPos) + " + " + std::to_string(s) +
                     " tokens overflows int64");
  if (roles.maxSeqLen >= 0 && startPos + s > roles.maxSeqLen)
    return makeError(where + "max_seq_len: positions " + std::to_string(startPos) + " .. " +
                     std::to_string(startPos + s - 1) + " exceed the capacity of " + std::to_string(roles.maxSeqLen) +
                     " positions (max_seq_len)");
  // A multi-token step at start_pos > 0 is one call when the compiled code runs chunks (StepRoles::chunked), else
  // the tokens one at a time.
  const bool split = startPos > 0 && s > 1 && !roles.chunked && !(stackChunk && !roles.shared.empty());
  if (!roles.shared.empty()) {
    if (sharedGiven < 0)
      return makeError(where + "shared: the layer reads and publishes " + std::to_string(roles.shared.size()) +
                       " shared slots, none given");
    if (sharedGiven != static_cast<int64_t>(roles.shared.size()))
      return makeError(where + "shared: " + std::to_string(sharedGiven) + " slots given, the layer takes " +
                       std::to_string(roles.shared.size()));
    if (split)
      return makeError(where + "shared: a step of " + std::to_string(s) + " tokens at start_pos " +
                       std::to_string(startPos) + " > 0 of a layer with shared slots cannot be split per layer (as "
                       "token-by-token decode, token t reads slots published by later layers at token t - 1): "
                       "step the model one token at a time through every layer");
  }
  std::vector<SubStep> plan;
  if (!split)
    plan.push_back(SubStep{0, s, startPos});
  else
    for (int64_t t = 0; t < s; ++t)
      plan.push_back(SubStep{t, 1, startPos + t});
  return plan;
}

Result<std::vector<dsa::Tensor>> Sequence::run(const dsa::Tensor &x, int64_t startPos, SlotSet *shared,
                                                     std::vector<NamedTensor> *probes) {
  Result<std::vector<HostValue>> values = runValues(x, startPos, shared, probes);
  if (!values)
    return makeError(values.error());
  return tensorsOf(*values);
}

Result<std::vector<HostValue>> Sequence::runValues(const dsa::Tensor &x, int64_t startPos, SlotSet *shared,
                                                     std::vector<NamedTensor> *probes) {
  return runPlanned(x, startPos, shared, probes, false);
}

Result<std::vector<HostValue>> Sequence::runStackChunkValues(const dsa::Tensor &x, int64_t startPos,
                                                               SlotSet &shared, std::vector<NamedTensor> *probes) {
  return runPlanned(x, startPos, &shared, probes, true);
}

Result<std::vector<HostValue>> Sequence::runPlanned(const dsa::Tensor &x, int64_t startPos, SlotSet *shared,
                                                      std::vector<NamedTensor> *probes, bool stackChunk) {
  const std::string where = "cpu sequence @" + signature_.name + ": ";
  Result<std::vector<SubStep>> plan =
      planStep(signature_, position_, x.elementType(), x.shape(), startPos,
               shared ? static_cast<int64_t>(shared->size()) : -1, stackChunk);
  if (!plan)
    return makeError("cpu " + plan.error());
  const StepRoles &roles = signature_.step;
  const int64_t s = x.dim(0);
  const bool split = plan->size() > 1;
  std::vector<HostValue> args = args_;
  SlotSet slots = shared ? *shared : SlotSet();
  std::vector<dsa::Tensor> outputs;
  std::vector<HostValue> results;
  std::vector<NamedTensor> stepProbes;
  for (const SubStep &sub : *plan) {
    const int64_t t = sub.firstRow;
    args[static_cast<size_t>(roles.x)] = HostValue(split ? sliceRows(x, sub.firstRow, sub.rows) : x);
    args[static_cast<size_t>(roles.startPos)] = HostValue(dsa::Tensor::scalarI64(sub.startPos));
    for (size_t i = 0; i < roles.shared.size(); ++i)
      args[static_cast<size_t>(roles.shared[i].arg)] = slots[i];
    Result<std::vector<HostValue>> r = runner_(args, probes ? &stepProbes : nullptr);
    if (!r)
      return makeError(split ? where + "token " + std::to_string(t) + " (position " + std::to_string(startPos + t) +
                                   ") of the " + std::to_string(s) + "-token step: " + r.error()
                             : r.error());
    results = r.take();
    if (results.size() < signature_.numResults)
      return makeError(where + "the function returned " + std::to_string(results.size()) + " results, expected " +
                       std::to_string(signature_.numResults));
    for (const StateBinding &b : signature_.state)
      args[static_cast<size_t>(b.arg)] = results[static_cast<size_t>(b.result)];
    for (size_t i = 0; i < roles.shared.size(); ++i)
      slots[i] = results[static_cast<size_t>(roles.shared[i].result)];
    if (split)
      outputs.push_back(results[static_cast<size_t>(roles.output)].toTensor());
  }
  if (split) {
    Result<dsa::Tensor> out = concatRows(outputs, where + "output");
    if (!out)
      return makeError(out.error());
    results[static_cast<size_t>(roles.output)] = HostValue(out.take());
  }
  // Success: commit the state, the position and the slots.
  for (const StateBinding &b : signature_.state)
    args_[static_cast<size_t>(b.arg)] = args[static_cast<size_t>(b.arg)];
  position_ = startPos + s;
  if (shared && !roles.shared.empty())
    *shared = std::move(slots);
  if (probes)
    for (NamedTensor &p : stepProbes)
      probes->push_back(std::move(p));
  return results;
}

Result<std::vector<dsa::Tensor>> Sequence::step(const std::vector<std::pair<size_t, HostValue>> &stepArgs,
                                                      std::vector<NamedTensor> *probes) {
  std::vector<HostValue> args = args_;
  for (const auto &[index, value] : stepArgs) {
    if (index >= args.size())
      return makeError("cpu sequence @" + signature_.name + ": argument #" + std::to_string(index) +
                       " does not exist");
    for (const StateBinding &b : signature_.state)
      if (static_cast<size_t>(b.arg) == index)
        return makeError("cpu sequence @" + signature_.name + ": argument #" + std::to_string(index) +
                         " is state (the previous step's result #" + std::to_string(b.result) + ")");
    args[index] = value;
  }
  Result<std::vector<HostValue>> results = runner_(args, probes);
  if (!results)
    return makeError(results.error());
  if (results->size() < signature_.numResults)
    return makeError("cpu sequence @" + signature_.name + ": the function returned " +
                     std::to_string(results->size()) + " results, expected " +
                     std::to_string(signature_.numResults));
  for (const StateBinding &b : signature_.state)
    args_[static_cast<size_t>(b.arg)] = (*results)[static_cast<size_t>(b.result)];
  return tensorsOf(*results);
}

const HostValue *Sequence::state(size_t arg) const {
  for (const StateBinding &b : signature_.state)
    if (static_cast<size_t>(b.arg) == arg)
      return &args_[arg];
  return nullptr;
}

} // namespace dsa::runtime
