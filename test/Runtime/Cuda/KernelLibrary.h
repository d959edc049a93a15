//===- KernelLibrary.h - launching the dsa GPU kernels from C++ (MLIR-free) -----------------------------------===//
//
// The GPU backend's kernels (compiler/lib/Conversion/DSAToGPU/Kernels.mlir, compiled to PTX by --dsa-gpu-pipeline) called
// directly: one function per kernel family, taking device buffers (flat, row-major; bf16 buffers hold bf16 bit
// patterns as uint16) and the sizes the kernel needs, and using the launch shape Kernels.mlir documents (the same
// one `dsa-to-gpu` emits). This is how the MLIR-free side runs the compiled kernels on a GPU machine, which has no
// MLIR: the host code MLIR generates calls MLIR's GPU runtime, which this project does not ship.
//
// The math of each kernel is the reference's (attention-semantics.md; kernels/include/dsa/Kernels/Kernels.h); the
// section is named per function. The block of every launch is core's kernel table's (GpuKernels.def), as
// dsa-gpu-launch-kernels emits it; 1-D kernels get ceil(items / itemsPerBlock) blocks. On a device all launches go
// to the default stream; call Context::synchronize() to wait and to collect errors raised by the kernels. Without
// one, withLauncher() sends them to the host emulator (HostEmulator.h). Errors: a kernel missing from the module, a
// size that does not fit the kernel's parameters or grid (e.g. more than 2^31-1 blocks), the driver's (or the
// emulator's) launch errors.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_CUDA_KERNELLIBRARY_H
#define DSA_RUNTIME_CUDA_KERNELLIBRARY_H

#include "dsa/ABI/GpuKernels.h"
#include "dsa/Runtime/Cuda/Driver.h"

#include <array>
#include <functional>
#include <vector>

namespace dsa::cuda {

/// The kernels of one loaded dsa kernel module (PTX or cubin produced by --dsa-gpu-pipeline).
class KernelLibrary {
public:
  /// Loads `image` (PTX text or a cubin) into `ctx` and resolves every dsa kernel.
  /// Errors: the module does not load (JIT log included), a kernel is missing.
  static Result<KernelLibrary> load(const Context &ctx, const std::string &image);
  /// What runs one launch: the kernel, its grid and block (the kernel table's), the packed parameters.
  using Launcher = std::function<Status(abi::GpuKernel kernel, const LaunchShape &shape, KernelArgs &args)>;
  /// A library whose launches go to `launch` instead of a CUDA context: the host emulator (HostEmulator.h), whose
  /// DevicePtr's are host addresses. Launches are then synchronous.
  static KernelLibrary withLauncher(Launcher launch);
  /// The kernel names (the gpu.func symbols of Kernels.mlir), in a fixed order.
  static const std::vector<std::string> &kernelNames();
  /// The byte size of each kernel parameter as the launch functions below pack them (a memref<?xT> is five
  /// 8-byte parameters, see KernelArgs); empty for an unknown name. Every launch checks its packed arguments
  /// against this, and CudaLoaderTest checks it against the .entry signatures of the committed PTX.
  static std::vector<unsigned> parameterBytes(const std::string &kernel);

