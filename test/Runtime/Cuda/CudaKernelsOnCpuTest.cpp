//===- CudaKernelsOnCpuTest.cpp - every GPU kernel on the host emulator, at its real block and grid sizes -------===//
//
// Without a GPU, this runs EVERY kernel of the GPU kernel library (compiler/lib/Conversion/DSAToGPU/Kernels.mlir;
// the table core/include/dsa/ABI/GpuKernels.def) on the host, with the launch shapes a GPU gets, and compares the
// outputs bit for bit with the reference kernels (dsa::kernels), which the golden pins. At test time it lowers the
// kernel library with `dsa-opt --dsa-gpu-to-host-emulation` and upstream's passes to LLVM, compiles it with
// mlir-translate and llc into a shared object and runs it on the host emulator (HostEmulator.h): every work item of
// a block is a coroutine, gpu.barrier a block-wide rendezvous, workgroup memory one buffer per block, and every
// memory access is checked for data races between work items and blocks. The launches go through KernelLibrary,
// the same launcher (argument packing, grids, the block of the kernel table) as on a GPU (CudaKernelsTest).
//
// Coverage: EveryKernel/KernelOnHost.RunsAtItsBlockSizeBitExact/<kernel> is instantiated from the kernel table
// itself, so a kernel added to GpuKernels.def without a host test here fails; each instance checks that its test
// launched the kernel at the table's block size over more than one block, with no race reported.
// Negative: one mutant per gpu.barrier of the library (the barrier deleted) must be reported as a data race, and
// planted kernels (Inputs/emulator-negative.mlir) show divergent barriers and cross-block races are errors.
//
// bf16: arith-expand include-bf16 expands the kernels' truncations, but x86 code generation still converts a bf16
// value that crosses blocks (a phi of two loads, e.g. dsa_concat_rows_bf16) by widening it to f32 and rounding it
// back. The objects are therefore compiled for a fixed CPU, the x86-64 baseline (llc -mcpu=x86-64: no AVX512_BF16,
// whose vcvtneps2bf16 flushes denormals, whatever the host), where that rounding is a call of __truncsfbf2: defined
// here with core/lib/Numerics' rule (round to nearest even, denormals rounded, NaN quiet with its sign and top
// payload), checked bit for bit by Truncsfbf2ShimIsNumericsRounding. libdevice's __nv_fsqrt_rn is llvm.sqrt (both IEEE
// round-to-nearest). exp/cos/sin are evaluated in f64 as on the GPU, here by glibc (libdevice there).
//
// Skipped (GTEST_SKIP) when the tools are not found: dsa-opt (this build's, or $DSA_OPT), mlir-translate and llc
// ($DSA_LLVM_TOOLS_DIR, /usr/lib/llvm-22/bin or PATH) and cc on PATH (the GPU machine has no MLIR).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "Runtime/Cuda/HostEmulator.h"
#include "Runtime/Cuda/KernelLibrary.h"

#include "dsa/ABI/GpuKernels.h"
#include "dsa/Core/Rope.h"
#include "dsa/Kernels/CompressKernels.h"
#include "dsa/Kernels/Kernels.h"
#include "dsa/Numerics/BF16.h"
#include "dsa/Numerics/Bits.h"
#include "dsa/Numerics/TopK.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <tuple>

using namespace dsa;
using dsa::ElementType;
using dsa::Tensor;
using dsa::cuda::DevicePtr;
using dsa::cuda::HostEmulator;
using dsa::cuda::KernelArgs;
using dsa::cuda::KernelLibrary;
using dsa::cuda::LaunchShape;

