//===- StepLibrary.cpp - AOT dsa CPU step libraries (MLIR-free) ----------------===//
#include "dsa/Runtime/CPU/StepLibrary.h"

#include "dsa/Runtime/CPU/HostFeatures.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

namespace dsa::cpu {

namespace {

using nlohmann::json;

json kindToJson(const ValueKind &k) {
  json j;
  j["type"] = k.typeString;
  j["element"] = interp::elementTypeName(k.elem);
  if (k.isTensor)
    j["shape"] = k.shape;
  else
    j["shape"] = nullptr;
  return j;
}

Result<ValueKind> kindFromJson(const json &j, const std::string &where) {
  if (!j.is_object())
    return makeError(where + ": expected an object");
  ValueKind k;
  if (!j.contains("element") || !j["element"].is_string())
    return makeError(where + ".element: missing or not a string");
  Result<interp::ElementType> elem = elementTypeFromName(j["element"].get<std::string>());
  if (!elem)
    return makeError(where + ".element: " + elem.error());
  k.elem = *elem;
  if (j.contains("type") && j["type"].is_string())
    k.typeString = j["type"].get<std::string>();
  if (!j.contains("shape"))
    return makeError(where + ".shape: missing (null for a scalar)");
  const json &shape = j["shape"];
  if (shape.is_null()) {
    k.isTensor = false;
    if (k.elem == interp::ElementType::BF16)
      return makeError(where + ".element: a bf16 scalar cannot be passed");
  } else if (shape.is_array()) {
    k.isTensor = true;
    if (shape.size() > 16)
      return makeError(where + ".shape: rank " + std::to_string(shape.size()) + " > 16");
    for (size_t d = 0; d < shape.size(); ++d) {
      if (!shape[d].is_number_integer() || shape[d].get<int64_t>() < -1)
        return makeError(where + ".shape[" + std::to_string(d) + "]: expected an integer >= -1");
      k.shape.push_back(shape[d].get<int64_t>());
    }
  } else {
    return makeError(where + ".shape: expected an array or null");
  }
  if (k.typeString.empty())
    k.typeString = interp::elementTypeName(k.elem);
  return k;
}

Result<std::vector<ValueKind>> kindsFromJson(const json &j, const std::string &where) {
  if (!j.is_array())
    return makeError(where + ": missing or not an array");
  std::vector<ValueKind> kinds;
  for (size_t i = 0; i < j.size(); ++i) {
    Result<ValueKind> k = kindFromJson(j[i], where + "[" + std::to_string(i) + "]");
    if (!k)
      return makeError(k.error());
    kinds.push_back(k.take());
  }
  return kinds;
}

const char *stateInitName(StateInit init) { return init == StateInit::NegInf ? "-inf" : "zeros"; }

/// An {"arg": N, "result": M} binding with arg < numArgs and result < numResults.
Result<StateBinding> bindingFromJson(const json &j, const std::string &where, size_t numArgs, size_t numResults) {
  if (!j.is_object() || !j.contains("arg") || !j.contains("result") || !j["arg"].is_number_integer() ||
      !j["result"].is_number_integer())
    return makeError(where + ": expected {\"arg\": N, \"result\": M}");
  StateBinding b{j["arg"].get<int64_t>(), j["result"].get<int64_t>()};
  if (b.arg < 0 || b.arg >= static_cast<int64_t>(numArgs) || b.result < 0 ||
      b.result >= static_cast<int64_t>(numResults))
    return makeError(where + ": arg " + std::to_string(b.arg) + " / result " + std::to_string(b.result) +
                     " out of range");
  return b;
}

/// The "step" object of a function (version 2).
Result<StepRoles> rolesFromJson(const json &j, const std::string &where, const FunctionSignature &f) {
  if (!j.is_object())
    return makeError(where + ": expected an object");
  StepRoles roles;
  auto index = [&](const char *key, size_t limit, const char *what) -> Result<int64_t> {
    if (!j.contains(key) || !j[key].is_number_integer())
      return makeError(where + "." + key + ": missing or not an integer");
    int64_t v = j[key].get<int64_t>();
    if (v < 0 || v >= static_cast<int64_t>(limit))
      return makeError(where + "." + key + ": " + std::to_string(v) + " is not one of the function's " +
                       std::to_string(limit) + " " + what);
    return v;
  };
  Result<int64_t> x = index("x", f.args.size(), "arguments");
  if (!x)
    return makeError(x.error());
  roles.x = *x;
  const ValueKind &xk = f.args[static_cast<size_t>(roles.x)];
  if (!xk.isTensor || xk.shape.empty())
    return makeError(where + ".x: argument #" + std::to_string(roles.x) + " (" + xk.typeString +
                     ") is not a tensor of token rows");
  Result<int64_t> sp = index("start_pos", f.args.size(), "arguments");
  if (!sp)
    return makeError(sp.error());
  roles.startPos = *sp;
  const ValueKind &sk = f.args[static_cast<size_t>(roles.startPos)];
  if (sk.isTensor || sk.elem != interp::ElementType::I64)
    return makeError(where + ".start_pos: argument #" + std::to_string(roles.startPos) + " (" + sk.typeString +
                     ") is not an i64 scalar");
  Result<int64_t> out = index("output", f.numResults, "results");
  if (!out)
    return makeError(out.error());
  roles.output = *out;
  const ValueKind &ok = f.results[static_cast<size_t>(roles.output)];
  if (!ok.isTensor || ok.shape.empty())
    return makeError(where + ".output: result #" + std::to_string(roles.output) + " (" + ok.typeString +
                     ") is not a tensor of token rows");
  if (j.contains("max_seq_len") && !j["max_seq_len"].is_null()) {
    if (!j["max_seq_len"].is_number_integer() || j["max_seq_len"].get<int64_t>() < 1)
      return makeError(where + ".max_seq_len: expected a positive integer or null");
    roles.maxSeqLen = j["max_seq_len"].get<int64_t>();
  }
  if (j.contains("shared")) {
    if (!j["shared"].is_array())
      return makeError(where + ".shared: expected an array");
    for (size_t i = 0; i < j["shared"].size(); ++i) {
      Result<StateBinding> b = bindingFromJson(j["shared"][i], where + ".shared[" + std::to_string(i) + "]",
                                               f.args.size(), f.numResults);
      if (!b)
        return makeError(b.error());
      roles.shared.push_back(*b);
    }
  }
  return roles;
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

} // namespace

std::string describeStepLibrary(const StepLibraryDescription &d) {
  json j;
  j["format"] = kStepLibraryFormat;
  j["version"] = kStepLibraryVersion;
  j["library"] = d.library;
  j["target_cpu"] = d.targetCpu;
  j["target_features"] = d.targetFeatures;
  j["parallel"] = d.parallel;
  j["functions"] = json::array();
  for (const FunctionSignature &f : d.functions) {
    json fj;
    fj["name"] = f.name;
    fj["symbol"] = "_mlir_" + f.name;
    fj["args"] = json::array();
    for (const ValueKind &k : f.args)
      fj["args"].push_back(kindToJson(k));
    fj["results"] = json::array();
    for (const ValueKind &k : f.results)
      fj["results"].push_back(kindToJson(k));
    fj["num_results"] = f.numResults;
    fj["probes"] = f.probeNames;
    fj["state"] = json::array();
    for (const StateBinding &s : f.state)
      fj["state"].push_back({{"arg", s.arg}, {"result", s.result}, {"init", stateInitName(s.init)}});
    if (f.step.present()) {
      json sj;
      sj["x"] = f.step.x;
      sj["start_pos"] = f.step.startPos;
      sj["output"] = f.step.output;
      sj["max_seq_len"] = f.step.maxSeqLen < 0 ? json(nullptr) : json(f.step.maxSeqLen);
      sj["shared"] = json::array();
      for (const StateBinding &b : f.step.shared)
        sj["shared"].push_back({{"arg", b.arg}, {"result", b.result}});
      fj["step"] = sj;
    }
    fj["writable"] = f.writableArgs;
    fj["in_place"] = json::array();
    for (const StateBinding &b : f.inPlace)
      fj["in_place"].push_back({{"arg", b.arg}, {"result", b.result}});
    j["functions"].push_back(fj);
  }
  return j.dump(2) + "\n";
}

Result<StepLibraryDescription> parseStepLibrary(const std::string &text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return makeError("step description: not a JSON object");
  if (!j.contains("format") || j["format"] != kStepLibraryFormat)
    return makeError(std::string("format: expected \"") + kStepLibraryFormat + "\"");
  if (!j.contains("version") || !j["version"].is_number_integer() ||
      j["version"].get<int64_t>() < 1 || j["version"].get<int64_t>() > kStepLibraryVersion)
    return makeError("version: expected 1 .. " + std::to_string(kStepLibraryVersion));
  const int64_t version = j["version"].get<int64_t>();
  StepLibraryDescription d;
  if (!j.contains("library") || !j["library"].is_string() || j["library"].get<std::string>().empty())
    return makeError("library: missing or not a non-empty string");
  d.library = j["library"].get<std::string>();
  if (j.contains("target_cpu") && j["target_cpu"].is_string())
    d.targetCpu = j["target_cpu"].get<std::string>();
  if (j.contains("target_features")) {
    if (version < 4)
      return makeError("target_features: needs version 4");
    if (!j["target_features"].is_array())
      return makeError("target_features: expected an array of feature names");
    for (const json &f : j["target_features"]) {
      if (!f.is_string() || f.get<std::string>().empty())
        return makeError("target_features: expected an array of feature names, got " + f.dump());
      d.targetFeatures.push_back(f.get<std::string>());
    }
  }
  if (j.contains("parallel")) {
    if (!j["parallel"].is_boolean())
      return makeError("parallel: expected a boolean");
    d.parallel = j["parallel"].get<bool>();
  }
  if (!j.contains("functions") || !j["functions"].is_array())
    return makeError("functions: missing or not an array");
  for (size_t i = 0; i < j["functions"].size(); ++i) {
    const json &fj = j["functions"][i];
    const std::string where = "functions[" + std::to_string(i) + "]";
    if (!fj.is_object() || !fj.contains("name") || !fj["name"].is_string())
      return makeError(where + ".name: missing or not a string");
    FunctionSignature f;
    f.name = fj["name"].get<std::string>();
    auto args = kindsFromJson(fj.contains("args") ? fj["args"] : json(), where + ".args");
    if (!args)
      return makeError(args.error());
    f.args = args.take();
    auto results = kindsFromJson(fj.contains("results") ? fj["results"] : json(), where + ".results");
    if (!results)
      return makeError(results.error());
    f.results = results.take();
    if (!fj.contains("num_results") || !fj["num_results"].is_number_unsigned() ||
        fj["num_results"].get<size_t>() > f.results.size())
      return makeError(where + ".num_results: missing or more than the " + std::to_string(f.results.size()) +
                       " results");
    f.numResults = fj["num_results"].get<size_t>();
    if (fj.contains("probes")) {
      if (!fj["probes"].is_array())
        return makeError(where + ".probes: expected an array of names");
      for (const json &p : fj["probes"]) {
        if (!p.is_string())
          return makeError(where + ".probes: expected an array of names");
        f.probeNames.push_back(p.get<std::string>());
      }
    }
    if (f.numResults + f.probeNames.size() != f.results.size())
      return makeError(where + ": num_results (" + std::to_string(f.numResults) + ") + probes (" +
                       std::to_string(f.probeNames.size()) + ") != results (" + std::to_string(f.results.size()) +
                       ")");
    if (fj.contains("state")) {
      if (!fj["state"].is_array())
        return makeError(where + ".state: expected an array");
      for (size_t s = 0; s < fj["state"].size(); ++s) {
        const json &sj = fj["state"][s];
        const std::string sw = where + ".state[" + std::to_string(s) + "]";
        Result<StateBinding> b = bindingFromJson(sj, sw, f.args.size(), f.numResults);
        if (!b)
          return makeError(b.error());
        if (sj.contains("init")) {
          if (version < 2)
            return makeError(sw + ".init: needs version 2");
          if (sj["init"] == "zeros")
            b->init = StateInit::Zeros;
          else if (sj["init"] == "-inf")
            b->init = StateInit::NegInf;
          else
            return makeError(sw + ".init: expected \"zeros\" or \"-inf\"");
        }
        f.state.push_back(*b);
      }
    }
    if (fj.contains("step") && !fj["step"].is_null()) {
      if (version < 2)
        return makeError(where + ".step: needs version 2");
      Result<StepRoles> roles = rolesFromJson(fj["step"], where + ".step", f);
      if (!roles)
        return makeError(roles.error());
      f.step = roles.take();
    }
    if (fj.contains("writable")) {
      if (version < 3)
        return makeError(where + ".writable: needs version 3");
      if (!fj["writable"].is_array())
        return makeError(where + ".writable: expected an array of argument indices");
      for (const json &a : fj["writable"]) {
        if (!a.is_number_integer() || a.get<int64_t>() < 0 || a.get<int64_t>() >= static_cast<int64_t>(f.args.size()) ||
            !f.args[a.get<size_t>()].isTensor)
          return makeError(where + ".writable: " + a.dump() + " is not one of the function's tensor arguments");
        f.writableArgs.push_back(a.get<int64_t>());
      }
    }
    if (fj.contains("in_place")) {
      if (version < 3)
        return makeError(where + ".in_place: needs version 3");
      if (!fj["in_place"].is_array())
        return makeError(where + ".in_place: expected an array");
      for (size_t b = 0; b < fj["in_place"].size(); ++b) {
        const std::string bw = where + ".in_place[" + std::to_string(b) + "]";
        Result<StateBinding> binding = bindingFromJson(fj["in_place"][b], bw, f.args.size(), f.results.size());
        if (!binding)
          return makeError(binding.error());
        const ValueKind &ak = f.args[static_cast<size_t>(binding->arg)];
        const ValueKind &rk = f.results[static_cast<size_t>(binding->result)];
        if (!ak.isTensor || ak.elem != rk.elem || ak.shape.size() != rk.shape.size())
          return makeError(bw + ": argument #" + std::to_string(binding->arg) + " (" + ak.typeString +
                           ") cannot be result #" + std::to_string(binding->result) + " (" + rk.typeString + ")");
        f.inPlace.push_back(*binding);
      }
    }
    d.functions.push_back(std::move(f));
  }
  return d;
}

Result<std::unique_ptr<CPUStepLibrary>> CPUStepLibrary::open(const std::string &descriptionPath) {
  std::ifstream in(descriptionPath);
  if (!in)
    return makeError("cannot read step description '" + descriptionPath + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  Result<StepLibraryDescription> d = parseStepLibrary(ss.str());
  if (!d)
    return makeError(descriptionPath + ": " + d.error());
  std::unique_ptr<CPUStepLibrary> lib(new CPUStepLibrary());
  lib->description_ = d.take();
  const std::string &libName = lib->description_.library;
  const std::string libPath = libName.front() == '/' ? libName : directoryOf(descriptionPath) + "/" + libName;
  // Before dlopen: code compiled for features this CPU lacks would stop at its first such instruction (SIGILL).
  if (Status st = checkHostHasFeatures("step library " + libName, lib->description_.targetCpu,
                                       lib->description_.targetFeatures);
      !st)
    return makeError(descriptionPath + ": " + st.error());
  lib->handle_ = dlopen(libPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) {
    const char *why = dlerror();
    return makeError("cannot load step library '" + libPath + "': " + (why ? why : "unknown dlopen error"));
  }
  if (void *hook = dlsym(lib->handle_, "dsa_cpu_fail_hook"))
    *reinterpret_cast<void (**)(int32_t)>(hook) = &dsaCpuRecordFailure;
  for (const FunctionSignature &f : lib->description_.functions) {
    const std::string symbol = "_mlir_" + f.name;
    void *entry = dlsym(lib->handle_, symbol.c_str());
    if (!entry)
      return makeError("step library '" + libPath + "' has no symbol " + symbol + " (function @" + f.name + ")");
    lib->entries_[f.name] = reinterpret_cast<PackedFunction>(entry);
  }
  return lib;
}

CPUStepLibrary::~CPUStepLibrary() {
  if (handle_)
    dlclose(handle_);
}

const FunctionSignature *CPUStepLibrary::signature(const std::string &name) const {
  for (const FunctionSignature &f : description_.functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

Result<std::vector<interp::Tensor>> CPUStepLibrary::run(const std::string &name, const std::vector<CPUValue> &args,
                                                        std::vector<NamedTensor> *probes) const {
  const FunctionSignature *sig = signature(name);
  if (!sig) {
    std::string known;
    for (const FunctionSignature &f : description_.functions)
      known += (known.empty() ? "@" : ", @") + f.name;
    return makeError("cpu step library: no function @" + name + " (it has " + (known.empty() ? "none" : known) +
                     ")");
  }
  return invokePacked(*sig, entries_.at(name), args, probes);
}

Result<std::vector<CPUValue>> CPUStepLibrary::runValues(const std::string &name, const std::vector<CPUValue> &args,
                                                        std::vector<NamedTensor> *probes) const {
  const FunctionSignature *sig = signature(name);
  if (!sig) {
    Result<std::vector<interp::Tensor>> unknown = run(name, args, probes);
    return makeError(unknown ? std::string("cpu step library: no function @" + name) : unknown.error());
  }
  return invokePackedValues(*sig, entries_.at(name), args, probes);
}

namespace {

/// A Tensor runner as a ValueRunner (its results as Tensor values).
CPUSequence::ValueRunner valuesOf(CPUSequence::Runner runner) {
  return [runner = std::move(runner)](const std::vector<CPUValue> &args,
                                      std::vector<NamedTensor> *probes) -> Result<std::vector<CPUValue>> {
    Result<std::vector<interp::Tensor>> r = runner(args, probes);
    if (!r)
      return makeError(r.error());
    std::vector<CPUValue> values;
    values.reserve(r->size());
    for (interp::Tensor &t : *r)
      values.emplace_back(std::move(t));
    return values;
  };
}

std::vector<interp::Tensor> tensorsOf(const std::vector<CPUValue> &values) {
  std::vector<interp::Tensor> out;
  out.reserve(values.size());
  for (const CPUValue &v : values)
    out.push_back(v.toTensor());
  return out;
}

} // namespace

Result<CPUSequence> CPUSequence::create(FunctionSignature signature, Runner runner, std::vector<CPUValue> initialArgs) {
  return create(std::move(signature), valuesOf(std::move(runner)), std::move(initialArgs));
}

Result<CPUSequence> CPUSequence::start(FunctionSignature signature, Runner runner, std::map<size_t, CPUValue> fixed) {
  return start(std::move(signature), valuesOf(std::move(runner)), std::move(fixed));
}

Result<CPUSequence> CPUSequence::create(FunctionSignature signature, ValueRunner runner,
                                        std::vector<CPUValue> initialArgs, int64_t position) {
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
  CPUSequence seq;
  seq.signature_ = std::move(signature);
  seq.runner_ = std::move(runner);
  // The caller's inPlace buffers become read-only views: the first step copies them (the sequence writes only
  // buffers its runner gave it), and reset() finds them as given.
  for (CPUValue &v : initialArgs)
    if (v.isInPlace())
      v = CPUValue(v.sharedBuffer());
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
interp::Tensor sliceRows(const interp::Tensor &t, int64_t begin, int64_t count) {
  std::vector<int64_t> shape = t.shape();
  const int64_t rowSize = shape[0] == 0 ? 0 : t.numElements() / shape[0];
  shape[0] = count;
  interp::Tensor out(t.elementType(), shape);
  if (t.isFloat())
    std::copy(t.floats() + begin * rowSize, t.floats() + (begin + count) * rowSize, out.floats());
  else
    std::copy(t.ints() + begin * rowSize, t.ints() + (begin + count) * rowSize, out.ints());
  return out;
}

/// `parts` concatenated along dimension 0 (same element type and trailing dimensions, checked).
Result<interp::Tensor> concatRows(const std::vector<interp::Tensor> &parts, const std::string &what) {
  std::vector<int64_t> shape = parts.front().shape();
  int64_t rows = 0;
  for (const interp::Tensor &p : parts) {
    if (p.elementType() != parts.front().elementType() || p.rank() != parts.front().rank() ||
        !std::equal(p.shape().begin() + 1, p.shape().end(), shape.begin() + 1))
      return makeError(what + ": the tokens' outputs have different types (" + p.typeString() + " vs " +
                       parts.front().typeString() + ")");
    rows += p.dim(0);
  }
  shape[0] = rows;
  interp::Tensor out(parts.front().elementType(), shape);
  int64_t at = 0;
  for (const interp::Tensor &p : parts) {
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
  for (const std::vector<StateBinding> *list : {&sig.state, &r.shared})
    for (const StateBinding &b : *list)
      if (b.arg < 0 || b.arg >= numArgs || b.result < 0 || b.result >= numResults)
        return makeError(where + "binding arg " + std::to_string(b.arg) + " / result " + std::to_string(b.result) +
                         " out of range");
  return Status::success();
}

} // namespace

Result<CPUSequence> CPUSequence::start(FunctionSignature signature, ValueRunner runner,
                                       std::map<size_t, CPUValue> fixed) {
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
  std::vector<CPUValue> args;
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
      interp::Tensor t(k.elem, k.shape);
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
    args.push_back(k.isTensor ? interp::Tensor(k.elem, shape) : interp::Tensor::scalarI64(0));
  }
  for (const auto &[index, value] : fixed)
    if (index >= signature.args.size())
      return makeError(where + "argument #" + std::to_string(index) + " does not exist (the function takes " +
                       std::to_string(signature.args.size()) + ")");
  return create(std::move(signature), std::move(runner), std::move(args));
}

Result<CPUSequence::SlotSet> CPUSequence::initialSlots(const FunctionSignature &signature) {
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
    slots.push_back(interp::Tensor(k.elem, shape));
  }
  return slots;
}

void CPUSequence::reset() {
  args_ = initialArgs_;
  position_ = initialPosition_;
}

Result<std::vector<SubStep>> planStep(const FunctionSignature &signature, int64_t position,
                                      interp::ElementType xType, const std::vector<int64_t> &xShape,
                                      int64_t startPos, int64_t sharedGiven) {
  const std::string where = "sequence @" + signature.name + ": ";
  const StepRoles &roles = signature.step;
  if (!roles.present())
    return makeError(where + "the function has no step roles (x, start_pos, output)");
  if (Status st = checkRoles(signature, where); !st)
    return makeError(st.error());
  const ValueKind &xk = signature.args[static_cast<size_t>(roles.x)];
  if (xType != xk.elem)
    return makeError(where + "x: element type " + interp::elementTypeName(xType) + ", expected " +
                     interp::elementTypeName(xk.elem) + " (" + xk.typeString + ")");
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
  const bool split = startPos > 0 && s > 1;
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

Result<std::vector<interp::Tensor>> CPUSequence::run(const interp::Tensor &x, int64_t startPos, SlotSet *shared,
                                                     std::vector<NamedTensor> *probes) {
  Result<std::vector<CPUValue>> values = runValues(x, startPos, shared, probes);
  if (!values)
    return makeError(values.error());
  return tensorsOf(*values);
}

Result<std::vector<CPUValue>> CPUSequence::runValues(const interp::Tensor &x, int64_t startPos, SlotSet *shared,
                                                     std::vector<NamedTensor> *probes) {
  const std::string where = "cpu sequence @" + signature_.name + ": ";
  Result<std::vector<SubStep>> plan =
      planStep(signature_, position_, x.elementType(), x.shape(), startPos,
               shared ? static_cast<int64_t>(shared->size()) : -1);
  if (!plan)
    return makeError("cpu " + plan.error());
  const StepRoles &roles = signature_.step;
  const int64_t s = x.dim(0);
  const bool split = plan->size() > 1;
  std::vector<CPUValue> args = args_;
  SlotSet slots = shared ? *shared : SlotSet();
  std::vector<interp::Tensor> outputs;
  std::vector<CPUValue> results;
  std::vector<NamedTensor> stepProbes;
  for (const SubStep &sub : *plan) {
    const int64_t t = sub.firstRow;
    args[static_cast<size_t>(roles.x)] = CPUValue(split ? sliceRows(x, sub.firstRow, sub.rows) : x);
    args[static_cast<size_t>(roles.startPos)] = CPUValue(interp::Tensor::scalarI64(sub.startPos));
    for (size_t i = 0; i < roles.shared.size(); ++i)
      args[static_cast<size_t>(roles.shared[i].arg)] = slots[i];
    Result<std::vector<CPUValue>> r = runner_(args, probes ? &stepProbes : nullptr);
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
    Result<interp::Tensor> out = concatRows(outputs, where + "output");
    if (!out)
      return makeError(out.error());
    results[static_cast<size_t>(roles.output)] = CPUValue(out.take());
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

Result<std::vector<interp::Tensor>> CPUSequence::step(const std::vector<std::pair<size_t, CPUValue>> &stepArgs,
                                                      std::vector<NamedTensor> *probes) {
  std::vector<CPUValue> args = args_;
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
  Result<std::vector<CPUValue>> results = runner_(args, probes);
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

const CPUValue *CPUSequence::state(size_t arg) const {
  for (const StateBinding &b : signature_.state)
    if (static_cast<size_t>(b.arg) == arg)
      return &args_[arg];
  return nullptr;
}

} // namespace dsa::cpu
