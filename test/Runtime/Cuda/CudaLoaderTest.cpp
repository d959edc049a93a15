//===- CudaLoaderTest.cpp - the CUDA driver loader (runtime/cuda/Driver.h) ----------------------------------===//
//
// Without a GPU (this project's CI): the error paths — no driver, a library that is not a driver, the toolkit's
// link stub — the kernel parameter packing, and KernelLibrary's parameter lists against the committed PTX. With a driver and a device (scripts/gpu-check.sh on the GPU
// machine): the no-driver test is skipped with a message, and the device tests load hand-written PTX and launch
// it. Set DSA_REQUIRE_CUDA_DEVICE=1 to turn the device tests' skip into a failure (gpu-check.sh does).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Runtime/Cuda/Driver.h"
#include "Runtime/Cuda/KernelLibrary.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

using namespace dsa::cuda;

namespace {

bool deviceRequired() {
  const char *v = std::getenv("DSA_REQUIRE_CUDA_DEVICE");
  return v && std::string(v) == "1";
}

/// A context on device 0, or why there is none.
dsa::Result<std::unique_ptr<Context>> openDevice() { return Context::open(0); }

#define DSA_OPEN_DEVICE_OR_SKIP(ctx)                                                                              \
  auto ctx##Result = openDevice();                                                                                \
  if (!ctx##Result.ok()) {                                                                                        \
    if (deviceRequired())                                                                                         \
      FAIL() << "DSA_REQUIRE_CUDA_DEVICE=1 but no device: " << ctx##Result.error();                               \
    GTEST_SKIP() << "no CUDA device here (" << ctx##Result.error() << ")";                                       \
  }                                                                                                               \
  std::unique_ptr<Context> ctx = ctx##Result.take()

// Adds 1.0f to p[i] for i < n: (u64 p, u32 n), one thread per element. Assembles with ptxas for sm_70 .. sm_120.
const char *kAddOnePtx = R"(
.version 7.0
.target sm_70
.address_size 64

.visible .entry dsa_test_add_one(
	.param .u64 dsa_test_add_one_p,
	.param .u32 dsa_test_add_one_n
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [dsa_test_add_one_p];
	ld.param.u32 	%r1, [dsa_test_add_one_n];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.u32 	%p1, %r5, %r1;
	@%p1 bra 	$L_done;
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r5, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.f32 	%f1, [%rd4];
	add.rn.f32 	%f2, %f1, 0f3F800000;
	st.global.f32 	[%rd4], %f2;
$L_done:
	ret;
}
)";

} // namespace

//===----------------------------------------------------------------------------------------------------------===//
// Without a driver
//===----------------------------------------------------------------------------------------------------------===//

TEST(CudaLoader, NoDriverGivesAClearError) {
  dsa::Result<std::shared_ptr<Driver>> d = Driver::load();
  if (d.ok()) {
    dsa::Result<int> n = (*d)->deviceCount();
    if (n.ok() && *n > 0)
      GTEST_SKIP() << "a CUDA driver and " << *n << " device(s) are present; the no-driver path is checked on "
                   << "machines without one";
    // A driver without devices: Context::create must say so.
    auto c = Context::create(d.take());
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().find("no CUDA device"), std::string::npos) << c.error();
    return;
  }
  // No driver at all (or one whose cuInit fails, e.g. CUDA_ERROR_NO_DEVICE): the message names the library or cuInit.
  const std::string &e = d.error();
  const bool noLibrary = e.find("CUDA driver not available: dlopen(libcuda.so.1) failed") != std::string::npos;
  const bool initFailed = e.find("cuInit failed: ") != std::string::npos;
  EXPECT_TRUE(noLibrary || initFailed) << e;
  // Context::open reports the same failure instead of crashing.
  auto c = Context::open();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), e);
}

TEST(CudaLoader, MissingLibraryNamesThePath) {
  auto d = Driver::load("/nonexistent/dsa-test/libcuda.so.1");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().find("CUDA driver not available: dlopen(/nonexistent/dsa-test/libcuda.so.1) failed: "),
            std::string::npos)
      << d.error();
}

