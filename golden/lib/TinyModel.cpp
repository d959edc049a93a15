//===- TinyModel.cpp - the non-attention part of the tiny golden model ---------===//
//
// Follows shared/spec/tiny-model-harness.md, "Model forward", step by step; see TinyModel.h.
//
//===----------------------------------------------------------------------------------------------------------===//

#include "dsa/Golden/TinyModel.h"

#include "dsa/Golden/Filler.h"
#include "dsa/Kernels/Kernels.h"
#include "dsa/Numerics/BF16.h"
#include "dsa/Numerics/TopK.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dsa::golden {

using dsa::ElementType;
using dsa::Tensor;
using numerics::roundBf16;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + str(shape[i]);
  return s + "]";
}

Error fail(const std::string &message) { return makeError("tiny model: " + message); }

size_t sz(int64_t v) { return static_cast<size_t>(v); }

/// A float tensor of `shape` holding `src`'s values (same count), with another element type / shape.
Tensor reshapeFloats(const Tensor &src, ElementType type, std::vector<int64_t> shape) {
  return Tensor::fromFloats(type, std::move(shape), src.floatVector());
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
/// torch's silu on CPU: x / (1 + exp(-x)).
float silu(float x) { return x / (1.0f + std::exp(-x)); }
/// torch's softplus with beta 1 and threshold 20.
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

struct Expert {
  Tensor w1, w2, w3; // bf16 [inter, dim], [dim, inter], [inter, dim]
};

struct HcParams {
  Tensor fn;                // f32 [(2+hc)*hc, hc*dim]
  std::vector<float> base;  // [(2+hc)*hc]
  std::vector<float> scale; // [3]
};

struct EngramWeights {
  int64_t index = -1;      // e: position in fixture.engram.layerIds
  Tensor table;            // bf16 [num_embeddings, head_dim]: e4m3 value * e8m0 block scale, rounded to bf16
  Tensor wkv;              // bf16 [dim*(hc+1), cols*head_dim]
  std::vector<float> qk;   // f32 [hc*dim]: q_weight * k_weight
};

struct LayerWeights {
  Tensor attnNorm, ffnNorm; // bf16 [dim]
  HcParams hcAttn, hcFfn;
  Tensor gate;                 // f32 [n_routed_experts, dim] (bf16 values; the router runs in f32)
  std::vector<float> gateBias; // [n_routed_experts]
  std::vector<Expert> experts; // n_routed_experts
  std::vector<Expert> shared;  // 0 or 1 (n_shared_experts > 0: one expert of width n_shared * moe_inter_dim)
  bool hasEngram = false;
  EngramWeights engram;
};

/// The hc mixes of every token of a step.
struct Mixes {
  std::vector<float> pre;  // [s, hc]
  std::vector<float> post; // [s, hc]
  std::vector<float> comb; // [s, hc, hc], comb[j][k]: residual copy j, output copy k
};

/// Regenerates `name` (ck-checked) and checks its shape and element type.
Result<Tensor> loadWeight(const GoldenFile &golden, const std::string &name, const std::vector<int64_t> &shape,
                          const char *dtype, const std::string &why) {
  const WeightMeta *meta = golden.weight(name);
  if (!meta)
    return fail("weights_meta has no weight '" + name + "' (" + why + ")");
  if (meta->shape != shape)
    return fail("weight '" + name + "' has shape " + shapeStr(meta->shape) + ", expected " + shapeStr(shape) +
                " (" + why + ")");
  if (dtype && meta->dtype != dtype)
    return fail("weight '" + name + "' has dtype " + meta->dtype + ", expected " + dtype);
  auto t = regenerateWeight(*meta);
  if (!t)
    return fail(t.error());
  return t.take();
}

Result<HcParams> loadHc(const GoldenFile &golden, const std::string &prefix, int64_t hc, int64_t dim) {
  HcParams p;
  const std::string why = "hc_mult " + str(hc) + ", dim " + str(dim);
  auto fn = loadWeight(golden, prefix + "_fn", {(2 + hc) * hc, hc * dim}, "float32", why);
  if (!fn)
    return Error{fn.error()};
  auto base = loadWeight(golden, prefix + "_base", {(2 + hc) * hc}, nullptr, why);
  if (!base)
    return Error{base.error()};
  auto scale = loadWeight(golden, prefix + "_scale", {3}, nullptr, why);
  if (!scale)
    return Error{scale.error()};
  p.fn = fn.take();
  p.base = base->floatVector();
  p.scale = scale->floatVector();
  return p;
}

Result<Expert> loadExpert(const GoldenFile &golden, const std::string &prefix, int64_t inter, int64_t dim) {
  const std::string why = "dim " + str(dim) + ", expert width " + str(inter);
  Expert e;
  auto w1 = loadWeight(golden, prefix + ".w1.weight", {inter, dim}, "bfloat16", why);
  if (!w1)
    return Error{w1.error()};
  auto w2 = loadWeight(golden, prefix + ".w2.weight", {dim, inter}, "bfloat16", why);
  if (!w2)
    return Error{w2.error()};
  auto w3 = loadWeight(golden, prefix + ".w3.weight", {inter, dim}, "bfloat16", why);
  if (!w3)
    return Error{w3.error()};
  e.w1 = w1.take();
  e.w2 = w2.take();
  e.w3 = w3.take();
  return e;
}

/// The fixture checks the forward relies on (everything it indexes with).
Status validateFixture(const Fixture &f) {
  auto positive = [](const char *field, int64_t v) -> Status {
    if (v <= 0)
      return fail(std::string("fixture.") + field + " is " + str(v) + ", expected > 0");
    return Status::success();
  };
  for (auto [field, v] : {std::pair<const char *, int64_t>{"vocab_size", f.vocabSize},
                          {"dim", f.dim},
                          {"n_layers", f.nLayers},
                          {"hc_mult", f.hcMult},
                          {"hc_sinkhorn_iters", f.hcSinkhornIters},
                          {"moe_inter_dim", f.moeInterDim},
                          {"n_routed_experts", f.nRoutedExperts},
                          {"n_activated_experts", f.nActivatedExperts},
                          {"max_seq_len", f.maxSeqLen}}) {
    if (Status st = positive(field, v); !st)
      return st;
  }
  if (f.nActivatedExperts > f.nRoutedExperts)
    return fail("fixture.n_activated_experts is " + str(f.nActivatedExperts) + ", more than n_routed_experts " +
                str(f.nRoutedExperts));
  if (f.nSharedExperts < 0)
    return fail("fixture.n_shared_experts is " + str(f.nSharedExperts) + ", expected >= 0");
  if (f.scoreFunc != "sqrtsoftplus")
    return fail("fixture.score_func is '" + f.scoreFunc +
                "'; the harness implements only 'sqrtsoftplus' (tiny-model-harness.md, moe)");
  if (f.gateTemp != 1.0)
    return fail("fixture.gate_temp is " + std::to_string(f.gateTemp) +
                "; the harness doc specifies the router only for gate_temp 1");
  if (!(f.normEps >= 0) || !(f.hcEps >= 0) || !(f.swigluLimit >= 0) || !std::isfinite(f.routeScale))
    return fail("fixture.norm_eps / hc_eps / swiglu_limit must be finite and >= 0, route_scale finite");

  const EngramTables &e = f.engram;
  const int64_t nE = static_cast<int64_t>(e.layerIds.size());
  if (nE == 0)
    return Status::success();
  for (int64_t i = 0; i < nE; ++i) {
    int64_t l = e.layerIds[sz(i)];
    if (l < 0 || l >= f.nLayers || (i > 0 && l <= e.layerIds[sz(i - 1)]))
      return fail("fixture.engram.layer_ids[" + str(i) + "] is " + str(l) + ", expected ascending layers in [0, " +
                  str(f.nLayers) + ")");
  }
  if (e.maxNgramSize < 2)
    return fail("fixture.engram.max_ngram_size is " + str(e.maxNgramSize) + ", expected >= 2");
  if (Status st = positive("engram.n_heads", e.nHeads); !st)
    return st;
  if (Status st = positive("engram.head_dim", e.headDim); !st)
    return st;
  if (e.nHashCols != (e.maxNgramSize - 1) * e.nHeads)
    return fail("fixture.engram.n_hash_cols is " + str(e.nHashCols) + ", expected (max_ngram_size-1)*n_heads = " +
                str((e.maxNgramSize - 1) * e.nHeads));
  if (static_cast<int64_t>(e.tokenMap.size()) != f.vocabSize)
    return fail("fixture.engram.token_map has " + str(static_cast<int64_t>(e.tokenMap.size())) +
                " entries, expected vocab_size " + str(f.vocabSize));
  for (size_t i = 0; i < e.tokenMap.size(); ++i)
    if (e.tokenMap[i] < -1)
      return fail("fixture.engram.token_map[" + str(static_cast<int64_t>(i)) + "] is " + str(e.tokenMap[i]) +
                  ", expected >= -1");
  if (static_cast<int64_t>(e.numEmbeddings.size()) != nE || static_cast<int64_t>(e.multipliers.size()) != nE ||
      static_cast<int64_t>(e.primes.size()) != nE || static_cast<int64_t>(e.offsets.size()) != nE)
    return fail("fixture.engram: num_embeddings, multipliers, primes and offsets need one entry per engram layer (" +
                str(nE) + ")");
  for (int64_t i = 0; i < nE; ++i) {
    const std::string at = "[" + str(i) + "]";
    if (static_cast<int64_t>(e.multipliers[sz(i)].size()) != e.maxNgramSize)
      return fail("fixture.engram.multipliers" + at + " has " + str(int64_t(e.multipliers[sz(i)].size())) +
                  " entries, expected max_ngram_size " + str(e.maxNgramSize));
    if (static_cast<int64_t>(e.primes[sz(i)].size()) != e.maxNgramSize - 1)
      return fail("fixture.engram.primes" + at + " has " + str(int64_t(e.primes[sz(i)].size())) +
                  " entries, expected max_ngram_size-1 = " + str(e.maxNgramSize - 1));
    for (size_t j = 0; j < e.primes[sz(i)].size(); ++j) {
      if (static_cast<int64_t>(e.primes[sz(i)][j].size()) != e.nHeads)
        return fail("fixture.engram.primes" + at + "[" + str(int64_t(j)) + "] needs n_heads entries");
      for (int64_t p : e.primes[sz(i)][j])
        if (p <= 0)
          return fail("fixture.engram.primes" + at + "[" + str(int64_t(j)) + "] holds " + str(p) +
                      ", expected > 0");
    }
    if (static_cast<int64_t>(e.offsets[sz(i)].size()) != e.nHashCols)
      return fail("fixture.engram.offsets" + at + " has " + str(int64_t(e.offsets[sz(i)].size())) +
                  " entries, expected n_hash_cols " + str(e.nHashCols));
    if (e.numEmbeddings[sz(i)] <= 0)
      return fail("fixture.engram.num_embeddings" + at + " is " + str(e.numEmbeddings[sz(i)]) + ", expected > 0");
  }
  if (e.scaleBlock <= 0 || e.headDim % e.scaleBlock != 0)
    return fail("fixture.engram.scale_block is " + str(e.scaleBlock) + ", expected > 0 and dividing head_dim " +
                str(e.headDim));
  return Status::success();
}

} // namespace

