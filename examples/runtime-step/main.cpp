//===- main.cpp - an AOT step library run through the MLIR-free runtime alone (installed DSA package) ---------===//
//
// Loads a CPU step library (the .json + .so that `dsa-run --golden G --emit-libraries=DIR` writes per layer), starts a
// sequence with every weight zero, and runs a 3-token prefill then two decode steps, printing each step's output
// shape and how many output values are finite. Links only DSA::CPURuntime (no MLIR): what a serving process does.
// Usage: dsa-runtime-step-example DIR/attention_L0.json. Exit status 1 with the runtime's error message.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Runtime/CPU/StepLibrary.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

namespace runtime = dsa::runtime;

static int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s STEP_LIBRARY.json\n", argv[0]);
    return 2;
  }
  dsa::Result<std::unique_ptr<dsa::cpu::CPUStepLibrary>> opened = dsa::cpu::CPUStepLibrary::open(argv[1]);
  if (!opened)
    return fail(opened.error());
  std::shared_ptr<const dsa::cpu::CPUStepLibrary> library = opened.take();
  const runtime::FunctionSignature &sig = library->description().functions.at(0);
  if (!sig.step.present())
    return fail("@" + sig.name + " has no step roles (not a dsa.attention layer)");

  // Every argument the sequence does not supply itself (x, start_pos, state, shared slots) is a weight: zeros.
  std::map<size_t, runtime::HostValue> weights;
  for (size_t a = 0; a < sig.args.size(); ++a) {
    bool supplied = static_cast<int64_t>(a) == sig.step.x || static_cast<int64_t>(a) == sig.step.startPos;
    for (const runtime::StateBinding &b : sig.state)
      supplied = supplied || b.arg == static_cast<int64_t>(a);
    for (const runtime::StateBinding &b : sig.step.shared)
      supplied = supplied || b.arg == static_cast<int64_t>(a);
    if (supplied)
      continue;
    dsa::Result<dsa::Tensor> zeros = dsa::Tensor::zeros(sig.args[a].elem, sig.args[a].shape);
    if (!zeros)
      return fail("weight #" + std::to_string(a) + ": " + zeros.error());
    weights.emplace(a, runtime::HostValue(zeros.take()));
  }
  const std::string name = sig.name;
  runtime::Sequence::ValueRunner runner = [library, name](const std::vector<runtime::HostValue> &args,
                                                          std::vector<runtime::NamedTensor> *probes) {
    return library->runValues(name, args, probes);
  };
  dsa::Result<runtime::Sequence> sequence = runtime::Sequence::start(sig, runner, weights);
  if (!sequence)
    return fail(sequence.error());
  runtime::Sequence::SlotSet slots;
  if (!sig.step.shared.empty()) {
    dsa::Result<runtime::Sequence::SlotSet> initial = runtime::Sequence::initialSlots(sig);
    if (!initial)
      return fail(initial.error());
    slots = initial.take();
  }
  std::vector<int64_t> xShape = sig.args.at(static_cast<size_t>(sig.step.x)).shape;
  for (int64_t tokens : {3, 1, 1}) {
    xShape[0] = tokens;
    dsa::Result<dsa::Tensor> x = dsa::Tensor::zeros(sig.args[static_cast<size_t>(sig.step.x)].elem, xShape);
    if (!x)
      return fail(x.error());
    const int64_t startPos = sequence->position();
    dsa::Result<std::vector<dsa::Tensor>> out =
        sequence->run(*x, startPos, sig.step.shared.empty() ? nullptr : &slots);
    if (!out)
      return fail(out.error());
    const dsa::Tensor &y = (*out)[static_cast<size_t>(sig.step.output)];
    int64_t finite = 0;
    for (int64_t i = 0; i < y.numElements(); ++i)
      finite += std::isfinite(y.floats()[static_cast<size_t>(i)]) ? 1 : 0;
    std::printf("step at start_pos %lld: %lld tokens -> output", static_cast<long long>(startPos),
                static_cast<long long>(tokens));
    for (int64_t d = 0; d < y.rank(); ++d)
      std::printf("%s%lld", d ? "x" : " ", static_cast<long long>(y.dim(d)));
    std::printf(", %lld of %lld values finite\n", static_cast<long long>(finite),
                static_cast<long long>(y.numElements()));
  }
  return 0;
}
