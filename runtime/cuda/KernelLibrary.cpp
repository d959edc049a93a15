//===- KernelLibrary.cpp - launching the dsa GPU kernels from C++ ---------------------------------------------===//
//
// Parameter lists and launch shapes follow the gpu.func signatures and the "Grid:" lines of
// lib/Conversion/DSAToGPU/Kernels.mlir, which DSAToGPU.cpp uses as well (block sizes kElementwiseBlock etc.).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Runtime/Cuda/KernelLibrary.h"

#include <climits>

namespace dsa::cuda {

namespace {
enum Kernel : size_t {
  kPositions,
  kGemm,
  kRmsNorm,
  kApplyRope,
  kActQuant,
  kRingUpdate,
  kWindowIndices,
  kSparseAttn,
  kNumKernels
};

constexpr unsigned kElementwiseBlock = 256;
constexpr unsigned kQuantBlock = 128;
constexpr unsigned kGemmTile = 16;
constexpr unsigned kRowBlock = 256;
constexpr unsigned kAttnBlock = 128;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// A grid dimension, or an error when it does not fit (the x dimension takes up to 2^31-1 blocks, y and z 65535).
Result<unsigned> gridDim(const char *what, int64_t blocks, int64_t limit) {
  if (blocks < 0 || blocks > limit)
    return makeError(std::string(what) + ": " + std::to_string(blocks) + " blocks do not fit a grid dimension (limit " +
                     std::to_string(limit) + ")");
  return static_cast<unsigned>(blocks);
}

Status negative(const char *what, std::initializer_list<int64_t> sizes) {
  for (int64_t v : sizes)
    if (v < 0)
      return makeError(std::string(what) + ": a size is negative (" + std::to_string(v) + ")");
  return Status::success();
}
} // namespace

const std::vector<std::string> &KernelLibrary::kernelNames() {
  static const std::vector<std::string> names = {
      "dsa_positions",  "dsa_gemm_bf16",   "dsa_rms_norm_bf16",  "dsa_apply_rope",
      "dsa_act_quant_fp8", "dsa_ring_update", "dsa_window_indices", "dsa_sparse_attn"};
  return names;
}

std::vector<unsigned> KernelLibrary::parameterBytes(const std::string &kernel) {
  // m: a memref<?xT> (five 8-byte values), q: an 8-byte scalar (index, i64), w: a 4-byte scalar (i32, f32); from
  // the gpu.func signatures of Kernels.mlir.
  static const std::pair<const char *, const char *> kSignatures[] = {
      {"dsa_positions", "m q q q"},
      {"dsa_gemm_bf16", "m m m q q q q q q q q"},
      {"dsa_rms_norm_bf16", "m m m q q w"},
      {"dsa_apply_rope", "m m m m q q q q w"},
      {"dsa_act_quant_fp8", "m m q q"},
      {"dsa_ring_update", "m m m q q q q"},
      {"dsa_window_indices", "m q q q q"},
      {"dsa_sparse_attn", "m m m m m m q q q q q w"},
  };
  std::vector<unsigned> bytes;
  for (auto &[name, sig] : kSignatures) {
    if (kernel != name)
      continue;
    for (const char *c = sig; *c; ++c) {
      if (*c == 'm')
        bytes.insert(bytes.end(), 5, 8u);
      else if (*c == 'q')
        bytes.push_back(8);
      else if (*c == 'w')
        bytes.push_back(4);
    }
  }
  return bytes;
}

Result<KernelLibrary> KernelLibrary::load(const Context &ctx, const std::string &image) {
  Result<Module> m = ctx.loadModule(image);
  if (!m.ok())
    return makeError(m.error());
  KernelLibrary lib(&ctx, m.take());
  for (const std::string &name : kernelNames()) {
    Result<Function> f = lib.module_.function(name);
    if (!f.ok())
      return makeError("the dsa kernel module is incomplete: " + f.error());
    lib.functions_.push_back(*f);
  }
  return lib;
}

Status KernelLibrary::run(size_t kernel, const LaunchShape &shape, KernelArgs &args) const {
  const std::vector<unsigned> want = parameterBytes(kernelNames()[kernel]);
  bool same = want.size() == args.size();
  for (size_t i = 0; same && i < want.size(); ++i)
    same = want[i] == args.slotBytes(i);
  if (!same)
    return makeError("internal error: the arguments packed for " + kernelNames()[kernel] +
                     " do not match its signature (" + std::to_string(args.size()) + " parameters, expected " +
                     std::to_string(want.size()) + ")");
  // An empty problem launches nothing (CUDA rejects an empty grid), as the MLIR host code does.
  for (unsigned g : shape.grid)
    if (g == 0)
      return Status::success();
  return ctx_->launch(functions_[kernel], shape, args);
}

Status KernelLibrary::positions(DevicePtr out, int64_t start, int64_t count, int64_t stride) const {
  if (start < 0)
    return makeError("positions: start is " + std::to_string(start) + ", expected >= 0");
  if (Status st = negative("positions", {count}); !st.ok())
    return st;
  Result<unsigned> gx = gridDim("positions", ceilDiv(count, kElementwiseBlock), INT_MAX);
  if (!gx.ok())
    return makeError(gx.error());
  KernelArgs args;
  args.memref(out, count).i64(start).index(count).i64(stride);
  return run(kPositions, {{*gx, 1, 1}, {kElementwiseBlock, 1, 1}}, args);
}

Status KernelLibrary::linearBf16(DevicePtr x, DevicePtr w, DevicePtr y, int64_t M, int64_t N, int64_t K) const {
  if (Status st = negative("linear", {M, N, K}); !st.ok())
    return st;
  Result<unsigned> gx = gridDim("linear", ceilDiv(N, kGemmTile), INT_MAX);
  Result<unsigned> gy = gridDim("linear", ceilDiv(M, kGemmTile), 65535);
  if (!gx.ok() || !gy.ok())
    return makeError(!gx.ok() ? gx.error() : gy.error());
  KernelArgs args;
  args.memref(x, M * K).memref(w, N * K).memref(y, M * N);
  args.index(M).index(N).index(K).index(K).index(N).index(0).index(0).index(0);
  return run(kGemm, {{*gx, *gy, 1}, {kGemmTile, kGemmTile, 1}}, args);
}

Status KernelLibrary::groupedOutput(DevicePtr o, DevicePtr woA, DevicePtr y, int64_t s, int64_t H, int64_t hd,
                                    int64_t G, int64_t R) const {
  if (Status st = negative("grouped_output", {s, H, hd, R}); !st.ok())
    return st;
  if (G < 1 || H % G != 0)
    return makeError("grouped_output: groups " + std::to_string(G) + " must be >= 1 and divide n_heads " +
                     std::to_string(H));
  const int64_t gw = H * hd / G;
  Result<unsigned> gx = gridDim("grouped_output", ceilDiv(R, kGemmTile), INT_MAX);
  Result<unsigned> gy = gridDim("grouped_output", ceilDiv(s, kGemmTile), 65535);
  Result<unsigned> gz = gridDim("grouped_output", G, 65535);
  if (!gx.ok() || !gy.ok() || !gz.ok())
    return makeError(!gx.ok() ? gx.error() : !gy.ok() ? gy.error() : gz.error());
  KernelArgs args;
  args.memref(o, s * H * hd).memref(woA, G * R * gw).memref(y, s * G * R);
  args.index(s).index(R).index(gw).index(H * hd).index(G * R).index(gw).index(R * gw).index(R);
  return run(kGemm, {{*gx, *gy, *gz}, {kGemmTile, kGemmTile, 1}}, args);
}

Status KernelLibrary::rmsNormBf16(DevicePtr x, DevicePtr w, DevicePtr y, int64_t rows, int64_t D, float eps) const {
  if (Status st = negative("rms_norm", {rows, D}); !st.ok())
    return st;
  if (D == 0)
    return makeError("rms_norm: the row width D is 0");
  Result<unsigned> gx = gridDim("rms_norm", rows, INT_MAX);
  if (!gx.ok())
    return makeError(gx.error());
  KernelArgs args;
  args.memref(x, rows * D).memref(w, D).memref(y, rows * D).index(rows).index(D).f32(eps);
  return run(kRmsNorm, {{*gx, 1, 1}, {kRowBlock, 1, 1}}, args);
}

Status KernelLibrary::applyRope(DevicePtr x, DevicePtr pos, DevicePtr freqs, DevicePtr y, int64_t s,
                                int64_t rowsPerToken, int64_t hd, int64_t rd, bool inverse) const {
  if (Status st = negative("apply_rope", {s, rowsPerToken, hd}); !st.ok())
    return st;
  if (rd <= 0 || rd % 2 != 0 || rd > hd)
    return makeError("apply_rope: rope_dim " + std::to_string(rd) + " must be positive, even and <= head_dim " +
                     std::to_string(hd));
  const int64_t total = s * rowsPerToken * hd;
  Result<unsigned> gx = gridDim("apply_rope", ceilDiv(total, kElementwiseBlock), INT_MAX);
  if (!gx.ok())
    return makeError(gx.error());
  KernelArgs args;
  args.memref(x, total).memref(pos, s).memref(freqs, rd / 2).memref(y, total);
  args.index(s).index(rowsPerToken).index(hd).index(rd).i32(inverse ? 1 : 0);
  return run(kApplyRope, {{*gx, 1, 1}, {kElementwiseBlock, 1, 1}}, args);
}

Status KernelLibrary::actQuantFp8(DevicePtr x, DevicePtr y, int64_t nblocks, int64_t block) const {
  if (Status st = negative("act_quant_fp8", {nblocks}); !st.ok())
    return st;
  if (block <= 0)
    return makeError("act_quant_fp8: block_size is " + std::to_string(block) + ", expected > 0");
  Result<unsigned> gx = gridDim("act_quant_fp8", ceilDiv(nblocks, kQuantBlock), INT_MAX);
  if (!gx.ok())
    return makeError(gx.error());
  KernelArgs args;
  args.memref(x, nblocks * block).memref(y, nblocks * block).index(nblocks).index(block);
  return run(kActQuant, {{*gx, 1, 1}, {kQuantBlock, 1, 1}}, args);
}

Status KernelLibrary::ringUpdate(DevicePtr ring, DevicePtr kv, DevicePtr out, int64_t W, int64_t hd, int64_t s,
                                 int64_t start) const {
  if (Status st = negative("ring_update", {hd, s}); !st.ok())
    return st;
  if (W < 1)
    return makeError("ring_update: the ring has " + std::to_string(W) + " slots, expected >= 1");
  if (start < 0)
    return makeError("ring_update: start_pos is " + std::to_string(start) + ", expected >= 0");
  Result<unsigned> gx = gridDim("ring_update", ceilDiv(W * hd, kElementwiseBlock), INT_MAX);
  if (!gx.ok())
    return makeError(gx.error());
  KernelArgs args;
  args.memref(ring, W * hd).memref(kv, s * hd).memref(out, W * hd).index(W).index(hd).index(s).i64(start);
  return run(kRingUpdate, {{*gx, 1, 1}, {kElementwiseBlock, 1, 1}}, args);
}

Status KernelLibrary::windowIndices(DevicePtr out, int64_t start, int64_t count, int64_t W, int64_t width) const {
  if (start < 0)
    return makeError("window_indices: start_pos is " + std::to_string(start) + ", expected >= 0");
  if (count < 1 || W < 1)
    return makeError("window_indices: count " + std::to_string(count) + " and window_size " + std::to_string(W) +
                     " must be >= 1");
  if (start > 0 && count != 1)
    return makeError("window_indices: a step of " + std::to_string(count) + " tokens at start_pos " +
                     std::to_string(start) + ": multi-token steps at start_pos > 0 are split into decode steps");
  const int64_t want = start == 0 ? std::min(count, W) : W;
  if (width != want)
    return makeError("window_indices: width is " + std::to_string(width) + ", this step's is " +
                     std::to_string(want));
  Result<unsigned> gx = gridDim("window_indices", ceilDiv(count * width, kElementwiseBlock), INT_MAX);
  if (!gx.ok())
    return makeError(gx.error());
  KernelArgs args;
  args.memref(out, count * width).i64(start).index(count).index(W).index(width);
  return run(kWindowIndices, {{*gx, 1, 1}, {kElementwiseBlock, 1, 1}}, args);
}

Status KernelLibrary::sparseAttn(DevicePtr q, DevicePtr kv, DevicePtr idx, DevicePtr sink, DevicePtr o,
                                 DevicePtr scratch, int64_t s, int64_t H, int64_t hd, int64_t n, int64_t k,
                                 float scale) const {
  if (Status st = negative("sparse_attn", {s, H, hd, n, k}); !st.ok())
    return st;
  if (n > INT32_MAX)
    return makeError("sparse_attn: kv has " + std::to_string(n) + " rows, more than i32 indices address");
  Result<unsigned> gx = gridDim("sparse_attn", s * H, INT_MAX);
  if (!gx.ok())
    return makeError(gx.error());
  KernelArgs args;
  args.memref(q, s * H * hd).memref(kv, n * hd).memref(idx, s * k).memref(sink, H).memref(o, s * H * hd);
  args.memref(scratch, std::max<int64_t>(1, s * H * k));
  args.index(s).index(H).index(hd).index(n).index(k).f32(scale);
  return run(kSparseAttn, {{*gx, 1, 1}, {kAttnBlock, 1, 1}}, args);
}

} // namespace dsa::cuda
