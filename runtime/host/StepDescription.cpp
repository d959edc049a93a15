//===- StepDescription.cpp - step descriptions: JSON <-> StepLibraryDescription (MLIR-free) ---===//
#include "dsa/Runtime/Host/StepDescription.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

namespace dsa::runtime {

namespace {

using nlohmann::json;

json kindToJson(const ValueKind &k) {
  json j;
  j["type"] = k.typeString;
  j["element"] = dsa::elementTypeName(k.elem);
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
  Result<dsa::ElementType> elem = elementTypeFromName(j["element"].get<std::string>());
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
    if (k.elem == dsa::ElementType::BF16)
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
    k.typeString = dsa::elementTypeName(k.elem);
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
  if (sk.isTensor || sk.elem != dsa::ElementType::I64)
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

} // namespace dsa::runtime
