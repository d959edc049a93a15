//===- DsaBench.cpp - V4.1-Flash attention layers: CPU backend vs interpreter vs memory floor ---===//
//
// Google Benchmark program (docs/benchmarks.md). DeepSeek-V4.1-Flash geometry (dim 5120, 64 heads, head_dim 512,
// rope 64, q_lora 1280, o_lora 1024, 8 groups, window 128), batch 1, seeded random weights, each layer built by
// mlir::dsa::buildAttentionFunction, compiled by the CPU backend (compileForCPU, weights and state passed as prepared
// CPUBuffers) and run for:
//   - a window-only layer (compress_ratio 0): a decode step (1 token at start_pos 1000, well past the window; the
//     ring is full of random rows), a 512-token prefill (start_pos 0) and a chunked prefill (512 tokens at
//     start_pos 4096, from the same full ring) run as the runtime runs a chunk: a Sequence resumed at 4096 whose
//     step roles say `chunked`, so planStep makes ONE call of the compiled function (checked: a runner counting
//     its calls), its `out` checked bit-identical to the interpreter's;
//   - an index-source layer (compress_ratio 4, kv + index source: compressor, index-key cache, indexer with 32 heads
//     x 128 and index_topk 512; max_seq_len 65536 + 1024): one decode step at start_pos = 4096 and 65536 (the
//     contexts; --dsa_index_contexts), its state (ring, kv_state / score_state, compressed-KV and index-key caches,
//     the shared slots) filled with seeded random values as if that many tokens had been processed (IndexLayer).
//     CPU/ and CPUParallel/ time it the way a user decodes: a Sequence resumed there whose state stays resident
//     (CPUModule::runValues: buffers kept between steps, caches updated in place), consecutive decode steps from
//     that position on; CPUPerCall/ calls CPUModule::run on the same prepared state each time (results converted
//     to Tensors). CPUBatched/index_decode_b<B> (and CPUParallelBatched/): the same layer's batched decode step of
//     B = 1, 4, 16, 64 sequences from that state at 4096 + b, through a runtime::Batch (BatchedIndexLayer), rows 0
//     and B - 1 checked bit-identical to their batch-1 steps first.
// In the same run it measures
//   - the reference interpreter (interp::interpretFunction on the same module, decomposed, same inputs);
//   - the machine's streaming read bandwidth (a buffer of 1 GiB, far larger than the caches), one thread and all
//     hardware threads;
//   - the machine's compute peaks (Peak/fma, Peak/muladd: f32 FMA 16 lanes wide on AVX-512 hosts, 8 on AVX2, and separate multiply + add as the
//     bit-exact lowering issues them), one thread and all hardware threads; the prefill and the CPUOp/ benchmarks
//     (the prefill's five products alone, 512 tokens) report their GFLOP/s as ratios to them (x_fma_peak,
//     x_muladd_peak, x_fma_peak_cpu);
// and reports, as counters of each CPU benchmark:
//   step_ms        wall-clock milliseconds per step (the same as the benchmark's real time);
//   cpu_ms         process CPU milliseconds per step (serial only: on a shared machine the wall clock also counts
//                  the time the step waited for a core; the process CPU time does not);
//   interp_ms      the interpreter's wall-clock time per step (interp_cpu_ms: its process CPU time);
//   speedup_interp interp_ms / step_ms: how many times faster than the interpreter (speedup_interp_cpu: the same
//                  from CPU times, serial only);
//   bytes_MB       the bytes the step must move at least: every weight it uses read once (bf16; attn_sink and the
//                  ratio-4 compressor's wkv / wgate f32), the ring read once and the new ring written once (x and out
//                  are noise); for the index-source layer also kv_state / score_state read and written, the
//                  index-key cache rows the indexer scores (context/4 x 128 bf16) and the compressed-KV rows
//                  attention gathers (512 x 512 bf16) (IndexLayer::stepBytes);
//   floor_ms       bytes_MB / the machine's read bandwidth (the better of one thread and all hardware threads);
//   x_mem_floor    step_ms / floor_ms (1.0 = running at the machine's memory-read floor; issue 4's decode target
//                  is <= 2); x_mem_floor_cpu: cpu_ms / floor_ms (serial only);
//   GFLOPs         floating-point rate from step_ms (2 flops per multiply-add of the linears and the attention).
//   context, index_rows  (index-source layer) start_pos of the decode step; compressed positions the indexer scores.
// After the run it prints every issue-13 target it measured with its ratio, and the ones it cannot measure yet
// (printTargets, to stderr). Flags of its own (besides Google Benchmark's): --dsa_skip_interpreter (no interpreter runs: no speedup_interp,
// used by bench/torch_compare.py), --dsa_buffer_mib=N (size of the bandwidth buffer, default 1024),
// --dsa_index_contexts=A,B,... (the index-source layer's decode positions, default 4096,65536), --dsa_no_in_place
// (compile with CPUCompileOptions::inPlaceCaches = false: every step copies the caches, for before/after runs),
// --dsa_phase_min_rows=N (CPUCompileOptions::phaseMinRows: the products' phase kernel from N rows; 0: never),
// --dsa_op_tokens=N (the CPUOp/ benchmarks' rows of x, default 512).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Backend/CPU/CPUModule.h"

#include "dsa/Dialect/DSA/IR/AttentionBuilder.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"
#include "dsa/Interpreter/Interpreter.h"
#include "dsa/Runtime/CPU/StepLibrary.h"
#include "dsa/Runtime/Host/Batch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "RandomLayer.h" // test/Backend/CPU: the seeded generator shared with the differential tests

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using namespace mlir;
namespace interp = ::dsa::interp;
namespace cpu = ::dsa::cpu;
namespace runtime = ::dsa::runtime;
using ::dsa::ElementType;
using ::dsa::Tensor;

namespace {

using ::dsa::test::fanIn;
using ::dsa::test::Random;
using ::dsa::test::randomTensor;

bool gSkipInterpreter = false;
/// --dsa_no_in_place: compile with CPUCompileOptions::inPlaceCaches = false (every step copies the caches, the
/// behaviour before in-place caches), for before/after comparisons.
bool gNoInPlace = false;
/// --dsa_phase_min_rows=N: CPUCompileOptions::phaseMinRows (the products' phase kernel from N rows of x; 0: never),
/// for before/after comparisons of the phase kernel in one binary.
int64_t gPhaseMinRows = cpu::CPUCompileOptions().phaseMinRows;
/// --dsa_op_tokens=N: the rows of x of the CPUOp/ benchmarks (default 512, the prefill's; 4, 16, 64 measure the
/// products as batched decode of that many sequences runs them).
int64_t gOpTokens = 512;
size_t gBufferMiB = 1024;
std::vector<int64_t> gIndexContexts = {4096, 65536};

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
/// CPU seconds used by the whole process so far (every thread).
double processCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "dsa-bench: error: %s\n", message.c_str());
  std::exit(2);
}

//===----------------------------------------------------------------------------------------------------------===//
// Memory-read floor
//===----------------------------------------------------------------------------------------------------------===//

/// Sums `n` 64-bit words (four independent chains, so the loop is bound by the loads, not by the adds).
__attribute__((noinline, target_clones("avx512f", "avx2", "default"))) uint64_t sumWords(const uint64_t *p,
                                                                                          size_t n) {
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += p[i];
    s1 += p[i + 1];
    s2 += p[i + 2];
    s3 += p[i + 3];
  }
  for (; i < n; ++i)
    s0 += p[i];
  return (s0 + s1) + (s2 + s3);
}

/// Streaming read bandwidth in bytes/s over a buffer of gBufferMiB with `threads` threads, each reading its own
/// contiguous slice; the best of several passes (the floor is what the machine CAN do). Measured once per thread
/// count and cached.
double readBandwidth(unsigned threads) {
  static std::map<unsigned, double> cache;
  if (auto it = cache.find(threads); it != cache.end())
    return it->second;
  const size_t words = gBufferMiB * (1u << 20) / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> buffer(new uint64_t[words]);
  for (size_t i = 0; i < words; ++i) // touch every page, and give the adds something to add
    buffer[i] = i * 0x9E3779B97F4A7C15ull;
  double best = 0;
  std::vector<uint64_t> sums(threads);
  for (int pass = 0; pass < 5; ++pass) {
    auto t0 = Clock::now();
    std::vector<std::thread> pool;
    const size_t slice = words / threads;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { sums[t] = sumWords(buffer.get() + t * slice, slice); });
    for (std::thread &th : pool)
      th.join();
    double s = secondsSince(t0);
    benchmark::DoNotOptimize(sums.data());
    best = std::max(best, static_cast<double>(slice * threads * sizeof(uint64_t)) / s);
  }
  cache[threads] = best;
  return best;
}

unsigned hardwareThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

/// What the machine can read: the better of one thread and all hardware threads (on a shared machine the
/// all-threads pass can come out lower than one thread: the other cores are busy).
double machineBandwidth() { return std::max(readBandwidth(1), readBandwidth(hardwareThreads())); }

//===----------------------------------------------------------------------------------------------------------===//
// Compute peak (issue 13: the prefill's GFLOP/s as a fraction of what this machine's cores can issue)
//===----------------------------------------------------------------------------------------------------------===//

// Two loops on f32 vectors as wide as the lowering's widest (docs/cpu-backend.md: 16 lanes in the AVX-512 prefill
// blocks, 8 on AVX2), each with enough independent accumulators to hide the latency, so that they run at the issue
// rate of the floating-point pipes:
//   fma     acc_i = fma(acc_i, b, c), 12 chains (vfmadd231ps: 4-5 cycles latency x 2 pipes on Zen 2-4 and Intel
//           since Haswell): 2 flops per lane per instruction.
//   mul+add acc_i = acc_i + x_(i%2) * b_(i/2) with the product kept as its own vmulps (x0, x1 "changed" by an empty
//           asm every iteration, so no product is hoisted or shared; an empty asm on each product stops the compiler
//           from contracting it into an FMA), 8 add chains: what the unfused lowering issues (it contracts only
//           where the products are exact, docs/cpu-backend.md "Lowering"). On AMD Zen the adds have their own two
//           pipes, so this can reach the FMA peak; on Intel the adds share the FMA ports and it tops out below it.
// Each loop is compiled for its ISA by a target attribute, not by the build's flags, and called only when cpuid
// says the host has it (__builtin_cpu_supports), so the binary runs on any x86-64: AVX-512F hosts run the 16-lane
// loops (zmm: Intel's server cores issue two 16-lane FMAs per cycle, twice the 8-lane rate; Zen 4 double-pumps
// them, the same flops as 8 lanes), AVX2 + FMA hosts the 8-lane ones; without AVX2 + FMA the FMA peak is reported
// as unavailable and the mul+add peak is the SSE2 loop (4 lanes).

constexpr int kFmaChains = 12, kMulAddChains = 8;
/// Flops of one iteration of each loop (2 per lane per fma, 1 per lane per mul and per add).
constexpr double kFmaFlopsPerIter = 2.0 * 8 * kFmaChains;
constexpr double kMulAddFlopsPerIter = 2.0 * 8 * kMulAddChains;
constexpr double kFma512FlopsPerIter = 2.0 * 16 * kFmaChains;
constexpr double kMulAdd512FlopsPerIter = 2.0 * 16 * kMulAddChains;
constexpr double kMulAddSseFlopsPerIter = 2.0 * 4 * kMulAddChains;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DSA_BENCH_X86_PEAK 1
__attribute__((noinline, target("avx2,fma"))) float fmaPeakLoopAvx2(int64_t iters) {
  __m256 acc[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i)
    acc[i] = _mm256_set1_ps(1.0f + 0.01f * static_cast<float>(i));
  const __m256 b = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f); // acc -> 1: no overflow, no denormals
  for (int64_t n = 0; n < iters; ++n)
    for (int i = 0; i < kFmaChains; ++i)
      acc[i] = _mm256_fmadd_ps(acc[i], b, c);
  __m256 s = acc[0];
  for (int i = 1; i < kFmaChains; ++i)
    s = _mm256_add_ps(s, acc[i]);
  return _mm256_cvtss_f32(s);
}

__attribute__((noinline, target("avx512f"))) float fmaPeakLoopAvx512(int64_t iters) {
  __m512 acc[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i)
    acc[i] = _mm512_set1_ps(1.0f + 0.01f * static_cast<float>(i));
  const __m512 b = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f); // acc -> 1: no overflow, no denormals
  for (int64_t n = 0; n < iters; ++n)
    for (int i = 0; i < kFmaChains; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], b, c);
  __m512 s = acc[0];
  for (int i = 1; i < kFmaChains; ++i)
    s = _mm512_add_ps(s, acc[i]);
  alignas(64) float lanes[16]; // (not _mm512_reduce_add_ps: GCC 12's header warns on its undefined halves)
  _mm512_store_ps(lanes, s);
  return lanes[0] + lanes[15];
}

