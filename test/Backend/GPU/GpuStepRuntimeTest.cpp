//===- GpuStepRuntimeTest.cpp - the MLIR-free GPU step runtime (runtime/cuda MgpuRuntime, GpuStepLibrary) -----===//
//
// Builds without MLIR (also on the GPU machine, scripts/gpu-check.sh).
// Without a GPU: the step description's fields and errors, the mgpu* entry points with no runtime bound, the
// no-driver and toolkit-stub errors, and MgpuRuntime::call's bookkeeping and error paths on the test double driver
// (FakeCudaDriver.c) with hand-written "compiled" entries that call mgpu* like the generated host code does.
// With a GPU and step libraries compiled on the MLIR machine (DSA_GPU_STEP_LIBS=DIR, from scripts/gpu-check.sh
// --libs): the window-only layer's library runs a prefill of 12 and decode steps at 12 and 13 with its ring resident
// on the device, against the reference kernels (section 12 tolerance). Without a device or libraries it skips;
// DSA_REQUIRE_CUDA_DEVICE=1 makes that a failure.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "GpuTestSupport.h"

#include "dsa/ABI/RuntimeErrors.h"
#include "dsa/Runtime/Cuda/GpuStepLibrary.h"

#include <fstream>

using namespace dsa;
using namespace dsa::cuda;
using namespace dsa::gputest;

namespace {

GpuStepLibraryDescription sampleDescription() {
  GpuStepLibraryDescription d;
  d.base.library = "l0.so";
  d.base.librarySha256 = std::string(64, 'c');
  d.base.targetCpu = "x86-64";
  runtime::FunctionSignature f;
  f.name = "layer0";
  runtime::ValueKind x{true, ElementType::BF16, {-1, 64}, "tensor<?x64xbf16>"};
  runtime::ValueKind sp{false, ElementType::I64, {}, "i64"};
  runtime::ValueKind ring{true, ElementType::BF16, {8, 32}, "tensor<8x32xbf16>"};
  f.args = {x, sp, ring};
  f.results = {x, ring};
  f.numResults = 2;
  runtime::StateBinding b;
  b.arg = 2;
  b.result = 1;
  f.state = {b};
  d.base.functions = {f};
  d.chip = "sm_90";
  d.binaryFormat = "bin";
  return d;
}

std::string replaced(std::string text, const std::string &from, const std::string &to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

} // namespace

//===----------------------------------------------------------------------------------------------------------===//
// The step description
//===----------------------------------------------------------------------------------------------------------===//

TEST(GpuStepDescription, RoundTripsTheGpuFieldsAndTheSignature) {
  const std::string text = describeGpuStepLibrary(sampleDescription());
  EXPECT_TRUE(contains(text, "\"format\": \"dsa-gpu-step-library\"")) << text;
  EXPECT_TRUE(contains(text, "\"backend\": \"cuda\"")) << text;
  Result<GpuStepLibraryDescription> d = parseGpuStepLibrary(text);
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->chip, "sm_90");
  EXPECT_EQ(d->binaryFormat, "bin");
  EXPECT_EQ(d->base.library, "l0.so");
  ASSERT_EQ(d->base.functions.size(), 1u);
  const runtime::FunctionSignature &f = d->base.functions[0];
  EXPECT_EQ(f.name, "layer0");
  ASSERT_EQ(f.args.size(), 3u);
  EXPECT_EQ(f.args[0].shape, (std::vector<int64_t>{-1, 64}));
  EXPECT_FALSE(f.args[1].isTensor);
  ASSERT_EQ(f.state.size(), 1u);
  EXPECT_EQ(f.state[0].arg, 2);
  EXPECT_EQ(f.state[0].result, 1);
}

