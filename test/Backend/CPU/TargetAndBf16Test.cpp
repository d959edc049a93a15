//===- TargetAndBf16Test.cpp - every bf16 conversion of the CPU pipeline, and the target CPU option -------===//
//
// bf16: the pipeline expands every f32 -> bf16 truncation and bf16 -> f32 extension into integer ops
// (dsa-cpu-expand-bf16) before any conversion to LLVM, serial and OpenMP alike. Compiled both ways, for the host
// and for x86-64-v3 (whatever this machine is), each conversion (a scalar one in an OpenMP-able linalg.generic, a
// vector<8> one in an scf.forall) is fed denormals, values rounding to bf16 denormals, ties, +-0, +-inf and NaNs
// with payloads, and compared bit for bit (NaN sign and payload included) with bf16 bits written by hand below and
// with core/lib/Numerics (numerics::f32ToBf16Bits on ~1.1M f32 patterns; every bf16 pattern widened).
//
// Target CPU: CPUCompileOptions::targetCpu / $DSA_CPU reach the lowered module (target_cpu on every function), an
// unknown name is an error, and the JIT refuses a CPU whose features this host lacks.
//
// Expected values: the hand-written tables (derived from the RNE rule on the dropped 16 bits, the quiet bit 0x0040,
// IEEE's overflow to inf), checked against numerics::f32ToBf16Bits too, so a wrong table entry fails as well.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "Common/HostObject.h" // compiler/lib/Backend (private): checkNoBf16Conversions on LLVM IR
#include "CPUTestSupport.h"
#include "dsa/Backend/CPU/CPUModule.h"
#include "dsa/Conversion/CPUTarget.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Numerics/BF16.h"
#include "dsa/Numerics/Bits.h"
#include "dsa/Runtime/CPU/HostFeatures.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

using namespace mlir;
namespace cpu = ::dsa::cpu;
namespace runtime = ::dsa::runtime;
namespace numerics = ::dsa::numerics;
using ::dsa::ElementType;
using ::dsa::Tensor;

namespace {

using ::dsa::test::haveOpenMP;

/// Four functions on i32 bit patterns, so that no value is touched by the calling convention: the low 32 bits of
/// each element are an f32 (trunc_*) or, in their low 16 bits, a bf16 (ext_*); results are the converted bits.
const char *kConversions = R"mlir(
#id = affine_map<(d0) -> (d0)>
func.func @trunc_scalar(%x: tensor<?xi32>) -> tensor<?xi32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xi32>
  %e = tensor.empty(%n) : tensor<?xi32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<?xi32>) outs(%e : tensor<?xi32>) {
  ^bb0(%a: i32, %o: i32):
    %f = arith.bitcast %a : i32 to f32
    %t = arith.truncf %f : f32 to bf16
    %h = arith.bitcast %t : bf16 to i16
    %w = arith.extui %h : i16 to i32
    linalg.yield %w : i32
  } -> tensor<?xi32>
  return %y : tensor<?xi32>
}
func.func @ext_scalar(%x: tensor<?xi32>) -> tensor<?xi32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xi32>
  %e = tensor.empty(%n) : tensor<?xi32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<?xi32>) outs(%e : tensor<?xi32>) {
  ^bb0(%a: i32, %o: i32):
    %h = arith.trunci %a : i32 to i16
    %b = arith.bitcast %h : i16 to bf16
    %f = arith.extf %b : bf16 to f32
    %w = arith.bitcast %f : f32 to i32
    linalg.yield %w : i32
  } -> tensor<?xi32>
  return %y : tensor<?xi32>
}
// n must be a multiple of 8.
func.func @trunc_vector(%x: tensor<?xi32>) -> tensor<?xi32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %p = arith.constant 0 : i32
  %n = tensor.dim %x, %c0 : tensor<?xi32>
  %blocks = arith.divui %n, %c8 : index
  %init = tensor.empty(%n) : tensor<?xi32>
  %y = scf.forall (%i) in (%blocks) shared_outs(%o = %init) -> (tensor<?xi32>) {
    %at = arith.muli %i, %c8 : index
    %v = vector.transfer_read %x[%at], %p {in_bounds = [true]} : tensor<?xi32>, vector<8xi32>
    %f = arith.bitcast %v : vector<8xi32> to vector<8xf32>
    %t = arith.truncf %f : vector<8xf32> to vector<8xbf16>
    %h = arith.bitcast %t : vector<8xbf16> to vector<8xi16>
    %w = arith.extui %h : vector<8xi16> to vector<8xi32>
    %e = tensor.empty() : tensor<8xi32>
    %r = vector.transfer_write %w, %e[%c0] {in_bounds = [true]} : vector<8xi32>, tensor<8xi32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %r into %o[%at] [8] [1] : tensor<8xi32> into tensor<?xi32>
    }
  }
  return %y : tensor<?xi32>
}
func.func @ext_vector(%x: tensor<?xi32>) -> tensor<?xi32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %p = arith.constant 0 : i32
  %n = tensor.dim %x, %c0 : tensor<?xi32>
  %blocks = arith.divui %n, %c8 : index
  %init = tensor.empty(%n) : tensor<?xi32>
  %y = scf.forall (%i) in (%blocks) shared_outs(%o = %init) -> (tensor<?xi32>) {
    %at = arith.muli %i, %c8 : index
    %v = vector.transfer_read %x[%at], %p {in_bounds = [true]} : tensor<?xi32>, vector<8xi32>
    %h = arith.trunci %v : vector<8xi32> to vector<8xi16>
    %b = arith.bitcast %h : vector<8xi16> to vector<8xbf16>
    %f = arith.extf %b : vector<8xbf16> to vector<8xf32>
    %w = arith.bitcast %f : vector<8xf32> to vector<8xi32>
    %e = tensor.empty() : tensor<8xi32>
    %r = vector.transfer_write %w, %e[%c0] {in_bounds = [true]} : vector<8xi32>, tensor<8xi32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %r into %o[%at] [8] [1] : tensor<8xi32> into tensor<?xi32>
    }
  }
  return %y : tensor<?xi32>
}
)mlir";

