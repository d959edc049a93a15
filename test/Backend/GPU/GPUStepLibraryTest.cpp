//===- GPUStepLibraryTest.cpp - GPU step libraries: the emitter, and its libraries on the test double driver ----===//
//
// emitGPUStepLibrary on test/Conversion/DSAToGPU/Inputs/window-layer.mlir (the tiny golden's L0 geometry):
//   - the shared object's undefined dynamic symbols are exactly MLIR 22's mgpu* entry points that the lowering
//     references (listed here by hand from the host IR: module load/unload/get-function, launch, stream
//     create/sync/destroy, alloc/free/copy) plus libc's abort, and this executable exports every one of them;
//   - the description parses with the MLIR-free parser (backend, chip, format, signature, state binding, step roles);
//   - without a driver, opening it through the runtime fails with the no-driver error;
//   - on the test double driver (FakeCudaDriver.c: host memory, launches recorded, nothing executed) a sequence of
//     prefill 12 + decode 12 + decode 13 runs the generated host code: every kernel family of the layer is launched,
//     the ring is threaded on the "device" (no copy back), shapes are right, nothing leaks (allocations, streams,
//     the module after close); a two-token step at start_pos > 0 fails with the run-time check's code and message
//     (dsa/ABI/RuntimeErrors.h, as the CPU backend reports it), frees the call's memory and leaves the
//     sequence state; an injected launch failure and a module that does not load are clear errors; a device of
//     another architecture is refused; bad arguments are named.
// One failed check (cache_write's capacity) gives the CPU backend's error on the GPU library: same code, message.
// A returned select of two buffers (the index_k slot's shape) over several steps: the generated code frees the
// buffer it made when it returns the argument (no leak for the runtime's sweep to find), never the argument.
// The kernels' numerics on a GPU: GpuStepRuntimeTest's device test (scripts/gpu-check.sh).
// Needs the CUDA toolkit (ptxas, libdevice) at /usr/local/cuda or $CUDA_HOME: skipped without it.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "GpuTestSupport.h"

#include "dsa/Backend/CPU/CPUModule.h"
#include "dsa/ABI/RuntimeErrors.h"
#include "dsa/Backend/GPU/GPUStepLibrary.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Runtime/CPU/StepLibrary.h"
#include "dsa/Runtime/Cuda/GpuStepLibrary.h"
#include "Runtime/Cuda/KernelLibrary.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/FileSystem.h"

#include <fstream>

#include <dlfcn.h>
#include <set>
#include <sstream>

using namespace dsa;
using namespace dsa::cuda;
using namespace dsa::gputest;

namespace {

std::string cudaToolkit() {
  for (const char *v : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *p = std::getenv(v); p && *p)
      return p;
  return "/usr/local/cuda";
}

bool haveToolkit() {
  return std::ifstream(cudaToolkit() + "/nvvm/libdevice/libdevice.10.bc").good() &&
         std::ifstream(cudaToolkit() + "/bin/ptxas").good();
}

std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A fresh temporary directory.
std::string tempDir(const std::string &tag) {
  llvm::SmallString<128> dir;
  EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("dsa-gpu-" + tag, dir));
  return dir.str().str();
}

/// The undefined (non-weak) and defined dynamic symbols of a shared object.
void dynamicSymbols(const std::string &path, std::set<std::string> &undefined, std::set<std::string> &defined) {
  auto obj = llvm::object::ObjectFile::createObjectFile(path);
  ASSERT_TRUE(static_cast<bool>(obj)) << llvm::toString(obj.takeError());
  auto *elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(obj->getBinary());
  ASSERT_NE(elf, nullptr);
  for (const llvm::object::ELFSymbolRef &sym : elf->getDynamicSymbolIterators()) {
    auto name = sym.getName();
    auto flags = sym.getFlags();
    ASSERT_TRUE(static_cast<bool>(name) && static_cast<bool>(flags));
    if (name->empty())
      continue;
    if (*flags & llvm::object::SymbolRef::SF_Undefined) {
      if (!(*flags & llvm::object::SymbolRef::SF_Weak))
        undefined.insert(name->str());
    } else {
      defined.insert(name->str());
    }
  }
}

class GPUStepLibraryTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    if (!haveToolkit())
      return;
    mlir::DialectRegistry registry;
    mlir::registerAllDialects(registry);
    registry.insert<mlir::dsa::DSADialect>();
    context = new mlir::MLIRContext(registry);
    const std::string text = readText(std::string(DSA_SOURCE_DIR) +
                                      "/test/Conversion/DSAToGPU/Inputs/window-layer.mlir");
    module = new mlir::OwningOpRef<mlir::ModuleOp>(mlir::parseSourceString<mlir::ModuleOp>(text, context));
    dir = tempDir("lib");
    Result<std::string> json = gpu::emitGPUStepLibrary(**module, dir, "window-layer");
    if (!json) {
      emitError = json.error();
      return;
    }
    jsonPath = *json;
  }
  static void TearDownTestSuite() {
    delete module;
    module = nullptr;
    delete context;
    context = nullptr;
    if (!dir.empty())
      llvm::sys::fs::remove_directories(dir);
  }
  void SetUp() override {
    if (!haveToolkit())
      GTEST_SKIP() << "no CUDA toolkit (libdevice, ptxas) at " << cudaToolkit();
    ASSERT_TRUE(module && *module) << "window-layer.mlir does not parse";
    ASSERT_TRUE(emitError.empty()) << emitError;
    FakeDriver::reset();
  }

  static std::shared_ptr<MgpuRuntime> fakeRuntime() {
    Result<std::shared_ptr<MgpuRuntime>> rt = MgpuRuntime::open(0, FakeDriver::path());
    EXPECT_TRUE(rt.ok()) << rt.error();
    return rt.ok() ? rt.take() : nullptr;
  }

  /// The layer's arguments with device weights and ring (zeros), x and start_pos to be set per step.
  static std::vector<GpuValue> layerArgs(MgpuRuntime &rt, const WindowLayer &layer) {
    std::vector<GpuValue> args = {Tensor(), Tensor::scalarI64(0)};
    args.push_back(*GpuTensor::upload(rt, bf16({WindowLayer::W, WindowLayer::hd},
                                               std::vector<float>(WindowLayer::W * WindowLayer::hd, 0.0f))));
    for (const Tensor &w : layer.weights)
      args.push_back(*GpuTensor::upload(rt, w));
    return args;
  }

  static mlir::MLIRContext *context;
  static mlir::OwningOpRef<mlir::ModuleOp> *module;
  static std::string dir, jsonPath, emitError;
};
mlir::MLIRContext *GPUStepLibraryTest::context = nullptr;
mlir::OwningOpRef<mlir::ModuleOp> *GPUStepLibraryTest::module = nullptr;
std::string GPUStepLibraryTest::dir, GPUStepLibraryTest::jsonPath, GPUStepLibraryTest::emitError;

} // namespace

TEST_F(GPUStepLibraryTest, UndefinedSymbolsAreExactlyTheMgpuEntryPointsAndLibc) {
  std::set<std::string> undefined, defined;
  dynamicSymbols(dir + "/window-layer.so", undefined, defined);
  // From the host IR of the window layer (format=bin): what MLIR 22's gpu-to-llvm and the cubin's load/unload
  // constructors call, and abort: a failed run-time check with no dsa_cpu_fail_hook set (or one that returns).
  const std::set<std::string> mgpu = {"mgpuLaunchKernel",      "mgpuMemAlloc",         "mgpuMemFree",
                                      "mgpuMemcpy",            "mgpuModuleGetFunction", "mgpuModuleLoad",
                                      "mgpuModuleUnload",      "mgpuStreamCreate",      "mgpuStreamDestroy",
                                      "mgpuStreamSynchronize"};
  std::set<std::string> expected = mgpu;
  expected.insert("abort");
  EXPECT_EQ(undefined, expected);
  for (const std::string &name : mgpu)
    EXPECT_NE(dlsym(RTLD_DEFAULT, name.c_str()), nullptr) << name << " is not exported by this executable";
  // It exports its entry points only (dsa/ABI/StepLibrary.h): no function body, dealloc_helper, module global or
  // constructor of the gpu.binary's load/unload pair.
  EXPECT_EQ(defined, (std::set<std::string>{"_mlir_layer0", "dsa_cpu_fail_hook", "dsa_step_library_signature"}));
}

/// The description against the library on the test double driver: its compiled-in signature (CPU and GPU fields)
/// and its file's digest. Each open is an error naming the field, and nothing stays loaded: no module in the
/// driver, the .so not in the process.
TEST_F(GPUStepLibraryTest, ADescriptionThatDisagreesWithItsLibraryIsRefusedAndNothingStaysLoaded) {
  std::shared_ptr<MgpuRuntime> rt = fakeRuntime();
  ASSERT_TRUE(rt);
  const std::string text = readText(jsonPath);
  const std::string so = dir + "/window-layer.so";
  const std::string bad = dir + "/disagreeing.json";
  auto isLoaded = [](const std::string &path) {
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (handle)
      dlclose(handle);
    return handle != nullptr;
  };
  auto replacedOnce = [](std::string t, const std::string &from, const std::string &to) {
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos)
      t.replace(at, from.size(), to);
    return t;
  };
  const std::string digestKey = "\"library_sha256\": \"";
  const size_t at = text.find(digestKey);
  ASSERT_NE(at, std::string::npos);
  const std::string digest = text.substr(at + digestKey.size(), 64);
  struct Case {
    std::string from, to, error;
  } cases[] = {
      // args[2] is the ring, tensor<8x32xbf16>.
      {"\"shape\": [\n            8,\n            32\n          ],\n          \"type\": \"tensor<8x32xbf16>\"",
       "\"shape\": [8, 16], \"type\": \"tensor<8x16xbf16>\"",
       "layer0: argument 2: description says tensor<8x16xbf16>, library was compiled for tensor<8x32xbf16> "
       "(dimension 1)"},
      // sm_90a passes the device check (the test double is an sm_90); the library was compiled for sm_90.
      {"\"chip\": \"sm_90\"", "\"chip\": \"sm_90a\"", "chip: description says sm_90a, library was compiled for sm_90"},
      {"\"binary_format\": \"bin\"", "\"binary_format\": \"fatbin\"",
       "binary_format: description says fatbin, library was compiled for bin"},
      {"\"name\": \"layer0\"", "\"name\": \"layer1\"", "layer1: the library has no such function"},
      {digestKey + digest, digestKey + std::string(64, '0'),
       "'" + so + "' has SHA-256 " + digest + ", the description records " + std::string(64, '0')},
      {"\"backend\": \"cuda\"", "\"backend\": \"cuda\", \"device\": 0", "device: unknown key"},
  };
  for (const Case &c : cases) {
    std::string changed = replacedOnce(text, c.from, c.to);
    if (c.to.find("layer1") != std::string::npos)
      changed = replacedOnce(changed, "\"symbol\": \"_mlir_layer0\"", "\"symbol\": \"_mlir_layer1\"");
    std::ofstream(bad, std::ios::trunc) << changed;
    Result<std::unique_ptr<GpuStepLibrary>> lib = GpuStepLibrary::open(rt, bad);
    ASSERT_FALSE(lib.ok()) << c.to;
    EXPECT_TRUE(contains(lib.error(), c.error)) << lib.error();
    EXPECT_EQ(FakeDriver::loadedModules(), 0) << c.to;
    EXPECT_FALSE(isLoaded(so)) << c.to;
  }
  // A truncated copy of the .so: refused at its digest, before the dynamic loader maps it.
  const std::string bytes = readText(so);
  const std::string truncated = dir + "/truncated.so";
  std::ofstream(truncated, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  std::ofstream(bad, std::ios::trunc) << replacedOnce(text, "\"library\": \"window-layer.so\"",
                                                      "\"library\": \"truncated.so\"");
  Result<std::unique_ptr<GpuStepLibrary>> lib = GpuStepLibrary::open(rt, bad);
  ASSERT_FALSE(lib.ok());
  EXPECT_TRUE(contains(lib.error(), "'" + truncated + "' has SHA-256 ")) << lib.error();
  EXPECT_TRUE(contains(lib.error(), "the description records " + digest)) << lib.error();
  EXPECT_FALSE(isLoaded(truncated));
  EXPECT_EQ(FakeDriver::loadedModules(), 0);
}

