//===- CPURuntimeTest.cpp - the MLIR-free CPU runtime: marshalling, descriptions, sequences ---===//
//
// Compiled functions are stood in for by hand-written packed entries that follow the calling convention of
// Values.h (descriptor fields one pointer each, then the result struct); expected values are written by hand.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Runtime/CPU/HostFeatures.h"
#include "dsa/Runtime/CPU/StepLibrary.h"

#include "dsa/ABI/BufferCache.h"
#include "dsa/ABI/RuntimeErrors.h"
#include "dsa/Numerics/BF16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>

#include <malloc.h>

namespace cpu = ::dsa::cpu;
namespace runtime = ::dsa::runtime;

using dsa::ElementType;
using dsa::Tensor;

namespace {

/// The top-level fields of a version-5 step description up to `"functions": [` (a digest of no real file: these
/// descriptions are parsed, or opened only up to a check that comes before the digest's).
std::string v5Head(const std::string &library = "l.so", const std::string &cpu = "x86-64",
                   const std::string &features = "[]") {
  return R"({"format": "dsa-cpu-step-library", "version": 5, "library": ")" + library +
         R"(", "library_sha256": ")" + std::string(64, 'a') + R"(", "abi_version": 1, "target_cpu": ")" + cpu +
         R"(", "target_features": )" + features + R"(, "parallel": false, "functions": [)";
}

/// @scale(x: tensor<?x2xbf16>, n: i64) -> (tensor<?x2xf32>, i64): y = f32(x) * [2, -1] per row, n + rows;
/// n < 0 fails check 6 (after producing its results, as compiled code does).
void packedScale(void **args) {
  auto word = [&](int i) { return *static_cast<int64_t *>(args[i]); };
  const uint16_t *x = reinterpret_cast<const uint16_t *>(static_cast<intptr_t>(word(1)));
  const int64_t offset = word(2), rows = word(3), cols = word(4), stride0 = word(5), stride1 = word(6);
  const int64_t n = word(7);
  float *y = static_cast<float *>(std::malloc(sizeof(float) * static_cast<size_t>(rows * 2 + 1)));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float v = dsa::numerics::bf16BitsToF32(x[offset + r * stride0 + c * stride1]);
      y[r * 2 + c] = v * (c == 0 ? 2.0f : -1.0f);
    }
  int64_t *result = static_cast<int64_t *>(args[8]);
  result[0] = static_cast<int64_t>(reinterpret_cast<intptr_t>(y)); // allocated
  result[1] = result[0];                                            // aligned
  result[2] = 0;                                                    // offset
  result[3] = rows;
  result[4] = 2;
  result[5] = 2;
  result[6] = 1;
  result[7] = n + rows; // the i64 result follows the 7-word descriptor
  if (n < 0)
    cpu::dsaCpuRecordFailure(static_cast<int32_t>(::dsa::abi::RuntimeError::WindowKvMultiTokenDecode));
}

runtime::FunctionSignature scaleSignature() {
  runtime::FunctionSignature sig;
  sig.name = "scale";
  sig.args = {runtime::ValueKind{true, ElementType::BF16, {-1, 2}, "tensor<?x2xbf16>"},
              runtime::ValueKind{false, ElementType::I64, {}, "i64"}};
  sig.results = {runtime::ValueKind{true, ElementType::F32, {-1, 2}, "tensor<?x2xf32>"},
                 runtime::ValueKind{false, ElementType::I64, {}, "i64"}};
  sig.numResults = 2;
  return sig;
}

runtime::FunctionSignature bumpSignature(); // below: a function with a writable argument updated in place

TEST(CPURuntime, InvokePackedMarshalsTensorsAndBuffers) {
  runtime::FunctionSignature sig = scaleSignature();
  Tensor x = Tensor::fromFloats(ElementType::BF16, {3, 2}, {1.0f, 2.0f, -0.5f, 0.25f, 3.0f, 1.5f});
  auto r = cpu::invokePacked(sig, packedScale, {x, Tensor::scalarI64(10)}, nullptr);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].elementType(), ElementType::F32);
  EXPECT_EQ((*r)[0].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ((*r)[0].floatVector(), (std::vector<float>{2.0f, -2.0f, -1.0f, -0.25f, 6.0f, -1.5f}));
  EXPECT_EQ((*r)[1].intVector(), std::vector<int64_t>{13});
  // The same through a prepared buffer; the buffer holds bf16 patterns (1.0 = 0x3F80).
  auto buffer = runtime::HostBuffer::fromTensor(x);
  EXPECT_EQ(static_cast<const uint16_t *>(buffer->data())[0], 0x3F80);
  auto r2 = cpu::invokePacked(sig, packedScale, {buffer, Tensor::scalarI64(0)}, nullptr);
  ASSERT_TRUE(r2.ok()) << r2.error();
  EXPECT_EQ((*r2)[0].floatVector(), (*r)[0].floatVector());
}

TEST(CPURuntime, InvokePackedReportsBadArgumentsAndFailedChecks) {
  runtime::FunctionSignature sig = scaleSignature();
  Tensor x(ElementType::BF16, {1, 2});
  auto expectError = [&](const std::vector<runtime::HostValue> &args, const std::string &needle) {
    auto r = cpu::invokePacked(sig, packedScale, args, nullptr);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.error().find(needle), std::string::npos) << r.error();
  };
  expectError({x}, "@scale: 1 arguments given, the function takes 2");
  expectError({Tensor(ElementType::F32, {1, 2}), Tensor::scalarI64(0)},
              "argument #0 has element type f32, expected bf16 (tensor<?x2xbf16>)");
  expectError({Tensor(ElementType::BF16, {1, 3}), Tensor::scalarI64(0)},
              "argument #0 has shape [1, 3], expected tensor<?x2xbf16> (dimension 1)");
  expectError({Tensor(ElementType::BF16, {2}), Tensor::scalarI64(0)}, "argument #0 has rank 1");
  expectError({x, Tensor(ElementType::I64, {1})}, "argument #1 has shape [1], expected a scalar (i64)");
  expectError({std::shared_ptr<const runtime::HostBuffer>(), Tensor::scalarI64(0)}, "argument #0 is a null HostBuffer");
  expectError({x, Tensor::scalarI64(-1)},
              "@scale: run-time check failed: dsa.window_kv: a step of more than one token at start_pos > 0");
  // The failure record is per call: the next call succeeds.
  auto ok = cpu::invokePacked(sig, packedScale, {x, Tensor::scalarI64(1)}, nullptr);
  EXPECT_TRUE(ok.ok()) << ok.error();
}

