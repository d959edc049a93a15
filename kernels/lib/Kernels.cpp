//===- Kernels.cpp - one pure evaluator per dsa primitive -------------------===//
//
// The math follows shared/spec/attention-semantics.md (sections named per function). Rounding (bf16, e4m3, the
// block quantisers) comes from the Numerics library; nothing here re-implements it.
//
// Floating-point contraction is disabled for this library (CMakeLists.txt: -ffp-contract=off) so that a*b+c is
// rounded twice, as the reference's f32 arithmetic is, on every target.
//
//===----------------------------------------------------------------------------------------------------------===//

#include "dsa/Kernels/Kernels.h"

#include "dsa/Numerics/BF16.h"
#include "dsa/Numerics/Quant.h"
#include "dsa/Support/CheckedArithmetic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace dsa::kernels {

namespace {

using numerics::roundBf16;

std::string str(int64_t v) { return std::to_string(v); }

std::string shapeStr(const Tensor &t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.rank(); ++i) {
    if (i)
      s += ", ";
    s += str(t.dim(i));
  }
  return s + "]";
}

Error err(const char *op, const std::string &message) { return makeError(std::string(op) + ": " + message); }

bool isIntType(ElementType t) { return !isFloatType(t); }

/// Checks `t`'s element type is `want`.
std::optional<Error> expectType(const char *op, const char *name, const Tensor &t, ElementType want) {
  if (t.elementType() != want)
    return err(op, std::string(name) + " has element type " + elementTypeName(t.elementType()) + ", expected " +
                       elementTypeName(want));
  return std::nullopt;
}

std::optional<Error> expectRank(const char *op, const char *name, const Tensor &t, int64_t rank) {
  if (t.rank() != rank)
    return err(op, std::string(name) + " has rank " + str(t.rank()) + " (shape " + shapeStr(t) + "), expected rank " +
                       str(rank));
  return std::nullopt;
}

std::optional<Error> expectMinRank(const char *op, const char *name, const Tensor &t, int64_t rank) {
  if (t.rank() < rank)
    return err(op, std::string(name) + " has rank " + str(t.rank()) + " (shape " + shapeStr(t) +
                       "), expected rank >= " + str(rank));
  return std::nullopt;
}

/// f32 dot product of two contiguous rows, accumulated in eight interleaved f32 lanes that are combined pairwise
/// (the spec allows any accumulation order; this one vectorises and stays close to a blocked GEMM's).
inline float dotF32(const float *a, const float *b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l)
      acc[l] += a[k + l] * b[k + l];
  float tail = 0.0f;
  for (; k < n; ++k)
    tail += a[k] * b[k];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  return s + tail;
}

std::vector<int64_t> withLastDim(const std::vector<int64_t> &shape, int64_t last) {
  std::vector<int64_t> out = shape;
  out.back() = last;
  return out;
}

} // namespace

Result<Tensor> positions(int64_t start, int64_t count, int64_t stride) {
  if (start < 0)
    return err("positions", "start is " + str(start) + ", expected >= 0");
  if (count < 0)
    return err("positions", "count is " + str(count) + ", expected >= 0");
  if (stride < 1)
    return err("positions", "stride is " + str(stride) + ", expected >= 1");
  if (count > 0 && (count - 1) > (std::numeric_limits<int64_t>::max() - start) / stride)
    return err("positions", "start + (count-1)*stride overflows int64 (start " + str(start) + ", count " +
                                str(count) + ", stride " + str(stride) + ")");
  Result<Tensor> allocated = Tensor::zeros(ElementType::I64, {count});
  if (!allocated.ok())
    return err("positions", allocated.error());
  Tensor out = std::move(*allocated);
  for (int64_t i = 0; i < count; ++i)
    out.ints()[i] = start + i * stride;
  return out;
}