TEST_F(GPUStepLibraryTest, PtxFormatLoadsThroughTheJitEntryPoint) {
  const std::string d = tempDir("isa");
  gpu::GPUCompileOptions options;
  options.format = "isa";
  Result<std::string> json = gpu::emitGPUStepLibrary(**module, d, "isa", options);
  ASSERT_TRUE(json.ok()) << json.error();
  std::set<std::string> undefined, defined;
  dynamicSymbols(d + "/isa.so", undefined, defined);
  EXPECT_TRUE(undefined.count("mgpuModuleLoadJIT"));
  EXPECT_FALSE(undefined.count("mgpuModuleLoad"));
  EXPECT_NE(dlsym(RTLD_DEFAULT, "mgpuModuleLoadJIT"), nullptr);
  Result<GpuStepLibraryDescription> desc = parseGpuStepLibrary(readText(*json));
  ASSERT_TRUE(desc.ok()) << desc.error();
  EXPECT_EQ(desc->binaryFormat, "isa");
  // PTX is JIT-compiled by the driver: a newer device takes it.
  FakeDriver::setComputeCapability(10, 0);
  std::shared_ptr<MgpuRuntime> rt = fakeRuntime();
  ASSERT_TRUE(rt);
  Result<std::unique_ptr<GpuStepLibrary>> lib = GpuStepLibrary::open(rt, *json);
  EXPECT_TRUE(lib.ok()) << lib.error();
  llvm::sys::fs::remove_directories(d);
}

TEST_F(GPUStepLibraryTest, DescriptionParsesWithTheMlirFreeParser) {
  Result<GpuStepLibraryDescription> d = parseGpuStepLibrary(readText(jsonPath));
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->backend, "cuda");
  EXPECT_EQ(d->chip, "sm_90");
  EXPECT_EQ(d->binaryFormat, "bin");
  EXPECT_EQ(d->base.library, "window-layer.so");
  EXPECT_EQ(d->base.targetCpu, "x86-64");
  ASSERT_EQ(d->base.functions.size(), 1u);
  const runtime::FunctionSignature &f = d->base.functions[0];
  EXPECT_EQ(f.name, "layer0");
  ASSERT_EQ(f.args.size(), 11u);
  EXPECT_EQ(f.args[0].elem, ElementType::BF16);
  EXPECT_EQ(f.args[0].shape, (std::vector<int64_t>{-1, 64}));
  EXPECT_FALSE(f.args[1].isTensor);
  EXPECT_EQ(f.args[3].elem, ElementType::F32);
  ASSERT_EQ(f.numResults, 2u);
  EXPECT_EQ(f.results[1].shape, (std::vector<int64_t>{8, 32}));
  ASSERT_EQ(f.state.size(), 1u);
  EXPECT_EQ(f.state[0].arg, 2);
  EXPECT_EQ(f.state[0].result, 1);
  EXPECT_EQ(f.step.x, 0);
  EXPECT_EQ(f.step.startPos, 1);
  EXPECT_EQ(f.step.output, 0);
  // dsa-to-gpu rejects a chunk at start_pos > 0, so the runtime splits it (a window-only CPU library: true).
  EXPECT_FALSE(f.step.chunked);
}