struct TruncCase {
  uint32_t f32;
  uint16_t bf16;
  const char *what;
};

// f32 -> bf16 by hand: keep the top 16 bits, add one to them when the dropped 16 bits are above 0x8000, or exactly
// 0x8000 with the lowest kept bit odd (ties to even); a carry out of the mantissa raises the exponent. NaN: the top
// 16 bits with the quiet bit (0x0040) set.
const TruncCase kTruncCases[] = {
    {0x00000000u, 0x0000, "+0"},
    {0x80000000u, 0x8000, "-0"},
    {0x00000001u, 0x0000, "the smallest f32 denormal rounds to +0 (not flushed: it is below half a bf16 ulp)"},
    {0x80000001u, 0x8000, "-(smallest denormal) rounds to -0"},
    {0x00008000u, 0x0000, "denormal tie, lowest kept bit even: down to +0"},
    {0x00018000u, 0x0002, "denormal tie, lowest kept bit odd: up"},
    {0x00008001u, 0x0001, "just above a denormal tie: up to the smallest bf16 denormal"},
    {0x00010000u, 0x0001, "the smallest bf16 denormal, exact"},
    {0x80018000u, 0x8002, "negative denormal tie: to even"},
    {0x000A3C00u, 0x000A, "a denormal rounding down"},
    {0x000AC000u, 0x000B, "a denormal rounding up"},
    {0x007F7FFFu, 0x007F, "below the tie at the largest bf16 denormal: down"},
    {0x007F8000u, 0x0080, "tie at the largest bf16 denormal (odd): up to the smallest normal"},
    {0x007FFFFFu, 0x0080, "the largest f32 denormal: up to the smallest normal"},
    {0x00800000u, 0x0080, "the smallest normal"},
    {0x3F800000u, 0x3F80, "1"},
    {0x3F808000u, 0x3F80, "tie, even: down"},
    {0x3F818000u, 0x3F82, "tie, odd: up"},
    {0x3F80C000u, 0x3F81, "above a tie"},
    {0xBF808001u, 0xBF81, "negative, just above a tie"},
    {0x7F7F7FFFu, 0x7F7F, "just below the tie above the largest finite bf16"},
    {0x7F7F8000u, 0x7F80, "tie above the largest finite bf16 (odd): +inf"},
    {0x7F7FFFFFu, 0x7F80, "the largest f32: +inf"},
    {0xFF7FFFFFu, 0xFF80, "the most negative f32: -inf"},
    {0x7F800000u, 0x7F80, "+inf"},
    {0xFF800000u, 0xFF80, "-inf"},
    {0x7FC00000u, 0x7FC0, "quiet NaN"},
    {0xFFC00000u, 0xFFC0, "negative quiet NaN (x86's default NaN): the sign is kept"},
    {0x7F800001u, 0x7FC0, "signalling NaN with its payload in the dropped bits: a quiet NaN, not inf"},
    {0x7FA00000u, 0x7FE0, "signalling NaN with a kept payload bit: kept, quieted"},
    {0xFF812345u, 0xFFC1, "negative signalling NaN: sign and top payload kept, quieted"},
    {0x7FFFFFFFu, 0x7FFF, "NaN with every payload bit"},
    {0xFFFF8000u, 0xFFFF, "negative NaN whose dropped bits are a tie: not rounded"},
};

