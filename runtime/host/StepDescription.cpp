//===- StepDescription.cpp - step descriptions: JSON <-> StepLibraryDescription, compiled signatures (MLIR-free) ===//
#include "dsa/Runtime/Host/StepDescription.h"

#include "dsa/Runtime/Host/FileDigest.h"
#include "dsa/Support/StrictJson.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

namespace dsa::runtime {

namespace {

using nlohmann::json;
using dsa::json::checkKnownKeys;
using FieldReader = dsa::json::FieldReader<json>;
/// The step description's wording of a missing or mistyped field: "<path>: missing or not an integer".
constexpr dsa::json::FieldMessages kMessages = dsa::json::FieldMessages::Combined;

json kindToJson(const ValueKind &k) {
  json j;
  j["type"] = kindSpelling(k);
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
  if (Status st = checkKnownKeys(j, where, {"type", "element", "shape"}); !st)
    return makeError(st.error());
  ValueKind k;
  if (!j.contains("element") || !j["element"].is_string())
    return makeError(where + ".element: missing or not a string");
  Result<dsa::ElementType> elem = elementTypeFromName(j["element"].get<std::string>());
  if (!elem)
    return makeError(where + ".element: " + elem.error());
  k.elem = *elem;
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
  k.typeString = kindSpelling(k);
  // "type" is what messages show: it must say what element and shape say.
  if (j.contains("type") && (!j["type"].is_string() || j["type"].get<std::string>() != k.typeString))
    return makeError(where + ".type: " + j["type"].dump() + " disagrees with its element and shape (" +
                     k.typeString + ")");
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

/// An {"arg": N, "result": M} binding (plus the keys `extra` allows) with arg < numArgs and result < numResults.
Result<StateBinding> bindingFromJson(const json &j, const std::string &where, size_t numArgs, size_t numResults,
                                     bool withInit = false) {
  if (!j.is_object() || !j.contains("arg") || !j.contains("result") || !j["arg"].is_number_integer() ||
      !j["result"].is_number_integer())
    return makeError(where + ": expected {\"arg\": N, \"result\": M}");
  if (Status st = withInit ? checkKnownKeys(j, where, {"arg", "result", "init"}) : checkKnownKeys(j, where, {"arg", "result"});
      !st)
    return makeError(st.error());
  StateBinding b{j["arg"].get<int64_t>(), j["result"].get<int64_t>()};
  if (b.arg < 0 || b.arg >= static_cast<int64_t>(numArgs) || b.result < 0 ||
      b.result >= static_cast<int64_t>(numResults))
    return makeError(where + ": arg " + std::to_string(b.arg) + " / result " + std::to_string(b.result) +
                     " out of range");
  return b;
}

/// The "step" object of a function.
Result<StepRoles> rolesFromJson(const json &j, const std::string &where, const FunctionSignature &f) {
  if (!j.is_object())
    return makeError(where + ": expected an object");
  if (Status st = checkKnownKeys(j, where, {"x", "start_pos", "output", "max_seq_len", "shared", "chunked"}); !st)
    return makeError(st.error());
  StepRoles roles;
  FieldReader r(j, where, kMessages);
  auto index = [&](const char *key, size_t limit, const char *what) -> Result<int64_t> {
    int64_t v = r.i64(key);
    if (!r.ok())
      return makeError(r.error());
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
  // An i64 scalar, or a tensor<B x i64> for a batched decode step (runtime::Batch, Batch.h).
  if (sk.elem != dsa::ElementType::I64 || (sk.isTensor && sk.shape.size() != 1))
    return makeError(where + ".start_pos: argument #" + std::to_string(roles.startPos) + " (" + sk.typeString +
                     ") is not an i64 scalar or a tensor<B x i64>");
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
  if (j.contains("chunked")) { // absent in descriptions written before it: such libraries split (false)
    if (!j["chunked"].is_boolean())
      return makeError(where + ".chunked: expected true or false");
    roles.chunked = j["chunked"].get<bool>();
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

/// An AttentionConfig in its canonical JSON form (StepDescription.h): every key present, named as the
/// #dsa.attn_config parameters, "yarn" and "compress" null when absent.
json attentionToJson(const AttentionConfig &a) {
  json j;
  j["layer_id"] = a.layerId;
  j["dim"] = a.dim;
  j["n_heads"] = a.nHeads;
  j["head_dim"] = a.headDim;
  j["rope_head_dim"] = a.ropeHeadDim;
  j["q_lora_rank"] = a.qLoraRank;
  j["o_groups"] = a.oGroups;
  j["o_lora_rank"] = a.oLoraRank;
  j["window_size"] = a.windowSize;
  j["compress_ratio"] = a.compressRatio;
  j["norm_eps"] = a.normEps;
  json rope;
  rope["rope_dim"] = a.ropeDim;
  rope["theta"] = a.ropeTheta;
  if (a.yarn)
    rope["yarn"] = {{"original_seq_len", a.yarn->originalSeqLen},
                    {"factor", a.yarn->factor},
                    {"beta_fast", a.yarn->betaFast},
                    {"beta_slow", a.yarn->betaSlow}};
  else
    rope["yarn"] = nullptr;
  j["rope"] = rope;
  if (a.compress) {
    const AttentionConfig::Compress &c = *a.compress;
    j["compress"] = {{"is_kv_source", c.isKvSource},
                     {"is_index_source", c.isIndexSource},
                     {"is_candidate_source", c.isCandidateSource},
                     {"uses_candidates", c.usesCandidates},
                     {"index_n_heads", c.indexNHeads},
                     {"index_head_dim", c.indexHeadDim},
                     {"index_topk", c.indexTopk},
                     {"candidate_topk_blocks", c.candidateTopkBlocks},
                     {"candidate_block_size", c.candidateBlockSize},
                     {"max_seq_len", c.maxSeqLen},
                     {"index_k_source", c.indexKSource},
                     {"tie_order", c.tieOrder}};
  } else {
    j["compress"] = nullptr;
  }
  return j;
}

/// `parent[key]` (`at` names `parent`), which must be present and hold null (`into` = nullptr) or an object of only
/// the keys `allowed` (`into` = it); absent is "<at>.<key>: missing (<nullMeans>)".
Status objectOrNull(const json &parent, const std::string &at, const char *key, const char *nullMeans,
                    std::initializer_list<const char *> allowed, const json *&into) {
  const std::string path = at + "." + key;
  into = nullptr;
  if (!parent.contains(key))
    return makeError(path + ": missing (" + nullMeans + ")");
  const json &value = parent[key];
  if (value.is_null())
    return Status::success();
  if (!value.is_object())
    return makeError(path + ": expected an object or null");
  if (Status st = checkKnownKeys(value, path, allowed); !st)
    return st;
  into = &value;
  return Status::success();
}

/// Reads attentionToJson's form; every key is required, an unknown one is an error; errors name the field.
Result<AttentionConfig> attentionFromJson(const json &j, const std::string &where) {
  if (!j.is_object())
    return makeError(where + ": expected an object");
  if (Status st = checkKnownKeys(j, where,
                                 {"layer_id", "dim", "n_heads", "head_dim", "rope_head_dim", "q_lora_rank", "o_groups",
                                  "o_lora_rank", "window_size", "compress_ratio", "norm_eps", "rope", "compress"});
      !st)
    return makeError(st.error());
  FieldReader r(j, where, kMessages);
  AttentionConfig a;
  a.layerId = r.i64("layer_id");
  a.dim = r.i64("dim");
  a.nHeads = r.i64("n_heads");
  a.headDim = r.i64("head_dim");
  a.ropeHeadDim = r.i64("rope_head_dim");
  a.qLoraRank = r.i64("q_lora_rank");
  a.oGroups = r.i64("o_groups");
  a.oLoraRank = r.i64("o_lora_rank");
  a.windowSize = r.i64("window_size");
  a.compressRatio = r.i64("compress_ratio");
  a.normEps = r.f64("norm_eps");
  const json *rope = r.object("rope");
  if (!r.ok())
    return makeError(r.error());
  const std::string ropeAt = where + ".rope";
  if (Status st = checkKnownKeys(*rope, ropeAt, {"rope_dim", "theta", "yarn"}); !st)
    return makeError(st.error());
  FieldReader ropeReader(*rope, ropeAt, kMessages);
  a.ropeDim = ropeReader.i64("rope_dim");
  a.ropeTheta = ropeReader.f64("theta");
  if (!ropeReader.ok())
    return makeError(ropeReader.error());
  const json *y = nullptr;
  if (Status st = objectOrNull(*rope, ropeAt, "yarn", "null without YaRN",
                               {"original_seq_len", "factor", "beta_fast", "beta_slow"}, y);
      !st)
    return makeError(st.error());
  if (y) {
    FieldReader yr(*y, ropeAt + ".yarn", kMessages);
    AttentionConfig::Yarn yarn;
    yarn.originalSeqLen = yr.i64("original_seq_len");
    yarn.factor = yr.f64("factor");
    yarn.betaFast = yr.f64("beta_fast");
    yarn.betaSlow = yr.f64("beta_slow");
    if (!yr.ok())
      return makeError(yr.error());
    a.yarn = yarn;
  }
  const json *c = nullptr;
  if (Status st = objectOrNull(j, where, "compress", "null for a window-only layer",
                               {"is_kv_source", "is_index_source", "is_candidate_source", "uses_candidates",
                                "index_n_heads", "index_head_dim", "index_topk", "candidate_topk_blocks",
                                "candidate_block_size", "max_seq_len", "index_k_source", "tie_order"},
                               c);
      !st)
    return makeError(st.error());
  if (c) {
    FieldReader cr(*c, where + ".compress", kMessages);
    AttentionConfig::Compress cc;
    cc.isKvSource = cr.boolean("is_kv_source");
    cc.isIndexSource = cr.boolean("is_index_source");
    cc.isCandidateSource = cr.boolean("is_candidate_source");
    cc.usesCandidates = cr.boolean("uses_candidates");
    cc.indexNHeads = cr.i64("index_n_heads");
    cc.indexHeadDim = cr.i64("index_head_dim");
    cc.indexTopk = cr.i64("index_topk");
    cc.candidateTopkBlocks = cr.i64("candidate_topk_blocks");
    cc.candidateBlockSize = cr.i64("candidate_block_size");
    cc.maxSeqLen = cr.i64("max_seq_len");
    cc.indexKSource = cr.nonEmptyStr("index_k_source");
    cc.tieOrder = cr.nonEmptyStr("tie_order");
    if (!cr.ok())
      return makeError(cr.error());
    a.compress = cc;
  }
  return a;
}

/// The first field where two canonical JSON values differ, as a path under `path` ("rope.theta"), with both
/// values' text; empty path and texts when they agree.
struct JsonDifference {
  bool differs = false;
  std::string path, given, built;
};
JsonDifference firstDifference(const json &given, const json &built, const std::string &path) {
  auto text = [](const json *v) { return v ? v->dump() : std::string("(absent)"); };
  if (given.is_object() && built.is_object()) {
    std::vector<std::string> keys;
    for (auto it = given.begin(); it != given.end(); ++it)
      keys.push_back(it.key());
    for (auto it = built.begin(); it != built.end(); ++it)
      if (!given.contains(it.key()))
        keys.push_back(it.key());
    std::sort(keys.begin(), keys.end());
    for (const std::string &k : keys) {
      const std::string at = path.empty() ? k : path + "." + k;
      const json *g = given.contains(k) ? &given[k] : nullptr;
      const json *b = built.contains(k) ? &built[k] : nullptr;
      if (!g || !b)
        return {true, at, text(g), text(b)};
      if (JsonDifference d = firstDifference(*g, *b, at); d.differs)
        return d;
    }
    return {};
  }
  if (given != built)
    return {true, path, given.dump(), built.dump()};
  return {};
}

/// What the code of a function fixes (the part of a description the library's own signature repeats): name,
/// args, results, num_results, writable, in_place, and the dsa.attention configurations ("attention", written only
/// when there are any).
json compiledFunctionToJson(const FunctionSignature &f) {
  json fj;
  fj["name"] = f.name;
  fj["args"] = json::array();
  for (const ValueKind &k : f.args)
    fj["args"].push_back(kindToJson(k));
  fj["results"] = json::array();
  for (const ValueKind &k : f.results)
    fj["results"].push_back(kindToJson(k));
  fj["num_results"] = f.numResults;
  fj["writable"] = f.writableArgs;
  fj["in_place"] = json::array();
  for (const StateBinding &b : f.inPlace)
    fj["in_place"].push_back({{"arg", b.arg}, {"result", b.result}});
  if (!f.attention.empty()) {
    fj["attention"] = json::array();
    for (const AttentionConfig &a : f.attention)
      fj["attention"].push_back(attentionToJson(a));
  }
  return fj;
}

/// Reads compiledFunctionToJson's fields of `fj` into `f` (each checked; errors name the field under `where`).
Status compiledFunctionFromJson(const json &fj, const std::string &where, FunctionSignature &f) {
  if (!fj.is_object() || !fj.contains("name") || !fj["name"].is_string())
    return makeError(where + ".name: missing or not a string");
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
  if (!fj.contains("writable") || !fj["writable"].is_array())
    return makeError(where + ".writable: missing or not an array of argument indices");
  for (const json &a : fj["writable"]) {
    if (!a.is_number_integer() || a.get<int64_t>() < 0 || a.get<int64_t>() >= static_cast<int64_t>(f.args.size()) ||
        !f.args[a.get<size_t>()].isTensor)
      return makeError(where + ".writable: " + a.dump() + " is not one of the function's tensor arguments");
    f.writableArgs.push_back(a.get<int64_t>());
  }
  if (!fj.contains("in_place") || !fj["in_place"].is_array())
    return makeError(where + ".in_place: missing or not an array");
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
  if (fj.contains("attention")) {
    if (!fj["attention"].is_array())
      return makeError(where + ".attention: expected an array of dsa.attention configurations");
    for (size_t a = 0; a < fj["attention"].size(); ++a) {
      Result<AttentionConfig> config =
          attentionFromJson(fj["attention"][a], where + ".attention[" + std::to_string(a) + "]");
      if (!config)
        return makeError(config.error());
      f.attention.push_back(config.take());
    }
  }
  return Status::success();
}

/// "[0, 3]" / "[arg 2 -> result 1, ...]" for messages.
std::string indexList(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
std::string bindingList(const std::vector<StateBinding> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::string("arg ") + std::to_string(v[i].arg) + " -> result " +
         std::to_string(v[i].result);
  return s + "]";
}
std::string featureList(const std::vector<std::string> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + v[i];
  return s + "]";
}

/// The field of `given` that disagrees with `compiled` ("element type", "rank", "dimension 1"), or empty.
std::string kindDifference(const ValueKind &given, const ValueKind &compiled) {
  if (given.isTensor != compiled.isTensor)
    return given.isTensor ? "a tensor, not a scalar" : "a scalar, not a tensor";
  if (given.elem != compiled.elem)
    return "element type";
  if (given.shape.size() != compiled.shape.size())
    return "rank";
  for (size_t d = 0; d < given.shape.size(); ++d)
    if (given.shape[d] != compiled.shape[d])
      return "dimension " + std::to_string(d);
  return "";
}

} // namespace

std::string kindSpelling(const ValueKind &k) {
  if (!k.isTensor)
    return dsa::elementTypeName(k.elem);
  std::string s = "tensor<";
  for (int64_t d : k.shape)
    s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + dsa::elementTypeName(k.elem) + ">";
}

std::string describeStepLibrary(const StepLibraryDescription &d) {
  json j;
  j["format"] = kStepLibraryFormat;
  j["version"] = kStepLibraryVersion;
  j["library"] = d.library;
  j["library_sha256"] = d.librarySha256;
  j["abi_version"] = d.abiVersion;
  j["target_cpu"] = d.targetCpu;
  j["target_features"] = d.targetFeatures;
  j["parallel"] = d.parallel;
  j["functions"] = json::array();
  for (const FunctionSignature &f : d.functions) {
    json fj = compiledFunctionToJson(f);
    fj["symbol"] = std::string(abi::kPackedEntryPrefix) + f.name;
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
      sj["chunked"] = f.step.chunked;
      sj["shared"] = json::array();
      for (const StateBinding &b : f.step.shared)
        sj["shared"].push_back({{"arg", b.arg}, {"result", b.result}});
      fj["step"] = sj;
    }
    j["functions"].push_back(fj);
  }
  return j.dump(2) + "\n";
}

Result<StepLibraryDescription> parseStepLibrary(const std::string &text) {
  Result<json> parsed = dsa::json::parseRejectingDuplicates(text);
  if (!parsed)
    return makeError("step description: " + parsed.error());
  const json j = parsed.take();
  if (!j.is_object())
    return makeError("step description: not a JSON object");
  if (!j.contains("format") || j["format"] != kStepLibraryFormat)
    return makeError(std::string("format: expected \"") + kStepLibraryFormat + "\"");
  if (!j.contains("version") || !j["version"].is_number_integer())
    return makeError("version: missing or not an integer (this runtime reads version " +
                     std::to_string(kStepLibraryVersion) + ")");
  const int64_t version = j["version"].get<int64_t>();
  if (version >= 1 && version < kStepLibraryVersion)
    return makeError("version: " + std::to_string(version) + " is an old step description (before version " +
                     std::to_string(kStepLibraryVersion) +
                     " it records neither the library file's SHA-256 nor its ABI version, and the library has no "
                     "signature to check it against); this runtime reads version " +
                     std::to_string(kStepLibraryVersion) + ": emit the library again");
  if (version != kStepLibraryVersion)
    return makeError("version: " + std::to_string(version) + " is not a step description version this runtime reads (" +
                     std::to_string(kStepLibraryVersion) + ")");
  if (Status st = checkKnownKeys(j, "",
                                 {"format", "version", "library", "library_sha256", "abi_version", "target_cpu",
                                  "target_features", "parallel", "functions"});
      !st)
    return makeError(st.error());
  StepLibraryDescription d;
  FieldReader r(j, "", kMessages);
  d.library = r.nonEmptyStr("library");
  if (!r.ok())
    return makeError(r.error());
  if (!j.contains("library_sha256") || !j["library_sha256"].is_string() ||
      !isSha256Hex(j["library_sha256"].get<std::string>()))
    return makeError("library_sha256: missing or not a SHA-256 (64 lower-case hex digits)");
  d.librarySha256 = j["library_sha256"].get<std::string>();
  d.abiVersion = r.i64("abi_version");
  if (!r.ok())
    return makeError(r.error());
  if (d.abiVersion != abi::kStepLibraryAbiVersion)
    return makeError("abi_version: " + std::to_string(d.abiVersion) + ", this runtime calls step libraries of ABI version " +
                     std::to_string(abi::kStepLibraryAbiVersion));
  d.targetCpu = r.str("target_cpu");
  if (!r.ok())
    return makeError(r.error());
  if (!j.contains("target_features") || !j["target_features"].is_array())
    return makeError("target_features: missing or not an array of feature names");
  for (const json &f : j["target_features"]) {
    if (!f.is_string() || f.get<std::string>().empty())
      return makeError("target_features: expected an array of feature names, got " + f.dump());
    d.targetFeatures.push_back(f.get<std::string>());
  }
  d.parallel = r.boolean("parallel");
  const json *functions = r.list("functions");
  if (!r.ok())
    return makeError(r.error());
  for (size_t i = 0; i < functions->size(); ++i) {
    const json &fj = (*functions)[i];
    const std::string where = "functions[" + std::to_string(i) + "]";
    if (Status st = checkKnownKeys(fj, where,
                                   {"name", "symbol", "args", "results", "num_results", "probes", "state", "step",
                                    "writable", "in_place", "attention"});
        !st)
      return makeError(st.error());
    FunctionSignature f;
    if (Status st = compiledFunctionFromJson(fj, where, f); !st)
      return makeError(st.error());
    if (std::any_of(d.functions.begin(), d.functions.end(), [&](const FunctionSignature &g) { return g.name == f.name; }))
      return makeError(where + ".name: a second function @" + f.name);
    const std::string symbol = abi::kPackedEntryPrefix + f.name;
    if (fj.contains("symbol") && fj["symbol"] != symbol)
      return makeError(where + ".symbol: " + fj["symbol"].dump() + ", the packed entry of @" + f.name + " is " + symbol);
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
        Result<StateBinding> b = bindingFromJson(sj, sw, f.args.size(), f.numResults, /*withInit=*/true);
        if (!b)
          return makeError(b.error());
        if (sj.contains("init")) {
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
      Result<StepRoles> roles = rolesFromJson(fj["step"], where + ".step", f);
      if (!roles)
        return makeError(roles.error());
      f.step = roles.take();
    }
    d.functions.push_back(std::move(f));
  }
  return d;
}

//===----------------------------------------------------------------------------------------------------------===//
// The signature compiled into the library
//===----------------------------------------------------------------------------------------------------------===//

std::string compiledSignatureText(const StepLibraryDescription &d, const TargetFields &extraTarget) {
  json j;
  j["format"] = "dsa-step-library-signature";
  j["abi_version"] = d.abiVersion;
  json target;
  target["cpu"] = d.targetCpu;
  target["features"] = d.targetFeatures;
  target["parallel"] = d.parallel;
  for (const auto &[key, value] : extraTarget)
    target[key] = value;
  j["target"] = target;
  j["functions"] = json::array();
  for (const FunctionSignature &f : d.functions) {
    json fj = compiledFunctionToJson(f);
    // Whether the compiled code runs a multi-token step at start_pos > 0 as one call (StepRoles::chunked): the
    // runtime trusts it to skip the split, so the description's word must match the code's.
    if (f.step.present())
      fj["chunked"] = f.step.chunked;
    j["functions"].push_back(std::move(fj));
  }
  return j.dump(); // nlohmann sorts keys: canonical
}

Status checkCompiledSignature(const StepLibraryDescription &d, const TargetFields &extraTarget,
                              const char *compiledText) {
  const std::string sym = abi::kStepLibrarySignatureSymbol;
  if (!compiledText)
    return makeError("the library exports no " + sym +
                     ": it is not a dsa step library of ABI version " + std::to_string(abi::kStepLibraryAbiVersion) +
                     " (emit it again)");
  Result<json> parsed = dsa::json::parseRejectingDuplicates(compiledText);
  if (!parsed)
    return makeError("the library's " + sym + ": " + parsed.error());
  const json j = parsed.take();
  auto bad = [&](const std::string &field) { return makeError("the library's " + sym + ": " + field + ": malformed"); };
  if (!j.is_object() || j.value("format", "") != "dsa-step-library-signature")
    return bad("format");
  if (Status st = checkKnownKeys(j, "", {"format", "abi_version", "target", "functions"}); !st)
    return makeError("the library's " + sym + ": " + st.error());
  if (!j.contains("abi_version") || !j["abi_version"].is_number_integer())
    return bad("abi_version");
  const int64_t abiVersion = j["abi_version"].get<int64_t>();
  if (abiVersion != abi::kStepLibraryAbiVersion)
    return makeError("abi_version: the library was compiled for step-library ABI version " +
                     std::to_string(abiVersion) + ", this runtime calls version " +
                     std::to_string(abi::kStepLibraryAbiVersion));
  if (abiVersion != d.abiVersion)
    return makeError("abi_version: description says " + std::to_string(d.abiVersion) +
                     ", library was compiled for " + std::to_string(abiVersion));

  // The target.
  if (!j.contains("target") || !j["target"].is_object())
    return bad("target");
  const json &t = j["target"];
  if (!t.contains("cpu") || !t["cpu"].is_string())
    return bad("target.cpu");
  if (t["cpu"].get<std::string>() != d.targetCpu)
    return makeError("target_cpu: description says " + d.targetCpu + ", library was compiled for " +
                     t["cpu"].get<std::string>());
  if (!t.contains("features") || !t["features"].is_array() ||
      !std::all_of(t["features"].begin(), t["features"].end(), [](const json &f) { return f.is_string(); }))
    return bad("target.features");
  const std::vector<std::string> features = t["features"].get<std::vector<std::string>>();
  if (features != d.targetFeatures)
    return makeError("target_features: description says " + featureList(d.targetFeatures) +
                     ", library was compiled for " + featureList(features));
  if (!t.contains("parallel") || !t["parallel"].is_boolean())
    return bad("target.parallel");
  if (t["parallel"].get<bool>() != d.parallel)
    return makeError(std::string("parallel: description says ") + (d.parallel ? "true" : "false") +
                     ", library was compiled for " + (d.parallel ? "false" : "true"));
  for (const auto &[key, value] : extraTarget) {
    if (!t.contains(key) || !t[key].is_string())
      return makeError(key + ": the library's " + sym + " does not record it (a library for another backend?)");
    if (t[key].get<std::string>() != value)
      return makeError(key + ": description says " + value + ", library was compiled for " +
                       t[key].get<std::string>());
  }
  if (t.size() != 3 + extraTarget.size())
    return makeError("the library's " + sym + ": target: " + t.dump() +
                     " holds fields this description does not have (a library for another backend?)");

  // The functions.
  if (!j.contains("functions") || !j["functions"].is_array())
    return bad("functions");
  std::vector<FunctionSignature> compiled;
  for (size_t i = 0; i < j["functions"].size(); ++i) {
    const std::string where = "functions[" + std::to_string(i) + "]";
    if (Status st = checkKnownKeys(j["functions"][i], where,
                                   {"name", "args", "results", "num_results", "writable", "in_place", "attention",
                                    "chunked"});
        !st)
      return makeError("the library's " + sym + ": " + st.error());
    FunctionSignature f;
    if (Status st = compiledFunctionFromJson(j["functions"][i], where, f); !st)
      return makeError("the library's " + sym + ": " + st.error());
    if (j["functions"][i].contains("chunked")) { // absent: a function without step roles, which does not run chunks
      if (!j["functions"][i]["chunked"].is_boolean())
        return bad(where + ".chunked");
      f.step.chunked = j["functions"][i]["chunked"].get<bool>();
    }
    compiled.push_back(std::move(f));
  }
  for (const FunctionSignature &f : d.functions) {
    auto it = std::find_if(compiled.begin(), compiled.end(),
                           [&](const FunctionSignature &c) { return c.name == f.name; });
    if (it == compiled.end()) {
      std::string known;
      for (const FunctionSignature &c : compiled)
        known += (known.empty() ? "@" : ", @") + c.name;
      return makeError(f.name + ": the library has no such function (it was compiled with " +
                       (known.empty() ? std::string("none") : known) + ")");
    }
    const FunctionSignature &c = *it;
    auto kinds = [&](const char *what, const std::vector<ValueKind> &given,
                     const std::vector<ValueKind> &built) -> Status {
      if (given.size() != built.size())
        return makeError(f.name + ": description says " + std::to_string(given.size()) + " " + what +
                         "s, library was compiled for " + std::to_string(built.size()));
      for (size_t i = 0; i < given.size(); ++i)
        if (std::string field = kindDifference(given[i], built[i]); !field.empty())
          return makeError(f.name + ": " + what + " " + std::to_string(i) + ": description says " +
                           kindSpelling(given[i]) + ", library was compiled for " + kindSpelling(built[i]) + " (" +
                           field + ")");
      return Status::success();
    };
    if (Status st = kinds("argument", f.args, c.args); !st)
      return st;
    if (Status st = kinds("result", f.results, c.results); !st)
      return st;
    if (f.numResults != c.numResults)
      return makeError(f.name + ": num_results: description says " + std::to_string(f.numResults) +
                       ", library was compiled for " + std::to_string(c.numResults));
    std::vector<int64_t> givenWritable = f.writableArgs, builtWritable = c.writableArgs;
    std::sort(givenWritable.begin(), givenWritable.end());
    std::sort(builtWritable.begin(), builtWritable.end());
    if (givenWritable != builtWritable)
      return makeError(f.name + ": writable arguments: description says " + indexList(f.writableArgs) +
                       ", library was compiled for " + indexList(c.writableArgs));
    auto key = [](const StateBinding &b) { return std::make_pair(b.result, b.arg); };
    std::vector<std::pair<int64_t, int64_t>> givenInPlace, builtInPlace;
    for (const StateBinding &b : f.inPlace)
      givenInPlace.push_back(key(b));
    for (const StateBinding &b : c.inPlace)
      builtInPlace.push_back(key(b));
    std::sort(givenInPlace.begin(), givenInPlace.end());
    std::sort(builtInPlace.begin(), builtInPlace.end());
    if (givenInPlace != builtInPlace)
      return makeError(f.name + ": in-place results: description says " + bindingList(f.inPlace) +
                       ", library was compiled for " + bindingList(c.inPlace));
    if (f.step.chunked != c.step.chunked)
      return makeError(f.name + ": step.chunked: description says " + (f.step.chunked ? "true" : "false") +
                       ", library was compiled for " + (c.step.chunked ? "true" : "false") +
                       " (whether a multi-token step at start_pos > 0 is one call)");
    // The dsa.attention configurations, compared in their canonical form; the message names the first field.
    if (f.attention.size() != c.attention.size())
      return makeError(f.name + ": attention: description says " + std::to_string(f.attention.size()) +
                       " dsa.attention configurations, library was compiled from " +
                       std::to_string(c.attention.size()));
    for (size_t a = 0; a < f.attention.size(); ++a)
      if (JsonDifference d = firstDifference(attentionToJson(f.attention[a]), attentionToJson(c.attention[a]), "");
          d.differs)
        return makeError(f.name + ": attention[" + std::to_string(a) + "]." + d.path + ": description says " +
                         d.given + ", library was compiled for " + d.built);
  }
  return Status::success();
}

} // namespace dsa::runtime