namespace {

using I = int64_t;

std::string findTool(const std::string &name) {
  std::vector<std::string> dirs;
  if (const char *d = std::getenv("DSA_LLVM_TOOLS_DIR"); d && *d)
    dirs.push_back(d);
  dirs.push_back("/usr/lib/llvm-22/bin");
  if (const char *path = std::getenv("PATH")) {
    std::string p = path;
    for (size_t at = 0; at <= p.size();) {
      size_t end = p.find(':', at);
      if (end == std::string::npos)
        end = p.size();
      if (end > at)
        dirs.push_back(p.substr(at, end - at));
      at = end + 1;
    }
  }
  for (const std::string &d : dirs) {
    std::string f = d + "/" + name;
    if (access(f.c_str(), X_OK) == 0)
      return f;
  }
  return "";
}

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// The kernel library's text with, appended inside its gpu.module, one copy of each kernel that synchronises per
/// gpu.barrier, renamed `<kernel>__no_barrier<i>`, with its i-th barrier deleted (the mutants of MutantsWithout*).
/// `mutants` receives (kernel, barrier index) of each.
std::string withBarrierMutants(const std::string &lib, std::vector<std::pair<std::string, int>> &mutants) {
  std::string extra;
  for (const dsa::abi::GpuKernelInfo &k : dsa::abi::kGpuKernels) {
    const std::string head = std::string("gpu.func @") + k.symbol + "(";
    const size_t at = lib.find(head);
    if (at == std::string::npos)
      continue;
    const size_t end = lib.find("\n  }\n", at) + 5;
    const std::string text = lib.substr(at, end - at);
    int barriers = 0;
    for (size_t p = text.find("gpu.barrier"); p != std::string::npos; p = text.find("gpu.barrier", p + 1))
      ++barriers;
    for (int b = 0; b < barriers; ++b) {
      std::string m = text;
      size_t p = m.find("gpu.barrier");
      for (int i = 0; i < b; ++i)
        p = m.find("gpu.barrier", p + 1);
      m.erase(p, std::string("gpu.barrier").size());
      const std::string name = std::string(k.symbol) + "__no_barrier" + std::to_string(b);
      m.replace(0, head.size(), "gpu.func @" + name + "(");
      extra += "  " + m;
      mutants.emplace_back(k.symbol, b);
    }
  }
  const size_t close = lib.rfind('}');
  return lib.substr(0, close) + extra + lib.substr(close);
}

/// What the launches of one test did, per kernel of the table.
struct LaunchRecord {
  uint64_t launches = 0, maxBlocks = 0;
  bool tableBlock = true;
};

class KernelsOnCpu : public ::testing::Test {
public:
  static void SetUpTestSuite() {
    const std::string src = DSA_SOURCE_DIR;
    std::string opt;
    if (const char *e = std::getenv("DSA_OPT"); e && *e)
      opt = e;
#ifdef DSA_OPT_PATH
    if (opt.empty() && access(DSA_OPT_PATH, X_OK) == 0)
      opt = DSA_OPT_PATH;
#endif
    std::string translate = findTool("mlir-translate"), llc = findTool("llc"), cc = findTool("cc");
    if (opt.empty() || translate.empty() || llc.empty() || cc.empty()) {
      skipReason = "dsa-opt (this build's or $DSA_OPT), mlir-translate, llc or cc not found";
      return;
    }
    std::string lib = readFile(src + "/compiler/lib/Conversion/DSAToGPU/Kernels.mlir");
    std::string planted = readFile(src + "/test/Runtime/Cuda/Inputs/emulator-negative.mlir");
    if (lib.empty() || planted.empty()) {
      loadError = "cannot read Kernels.mlir or Inputs/emulator-negative.mlir";
      return;
    }
    const std::string module = withBarrierMutants(lib, mutants) + "\n" + planted;
    // x86 code generation rounds a bf16 value carried across blocks back from f32 with __truncsfbf2 (the header
    // comment): core/lib/Numerics' rounding (NaN: the top 16 bits with the quiet bit 0x0040; otherwise add 0x7FFF plus
    // the lowest kept bit, keep the top 16 bits), defined here so that no libgcc / compiler-rt version decides it,
    // and a bit-level entry for the test of it. libdevice's IEEE square root is llvm.sqrt.
    const std::string shim =
        "define bfloat @__truncsfbf2(float %f) {\n  %u = bitcast float %f to i32\n"
        "  %a = and i32 %u, 2147483647\n  %nan = icmp ugt i32 %a, 2139095040\n  %h = lshr i32 %u, 16\n"
        "  %odd = and i32 %h, 1\n  %r0 = add i32 %u, 32767\n  %r1 = add i32 %r0, %odd\n"
        "  %r2 = lshr i32 %r1, 16\n  %q = or i32 %h, 64\n  %r = select i1 %nan, i32 %q, i32 %r2\n"
        "  %t = trunc i32 %r to i16\n  %b = bitcast i16 %t to bfloat\n  ret bfloat %b\n}\n"
        "define i32 @dsa_test_truncsfbf2_bits(i32 %u) {\n  %f = bitcast i32 %u to float\n"
        "  %b = call bfloat @__truncsfbf2(float %f)\n  %t = bitcast bfloat %b to i16\n"
        "  %z = zext i16 %t to i32\n  ret i32 %z\n}\n"
        "declare float @llvm.sqrt.f32(float)\n"
        "define float @__nv_fsqrt_rn(float %x) {\n  %r = call float @llvm.sqrt.f32(float %x)\n  ret float %r\n}\n";
    const std::string pipeline =
        "--dsa-gpu-to-host-emulation --arith-expand=include-bf16=true --convert-scf-to-cf "
        "--convert-math-to-llvm --expand-strided-metadata --lower-affine --convert-index-to-llvm "
        "--finalize-memref-to-llvm --convert-func-to-llvm --convert-arith-to-llvm --convert-cf-to-llvm "
        "--reconcile-unrealized-casts";
    // CTest runs every test in a process of its own: the shared object is built once per content (the module,
    // the shim, the pipeline, the tools and this build's dsa-opt) into the build tree and reused.
    struct stat os {};
    stat(opt.c_str(), &os);
    const std::string key = module + shim + pipeline + opt + translate + llc + cc + std::to_string(os.st_size) + "@" +
                            std::to_string(static_cast<long long>(os.st_mtime));
    std::ostringstream name;
    name << std::hex << std::hash<std::string>{}(key);
    std::string cache = DSA_HOST_KERNELS_CACHE;
    mkdir(cache.c_str(), 0755);
    const std::string object = cache + "/kernels-" + name.str() + ".so";
    if (access(object.c_str(), R_OK) != 0) {
      std::string tmpl = cache + "/build-XXXXXX";
      if (!mkdtemp(tmpl.data())) {
        loadError = "mkdtemp in " + cache + " failed";
        return;
      }
      dir = tmpl;
      std::ofstream(dir + "/k.mlir") << module;
      std::ofstream(dir + "/shim.ll") << shim;
      const std::string log = dir + "/build.log";
      const std::string cmd = "cd '" + dir + "' && '" + opt + "' k.mlir " + pipeline + " -o k.llvm.mlir && '" +
                              translate + "' --mlir-to-llvmir k.llvm.mlir -o k.ll && '" + llc +
                              "' -O2 -mcpu=x86-64 -filetype=obj -relocation-model=pic k.ll -o k.o && '" + llc +
                              "' -O2 -mcpu=x86-64 -filetype=obj -relocation-model=pic shim.ll -o shim.o && '" + cc +
                              "' -shared k.o shim.o -lm -o libkernels.so";
      if (std::system((cmd + " > '" + log + "' 2>&1").c_str()) != 0) {
        loadError = "building the kernels for the host emulator failed: " + readFile(log);
        return;
      }
      // Atomic: a concurrent test process sees the whole object or none.
      if (std::rename((dir + "/libkernels.so").c_str(), object.c_str()) != 0) {
        loadError = "cannot move the kernel library to " + object;
        return;
      }
      // Objects of earlier contents are stale.
      if (DIR *d = opendir(cache.c_str())) {
        while (dirent *e = readdir(d)) {
          const std::string f = e->d_name;
          if (f.rfind("kernels-", 0) == 0 && cache + "/" + f != object)
            std::remove((cache + "/" + f).c_str());
        }
        closedir(d);
      }
    }
    Result<std::unique_ptr<HostEmulator>> e = HostEmulator::load(object);
    if (!e.ok()) {
      loadError = e.error();
      return;
    }
    emu = e.take().release();
    lib_ = new KernelLibrary(
        KernelLibrary::withLauncher([](dsa::abi::GpuKernel k, const LaunchShape &shape, KernelArgs &args) -> Status {
          const dsa::abi::GpuKernelInfo &info = dsa::abi::gpuKernel(k);
          LaunchRecord &r = records[static_cast<size_t>(k)];
          ++r.launches;
          r.maxBlocks = std::max<uint64_t>(r.maxBlocks, uint64_t(shape.grid[0]) * shape.grid[1] * shape.grid[2]);
          for (int d = 0; d < 3; ++d)
            r.tableBlock = r.tableBlock && shape.block[d] == info.block[d];
          return emu->launch(redirect.empty() ? std::string(info.symbol) : std::string(info.symbol) + redirect, shape,
                             args);
        }));
  }
  static void TearDownTestSuite() {
    delete lib_;
    lib_ = nullptr;
    delete emu;
    emu = nullptr;
    if (!dir.empty())
      std::system(("rm -rf '" + dir + "'").c_str());
    dir.clear();
  }
  void SetUp() override {
    if (!skipReason.empty())
      GTEST_SKIP() << skipReason;
    ASSERT_TRUE(loadError.empty()) << loadError;
    records.clear();
    redirect.clear();
    emu->setRaceChecks(true);
    emu->setReverseOrder(false);
  }

