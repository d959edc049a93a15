//===- KernelLibrary.cpp - launching the dsa GPU kernels from C++ ---------------------------------------------===//
//
// Parameter lists and launch shapes follow the gpu.func signatures and the "Grid:" lines of
// compiler/lib/Conversion/DSAToGPU/Kernels.mlir; the kernel names, parameter layouts and block sizes are core's
// kernel table (dsa/ABI/GpuKernels.h), which the GPU lowering uses as well.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "Runtime/Cuda/KernelLibrary.h"

#include "dsa/ABI/GpuKernels.h"

#include <climits>
#include <cmath>

namespace dsa::cuda {

namespace {

using abi::GpuKernel;
// The launch geometry of core's kernel table (dsa/ABI/GpuKernels.h), as the lowering uses it.
constexpr unsigned kElementwiseBlock = abi::kGpuElementwiseBlock;
constexpr unsigned kQuantBlock = abi::kGpuQuantBlock;
constexpr unsigned kGemmTile = abi::kGpuGemmTile;
constexpr unsigned kRowBlock = abi::kGpuRowBlock;
constexpr unsigned kAttnBlock = abi::kGpuAttnBlock;

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
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const abi::GpuKernelInfo &k : abi::kGpuKernels)
      n.push_back(k.symbol);
    return n;
  }();
  return names;
}

