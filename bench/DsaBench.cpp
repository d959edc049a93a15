//===- DsaBench.cpp - one V4.1-Flash window-only layer: CPU backend vs interpreter vs memory floor ---===//
//
// Google Benchmark program (docs/benchmarks.md). One window-only `dsa.attention` layer (compress_ratio 0) at
// DeepSeek-V4.1-Flash geometry (dim 5120, 64 heads, head_dim 512, rope 64, q_lora 1280, o_lora 1024, 8 groups,
// window 128), batch 1, seeded random bf16 weights, compiled by the CPU backend (compileForCPU, weights passed as
// prepared CPUBuffers) and run for:
//   - a decode step (1 token at start_pos 1000, well past the window; the ring is full of random rows);
//   - a 512-token prefill (start_pos 0).
// In the same run it measures
//   - the reference interpreter (interp::interpretFunction on the same module, decomposed, same inputs);
//   - the machine's streaming read bandwidth (a buffer of 1 GiB, far larger than the caches), one thread and all
//     hardware threads;
// and reports, as counters of each CPU benchmark:
//   step_ms        wall-clock milliseconds per step (the same as the benchmark's real time);
//   cpu_ms         process CPU milliseconds per step (serial only: on a shared machine the wall clock also counts
//                  the time the step waited for a core; the process CPU time does not);
//   interp_ms      the interpreter's wall-clock time per step (interp_cpu_ms: its process CPU time);
//   speedup_interp interp_ms / step_ms: how many times faster than the interpreter (speedup_interp_cpu: the same
//                  from CPU times, serial only);
//   bytes_MB       the bytes the step must move at least: every attention weight in bf16 (attn_sink in f32) read once,
//                  the ring read once and the new ring written once (x and out are noise);
//   floor_ms       bytes_MB / the machine's read bandwidth (the better of one thread and all hardware threads);
//   x_mem_floor    step_ms / floor_ms (1.0 = running at the machine's memory-read floor; issue 4's decode target
//                  is <= 2); x_mem_floor_cpu: cpu_ms / floor_ms (serial only);
//   GFLOPs         floating-point rate from step_ms (2 flops per multiply-add of the linears and the attention).
// Flags of its own (besides Google Benchmark's): --dsa_skip_interpreter (no interpreter runs: no speedup_interp,
// used by bench/torch_compare.py), --dsa_buffer_mib=N (size of the bandwidth buffer, default 1024).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Backend/CPU/CPUModule.h"

#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"
#include "dsa/Interpreter/Interpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <time.h>

using namespace mlir;
namespace interp = ::dsa::interp;
namespace cpu = ::dsa::cpu;
using interp::ElementType;
using interp::Tensor;

namespace {

bool gSkipInterpreter = false;
size_t gBufferMiB = 1024;

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
// The layer
//===----------------------------------------------------------------------------------------------------------===//

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
};

/// splitmix64: seeded, fast enough for 127M weights.
class Random {
public:
  explicit Random(uint64_t seed) : state_(seed) {}
  float symmetric() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<float>(static_cast<double>(z >> 40) / 8388608.0 - 1.0);
  }

private:
  uint64_t state_;
};

Tensor randomTensor(Random &rng, ElementType type, std::vector<int64_t> shape, float scale, float offset = 0.0f) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = offset + scale * rng.symmetric();
  return Tensor::fromFloats(type, std::move(shape), std::move(v));
}

std::string exactDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17e", v);
  return buf;
}

/// Everything one benchmark process holds: the module, its compiled forms, weights and inputs (built once).
struct Layer {
  Geometry g;
  MLIRContext context;
  OwningOpRef<ModuleOp> module, decomposed;
  func::FuncOp interpFn;
  std::unique_ptr<cpu::CPUModule> serial, parallel;
  std::vector<Tensor> weights;
  std::vector<cpu::CPUValue> prepared;
  Tensor ring, xDecode, xPrefill;
  int64_t decodeStartPos = 1000;
  int64_t prefillTokens = 512;
  int64_t weightBytes = 0;