//===----------------------------------------------------------------------------------------------------------===//
// TinyModel::Impl
//===----------------------------------------------------------------------------------------------------------===//

struct TinyModel::Impl {
  Fixture f;
  Tensor embed; // bf16 [vocab, dim]
  Tensor norm;  // bf16 [dim]
  Tensor head;  // f32 [vocab, dim]
  std::vector<LayerWeights> layers;
  /// The per-sequence engram cache: compressed id (token_map[id]) by position, -1 = not seen / no compressed id.
  std::vector<int64_t> cache;

  int64_t hc() const { return f.hcMult; }
  int64_t dim() const { return f.dim; }

  Mixes hcMixes(const Tensor &h, const HcParams &p) const;
  Tensor hcPre(const Tensor &h, const std::vector<float> &pre) const;
  Tensor hcPost(const Tensor &x, const Tensor &res, const std::vector<float> &post,
                const std::vector<float> &comb) const;
  Result<Tensor> expertForward(const Expert &e, const Tensor &x, const std::vector<float> *weights) const;
  Status route(const LayerWeights &lw, const Tensor &x, Tensor &weights, Tensor &indices) const;
  Status experts(int64_t layer, const LayerWeights &lw, const Tensor &x, const Tensor &weights,
                 const Tensor &indices, Tensor &out) const;
  Tensor engramHash(const std::vector<int64_t> &cacheView, int64_t startPos, int64_t s) const;
  Status engramRows(int64_t layer, const EngramWeights &ew, const Tensor &ids, Tensor &rows) const;
  Status engramKv(const EngramWeights &ew, const Tensor &rows, Tensor &kv) const;
  Tensor engramOut(const EngramWeights &ew, const Tensor &h, const Tensor &kv) const;
};

