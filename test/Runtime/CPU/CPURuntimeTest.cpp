//===- CPURuntimeTest.cpp - the MLIR-free CPU runtime: marshalling, descriptions, sequences ---===//
//
// Compiled functions are stood in for by hand-written packed entries that follow the calling convention of
// Values.h (descriptor fields one pointer each, then the result struct); expected values are written by hand.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Runtime/CPU/StepLibrary.h"

#include "dsa/Backend/CPU/RuntimeErrors.h"
#include "dsa/Numerics/BF16.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace cpu = ::dsa::cpu;
namespace interp = ::dsa::interp;
using interp::ElementType;
using interp::Tensor;

namespace {

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
    cpu::dsaCpuRecordFailure(static_cast<int32_t>(cpu::RuntimeError::WindowKvMultiTokenDecode));
}

cpu::FunctionSignature scaleSignature() {
  cpu::FunctionSignature sig;
  sig.name = "scale";
  sig.args = {cpu::ValueKind{true, ElementType::BF16, {-1, 2}, "tensor<?x2xbf16>"},
              cpu::ValueKind{false, ElementType::I64, {}, "i64"}};
  sig.results = {cpu::ValueKind{true, ElementType::F32, {-1, 2}, "tensor<?x2xf32>"},
                 cpu::ValueKind{false, ElementType::I64, {}, "i64"}};
  sig.numResults = 2;
  return sig;
}

TEST(CPURuntime, InvokePackedMarshalsTensorsAndBuffers) {
  cpu::FunctionSignature sig = scaleSignature();
  Tensor x = Tensor::fromFloats(ElementType::BF16, {3, 2}, {1.0f, 2.0f, -0.5f, 0.25f, 3.0f, 1.5f});
  auto r = cpu::invokePacked(sig, packedScale, {x, Tensor::scalarI64(10)}, nullptr);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].elementType(), ElementType::F32);
  EXPECT_EQ((*r)[0].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ((*r)[0].floatVector(), (std::vector<float>{2.0f, -2.0f, -1.0f, -0.25f, 6.0f, -1.5f}));
  EXPECT_EQ((*r)[1].intVector(), std::vector<int64_t>{13});
  // The same through a prepared buffer; the buffer holds bf16 patterns (1.0 = 0x3F80).
  auto buffer = cpu::CPUBuffer::fromTensor(x);
  EXPECT_EQ(static_cast<const uint16_t *>(buffer->data())[0], 0x3F80);
  auto r2 = cpu::invokePacked(sig, packedScale, {buffer, Tensor::scalarI64(0)}, nullptr);
  ASSERT_TRUE(r2.ok()) << r2.error();
  EXPECT_EQ((*r2)[0].floatVector(), (*r)[0].floatVector());
}

