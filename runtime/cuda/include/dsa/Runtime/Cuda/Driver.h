//===- Driver.h - the CUDA driver API, loaded at run time (MLIR-free) ----------------------------------------===//
//
// The GPU backend's host runtime talks to the GPU through the CUDA driver API, which it loads with
// dlopen("libcuda.so.1") when first asked to: the project builds and its CPU tests run on machines without a GPU
// or a driver, and the CUDA toolkit's headers are not needed to build it. (Debian ships no libmlir_cuda_runtime,
// so nothing of MLIR's GPU runtime is used either; see docs/gpu-backend.md.)
//
//   Driver   the resolved entry points of one libcuda (cuInit has succeeded);
//   Context  one device and a context on it (cuCtxCreate), current on the thread that created it; owns
//            device buffers (DeviceBuffer) and loaded modules (Module: PTX text, compiled by the driver's JIT,
//            or a cubin) and launches kernels (Function) with KernelArgs;
//   KernelArgs packs kernel parameters in the calling convention of MLIR-lowered kernels (KernelLibrary.h).
//
// Every fallible call returns dsa::Result / dsa::Status with a message naming what failed and, for a driver call,
// the CUDA error by name and number, e.g.
//   "CUDA driver not available: dlopen(libcuda.so.1) failed: libcuda.so.1: cannot open shared object file: ..."
//   "cuInit failed: CUDA_ERROR_NO_DEVICE (100)"
//   "no CUDA device: cuDeviceGetCount reports 0 devices"
// Nothing here throws. Not thread-safe: use a Context from the thread that created it.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_CUDA_DRIVER_H
#define DSA_RUNTIME_CUDA_DRIVER_H

#include "dsa/Support/Result.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dsa::cuda {

/// A device address (the driver's CUdeviceptr).
using DevicePtr = unsigned long long;

/// The name of a CUresult code from the driver's own table (cuGetErrorName) when it knows it, else from a built-in
/// table of the codes this runtime can meet, else "CUDA error"; always followed by " (<code>)".
std::string errorName(int code);

/// The resolved driver entry points. Obtained from Driver::load; shared by the Contexts created from it.
class Driver {
public:
  /// The default library: the driver's soname, as installed by the NVIDIA driver (not the toolkit's stub).
  static constexpr const char *kDefaultLibrary = "libcuda.so.1";

  /// dlopen(libraryPath), resolve every entry point the runtime uses, then cuInit(0).
  /// Errors: the library cannot be opened ("CUDA driver not available: dlopen(...) failed: <dlerror>"); an entry
  /// point is missing ("<path> is not a usable CUDA driver: it has no symbol <name>"); cuInit fails ("cuInit
  /// failed: <error name>", e.g. CUDA_ERROR_NO_DEVICE when the driver finds no GPU, CUDA_ERROR_STUB_LIBRARY for the
  /// toolkit's link stub).
  static Result<std::shared_ptr<Driver>> load(const std::string &libraryPath = kDefaultLibrary);

  ~Driver();
  Driver(const Driver &) = delete;
  Driver &operator=(const Driver &) = delete;

  /// The driver's CUDA version as cuDriverGetVersion reports it (e.g. 13000 for 13.0).
  Result<int> version() const;
  /// The number of CUDA devices (0 is not an error here; Context::create reports it).
  Result<int> deviceCount() const;
  /// The library path load() opened.
  const std::string &libraryPath() const { return path_; }

  /// The entry points (signatures as in cuda.h, with opaque handles as void*). Public for Context; callers
  /// outside the runtime should use Context.
  struct Api;
  const Api &api() const { return *api_; }

private:
  Driver() = default;
  void *handle_ = nullptr;
  std::string path_;
  std::unique_ptr<Api> api_;
};

/// One device's properties.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeMajor = 0; ///< compute capability, e.g. 9.0 for the H100/H200
  int computeMinor = 0;
  size_t totalMemoryBytes = 0;
};

class Context;

/// A device allocation, freed (cuMemFree) when destroyed. Move-only; must not outlive its Context.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  DevicePtr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

  /// Copies `bytes` bytes from host memory into the buffer's start. Errors: bytes > size(), driver errors.
  Status upload(const void *src, size_t bytes);
  /// Copies `bytes` bytes from the buffer's start to host memory. Errors: bytes > size(), driver errors.
  Status download(void *dst, size_t bytes) const;