// hc_mixes(h): per token v = flatten(h) (f32); r = 1/sqrt(mean(v^2) + norm_eps); m = (hc_fn @ v) * r;
// pre = sigmoid(m*scale[0] + base) + hc_eps; post = 2*sigmoid(m*scale[1] + base); comb = softmax rows of
// (m*scale[2] + base), + hc_eps, then one column normalisation and hc_sinkhorn_iters-1 rounds of (row, column).
Mixes TinyModel::Impl::hcMixes(const Tensor &h, const HcParams &p) const {
  const int64_t s = h.dim(0), H = hc(), D = dim(), n = H * D, M = (2 + H) * H;
  const float normEps = static_cast<float>(f.normEps), hcEps = static_cast<float>(f.hcEps);
  Tensor v = reshapeFloats(h, ElementType::F32, {s, n});
  // The f32 GEMM of section 2 (f32 operands, f32 result); the shapes were checked on create.
  Tensor mm = *kernels::linear(v, p.fn);
  Mixes out;
  out.pre.resize(sz(s * H));
  out.post.resize(sz(s * H));
  out.comb.resize(sz(s * H * H));
  for (int64_t t = 0; t < s; ++t) {
    const float *vt = v.floats() + t * n;
    float sq = 0.0f;
    for (int64_t i = 0; i < n; ++i)
      sq += vt[i] * vt[i];
    const float r = 1.0f / std::sqrt(sq / static_cast<float>(n) + normEps);
    std::vector<float> m(sz(M));
    for (int64_t j = 0; j < M; ++j)
      m[sz(j)] = mm.floats()[t * M + j] * r;
    float *pre = out.pre.data() + t * H;
    float *post = out.post.data() + t * H;
    float *c = out.comb.data() + t * H * H;
    for (int64_t j = 0; j < H; ++j) {
      pre[j] = sigmoid(m[sz(j)] * p.scale[0] + p.base[sz(j)]) + hcEps;
      post[j] = 2.0f * sigmoid(m[sz(H + j)] * p.scale[1] + p.base[sz(H + j)]);
    }
    for (int64_t j = 0; j < H; ++j) {
      float *row = c + j * H;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < H; ++k) {
        row[k] = m[sz(2 * H + j * H + k)] * p.scale[2] + p.base[sz(2 * H + j * H + k)];
        mx = std::max(mx, row[k]);
      }
      float sum = 0.0f;
      for (int64_t k = 0; k < H; ++k) {
        row[k] = std::exp(row[k] - mx);
        sum += row[k];
      }
      for (int64_t k = 0; k < H; ++k)
        row[k] = row[k] / sum + hcEps;
    }
    auto columnNorm = [&] {
      for (int64_t k = 0; k < H; ++k) {
        float sum = 0.0f;
        for (int64_t j = 0; j < H; ++j)
          sum += c[j * H + k];
        for (int64_t j = 0; j < H; ++j)
          c[j * H + k] /= sum + hcEps;
      }
    };
    auto rowNorm = [&] {
      for (int64_t j = 0; j < H; ++j) {
        float sum = 0.0f;
        for (int64_t k = 0; k < H; ++k)
          sum += c[j * H + k];
        for (int64_t k = 0; k < H; ++k)
          c[j * H + k] /= sum + hcEps;
      }
    };
    columnNorm();
    for (int64_t it = 1; it < f.hcSinkhornIters; ++it) {
      rowNorm();
      columnNorm();
    }
  }
  return out;
}