struct ExtCase {
  uint16_t bf16;
  uint32_t f32;
  const char *what;
};

// bf16 -> f32 is exact: the 16 bits become the top of the f32.
const ExtCase kExtCases[] = {
    {0x0000, 0x00000000u, "+0"},
    {0x8000, 0x80000000u, "-0"},
    {0x0001, 0x00010000u, "the smallest bf16 denormal"},
    {0x807F, 0x807F0000u, "the most negative bf16 denormal"},
    {0x3F80, 0x3F800000u, "1"},
    {0x7F7F, 0x7F7F0000u, "the largest finite bf16"},
    {0x7F80, 0x7F800000u, "+inf"},
    {0xFF80, 0xFF800000u, "-inf"},
    {0x7FC0, 0x7FC00000u, "quiet NaN"},
    {0x7F81, 0x7F810000u, "signalling NaN: still signalling (no conversion that would quiet it)"},
    {0xFFC1, 0xFFC10000u, "negative NaN with payload"},
};

struct Config {
  bool parallel;
  const char *cpu;
};

std::string name(const Config &c) {
  return std::string(c.cpu) + (c.parallel ? ", OpenMP" : ", serial");
}

Tensor bitsTensor(const std::vector<uint32_t> &bits) {
  std::vector<int64_t> v;
  for (uint32_t b : bits)
    v.push_back(static_cast<int32_t>(b));
  return Tensor::fromInts(ElementType::I32, {static_cast<int64_t>(v.size())}, v);
}

class TargetAndBf16Test : public ::dsa::test::MlirTestContext {
protected:

  /// The configurations every conversion runs in: serial and OpenMP (when libomp exists), for the host and for
  /// x86-64-v3 (AVX2 + FMA: what a host without AVX-512 runs).
  static std::vector<Config> configs() {
    std::vector<Config> out;
    for (bool parallel : {false, true})
      for (const char *c : {"host", "x86-64-v3"})
        if (!parallel || haveOpenMP())
          out.push_back(Config{parallel, c});
    return out;
  }

  std::unique_ptr<cpu::CPUModule> compile(const Config &c) {
    OwningOpRef<ModuleOp> m = parse(kConversions);
    if (!m)
      return nullptr;
    cpu::CPUCompileOptions options;
    options.parallel = c.parallel;
    options.targetCpu = c.cpu;
    ::dsa::Result<std::unique_ptr<cpu::CPUModule>> r = cpu::compileForCPU(*m, options);
    EXPECT_TRUE(r.ok()) << name(c) << ": " << r.error();
    return r.ok() ? r.take() : nullptr;
  }

  /// Runs `fn` on `in` (padded to a multiple of 8 with zeros) and returns the result bits.
  std::vector<uint32_t> run(cpu::CPUModule &m, const std::string &fn, std::vector<uint32_t> in) {
    const size_t n = in.size();
    in.resize((n + 7) / 8 * 8, 0u);
    ::dsa::Result<std::vector<Tensor>> r = m.call(fn, {bitsTensor(in)});
    EXPECT_TRUE(r.ok()) << fn << ": " << r.error();
    std::vector<uint32_t> out;
    if (!r.ok())
      return out;
    for (size_t i = 0; i < n; ++i)
      out.push_back(static_cast<uint32_t>((*r)[0].ints()[i]));
    return out;
  }

};

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

