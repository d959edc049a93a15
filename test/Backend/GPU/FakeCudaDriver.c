/*===- FakeCudaDriver.c - a libcuda stand-in for testing the mgpu runtime and step libraries without a GPU ---===//
 *
 * TEST DOUBLE, not a driver: implements the CUDA driver entry points that runtime/cuda (Driver.cpp, MgpuRuntime.cpp)
 * resolves, over host memory (a "device pointer" is a calloc'ed host address, copies are memcpy). Kernel launches
 * execute nothing: they are recorded (kernel name, grid, block) for the tests to inspect. One device, "sm_90" unless
 * fakeCudaSetComputeCapability changes it. Failures can be injected (the N-th launch, module loading).
 *
 * Test hooks (dlsym'd by the tests): fakeCudaReset, fakeCudaLiveAllocations, fakeCudaLaunchCount,
 * fakeCudaLaunchName, fakeCudaLaunchGrid, fakeCudaDtoHCount, fakeCudaFailLaunchAt, fakeCudaFailModuleLoad,
 * fakeCudaSetComputeCapability, fakeCudaLoadedModules, fakeCudaLiveStreams.
 *
 * Log for tests that drive the double through a whole program (test/Backend/GPU/golden-gpu-libraries.sh): with
 * DSA_FAKE_CUDA_LOG=<file>, every module load/unload and kernel launch appends one line to <file>
 * (`module_load`, `module_unload`, `launch <kernel> grid X Y Z block X Y Z shared BYTES`), and the process's exit one
 * `exit launches N live_allocations A live_streams S loaded_modules M` line (what was left unreleased).
 *
 *===------------------------------------------------------------------------------------------------------===*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long CUdeviceptr;

#define MAX_LAUNCHES 4096
#define MAX_FUNCTIONS 256

static long gLiveAllocations = 0;
static long gLiveStreams = 0;
static long gLoadedModules = 0;
static long gLaunches = 0;
static long gDtoH = 0;
static long gFailLaunchAt = -1;
static int gFailModuleLoad = 0;
static int gMajor = 9, gMinor = 0;
static const char *gLaunchNames[MAX_LAUNCHES];
static unsigned gLaunchGrid[MAX_LAUNCHES][3];
static char *gFunctions[MAX_FUNCTIONS];
static int gNumFunctions = 0;
static int gContextToken, gCurrentSet;
static void *gCurrent = 0;

/* ---- the DSA_FAKE_CUDA_LOG log ---- */
static FILE *fakeLog(void) {
  static int opened = 0;
  static FILE *log = 0;
  if (!opened) {
    opened = 1;
    const char *path = getenv("DSA_FAKE_CUDA_LOG");
    if (path && *path)
      log = fopen(path, "a");
  }
  return log;
}
/* At unload or exit: the kernel names (strdup'ed by cuModuleGetFunction) are freed, and the log's last line says what
 * the program left unreleased. */
__attribute__((destructor)) static void fakeCudaExit(void) {
  for (int i = 0; i < gNumFunctions; ++i)
    free(gFunctions[i]);
  gNumFunctions = 0;
  FILE *log = fakeLog();
  if (log) {
    fprintf(log, "exit launches %ld live_allocations %ld live_streams %ld loaded_modules %ld\n", gLaunches,
            gLiveAllocations, gLiveStreams, gLoadedModules);
    fclose(log);
  }
}

/* ---- test hooks ---- */
void fakeCudaReset(void) {
  gLaunches = 0;
  gDtoH = 0;
  gFailLaunchAt = -1;
  gFailModuleLoad = 0;
  gMajor = 9;
  gMinor = 0;
}
long fakeCudaLiveAllocations(void) { return gLiveAllocations; }
long fakeCudaLiveStreams(void) { return gLiveStreams; }
long fakeCudaLoadedModules(void) { return gLoadedModules; }
long fakeCudaLaunchCount(void) { return gLaunches; }
const char *fakeCudaLaunchName(long i) { return i >= 0 && i < gLaunches && i < MAX_LAUNCHES ? gLaunchNames[i] : 0; }
unsigned fakeCudaLaunchGrid(long i, int d) { return i >= 0 && i < gLaunches && i < MAX_LAUNCHES ? gLaunchGrid[i][d] : 0; }
long fakeCudaDtoHCount(void) { return gDtoH; }
void fakeCudaFailLaunchAt(long n) { gFailLaunchAt = n; }
void fakeCudaFailModuleLoad(int fail) { gFailModuleLoad = fail; }
void fakeCudaSetComputeCapability(int major, int minor) {
  gMajor = major;
  gMinor = minor;
}

/* ---- the driver API (signatures as runtime/cuda resolves them) ---- */
int cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }
int cuDriverGetVersion(int *v) {
  *v = 13000;
  return 0;
}
int cuDeviceGetCount(int *n) {
  *n = 1;
  return 0;
}
int cuDeviceGet(int *d, int ordinal) {
  if (ordinal != 0)
    return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *d = 0;
  return 0;
}
int cuDeviceGetName(char *name, int len, int dev) {
  (void)dev;
  strncpy(name, "dsa fake CUDA device", (size_t)len);
  return 0;
}
int cuDeviceGetAttribute(int *value, int attribute, int dev) {
  (void)dev;
  *value = attribute == 75 ? gMajor : attribute == 76 ? gMinor : 0;
  return 0;
}
int cuDeviceTotalMem_v2(size_t *bytes, int dev) {
  (void)dev;
  *bytes = (size_t)1 << 30;
  return 0;
}
int cuCtxCreate_v2(void **ctx, unsigned flags, int dev) {
  (void)flags;
  (void)dev;
  *ctx = &gContextToken;
  gCurrent = *ctx;
  return 0;
}
int cuCtxDestroy_v2(void *ctx) {
  if (gCurrent == ctx)
    gCurrent = 0;
  return 0;
}
int cuCtxSetCurrent(void *ctx) {
  gCurrent = ctx;
  gCurrentSet++;
  return 0;
}
int cuCtxGetCurrent(void **ctx) {
  *ctx = gCurrent;
  return 0;
}
int cuCtxSynchronize(void) { return 0; }