/// The mul+add loop on a vector type V of f32 lanes (__m256: 8, __m128: 4). Its ops are the compiler's vector
/// operators (broadcast of a scalar, *, +), not intrinsics: an always_inline body without a target of its own
/// takes the ISA of the function it is inlined into, so the same loop becomes vmulps / vaddps ymm in the
/// target("avx2,fma") function and mulps / addps xmm in the baseline one (an intrinsic such as _mm256_mul_ps may
/// not be inlined into a body that lacks its target, and a template cannot take a target attribute per type).
template <class V> __attribute__((always_inline)) inline float mulAddPeakLoop(int64_t iters) {
  V acc[kMulAddChains];
  for (int i = 0; i < kMulAddChains; ++i)
    acc[i] = V{} + 0.0f;
  V x0 = V{} + 1e-3f, x1 = V{} + 2e-3f;
  V b[kMulAddChains / 2];
  for (int j = 0; j < kMulAddChains / 2; ++j)
    b[j] = V{} + (0.5f + 0.125f * static_cast<float>(j));
  for (int64_t n = 0; n < iters; ++n) {
    asm volatile("" : "+x"(x0), "+x"(x1)); // the products are not loop-invariant: one multiply each per iteration
    for (int i = 0; i < kMulAddChains; ++i) {
      V p = ((i & 1) ? x1 : x0) * b[i / 2];
      asm("" : "+x"(p)); // keep the multiply and the add apart (no contraction into an FMA)
      acc[i] = acc[i] + p;
    }
  }
  V s = acc[0];
  for (int i = 1; i < kMulAddChains; ++i)
    s = s + acc[i];
  return s[0];
}

__attribute__((noinline, target("avx2,fma"))) float mulAddPeakLoopAvx2(int64_t iters) {
  return mulAddPeakLoop<__m256>(iters);
}

__attribute__((noinline, target("avx512f"))) float mulAddPeakLoopAvx512(int64_t iters) {
  return mulAddPeakLoop<__m512>(iters);
}

__attribute__((noinline)) float mulAddPeakLoopSse2(int64_t iters) { return mulAddPeakLoop<__m128>(iters); }

bool hostHasAvx2Fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
bool hostHasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && hostHasAvx2Fma();
}
#else
bool hostHasAvx2Fma() { return false; }
bool hostHasAvx512() { return false; }
#endif

enum class PeakKind { Fma, MulAdd };
const char *peakName(PeakKind k) { return k == PeakKind::Fma ? "fma" : "muladd"; }

/// The instruction set a peak loop runs with on this host ("" when it cannot run here).
std::string peakIsa(PeakKind k) {
#ifdef DSA_BENCH_X86_PEAK
  if (hostHasAvx512())
    return "avx512f, 16 lanes";
  if (hostHasAvx2Fma())
    return "avx2+fma, 8 lanes";
  return k == PeakKind::MulAdd ? "sse2, 4 lanes" : "";
#else
  (void)k;
  return "";
#endif
}

/// Runs one peak loop for `iters` iterations; returns its flops (0 when it cannot run on this host).
double runPeakLoop(PeakKind k, int64_t iters) {
#ifdef DSA_BENCH_X86_PEAK
  float r = 0;
  double flops = 0;
  if (hostHasAvx512()) {
    r = k == PeakKind::Fma ? fmaPeakLoopAvx512(iters) : mulAddPeakLoopAvx512(iters);
    flops = (k == PeakKind::Fma ? kFma512FlopsPerIter : kMulAdd512FlopsPerIter) * static_cast<double>(iters);
  } else if (hostHasAvx2Fma()) {
    r = k == PeakKind::Fma ? fmaPeakLoopAvx2(iters) : mulAddPeakLoopAvx2(iters);
    flops = (k == PeakKind::Fma ? kFmaFlopsPerIter : kMulAddFlopsPerIter) * static_cast<double>(iters);
  } else if (k == PeakKind::MulAdd) {
    r = mulAddPeakLoopSse2(iters);
    flops = kMulAddSseFlopsPerIter * static_cast<double>(iters);
  }
  benchmark::DoNotOptimize(r);
  return flops;
#else
  (void)k;
  (void)iters;
  return 0;
#endif
}

/// CPU seconds used by the calling thread so far.
double threadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// A peak: flop/s of wall-clock time with `threads` threads running at once, and flop per CPU second of one core
/// (each thread's flops over its own CPU time: what a core does while it runs, whatever else the machine runs).
struct Peak {
  double wall = 0, perCpuSecond = 0;
};

/// The peak of loop `k` on `threads` threads running at once (each its own loop, ~0.2 s), the best of 5 passes;
/// measured once per (loop, threads) and cached. Zeros when the loop cannot run on this host.
Peak computePeak(PeakKind k, unsigned threads) {
  static std::map<std::pair<int, unsigned>, Peak> cache;
  const auto key = std::make_pair(static_cast<int>(k), threads);
  if (auto it = cache.find(key); it != cache.end())
    return it->second;
  if (runPeakLoop(k, 1) == 0)
    return cache[key] = Peak{};
  // Iterations for ~0.2 s: calibrated on one thread.
  int64_t iters = 1 << 16;
  for (;;) {
    auto t0 = Clock::now();
    runPeakLoop(k, iters);
    if (secondsSince(t0) > 0.05 || iters > (int64_t{1} << 40))
      break;
    iters *= 2;
  }
  iters *= 4;
  Peak best;
  for (int pass = 0; pass < 5; ++pass) {
    std::vector<double> flops(threads), cpu(threads);
    auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const double c0 = threadCpuSeconds();
        flops[t] = runPeakLoop(k, iters);
        cpu[t] = threadCpuSeconds() - c0;
      });
    for (std::thread &th : pool)
      th.join();
    const double s = secondsSince(t0);
    double total = 0;
    for (unsigned t = 0; t < threads; ++t) {
      total += flops[t];
      if (cpu[t] > 0)
        best.perCpuSecond = std::max(best.perCpuSecond, flops[t] / cpu[t]);
    }
    best.wall = std::max(best.wall, total / s);
  }
  return cache[key] = best;
}

//===----------------------------------------------------------------------------------------------------------===//
// The layers
//===----------------------------------------------------------------------------------------------------------===//

/// DeepSeek-V4.1-Flash's attention geometry (attention-semantics.md section 1).
struct Geometry {
  int64_t dim = 5120, nHeads = 64, headDim = 512, ropeDim = 64, qLora = 1280, oLora = 1024, oGroups = 8,
          window = 128;
  double normEps = 1e-20, ropeTheta = 1e4;
  int64_t groupWidth() const { return nHeads * headDim / oGroups; }
  /// Multiply-adds of the five linears for one token.
  int64_t linearMacsPerToken() const {
    return qLora * dim + nHeads * headDim * qLora + headDim * dim + oGroups * oLora * groupWidth() +
           dim * oGroups * oLora;
  }
  /// The layer's configuration for the builder (ratio 0; the index-source layer adds its own fields).
  mlir::dsa::AttentionLayerConfig config(int64_t layerId) const {
    mlir::dsa::AttentionLayerConfig c;
    c.layerId = layerId;
    c.dim = dim;
    c.nHeads = nHeads;
    c.headDim = headDim;
    c.ropeHeadDim = ropeDim;
    c.qLoraRank = qLora;
    c.oGroups = oGroups;
    c.oLoraRank = oLora;
    c.windowSize = window;
    c.normEps = normEps;
    c.ropeTheta = ropeTheta;
    return c;
  }
};

/// A [rows, cols] tensor whose first `filled` rows are `scale * U[-1, 1)` and the rest zero (a cache that holds
/// `filled` rows so far).
Tensor partlyFilled(Random &rng, ElementType type, int64_t rows, int64_t cols, int64_t filled, float scale) {
  std::vector<float> v(static_cast<size_t>(rows * cols), 0.0f);
  for (size_t i = 0; i < static_cast<size_t>(filled * cols); ++i)
    v[i] = scale * rng.symmetric();
  return Tensor::fromFloats(type, {rows, cols}, std::move(v));
}

int64_t byteSize(const Tensor &t) { return t.numElements() * (t.elementType() == ElementType::F32 ? 4 : 2); }

/// dsa.attention's weights(...) group: attn_sink f32, wq_a, q_norm, wq_b, wkv, kv_norm, wo_a, wo_b bf16
/// (test/Backend/CPU/RandomLayer.h, the differential tests' generator).
std::vector<Tensor> attentionWeights(Random &rng, const Geometry &g) {
  return ::dsa::test::randomWindowWeights(rng, {g.dim, g.nHeads, g.headDim, g.qLora, g.oLora, g.oGroups});
}

/// What both layers share: the module with one layer function (built by mlir::dsa::buildAttentionFunction), its
/// decomposition for the interpreter and its CPU compilations.
struct CompiledLayer {
  MLIRContext context;
  OwningOpRef<ModuleOp> module, decomposed;
  func::FuncOp interpFn;
  std::unique_ptr<cpu::CPUModule> serial, parallel;
  std::string fnName;

  /// `batched`: the layer as a batched decode step of any number of sequences (x [B, 1, dim], start_pos
  /// tensor<B x i64>, ring [B, W, hd]; window-only layers).
  void build(const mlir::dsa::AttentionLayerConfig &config, bool batched = false) {
    context.loadDialect<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, tensor::TensorDialect,
                        scf::SCFDialect>();
    module = ModuleOp::create(UnknownLoc::get(&context));
    OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
    fnName = config.functionName();
    FailureOr<mlir::dsa::AttentionOperandTypes> types =
        batched ? mlir::dsa::batchedAttentionOperandTypes(module->getLoc(), config, ShapedType::kDynamic)
                : mlir::dsa::canonicalAttentionOperandTypes(module->getLoc(), config);
    if (failed(types) || failed(mlir::dsa::buildAttentionFunction(builder, module->getLoc(), config, *types)))
      die("could not build the layer's function (see the diagnostic above)");
    decomposed = OwningOpRef<ModuleOp>(module->clone());
    PassManager pm(&context);
    pm.addPass(mlir::dsa::createDSADecomposeAttention());
    if (failed(pm.run(*decomposed)))
      die("dsa-decompose-attention failed (see the diagnostic above)");
    interpFn = decomposed->lookupSymbol<func::FuncOp>(fnName);
    cpu::CPUCompileOptions options;
    options.inPlaceCaches = !gNoInPlace;
    options.phaseMinRows = gPhaseMinRows;
    ::dsa::Result<std::unique_ptr<cpu::CPUModule>> m = cpu::compileForCPU(*module, options);
    if (!m)
      die("compileForCPU: " + m.error());
    serial = m.take();
  }

  /// The OpenMP module, compiled on first use; null (with the reason in `why`) when there is no OpenMP runtime.
  cpu::CPUModule *parallelModule(std::string &why) {
    if (!parallel) {
      cpu::CPUCompileOptions options;
      options.parallel = true;
      options.inPlaceCaches = !gNoInPlace;
      options.phaseMinRows = gPhaseMinRows;
      ::dsa::Result<std::unique_ptr<cpu::CPUModule>> m = cpu::compileForCPU(*module, options);
      if (!m) {
        why = m.error();
        return nullptr;
      }
      parallel = m.take();
    }
    return parallel.get();
  }

  /// Runs the step on the CPU backend; returns `out`.
  Tensor runCPU(const cpu::CPUModule &m, const std::vector<runtime::HostValue> &args) const {
    ::dsa::Result<std::vector<Tensor>> r = m.run(fnName, args);
    if (!r)
      die("CPU backend: " + r.error());
    benchmark::DoNotOptimize(r->front().floats());
    return std::move(r->front());
  }

  /// Runs the step on the interpreter; returns `out`.
  Tensor runInterpreter(const std::vector<Tensor> &args) const {
    FailureOr<std::vector<Tensor>> r = interp::interpretFunction(interpFn, args, nullptr);
    if (failed(r))
      die("interpreter failed (see the diagnostic above)");
    benchmark::DoNotOptimize(r->front().floats());
    return std::move(r->front());
  }
};

/// The window-only layer's steps: a decode (1 token at start_pos 1000), a prefill (512 tokens at 0) and a chunked
/// prefill (512 tokens at start_pos 4096: a multi-token step at start_pos > 0, which the CPU lowering runs as one
/// step, docs/architecture.md "Steps the reference does not have").
enum class WindowStep { Decode, Prefill, Chunk };

