//===- CudaKernelsOnCpuTest.cpp - the GPU kernel library's logic on the CPU against the reference kernels -------===//
//
// The compressed-attention kernels of compiler/lib/Conversion/DSAToGPU/Kernels.mlir are checked on a GPU by CudaKernelsTest.
// Without a GPU, this test checks their LOGIC bit for bit on the host: at run time it turns the barrier-free kernels
// into CPU functions (test/Conversion/DSAToGPU/Inputs/kernels-on-cpu.py: one call per global thread id), compiles
// them with the LLVM/MLIR tools (mlir-opt, mlir-translate, llc) into a shared library, loads it, calls every thread
// id in turn and compares the outputs with the reference kernels (kernels/include/dsa/Kernels/CompressKernels.h), which
// the golden pins. The top-k SETS between the candidate/top-k kernels are taken with numerics::torchCpuTopkSet, as
// the host code of dsa-to-gpu does through the runtime. What this cannot see: NVPTX code generation (PTX tests and
// CudaKernelsTest cover it) and libdevice's exp (here libm's f64 exp, rounded to f32 the same way).
//
// bf16: arith-expand include-bf16 expands the kernels' truncations, but x86 code generation still converts a bf16
// value that crosses blocks (a phi of two loads, e.g. dsa_concat_rows_bf16) by widening it to f32 and rounding it
// back. The objects are therefore compiled for a fixed CPU, the x86-64 baseline (llc -mcpu=x86-64: no AVX512_BF16,
// whose vcvtneps2bf16 flushes denormals, whatever the host), where that rounding is a call of __truncsfbf2: defined
// here with core/lib/Numerics' rule (round to nearest even, denormals rounded, NaN quiet with its sign and top payload),
// checked bit for bit by Truncsfbf2ShimIsNumericsRounding.
//
// Skipped (GTEST_SKIP) when the tools are not found: $DSA_LLVM_TOOLS_DIR, /usr/lib/llvm-22/bin or PATH for
// mlir-opt / mlir-translate / llc, and python3 and cc on PATH (the GPU machine has no MLIR).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Kernels/CompressKernels.h"
#include "dsa/Kernels/Kernels.h"
#include "dsa/Numerics/BF16.h"
#include "dsa/Numerics/Bits.h"
#include "dsa/Numerics/TopK.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <tuple>

using namespace dsa;
using dsa::ElementType;
using dsa::Tensor;

