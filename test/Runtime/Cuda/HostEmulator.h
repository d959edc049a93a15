//===- HostEmulator.h - the dsa GPU kernels run on the host at their real block and grid sizes (test-only) ---===//
//
// Runs a kernel library that `dsa-gpu-to-host-emulation` lowered to host code (a shared object; see
// core/include/dsa/ABI/GpuHostEmulation.h for the hooks it calls) with CUDA's launch semantics: a launch is a grid
// of blocks, a block is block.x * block.y * block.z work items, each work item runs the kernel as a coroutine of its
// own (ucontext, a private stack with a guard page), `gpu.barrier` suspends the item until every item of its block
// has arrived. Blocks run one after another on the calling thread; items of a block in thread-id order (or reversed:
// setReverseOrder), each until it reaches a barrier or returns. Workgroup memory is one buffer per attribution per
// block, filled with 0xFF (NaN as f32) at the start of every block.
//
// What a launch reports as an error (never a hang or a crash), naming kernel, block, work items and barrier sites:
//   - workgroup memory beyond CUDA's 48 KiB of static shared memory per block;
//   - a divergent barrier: items of a block waiting at different barriers, or some waiting while others returned;
//   - with race checks on (the default), a data race: two work items of the same block accessing one byte in the
//     same barrier interval with at least one write, or two blocks accessing one byte with at least one write (blocks
//     of a launch are unordered); a read of workgroup memory no item of the block has written.
// Private memory (the item's own stack) is not checked. What it cannot see: timing, the memory model beyond barrier
// ordering (no warps, no lockstep, no memory fences between blocks), NVPTX code generation (docs/gpu-backend.md).
//
// Not thread-safe: one launch at a time per process.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_TEST_RUNTIME_CUDA_HOSTEMULATOR_H
#define DSA_TEST_RUNTIME_CUDA_HOSTEMULATOR_H

#include "dsa/Runtime/Cuda/Driver.h"
#include "dsa/Support/Result.h"

#include <cstdint>
#include <memory>
#include <string>

namespace dsa::cuda {

struct EmulationStats {
  uint64_t launches = 0, blocks = 0, workItems = 0, barriers = 0, checkedAccesses = 0;
};

class HostEmulator {
public:
  /// dlopen's `sharedObject` (the kernels lowered by dsa-gpu-to-host-emulation and linked into a shared object).
  /// Errors: dlopen's message.
  static Result<std::unique_ptr<HostEmulator>> load(const std::string &sharedObject);
  ~HostEmulator();
  HostEmulator(const HostEmulator &) = delete;
  HostEmulator &operator=(const HostEmulator &) = delete;

  /// Runs `kernel` over `shape` (grid and block in x, y, z; every component >= 1, at most 1024 items per block)
  /// with cuLaunchKernel's parameters `args` (pointers in them are host addresses). Returns when every block has
  /// run. Errors: an unknown kernel, a parameter count that is not the kernel's, an empty or too large shape, a
  /// divergent barrier, a data race (when raceChecks()); the outputs are then partly written.
  Status launch(const std::string &kernel, const LaunchShape &shape, KernelArgs &args);

  void setRaceChecks(bool on) { raceChecks_ = on; }
  /// Runs the items of a block (between two barriers) in decreasing instead of increasing thread-id order: a
  /// race-free kernel gives the same bits either way.
  void setReverseOrder(bool on) { reverse_ = on; }
  bool raceChecks() const { return raceChecks_; }
  const EmulationStats &stats() const { return stats_; }

  /// A symbol of the loaded object (nullptr when missing), for tests of helpers compiled into it.
  void *symbol(const std::string &name) const;

private:
  explicit HostEmulator(void *handle) : handle_(handle) {}
  void *handle_ = nullptr;
  bool raceChecks_ = true;
  bool reverse_ = false;
  EmulationStats stats_;
};

} // namespace dsa::cuda

#endif