/// The window-only layer (compress_ratio 0) and its decode, prefill and chunk inputs (built once). The ring is
/// full of random bf16 rows: the state after any start_pos >= window tokens (1000 for the decode, 4096 for the
/// chunk; the values are random, which is all timing needs).
struct Layer {
  Geometry g;
  CompiledLayer compiled;
  std::vector<Tensor> weights;
  std::vector<runtime::HostValue> prepared;
  Tensor ring, xDecode, xPrefill, xChunk;
  int64_t decodeStartPos = 1000;
  int64_t prefillTokens = 512;
  int64_t chunkStartPos = 4096, chunkTokens = 512;
  int64_t weightBytes = 0;

  Layer() {
    Random rng(4);
    weights = attentionWeights(rng, g);
    for (const Tensor &w : weights) {
      weightBytes += byteSize(w);
      prepared.push_back(runtime::HostBuffer::fromTensor(w));
    }
    ring = randomTensor(rng, ElementType::BF16, {g.window, g.headDim}, 1.0f);
    xDecode = randomTensor(rng, ElementType::BF16, {1, g.dim}, 1.0f);
    xPrefill = randomTensor(rng, ElementType::BF16, {prefillTokens, g.dim}, 1.0f);
    xChunk = randomTensor(rng, ElementType::BF16, {chunkTokens, g.dim}, 1.0f);
    compiled.build(g.config(0));
  }

  const Tensor &input(WindowStep k) const {
    return k == WindowStep::Prefill ? xPrefill : k == WindowStep::Chunk ? xChunk : xDecode;
  }
  int64_t startPos(WindowStep k) const {
    return k == WindowStep::Prefill ? 0 : k == WindowStep::Chunk ? chunkStartPos : decodeStartPos;
  }
  int64_t tokens(WindowStep k) const {
    return k == WindowStep::Prefill ? prefillTokens : k == WindowStep::Chunk ? chunkTokens : 1;
  }

  /// CPUModule::run of the step (the decode and the prefill; the chunk runs through a ChunkSequence).
  void runCPU(const cpu::CPUModule &m, WindowStep k) const {
    std::vector<runtime::HostValue> args = {input(k), Tensor::scalarI64(startPos(k)), ring};
    args.insert(args.end(), prepared.begin(), prepared.end());
    compiled.runCPU(m, args);
  }

  /// Runs the step on the interpreter; returns `out`.
  Tensor runInterpreter(WindowStep k) const {
    std::vector<Tensor> args = {input(k), Tensor::scalarI64(startPos(k)), ring};
    args.insert(args.end(), weights.begin(), weights.end());
    return compiled.runInterpreter(args);
  }

  /// The chunk as the runtime runs it: a Sequence resumed at chunkStartPos from the ring, with the module's step
  /// roles (cpu::addStepRoles: `chunked`, so runtime::planStep makes ONE call of the compiled function for the
  /// 512 tokens) and CPUModule::runValues as its runner, counting the runner's calls.
  struct ChunkSequence {
    std::unique_ptr<runtime::Sequence> sequence;
    std::shared_ptr<int64_t> calls = std::make_shared<int64_t>(0);
  };
  ChunkSequence chunkSequence(const cpu::CPUModule &m) const {
    const runtime::FunctionSignature *compiledSig = m.signature(compiled.fnName);
    if (!compiledSig)
      die("no function @" + compiled.fnName + " in the compiled module");
    runtime::FunctionSignature sig = *compiledSig;
    cpu::addStepRoles(*compiled.module, sig);
    if (!sig.step.chunked)
      die("the window-only layer's step roles do not say `chunked`: the runtime would split the chunk");
    std::vector<runtime::HostValue> args = {xChunk, Tensor::scalarI64(chunkStartPos),
                                            runtime::HostBuffer::fromTensor(ring)};
    args.insert(args.end(), prepared.begin(), prepared.end());
    ChunkSequence cs;
    const std::string name = compiled.fnName;
    std::shared_ptr<int64_t> calls = cs.calls;
    runtime::Sequence::ValueRunner runner = [&m, name, calls](const std::vector<runtime::HostValue> &a,
                                                              std::vector<runtime::NamedTensor> *) {
      ++*calls;
      return m.runValues(name, a);
    };
    ::dsa::Result<runtime::Sequence> seq = runtime::Sequence::create(sig, runner, args, chunkStartPos);
    if (!seq)
      die("Sequence: " + seq.error());
    cs.sequence = std::make_unique<runtime::Sequence>(seq.take());
    return cs;
  }
  /// One chunk of `cs` at chunkStartPos (reset() first: back to the ring as it stood at 4096), through
  /// Sequence::run (the results converted to Tensors, as CPUModule::run does for the prefill at 0); returns `out`.
  /// Dies unless the runtime made exactly one call of the compiled function.
  Tensor runChunk(ChunkSequence &cs) const {
    cs.sequence->reset();
    const int64_t before = *cs.calls;
    ::dsa::Result<std::vector<Tensor>> r = cs.sequence->run(xChunk, chunkStartPos);
    if (!r)
      die("CPU backend (chunk through the runtime): " + r.error());
    if (*cs.calls - before != 1)
      die("the runtime ran the chunk as " + std::to_string(*cs.calls - before) + " calls, not one");
    benchmark::DoNotOptimize(r->front().floats());
    return std::move(r->front());
  }

  /// Bytes a step must move at least: the weights once, the ring read and the new ring written.
  double stepBytes() const { return static_cast<double>(weightBytes + 2 * g.window * g.headDim * 2); }
  /// 2 flops per multiply-add: the linears, q.k and p.v over the window rows each query reads.
  /// (Prefill: min(s, window) rows per query, as an upper bound; decode and chunk: every token reads the window.)
  double stepFlops(WindowStep k) const {
    const int64_t s = tokens(k);
    const int64_t rows = k == WindowStep::Prefill ? std::min(s, g.window) : g.window;
    return 2.0 * static_cast<double>(s) *
           (static_cast<double>(g.linearMacsPerToken()) + 2.0 * static_cast<double>(g.nHeads * rows * g.headDim));
  }
};

std::unique_ptr<Layer> gLayer;
Layer &layer();
bool sameBits(const Tensor &a, const Tensor &b);

/// The window-only layer as a batched decode step (issue 13 scope 1; the same weights as Layer): B sequences, each
/// one token at its own position (1000 + 37 b: different ring slots), each with its own ring (Layer's ring).
struct BatchedLayer {
  CompiledLayer compiled;
  std::map<int64_t, std::vector<runtime::HostValue>> inputs; // by B: x [B, 1, dim], start_pos [B], ring [B, W, hd]

  explicit BatchedLayer(const Layer &l) { compiled.build(l.g.config(0), /*batched=*/true); }

  static int64_t position(int64_t b) { return 1000 + 37 * b; }

  const std::vector<runtime::HostValue> &args(const Layer &l, int64_t batch) {
    auto it = inputs.find(batch);
    if (it != inputs.end())
      return it->second;
    Random rng(500 + static_cast<uint64_t>(batch));
    Tensor x = randomTensor(rng, ElementType::BF16, {batch, 1, l.g.dim}, 1.0f);
    Tensor startPos(ElementType::I64, {batch});
    Tensor rings(ElementType::BF16, {batch, l.g.window, l.g.headDim});
    const int64_t ringSize = l.ring.numElements();
    for (int64_t b = 0; b < batch; ++b) {
      startPos.ints()[b] = position(b);
      std::memcpy(rings.floats() + b * ringSize, l.ring.floats(), sizeof(float) * static_cast<size_t>(ringSize));
    }
    std::vector<runtime::HostValue> a = {runtime::HostBuffer::fromTensor(x), runtime::HostBuffer::fromTensor(startPos),
                                         runtime::HostBuffer::fromTensor(rings)};
    a.insert(a.end(), l.prepared.begin(), l.prepared.end());
    // The benchmark's own check: the first and last rows equal their sequences' batch-1 steps (bit for bit).
    ::dsa::Result<std::vector<Tensor>> got = compiled.serial->run(compiled.fnName, a);
    if (!got)
      die("batched decode: " + got.error());
    for (int64_t b : {int64_t{0}, batch - 1}) {
      Tensor xb(ElementType::BF16, {1, l.g.dim});
      std::memcpy(xb.floats(), x.floats() + b * l.g.dim, sizeof(float) * static_cast<size_t>(l.g.dim));
      std::vector<runtime::HostValue> one = {xb, Tensor::scalarI64(position(b)), l.ring};
      one.insert(one.end(), l.prepared.begin(), l.prepared.end());
      Tensor want = l.compiled.runCPU(*l.compiled.serial, one);
      Tensor row(ElementType::BF16, {1, l.g.dim});
      std::memcpy(row.floats(), got->front().floats() + b * l.g.dim, sizeof(float) * static_cast<size_t>(l.g.dim));
      if (!sameBits(row, want))
        die("batched decode: row " + std::to_string(b) + " of batch " + std::to_string(batch) +
            " differs from its batch-1 step");
    }
    return inputs.emplace(batch, std::move(a)).first->second;
  }
};
std::unique_ptr<BatchedLayer> gBatchedLayer;
BatchedLayer &batchedLayer() {
  if (!gBatchedLayer) {
    auto t0 = Clock::now();
    gBatchedLayer = std::make_unique<BatchedLayer>(layer());
    std::fprintf(stderr, "dsa-bench: the batched decode step compiled in %.1f s\n", secondsSince(t0));
  }
  return *gBatchedLayer;
}

Layer &layer() {
  if (!gLayer) {
    auto t0 = Clock::now();
    gLayer = std::make_unique<Layer>();
    std::fprintf(stderr, "dsa-bench: V4.1-Flash window-only layer built and compiled in %.1f s (%.0f MB of bf16 "
                         "weights)\n",
                 secondsSince(t0), static_cast<double>(gLayer->weightBytes) / 1e6);
  }
  return *gLayer;
}

/// The index-source layer: compress_ratio 4, kv + index source (owns a compressor, an index-key cache and an
/// indexer; not a candidate source, uses no candidates: like V4.1-Flash's layers 2, 8, 14 but at ratio 4), at
/// V4.1-Flash geometry with its indexer (32 heads x 128, index_topk 512; candidate blocks 2048 x 8 configured, unused
/// by this role), compress_rope_theta 1.6e5 with YaRN (65536, 16, 32, 1), max_seq_len 65536 + 1024. One decode step
/// at start_pos = `context` for each context, from a state filled with seeded random values as if `context` tokens
/// had been processed: the ring full, kv_state / score_state random (finite), the compressed-KV and index-key caches
/// random in rows 0 .. context/4 - 1 (the groups completed so far) and zero beyond; shared slots as the previous step
/// left them: compress_kv and index_k this layer's caches (it published them), topk_idxs and candidates empty (an
/// index source that uses no candidates reads neither).
struct IndexLayer {
  static constexpr int64_t kRatio = 4, kIndexHeads = 32, kIndexHeadDim = 128, kIndexTopk = 512;
  static constexpr int64_t kMaxSeqLen = 65536 + 1024;
  Geometry g;
  CompiledLayer compiled;
  std::vector<Tensor> weights; // every weight operand, in argument order (weights, compressor, index_keys, indexer)
  std::vector<runtime::HostValue> prepared;
  int64_t attentionWeightBytes = 0, compressorBytes = 0, indexKeyWeightBytes = 0, indexerBytes = 0;
  Tensor xDecode;

  /// One context's state (and shared slots), as Tensors for the interpreter and prepared for the CPU backend.
  struct State {
    std::vector<Tensor> tensors;      // ring, kv_state, score_state, kv cache, index-key cache, 4 slots
    std::vector<runtime::HostValue> prepared;
  };
  std::map<int64_t, State> states;

  static int64_t capacity() { return (kMaxSeqLen + kRatio - 1) / kRatio; }

  mlir::dsa::AttentionLayerConfig config() const {
    mlir::dsa::AttentionLayerConfig c = g.config(2);
    c.compressRatio = kRatio;
    c.ropeTheta = 1.6e5; // compress_rope_theta
    c.yarn = mlir::dsa::AttentionYarn{65536, 16.0, 32.0, 1.0};
    mlir::dsa::AttentionCompress cc;
    cc.isKvSource = true;
    cc.isIndexSource = true;
    cc.indexNHeads = kIndexHeads;
    cc.indexHeadDim = kIndexHeadDim;
    cc.indexTopk = kIndexTopk;
    cc.candidateTopkBlocks = 2048;
    cc.candidateBlockSize = 8;
    cc.maxSeqLen = kMaxSeqLen;
    c.compress = cc;
    return c;
  }