Result<Tensor> applyRope(const Tensor &x, const Tensor &pos, const RopeParams &params, bool inverse) {
  const char *op = "apply_rope";
  if (auto e = expectType(op, "x", x, ElementType::BF16))
    return *e;
  if (auto e = expectMinRank(op, "x", x, 2))
    return *e;
  if (!isIntType(pos.elementType()) || pos.elementType() == ElementType::I1)
    return err(op, std::string("positions has element type ") + elementTypeName(pos.elementType()) +
                       ", expected i64, i32 or index");
  if (auto e = expectRank(op, "positions", pos, 1))
    return *e;
  const int64_t s = x.dim(0);
  if (pos.dim(0) != s)
    return err(op, "positions has " + str(pos.dim(0)) + " elements but x has " + str(s) + " rows (dimension 0)");
  const int64_t hd = x.dim(x.rank() - 1);
  const int64_t rd = params.ropeDim;
  if (rd <= 0 || rd % 2 != 0)
    return err(op, "rope_head_dim is " + str(rd) + ", expected a positive even number");
  if (rd > hd)
    return err(op, "rope_head_dim " + str(rd) + " exceeds x's last dimension " + str(hd));
  if (!(params.theta > 0.0) || !std::isfinite(params.theta))
    return err(op, "rope theta is " + std::to_string(params.theta) + ", expected a positive finite number");
  if (params.yarn && params.yarn->originalSeqLen > 0) {
    const YarnParams &y = *params.yarn;
    if (!(y.factor > 0.0) || !std::isfinite(y.factor))
      return err(op, "yarn factor is " + std::to_string(y.factor) + ", expected a positive finite number");
    if (!(y.betaFast > 0.0) || !(y.betaSlow > 0.0) || !std::isfinite(y.betaFast) || !std::isfinite(y.betaSlow))
      return err(op, "yarn beta_fast/beta_slow are " + std::to_string(y.betaFast) + "/" +
                         std::to_string(y.betaSlow) + ", expected positive finite numbers");
  }
  for (int64_t t = 0; t < s; ++t)
    if (pos.ints()[t] < 0)
      return err(op, "positions[" + str(t) + "] is " + str(pos.ints()[t]) + ", expected >= 0");

  const std::vector<float> freqs = ropeFrequencies(params);
  const int64_t half = rd / 2;
  Tensor out = x;
  const int64_t rowsPerToken = s == 0 ? 0 : x.numElements() / (s * hd);
  std::vector<float> cosT(static_cast<size_t>(half)), sinT(static_cast<size_t>(half));
  for (int64_t t = 0; t < s; ++t) {
    const float p = static_cast<float>(pos.ints()[t]);
    for (int64_t k = 0; k < half; ++k) {
      float a = p * freqs[static_cast<size_t>(k)];
      cosT[static_cast<size_t>(k)] = std::cos(a);
      sinT[static_cast<size_t>(k)] = inverse ? -std::sin(a) : std::sin(a);
    }
    for (int64_t r = 0; r < rowsPerToken; ++r) {
      float *tail = out.floats() + (t * rowsPerToken + r) * hd + (hd - rd);
      for (int64_t k = 0; k < half; ++k) {
        const float x0 = tail[2 * k], x1 = tail[2 * k + 1];
        const float c = cosT[static_cast<size_t>(k)], sn = sinT[static_cast<size_t>(k)];
        tail[2 * k] = roundBf16(x0 * c - x1 * sn);
        tail[2 * k + 1] = roundBf16(x0 * sn + x1 * c);
      }
    }
  }
  return out;
}

//===----------------------------------------------------------------------------------------------------------===//
// linear, rms_norm, act_quant_fp8 (section 2)
//===----------------------------------------------------------------------------------------------------------===//