  std::string text() const {
    std::ostringstream os;
    const std::string xType = "tensor<?x" + std::to_string(g.dim) + "xbf16>";
    const std::string ringType = "tensor<" + std::to_string(g.window) + "x" + std::to_string(g.headDim) + "xbf16>";
    os << "func.func @attention_L0(%x: " << xType << ", %start_pos: i64, %ring: " << ringType;
    for (size_t i = 0; i < weights.size(); ++i)
      os << ", %w" << i << ": " << weights[i].typeString();
    os << ") -> (" << xType << ", " << ringType
       << ") {\n  %out, %new_ring = dsa.attention %x, %start_pos, %ring weights(";
    for (size_t i = 0; i < weights.size(); ++i)
      os << (i ? ", " : "") << "%w" << i;
    os << ") {config = #dsa.attn_config<layer_id = 0, dim = " << g.dim << ", n_heads = " << g.nHeads
       << ", head_dim = " << g.headDim << ", rope_head_dim = " << g.ropeDim << ", q_lora_rank = " << g.qLora
       << ", o_groups = " << g.oGroups << ", o_lora_rank = " << g.oLora << ", window_size = " << g.window
       << ", compress_ratio = 0, norm_eps = " << exactDouble(g.normEps) << " : f32, rope = #dsa.rope<rope_dim = "
       << g.ropeDim << ", theta = " << exactDouble(g.ropeTheta) << ">>}\n      : (" << xType << ", i64, "
       << ringType;
    for (const Tensor &w : weights)
      os << ", " << w.typeString();
    os << ") -> (" << xType << ", " << ringType << ")\n  return %out, %new_ring : " << xType << ", " << ringType
       << "\n}\n";
    return os.str();
  }

  Layer() {
    Random rng(4);
    auto fanIn = [](int64_t k) { return static_cast<float>(std::sqrt(3.0 / static_cast<double>(k))); };
    // dsa.attention's weights(...) order: attn_sink, wq_a, q_norm, wq_b, wkv, kv_norm, wo_a, wo_b.
    weights.push_back(randomTensor(rng, ElementType::F32, {g.nHeads}, 0.5f));
    weights.push_back(randomTensor(rng, ElementType::BF16, {g.qLora, g.dim}, fanIn(g.dim)));
    weights.push_back(randomTensor(rng, ElementType::BF16, {g.qLora}, 0.1f, 1.0f));
    weights.push_back(randomTensor(rng, ElementType::BF16, {g.nHeads * g.headDim, g.qLora}, fanIn(g.qLora)));
    weights.push_back(randomTensor(rng, ElementType::BF16, {g.headDim, g.dim}, fanIn(g.dim)));
    weights.push_back(randomTensor(rng, ElementType::BF16, {g.headDim}, 0.1f, 1.0f));
    weights.push_back(
        randomTensor(rng, ElementType::BF16, {g.oGroups * g.oLora, g.groupWidth()}, fanIn(g.groupWidth())));
    weights.push_back(
        randomTensor(rng, ElementType::BF16, {g.dim, g.oGroups * g.oLora}, fanIn(g.oGroups * g.oLora)));
    for (const Tensor &w : weights) {
      weightBytes += w.numElements() * (w.elementType() == ElementType::F32 ? 4 : 2);
      prepared.push_back(cpu::CPUBuffer::fromTensor(w));
    }
    ring = randomTensor(rng, ElementType::BF16, {g.window, g.headDim}, 1.0f);
    xDecode = randomTensor(rng, ElementType::BF16, {1, g.dim}, 1.0f);
    xPrefill = randomTensor(rng, ElementType::BF16, {prefillTokens, g.dim}, 1.0f);

    context.loadDialect<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, tensor::TensorDialect>();
    module = parseSourceString<ModuleOp>(text(), &context);
    if (!module)
      die("could not parse the layer's module (see the diagnostic above)");
    decomposed = OwningOpRef<ModuleOp>(module->clone());
    PassManager pm(&context);
    pm.addPass(mlir::dsa::createDSADecomposeAttention());
    if (failed(pm.run(*decomposed)))
      die("dsa-decompose-attention failed (see the diagnostic above)");
    interpFn = decomposed->lookupSymbol<func::FuncOp>("attention_L0");
    serial = compile(false);
  }