TEST_F(TargetAndBf16Test, HandWrittenCasesAgreeWithNumerics) {
  for (const TruncCase &c : kTruncCases)
    EXPECT_EQ(numerics::f32ToBf16Bits(numerics::f32FromBits(c.f32)), c.bf16) << hex(c.f32) << ": " << c.what;
  for (const ExtCase &c : kExtCases)
    EXPECT_EQ(numerics::f32Bits(numerics::bf16BitsToF32(c.bf16)), c.f32) << hex(c.bf16) << ": " << c.what;
}

TEST_F(TargetAndBf16Test, SpecialValuesOfEveryConversionSerialAndOpenMPHostAndX86_64_v3) {
  std::vector<uint32_t> truncIn, extIn;
  for (const TruncCase &c : kTruncCases)
    truncIn.push_back(c.f32);
  for (const ExtCase &c : kExtCases)
    extIn.push_back(c.bf16);
  for (const Config &config : configs()) {
    SCOPED_TRACE(name(config));
    std::unique_ptr<cpu::CPUModule> m = compile(config);
    ASSERT_TRUE(m);
    for (const char *fn : {"trunc_scalar", "trunc_vector"}) {
      std::vector<uint32_t> got = run(*m, fn, truncIn);
      ASSERT_EQ(got.size(), truncIn.size()) << fn;
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], kTruncCases[i].bf16) << fn << "(" << hex(kTruncCases[i].f32) << "): " << kTruncCases[i].what
                                               << ", got " << hex(got[i]);
    }
    for (const char *fn : {"ext_scalar", "ext_vector"}) {
      std::vector<uint32_t> got = run(*m, fn, extIn);
      ASSERT_EQ(got.size(), extIn.size()) << fn;
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], kExtCases[i].f32) << fn << "(" << hex(kExtCases[i].bf16) << "): " << kExtCases[i].what
                                            << ", got " << hex(got[i]);
    }
  }
}

// The pipeline's bf16 rounding against numerics::f32ToBf16Bits: every 4099th f32 pattern, the patterns around
// every bf16 boundary of a sample of exponents (exact ties with an even and an odd kept bit, one below and one
// above), the specials; and every bf16 pattern widened. Bit for bit, NaNs included.
TEST_F(TargetAndBf16Test, RoundingMatchesNumericsOnMillionsOfPatternsSerialAndOpenMP) {
  std::vector<uint32_t> in;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4099)
    in.push_back(static_cast<uint32_t>(bits));
  for (uint32_t hi = 0; hi < 0x10000u; hi += 37)
    for (uint32_t lo : {0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu, 0x0001u})
      in.push_back((hi << 16) | lo);
  for (const TruncCase &c : kTruncCases)
    in.push_back(c.f32);
  std::vector<uint32_t> every;
  for (uint32_t b = 0; b < 0x10000u; ++b)
    every.push_back(b);
  for (const Config &config : configs()) {
    SCOPED_TRACE(name(config));
    std::unique_ptr<cpu::CPUModule> m = compile(config);
    ASSERT_TRUE(m);
    for (const char *fn : {"trunc_scalar", "trunc_vector"}) {
      std::vector<uint32_t> got = run(*m, fn, in);
      ASSERT_EQ(got.size(), in.size()) << fn;
      int64_t mismatches = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        const uint32_t want = numerics::f32ToBf16Bits(numerics::f32FromBits(in[i]));
        if (got[i] != want && mismatches++ < 5) {
          ADD_FAILURE() << fn << "(" << hex(in[i]) << ") = " << hex(got[i]) << ", numerics: " << hex(want);
        }
      }
      EXPECT_EQ(mismatches, 0) << fn;
    }
    for (const char *fn : {"ext_scalar", "ext_vector"}) {
      std::vector<uint32_t> got = run(*m, fn, every);
      ASSERT_EQ(got.size(), every.size()) << fn;
      int64_t mismatches = 0;
      for (size_t i = 0; i < every.size(); ++i) {
        const uint32_t want = numerics::f32Bits(numerics::bf16BitsToF32(static_cast<uint16_t>(every[i])));
        if (got[i] != want && mismatches++ < 5) {
          ADD_FAILURE() << fn << "(" << hex(every[i]) << ") = " << hex(got[i]) << ", numerics: " << hex(want);
        }
      }
      EXPECT_EQ(mismatches, 0) << fn;
    }
  }
}

