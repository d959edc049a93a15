//===- Kernels.h - one pure evaluator per dsa primitive (MLIR-free) -----------===//
//
// The reference implementation of the math of every dsa primitive, on Tensor values. The MLIR interpreter's
// dispatcher calls exactly these; nothing else in the project re-implements them. Each function follows the
// section of shared/spec/attention-semantics.md named in its comment, validates its operands and returns an Error
// naming the bad operand instead of crashing.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_KERNELS_KERNELS_H
#define DSA_KERNELS_KERNELS_H

#include "dsa/Core/Rope.h"
#include "dsa/Core/Tensor.h"
#include "dsa/Support/Result.h"

#include <optional>

namespace dsa::kernels {

/// linear (section 2): x [..., K], weight [N, K] (nn.Linear layout) -> [..., N]. x and weight both bf16 (f32
/// accumulation, one bf16 rounding of each output) or both f32 (f32 result, no rounding).
/// Errors: non-float x, element types that differ, x of rank 0, weight not rank 2, weight columns != K.
Result<Tensor> linear(const Tensor &x, const Tensor &weight);
/// rms_norm (section 2) over the last dim D: per row r = 1/sqrt(mean(x^2) + eps) (f32, sqrt then an f32
/// division), y = bf16(w[d] * (x[d] * r)). x bf16 or f32 of rank >= 1; weight bf16 [D]; result bf16, x's shape.
/// Errors: non-float x, weight not bf16 / not rank 1 / size != D, D == 0, eps negative or not finite.
Result<Tensor> rmsNorm(const Tensor &x, const Tensor &weight, float eps);
/// positions: start + i*stride for i < count, i64 [count].
/// Errors: start < 0, count < 0, stride < 1, int64 overflow of the last position.
Result<Tensor> positions(int64_t start, int64_t count, int64_t stride);
/// apply_rope (section 2): x bf16 [s, ..., hd] (rank >= 2; every row of token t uses position positions[t]),
/// positions [s] (i64, i32 or index, each >= 0). On the last rd elements of each row, ADJACENT pair
/// (row[2k], row[2k+1]) is multiplied as a complex number by (cos a, sin a) (by (cos a, -sin a) when inverse),
/// a = f32(p) * f[k] (ropeFrequencies), cos/sin in f32, products and sums in f32, each result rounded to bf16.
/// The first hd - rd elements are copied. Result: bf16, x's shape.
/// Errors: x not bf16 or rank < 2; positions not an integer vector of length s or with a negative entry;
/// rd not positive and even or rd > hd; theta not positive and finite; YaRN factor/betas not positive and finite.
Result<Tensor> applyRope(const Tensor &x, const Tensor &positions, const RopeParams &params, bool inverse);
/// act_quant_fp8 (section 2) on consecutive blocks of blockSize (32 in the model) elements of the last dim, via
/// numerics::actQuantFp8. x bf16 or f32 of rank >= 1 -> bf16 of x's shape (the round trip is bf16-exact).
/// Errors: non-float x, rank 0, blockSize <= 0, last dim not a multiple of blockSize.
Result<Tensor> actQuantFp8(const Tensor &x, int64_t blockSize);
/// ring_update (section 4): ring bf16 [W, hd], kv bf16 [s, hd] holding the tokens at positions startPos ..
/// startPos+s-1 -> the ring with token p written to slot p % W, for the last min(s, W) tokens (earlier ones would
/// be overwritten anyway). Covers the prefill seeding (startPos 0, any s), decode (s == 1) and multi-token steps.
/// Errors: startPos < 0, W < 1, ranks/element types, row widths that differ.
Result<Tensor> ringUpdate(const Tensor &ring, const Tensor &kv, int64_t startPos);
/// window_kv (section 4; the chunk regime: docs/architecture.md "Steps the reference does not have"): the rows
/// attention reads, from `ring` as it stands BEFORE this step's ringUpdate ([W, hd]) and the step's kv [s, hd]:
///   prefill (startPos 0): kv itself, [s, hd];
///   decode (startPos > 0, s == 1): the ring with kv's row in slot startPos % W (= ringUpdate's result; passing the
///     updated ring gives the same rows), [W, hd];
///   chunk (startPos > 0, s > 1): concat(ring, kv), [W + s, hd].
/// Errors: startPos < 0; the operand checks of ringUpdate.
Result<Tensor> windowKv(const Tensor &kv, const Tensor &ring, int64_t startPos);
/// window_indices (section 4), rows of the window_kv result, i32:
///   prefill (startPos 0): [count, min(count, W)], row t: j = max(0, t-W+1) + i, -1 where j > t;
///   decode (startPos > 0, count 1): [1, W], V4.1 ring order: slots oldest..W-1 then 0..oldest-1 with
///   oldest = startPos % W + 1, each -1 when the slot exceeds startPos (the ring is still filling);
///   chunk (startPos > 0, count > 1): [count, W], row t (position p = startPos + t) is decode's row at p with each
///   slot mapped to the rows of concat(ring, kv): entry i stands for position pos = p - W + 1 + i (the position
///   slot (p % W + 1 + i) % W holds at p): -1 if pos < 0, W + (pos - startPos) if pos >= startPos (the chunk's
///   row), else pos % W (the ring's slot).
/// Errors: startPos < 0, count < 1, windowSize < 1; in a chunk, startPos + count overflowing int64 or W + count
/// rows not fitting i32.
Result<Tensor> windowIndices(int64_t startPos, int64_t count, int64_t windowSize);
/// sparse_attn (section 10): q bf16 [s, H, hd], kv bf16 [n, hd], indices i32 [s, k] (rows of kv, -1 = none),
/// sink f32 [H], scale (hd^-0.5 in the model) -> bf16 [s, H, hd]. z_j = (q . kv[idx_j]) * scale in f32;
/// m = max(sink, max z); den = exp(sink - m) + sum exp(z_j - m); o = bf16(sum_j exp(z_j - m)/den * kv[idx_j]).
/// The sink enters the denominator only; a row whose indices are all -1 (or k == 0) gives zeros, never NaN.
/// A sink of -inf means no sink. Duplicate indices count once per occurrence.
/// Errors: element types, ranks, kv width != hd, indices rows != s, sink size != H, a NaN sink, a non-finite
/// scale, an index outside [-1, n).
Result<Tensor> sparseAttn(const Tensor &q, const Tensor &kv, const Tensor &indices, const Tensor &sink,
                          float scale);
/// grouped_output (section 11): o bf16 [s, H, hd] (after the inverse RoPE), wo_a bf16 [G*R, H*hd/G] ->
/// bf16 [s, G*R]: og[t, g, r] = bf16(sum_d o[t, g, d] * wo_a[g*R + r, d]) with o[t] viewed as G contiguous
/// groups of H*hd/G values (group g holds heads g*H/G ..). The output projection is then linear(og, wo_b).
/// Errors: element types, ranks, groups < 1, H not divisible by groups, wo_a columns != H*hd/G, wo_a rows not a
/// multiple of groups.
Result<Tensor> groupedOutput(const Tensor &o, const Tensor &woA, int64_t groups);

} // namespace dsa::kernels

#endif