Result<Tensor> linear(const Tensor &x, const Tensor &weight) {
  const char *op = "linear";
  if (!x.isFloat())
    return err(op, std::string("x has element type ") + elementTypeName(x.elementType()) + ", expected bf16 or f32");
  if (weight.elementType() != x.elementType())
    return err(op, std::string("weight has element type ") + elementTypeName(weight.elementType()) +
                       " but x has " + elementTypeName(x.elementType()) + " (both must be bf16 or both f32)");
  if (auto e = expectMinRank(op, "x", x, 1))
    return *e;
  if (auto e = expectRank(op, "weight", weight, 2))
    return *e;
  const int64_t K = x.dim(x.rank() - 1);
  const int64_t N = weight.dim(0);
  if (weight.dim(1) != K)
    return err(op, "weight has " + str(weight.dim(1)) + " columns but x's last dimension is " + str(K));
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < x.rank(); ++i)
    rows *= x.dim(i);
  Tensor out(x.elementType(), withLastDim(x.shape(), N));
  const bool bf16 = x.elementType() == ElementType::BF16;
  const float *xp = x.floats();
  const float *wp = weight.floats();
  float *op_ = out.floats();
  // Row-blocked: for a block of x rows, stream every weight row once; each output is one contiguous dot over K.
  constexpr int64_t kRowBlock = 4;
  for (int64_t m0 = 0; m0 < rows; m0 += kRowBlock) {
    const int64_t m1 = std::min(rows, m0 + kRowBlock);
    for (int64_t n = 0; n < N; ++n) {
      const float *w = wp + n * K;
      for (int64_t m = m0; m < m1; ++m) {
        float acc = dotF32(xp + m * K, w, K);
        op_[m * N + n] = bf16 ? roundBf16(acc) : acc;
      }
    }
  }
  return out;
}

Result<Tensor> rmsNorm(const Tensor &x, const Tensor &weight, float eps) {
  const char *op = "rms_norm";
  if (!x.isFloat())
    return err(op, std::string("x has element type ") + elementTypeName(x.elementType()) + ", expected bf16 or f32");
  if (auto e = expectType(op, "weight", weight, ElementType::BF16))
    return *e;
  if (auto e = expectMinRank(op, "x", x, 1))
    return *e;
  if (auto e = expectRank(op, "weight", weight, 1))
    return *e;
  const int64_t D = x.dim(x.rank() - 1);
  if (weight.dim(0) != D)
    return err(op, "weight has " + str(weight.dim(0)) + " elements but x's last dimension is " + str(D));
  if (D == 0)
    return err(op, "x's last dimension is 0 (the mean over an empty row is undefined)");
  if (!(eps >= 0.0f) || !std::isfinite(eps))
    return err(op, "eps is " + std::to_string(eps) + ", expected a finite number >= 0");
  Tensor out(ElementType::BF16, x.shape());
  const int64_t rows = x.numElements() / D;
  for (int64_t m = 0; m < rows; ++m) {
    const float *row = x.floats() + m * D;
    float mean = dotF32(row, row, D) / static_cast<float>(D);
    float r = 1.0f / std::sqrt(mean + eps);
    float *o = out.floats() + m * D;
    for (int64_t d = 0; d < D; ++d)
      o[d] = roundBf16(weight.floats()[d] * (row[d] * r));
  }
  return out;
}

Result<Tensor> actQuantFp8(const Tensor &x, int64_t blockSize) {
  const char *op = "act_quant_fp8";
  if (!x.isFloat())
    return err(op, std::string("x has element type ") + elementTypeName(x.elementType()) + ", expected bf16 or f32");
  if (auto e = expectMinRank(op, "x", x, 1))
    return *e;
  if (blockSize <= 0)
    return err(op, "block_size is " + str(blockSize) + ", expected > 0");
  const int64_t D = x.dim(x.rank() - 1);
  if (D % blockSize != 0)
    return err(op, "x's last dimension " + str(D) + " is not a multiple of block_size " + str(blockSize));
  // The round trip reads x's values as they are (an f32 x unrounded) and leaves bf16-exact values.
  Tensor out(ElementType::BF16, x.shape());
  std::copy(x.floatVector().begin(), x.floatVector().end(), out.floats());
  if (D == 0)
    return out;
  const int64_t rows = x.numElements() / D;
  for (int64_t m = 0; m < rows; ++m) {
    Status st = numerics::actQuantFp8(out.floats() + m * D, D, blockSize);
    if (!st.ok())
      return err(op, "row " + str(m) + ": " + st.error());
  }
  return out;
}