std::vector<unsigned> KernelLibrary::parameterBytes(const std::string &kernel) {
  // m: a memref<?xT> (five 8-byte values), q: an 8-byte scalar (index, i64), w: a 4-byte scalar (i32, f32):
  // core's kernel table (dsa/ABI/GpuKernels.def), checked against Kernels.mlir's gpu.func signatures.
  std::vector<unsigned> bytes;
  for (const abi::GpuKernelInfo &k : abi::kGpuKernels) {
    if (kernel != k.symbol)
      continue;
    for (const char *c = k.parameters; *c; ++c) {
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

Status KernelLibrary::run(abi::GpuKernel which, const LaunchShape &shape, KernelArgs &args) const {
  const size_t kernel = static_cast<size_t>(which);
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
  return run(GpuKernel::Positions, {{*gx, 1, 1}, {kElementwiseBlock, 1, 1}}, args);
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
  return run(GpuKernel::GemmBf16, {{*gx, *gy, 1}, {kGemmTile, kGemmTile, 1}}, args);
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
  return run(GpuKernel::GemmBf16, {{*gx, *gy, *gz}, {kGemmTile, kGemmTile, 1}}, args);
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
  return run(GpuKernel::RmsNormBf16, {{*gx, 1, 1}, {kRowBlock, 1, 1}}, args);
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
  return run(GpuKernel::ApplyRope, {{*gx, 1, 1}, {kElementwiseBlock, 1, 1}}, args);
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
  return run(GpuKernel::ActQuantFp8, {{*gx, 1, 1}, {kQuantBlock, 1, 1}}, args);
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
  return run(GpuKernel::RingUpdate, {{*gx, 1, 1}, {kElementwiseBlock, 1, 1}}, args);
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
  return run(GpuKernel::WindowIndices, {{*gx, 1, 1}, {kElementwiseBlock, 1, 1}}, args);
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
  return run(GpuKernel::SparseAttn, {{*gx, 1, 1}, {kAttnBlock, 1, 1}}, args);
}

//===----------------------------------------------------------------------===//
// Compressed attention
//===----------------------------------------------------------------------===//

namespace {
/// The step checks of the compressed kernels (compress_detail::checkStep).
Status stepCheck(const char *what, int64_t s, int64_t start) {
  if (start < 0)
    return makeError(std::string(what) + ": start_pos is " + std::to_string(start) + ", expected >= 0");
  if (s < 1)
    return makeError(std::string(what) + ": a step of " + std::to_string(s) + " tokens, expected >= 1");
  if (start > 0 && s != 1)
    return makeError(std::string(what) + ": a step of " + std::to_string(s) + " tokens at start_pos " +
                     std::to_string(start) + ": multi-token steps at start_pos > 0 are split into decode steps");
  return Status::success();
}

/// A 1-D elementwise launch of `total` threads.
Result<LaunchShape> elementwise(const char *what, int64_t total, unsigned block = kElementwiseBlock) {
  Result<unsigned> gx = gridDim(what, ceilDiv(total, block), INT_MAX);
  if (!gx.ok())
    return makeError(gx.error());
  return LaunchShape{{*gx, 1, 1}, {block, 1, 1}};
}
} // namespace

Status KernelLibrary::linearF32(DevicePtr x, DevicePtr w, DevicePtr y, int64_t M, int64_t N, int64_t K) const {
  if (Status st = negative("linear_f32", {M, N, K}); !st.ok())
    return st;
  Result<LaunchShape> shape = elementwise("linear_f32", M * N);
  if (!shape.ok())
    return makeError(shape.error());
  KernelArgs args;
  args.memref(x, M * K).memref(w, N * K).memref(y, M * N).index(M).index(N).index(K);
  return run(GpuKernel::LinearF32, *shape, args);
}

Status KernelLibrary::extfBf16F32(DevicePtr x, DevicePtr y, int64_t n) const {
  if (Status st = negative("extf", {n}); !st.ok())
    return st;
  Result<LaunchShape> shape = elementwise("extf", n);
  if (!shape.ok())
    return makeError(shape.error());
  KernelArgs args;
  args.memref(x, n).memref(y, n).index(n);
  return run(GpuKernel::ExtfBf16F32, *shape, args);
}

Status KernelLibrary::truncfF32Bf16(DevicePtr x, DevicePtr y, int64_t n) const {
  if (Status st = negative("truncf", {n}); !st.ok())
    return st;
  Result<LaunchShape> shape = elementwise("truncf", n);
  if (!shape.ok())
    return makeError(shape.error());
  KernelArgs args;
  args.memref(x, n).memref(y, n).index(n);
  return run(GpuKernel::TruncfF32Bf16, *shape, args);
}

int64_t KernelLibrary::pooledRows(int64_t s, int64_t start, int64_t ratio) {
  if (ratio < 1 || s < 0 || start < 0)
    return 0;
  if (start == 0)
    return s / ratio;
  return (start + 1) % ratio == 0 ? 1 : 0;
}

Status KernelLibrary::compressPool(DevicePtr kv, DevicePtr score, DevicePtr kvState, DevicePtr scoreState,
                                   DevicePtr pooled, DevicePtr newKv, DevicePtr newScore, int64_t s, int64_t hd,
                                   int64_t ratio, int64_t start) const {
  if (ratio < 2)
    return makeError("compress_pool: ratio is " + std::to_string(ratio) + ", expected >= 2");
  if (Status st = negative("compress_pool", {hd}); !st.ok())
    return st;
  if (Status st = stepCheck("compress_pool", s, start); !st.ok())
    return st;
  Result<LaunchShape> stateShape = elementwise("compress_pool", ratio * hd);
  if (!stateShape.ok())
    return makeError(stateShape.error());
  KernelArgs state;
  state.memref(kv, s * hd).memref(score, s * hd).memref(kvState, ratio * hd).memref(scoreState, ratio * hd);
  state.memref(newKv, ratio * hd).memref(newScore, ratio * hd).index(ratio).index(hd).index(s).i64(start);
  if (Status st = run(GpuKernel::CompressState, *stateShape, state); !st.ok())
    return st;
  const int64_t g = pooledRows(s, start, ratio);
  Result<LaunchShape> poolShape = elementwise("compress_pool", g * hd);
  if (!poolShape.ok())
    return makeError(poolShape.error());
  // Prefill pools the step's rows; decode pools the updated state (the launch above runs first on the stream).
  const bool prefill = start == 0;
  KernelArgs pool;
  pool.memref(prefill ? kv : newKv, prefill ? s * hd : ratio * hd);
  pool.memref(prefill ? score : newScore, prefill ? s * hd : ratio * hd);
  pool.memref(pooled, g * hd).index(g).index(ratio).index(hd);
  return run(GpuKernel::CompressPool, *poolShape, pool);
}

Status KernelLibrary::fp4Quant(DevicePtr x, DevicePtr y, int64_t nblocks, int64_t block, bool e4m3Scale) const {
  if (Status st = negative("fp4_quant", {nblocks}); !st.ok())
    return st;
  if (block <= 0)
    return makeError("fp4_quant: block_size is " + std::to_string(block) + ", expected > 0");
  Result<LaunchShape> shape = elementwise("fp4_quant", nblocks, kQuantBlock);
  if (!shape.ok())
    return makeError(shape.error());
  KernelArgs args;
  args.memref(x, nblocks * block).memref(y, nblocks * block).index(nblocks).index(block).i32(e4m3Scale ? 1 : 0);
  return run(GpuKernel::Fp4Quant, *shape, args);
}

Status KernelLibrary::cacheWrite(DevicePtr cache, DevicePtr rows, DevicePtr out, int64_t C, int64_t w, int64_t g,
                                 int64_t start, int64_t ratio) const {
  if (Status st = negative("cache_write", {C, w, g}); !st.ok())
    return st;
  if (start < 0 || ratio < 1)
    return makeError("cache_write: start_pos " + std::to_string(start) + " must be >= 0 and ratio " +
                     std::to_string(ratio) + " >= 1");
  const int64_t first = start / ratio;
  if (first + g > C)
    return makeError("cache_write: rows " + std::to_string(first) + ".." + std::to_string(first + g - 1) +
                     " overflow the cache capacity of " + std::to_string(C) + " rows");
  Result<LaunchShape> shape = elementwise("cache_write", C * w);
  if (!shape.ok())
    return makeError(shape.error());
  KernelArgs args;
  args.memref(cache, C * w).memref(rows, g * w).memref(out, C * w).index(C).index(w).index(first).index(g);
  return run(GpuKernel::CacheWrite, *shape, args);
}

Status KernelLibrary::indexerScores(DevicePtr iq, DevicePtr w, DevicePtr keys, DevicePtr out, int64_t s, int64_t IH,
                                    int64_t ihd, int64_t n, int64_t start, int64_t ratio, float weightScale) const {
  if (Status st = negative("indexer_scores", {s, IH, ihd, n}); !st.ok())
    return st;
  if (start < 0 || ratio < 1)
    return makeError("indexer_scores: start_pos " + std::to_string(start) + " must be >= 0 and ratio " +
                     std::to_string(ratio) + " >= 1");
  if (!std::isfinite(weightScale))
    return makeError("indexer_scores: weight_scale is not finite");
  const int64_t width = scoresWidth(s, start, ratio);
  if (n < width)
    return makeError("indexer_scores: keys has " + std::to_string(n) + " rows, fewer than width " +
                     std::to_string(width));
  Result<LaunchShape> shape = elementwise("indexer_scores", s * width);
  if (!shape.ok())
    return makeError(shape.error());
  KernelArgs args;
  args.memref(iq, s * IH * ihd).memref(w, s * IH).memref(keys, n * ihd).memref(out, s * width);
  args.index(s).index(IH).index(ihd).index(width).f32(weightScale);
  return run(GpuKernel::IndexerScores, *shape, args);
}

namespace {
Status scoresCheck(const char *what, int64_t s, int64_t width, int64_t start, int64_t ratio) {
  if (ratio < 1)
    return makeError(std::string(what) + ": ratio is " + std::to_string(ratio) + ", expected >= 1");
  if (Status st = stepCheck(what, s, start); !st.ok())
    return st;
  if (width != KernelLibrary::scoresWidth(s, start, ratio))
    return makeError(std::string(what) + ": width is " + std::to_string(width) + ", (start_pos + s) // ratio is " +
                     std::to_string(KernelLibrary::scoresWidth(s, start, ratio)));
  return Status::success();
}
} // namespace

Status KernelLibrary::compressVisibility(DevicePtr scores, DevicePtr out, int64_t s, int64_t width, int64_t start,
                                         int64_t ratio) const {
  if (Status st = scoresCheck("compress_visibility", s, width, start, ratio); !st.ok())
    return st;
  Result<LaunchShape> shape = elementwise("compress_visibility", s * width);
  if (!shape.ok())
    return makeError(shape.error());
  KernelArgs args;
  args.memref(scores, s * width).memref(out, s * width).index(s).index(width).i64(start).i64(ratio);
  return run(GpuKernel::CompressVisibility, *shape, args);
}

Status KernelLibrary::applyCandidates(DevicePtr scores, DevicePtr mask, DevicePtr out, int64_t n) const {
  if (Status st = negative("apply_candidates", {n}); !st.ok())
    return st;
  Result<LaunchShape> shape = elementwise("apply_candidates", n);
  if (!shape.ok())
    return makeError(shape.error());
  KernelArgs args;
  args.memref(scores, n).memref(mask, n).memref(out, n).index(n);
  return run(GpuKernel::ApplyCandidates, *shape, args);
}

Status KernelLibrary::candidateBlockScores(DevicePtr scores, DevicePtr blockScores, int64_t s, int64_t width,
                                           int64_t blockSize, int64_t start, int64_t ratio) const {
  if (Status st = scoresCheck("select_candidate_blocks", s, width, start, ratio); !st.ok())
    return st;
  if (blockSize < 1)
    return makeError("select_candidate_blocks: block_size is " + std::to_string(blockSize) + ", expected >= 1");
  const int64_t nBlocks = ceilDiv(width, blockSize);
  Result<LaunchShape> shape = elementwise("select_candidate_blocks", s * nBlocks);
  if (!shape.ok())
    return makeError(shape.error());
  KernelArgs args;
  args.memref(scores, s * width).memref(blockScores, s * nBlocks).index(s).index(width).index(nBlocks);
  args.index(blockSize).i64(start).i64(ratio);
  return run(GpuKernel::CandidateBlockScores, *shape, args);
}

Status KernelLibrary::candidateMask(DevicePtr blockScores, DevicePtr picks, DevicePtr mask, int64_t s, int64_t width,
                                    int64_t blockSize, int64_t k) const {
  if (Status st = negative("select_candidate_blocks", {s, width, k}); !st.ok())
    return st;
  if (blockSize < 1)
    return makeError("select_candidate_blocks: block_size is " + std::to_string(blockSize) + ", expected >= 1");
  const int64_t nBlocks = ceilDiv(width, blockSize);
  if (k > nBlocks)
    return makeError("select_candidate_blocks: k " + std::to_string(k) + " exceeds the " + std::to_string(nBlocks) +
                     " blocks");
  Result<LaunchShape> shape = elementwise("select_candidate_blocks", s * width);
  if (!shape.ok())
    return makeError(shape.error());
  KernelArgs args;
  args.memref(blockScores, s * nBlocks).memref(picks, s * k).memref(mask, s * width);
  args.index(s).index(width).index(nBlocks).index(k).index(blockSize);
  return run(GpuKernel::CandidateMask, *shape, args);
}

Status KernelLibrary::topkMap(DevicePtr picks, DevicePtr out, int64_t s, int64_t k, int64_t start, int64_t ratio,
                              int64_t windowSize) const {
  if (Status st = negative("indexer_topk", {k}); !st.ok())
    return st;
  if (ratio < 1 || windowSize < 1)
    return makeError("indexer_topk: ratio " + std::to_string(ratio) + " and window_size " +
                     std::to_string(windowSize) + " must be >= 1");
  if (Status st = stepCheck("indexer_topk", s, start); !st.ok())
    return st;
  Result<LaunchShape> shape = elementwise("indexer_topk", s * k);
  if (!shape.ok())
    return makeError(shape.error());
  KernelArgs args;
  args.memref(picks, s * k).memref(out, s * k).index(s).index(k).i64(start).i64(ratio);
  args.i64(start == 0 ? s : windowSize);
  return run(GpuKernel::TopkMap, *shape, args);
}

Status KernelLibrary::concatRowsBf16(DevicePtr a, DevicePtr b, DevicePtr out, int64_t na, int64_t nb) const {
  if (Status st = negative("concat", {na, nb}); !st.ok())
    return st;
  Result<LaunchShape> shape = elementwise("concat", na + nb);
  if (!shape.ok())
    return makeError(shape.error());
  KernelArgs args;
  args.memref(a, na).memref(b, nb).memref(out, na + nb).index(na).index(nb);
  return run(GpuKernel::ConcatRowsBf16, *shape, args);
}

Status KernelLibrary::concatColsI32(DevicePtr a, DevicePtr b, DevicePtr out, int64_t rows, int64_t wa,
                                    int64_t wb) const {
  if (Status st = negative("concat", {rows, wa, wb}); !st.ok())
    return st;
  Result<LaunchShape> shape = elementwise("concat", rows * (wa + wb));
  if (!shape.ok())
    return makeError(shape.error());
  KernelArgs args;
  args.memref(a, rows * wa).memref(b, rows * wb).memref(out, rows * (wa + wb)).index(rows).index(wa).index(wb);
  return run(GpuKernel::ConcatColsI32, *shape, args);
}

} // namespace dsa::cuda