TEST(CudaLoader, ALibraryThatIsNotADriverNamesTheMissingSymbol) {
  // libm is on every Linux machine and exports no CUDA entry point; the first one resolved is cuInit.
  auto d = Driver::load("libm.so.6");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error(), "libm.so.6 is not a usable CUDA driver: it has no symbol cuInit");
}

TEST(CudaLoader, ToolkitStubIsRejectedByCuInit) {
  // The toolkit's link stub exports every entry point but is not a driver: cuInit returns
  // CUDA_ERROR_STUB_LIBRARY (34 in cuda.h).
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::ifstream(stub).good())
    GTEST_SKIP() << stub << " is not installed";
  auto d = Driver::load(stub);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error(), std::string("cuInit failed: CUDA_ERROR_STUB_LIBRARY (34): ") + stub +
                           " is the CUDA toolkit's link stub, not a driver");
}

TEST(CudaLoader, ErrorNames) {
  // Values from cuda.h's cudaError_enum.
  EXPECT_EQ(errorName(100), "CUDA_ERROR_NO_DEVICE (100)");
  EXPECT_EQ(errorName(218), "CUDA_ERROR_INVALID_PTX (218)");
  EXPECT_EQ(errorName(700), "CUDA_ERROR_ILLEGAL_ADDRESS (700)");
  EXPECT_EQ(errorName(123456), "CUDA error (123456)");
}

TEST(CudaLoader, KernelArgsFollowTheMemrefCallingConvention) {
  KernelArgs a;
  a.memref(0x1000, 7).index(42).i32(-3).f32(1.5f).i64(-1);
  // memref<?xT>: allocated, aligned, offset 0, size, stride 1; then the scalars.
  ASSERT_EQ(a.size(), 9u);
  const uint64_t want[5] = {0x1000, 0x1000, 0, 7, 1};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(a.slot(i), want[i]) << "memref slot " << i;
    EXPECT_EQ(a.slotBytes(i), 8u);
  }
  EXPECT_EQ(a.slot(5), 42u);
  EXPECT_EQ(a.slotBytes(5), 8u);
  int32_t i32v;
  uint64_t s6 = a.slot(6);
  std::memcpy(&i32v, &s6, 4);
  EXPECT_EQ(i32v, -3);
  EXPECT_EQ(a.slotBytes(6), 4u);
  uint64_t s7 = a.slot(7);
  float f;
  std::memcpy(&f, &s7, 4);
  EXPECT_EQ(f, 1.5f);
  EXPECT_EQ(a.slotBytes(7), 4u);
  EXPECT_EQ(static_cast<int64_t>(a.slot(8)), -1);
  // params() points at the slots, in order.
  void **p = a.params();
  EXPECT_EQ(*static_cast<uint64_t *>(p[3]), 7u);
  EXPECT_EQ(*static_cast<int32_t *>(p[6]), -3);
}

//===----------------------------------------------------------------------------------------------------------===//
// With a device (skipped here)
//===----------------------------------------------------------------------------------------------------------===//

TEST(CudaDevice, HandWrittenPtxRuns) {
  DSA_OPEN_DEVICE_OR_SKIP(ctx);
  const DeviceInfo &dev = ctx->device();
  std::cout << "device " << dev.ordinal << ": " << dev.name << ", sm_" << dev.computeMajor << dev.computeMinor
            << ", " << (dev.totalMemoryBytes >> 20) << " MiB\n";
  EXPECT_GE(dev.computeMajor, 7);
  auto mod = ctx->loadModule(kAddOnePtx);
  ASSERT_TRUE(mod.ok()) << mod.error();
  auto f = mod->function("dsa_test_add_one");
  ASSERT_TRUE(f.ok()) << f.error();

  const unsigned n = 1000;
  std::vector<float> host(n);
  for (unsigned i = 0; i < n; ++i)
    host[i] = static_cast<float>(i) * 0.5f;
  auto buf = ctx->alloc(n * sizeof(float));
  ASSERT_TRUE(buf.ok()) << buf.error();
  ASSERT_TRUE(buf->upload(host.data(), n * sizeof(float)).ok());
  // Not a memref kernel: pack (u64 pointer, u32 n) by hand.
  KernelArgs args;
  args.i64(static_cast<int64_t>(buf->ptr())).i32(static_cast<int32_t>(n));
  LaunchShape shape;
  shape.grid = {(n + 127) / 128, 1, 1};
  shape.block = {128, 1, 1};
  dsa::Status st = ctx->launch(*f, shape, args);
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_TRUE(ctx->synchronize().ok());
  std::vector<float> out(n, -1.0f);
  ASSERT_TRUE(buf->download(out.data(), n * sizeof(float)).ok());
  for (unsigned i = 0; i < n; ++i)
    ASSERT_EQ(out[i], static_cast<float>(i) * 0.5f + 1.0f) << "element " << i;
}