//===----------------------------------------------------------------------------------------------------------===//
// Window KV and the ring (section 4)
//===----------------------------------------------------------------------------------------------------------===//

namespace {
std::optional<Error> checkRingAndKv(const char *op, const Tensor &ring, const Tensor &kv) {
  if (auto e = expectType(op, "ring", ring, ElementType::BF16))
    return e;
  if (auto e = expectType(op, "kv", kv, ElementType::BF16))
    return e;
  if (auto e = expectRank(op, "ring", ring, 2))
    return e;
  if (auto e = expectRank(op, "kv", kv, 2))
    return e;
  if (ring.dim(0) < 1)
    return err(op, "ring has " + str(ring.dim(0)) + " slots, expected window_size >= 1");
  if (kv.dim(1) != ring.dim(1))
    return err(op, "kv rows have " + str(kv.dim(1)) + " elements but ring rows have " + str(ring.dim(1)));
  return std::nullopt;
}
} // namespace

Result<Tensor> ringUpdate(const Tensor &ring, const Tensor &kv, int64_t startPos) {
  const char *op = "ring_update";
  if (auto e = checkRingAndKv(op, ring, kv))
    return *e;
  if (startPos < 0)
    return err(op, "start_pos is " + str(startPos) + ", expected >= 0");
  const int64_t W = ring.dim(0), hd = ring.dim(1), s = kv.dim(0);
  Tensor out = ring;
  for (int64_t i = std::max<int64_t>(0, s - W); i < s; ++i) {
    const int64_t slot = addMod(startPos, i, W); // (start_pos + i) % W without overflow at a huge start_pos
    std::copy(kv.floats() + i * hd, kv.floats() + (i + 1) * hd, out.floats() + slot * hd);
  }
  return out;
}

Result<Tensor> windowKv(const Tensor &kv, const Tensor &ring, int64_t startPos) {
  const char *op = "window_kv";
  if (auto e = checkRingAndKv(op, ring, kv))
    return *e;
  if (startPos < 0)
    return err(op, "start_pos is " + str(startPos) + ", expected >= 0");
  if (startPos == 0)
    return kv;
  // Decode: the ring with this step's row in slot start_pos % W (ringUpdate's write; the same ring when `ring`
  // already holds it).
  if (kv.dim(0) == 1)
    return ringUpdate(ring, kv, startPos);
  // A chunk at start_pos > 0: the ring as it stood before the step, then the chunk's own rows.
  const int64_t W = ring.dim(0), hd = ring.dim(1), s = kv.dim(0);
  Result<Tensor> allocated = Tensor::zeros(ElementType::BF16, {W + s, hd});
  if (!allocated.ok())
    return err(op, allocated.error());
  Tensor out = std::move(*allocated);
  std::copy(ring.floats(), ring.floats() + W * hd, out.floats());
  std::copy(kv.floats(), kv.floats() + s * hd, out.floats() + W * hd);
  return out;
}