// hc_pre(h, pre): y[d] = bf16(sum_c pre[c] * h[c][d]).
Tensor TinyModel::Impl::hcPre(const Tensor &h, const std::vector<float> &pre) const {
  const int64_t s = h.dim(0), H = hc(), D = dim();
  Tensor y(ElementType::BF16, {s, D});
  for (int64_t t = 0; t < s; ++t)
    for (int64_t d = 0; d < D; ++d) {
      float acc = 0.0f;
      for (int64_t c = 0; c < H; ++c)
        acc += pre[sz(t * H + c)] * h.floats()[(t * H + c) * D + d];
      y.floats()[t * D + d] = roundBf16(acc);
    }
  return y;
}

// hc_post(x, res, post, comb): y[k][d] = bf16(post[k]*x[d] + sum_j comb[j][k]*res[j][d]).
Tensor TinyModel::Impl::hcPost(const Tensor &x, const Tensor &res, const std::vector<float> &post,
                               const std::vector<float> &comb) const {
  const int64_t s = x.dim(0), H = hc(), D = dim();
  Tensor y(ElementType::BF16, {s, H, D});
  for (int64_t t = 0; t < s; ++t)
    for (int64_t k = 0; k < H; ++k)
      for (int64_t d = 0; d < D; ++d) {
        float mix = 0.0f;
        for (int64_t j = 0; j < H; ++j)
          mix += comb[sz((t * H + j) * H + k)] * res.floats()[(t * H + j) * D + d];
        y.floats()[(t * H + k) * D + d] = roundBf16(post[sz(t * H + k)] * x.floats()[t * D + d] + mix);
      }
  return y;
}

// expert(x, w): g = linear(x, w1), u = linear(x, w3) (bf16 values used as f32); with swiglu_limit > 0
// u = clamp(u, -lim, lim), g = min(g, lim); t = silu(g) * u * w; return linear(bf16(t), w2). Every row of x;
// `weights` (per row) absent for the shared expert.
Result<Tensor> TinyModel::Impl::expertForward(const Expert &e, const Tensor &x,
                                              const std::vector<float> *weights) const {
  auto g = kernels::linear(x, e.w1);
  if (!g)
    return Error{g.error()};
  auto u = kernels::linear(x, e.w3);
  if (!u)
    return Error{u.error()};
  const int64_t s = x.dim(0), I = g->dim(1);
  const float lim = static_cast<float>(f.swigluLimit);
  Tensor t(ElementType::BF16, {s, I});
  for (int64_t r = 0; r < s; ++r)
    for (int64_t i = 0; i < I; ++i) {
      float gv = g->floats()[r * I + i], uv = u->floats()[r * I + i];
      if (lim > 0.0f) {
        uv = std::min(std::max(uv, -lim), lim);
        gv = std::min(gv, lim);
      }
      float tv = silu(gv) * uv;
      if (weights)
        tv = tv * (*weights)[sz(r)];
      t.floats()[r * I + i] = roundBf16(tv);
    }
  return kernels::linear(t, e.w2);
}

// moe(x) = experts(x, route(x)).
// route(x): sc = sqrt(softplus(x @ gate^T in f32)); experts = top k of sc + bias (descending); w = sc there,
// / (sum w + 1e-20) when norm_topk_prob and k > 1, * route_scale.
Status TinyModel::Impl::route(const LayerWeights &lw, const Tensor &x, Tensor &weightsOut,
                              Tensor &indicesOut) const {
  const int64_t s = x.dim(0), D = dim(), E = f.nRoutedExperts, K = f.nActivatedExperts;
  Tensor xf = reshapeFloats(x, ElementType::F32, {s, D});
  auto scores = kernels::linear(xf, lw.gate);
  if (!scores)
    return Error{scores.error()};
  weightsOut = Tensor(ElementType::F32, {s, K});
  indicesOut = Tensor(ElementType::I64, {s, K});
  for (int64_t t = 0; t < s; ++t) {
    std::vector<float> sc(sz(E)), biased(sz(E));
    for (int64_t e = 0; e < E; ++e) {
      sc[sz(e)] = std::sqrt(softplus(scores->floats()[t * E + e]));
      biased[sz(e)] = sc[sz(e)] + lw.gateBias[sz(e)];
    }
    auto topk = numerics::torchCpuTopkSet(biased.data(), E, K);
    if (!topk)
      return Error{topk.error()};
    std::vector<int64_t> sel = topk.take();
    std::stable_sort(sel.begin(), sel.end(),
                     [&](int64_t a, int64_t b) { return biased[sz(a)] > biased[sz(b)]; });
    std::vector<float> w(sz(K));
    float sum = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      w[sz(k)] = sc[sz(sel[sz(k)])];
      sum += w[sz(k)];
    }
    for (int64_t k = 0; k < K; ++k) {
      if (f.normTopkProb && K > 1)
        w[sz(k)] = w[sz(k)] / (sum + 1e-20f);
      w[sz(k)] = w[sz(k)] * static_cast<float>(f.routeScale);
      weightsOut.floats()[t * K + k] = w[sz(k)];
      indicesOut.ints()[t * K + k] = sel[sz(k)];
    }
  }
  return Status::success();
}

