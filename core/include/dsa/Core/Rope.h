//===- Rope.h - RoPE / YaRN table parameters and the reference's frequency table (MLIR-free) ------------===//
//
// attention-semantics.md section 2. One table for every user: the reference kernels' applyRope, the dialect's
// #dsa.rope translation (compiler/include/dsa/Dialect/DSA/IR/RopeParams.h) and the CPU and GPU lowerings, which bake
// the table into the compiled code.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CORE_ROPE_H
#define DSA_CORE_ROPE_H

#include <cstdint>
#include <optional>
#include <vector>

namespace dsa {

/// YaRN parameters (section 2); absent (or originalSeqLen <= 0) = plain RoPE.
struct YarnParams {
  int64_t originalSeqLen = 0; ///< original_seq_len
  double factor = 1.0;        ///< rope_factor (> 0)
  double betaFast = 32.0;     ///< beta_fast (> 0)
  double betaSlow = 1.0;      ///< beta_slow (> 0)
};

/// RoPE table parameters (section 2). Ratio-0 layers: theta = rope_theta, no YaRN; ratio > 0 layers and their
/// indexer: theta = compress_rope_theta with YaRN.
struct RopeParams {
  int64_t ropeDim = 0; ///< rope_head_dim (rd): the rotated tail of each row; positive and even
  double theta = 10000.0;
  std::optional<YarnParams> yarn;
};

/// f[k] for k < ropeDim/2, f32, with the precision of the reference's precompute_freqs_cis (section 2):
/// e = f32(2k) / f32(rd) in f32; base^e rounded to f32; f = 1 / that in f32. With YaRN: cdim, low and high in
/// f64 (low = max(floor(cdim(beta_fast)), 0), high = min(ceil(cdim(beta_slow)), rd-1)); then in f32
/// ramp = clamp((k - low) / max(high - low, 0.001), 0, 1), smooth = 1 - ramp, f = f/factor*(1-smooth) + f*smooth.
/// Returns an empty vector for a ropeDim that is not positive and even or a theta that is not positive
/// (applyRope reports those as errors). Pinned bit-exactly by the golden's sa_q of every layer.
std::vector<float> ropeFrequencies(const RopeParams &params);

} // namespace dsa

#endif