TEST(CPURuntime, DescriptionRoundTripsAndNamesBadFields) {
  runtime::StepLibraryDescription d;
  d.library = "l0.so";
  d.targetCpu = "znver4";
  d.targetFeatures = {"avx2", "avx512f", "fma"};
  d.parallel = true;
  d.librarySha256 = std::string(64, 'a');
  runtime::FunctionSignature sig = scaleSignature();
  sig.results.push_back(runtime::ValueKind{true, ElementType::I32, {-1, -1}, "tensor<?x?xi32>"});
  sig.probeNames = {"L0.sa_topk_idxs"};
  sig.state = {{0, 0, runtime::StateInit::NegInf}};
  sig.step.x = 0;
  sig.step.startPos = 1;
  sig.step.output = 0;
  sig.step.maxSeqLen = 64;
  sig.step.shared = {{0, 1}};
  d.functions = {sig};
  const std::string text = runtime::describeStepLibrary(d);
  auto back = runtime::parseStepLibrary(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->library, "l0.so");
  EXPECT_EQ(back->targetCpu, "znver4");
  EXPECT_EQ(back->targetFeatures, (std::vector<std::string>{"avx2", "avx512f", "fma"}));
  EXPECT_NE(text.find("\"version\": 5"), std::string::npos);
  EXPECT_EQ(back->librarySha256, std::string(64, 'a'));
  EXPECT_EQ(back->abiVersion, 1);
  EXPECT_TRUE(back->parallel);
  ASSERT_EQ(back->functions.size(), 1u);
  const runtime::FunctionSignature &f = back->functions[0];
  EXPECT_EQ(f.name, "scale");
  ASSERT_EQ(f.args.size(), 2u);
  EXPECT_TRUE(f.args[0].isTensor);
  EXPECT_EQ(f.args[0].shape, (std::vector<int64_t>{-1, 2}));
  EXPECT_FALSE(f.args[1].isTensor);
  EXPECT_EQ(f.results.size(), 3u);
  EXPECT_EQ(f.numResults, 2u);
  EXPECT_EQ(f.probeNames, std::vector<std::string>{"L0.sa_topk_idxs"});
  ASSERT_EQ(f.state.size(), 1u);
  EXPECT_EQ(f.state[0].init, runtime::StateInit::NegInf);
  EXPECT_EQ(f.step.x, 0);
  EXPECT_EQ(f.step.startPos, 1);
  EXPECT_EQ(f.step.output, 0);
  EXPECT_EQ(f.step.maxSeqLen, 64);
  ASSERT_EQ(f.step.shared.size(), 1u);
  EXPECT_EQ(f.step.shared[0].arg, 0);
  EXPECT_EQ(f.step.shared[0].result, 1);
  // Without a capacity, "max_seq_len" is null and reads back as -1.
  d.functions[0].step.maxSeqLen = -1;
  auto noCap = runtime::parseStepLibrary(runtime::describeStepLibrary(d));
  ASSERT_TRUE(noCap.ok()) << noCap.error();
  EXPECT_EQ(noCap->functions[0].step.maxSeqLen, -1);
  EXPECT_NE(runtime::describeStepLibrary(d).find("\"max_seq_len\": null"), std::string::npos);

  auto expectError = [](const std::string &json, const std::string &needle) {
    auto r = runtime::parseStepLibrary(json);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.error().find(needle), std::string::npos) << r.error();
  };
  expectError("[1, 2", "step description: malformed JSON at byte 6");
  expectError("[1, 2]", "step description: not a JSON object");
  expectError(R"({"format": "other", "version": 1})", "format: expected \"dsa-cpu-step-library\"");
  expectError(R"({"format": "dsa-cpu-step-library", "version": 6})",
              "version: 6 is not a step description version this runtime reads (5)");
  // Before version 5 a description recorded no digest and its library no signature: refused, saying why.
  for (int old : {1, 2, 3, 4})
    expectError(R"({"format": "dsa-cpu-step-library", "version": )" + std::to_string(old) + R"(, "library": "l.so", "functions": []})",
                "version: " + std::to_string(old) + " is an old step description (before version 5 it records "
                "neither the library file's SHA-256 nor its ABI version");
  const std::string head = v5Head();
  const std::string none = R"(, "writable": [], "in_place": [])";
  expectError(head + R"({"name": "f", "args": [{"element": "f16", "shape": [2]}], "results": [], "num_results": 0}]})",
              "functions[0].args[0].element: unknown element type 'f16'");
  expectError(head + R"({"name": "f", "args": [{"element": "f32", "shape": [-2]}], "results": [], "num_results": 0}]})",
              "functions[0].args[0].shape[0]: expected an integer >= -1");
  expectError(head + R"({"name": "f", "args": [{"element": "bf16", "shape": null}], "results": [], "num_results": 0}]})",
              "functions[0].args[0].element: a bf16 scalar cannot be passed");
  expectError(head + R"({"name": "f", "args": [], "results": [{"element": "f32", "shape": []}], "num_results": 0)" + none + "}]}",
              "functions[0]: num_results (0) + probes (0) != results (1)");
  expectError(head + R"({"name": "f", "args": [], "results": [], "num_results": 0, "state": [{"arg": 0, "result": 0}])" + none + "}]}",
              "functions[0].state[0]: arg 0 / result 0 out of range");
  // State init and the step roles, each bad field named.
  const std::string head2 = head;
  const std::string fnBase = R"({"name": "f", "args": [{"element": "bf16", "shape": [-1, 2]}, {"element": "i64", "shape": null}, {"element": "f32", "shape": [3]}], "results": [{"element": "bf16", "shape": [-1, 2]}, {"element": "f32", "shape": [3]}], "num_results": 2)";
  const std::string fn = fnBase + none;
  auto withStep = [&](const std::string &step) { return head2 + fn + R"(, "step": )" + step + "}]}"; };
  auto good = runtime::parseStepLibrary(withStep(R"({"x": 0, "start_pos": 1, "output": 0, "max_seq_len": null})"));
  ASSERT_TRUE(good.ok()) << good.error();
  EXPECT_TRUE(good->functions[0].step.present());
  EXPECT_FALSE(good->functions[0].step.chunked) << "a description without \"chunked\" (older ones) splits";
  auto chunked = runtime::parseStepLibrary(withStep(R"({"x": 0, "start_pos": 1, "output": 0, "chunked": true})"));
  ASSERT_TRUE(chunked.ok()) << chunked.error();
  EXPECT_TRUE(chunked->functions[0].step.chunked);
  auto chunkedBack = runtime::parseStepLibrary(runtime::describeStepLibrary(*chunked));
  ASSERT_TRUE(chunkedBack.ok()) << chunkedBack.error();
  EXPECT_TRUE(chunkedBack->functions[0].step.chunked) << "written back and read again";
  expectError(withStep(R"({"x": 0, "start_pos": 1, "output": 0, "chunked": 1})"),
              "functions[0].step.chunked: expected true or false");
  expectError(withStep(R"([])"), "functions[0].step: expected an object");
  expectError(withStep(R"({"start_pos": 1, "output": 0})"), "functions[0].step.x: missing or not an integer");
  expectError(withStep(R"({"x": 3, "start_pos": 1, "output": 0})"),
              "functions[0].step.x: 3 is not one of the function's 3 arguments");
  expectError(withStep(R"({"x": 1, "start_pos": 1, "output": 0})"),
              "functions[0].step.x: argument #1 (i64) is not a tensor of token rows");
  expectError(withStep(R"({"x": 0, "start_pos": 2, "output": 0})"),
              "functions[0].step.start_pos: argument #2 (tensor<3xf32>) is not an i64 scalar or a tensor<B x i64>");
  expectError(withStep(R"({"x": 0, "start_pos": 1, "output": 2})"),
              "functions[0].step.output: 2 is not one of the function's 2 results");
  expectError(withStep(R"({"x": 0, "start_pos": 1, "output": 0, "max_seq_len": 0})"),
              "functions[0].step.max_seq_len: expected a positive integer or null");
  expectError(withStep(R"({"x": 0, "start_pos": 1, "output": 0, "shared": [{"arg": 2, "result": 5}]})"),
              "functions[0].step.shared[0]: arg 2 / result 5 out of range");
  expectError(head2 + fn + R"(, "state": [{"arg": 2, "result": 1, "init": "ones"}]}]})",
              "functions[0].state[0].init: expected \"zeros\" or \"-inf\"");
  // Writable arguments and in-place results.
  runtime::StepLibraryDescription d3;
  d3.library = "b.so";
  d3.librarySha256 = std::string(64, '0');
  d3.functions = {bumpSignature()};
  auto back3 = runtime::parseStepLibrary(runtime::describeStepLibrary(d3));
  ASSERT_TRUE(back3.ok()) << back3.error();
  EXPECT_EQ(back3->functions[0].writableArgs, std::vector<int64_t>{0});
  ASSERT_EQ(back3->functions[0].inPlace.size(), 2u);
  EXPECT_EQ(back3->functions[0].inPlace[1].arg, 0);
  EXPECT_EQ(back3->functions[0].inPlace[1].result, 2);
  const std::string head3 = head;
  expectError(head3 + fnBase + R"(, "in_place": []}]})", "functions[0].writable: missing or not an array");
  expectError(head3 + fnBase + R"(, "writable": []}]})", "functions[0].in_place: missing or not an array");
  expectError(head3 + fnBase + R"(, "in_place": [], "writable": [1]}]})", "functions[0].writable: 1 is not one of the function's tensor arguments");
  expectError(head3 + fnBase + R"(, "writable": [], "in_place": [{"arg": 2, "result": 9}]}]})", "functions[0].in_place[0]: arg 2 / result 9 out of range");
  expectError(head3 + fnBase + R"(, "writable": [], "in_place": [{"arg": 2, "result": 0}]}]})",
              "functions[0].in_place[0]: argument #2 (tensor<3xf32>) cannot be result #0 (tensor<?x2xbf16>)");
}

/// @bump(c: tensor<4xf32> {writable}, i: i64) -> (tensor<4xf32> = c in place, i64, tensor<4xf32> = c in place):
/// c[i] += 1 in place, returns i + 1 only (the in-place results are not returned, as the pipeline drops them);
/// i < 0 writes c[3] = -7 and then fails check 6 (a failure after a write into the in-place argument).
void packedBump(void **args) {
  auto word = [&](int j) { return *static_cast<int64_t *>(args[j]); };
  float *c = reinterpret_cast<float *>(static_cast<intptr_t>(word(1)));
  const int64_t i = word(5);
  int64_t *result = static_cast<int64_t *>(args[6]);
  result[0] = i + 1;
  if (i < 0) {
    c[3] = -7.0f;
    cpu::dsaCpuRecordFailure(static_cast<int32_t>(::dsa::abi::RuntimeError::WindowKvMultiTokenDecode));
    return;
  }
  c[i] += 1.0f;
}

runtime::FunctionSignature bumpSignature() {
  runtime::FunctionSignature sig;
  sig.name = "bump";
  const runtime::ValueKind vec{true, ElementType::F32, {4}, "tensor<4xf32>"};
  sig.args = {vec, runtime::ValueKind{false, ElementType::I64, {}, "i64"}};
  sig.results = {vec, runtime::ValueKind{false, ElementType::I64, {}, "i64"}, vec};
  sig.numResults = 3;
  sig.writableArgs = {0};
  sig.inPlace = {{0, 0}, {0, 2}};
  sig.state = {{0, 0}};
  return sig;
}