TEST(CudaDevice, ErrorsAreReportedNotFatal) {
  DSA_OPEN_DEVICE_OR_SKIP(ctx);
  // PTX that does not parse: the driver's JIT error comes back in the message.
  auto bad = ctx->loadModule(".version 7.0\n.target sm_70\n.address_size 64\nthis is not ptx\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("cuModuleLoadDataEx failed: "), std::string::npos) << bad.error();
  // A kernel the module does not have.
  auto mod = ctx->loadModule(kAddOnePtx);
  ASSERT_TRUE(mod.ok()) << mod.error();
  auto f = mod->function("no_such_kernel");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().find("module has no kernel 'no_such_kernel'"), std::string::npos) << f.error();
  // Transfers larger than the buffer, an empty grid.
  auto buf = ctx->alloc(16);
  ASSERT_TRUE(buf.ok());
  std::vector<char> big(32);
  EXPECT_FALSE(buf->upload(big.data(), big.size()).ok());
  EXPECT_FALSE(buf->download(big.data(), big.size()).ok());
  auto g = mod->function("dsa_test_add_one");
  ASSERT_TRUE(g.ok());
  KernelArgs args;
  args.i64(static_cast<int64_t>(buf->ptr())).i32(4);
  LaunchShape empty;
  empty.grid = {0, 1, 1};
  empty.block = {32, 1, 1};
  dsa::Status st = ctx->launch(*g, empty, args);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("empty grid or block"), std::string::npos) << st.error();
}

TEST(CudaDevice, BadOrdinalIsAnError) {
  DSA_OPEN_DEVICE_OR_SKIP(ctx);
  auto d = Driver::load();
  ASSERT_TRUE(d.ok());
  auto c = Context::create(d.take(), 1 << 20);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("out of range"), std::string::npos) << c.error();
}

//===----------------------------------------------------------------------------------------------------------===//
// The kernel ABI: KernelLibrary's parameter lists against the committed PTX (no GPU needed)
//===----------------------------------------------------------------------------------------------------------===//

TEST(CudaKernelAbi, ParameterListsMatchTheCommittedPtx) {
  const std::string path = std::string(DSA_CUDA_KERNELS_DIR) + "/dsa_kernels.sm_90.ptx";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string ptx = ss.str();
  for (const std::string &name : KernelLibrary::kernelNames()) {
    // ".visible .entry NAME(\n\t.param .u64 .ptr .align 1 NAME_param_0,\n ... )": one line per parameter.
    const std::string head = ".visible .entry " + name + "(";
    size_t at = ptx.find(head);
    ASSERT_NE(at, std::string::npos) << name << " is not an entry of " << path;
    size_t end = ptx.find(')', at);
    std::vector<unsigned> got;
    std::istringstream lines(ptx.substr(at + head.size(), end - at - head.size()));
    for (std::string line; std::getline(lines, line);) {
      if (line.find(".param") == std::string::npos)
        continue;
      if (line.find(".u64") != std::string::npos || line.find(".b64") != std::string::npos ||
          line.find(".f64") != std::string::npos)
        got.push_back(8);
      else if (line.find(".b32") != std::string::npos || line.find(".u32") != std::string::npos ||
               line.find(".f32") != std::string::npos)
        got.push_back(4);
      else
        ADD_FAILURE() << name << ": unexpected parameter line '" << line << "'";
    }
    EXPECT_EQ(got, KernelLibrary::parameterBytes(name)) << name;
  }
  EXPECT_TRUE(KernelLibrary::parameterBytes("no_such_kernel").empty());
}