  /// positions (sections 3-5): out i64 [count] = start + i * stride.
  Status positions(DevicePtr out, int64_t start, int64_t count, int64_t stride) const;
  /// linear, bf16 (section 2): x [M, K], w [N, K] -> y [M, N] = bf16(x w^T), f32 accumulation in dotF32's order.
  Status linearBf16(DevicePtr x, DevicePtr w, DevicePtr y, int64_t M, int64_t N, int64_t K) const;
  /// grouped_output (section 11): o [s, H, hd], woA [G*R, H*hd/G] -> y [s, G*R].
  Status groupedOutput(DevicePtr o, DevicePtr woA, DevicePtr y, int64_t s, int64_t H, int64_t hd, int64_t G,
                       int64_t R) const;
  /// rms_norm, bf16 x (section 2): x [rows, D], w [D] -> y [rows, D].
  Status rmsNormBf16(DevicePtr x, DevicePtr w, DevicePtr y, int64_t rows, int64_t D, float eps) const;
  /// apply_rope (section 2): x [s, rowsPerToken, hd] bf16, pos [s] i64, freqs [rd/2] f32 (ropeFrequencies) -> y.
  Status applyRope(DevicePtr x, DevicePtr pos, DevicePtr freqs, DevicePtr y, int64_t s, int64_t rowsPerToken,
                   int64_t hd, int64_t rd, bool inverse) const;
  /// act_quant_fp8 (section 2): x, y bf16 of nblocks * block elements.
  Status actQuantFp8(DevicePtr x, DevicePtr y, int64_t nblocks, int64_t block) const;
  /// ring_update (section 4): ring [W, hd], kv [s, hd] at positions start.. -> out [W, hd] (out aliases neither).
  Status ringUpdate(DevicePtr ring, DevicePtr kv, DevicePtr out, int64_t W, int64_t hd, int64_t s,
                    int64_t start) const;
  /// window_indices (section 4): out i32 [count, width], width = min(count, W) in prefill (start 0), W in decode
  /// (start > 0, count 1). Errors: start < 0, count < 1, a multi-token step at start > 0, a width that is not
  /// the step's.
  Status windowIndices(DevicePtr out, int64_t start, int64_t count, int64_t W, int64_t width) const;
  /// sparse_attn (section 10): q [s, H, hd], kv [n, hd] bf16, idx [s, k] i32, sink [H] f32 -> o [s, H, hd] bf16;
  /// scratch: f32 of at least max(1, s*H*k) elements.
  Status sparseAttn(DevicePtr q, DevicePtr kv, DevicePtr idx, DevicePtr sink, DevicePtr o, DevicePtr scratch,
                    int64_t s, int64_t H, int64_t hd, int64_t n, int64_t k, float scale) const;

  // ---- compressed attention (sections 2, 5-9; design-compressed.md) -------------------------------------------
  // The top-k SETS are not taken on the device: select_candidate_blocks is candidateBlockScores, then the host's
  // torch-order top-k of each row (numerics::torchCpuTopkSet on the downloaded f32 block scores), then
  // candidateMask on the uploaded picks; indexer_topk is extfBf16F32 of the scores, the host top-k, then topkMap.