/// Writable arguments: a Tensor or a shared HostBuffer is never modified (the call updates a copy), an inPlace buffer
/// is updated where it is and comes back as the in-place results (the same buffer, no copy).
TEST(CPURuntime, InPlaceArgumentsAreUpdatedOnlyWhenHandedOver) {
  const runtime::FunctionSignature sig = bumpSignature();
  const Tensor c = Tensor::fromFloats(ElementType::F32, {4}, {1.0f, 2.0f, 3.0f, 4.0f});
  auto r = cpu::invokePacked(sig, packedBump, {c, Tensor::scalarI64(1)}, nullptr);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].floatVector(), (std::vector<float>{1.0f, 3.0f, 3.0f, 4.0f}));
  EXPECT_EQ((*r)[1].intVector(), std::vector<int64_t>{2});
  EXPECT_EQ((*r)[2].floatVector(), (*r)[0].floatVector());
  EXPECT_EQ(c.floatVector(), (std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f})); // the caller's Tensor as it was

  auto shared = runtime::HostBuffer::fromTensor(c);
  auto r2 = cpu::invokePackedValues(sig, packedBump, {shared, Tensor::scalarI64(2)}, nullptr);
  ASSERT_TRUE(r2.ok()) << r2.error();
  EXPECT_EQ(shared->toTensor().floatVector(), c.floatVector()); // copied, not written
  EXPECT_EQ((*r2)[0].toTensor().floatVector(), (std::vector<float>{1.0f, 2.0f, 4.0f, 4.0f}));
  EXPECT_NE((*r2)[0].buffer()->data(), shared->data());

  auto mine = runtime::HostBuffer::mutableFromTensor(c);
  auto r3 = cpu::invokePackedValues(sig, packedBump, {runtime::HostValue::inPlace(mine), Tensor::scalarI64(0)}, nullptr);
  ASSERT_TRUE(r3.ok()) << r3.error();
  EXPECT_EQ(mine->toTensor().floatVector(), (std::vector<float>{2.0f, 2.0f, 3.0f, 4.0f}));
  EXPECT_EQ((*r3)[0].inPlaceBuffer(), mine); // the argument's buffer itself, for both in-place results
  EXPECT_EQ((*r3)[2].inPlaceBuffer(), mine);
  EXPECT_EQ((*r3)[1].tensor()->intVector(), std::vector<int64_t>{1});

  // A failed check after a write: the error, and (documented) the write stays in the in-place buffer.
  auto bad = cpu::invokePackedValues(sig, packedBump, {runtime::HostValue::inPlace(mine), Tensor::scalarI64(-1)}, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("@bump: run-time check failed"), std::string::npos) << bad.error();
  EXPECT_EQ(mine->toTensor().floats()[3], -7.0f);

  // Signature entries outside the lists, and one in-place buffer for two writable arguments, are errors.
  runtime::FunctionSignature badSig = sig;
  badSig.writableArgs = {1};
  auto e1 = cpu::invokePacked(badSig, packedBump, {c, Tensor::scalarI64(0)}, nullptr);
  ASSERT_FALSE(e1.ok());
  EXPECT_NE(e1.error().find("writable argument #1 is not a tensor argument"), std::string::npos) << e1.error();
  badSig = sig;
  badSig.inPlace = {{0, 5}};
  auto e2 = cpu::invokePacked(badSig, packedBump, {c, Tensor::scalarI64(0)}, nullptr);
  ASSERT_FALSE(e2.ok());
  EXPECT_NE(e2.error().find("in-place result #5 / argument #0 outside the signature"), std::string::npos)
      << e2.error();
  runtime::FunctionSignature two = sig;
  two.args = {sig.args[0], sig.args[0]};
  two.writableArgs = {0, 1};
  two.inPlace = {};
  auto e3 = cpu::invokePackedValues(two, packedBump, {runtime::HostValue::inPlace(mine), runtime::HostValue::inPlace(mine)},
                                    nullptr);
  ASSERT_FALSE(e3.ok());
  EXPECT_NE(e3.error().find("arguments #0 and #1 are one in-place buffer"), std::string::npos) << e3.error();
}

/// @twice(x: tensor<?x2xbf16>, n: i64) -> (tensor<?x2xf32>, tensor<?x2xf32>): scale's first result returned twice
/// (one allocation): both values share it, freed once.
void packedTwice(void **args) {
  int64_t scaleResult[8];
  std::vector<void *> inner(args, args + 8);
  inner.push_back(scaleResult);
  packedScale(inner.data());
  int64_t *result = static_cast<int64_t *>(args[8]);
  std::memcpy(result, scaleResult, 7 * sizeof(int64_t));
  std::memcpy(result + 7, scaleResult, 7 * sizeof(int64_t));
}

TEST(CPURuntime, ResultsSharingAnAllocationShareOneBuffer) {
  runtime::FunctionSignature sig = scaleSignature();
  sig.results = {sig.results[0], sig.results[0]};
  Tensor x = Tensor::fromFloats(ElementType::BF16, {1, 2}, {1.0f, 2.0f});
  auto r = cpu::invokePackedValues(sig, packedTwice, {x, Tensor::scalarI64(0)}, nullptr);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].buffer()->data(), (*r)[1].buffer()->data());
  EXPECT_EQ((*r)[1].toTensor().floatVector(), (std::vector<float>{2.0f, -2.0f}));
  r = cpu::invokePackedValues(sig, packedTwice, {x, Tensor::scalarI64(0)}, nullptr); // the first pair freed once
  ASSERT_TRUE(r.ok());
}

/// A sequence with a ValueRunner keeps its state as the runner's buffers, updated in place from step to step; an
/// initial state handed over as an inPlace buffer is copied, never written; a resumed sequence starts at its
/// position and reset() returns there.
TEST(CPURuntime, ValueSequenceKeepsStateResident) {
  runtime::FunctionSignature sig = bumpSignature();
  sig.inPlace = {{0, 0}, {0, 2}};
  auto runner = [&](const std::vector<runtime::HostValue> &args, std::vector<runtime::NamedTensor> *probes) {
    return cpu::invokePackedValues(sig, packedBump, args, probes);
  };
  auto given = runtime::HostBuffer::mutableFromTensor(Tensor::fromFloats(ElementType::F32, {4}, {0, 0, 0, 0}));
  auto seq = runtime::Sequence::create(sig, runtime::Sequence::ValueRunner(runner),
                                      {runtime::HostValue::inPlace(given), Tensor::scalarI64(0)}, 5);
  ASSERT_TRUE(seq.ok()) << seq.error();
  EXPECT_EQ(seq->position(), 5);
  auto first = seq->step({{1, Tensor::scalarI64(1)}});
  ASSERT_TRUE(first.ok()) << first.error();
  const runtime::HostValue *state = seq->state(0);
  ASSERT_TRUE(state && state->isInPlace());
  const void *resident = state->buffer()->data();
  EXPECT_NE(resident, given->data());
  for (int64_t i : {1, 3, 3}) {
    auto r = seq->step({{1, Tensor::scalarI64(i)}});
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(seq->state(0)->buffer()->data(), resident); // updated where it is, no new buffer per step
  }
  EXPECT_EQ(seq->state(0)->toTensor().floatVector(), (std::vector<float>{0.0f, 2.0f, 0.0f, 2.0f}));
  EXPECT_EQ(given->toTensor().floatVector(), (std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f}));
  seq->reset();
  EXPECT_EQ(seq->position(), 5);
  EXPECT_EQ(seq->state(0)->toTensor().floatVector(), (std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f}));
  auto negative = runtime::Sequence::create(sig, runtime::Sequence::ValueRunner(runner),
                                           {Tensor(ElementType::F32, {4}), Tensor::scalarI64(0)}, -1);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.error().find("position -1 is negative"), std::string::npos) << negative.error();
}

TEST(CPURuntime, TargetFeaturesAreNames) {
  auto expectError = [](const std::string &json, const std::string &needle) {
    auto r = runtime::parseStepLibrary(json);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.error().find(needle), std::string::npos) << r.error();
  };
  expectError(v5Head("l.so", "x86-64", R"("avx2")") + "]}", "target_features: missing or not an array of feature names");
  expectError(v5Head("l.so", "x86-64", "[2]") + "]}", "target_features: expected an array of feature names, got 2");
  auto none = runtime::parseStepLibrary(v5Head() + "]}");
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_TRUE(none->targetFeatures.empty());
}

TEST(CPURuntime, HostFeaturesAreKnownSortedAndIncludeTheBaseline) {
  const std::vector<std::string> &known = cpu::knownCpuFeatures();
  const std::vector<std::string> &host = cpu::hostCpuFeatures();
  EXPECT_TRUE(std::is_sorted(known.begin(), known.end()));
  EXPECT_TRUE(std::is_sorted(host.begin(), host.end()));
  for (const std::string &f : host)
    EXPECT_TRUE(std::binary_search(known.begin(), known.end(), f)) << f;
#if defined(__x86_64__)
  // Every x86-64 CPU has these (the psABI baseline).
  for (const char *f : {"64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2", "x87"})
    EXPECT_TRUE(std::binary_search(host.begin(), host.end(), std::string(f))) << f;
#endif
  EXPECT_TRUE(cpu::checkHostHasFeatures("x", "y", {}).ok());
  EXPECT_TRUE(cpu::checkHostHasFeatures("x", "y", host).ok());
}

// A library whose description asks for features this host lacks is refused BEFORE dlopen: the shared object here
// does not even exist, and the error is the feature check's. No x86 CPU has both xop (AMD family 15h only) and
// amx-tile (Intel, 2023 on), so every host lacks at least one of them.
TEST(CPURuntime, OpenRefusesALibraryForFeaturesThisHostLacksBeforeLoadingIt) {
  const std::string path = ::testing::TempDir() + "dsa-cpu-runtime-features.json";
  std::ofstream(path) << v5Head("l0.so", "imaginary", R"(["sse2", "xop", "amx-tile"])") + "]}";
  auto r = cpu::CPUStepLibrary::open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find(path + ": step library l0.so was built for imaginary; this host lacks "),
            std::string::npos)
      << r.error();
  const std::vector<std::string> &host = cpu::hostCpuFeatures();
  for (const char *f : {"xop", "amx-tile"})
    if (!std::binary_search(host.begin(), host.end(), std::string(f))) {
      EXPECT_NE(r.error().find(f), std::string::npos) << f << ": " << r.error();
    }
  EXPECT_EQ(r.error().find("sse2"), std::string::npos) << r.error();
  EXPECT_EQ(r.error().find("cannot load"), std::string::npos) << r.error();

  // A feature the runtime cannot detect is named as such (not silently accepted).
  std::ofstream(path) << v5Head("l0.so", "future", R"(["sse2", "quantum-tile"])") + "]}";
  auto unknown = cpu::CPUStepLibrary::open(path);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("step library l0.so was built for future; it requires quantum-tile, which this "
                                 "runtime cannot detect"),
            std::string::npos)
      << unknown.error();

  // Features this host has pass the check; then the (missing) library is what fails, at its digest's check.
  std::ofstream(path) << v5Head("no-such.so", "x86-64", R"(["cmov", "cx8", "sse", "sse2"])") + "]}";
  auto present = cpu::CPUStepLibrary::open(path);
  ASSERT_FALSE(present.ok());
  EXPECT_NE(present.error().find("step library: cannot read '" + ::testing::TempDir() + "no-such.so'"),
            std::string::npos)
      << present.error();
}

