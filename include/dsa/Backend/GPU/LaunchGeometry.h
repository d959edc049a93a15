//===- LaunchGeometry.h - launch shapes of the dsa GPU kernels (MLIR-free, constexpr) ----------------------===//
//
// The one place where the GPU lowering (lib/Conversion/DSAToGPU) takes the launch geometry of the kernels of
// Kernels.mlir: the kernel's name and its thread block, and how many work items one block covers (the grid of a 1-D
// kernel is ceil(items / itemsPerBlock); 0 marks a kernel whose grid is given per launch: one block per row, per
// (token, head) or a 2-D/3-D tile grid). Plain constexpr, no MLIR and no CUDA, so the runtime (runtime/cuda's
// KernelLibrary, which still has its own copy of these numbers) and the compiler can share it once it moves to the
// core layer (issue 10).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_BACKEND_GPU_LAUNCHGEOMETRY_H
#define DSA_BACKEND_GPU_LAUNCHGEOMETRY_H

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dsa::gpu {

/// Threads per block of the 1-D elementwise kernels, the quantisers' (one thread per quant block), the GEMM's tile
/// edge (16 x 16 threads), the per-row kernels' block (rms_norm: one block per row) and sparse_attn's (one block per
/// (token, head)).
inline constexpr int64_t kElementwiseBlock = 256;
inline constexpr int64_t kQuantBlock = 128;
inline constexpr int64_t kGemmTile = 16;
inline constexpr int64_t kRowBlock = 256;
inline constexpr int64_t kAttnBlock = 128;

/// The kernels of Kernels.mlir, in the order of runtime/cuda KernelLibrary's name table.
enum class Kernel : unsigned {
  Positions,
  GemmBf16,
  RmsNormBf16,
  ApplyRope,
  ActQuantFp8,
  RingUpdate,
  WindowIndices,
  SparseAttn,
  LinearF32,
  ExtfBf16F32,
  TruncfF32Bf16,
  CompressState,
  CompressPool,
  Fp4Quant,
  CacheWrite,
  IndexerScores,
  CompressVisibility,
  ApplyCandidates,
  CandidateBlockScores,
  CandidateMask,
  TopkMap,
  ConcatRowsBf16,
  ConcatColsI32,
};
inline constexpr size_t kNumKernels = 23;

/// One kernel's launch: its symbol in the gpu.module, its block, and the work items per block of a 1-D grid (0: the
/// grid is given per launch).
struct KernelGeometry {
  std::string_view name;
  int64_t block[3];
  int64_t itemsPerBlock;
};

inline constexpr KernelGeometry kKernelGeometry[kNumKernels] = {
    {"dsa_positions", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_gemm_bf16", {kGemmTile, kGemmTile, 1}, 0}, // grid (ceil(N/16), ceil(M/16), batches)
    {"dsa_rms_norm_bf16", {kRowBlock, 1, 1}, 0},      // grid: one block per row
    {"dsa_apply_rope", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_act_quant_fp8", {kQuantBlock, 1, 1}, kQuantBlock},
    {"dsa_ring_update", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_window_indices", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_sparse_attn", {kAttnBlock, 1, 1}, 0}, // grid: one block per (token, head)
    {"dsa_linear_f32", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_extf_bf16_f32", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_truncf_f32_bf16", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_compress_state", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_compress_pool", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_fp4_quant", {kQuantBlock, 1, 1}, kQuantBlock},
    {"dsa_cache_write", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_indexer_scores", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_compress_visibility", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_apply_candidates", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_candidate_block_scores", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_candidate_mask", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_topk_map", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_concat_rows_bf16", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
    {"dsa_concat_cols_i32", {kElementwiseBlock, 1, 1}, kElementwiseBlock},
};

constexpr const KernelGeometry &geometry(Kernel k) { return kKernelGeometry[static_cast<unsigned>(k)]; }

static_assert(geometry(Kernel::ConcatColsI32).name == "dsa_concat_cols_i32", "one entry per Kernel, in order");
static_assert(geometry(Kernel::SparseAttn).block[0] == kAttnBlock, "one entry per Kernel, in order");

} // namespace dsa::gpu

#endif