TEST(GpuStepDescription, ErrorsNameTheField) {
  const std::string good = describeGpuStepLibrary(sampleDescription());
  struct Case {
    std::string from, to, error;
  } cases[] = {
      {"\"dsa-gpu-step-library\"", "\"dsa-cpu-step-library\"", "this is a CPU step library"},
      {"\"dsa-gpu-step-library\"", "\"other\"", "format: expected \"dsa-gpu-step-library\""},
      {"\"backend\": \"cuda\"", "\"backend\": \"rocm\"", "backend: expected \"cuda\""},
      {"\"chip\": \"sm_90\"", "\"chip\": \"gfx90a\"", "chip: expected \"sm_<major><minor>\""},
      {"\"chip\": \"sm_90\"", "\"chip\": 90", "chip: missing or not a string"},
      {"\"binary_format\": \"bin\"", "\"binary_format\": \"elf\"", "binary_format: expected \"bin\", \"isa\""},
      {"\"parallel\": false", "\"parallel\": true", "parallel: a GPU step library has no OpenMP"},
      {"\"element\": \"i64\"", "\"element\": \"f16\"", "functions[0].args[1].element: unknown element type 'f16'"},
      // Unknown and duplicate keys, in the GPU fields and in the CPU ones, are errors naming their path.
      {"\"chip\": \"sm_90\"", "\"chip\": \"sm_90\", \"chips\": \"sm_80\"", "chips: unknown key"},
      {"\"chip\": \"sm_90\"", "\"chip\": \"sm_90\", \"chip\": \"sm_80\"", "chip: duplicate key"},
      {"\"num_results\": 2", "\"num_results\": 2, \"num_result\": 2", "functions[0].num_result: unknown key"},
      {"\"version\": 5", "\"version\": 4", "version: 4 is an old step description"},
      {"\"library_sha256\": \"", "\"library_sha256\": \"0", "library_sha256: missing or not a SHA-256"},
  };
  for (const Case &c : cases) {
    Result<GpuStepLibraryDescription> d = parseGpuStepLibrary(replaced(good, c.from, c.to));
    ASSERT_FALSE(d.ok()) << c.to;
    EXPECT_TRUE(contains(d.error(), c.error)) << d.error();
  }
  EXPECT_TRUE(contains(parseGpuStepLibrary("[1, 2]").error(), "not a JSON object"));
}

TEST(GpuStepDescription, ChipNames) {
  EXPECT_EQ(*parseChip("sm_90"), std::make_pair(9, 0));
  EXPECT_EQ(*parseChip("sm_86"), std::make_pair(8, 6));
  EXPECT_EQ(*parseChip("sm_100"), std::make_pair(10, 0));
  EXPECT_EQ(*parseChip("sm_90a"), std::make_pair(9, 0));
  for (const char *bad : {"", "sm_", "sm_9", "sm_9x", "compute_90", "sm_1000"})
    EXPECT_FALSE(parseChip(bad).ok()) << bad;
}

//===----------------------------------------------------------------------------------------------------------===//
// The mgpu* entry points and MgpuRuntime without a GPU
//===----------------------------------------------------------------------------------------------------------===//

TEST(MgpuEntryPoints, WithoutABoundRuntimeTheyFailCleanly) {
  ASSERT_EQ(MgpuRuntime::bound(), nullptr);
  (void)MgpuRuntime::takeUnboundError();
  EXPECT_EQ(mgpuMemAlloc(64, nullptr, false), nullptr);
  EXPECT_TRUE(contains(MgpuRuntime::takeUnboundError(), "mgpuMemAlloc: no dsa CUDA runtime is bound"));
  const char blob[] = "not a module";
  EXPECT_EQ(mgpuModuleLoad(const_cast<char *>(blob), sizeof(blob)), nullptr);
  EXPECT_TRUE(contains(MgpuRuntime::takeUnboundError(), "mgpuModuleLoad: no dsa CUDA runtime is bound"));
  EXPECT_EQ(mgpuStreamCreate(), nullptr);
  mgpuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr, 0);
  mgpuMemcpy(nullptr, nullptr, 16, nullptr);
  mgpuMemFree(nullptr, nullptr);
  EXPECT_TRUE(contains(MgpuRuntime::takeUnboundError(), "mgpuStreamCreate"));
  EXPECT_EQ(MgpuRuntime::takeUnboundError(), "");
}

TEST(MgpuRuntimeErrors, NoDriverIsAClearError) {
  Result<std::shared_ptr<MgpuRuntime>> rt = MgpuRuntime::open(0, "libdsa-no-such-cuda-driver.so.1");
  ASSERT_FALSE(rt.ok());
  EXPECT_TRUE(contains(rt.error(), "CUDA driver not available: dlopen(libdsa-no-such-cuda-driver.so.1) failed"))
      << rt.error();
  // The default driver: absent on machines without a GPU.
  Result<std::shared_ptr<MgpuRuntime>> def = MgpuRuntime::open();
  if (def.ok())
    GTEST_SKIP() << "a CUDA driver and device are present; the no-driver path is checked on machines without one";
  EXPECT_TRUE(contains(def.error(), "CUDA driver not available") || contains(def.error(), "cuInit failed") ||
              contains(def.error(), "no CUDA device"))
      << def.error();
}