  IndexLayer() {
    Random rng(40);
    weights = attentionWeights(rng, g);
    for (const Tensor &w : weights)
      attentionWeightBytes += byteSize(w);
    auto add = [&](Tensor t, int64_t &bytes) {
      bytes += byteSize(t);
      weights.push_back(std::move(t));
    };
    // compressor (ratio >= 2): wkv, wgate [hd, dim] f32, norm [hd] bf16.
    add(randomTensor(rng, ElementType::F32, {g.headDim, g.dim}, fanIn(g.dim)), compressorBytes);
    add(randomTensor(rng, ElementType::F32, {g.headDim, g.dim}, fanIn(g.dim)), compressorBytes);
    add(randomTensor(rng, ElementType::BF16, {g.headDim}, 0.1f, 1.0f), compressorBytes);
    // index_keys: wk [ihd, hd], k_norm [ihd].
    add(randomTensor(rng, ElementType::BF16, {kIndexHeadDim, g.headDim}, fanIn(g.headDim)), indexKeyWeightBytes);
    add(randomTensor(rng, ElementType::BF16, {kIndexHeadDim}, 0.1f, 1.0f), indexKeyWeightBytes);
    // indexer: wq_b [IH * ihd, q_lora], weights_proj [IH, dim].
    add(randomTensor(rng, ElementType::BF16, {kIndexHeads * kIndexHeadDim, g.qLora}, fanIn(g.qLora)), indexerBytes);
    add(randomTensor(rng, ElementType::BF16, {kIndexHeads, g.dim}, fanIn(g.dim)), indexerBytes);
    for (const Tensor &w : weights)
      prepared.push_back(runtime::HostBuffer::fromTensor(w));
    xDecode = randomTensor(rng, ElementType::BF16, {1, g.dim}, 1.0f);
    compiled.build(config());
  }

  const State &state(int64_t context) {
    auto it = states.find(context);
    if (it != states.end())
      return it->second;
    if (context < g.window || context + 1 > kMaxSeqLen)
      die("index-source decode: context " + std::to_string(context) + " outside [window, max_seq_len - 1]");
    Random rng(1000 + static_cast<uint64_t>(context));
    const int64_t groups = context / kRatio, cap = capacity();
    State st;
    st.tensors.push_back(randomTensor(rng, ElementType::BF16, {g.window, g.headDim}, 1.0f)); // ring (full)
    st.tensors.push_back(randomTensor(rng, ElementType::F32, {kRatio, g.headDim}, 1.0f));    // kv_state
    st.tensors.push_back(randomTensor(rng, ElementType::F32, {kRatio, g.headDim}, 1.0f));    // score_state
    st.tensors.push_back(partlyFilled(rng, ElementType::BF16, cap, g.headDim, groups, 1.0f));      // kv cache
    st.tensors.push_back(partlyFilled(rng, ElementType::BF16, cap, kIndexHeadDim, groups, 1.0f)); // index-key cache
    st.tensors.push_back(st.tensors[3]); // compress_kv slot: the kv cache this layer published
    st.tensors.push_back(st.tensors[4]); // index_k slot: its index-key cache (published at the last completed group)
    st.tensors.push_back(Tensor(ElementType::I32, {0, 0})); // topk_idxs
    st.tensors.push_back(Tensor(ElementType::I1, {0, 0}));  // candidates
    for (const Tensor &t : st.tensors)
      st.prepared.push_back(runtime::HostBuffer::fromTensor(t));
    return states.emplace(context, std::move(st)).first->second;
  }

  Tensor runCPU(const cpu::CPUModule &m, int64_t context) { return runCPUAt(m, context, xDecode, context); }
  /// The batch-1 decode of token `x` [1, dim] at `position` from state(context) (the batched benchmark's check).
  Tensor runCPUAt(const cpu::CPUModule &m, int64_t context, const Tensor &x, int64_t position) {
    const State &st = state(context);
    std::vector<runtime::HostValue> args = {x, Tensor::scalarI64(position), st.prepared[0]};
    args.insert(args.end(), prepared.begin(), prepared.end());
    args.insert(args.end(), st.prepared.begin() + 1, st.prepared.end());
    return compiled.runCPU(m, args);
  }

  /// The decode as a user runs it, with resident state: a Sequence resumed at `context` from the state, whose
  /// runner is CPUModule::runValues (the state and the shared slots stay the compiled code's buffers from step to
  /// step, the caches are updated in place, no Tensor conversion), one decode step per run at the next position.
  struct Resident {
    std::unique_ptr<runtime::Sequence> sequence;
    runtime::Sequence::SlotSet slots;
    int64_t next = 0;
  };
  Resident resident(const cpu::CPUModule &m, int64_t context) {
    const State &st = state(context);
    const runtime::FunctionSignature *compiledSig = m.signature(compiled.fnName);
    if (!compiledSig)
      die("no function @" + compiled.fnName + " in the compiled module");
    runtime::FunctionSignature sig = *compiledSig;
    cpu::addStepRoles(*compiled.module, sig);
    std::vector<runtime::HostValue> args = {xDecode, Tensor::scalarI64(context), st.prepared[0]};
    args.insert(args.end(), prepared.begin(), prepared.end());
    args.insert(args.end(), st.prepared.begin() + 1, st.prepared.end());
    const std::string name = compiled.fnName;
    runtime::Sequence::ValueRunner runner = [&m, name](const std::vector<runtime::HostValue> &a,
                                                      std::vector<runtime::NamedTensor> *) { return m.runValues(name, a); };
    ::dsa::Result<runtime::Sequence> seq = runtime::Sequence::create(sig, runner, args, context);
    if (!seq)
      die("Sequence: " + seq.error());
    Resident r;
    r.sequence = std::make_unique<runtime::Sequence>(seq.take());
    r.slots.assign(st.prepared.begin() + 5, st.prepared.end()); // compress_kv, index_k, topk_idxs, candidates
    r.next = context;
    return r;
  }

  /// One decode step of `r` at its next position; returns `out`.
  static runtime::HostValue step(Resident &r, const Tensor &x) {
    ::dsa::Result<std::vector<runtime::HostValue>> out = r.sequence->runValues(x, r.next, &r.slots);
    if (!out)
      die("CPU backend (resident state): " + out.error());
    ++r.next;
    benchmark::DoNotOptimize(out->front().buffer());
    return std::move(out->front());
  }

  Tensor runInterpreter(int64_t context) {
    const State &st = state(context);
    std::vector<Tensor> args = {xDecode, Tensor::scalarI64(context), st.tensors[0]};
    args.insert(args.end(), weights.begin(), weights.end());
    args.insert(args.end(), st.tensors.begin() + 1, st.tensors.end());
    return compiled.runInterpreter(args);
  }

  /// Whether the decode step at `startPos` completes a compressor group (section 5): then it also projects the
  /// index key (wk) and writes one row to each cache.
  static bool completesGroup(int64_t startPos) { return (startPos + 1) % kRatio == 0; }
  /// Compressed positions the indexer scores (section 6: width = end // r, end = start_pos + 1).
  static int64_t width(int64_t startPos) { return (startPos + 1) / kRatio; }
  /// Compressed rows attention reads (the top-k set).
  static int64_t compressedRows(int64_t startPos) { return std::min(kIndexTopk, width(startPos)); }

  /// Bytes the decode step must touch at least: every weight it uses once (wk and k_norm only when a group
  /// completes); the ring read and written; kv_state and score_state read and written; the index-key cache rows
  /// the indexer scores (width x ihd); the compressed-KV rows attention gathers (min(index_topk, width) x hd); and,
  /// when a group completes, one row written to each cache.
  double stepBytes(int64_t startPos) const {
    const bool group = completesGroup(startPos);
    double b = static_cast<double>(attentionWeightBytes + compressorBytes + indexerBytes);
    if (group)
      b += static_cast<double>(indexKeyWeightBytes) + 2.0 * static_cast<double>(g.headDim + kIndexHeadDim);
    b += 2.0 * static_cast<double>(g.window * g.headDim * 2);
    b += 2.0 * static_cast<double>(2 * kRatio * g.headDim * 4);
    b += static_cast<double>(width(startPos) * kIndexHeadDim * 2);
    b += static_cast<double>(compressedRows(startPos) * g.headDim * 2);
    return b;
  }
  /// 2 flops per multiply-add: the five linears, the compressor's two f32 projections, the indexer's query and head
  /// weight projections (and wk when a group completes), the index scores (IH x width x ihd), q.k and p.v over the
  /// window and compressed rows.
  double stepFlops(int64_t startPos) const {
    double macs = static_cast<double>(g.linearMacsPerToken());
    macs += 2.0 * static_cast<double>(g.headDim * g.dim);
    macs += static_cast<double>(kIndexHeads * kIndexHeadDim * g.qLora + kIndexHeads * g.dim);
    if (completesGroup(startPos))
      macs += static_cast<double>(kIndexHeadDim * g.headDim);
    macs += static_cast<double>(kIndexHeads * width(startPos) * kIndexHeadDim);
    macs += 2.0 * static_cast<double>(g.nHeads * (g.window + compressedRows(startPos)) * g.headDim);
    return 2.0 * macs;
  }
  int64_t weightBytes() const {
    return attentionWeightBytes + compressorBytes + indexKeyWeightBytes + indexerBytes;
  }

  /// A step of kChunkTokens tokens: the prefill at 0 (from the initial state: zeros, score_state -inf, empty slots)
  /// or a chunk at start_pos > 0 (from state(startPos)); the same x rows either way. One call of the compiled
  /// function (its compressor, indexer and top-k run the chunk as its decode steps; bit-exact, issue 13 scope 2).
  static constexpr int64_t kChunkTokens = 512;
  Tensor xChunk;
  State initial;
  std::vector<runtime::HostValue> chunkArgs(int64_t startPos) {
    if (xChunk.rank() != 2) { // not made yet (a default Tensor is a scalar)
      Random rng(41);
      xChunk = randomTensor(rng, ElementType::BF16, {kChunkTokens, g.dim}, 1.0f);
    }
    if (initial.tensors.empty()) {
      const int64_t cap = capacity();
      initial.tensors = {Tensor(ElementType::BF16, {g.window, g.headDim}), Tensor(ElementType::F32, {kRatio, g.headDim}),
                         Tensor::fromFloats(ElementType::F32, {kRatio, g.headDim},
                                            std::vector<float>(static_cast<size_t>(kRatio * g.headDim),
                                                               -std::numeric_limits<float>::infinity())),
                         Tensor(ElementType::BF16, {cap, g.headDim}), Tensor(ElementType::BF16, {cap, kIndexHeadDim}),
                         Tensor(ElementType::BF16, {0, g.headDim}), Tensor(ElementType::BF16, {0, kIndexHeadDim}),
                         Tensor(ElementType::I32, {0, 0}), Tensor(ElementType::I1, {0, 0})};
      for (const Tensor &t : initial.tensors)
        initial.prepared.push_back(runtime::HostBuffer::fromTensor(t));
    }
    const State &st = startPos == 0 ? initial : state(startPos);
    std::vector<runtime::HostValue> args = {xChunk, Tensor::scalarI64(startPos), st.prepared[0]};
    args.insert(args.end(), prepared.begin(), prepared.end());
    args.insert(args.end(), st.prepared.begin() + 1, st.prepared.end());
    return args;
  }
  /// 2 flops per multiply-add of a kChunkTokens step at startPos: per token the linears, the compressor's and the
  /// indexer's projections, the index scores over the step's width (start_pos + s) // r, q.k and p.v over its
  /// window (min(W, its position + 1) rows) and its compressed rows; wk per group completed.
  double chunkFlops(int64_t startPos) const {
    const int64_t s = kChunkTokens, width = (startPos + s) / kRatio, groups = width - startPos / kRatio;
    double macs = static_cast<double>(s) *
                  static_cast<double>(g.linearMacsPerToken() + 2 * g.headDim * g.dim +
                                      kIndexHeads * kIndexHeadDim * g.qLora + kIndexHeads * g.dim +
                                      kIndexHeads * width * kIndexHeadDim);
    macs += static_cast<double>(groups * kIndexHeadDim * g.headDim);
    for (int64_t t = 0; t < s; ++t) {
      const int64_t p = startPos + t;
      macs += 2.0 * static_cast<double>(g.nHeads * (std::min(g.window, p + 1) +
                                                    std::min(kIndexTopk, (p + 1) / kRatio)) * g.headDim);
    }
    return 2.0 * macs;
  }
};

