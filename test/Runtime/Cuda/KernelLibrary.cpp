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
#include <memory>

namespace dsa::cuda {

namespace {

using abi::GpuKernel;
// The GEMM's tile: one output per thread of its (x, y) block (core's kernel table, dsa/ABI/GpuKernels.def).
constexpr unsigned kGemmTileN = abi::gpuKernel(GpuKernel::GemmBf16).block[0];
constexpr unsigned kGemmTileM = abi::gpuKernel(GpuKernel::GemmBf16).block[1];

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
  struct Loaded {
    const Context *ctx;
    Module module;
    std::vector<Function> functions;
  };
  auto loaded = std::make_shared<Loaded>(Loaded{&ctx, m.take(), {}});
  for (const std::string &name : kernelNames()) {
    Result<Function> f = loaded->module.function(name);
    if (!f.ok())
      return makeError("the dsa kernel module is incomplete: " + f.error());
    loaded->functions.push_back(*f);
  }
  return KernelLibrary([loaded](abi::GpuKernel k, const LaunchShape &shape, KernelArgs &args) {
    return loaded->ctx->launch(loaded->functions[static_cast<size_t>(k)], shape, args);
  });
}

KernelLibrary KernelLibrary::withLauncher(Launcher launch) { return KernelLibrary(std::move(launch)); }

Status KernelLibrary::runGrid(abi::GpuKernel which, std::array<unsigned, 3> grid, KernelArgs &args) const {
  const size_t kernel = static_cast<size_t>(which);
  const abi::GpuKernelInfo &info = abi::kGpuKernels[kernel];
  const std::vector<unsigned> want = parameterBytes(info.symbol);
  bool same = want.size() == args.size();
  for (size_t i = 0; same && i < want.size(); ++i)
    same = want[i] == args.slotBytes(i);
  if (!same)
    return makeError("internal error: the arguments packed for " + std::string(info.symbol) +
                     " do not match its signature (" + std::to_string(args.size()) + " parameters, expected " +
                     std::to_string(want.size()) + ")");
  // An empty problem launches nothing (CUDA rejects an empty grid), as the MLIR host code does.
  for (unsigned g : grid)
    if (g == 0)
      return Status::success();
  // The block is the kernel table's (GpuKernels.def), as dsa-gpu-launch-kernels emits it.
  return launch_(which, LaunchShape{grid, {info.block[0], info.block[1], info.block[2]}}, args);
}

Status KernelLibrary::runItems(abi::GpuKernel which, const char *what, int64_t items, KernelArgs &args) const {
  const abi::GpuKernelInfo &info = abi::gpuKernel(which);
  if (info.itemsPerBlock == 0)
    return makeError(std::string("internal error: ") + info.symbol + " takes its grid per launch, not work items");
  Result<unsigned> gx = gridDim(what, ceilDiv(items, info.itemsPerBlock), INT_MAX);
  if (!gx.ok())
    return makeError(gx.error());
  return runGrid(which, {*gx, 1, 1}, args);
}

Status KernelLibrary::positions(DevicePtr out, int64_t start, int64_t count, int64_t stride) const {
  if (start < 0)
    return makeError("positions: start is " + std::to_string(start) + ", expected >= 0");
  if (Status st = negative("positions", {count}); !st.ok())
    return st;
  KernelArgs args;
  args.memref(out, count).i64(start).index(count).i64(stride);
  return runItems(GpuKernel::Positions, "positions", count, args);
}

Status KernelLibrary::linearBf16(DevicePtr x, DevicePtr w, DevicePtr y, int64_t M, int64_t N, int64_t K) const {
  if (Status st = negative("linear", {M, N, K}); !st.ok())
    return st;
  Result<unsigned> gx = gridDim("linear", ceilDiv(N, kGemmTileN), INT_MAX);
  Result<unsigned> gy = gridDim("linear", ceilDiv(M, kGemmTileM), 65535);
  if (!gx.ok() || !gy.ok())
    return makeError(!gx.ok() ? gx.error() : gy.error());
  KernelArgs args;
  args.memref(x, M * K).memref(w, N * K).memref(y, M * N);
  args.index(M).index(N).index(K).index(K).index(N).index(0).index(0).index(0);
  return runGrid(GpuKernel::GemmBf16, {*gx, *gy, 1}, args);
}

Status KernelLibrary::groupedOutput(DevicePtr o, DevicePtr woA, DevicePtr y, int64_t s, int64_t H, int64_t hd,
                                    int64_t G, int64_t R) const {
  if (Status st = negative("grouped_output", {s, H, hd, R}); !st.ok())
    return st;
  if (G < 1 || H % G != 0)
    return makeError("grouped_output: groups " + std::to_string(G) + " must be >= 1 and divide n_heads " +
                     std::to_string(H));
  const int64_t gw = H * hd / G;
  Result<unsigned> gx = gridDim("grouped_output", ceilDiv(R, kGemmTileN), INT_MAX);
  Result<unsigned> gy = gridDim("grouped_output", ceilDiv(s, kGemmTileM), 65535);
  Result<unsigned> gz = gridDim("grouped_output", G, 65535);
  if (!gx.ok() || !gy.ok() || !gz.ok())
    return makeError(!gx.ok() ? gx.error() : !gy.ok() ? gy.error() : gz.error());
  KernelArgs args;
  args.memref(o, s * H * hd).memref(woA, G * R * gw).memref(y, s * G * R);
  args.index(s).index(R).index(gw).index(H * hd).index(G * R).index(gw).index(R * gw).index(R);
  return runGrid(GpuKernel::GemmBf16, {*gx, *gy, *gz}, args);
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
  return runGrid(GpuKernel::RmsNormBf16, {*gx, 1, 1}, args);
}

Status KernelLibrary::applyRope(DevicePtr x, DevicePtr pos, DevicePtr freqs, DevicePtr y, int64_t s,
                                int64_t rowsPerToken, int64_t hd, int64_t rd, bool inverse) const {
  if (Status st = negative("apply_rope", {s, rowsPerToken, hd}); !st.ok())
    return st;
  if (rd <= 0 || rd % 2 != 0 || rd > hd)
    return makeError("apply_rope: rope_dim " + std::to_string(rd) + " must be positive, even and <= head_dim " +
                     std::to_string(hd));
  const int64_t total = s * rowsPerToken * hd;
  KernelArgs args;
  args.memref(x, total).memref(pos, s).memref(freqs, rd / 2).memref(y, total);
  args.index(s).index(rowsPerToken).index(hd).index(rd).i32(inverse ? 1 : 0);
  return runItems(GpuKernel::ApplyRope, "apply_rope", total, args);
}

Status KernelLibrary::actQuantFp8(DevicePtr x, DevicePtr y, int64_t nblocks, int64_t block) const {
  if (Status st = negative("act_quant_fp8", {nblocks}); !st.ok())
    return st;
  if (block <= 0)
    return makeError("act_quant_fp8: block_size is " + std::to_string(block) + ", expected > 0");
  KernelArgs args;
  args.memref(x, nblocks * block).memref(y, nblocks * block).index(nblocks).index(block);
  return runItems(GpuKernel::ActQuantFp8, "act_quant_fp8", nblocks, args);
}

Status KernelLibrary::ringUpdate(DevicePtr ring, DevicePtr kv, DevicePtr out, int64_t W, int64_t hd, int64_t s,
                                 int64_t start) const {
  if (Status st = negative("ring_update", {hd, s}); !st.ok())
    return st;
  if (W < 1)
    return makeError("ring_update: the ring has " + std::to_string(W) + " slots, expected >= 1");
  if (start < 0)
    return makeError("ring_update: start_pos is " + std::to_string(start) + ", expected >= 0");
  KernelArgs args;
  args.memref(ring, W * hd).memref(kv, s * hd).memref(out, W * hd).index(W).index(hd).index(s).i64(start);
  return runItems(GpuKernel::RingUpdate, "ring_update", W * hd, args);
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
  KernelArgs args;
  args.memref(out, count * width).i64(start).index(count).index(W).index(width);
  return runItems(GpuKernel::WindowIndices, "window_indices", count * width, args);
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
  return runGrid(GpuKernel::SparseAttn, {*gx, 1, 1}, args);
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

} // namespace

Status KernelLibrary::linearF32(DevicePtr x, DevicePtr w, DevicePtr y, int64_t M, int64_t N, int64_t K) const {
  if (Status st = negative("linear_f32", {M, N, K}); !st.ok())
    return st;
  KernelArgs args;
  args.memref(x, M * K).memref(w, N * K).memref(y, M * N).index(M).index(N).index(K);
  return runItems(GpuKernel::LinearF32, "linear_f32", M * N, args);
}

Status KernelLibrary::extfBf16F32(DevicePtr x, DevicePtr y, int64_t n) const {
  if (Status st = negative("extf", {n}); !st.ok())
    return st;
  KernelArgs args;
  args.memref(x, n).memref(y, n).index(n);
  return runItems(GpuKernel::ExtfBf16F32, "extf", n, args);
}

Status KernelLibrary::truncfF32Bf16(DevicePtr x, DevicePtr y, int64_t n) const {
  if (Status st = negative("truncf", {n}); !st.ok())
    return st;
  KernelArgs args;
  args.memref(x, n).memref(y, n).index(n);
  return runItems(GpuKernel::TruncfF32Bf16, "truncf", n, args);
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
  KernelArgs state;
  state.memref(kv, s * hd).memref(score, s * hd).memref(kvState, ratio * hd).memref(scoreState, ratio * hd);
  state.memref(newKv, ratio * hd).memref(newScore, ratio * hd).index(ratio).index(hd).index(s).i64(start);
  if (Status st = runItems(GpuKernel::CompressState, "compress_pool", ratio * hd, state); !st.ok())
    return st;
  const int64_t g = pooledRows(s, start, ratio);
  // Prefill pools the step's rows; decode pools the updated state (the launch above runs first on the stream).
  const bool prefill = start == 0;
  KernelArgs pool;
  pool.memref(prefill ? kv : newKv, prefill ? s * hd : ratio * hd);
  pool.memref(prefill ? score : newScore, prefill ? s * hd : ratio * hd);
  pool.memref(pooled, g * hd).index(g).index(ratio).index(hd);
  return runItems(GpuKernel::CompressPool, "compress_pool", g * hd, pool);
}

Status KernelLibrary::fp4Quant(DevicePtr x, DevicePtr y, int64_t nblocks, int64_t block, bool e4m3Scale) const {
  if (Status st = negative("fp4_quant", {nblocks}); !st.ok())
    return st;
  if (block <= 0)
    return makeError("fp4_quant: block_size is " + std::to_string(block) + ", expected > 0");
  KernelArgs args;
  args.memref(x, nblocks * block).memref(y, nblocks * block).index(nblocks).index(block).i32(e4m3Scale ? 1 : 0);
  return runItems(GpuKernel::Fp4Quant, "fp4_quant", nblocks, args);
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
  KernelArgs args;
  args.memref(cache, C * w).memref(rows, g * w).memref(out, C * w).index(C).index(w).index(first).index(g);
  return runItems(GpuKernel::CacheWrite, "cache_write", C * w, args);
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
  KernelArgs args;
  args.memref(iq, s * IH * ihd).memref(w, s * IH).memref(keys, n * ihd).memref(out, s * width);
  args.index(s).index(IH).index(ihd).index(width).f32(weightScale);
  return runItems(GpuKernel::IndexerScores, "indexer_scores", s * width, args);
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
  KernelArgs args;
  args.memref(scores, s * width).memref(out, s * width).index(s).index(width).i64(start).i64(ratio);
  return runItems(GpuKernel::CompressVisibility, "compress_visibility", s * width, args);
}

Status KernelLibrary::applyCandidates(DevicePtr scores, DevicePtr mask, DevicePtr out, int64_t n) const {
  if (Status st = negative("apply_candidates", {n}); !st.ok())
    return st;
  KernelArgs args;
  args.memref(scores, n).memref(mask, n).memref(out, n).index(n);
  return runItems(GpuKernel::ApplyCandidates, "apply_candidates", n, args);
}

Status KernelLibrary::candidateBlockScores(DevicePtr scores, DevicePtr blockScores, int64_t s, int64_t width,
                                           int64_t blockSize, int64_t start, int64_t ratio) const {
  if (Status st = scoresCheck("select_candidate_blocks", s, width, start, ratio); !st.ok())
    return st;
  if (blockSize < 1)
    return makeError("select_candidate_blocks: block_size is " + std::to_string(blockSize) + ", expected >= 1");
  const int64_t nBlocks = ceilDiv(width, blockSize);
  KernelArgs args;
  args.memref(scores, s * width).memref(blockScores, s * nBlocks).index(s).index(width).index(nBlocks);
  args.index(blockSize).i64(start).i64(ratio);
  return runItems(GpuKernel::CandidateBlockScores, "select_candidate_blocks", s * nBlocks, args);
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
  KernelArgs args;
  args.memref(blockScores, s * nBlocks).memref(picks, s * k).memref(mask, s * width);
  args.index(s).index(width).index(nBlocks).index(k).index(blockSize);
  return runItems(GpuKernel::CandidateMask, "select_candidate_blocks", s * width, args);
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
  KernelArgs args;
  args.memref(picks, s * k).memref(out, s * k).index(s).index(k).i64(start).i64(ratio);
  args.i64(start == 0 ? s : windowSize);
  return runItems(GpuKernel::TopkMap, "indexer_topk", s * k, args);
}

Status KernelLibrary::concatRowsBf16(DevicePtr a, DevicePtr b, DevicePtr out, int64_t na, int64_t nb) const {
  if (Status st = negative("concat", {na, nb}); !st.ok())
    return st;
  KernelArgs args;
  args.memref(a, na).memref(b, nb).memref(out, na + nb).index(na).index(nb);
  return runItems(GpuKernel::ConcatRowsBf16, "concat", na + nb, args);
}

Status KernelLibrary::concatColsI32(DevicePtr a, DevicePtr b, DevicePtr out, int64_t rows, int64_t wa,
                                    int64_t wb) const {
  if (Status st = negative("concat", {rows, wa, wb}); !st.ok())
    return st;
  KernelArgs args;
  args.memref(a, rows * wa).memref(b, rows * wb).memref(out, rows * (wa + wb)).index(rows).index(wa).index(wb);
  return runItems(GpuKernel::ConcatColsI32, "concat", rows * (wa + wb), args);
}

} // namespace dsa::cuda
