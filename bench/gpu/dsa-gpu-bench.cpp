//===- dsa-gpu-bench.cpp - decode step of a V4.1-Flash window-only layer on the GPU vs the HBM floor (MLIR-free) -===//
//
// docs/gpu-backend.md "GPU benchmark". Loads the GPU step library that `scripts/gpu-check.sh --libs` compiles from
// bench/gpu/flash-window-layer.mlir (DIR/flash-window-layer.{so,json}: dim 5120, 64 heads of 512, rope 64, q_lora
// 1280, 8 groups of rank 1024, window 128), uploads seeded random weights once, fills the ring (128 x 512 bf16,
// random: at start_pos >= 128 every slot holds a past key), runs one warm-up decode step (start_pos 999) and then
// decode steps at start_pos 1000, 1001, ... through a GpuSequence (the ring stays on the device), each timed with
// the wall clock after synchronisation. In the same run it measures the device's memory bandwidth with device-to-
// device copies (cuMemcpyAsync through the mgpu runtime; read + written bytes over the time) and prints
//   step_ms   the median step time       bytes     weights + ring read + ring written, per step
//   floor_ms  bytes / bandwidth          x_hbm_floor  step_ms / floor_ms
//
// Usage: dsa-gpu-bench [--libs DIR] [--steps N] [--max-seconds S] [--copy-mib M] [--driver LIBCUDA] [--seed K]
// DIR defaults to $DSA_GPU_STEP_LIBS, else .gpu-libs. Without a driver or device it prints
// "dsa-gpu-bench: SKIP: no CUDA device (<the driver's message>)" and exits 0, or 1 when DSA_REQUIRE_CUDA_DEVICE=1.
// Other errors: "dsa-gpu-bench: error: ..." and exit 1; bad options: exit 2.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Runtime/Cuda/GpuStepLibrary.h"
#include "dsa/Runtime/Cuda/MgpuRuntime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace dsa;
using namespace dsa::cuda;
using dsa::ElementType;
using dsa::Tensor;