  /// linear, f32 (section 2; the ratio >= 2 compressor): x [M, K], w [N, K] -> y [M, N] f32, dotF32's order.
  Status linearF32(DevicePtr x, DevicePtr w, DevicePtr y, int64_t M, int64_t N, int64_t K) const;
  /// bf16 -> f32 and f32 -> bf16 (RNE) of n elements (the compressor's casts; the scores for the host top-k).
  Status extfBf16F32(DevicePtr x, DevicePtr y, int64_t n) const;
  Status truncfF32Bf16(DevicePtr x, DevicePtr y, int64_t n) const;
  /// The number of rows compress_pool pools in a step: s // ratio in prefill (start 0), else 1 when
  /// (start + 1) % ratio == 0, else 0.
  static int64_t pooledRows(int64_t s, int64_t start, int64_t ratio);
  /// compress_pool (section 5): kv, score [s, hd] f32, kvState, scoreState [ratio, hd] f32 -> newKv, newScore
  /// [ratio, hd] and pooled [pooledRows(s, start, ratio), hd] f32 (two launches: the state, then the pool).
  /// Errors: ratio < 2, start < 0, s < 1, s > 1 at start > 0, a negative hd.
  Status compressPool(DevicePtr kv, DevicePtr score, DevicePtr kvState, DevicePtr scoreState, DevicePtr pooled,
                      DevicePtr newKv, DevicePtr newScore, int64_t s, int64_t hd, int64_t ratio, int64_t start) const;
  /// fp4_quant_e8m0 (e4m3Scale false, block 32 in the model) / fp4_quant_e4m3 (true, block 16) round trips
  /// (section 2): x, y bf16 of nblocks * block elements.
  Status fp4Quant(DevicePtr x, DevicePtr y, int64_t nblocks, int64_t block, bool e4m3Scale) const;
  /// cache_write (sections 6, 8): cache [C, w], rows [g, w] bf16 -> out [C, w] with rows start // ratio .. replaced
  /// (out aliases neither). Errors: start < 0, ratio < 1, start // ratio + g > C.
  Status cacheWrite(DevicePtr cache, DevicePtr rows, DevicePtr out, int64_t C, int64_t w, int64_t g, int64_t start,
                    int64_t ratio) const;
  /// The scores' width (start + s) // ratio (sections 6-7).
  static int64_t scoresWidth(int64_t s, int64_t start, int64_t ratio) { return (start + s) / ratio; }
  /// indexer_scores (section 6 steps 3-4): iq [s, IH, ihd], w [s, IH], keys [n, ihd] bf16 -> out [s, width] bf16,
  /// width = scoresWidth(s, start, ratio). Errors: start < 0, ratio < 1, n < width, a non-finite weightScale.
  Status indexerScores(DevicePtr iq, DevicePtr w, DevicePtr keys, DevicePtr out, int64_t s, int64_t IH, int64_t ihd,
                       int64_t n, int64_t start, int64_t ratio, float weightScale) const;
  /// compress_visibility (section 6 step 5): scores, out bf16 [s, width]. Errors: the step checks (start >= 0,
  /// s >= 1, one token at start > 0), width != scoresWidth.
  Status compressVisibility(DevicePtr scores, DevicePtr out, int64_t s, int64_t width, int64_t start,
                            int64_t ratio) const;
  /// apply_candidates (section 6 step 6): scores bf16, mask i1 (one byte per element) of n elements -> out.
  Status applyCandidates(DevicePtr scores, DevicePtr mask, DevicePtr out, int64_t n) const;
  /// select_candidate_blocks, first half (section 7): scores bf16 [s, width] -> blockScores f32 [s, nBlocks],
  /// nBlocks = ceil(width / blockSize) (max per block, the newest visible block pinned to +inf). Errors: the step
  /// checks, width != scoresWidth, blockSize < 1.
  Status candidateBlockScores(DevicePtr scores, DevicePtr blockScores, int64_t s, int64_t width, int64_t blockSize,
                              int64_t start, int64_t ratio) const;
  /// select_candidate_blocks, second half: blockScores f32 [s, nBlocks], picks i64 [s, k] (the host's top-k sets)
  /// -> mask i1 [s, width]. Errors: k > nBlocks, blockSize < 1.
  Status candidateMask(DevicePtr blockScores, DevicePtr picks, DevicePtr mask, int64_t s, int64_t width,
                       int64_t blockSize, int64_t k) const;
  /// indexer_topk's mapping (section 6 step 7): picks i64 [s, k] -> out i32 [s, k], p + offset (s in prefill,
  /// windowSize in decode) when p < compress_len[t], else -1. Errors: the step checks, ratio/windowSize < 1.
  Status topkMap(DevicePtr picks, DevicePtr out, int64_t s, int64_t k, int64_t start, int64_t ratio,
                 int64_t windowSize) const;
  /// tensor.concat: rows (bf16 a [na] ++ b [nb], flat) and columns (i32 a [rows, wa] ++ b [rows, wb]).
  Status concatRowsBf16(DevicePtr a, DevicePtr b, DevicePtr out, int64_t na, int64_t nb) const;
  Status concatColsI32(DevicePtr a, DevicePtr b, DevicePtr out, int64_t rows, int64_t wa, int64_t wb) const;

private:
  explicit KernelLibrary(Launcher launch) : launch_(std::move(launch)) {}
  /// Launches a kernel of the table with a per-launch grid (GEMM, rms_norm, sparse_attn) / over `items` work items
  /// (every other kernel: ceil(items / itemsPerBlock) blocks); both take the block from the kernel table
  /// (GpuKernels.def) and check the packed arguments against its parameter layout.
  Status runGrid(abi::GpuKernel kernel, std::array<unsigned, 3> grid, KernelArgs &args) const;
  Status runItems(abi::GpuKernel kernel, const char *what, int64_t items, KernelArgs &args) const;
  Launcher launch_;
};

} // namespace dsa::cuda

#endif