// experts(x, w, idx): y (f32) += bf16(expert_e(x, w_e)) in ascending expert id, += bf16(shared(x)); out = bf16(y).
Status TinyModel::Impl::experts(int64_t layer, const LayerWeights &lw, const Tensor &x, const Tensor &weights,
                                const Tensor &indices, Tensor &out) const {
  const int64_t s = x.dim(0), D = dim(), E = f.nRoutedExperts, K = f.nActivatedExperts;
  // routeWeight[e][t]: the weight of expert e for token t (0 = not routed).
  std::vector<std::vector<float>> routeWeight(sz(E), std::vector<float>(sz(s), 0.0f));
  std::vector<std::vector<bool>> routed(sz(E), std::vector<bool>(sz(s), false));
  for (int64_t t = 0; t < s; ++t)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t e = indices.ints()[t * K + k];
      if (e < 0 || e >= E)
        return fail("layer " + str(layer) + ": moe expert index " + str(e) + " (token " + str(t) +
                    ") outside [0, n_routed_experts " + str(E) + ")");
      routeWeight[sz(e)][sz(t)] = weights.floats()[t * K + k];
      routed[sz(e)][sz(t)] = true;
    }
  std::vector<float> y(sz(s * D), 0.0f);
  for (int64_t e = 0; e < E; ++e) {
    bool any = false;
    for (int64_t t = 0; t < s; ++t)
      any = any || routed[sz(e)][sz(t)];
    if (!any)
      continue;
    auto ye = expertForward(lw.experts[sz(e)], x, &routeWeight[sz(e)]);
    if (!ye)
      return Error{ye.error()};
    for (int64_t t = 0; t < s; ++t)
      if (routed[sz(e)][sz(t)])
        for (int64_t d = 0; d < D; ++d)
          y[sz(t * D + d)] += ye->floats()[t * D + d];
  }
  for (const Expert &sh : lw.shared) {
    auto ys = expertForward(sh, x, nullptr);
    if (!ys)
      return Error{ys.error()};
    for (int64_t i = 0; i < s * D; ++i)
      y[sz(i)] += ys->floats()[i];
  }
  out = Tensor::fromFloats(ElementType::BF16, {s, D}, std::move(y));
  return Status::success();
}

// engram_hash for positions startPos..startPos+s-1 over the (already updated) cache: [s, n_engram_layers, cols].
Tensor TinyModel::Impl::engramHash(const std::vector<int64_t> &c, int64_t startPos, int64_t s) const {
  const EngramTables &e = f.engram;
  const int64_t nE = static_cast<int64_t>(e.layerIds.size()), G = e.maxNgramSize, cols = e.nHashCols;
  Tensor out(ElementType::I64, {s, nE, cols});
  std::vector<int64_t> tok(sz(G));
  for (int64_t t = 0; t < s; ++t) {
    const int64_t p = startPos + t;
    bool blocked = false;
    for (int64_t i = 0; i < G; ++i) {
      blocked = blocked || p < i || c[sz(p - i)] == -1;
      tok[sz(i)] = blocked ? e.padIdCompressed : c[sz(p - i)];
    }
    for (int64_t l = 0; l < nE; ++l) {
      // i64 with wrap-around: multiply and xor on the two's-complement bit patterns.
      auto mul = [](int64_t a, int64_t b) {
        return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      };
      int64_t roll = mul(tok[0], e.multipliers[sz(l)][0]);
      for (int64_t i = 1; i < G; ++i) {
        roll ^= mul(tok[sz(i)], e.multipliers[sz(l)][sz(i)]);
        for (int64_t h = 0; h < e.nHeads; ++h) {
          const int64_t col = (i - 1) * e.nHeads + h;
          const int64_t prime = e.primes[sz(l)][sz(i - 1)][sz(h)];
          int64_t rem = roll % prime;
          if (rem < 0)
            rem += prime;
          out.ints()[(t * nE + l) * cols + col] = rem + e.offsets[sz(l)][sz(col)];
        }
      }
    }
  }
  return out;
}

// engram(h, ids) = out(h, kv(rows(ids))): rows table[id] flattened; kv = linear(rows, wkv) split into
// key[hc][dim], value[dim]; per copy c: rstd = 1/sqrt(mean(h[c]^2)+eps) * 1/sqrt(mean(key[c]^2)+eps);
// dot = sum_d h[c][d]*(q_weight[c][d]*k_weight[c][d])*key[c][d] * rstd * dim^-0.5;
// gate = sigmoid(sign(dot)*sqrt(max(|dot|, 1e-6))); out[c][d] = bf16(h[c][d] + gate*value[d]).
Status TinyModel::Impl::engramRows(int64_t layer, const EngramWeights &ew, const Tensor &ids, Tensor &rows) const {
  const int64_t s = ids.dim(0), cols = ids.dim(1), hd = f.engram.headDim;
  const int64_t nRows = ew.table.dim(0);
  rows = Tensor(ElementType::BF16, {s, cols, hd});
  for (int64_t t = 0; t < s; ++t)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t id = ids.ints()[t * cols + j];
      if (id < 0 || id >= nRows)
        return fail("layer " + str(layer) + ": engram hash id " + str(id) + " (token " + str(t) + ", column " +
                    str(j) + ") is outside the table's " + str(nRows) + " rows (check fixture.engram.offsets)");
      std::copy_n(ew.table.floats() + id * hd, hd, rows.floats() + (t * cols + j) * hd);
    }
  return Status::success();
}

Status TinyModel::Impl::engramKv(const EngramWeights &ew, const Tensor &rows, Tensor &kv) const {
  const int64_t s = rows.dim(0), cols = rows.dim(1), hd = rows.dim(2);
  auto kvr = kernels::linear(reshapeFloats(rows, ElementType::BF16, {s, cols * hd}), ew.wkv);
  if (!kvr)
    return Error{kvr.error()};
  kv = kvr.take();
  return Status::success();
}