  static const KernelLibrary &lib() { return *lib_; }

  static std::string dir, skipReason, loadError, redirect;
  static HostEmulator *emu;
  static KernelLibrary *lib_;
  static std::map<size_t, LaunchRecord> records;
  static std::vector<std::pair<std::string, int>> mutants;
};
std::string KernelsOnCpu::dir, KernelsOnCpu::skipReason, KernelsOnCpu::loadError, KernelsOnCpu::redirect;
HostEmulator *KernelsOnCpu::emu = nullptr;
KernelLibrary *KernelsOnCpu::lib_ = nullptr;
std::map<size_t, LaunchRecord> KernelsOnCpu::records;
std::vector<std::pair<std::string, int>> KernelsOnCpu::mutants;

DevicePtr P(const void *p) { return static_cast<DevicePtr>(reinterpret_cast<uintptr_t>(p)); }

#define OK(call)                                                                                                       \
  do {                                                                                                                 \
    Status st_ = (call);                                                                                               \
    ASSERT_TRUE(st_.ok()) << st_.error();                                                                              \
  } while (0)

bool sameBits(float a, float b) {
  if (std::isnan(a) && std::isnan(b))
    return true;
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

std::vector<uint16_t> toBits(const std::vector<float> &v) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    b[i] = numerics::f32ToBf16Bits(v[i]);
  return b;
}

std::vector<float> fromBits(const std::vector<uint16_t> &b) {
  std::vector<float> v(b.size());
  for (size_t i = 0; i < b.size(); ++i)
    v[i] = numerics::bf16BitsToF32(b[i]);
  return v;
}

void expectBitExact(const std::vector<float> &got, const Tensor &want, const std::string &what) {
  ASSERT_EQ(static_cast<int64_t>(got.size()), want.numElements()) << what;
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!sameBits(got[i], want.floats()[i]) && bad++ < 10)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", the reference gives " << want.floats()[i];
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " elements differ";
}

Tensor ok(Result<Tensor> r) {
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r.take() : Tensor();
}

std::vector<float> random(size_t n, float scale, uint32_t seed, bool bf16) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = bf16 ? numerics::roundBf16(u(rng)) : u(rng);
  return v;
}

/// bf16 scores full of ties (multiples of 0.5 below distinct/2) with a share of -inf.
std::vector<float> tied(size_t n, uint32_t seed, int distinct, double negInfShare) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> v(0, distinct - 1);
  std::bernoulli_distribution inf(negInfShare);
  std::vector<float> out(n);
  for (float &x : out)
    x = inf(rng) ? -std::numeric_limits<float>::infinity() : static_cast<float>(v(rng)) * 0.5f;
  return out;
}

Tensor bf16(std::vector<int64_t> shape, const std::vector<float> &v) {
  return Tensor::fromFloats(ElementType::BF16, std::move(shape), v);
}
Tensor f32(std::vector<int64_t> shape, const std::vector<float> &v) {
  return Tensor::fromFloats(ElementType::F32, std::move(shape), v);
}

//===----------------------------------------------------------------------===//
// One test body per kernel family (the registry below maps every kernel of the table to one)
//===----------------------------------------------------------------------===//

void positionsTest() {
  for (auto [start, count, stride] : {std::tuple<I, I, I>{0, 12, 1}, {5, 2 * 256 + 37, 3}, {I(1) << 40, 300, 2}}) {
    std::vector<int64_t> out(count, -7);
    OK(KernelsOnCpu::lib().positions(P(out.data()), start, count, stride));
    EXPECT_EQ(out, ok(kernels::positions(start, count, stride)).intVector()) << "start " << start;
  }
}

