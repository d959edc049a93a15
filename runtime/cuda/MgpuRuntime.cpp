//===- MgpuRuntime.cpp - MLIR's GPU runtime entry points over the dlopen'd CUDA driver ------------------------===//
//
// See MgpuRuntime.h. The entry points' semantics follow MLIR's CUDA runtime wrappers as the gpu-to-llvm lowering
// expects them (streams are non-blocking streams, mgpuMemAlloc of 0 bytes is null, mgpuMemcpy is an async copy on
// the stream with unified addressing), with errors recorded instead of printed (see the header).
//
// Unwinding: an entry point that fails inside a call records the error and longjmps to MgpuRuntime::call's guard.
// Every frame between them is generated host code (no destructors) or an entry point at a point where it holds no
// object with a destructor (the failing work is done in a helper that has returned), so nothing is skipped.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Runtime/Cuda/MgpuRuntime.h"

#include "dsa/ABI/RuntimeErrors.h"

#include <dlfcn.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

namespace dsa::cuda {

// Numbers from cuda.h.
namespace {
constexpr unsigned kStreamNonBlocking = 1;  // CU_STREAM_NON_BLOCKING
constexpr unsigned kEventDisableTiming = 2; // CU_EVENT_DISABLE_TIMING
constexpr unsigned kMemAttachGlobal = 1;    // CU_MEM_ATTACH_GLOBAL
constexpr int kJitOptimizationLevel = 7;    // CU_JIT_OPTIMIZATION_LEVEL
constexpr int kJitErrorLogBuffer = 5;       // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorLogBufferSizeBytes = 6;

} // namespace

// Per thread: the bound runtime, and the error of an entry point called with none bound.
thread_local MgpuRuntime *tBound = nullptr;
thread_local std::string tUnboundError;

std::string hex(const void *p) {
  std::ostringstream os;
  os << p;
  return os.str();
}

struct MgpuRuntime::Api {
  int (*cuCtxGetCurrent)(void **ctx);
  int (*cuCtxSetCurrent)(void *ctx);
  int (*cuCtxSynchronize)();
  int (*cuStreamCreate)(void **stream, unsigned flags);
  int (*cuStreamDestroy)(void *stream);
  int (*cuStreamSynchronize)(void *stream);
  int (*cuStreamWaitEvent)(void *stream, void *event, unsigned flags);
  int (*cuEventCreate)(void **event, unsigned flags);
  int (*cuEventDestroy)(void *event);
  int (*cuEventSynchronize)(void *event);
  int (*cuEventRecord)(void *event, void *stream);
  int (*cuMemAlloc)(DevicePtr *ptr, size_t bytes);
  int (*cuMemAllocManaged)(DevicePtr *ptr, size_t bytes, unsigned flags);
  int (*cuMemFree)(DevicePtr ptr);
  int (*cuMemcpyAsync)(DevicePtr dst, DevicePtr src, size_t bytes, void *stream);
  int (*cuMemcpyHtoD)(DevicePtr dst, const void *src, size_t bytes);
  int (*cuMemcpyDtoH)(void *dst, DevicePtr src, size_t bytes);
  int (*cuMemsetD32Async)(DevicePtr dst, unsigned value, size_t count, void *stream);
  int (*cuMemsetD16Async)(DevicePtr dst, unsigned short value, size_t count, void *stream);
  int (*cuModuleLoadDataEx)(void **module, const void *image, unsigned numOptions, int *options, void **values);
  int (*cuModuleUnload)(void *module);
  int (*cuModuleGetFunction)(void **function, void *module, const char *name);
  int (*cuLaunchKernel)(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned sharedBytes, void *stream, void **params, void **extra);
};

struct MgpuRuntime::CallState {
  std::jmp_buf escape;
  std::string error;
  std::map<DevicePtr, size_t> allocations;
  std::set<void *> streams, events;
};

//===----------------------------------------------------------------------------------------------------------===//
// MgpuRuntime
//===----------------------------------------------------------------------------------------------------------===//

Result<std::shared_ptr<MgpuRuntime>> MgpuRuntime::open(int ordinal, const std::string &libraryPath) {
  Result<std::shared_ptr<Driver>> driver = Driver::load(libraryPath);
  if (!driver)
    return makeError(driver.error());
  std::shared_ptr<MgpuRuntime> rt(new MgpuRuntime());
  rt->driver_ = driver.take();
  rt->libraryPath_ = libraryPath;
  rt->handle_ = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!rt->handle_) {
    const char *why = dlerror();
    return makeError("CUDA driver not available: dlopen(" + libraryPath + ") failed: " + (why ? why : "unknown"));
  }
  rt->api_ = std::make_unique<Api>();
  Api &a = *rt->api_;
  std::string missing;
  auto resolve = [&](auto &fn, const char *symbol) {
    void *p = dlsym(rt->handle_, symbol);
    if (!p && missing.empty())
      missing = symbol;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  resolve(a.cuCtxGetCurrent, "cuCtxGetCurrent");
  resolve(a.cuCtxSetCurrent, "cuCtxSetCurrent");
  resolve(a.cuCtxSynchronize, "cuCtxSynchronize");
  resolve(a.cuStreamCreate, "cuStreamCreate");
  resolve(a.cuStreamDestroy, "cuStreamDestroy_v2");
  resolve(a.cuStreamSynchronize, "cuStreamSynchronize");
  resolve(a.cuStreamWaitEvent, "cuStreamWaitEvent");
  resolve(a.cuEventCreate, "cuEventCreate");
  resolve(a.cuEventDestroy, "cuEventDestroy_v2");
  resolve(a.cuEventSynchronize, "cuEventSynchronize");
  resolve(a.cuEventRecord, "cuEventRecord");
  resolve(a.cuMemAlloc, "cuMemAlloc_v2");
  resolve(a.cuMemAllocManaged, "cuMemAllocManaged");
  resolve(a.cuMemFree, "cuMemFree_v2");
  resolve(a.cuMemcpyAsync, "cuMemcpyAsync");
  resolve(a.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  resolve(a.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  resolve(a.cuMemsetD32Async, "cuMemsetD32Async");
  resolve(a.cuMemsetD16Async, "cuMemsetD16Async");
  resolve(a.cuModuleLoadDataEx, "cuModuleLoadDataEx");
  resolve(a.cuModuleUnload, "cuModuleUnload");
  resolve(a.cuModuleGetFunction, "cuModuleGetFunction");
  resolve(a.cuLaunchKernel, "cuLaunchKernel");
  if (!missing.empty())
    return makeError(libraryPath + " is not a usable CUDA driver for the mgpu runtime: it has no symbol " + missing);
  Result<std::unique_ptr<Context>> ctx = Context::create(rt->driver_, ordinal);
  if (!ctx)
    return makeError(ctx.error());
  rt->context_ = ctx.take();
  if (Status st = rt->check(a.cuCtxGetCurrent(&rt->cuContext_), "cuCtxGetCurrent"); !st)
    return makeError(st.error());
  if (!rt->cuContext_)
    return makeError("cuCtxGetCurrent: no current context after cuCtxCreate");
  return rt;
}

MgpuRuntime::~MgpuRuntime() {
  if (tBound == this)
    tBound = nullptr;
  context_.reset();
  if (handle_)
    dlclose(handle_);
}

Status MgpuRuntime::check(int result, const std::string &what) const {
  if (result == 0)
    return Status::success();
  return makeError(what + " failed: " + errorName(result));
}

void MgpuRuntime::recordError(const std::string &message) {
  if (call_) {
    if (call_->error.empty())
      call_->error = message;
  } else if (deferredError_.empty()) {
    deferredError_ = message;
  }
}

std::string MgpuRuntime::takeDeferredError() { return std::exchange(deferredError_, std::string()); }

std::string MgpuRuntime::takeUnboundError() { return std::exchange(tUnboundError, std::string()); }

MgpuRuntime *MgpuRuntime::bound() { return tBound; }

MgpuRuntime::Binding::Binding(MgpuRuntime &runtime) : previous_(tBound) {
  tBound = &runtime;
  runtime.api().cuCtxSetCurrent(runtime.cuContext_);
}

MgpuRuntime::Binding::~Binding() {
  tBound = previous_;
  if (previous_)
    previous_->api().cuCtxSetCurrent(previous_->cuContext_);
}

Result<std::shared_ptr<DeviceAllocation>> MgpuRuntime::alloc(size_t bytes) {
  Binding bind(*this);
  DevicePtr p = 0;
  if (bytes > 0)
    if (Status st = check(api_->cuMemAlloc(&p, bytes), "cuMemAlloc(" + std::to_string(bytes) + " bytes)"); !st)
      return makeError(st.error());
  return adopt(p, bytes);
}

std::shared_ptr<DeviceAllocation> MgpuRuntime::adopt(DevicePtr ptr, size_t bytes) {
  return std::shared_ptr<DeviceAllocation>(new DeviceAllocation(shared_from_this(), ptr, bytes));
}

void MgpuRuntime::release(DevicePtr ptr) {
  if (!ptr)
    return;
  Binding bind(*this);
  api_->cuMemFree(ptr);
}

Status MgpuRuntime::upload(DevicePtr dst, const void *src, size_t bytes) {
  if (bytes == 0)
    return Status::success();
  Binding bind(*this);
  if (Status st = check(api_->cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD(" + std::to_string(bytes) + " bytes)"); !st)
    return st;
  // A copy from pageable memory may return before its DMA ends, and the compiled code launches on non-blocking
  // streams, which do not wait for the legacy stream: finish the copy before any kernel can read it.
  return check(api_->cuCtxSynchronize(), "cuCtxSynchronize after an upload");
}

Status MgpuRuntime::download(void *dst, DevicePtr src, size_t bytes) {
  if (bytes == 0)
    return Status::success();
  Binding bind(*this);
  return check(api_->cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH(" + std::to_string(bytes) + " bytes)");
}

Status MgpuRuntime::synchronize() {
  Binding bind(*this);
  return check(api_->cuCtxSynchronize(), "cuCtxSynchronize");
}

namespace {
/// Calls `entry(args)`; returns 1 when an entry point unwound it (longjmp to `state->escape`). No object with a
/// destructor lives in this frame.
__attribute__((noinline)) int runGuarded(PackedEntry entry, void **args, MgpuRuntime::CallState *state) {
  if (setjmp(state->escape) != 0)
    return 1;
  entry(args);
  return 0;
}
} // namespace

Result<MgpuRuntime::CallOutcome> MgpuRuntime::call(PackedEntry entry, void **args, const std::string &what) {
  if (call_)
    return makeError(what + ": the runtime is already running a call (calls do not nest)");
  if (!entry)
    return makeError(what + ": no entry point");
  CallState state;
  Binding bind(*this);
  call_ = &state;
  const int escaped = runGuarded(entry, args, &state);
  call_ = nullptr;
  // Streams and events the code did not destroy (all of them after an unwinding).
  for (void *s : state.streams) {
    api_->cuStreamSynchronize(s);
    api_->cuStreamDestroy(s);
  }
  for (void *e : state.events)
    api_->cuEventDestroy(e);
  if (escaped || !state.error.empty()) {
    api_->cuCtxSynchronize();
    for (auto &[p, bytes] : state.allocations)
      api_->cuMemFree(p);
    return makeError(what + ": " + (state.error.empty() ? std::string("unwound without an error") : state.error));
  }
  CallOutcome out;
  out.liveAllocations = std::move(state.allocations);
  return out;
}

DeviceAllocation::~DeviceAllocation() {
  if (runtime_ && ptr_)
    runtime_->release(ptr_);
}

} // namespace dsa::cuda

//===----------------------------------------------------------------------------------------------------------===//
// The entry points
//===----------------------------------------------------------------------------------------------------------===//

namespace {

using dsa::cuda::DevicePtr;
using dsa::cuda::MgpuRuntime;

/// The bound runtime, or null after recording `entry`'s no-runtime error for this thread.
MgpuRuntime *runtimeFor(const char *entry) {
  if (MgpuRuntime *rt = MgpuRuntime::bound())
    return rt;
  if (dsa::cuda::tUnboundError.empty())
    dsa::cuda::tUnboundError = std::string(entry) +
                               ": no dsa CUDA runtime is bound on this thread (load and run step libraries through "
                               "dsa::cuda::GpuStepLibrary, or bind an MgpuRuntime)";
  return nullptr;
}

/// Records `message` for `rt` and returns false.
bool fail(MgpuRuntime *rt, const std::string &message) {
  rt->recordError(message);
  return false;
}

/// Records a failed driver call; true when `rc` is success.
bool ok(MgpuRuntime *rt, int rc, const std::string &what) {
  if (rc == 0)
    return true;
  return fail(rt, what + " failed: " + dsa::cuda::errorName(rc));
}

/// Unwinds the running call after an error (returns when no call is running). Called with no live objects.
void escapeIfInCall(MgpuRuntime *rt) {
  if (rt && rt->activeCall())
    std::longjmp(rt->activeCall()->escape, 1);
}

DevicePtr devicePtr(const void *p) { return static_cast<DevicePtr>(reinterpret_cast<uintptr_t>(p)); }

bool moduleLoad(MgpuRuntime *rt, const void *data, int optLevel, bool jit, void **module) {
  const std::string what = jit ? "mgpuModuleLoadJIT" : "mgpuModuleLoad";
  if (!data)
    return fail(rt, what + ": null image");
  std::vector<char> log(8192, '\0');
  std::vector<int> options = {dsa::cuda::kJitErrorLogBuffer, dsa::cuda::kJitErrorLogBufferSizeBytes};
  std::vector<void *> values = {log.data(), reinterpret_cast<void *>(static_cast<uintptr_t>(log.size() - 1))};
  if (jit) {
    options.push_back(dsa::cuda::kJitOptimizationLevel);
    const int level = optLevel < 0 ? 0 : optLevel > 4 ? 4 : optLevel;
    values.push_back(reinterpret_cast<void *>(static_cast<uintptr_t>(level)));
  }
  // A cubin/fatbin carries its own size; PTX is NUL-terminated by the lowering.
  const int rc = rt->api().cuModuleLoadDataEx(module, data, static_cast<unsigned>(options.size()), options.data(),
                                              values.data());
  if (rc != 0) {
    const std::string text(log.data());
    const dsa::cuda::DeviceInfo &d = rt->device();
    return fail(rt, what + ": cuModuleLoadDataEx failed: " + dsa::cuda::errorName(rc) +
                        (text.empty() ? "" : "; JIT log: " + text) + " (device " + d.name + ", sm_" +
                        std::to_string(d.computeMajor) + std::to_string(d.computeMinor) + ")");
  }
  rt->noteModuleLoaded(1);
  return true;
}

bool memAlloc(MgpuRuntime *rt, uint64_t bytes, bool hostShared, void **out) {
  DevicePtr p = 0;
  const std::string what = "mgpuMemAlloc(" + std::to_string(bytes) + " bytes)";
  const int rc = hostShared ? rt->api().cuMemAllocManaged(&p, bytes, dsa::cuda::kMemAttachGlobal)
                            : rt->api().cuMemAlloc(&p, bytes);
  if (!ok(rt, rc, what + (hostShared ? ": cuMemAllocManaged" : ": cuMemAlloc")))
    return false;
  if (MgpuRuntime::CallState *call = rt->activeCall())
    call->allocations[p] = bytes;
  *out = reinterpret_cast<void *>(static_cast<uintptr_t>(p));
  return true;
}

bool memFree(MgpuRuntime *rt, void *ptr) {
  const DevicePtr p = devicePtr(ptr);
  if (MgpuRuntime::CallState *call = rt->activeCall()) {
    auto it = call->allocations.find(p);
    if (it == call->allocations.end())
      return fail(rt, "mgpuMemFree(" + dsa::cuda::hex(ptr) +
                          "): the compiled code frees memory it did not allocate in this call (an argument?)");
    call->allocations.erase(it);
  }
  return ok(rt, rt->api().cuMemFree(p), "mgpuMemFree(" + dsa::cuda::hex(ptr) + "): cuMemFree");
}

bool streamCreate(MgpuRuntime *rt, void **stream) {
  if (!ok(rt, rt->api().cuStreamCreate(stream, dsa::cuda::kStreamNonBlocking), "mgpuStreamCreate: cuStreamCreate"))
    return false;
  if (MgpuRuntime::CallState *call = rt->activeCall())
    call->streams.insert(*stream);
  return true;
}

bool streamDestroy(MgpuRuntime *rt, void *stream) {
  if (MgpuRuntime::CallState *call = rt->activeCall())
    call->streams.erase(stream);
  return ok(rt, rt->api().cuStreamDestroy(stream), "mgpuStreamDestroy: cuStreamDestroy");
}

bool eventCreate(MgpuRuntime *rt, void **event) {
  if (!ok(rt, rt->api().cuEventCreate(event, dsa::cuda::kEventDisableTiming), "mgpuEventCreate: cuEventCreate"))
    return false;
  if (MgpuRuntime::CallState *call = rt->activeCall())
    call->events.insert(*event);
  return true;
}

bool eventDestroy(MgpuRuntime *rt, void *event) {
  if (MgpuRuntime::CallState *call = rt->activeCall())
    call->events.erase(event);
  return ok(rt, rt->api().cuEventDestroy(event), "mgpuEventDestroy: cuEventDestroy");
}

bool launch(MgpuRuntime *rt, void *function, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by,
            intptr_t bz, int32_t smem, void *stream, void **params, void **extra, size_t paramsCount) {
  if (rt->launchObserver()) {
    MgpuRuntime::Launch l;
    l.kernel = function ? rt->functionName(function) : "null";
    l.paramsCount = paramsCount;
    const intptr_t dims[6] = {gx, gy, gz, bx, by, bz};
    for (int d = 0; d < 3; ++d) {
      l.grid[d] = dims[d];
      l.block[d] = dims[3 + d];
    }
    rt->launchObserver()(l);
  }
  const std::string what = "mgpuLaunchKernel(" + (function ? rt->functionName(function) : std::string("null")) + ")";
  if (!function)
    return fail(rt, what + ": null function (its module did not load, or mgpuModuleGetFunction failed)");
  const intptr_t dims[6] = {gx, gy, gz, bx, by, bz};
  for (intptr_t d : dims)
    if (d < 0 || d > 0x7fffffff)
      return fail(rt, what + ": grid " + std::to_string(gx) + "x" + std::to_string(gy) + "x" + std::to_string(gz) +
                          ", block " + std::to_string(bx) + "x" + std::to_string(by) + "x" + std::to_string(bz) +
                          " does not fit the launch limits");
  if (smem < 0)
    return fail(rt, what + ": negative dynamic shared memory " + std::to_string(smem));
  // An empty grid launches nothing (CUDA rejects it); the lowering guards its launches, a caller may not.
  if (gx == 0 || gy == 0 || gz == 0)
    return true;
  return ok(rt,
            rt->api().cuLaunchKernel(function, static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                                     static_cast<unsigned>(gz), static_cast<unsigned>(bx), static_cast<unsigned>(by),
                                     static_cast<unsigned>(bz), static_cast<unsigned>(smem), stream, params, extra),
            what + ": cuLaunchKernel (grid " + std::to_string(gx) + "x" + std::to_string(gy) + "x" +
                std::to_string(gz) + ", block " + std::to_string(bx) + "x" + std::to_string(by) + "x" +
                std::to_string(bz) + ")");
}

} // namespace

extern "C" {

void *mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  MgpuRuntime *rt = runtimeFor("mgpuModuleLoad");
  void *module = nullptr;
  if (rt && !moduleLoad(rt, data, 0, /*jit=*/false, &module))
    escapeIfInCall(rt);
  return module;
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  MgpuRuntime *rt = runtimeFor("mgpuModuleLoadJIT");
  void *module = nullptr;
  if (rt && !moduleLoad(rt, data, optLevel, /*jit=*/true, &module))
    escapeIfInCall(rt);
  return module;
}

void mgpuModuleUnload(void *module) {
  MgpuRuntime *rt = runtimeFor("mgpuModuleUnload");
  if (!rt || !module)
    return;
  if (ok(rt, rt->api().cuModuleUnload(module), "mgpuModuleUnload: cuModuleUnload"))
    rt->noteModuleLoaded(-1);
  else
    escapeIfInCall(rt);
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  MgpuRuntime *rt = runtimeFor("mgpuModuleGetFunction");
  if (!rt)
    return nullptr;
  void *function = nullptr;
  bool good = module ? ok(rt, rt->api().cuModuleGetFunction(&function, module, name),
                          std::string("mgpuModuleGetFunction(") + (name ? name : "<null>") + "): cuModuleGetFunction")
                     : fail(rt, std::string("mgpuModuleGetFunction(") + (name ? name : "<null>") +
                                    "): the kernel module is not loaded (its load failed when the step library was "
                                    "opened)");
  if (good)
    rt->noteFunction(function, name);
  else
    escapeIfInCall(rt);
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY, intptr_t gridZ, intptr_t blockX,
                      intptr_t blockY, intptr_t blockZ, int32_t smem, void *stream, void **params, void **extra,
                      size_t paramsCount) {
  MgpuRuntime *rt = runtimeFor("mgpuLaunchKernel");
  if (rt && !launch(rt, function, gridX, gridY, gridZ, blockX, blockY, blockZ, smem, stream, params, extra,
                    paramsCount))
    escapeIfInCall(rt);
}

void *mgpuStreamCreate() {
  MgpuRuntime *rt = runtimeFor("mgpuStreamCreate");
  void *stream = nullptr;
  if (rt && !streamCreate(rt, &stream))
    escapeIfInCall(rt);
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  MgpuRuntime *rt = runtimeFor("mgpuStreamDestroy");
  if (rt && !streamDestroy(rt, stream))
    escapeIfInCall(rt);
}

void mgpuStreamSynchronize(void *stream) {
  MgpuRuntime *rt = runtimeFor("mgpuStreamSynchronize");
  if (rt && !ok(rt, rt->api().cuStreamSynchronize(stream), "mgpuStreamSynchronize: cuStreamSynchronize"))
    escapeIfInCall(rt);
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  MgpuRuntime *rt = runtimeFor("mgpuStreamWaitEvent");
  if (rt && !ok(rt, rt->api().cuStreamWaitEvent(stream, event, 0), "mgpuStreamWaitEvent: cuStreamWaitEvent"))
    escapeIfInCall(rt);
}

void *mgpuEventCreate() {
  MgpuRuntime *rt = runtimeFor("mgpuEventCreate");
  void *event = nullptr;
  if (rt && !eventCreate(rt, &event))
    escapeIfInCall(rt);
  return event;
}

void mgpuEventDestroy(void *event) {
  MgpuRuntime *rt = runtimeFor("mgpuEventDestroy");
  if (rt && !eventDestroy(rt, event))
    escapeIfInCall(rt);
}

void mgpuEventSynchronize(void *event) {
  MgpuRuntime *rt = runtimeFor("mgpuEventSynchronize");
  if (rt && !ok(rt, rt->api().cuEventSynchronize(event), "mgpuEventSynchronize: cuEventSynchronize"))
    escapeIfInCall(rt);
}

void mgpuEventRecord(void *event, void *stream) {
  MgpuRuntime *rt = runtimeFor("mgpuEventRecord");
  if (rt && !ok(rt, rt->api().cuEventRecord(event, stream), "mgpuEventRecord: cuEventRecord"))
    escapeIfInCall(rt);
}

void *mgpuMemAlloc(uint64_t sizeBytes, void * /*stream*/, bool isHostShared) {
  MgpuRuntime *rt = runtimeFor("mgpuMemAlloc");
  void *ptr = nullptr;
  if (rt && sizeBytes > 0 && !memAlloc(rt, sizeBytes, isHostShared, &ptr))
    escapeIfInCall(rt);
  return ptr;
}

void mgpuMemFree(void *ptr, void * /*stream*/) {
  MgpuRuntime *rt = runtimeFor("mgpuMemFree");
  if (rt && ptr && !memFree(rt, ptr))
    escapeIfInCall(rt);
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  MgpuRuntime *rt = runtimeFor("mgpuMemcpy");
  if (rt && sizeBytes > 0 &&
      !ok(rt, rt->api().cuMemcpyAsync(devicePtr(dst), devicePtr(src), sizeBytes, stream),
          "mgpuMemcpy(" + std::to_string(sizeBytes) + " bytes): cuMemcpyAsync"))
    escapeIfInCall(rt);
}

void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream) {
  MgpuRuntime *rt = runtimeFor("mgpuMemset32");
  if (rt && count > 0 &&
      !ok(rt, rt->api().cuMemsetD32Async(devicePtr(dst), value, count, stream), "mgpuMemset32: cuMemsetD32Async"))
    escapeIfInCall(rt);
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  MgpuRuntime *rt = runtimeFor("mgpuMemset16");
  if (rt && count > 0 &&
      !ok(rt, rt->api().cuMemsetD16Async(devicePtr(dst), value, count, stream), "mgpuMemset16: cuMemsetD16Async"))
    escapeIfInCall(rt);
}

void mgpuSetDefaultDevice(int32_t device) {
  MgpuRuntime *rt = runtimeFor("mgpuSetDefaultDevice");
  if (rt && device != rt->device().ordinal &&
      !fail(rt, "mgpuSetDefaultDevice(" + std::to_string(device) + "): the bound runtime drives device " +
                    std::to_string(rt->device().ordinal) + " only"))
    escapeIfInCall(rt);
}

void dsaGpuCheckFailed(int32_t code) {
  MgpuRuntime *rt = MgpuRuntime::bound();
  if (!rt || !rt->activeCall()) {
    std::fprintf(stderr, "dsa gpu step library: run-time check failed outside a call: %s\n",
                 ::dsa::abi::runtimeErrorMessage(code));
    std::abort();
  }
  MgpuRuntime::CallState *call = rt->activeCall();
  if (call->error.empty())
    call->error = std::string("run-time check failed: ") + ::dsa::abi::runtimeErrorMessage(code);
  std::longjmp(call->escape, 1);
}

} // extern "C"