Result<Tensor> windowIndices(int64_t startPos, int64_t count, int64_t windowSize) {
  const char *op = "window_indices";
  if (startPos < 0)
    return err(op, "start_pos is " + str(startPos) + ", expected >= 0");
  if (count < 1)
    return err(op, "token count is " + str(count) + ", expected >= 1");
  if (windowSize < 1)
    return err(op, "window_size is " + str(windowSize) + ", expected >= 1");
  if (startPos == 0) {
    const int64_t width = std::min(count, windowSize);
    Result<Tensor> allocated = Tensor::zeros(ElementType::I32, {count, width});
    if (!allocated.ok())
      return err(op, allocated.error());
    Tensor out = std::move(*allocated);
    for (int64_t t = 0; t < count; ++t)
      for (int64_t i = 0; i < width; ++i) {
        const int64_t j = std::max<int64_t>(0, t - windowSize + 1) + i;
        out.ints()[t * width + i] = j > t ? -1 : j;
      }
    return out;
  }
  if (count == 1) {
    Result<Tensor> allocated = Tensor::zeros(ElementType::I32, {1, windowSize});
    if (!allocated.ok())
      return err(op, allocated.error());
    Tensor out = std::move(*allocated);
    const int64_t oldest = startPos % windowSize + 1;
    int64_t i = 0;
    auto emit = [&](int64_t slot) { out.ints()[i++] = slot > startPos ? -1 : slot; };
    for (int64_t slot = oldest; slot < windowSize; ++slot)
      emit(slot);
    for (int64_t slot = 0; slot < oldest; ++slot)
      emit(slot);
    return out;
  }
  // A chunk at start_pos > 0 (rows of window_kv's [W + count] result: the ring before the step, then the chunk).
  // Query t at p = start_pos + t reads what its decode step would: the slots oldest first, slot (p % W + 1 + i) % W
  // holding position pos = p - W + 1 + i at that time; -1 when pos < 0 (the slot number exceeds p: the ring is
  // still filling), the chunk's row W + (pos - start_pos) when pos is in the chunk, else the ring's slot pos % W.
  if (startPos > std::numeric_limits<int64_t>::max() - count)
    return err(op, "start_pos " + str(startPos) + " + " + str(count) + " tokens overflows int64");
  if (windowSize > std::numeric_limits<int32_t>::max() - count)
    return err(op, "window_size " + str(windowSize) + " + " + str(count) +
                       " tokens: the rows do not fit i32 indices");
  Result<Tensor> allocated = Tensor::zeros(ElementType::I32, {count, windowSize});
  if (!allocated.ok())
    return err(op, allocated.error());
  Tensor out = std::move(*allocated);
  for (int64_t t = 0; t < count; ++t)
    for (int64_t i = 0; i < windowSize; ++i) {
      const int64_t pos = startPos + t - windowSize + 1 + i; // >= -W: no overflow (startPos + count fits)
      out.ints()[t * windowSize + i] = pos < 0 ? -1 : pos >= startPos ? windowSize + (pos - startPos) : pos % windowSize;
    }
  return out;
}

//===----------------------------------------------------------------------------------------------------------===//
// sparse_attn (section 10)
//===----------------------------------------------------------------------------------------------------------===//