void gemmTest() {
  // linear: M, N not multiples of the 16x16 tile, K not a multiple of 8 (dotF32's tail) or of the 32-wide k tile,
  // K < 8 (tail only); grids of 1 to 12 blocks.
  const I shapes[][3] = {{37, 45, 100}, {16, 16, 32}, {3, 7, 5}, {20, 64, 72}};
  uint32_t seed = 1;
  for (auto &s : shapes) {
    const I M = s[0], N = s[1], K = s[2];
    std::vector<float> x = random(M * K, 2.0f, seed++, true), w = random(N * K, 0.5f, seed++, true);
    std::vector<uint16_t> xb = toBits(x), wb = toBits(w), y(M * N, 0xFFFF);
    OK(KernelsOnCpu::lib().linearBf16(P(xb.data()), P(wb.data()), P(y.data()), M, N, K));
    expectBitExact(fromBits(y), ok(kernels::linear(bf16({M, K}, x), bf16({N, K}, w))),
                   "linear " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
  }
  // grouped_output: the batched GEMM (grid z = groups).
  const I cases[][5] = {{13, 4, 32, 2, 20}, {1, 4, 32, 2, 16}, {17, 8, 12, 4, 18}};
  for (auto &c : cases) {
    const I s = c[0], H = c[1], hd = c[2], G = c[3], R = c[4], gw = H * hd / G;
    std::vector<float> o = random(s * H * hd, 1.0f, seed++, true), w = random(G * R * gw, 0.25f, seed++, true);
    std::vector<uint16_t> ob = toBits(o), wb = toBits(w), y(s * G * R, 0xFFFF);
    OK(KernelsOnCpu::lib().groupedOutput(P(ob.data()), P(wb.data()), P(y.data()), s, H, hd, G, R));
    expectBitExact(fromBits(y), ok(kernels::groupedOutput(bf16({s, H, hd}, o), bf16({G * R, gw}, w), G)),
                   "grouped_output s=" + std::to_string(s) + " G=" + std::to_string(G));
  }
}

void rmsNormTest() {
  uint32_t seed = 200;
  // D below, at and above the 256-thread block (each thread then writes a strided part), with dotF32's tail.
  for (I D : {7, 256, 300})
    for (float eps : {9.99999968e-21f, 1e-6f}) {
      const I rows = 3;
      std::vector<float> x = random(rows * D, 3.0f, seed++, true), w = random(D, 1.5f, seed++, true);
      for (I d = 0; d < D; ++d) {
        x[d] = numerics::roundBf16(x[d] * 1e-18f);
        x[D + d] = numerics::roundBf16(x[D + d] * 1e15f);
      }
      std::vector<uint16_t> xb = toBits(x), wb = toBits(w), y(rows * D, 0xFFFF);
      OK(KernelsOnCpu::lib().rmsNormBf16(P(xb.data()), P(wb.data()), P(y.data()), rows, D, eps));
      expectBitExact(fromBits(y), ok(kernels::rmsNorm(bf16({rows, D}, x), bf16({D}, w), eps)),
                     "rms_norm D=" + std::to_string(D));
    }
}

void applyRopeTest() {
  dsa::RopeParams plain;
  plain.ropeDim = 8;
  plain.theta = 1e4;
  dsa::RopeParams yarn = plain;
  yarn.theta = 4e4;
  yarn.yarn = dsa::YarnParams{32, 2.0, 32.0, 1.0};
  const std::vector<int64_t> positions = {0, 1, 7, 13, 100, 4095, 65535};
  uint32_t seed = 300;
  for (const dsa::RopeParams &p : {plain, yarn})
    for (bool inverse : {false, true}) {
      const I s = static_cast<I>(positions.size()), H = 4, hd = 32;
      std::vector<float> x = random(s * H * hd, 4.0f, seed++, true);
      std::vector<float> freqs = dsa::ropeFrequencies(p);
      std::vector<uint16_t> xb = toBits(x), y(s * H * hd, 0xFFFF);
      OK(KernelsOnCpu::lib().applyRope(P(xb.data()), P(positions.data()), P(freqs.data()), P(y.data()), s, H, hd,
                                       p.ropeDim, inverse));
      expectBitExact(
          fromBits(y),
          ok(kernels::applyRope(bf16({s, H, hd}, x), Tensor::fromInts(ElementType::I64, {s}, positions), p, inverse)),
          std::string("apply_rope") + (inverse ? " inverse" : ""));
    }
}

void actQuantTest() {
  // Every bf16 pattern once (NaN and inf included), then blocks spanning e4m3's subnormals to saturation.
  std::vector<float> x;
  for (uint32_t b = 0; b < 65536; ++b)
    x.push_back(numerics::bf16BitsToF32(static_cast<uint16_t>(b)));
  std::mt19937 rng(400);
  std::uniform_int_distribution<int> ex(-30, 12), mant(0, 127), sign(0, 1);
  for (int i = 0; i < 32 * 200; ++i) {
    float v = std::ldexp(1.0f + mant(rng) / 128.0f, ex(rng));
    x.push_back(numerics::roundBf16(sign(rng) ? -v : v));
  }
  for (I block : {32, 16}) {
    const I nblocks = static_cast<I>(x.size()) / block;
    std::vector<uint16_t> xb = toBits(x), y(x.size(), 0xFFFF);
    OK(KernelsOnCpu::lib().actQuantFp8(P(xb.data()), P(y.data()), nblocks, block));
    expectBitExact(fromBits(y), ok(kernels::actQuantFp8(bf16({nblocks, block}, x), block)),
                   "act_quant_fp8 block " + std::to_string(block));
  }
}

void ringUpdateTest() {
  const I W = 40, hd = 16; // 640 elements: three blocks, the last partial
  const I cases[][2] = {{0, 3}, {0, 40}, {0, 100}, {3, 1}, {45, 1}, {6, 5}};
  uint32_t seed = 500;
  for (auto &c : cases) {
    const I start = c[0], s = c[1];
    std::vector<float> ring = random(W * hd, 1.0f, seed++, true), kv = random(s * hd, 1.0f, seed++, true);
    std::vector<uint16_t> rb = toBits(ring), kb = toBits(kv), out(W * hd, 0xFFFF);
    OK(KernelsOnCpu::lib().ringUpdate(P(rb.data()), P(kb.data()), P(out.data()), W, hd, s, start));
    expectBitExact(fromBits(out), ok(kernels::ringUpdate(bf16({W, hd}, ring), bf16({s, hd}, kv), start)),
                   "ring_update start " + std::to_string(start) + " s " + std::to_string(s));
  }
}

void windowIndicesTest() {
  auto check = [](I start, I count, I W) {
    const I width = start == 0 ? std::min(count, W) : W;
    std::vector<int32_t> out(count * width, 77);
    OK(KernelsOnCpu::lib().windowIndices(P(out.data()), start, count, W, width));
    Tensor want = ok(kernels::windowIndices(start, count, W));
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(out[i], want.ints()[i]) << "start " << start << " count " << count << " W " << W << " at " << i;
  };
  for (I W : {4, 128})
    for (I count : {1, 9, 40})
      check(0, count, W);
  for (I start : {1, 12, 129, 1000})
    check(start, 1, 600); // 600 columns: three blocks
}

void sparseAttnTest() {
  // k above the 128-thread block (two strides in phases 1 and 3), hd below it (idle threads in phase 4).
  const I s = 3, H = 4, hd = 64, n = 150, k = 200;
  const float scale = 0.125f;
  std::vector<float> q = random(s * H * hd, 2.0f, 600, true), kv = random(n * hd, 2.0f, 601, true);
  std::vector<float> sink = {0.5f, -1.25f, 3.0f, -std::numeric_limits<float>::infinity()};
  std::mt19937 rng(602);
  std::uniform_int_distribution<int> pick(-1, n - 1);
  std::vector<int32_t> idx(s * k);
  for (auto &v : idx)
    v = pick(rng);
  for (I j = 0; j < k; ++j)
    idx[1 * k + j] = -1; // a row with no valid index: zeros
  std::vector<uint16_t> qb = toBits(q), kb = toBits(kv), o(s * H * hd, 0xFFFF);
  std::vector<float> scratch(s * H * k);
  OK(KernelsOnCpu::lib().sparseAttn(P(qb.data()), P(kb.data()), P(idx.data()), P(sink.data()), P(o.data()),
                                    P(scratch.data()), s, H, hd, n, k, scale));
  std::vector<int64_t> idx64(idx.begin(), idx.end());
  Tensor want = ok(kernels::sparseAttn(bf16({s, H, hd}, q), bf16({n, hd}, kv),
                                       Tensor::fromInts(ElementType::I32, {s, k}, idx64), f32({H}, sink), scale));
  expectBitExact(fromBits(o), want, "sparse_attn");
  for (I i = H * hd; i < 2 * H * hd; ++i)
    ASSERT_EQ(numerics::bf16BitsToF32(o[i]), 0.0f) << "the all -1 row must be zeros";
  // An index outside [-1, n) poisons its (t, h) rows with NaN instead of reading out of bounds.
  idx[0] = static_cast<int32_t>(n + 5);
  std::vector<uint16_t> o2(s * H * hd, 0xFFFF);
  OK(KernelsOnCpu::lib().sparseAttn(P(qb.data()), P(kb.data()), P(idx.data()), P(sink.data()), P(o2.data()),
                                    P(scratch.data()), s, H, hd, n, k, scale));
  for (I i = 0; i < H * hd; ++i)
    ASSERT_TRUE(std::isnan(numerics::bf16BitsToF32(o2[i]))) << "token 0 reads an out-of-range row";
  for (I i = H * hd; i < s * H * hd; ++i)
    ASSERT_EQ(o2[i], o[i]) << "other tokens are unaffected";
}

void linearF32AndCastsTest() {
  for (auto [Mr, N, K] : {std::tuple<I, I, I>{12, 32, 64}, {7, 5, 9}, {40, 20, 300}}) {
    std::vector<float> x = random(Mr * K, 3.0f, 1, false), w = random(N * K, 0.5f, 2, false), y(Mr * N);
    OK(KernelsOnCpu::lib().linearF32(P(x.data()), P(w.data()), P(y.data()), Mr, N, K));
    expectBitExact(y, ok(kernels::linear(f32({Mr, K}, x), f32({N, K}, w))), "linear f32 K=" + std::to_string(K));
  }
  std::vector<float> x;
  for (uint32_t b = 0; b < 65536; b += 3)
    for (uint32_t low : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu})
      x.push_back(numerics::f32FromBits((b << 16) | low));
  std::vector<uint16_t> y(x.size());
  OK(KernelsOnCpu::lib().truncfF32Bf16(P(x.data()), P(y.data()), static_cast<I>(x.size())));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_TRUE(sameBits(numerics::bf16BitsToF32(y[i]), numerics::roundBf16(x[i]))) << "truncf of " << x[i];
  std::vector<uint16_t> every(65536);
  for (uint32_t b = 0; b < 65536; ++b)
    every[b] = static_cast<uint16_t>(b);
  std::vector<float> wide(65536);
  OK(KernelsOnCpu::lib().extfBf16F32(P(every.data()), P(wide.data()), 65536));
  for (uint32_t b = 0; b < 65536; ++b)
    ASSERT_TRUE(sameBits(wide[b], numerics::bf16BitsToF32(static_cast<uint16_t>(b)))) << "extf of " << b;
}