std::unique_ptr<IndexLayer> gIndexLayer;
IndexLayer &indexLayer() {
  if (!gIndexLayer) {
    // The window-only layer's benchmarks run first (registration order): free its weights (~0.8 GB) before this
    // layer allocates its own, so that the process stays well under 4 GB.
    gBatchedLayer.reset();
    gLayer.reset();
    auto t0 = Clock::now();
    gIndexLayer = std::make_unique<IndexLayer>();
    std::fprintf(stderr, "dsa-bench: V4.1-Flash index-source layer (ratio %lld) built and compiled in %.1f s "
                         "(%.0f MB of weights)\n",
                 static_cast<long long>(IndexLayer::kRatio), secondsSince(t0),
                 static_cast<double>(gIndexLayer->weightBytes()) / 1e6);
  }
  return *gIndexLayer;
}

/// The index-source layer as a batched decode step (issue 13 scopes 1 and 4: batched decode of a compressed layer;
/// the same weights and configuration as IndexLayer, its batched form: state [B, ...], slots [B, ...]). B
/// sequences, each from IndexLayer's state at 4096 (the same filled ring, compressor state and caches, copied per
/// member) at its own position 4096 + b (so the members complete compressor groups at different steps), run the way
/// a user runs them: a runtime::Batch over CPUModule::runValues (each state binding one [B, ...] buffer, the caches
/// updated in place), the shared slots stacked by runtime::stackSlots from each member's slots (compress_kv and
/// index_k its caches) and replaced by what the layer publishes at every step.
struct BatchedIndexLayer {
  static constexpr int64_t kContext = 4096;
  CompiledLayer compiled;
  runtime::FunctionSignature signature; // with step roles

  explicit BatchedIndexLayer(const IndexLayer &l) {
    compiled.build(l.config(), /*batched=*/true);
    const runtime::FunctionSignature *sig = compiled.serial->signature(compiled.fnName);
    if (!sig)
      die("no function @" + compiled.fnName + " in the batched module");
    signature = *sig;
    cpu::addStepRoles(*compiled.module, signature);
  }

  static int64_t position(int64_t b) { return kContext + b; }

  /// A batch of `batch` members on module `m`, its slots, and the x rows of its steps.
  struct Run {
    std::unique_ptr<runtime::Batch> batch;
    runtime::Sequence::SlotSet slots;
    Tensor x; // [B, 1, dim]
  };
  Run start(IndexLayer &l, const cpu::CPUModule &m, int64_t batch) {
    const IndexLayer::State &st = l.state(kContext);
    std::map<size_t, runtime::HostValue> fixed;
    for (size_t i = 0; i < l.prepared.size(); ++i)
      fixed.emplace(3 + i, l.prepared[i]); // x, start_pos, ring, then every weight
    const std::string name = compiled.fnName;
    runtime::Batch::ValueRunner runner = [&m, name](const std::vector<runtime::HostValue> &a,
                                                   std::vector<runtime::NamedTensor> *) { return m.runValues(name, a); };
    ::dsa::Result<runtime::Batch> started = runtime::Batch::start(signature, runner, fixed);
    if (!started)
      die("runtime::Batch::start: " + started.error());
    Run r;
    r.batch = std::make_unique<runtime::Batch>(started.take());
    // A member's state: the ring, kv_state, score_state, the compressed-KV and index-key caches; its slots.
    const std::vector<runtime::HostValue> memberState(st.prepared.begin(), st.prepared.begin() + 5);
    const runtime::Sequence::SlotSet memberSlots(st.prepared.begin() + 5, st.prepared.end());
    for (int64_t b = 0; b < batch; ++b) {
      ::dsa::Result<runtime::Batch::SequenceId> id = r.batch->join(memberState, position(b));
      if (!id)
        die("runtime::Batch::join: " + id.error());
    }
    ::dsa::Result<runtime::Sequence::SlotSet> slots =
        runtime::stackSlots(signature, std::vector<runtime::Sequence::SlotSet>(static_cast<size_t>(batch), memberSlots));
    if (!slots)
      die("runtime::stackSlots: " + slots.error());
    r.slots = slots.take();
    Random rng(700 + static_cast<uint64_t>(batch));
    r.x = randomTensor(rng, ElementType::BF16, {batch, 1, l.g.dim}, 1.0f);
    return r;
  }

  /// One step of every member; returns `out` [B, 1, dim].
  static runtime::HostValue step(Run &r) {
    ::dsa::Result<runtime::HostValue> out = r.batch->step(r.x, &r.slots);
    if (!out)
      die("runtime::Batch::step (index-source layer): " + out.error());
    benchmark::DoNotOptimize(out->buffer());
    return out.take();
  }

  /// The benchmark's own check of a fresh batch's first step: rows 0 and B - 1 equal their sequences' batch-1 steps
  /// (IndexLayer's serial batch-1 module, from the same state at the same position; bit for bit). Empty when they do.
  std::string check(IndexLayer &l, Run &r) {
    const int64_t batch = static_cast<int64_t>(r.batch->members().size()), dim = l.g.dim;
    const Tensor out = step(r).toTensor();
    for (int64_t b : {int64_t{0}, batch - 1}) {
      Tensor xb(ElementType::BF16, {1, dim});
      std::memcpy(xb.floats(), r.x.floats() + b * dim, sizeof(float) * static_cast<size_t>(dim));
      const Tensor want = l.runCPUAt(*l.compiled.serial, kContext, xb, position(b));
      Tensor row(ElementType::BF16, {1, dim});
      std::memcpy(row.floats(), out.floats() + b * dim, sizeof(float) * static_cast<size_t>(dim));
      if (!sameBits(row, want))
        return "batched index-source decode: row " + std::to_string(b) + " of batch " + std::to_string(batch) +
               " differs from its batch-1 step";
    }
    return "";
  }
};
std::unique_ptr<BatchedIndexLayer> gBatchedIndexLayer;
BatchedIndexLayer &batchedIndexLayer() {
  if (!gBatchedIndexLayer) {
    auto t0 = Clock::now();
    gBatchedIndexLayer = std::make_unique<BatchedIndexLayer>(indexLayer());
    std::fprintf(stderr, "dsa-bench: the index-source layer's batched decode step compiled in %.1f s\n",
                 secondsSince(t0));
  }
  return *gBatchedIndexLayer;
}

/// Seconds per step: wall clock and process CPU time.
struct StepTime {
  double wall = 0, cpu = 0;
};

/// The interpreter's `out` of the index-source decode, by context, kept from its benchmark to check the CPU
/// backend's against (bit-exact, docs/cpu-backend.md): what is timed must compute the same layer.
std::map<int64_t, Tensor> gIndexInterpOut;

/// Whether two tensors have the same shape and the same bits (bf16 values are f32 here: compare as f32 bits).
bool sameBits(const Tensor &a, const Tensor &b) {
  if (a.shape() != b.shape() || a.elementType() != b.elementType())
    return false;
  return std::memcmp(a.floats(), b.floats(), sizeof(float) * static_cast<size_t>(a.numElements())) ==
         0;
}

/// The interpreter's time per step, by benchmark label, from its own benchmark when it ran first (registration
/// order), else measured here once; zeros with --dsa_skip_interpreter.
std::map<std::string, StepTime> gInterpTime;
StepTime interpreterTime(const std::string &label, const std::function<void()> &run) {
  if (gSkipInterpreter)
    return {};
  if (auto it = gInterpTime.find(label); it != gInterpTime.end())
    return it->second;
  auto t0 = Clock::now();
  double c0 = processCpuSeconds();
  run();
  return gInterpTime[label] = {secondsSince(t0), processCpuSeconds() - c0};
}

//===----------------------------------------------------------------------------------------------------------===//
// Benchmarks
//===----------------------------------------------------------------------------------------------------------===//

void BM_ReadBandwidth(benchmark::State &state) {
  const unsigned threads = static_cast<unsigned>(state.range(0));
  double bw = 0;
  for (auto _ : state)
    bw = readBandwidth(threads);
  state.counters["GBps"] = bw / 1e9;
  state.counters["threads"] = threads;
  state.counters["buffer_MiB"] = static_cast<double>(gBufferMiB);
}

/// Runs `step` once per benchmark iteration and returns the mean wall and process CPU time per step.
StepTime timeSteps(benchmark::State &state, const std::function<void()> &step) {
  StepTime total;
  int64_t n = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    double c0 = processCpuSeconds();
    step();
    total.wall += secondsSince(t0);
    total.cpu += processCpuSeconds() - c0;
    ++n;
  }
  return {total.wall / static_cast<double>(n), total.cpu / static_cast<double>(n)};
}

bool skipInterpreterBenchmark(benchmark::State &state) {
  if (!gSkipInterpreter)
    return false;
  state.SkipWithError("--dsa_skip_interpreter");
  for (auto _ : state) {
  }
  return true;
}

void reportInterpreter(benchmark::State &state, const std::string &label, StepTime t, double flops) {
  gInterpTime[label] = t;
  state.counters["step_ms"] = 1e3 * t.wall;
  state.counters["cpu_ms"] = 1e3 * t.cpu;
  state.counters["GFLOPs"] = flops / t.wall / 1e9;
}

void BM_Peak(benchmark::State &state, PeakKind kind) {
  const unsigned threads = static_cast<unsigned>(state.range(0));
  Peak peak;
  for (auto _ : state)
    peak = computePeak(kind, threads);
  if (peak.wall == 0) {
    state.SkipWithError((std::string(peakName(kind)) + " loop: this host has no AVX2 + FMA").c_str());
    return;
  }
  state.counters["GFLOPs"] = peak.wall / 1e9;
  state.counters["GFLOP_per_cpu_s"] = peak.perCpuSecond / 1e9;
  state.counters["threads"] = threads;
  state.SetLabel(peakIsa(kind));
}

/// One CPU benchmark's figures, kept for the targets' summary printed after the run (printTargets); a benchmark
/// that Google Benchmark runs more than once (min_time) keeps its last run.
struct CPUResult {
  std::string label; // windowLabel / indexLabel
  bool par = false;
  double stepMs = 0, cpuMs = 0, xMemFloor = 0, xMemFloorCpu = 0, gflops = 0, xFmaPeak = 0, xMulAddPeak = 0,
         xFmaPeakCpu = 0, speedupInterp = 0;
};
std::vector<CPUResult> gCPUResults;
void keepResult(const CPUResult &r) {
  for (CPUResult &old : gCPUResults)
    if (old.label == r.label && old.par == r.par) {
      old = r;
      return;
    }
  gCPUResults.push_back(r);
}

/// The ratios of a compute-bound step's rate to the peaks of the same number of threads: x_fma_peak,
/// x_muladd_peak (wall-clock rates) and x_fma_peak_cpu (flops per process CPU second over one core's FMA flops per
/// CPU second: the same ratio with the time the step waited for a core on a shared machine left out).
void reportPeakRatios(benchmark::State &state, double flops, StepTime t, bool par, CPUResult *result) {
  const unsigned threads = par ? hardwareThreads() : 1u;
  const Peak fma = computePeak(PeakKind::Fma, threads), mulAdd = computePeak(PeakKind::MulAdd, threads);
  const double rate = flops / t.wall;
  if (fma.wall > 0) {
    state.counters["fma_peak_GFLOPs"] = fma.wall / 1e9;
    state.counters["x_fma_peak"] = rate / fma.wall;
    const Peak one = computePeak(PeakKind::Fma, 1);
    if (t.cpu > 0)
      state.counters["x_fma_peak_cpu"] = flops / t.cpu / one.perCpuSecond;
    if (result) {
      result->xFmaPeak = rate / fma.wall;
      result->xFmaPeakCpu = t.cpu > 0 ? flops / t.cpu / one.perCpuSecond : 0;
    }
  }
  if (mulAdd.wall > 0) {
    state.counters["muladd_peak_GFLOPs"] = mulAdd.wall / 1e9;
    state.counters["x_muladd_peak"] = rate / mulAdd.wall;
    if (result)
      result->xMulAddPeak = rate / mulAdd.wall;
  }
}

