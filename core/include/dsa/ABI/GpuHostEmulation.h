//===- GpuHostEmulation.h - the GPU kernels run on the host: what the lowering and the emulator agree on ---===//
//
// `dsa-gpu-to-host-emulation` (compiler/lib/Conversion/DSAToGPU/HostEmulation.cpp) turns the gpu.func kernels of a
// gpu.module into host functions that call a host emulator for everything a GPU provides: the work item's and the
// block's ids and sizes, the block barrier, the block's workgroup (shared) memory and, for the emulator's race
// checks, every memory access. The emulator (test/Runtime/Cuda/HostEmulator.h) defines these C functions and runs
// every work item of a block as a coroutine of its own (docs/gpu-backend.md, "Host emulation").
//
// Every hook takes and returns fixed-width integers:
//   int64_t dsa_emu_thread_id(int32_t dim)   gpu.thread_id  (dim 0, 1, 2 = x, y, z)
//   int64_t dsa_emu_block_id(int32_t dim)    gpu.block_id
//   int64_t dsa_emu_block_dim(int32_t dim)   gpu.block_dim
//   int64_t dsa_emu_grid_dim(int32_t dim)    gpu.grid_dim
//   void    dsa_emu_barrier(int32_t site)    gpu.barrier; `site` numbers the barriers of a kernel (0, 1, ...)
//   void   *dsa_emu_workgroup(int32_t index, int64_t bytes)   the block's workgroup attribution `index`
//                                            (`bytes` long, 16-byte aligned), the same buffer for every item of a block
//   void    dsa_emu_access(int64_t address, int64_t bytes, int32_t isWrite)   before every memref.load (0) / store (1)
// Each kernel @k also gets a packed entry `void k_dsa_emu(void **params)` taking cuLaunchKernel's parameter array
// (the layout of GpuKernels.def: a memref<?xT> is five parameters) and a constant `int64_t k_dsa_emu_params`, the
// number of parameters it reads.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_ABI_GPUHOSTEMULATION_H
#define DSA_ABI_GPUHOSTEMULATION_H

namespace dsa::abi {

inline constexpr char kEmuThreadId[] = "dsa_emu_thread_id";
inline constexpr char kEmuBlockId[] = "dsa_emu_block_id";
inline constexpr char kEmuBlockDim[] = "dsa_emu_block_dim";
inline constexpr char kEmuGridDim[] = "dsa_emu_grid_dim";
inline constexpr char kEmuBarrier[] = "dsa_emu_barrier";
inline constexpr char kEmuWorkgroup[] = "dsa_emu_workgroup";
inline constexpr char kEmuAccess[] = "dsa_emu_access";
/// The suffixes of a kernel's packed entry and of its parameter count.
inline constexpr char kEmuEntrySuffix[] = "_dsa_emu";
inline constexpr char kEmuParamCountSuffix[] = "_dsa_emu_params";
/// The alignment of every workgroup buffer.
inline constexpr unsigned kEmuWorkgroupAlign = 16;

} // namespace dsa::abi

#endif
