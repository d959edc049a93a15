//===- MgpuRuntime.h - MLIR's GPU runtime entry points (mgpu*) over the dlopen'd CUDA driver (MLIR-free) -----===//
//
// The host code that --dsa-gpu-pipeline produces (MLIR's gpu-to-llvm lowering) calls MLIR's GPU runtime: a C ABI of
// `mgpu*` functions that Debian does not ship (no libmlir_cuda_runtime). This file implements the ones that
// MLIR 22's lowering references in a dsa step library (scripts/gpu-check.sh --libs builds them here; `nm -D
// --undefined-only` of one lists them), plus the event/memset ones the lowering emits for other async graphs:
//
//   module   mgpuModuleLoad(data, size) (a cubin/fatbin, format=bin|fatbin), mgpuModuleLoadJIT(data, optLevel)
//            (PTX, format=isa), mgpuModuleUnload, mgpuModuleGetFunction
//   launch   mgpuLaunchKernel(f, grid xyz, block xyz, sharedBytes, stream, params, extra, paramsCount)
//   streams  mgpuStreamCreate, mgpuStreamSynchronize, mgpuStreamDestroy, mgpuStreamWaitEvent
//   events   mgpuEventCreate, mgpuEventDestroy, mgpuEventSynchronize, mgpuEventRecord
//   memory   mgpuMemAlloc(bytes, stream, isHostShared) (0 bytes -> null, as upstream), mgpuMemFree(ptr, stream),
//            mgpuMemcpy(dst, src, bytes, stream), mgpuMemset32 / mgpuMemset16(dst, value, count, stream)
//   device   mgpuSetDefaultDevice(ordinal) (accepted only for the bound runtime's device)
//
// over runtime/cuda's Driver (dlopen("libcuda.so.1"); the stream, event, async-copy and memset entry points are
// resolved here from the same library, so Driver.h is unchanged).
//
// Binding. The mgpu* functions have no context argument: they act for the MgpuRuntime BOUND on the calling thread
// (MgpuRuntime::Binding; GpuStepLibrary binds around loading, calls and unloading). A step library's constructor
// loads its kernels (mgpuModuleLoad*) when it is dlopen'ed, so the runtime must be bound before dlopen.
//
// Errors. The C ABI returns no status; upstream's runtime prints and continues. Here:
//   - inside MgpuRuntime::call() (a compiled function running), the first failing entry point records its error
//     ("mgpuLaunchKernel(dsa_gemm_bf16): cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (1)") and unwinds the
//     compiled code at once (longjmp back to call(): the generated host code has no cleanups to skip); call()
//     frees every allocation and stream the call made and returns the error. A failed run-time check of the host
//     code (its dsa_cpu_fail(code), redirected by the step library's hook to dsaGpuCheckFailed, see
//     GpuStepLibrary.h) ends the call the same way, with the code's message (dsa/ABI/RuntimeErrors.h);
//   - outside a call (a library's constructor), the error is kept as the runtime's deferred error (loading error,
//     takeDeferredError) and the entry point returns null / does nothing;
//   - with no runtime bound, the entry point returns null / does nothing and the error is kept per thread
//     (unboundError()).
// Nothing here throws or aborts. Not thread-safe: one runtime is used from one thread at a time.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_CUDA_MGPURUNTIME_H
#define DSA_RUNTIME_CUDA_MGPURUNTIME_H

#include "dsa/Runtime/Cuda/Driver.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace dsa::cuda {

class MgpuRuntime;

/// Device memory owned by the host side (an upload, or a buffer the compiled code returned): cuMemFree'd when the
/// last reference goes (the runtime must still be alive). Holds a reference to its runtime.
class DeviceAllocation {
public:
  ~DeviceAllocation();
  DeviceAllocation(const DeviceAllocation &) = delete;
  DeviceAllocation &operator=(const DeviceAllocation &) = delete;
  DevicePtr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  MgpuRuntime *runtime() const { return runtime_.get(); }

private:
  friend class MgpuRuntime;
  DeviceAllocation(std::shared_ptr<MgpuRuntime> runtime, DevicePtr ptr, size_t bytes)
      : runtime_(std::move(runtime)), ptr_(ptr), bytes_(bytes) {}
  std::shared_ptr<MgpuRuntime> runtime_;
  DevicePtr ptr_ = 0;
  size_t bytes_ = 0;
};

/// The packed entry of a compiled function (runtime/cpu Values.h convention).
using PackedEntry = void (*)(void **);

class MgpuRuntime : public std::enable_shared_from_this<MgpuRuntime> {
public:
  /// Loads the driver (Driver::load(libraryPath)), resolves the extra entry points, and creates a context on device
  /// `ordinal` (Context::create, current on this thread). Errors: Driver's and Context's ("CUDA driver not
  /// available: ...", "cuInit failed: CUDA_ERROR_NO_DEVICE (100) ...", "no CUDA device: ..."), a library without
  /// one of the extra entry points ("<path> is not a usable CUDA driver for the mgpu runtime: it has no symbol
  /// cuStreamCreate").
  static Result<std::shared_ptr<MgpuRuntime>> open(int ordinal = 0,
                                                   const std::string &libraryPath = Driver::kDefaultLibrary);
  ~MgpuRuntime();
  MgpuRuntime(const MgpuRuntime &) = delete;
  MgpuRuntime &operator=(const MgpuRuntime &) = delete;

  const DeviceInfo &device() const { return context_->device(); }
  const std::string &libraryPath() const { return libraryPath_; }