  std::unique_ptr<cpu::CPUModule> compile(bool par) {
    cpu::CPUCompileOptions options;
    options.parallel = par;
    ::dsa::Result<std::unique_ptr<cpu::CPUModule>> m = cpu::compileForCPU(*module, options);
    if (!m)
      die(std::string("compileForCPU") + (par ? " (parallel=true)" : "") + ": " + m.error());
    return m.take();
  }

  /// The OpenMP module, compiled on first use; null (with the reason in `why`) when there is no OpenMP runtime.
  cpu::CPUModule *parallelModule(std::string &why) {
    if (!parallel) {
      cpu::CPUCompileOptions options;
      options.parallel = true;
      ::dsa::Result<std::unique_ptr<cpu::CPUModule>> m = cpu::compileForCPU(*module, options);
      if (!m) {
        why = m.error();
        return nullptr;
      }
      parallel = m.take();
    }
    return parallel.get();
  }

  const Tensor &input(bool prefill) const { return prefill ? xPrefill : xDecode; }
  int64_t startPos(bool prefill) const { return prefill ? 0 : decodeStartPos; }
  int64_t tokens(bool prefill) const { return prefill ? prefillTokens : 1; }

  void runCPU(const cpu::CPUModule &m, bool prefill) const {
    std::vector<cpu::CPUValue> args = {input(prefill), Tensor::scalarI64(startPos(prefill)), ring};
    args.insert(args.end(), prepared.begin(), prepared.end());
    ::dsa::Result<std::vector<Tensor>> r = m.run("attention_L0", args);
    if (!r)
      die("CPU backend: " + r.error());
    benchmark::DoNotOptimize(r->front().floats());
  }

  void runInterpreter(bool prefill) const {
    std::vector<Tensor> args = {input(prefill), Tensor::scalarI64(startPos(prefill)), ring};
    args.insert(args.end(), weights.begin(), weights.end());
    FailureOr<std::vector<Tensor>> r = interp::interpretFunction(interpFn, args, nullptr);
    if (failed(r))
      die("interpreter failed (see the diagnostic above)");
    benchmark::DoNotOptimize(r->front().floats());
  }

  /// Bytes a step must move at least: the weights once, the ring read and the new ring written.
  double stepBytes() const { return static_cast<double>(weightBytes + 2 * g.window * g.headDim * 2); }
  /// 2 flops per multiply-add: the linears, q.k and p.v over the window rows each query reads.
  double stepFlops(bool prefill) const {
    const int64_t s = tokens(prefill);
    const int64_t rows = prefill ? std::min(s, g.window) : g.window;
    return 2.0 * static_cast<double>(s) *
           (static_cast<double>(g.linearMacsPerToken()) + 2.0 * static_cast<double>(g.nHeads * rows * g.headDim));
  }
};

Layer &layer() {
  static Layer *l = [] {
    auto t0 = Clock::now();
    auto *created = new Layer();
    std::fprintf(stderr, "dsa-bench: V4.1-Flash window-only layer built and compiled in %.1f s (%.0f MB of bf16 "
                         "weights)\n",
                 secondsSince(t0), static_cast<double>(created->weightBytes) / 1e6);
    return created;
  }();
  return *l;
}

/// Seconds per step: wall clock and process CPU time.
struct StepTime {
  double wall = 0, cpu = 0;
};