TEST_F(GPUStepLibraryTest, WithoutADriverOpeningFailsClearly) {
  Result<std::shared_ptr<MgpuRuntime>> rt = MgpuRuntime::open();
  if (rt.ok())
    GTEST_SKIP() << "a CUDA driver is present here";
  EXPECT_TRUE(contains(rt.error(), "CUDA driver not available") || contains(rt.error(), "cuInit failed"))
      << rt.error();
  EXPECT_FALSE(GpuStepLibrary::open(nullptr, jsonPath).ok());
}

TEST_F(GPUStepLibraryTest, SequenceRunsTheHostCodeOnTheTestDoubleDriver) {
  std::shared_ptr<MgpuRuntime> rt = fakeRuntime();
  ASSERT_TRUE(rt);
  const long before = FakeDriver::liveAllocations();
  {
    Result<std::unique_ptr<GpuStepLibrary>> lib = GpuStepLibrary::open(rt, jsonPath);
    ASSERT_TRUE(lib.ok()) << lib.error();
    EXPECT_EQ(FakeDriver::loadedModules(), 1) << "the constructor loads the kernels";
    Result<std::unique_ptr<GpuStepLibrary>> twice = GpuStepLibrary::open(rt, jsonPath);
    ASSERT_FALSE(twice.ok());
    EXPECT_TRUE(contains(twice.error(), "is already loaded in this process")) << twice.error();

    const WindowLayer layer(700);
    Result<GpuSequence> seq = GpuSequence::create(**lib, "layer0", layerArgs(*rt, layer));
    ASSERT_TRUE(seq.ok()) << seq.error();
    // Every launch of the generated host code passes the parameter count of the kernel ABI that KernelLibrary
    // keeps independently (KernelLibrary::parameterBytes, checked against the committed PTX by CudaLoaderTest).
    std::vector<MgpuRuntime::Launch> launches;
    rt->setLaunchObserver([&](const MgpuRuntime::Launch &l) { launches.push_back(l); });
    const long downloadsBefore = FakeDriver::downloads();
    DevicePtr previousRing = seq->state(2)->device()->ptr();
    for (auto [start, s] : {std::pair<int64_t, int64_t>{0, 12}, {12, 1}, {13, 1}}) {
      const long launchesBefore = FakeDriver::launches();
      Tensor x = bf16({s, 64}, randomBf16(s * 64, 1.0f, 800 + static_cast<uint32_t>(start)));
      Result<std::vector<GpuValue>> r = seq->step({{0, x}, {1, Tensor::scalarI64(start)}});
      ASSERT_TRUE(r.ok()) << r.error();
      ASSERT_EQ(r->size(), 2u);
      EXPECT_EQ((*r)[0].device()->shape(), (std::vector<int64_t>{s, 64}));
      EXPECT_EQ((*r)[1].device()->shape(), (std::vector<int64_t>{8, 32}));
      EXPECT_NE((*r)[1].device()->ptr(), previousRing) << "ring_update writes a new buffer";
      EXPECT_EQ(seq->state(2)->device()->ptr(), (*r)[1].device()->ptr()) << "the ring stays on the device";
      previousRing = (*r)[1].device()->ptr();
      // Every kernel family of a window-only layer (Kernels.mlir) is launched by one step.
      std::set<std::string> launched;
      for (long i = launchesBefore; i < FakeDriver::launches(); ++i)
        launched.insert(FakeDriver::launchName(i));
      EXPECT_EQ(launched, (std::set<std::string>{"dsa_positions", "dsa_gemm_bf16", "dsa_rms_norm_bf16",
                                                 "dsa_apply_rope", "dsa_act_quant_fp8", "dsa_ring_update",
                                                 "dsa_window_indices", "dsa_sparse_attn"}))
          << "step at " << start;
    }
    EXPECT_EQ(FakeDriver::downloads(), downloadsBefore) << "no step copied anything back to the host";
    rt->setLaunchObserver(nullptr);
    ASSERT_FALSE(launches.empty());
    for (const MgpuRuntime::Launch &l : launches) {
      const std::vector<unsigned> abi = KernelLibrary::parameterBytes(l.kernel);
      ASSERT_FALSE(abi.empty()) << l.kernel << " is not in KernelLibrary's ABI table";
      EXPECT_EQ(l.paramsCount, abi.size()) << l.kernel;
      for (int d = 0; d < 3; ++d)
        EXPECT_GE(l.grid[d], 1) << l.kernel << " grid dimension " << d;
    }
    EXPECT_EQ(FakeDriver::liveStreams(), 0);
    EXPECT_EQ((*lib)->leakedAllocations(), 0u);

    // A two-token step at start_pos 14: decode steps are one token (a run-time check of the generated code, reported
    // with the CPU backend's code and message: window_kv's check comes first in the decomposition).
    const long liveBefore = FakeDriver::liveAllocations();
    const DevicePtr ring = seq->state(2)->device()->ptr();
    Result<std::vector<GpuValue>> bad =
        seq->step({{0, bf16({2, 64}, randomBf16(128, 1.0f, 5))}, {1, Tensor::scalarI64(14)}});
    ASSERT_FALSE(bad.ok());
    const auto multiToken = static_cast<int32_t>(::dsa::abi::RuntimeError::WindowKvMultiTokenDecode);
    EXPECT_EQ(bad.error(), std::string("gpu step library @layer0: run-time check failed: ") +
                               ::dsa::abi::runtimeErrorMessage(multiToken));
    std::cout << "[ info ] " << bad.error() << "\n";
    EXPECT_EQ(FakeDriver::liveAllocations(), liveBefore) << "the failed call's memory is freed";
    EXPECT_EQ(seq->state(2)->device()->ptr(), ring) << "a failed step leaves the state";

    // An injected launch failure.
    FakeDriver::failLaunchAt(FakeDriver::launches() + 3);
    Result<std::vector<GpuValue>> failed =
        seq->step({{0, bf16({1, 64}, randomBf16(64, 1.0f, 6))}, {1, Tensor::scalarI64(14)}});
    ASSERT_FALSE(failed.ok());
    EXPECT_TRUE(contains(failed.error(), "gpu step library @layer0: mgpuLaunchKernel(dsa_")) << failed.error();
    EXPECT_TRUE(contains(failed.error(), "failed: CUDA_ERROR_LAUNCH_FAILED (719)")) << failed.error();
    std::cout << "[ info ] " << failed.error() << "\n";
    EXPECT_EQ(FakeDriver::liveAllocations(), liveBefore);
    FakeDriver::failLaunchAt(-1);
    Result<std::vector<GpuValue>> recovered =
        seq->step({{0, bf16({1, 64}, randomBf16(64, 1.0f, 6))}, {1, Tensor::scalarI64(14)}});
    EXPECT_TRUE(recovered.ok()) << recovered.error();

    // Arguments are checked and named.
    std::vector<GpuValue> args = layerArgs(*rt, layer);
    args[0] = bf16({1, 32}, randomBf16(32, 1.0f, 7));
    Result<std::vector<GpuValue>> wrong = (*lib)->run("layer0", args);
    ASSERT_FALSE(wrong.ok());
    EXPECT_TRUE(contains(wrong.error(), "argument #0 has shape [1, 32], expected tensor<?x64xbf16> (dimension 1)"))
        << wrong.error();
    args[0] = bf16({1, 64}, randomBf16(64, 1.0f, 7));
    args[1] = Tensor::fromInts(ElementType::I32, {}, {0});
    EXPECT_TRUE(contains((*lib)->run("layer0", args).error(), "argument #1 has element type i32, expected i64"));
    // start_pos is passed by value: a device buffer there is refused, naming the argument and its shape.
    Result<GpuTensor> onDevice = GpuTensor::upload(*rt, Tensor::fromInts(ElementType::I64, {1}, {0}));
    ASSERT_TRUE(onDevice.ok()) << onDevice.error();
    args[1] = *onDevice;
    const std::string scalarError = (*lib)->run("layer0", args).error();
    EXPECT_TRUE(contains(scalarError, "argument #1 is a device buffer of shape [1], expected a host scalar (i64)"))
        << scalarError;
    args[1] = Tensor::fromInts(ElementType::I32, {}, {0});
    EXPECT_TRUE(contains((*lib)->run("layer1", args).error(), "no function @layer1 (it has @layer0)"));
    EXPECT_TRUE(contains(seq->step({{2, Tensor()}}).error(), "argument #2 is state"));
  }
  EXPECT_EQ(FakeDriver::loadedModules(), 0) << "the destructor unloads the kernels";
  EXPECT_EQ(FakeDriver::liveAllocations(), before) << "every device buffer is freed";
}