namespace {

using Clock = std::chrono::steady_clock;

int fail(const std::string &message) {
  std::fprintf(stderr, "dsa-gpu-bench: error: %s\n", message.c_str());
  return 1;
}

/// splitmix64: a seeded generator independent of the platform's <random> distributions.
struct Random {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// U[-1, 1)
  float symmetric() { return static_cast<float>(static_cast<double>(next() >> 11) * 0x1.0p-53 * 2.0 - 1.0); }
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

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

/// Device bandwidth: `reps` device-to-device copies of `bytes` (after one warm-up copy); returns read + written
/// bytes per second.
Result<double> copyBandwidth(MgpuRuntime &rt, size_t bytes, int reps) {
  Result<std::shared_ptr<DeviceAllocation>> a = rt.alloc(bytes);
  if (!a.ok())
    return makeError("copy buffer of " + std::to_string(bytes) + " bytes: " + a.error());
  Result<std::shared_ptr<DeviceAllocation>> b = rt.alloc(bytes);
  if (!b.ok())
    return makeError("copy buffer of " + std::to_string(bytes) + " bytes: " + b.error());
  MgpuRuntime::Binding bind(rt);
  void *src = reinterpret_cast<void *>((*a)->ptr()), *dst = reinterpret_cast<void *>((*b)->ptr());
  void *stream = mgpuStreamCreate();
  std::string err = rt.takeDeferredError();
  if (!err.empty())
    return makeError(err);
  mgpuMemset32(src, 0x3f803f80u, bytes / 4, stream); // bf16 1.0 pairs: touch every page before timing
  mgpuMemcpy(dst, src, bytes, stream);               // warm-up
  mgpuStreamSynchronize(stream);
  Clock::time_point t0 = Clock::now();
  for (int i = 0; i < reps; ++i)
    mgpuMemcpy(i % 2 ? src : dst, i % 2 ? dst : src, bytes, stream);
  mgpuStreamSynchronize(stream);
  double t = seconds(Clock::now() - t0);
  mgpuStreamDestroy(stream);
  err = rt.takeDeferredError();
  if (!err.empty())
    return makeError(err);
  return 2.0 * static_cast<double>(bytes) * reps / t;
}

} // namespace

int main(int argc, char **argv) {
  std::string libs = std::getenv("DSA_GPU_STEP_LIBS") ? std::getenv("DSA_GPU_STEP_LIBS") : ".gpu-libs";
  std::string driver = Driver::kDefaultLibrary;
  long steps = 20, copyMib = 1024;
  double maxSeconds = 20.0;
  uint64_t seed = 4141;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *name) -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "dsa-gpu-bench: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    auto number = [&](const char *name, double lo, double hi) {
      const char *v = value(name);
      char *end = nullptr;
      double d = std::strtod(v, &end);
      if (!*v || *end || !(d >= lo && d <= hi)) {
        std::fprintf(stderr, "dsa-gpu-bench: %s: expected a number in [%g, %g], got '%s'\n", name, lo, hi, v);
        std::exit(2);
      }
      return d;
    };
    if (a == "--libs")
      libs = value("--libs");
    else if (a == "--driver")
      driver = value("--driver");
    else if (a == "--steps")
      steps = static_cast<long>(number("--steps", 1, 100000));
    else if (a == "--max-seconds")
      maxSeconds = number("--max-seconds", 0.001, 3600);
    else if (a == "--copy-mib")
      copyMib = static_cast<long>(number("--copy-mib", 1, 65536));
    else if (a == "--seed")
      seed = static_cast<uint64_t>(number("--seed", 0, 1e15));
    else {
      std::fprintf(stderr,
                   "usage: dsa-gpu-bench [--libs DIR] [--steps N] [--max-seconds S] [--copy-mib M] [--driver LIBCUDA] "
                   "[--seed K]\n");
      return 2;
    }
  }

  Result<std::shared_ptr<MgpuRuntime>> opened = MgpuRuntime::open(0, driver);
  if (!opened.ok()) {
    const char *req = std::getenv("DSA_REQUIRE_CUDA_DEVICE");
    bool required = req && std::string(req) == "1";
    std::printf("dsa-gpu-bench: SKIP: no CUDA device (%s)\n", opened.error().c_str());
    if (required)
      std::fprintf(stderr, "dsa-gpu-bench: DSA_REQUIRE_CUDA_DEVICE=1: a device is required\n");
    return required ? 1 : 0;
  }
  std::shared_ptr<MgpuRuntime> rt = opened.take();
  const DeviceInfo &dev = rt->device();
  std::printf("dsa-gpu-bench: device %d: %s (sm_%d%d, %.1f GiB)\n", dev.ordinal, dev.name.c_str(), dev.computeMajor,
              dev.computeMinor, static_cast<double>(dev.totalMemoryBytes) / (1ull << 30));

  const std::string json = libs + "/flash-window-layer.json";
  Result<std::unique_ptr<GpuStepLibrary>> lib = GpuStepLibrary::open(rt, json);
  if (!lib.ok())
    return fail("step library " + json + " (scripts/gpu-check.sh --libs compiles it): " + lib.error());
  const std::string fn = "flash_window";
  if (!(*lib)->signature(fn))
    return fail(json + " has no function " + fn);

  // The geometry of bench/gpu/flash-window-layer.mlir; weights scaled by 1/sqrt(fan-in) as bench/DsaBench.cpp.
  const int64_t dim = 5120, nHeads = 64, headDim = 512, qLora = 1280, oLora = 1024, oGroups = 8, window = 128;
  Clock::time_point tPrep = Clock::now();
  Random rng{seed};
  auto fanIn = [](int64_t n) { return 1.0f / std::sqrt(static_cast<float>(n)); };
  std::vector<GpuValue> args = {Tensor(), Tensor::scalarI64(0)};
  double weightBytes = 0;
  auto uploadInto = [&](const Tensor &t, bool weight) -> Status {
    Result<GpuTensor> g = GpuTensor::upload(*rt, t);
    if (!g.ok())
      return makeError("upload of " + t.typeString() + ": " + g.error());
    if (weight)
      weightBytes += static_cast<double>(t.numElements()) * (t.elementType() == ElementType::F32 ? 4 : 2);
    args.push_back(*g);
    return Status::success();
  };
  std::vector<std::pair<std::vector<int64_t>, std::pair<float, float>>> bf16Weights = {
      {{qLora, dim}, {fanIn(dim), 0}},          {{qLora}, {0.1f, 1}},    {{nHeads * headDim, qLora}, {fanIn(qLora), 0}},
      {{headDim, dim}, {fanIn(dim), 0}},        {{headDim}, {0.1f, 1}},  {{oGroups * oLora, nHeads * headDim / oGroups},
                                                                          {fanIn(nHeads * headDim / oGroups), 0}},
      {{dim, oGroups * oLora}, {fanIn(oGroups * oLora), 0}}};
  Status s = uploadInto(randomTensor(rng, ElementType::BF16, {window, headDim}, 1.0f), false); // the full ring
  if (s.ok())
    s = uploadInto(randomTensor(rng, ElementType::F32, {nHeads}, 0.5f), true); // sink
  for (size_t i = 0; s.ok() && i < bf16Weights.size(); ++i)
    s = uploadInto(randomTensor(rng, ElementType::BF16, bf16Weights[i].first, bf16Weights[i].second.first,
                                bf16Weights[i].second.second),
                   true);
  if (!s.ok())
    return fail(s.error());
  std::vector<GpuTensor> xs;
  for (int i = 0; i < 8; ++i) { // a few token inputs, uploaded before timing
    Result<GpuTensor> x = GpuTensor::upload(*rt, randomTensor(rng, ElementType::BF16, {1, dim}, 1.0f));
    if (!x.ok())
      return fail("upload of x: " + x.error());
    xs.push_back(*x);
  }
  std::printf("dsa-gpu-bench: weights %.1f MB (bf16, sink f32) uploaded in %.1f s\n", weightBytes / 1e6,
              seconds(Clock::now() - tPrep));

  Result<GpuSequence> seq = GpuSequence::create(**lib, fn, args);
  if (!seq.ok())
    return fail(seq.error());
  auto step = [&](int64_t startPos, size_t i) -> Result<double> {
    Clock::time_point t0 = Clock::now();
    Result<std::vector<GpuValue>> got = seq->step({{0, xs[i % xs.size()]}, {1, Tensor::scalarI64(startPos)}});
    if (!got.ok())
      return makeError("decode step at start_pos " + std::to_string(startPos) + ": " + got.error());
    if (Status sync = rt->synchronize(); !sync.ok())
      return makeError("synchronize after start_pos " + std::to_string(startPos) + ": " + sync.error());
    double t = seconds(Clock::now() - t0);
    if (startPos == 999) { // the warm-up's output must be finite (the benchmark computed something)
      Result<Tensor> out = (*got)[0].toHost();
      if (!out.ok())
        return makeError("download of the output: " + out.error());
      for (int64_t k = 0; k < out->numElements(); ++k)
        if (!std::isfinite(out->at(k)))
          return makeError("the warm-up step's output has a non-finite value at " + std::to_string(k));
    }
    return t;
  };
  Result<double> warm = step(999, 0);
  if (!warm.ok())
    return fail(warm.error());
  std::printf("dsa-gpu-bench: warm-up step (start_pos 999): %.3f ms\n", *warm * 1e3);
  std::vector<double> times;
  Clock::time_point tRun = Clock::now();
  for (long i = 0; i < steps; ++i) {
    Result<double> t = step(1000 + i, static_cast<size_t>(i + 1));
    if (!t.ok())
      return fail(t.error());
    times.push_back(*t);
    if (seconds(Clock::now() - tRun) > maxSeconds)
      break;
  }
  if ((*lib)->leakedAllocations() != 0)
    std::printf("dsa-gpu-bench: note: the compiled code leaked %zu device allocations (freed)\n",
                (*lib)->leakedAllocations());

  Result<double> bw = copyBandwidth(*rt, static_cast<size_t>(copyMib) << 20, 10);
  if (!bw.ok())
    return fail("bandwidth: " + bw.error());

  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2] * 1e3, minMs = sorted.front() * 1e3, maxMs = sorted.back() * 1e3;
  const double bytes = weightBytes + 2.0 * static_cast<double>(window * headDim * 2); // ring read + written
  const double floorMs = bytes / *bw * 1e3;
  std::printf("dsa-gpu-bench: copy bandwidth %.0f GB/s (device-to-device %ld MiB x 10, read + written)\n", *bw / 1e9,
              copyMib);
  std::printf("dsa-gpu-bench: decode start_pos 1000..%ld (%zu steps): step_ms %.3f (min %.3f, max %.3f) bytes %.0f "
              "floor_ms %.4f x_hbm_floor %.1f\n",
              1000 + static_cast<long>(times.size()) - 1, times.size(), median, minMs, maxMs, bytes, floorMs,
              median / floorMs);
  return 0;
}
