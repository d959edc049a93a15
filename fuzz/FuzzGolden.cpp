//===- FuzzGolden.cpp - fuzz target: the golden reader and the checks a replay makes before it runs ----------===//
//
// Input: the text of a golden file (the format of ../shared/golden, tiny-model-harness.md). Runs what dsa-run
// --golden and dsa-golden do with a golden before any layer runs: GoldenFile::parse (every size, count and index
// bounded, duplicate keys refused), the section-1 model configuration, the LCG probe, every regime's input ids, the
// weights regenerated from their metadata (bounded: at most kMaxFilledElements elements in all, so one input stays
// fast) and the engram scales. Any input may be rejected with an error; none may crash, hang, leak or trip a
// sanitizer. Seeds: fuzz/corpus/golden (scripts/fuzz.sh adds test/Golden's goldens).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Core/Tensor.h"
#include "dsa/Golden/Filler.h"
#include "dsa/Golden/GoldenFile.h"
#include "dsa/Golden/ModelConfig.h"

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <string>

namespace {
constexpr int64_t kMaxFilledElements = int64_t(1) << 20;
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dsa::Tensor::setTensorByteLimit(int64_t(64) << 20); // an absurd size is an error, not an OOM kill
  std::string text(reinterpret_cast<const char *>(data), size);
  dsa::Result<dsa::golden::GoldenFile> golden = dsa::golden::GoldenFile::parse(text, "<fuzz>");
  static const bool verbose = std::getenv("DSA_FUZZ_VERBOSE") != nullptr; // which stage an input reaches
  if (!golden) {
    if (verbose)
      std::fprintf(stderr, "  rejected: %s\n", golden.error().c_str());
    return 0;
  }
  const dsa::golden::Fixture &fixture = golden->fixture();
  if (dsa::Status config = dsa::golden::validateModelConfig(fixture); !config) {
    if (verbose)
      std::fprintf(stderr, "  configuration rejected: %s\n", config.error().c_str());
    return 0;
  }
  (void)dsa::golden::checkLcgProbe(fixture);
  for (const dsa::golden::Regime &regime : golden->regimes())
    (void)dsa::golden::regimeInputIds(fixture, regime);
  int64_t filled = 0;
  for (const dsa::golden::WeightMeta &meta : golden->weights()) {
    int64_t n = meta.n;
    if (n < 0 || n > kMaxFilledElements - filled)
      break;
    filled += n;
    (void)dsa::golden::regenerateWeight(meta);
  }
  (void)dsa::golden::checkEngramScales(*golden);
  if (verbose)
    std::fprintf(stderr, "  accepted: %zu regimes, %lld weight elements regenerated\n", golden->regimes().size(),
                 static_cast<long long>(filled));
  return 0;
}