namespace {

using I = int64_t;
using P = void *;
// A memref<?xT> after convert-func-to-llvm: allocated, aligned, offset, size, stride.
#define MR P, P, I, I, I
#define M(p, n) static_cast<P>(p), static_cast<P>(p), I{0}, static_cast<I>(n), I{1}

using Fp4Fn = void (*)(I, MR, MR, I, I, int32_t);
using LinearF32Fn = void (*)(I, MR, MR, MR, I, I, I);
using CompressStateFn = void (*)(I, MR, MR, MR, MR, MR, MR, I, I, I, I);
using CompressPoolFn = void (*)(I, MR, MR, MR, I, I, I);
using CacheWriteFn = void (*)(I, MR, MR, MR, I, I, I, I);
using IndexerScoresFn = void (*)(I, MR, MR, MR, MR, I, I, I, I, float);
using VisibilityFn = void (*)(I, MR, MR, I, I, I, I);
using BlockScoresFn = void (*)(I, MR, MR, I, I, I, I, I, I);
using CandidateMaskFn = void (*)(I, MR, MR, MR, I, I, I, I, I);
using TopkMapFn = void (*)(I, MR, MR, I, I, I, I, I);
using ApplyCandidatesFn = void (*)(I, MR, MR, MR, I);
using CastFn = void (*)(I, MR, MR, I);

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

class KernelsOnCpu : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    const std::string src = DSA_SOURCE_DIR;
    const std::string kernels = src + "/compiler/lib/Conversion/DSAToGPU/Kernels.mlir";
    const std::string script = src + "/test/Conversion/DSAToGPU/Inputs/kernels-on-cpu.py";
    std::string opt = findTool("mlir-opt"), translate = findTool("mlir-translate"), llc = findTool("llc"),
                python = findTool("python3"), cc = findTool("cc");
    if (opt.empty() || translate.empty() || llc.empty() || python.empty() || cc.empty()) {
      skipReason = "mlir-opt, mlir-translate, llc, python3 or cc not found (set DSA_LLVM_TOOLS_DIR)";
      return;
    }
    char tmpl[] = "/tmp/dsa-kernels-on-cpu-XXXXXX";
    if (!mkdtemp(tmpl)) {
      loadError = "mkdtemp failed";
      return;
    }
    dir = tmpl;
    std::ofstream(dir + "/empty.mlir") << "\n";
    // x86 code generation rounds a bf16 value carried across blocks back from f32 with __truncsfbf2 (the header
    // comment): core/lib/Numerics' rounding (NaN: the top 16 bits with the quiet bit 0x0040; otherwise add 0x7FFF plus
    // the lowest kept bit, keep the top 16 bits), defined here so that no libgcc / compiler-rt version decides it,
    // and a bit-level entry for the test of it.
    std::ofstream(dir + "/truncsfbf2.ll")
        << "define bfloat @__truncsfbf2(float %f) {\n  %u = bitcast float %f to i32\n"
           "  %a = and i32 %u, 2147483647\n  %nan = icmp ugt i32 %a, 2139095040\n  %h = lshr i32 %u, 16\n"
           "  %odd = and i32 %h, 1\n  %r0 = add i32 %u, 32767\n  %r1 = add i32 %r0, %odd\n"
           "  %r2 = lshr i32 %r1, 16\n  %q = or i32 %h, 64\n  %r = select i1 %nan, i32 %q, i32 %r2\n"
           "  %t = trunc i32 %r to i16\n  %b = bitcast i16 %t to bfloat\n  ret bfloat %b\n}\n"
           "define i32 @dsa_test_truncsfbf2_bits(i32 %u) {\n  %f = bitcast i32 %u to float\n"
           "  %b = call bfloat @__truncsfbf2(float %f)\n  %t = bitcast bfloat %b to i16\n"
           "  %z = zext i16 %t to i32\n  ret i32 %z\n}\n";
    const std::string log = dir + "/build.log";
    const std::string cmd =
        "cd '" + dir + "' && '" + python + "' '" + script + "' '" + kernels + "' empty.mlir > k.mlir && '" + opt +
        "' k.mlir --arith-expand=include-bf16=true --convert-scf-to-cf --convert-math-to-llvm "
        "--expand-strided-metadata --lower-affine --finalize-memref-to-llvm --convert-func-to-llvm "
        "--convert-arith-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts -o k.llvm.mlir && '" +
        translate + "' --mlir-to-llvmir k.llvm.mlir -o k.ll && '" + llc +
        "' -O2 -mcpu=x86-64 -filetype=obj -relocation-model=pic k.ll -o k.o && '" + llc +
        "' -O2 -mcpu=x86-64 -filetype=obj -relocation-model=pic truncsfbf2.ll -o truncsfbf2.o && '" + cc +
        "' -shared k.o truncsfbf2.o -lm -o libkernels.so";
    if (std::system((cmd + " > '" + log + "' 2>&1").c_str()) != 0) {
      std::ifstream in(log);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      loadError = "building the kernels for the CPU failed: " + text;
      return;
    }
    handle = dlopen((dir + "/libkernels.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      loadError = std::string("dlopen: ") + dlerror();
  }
  static void TearDownTestSuite() {
    if (handle)
      dlclose(handle);
    handle = nullptr;
    if (!dir.empty())
      std::system(("rm -rf '" + dir + "'").c_str());
  }
  void SetUp() override {
    if (!skipReason.empty())
      GTEST_SKIP() << skipReason;
    ASSERT_TRUE(loadError.empty()) << loadError;
  }
  template <typename Fn> static Fn fn(const char *name) {
    void *f = dlsym(handle, name);
    EXPECT_NE(f, nullptr) << name << " is missing from the kernel library";
    return reinterpret_cast<Fn>(f);
  }

  static std::string dir, skipReason, loadError;
  static void *handle;
};
std::string KernelsOnCpu::dir, KernelsOnCpu::skipReason, KernelsOnCpu::loadError;
void *KernelsOnCpu::handle = nullptr;

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

} // namespace