/// The interpreter's time per step, from its own benchmark when it ran first (registration order), else measured
/// here once; zeros with --dsa_skip_interpreter.
std::map<bool, StepTime> gInterpTime;
StepTime interpreterTime(bool prefill) {
  if (gSkipInterpreter)
    return {};
  if (auto it = gInterpTime.find(prefill); it != gInterpTime.end())
    return it->second;
  auto t0 = Clock::now();
  double c0 = processCpuSeconds();
  layer().runInterpreter(prefill);
  return gInterpTime[prefill] = {secondsSince(t0), processCpuSeconds() - c0};
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

void BM_Interpreter(benchmark::State &state, bool prefill) {
  if (gSkipInterpreter) {
    state.SkipWithError("--dsa_skip_interpreter");
    for (auto _ : state) {
    }
    return;
  }
  Layer &l = layer();
  StepTime total;
  int64_t n = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    double c0 = processCpuSeconds();
    l.runInterpreter(prefill);
    total.wall += secondsSince(t0);
    total.cpu += processCpuSeconds() - c0;
    ++n;
  }
  StepTime &t = gInterpTime[prefill];
  t = {total.wall / static_cast<double>(n), total.cpu / static_cast<double>(n)};
  state.counters["step_ms"] = 1e3 * t.wall;
  state.counters["cpu_ms"] = 1e3 * t.cpu;
  state.counters["GFLOPs"] = l.stepFlops(prefill) / t.wall / 1e9;
}

void BM_CPU(benchmark::State &state, bool prefill, bool par) {
  Layer &l = layer();
  const cpu::CPUModule *m = l.serial.get();
  if (par) {
    std::string why;
    m = l.parallelModule(why);
    if (!m) {
      state.SkipWithError(("parallel=true unavailable: " + why).c_str());
      for (auto _ : state) {
      }
      return;
    }
  }
  l.runCPU(*m, prefill); // warm-up: first-touch of the JIT's code and the allocator
  StepTime total;
  int64_t n = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    double c0 = processCpuSeconds();
    l.runCPU(*m, prefill);
    total.wall += secondsSince(t0);
    total.cpu += processCpuSeconds() - c0;
    ++n;
  }
  const double step = total.wall / static_cast<double>(n);
  const double stepCpu = total.cpu / static_cast<double>(n);
  const double floor = l.stepBytes() / machineBandwidth();
  state.counters["step_ms"] = 1e3 * step;
  state.counters["bytes_MB"] = l.stepBytes() / 1e6;
  state.counters["floor_ms"] = 1e3 * floor;
  state.counters["x_mem_floor"] = step / floor;
  state.counters["GFLOPs"] = l.stepFlops(prefill) / step / 1e9;
  state.counters["tokens"] = static_cast<double>(l.tokens(prefill));
  state.counters["threads"] = par ? hardwareThreads() : 1u;
  if (!par) {
    state.counters["cpu_ms"] = 1e3 * stepCpu;
    state.counters["x_mem_floor_cpu"] = stepCpu / floor;
  }
  if (StepTime interp = interpreterTime(prefill); interp.wall > 0) {
    state.counters["interp_ms"] = 1e3 * interp.wall;
    state.counters["interp_cpu_ms"] = 1e3 * interp.cpu;
    state.counters["speedup_interp"] = interp.wall / step;
    if (!par)
      state.counters["speedup_interp_cpu"] = interp.cpu / stepCpu;
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
    } else if (a.rfind("--dsa_buffer_mib=", 0) == 0) {
      long v = std::strtol(a.c_str() + 17, nullptr, 10);
      if (v < 64)
        die("--dsa_buffer_mib must be at least 64 (larger than the caches), got '" + a.substr(17) + "'");
      gBufferMiB = static_cast<size_t>(v);
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
  benchmark::RegisterBenchmark("Interpreter/decode", BM_Interpreter, false)
      ->Iterations(3)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("CPU/decode", BM_CPU, false, false)
      ->MinTime(2.0)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("CPUParallel/decode", BM_CPU, false, true)
      ->MinTime(2.0)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("Interpreter/prefill512", BM_Interpreter, true)
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("CPU/prefill512", BM_CPU, true, false)
      ->Iterations(2)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("CPUParallel/prefill512", BM_CPU, true, true)
      ->Iterations(2)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();

  benchmark::Initialize(&restArgc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(restArgc, rest.data()))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