void compressPoolTest() {
  uint32_t seed = 100;
  int64_t exact = 0, total = 0;
  for (I r : {2, 4})
    for (I hd : {32, 128})
      for (I s0 : {1, 5, 13}) {
        std::vector<float> ks(r * hd, 0.0f), ss(r * hd, -std::numeric_limits<float>::infinity());
        I start = 0, s = s0;
        for (int step = 0; step < 2 * static_cast<int>(r) + 1; ++step) {
          std::vector<float> kv = random(s * hd, 4.0f, seed++, false), sc = random(s * hd, 6.0f, seed++, false);
          if (step == 0 && s > 1)
            sc[hd + 1] = -std::numeric_limits<float>::infinity();
          const I groups = KernelLibrary::pooledRows(s, start, r);
          std::vector<float> nk(r * hd), ns(r * hd), pooled(std::max<I>(1, groups * hd));
          OK(KernelsOnCpu::lib().compressPool(P(kv.data()), P(sc.data()), P(ks.data()), P(ss.data()), P(pooled.data()),
                                              P(nk.data()), P(ns.data()), s, hd, r, start));
          auto want =
              kernels::compressPool(f32({s, hd}, kv), f32({s, hd}, sc), f32({r, hd}, ks), f32({r, hd}, ss), start, r);
          ASSERT_TRUE(want.ok()) << want.error();
          const std::string what = "r=" + std::to_string(r) + " hd=" + std::to_string(hd) +
                                   " start=" + std::to_string(start) + " s=" + std::to_string(s);
          ASSERT_EQ(want->pooled.dim(0), groups) << what;
          expectBitExact(nk, want->kvState, what + " kv_state");
          expectBitExact(ns, want->scoreState, what + " score_state");
          // exp: glibc's f64 exp rounded to f32 here, its expf in the reference; they may differ in the last bit.
          for (I i = 0; i < groups * hd; ++i) {
            const float w = want->pooled.floats()[i];
            ++total;
            exact += sameBits(pooled[i], w);
            EXPECT_LE(std::fabs(pooled[i] - w), 1e-5f * std::fabs(w) + 1e-30f) << what << " pooled " << i;
          }
          ks = want->kvState.floatVector();
          ss = want->scoreState.floatVector();
          start += s;
          s = 1;
        }
      }
  std::cout << "[ info ] compress_pool: " << exact << " of " << total << " pooled values bit-identical\n";
}

void fp4QuantTest() {
  std::vector<float> x;
  for (uint32_t b = 0; b < 65536; ++b)
    x.push_back(numerics::bf16BitsToF32(static_cast<uint16_t>(b)));
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> e(-140, 12);
  std::uniform_real_distribution<float> m(-2.0f, 2.0f);
  for (int i = 0; i < 32 * 256; ++i)
    x.push_back(numerics::roundBf16(std::ldexp(m(rng), e(rng))));
  const I n = static_cast<I>(x.size());
  for (bool e4m3 : {false, true}) {
    const I block = e4m3 ? 16 : 32;
    std::vector<uint16_t> in = toBits(x), out(n, 0xFFFF);
    OK(KernelsOnCpu::lib().fp4Quant(P(in.data()), P(out.data()), n / block, block, e4m3));
    Tensor t = bf16({n / block, block}, x);
    expectBitExact(fromBits(out), ok(e4m3 ? kernels::fp4QuantE4M3(t, block) : kernels::fp4QuantE8M0(t, block)),
                   e4m3 ? "fp4_quant_e4m3" : "fp4_quant_e8m0");
  }
}

void cacheWriteTest() {
  const I C = 32, w = 32; // 1024 elements: four blocks
  std::vector<float> cache = random(C * w, 2.0f, 9, true);
  for (auto [start, g, ratio] : {std::tuple<I, I, I>{0, 6, 2}, {13, 1, 2}, {62, 1, 2}, {31, 1, 1}, {0, 0, 4}}) {
    std::vector<float> rows = random(g * w, 1.0f, 10, true);
    std::vector<uint16_t> cb = toBits(cache), rb = toBits(rows), out(C * w, 0xFFFF);
    OK(KernelsOnCpu::lib().cacheWrite(P(cb.data()), P(rb.data()), P(out.data()), C, w, g, start, ratio));
    expectBitExact(fromBits(out), ok(kernels::cacheWrite(bf16({C, w}, cache), bf16({g, w}, rows), start, ratio)),
                   "cache_write start " + std::to_string(start));
  }
}