//===----------------------------------------------------------------------------------------------------------===//
// The target CPU option
//===----------------------------------------------------------------------------------------------------------===//

/// How many times `needle` occurs in `hay`.
size_t count(const std::string &hay, const std::string &needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size()))
    ++n;
  return n;
}

TEST_F(TargetAndBf16Test, TheTargetReachesEveryFunction) {
  OwningOpRef<ModuleOp> m = parse(kConversions);
  ASSERT_TRUE(m);
  cpu::CPUCompileOptions options;
  options.targetCpu = "x86-64-v3";
  ::dsa::Result<std::unique_ptr<cpu::CPUModule>> r = cpu::compileForCPU(*m, options);
  ASSERT_TRUE(r.ok()) << r.error();
  const std::string &lowered = (*r)->loweredModule();
  // The four functions (and any helper the pipeline adds) carry the CPU and its features, with AVX2 and FMA and
  // without AVX-512.
  EXPECT_GE(count(lowered, "target_cpu = \"x86-64-v3\""), 4u) << lowered.substr(0, 2000);
  EXPECT_EQ(count(lowered, "target_cpu = "), count(lowered, "target_cpu = \"x86-64-v3\""));
  EXPECT_NE(lowered.find("\"+avx2\""), std::string::npos);
  EXPECT_NE(lowered.find("\"+fma\""), std::string::npos);
  EXPECT_EQ(lowered.find("avx512"), std::string::npos);
}

// The default target is $DSA_CPU when set (the .x86-64-v3 CTest entries set it), else the host (its CPU name and
// its features, on and off).
TEST_F(TargetAndBf16Test, TheDefaultTargetIsDsaCpuElseTheHost) {
  OwningOpRef<ModuleOp> m = parse(kConversions);
  ASSERT_TRUE(m);
  ::dsa::Result<std::unique_ptr<cpu::CPUModule>> r = cpu::compileForCPU(*m, cpu::CPUCompileOptions{});
  ASSERT_TRUE(r.ok()) << r.error();
  const std::string &lowered = (*r)->loweredModule();
  const char *env = std::getenv("DSA_CPU");
  const std::string want = env && *env && std::string(env) != "host" ? env : llvm::sys::getHostCPUName().str();
  EXPECT_GE(count(lowered, "target_cpu = \"" + want + "\""), 4u) << "expected " << want;
  EXPECT_EQ(count(lowered, "target_cpu = "), count(lowered, "target_cpu = \"" + want + "\""));
  if (!(env && *env && std::string(env) != "host")) {
    EXPECT_NE(lowered.find("\"-"), std::string::npos) << "the host's features are listed on and off";
  }
}

// The runtime's cpuid detection (runtime/cpu/HostFeatures.cpp, MLIR- and LLVM-free) agrees with LLVM's
// (llvm::sys::getHostCPUFeatures) on every feature LLVM reports for this host.
TEST_F(TargetAndBf16Test, TheRuntimesHostFeaturesMatchLLVM) {
  const std::vector<std::string> &known = cpu::knownCpuFeatures();
  const std::vector<std::string> &host = cpu::hostCpuFeatures();
  llvm::StringMap<bool> llvmHost = llvm::sys::getHostCPUFeatures();
  ASSERT_FALSE(llvmHost.empty());
  for (const auto &f : llvmHost) {
    const std::string n = f.first().str();
    EXPECT_TRUE(std::binary_search(known.begin(), known.end(), n)) << n << " is not known to the runtime";
    EXPECT_EQ(std::binary_search(host.begin(), host.end(), n), f.second) << n;
  }
}