TEST(CPURuntime, OpenReportsMissingFilesAndLibraries) {
  auto missing = cpu::CPUStepLibrary::open("/nonexistent/step.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("cannot read step description '/nonexistent/step.json'"), std::string::npos);
  const std::string path = ::testing::TempDir() + "dsa-cpu-runtime-test.json";
  std::ofstream(path) << v5Head("no-such.so") + "]}";
  auto noLib = cpu::CPUStepLibrary::open(path);
  ASSERT_FALSE(noLib.ok());
  EXPECT_NE(noLib.error().find("step library: cannot read"), std::string::npos) << noLib.error();
  EXPECT_NE(noLib.error().find("no-such.so"), std::string::npos) << noLib.error();
}

TEST(CPURuntime, SequenceThreadsStateAndKeepsItOnErrors) {
  // @acc(x: i64, total: i64) -> (i64 total'): total' = total + x; state: result 0 -> argument 1.
  runtime::FunctionSignature sig;
  sig.name = "acc";
  sig.args = {runtime::ValueKind{false, ElementType::I64, {}, "i64"}, runtime::ValueKind{false, ElementType::I64, {}, "i64"}};
  sig.results = {runtime::ValueKind{false, ElementType::I64, {}, "i64"}};
  sig.numResults = 1;
  sig.state = {{1, 0}};
  auto runner = [](const std::vector<runtime::HostValue> &args,
                   std::vector<runtime::NamedTensor> *) -> dsa::Result<std::vector<Tensor>> {
    int64_t x = args[0].tensor()->scalarInt(), total = args[1].tensor()->scalarInt();
    if (x < 0)
      return dsa::makeError("negative step");
    return std::vector<Tensor>{Tensor::scalarI64(total + x)};
  };
  auto seq = runtime::Sequence::create(sig, runner, {Tensor::scalarI64(0), Tensor::scalarI64(100)});
  ASSERT_TRUE(seq.ok()) << seq.error();
  for (int64_t x : {1, 2, 3}) {
    auto r = seq->step({{0, Tensor::scalarI64(x)}});
    ASSERT_TRUE(r.ok()) << r.error();
  }
  EXPECT_EQ(seq->state(1)->tensor()->scalarInt(), 106);
  EXPECT_EQ(seq->state(0), nullptr);
  EXPECT_FALSE(seq->step({{0, Tensor::scalarI64(-1)}}).ok());
  EXPECT_EQ(seq->state(1)->tensor()->scalarInt(), 106);
  auto refused = seq->step({{1, Tensor::scalarI64(0)}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("argument #1 is state (the previous step's result #0)"), std::string::npos);
  auto missing = seq->step({{5, Tensor::scalarI64(0)}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("argument #5 does not exist"), std::string::npos);
  auto badCount = runtime::Sequence::create(sig, runner, {Tensor::scalarI64(0)});
  ASSERT_FALSE(badCount.ok());
  EXPECT_NE(badCount.error().find("1 initial arguments, the function takes 2"), std::string::npos);
}

/// A stand-in for a compiled dsa.attention layer with the compiled code's step rules, written from the definition:
/// @layer(x: tensor<?x2xf32>, start_pos: i64, ring: tensor<3x2xf32>, w: tensor<2xf32>, score: tensor<2xf32>)
///   -> (out: tensor<?x2xf32>, ring': tensor<3x2xf32>, score': tensor<2xf32>)
/// Token t at position p = start_pos + t writes its row into ring slot p % 3 (the window ring), then
/// out[t] = x[t] * w + (sum of the ring's rows) * 0.5 + p, and score' = max(score, x[t]) elementwise (state that
/// starts at -inf). Like the compiled code it refuses a multi-token step at start_pos > 0 and an empty step.
struct ToyLayer {
  int calls = 0;
  std::vector<int64_t> tokensPerCall;
  static runtime::FunctionSignature signature() {
    runtime::FunctionSignature sig;
    sig.name = "layer";
    runtime::ValueKind rows{true, ElementType::F32, {-1, 2}, "tensor<?x2xf32>"};
    runtime::ValueKind ring{true, ElementType::F32, {3, 2}, "tensor<3x2xf32>"};
    runtime::ValueKind vec{true, ElementType::F32, {2}, "tensor<2xf32>"};
    sig.args = {rows, runtime::ValueKind{false, ElementType::I64, {}, "i64"}, ring, vec, vec};
    sig.results = {rows, ring, vec};
    sig.numResults = 3;
    sig.state = {{2, 1, runtime::StateInit::Zeros}, {4, 2, runtime::StateInit::NegInf}};
    sig.step.x = 0;
    sig.step.startPos = 1;
    sig.step.output = 0;
    sig.step.maxSeqLen = 10;
    return sig;
  }
  dsa::Result<std::vector<Tensor>> operator()(const std::vector<runtime::HostValue> &args,
                                              std::vector<runtime::NamedTensor> *probes) {
    ++calls;
    const Tensor &x = *args[0].tensor();
    const int64_t startPos = args[1].tensor()->scalarInt();
    Tensor ring = *args[2].tensor(), score = *args[4].tensor();
    const Tensor w = args[3].tensor() ? *args[3].tensor() : Tensor();
    const float *wv = args[3].tensor() ? w.floats() : static_cast<const float *>(args[3].buffer()->data());
    const int64_t s = x.dim(0);
    tokensPerCall.push_back(s);
    if (s == 0 || (s > 1 && startPos > 0))
      return dsa::makeError("run-time check failed: toy layer step of " + std::to_string(s) + " tokens at " +
                            std::to_string(startPos));
    Tensor out(ElementType::F32, {s, 2});
    for (int64_t t = 0; t < s; ++t) {
      const int64_t p = startPos + t;
      for (int64_t c = 0; c < 2; ++c) {
        ring.floats()[(p % 3) * 2 + c] = x.floats()[t * 2 + c];
        score.floats()[c] = std::max(score.floats()[c], x.floats()[t * 2 + c]);
      }
      for (int64_t c = 0; c < 2; ++c) {
        float sum = 0.0f;
        for (int64_t r = 0; r < 3; ++r)
          sum += ring.floats()[r * 2 + c];
        out.floats()[t * 2 + c] = x.floats()[t * 2 + c] * wv[c] + sum * 0.5f + static_cast<float>(p);
      }
    }
    if (probes)
      probes->push_back(runtime::NamedTensor{"L0.toy", Tensor::scalarI64(startPos)});
    return std::vector<Tensor>{out, ring, score};
  }
};

Tensor rowsOf(std::vector<float> values) {
  const int64_t n = static_cast<int64_t>(values.size()) / 2;
  return Tensor::fromFloats(ElementType::F32, {n, 2}, std::move(values));
}

bool sameBits(const Tensor &a, const Tensor &b) {
  if (a.shape() != b.shape() || a.elementType() != b.elementType())
    return false;
  return a.numElements() == 0 ||
         std::memcmp(a.floats(), b.floats(), sizeof(float) * static_cast<size_t>(a.numElements())) == 0;
}

runtime::Sequence startToy(ToyLayer &toy) {
  auto seq = runtime::Sequence::start(
      ToyLayer::signature(),
      [&toy](const std::vector<runtime::HostValue> &a, std::vector<runtime::NamedTensor> *p) { return toy(a, p); },
      {{3, runtime::HostBuffer::fromTensor(Tensor::fromFloats(ElementType::F32, {2}, {2.0f, -1.0f}))}});
  EXPECT_TRUE(seq.ok()) << seq.error();
  return seq.take();
}

TEST(CPURuntime, SequenceStartsStateFromItsInit) {
  ToyLayer toy;
  runtime::Sequence seq = startToy(toy);
  EXPECT_EQ(seq.position(), 0);
  EXPECT_EQ(seq.state(2)->tensor()->floatVector(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(seq.state(4)->tensor()->floatVector(), std::vector<float>(2, -std::numeric_limits<float>::infinity()));
  // A prefill at 0, checked by hand: ring rows 0,1 = x; sums (1+3, 2+4) * 0.5 = (2, 3).
  auto r = seq.run(rowsOf({1, 2, 3, 4}), 0);
  ASSERT_TRUE(r.ok()) << r.error();
  // token 0 (p 0): ring = [1,2],[0,0],[0,0]: out = (1*2 + 0.5, 2*-1 + 1) = (2.5, -1)
  // token 1 (p 1): ring = [1,2],[3,4],[0,0]: out = (3*2 + 2 + 1, 4*-1 + 3 + 1) = (9, 0)
  EXPECT_EQ((*r)[0].floatVector(), (std::vector<float>{2.5f, -1.0f, 9.0f, 0.0f}));
  EXPECT_EQ(seq.position(), 2);
  EXPECT_EQ(seq.state(4)->tensor()->floatVector(), (std::vector<float>{3.0f, 4.0f}));
  seq.reset();
  EXPECT_EQ(seq.position(), 0);
  EXPECT_EQ(seq.state(2)->tensor()->floatVector(), std::vector<float>(6, 0.0f));

  // start() errors name the argument.
  auto expectStartError = [](std::map<size_t, runtime::HostValue> fixed, const std::string &needle) {
    auto s = runtime::Sequence::start(ToyLayer::signature(), ToyLayer(), std::move(fixed));
    ASSERT_FALSE(s.ok()) << needle;
    EXPECT_NE(s.error().find(needle), std::string::npos) << s.error();
  };
  const Tensor w = Tensor::fromFloats(ElementType::F32, {2}, {1.0f, 1.0f});
  expectStartError({}, "argument #3 (tensor<2xf32>) is missing");
  expectStartError({{3, w}, {2, Tensor(ElementType::F32, {3, 2})}},
                   "argument #2 (tensor<3x2xf32>) is state, which the sequence supplies");
  expectStartError({{3, w}, {0, rowsOf({1, 2})}}, "argument #0 (tensor<?x2xf32>) is x, which the sequence supplies");
  expectStartError({{3, w}, {9, w}}, "argument #9 does not exist");
}

/// A multi-token step at start_pos > 0 equals the same tokens stepped one by one: outputs (concatenated), state
/// and probes bit for bit; the function only ever sees 1-token steps there.
TEST(CPURuntime, MultiTokenStepAtPositionIsTokenByTokenDecode) {
  ToyLayer toyA, toyB;
  runtime::Sequence a = startToy(toyA), b = startToy(toyB);
  const Tensor prefill = rowsOf({0.5f, -1.25f, 3.0f, 0.75f});
  ASSERT_TRUE(a.run(prefill, 0).ok());
  ASSERT_TRUE(b.run(prefill, 0).ok());
  const std::vector<float> tokens = {1.5f, 2.0f, -3.0f, 0.125f, 7.0f, -0.5f, 0.25f, 9.0f};
  std::vector<runtime::NamedTensor> probesA, probesB;
  auto whole = a.run(rowsOf(tokens), 2, nullptr, &probesA);
  ASSERT_TRUE(whole.ok()) << whole.error();
  EXPECT_EQ(toyA.tokensPerCall, (std::vector<int64_t>{2, 1, 1, 1, 1}));
  std::vector<float> oneByOne;
  for (int64_t t = 0; t < 4; ++t) {
    auto r = b.run(rowsOf({tokens[2 * t], tokens[2 * t + 1]}), 2 + t, nullptr, &probesB);
    ASSERT_TRUE(r.ok()) << r.error();
    oneByOne.insert(oneByOne.end(), (*r)[0].floats(), (*r)[0].floats() + 2);
  }
  ASSERT_EQ((*whole)[0].shape(), (std::vector<int64_t>{4, 2}));
  EXPECT_TRUE(sameBits((*whole)[0], rowsOf(oneByOne)));
  EXPECT_TRUE(sameBits((*whole)[1], *b.state(2)->tensor()));
  EXPECT_TRUE(sameBits((*whole)[2], *b.state(4)->tensor()));
  EXPECT_TRUE(sameBits(*a.state(2)->tensor(), *b.state(2)->tensor()));
  EXPECT_TRUE(sameBits(*a.state(4)->tensor(), *b.state(4)->tensor()));
  EXPECT_EQ(a.position(), 6);
  EXPECT_EQ(b.position(), 6);
  ASSERT_EQ(probesA.size(), 4u);
  for (size_t p = 0; p < 4; ++p) {
    EXPECT_EQ(probesA[p].name, probesB[p].name);
    EXPECT_EQ(probesA[p].value.scalarInt(), probesB[p].value.scalarInt());
  }
  // By hand for the last token (position 5, ring slot 2): the ring after it holds rows of positions 3, 4, 5 =
  // (-3, 0.125), (7, -0.5), (0.25, 9); out = (0.25*2 + 4.25*0.5 + 5, 9*-1 + 8.625*0.5 + 5) = (7.625, 0.3125).
  EXPECT_EQ((*whole)[0].floats()[6], 7.625f);
  EXPECT_EQ((*whole)[0].floats()[7], 0.3125f);
  // A single decode after the split step continues the sequence.
  auto next = a.run(rowsOf({1.0f, 1.0f}), 6);
  ASSERT_TRUE(next.ok()) << next.error();
}

/// A function whose code runs chunks (StepRoles::chunked) gets a multi-token step at start_pos > 0 as one call;
/// prefill and decode plan the same either way.
TEST(CPURuntime, PlanStepRunsAChunkAsOneCallWhenTheCodeRunsChunks) {
  ToyLayer toy;
  runtime::Sequence a = startToy(toy);
  runtime::FunctionSignature sig = a.signature();
  auto plan = [&](int64_t s, int64_t startPos) {
    auto p = runtime::planStep(sig, startPos, ElementType::F32, {s, 2}, startPos, -1);
    EXPECT_TRUE(p.ok()) << p.error();
    std::vector<std::vector<int64_t>> calls;
    if (p.ok())
      for (const runtime::SubStep &c : *p)
        calls.push_back({c.firstRow, c.rows, c.startPos});
    return calls;
  };
  using Calls = std::vector<std::vector<int64_t>>;
  ASSERT_FALSE(sig.step.chunked);
  EXPECT_EQ(plan(3, 2), (Calls{{0, 1, 2}, {1, 1, 3}, {2, 1, 4}}));
  sig.step.chunked = true;
  EXPECT_EQ(plan(3, 2), (Calls{{0, 3, 2}}));
  EXPECT_EQ(plan(3, 0), (Calls{{0, 3, 0}}));
  EXPECT_EQ(plan(1, 7), (Calls{{0, 1, 7}}));
}

/// Every error names its field and leaves the state, the position and the slots as they were.
TEST(CPURuntime, SequenceRunErrorsNameTheFieldAndKeepState) {
  ToyLayer toy;
  runtime::Sequence seq = startToy(toy);
  ASSERT_TRUE(seq.run(rowsOf({1, 2, 3, 4, 5, 6}), 0).ok());
  const Tensor ring = *seq.state(2)->tensor(), score = *seq.state(4)->tensor();
  const int callsBefore = toy.calls;
  auto expectError = [&](const Tensor &x, int64_t startPos, const std::string &needle) {
    auto r = seq.run(x, startPos);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.error().find(needle), std::string::npos) << r.error();
    EXPECT_EQ(seq.position(), 3) << needle;
    EXPECT_TRUE(sameBits(*seq.state(2)->tensor(), ring)) << needle;
    EXPECT_TRUE(sameBits(*seq.state(4)->tensor(), score)) << needle;
  };
  expectError(rowsOf({1, 2}), 2, "@layer: start_pos: 2 is not the sequence's next position 3");
  expectError(rowsOf({1, 2}), 4, "start_pos: 4 is not the sequence's next position 3");
  expectError(rowsOf({1, 2}), -1, "start_pos: -1 is negative");
  expectError(rowsOf({1, 2}), 0, "start_pos: 0 is not the sequence's next position 3 (steps run in order, each "
                                 "starting where the last ended; reset() starts the sequence over)");
  expectError(rowsOf({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}), 3,
              "max_seq_len: positions 3 .. 10 exceed the capacity of 10 positions (max_seq_len)");
  expectError(Tensor(ElementType::F32, {0, 2}), 3, "x: a step needs at least one token row");
  expectError(Tensor(ElementType::BF16, {1, 2}), 3, "x: element type bf16, expected f32 (tensor<?x2xf32>)");
  expectError(Tensor(ElementType::F32, {1, 3}), 3, "x: shape [1, 3], expected tensor<?x2xf32> (dimension 1)");
  expectError(Tensor(ElementType::F32, {2}), 3, "x: shape [2] has rank 1, expected tensor<?x2xf32>");
  EXPECT_EQ(toy.calls, callsBefore); // none of these reached the function
  // The capacity is exactly max_seq_len: positions 0 .. 9 fit, 10 does not.
  runtime::Sequence full = startToy(toy);
  ASSERT_TRUE(full.run(rowsOf(std::vector<float>(20, 1.0f)), 0).ok());
  auto over = full.run(rowsOf({1, 1}), 10);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().find("max_seq_len: positions 10 .. 10 exceed the capacity"), std::string::npos);

  // A failure on a later token of a split step: nothing is committed, the error names the token.
  runtime::FunctionSignature sig = ToyLayer::signature();
  int failAt = -1, calls = 0;
  ToyLayer inner;
  auto failing = [&](const std::vector<runtime::HostValue> &args, std::vector<runtime::NamedTensor> *p)
      -> dsa::Result<std::vector<Tensor>> {
    if (calls++ == failAt)
      return dsa::makeError("run-time check failed: injected");
    return inner(args, p);
  };
  auto seq2 = runtime::Sequence::start(sig, failing, {{3, Tensor::fromFloats(ElementType::F32, {2}, {1.0f, 1.0f})}});
  ASSERT_TRUE(seq2.ok()) << seq2.error();
  ASSERT_TRUE(seq2->run(rowsOf({1, 2}), 0).ok());
  const Tensor ring2 = *seq2->state(2)->tensor(), score2 = *seq2->state(4)->tensor();
  failAt = calls + 2; // the third token of the next step
  std::vector<runtime::NamedTensor> probes;
  auto r = seq2->run(rowsOf({5, 6, 7, 8, 9, 10}), 1, nullptr, &probes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("token 2 (position 3) of the 3-token step: run-time check failed: injected"),
            std::string::npos)
      << r.error();
  EXPECT_EQ(seq2->position(), 1);
  EXPECT_TRUE(sameBits(*seq2->state(2)->tensor(), ring2));
  EXPECT_TRUE(sameBits(*seq2->state(4)->tensor(), score2));
  EXPECT_TRUE(probes.empty());
  // Roles outside the signature (a signature built in code) are refused by start() and planStep().
  runtime::FunctionSignature badRoles = sig;
  badRoles.step.output = 3;
  auto bad = runtime::Sequence::start(badRoles, ToyLayer(), {{3, Tensor::fromFloats(ElementType::F32, {2}, {1, 1})}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("step roles x #0 / start_pos #1 / output #3 outside"), std::string::npos) << bad.error();
  auto badPlan = runtime::planStep(badRoles, 0, ElementType::F32, {1, 2}, 0, -1);
  ASSERT_FALSE(badPlan.ok());
  badRoles = sig;
  badRoles.step.x = 1;
  auto badX = runtime::planStep(badRoles, 0, ElementType::F32, {}, 0, -1);
  ASSERT_FALSE(badX.ok());
  EXPECT_NE(badX.error().find("x: argument #1 is not a tensor of token rows"), std::string::npos) << badX.error();
  // planStep's plan: one call for a prefill, one per token at start_pos > 0.
  auto plan = runtime::planStep(sig, 4, ElementType::F32, {3, 2}, 4, -1);
  ASSERT_TRUE(plan.ok()) << plan.error();
  ASSERT_EQ(plan->size(), 3u);
  EXPECT_EQ((*plan)[2].firstRow, 2);
  EXPECT_EQ((*plan)[2].rows, 1);
  EXPECT_EQ((*plan)[2].startPos, 6);
  auto prefillPlan = runtime::planStep(sig, 0, ElementType::F32, {3, 2}, 0, -1);
  ASSERT_TRUE(prefillPlan.ok());
  ASSERT_EQ(prefillPlan->size(), 1u);
  EXPECT_EQ((*prefillPlan)[0].rows, 3);
  // Without roles run() refuses; with roles the old step() still works as the low-level call.
  runtime::FunctionSignature plain = sig;
  plain.step = runtime::StepRoles();
  auto noRoles = runtime::Sequence::start(plain, ToyLayer(), {});
  ASSERT_FALSE(noRoles.ok());
  EXPECT_NE(noRoles.error().find("the function has no step roles"), std::string::npos);
}

/// Shared slots: passed in, replaced by what the layer returns, untouched on errors; a split step of a layer with
/// slots is refused (the model driver must split it).
TEST(CPURuntime, SequenceThreadsSharedSlots) {
  // @pub(x: tensor<?x1xi64>, start_pos: i64, count: tensor<1xi64>, slot: tensor<?xi64>)
  //   -> (out: tensor<?x1xi64>, count': tensor<1xi64>, slot': tensor<?xi64>)
  // slot' = slot ++ [x rows]; out[t] = x[t] + len(slot); count' = count + s.
  runtime::FunctionSignature sig;
  sig.name = "pub";
  runtime::ValueKind rows{true, ElementType::I64, {-1, 1}, "tensor<?x1xi64>"};
  runtime::ValueKind one{true, ElementType::I64, {1}, "tensor<1xi64>"};
  runtime::ValueKind slot{true, ElementType::I64, {-1}, "tensor<?xi64>"};
  sig.args = {rows, runtime::ValueKind{false, ElementType::I64, {}, "i64"}, one, slot};
  sig.results = {rows, one, slot};
  sig.numResults = 3;
  sig.state = {{2, 1}};
  sig.step.x = 0;
  sig.step.startPos = 1;
  sig.step.output = 0;
  sig.step.shared = {{3, 2}};
  auto runner = [](const std::vector<runtime::HostValue> &a, std::vector<runtime::NamedTensor> *)
      -> dsa::Result<std::vector<Tensor>> {
    const Tensor &x = *a[0].tensor(), &count = *a[2].tensor(), &slot = *a[3].tensor();
    std::vector<int64_t> out, slotOut = slot.intVector();
    for (int64_t t = 0; t < x.dim(0); ++t) {
      out.push_back(x.ints()[t] + slot.dim(0));
      slotOut.push_back(x.ints()[t]);
    }
    return std::vector<Tensor>{Tensor::fromInts(ElementType::I64, {x.dim(0), 1}, out),
                               Tensor::fromInts(ElementType::I64, {1}, {count.ints()[0] + x.dim(0)}),
                               Tensor::fromInts(ElementType::I64, {static_cast<int64_t>(slotOut.size())}, slotOut)};
  };
  auto slots = runtime::Sequence::initialSlots(sig);
  ASSERT_TRUE(slots.ok()) << slots.error();
  ASSERT_EQ(slots->size(), 1u);
  EXPECT_EQ((*slots)[0].tensor()->shape(), std::vector<int64_t>{0});
  auto l0 = runtime::Sequence::start(sig, runner, {});
  auto l1 = runtime::Sequence::start(sig, runner, {});
  ASSERT_TRUE(l0.ok() && l1.ok());
  auto x = Tensor::fromInts(ElementType::I64, {2, 1}, {10, 20});
  ASSERT_TRUE(l0->run(x, 0, &*slots).ok());
  auto r1 = l1->run(x, 0, &*slots); // layer 1 reads what layer 0 published
  ASSERT_TRUE(r1.ok()) << r1.error();
  EXPECT_EQ((*r1)[0].intVector(), (std::vector<int64_t>{12, 22}));
  EXPECT_EQ((*slots)[0].tensor()->intVector(), (std::vector<int64_t>{10, 20, 10, 20}));

  const runtime::Sequence::SlotSet before = *slots;
  auto missing = l0->run(Tensor::fromInts(ElementType::I64, {1, 1}, {1}), 2);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("shared: the layer reads and publishes 1 shared slots, none given"),
            std::string::npos);
  runtime::Sequence::SlotSet two = {before[0], before[0]};
  auto count = l0->run(Tensor::fromInts(ElementType::I64, {1, 1}, {1}), 2, &two);
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.error().find("shared: 2 slots given, the layer takes 1"), std::string::npos);
  auto split = l0->run(Tensor::fromInts(ElementType::I64, {2, 1}, {1, 2}), 2, &*slots);
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.error().find("shared: a step of 2 tokens at start_pos 2 > 0 of a layer with shared slots"),
            std::string::npos)
      << split.error();
  EXPECT_EQ((*slots)[0].tensor()->intVector(), before[0].tensor()->intVector());
  EXPECT_EQ(l0->position(), 2);
  EXPECT_EQ(l0->state(2)->tensor()->intVector(), std::vector<int64_t>{2});
  // A decode continues: count 3, the slot grows by one row.
  ASSERT_TRUE(l0->run(Tensor::fromInts(ElementType::I64, {1, 1}, {7}), 2, &*slots).ok());
  EXPECT_EQ(l0->state(2)->tensor()->intVector(), std::vector<int64_t>{3});
  EXPECT_EQ((*slots)[0].tensor()->intVector(), (std::vector<int64_t>{10, 20, 10, 20, 7}));
}

} // namespace