TEST(MgpuRuntimeErrors, ToolkitStubIsNotADriver) {
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::ifstream(stub).good())
    GTEST_SKIP() << stub << " is not installed";
  // The stub's soname is libcuda.so.1: where a driver is installed, dlopen may hand back the real one.
  if (MgpuRuntime::open().ok())
    GTEST_SKIP() << "a CUDA driver is present; the stub is checked on machines without one";
  Result<std::shared_ptr<MgpuRuntime>> rt = MgpuRuntime::open(0, stub);
  ASSERT_FALSE(rt.ok());
  EXPECT_TRUE(contains(rt.error(), "cuInit failed")) << rt.error();
}

namespace {
// Hand-written "compiled" entries: they call the mgpu* entry points the way the generated host code does.
void *gKept = nullptr;
void entryAllocTwoFreeOne(void **args) {
  (void)args;
  void *stream = mgpuStreamCreate();
  void *a = mgpuMemAlloc(256, stream, false);
  gKept = mgpuMemAlloc(128, stream, false);
  EXPECT_EQ(mgpuMemAlloc(0, stream, false), nullptr); // 0 bytes: null, as upstream
  mgpuMemFree(a, stream);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}
bool gReachedAfterFailure = false;
void entryFreesForeignMemory(void **args) {
  void *stream = mgpuStreamCreate(); // not destroyed: the unwinding call cleans it up
  (void)mgpuMemAlloc(64, stream, false);
  mgpuMemFree(*reinterpret_cast<void **>(args[0]), stream);
  gReachedAfterFailure = true;
}
void entryLaunchesANullFunction(void **args) {
  (void)args;
  void *stream = mgpuStreamCreate();
  (void)mgpuMemAlloc(64, stream, false);
  void *params[1] = {nullptr};
  mgpuLaunchKernel(nullptr, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr, 1);
  gReachedAfterFailure = true;
}
void *gModule = nullptr;
void entryFailingLaunch(void **args) {
  void *module = gModule = mgpuModuleLoad(args[0], 8);
  void *f = mgpuModuleGetFunction(module, "dsa_positions");
  void *stream = mgpuStreamCreate();
  int64_t x = 0;
  void *params[1] = {&x};
  mgpuLaunchKernel(f, 2, 1, 1, 256, 1, 1, 0, stream, params, nullptr, 1); // the fake fails launch #0
  gReachedAfterFailure = true;
}
void entryAsserts(void **args) {
  (void)args;
  (void)mgpuMemAlloc(32, nullptr, false);
  dsaGpuCheckFailed(static_cast<int32_t>(::dsa::abi::RuntimeError::WindowIndicesNegativeStart));
  gReachedAfterFailure = true;
}
} // namespace

class MgpuRuntimeOnFakeDriver : public ::testing::Test {
protected:
  void SetUp() override {
    FakeDriver::reset();
    Result<std::shared_ptr<MgpuRuntime>> r = MgpuRuntime::open(0, FakeDriver::path());
    ASSERT_TRUE(r.ok()) << r.error();
    rt = r.take();
    baseline = FakeDriver::liveAllocations();
    gReachedAfterFailure = false;
  }
  std::shared_ptr<MgpuRuntime> rt;
  long baseline = 0;
};

TEST_F(MgpuRuntimeOnFakeDriver, CallTracksWhatTheCodeAllocatesAndFrees) {
  EXPECT_EQ(rt->device().name, "dsa fake CUDA device");
  Result<MgpuRuntime::CallOutcome> out = rt->call(&entryAllocTwoFreeOne, nullptr, "entry");
  ASSERT_TRUE(out.ok()) << out.error();
  ASSERT_EQ(out->liveAllocations.size(), 1u);
  EXPECT_EQ(out->liveAllocations.begin()->first, reinterpret_cast<uintptr_t>(gKept));
  EXPECT_EQ(out->liveAllocations.begin()->second, 128u);
  EXPECT_EQ(FakeDriver::liveAllocations(), baseline + 1);
  EXPECT_EQ(FakeDriver::liveStreams(), 0);
  {
    std::shared_ptr<DeviceAllocation> kept = rt->adopt(out->liveAllocations.begin()->first, 128);
    EXPECT_EQ(kept->bytes(), 128u);
  }
  EXPECT_EQ(FakeDriver::liveAllocations(), baseline);
  EXPECT_EQ(MgpuRuntime::bound(), nullptr) << "call() restores the binding";
}