/// The counters of a CPU benchmark (see the file comment). `computeBound`: also the ratios to the compute peaks of
/// the same number of threads (x_fma_peak, x_muladd_peak).
void reportCPU(benchmark::State &state, const std::string &label, StepTime t, double bytes, double flops,
               int64_t tokens, bool par, StepTime interp, bool computeBound = false) {
  CPUResult result{label, par};
  const double floor = bytes / machineBandwidth();
  state.counters["step_ms"] = 1e3 * t.wall;
  state.counters["bytes_MB"] = bytes / 1e6;
  state.counters["floor_ms"] = 1e3 * floor;
  state.counters["x_mem_floor"] = t.wall / floor;
  state.counters["GFLOPs"] = flops / t.wall / 1e9;
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["threads"] = par ? hardwareThreads() : 1u;
  if (!par) {
    state.counters["cpu_ms"] = 1e3 * t.cpu;
    state.counters["x_mem_floor_cpu"] = t.cpu / floor;
  }
  if (interp.wall > 0) {
    state.counters["interp_ms"] = 1e3 * interp.wall;
    state.counters["interp_cpu_ms"] = 1e3 * interp.cpu;
    state.counters["speedup_interp"] = interp.wall / t.wall;
    if (!par)
      state.counters["speedup_interp_cpu"] = interp.cpu / t.cpu;
    result.speedupInterp = interp.wall / t.wall;
  }
  result.stepMs = 1e3 * t.wall;
  result.cpuMs = par ? 0 : 1e3 * t.cpu;
  result.xMemFloor = t.wall / floor;
  result.xMemFloorCpu = par ? 0 : t.cpu / floor;
  result.gflops = flops / t.wall / 1e9;
  if (computeBound)
    reportPeakRatios(state, flops, t, par, &result);
  keepResult(result);
}

/// The serial module, or the OpenMP one; null after marking the benchmark skipped when there is no OpenMP runtime.
const cpu::CPUModule *moduleFor(benchmark::State &state, CompiledLayer &compiled, bool par) {
  if (!par)
    return compiled.serial.get();
  std::string why;
  const cpu::CPUModule *m = compiled.parallelModule(why);
  if (!m) {
    state.SkipWithError(("parallel=true unavailable: " + why).c_str());
    for (auto _ : state) {
    }
  }
  return m;
}

std::string windowLabel(WindowStep k) {
  return k == WindowStep::Prefill ? "prefill512" : k == WindowStep::Chunk ? "chunk512_at4096" : "decode";
}
std::string indexLabel(int64_t context) { return "index_decode" + std::to_string(context); }

/// The interpreter's `out` of the window-only chunk, kept to check the CPU backend's against (bit-exact).
Tensor gChunkInterpOut;
bool gHaveChunkInterpOut = false;

void BM_Interpreter(benchmark::State &state, WindowStep k) {
  if (skipInterpreterBenchmark(state))
    return;
  Layer &l = layer();
  StepTime t = timeSteps(state, [&] {
    Tensor out = l.runInterpreter(k);
    if (k == WindowStep::Chunk) {
      gChunkInterpOut = std::move(out);
      gHaveChunkInterpOut = true;
    }
  });
  reportInterpreter(state, windowLabel(k), t, l.stepFlops(k));
}

/// The window-only layer's step on the CPU backend: the decode and the prefill by CPUModule::run; the chunk as the
/// runtime runs it (Layer::ChunkSequence: one call of the same compiled function, checked), its `out` checked
/// bit-identical to the interpreter's whenever the interpreter runs (counter checked_vs_interp).
void BM_CPU(benchmark::State &state, WindowStep k, bool par) {
  Layer &l = layer();
  const cpu::CPUModule *m = moduleFor(state, l.compiled, par);
  if (!m)
    return;
  const bool compute = k != WindowStep::Decode;
  if (k != WindowStep::Chunk) {
    l.runCPU(*m, k); // warm-up: first-touch of the JIT's code and the allocator
    StepTime t = timeSteps(state, [&] { l.runCPU(*m, k); });
    StepTime interp = interpreterTime(windowLabel(k), [&] { l.runInterpreter(k); });
    reportCPU(state, windowLabel(k), t, l.stepBytes(), l.stepFlops(k), l.tokens(k), par, interp, compute);
    return;
  }
  Layer::ChunkSequence cs = l.chunkSequence(*m);
  Tensor out = l.runChunk(cs); // warm-up, and the `out` checked below
  StepTime t = timeSteps(state, [&] { l.runChunk(cs); });
  StepTime interp = interpreterTime(windowLabel(k), [&] {
    gChunkInterpOut = l.runInterpreter(k);
    gHaveChunkInterpOut = true;
  });
  if (gHaveChunkInterpOut) {
    if (!sameBits(out, gChunkInterpOut)) {
      state.SkipWithError("the CPU backend's chunk out differs from the interpreter's (not bit-exact)");
      return;
    }
    state.counters["checked_vs_interp"] = 1;
  }
  state.counters["calls_per_step"] = 1; // runChunk dies otherwise
  state.counters["start_pos"] = static_cast<double>(l.chunkStartPos);
  reportCPU(state, windowLabel(k), t, l.stepBytes(), l.stepFlops(k), l.tokens(k), par, interp, compute);
}

/// Batched decode results by threads (false: serial) and B: ms per step.
using BatchResults = std::map<std::pair<bool, int64_t>, double>;
BatchResults gBatchMs;

/// The counters of a batched decode benchmark (B sequences, `flops` per step), and its step time kept in `results`
/// for the ratio to B = 1 of the same step and threads (B = 1 runs first: registration order).
void reportBatched(benchmark::State &state, BatchResults &results, int64_t batch, bool par, StepTime t,
                   double flops) {
  results[{par, batch}] = 1e3 * t.wall;
  state.counters["step_ms"] = 1e3 * t.wall;
  state.counters["batch"] = static_cast<double>(batch);
  state.counters["tokens_per_s"] = static_cast<double>(batch) / t.wall;
  state.counters["threads"] = par ? hardwareThreads() : 1u;
  state.counters["GFLOPs"] = flops / t.wall / 1e9;
  if (!par)
    state.counters["cpu_ms"] = 1e3 * t.cpu;
  if (auto one = results.find({par, 1}); one != results.end()) {
    state.counters["x_batch1_step"] = 1e3 * t.wall / one->second;
    state.counters["x_batch1_tokens_per_s"] = static_cast<double>(batch) * one->second / (1e3 * t.wall);
  }
}

void BM_CPUBatched(benchmark::State &state, int64_t batch, bool par) {
  Layer &l = layer();
  BatchedLayer &bl = batchedLayer();
  const cpu::CPUModule *m = moduleFor(state, bl.compiled, par);
  if (!m)
    return;
  const std::vector<runtime::HostValue> &a = bl.args(l, batch);
  bl.compiled.runCPU(*m, a); // warm-up
  StepTime t = timeSteps(state, [&] { bl.compiled.runCPU(*m, a); });
  reportBatched(state, gBatchMs, batch, par, t, static_cast<double>(batch) * l.stepFlops(WindowStep::Decode));
}

/// Batched decode of the index-source layer (BatchedIndexLayer), by threads and B: ms per step.
BatchResults gIndexBatchMs;

/// CPUBatched/index_decode_b<B>, CPUParallelBatched/...: B members of a runtime::Batch stepped together, timed
/// over consecutive steps (each member one token further per step) after the checked first step.
void BM_IndexBatched(benchmark::State &state, int64_t batch, bool par) {
  IndexLayer &l = indexLayer();
  BatchedIndexLayer &bl = batchedIndexLayer();
  const cpu::CPUModule *m = moduleFor(state, bl.compiled, par);
  if (!m)
    return;
  BatchedIndexLayer::Run r = bl.start(l, *m, batch);
  const std::string bad = bl.check(l, r); // also the warm-up (untimed: it copies the joined state)
  if (!bad.empty()) {
    state.SkipWithError(bad.c_str());
    for (auto _ : state) {
    }
    return;
  }
  state.counters["checked_vs_batch1"] = 1;
  StepTime t = timeSteps(state, [&] { BatchedIndexLayer::step(r); });
  double flops = 0;
  for (int64_t b = 0; b < batch; ++b)
    flops += l.stepFlops(BatchedIndexLayer::position(b));
  reportBatched(state, gIndexBatchMs, batch, par, t, flops);
  state.counters["context"] = static_cast<double>(BatchedIndexLayer::kContext);
}

void BM_IndexInterpreter(benchmark::State &state, int64_t context) {
  if (skipInterpreterBenchmark(state))
    return;
  IndexLayer &l = indexLayer();
  // Warm-up outside the timed region: fills the state, and the first run's page faults of the interpreter's fresh
  // buffers (GBs here) would otherwise double the time of a single measured run.
  gIndexInterpOut[context] = l.runInterpreter(context);
  StepTime t = timeSteps(state, [&] { gIndexInterpOut[context] = l.runInterpreter(context); });
  reportInterpreter(state, indexLabel(context), t, l.stepFlops(context));
  state.counters["context"] = static_cast<double>(context);
}

/// The index-source decode on the CPU backend. Resident (the default, CPU/ and CPUParallel/): the way a user runs
/// decode, a Sequence with the state kept as buffers between steps (IndexLayer::Resident), timed over
/// consecutive decode steps from `context` on (positions context, context + 1, ...: every fourth completes a
/// group); the first step's `out` (position `context`, untimed) is checked against the interpreter's. Per call
/// (CPUPerCall/): CPUModule::run on the prepared state at `context` every time, results converted to Tensors (what a
/// caller of run() pays; the state is not advanced).
void BM_IndexCPU(benchmark::State &state, int64_t context, bool par, bool perCall) {
  IndexLayer &l = indexLayer();
  const cpu::CPUModule *m = moduleFor(state, l.compiled, par);
  if (!m)
    return;
  Tensor out = l.runCPU(*m, context); // warm-up (also fills the state)
  auto mismatch = [&](const char *what) {
    state.SkipWithError(what);
    for (auto _ : state) {
    }
  };
  if (auto it = gIndexInterpOut.find(context); it != gIndexInterpOut.end()) {
    if (!sameBits(out, it->second))
      return mismatch("the CPU backend's out differs from the interpreter's (not bit-exact)");
    state.counters["checked_vs_interp"] = 1;
  }
  StepTime t;
  if (perCall) {
    t = timeSteps(state, [&] { l.runCPU(*m, context); });
  } else {
    IndexLayer::Resident r = l.resident(*m, context);
    // The first step (position `context`, untimed: it also copies the prepared caches into the sequence's own
    // buffers) must give run()'s `out`.
    if (!sameBits(IndexLayer::step(r, l.xDecode).toTensor(), out))
      return mismatch("the resident-state step's out differs from CPUModule::run's (not bit-exact)");
    state.counters["checked_resident"] = 1;
    t = timeSteps(state, [&] { IndexLayer::step(r, l.xDecode); });
  }
  StepTime interp = interpreterTime(indexLabel(context), [&] { l.runInterpreter(context); });
  reportCPU(state, perCall ? "percall_" + indexLabel(context) : indexLabel(context), t, l.stepBytes(context),
            l.stepFlops(context), 1, par, interp);
  state.counters["context"] = static_cast<double>(context);
  state.counters["index_rows"] = static_cast<double>(IndexLayer::width(context));
}

std::string indexChunkLabel(int64_t startPos) {
  return startPos == 0 ? "index_prefill512" : "index_chunk512_at" + std::to_string(startPos);
}

/// A 512-token step of the index-source layer (ratio 4) on the CPU backend: the prefill at 0 and the chunk at 4096
/// (one call each; the runtime sends such a chunk as one call when the layer reads only its own slots), for the
/// chunked-prefill target of compressed layers. Not checked against the interpreter (minutes per step there; the
/// chunk's bits are tested in CPURuntimeAOTTest and CPUBackendCompressedTest).
void BM_IndexChunkCPU(benchmark::State &state, int64_t startPos, bool par) {
  IndexLayer &l = indexLayer();
  const cpu::CPUModule *m = moduleFor(state, l.compiled, par);
  if (!m)
    return;
  const std::vector<runtime::HostValue> args = l.chunkArgs(startPos);
  l.compiled.runCPU(*m, args); // warm-up
  StepTime t = timeSteps(state, [&] { l.compiled.runCPU(*m, args); });
  reportCPU(state, indexChunkLabel(startPos), t, static_cast<double>(l.weightBytes()), l.chunkFlops(startPos),
            IndexLayer::kChunkTokens, par, StepTime{}, /*computeBound=*/true);
  state.counters["start_pos"] = static_cast<double>(startPos);
}