Result<Tensor> sparseAttn(const Tensor &q, const Tensor &kv, const Tensor &indices, const Tensor &sink, float scale) {
  const char *op = "sparse_attn";
  if (auto e = expectType(op, "q", q, ElementType::BF16))
    return *e;
  if (auto e = expectType(op, "kv", kv, ElementType::BF16))
    return *e;
  if (auto e = expectType(op, "indices", indices, ElementType::I32))
    return *e;
  if (auto e = expectType(op, "sink", sink, ElementType::F32))
    return *e;
  if (auto e = expectRank(op, "q", q, 3))
    return *e;
  if (auto e = expectRank(op, "kv", kv, 2))
    return *e;
  if (auto e = expectRank(op, "indices", indices, 2))
    return *e;
  if (auto e = expectRank(op, "sink", sink, 1))
    return *e;
  const int64_t s = q.dim(0), H = q.dim(1), hd = q.dim(2), n = kv.dim(0), k = indices.dim(1);
  if (kv.dim(1) != hd)
    return err(op, "kv rows have " + str(kv.dim(1)) + " elements but q's head_dim is " + str(hd));
  if (indices.dim(0) != s)
    return err(op, "indices has " + str(indices.dim(0)) + " rows but q has " + str(s) + " tokens");
  if (sink.dim(0) != H)
    return err(op, "sink has " + str(sink.dim(0)) + " elements but q has " + str(H) + " heads");
  if (!std::isfinite(scale))
    return err(op, "scale is " + std::to_string(scale) + ", expected a finite number");
  for (int64_t h = 0; h < H; ++h)
    if (std::isnan(sink.floats()[h]))
      return err(op, "sink[" + str(h) + "] is NaN");
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    const int64_t v = indices.ints()[i];
    if (v < -1 || v >= n)
      return err(op, "indices[" + str(i / std::max<int64_t>(k, 1)) + ", " + str(i % std::max<int64_t>(k, 1)) +
                         "] is " + str(v) + ", expected -1 or a row of kv in [0, " + str(n) + ")");
  }

  Tensor out(ElementType::BF16, {s, H, hd});
  std::vector<float> z(static_cast<size_t>(k));
  std::vector<float> acc(static_cast<size_t>(hd));
  for (int64_t t = 0; t < s; ++t) {
    const int64_t *idx = indices.ints() + t * k;
    bool anyValid = false;
    for (int64_t j = 0; j < k; ++j)
      anyValid |= idx[j] >= 0;
    for (int64_t h = 0; h < H; ++h) {
      float *o = out.floats() + (t * H + h) * hd;
      if (!anyValid)
        continue; // every index is -1: the output row is zero (the sink alone has no value row)
      const float *qr = q.floats() + (t * H + h) * hd;
      const float sk = sink.floats()[h];
      float m = sk;
      for (int64_t j = 0; j < k; ++j) {
        z[static_cast<size_t>(j)] = idx[j] < 0 ? -std::numeric_limits<float>::infinity()
                                               : dotF32(qr, kv.floats() + idx[j] * hd, hd) * scale;
        m = std::max(m, z[static_cast<size_t>(j)]);
      }
      float den = std::exp(sk - m);
      for (int64_t j = 0; j < k; ++j)
        if (idx[j] >= 0)
          den += std::exp(z[static_cast<size_t>(j)] - m);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        if (idx[j] < 0)
          continue;
        const float p = std::exp(z[static_cast<size_t>(j)] - m) / den;
        const float *row = kv.floats() + idx[j] * hd;
        for (int64_t d = 0; d < hd; ++d)
          acc[static_cast<size_t>(d)] += p * row[d];
      }
      for (int64_t d = 0; d < hd; ++d)
        o[d] = roundBf16(acc[static_cast<size_t>(d)]);
    }
  }
  return out;
}

//===----------------------------------------------------------------------------------------------------------===//
// grouped_output (section 11)
//===----------------------------------------------------------------------------------------------------------===//

Result<Tensor> groupedOutput(const Tensor &o, const Tensor &woA, int64_t groups) {
  const char *op = "grouped_output";
  if (auto e = expectType(op, "o", o, ElementType::BF16))
    return *e;
  if (auto e = expectType(op, "wo_a", woA, ElementType::BF16))
    return *e;
  if (auto e = expectRank(op, "o", o, 3))
    return *e;
  if (auto e = expectRank(op, "wo_a", woA, 2))
    return *e;
  if (groups < 1)
    return err(op, "o_groups is " + str(groups) + ", expected >= 1");
  const int64_t s = o.dim(0), H = o.dim(1), hd = o.dim(2);
  if (H % groups != 0)
    return err(op, "n_heads " + str(H) + " (o's dimension 1) is not divisible by o_groups " + str(groups));
  const int64_t groupWidth = H / groups * hd;
  if (woA.dim(1) != groupWidth)
    return err(op, "wo_a has " + str(woA.dim(1)) + " columns but one group of o has n_heads*head_dim/o_groups = " +
                       str(groupWidth) + " values");
  if (woA.dim(0) % groups != 0)
    return err(op, "wo_a has " + str(woA.dim(0)) + " rows, not a multiple of o_groups " + str(groups));
  const int64_t R = woA.dim(0) / groups;
  Tensor out(ElementType::BF16, {s, groups * R});
  for (int64_t t = 0; t < s; ++t)
    for (int64_t g = 0; g < groups; ++g) {
      const float *og = o.floats() + t * H * hd + g * groupWidth;
      for (int64_t r = 0; r < R; ++r)
        out.floats()[t * groups * R + g * R + r] =
            roundBf16(dotF32(og, woA.floats() + (g * R + r) * groupWidth, groupWidth));
    }
  return out;
}

} // namespace dsa::kernels