TEST_F(MgpuRuntimeOnFakeDriver, FreeingForeignMemoryUnwindsAndFreesTheCallsAllocations) {
  Result<std::shared_ptr<DeviceAllocation>> arg = rt->alloc(16);
  ASSERT_TRUE(arg.ok()) << arg.error();
  void *argPtr = reinterpret_cast<void *>(static_cast<uintptr_t>((*arg)->ptr()));
  void *args[1] = {&argPtr};
  Result<MgpuRuntime::CallOutcome> out = rt->call(&entryFreesForeignMemory, args, "@f");
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(contains(out.error(), "@f: mgpuMemFree(")) << out.error();
  EXPECT_TRUE(contains(out.error(), "frees memory it did not allocate in this call")) << out.error();
  EXPECT_FALSE(gReachedAfterFailure) << "the compiled code must not continue after an error";
  EXPECT_EQ(FakeDriver::liveAllocations(), baseline + 1) << "the argument survives, the call's buffer is freed";
  EXPECT_EQ(FakeDriver::liveStreams(), 0);
}

TEST_F(MgpuRuntimeOnFakeDriver, NullFunctionLaunchUnwinds) {
  Result<MgpuRuntime::CallOutcome> out = rt->call(&entryLaunchesANullFunction, nullptr, "@g");
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(contains(out.error(), "@g: mgpuLaunchKernel(null): null function")) << out.error();
  EXPECT_FALSE(gReachedAfterFailure);
  EXPECT_EQ(FakeDriver::liveAllocations(), baseline);
  EXPECT_EQ(FakeDriver::liveStreams(), 0);
}

TEST_F(MgpuRuntimeOnFakeDriver, DriverLaunchFailureNamesTheCudaError) {
  FakeDriver::failLaunchAt(0);
  char image[8] = "cubin";
  void *args[1] = {image};
  Result<MgpuRuntime::CallOutcome> out = rt->call(&entryFailingLaunch, args, "@h");
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(contains(out.error(), "mgpuLaunchKernel(dsa_positions): cuLaunchKernel (grid 2x1x1, block 256x1x1) failed: "
                                    "CUDA_ERROR_LAUNCH_FAILED (719)"))
      << out.error();
  EXPECT_FALSE(gReachedAfterFailure);
  EXPECT_EQ(rt->loadedModules(), 1u);
  MgpuRuntime::Binding bind(*rt);
  mgpuModuleUnload(gModule);
  EXPECT_EQ(rt->loadedModules(), 0u);
}

TEST_F(MgpuRuntimeOnFakeDriver, FailedCheckEndsTheCallWithItsMessage) {
  Result<MgpuRuntime::CallOutcome> out = rt->call(&entryAsserts, nullptr, "@k");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error(), "@k: run-time check failed: dsa.window_indices: start_pos is negative, expected >= 0");
  EXPECT_FALSE(gReachedAfterFailure);
  EXPECT_EQ(FakeDriver::liveAllocations(), baseline);
  // The runtime stays usable.
  Result<MgpuRuntime::CallOutcome> again = rt->call(&entryAllocTwoFreeOne, nullptr, "again");
  ASSERT_TRUE(again.ok()) << again.error();
  for (auto &[p, bytes] : again->liveAllocations)
    rt->release(p);
  EXPECT_EQ(FakeDriver::liveAllocations(), baseline);
}

TEST_F(MgpuRuntimeOnFakeDriver, ModuleLoadFailureOutsideACallIsDeferred) {
  FakeDriver::failModuleLoad(1);
  {
    MgpuRuntime::Binding bind(*rt);
    char image[8] = "cubin";
    EXPECT_EQ(mgpuModuleLoad(image, sizeof(image)), nullptr);
  }
  const std::string err = rt->takeDeferredError();
  EXPECT_TRUE(contains(err, "mgpuModuleLoad: cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_IMAGE (200)")) << err;
  EXPECT_TRUE(contains(err, "dsa fake CUDA device, sm_90")) << err;
  EXPECT_EQ(rt->takeDeferredError(), "");
}

TEST_F(MgpuRuntimeOnFakeDriver, TensorsUploadAndDownload) {
  Tensor t = bf16({2, 3}, {1.0f, -2.5f, 0.0f, 3.0f, 1e-3f, -0.0f});
  Result<GpuTensor> g = GpuTensor::upload(*rt, t);
  ASSERT_TRUE(g.ok()) << g.error();
  Result<Tensor> back = g->download();
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->shape(), t.shape());
  for (int64_t i = 0; i < t.numElements(); ++i)
    EXPECT_EQ(back->floats()[i], numerics::roundBf16(t.floats()[i])) << i;
  Tensor idx = Tensor::fromInts(ElementType::I32, {3}, {-1, 7, 2147483647});
  Result<Tensor> idxBack = GpuTensor::upload(*rt, idx)->download();
  ASSERT_TRUE(idxBack.ok());
  EXPECT_EQ(idxBack->intVector(), idx.intVector());
  Result<Tensor> empty = GpuTensor::upload(*rt, bf16({0, 64}, {}))->download();
  ASSERT_TRUE(empty.ok()) << empty.error();
  EXPECT_EQ(empty->numElements(), 0);
}