TEST_F(GPUStepLibraryTest, KernelsThatDoNotLoadAndOtherDevicesAreRefused) {
  std::shared_ptr<MgpuRuntime> rt = fakeRuntime();
  ASSERT_TRUE(rt);
  FakeDriver::failModuleLoad(1);
  Result<std::unique_ptr<GpuStepLibrary>> lib = GpuStepLibrary::open(rt, jsonPath);
  ASSERT_FALSE(lib.ok());
  EXPECT_TRUE(contains(lib.error(), "its kernels did not load: mgpuModuleLoad: cuModuleLoadDataEx failed: "
                                    "CUDA_ERROR_INVALID_IMAGE (200)"))
      << lib.error();
  FakeDriver::failModuleLoad(0);
  FakeDriver::setComputeCapability(8, 0);
  std::shared_ptr<MgpuRuntime> older = fakeRuntime();
  ASSERT_TRUE(older);
  lib = GpuStepLibrary::open(older, jsonPath);
  ASSERT_FALSE(lib.ok());
  EXPECT_TRUE(contains(lib.error(), "was compiled for sm_90 (cubin); device 0 is dsa fake CUDA device (sm_80): "
                                    "recompile with chip=sm_80"))
      << lib.error();
}

TEST_F(GPUStepLibraryTest, EmitterErrors) {
  const std::string d = tempDir("err");
  gpu::GPUCompileOptions options;
  EXPECT_TRUE(contains(gpu::emitGPUStepLibrary(**module, d, "a/b", options).error(), "base name 'a/b'"));
  options.chip = "gfx90a";
  EXPECT_TRUE(contains(gpu::emitGPUStepLibrary(**module, d, "x", options).error(), "chip: expected"));
  options.chip = "sm_90";
  options.format = "elf";
  EXPECT_TRUE(contains(gpu::emitGPUStepLibrary(**module, d, "x", options).error(), "format 'elf'"));
  options.format = "bin";
  options.cudaPath = "/nonexistent-cuda";
  Result<std::string> noToolkit = gpu::emitGPUStepLibrary(**module, d, "x", options);
  EXPECT_TRUE(contains(noToolkit.error(), "libdevice not found at '/nonexistent-cuda")) << noToolkit.error();
  auto f16 = mlir::parseSourceString<mlir::ModuleOp>(
      "func.func @f(%a: tensor<4xf16>) -> tensor<4xf16> { return %a : tensor<4xf16> }", context);
  ASSERT_TRUE(f16);
  Result<std::string> bad = gpu::emitGPUStepLibrary(*f16, d, "x");
  EXPECT_TRUE(contains(bad.error(), "gpu backend: @f argument #0 has type tensor<4xf16>, which the GPU backend "
                                    "cannot pass"))
      << bad.error();
  llvm::sys::fs::remove_directories(d);
}