void indexerScoresTest() {
  struct Case {
    I s, IH, ihd, n, start, ratio;
  };
  uint32_t seed = 200;
  for (Case c : {Case{12, 2, 32, 32, 0, 2}, {1, 2, 32, 300, 299, 1}, {3, 2, 32, 8, 0, 4}, {5, 64, 128, 80, 0, 1}}) {
    std::vector<float> iq = random(c.s * c.IH * c.ihd, 2.0f, seed++, true), wt = random(c.s * c.IH, 3.0f, seed++, true),
                       keys = random(c.n * c.ihd, 2.0f, seed++, true);
    keys[0] = std::numeric_limits<float>::infinity();
    keys[c.ihd + 3] = std::numeric_limits<float>::quiet_NaN();
    keys[2 * c.ihd] = numerics::roundBf16(3e38f);
    const float scale = static_cast<float>(1.0 / std::sqrt(double(c.ihd)) / std::sqrt(double(c.IH)));
    const I width = KernelLibrary::scoresWidth(c.s, c.start, c.ratio);
    std::vector<uint16_t> qb = toBits(iq), wb = toBits(wt), kb = toBits(keys), out(c.s * width, 0xFFFF);
    OK(KernelsOnCpu::lib().indexerScores(P(qb.data()), P(wb.data()), P(kb.data()), P(out.data()), c.s, c.IH, c.ihd, c.n,
                                         c.start, c.ratio, scale));
    expectBitExact(fromBits(out),
                   ok(kernels::indexerScores(bf16({c.s, c.IH, c.ihd}, iq), bf16({c.s, c.IH}, wt),
                                             bf16({c.n, c.ihd}, keys), c.start, c.ratio, scale)),
                   "indexer_scores s=" + std::to_string(c.s) + " IH=" + std::to_string(c.IH));
  }
}

/// compress_visibility, select_candidate_blocks (block scores, the host's top-k set, the mask), apply_candidates,
/// indexer_topk (the widened scores, the host set, the mapping): as dsa-to-gpu chains them.
void candidatesChainTest() {
  uint32_t seed = 300;
  for (auto [s, start, ratio, bs, topk] : {std::tuple<I, I, I, I, I>{12, 0, 1, 2, 3},
                                           {12, 0, 2, 2, 3},
                                           {1, 600, 1, 3, 4},
                                           {13, 0, 4, 1, 2},
                                           {40, 0, 1, 4, 5}}) {
    const I width = KernelLibrary::scoresWidth(s, start, ratio), window = 8;
    const std::string what = "s=" + std::to_string(s) + " start=" + std::to_string(start);
    std::vector<float> raw = tied(s * width, seed++, 3, 0.3);
    if (s * width > 5)
      raw[5] = std::numeric_limits<float>::quiet_NaN();
    std::vector<uint16_t> rb = toBits(raw), vb(s * width, 0xFFFF);
    OK(KernelsOnCpu::lib().compressVisibility(P(rb.data()), P(vb.data()), s, width, start, ratio));
    Tensor vis = ok(kernels::compressVisibility(bf16({s, width}, raw), start, ratio));
    expectBitExact(fromBits(vb), vis, "compress_visibility " + what);
    const I nb = (width + bs - 1) / bs, k = std::min(topk, nb);
    std::vector<float> bsc(s * nb);
    OK(KernelsOnCpu::lib().candidateBlockScores(P(vb.data()), P(bsc.data()), s, width, bs, start, ratio));
    std::vector<int64_t> picks;
    for (I t = 0; t < s; ++t) {
      auto set = numerics::torchCpuTopkSet(bsc.data() + t * nb, nb, k);
      ASSERT_TRUE(set.ok()) << set.error();
      picks.insert(picks.end(), set->begin(), set->end());
    }
    std::vector<uint8_t> mb(s * width, 0xFF);
    OK(KernelsOnCpu::lib().candidateMask(P(bsc.data()), P(picks.data()), P(mb.data()), s, width, bs, k));
    Tensor wantMask = ok(kernels::selectCandidateBlocks(vis, start, ratio, topk, bs));
    for (I i = 0; i < s * width; ++i)
      ASSERT_EQ(static_cast<int64_t>(mb[i]), wantMask.ints()[i]) << "select_candidate_blocks " << what << " at " << i;
    std::vector<uint16_t> ab(s * width, 0xFFFF);
    OK(KernelsOnCpu::lib().applyCandidates(P(vb.data()), P(mb.data()), P(ab.data()), s * width));
    Tensor applied = ok(kernels::applyCandidates(vis, wantMask));
    expectBitExact(fromBits(ab), applied, "apply_candidates " + what);
    const I indexTopk = 6 + topk, kk = std::min(indexTopk, width);
    std::vector<float> wide(s * width);
    OK(KernelsOnCpu::lib().extfBf16F32(P(ab.data()), P(wide.data()), s * width));
    std::vector<int64_t> tp;
    for (I t = 0; t < s; ++t) {
      auto set = numerics::torchCpuTopkSet(wide.data() + t * width, width, kk);
      ASSERT_TRUE(set.ok()) << set.error();
      tp.insert(tp.end(), set->begin(), set->end());
    }
    std::vector<int32_t> idx(s * kk, 77);
    OK(KernelsOnCpu::lib().topkMap(P(tp.data()), P(idx.data()), s, kk, start, ratio, window));
    Tensor wantIdx = ok(kernels::indexerTopk(applied, start, ratio, indexTopk, window));
    for (I i = 0; i < s * kk; ++i)
      ASSERT_EQ(static_cast<int64_t>(idx[i]), wantIdx.ints()[i]) << "indexer_topk " << what << " at " << i;
  }
}

/// tensor.concat (no reference kernel: the definition, rows then columns).
void concatTest() {
  std::vector<float> a = random(8 * 32, 1.0f, 1700, true), b = random(10 * 32, 1.0f, 1701, true);
  std::vector<uint16_t> ab = toBits(a), bb = toBits(b), out(18 * 32, 0xFFFF);
  OK(KernelsOnCpu::lib().concatRowsBf16(P(ab.data()), P(bb.data()), P(out.data()), 8 * 32, 10 * 32));
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_EQ(out[i], i < ab.size() ? ab[i] : bb[i - ab.size()]) << i;
  const I rows = 30, wa = 8, wb = 6;
  std::vector<int32_t> ia(rows * wa), ib(rows * wb), io(rows * (wa + wb), 77);
  for (size_t i = 0; i < ia.size(); ++i)
    ia[i] = static_cast<int32_t>(i);
  for (size_t i = 0; i < ib.size(); ++i)
    ib[i] = -static_cast<int32_t>(i) - 1;
  OK(KernelsOnCpu::lib().concatColsI32(P(ia.data()), P(ib.data()), P(io.data()), rows, wa, wb));
  for (I r = 0; r < rows; ++r)
    for (I c = 0; c < wa + wb; ++c)
      ASSERT_EQ(io[r * (wa + wb) + c], c < wa ? ia[r * wa + c] : ib[r * wb + c - wa]) << r << "," << c;
}