namespace {

/// A description of one function with every field the compiled signature holds: @cache(x: tensor<?x2xbf16>,
/// sp: i64, c: tensor<8x2xbf16> {writable}) -> (tensor<?x2xbf16>, tensor<8x2xbf16> = c in place).
runtime::StepLibraryDescription signedDescription() {
  runtime::StepLibraryDescription d;
  d.library = "l0.so";
  d.librarySha256 = std::string(64, 'b');
  d.targetCpu = "x86-64-v3";
  d.targetFeatures = {"avx", "avx2", "fma"};
  runtime::FunctionSignature f;
  f.name = "cache";
  const runtime::ValueKind x{true, ElementType::BF16, {-1, 2}, "tensor<?x2xbf16>"};
  const runtime::ValueKind c{true, ElementType::BF16, {8, 2}, "tensor<8x2xbf16>"};
  f.args = {x, runtime::ValueKind{false, ElementType::I64, {}, "i64"}, c};
  f.results = {x, c};
  f.numResults = 2;
  f.writableArgs = {2};
  f.inPlace = {{2, 1}};
  d.functions = {f};
  return d;
}

} // namespace

// The library's compiled signature against the description, field by field: each disagreement is an error naming
// the function, the argument or result and the field, with both values. The compiled text is what the emitter
// embeds for the unchanged description; each case changes one field of the description the loader compares it with.
TEST(CPURuntime, CompiledSignatureDisagreementsNameFunctionArgumentAndField) {
  const runtime::StepLibraryDescription good = signedDescription();
  const std::string compiled = runtime::compiledSignatureText(good);
  ASSERT_TRUE(runtime::checkCompiledSignature(good, {}, compiled.c_str()).ok());
  struct Case {
    const char *what;
    std::function<void(runtime::StepLibraryDescription &)> change;
    std::string error;
  } cases[] = {
      {"rank", [](auto &d) { d.functions[0].args[2].shape = {8, 2, 1}; },
       "cache: argument 2: description says tensor<8x2x1xbf16>, library was compiled for tensor<8x2xbf16> (rank)"},
      {"element type", [](auto &d) { d.functions[0].args[2].elem = ElementType::F32; },
       "cache: argument 2: description says tensor<8x2xf32>, library was compiled for tensor<8x2xbf16> (element "
       "type)"},
      {"static dimension", [](auto &d) { d.functions[0].args[2].shape = {8, 3}; },
       "cache: argument 2: description says tensor<8x3xbf16>, library was compiled for tensor<8x2xbf16> "
       "(dimension 1)"},
      {"dynamic for static", [](auto &d) { d.functions[0].args[2].shape = {-1, 2}; },
       "cache: argument 2: description says tensor<?x2xbf16>, library was compiled for tensor<8x2xbf16> "
       "(dimension 0)"},
      {"scalar for tensor", [](auto &d) { d.functions[0].args[0] = runtime::ValueKind{false, ElementType::I64, {}, "i64"}; },
       "cache: argument 0: description says i64, library was compiled for tensor<?x2xbf16>"},
      {"result", [](auto &d) { d.functions[0].results[0].shape = {-1, 4}; },
       "cache: result 0: description says tensor<?x4xbf16>, library was compiled for tensor<?x2xbf16> (dimension 1)"},
      {"argument count", [](auto &d) { d.functions[0].args.pop_back(); },
       "cache: description says 2 arguments, library was compiled for 3"},
      {"num_results", [](auto &d) { d.functions[0].numResults = 1; },
       "cache: num_results: description says 1, library was compiled for 2"},
      {"writable set", [](auto &d) { d.functions[0].writableArgs = {}; },
       "cache: writable arguments: description says [], library was compiled for [2]"},
      {"in-place set", [](auto &d) { d.functions[0].inPlace = {}; },
       "cache: in-place results: description says [], library was compiled for [arg 2 -> result 1]"},
      {"target features", [](auto &d) { d.targetFeatures = {"avx", "fma"}; },
       "target_features: description says [avx, fma], library was compiled for [avx, avx2, fma]"},
      {"target cpu", [](auto &d) { d.targetCpu = "znver4"; },
       "target_cpu: description says znver4, library was compiled for x86-64-v3"},
      {"parallel", [](auto &d) { d.parallel = true; }, "parallel: description says true, library was compiled for false"},
      {"chunked", [](auto &d) { d.functions[0].step.chunked = true; },
       "cache: step.chunked: description says true, library was compiled for false"},
      {"abi version", [](auto &d) { d.abiVersion = 2; }, "abi_version: description says 2, library was compiled for 1"},
      {"function missing", [](auto &d) { d.functions[0].name = "cache2"; },
       "cache2: the library has no such function (it was compiled with @cache)"},
  };
  for (const Case &c : cases) {
    runtime::StepLibraryDescription d = good;
    c.change(d);
    ::dsa::Status st = runtime::checkCompiledSignature(d, {}, compiled.c_str());
    ASSERT_FALSE(st.ok()) << c.what;
    EXPECT_NE(st.error().find(c.error), std::string::npos) << c.what << ": " << st.error();
  }
  // A backend's extra target fields (a GPU library's chip) are compared too, and must be recorded.
  const std::string gpu = runtime::compiledSignatureText(good, {{"chip", "sm_90"}});
  EXPECT_TRUE(runtime::checkCompiledSignature(good, {{"chip", "sm_90"}}, gpu.c_str()).ok());
  ::dsa::Status chip = runtime::checkCompiledSignature(good, {{"chip", "sm_80"}}, gpu.c_str());
  ASSERT_FALSE(chip.ok());
  EXPECT_NE(chip.error().find("chip: description says sm_80, library was compiled for sm_90"), std::string::npos)
      << chip.error();
  ::dsa::Status unrecorded = runtime::checkCompiledSignature(good, {{"chip", "sm_90"}}, compiled.c_str());
  ASSERT_FALSE(unrecorded.ok());
  EXPECT_NE(unrecorded.error().find("chip: the library's dsa_step_library_signature does not record it"),
            std::string::npos)
      << unrecorded.error();
  ::dsa::Status extra = runtime::checkCompiledSignature(good, {}, gpu.c_str());
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.error().find("holds fields this description does not have"), std::string::npos) << extra.error();
}