TEST_F(GPUStepLibraryTest, CPUSequenceRunsAGpuLibraryThroughTheRunner) {
  std::shared_ptr<MgpuRuntime> rt = fakeRuntime();
  ASSERT_TRUE(rt);
  const long before = FakeDriver::liveAllocations();
  {
    Result<std::unique_ptr<GpuStepLibrary>> opened = GpuStepLibrary::open(rt, jsonPath);
    ASSERT_TRUE(opened.ok()) << opened.error();
    std::shared_ptr<const GpuStepLibrary> lib = opened.take();
    const runtime::FunctionSignature *sig = lib->signature("layer0");
    ASSERT_NE(sig, nullptr);
    ASSERT_TRUE(sig->step.present());
    const WindowLayer layer(700);
    std::map<size_t, runtime::HostValue> weights;
    for (size_t i = 0; i < layer.weights.size(); ++i)
      weights.emplace(3 + i, runtime::HostBuffer::fromTensor(layer.weights[i]));
    Result<runtime::Sequence> seq = runtime::Sequence::start(*sig, makeSequenceRunner(lib, "layer0"), weights);
    ASSERT_TRUE(seq.ok()) << seq.error();
    Result<std::vector<Tensor>> prefill = seq->run(bf16({12, 64}, randomBf16(12 * 64, 1.0f, 1)), 0);
    ASSERT_TRUE(prefill.ok()) << prefill.error();
    EXPECT_EQ((*prefill)[0].shape(), (std::vector<int64_t>{12, 64}));
    EXPECT_EQ(FakeDriver::liveAllocations(), before + 8) << "the eight weights stay on the device, nothing else";
    // Three tokens at start_pos 12: the CPU sequence splits them into three one-token steps of the GPU library.
    const long launches = FakeDriver::launches();
    Result<std::vector<Tensor>> three = seq->run(bf16({3, 64}, randomBf16(3 * 64, 1.0f, 2)), 12);
    ASSERT_TRUE(three.ok()) << three.error();
    EXPECT_EQ((*three)[0].shape(), (std::vector<int64_t>{3, 64}));
    EXPECT_EQ((*three)[1].shape(), (std::vector<int64_t>{8, 32}));
    const long perStep = FakeDriver::launches() - launches;
    EXPECT_EQ(perStep % 3, 0) << "three identical decode steps";
    EXPECT_EQ(seq->position(), 15);
    EXPECT_EQ(FakeDriver::liveAllocations(), before + 8) << "weights uploaded once";
    EXPECT_EQ(lib->leakedAllocations(), 0u);
  }
  EXPECT_EQ(FakeDriver::liveAllocations(), before);
}