/// One linear of the window-only layer alone (CPUOp/<name>, CPUOpParallel/<name>): its 512-token (--dsa_op_tokens) product as the
/// prefill runs it (dsa.linear, or dsa.grouped_output for wo_a), compiled by itself, random bf16 x and weights, so
/// the GEMM's rate can be compared with the compute peaks without the rest of the layer. 2 flops per multiply-add.
/// CPUOp/sparse_attn (groups = kSparseAttn): the window-only prefill's dsa.sparse_attn alone, q [M, heads, headDim]
/// and kv [M, headDim] bf16, each token's window indices (t - window + 1 .. t, -1 before 0), sink f32 [heads];
/// flops: q.k and p.v, 2 x 2 x M x heads x window x headDim (the -1 entries counted too).
constexpr int64_t kSparseAttn = -1;
struct OpBench {
  std::string name;
  int64_t N, K, groups; // weight [N, K]; groups > 1: grouped_output, x [M, heads, headDim], K = heads * headDim / groups
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<cpu::CPUModule> serial, parallel;
  Tensor x;
  std::vector<runtime::HostValue> w;    // the weight, prepared once
  std::vector<runtime::HostValue> args; // x and the weight, prepared once

  const int64_t kTokens = gOpTokens;
  /// x [M, K] (grouped: o [M, heads, headDim] with heads * headDim = groups * K, w [groups * R, K]).
  std::string text(const Geometry &g) const {
    std::ostringstream os;
    if (groups == kSparseAttn) {
      const std::string q = "tensor<?x" + std::to_string(g.nHeads) + "x" + std::to_string(g.headDim) + "xbf16>";
      const std::string kv = "tensor<?x" + std::to_string(g.headDim) + "xbf16>";
      const std::string sink = "tensor<" + std::to_string(g.nHeads) + "xf32>";
      os << "func.func @op(%q: " << q << ", %kv: " << kv << ", %idx: tensor<?x?xi32>, %sink: " << sink << ") -> " << q
         << " {\n  %o = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.0441941738 : f32} : (" << q << ", " << kv
         << ", tensor<?x?xi32>, " << sink << ") -> " << q << "\n  return %o : " << q << "\n}\n";
    } else if (groups == 1) {
      os << "func.func @op(%x: tensor<?x" << K << "xbf16>, %w: tensor<" << N << "x" << K << "xbf16>) -> tensor<?x" << N
         << "xbf16> {\n  %y = dsa.linear %x, %w : (tensor<?x" << K << "xbf16>, tensor<" << N << "x" << K
         << "xbf16>) -> tensor<?x" << N << "xbf16>\n  return %y : tensor<?x" << N << "xbf16>\n}\n";
    } else {
      os << "func.func @op(%x: tensor<?x" << g.nHeads << "x" << g.headDim << "xbf16>, %w: tensor<" << N << "x" << K
         << "xbf16>) -> tensor<?x" << N << "xbf16> {\n  %y = dsa.grouped_output %x, %w {groups = " << groups
         << " : i64} : (tensor<?x" << g.nHeads << "x" << g.headDim << "xbf16>, tensor<" << N << "x" << K
         << "xbf16>) -> tensor<?x" << N << "xbf16>\n  return %y : tensor<?x" << N << "xbf16>\n}\n";
    }
    return os.str();
  }
  double flops() const {
    if (groups == kSparseAttn) // N = heads x window, K = headDim
      return 2.0 * 2.0 * static_cast<double>(kTokens) * static_cast<double>(N) * static_cast<double>(K);
    return 2.0 * static_cast<double>(kTokens) * static_cast<double>(N) * static_cast<double>(K);
  }

  OpBench(std::string name_, int64_t n, int64_t k, int64_t grp, const Geometry &g)
      : name(std::move(name_)), N(n), K(k), groups(grp) {
    context.loadDialect<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, tensor::TensorDialect>();
    module = parseSourceString<ModuleOp>(text(g), &context);
    if (!module)
      die("CPUOp/" + name + ": the module does not parse (see the diagnostic above)");
    Random rng(7);
    if (groups == kSparseAttn) {
      std::vector<int64_t> idx;
      for (int64_t t = 0; t < kTokens; ++t)
        for (int64_t j = 0; j < g.window; ++j) {
          const int64_t row = t - g.window + 1 + j;
          idx.push_back(row < 0 ? -1 : row);
        }
      x = randomTensor(rng, ElementType::BF16, {kTokens, g.nHeads, g.headDim}, 1.0f);
      args = {runtime::HostBuffer::fromTensor(x),
              runtime::HostBuffer::fromTensor(randomTensor(rng, ElementType::BF16, {kTokens, g.headDim}, 1.0f)),
              runtime::HostBuffer::fromTensor(Tensor::fromInts(ElementType::I32, {kTokens, g.window}, idx)),
              runtime::HostBuffer::fromTensor(randomTensor(rng, ElementType::F32, {g.nHeads}, 1.0f))};
      return;
    }
    x = groups == 1 ? randomTensor(rng, ElementType::BF16, {kTokens, K}, 1.0f)
                    : randomTensor(rng, ElementType::BF16, {kTokens, g.nHeads, g.headDim}, 1.0f);
    w.push_back(runtime::HostBuffer::fromTensor(randomTensor(rng, ElementType::BF16, {N, K}, fanIn(K))));
    args = {runtime::HostBuffer::fromTensor(x), w.front()};
  }
  const cpu::CPUModule *get(bool par, std::string &why) {
    std::unique_ptr<cpu::CPUModule> &m = par ? parallel : serial;
    if (!m) {
      cpu::CPUCompileOptions options;
      options.parallel = par;
      options.phaseMinRows = gPhaseMinRows;
      ::dsa::Result<std::unique_ptr<cpu::CPUModule>> r = cpu::compileForCPU(*module, options);
      if (!r) {
        if (!par)
          die("compileForCPU (CPUOp/" + name + "): " + r.error());
        why = r.error();
        return nullptr;
      }
      m = r.take();
    }
    return m.get();
  }
};

std::vector<std::unique_ptr<OpBench>> gOps;
OpBench &opBench(const std::string &name) {
  const Geometry g;
  if (gOps.empty()) {
    gOps.push_back(std::make_unique<OpBench>("wq_a", g.qLora, g.dim, 1, g));
    gOps.push_back(std::make_unique<OpBench>("wq_b", g.nHeads * g.headDim, g.qLora, 1, g));
    gOps.push_back(std::make_unique<OpBench>("wkv", g.headDim, g.dim, 1, g));
    gOps.push_back(std::make_unique<OpBench>("wo_a", g.oGroups * g.oLora, g.groupWidth(), g.oGroups, g));
    gOps.push_back(std::make_unique<OpBench>("wo_b", g.dim, g.oGroups * g.oLora, 1, g));
    gOps.push_back(std::make_unique<OpBench>("sparse_attn", g.nHeads * g.window, g.headDim, kSparseAttn, g));
  }
  for (auto &op : gOps)
    if (op->name == name)
      return *op;
  die("no CPUOp benchmark named " + name);
}
const char *kOpNames[] = {"wq_a", "wq_b", "wkv", "wo_a", "wo_b", "sparse_attn"};

void BM_CPUOp(benchmark::State &state, const std::string &name, bool par) {
  OpBench &op = opBench(name);
  std::string why;
  const cpu::CPUModule *m = op.get(par, why);
  if (!m) {
    state.SkipWithError(("parallel=true unavailable: " + why).c_str());
    for (auto _ : state) {
    }
    return;
  }
  auto run = [&] {
    // x and w converted once (op.args): the call is the product alone, its result kept as the compiled code's
    // buffer (runValues), as inside a layer. (Until 2026-12-07 x was a Tensor converted every call, and the result
    // converted back: for wo_a's 32 MiB x about a third of the time measured.)
    ::dsa::Result<std::vector<runtime::HostValue>> r = m->runValues("op", op.args);
    if (!r)
      die("CPUOp/" + name + ": " + r.error());
    benchmark::DoNotOptimize(r->data());
  };
  run(); // warm-up
  StepTime t = timeSteps(state, run);
  state.counters["step_ms"] = 1e3 * t.wall;
  state.counters["cpu_ms"] = 1e3 * t.cpu;
  state.counters["GFLOPs"] = op.flops() / t.wall / 1e9;
  state.counters["threads"] = par ? hardwareThreads() : 1u;
  state.counters["tokens"] = static_cast<double>(op.kTokens);
  reportPeakRatios(state, op.flops(), t, par, nullptr);
}

/// "CPU/" or "CPUParallel/" + label (the per-call label's prefix spelled as its benchmark's).
std::string benchmarkName(const CPUResult &r) {
  if (r.label.rfind("percall_", 0) == 0)
    return "CPUPerCall/" + r.label.substr(8);
  return (r.par ? "CPUParallel/" : "CPU/") + r.label;
}

/// "met" or "MISSED by <how much>" for `value` against a lower (atLeast) or upper bound.
std::string verdict(double value, double bound, bool atLeast) {
  char buf[64];
  if (atLeast ? value >= bound : value <= bound)
    return "met";
  std::snprintf(buf, sizeof buf, "MISSED by %.0f%%", 100.0 * (atLeast ? (bound - value) / bound : (value - bound) / bound));
  return buf;
}

