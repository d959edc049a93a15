//===- Kernels.h - one pure evaluator per dsa primitive (MLIR-free) -----------===//
//
// The reference implementation of the math of every dsa primitive, on Tensor values. The MLIR interpreter's
// dispatcher calls exactly these; nothing else in the project re-implements them. Each function follows the
// section of shared/spec/attention-semantics.md named in its comment, validates its operands and returns an Error
// naming the bad operand instead of crashing.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_INTERPRETER_KERNELS_H
#define DSA_INTERPRETER_KERNELS_H

#include "dsa/Interpreter/Tensor.h"
#include "dsa/Support/Result.h"

#include <optional>

namespace dsa::interp {

/// YaRN parameters (section 2); absent = plain RoPE.
struct YarnParams {
  int64_t originalSeqLen = 0;
  double factor = 1.0;
  double betaFast = 32.0;
  double betaSlow = 1.0;
};

/// RoPE table parameters (section 2).
struct RopeParams {
  int64_t ropeDim = 0;
  double theta = 10000.0;
  std::optional<YarnParams> yarn;
};

/// f[k] for k < ropeDim/2, f32 (section 2, with the YaRN blend when params.yarn is set).
std::vector<float> ropeFrequencies(const RopeParams &params);

/// linear (section 2): x [..., K], weight [N, K] -> [..., N]. bf16 operands: f32 accumulation, bf16 result;
/// f32 operands: f32 result.
Result<Tensor> linear(const Tensor &x, const Tensor &weight);
/// rms_norm (section 2) over the last dim; weight [D] bf16; result bf16.
Result<Tensor> rmsNorm(const Tensor &x, const Tensor &weight, float eps);
/// positions: start + i*stride, i < count; i64 [count].
Result<Tensor> positions(int64_t start, int64_t count, int64_t stride);
/// apply_rope (section 2): x [s, ..., hd] bf16, positions [s] i64.
Result<Tensor> applyRope(const Tensor &x, const Tensor &positions, const RopeParams &params, bool inverse);
/// act_quant_fp8 (section 2) over blocks of the last dim.
Result<Tensor> actQuantFp8(const Tensor &x, int64_t blockSize);
/// ring_update (section 4): ring [W, hd], kv [s, hd]; token t -> slot t % W for the last min(s, W) tokens.
Result<Tensor> ringUpdate(const Tensor &ring, const Tensor &kv, int64_t startPos);
/// window_kv (section 4): kv in prefill (startPos 0), the ring in decode (startPos > 0, s == 1).
Result<Tensor> windowKv(const Tensor &kv, const Tensor &ring, int64_t startPos);
/// window_indices (section 4): i32 [s, min(s, W)] in prefill, [1, W] in decode.
Result<Tensor> windowIndices(int64_t startPos, int64_t count, int64_t windowSize);
/// sparse_attn (section 10): q [s, H, hd] bf16, kv [n, hd] bf16, indices [s, k] i32, sink [H] f32 -> bf16 [s, H, hd].
Result<Tensor> sparseAttn(const Tensor &q, const Tensor &kv, const Tensor &indices, const Tensor &sink,
                          float scale);
/// grouped_output (section 11): o [s, H, hd], wo_a [G*R, H*hd/G] -> bf16 [s, G*R].
Result<Tensor> groupedOutput(const Tensor &o, const Tensor &woA, int64_t groups);

} // namespace dsa::interp

#endif