private:
  friend class Context;
  DeviceBuffer(const Context *ctx, DevicePtr ptr, size_t bytes) : ctx_(ctx), ptr_(ptr), bytes_(bytes) {}
  void release();
  const Context *ctx_ = nullptr;
  DevicePtr ptr_ = 0;
  size_t bytes_ = 0;
};

/// A kernel in a loaded Module.
struct Function {
  void *handle = nullptr; ///< CUfunction
  std::string name;
};

/// A loaded module (cuModuleLoadDataEx), unloaded when destroyed. Move-only; must not outlive its Context.
class Module {
public:
  Module() = default;
  Module(Module &&other) noexcept;
  Module &operator=(Module &&other) noexcept;
  ~Module();
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  /// The kernel `name` (cuModuleGetFunction). Errors: no such kernel ("module has no kernel '<name>'").
  Result<Function> function(const std::string &name) const;

private:
  friend class Context;
  Module(const Context *ctx, void *handle) : ctx_(ctx), handle_(handle) {}
  const Context *ctx_ = nullptr;
  void *handle_ = nullptr;
};

/// Kernel parameters for cuLaunchKernel in the calling convention of the kernels that MLIR's convert-gpu-to-nvvm
/// produces (the default, non-bare-pointer one): a rank-1 `memref<?xT>` parameter is five values (allocated
/// pointer, aligned pointer, i64 offset, i64 size, i64 stride); `index` and i64 are 8 bytes, i32 and f32 are 4.
class KernelArgs {
public:
  /// A flat memref<?xT> over `elements` elements at `ptr`: (ptr, ptr, 0, elements, 1).
  KernelArgs &memref(DevicePtr ptr, int64_t elements);
  KernelArgs &index(int64_t v) { return i64(v); }
  KernelArgs &i64(int64_t v);
  KernelArgs &i32(int32_t v);
  KernelArgs &f32(float v);

  /// The number of kernel parameters (a memref counts five).
  size_t size() const { return slots_.size(); }
  /// The parameter array cuLaunchKernel takes (pointers into this object: valid while it lives, unchanged).
  void **params();
  /// The raw 8-byte slot of parameter i (its value in the low bytes, in host byte order) and its size in bytes.
  uint64_t slot(size_t i) const { return slots_[i]; }
  unsigned slotBytes(size_t i) const { return sizes_[i]; }

private:
  KernelArgs &push(const void *value, unsigned bytes);
  std::vector<uint64_t> slots_;
  std::vector<unsigned> sizes_;
  std::vector<void *> pointers_;
};

/// A launch shape: grid and block sizes in x, y, z.
struct LaunchShape {
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned sharedBytes = 0;
};

/// A device and a context on it.
class Context {
public:
  /// Creates a context on device `ordinal` of `driver` and makes it current on this thread.
  /// Errors: no device ("no CUDA device: cuDeviceGetCount reports 0 devices"), ordinal out of range, driver errors.
  static Result<std::unique_ptr<Context>> create(std::shared_ptr<Driver> driver, int ordinal = 0);
  /// Driver::load(libraryPath) then create(driver, ordinal): the one call most users need.
  static Result<std::unique_ptr<Context>> open(int ordinal = 0, const std::string &libraryPath = Driver::kDefaultLibrary);

  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  const DeviceInfo &device() const { return device_; }
  const Driver &driver() const { return *driver_; }

  /// cuMemAlloc of `bytes` (at least 1: a zero-byte request allocates one byte). Errors: out of memory etc.
  Result<DeviceBuffer> alloc(size_t bytes) const;
  /// Loads PTX text (NUL-terminated by this call; JIT-compiled for this device) or a cubin image. Errors carry the
  /// JIT's error log (e.g. a PTX ISA version or target this driver does not support).
  Result<Module> loadModule(const std::string &image) const;
  /// cuLaunchKernel on the default stream. Errors: an empty grid or block, driver errors.
  Status launch(const Function &f, const LaunchShape &shape, KernelArgs &args) const;
  /// cuCtxSynchronize: waits for the launched kernels; reports errors they raised (e.g. an illegal address).
  Status synchronize() const;

  /// Wraps a driver call's result: success, or "<what> failed: <error name>".
  Status check(int result, const std::string &what) const;

private:
  Context() = default;
  std::shared_ptr<Driver> driver_;
  void *ctx_ = nullptr; ///< CUcontext
  DeviceInfo device_;
  friend class DeviceBuffer;
  friend class Module;
};

} // namespace dsa::cuda

#endif