Tensor TinyModel::Impl::engramOut(const EngramWeights &ew, const Tensor &h, const Tensor &kv) const {
  const int64_t s = h.dim(0), H = hc(), D = dim();
  const int64_t kvw = (H + 1) * D;
  const float eps = static_cast<float>(f.normEps);
  const float invSqrtDim = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  Tensor out(ElementType::BF16, {s, H, D});
  for (int64_t t = 0; t < s; ++t) {
    const float *value = kv.floats() + t * kvw + H * D;
    for (int64_t c = 0; c < H; ++c) {
      const float *hc_ = h.floats() + (t * H + c) * D;
      const float *key = kv.floats() + t * kvw + c * D;
      const float *qk = ew.qk.data() + c * D;
      float hs = 0.0f, ks = 0.0f, dot = 0.0f;
      for (int64_t d = 0; d < D; ++d) {
        hs += hc_[d] * hc_[d];
        ks += key[d] * key[d];
        dot += hc_[d] * qk[d] * key[d];
      }
      const float rstdH = 1.0f / std::sqrt(hs / static_cast<float>(D) + eps);
      const float rstdK = 1.0f / std::sqrt(ks / static_cast<float>(D) + eps);
      // Left to right, one factor at a time: ((dot * rstd_h) * rstd_k) * dim^-0.5. Folding rstd_h*rstd_k first
      // moves one element of decode12 L1.engram_out (a near-cancelling h + gate*value) by one bf16 ulp.
      dot = dot * rstdH * rstdK * invSqrtDim;
      const float sign = dot > 0.0f ? 1.0f : (dot < 0.0f ? -1.0f : 0.0f);
      const float gate = sigmoid(sign * std::sqrt(std::max(std::fabs(dot), 1e-6f)));
      float *o = out.floats() + (t * H + c) * D;
      for (int64_t d = 0; d < D; ++d)
        o[d] = roundBf16(hc_[d] + gate * value[d]);
    }
  }
  return out;
}

//===----------------------------------------------------------------------------------------------------------===//
// TinyModel
//===----------------------------------------------------------------------------------------------------------===//

CaptureSink recordInto(CaptureMap &map) {
  return [&map](const std::string &name, const Tensor &value) { map[name] = value; };
}

TinyModel::TinyModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TinyModel::TinyModel(TinyModel &&) noexcept = default;
TinyModel &TinyModel::operator=(TinyModel &&) noexcept = default;
TinyModel::~TinyModel() = default;

const Fixture &TinyModel::fixture() const { return impl_->f; }

void TinyModel::reset() { std::fill(impl_->cache.begin(), impl_->cache.end(), -1); }

Result<TinyModel> TinyModel::create(const GoldenFile &golden) {
  auto impl = std::make_unique<Impl>();
  impl->f = golden.fixture();
  const Fixture &f = impl->f;
  if (Status st = validateFixture(f); !st)
    return Error{st.error()};
  const int64_t D = f.dim, H = f.hcMult, V = f.vocabSize;

  auto embed = loadWeight(golden, "embed.weight", {V, D}, "bfloat16", "vocab_size, dim");
  if (!embed)
    return Error{embed.error()};
  impl->embed = embed.take();
  auto norm = loadWeight(golden, "norm.weight", {D}, "bfloat16", "dim");
  if (!norm)
    return Error{norm.error()};
  impl->norm = norm.take();
  auto head = loadWeight(golden, "head.weight", {V, D}, "float32", "vocab_size, dim; the head is f32");
  if (!head)
    return Error{head.error()};
  impl->head = head.take();

  if (!f.engram.layerIds.empty())
    if (Status st = checkEngramScales(golden); !st)
      return fail(st.error());

  for (int64_t l = 0; l < f.nLayers; ++l) {
    const std::string p = "layers." + str(l) + ".";
    LayerWeights lw;
    auto an = loadWeight(golden, p + "attn_norm.weight", {D}, "bfloat16", "dim");
    if (!an)
      return Error{an.error()};
    lw.attnNorm = an.take();
    auto fnw = loadWeight(golden, p + "ffn_norm.weight", {D}, "bfloat16", "dim");
    if (!fnw)
      return Error{fnw.error()};
    lw.ffnNorm = fnw.take();
    auto ha = loadHc(golden, p + "hc_attn", H, D);
    if (!ha)
      return Error{ha.error()};
    lw.hcAttn = ha.take();
    auto hf = loadHc(golden, p + "hc_ffn", H, D);
    if (!hf)
      return Error{hf.error()};
    lw.hcFfn = hf.take();

    auto gate = loadWeight(golden, p + "ffn.gate.weight", {f.nRoutedExperts, D}, nullptr, "n_routed_experts, dim");
    if (!gate)
      return Error{gate.error()};
    lw.gate = reshapeFloats(*gate, ElementType::F32, {f.nRoutedExperts, D});
    auto bias = loadWeight(golden, p + "ffn.gate.bias", {f.nRoutedExperts}, nullptr, "n_routed_experts");
    if (!bias)
      return Error{bias.error()};
    lw.gateBias = bias->floatVector();
    for (int64_t e = 0; e < f.nRoutedExperts; ++e) {
      auto ex = loadExpert(golden, p + "ffn.experts." + str(e), f.moeInterDim, D);
      if (!ex)
        return Error{ex.error()};
      lw.experts.push_back(ex.take());
    }
    if (f.nSharedExperts > 0) {
      auto sh = loadExpert(golden, p + "ffn.shared_experts", f.nSharedExperts * f.moeInterDim, D);
      if (!sh)
        return Error{sh.error()};
      lw.shared.push_back(sh.take());
    }

    const auto &ids = f.engram.layerIds;
    auto it = std::find(ids.begin(), ids.end(), l);
    if (it != ids.end()) {
      const EngramTables &et = f.engram;
      const int64_t e = it - ids.begin(), hd = et.headDim, rowsN = et.numEmbeddings[sz(e)];
      lw.hasEngram = true;
      lw.engram.index = e;
      const std::string why = "fixture.engram (num_embeddings " + str(rowsN) + ", head_dim " + str(hd) + ")";
      auto tab = loadWeight(golden, p + "engram.embed.weight", {rowsN, hd}, "float8_e4m3fn", why);
      if (!tab)
        return Error{tab.error()};
      const int64_t blocks = hd / et.scaleBlock;
      auto sc = loadWeight(golden, p + "engram.embed.scale", {rowsN, blocks}, "float8_e8m0fnu",
                           why + ", scale_block " + str(et.scaleBlock));
      if (!sc)
        return Error{sc.error()};
      lw.engram.table = Tensor(ElementType::BF16, {rowsN, hd});
      for (int64_t r = 0; r < rowsN; ++r)
        for (int64_t d = 0; d < hd; ++d)
          lw.engram.table.floats()[r * hd + d] =
              roundBf16(tab->floats()[r * hd + d] * sc->floats()[r * blocks + d / et.scaleBlock]);
      auto wkv = loadWeight(golden, p + "engram.wkv.weight", {D * (H + 1), et.nHashCols * hd}, "bfloat16",
                            "dim*(hc_mult+1), n_hash_cols*head_dim");
      if (!wkv)
        return Error{wkv.error()};
      lw.engram.wkv = wkv.take();
      auto qw = loadWeight(golden, p + "engram.q_weight", {H, D}, nullptr, "hc_mult, dim");
      if (!qw)
        return Error{qw.error()};
      auto kw = loadWeight(golden, p + "engram.k_weight", {H, D}, nullptr, "hc_mult, dim");
      if (!kw)
        return Error{kw.error()};
      lw.engram.qk.resize(sz(H * D));
      for (int64_t i = 0; i < H * D; ++i)
        lw.engram.qk[sz(i)] = qw->floats()[i] * kw->floats()[i];
    }
    impl->layers.push_back(std::move(lw));
  }
  impl->cache.assign(sz(f.maxSeqLen), -1);
  return TinyModel(std::move(impl));
}