TEST(CPURuntime, InvokePackedReportsBadArgumentsAndFailedChecks) {
  cpu::FunctionSignature sig = scaleSignature();
  Tensor x(ElementType::BF16, {1, 2});
  auto expectError = [&](const std::vector<cpu::CPUValue> &args, const std::string &needle) {
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
  expectError({std::shared_ptr<const cpu::CPUBuffer>(), Tensor::scalarI64(0)}, "argument #0 is a null CPUBuffer");
  expectError({x, Tensor::scalarI64(-1)},
              "@scale: run-time check failed: dsa.window_kv: a step of more than one token at start_pos > 0");
  // The failure record is per call: the next call succeeds.
  auto ok = cpu::invokePacked(sig, packedScale, {x, Tensor::scalarI64(1)}, nullptr);
  EXPECT_TRUE(ok.ok()) << ok.error();
}

TEST(CPURuntime, DescriptionRoundTripsAndNamesBadFields) {
  cpu::StepLibraryDescription d;
  d.library = "l0.so";
  d.targetCpu = "znver4";
  d.parallel = true;
  cpu::FunctionSignature sig = scaleSignature();
  sig.results.push_back(cpu::ValueKind{true, ElementType::I32, {-1, -1}, "tensor<?x?xi32>"});
  sig.probeNames = {"L0.sa_topk_idxs"};
  sig.state = {{0, 0}};
  d.functions = {sig};
  const std::string text = cpu::describeStepLibrary(d);
  auto back = cpu::parseStepLibrary(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->library, "l0.so");
  EXPECT_EQ(back->targetCpu, "znver4");
  EXPECT_TRUE(back->parallel);
  ASSERT_EQ(back->functions.size(), 1u);
  const cpu::FunctionSignature &f = back->functions[0];
  EXPECT_EQ(f.name, "scale");
  ASSERT_EQ(f.args.size(), 2u);
  EXPECT_TRUE(f.args[0].isTensor);
  EXPECT_EQ(f.args[0].shape, (std::vector<int64_t>{-1, 2}));
  EXPECT_FALSE(f.args[1].isTensor);
  EXPECT_EQ(f.results.size(), 3u);
  EXPECT_EQ(f.numResults, 2u);
  EXPECT_EQ(f.probeNames, std::vector<std::string>{"L0.sa_topk_idxs"});
  ASSERT_EQ(f.state.size(), 1u);

  auto expectError = [](const std::string &json, const std::string &needle) {
    auto r = cpu::parseStepLibrary(json);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.error().find(needle), std::string::npos) << r.error();
  };
  expectError("[1, 2", "not a JSON object");
  expectError(R"({"format": "other", "version": 1})", "format: expected \"dsa-cpu-step-library\"");
  expectError(R"({"format": "dsa-cpu-step-library", "version": 2})", "version: expected 1");
  const std::string head = R"({"format": "dsa-cpu-step-library", "version": 1, "library": "l.so", "functions": [)";
  expectError(head + R"({"name": "f", "args": [{"element": "f16", "shape": [2]}], "results": [], "num_results": 0}]})",
              "functions[0].args[0].element: unknown element type 'f16'");
  expectError(head + R"({"name": "f", "args": [{"element": "f32", "shape": [-2]}], "results": [], "num_results": 0}]})",
              "functions[0].args[0].shape[0]: expected an integer >= -1");
  expectError(head + R"({"name": "f", "args": [{"element": "bf16", "shape": null}], "results": [], "num_results": 0}]})",
              "functions[0].args[0].element: a bf16 scalar cannot be passed");
  expectError(head + R"({"name": "f", "args": [], "results": [{"element": "f32", "shape": []}], "num_results": 0}]})",
              "functions[0]: num_results (0) + probes (0) != results (1)");
  expectError(head + R"({"name": "f", "args": [], "results": [], "num_results": 0, "state": [{"arg": 0, "result": 0}]}]})",
              "functions[0].state[0]: arg 0 / result 0 out of range");
}

TEST(CPURuntime, OpenReportsMissingFilesAndLibraries) {
  auto missing = cpu::CPUStepLibrary::open("/nonexistent/step.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("cannot read step description '/nonexistent/step.json'"), std::string::npos);
  const std::string path = ::testing::TempDir() + "dsa-cpu-runtime-test.json";
  std::ofstream(path) << R"({"format": "dsa-cpu-step-library", "version": 1, "library": "no-such.so", "functions": []})";
  auto noLib = cpu::CPUStepLibrary::open(path);
  ASSERT_FALSE(noLib.ok());
  EXPECT_NE(noLib.error().find("cannot load step library"), std::string::npos) << noLib.error();
  EXPECT_NE(noLib.error().find("no-such.so"), std::string::npos) << noLib.error();
}

TEST(CPURuntime, SequenceThreadsStateAndKeepsItOnErrors) {
  // @acc(x: i64, total: i64) -> (i64 total'): total' = total + x; state: result 0 -> argument 1.
  cpu::FunctionSignature sig;
  sig.name = "acc";
  sig.args = {cpu::ValueKind{false, ElementType::I64, {}, "i64"}, cpu::ValueKind{false, ElementType::I64, {}, "i64"}};
  sig.results = {cpu::ValueKind{false, ElementType::I64, {}, "i64"}};
  sig.numResults = 1;
  sig.state = {{1, 0}};
  auto runner = [](const std::vector<cpu::CPUValue> &args,
                   std::vector<cpu::NamedTensor> *) -> dsa::Result<std::vector<Tensor>> {
    int64_t x = args[0].tensor()->scalarInt(), total = args[1].tensor()->scalarInt();
    if (x < 0)
      return dsa::makeError("negative step");
    return std::vector<Tensor>{Tensor::scalarI64(total + x)};
  };
  auto seq = cpu::CPUSequence::create(sig, runner, {Tensor::scalarI64(0), Tensor::scalarI64(100)});
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
  auto badCount = cpu::CPUSequence::create(sig, runner, {Tensor::scalarI64(0)});
  ASSERT_FALSE(badCount.ok());
  EXPECT_NE(badCount.error().find("1 initial arguments, the function takes 2"), std::string::npos);
}

} // namespace
