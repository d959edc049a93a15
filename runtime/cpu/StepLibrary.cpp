//===- StepLibrary.cpp - AOT dsa CPU step libraries (MLIR-free) ----------------===//
#include "dsa/Runtime/CPU/StepLibrary.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <fstream>
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
      fj["state"].push_back({{"arg", s.arg}, {"result", s.result}});
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
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != kStepLibraryVersion)
    return makeError("version: expected " + std::to_string(kStepLibraryVersion));
  StepLibraryDescription d;
  if (!j.contains("library") || !j["library"].is_string() || j["library"].get<std::string>().empty())
    return makeError("library: missing or not a non-empty string");
  d.library = j["library"].get<std::string>();
  if (j.contains("target_cpu") && j["target_cpu"].is_string())
    d.targetCpu = j["target_cpu"].get<std::string>();
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
        if (!sj.is_object() || !sj.contains("arg") || !sj.contains("result") || !sj["arg"].is_number_integer() ||
            !sj["result"].is_number_integer())
          return makeError(sw + ": expected {\"arg\": N, \"result\": M}");
        StateBinding b{sj["arg"].get<int64_t>(), sj["result"].get<int64_t>()};
        if (b.arg < 0 || b.arg >= static_cast<int64_t>(f.args.size()) || b.result < 0 ||
            b.result >= static_cast<int64_t>(f.numResults))
          return makeError(sw + ": arg " + std::to_string(b.arg) + " / result " + std::to_string(b.result) +
                           " out of range");
        f.state.push_back(b);
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

Result<CPUSequence> CPUSequence::create(FunctionSignature signature, Runner runner, std::vector<CPUValue> initialArgs) {
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
  seq.args_ = std::move(initialArgs);
  return seq;
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
  Result<std::vector<interp::Tensor>> results = runner_(args, probes);
  if (!results)
    return results;
  for (const StateBinding &b : signature_.state)
    args_[static_cast<size_t>(b.arg)] = CPUValue((*results)[static_cast<size_t>(b.result)]);
  return results;
}

const CPUValue *CPUSequence::state(size_t arg) const {
  for (const StateBinding &b : signature_.state)
    if (static_cast<size_t>(b.arg) == arg)
      return &args_[arg];
  return nullptr;
}

} // namespace dsa::cpu