namespace {

/// signedDescription() with the dsa.attention configuration of a ratio-2 kv + index source recorded.
runtime::StepLibraryDescription configuredDescription() {
  runtime::StepLibraryDescription d = signedDescription();
  runtime::AttentionConfig a;
  a.layerId = 2;
  a.dim = 64;
  a.nHeads = 4;
  a.headDim = 32;
  a.ropeHeadDim = 8;
  a.qLoraRank = 16;
  a.oGroups = 2;
  a.oLoraRank = 16;
  a.windowSize = 8;
  a.compressRatio = 2;
  a.normEps = static_cast<double>(1e-20f);
  a.ropeDim = 8;
  a.ropeTheta = 40000.0;
  a.yarn = runtime::AttentionConfig::Yarn{32, 2.0, 32.0, 1.0};
  runtime::AttentionConfig::Compress c;
  c.isKvSource = true;
  c.isIndexSource = true;
  c.indexNHeads = 2;
  c.indexHeadDim = 32;
  c.indexTopk = 6;
  c.candidateTopkBlocks = 3;
  c.candidateBlockSize = 2;
  c.maxSeqLen = 64;
  c.indexKSource = "published_slot";
  c.tieOrder = "torch_cpu";
  a.compress = c;
  d.functions[0].attention = {a};
  return d;
}

} // namespace