// Every feature of every x86-64 CPU LLVM knows (with the features they imply) can be checked by the runtime, so a
// step library built for any of them is judged, never refused as "cannot detect".
TEST_F(TargetAndBf16Test, EveryFeatureOfEveryLLVMCpuIsKnownToTheRuntime) {
  const std::vector<std::string> &known = cpu::knownCpuFeatures();
  llvm::SmallVector<llvm::StringRef> cpus;
  llvm::X86::fillValidCPUArchList(cpus, /*Only64Bit=*/true);
  ASSERT_GT(cpus.size(), 20u);
  for (llvm::StringRef c : cpus) {
    std::string error;
    FailureOr<mlir::dsa::CPUTarget> t = mlir::dsa::resolveCPUTarget(c, error);
    ASSERT_TRUE(succeeded(t)) << c.str() << ": " << error;
    EXPECT_FALSE(t->enabledFeatures().empty()) << c.str();
    for (const std::string &f : t->enabledFeatures())
      EXPECT_TRUE(std::binary_search(known.begin(), known.end(), f)) << c.str() << ": " << f;
  }
}

TEST_F(TargetAndBf16Test, DsaCpuIsTheDefaultTarget) {
  OwningOpRef<ModuleOp> m = parse(kConversions);
  ASSERT_TRUE(m);
  const char *old = std::getenv("DSA_CPU");
  const std::string saved = old ? old : "";
  ASSERT_EQ(setenv("DSA_CPU", "x86-64-v2", 1), 0);
  ::dsa::Result<std::unique_ptr<cpu::CPUModule>> v2 = cpu::compileForCPU(*m, cpu::CPUCompileOptions{});
  cpu::CPUCompileOptions named;
  named.targetCpu = "x86-64-v3"; // an explicit name wins over $DSA_CPU
  ::dsa::Result<std::unique_ptr<cpu::CPUModule>> v3 = cpu::compileForCPU(*m, named);
  ASSERT_EQ(setenv("DSA_CPU", "no-such-cpu", 1), 0);
  ::dsa::Result<std::unique_ptr<cpu::CPUModule>> bad = cpu::compileForCPU(*m, cpu::CPUCompileOptions{});
  if (old)
    setenv("DSA_CPU", saved.c_str(), 1);
  else
    unsetenv("DSA_CPU");
  ASSERT_TRUE(v2.ok()) << v2.error();
  EXPECT_NE((*v2)->loweredModule().find("target_cpu = \"x86-64-v2\""), std::string::npos);
  ASSERT_TRUE(v3.ok()) << v3.error();
  EXPECT_NE((*v3)->loweredModule().find("target_cpu = \"x86-64-v3\""), std::string::npos);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("unknown CPU 'no-such-cpu'"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("$DSA_CPU"), std::string::npos) << bad.error();
}

TEST_F(TargetAndBf16Test, AnUnknownCpuIsAnError) {
  OwningOpRef<ModuleOp> m = parse(kConversions);
  ASSERT_TRUE(m);
  cpu::CPUCompileOptions options;
  options.targetCpu = "pentium-9000";
  ::dsa::Result<std::unique_ptr<cpu::CPUModule>> r = cpu::compileForCPU(*m, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("cpu backend: unknown CPU 'pentium-9000': expected 'host' or an LLVM x86-64 CPU name"),
            std::string::npos)
      << r.error();
  ::dsa::Result<std::string> aot = cpu::emitCPUStepLibrary(*m, ::testing::TempDir() + "/unknown-cpu", "x", options);
  ASSERT_FALSE(aot.ok());
  EXPECT_NE(aot.error().find("unknown CPU 'pentium-9000'"), std::string::npos) << aot.error();
}

TEST_F(TargetAndBf16Test, TheJitRefusesACpuThisHostCannotRun) {
  // sapphirerapids has AMX and AVX512-FP16; a host with both (a Sapphire Rapids or later) cannot show the refusal.
  const std::vector<std::string> &host = cpu::hostCpuFeatures();
  auto has = [&](const char *f) { return std::binary_search(host.begin(), host.end(), std::string(f)); };
  if (has("amx-tile") && has("amx-bf16") && has("avx512fp16"))
    GTEST_SKIP() << "this host has AMX and AVX512-FP16";
  OwningOpRef<ModuleOp> m = parse(kConversions);
  ASSERT_TRUE(m);
  cpu::CPUCompileOptions options;
  options.targetCpu = "sapphirerapids";
  ::dsa::Result<std::unique_ptr<cpu::CPUModule>> r = cpu::compileForCPU(*m, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("cpu backend: JIT code was built for sapphirerapids; this host lacks "), std::string::npos)
      << r.error();
  for (const char *f : {"amx-bf16", "amx-tile", "avx512fp16"})
    if (!has(f)) {
      EXPECT_NE(r.error().find(f), std::string::npos) << f << " is not named: " << r.error();
    }
}