/// Prints every issue-13 target this run can measure, with its ratio and verdict, and the ones it cannot yet (to
/// stderr: stdout carries Google Benchmark's report, JSON for bench/torch_compare.py).
void printTargets() {
  auto line = [](const std::string &s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  char buf[512];
  line("dsa-bench: issue 13 targets, measured in this run (docs/benchmarks.md):");
  // Prefill at the FMA peak, 1 and all threads.
  for (bool par : {false, true}) {
    const unsigned threads = par ? hardwareThreads() : 1u;
    bool found = false;
    for (const CPUResult &r : gCPUResults) {
      if (r.label != windowLabel(WindowStep::Prefill) || r.par != par)
        continue;
      found = true;
      if (r.xFmaPeak > 0)
        std::snprintf(buf, sizeof buf,
                      "  prefill 512 >= 0.70 x FMA peak, %u thread(s): %s %.1f GFLOP/s = %.2f x fma peak (%.1f), "
                      "%.2f x mul+add peak (%.1f); from CPU time %.2f x fma peak: %s",
                      threads, benchmarkName(r).c_str(), r.gflops, r.xFmaPeak,
                      computePeak(PeakKind::Fma, threads).wall / 1e9, r.xMulAddPeak,
                      computePeak(PeakKind::MulAdd, threads).wall / 1e9, r.xFmaPeakCpu,
                      verdict(r.xFmaPeak, 0.70, true).c_str());
      else
        std::snprintf(buf, sizeof buf, "  prefill 512 >= 0.70 x FMA peak, %u thread(s): %s %.1f GFLOP/s; no FMA "
                                       "peak on this host (no AVX2 + FMA)",
                      threads, benchmarkName(r).c_str(), r.gflops);
      line(buf);
    }
    if (!found) {
      std::snprintf(buf, sizeof buf, "  prefill 512 >= 0.70 x FMA peak, %u thread(s): not run in this invocation (%s)",
                    threads, par ? "CPUParallel/prefill512" : "CPU/prefill512");
      line(buf);
    }
  }
  line("  prefill 512 >= 1.0 x torch's f32 F.linear route: not measured by dsa-bench (bench/torch_compare.py)");
  // Batched decode against batch 1 of the same batched step, same threads: the window-only layer, then the
  // index-source layer (a compressed layer: compressor, indexer, caches; at 4096 + b).
  auto batchTargets = [&](const BatchResults &results, const char *step, const char *notRunLayer,
                          const char *layer) {
    for (bool par : {false, true}) {
      const char *name = par ? "CPUParallelBatched" : "CPUBatched";
      auto one = results.find({par, 1});
      for (auto [batch, bound] : {std::pair<int64_t, double>{16, 2.0}, {64, 5.0}}) {
        auto it = results.find({par, batch});
        if (one == results.end() || it == results.end()) {
          std::snprintf(buf, sizeof buf,
                        "  decode batch %lld <= %.0f x batch 1 (%s%s): not run in this invocation (%s/%s_b1 and "
                        "/%s_b%lld)",
                        static_cast<long long>(batch), bound, name, notRunLayer, name, step, step,
                        static_cast<long long>(batch));
        } else {
          const double ratio = it->second / one->second;
          std::snprintf(buf, sizeof buf,
                        "  decode batch %lld <= %.0f x batch 1 (%s, %s): %.2f ms vs %.2f ms = %.2f x (%.1f x the "
                        "tokens/s): %s",
                        static_cast<long long>(batch), bound, name, layer, it->second, one->second, ratio,
                        static_cast<double>(batch) / ratio, verdict(ratio, bound, false).c_str());
        }
        line(buf);
      }
    }
  };
  batchTargets(gBatchMs, "decode", "", "window-only layer");
  batchTargets(gIndexBatchMs, "index_decode", ", index-source layer", "index-source layer at 4096");
  // Batch-1 decode at the read floor: every resident decode step benchmarked.
  bool anyDecode = false;
  for (const CPUResult &r : gCPUResults) {
    if (r.label == windowLabel(WindowStep::Prefill) || r.label == windowLabel(WindowStep::Chunk) ||
        r.label.rfind("percall_", 0) == 0 || r.label == indexChunkLabel(0) || r.label == indexChunkLabel(4096))
      continue;
    anyDecode = true;
    char cpu[64] = "";
    if (r.xMemFloorCpu > 0)
      std::snprintf(cpu, sizeof cpu, " (from CPU time %.2f x)", r.xMemFloorCpu);
    std::snprintf(buf, sizeof buf, "  batch-1 decode <= 1.2 x read floor: %s %.2f ms = %.2f x floor%s: %s",
                  benchmarkName(r).c_str(), r.stepMs, r.xMemFloor, cpu, verdict(r.xMemFloor, 1.2, false).c_str());
    line(buf);
  }
  if (!anyDecode)
    line("  batch-1 decode <= 1.2 x read floor: no decode benchmark run in this invocation");
  // Chunked prefill at 4096 against the prefill at 0, window-only layer, 1 and all threads (the ratio of wall times;
  // serially also of CPU times).
  for (bool par : {false, true}) {
    const unsigned threads = par ? hardwareThreads() : 1u;
    const CPUResult *prefill = nullptr, *chunk = nullptr;
    for (const CPUResult &r : gCPUResults)
      if (r.par == par && r.label == windowLabel(WindowStep::Prefill))
        prefill = &r;
      else if (r.par == par && r.label == windowLabel(WindowStep::Chunk))
        chunk = &r;
    if (prefill && chunk) {
      const double ratio = chunk->stepMs / prefill->stepMs;
      char cpu[64] = "";
      if (chunk->cpuMs > 0 && prefill->cpuMs > 0)
        std::snprintf(cpu, sizeof cpu, " (from CPU time %.0f / %.0f ms = %.2f x)", chunk->cpuMs, prefill->cpuMs,
                      chunk->cpuMs / prefill->cpuMs);
      std::snprintf(buf, sizeof buf,
                    "  chunked prefill 512 at start_pos 4096 <= 1.3 x prefill 512 at 0, window-only layer, %u "
                    "thread(s): %s %.0f ms / %s %.0f ms = %.2f x%s: %s",
                    threads, benchmarkName(*chunk).c_str(), chunk->stepMs, benchmarkName(*prefill).c_str(),
                    prefill->stepMs, ratio, cpu, verdict(ratio, 1.3, false).c_str());
    } else {
      const char *pre = par ? "CPUParallel/" : "CPU/";
      std::snprintf(buf, sizeof buf,
                    "  chunked prefill 512 at start_pos 4096 <= 1.3 x prefill 512 at 0, window-only layer, %u "
                    "thread(s): not run in this invocation (needs %sprefill512 and %schunk512_at4096)",
                    threads, pre, pre);
    }
    line(buf);
  }
  // The same for the index-source layer (ratio 4): its chunk scores 512 tokens against 1152 compressed rows and
  // attends to up to index_topk of them, work the prefill at 0 does not have.
  for (bool par : {false, true}) {
    const unsigned threads = par ? hardwareThreads() : 1u;
    const CPUResult *prefill = nullptr, *chunk = nullptr;
    for (const CPUResult &r : gCPUResults)
      if (r.par == par && r.label == indexChunkLabel(0))
        prefill = &r;
      else if (r.par == par && r.label == indexChunkLabel(4096))
        chunk = &r;
    const char *pre = par ? "CPUParallel/" : "CPU/";
    if (prefill && chunk) {
      const double ratio = chunk->stepMs / prefill->stepMs;
      std::snprintf(buf, sizeof buf,
                    "  chunked prefill 512 at start_pos 4096 <= 1.3 x prefill 512 at 0, index-source layer (ratio "
                    "4), %u thread(s): %s %.0f ms / %s %.0f ms = %.2f x: %s",
                    threads, benchmarkName(*chunk).c_str(), chunk->stepMs, benchmarkName(*prefill).c_str(),
                    prefill->stepMs, ratio, verdict(ratio, 1.3, false).c_str());
    } else {
      std::snprintf(buf, sizeof buf,
                    "  chunked prefill 512 at start_pos 4096 <= 1.3 x prefill 512 at 0, index-source layer (ratio "
                    "4), %u thread(s): not run in this invocation (needs %s%s and %s%s)",
                    threads, pre, indexChunkLabel(0).c_str(), pre, indexChunkLabel(4096).c_str());
    }
    line(buf);
  }
  // CPU backend vs the interpreter on every benchmarked step.
  if (gCPUResults.empty())
    line("  CPU >= 100 x interpreter: no CPU benchmark run in this invocation");
  for (const CPUResult &r : gCPUResults) {
    if (r.speedupInterp > 0)
      std::snprintf(buf, sizeof buf, "  CPU >= 100 x interpreter: %s %.1f x: %s", benchmarkName(r).c_str(),
                    r.speedupInterp, verdict(r.speedupInterp, 100, true).c_str());
    else
      std::snprintf(buf, sizeof buf, "  CPU >= 100 x interpreter: %s: interpreter not run (%s)",
                    benchmarkName(r).c_str(),
                    r.label == indexChunkLabel(0) || r.label == indexChunkLabel(4096)
                        ? "no interpreter benchmark of this step is registered"
                    : gSkipInterpreter ? "--dsa_skip_interpreter"
                                       : "filtered out");
    line(buf);
  }
}

} // namespace

int main(int argc, char **argv) {
  // Our own flags first (Google Benchmark rejects flags it does not know).
  std::vector<char *> rest;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--dsa_skip_interpreter") {
      gSkipInterpreter = true;
    } else if (a == "--dsa_no_in_place") {
      gNoInPlace = true;
    } else if (a.rfind("--dsa_phase_min_rows=", 0) == 0) {
      char *end = nullptr;
      long long v = std::strtoll(a.c_str() + 21, &end, 10);
      if (a.size() == 21 || *end != '\0' || v < 0)
        die("--dsa_phase_min_rows must be an integer >= 0 (0: no phase kernel), got '" + a.substr(21) + "'");
      gPhaseMinRows = v;
    } else if (a.rfind("--dsa_op_tokens=", 0) == 0) {
      char *end = nullptr;
      long long v = std::strtoll(a.c_str() + 16, &end, 10);
      if (a.size() == 16 || *end != '\0' || v < 1 || v > 65536)
        die("--dsa_op_tokens must be an integer in [1, 65536] (the CPUOp/ benchmarks' rows of x), got '" +
            a.substr(16) + "'");
      gOpTokens = v;
    } else if (a.rfind("--dsa_buffer_mib=", 0) == 0) {
      long v = std::strtol(a.c_str() + 17, nullptr, 10);
      if (v < 64)
        die("--dsa_buffer_mib must be at least 64 (larger than the caches), got '" + a.substr(17) + "'");
      gBufferMiB = static_cast<size_t>(v);
    } else if (a.rfind("--dsa_index_contexts=", 0) == 0) {
      gIndexContexts.clear();
      std::stringstream list(a.substr(21));
      std::string item;
      while (std::getline(list, item, ',')) {
        char *end = nullptr;
        long long v = std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || v < 128 || v >= 65536 + 1024)
          die("--dsa_index_contexts: each context must be an integer in [128, 66559] (window .. max_seq_len - 1), "
              "got '" + item + "'");
        gIndexContexts.push_back(v);
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  int restArgc = static_cast<int>(rest.size());
  rest.push_back(nullptr);

  // Registration order is run order: the bandwidth and the interpreter first, so that the CPU benchmarks report
  // their ratios from measurements of the same run.
  benchmark::RegisterBenchmark("ReadBandwidth/threads:1", BM_ReadBandwidth)->Arg(1)->Iterations(1);
  if (hardwareThreads() > 1)
    benchmark::RegisterBenchmark(("ReadBandwidth/threads:" + std::to_string(hardwareThreads())).c_str(),
                                 BM_ReadBandwidth)
        ->Arg(hardwareThreads())
        ->Iterations(1);
  for (PeakKind kind : {PeakKind::Fma, PeakKind::MulAdd}) {
    benchmark::RegisterBenchmark(("Peak/" + std::string(peakName(kind)) + "/threads:1").c_str(), BM_Peak, kind)
        ->Arg(1)
        ->Iterations(1);
    if (hardwareThreads() > 1)
      benchmark::RegisterBenchmark(
          ("Peak/" + std::string(peakName(kind)) + "/threads:" + std::to_string(hardwareThreads())).c_str(), BM_Peak,
          kind)
          ->Arg(hardwareThreads())
          ->Iterations(1);
  }
  benchmark::RegisterBenchmark("Interpreter/decode", BM_Interpreter, WindowStep::Decode)
      ->Iterations(3)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("CPU/decode", BM_CPU, WindowStep::Decode, false)
      ->MinTime(2.0)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("CPUParallel/decode", BM_CPU, WindowStep::Decode, true)
      ->MinTime(2.0)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  for (bool par : {false, true})
    for (int64_t batch : {1, 4, 16, 64})
      benchmark::RegisterBenchmark(
          (std::string(par ? "CPUParallelBatched" : "CPUBatched") + "/decode_b" + std::to_string(batch)).c_str(),
          BM_CPUBatched, batch, par)
          ->MinTime(1.0)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  // The prefill at 0 and the chunk at 4096 alternate, serial then parallel, so that each pair compared by the
  // chunk target runs back to back.
  for (WindowStep k : {WindowStep::Prefill, WindowStep::Chunk})
    benchmark::RegisterBenchmark(("Interpreter/" + windowLabel(k)).c_str(), BM_Interpreter, k)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  for (bool par : {false, true})
    for (WindowStep k : {WindowStep::Prefill, WindowStep::Chunk})
      benchmark::RegisterBenchmark((std::string(par ? "CPUParallel/" : "CPU/") + windowLabel(k)).c_str(), BM_CPU, k,
                                   par)
          ->Iterations(2)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();

  // The prefill's linears one at a time (512 tokens each).
  for (bool par : {false, true})
    for (const char *name : kOpNames)
      benchmark::RegisterBenchmark((std::string(par ? "CPUOpParallel/" : "CPUOp/") + name).c_str(), BM_CPUOp,
                                   std::string(name), par)
          ->Iterations(3)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();

  // The index-source layer (ratio 4, kv + index source): one decode step per context, from a filled state.
  for (int64_t context : gIndexContexts) {
    const std::string ctx = std::to_string(context);
    benchmark::RegisterBenchmark(("Interpreter/index_decode" + ctx).c_str(), BM_IndexInterpreter, context)
        ->Iterations(2)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("CPU/index_decode" + ctx).c_str(), BM_IndexCPU, context, false, false)
        ->MinTime(2.0)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("CPUPerCall/index_decode" + ctx).c_str(), BM_IndexCPU, context, false, true)
        ->MinTime(2.0)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("CPUParallel/index_decode" + ctx).c_str(), BM_IndexCPU, context, true, false)
        ->MinTime(2.0)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }

  // The index-source layer as a batched decode step: B = 1, 4, 16, 64 members at 4096 + b.
  for (bool par : {false, true})
    for (int64_t batch : {1, 4, 16, 64})
      benchmark::RegisterBenchmark((std::string(par ? "CPUParallelBatched" : "CPUBatched") + "/index_decode_b" +
                                    std::to_string(batch)).c_str(),
                                   BM_IndexBatched, batch, par)
          ->MinTime(1.0)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();

  // The index-source layer's 512-token steps: the prefill at 0 and the chunk at 4096, back to back per thread count.
  for (bool par : {false, true})
    for (int64_t startPos : {int64_t{0}, int64_t{4096}})
      benchmark::RegisterBenchmark((std::string(par ? "CPUParallel/" : "CPU/") + indexChunkLabel(startPos)).c_str(),
                                   BM_IndexChunkCPU, startPos, par)
          ->Iterations(2)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();

  benchmark::Initialize(&restArgc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(restArgc, rest.data()))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  printTargets();
  benchmark::Shutdown();
  // Free the layers (their JIT-compiled modules) here, while everything they use is alive, not in the static
  // destructors after main (a run was seen hanging at exit there).
  gBatchedIndexLayer.reset();
  gIndexLayer.reset();
  gOps.clear();
  gBatchedLayer.reset();
  gLayer.reset();
  return 0;
}