int cuModuleLoadDataEx(void **module, const void *image, unsigned n, int *options, void **values) {
  (void)options;
  (void)values;
  (void)n;
  if (!image)
    return 1;
  if (gFailModuleLoad)
    return 200; /* CUDA_ERROR_INVALID_IMAGE */
  *module = malloc(1);
  gLoadedModules++;
  if (fakeLog())
    fprintf(fakeLog(), "module_load\n");
  return 0;
}
int cuModuleUnload(void *module) {
  free(module);
  gLoadedModules--;
  if (fakeLog())
    fprintf(fakeLog(), "module_unload\n");
  return 0;
}
int cuModuleGetFunction(void **function, void *module, const char *name) {
  (void)module;
  for (int i = 0; i < gNumFunctions; ++i)
    if (strcmp(gFunctions[i], name) == 0) {
      *function = gFunctions[i];
      return 0;
    }
  if (strncmp(name, "dsa_", 4) != 0 || gNumFunctions == MAX_FUNCTIONS)
    return 500; /* CUDA_ERROR_NOT_FOUND */
  gFunctions[gNumFunctions] = strdup(name);
  *function = gFunctions[gNumFunctions++];
  return 0;
}

int cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
  if (bytes == 0)
    return 1; /* CUDA_ERROR_INVALID_VALUE, as the driver */
  void *p = calloc(1, bytes);
  if (!p)
    return 2;
  *ptr = (CUdeviceptr)(uintptr_t)p;
  gLiveAllocations++;
  return 0;
}
int cuMemAllocManaged(CUdeviceptr *ptr, size_t bytes, unsigned flags) {
  (void)flags;
  return cuMemAlloc_v2(ptr, bytes);
}
int cuMemFree_v2(CUdeviceptr ptr) {
  if (!ptr)
    return 1;
  free((void *)(uintptr_t)ptr);
  gLiveAllocations--;
  return 0;
}
int cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return 0;
}
int cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  memcpy(dst, (const void *)(uintptr_t)src, bytes);
  gDtoH++;
  return 0;
}
int cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void *stream) {
  (void)stream;
  memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
  return 0;
}
int cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t count, void *stream) {
  (void)stream;
  for (size_t i = 0; i < count; ++i)
    memcpy((char *)(uintptr_t)dst + 4 * i, &value, 4);
  return 0;
}
int cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count, void *stream) {
  (void)stream;
  for (size_t i = 0; i < count; ++i)
    memcpy((char *)(uintptr_t)dst + 2 * i, &value, 2);
  return 0;
}

int cuStreamCreate(void **stream, unsigned flags) {
  (void)flags;
  *stream = malloc(1);
  gLiveStreams++;
  return 0;
}
int cuStreamDestroy_v2(void *stream) {
  free(stream);
  gLiveStreams--;
  return 0;
}
int cuStreamSynchronize(void *stream) {
  (void)stream;
  return 0;
}
int cuStreamWaitEvent(void *stream, void *event, unsigned flags) {
  (void)stream;
  (void)event;
  (void)flags;
  return 0;
}
int cuEventCreate(void **event, unsigned flags) {
  (void)flags;
  *event = malloc(1);
  return 0;
}
int cuEventDestroy_v2(void *event) {
  free(event);
  return 0;
}
int cuEventSynchronize(void *event) {
  (void)event;
  return 0;
}
int cuEventRecord(void *event, void *stream) {
  (void)event;
  (void)stream;
  return 0;
}

int cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned sharedBytes, void *stream, void **params, void **extra) {
  (void)stream;
  (void)extra;
  if (!function || !params)
    return 1;
  if (fakeLog())
    fprintf(fakeLog(), "launch %s grid %u %u %u block %u %u %u shared %u\n", (const char *)function, gx, gy, gz, bx, by,
            bz, sharedBytes);
  if (gLaunches == gFailLaunchAt) {
    gLaunches++;
    return 719; /* CUDA_ERROR_LAUNCH_FAILED */
  }
  if (gLaunches < MAX_LAUNCHES) {
    gLaunchNames[gLaunches] = (const char *)function;
    gLaunchGrid[gLaunches][0] = gx;
    gLaunchGrid[gLaunches][1] = gy;
    gLaunchGrid[gLaunches][2] = gz;
  }
  gLaunches++;
  return 0;
}

int cuGetErrorName(int code, const char **name) {
  switch (code) {
  case 0: *name = "CUDA_SUCCESS"; return 0;
  case 1: *name = "CUDA_ERROR_INVALID_VALUE"; return 0;
  case 200: *name = "CUDA_ERROR_INVALID_IMAGE"; return 0;
  case 500: *name = "CUDA_ERROR_NOT_FOUND"; return 0;
  case 719: *name = "CUDA_ERROR_LAUNCH_FAILED"; return 0;
  default: return 1;
  }
}
