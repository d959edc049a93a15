//===- GoldenOracle.cpp - the golden's side of the C API's golden test (GoldenOracle.h) ---------------------===//
#include "GoldenOracle.h"

#include "dsa/Golden/Compare.h"
#include "dsa/Golden/Filler.h"
#include "dsa/Golden/GoldenFile.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace golden = ::dsa::golden;

struct golden_oracle {
  golden::GoldenFile file;
  std::map<int, std::string> library;            ///< layer -> description path
  std::map<int, std::vector<std::string>> names; ///< layer -> weight names in argument order
  std::map<std::string, std::vector<float>> values; ///< kept alive for the caller
};

namespace {

void setError(char *err, size_t len, const std::string &message) {
  if (err && len > 0)
    std::snprintf(err, len, "%s", message.c_str());
}

} // namespace

extern "C" {

golden_oracle *golden_oracle_open(const char *golden_path, const char *libraries_dir, char *err, size_t err_len) {
  dsa::Result<golden::GoldenFile> file = golden::GoldenFile::load(golden_path);
  if (!file) {
    setError(err, err_len, file.error());
    return nullptr;
  }
  const std::string dir = libraries_dir;
  std::ifstream in(dir + "/golden_layers.json");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("layers") || !j["layers"].is_array()) {
    setError(err, err_len, dir + "/golden_layers.json: missing, or no \"layers\" array");
    return nullptr;
  }
  auto *oracle = new golden_oracle{file.take(), {}, {}, {}};
  for (const nlohmann::json &lj : j["layers"]) {
    if (!lj.is_object() || !lj.contains("layer") || !lj.contains("weights") || !lj.contains("description")) {
      setError(err, err_len, dir + "/golden_layers.json: a layer without layer / description / weights");
      delete oracle;
      return nullptr;
    }
    const int l = lj["layer"].get<int>();
    oracle->library[l] = dir + "/" + lj["description"].get<std::string>();
    for (const nlohmann::json &w : lj["weights"])
      oracle->names[l].push_back(w.get<std::string>());
  }
  return oracle;
}

void golden_oracle_close(golden_oracle *oracle) { delete oracle; }

const char *golden_oracle_layer_library(const golden_oracle *oracle, int layer) {
  auto it = oracle->library.find(layer);
  return it == oracle->library.end() ? nullptr : it->second.c_str();
}

int golden_oracle_num_weights(const golden_oracle *oracle, int layer) {
  auto it = oracle->names.find(layer);
  return it == oracle->names.end() ? -1 : static_cast<int>(it->second.size());
}

int golden_oracle_weight(golden_oracle *oracle, int layer, int k, const char **name, const float **values,
                         size_t *count, char *err, size_t err_len) {
  auto it = oracle->names.find(layer);
  if (it == oracle->names.end() || k < 0 || k >= static_cast<int>(it->second.size())) {
    setError(err, err_len, "no weight " + std::to_string(k) + " of layer " + std::to_string(layer));
    return 1;
  }
  const std::string &n = it->second[static_cast<size_t>(k)];
  const golden::WeightMeta *meta = oracle->file.weight(n);
  if (!meta) {
    setError(err, err_len, "the golden has no weight " + n);
    return 1;
  }
  dsa::Result<dsa::Tensor> w = golden::regenerateWeight(*meta);
  if (!w) {
    setError(err, err_len, w.error());
    return 1;
  }
  std::vector<float> &v = oracle->values["weight:" + n];
  v.assign(w->floats(), w->floats() + w->numElements());
  *name = n.c_str();
  *values = v.data();
  *count = v.size();
  return 0;
}

int golden_oracle_regime(const golden_oracle *oracle, const char *regime, int64_t *start_pos, int64_t *tokens) {
  const golden::Regime *r = oracle->file.regime(regime);
  if (!r)
    return 1;
  *start_pos = r->startPos;
  *tokens = r->numTokens;
  return 0;
}

int golden_oracle_full_capture(golden_oracle *oracle, const char *regime, const char *name, const float **values,
                               size_t *count, char *err, size_t err_len) {
  dsa::Result<const golden::Capture *> c = oracle->file.capture(regime, name);
  if (!c) {
    setError(err, err_len, c.error());
    return 1;
  }
  if ((*c)->stride != 1) {
    setError(err, err_len, std::string(regime) + " " + name + " is stored at stride " + std::to_string((*c)->stride));
    return 1;
  }
  std::vector<float> &v = oracle->values[std::string(regime) + ":" + name];
  v.assign((*c)->data.begin(), (*c)->data.end());
  *values = v.data();
  *count = v.size();
  return 0;
}

int golden_oracle_compare_bf16(const golden_oracle *oracle, const char *regime, const char *name, const float *got,
                               const int64_t *shape, int rank, char *line, size_t line_len) {
  dsa::Result<const golden::Capture *> c = oracle->file.capture(regime, name);
  if (!c) {
    setError(line, line_len, c.error());
    return 0;
  }
  std::vector<int64_t> dims(shape, shape + rank);
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  const dsa::Tensor t = dsa::Tensor::fromFloats(dsa::ElementType::BF16, dims, std::vector<float>(got, got + n));
  const golden::Verdict v = golden::compareCapture(regime, **c, t);
  setError(line, line_len, golden::formatVerdict(v));
  return v.status == golden::Verdict::Pass ? 1 : 0;
}

} // extern "C"
