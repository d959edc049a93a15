//===- Filler.h - deterministic weights and input ids of the tiny golden --------===//
//
// The filler rule of shared/spec/tiny-model-harness.md ("Weights: regenerated, not stored"): every parameter is
// filler(name, n, scale, offset) rounded to its stored dtype, pinned by the `ck` of weights_meta. Also the probe
// (`fixture.lcg_probe`) and the input ids rule (`fixed_ints`). All 64-bit arithmetic is mod 2^64.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_GOLDEN_FILLER_H
#define DSA_GOLDEN_FILLER_H

#include "dsa/Golden/GoldenFile.h"
#include "dsa/Core/Tensor.h"
#include "dsa/Support/Result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dsa::golden {

/// The splitmix64 increment / index multiplier 0x9E3779B97F4A7C15.
inline constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

/// FNV-1a 64 of the bytes of `text` (offset basis 0xCBF29CE484222325, prime 0x100000001B3).
uint64_t fnv1a64(const std::string &text);
/// splitmix64(z): z += gamma; z = (z ^ z>>30) * 0xBF58476D1CE4E5B9; z = (z ^ z>>27) * 0x94D049BB133111EB;
/// return z ^ z>>31.
uint64_t splitmix64(uint64_t z);
/// The i-th raw draw of stream `name`: splitmix64(fnv1a64(name) ^ i*gamma).
uint64_t streamDraw(const std::string &name, uint64_t i);

/// filler(name, n, scale, offset) BEFORE dtype rounding: for i < n, u = (z >> 40) / 2^24 with z = streamDraw(name,
/// i), value = f32((2u - 1) * scale + offset) computed in f64. n < 0 is treated as 0.
std::vector<float> fillerValues(const std::string &name, int64_t n, double scale, double offset);

/// Rounds filler values to a stored dtype (values stay f32, exactly representing the rounded value):
/// "bfloat16" RNE (numerics::roundBf16); "float32" unchanged; "float8_e4m3fn" RNE saturating at 448
/// (numerics::roundE4M3); "float8_e8m0fnu" torch's cast (numerics::f32ToE8M0TorchBits then e8m0BitsToF32; 0 ->
/// 2^-127). Error naming the dtype for anything else.
Result<std::vector<float>> roundToDtype(std::vector<float> values, const std::string &dtype);

/// ck = sum_i f64(v_i) * (i+1), accumulated in f64 in index order.
double weightedChecksum(const std::vector<float> &values);
/// sum_i |f64(v_i)| * (i+1): the scale the checksum tolerances are relative to.
double weightedMass(const std::vector<float> &values);

/// Relative tolerance of a regenerated weight's ck: |ck_got - ck_want| <= kWeightCkRelTol * weightedMass.
/// Only f64 summation order may differ from the producer's, so this is far below one ulp of any element.
inline constexpr double kWeightCkRelTol = 1e-12;

/// filler + rounding for `meta` (no ck check). Errors: unknown dtype; n != product(shape) (overflow-checked); n
/// values of 4 bytes above dsa::Tensor::tensorByteLimit() (checked before allocating, naming weights_meta.<name>.n).
Result<std::vector<float>> regenerateValues(const WeightMeta &meta);
/// The weight as a tensor of meta.shape: BF16 for "bfloat16", F32 otherwise (e4m3/e8m0 values exact in f32).
/// Checks the regenerated ck against meta.ck (kWeightCkRelTol); on mismatch the Error names the weight, got and
/// want.
Result<dsa::Tensor> regenerateWeight(const WeightMeta &meta);

/// The probe: splitmix64(fnv1a64("probe") ^ i*gamma) for i < n. Error when n < 0.
Result<std::vector<uint64_t>> lcgProbe(int64_t n);
/// lcgProbe(size) == fixture.lcgProbe; the Error names the first differing index with got/want. An empty
/// fixture.lcgProbe is an Error (nothing pins the generator).
Status checkLcgProbe(const Fixture &fixture);

/// fixed_ints(name, count, modulus)[t] = splitmix64(fnv1a64(name) ^ t*gamma) % modulus (unsigned 64-bit modulo).
/// Errors: count < 0, modulus <= 0.
Result<std::vector<int64_t>> fixedInts(const std::string &name, int64_t count, int64_t modulus);

/// The token ids a regime feeds (batch row `batchRow`), by fixture.input_ids_rule:
/// fixed_ints("input_ids", batch*n, vocab_size)[b*n + t] for t in [regime.idsBegin, regime.idsEnd) (the step's
/// input_ids_slice, by default [startPos, startPos + numTokens)), with n = fixture.n_tokens or, without it, the
/// rule's own count prefill_len + 2. Row 0's ids do not depend on n (tiny-model-harness.md), so without n_tokens
/// row 0 may use positions past prefill_len + 2. Errors: batchRow out of range, a slice beyond n for a row > 0 or
/// beyond an explicit n_tokens.
Result<std::vector<int64_t>> regimeInputIds(const Fixture &fixture, const Regime &regime, int64_t batchRow = 0);

/// Regenerates `layers.<l>.engram.embed.scale` (float8_e8m0fnu) for every engram layer and checks it equals
/// fixture.engram.scales[e] element by element. Errors name the layer, the row, got and want (or a missing weight).
Status checkEngramScales(const GoldenFile &golden);

} // namespace dsa::golden

#endif // DSA_GOLDEN_FILLER_H