// The LLVM IR form of the check (compiler/lib/Backend/Common/HostObject.h), run by the JIT and the step library emitter on
// the optimised module before code generation: no bfloat anywhere. x86 code generation converts even a bfloat phi
// of two loads (test/Conversion/DSAToCPU/bf16-as-i16.mlir, CONTROL lines).
TEST_F(TargetAndBf16Test, TheLLVMIRCheckFindsEveryBf16ValueLeftToTheBackend) {
  auto check = [](const std::string &ir) -> ::dsa::Status {
    llvm::LLVMContext ctx;
    llvm::SMDiagnostic diag;
    std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(ir, diag, ctx);
    if (!m)
      return ::dsa::makeError("parse: " + diag.getMessage().str());
    return ::dsa::backend::checkNoBf16Conversions(*m, "test");
  };
  auto expectRejected = [&](const std::string &ir, const std::string &needle) {
    ::dsa::Status st = check(ir);
    ASSERT_FALSE(st.ok()) << ir;
    EXPECT_NE(st.error().find(needle), std::string::npos) << st.error();
  };
  expectRejected("define void @t(float %x, ptr %p) {\n  %r = fptrunc float %x to bfloat\n"
                 "  store bfloat %r, ptr %p\n  ret void\n}\n",
                 "test: @t holds a bfloat value (%r = fptrunc float %x to bfloat)");
  expectRejected("define void @e(ptr %p, ptr %q) {\n  %x = load bfloat, ptr %p\n  %r = fpext bfloat %x to float\n"
                 "  store float %r, ptr %q\n  ret void\n}\n",
                 "%x = load bfloat, ptr %p");
  expectRejected("define void @phi(ptr %a, ptr %b, ptr %o, i1 %c) {\nentry:\n  br i1 %c, label %x, label %y\n"
                 "x:\n  %va = load i16, ptr %a\n  %fa = bitcast i16 %va to bfloat\n  br label %j\n"
                 "y:\n  %vb = load i16, ptr %b\n  %fb = bitcast i16 %vb to bfloat\n  br label %j\n"
                 "j:\n  %v = phi bfloat [ %fa, %x ], [ %fb, %y ]\n  %w = bitcast bfloat %v to i16\n"
                 "  store i16 %w, ptr %o\n  ret void\n}\n",
                 "bitcast i16 %va to bfloat");
  expectRejected("define bfloat @ret(i16 %x) {\n  %b = bitcast i16 %x to bfloat\n  ret bfloat %b\n}\n",
                 "@ret takes or returns bfloat values");
  expectRejected("@g = global [2 x bfloat] zeroinitializer\n", "the global @g holds bfloat values");
  expectRejected("define void @gep(ptr %p, ptr %q) {\n  %a = getelementptr bfloat, ptr %p, i64 1\n"
                 "  store ptr %a, ptr %q\n  ret void\n}\n",
                 "getelementptr bfloat");
  expectRejected("declare float @__truncsfbf2(float)\n", "the bf16 conversion routine __truncsfbf2");
  // bf16 data as i16: fine.
  ::dsa::Status bits = check("define void @ok(ptr %p, ptr %q, i1 %c) {\n  %a = load i16, ptr %p\n"
                             "  %v = load <8 x i16>, ptr %q\n  %s = select i1 %c, i16 %a, i16 7\n"
                             "  %g = getelementptr i16, ptr %q, i64 3\n  store i16 %s, ptr %g\n"
                             "  store <8 x i16> %v, ptr %q\n  ret void\n}\n");
  EXPECT_TRUE(bits.ok()) << bits.error();
}

} // namespace