Result<StepOutputs> TinyModel::step(const std::vector<int64_t> &idsIn, int64_t startPos, const AttentionFn &attention,
                                    const CaptureSink &sink, const CaptureOverride &override) {
  Impl &m = *impl_;
  const Fixture &f = m.f;
  std::vector<int64_t> ids = idsIn;
  const int64_t s = static_cast<int64_t>(ids.size()), D = f.dim, H = f.hcMult, V = f.vocabSize;
  if (s == 0)
    return fail("step: ids is empty");
  for (int64_t t = 0; t < s; ++t)
    if (ids[sz(t)] < 0 || ids[sz(t)] >= V)
      return fail("step: ids[" + str(t) + "] is " + str(ids[sz(t)]) + ", outside [0, vocab_size " + str(V) + ")");
  if (startPos < 0)
    return fail("step: start_pos is " + str(startPos) + ", expected >= 0");
  if (startPos > f.maxSeqLen - s)
    return fail("step: start_pos " + str(startPos) + " + " + str(s) + " tokens exceeds max_seq_len " +
                str(f.maxSeqLen));
  if (!attention)
    return fail("step: no attention callback");
  // Every capture goes to the sink as computed; then the override may replace it, and the forward goes on with the
  // replacement (which must keep the capture's element type and shape).
  std::string overrideError;
  auto capture = [&](const std::string &name, Tensor &v) {
    if (sink)
      sink(name, v);
    if (override) {
      Tensor replaced = v;
      override(name, replaced);
      if (replaced.elementType() != v.elementType() || replaced.shape() != v.shape()) {
        if (overrideError.empty())
          overrideError = "step: the override of '" + name + "' changed " + v.typeString() + " into " +
                          replaced.typeString();
        return;
      }
      v = std::move(replaced);
    }
  };
  auto captureMix = [&](const std::string &name, std::vector<float> &v, std::vector<int64_t> shape) {
    Tensor t = Tensor::fromFloats(ElementType::F32, std::move(shape), v);
    capture(name, t);
    v = t.floatVector();
  };

  Tensor idsTensor = Tensor::fromInts(ElementType::I64, {s}, ids);
  capture("input_ids", idsTensor);
  for (int64_t t = 0; t < s; ++t) {
    ids[sz(t)] = idsTensor.ints()[t];
    if (ids[sz(t)] < 0 || ids[sz(t)] >= V)
      return fail("step: input_ids[" + str(t) + "] is " + str(ids[sz(t)]) + " after the override, outside [0, " +
                  str(V) + ")");
  }
  // The sequence: positions < startPos as cached, then these ids; later positions are forgotten.
  std::vector<int64_t> cache = m.cache;
  for (int64_t p = startPos; p < f.maxSeqLen; ++p)
    cache[sz(p)] = -1;
  if (!f.engram.tokenMap.empty()) // empty only when the model has no engram layer
    for (int64_t t = 0; t < s; ++t)
      cache[sz(startPos + t)] = f.engram.tokenMap[sz(ids[sz(t)])];
  const int64_t nE = static_cast<int64_t>(f.engram.layerIds.size()), cols = f.engram.nHashCols;
  // Without engram layers (fixture.engram null): no hashing and no engram_hashes capture.
  Tensor hashes(ElementType::I64, {s, 0, 0});
  if (nE > 0) {
    hashes = m.engramHash(cache, startPos, s);
    capture("engram_hashes", hashes);
  }

  Tensor embed(ElementType::BF16, {s, D});
  for (int64_t t = 0; t < s; ++t)
    std::copy_n(m.embed.floats() + ids[sz(t)] * D, D, embed.floats() + t * D);
  capture("embed", embed);
  Tensor h(ElementType::BF16, {s, H, D});
  for (int64_t t = 0; t < s; ++t)
    for (int64_t c = 0; c < H; ++c)
      std::copy_n(embed.floats() + t * D, D, h.floats() + (t * H + c) * D);
  std::vector<float> preMix(sz(s * H), 0.0f);
  for (int64_t t = 0; t < s; ++t)
    preMix[sz(t * H)] = 1.0f;

  for (int64_t l = 0; l < f.nLayers; ++l) {
    const LayerWeights &lw = m.layers[sz(l)];
    const std::string L = "L" + str(l) + ".";
    if (lw.hasEngram) {
      capture(L + "engram_in", h);
      Tensor hid(ElementType::I64, {s, cols});
      for (int64_t t = 0; t < s; ++t)
        std::copy_n(hashes.ints() + (t * nE + lw.engram.index) * cols, cols, hid.ints() + t * cols);
      capture(L + "engram_hash_ids", hid);
      Tensor rows, kv;
      if (Status st = m.engramRows(l, lw.engram, hid, rows); !st)
        return Error{st.error()};
      capture(L + "engram_embed", rows);
      if (Status st = m.engramKv(lw.engram, rows, kv); !st)
        return Error{st.error()};
      capture(L + "engram_kv", kv);
      h = m.engramOut(lw.engram, h, kv);
      capture(L + "engram_out", h);
    }
    capture(L + "h_in", h);
    captureMix(L + "pre_mix_in", preMix, {s, H});

    Tensor res = h;
    Mixes a = m.hcMixes(h, lw.hcAttn);
    captureMix(L + "attn_pre", a.pre, {s, H});
    captureMix(L + "attn_post", a.post, {s, H});
    captureMix(L + "attn_comb", a.comb, {s, H, H});
    auto attnIn = kernels::rmsNorm(m.hcPre(h, preMix), lw.attnNorm, static_cast<float>(f.normEps));
    if (!attnIn)
      return Error{attnIn.error()};
    capture(L + "attn_in", *attnIn);
    auto attnOut = attention(l, *attnIn, startPos);
    if (!attnOut)
      return fail("layer " + str(l) + ": attention callback failed: " + attnOut.error());
    if (!attnOut->isFloat() || attnOut->shape() != std::vector<int64_t>{s, D})
      return fail("layer " + str(l) + ": attention callback returned " + attnOut->typeString() +
                  ", expected tensor<" + str(s) + "x" + str(D) + "xbf16>");
    Tensor x = reshapeFloats(*attnOut, ElementType::BF16, {s, D});
    capture(L + "attn_out", x);
    h = m.hcPost(x, res, a.post, a.comb);

    res = h;
    Mixes fm = m.hcMixes(h, lw.hcFfn);
    captureMix(L + "ffn_pre", fm.pre, {s, H});
    captureMix(L + "ffn_post", fm.post, {s, H});
    captureMix(L + "ffn_comb", fm.comb, {s, H, H});
    auto ffnIn = kernels::rmsNorm(m.hcPre(h, a.pre), lw.ffnNorm, static_cast<float>(f.normEps));
    if (!ffnIn)
      return Error{ffnIn.error()};
    capture(L + "ffn_in", *ffnIn);
    Tensor ffnOut, moeWeights, moeIndices;
    if (Status st = m.route(lw, *ffnIn, moeWeights, moeIndices); !st)
      return fail("layer " + str(l) + ": moe: " + st.error());
    capture(L + "moe_weights", moeWeights);
    capture(L + "moe_indices", moeIndices);
    if (Status st = m.experts(l, lw, *ffnIn, moeWeights, moeIndices, ffnOut); !st)
      return fail("layer " + str(l) + ": moe: " + st.error());
    capture(L + "ffn_out", ffnOut);
    h = m.hcPost(ffnOut, res, fm.post, fm.comb);
    preMix = fm.pre;
    capture(L + "h_out", h);
    captureMix(L + "pre_mix_out", preMix, {s, H});
  }

  Tensor hFinal = m.hcPre(h, preMix);
  capture("h_final", hFinal);
  auto headIn = kernels::rmsNorm(hFinal, m.norm, static_cast<float>(f.normEps));
  if (!headIn)
    return Error{headIn.error()};
  capture("head_in", *headIn);
  auto logits = kernels::linear(reshapeFloats(*headIn, ElementType::F32, {s, D}), m.head);
  if (!logits)
    return Error{logits.error()};
  capture("logits_full", *logits);
  if (!overrideError.empty())
    return fail(overrideError);

  m.cache = std::move(cache);
  StepOutputs outputs;
  outputs.logits = logits.take();
  outputs.hashes = std::move(hashes);
  return outputs;
}

} // namespace dsa::golden