// The __truncsfbf2 the kernels' objects call (see the header): bf16 bits written by hand (round to nearest even
// on the dropped 16 bits; NaN: quiet bit set, sign and top payload kept), and numerics::f32ToBf16Bits on a sweep.
TEST_F(KernelsOnCpu, Truncsfbf2ShimIsNumericsRounding) {
  auto bits = fn<uint32_t (*)(uint32_t)>("dsa_test_truncsfbf2_bits");
  ASSERT_NE(bits, nullptr);
  const std::pair<uint32_t, uint32_t> cases[] = {
      {0x00000001u, 0x0000}, // the smallest denormal rounds to +0
      {0x00008000u, 0x0000}, // denormal tie, even: down
      {0x00018000u, 0x0002}, // denormal tie, odd: up
      {0x00008001u, 0x0001}, // above a denormal tie
      {0x80018000u, 0x8002}, // negative denormal tie
      {0x007FFFFFu, 0x0080}, // the largest denormal rounds to the smallest normal
      {0x3F808000u, 0x3F80}, {0x3F818000u, 0x3F82}, // ties to even
      {0x7F7F8000u, 0x7F80}, {0xFF7FFFFFu, 0xFF80}, // overflow to +-inf
      {0x7F800000u, 0x7F80}, {0xFF800000u, 0xFF80}, {0x80000000u, 0x8000},
      {0xFFC00000u, 0xFFC0}, // negative quiet NaN keeps its sign
      {0x7F800001u, 0x7FC0}, // signalling NaN, payload in the dropped bits: quiet NaN, not inf
      {0xFF812345u, 0xFFC1}, // sign and top payload kept, quieted
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

TEST_F(KernelsOnCpu, Fp4QuantOnEveryBf16AndWideBlocks) {
  auto quant = fn<Fp4Fn>("dsa_fp4_quant");
  std::vector<float> x;
  for (uint32_t b = 0; b < 65536; ++b)
    x.push_back(numerics::bf16BitsToF32(static_cast<uint16_t>(b)));
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> e(-140, 12);
  std::uniform_real_distribution<float> m(-2.0f, 2.0f);
  for (int i = 0; i < 32 * 512; ++i)
    x.push_back(numerics::roundBf16(std::ldexp(m(rng), e(rng))));
  const I n = static_cast<I>(x.size());
  for (int e4m3 = 0; e4m3 < 2; ++e4m3) {
    const I block = e4m3 ? 16 : 32;
    std::vector<uint16_t> in = toBits(x), out(n);
    for (I g = 0; g < n / block; ++g)
      quant(g, M(in.data(), n), M(out.data(), n), n / block, block, e4m3);
    Tensor t = bf16({n / block, block}, x);
    expectBitExact(fromBits(out), ok(e4m3 ? kernels::fp4QuantE4M3(t, block) : kernels::fp4QuantE8M0(t, block)),
                   e4m3 ? "fp4_quant_e4m3" : "fp4_quant_e8m0");
  }
}

TEST_F(KernelsOnCpu, LinearF32AndCasts) {
  auto linear = fn<LinearF32Fn>("dsa_linear_f32");
  for (auto [Mr, N, K] : {std::tuple<I, I, I>{12, 32, 64}, {7, 5, 9}, {3, 3, 5}, {40, 64, 4096}}) {
    std::vector<float> x = random(Mr * K, 3.0f, 1, false), w = random(N * K, 0.5f, 2, false), y(Mr * N);
    for (I g = 0; g < Mr * N; ++g)
      linear(g, M(x.data(), Mr * K), M(w.data(), N * K), M(y.data(), Mr * N), Mr, N, K);
    expectBitExact(y, ok(kernels::linear(f32({Mr, K}, x), f32({N, K}, w))), "linear f32 K=" + std::to_string(K));
  }
  auto truncf = fn<CastFn>("dsa_truncf_f32_bf16");
  std::vector<float> x;
  for (uint32_t b = 0; b < 65536; b += 3)
    for (uint32_t low : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      uint32_t u = (b << 16) | low;
      float f;
      std::memcpy(&f, &u, 4);
      x.push_back(f);
    }
  std::vector<uint16_t> y(x.size());
  for (size_t g = 0; g < x.size(); ++g)
    truncf(static_cast<I>(g), M(x.data(), x.size()), M(y.data(), y.size()), static_cast<I>(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_TRUE(sameBits(numerics::bf16BitsToF32(y[i]), numerics::roundBf16(x[i]))) << "truncf of " << x[i];
}

TEST_F(KernelsOnCpu, CompressPoolChains) {
  auto state = fn<CompressStateFn>("dsa_compress_state");
  auto pool = fn<CompressPoolFn>("dsa_compress_pool");
  uint32_t seed = 100;
  int64_t exact = 0, total = 0;
  for (I r : {2, 4})
    for (I hd : {32, 128})
      for (I s0 : {1, 2, 3, 5, 8, 13}) {
        std::vector<float> ks(r * hd, 0.0f), ss(r * hd, -std::numeric_limits<float>::infinity());
        I start = 0, s = s0;
        for (int step = 0; step < 2 * static_cast<int>(r) + 1; ++step) {
          std::vector<float> kv = random(s * hd, 4.0f, seed++, false), sc = random(s * hd, 6.0f, seed++, false);
          if (step == 0 && s > 1)
            sc[hd + 1] = -std::numeric_limits<float>::infinity();
          std::vector<float> nk(r * hd), ns(r * hd);
          for (I g = 0; g < r * hd; ++g)
            state(g, M(kv.data(), s * hd), M(sc.data(), s * hd), M(ks.data(), r * hd), M(ss.data(), r * hd),
                  M(nk.data(), r * hd), M(ns.data(), r * hd), r, hd, s, start);
          const I groups = start == 0 ? s / r : ((start + 1) % r == 0 ? 1 : 0);
          std::vector<float> pooled(groups * hd);
          float *srcKv = start == 0 ? kv.data() : nk.data(), *srcSc = start == 0 ? sc.data() : ns.data();
          for (I g = 0; g < groups * hd; ++g)
            pool(g, M(srcKv, 0), M(srcSc, 0), M(pooled.data(), groups * hd), groups, r, hd);
          auto want = kernels::compressPool(f32({s, hd}, kv), f32({s, hd}, sc), f32({r, hd}, ks), f32({r, hd}, ss),
                                           start, r);
          ASSERT_TRUE(want.ok()) << want.error();
          const std::string what = "r=" + std::to_string(r) + " hd=" + std::to_string(hd) + " start=" +
                                   std::to_string(start) + " s=" + std::to_string(s);
          ASSERT_EQ(want->pooled.dim(0), groups) << what;
          expectBitExact(nk, want->kvState, what + " kv_state");
          expectBitExact(ns, want->scoreState, what + " score_state");
          // exp: libm's f64 exp rounded to f32 here, glibc's expf in the reference; they may differ in the last bit.
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

TEST_F(KernelsOnCpu, CacheWriteAndIndexerScores) {
  auto write = fn<CacheWriteFn>("dsa_cache_write");
  const I C = 32, w = 32;
  std::vector<float> cache = random(C * w, 2.0f, 9, true);
  for (auto [start, g, ratio] : {std::tuple<I, I, I>{0, 6, 2}, {13, 1, 2}, {62, 1, 2}, {31, 1, 1}, {0, 0, 4}}) {
    std::vector<float> rows = random(g * w, 1.0f, 10, true);
    std::vector<uint16_t> cb = toBits(cache), rb = toBits(rows), out(C * w);
    for (I i = 0; i < C * w; ++i)
      write(i, M(cb.data(), C * w), M(rb.data(), g * w), M(out.data(), C * w), C, w, start / ratio, g);
    expectBitExact(fromBits(out), ok(kernels::cacheWrite(bf16({C, w}, cache), bf16({g, w}, rows), start, ratio)),
                   "cache_write start " + std::to_string(start));
  }
  auto scores = fn<IndexerScoresFn>("dsa_indexer_scores");
  struct Case {
    I s, IH, ihd, n, start, ratio;
  };
  uint32_t seed = 200;
  for (Case c : {Case{12, 2, 32, 12, 0, 1}, {12, 2, 32, 32, 0, 2}, {1, 2, 32, 64, 13, 1}, {3, 2, 32, 8, 0, 4},
                 {5, 64, 128, 40, 0, 1}, {1, 64, 128, 300, 511, 2}}) {
    std::vector<float> iq = random(c.s * c.IH * c.ihd, 2.0f, seed++, true), wt = random(c.s * c.IH, 3.0f, seed++, true),
                       keys = random(c.n * c.ihd, 2.0f, seed++, true);
    keys[0] = std::numeric_limits<float>::infinity();
    keys[c.ihd + 3] = std::numeric_limits<float>::quiet_NaN();
    keys[2 * c.ihd] = numerics::roundBf16(3e38f);
    const float scale = static_cast<float>(1.0 / std::sqrt(double(c.ihd)) / std::sqrt(double(c.IH)));
    const I width = (c.start + c.s) / c.ratio;
    std::vector<uint16_t> qb = toBits(iq), wb = toBits(wt), kb = toBits(keys), out(c.s * width);
    for (I i = 0; i < c.s * width; ++i)
      scores(i, M(qb.data(), qb.size()), M(wb.data(), wb.size()), M(kb.data(), kb.size()), M(out.data(), out.size()),
             c.s, c.IH, c.ihd, width, scale);
    expectBitExact(fromBits(out),
                   ok(kernels::indexerScores(bf16({c.s, c.IH, c.ihd}, iq), bf16({c.s, c.IH}, wt),
                                            bf16({c.n, c.ihd}, keys), c.start, c.ratio, scale)),
                   "indexer_scores s=" + std::to_string(c.s) + " IH=" + std::to_string(c.IH));
  }
}

TEST_F(KernelsOnCpu, VisibilityCandidatesAndTopkThroughTheHostTopk) {
  auto visibility = fn<VisibilityFn>("dsa_compress_visibility");
  auto blockScores = fn<BlockScoresFn>("dsa_candidate_block_scores");
  auto mask = fn<CandidateMaskFn>("dsa_candidate_mask");
  auto apply = fn<ApplyCandidatesFn>("dsa_apply_candidates");
  auto extf = fn<CastFn>("dsa_extf_bf16_f32");
  auto map = fn<TopkMapFn>("dsa_topk_map");
  uint32_t seed = 300;
  // Rows full of ties and -inf, a NaN, compress_len 0 rows, partial blocks, both libstdc++ branches of the top-k.
  for (auto [s, start, ratio, bs, topk] :
       {std::tuple<I, I, I, I, I>{12, 0, 1, 2, 3}, {12, 0, 2, 2, 3}, {1, 12, 1, 2, 3}, {1, 40, 1, 3, 4},
        {13, 0, 4, 1, 2}, {64, 0, 1, 4, 5}, {1, 4000, 1, 4, 40}}) {
    const I width = (start + s) / ratio, window = 8;
    const std::string what = "s=" + std::to_string(s) + " start=" + std::to_string(start);
    std::vector<float> raw = tied(s * width, seed++, 3, 0.3);
    if (s * width > 5)
      raw[5] = std::numeric_limits<float>::quiet_NaN();
    std::vector<uint16_t> rb = toBits(raw), vb(s * width);
    for (I i = 0; i < s * width; ++i)
      visibility(i, M(rb.data(), rb.size()), M(vb.data(), vb.size()), s, width, start, ratio);
    Tensor vis = ok(kernels::compressVisibility(bf16({s, width}, raw), start, ratio));
    expectBitExact(fromBits(vb), vis, "compress_visibility " + what);
    // select_candidate_blocks: block scores here, the top-k set on the host, the mask here.
    const I nb = (width + bs - 1) / bs, k = std::min(topk, nb);
    std::vector<float> bsc(s * nb);
    for (I i = 0; i < s * nb; ++i)
      blockScores(i, M(vb.data(), vb.size()), M(bsc.data(), bsc.size()), s, width, nb, bs, start, ratio);
    std::vector<int64_t> picks;
    for (I t = 0; t < s; ++t) {
      auto set = numerics::torchCpuTopkSet(bsc.data() + t * nb, nb, k);
      ASSERT_TRUE(set.ok()) << set.error();
      picks.insert(picks.end(), set->begin(), set->end());
    }
    std::vector<uint8_t> mb(s * width);
    for (I i = 0; i < s * width; ++i)
      mask(i, M(bsc.data(), bsc.size()), M(picks.data(), picks.size()), M(mb.data(), mb.size()), s, width, nb, k, bs);
    Tensor wantMask = ok(kernels::selectCandidateBlocks(vis, start, ratio, topk, bs));
    for (I i = 0; i < s * width; ++i)
      ASSERT_EQ(static_cast<int64_t>(mb[i]), wantMask.ints()[i]) << "select_candidate_blocks " << what << " at " << i;
    // apply_candidates, then indexer_topk (widened scores, the host set, the mapping).
    std::vector<uint16_t> ab(s * width);
    for (I i = 0; i < s * width; ++i)
      apply(i, M(vb.data(), vb.size()), M(mb.data(), mb.size()), M(ab.data(), ab.size()), s * width);
    Tensor applied = ok(kernels::applyCandidates(vis, wantMask));
    expectBitExact(fromBits(ab), applied, "apply_candidates " + what);
    const I indexTopk = 6 + topk, kk = std::min(indexTopk, width);
    std::vector<float> wide(s * width);
    for (I i = 0; i < s * width; ++i)
      extf(i, M(ab.data(), ab.size()), M(wide.data(), wide.size()), s * width);
    std::vector<int64_t> tp;
    for (I t = 0; t < s; ++t) {
      auto set = numerics::torchCpuTopkSet(wide.data() + t * width, width, kk);
      ASSERT_TRUE(set.ok()) << set.error();
      tp.insert(tp.end(), set->begin(), set->end());
    }
    std::vector<int32_t> idx(s * kk);
    for (I i = 0; i < s * kk; ++i)
      map(i, M(tp.data(), tp.size()), M(idx.data(), idx.size()), s, kk, start, ratio, start == 0 ? s : window);
    Tensor wantIdx = ok(kernels::indexerTopk(applied, start, ratio, indexTopk, window));
    for (I i = 0; i < s * kk; ++i)
      ASSERT_EQ(static_cast<int64_t>(idx[i]), wantIdx.ints()[i]) << "indexer_topk " << what << " at " << i;
  }
}