/// The host test of every kernel of the table. A kernel added to GpuKernels.def without an entry here fails
/// EveryKernel/KernelOnHost.
const std::map<std::string, void (*)()> &kernelTests() {
  static const std::map<std::string, void (*)()> tests = {
      {"dsa_positions", positionsTest},
      {"dsa_gemm_bf16", gemmTest},
      {"dsa_rms_norm_bf16", rmsNormTest},
      {"dsa_apply_rope", applyRopeTest},
      {"dsa_act_quant_fp8", actQuantTest},
      {"dsa_ring_update", ringUpdateTest},
      {"dsa_window_indices", windowIndicesTest},
      {"dsa_sparse_attn", sparseAttnTest},
      {"dsa_linear_f32", linearF32AndCastsTest},
      {"dsa_extf_bf16_f32", linearF32AndCastsTest},
      {"dsa_truncf_f32_bf16", linearF32AndCastsTest},
      {"dsa_compress_state", compressPoolTest},
      {"dsa_compress_pool", compressPoolTest},
      {"dsa_fp4_quant", fp4QuantTest},
      {"dsa_cache_write", cacheWriteTest},
      {"dsa_indexer_scores", indexerScoresTest},
      {"dsa_compress_visibility", candidatesChainTest},
      {"dsa_apply_candidates", candidatesChainTest},
      {"dsa_candidate_block_scores", candidatesChainTest},
      {"dsa_candidate_mask", candidatesChainTest},
      {"dsa_topk_map", candidatesChainTest},
      {"dsa_concat_rows_bf16", concatTest},
      {"dsa_concat_cols_i32", concatTest},
  };
  return tests;
}

class KernelOnHost : public KernelsOnCpu, public ::testing::WithParamInterface<size_t> {};

} // namespace

TEST_P(KernelOnHost, RunsAtItsBlockSizeBitExact) {
  const dsa::abi::GpuKernelInfo &info = dsa::abi::kGpuKernels[GetParam()];
  auto it = kernelTests().find(info.symbol);
  ASSERT_NE(it, kernelTests().end()) << info.symbol << " (GpuKernels.def) has no host test in kernelTests()";
  it->second();
  const LaunchRecord &r = records[GetParam()];
  EXPECT_GT(r.launches, 0u) << "the test of " << info.symbol << " never launched it";
  EXPECT_TRUE(r.tableBlock) << info.symbol << " was launched with a block other than the kernel table's";
  EXPECT_GE(r.maxBlocks, 2u) << info.symbol << " never ran over more than one block";
  EXPECT_GT(emu->stats().checkedAccesses, 0u);
}

INSTANTIATE_TEST_SUITE_P(EveryKernel, KernelOnHost, ::testing::Range<size_t>(0, dsa::abi::kNumGpuKernels),
                         [](const ::testing::TestParamInfo<size_t> &p) {
                           return std::string(dsa::abi::kGpuKernels[p.param].symbol);
                         });

// The __truncsfbf2 the kernels' objects call (see the header): bf16 bits written by hand (round to nearest even
// on the dropped 16 bits; NaN: quiet bit set, sign and top payload kept), and numerics::f32ToBf16Bits on a sweep.
TEST_F(KernelsOnCpu, Truncsfbf2ShimIsNumericsRounding) {
  auto bits = reinterpret_cast<uint32_t (*)(uint32_t)>(emu->symbol("dsa_test_truncsfbf2_bits"));
  ASSERT_NE(bits, nullptr);
  const std::pair<uint32_t, uint32_t> cases[] = {
      {0x00000001u, 0x0000},                        // the smallest denormal rounds to +0
      {0x00008000u, 0x0000},                        // denormal tie, even: down
      {0x00018000u, 0x0002},                        // denormal tie, odd: up
      {0x00008001u, 0x0001},                        // above a denormal tie
      {0x80018000u, 0x8002},                        // negative denormal tie
      {0x007FFFFFu, 0x0080},                        // the largest denormal rounds to the smallest normal
      {0x3F808000u, 0x3F80}, {0x3F818000u, 0x3F82}, // ties to even
      {0x7F7F8000u, 0x7F80}, {0xFF7FFFFFu, 0xFF80}, // overflow to +-inf
      {0x7F800000u, 0x7F80}, {0xFF800000u, 0xFF80},
      {0x80000000u, 0x8000}, {0xFFC00000u, 0xFFC0}, // negative quiet NaN keeps its sign
      {0x7F800001u, 0x7FC0},                        // signalling NaN, payload in the dropped bits: quiet NaN, not inf
      {0xFF812345u, 0xFFC1},                        // sign and top payload kept, quieted
      {0x7FFFFFFFu, 0x7FFF},
  };
  for (const auto &[in, want] : cases) {
    EXPECT_EQ(bits(in), want) << std::hex << in;
    EXPECT_EQ(numerics::f32ToBf16Bits(numerics::f32FromBits(in)), want) << std::hex << in;
  }
  int64_t bad = 0;
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 65521)
    for (uint32_t low : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u})
      if (const uint32_t x = (static_cast<uint32_t>(u) & 0xFFFF0000u) | low;
          bits(x) != numerics::f32ToBf16Bits(numerics::f32FromBits(x)) && bad++ < 5)
        ADD_FAILURE() << std::hex << x << ": " << bits(x);
  EXPECT_EQ(bad, 0);
}