// The dsa.attention configuration a function was compiled from is part of the compiled signature: the description
// carries it (round trip), and a description that disagrees with the library on any field is refused, naming the
// function and the field with both values. The configuration no argument shape shows (theta, YaRN, norm_eps, top-k,
// the candidate sizes, the role) is what this adds.
TEST(CPURuntime, CompiledSignatureAttentionConfigurationDisagreementsNameTheField) {
  const runtime::StepLibraryDescription good = configuredDescription();
  const std::string compiled = runtime::compiledSignatureText(good);
  ASSERT_NE(compiled.find("\"attention\":[{"), std::string::npos) << compiled;
  ASSERT_TRUE(runtime::checkCompiledSignature(good, {}, compiled.c_str()).ok());
  // The description's JSON carries the same configuration, field for field.
  auto parsed = runtime::parseStepLibrary(runtime::describeStepLibrary(good));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  ASSERT_EQ(parsed->functions[0].attention.size(), 1u);
  EXPECT_EQ(parsed->functions[0].attention[0].normEps, static_cast<double>(1e-20f));
  EXPECT_EQ(parsed->functions[0].attention[0].yarn->betaFast, 32.0);
  EXPECT_EQ(parsed->functions[0].attention[0].compress->tieOrder, "torch_cpu");
  EXPECT_TRUE(runtime::checkCompiledSignature(*parsed, {}, compiled.c_str()).ok());
  EXPECT_EQ(runtime::compiledSignatureText(*parsed), compiled) << "canonical: the same text from the description";
  // A library without any (emitted before they were recorded) still matches a description without any.
  EXPECT_EQ(runtime::compiledSignatureText(signedDescription()).find("attention"), std::string::npos);

  using Attention = runtime::AttentionConfig;
  struct Case {
    const char *what;
    std::function<void(Attention &)> change;
    std::string error;
  } cases[] = {
      {"rope theta", [](Attention &a) { a.ropeTheta = 10000.0; },
       "cache: attention[0].rope.theta: description says 10000.0, library was compiled for 40000.0"},
      {"yarn factor", [](Attention &a) { a.yarn->factor = 4.0; },
       "cache: attention[0].rope.yarn.factor: description says 4.0, library was compiled for 2.0"},
      {"yarn original_seq_len", [](Attention &a) { a.yarn->originalSeqLen = 64; },
       "cache: attention[0].rope.yarn.original_seq_len: description says 64, library was compiled for 32"},
      {"no yarn", [](Attention &a) { a.yarn.reset(); },
       "cache: attention[0].rope.yarn: description says null, library was compiled for {"},
      {"norm_eps", [](Attention &a) { a.normEps = 1e-6; },
       "cache: attention[0].norm_eps: description says 1e-06, library was compiled for 9.99999968"},
      {"index_topk", [](Attention &a) { a.compress->indexTopk = 5; },
       "cache: attention[0].compress.index_topk: description says 5, library was compiled for 6"},
      {"index_n_heads", [](Attention &a) { a.compress->indexNHeads = 4; },
       "cache: attention[0].compress.index_n_heads: description says 4, library was compiled for 2"},
      {"candidate_block_size", [](Attention &a) { a.compress->candidateBlockSize = 4; },
       "cache: attention[0].compress.candidate_block_size: description says 4, library was compiled for 2"},
      {"candidate_topk_blocks", [](Attention &a) { a.compress->candidateTopkBlocks = 1; },
       "cache: attention[0].compress.candidate_topk_blocks: description says 1, library was compiled for 3"},
      {"role", [](Attention &a) { a.compress->usesCandidates = true; },
       "cache: attention[0].compress.uses_candidates: description says true, library was compiled for false"},
      {"index_k_source", [](Attention &a) { a.compress->indexKSource = "own_cache"; },
       "cache: attention[0].compress.index_k_source: description says \"own_cache\", library was compiled for "
       "\"published_slot\""},
      {"q_lora_rank", [](Attention &a) { a.qLoraRank = 32; },
       "cache: attention[0].q_lora_rank: description says 32, library was compiled for 16"},
      {"o_lora_rank", [](Attention &a) { a.oLoraRank = 8; },
       "cache: attention[0].o_lora_rank: description says 8, library was compiled for 16"},
      {"layer_id", [](Attention &a) { a.layerId = 3; },
       "cache: attention[0].layer_id: description says 3, library was compiled for 2"},
  };
  for (const Case &c : cases) {
    runtime::StepLibraryDescription d = good;
    c.change(d.functions[0].attention[0]);
    ::dsa::Status st = runtime::checkCompiledSignature(d, {}, compiled.c_str());
    ASSERT_FALSE(st.ok()) << c.what;
    EXPECT_NE(st.error().find(c.error), std::string::npos) << c.what << ": " << st.error();
  }
  // One side records it and the other not.
  runtime::StepLibraryDescription none = good;
  none.functions[0].attention.clear();
  ::dsa::Status dropped = runtime::checkCompiledSignature(none, {}, compiled.c_str());
  ASSERT_FALSE(dropped.ok());
  EXPECT_NE(dropped.error().find("cache: attention: description says 0 dsa.attention configurations, library was "
                                 "compiled from 1"),
            std::string::npos)
      << dropped.error();
  const std::string unrecorded = runtime::compiledSignatureText(none);
  ::dsa::Status added = runtime::checkCompiledSignature(good, {}, unrecorded.c_str());
  ASSERT_FALSE(added.ok());
  EXPECT_NE(added.error().find("cache: attention: description says 1 dsa.attention configurations, library was "
                               "compiled from 0"),
            std::string::npos)
      << added.error();
  // The description's configuration is read strictly: an unknown or a missing key is an error naming its path.
  std::string text = runtime::describeStepLibrary(good);
  const std::string theta = "\"theta\": 40000.0";
  ASSERT_NE(text.find(theta), std::string::npos) << text;
  std::string misspelt = text;
  misspelt.replace(misspelt.find(theta), theta.size(), "\"thetta\": 40000.0");
  auto bad = runtime::parseStepLibrary(misspelt);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("functions[0].attention[0].rope.thetta: unknown key (expected one of: rope_dim, theta, "
                             "yarn)"),
            std::string::npos)
      << bad.error();
  const std::string topk = "\"index_topk\": 6,";
  ASSERT_NE(text.find(topk), std::string::npos) << text;
  std::string missing = text;
  missing.erase(missing.find(topk), topk.size());
  auto absent = runtime::parseStepLibrary(missing);
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.error().find("functions[0].attention[0].compress.index_topk: missing or not an integer"),
            std::string::npos)
      << absent.error();
}