// The compressed roles (test/Conversion/DSAToGPU/Inputs/compressed-layers.mlir: L2 kv+index source ratio 2, L3
// ratio-2 consumer, L4 ratio-1 source and candidate source, L5 indexer with candidates) as one stack on the test
// double driver, through Sequence (step roles, state with its init, shared slots from layer to layer): prefill 12,
// decode 12. Checks the host code's plumbing (the host top-k downloads and uploads included), not numbers: every
// launch names a kernel of KernelLibrary's ABI table with its parameter count, output shapes, no leaks.
TEST_F(GPUStepLibraryTest, CompressedStackRunsOnTheTestDoubleDriver) {
  const std::string text =
      readText(std::string(DSA_SOURCE_DIR) + "/test/Conversion/DSAToGPU/Inputs/compressed-layers.mlir");
  auto compressed = mlir::parseSourceString<mlir::ModuleOp>(text, context);
  ASSERT_TRUE(compressed);
  const std::string d = tempDir("compressed");
  Result<std::string> json = gpu::emitGPUStepLibrary(*compressed, d, "compressed");
  ASSERT_TRUE(json.ok()) << json.error();
  std::shared_ptr<MgpuRuntime> rt = fakeRuntime();
  ASSERT_TRUE(rt);
  const long before = FakeDriver::liveAllocations();
  std::vector<MgpuRuntime::Launch> launches;
  rt->setLaunchObserver([&](const MgpuRuntime::Launch &l) { launches.push_back(l); });
  {
    Result<std::unique_ptr<GpuStepLibrary>> opened = GpuStepLibrary::open(rt, *json);
    ASSERT_TRUE(opened.ok()) << opened.error();
    std::shared_ptr<const GpuStepLibrary> lib = opened.take();
    std::vector<runtime::Sequence> stack;
    for (const char *name : {"attention_L2", "attention_L3", "attention_L4", "attention_L5"}) {
      const runtime::FunctionSignature *sig = lib->signature(name);
      ASSERT_NE(sig, nullptr) << name;
      ASSERT_TRUE(sig->step.present()) << name;
      std::set<int64_t> roles = {sig->step.x, sig->step.startPos};
      for (const runtime::StateBinding &b : sig->state)
        roles.insert(b.arg);
      for (const runtime::StateBinding &b : sig->step.shared)
        roles.insert(b.arg);
      std::map<size_t, runtime::HostValue> weights; // small deterministic values of each static weight shape
      for (size_t a = 0; a < sig->args.size(); ++a) {
        if (roles.count(static_cast<int64_t>(a)))
          continue;
        const runtime::ValueKind &k = sig->args[a];
        int64_t n = 1;
        for (int64_t s : k.shape)
          n *= s;
        weights.emplace(a, runtime::HostBuffer::fromTensor(Tensor::fromFloats(
                               k.elem, k.shape, randomBf16(static_cast<size_t>(n), 0.1f, static_cast<uint32_t>(a)))));
      }
      Result<runtime::Sequence> seq = runtime::Sequence::start(*sig, makeSequenceRunner(lib, name), weights);
      ASSERT_TRUE(seq.ok()) << name << ": " << seq.error();
      stack.push_back(seq.take());
    }
    Result<runtime::Sequence::SlotSet> slots = runtime::Sequence::initialSlots(stack.front().signature());
    ASSERT_TRUE(slots.ok()) << slots.error();
    for (auto [start, s] : {std::pair<int64_t, int64_t>{0, 12}, {12, 1}}) {
      Tensor x = bf16({s, 64}, randomBf16(s * 64, 1.0f, 40 + static_cast<uint32_t>(start)));
      for (runtime::Sequence &seq : stack) {
        Result<std::vector<Tensor>> r = seq.run(x, start, &*slots);
        ASSERT_TRUE(r.ok()) << seq.signature().name << " at " << start << ": " << r.error();
        EXPECT_EQ((*r)[0].shape(), (std::vector<int64_t>{s, 64})) << seq.signature().name;
      }
    }
    EXPECT_EQ(lib->leakedAllocations(), 0u);
  }
  rt->setLaunchObserver(nullptr);
  std::set<std::string> kernels;
  for (const MgpuRuntime::Launch &l : launches) {
    const std::vector<unsigned> abi = KernelLibrary::parameterBytes(l.kernel);
    ASSERT_FALSE(abi.empty()) << l.kernel << " is not in KernelLibrary's ABI table";
    EXPECT_EQ(l.paramsCount, abi.size()) << l.kernel;
    kernels.insert(l.kernel);
  }
  // The compressed families the four roles need (compressor, fp4 quantisers, caches, indexer, candidates, top-k).
  for (const char *k : {"dsa_compress_state", "dsa_compress_pool", "dsa_fp4_quant", "dsa_cache_write",
                        "dsa_indexer_scores", "dsa_compress_visibility", "dsa_apply_candidates",
                        "dsa_candidate_block_scores", "dsa_candidate_mask", "dsa_topk_map"})
    EXPECT_TRUE(kernels.count(k)) << k << " was never launched by the compressed stack";
  std::cout << "[ info ] " << launches.size() << " launches of " << kernels.size() << " kernels\n";
  EXPECT_EQ(FakeDriver::liveAllocations(), before);
  llvm::sys::fs::remove_directories(d);
}

