//===- Filler.cpp - deterministic weights and input ids of the tiny golden ------===//
//
// tiny-model-harness.md "Weights: regenerated, not stored".
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Golden/Filler.h"

#include "dsa/Numerics/BF16.h"
#include "dsa/Numerics/E4M3.h"
#include "dsa/Numerics/E8M0.h"
#include "dsa/Support/CheckedArithmetic.h"

#include <cmath>
#include <cstdio>

namespace dsa::golden {
namespace {

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

} // namespace

uint64_t fnv1a64(const std::string &text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

uint64_t splitmix64(uint64_t z) {
  z += kGoldenGamma;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t streamDraw(const std::string &name, uint64_t i) { return splitmix64(fnv1a64(name) ^ (i * kGoldenGamma)); }

std::vector<float> fillerValues(const std::string &name, int64_t n, double scale, double offset) {
  std::vector<float> out;
  if (n <= 0)
    return out;
  out.resize(static_cast<size_t>(n));
  const uint64_t salt = fnv1a64(name);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = splitmix64(salt ^ (static_cast<uint64_t>(i) * kGoldenGamma));
    double u = static_cast<double>(z >> 40) / 16777216.0; // 2^24: exact
    out[static_cast<size_t>(i)] = static_cast<float>((2.0 * u - 1.0) * scale + offset);
  }
  return out;
}

Result<std::vector<float>> roundToDtype(std::vector<float> values, const std::string &dtype) {
  if (dtype == "float32")
    return values;
  if (dtype == "bfloat16") {
    for (float &v : values)
      v = numerics::roundBf16(v);
    return values;
  }
  if (dtype == "float8_e4m3fn") {
    for (float &v : values)
      v = numerics::roundE4M3(v);
    return values;
  }
  if (dtype == "float8_e8m0fnu") {
    for (float &v : values)
      v = numerics::e8m0BitsToF32(numerics::f32ToE8M0TorchBits(v));
    return values;
  }
  return makeError("dtype '" + dtype + "': not one of bfloat16, float32, float8_e4m3fn, float8_e8m0fnu");
}

double weightedChecksum(const std::vector<float> &values) {
  double ck = 0;
  for (size_t i = 0; i < values.size(); ++i)
    ck += static_cast<double>(values[i]) * static_cast<double>(i + 1);
  return ck;
}

double weightedMass(const std::vector<float> &values) {
  double m = 0;
  for (size_t i = 0; i < values.size(); ++i)
    m += std::fabs(static_cast<double>(values[i])) * static_cast<double>(i + 1);
  return m;
}

Result<std::vector<float>> regenerateValues(const WeightMeta &meta) {
  std::optional<int64_t> prod = 1;
  for (int64_t d : meta.shape)
    prod = prod && d >= 0 ? checkedMul(*prod, d) : std::nullopt;
  if (!prod || *prod != meta.n || meta.n < 0)
    return makeError("weight " + meta.name + ": n = " + std::to_string(meta.n) +
                     " does not match its shape (product " + (prod ? std::to_string(*prod) : "overflows") + ")");
  // Before allocating: 4 bytes per value (f32 storage), within the tensor byte limit.
  const std::optional<int64_t> bytes = checkedMul(meta.n, 4);
  if (!bytes || *bytes > dsa::Tensor::tensorByteLimit())
    return makeError("weights_meta." + meta.name + ".n: " + std::to_string(meta.n) +
                     " values are above the tensor byte limit " + std::to_string(dsa::Tensor::tensorByteLimit()) +
                     " bytes ($DSA_MAX_TENSOR_BYTES, default the physical memory)");
  Result<std::vector<float>> rounded =
      roundToDtype(fillerValues(meta.name, meta.n, meta.scale, meta.offset), meta.dtype);
  if (!rounded)
    return makeError("weight " + meta.name + ": " + rounded.error());
  return rounded;
}

Result<dsa::Tensor> regenerateWeight(const WeightMeta &meta) {
  Result<std::vector<float>> values = regenerateValues(meta);
  if (!values)
    return makeError(values.error());
  const double got = weightedChecksum(*values);
  const double tol = kWeightCkRelTol * weightedMass(*values);
  if (!(std::fabs(got - meta.ck) <= tol))
    return makeError("weight " + meta.name + ": regenerated ck " + fmt(got) + " != want " + fmt(meta.ck) +
                     " (|diff| " + fmt(std::fabs(got - meta.ck)) + " > tol " + fmt(tol) + ", dtype " + meta.dtype +
                     ")");
  dsa::ElementType type = meta.dtype == "bfloat16" ? dsa::ElementType::BF16 : dsa::ElementType::F32;
  return dsa::Tensor::fromFloats(type, meta.shape, values.take());
}

Result<std::vector<uint64_t>> lcgProbe(int64_t n) {
  if (n < 0)
    return makeError("lcgProbe: n must be >= 0, got " + std::to_string(n));
  std::vector<uint64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] = streamDraw("probe", static_cast<uint64_t>(i));
  return out;
}

Status checkLcgProbe(const Fixture &fixture) {
  if (fixture.lcgProbe.empty())
    return makeError("fixture.lcg_probe: empty, nothing pins the generator");
  Result<std::vector<uint64_t>> probe = lcgProbe(static_cast<int64_t>(fixture.lcgProbe.size()));
  if (!probe)
    return makeError(probe.error());
  for (size_t i = 0; i < fixture.lcgProbe.size(); ++i)
    if ((*probe)[i] != fixture.lcgProbe[i])
      return makeError("fixture.lcg_probe[" + std::to_string(i) + "]: got " + std::to_string((*probe)[i]) +
                       ", want " + std::to_string(fixture.lcgProbe[i]));
  return Status::success();
}

Result<std::vector<int64_t>> fixedInts(const std::string &name, int64_t count, int64_t modulus) {
  if (count < 0)
    return makeError("fixedInts(" + name + "): count must be >= 0, got " + std::to_string(count));
  if (modulus <= 0)
    return makeError("fixedInts(" + name + "): modulus must be > 0, got " + std::to_string(modulus));
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (int64_t t = 0; t < count; ++t)
    out[static_cast<size_t>(t)] =
        static_cast<int64_t>(streamDraw(name, static_cast<uint64_t>(t)) % static_cast<uint64_t>(modulus));
  return out;
}

Result<std::vector<int64_t>> regimeInputIds(const Fixture &fixture, const Regime &regime, int64_t batchRow) {
  if (batchRow < 0 || batchRow >= fixture.batch)
    return makeError("regimeInputIds: batch row " + std::to_string(batchRow) + " out of range [0, " +
                     std::to_string(fixture.batch) + ")");
  const int64_t begin = regime.idsBegin, end = regime.idsEnd;
  if (begin < 0 || end < begin)
    return makeError("regimeInputIds: regime " + regime.name + " has the id slice [" + std::to_string(begin) +
                     ", " + std::to_string(end) + ")");
  // n, the row's token count: fixture.n_tokens, else the rule's own count prefill_len + 2. Row b's id at
  // position t is draw(b*n + t) % vocab_size, so row 0's ids do not depend on n: without n_tokens they extend past
  // prefill_len + 2 (a golden with more decode steps); another row needs n.
  const int64_t perRow = fixture.nTokens ? *fixture.nTokens : fixture.prefillLen + 2;
  if (end > perRow && (fixture.nTokens || batchRow > 0))
    return makeError("regimeInputIds: regime " + regime.name + " needs tokens [" + std::to_string(begin) + ", " +
                     std::to_string(end) + ") of batch row " + std::to_string(batchRow) + " but the rule gives " +
                     std::to_string(perRow) + " per row (" +
                     (fixture.nTokens ? std::string("fixture.n_tokens") : std::string("prefill_len + 2")) + ")");
  if (fixture.vocabSize <= 0)
    return makeError("regimeInputIds: vocab_size must be > 0, got " + std::to_string(fixture.vocabSize));
  std::vector<int64_t> ids;
  ids.reserve(static_cast<size_t>(end - begin));
  for (int64_t t = begin; t < end; ++t)
    ids.push_back(static_cast<int64_t>(streamDraw("input_ids", static_cast<uint64_t>(batchRow * perRow + t)) %
                                       static_cast<uint64_t>(fixture.vocabSize)));
  return ids;
}

Status checkEngramScales(const GoldenFile &golden) {
  const EngramTables &e = golden.fixture().engram; // empty without engram layers: nothing to check
  for (size_t l = 0; l < e.layerIds.size(); ++l) {
    const std::string name = "layers." + std::to_string(e.layerIds[l]) + ".engram.embed.scale";
    const WeightMeta *meta = golden.weight(name);
    if (!meta)
      return makeError("engram scales: weights_meta has no '" + name + "'");
    if (meta->dtype != "float8_e8m0fnu")
      return makeError("engram scales: " + name + " has dtype " + meta->dtype + ", expected float8_e8m0fnu");
    Result<std::vector<float>> values = regenerateValues(*meta);
    if (!values)
      return makeError(values.error());
    if (values->size() != e.scales[l].size())
      return makeError("engram scales: " + name + " has " + std::to_string(values->size()) +
                       " values, fixture.engram.scales[" + std::to_string(l) + "] has " +
                       std::to_string(e.scales[l].size()));
    for (size_t row = 0; row < values->size(); ++row)
      if (static_cast<double>((*values)[row]) != e.scales[l][row])
        return makeError("engram scales: " + name + "[" + std::to_string(row) + "] regenerates to " +
                         fmt((*values)[row]) + ", fixture.engram.scales[" + std::to_string(l) + "][" +
                         std::to_string(row) + "] = " + fmt(e.scales[l][row]));
  }
  return Status::success();
}

} // namespace dsa::golden