  /// Makes this runtime the one the mgpu* entry points use on this thread (and its context current) while the
  /// Binding lives; restores the previous binding afterwards. Nestable.
  class Binding {
  public:
    explicit Binding(MgpuRuntime &runtime);
    ~Binding();
    Binding(const Binding &) = delete;
    Binding &operator=(const Binding &) = delete;

  private:
    MgpuRuntime *previous_;
  };

  /// Host-side memory: a device allocation of `bytes` (0 allowed), uploads and downloads (synchronous: an upload
  /// has reached the device when it returns, whatever stream the compiled code launches on).
  Result<std::shared_ptr<DeviceAllocation>> alloc(size_t bytes);
  Status upload(DevicePtr dst, const void *src, size_t bytes);
  Status download(void *dst, DevicePtr src, size_t bytes);
  Status synchronize();

  /// What a call leaves behind: the device allocations the compiled code made and did not free (its results'
  /// buffers, and anything it leaked), pointer -> bytes. The caller adopts the ones it keeps (adopt) and frees the
  /// rest (release).
  struct CallOutcome {
    std::map<DevicePtr, size_t> liveAllocations;
  };
  /// Runs `entry(args)` with this runtime bound. On an error of an mgpu* entry point or a failed run-time check, the
  /// compiled code is unwound (see the file comment), every allocation, stream and event of the call is released,
  /// and the error is returned ("<what>: <mgpu error>" or "<what>: run-time check failed: <message>"). A call that
  /// frees memory it did not allocate in this call (e.g. an argument) fails without freeing it.
  Result<CallOutcome> call(PackedEntry entry, void **args, const std::string &what);
  /// Takes ownership of `ptr` (a live allocation of a CallOutcome).
  std::shared_ptr<DeviceAllocation> adopt(DevicePtr ptr, size_t bytes);
  /// Frees a live allocation of a CallOutcome that nobody adopts.
  void release(DevicePtr ptr);

  /// The first error an mgpu* entry point met outside a call (e.g. a kernel module that did not load when a step
  /// library was dlopen'ed), and clears it; empty if none.
  std::string takeDeferredError();
  /// The loaded kernel modules (mgpuModuleLoad* minus mgpuModuleUnload), for checks.
  size_t loadedModules() const { return modules_; }

  /// Called for every kernel launch of the compiled code before it is handed to the driver (tests, tracing): the
  /// kernel's name, the parameter count the host code passes, grid and block. Null to stop.
  struct Launch {
    std::string kernel;
    size_t paramsCount = 0;
    intptr_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  };
  void setLaunchObserver(std::function<void(const Launch &)> observer) { launchObserver_ = std::move(observer); }
  const std::function<void(const Launch &)> &launchObserver() const { return launchObserver_; }

  /// The error of the last mgpu* call made on this thread with no runtime bound, and clears it; empty if none.
  static std::string takeUnboundError();
  /// The runtime bound on this thread, or null.
  static MgpuRuntime *bound();

  struct Api;      ///< the driver entry points used here (defined in MgpuRuntime.cpp)
  struct CallState; ///< one running call (defined in MgpuRuntime.cpp)
  /// For the entry points (MgpuRuntime.cpp).
  const Api &api() const { return *api_; }
  CallState *activeCall() const { return call_; }
  void noteModuleLoaded(int delta) { modules_ += delta; }
  /// Kernel names by function handle (mgpuModuleGetFunction), for messages.
  void noteFunction(void *function, const std::string &name) { functionNames_[function] = name; }
  std::string functionName(void *function) const {
    auto it = functionNames_.find(function);
    return it == functionNames_.end() ? std::string("?") : it->second;
  }
  void recordError(const std::string &message);
  Status check(int result, const std::string &what) const;

private:
  MgpuRuntime() = default;
  std::shared_ptr<Driver> driver_;
  std::unique_ptr<Context> context_;
  void *cuContext_ = nullptr; ///< the CUcontext context_ created (made current by Binding)
  void *handle_ = nullptr;    ///< our own dlopen reference to the driver library
  std::unique_ptr<Api> api_;
  std::string libraryPath_;
  std::string deferredError_;
  CallState *call_ = nullptr;
  size_t modules_ = 0;
  std::map<void *, std::string> functionNames_;
  std::function<void(const Launch &)> launchObserver_;
};

} // namespace dsa::cuda

// The entry points, with the C ABI of MLIR 22's gpu-to-llvm lowering (CUstream, CUmodule, CUfunction, CUevent as
// opaque pointers; a device address as a pointer). Exported from executables that link DSAGpuStepRuntime
// (-Wl,--export-dynamic-symbol=mgpu*) so that dlopen'ed step libraries resolve them.
extern "C" {
void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
void *mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY, intptr_t gridZ, intptr_t blockX,
                      intptr_t blockY, intptr_t blockZ, int32_t smem, void *stream, void **params, void **extra,
                      size_t paramsCount);
void *mgpuStreamCreate();
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void *mgpuEventCreate();
void mgpuEventDestroy(void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventRecord(void *event, void *stream);
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream);
void mgpuSetDefaultDevice(int32_t device);

/// What a step library's failed run-time check calls (its dsa_cpu_fail(code), through the dsa_cpu_fail_hook that
/// GpuStepLibrary points here): ends the running call with "run-time check failed: <message of the code>" (the
/// codes and messages of dsa/ABI/RuntimeErrors.h, as the CPU runtime reports them); outside a call it
/// aborts the process, as the library does with no hook set. Never returns.
[[noreturn]] void dsaGpuCheckFailed(int32_t code);
}

#endif