// A returned select of two buffers (the index_k slot republication's shape: cond ? a buffer the function made : an
// argument buffer) on the test double driver, several steps: a step that returns the argument frees the buffer it
// made (the generated code, not the runtime's leak sweep: leakedAllocations stays 0), a step that returns the new
// buffer hands it over, the argument is never freed, and nothing is left on the device afterwards.
TEST_F(GPUStepLibraryTest, ReturnedSelectFreesTheUnselectedBufferItMade) {
  const char *text = R"mlir(
func.func @slot_step(%x: tensor<4x32xbf16>, %start_pos: i64, %slot: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %c0 = arith.constant 0 : i64
  %publish = arith.cmpi sgt, %start_pos, %c0 : i64
  %fresh = arith.extf %x : tensor<4x32xbf16> to tensor<4x32xf32>
  %r = arith.select %publish, %fresh, %slot : tensor<4x32xf32>
  return %r : tensor<4x32xf32>
}
)mlir";
  auto m = mlir::parseSourceString<mlir::ModuleOp>(text, context);
  ASSERT_TRUE(m);
  const std::string d = tempDir("select");
  Result<std::string> json = gpu::emitGPUStepLibrary(*m, d, "select");
  ASSERT_TRUE(json.ok()) << json.error();
  std::shared_ptr<MgpuRuntime> rt = fakeRuntime();
  ASSERT_TRUE(rt);
  const long before = FakeDriver::liveAllocations();
  {
    Result<std::unique_ptr<GpuStepLibrary>> lib = GpuStepLibrary::open(rt, *json);
    ASSERT_TRUE(lib.ok()) << lib.error();
    Result<GpuTensor> slot =
        GpuTensor::upload(*rt, Tensor::fromFloats(ElementType::F32, {4, 32}, std::vector<float>(128, 0.5f)));
    ASSERT_TRUE(slot.ok()) << slot.error();
    const DevicePtr slotPtr = slot->ptr();
    const long baseline = FakeDriver::liveAllocations();
    const Tensor x = bf16({4, 32}, randomBf16(128, 1.0f, 77));
    for (int64_t start : {0, 4, 0, 5, 6, 0}) {
      {
        const long launchesBefore = FakeDriver::launches();
        Result<std::vector<GpuValue>> r = lib->get()->run("slot_step", {x, Tensor::scalarI64(start), *slot});
        ASSERT_TRUE(r.ok()) << "start_pos " << start << ": " << r.error();
        ASSERT_EQ(r->size(), 1u);
        EXPECT_EQ(FakeDriver::launches(), launchesBefore + 1) << "one extf launch";
        const GpuTensor *out = (*r)[0].device();
        ASSERT_NE(out, nullptr);
        if (start > 0) {
          EXPECT_NE(out->ptr(), slotPtr) << "start_pos " << start << " returns the buffer it made";
          // x's upload is freed after the call; the returned buffer is the one
          // allocation left.
          EXPECT_EQ(FakeDriver::liveAllocations(), baseline + 1) << "start_pos " << start;
        } else {
          EXPECT_EQ(out->ptr(), slotPtr) << "start_pos 0 returns the argument slot";
          EXPECT_EQ(FakeDriver::liveAllocations(), baseline) << "start_pos 0 freed the buffer it did not return";
        }
        EXPECT_EQ(lib->get()->leakedAllocations(), 0u) << "start_pos " << start;
      }
      EXPECT_EQ(FakeDriver::liveAllocations(), baseline) << "after dropping step " << start << "'s result";
    }
    EXPECT_EQ(slot->ptr(), slotPtr);
  }
  EXPECT_EQ(FakeDriver::liveAllocations(), before);
  llvm::sys::fs::remove_directories(d);
}

// One check/error-code mechanism for both backends: a cache_write that overflows its cache (start_pos 60 // 4 + 2
// rows > 16) fails on the GPU step library (test double driver) with the CPU backend's code and message, frees the
// call's device memory, and the library runs the next (valid) step.
TEST_F(GPUStepLibraryTest, FailedCheckReportsTheCpuBackendsCodeAndMessage) {
  const char *text = R"mlir(
func.func @cache(%c: tensor<16x8xbf16>, %r: tensor<?x8xbf16>, %sp: i64) -> tensor<16x8xbf16> {
  %y = dsa.cache_write %c, %r, %sp {ratio = 4 : i64} : (tensor<16x8xbf16>, tensor<?x8xbf16>, i64) -> tensor<16x8xbf16>
  return %y : tensor<16x8xbf16>
}
)mlir";
  auto m = mlir::parseSourceString<mlir::ModuleOp>(text, context);
  ASSERT_TRUE(m);
  const std::string expected =
      std::string("run-time check failed: ") +
      ::dsa::abi::runtimeErrorMessage(static_cast<int32_t>(::dsa::abi::RuntimeError::CacheWriteOverflow));
  const Tensor cache = bf16({16, 8}, randomBf16(128, 1.0f, 31));
  const Tensor rows = bf16({2, 8}, randomBf16(16, 1.0f, 32));

  // The CPU backend (JIT) on the same function.
  Result<std::unique_ptr<cpu::CPUModule>> cpuModule = cpu::compileForCPU(*m, cpu::CPUCompileOptions());
  ASSERT_TRUE(cpuModule.ok()) << cpuModule.error();
  Result<std::vector<Tensor>> onCpu = (*cpuModule)->call("cache", {cache, rows, Tensor::scalarI64(60)});
  ASSERT_FALSE(onCpu.ok());
  EXPECT_TRUE(contains(onCpu.error(), expected)) << onCpu.error();

  const std::string d = tempDir("check");
  Result<std::string> json = gpu::emitGPUStepLibrary(*m, d, "check");
  ASSERT_TRUE(json.ok()) << json.error();
  std::shared_ptr<MgpuRuntime> rt = fakeRuntime();
  ASSERT_TRUE(rt);
  const long before = FakeDriver::liveAllocations();
  {
    Result<std::unique_ptr<GpuStepLibrary>> lib = GpuStepLibrary::open(rt, *json);
    ASSERT_TRUE(lib.ok()) << lib.error();
    const long launchesBefore = FakeDriver::launches();
    Result<std::vector<GpuValue>> bad = lib->get()->run("cache", {cache, rows, Tensor::scalarI64(60)});
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error(), "gpu step library @cache: " + expected);
    EXPECT_EQ(FakeDriver::launches(), launchesBefore) << "the check comes before the launch";
    EXPECT_EQ(FakeDriver::liveAllocations(), before) << "the failed call's memory is freed";
    EXPECT_EQ(lib->get()->leakedAllocations(), 0u);
    Result<std::vector<GpuValue>> good = lib->get()->run("cache", {cache, rows, Tensor::scalarI64(56)});
    ASSERT_TRUE(good.ok()) << good.error();
    EXPECT_EQ(FakeDriver::launches(), launchesBefore + 1) << "one cache_write launch";
  }
  EXPECT_EQ(FakeDriver::liveAllocations(), before);
  llvm::sys::fs::remove_directories(d);
}