//===----------------------------------------------------------------------------------------------------------===//
// On a GPU: a step library compiled on the MLIR machine
//===----------------------------------------------------------------------------------------------------------===//

TEST(GpuStepLibraryOnDevice, WindowLayerSequenceMatchesTheReference) {
  const char *dir = std::getenv("DSA_GPU_STEP_LIBS");
  Result<std::shared_ptr<MgpuRuntime>> r = MgpuRuntime::open();
  std::string skip;
  if (!r.ok())
    skip = "no CUDA device here (" + r.error() + ")";
  else if (!dir || !*dir)
    skip = "DSA_GPU_STEP_LIBS is not set (scripts/gpu-check.sh --libs prepares the step libraries)";
  if (!skip.empty()) {
    if (deviceRequired())
      FAIL() << "DSA_REQUIRE_CUDA_DEVICE=1: " << skip;
    GTEST_SKIP() << skip;
  }
  std::shared_ptr<MgpuRuntime> rt = r.take();
  std::cout << "[ info ] device " << rt->device().ordinal << ": " << rt->device().name << " (sm_"
            << rt->device().computeMajor << rt->device().computeMinor << ")\n";
  Result<std::unique_ptr<GpuStepLibrary>> lib = GpuStepLibrary::open(rt, std::string(dir) + "/window-layer.json");
  ASSERT_TRUE(lib.ok()) << lib.error();
  const WindowLayer layer(700);
  std::vector<GpuValue> args = {Tensor(), Tensor::scalarI64(0)};
  Tensor ring = bf16({WindowLayer::W, WindowLayer::hd}, std::vector<float>(WindowLayer::W * WindowLayer::hd, 0.0f));
  Result<GpuTensor> deviceRing = GpuTensor::upload(*rt, ring);
  ASSERT_TRUE(deviceRing.ok()) << deviceRing.error();
  args.push_back(*deviceRing);
  for (const Tensor &w : layer.weights) { // uploaded once, shared by every step
    Result<GpuTensor> g = GpuTensor::upload(*rt, w);
    ASSERT_TRUE(g.ok()) << g.error();
    args.push_back(*g);
  }
  Result<GpuSequence> seq = GpuSequence::create(**lib, WindowLayer::function, args);
  ASSERT_TRUE(seq.ok()) << seq.error();
  for (auto [start, s] : {std::pair<int64_t, int64_t>{0, 12}, {12, 1}, {13, 1}}) {
    const std::string step = "step at " + std::to_string(start);
    Tensor x = bf16({s, WindowLayer::dim}, randomBf16(s * WindowLayer::dim, 1.0f, 800 + static_cast<uint32_t>(start)));
    Result<std::vector<Tensor>> want = layer.reference(x, start, ring);
    ASSERT_TRUE(want.ok()) << want.error();
    Result<std::vector<GpuValue>> got = seq->step({{0, x}, {1, Tensor::scalarI64(start)}});
    ASSERT_TRUE(got.ok()) << step << ": " << got.error();
    ASSERT_EQ(got->size(), 2u);
    // The ring stays on the device: the next step's argument is this step's result buffer.
    ASSERT_NE(seq->state(2), nullptr);
    EXPECT_EQ(seq->state(2)->device()->ptr(), (*got)[1].device()->ptr()) << step;
    Result<Tensor> out = (*got)[0].toHost();
    Result<Tensor> newRing = (*got)[1].toHost();
    ASSERT_TRUE(out.ok() && newRing.ok()) << (out.ok() ? newRing.error() : out.error());
    expectWithinTolerance(*out, (*want)[0], step + " attn_out");
    expectWithinTolerance(*newRing, (*want)[1], step + " ring");
    ring = (*want)[1];
  }
  EXPECT_EQ((*lib)->leakedAllocations(), 0u);
  // A failed run-time check on the device path: a two-token step at start_pos 14 (decode steps are one token).
  Tensor two = bf16({2, WindowLayer::dim}, randomBf16(2 * WindowLayer::dim, 1.0f, 900));
  const DevicePtr before = seq->state(2)->device()->ptr();
  Result<std::vector<GpuValue>> bad = seq->step({{0, two}, {1, Tensor::scalarI64(14)}});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.error(), "run-time check failed: dsa.window_kv: a step of more than one token"))
      << bad.error();
  EXPECT_EQ(seq->state(2)->device()->ptr(), before) << "a failed step leaves the state";
}
