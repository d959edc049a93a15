//===- GpuKernels.h - the dsa GPU kernel library: entry points and launch geometry (MLIR-free) ---===//
//
// What the GPU lowering (compiler/lib/Conversion/DSAToGPU, which launches the kernels of Kernels.mlir from the host
// code it emits) and the runtime side that launches them directly (test/Runtime/Cuda's KernelLibrary) agree on: the
// kernel module's name, each kernel's symbol and parameter layout (GpuKernels.def), and the launch geometry. One
// definition; change a block size here and both follow (the kernels themselves read their block size from
// gpu.block_dim, never from a constant).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_ABI_GPUKERNELS_H
#define DSA_ABI_GPUKERNELS_H

#include <cstddef>

namespace dsa::abi {

/// The gpu.module holding the kernels (its symbol in the compiled host code and in the PTX/cubin).
inline constexpr char kGpuKernelModule[] = "dsa_kernels";

/// Threads per block (GpuKernels.def gives each kernel's): 1-D elementwise kernels; the quantisers (one thread per quantisation block); the GEMM's square
/// tile edge (kGpuGemmTile x kGpuGemmTile threads, one output each); per-row reductions (rms_norm); sparse_attn (one
/// block per query head row).
inline constexpr unsigned kGpuElementwiseBlock = 256;
inline constexpr unsigned kGpuQuantBlock = 128;
inline constexpr unsigned kGpuGemmTile = 16;
inline constexpr unsigned kGpuRowBlock = 256;
inline constexpr unsigned kGpuAttnBlock = 128;

/// The kernels, in the library's order (GpuKernels.def).
enum class GpuKernel : size_t {
#define DSA_GPU_KERNEL(Name, Symbol, Parameters, BlockX, BlockY, ItemsPerBlock) Name,
#include "dsa/ABI/GpuKernels.def"
};

struct GpuKernelInfo {
  const char *symbol;     ///< the gpu.func's name
  const char *parameters; ///< the LLVM-level parameter layout: m (memref<?xT>, 5 x 8 bytes), q (8 bytes), w (4)
  unsigned block[3];      ///< threads per block (x, y, z)
  unsigned itemsPerBlock; ///< a 1-D grid's work items per block; 0: the grid is given per launch
};

inline constexpr GpuKernelInfo kGpuKernels[] = {
#define DSA_GPU_KERNEL(Name, Symbol, Parameters, BlockX, BlockY, ItemsPerBlock)                                 \
  {Symbol, Parameters, {BlockX, BlockY, 1}, ItemsPerBlock},
#include "dsa/ABI/GpuKernels.def"
};
inline constexpr size_t kNumGpuKernels = sizeof(kGpuKernels) / sizeof(kGpuKernels[0]);

inline constexpr const GpuKernelInfo &gpuKernel(GpuKernel k) { return kGpuKernels[static_cast<size_t>(k)]; }

} // namespace dsa::abi

#endif