// The description's attention configuration is read field by field (dsa/Support/StrictJson.h FieldReader, the
// step description's wording): a field of another type, an integer beyond int64 (once read as a wrapped negative)
// and an empty string are refused, each naming its path.
TEST(CPURuntime, DescriptionAttentionFieldsOfAnotherTypeNameTheField) {
  const std::string text = runtime::describeStepLibrary(configuredDescription());
  const std::string topk = "\"index_topk\": 6,";
  ASSERT_NE(text.find(topk), std::string::npos) << text;
  auto withTopk = [&](const std::string &replacement) {
    std::string t = text;
    t.replace(t.find(topk), topk.size(), replacement);
    return runtime::parseStepLibrary(t);
  };
  auto quoted = withTopk("\"index_topk\": \"6\",");
  ASSERT_FALSE(quoted.ok());
  EXPECT_NE(quoted.error().find("functions[0].attention[0].compress.index_topk: missing or not an integer"),
            std::string::npos)
      << quoted.error();
  auto huge = withTopk("\"index_topk\": 18446744073709551615,");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().find("functions[0].attention[0].compress.index_topk: integer 18446744073709551615 does not "
                              "fit in i64"),
            std::string::npos)
      << huge.error();
  const std::string tie = "\"tie_order\": \"";
  const size_t at = text.find(tie);
  ASSERT_NE(at, std::string::npos) << text;
  std::string emptyTie = text;
  emptyTie.erase(at + tie.size(), emptyTie.find('"', at + tie.size()) - (at + tie.size()));
  auto empty = runtime::parseStepLibrary(emptyTie);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().find("functions[0].attention[0].compress.tie_order: missing or not a non-empty string"),
            std::string::npos)
      << empty.error();
}

TEST(CPURuntime, CompiledSignatureOfAnotherAbiOrMissingOrMalformedIsAnError) {
  const runtime::StepLibraryDescription good = signedDescription();
  auto expectError = [&](const char *text, const std::string &needle) {
    ::dsa::Status st = runtime::checkCompiledSignature(good, {}, text);
    ASSERT_FALSE(st.ok()) << needle;
    EXPECT_NE(st.error().find(needle), std::string::npos) << st.error();
  };
  expectError(nullptr, "the library exports no dsa_step_library_signature: it is not a dsa step library of ABI "
                       "version 1");
  std::string other = runtime::compiledSignatureText(good);
  const std::string abi = "\"abi_version\":1";
  ASSERT_NE(other.find(abi), std::string::npos) << other;
  other.replace(other.find(abi), abi.size(), "\"abi_version\":2");
  expectError(other.c_str(), "abi_version: the library was compiled for step-library ABI version 2, this runtime "
                             "calls version 1");
  expectError("{\"format\": \"dsa-step-library-signature\", \"abi_version\": 1, \"abi_version\": 1}",
              "the library's dsa_step_library_signature: abi_version: duplicate key");
  expectError("{\"format\": \"dsa-step-library-signature\", \"abi\": 1}",
              "the library's dsa_step_library_signature: abi: unknown key");
  expectError("{\"format\": \"dsa-step-library-signature\"", "the library's dsa_step_library_signature: malformed JSON");
  expectError("[]", "the library's dsa_step_library_signature: format: malformed");
}

// Unknown keys anywhere and duplicate keys in a description are errors naming the key's path.
TEST(CPURuntime, DescriptionUnknownAndDuplicateKeysAreErrorsNamingThePath) {
  const std::string good = runtime::describeStepLibrary(signedDescription());
  ASSERT_TRUE(runtime::parseStepLibrary(good).ok()) << runtime::parseStepLibrary(good).error();
  auto replacedOnce = [](std::string text, const std::string &from, const std::string &to) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos)
      text.replace(at, from.size(), to);
    return text;
  };
  struct Case {
    std::string from, to, error;
  } cases[] = {
      {"\"parallel\": false", "\"parallel\": false, \"paralel\": true", "paralel: unknown key (expected one of: format, "},
      {"\"num_results\": 2", "\"num_results\": 2, \"num_result\": 2", "functions[0].num_result: unknown key"},
      {"\"element\": \"i64\"", "\"element\": \"i64\", \"elem\": \"i64\"", "functions[0].args[1].elem: unknown key"},
      {"\"in_place\": [\n        {\n          \"arg\": 2,", "\"in_place\": [\n        {\n          \"arg\": 2, \"argument\": 2,",
       "functions[0].in_place[0].argument: unknown key"},
      {"\"num_results\": 2", "\"num_results\": 2, \"num_results\": 1", "functions[0].num_results: duplicate key"},
      {"\"library\": \"l0.so\"", "\"library\": \"l0.so\", \"library\": \"l1.so\"", "library: duplicate key"},
      {"\"type\": \"i64\"", "\"type\": \"i32\"", "functions[0].args[1].type: \"i32\" disagrees with its element and shape (i64)"},
      {"\"symbol\": \"_mlir_cache\"", "\"symbol\": \"_mlir_other\"",
       "functions[0].symbol: \"_mlir_other\", the packed entry of @cache is _mlir_cache"},
      {"\"abi_version\": 1", "\"abi_version\": 2", "abi_version: 2, this runtime calls step libraries of ABI version 1"},
  };
  for (const Case &c : cases) {
    auto r = runtime::parseStepLibrary(replacedOnce(good, c.from, c.to));
    ASSERT_FALSE(r.ok()) << c.to;
    EXPECT_NE(r.error().find(c.error), std::string::npos) << r.error();
  }
}

// The returned tensors are checked against the signature too: code that returns another static size than the
// signature says is an error (and its buffer is still freed: the sanitizer build runs this).
TEST(CPURuntime, AResultThatDoesNotFitTheSignatureIsAnError) {
  runtime::FunctionSignature sig = scaleSignature();
  sig.results[0] = runtime::ValueKind{true, ElementType::F32, {-1, 3}, "tensor<?x3xf32>"};
  const Tensor x = Tensor::fromFloats(ElementType::BF16, {1, 2}, {1.0f, 2.0f});
  auto r = cpu::invokePackedValues(sig, packedScale, {x, Tensor::scalarI64(0)}, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("@scale: result #0 came back with shape [1, 2], the signature says tensor<?x3xf32>"),
            std::string::npos)
      << r.error();
}

// dsa_cpu_alloc / dsa_cpu_free (core's dsa/ABI/BufferCache.h), the compiled code's malloc and free.
TEST(CPURuntime, BufferCacheKeepsLargeBlocksForSizesTheyFitWithinItsLimit) {
  namespace abi = ::dsa::abi;
  const size_t limit = abi::bufferCacheLimit();
  abi::setBufferCacheLimit(size_t(64) << 20);
  abi::releaseCachedBuffers();
  const size_t MiB = size_t(1) << 20;

  // Small blocks are malloc's alone.
  void *small = dsa_cpu_alloc(1000);
  ASSERT_NE(small, nullptr);
  dsa_cpu_free(small);
  EXPECT_EQ(abi::bufferCacheBytes(), 0u);
  dsa_cpu_free(nullptr);

  // A large block is kept and handed to the next request it fits, also one a little larger (its size class).
  void *a = dsa_cpu_alloc(4 * MiB + 1);
  ASSERT_NE(a, nullptr);
  std::memset(a, 1, 4 * MiB + 1);
  const size_t usableA = malloc_usable_size(a);
  EXPECT_GE(usableA, 4 * MiB + MiB / 2) << "a fresh block is rounded up to its size class (steps of 1/8)";
  dsa_cpu_free(a);
  EXPECT_EQ(abi::bufferCacheBytes(), usableA);
  void *again = dsa_cpu_alloc(4 * MiB + 4096);
  EXPECT_EQ(again, a);
  EXPECT_EQ(abi::bufferCacheBytes(), 0u);
  // Blocks are malloc's: a caller may free a result buffer with free() (what the host runtime does).
  std::free(again);

  // Not for a request of less than half its size (that would hold the memory twice over).
  void *b = dsa_cpu_alloc(4 * MiB);
  dsa_cpu_free(b);
  void *c = dsa_cpu_alloc(MiB + 1);
  EXPECT_NE(c, b);
  EXPECT_EQ(abi::bufferCacheBytes(), malloc_usable_size(b));
  dsa_cpu_free(c);

  // The limit: the oldest blocks go first; a block over the limit is freed at once; lowering it releases.
  abi::releaseCachedBuffers();
  abi::setBufferCacheLimit(8 * MiB);
  void *d = dsa_cpu_alloc(2 * MiB), *e = dsa_cpu_alloc(3 * MiB), *f = dsa_cpu_alloc(16 * MiB);
  dsa_cpu_free(f); // over the limit on its own
  EXPECT_EQ(abi::bufferCacheBytes(), 0u);
  dsa_cpu_free(d);
  dsa_cpu_free(e);
  EXPECT_EQ(abi::bufferCacheBytes(), malloc_usable_size(d) + malloc_usable_size(e));
  void *g = dsa_cpu_alloc(4 * MiB); // no cached block fits: a fresh one
  EXPECT_NE(g, d);
  EXPECT_NE(g, e);
  dsa_cpu_free(g); // 9 MiB: d, the oldest, is released to stay under 8 MiB
  EXPECT_EQ(abi::bufferCacheBytes(), malloc_usable_size(e) + malloc_usable_size(g));
  abi::setBufferCacheLimit(0);
  EXPECT_EQ(abi::bufferCacheBytes(), 0u);

  // A block no allocation took for 1024 large allocations is released (a size that stopped recurring).
  abi::setBufferCacheLimit(size_t(64) << 20);
  void *idle = dsa_cpu_alloc(16 * MiB);
  dsa_cpu_free(idle);
  const size_t idleBytes = abi::bufferCacheBytes();
  EXPECT_GE(idleBytes, 16 * MiB);
  for (int i = 0; i < 1100; ++i)
    dsa_cpu_free(dsa_cpu_alloc(MiB));
  EXPECT_LT(abi::bufferCacheBytes(), idleBytes) << "the idle 16 MiB block is still held";
  EXPECT_LE(abi::bufferCacheBytes(), 2 * MiB);

  abi::releaseCachedBuffers();
  EXPECT_EQ(abi::bufferCacheBytes(), 0u);
  abi::setBufferCacheLimit(limit);
}
