//===- Driver.cpp - the CUDA driver API, loaded at run time ---------------------------------------------------===//
//
// See Driver.h. The entry points are declared here with the ABI of cuda.h (CUresult = int, CUdevice = int, handles
// = pointers, CUdeviceptr = unsigned long long); the versioned symbols are the ones cuda.h maps the plain names to
// for this ABI (cuCtxCreate_v2: CUDA 13's cuda.h maps cuCtxCreate to _v4, which takes a params struct; the _v2
// form stays exported by every driver).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Runtime/Cuda/Driver.h"

#include <dlfcn.h>

#include <cstring>
#include <utility>

namespace dsa::cuda {

namespace {
// Numbers from cuda.h (CUdevice_attribute, CUjit_option).
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kJitInfoLogBuffer = 3;
constexpr int kJitInfoLogBufferSizeBytes = 4;
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSizeBytes = 6;

const char *builtinErrorName(int code) {
  switch (code) {
  case 0: return "CUDA_SUCCESS";
  case 1: return "CUDA_ERROR_INVALID_VALUE";
  case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3: return "CUDA_ERROR_NOT_INITIALIZED";
  case 4: return "CUDA_ERROR_DEINITIALIZED";
  case 34: return "CUDA_ERROR_STUB_LIBRARY";
  case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
  case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
  case 100: return "CUDA_ERROR_NO_DEVICE";
  case 101: return "CUDA_ERROR_INVALID_DEVICE";
  case 200: return "CUDA_ERROR_INVALID_IMAGE";
  case 201: return "CUDA_ERROR_INVALID_CONTEXT";
  case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
  case 218: return "CUDA_ERROR_INVALID_PTX";
  case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
  case 400: return "CUDA_ERROR_INVALID_HANDLE";
  case 500: return "CUDA_ERROR_NOT_FOUND";
  case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
  case 702: return "CUDA_ERROR_LAUNCH_TIMEOUT";
  case 719: return "CUDA_ERROR_LAUNCH_FAILED";
  case 999: return "CUDA_ERROR_UNKNOWN";
  default: return nullptr;
  }
}

// The driver whose cuGetErrorName errorName() may use (set by the last successful Driver::load).
const Driver *gNamingDriver = nullptr;
} // namespace

struct Driver::Api {
  int (*cuInit)(unsigned flags);
  int (*cuDriverGetVersion)(int *version);
  int (*cuDeviceGetCount)(int *count);
  int (*cuDeviceGet)(int *device, int ordinal);
  int (*cuDeviceGetName)(char *name, int len, int device);
  int (*cuDeviceGetAttribute)(int *value, int attribute, int device);
  int (*cuDeviceTotalMem)(size_t *bytes, int device);
  int (*cuCtxCreate)(void **ctx, unsigned flags, int device);
  int (*cuCtxDestroy)(void *ctx);
  int (*cuCtxSetCurrent)(void *ctx);
  int (*cuCtxSynchronize)();
  int (*cuModuleLoadDataEx)(void **module, const void *image, unsigned numOptions, int *options, void **values);
  int (*cuModuleGetFunction)(void **function, void *module, const char *name);
  int (*cuModuleUnload)(void *module);
  int (*cuMemAlloc)(DevicePtr *ptr, size_t bytes);
  int (*cuMemFree)(DevicePtr ptr);
  int (*cuMemcpyHtoD)(DevicePtr dst, const void *src, size_t bytes);
  int (*cuMemcpyDtoH)(void *dst, DevicePtr src, size_t bytes);
  int (*cuLaunchKernel)(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned sharedBytes, void *stream, void **params, void **extra);
  int (*cuGetErrorName)(int code, const char **name);
};

std::string errorName(int code) {
  const char *name = nullptr;
  if (gNamingDriver && gNamingDriver->api().cuGetErrorName(code, &name) != 0)
    name = nullptr;
  if (!name)
    name = builtinErrorName(code);
  return std::string(name ? name : "CUDA error") + " (" + std::to_string(code) + ")";
}

Result<std::shared_ptr<Driver>> Driver::load(const std::string &libraryPath) {
  dlerror();
  void *handle = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return makeError("CUDA driver not available: dlopen(" + libraryPath + ") failed: " +
                     (why ? why : "unknown reason") +
                     " (no NVIDIA driver is installed on this machine, or it is not on the loader path)");
  }
  std::shared_ptr<Driver> d(new Driver());
  d->handle_ = handle;
  d->path_ = libraryPath;
  d->api_ = std::make_unique<Api>();
  Api &a = *d->api_;
  std::string missing;
  auto resolve = [&](auto &fn, const char *symbol) {
    void *p = dlsym(handle, symbol);
    if (!p && missing.empty())
      missing = symbol;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  resolve(a.cuInit, "cuInit");
  resolve(a.cuDriverGetVersion, "cuDriverGetVersion");
  resolve(a.cuDeviceGetCount, "cuDeviceGetCount");
  resolve(a.cuDeviceGet, "cuDeviceGet");
  resolve(a.cuDeviceGetName, "cuDeviceGetName");
  resolve(a.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  resolve(a.cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  resolve(a.cuCtxCreate, "cuCtxCreate_v2");
  resolve(a.cuCtxDestroy, "cuCtxDestroy_v2");
  resolve(a.cuCtxSetCurrent, "cuCtxSetCurrent");
  resolve(a.cuCtxSynchronize, "cuCtxSynchronize");
  resolve(a.cuModuleLoadDataEx, "cuModuleLoadDataEx");
  resolve(a.cuModuleGetFunction, "cuModuleGetFunction");
  resolve(a.cuModuleUnload, "cuModuleUnload");
  resolve(a.cuMemAlloc, "cuMemAlloc_v2");
  resolve(a.cuMemFree, "cuMemFree_v2");
  resolve(a.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  resolve(a.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  resolve(a.cuLaunchKernel, "cuLaunchKernel");
  resolve(a.cuGetErrorName, "cuGetErrorName");
  if (!missing.empty())
    return makeError(libraryPath + " is not a usable CUDA driver: it has no symbol " + missing);
  // cuGetErrorName of the stub library fails; errorName() then falls back to the built-in table.
  const int rc = a.cuInit(0);
  if (rc != 0) {
    const char *name = nullptr;
    if (a.cuGetErrorName(rc, &name) != 0 || !name)
      name = builtinErrorName(rc);
    return makeError("cuInit failed: " + std::string(name ? name : "CUDA error") + " (" + std::to_string(rc) +
                     ")" + (rc == 100 ? ": the driver finds no CUDA device" : "") +
                     (rc == 34 ? ": " + libraryPath + " is the CUDA toolkit's link stub, not a driver" : ""));
  }
  gNamingDriver = d.get();
  return d;
}

Driver::~Driver() {
  if (gNamingDriver == this)
    gNamingDriver = nullptr;
  if (handle_)
    dlclose(handle_);
}

Result<int> Driver::version() const {
  int v = 0;
  int rc = api_->cuDriverGetVersion(&v);
  if (rc != 0)
    return makeError("cuDriverGetVersion failed: " + errorName(rc));
  return v;
}

Result<int> Driver::deviceCount() const {
  int n = 0;
  int rc = api_->cuDeviceGetCount(&n);
  if (rc != 0)
    return makeError("cuDeviceGetCount failed: " + errorName(rc));
  return n;
}

//===----------------------------------------------------------------------------------------------------------===//
// Context
//===----------------------------------------------------------------------------------------------------------===//

Status Context::check(int result, const std::string &what) const {
  if (result == 0)
    return Status::success();
  return makeError(what + " failed: " + errorName(result));
}

Result<std::unique_ptr<Context>> Context::create(std::shared_ptr<Driver> driver, int ordinal) {
  if (!driver)
    return makeError("Context::create: no driver (load one with Driver::load)");
  Result<int> count = driver->deviceCount();
  if (!count.ok())
    return makeError(count.error());
  if (*count == 0)
    return makeError("no CUDA device: cuDeviceGetCount reports 0 devices");
  if (ordinal < 0 || ordinal >= *count)
    return makeError("device ordinal " + std::to_string(ordinal) + " is out of range: the driver reports " +
                     std::to_string(*count) + " device(s)");
  std::unique_ptr<Context> c(new Context());
  c->driver_ = std::move(driver);
  const Driver::Api &a = c->driver_->api();
  int dev = 0;
  if (Status st = c->check(a.cuDeviceGet(&dev, ordinal), "cuDeviceGet(" + std::to_string(ordinal) + ")"); !st.ok())
    return makeError(st.error());
  char name[256] = {0};
  if (Status st = c->check(a.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName"); !st.ok())
    return makeError(st.error());
  c->device_.ordinal = ordinal;
  c->device_.name = name;
  if (Status st = c->check(a.cuDeviceGetAttribute(&c->device_.computeMajor, kAttrComputeCapabilityMajor, dev),
                           "cuDeviceGetAttribute(compute capability major)");
      !st.ok())
    return makeError(st.error());
  if (Status st = c->check(a.cuDeviceGetAttribute(&c->device_.computeMinor, kAttrComputeCapabilityMinor, dev),
                           "cuDeviceGetAttribute(compute capability minor)");
      !st.ok())
    return makeError(st.error());
  if (Status st = c->check(a.cuDeviceTotalMem(&c->device_.totalMemoryBytes, dev), "cuDeviceTotalMem"); !st.ok())
    return makeError(st.error());
  if (Status st = c->check(a.cuCtxCreate(&c->ctx_, 0, dev), "cuCtxCreate"); !st.ok())
    return makeError(st.error());
  return c;
}

Result<std::unique_ptr<Context>> Context::open(int ordinal, const std::string &libraryPath) {
  Result<std::shared_ptr<Driver>> d = Driver::load(libraryPath);
  if (!d.ok())
    return makeError(d.error());
  return create(d.take(), ordinal);
}

Context::~Context() {
  if (ctx_)
    driver_->api().cuCtxDestroy(ctx_);
}

Result<DeviceBuffer> Context::alloc(size_t bytes) const {
  DevicePtr p = 0;
  const size_t n = bytes == 0 ? 1 : bytes;
  if (Status st = check(driver_->api().cuMemAlloc(&p, n), "cuMemAlloc(" + std::to_string(n) + " bytes)"); !st.ok())
    return makeError(st.error());
  return DeviceBuffer(this, p, bytes);
}

Result<Module> Context::loadModule(const std::string &image) const {
  // PTX must be NUL-terminated; a cubin is binary and carries its own size (the extra NUL is harmless).
  std::string data = image;
  data.push_back('\0');
  std::vector<char> errorLog(16384, '\0'), infoLog(4096, '\0');
  int options[4] = {kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes, kJitInfoLogBuffer, kJitInfoLogBufferSizeBytes};
  void *values[4] = {errorLog.data(), reinterpret_cast<void *>(static_cast<uintptr_t>(errorLog.size() - 1)),
                     infoLog.data(), reinterpret_cast<void *>(static_cast<uintptr_t>(infoLog.size() - 1))};
  void *module = nullptr;
  int rc = driver_->api().cuModuleLoadDataEx(&module, data.data(), 4, options, values);
  if (rc != 0) {
    std::string log(errorLog.data());
    return makeError("cuModuleLoadDataEx failed: " + errorName(rc) + (log.empty() ? "" : "; JIT log: " + log));
  }
  return Module(this, module);
}

Status Context::launch(const Function &f, const LaunchShape &shape, KernelArgs &args) const {
  for (int i = 0; i < 3; ++i)
    if (shape.grid[i] == 0 || shape.block[i] == 0)
      return makeError("launch of " + f.name + ": empty grid or block (" + std::to_string(shape.grid[0]) + "x" +
                       std::to_string(shape.grid[1]) + "x" + std::to_string(shape.grid[2]) + " blocks of " +
                       std::to_string(shape.block[0]) + "x" + std::to_string(shape.block[1]) + "x" +
                       std::to_string(shape.block[2]) + ")");
  return check(driver_->api().cuLaunchKernel(f.handle, shape.grid[0], shape.grid[1], shape.grid[2], shape.block[0],
                                             shape.block[1], shape.block[2], shape.sharedBytes, nullptr,
                                             args.params(), nullptr),
               "cuLaunchKernel(" + f.name + ")");
}

Status Context::synchronize() const { return check(driver_->api().cuCtxSynchronize(), "cuCtxSynchronize"); }

//===----------------------------------------------------------------------------------------------------------===//
// DeviceBuffer, Module
//===----------------------------------------------------------------------------------------------------------===//

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : ctx_(std::exchange(other.ctx_, nullptr)), ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::exchange(other.ctx_, nullptr);
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::release() {
  if (ctx_ && ptr_)
    ctx_->driver_->api().cuMemFree(ptr_);
  ctx_ = nullptr;
  ptr_ = 0;
  bytes_ = 0;
}

Status DeviceBuffer::upload(const void *src, size_t bytes) {
  if (!ctx_)
    return makeError("upload: the buffer is empty (moved from or never allocated)");
  if (bytes > bytes_)
    return makeError("upload of " + std::to_string(bytes) + " bytes into a buffer of " + std::to_string(bytes_));
  if (bytes == 0)
    return Status::success();
  return ctx_->check(ctx_->driver_->api().cuMemcpyHtoD(ptr_, src, bytes), "cuMemcpyHtoD");
}

Status DeviceBuffer::download(void *dst, size_t bytes) const {
  if (!ctx_)
    return makeError("download: the buffer is empty (moved from or never allocated)");
  if (bytes > bytes_)
    return makeError("download of " + std::to_string(bytes) + " bytes from a buffer of " + std::to_string(bytes_));
  if (bytes == 0)
    return Status::success();
  return ctx_->check(ctx_->driver_->api().cuMemcpyDtoH(dst, ptr_, bytes), "cuMemcpyDtoH");
}

Module::Module(Module &&other) noexcept
    : ctx_(std::exchange(other.ctx_, nullptr)), handle_(std::exchange(other.handle_, nullptr)) {}

Module &Module::operator=(Module &&other) noexcept {
  if (this != &other) {
    if (ctx_ && handle_)
      ctx_->driver_->api().cuModuleUnload(handle_);
    ctx_ = std::exchange(other.ctx_, nullptr);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Module::~Module() {
  if (ctx_ && handle_)
    ctx_->driver_->api().cuModuleUnload(handle_);
}

Result<Function> Module::function(const std::string &name) const {
  if (!ctx_)
    return makeError("function(" + name + "): the module is empty (moved from or never loaded)");
  void *f = nullptr;
  int rc = ctx_->driver_->api().cuModuleGetFunction(&f, handle_, name.c_str());
  if (rc != 0)
    return makeError("module has no kernel '" + name + "': cuModuleGetFunction failed: " + errorName(rc));
  return Function{f, name};
}

//===----------------------------------------------------------------------------------------------------------===//
// KernelArgs
//===----------------------------------------------------------------------------------------------------------===//

KernelArgs &KernelArgs::push(const void *value, unsigned bytes) {
  uint64_t slot = 0;
  std::memcpy(&slot, value, bytes);
  slots_.push_back(slot);
  sizes_.push_back(bytes);
  return *this;
}

KernelArgs &KernelArgs::memref(DevicePtr ptr, int64_t elements) {
  push(&ptr, sizeof(ptr)); // allocated
  push(&ptr, sizeof(ptr)); // aligned
  i64(0);                  // offset
  i64(elements);           // size
  return i64(1);           // stride
}

KernelArgs &KernelArgs::i64(int64_t v) { return push(&v, sizeof(v)); }
KernelArgs &KernelArgs::i32(int32_t v) { return push(&v, sizeof(v)); }
KernelArgs &KernelArgs::f32(float v) { return push(&v, sizeof(v)); }

void **KernelArgs::params() {
  pointers_.clear();
  for (uint64_t &s : slots_)
    pointers_.push_back(&s);
  return pointers_.data();
}

} // namespace dsa::cuda
