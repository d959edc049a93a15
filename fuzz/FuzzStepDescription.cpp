//===- FuzzStepDescription.cpp - fuzz target: step descriptions and the runtime's planning of steps ----------===//
//
// Input: a step description (runtime/host StepDescription.h, the .json beside a step library) followed, after a
// NUL byte, by step requests (8 bytes each: rows of x, start_pos; little-endian). Runs parseStepLibrary, then for
// every function with step roles: initialSlots, Sequence::start with every fixed argument a zero tensor of its
// static shape (bounded: a description whose fixed arguments need more than 16 MB is skipped) and a runner that
// returns zero tensors of the result shapes (what a compiled step would hand back), and run() for each request.
// What is fuzzed is the runtime's own trust in the description: planning, state threading, capacity and shared
// slot checks. Any input may be an error; none may crash, hang, leak or trip a sanitizer. Seeds: fuzz/corpus/
// step-description (scripts/fuzz.sh adds the descriptions the build's dsa-run emits for the golden's layers).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Core/Tensor.h"
#include "dsa/Runtime/Host/Sequence.h"
#include "dsa/Runtime/Host/StepDescription.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace {

using namespace dsa::runtime;

constexpr int64_t kMaxBytes = int64_t(16) << 20;

/// A zero tensor of `kind` with dynamic dimensions taken as `dynamic`; an error when too large.
dsa::Result<dsa::Tensor> zeroOf(const ValueKind &kind, int64_t dynamic, int64_t &budget) {
  std::vector<int64_t> shape;
  if (kind.isTensor)
    for (int64_t d : kind.shape)
      shape.push_back(d < 0 ? dynamic : d);
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > kMaxBytes / d))
      return dsa::makeError("too large");
    n *= d;
  }
  if (n * 8 > budget)
    return dsa::makeError("over the fuzzer's budget");
  budget -= n * 8;
  return dsa::Tensor::zeros(kind.elem, shape);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dsa::Tensor::setTensorByteLimit(kMaxBytes);
  const char *text = reinterpret_cast<const char *>(data);
  size_t jsonSize = strnlen(text, size);
  dsa::Result<StepLibraryDescription> description = parseStepLibrary(std::string(text, jsonSize));
  static const bool verbose = std::getenv("DSA_FUZZ_VERBOSE") != nullptr; // which stage an input reaches
  if (!description) {
    if (verbose)
      std::fprintf(stderr, "  rejected: %s\n", description.error().c_str());
    return 0;
  }
  const uint8_t *requests = data + std::min(size, jsonSize + 1);
  size_t nRequests = std::min<size_t>((size - std::min(size, jsonSize + 1)) / 8, 16);
  for (const FunctionSignature &signature : description->functions) {
    if (!signature.step.present())
      continue;
    (void)Sequence::initialSlots(signature);
    int64_t budget = kMaxBytes;
    std::map<size_t, HostValue> fixed;
    bool skip = false;
    for (size_t i = 0; i < signature.args.size() && !skip; ++i) {
      bool role = int64_t(i) == signature.step.x || int64_t(i) == signature.step.startPos;
      for (const StateBinding &s : signature.state)
        role |= s.arg == int64_t(i);
      for (const StateBinding &s : signature.step.shared)
        role |= s.arg == int64_t(i);
      if (role)
        continue;
      dsa::Result<dsa::Tensor> zero = zeroOf(signature.args[i], 1, budget);
      if (!zero) {
        skip = true;
        break;
      }
      fixed.emplace(i, HostValue(std::move(*zero)));
    }
    if (skip)
      continue;
    const FunctionSignature sig = signature;
    Sequence::Runner runner = [sig](const std::vector<HostValue> &args,
                                    std::vector<NamedTensor> *) -> dsa::Result<std::vector<dsa::Tensor>> {
      int64_t rows = 1;
      if (sig.step.x >= 0 && size_t(sig.step.x) < args.size()) {
        const dsa::Tensor *x = args[sig.step.x].tensor();
        const HostBuffer *b = args[sig.step.x].buffer();
        const std::vector<int64_t> *shape = x ? &x->shape() : b ? &b->shape() : nullptr;
        rows = shape && !shape->empty() ? (*shape)[0] : 1;
      }
      int64_t budget = kMaxBytes;
      std::vector<dsa::Tensor> results;
      for (const ValueKind &kind : sig.results) {
        dsa::Result<dsa::Tensor> zero = zeroOf(kind, rows, budget);
        if (!zero)
          return dsa::makeError(zero.error());
        results.push_back(std::move(*zero));
      }
      return results;
    };
    dsa::Result<Sequence> sequence = Sequence::start(signature, runner, std::move(fixed));
    if (!sequence) {
      if (verbose)
        std::fprintf(stderr, "  @%s: sequence refused: %s\n", signature.name.c_str(), sequence.error().c_str());
      continue;
    }
    dsa::Result<Sequence::SlotSet> slots = Sequence::initialSlots(signature);
    for (size_t r = 0; r < nRequests; ++r) {
      uint32_t rows;
      int32_t startPos;
      std::memcpy(&rows, requests + 8 * r, 4);
      std::memcpy(&startPos, requests + 8 * r + 4, 4);
      ValueKind xKind = signature.args[signature.step.x];
      int64_t xBudget = kMaxBytes;
      dsa::Result<dsa::Tensor> x = zeroOf(xKind, int64_t(rows % 64), xBudget);
      if (!x)
        continue;
      Sequence::SlotSet *shared = signature.step.shared.empty() || !slots ? nullptr : &*slots;
      dsa::Result<std::vector<dsa::Tensor>> out = sequence->run(*x, startPos, shared);
      if (verbose)
        std::fprintf(stderr, "  @%s step of %u rows at %d: %s\n", signature.name.c_str(), rows % 64, startPos,
                     out ? "ran" : out.error().c_str());
    }
  }
  return 0;
}