// Every gpu.barrier of the library is needed, and the emulator sees it: a copy of the kernel without that one
// barrier (withBarrierMutants), run through the same KernelLibrary call as its test, is reported as a data race.
TEST_F(KernelsOnCpu, MutantsWithoutABarrierAreReportedAsRaces) {
  ASSERT_EQ(mutants.size(), 6u) << "the GEMM has 2 barriers, rms_norm 1, sparse_attn 3";
  for (const auto &[kernel, b] : mutants) {
    redirect = "__no_barrier" + std::to_string(b);
    Status st = Status::success();
    if (kernel == "dsa_gemm_bf16") {
      const I M = 20, N = 20, K = 70; // two k tiles: the second barrier guards the tiles' reuse
      std::vector<uint16_t> x = toBits(random(M * K, 1.0f, 1, true)), w = toBits(random(N * K, 1.0f, 2, true)),
                            y(M * N);
      st = lib().linearBf16(P(x.data()), P(w.data()), P(y.data()), M, N, K);
    } else if (kernel == "dsa_rms_norm_bf16") {
      const I rows = 2, D = 40;
      std::vector<uint16_t> x = toBits(random(rows * D, 1.0f, 3, true)), w = toBits(random(D, 1.0f, 4, true)),
                            y(rows * D);
      st = lib().rmsNormBf16(P(x.data()), P(w.data()), P(y.data()), rows, D, 1e-6f);
    } else if (kernel == "dsa_sparse_attn") {
      const I s = 1, H = 2, hd = 16, n = 8, k = 6;
      std::vector<uint16_t> q = toBits(random(s * H * hd, 1.0f, 5, true)), kv = toBits(random(n * hd, 1.0f, 6, true)),
                            o(s * H * hd);
      std::vector<int32_t> idx = {0, 3, -1, 7, 2, 2};
      std::vector<float> sink = {0.0f, 1.0f}, scratch(s * H * k);
      st = lib().sparseAttn(P(q.data()), P(kv.data()), P(idx.data()), P(sink.data()), P(o.data()), P(scratch.data()), s,
                            H, hd, n, k, 0.25f);
    } else {
      ADD_FAILURE() << "no launch for the mutants of " << kernel;
      continue;
    }
    ASSERT_FALSE(st.ok()) << kernel << " without barrier #" << b << " ran without a report";
    const bool race = st.error().find("data race") != std::string::npos ||
                      st.error().find("which no work item of the block has written") != std::string::npos;
    EXPECT_TRUE(race) << kernel << " without barrier #" << b << ": " << st.error();
    std::cout << "[ info ] " << kernel << " without barrier #" << b << ": " << st.error() << "\n";
  }
}

namespace {
/// A launch of a planted kernel of Inputs/emulator-negative.mlir: (out memref<?xf32>, n index).
Status planted(const std::string &kernel, std::vector<float> &out, unsigned blocks, unsigned block) {
  KernelArgs args;
  args.memref(P(out.data()), static_cast<int64_t>(out.size())).index(static_cast<int64_t>(out.size()));
  return KernelsOnCpu::emu == nullptr
             ? makeError("no emulator")
             : KernelsOnCpu::emu->launch(kernel, LaunchShape{{blocks, 1, 1}, {block, 1, 1}}, args);
}
} // namespace

// Item 0 writes a workgroup value the others read, without a barrier: with item-by-item execution the answer
// happens to be right, which is why the race checks exist; with them the race is reported. The same kernel with
// the barrier passes both ways.
TEST_F(KernelsOnCpu, MissingBarrierIsARaceEvenWhenTheAnswerIsRight) {
  std::vector<float> out(64, 0.0f);
  emu->setRaceChecks(false);
  OK(planted("planted_broadcast_no_barrier", out, 2, 32));
  for (float v : out)
    ASSERT_EQ(v, 42.0f);
  emu->setRaceChecks(true);
  Status st = planted("planted_broadcast_no_barrier", out, 2, 32);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("data race"), std::string::npos) << st.error();
  EXPECT_NE(st.error().find("workgroup attribution 0"), std::string::npos) << st.error();
  std::fill(out.begin(), out.end(), 0.0f);
  OK(planted("planted_broadcast", out, 2, 32));
  for (float v : out)
    ASSERT_EQ(v, 42.0f);
}

// The synchronising kernels give the same bits with the work items of each barrier interval run in the opposite
// order; the racy planted kernel does not (item 0 now writes after the others have read the poisoned buffer).
TEST_F(KernelsOnCpu, ResultsDoNotDependOnTheItemOrder) {
  emu->setReverseOrder(true);
  gemmTest();
  rmsNormTest();
  sparseAttnTest();
  std::vector<float> out(64, 0.0f);
  emu->setRaceChecks(false);
  OK(planted("planted_broadcast", out, 2, 32));
  for (float v : out)
    ASSERT_EQ(v, 42.0f);
  OK(planted("planted_broadcast_no_barrier", out, 2, 32));
  EXPECT_TRUE(std::isnan(out[5])) << "reversed, the items before item 0 read the poisoned workgroup buffer";
  EXPECT_EQ(out[0], 42.0f);
}

TEST_F(KernelsOnCpu, DivergentBarriersAreErrorsNotHangs) {
  std::vector<float> out(64, 0.0f);
  Status st = planted("planted_barrier_in_branch", out, 1, 32);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("divergent barrier"), std::string::npos) << st.error();
  st = planted("planted_two_barriers", out, 1, 32);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("waits at barrier #0"), std::string::npos) << st.error();
  EXPECT_NE(st.error().find("at barrier #1"), std::string::npos) << st.error();
  // Race checks off: divergence is still caught (it is the scheduler's, not the shadow memory's).
  emu->setRaceChecks(false);
  st = planted("planted_barrier_in_branch", out, 1, 32);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("divergent barrier"), std::string::npos) << st.error();
}

TEST_F(KernelsOnCpu, BlocksWritingTheSameElementRace) {
  std::vector<float> out(64, 0.0f);
  Status st = planted("planted_cross_block", out, 3, 32);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("data race"), std::string::npos) << st.error();
  EXPECT_NE(st.error().find("block"), std::string::npos) << st.error();
  // One block alone has no race.
  OK(planted("planted_cross_block", out, 1, 32));
}

TEST_F(KernelsOnCpu, BadLaunchesAreErrors) {
  std::vector<float> out(4, 0.0f);
  KernelArgs args;
  args.memref(P(out.data()), 4).index(4);
  Status st = emu->launch("dsa_no_such_kernel", LaunchShape{{1, 1, 1}, {1, 1, 1}}, args);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("no kernel 'dsa_no_such_kernel'"), std::string::npos) << st.error();
  st = emu->launch("planted_broadcast", LaunchShape{{1, 1, 1}, {2048, 1, 1}}, args);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("2048 work items"), std::string::npos) << st.error();
  st = emu->launch("planted_broadcast", LaunchShape{{0, 1, 1}, {1, 1, 1}}, args);
  ASSERT_FALSE(st.ok());
  KernelArgs few;
  few.index(4);
  st = emu->launch("planted_broadcast", LaunchShape{{1, 1, 1}, {1, 1, 1}}, few);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("1 parameters packed, the kernel reads 6"), std::string::npos) << st.error();
  std::vector<float> out2(4, 0.0f);
  st = planted("planted_big_workgroup", out2, 1, 4);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("52000 bytes of workgroup memory"), std::string::npos) << st.error();
}
