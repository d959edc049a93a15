//===- CApiErrorsTest.cpp - every error path of the C API (dsa-c/runtime.h), and that errors change nothing ---===//
//
// On the step libraries of the tiny golden (written by the CTest fixture CApiLibraries: `dsa-run --golden
// ds41_tiny_golden.json --emit-libraries=DIR`): layer 0 (window only, no capacity) and layer 2 (compressed, the
// KV and index source: shared slots, max_seq_len 64). Weights are a fixed pattern (not the golden's: these tests
// check errors and state, CApiGoldenTest.c checks values). Each refused step is checked to leave the position and
// every state tensor bit-identical, and a good step after it to give what a sequence that never saw the error gives.
// The split of a multi-token step at start_pos > 0 is checked against the same tokens stepped one at a time, and the
// C API's outputs against the C++ runtime's Sequence on the same library. The batch API (dsa_batch_*) on the
// batched window layer (fixture CApiLibraries, into LIBS-batch: test/Tools/Inputs/batched-window-layer.mlir, the
// batch-1 window-layer.mlir and batched-compressed-layer.mlir, which dsa_batch_create refuses; scripts/sanitize.sh
// writes the same set): every error path, the members, rings and positions unchanged after each, and a good step after
// them giving what a twin batch that never saw the errors gives (CApiBatchTest.c checks the values).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa-c/runtime.h"

#include "dsa/Runtime/CPU/StepLibrary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace {

/// The fixture's directory, or $DSA_CAPI_LIBRARIES (scripts/sanitize.sh runs the sanitized test on its own libraries).
const std::string kLibraries = std::getenv("DSA_CAPI_LIBRARIES") ? std::getenv("DSA_CAPI_LIBRARIES")
                                                                  : DSA_CAPI_LIBRARIES_DIR;

/// A status owned by the test.
struct Status {
  dsa_status_t s;
  Status(dsa_status_t s) : s(s) {}
  ~Status() { dsa_status_free(s); }
  Status(const Status &) = delete;
  dsa_status_code_t code() const { return dsa_status_code(s); }
  std::string message() const { return dsa_status_message(s); }
  bool ok() const { return s == nullptr; }
};

#define EXPECT_STATUS(call, wantCode, ...)                                                                         \
  do {                                                                                                           \
    Status st_(call);                                                                                            \
    EXPECT_EQ(st_.code(), wantCode) << dsa_status_code_name(st_.code()) << ": " << st_.message();                \
    const std::vector<std::string> parts_{__VA_ARGS__};                                                          \
    for (const std::string &part : parts_)                                                                       \
      EXPECT_NE(st_.message().find(part), std::string::npos) << "'" << part << "' not in: " << st_.message();    \
  } while (0)
#define ASSERT_OK(call)                                                                                            \
  do {                                                                                                           \
    Status st_(call);                                                                                            \
    ASSERT_TRUE(st_.ok()) << dsa_status_code_name(st_.code()) << ": " << st_.message();                          \
  } while (0)

/// A tensor the test owns, with a dsa_buffer_t over it.
struct Buffer {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> shape;
  dsa_buffer_t b{};
  Buffer(dsa_dtype_t dtype, std::vector<int64_t> dims) : shape(std::move(dims)) {
    size_t n = 1;
    for (int64_t d : shape)
      n *= static_cast<size_t>(d);
    bytes.assign(n * dsa_dtype_size(dtype) + 8, 0);
    b = {bytes.data(), n * dsa_dtype_size(dtype), dtype, static_cast<int32_t>(shape.size()), shape.data()};
  }
  Buffer(const Buffer &o) : bytes(o.bytes), shape(o.shape), b(o.b) {
    b.data = bytes.data();
    b.shape = shape.data();
  }
  Buffer &operator=(const Buffer &o) {
    bytes = o.bytes;
    shape = o.shape;
    b = o.b;
    b.data = bytes.data();
    b.shape = shape.data();
    return *this;
  }
  const dsa_buffer_t *operator&() const { return &b; }
  /// A deterministic pattern of bf16 values in [-scale, scale] (f32 for an f32 buffer).
  void fill(uint32_t seed, float scale) {
    uint32_t z = seed * 2654435761u + 12345u;
    const size_t n = b.size_bytes / dsa_dtype_size(b.dtype);
    for (size_t i = 0; i < n; ++i) {
      z = z * 1664525u + 1013904223u;
      const float v = scale * (static_cast<float>(z >> 8) / 8388608.0f - 1.0f);
      if (b.dtype == DSA_DTYPE_BF16) {
        uint32_t u;
        std::memcpy(&u, &v, 4);
        const uint16_t h = static_cast<uint16_t>(u >> 16);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      } else {
        std::memcpy(bytes.data() + 4 * i, &v, 4);
      }
    }
  }
};

class CApiTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::ifstream manifest(kLibraries + "/golden_layers.json");
    ASSERT_TRUE(static_cast<bool>(manifest)) << "no step libraries in " << kLibraries
                                             << " (the CTest fixture CApiLibraries writes them)";
  }
  void TearDown() override {
    for (dsa_sequence_t *s : sequences)
      dsa_sequence_release(s);
    for (dsa_library_t *l : libraries)
      dsa_library_release(l);
  }

  dsa_library_t *open(int layer) { return openFile(path(layer)); }
  /// Opens the step library described by `description` (released by TearDown); null after a failed expectation.
  dsa_library_t *openFile(const std::string &description) {
    dsa_library_t *lib = nullptr;
    Status st(dsa_library_open(DSA_C_API_VERSION, description.c_str(), &lib));
    EXPECT_TRUE(st.ok()) << st.message() << " (the CTest fixture CApiLibraries writes the libraries)";
    if (lib)
      libraries.push_back(lib);
    return lib;
  }
  static std::string path(int layer) { return kLibraries + "/attention_L" + std::to_string(layer) + ".json"; }
  static std::string functionOf(dsa_library_t *lib) {
    const char *name = nullptr;
    Status st(dsa_library_function_name(lib, 0, &name));
    return st.ok() ? name : "";
  }

  /// The weights of `function`: a fixed pattern, each of its argument's dtype and shape.
  void weightsOf(dsa_library_t *lib, const std::string &fn, std::vector<size_t> &args, std::vector<Buffer> &bufs) {
    dsa_function_info_t info;
    ASSERT_OK(dsa_function_info(lib, fn.c_str(), &info));
    for (size_t a = 0; a < info.num_args; ++a) {
      dsa_value_info_t v;
      ASSERT_OK(dsa_function_arg(lib, fn.c_str(), a, &v));
      if (v.role != DSA_ARG_WEIGHT)
        continue;
      bufs.emplace_back(v.dtype, std::vector<int64_t>(v.shape, v.shape + v.rank));
      bufs.back().fill(static_cast<uint32_t>(a), v.rank == 2 ? 1.0f / std::sqrt(static_cast<float>(v.shape[1])) : 0.5f);
      args.push_back(a);
    }
  }
  dsa_sequence_t *create(dsa_library_t *lib, const std::string &fn) {
    std::vector<size_t> args;
    std::vector<Buffer> bufs;
    weightsOf(lib, fn, args, bufs);
    std::vector<dsa_buffer_t> descs;
    for (const Buffer &b : bufs)
      descs.push_back(b.b);
    dsa_sequence_t *seq = nullptr;
    Status st(dsa_sequence_create(lib, fn.c_str(), descs.size(), args.data(), descs.data(), &seq));
    EXPECT_TRUE(st.ok()) << st.message();
    if (seq)
      sequences.push_back(seq);
    return seq;
  }
  static Buffer x(int64_t rows, uint32_t seed) {
    Buffer b(DSA_DTYPE_BF16, {rows, 64});
    b.fill(seed, 2.0f);
    return b;
  }
  /// The position and every state tensor's bytes.
  static std::vector<uint8_t> snapshot(dsa_sequence_t *seq) {
    int64_t position = -1;
    Status p(dsa_sequence_position(seq, &position));
    std::vector<uint8_t> out(reinterpret_cast<uint8_t *>(&position), reinterpret_cast<uint8_t *>(&position) + 8);
    size_t count = 0;
    Status c(dsa_sequence_state_count(seq, &count));
    for (size_t k = 0; k < count; ++k) {
      dsa_state_info_t info;
      Status i(dsa_sequence_state_info(seq, k, &info));
      Buffer b(info.value.dtype, std::vector<int64_t>(info.value.shape, info.value.shape + info.value.rank));
      Status r(dsa_sequence_read_state(seq, k, &b));
      EXPECT_TRUE(r.ok()) << r.message();
      out.insert(out.end(), b.bytes.begin(), b.bytes.end());
    }
    return out;
  }

  std::vector<dsa_library_t *> libraries;
  std::vector<dsa_sequence_t *> sequences;
};

TEST_F(CApiTest, VersionIsTheHeaders) { EXPECT_EQ(dsa_c_api_version(), static_cast<uint32_t>(DSA_C_API_VERSION)); }

TEST_F(CApiTest, OpenRefusesAnotherApiVersion) {
  dsa_library_t *lib = nullptr;
  EXPECT_STATUS(dsa_library_open(DSA_C_API_VERSION + 1, path(0).c_str(), &lib), DSA_STATUS_VERSION_MISMATCH,
                "dsa_library_open: api_version",
                "version " + std::to_string(DSA_C_API_VERSION + 1), "implements version " + std::to_string(DSA_C_API_VERSION));
  EXPECT_EQ(lib, nullptr);
  EXPECT_STATUS(dsa_library_open(0, path(0).c_str(), &lib), DSA_STATUS_VERSION_MISMATCH, "version 0");
  EXPECT_EQ(lib, nullptr);
}

TEST_F(CApiTest, OpenReportsBadPathsAndDescriptions) {
  dsa_library_t *lib = nullptr;
  EXPECT_STATUS(dsa_library_open(DSA_C_API_VERSION, (kLibraries + "/nope.json").c_str(), &lib), DSA_STATUS_NOT_FOUND,
                "description_path", "nope.json");
  EXPECT_STATUS(dsa_library_open(DSA_C_API_VERSION, nullptr, &lib), DSA_STATUS_INVALID_ARGUMENT,
                "description_path is NULL");
  EXPECT_STATUS(dsa_library_open(DSA_C_API_VERSION, path(0).c_str(), nullptr), DSA_STATUS_INVALID_ARGUMENT,
                "out_library is NULL");
  const std::string bad = ::testing::TempDir() + "capi-bad-description.json";
  std::ofstream(bad) << R"({"format": "dsa-cpu-step-library", "version": 4, "library": "x.so"})";
  EXPECT_STATUS(dsa_library_open(DSA_C_API_VERSION, bad.c_str(), &lib), DSA_STATUS_UNAVAILABLE, bad.c_str());
  const std::string missingSo = ::testing::TempDir() + "capi-missing-so.json";
  std::ifstream real(path(0));
  std::string text((std::istreambuf_iterator<char>(real)), std::istreambuf_iterator<char>());
  const size_t at = text.find("attention_L0.so");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::strlen("attention_L0.so"), "does_not_exist.so");
  std::ofstream(missingSo) << text;
  EXPECT_STATUS(dsa_library_open(DSA_C_API_VERSION, missingSo.c_str(), &lib), DSA_STATUS_UNAVAILABLE,
                "does_not_exist.so");
  EXPECT_EQ(lib, nullptr);
}

TEST_F(CApiTest, QueriesDescribeTheSignature) {
  dsa_library_t *lib = open(0);
  ASSERT_NE(lib, nullptr);
  const char *backend = nullptr, *target = nullptr;
  ASSERT_OK(dsa_library_backend(lib, &backend, &target));
  EXPECT_STREQ(backend, "cpu");
  EXPECT_NE(std::string(target), "");
  size_t count = 0;
  ASSERT_OK(dsa_library_function_count(lib, &count));
  EXPECT_EQ(count, 1u);
  const std::string fn = functionOf(lib);
  EXPECT_EQ(fn, "attention_L0");
  dsa_function_info_t info;
  ASSERT_OK(dsa_function_info(lib, fn.c_str(), &info));
  EXPECT_EQ(info.x_arg, 0);
  EXPECT_EQ(info.start_pos_arg, 1);
  EXPECT_EQ(info.max_seq_len, -1);
  EXPECT_EQ(info.num_state, 1u);
  EXPECT_EQ(info.num_shared, 0u);
  EXPECT_EQ(info.chunked, 1); // a window-only layer of a CPU step library runs a chunk as one call
  dsa_value_info_t v;
  ASSERT_OK(dsa_function_arg(lib, fn.c_str(), 0, &v));
  EXPECT_EQ(v.role, DSA_ARG_X);
  EXPECT_EQ(v.dtype, DSA_DTYPE_BF16);
  EXPECT_EQ(v.rank, 2);
  EXPECT_EQ(v.shape[0], -1);
  EXPECT_EQ(v.shape[1], 64);
  EXPECT_STREQ(v.type, "tensor<?x64xbf16>");
  ASSERT_OK(dsa_function_arg(lib, fn.c_str(), 1, &v));
  EXPECT_EQ(v.role, DSA_ARG_START_POS);
  EXPECT_EQ(v.is_tensor, 0);
  EXPECT_EQ(v.dtype, DSA_DTYPE_I64);
  ASSERT_OK(dsa_function_result(lib, fn.c_str(), static_cast<size_t>(info.output_result), &v));
  EXPECT_STREQ(v.type, "tensor<?x64xbf16>");
  EXPECT_STATUS(dsa_function_arg(lib, fn.c_str(), info.num_args, &v), DSA_STATUS_INVALID_ARGUMENT, "index",
                "arguments");
  EXPECT_STATUS(dsa_function_result(lib, fn.c_str(), info.num_results, &v), DSA_STATUS_INVALID_ARGUMENT, "results");
  EXPECT_STATUS(dsa_library_function_name(lib, 1, &backend), DSA_STATUS_INVALID_ARGUMENT, "index: 1");
  EXPECT_STATUS(dsa_library_function_count(nullptr, &count), DSA_STATUS_INVALID_ARGUMENT, "library is NULL");
  EXPECT_STATUS(dsa_function_info(lib, fn.c_str(), nullptr), DSA_STATUS_INVALID_ARGUMENT, "out_info is NULL");
}

TEST_F(CApiTest, UnknownFunctionListsTheLibrarys) {
  dsa_library_t *lib = open(0);
  ASSERT_NE(lib, nullptr);
  dsa_function_info_t info;
  EXPECT_STATUS(dsa_function_info(lib, "attention_L9", &info), DSA_STATUS_NOT_FOUND, "no function @attention_L9",
                "(it has @attention_L0)");
  dsa_sequence_t *seq = nullptr;
  EXPECT_STATUS(dsa_sequence_create(lib, "attention_L9", 0, nullptr, nullptr, &seq), DSA_STATUS_NOT_FOUND,
                "dsa_sequence_create: function: no function @attention_L9");
  EXPECT_STATUS(dsa_function_info(lib, nullptr, &info), DSA_STATUS_INVALID_ARGUMENT, "function is NULL");
  dsa_slots_t *slots = nullptr;
  EXPECT_STATUS(dsa_slots_create(lib, "attention_L0", &slots), DSA_STATUS_FAILED_PRECONDITION, "no shared slots");
  EXPECT_EQ(seq, nullptr);
  EXPECT_EQ(slots, nullptr);
}

TEST_F(CApiTest, CreateChecksEveryWeight) {
  dsa_library_t *lib = open(0);
  ASSERT_NE(lib, nullptr);
  const std::string fn = functionOf(lib);
  std::vector<size_t> args;
  std::vector<Buffer> bufs;
  weightsOf(lib, fn, args, bufs);
  ASSERT_GE(bufs.size(), 2u);
  auto attempt = [&](std::vector<size_t> a, std::vector<dsa_buffer_t> b) {
    dsa_sequence_t *seq = nullptr;
    dsa_status_t st = dsa_sequence_create(lib, fn.c_str(), b.size(), a.data(), b.data(), &seq);
    EXPECT_EQ(seq, nullptr);
    return st;
  };
  std::vector<dsa_buffer_t> good;
  for (const Buffer &b : bufs)
    good.push_back(b.b);
  const size_t w0 = args[0];
  const std::string w0name = "weights[0] (argument #" + std::to_string(w0) + ")";

  { // a weight missing
    std::vector<size_t> a(args.begin() + 1, args.end());
    std::vector<dsa_buffer_t> b(good.begin() + 1, good.end());
    EXPECT_STATUS(attempt(a, b), DSA_STATUS_INVALID_ARGUMENT,
                  ("weights: argument #" + std::to_string(w0)).c_str(), "was not given");
  }
  { // a weight twice
    std::vector<size_t> a = args;
    a[1] = a[0];
    EXPECT_STATUS(attempt(a, good), DSA_STATUS_INVALID_ARGUMENT, "weight_args[1]", "given twice");
  }
  { // x, state, or past the arguments
    std::vector<size_t> a = args;
    a[0] = 0;
    EXPECT_STATUS(attempt(a, good), DSA_STATUS_INVALID_ARGUMENT, "weight_args[0]: argument #0 is not a weight");
    a[0] = 2; // the ring
    EXPECT_STATUS(attempt(a, good), DSA_STATUS_INVALID_ARGUMENT, "argument #2 is not a weight");
    a[0] = 999;
    EXPECT_STATUS(attempt(a, good), DSA_STATUS_INVALID_ARGUMENT, "argument #999 does not exist");
  }
  { // wrong dtype, rank, shape, size, NULL data / shape, a bad rank / dtype / dimension
    std::vector<dsa_buffer_t> b = good;
    b[0].dtype = b[0].dtype == DSA_DTYPE_BF16 ? DSA_DTYPE_F32 : DSA_DTYPE_BF16;
    b[0].size_bytes *= 4;
    EXPECT_STATUS(attempt(args, b), DSA_STATUS_INVALID_ARGUMENT, w0name.c_str(), "has element type");
    b = good;
    b[0].rank -= 1;
    EXPECT_STATUS(attempt(args, b), DSA_STATUS_INVALID_ARGUMENT, w0name.c_str(), "has rank");
    b = good;
    std::vector<int64_t> shape(good[0].shape, good[0].shape + good[0].rank);
    shape.back() -= 1;
    b[0].shape = shape.data();
    EXPECT_STATUS(attempt(args, b), DSA_STATUS_INVALID_ARGUMENT, w0name.c_str(), "expected", "(dimension");
    b = good;
    b[0].size_bytes -= 1;
    EXPECT_STATUS(attempt(args, b), DSA_STATUS_INVALID_ARGUMENT, w0name.c_str(), "size_bytes", "is less than");
    b = good;
    b[0].data = nullptr;
    EXPECT_STATUS(attempt(args, b), DSA_STATUS_INVALID_ARGUMENT, (w0name + ": data is NULL").c_str());
    b = good;
    b[0].shape = nullptr;
    EXPECT_STATUS(attempt(args, b), DSA_STATUS_INVALID_ARGUMENT, (w0name + ": shape is NULL").c_str());
    b = good;
    b[0].rank = 17;
    EXPECT_STATUS(attempt(args, b), DSA_STATUS_INVALID_ARGUMENT, "rank 17 is outside 0..16");
    b = good;
    const int notADtype = 42; // what a C caller may pass (a C++ enum cast of 42 would be undefined)
    static_assert(sizeof(dsa_dtype_t) == sizeof(int), "dsa_dtype_t is an int");
    std::memcpy(&b[0].dtype, &notADtype, sizeof notADtype);
    EXPECT_STATUS(attempt(args, b), DSA_STATUS_INVALID_ARGUMENT, "dtype 42 is no dsa_dtype_t");
    b = good;
    shape.back() = -3;
    b[0].shape = shape.data();
    EXPECT_STATUS(attempt(args, b), DSA_STATUS_INVALID_ARGUMENT, "is negative");
  }
  { // NULL arrays, NULL out
    dsa_sequence_t *seq = nullptr;
    EXPECT_STATUS(dsa_sequence_create(lib, fn.c_str(), good.size(), nullptr, good.data(), &seq),
                  DSA_STATUS_INVALID_ARGUMENT, "weight_args is NULL");
    EXPECT_STATUS(dsa_sequence_create(lib, fn.c_str(), good.size(), args.data(), nullptr, &seq),
                  DSA_STATUS_INVALID_ARGUMENT, "weights is NULL");
    EXPECT_STATUS(dsa_sequence_create(lib, fn.c_str(), good.size(), args.data(), good.data(), nullptr),
                  DSA_STATUS_INVALID_ARGUMENT, "out_sequence is NULL");
    EXPECT_STATUS(dsa_sequence_create(nullptr, fn.c_str(), good.size(), args.data(), good.data(), &seq),
                  DSA_STATUS_INVALID_ARGUMENT, "library is NULL");
  }
  { // and the good weights make a sequence at position 0
    dsa_sequence_t *seq = nullptr;
    ASSERT_OK(dsa_sequence_create(lib, fn.c_str(), good.size(), args.data(), good.data(), &seq));
    sequences.push_back(seq);
    int64_t position = -1;
    ASSERT_OK(dsa_sequence_position(seq, &position));
    EXPECT_EQ(position, 0);
  }
}

TEST_F(CApiTest, RefusedStepsChangeNothing) {
  dsa_library_t *lib = open(0);
  ASSERT_NE(lib, nullptr);
  dsa_sequence_t *seq = create(lib, functionOf(lib));
  dsa_sequence_t *twin = create(lib, functionOf(lib)); // never sees an error
  ASSERT_TRUE(seq && twin);
  Buffer prefill = x(5, 1), out5(DSA_DTYPE_BF16, {5, 64}), outTwin5(DSA_DTYPE_BF16, {5, 64});
  ASSERT_OK(dsa_sequence_step(seq, &prefill, 0, nullptr, &out5));
  ASSERT_OK(dsa_sequence_step(twin, &prefill, 0, nullptr, &outTwin5));
  EXPECT_EQ(out5.bytes, outTwin5.bytes);
  const std::vector<uint8_t> before = snapshot(seq);

  Buffer decode = x(1, 2), out1(DSA_DTYPE_BF16, {1, 64});
  Buffer wrongType(DSA_DTYPE_F32, {1, 64}), wrongRank(DSA_DTYPE_BF16, {64}), wrongDim(DSA_DTYPE_BF16, {1, 32}),
      noRows(DSA_DTYPE_BF16, {0, 64}), outWrongRows(DSA_DTYPE_BF16, {2, 64}), outWrongType(DSA_DTYPE_F32, {1, 64});
  dsa_buffer_t nullData = decode.b, small = decode.b;
  nullData.data = nullptr;
  small.size_bytes -= 2;
  EXPECT_STATUS(dsa_sequence_step(seq, &wrongType, 5, nullptr, &out1), DSA_STATUS_INVALID_ARGUMENT,
                "dsa_sequence_step: sequence @attention_L0: x: element type f32, expected bf16");
  EXPECT_STATUS(dsa_sequence_step(seq, &wrongRank, 5, nullptr, &out1), DSA_STATUS_INVALID_ARGUMENT, "x: shape [64]",
                "rank 1");
  EXPECT_STATUS(dsa_sequence_step(seq, &wrongDim, 5, nullptr, &out1), DSA_STATUS_INVALID_ARGUMENT,
                "x: shape [1, 32], expected tensor<?x64xbf16> (dimension 1)");
  EXPECT_STATUS(dsa_sequence_step(seq, &noRows, 5, nullptr, &out1), DSA_STATUS_INVALID_ARGUMENT,
                "x: a step needs at least one token row");
  EXPECT_STATUS(dsa_sequence_step(seq, &nullData, 5, nullptr, &out1), DSA_STATUS_INVALID_ARGUMENT,
                "x: data is NULL");
  EXPECT_STATUS(dsa_sequence_step(seq, &small, 5, nullptr, &out1), DSA_STATUS_INVALID_ARGUMENT, "x: size_bytes 126",
                "128 bytes");
  EXPECT_STATUS(dsa_sequence_step(seq, nullptr, 5, nullptr, &out1), DSA_STATUS_INVALID_ARGUMENT, "x is NULL");
  EXPECT_STATUS(dsa_sequence_step(nullptr, &decode, 5, nullptr, &out1), DSA_STATUS_INVALID_ARGUMENT,
                "sequence is NULL");
  EXPECT_STATUS(dsa_sequence_step(seq, &decode, 4, nullptr, &out1), DSA_STATUS_INVALID_ARGUMENT,
                "start_pos: 4 is not the sequence's next position 5");
  EXPECT_STATUS(dsa_sequence_step(seq, &decode, 0, nullptr, &out1), DSA_STATUS_INVALID_ARGUMENT, "start_pos: 0");
  EXPECT_STATUS(dsa_sequence_step(seq, &decode, -2, nullptr, &out1), DSA_STATUS_INVALID_ARGUMENT,
                "start_pos: -2 is negative");
  EXPECT_STATUS(dsa_sequence_step(seq, &decode, 6, nullptr, &out1), DSA_STATUS_INVALID_ARGUMENT, "start_pos: 6");
  EXPECT_STATUS(dsa_sequence_step(seq, &decode, 5, nullptr, &outWrongRows), DSA_STATUS_INVALID_ARGUMENT,
                "output: shape [2, 64], expected [1, 64]");
  EXPECT_STATUS(dsa_sequence_step(seq, &decode, 5, nullptr, &outWrongType), DSA_STATUS_INVALID_ARGUMENT,
                "output: dtype f32");
  EXPECT_EQ(snapshot(seq), before) << "a refused step changed the position or the state";

  // The next good step gives what the twin, which never saw an error, gives.
  Buffer outTwin1(DSA_DTYPE_BF16, {1, 64});
  ASSERT_OK(dsa_sequence_step(seq, &decode, DSA_START_POS_NEXT, nullptr, &out1));
  ASSERT_OK(dsa_sequence_step(twin, &decode, 5, nullptr, &outTwin1));
  EXPECT_EQ(out1.bytes, outTwin1.bytes);
  EXPECT_EQ(snapshot(seq), snapshot(twin));
  EXPECT_NE(snapshot(seq), before);
  // A NULL output runs the step without writing it.
  ASSERT_OK(dsa_sequence_step(seq, &decode, 6, nullptr, nullptr));
  int64_t position = 0;
  ASSERT_OK(dsa_sequence_position(seq, &position));
  EXPECT_EQ(position, 7);
}

TEST_F(CApiTest, ReadStateChecksItsBuffer) {
  dsa_library_t *lib = open(0);
  ASSERT_NE(lib, nullptr);
  dsa_sequence_t *seq = create(lib, functionOf(lib));
  ASSERT_NE(seq, nullptr);
  size_t count = 0;
  ASSERT_OK(dsa_sequence_state_count(seq, &count));
  ASSERT_EQ(count, 1u);
  dsa_state_info_t info;
  ASSERT_OK(dsa_sequence_state_info(seq, 0, &info));
  EXPECT_STREQ(info.name, "state0");
  EXPECT_EQ(info.arg, 2u);
  EXPECT_EQ(info.value.dtype, DSA_DTYPE_BF16);
  EXPECT_EQ(info.value.rank, 2);
  EXPECT_EQ(info.value.shape[0], 8);  // window_size
  EXPECT_EQ(info.value.shape[1], 32); // head_dim
  EXPECT_STATUS(dsa_sequence_state_info(seq, 1, &info), DSA_STATUS_INVALID_ARGUMENT, "index: 1", "1 state tensors");
  Buffer ring(DSA_DTYPE_BF16, {8, 32}), wrong(DSA_DTYPE_BF16, {8, 16}), wrongType(DSA_DTYPE_F32, {8, 32});
  ring.fill(3, 1.0f);
  ASSERT_OK(dsa_sequence_read_state(seq, 0, &ring));
  EXPECT_EQ(ring.bytes, std::vector<uint8_t>(ring.bytes.size(), 0)) << "a new sequence's ring is zeros";
  EXPECT_STATUS(dsa_sequence_read_state(seq, 0, &wrong), DSA_STATUS_INVALID_ARGUMENT,
                "dst: bf16 [8, 16], the state is bf16 [8, 32]");
  EXPECT_STATUS(dsa_sequence_read_state(seq, 0, &wrongType), DSA_STATUS_INVALID_ARGUMENT, "dst: f32");
  EXPECT_STATUS(dsa_sequence_read_state(seq, 1, &ring), DSA_STATUS_INVALID_ARGUMENT, "index: 1");
  EXPECT_STATUS(dsa_sequence_read_state(seq, 0, nullptr), DSA_STATUS_INVALID_ARGUMENT, "dst is NULL");
  // reset() returns to position 0 and the zero ring.
  Buffer prefill = x(3, 4), out(DSA_DTYPE_BF16, {3, 64});
  ASSERT_OK(dsa_sequence_step(seq, &prefill, 0, nullptr, &out));
  ASSERT_OK(dsa_sequence_read_state(seq, 0, &ring));
  EXPECT_NE(ring.bytes, std::vector<uint8_t>(ring.bytes.size(), 0));
  ASSERT_OK(dsa_sequence_reset(seq));
  int64_t position = -1;
  ASSERT_OK(dsa_sequence_position(seq, &position));
  EXPECT_EQ(position, 0);
  ASSERT_OK(dsa_sequence_read_state(seq, 0, &ring));
  EXPECT_EQ(ring.bytes, std::vector<uint8_t>(ring.bytes.size(), 0));
}

TEST_F(CApiTest, MultiTokenDecodeIsTheTokensOneAtATime) {
  // attention-semantics.md section 13: a 3-token step at start_pos 4 is the three decode steps.
  dsa_library_t *lib = open(0);
  ASSERT_NE(lib, nullptr);
  dsa_sequence_t *a = create(lib, functionOf(lib)), *b = create(lib, functionOf(lib));
  ASSERT_TRUE(a && b);
  Buffer prefill = x(4, 5), out4(DSA_DTYPE_BF16, {4, 64});
  ASSERT_OK(dsa_sequence_step(a, &prefill, 0, nullptr, &out4));
  ASSERT_OK(dsa_sequence_step(b, &prefill, 0, nullptr, &out4));
  Buffer three = x(3, 6), out3(DSA_DTYPE_BF16, {3, 64});
  ASSERT_OK(dsa_sequence_step(a, &three, 4, nullptr, &out3));
  std::vector<uint8_t> rows;
  for (int64_t t = 0; t < 3; ++t) {
    Buffer one(DSA_DTYPE_BF16, {1, 64}), out1(DSA_DTYPE_BF16, {1, 64});
    std::memcpy(one.bytes.data(), three.bytes.data() + t * 128, 128);
    ASSERT_OK(dsa_sequence_step(b, &one, DSA_START_POS_NEXT, nullptr, &out1));
    rows.insert(rows.end(), out1.bytes.begin(), out1.bytes.begin() + 128);
  }
  EXPECT_EQ(std::vector<uint8_t>(out3.bytes.begin(), out3.bytes.begin() + 3 * 128), rows);
  EXPECT_EQ(snapshot(a), snapshot(b));
}

TEST_F(CApiTest, CompressedLayerSharedSlotsAndCapacity) {
  dsa_library_t *lib = open(2);
  ASSERT_NE(lib, nullptr);
  const std::string fn = functionOf(lib);
  dsa_function_info_t info;
  ASSERT_OK(dsa_function_info(lib, fn.c_str(), &info));
  EXPECT_EQ(info.max_seq_len, 64);
  EXPECT_EQ(info.num_shared, 4u);
  EXPECT_EQ(info.chunked, 0); // scores against the published index_k slot (the reference quirk): chunks refused
  EXPECT_GE(info.num_state, 3u); // kv_state, score_state, caches
  dsa_sequence_t *seq = create(lib, fn);
  ASSERT_NE(seq, nullptr);
  dsa_slots_t *slots = nullptr;
  ASSERT_OK(dsa_slots_create(lib, fn.c_str(), &slots));
  Buffer prefill = x(62, 7), out62(DSA_DTYPE_BF16, {62, 64});
  EXPECT_STATUS(dsa_sequence_step(seq, &prefill, 0, nullptr, &out62), DSA_STATUS_INVALID_ARGUMENT,
                "shared: the layer reads and publishes 4 shared slots, none given");
  ASSERT_OK(dsa_sequence_step(seq, &prefill, 0, slots, &out62));
  const std::vector<uint8_t> before = snapshot(seq);
  Buffer three = x(3, 8), out3(DSA_DTYPE_BF16, {3, 64});
  EXPECT_STATUS(dsa_sequence_step(seq, &three, 62, slots, &out3), DSA_STATUS_OUT_OF_RANGE,
                "max_seq_len: positions 62 .. 64 exceed the capacity of 64 positions");
  Buffer two = x(2, 9), out2(DSA_DTYPE_BF16, {2, 64});
  EXPECT_STATUS(dsa_sequence_step(seq, &two, 62, slots, &out2), DSA_STATUS_INVALID_ARGUMENT,
                "shared: a step of 2 tokens at start_pos 62 > 0");
  EXPECT_EQ(snapshot(seq), before) << "a refused step changed the position or the state";
  Buffer one = x(1, 10), out1(DSA_DTYPE_BF16, {1, 64});
  ASSERT_OK(dsa_sequence_step(seq, &one, 62, slots, &out1));
  ASSERT_OK(dsa_sequence_step(seq, &one, 63, slots, &out1));
  EXPECT_STATUS(dsa_sequence_step(seq, &one, 64, slots, &out1), DSA_STATUS_OUT_OF_RANGE, "max_seq_len");
  // Slots passed to a layer that takes none are refused too.
  dsa_library_t *window = open(0);
  ASSERT_NE(window, nullptr);
  dsa_sequence_t *l0 = create(window, functionOf(window));
  ASSERT_NE(l0, nullptr);
  EXPECT_STATUS(dsa_sequence_step(l0, &one, 0, slots, &out1), DSA_STATUS_INVALID_ARGUMENT,
                "shared: @attention_L0 takes no shared slots");
  dsa_slots_release(slots);
}

/// The golden's six layers (fixed-pattern weights) as two models, A stepped token by token through every layer,
/// B by chunks through the stack (dsa_stack_*), each layer's output the next layer's input.
class CApiStackTest : public CApiTest {
protected:
  static constexpr int kLayers = 6;
  struct Model {
    std::vector<dsa_sequence_t *> layers;
    std::vector<bool> takesSlots; ///< dsa_function_info_t::num_shared > 0
    dsa_slots_t *slots = nullptr;
  };
  void SetUp() override {
    CApiTest::SetUp();
    for (Model *m : {&a, &b}) {
      for (int l = 0; l < kLayers; ++l) {
        dsa_library_t *lib = open(l);
        ASSERT_NE(lib, nullptr);
        m->layers.push_back(create(lib, functionOf(lib)));
        ASSERT_NE(m->layers.back(), nullptr);
        dsa_function_info_t info;
        ASSERT_OK(dsa_function_info(lib, functionOf(lib).c_str(), &info));
        m->takesSlots.push_back(info.num_shared > 0);
      }
      dsa_library_t *lib2 = open(2);
      ASSERT_OK(dsa_slots_create(lib2, functionOf(lib2).c_str(), &m->slots));
    }
  }
  void TearDown() override {
    dsa_slots_release(a.slots);
    dsa_slots_release(b.slots);
    CApiTest::TearDown();
  }
  /// `rows` tokens at `startPos` through every layer of `m`, one dsa_sequence_step per layer; every layer's output.
  static std::vector<Buffer> stepLayers(Model &m, const Buffer &x, int64_t startPos) {
    std::vector<Buffer> outs;
    Buffer h = x;
    for (size_t l = 0; l < m.layers.size(); ++l) {
      Buffer out(DSA_DTYPE_BF16, h.shape);
      Status st(dsa_sequence_step(m.layers[l], &h, startPos, m.takesSlots[l] ? m.slots : nullptr, &out));
      EXPECT_TRUE(st.ok()) << st.message();
      outs.push_back(out);
      h = out;
    }
    return outs;
  }
  static Buffer rowsOf(const Buffer &x, int64_t first, int64_t count) {
    Buffer r(DSA_DTYPE_BF16, {count, 64});
    std::memcpy(r.bytes.data(), x.bytes.data() + first * 128, static_cast<size_t>(count) * 128);
    return r;
  }
  Model a, b;
};

TEST_F(CApiStackTest, ChunksThroughTheStackEqualTokenByTokenDecode) {
  const Buffer prefill = x(12, 21);
  stepLayers(a, prefill, 0);
  stepLayers(b, prefill, 0);
  // Chunks of 2 at 12, 20 at 14 (cut: the golden's ratio-1 source's keys past start_pos are not written yet
  // layer-major while (start_pos + s) // 2 > start_pos, docs/architecture.md "Chunks through a stack": 10 at 14, then
  // 10 at 24), 3 at 34.
  struct Chunk {
    int64_t startPos, tokens;
    std::vector<std::pair<int64_t, int64_t>> pieces;
  };
  for (const Chunk &c : {Chunk{12, 2, {{0, 2}}}, Chunk{14, 20, {{0, 10}, {10, 10}}}, Chunk{34, 3, {{0, 3}}}}) {
    SCOPED_TRACE("chunk of " + std::to_string(c.tokens) + " at " + std::to_string(c.startPos));
    const Buffer xs = x(c.tokens, static_cast<uint32_t>(c.startPos));
    std::vector<std::vector<uint8_t>> want(kLayers); // A's outputs per layer, token after token
    for (int64_t t = 0; t < c.tokens; ++t) {
      std::vector<Buffer> outs = stepLayers(a, rowsOf(xs, t, 1), c.startPos + t);
      for (int l = 0; l < kLayers; ++l)
        want[l].insert(want[l].end(), outs[l].bytes.begin(), outs[l].bytes.begin() + 128);
    }
    dsa_stack_plan_t *plan = nullptr;
    ASSERT_OK(dsa_stack_plan_create(b.layers.data(), b.layers.size(), 12, c.startPos, c.tokens, &plan));
    size_t count = 0;
    ASSERT_OK(dsa_stack_plan_piece_count(plan, &count));
    std::vector<std::pair<int64_t, int64_t>> pieces;
    std::vector<std::vector<uint8_t>> got(kLayers);
    for (size_t p = 0; p < count; ++p) {
      int64_t first = -1, rows = -1;
      ASSERT_OK(dsa_stack_plan_piece(plan, p, &first, &rows));
      pieces.emplace_back(first, rows);
      ASSERT_OK(dsa_stack_piece_begin(plan, p, b.slots));
      Buffer h = rowsOf(xs, first, rows);
      for (int l = 0; l < kLayers; ++l) {
        Buffer out(DSA_DTYPE_BF16, {rows, 64});
        ASSERT_OK(dsa_stack_piece_step(plan, p, static_cast<size_t>(l), &h, b.slots, &out));
        got[l].insert(got[l].end(), out.bytes.begin(), out.bytes.begin() + rows * 128);
        h = out;
      }
      ASSERT_OK(dsa_stack_piece_finish(plan, p, b.slots));
    }
    dsa_stack_plan_release(plan);
    EXPECT_EQ(pieces, c.pieces);
    for (int l = 0; l < kLayers; ++l) {
      EXPECT_EQ(got[l], want[l]) << "layer " << l << "'s output rows";
      EXPECT_EQ(snapshot(b.layers[l]), snapshot(a.layers[l])) << "layer " << l << "'s position and state";
    }
  }
  // A decode after the chunks reads the slots they left: the same bits.
  const Buffer one = x(1, 99);
  std::vector<Buffer> outA = stepLayers(a, one, 37), outB = stepLayers(b, one, 37);
  for (int l = 0; l < kLayers; ++l)
    EXPECT_EQ(outA[l].bytes, outB[l].bytes) << "layer " << l << " after the chunks";
}

TEST_F(CApiStackTest, PlanErrorsNameTheFieldAndChangeNothing) {
  const Buffer prefill = x(12, 21);
  stepLayers(b, prefill, 0);
  dsa_stack_plan_t *plan = nullptr;
  std::vector<dsa_sequence_t *> twice = b.layers;
  twice[3] = twice[2];
  std::vector<dsa_sequence_t *> withNull = b.layers;
  withNull[1] = nullptr;
  EXPECT_STATUS(dsa_stack_plan_create(nullptr, 6, 12, 12, 2, &plan), DSA_STATUS_INVALID_ARGUMENT, "layers is NULL");
  EXPECT_STATUS(dsa_stack_plan_create(b.layers.data(), 6, 12, 12, 2, nullptr), DSA_STATUS_INVALID_ARGUMENT,
                "out_plan is NULL");
  EXPECT_STATUS(dsa_stack_plan_create(b.layers.data(), 0, 12, 12, 2, &plan), DSA_STATUS_INVALID_ARGUMENT,
                "num_layers: 0");
  EXPECT_STATUS(dsa_stack_plan_create(withNull.data(), 6, 12, 12, 2, &plan), DSA_STATUS_INVALID_ARGUMENT,
                "layers[1] is NULL");
  EXPECT_STATUS(dsa_stack_plan_create(twice.data(), 6, 12, 12, 2, &plan), DSA_STATUS_INVALID_ARGUMENT,
                "layers[3]: the sequence is given twice");
  EXPECT_STATUS(dsa_stack_plan_create(b.layers.data(), 6, 12, 13, 2, &plan), DSA_STATUS_INVALID_ARGUMENT,
                "dsa_stack_plan_create: layers[0]: @attention_L0 is at position 12, the chunk starts at start_pos 13");
  EXPECT_STATUS(dsa_stack_plan_create(b.layers.data(), 6, 12, 12, 0, &plan), DSA_STATUS_INVALID_ARGUMENT,
                "tokens: 0");
  EXPECT_STATUS(dsa_stack_plan_create(b.layers.data(), 6, 13, 12, 2, &plan), DSA_STATUS_INVALID_ARGUMENT,
                "prefill_tokens: 13 is outside 1 .. start_pos (12)");
  EXPECT_STATUS(dsa_stack_plan_create(b.layers.data(), 6, 12, 12, 53, &plan), DSA_STATUS_OUT_OF_RANGE,
                "layers[2]: max_seq_len: @attention_L2 holds 64 positions, the chunk of 53 tokens at start_pos 12 "
                "needs 12 + 53");
  // A layer reading the candidates with no candidate source before it: layer 5 without layer 4 (the source).
  std::vector<dsa_sequence_t *> noSource = {b.layers[0], b.layers[1], b.layers[2], b.layers[3], b.layers[5]};
  EXPECT_STATUS(dsa_stack_plan_create(noSource.data(), noSource.size(), 12, 12, 2, &plan),
                DSA_STATUS_FAILED_PRECONDITION, "candidates");
  EXPECT_EQ(plan, nullptr) << "a refused create wrote out_plan";

  ASSERT_OK(dsa_stack_plan_create(b.layers.data(), b.layers.size(), 12, 12, 20, &plan));
  size_t count = 0;
  ASSERT_OK(dsa_stack_plan_piece_count(plan, &count));
  ASSERT_EQ(count, 2u);
  EXPECT_STATUS(dsa_stack_plan_piece(plan, 2, nullptr, nullptr), DSA_STATUS_INVALID_ARGUMENT,
                "piece: 2 is past the plan's 2 pieces");
  std::vector<std::vector<uint8_t>> before;
  for (dsa_sequence_t *seq : b.layers)
    before.push_back(snapshot(seq));
  auto unchanged = [&](const char *after) {
    for (size_t l = 0; l < b.layers.size(); ++l)
      EXPECT_EQ(snapshot(b.layers[l]), before[l]) << "layer " << l << " changed after " << after;
  };
  const Buffer xs = x(20, 5);
  Buffer h = rowsOf(xs, 0, 10), out(DSA_DTYPE_BF16, {10, 64});
  EXPECT_STATUS(dsa_stack_piece_step(plan, 0, 0, &h, b.slots, &out), DSA_STATUS_INVALID_ARGUMENT,
                "piece: 0 is not begun (dsa_stack_piece_begin starts a piece; none is)");
  EXPECT_STATUS(dsa_stack_piece_begin(plan, 1, b.slots), DSA_STATUS_INVALID_ARGUMENT,
                "piece: 1 is not the next piece (piece 0 is next)");
  EXPECT_STATUS(dsa_stack_piece_begin(plan, 0, nullptr), DSA_STATUS_INVALID_ARGUMENT,
                "shared: NULL, and the stack's layers take the shared slots");
  ASSERT_OK(dsa_stack_piece_begin(plan, 0, b.slots));
  EXPECT_STATUS(dsa_stack_piece_begin(plan, 0, b.slots), DSA_STATUS_INVALID_ARGUMENT,
                "piece 0 is begun and not finished");
  EXPECT_STATUS(dsa_stack_piece_step(plan, 0, 1, &h, b.slots, &out), DSA_STATUS_INVALID_ARGUMENT,
                "layer: 1 is not the next layer of piece 0 (layer 0 is)");
  EXPECT_STATUS(dsa_stack_piece_step(plan, 0, 6, &h, b.slots, &out), DSA_STATUS_INVALID_ARGUMENT,
                "layer: 6 is past the stack's 6 layers");
  EXPECT_STATUS(dsa_stack_piece_step(plan, 0, 0, &h, a.slots, &out), DSA_STATUS_INVALID_ARGUMENT,
                "shared: not the slot set piece 0 began with");
  const Buffer eleven = rowsOf(xs, 0, 11);
  EXPECT_STATUS(dsa_stack_piece_step(plan, 0, 0, &eleven, b.slots, &out), DSA_STATUS_INVALID_ARGUMENT,
                "x: shape [11, 64], piece 0 has 10 token rows");
  Buffer badOut(DSA_DTYPE_BF16, {9, 64});
  EXPECT_STATUS(dsa_stack_piece_step(plan, 0, 0, &h, b.slots, &badOut), DSA_STATUS_INVALID_ARGUMENT,
                "layer 0: output: shape [9, 64], expected [10, 64]");
  EXPECT_STATUS(dsa_stack_piece_finish(plan, 0, b.slots), DSA_STATUS_INVALID_ARGUMENT,
                "layer: 0 of piece 0 has not run");
  unchanged("the refused calls");
  // The piece runs after the refusals, then finish; the plan then has run piece 0 only.
  for (size_t l = 0; l < 6; ++l) {
    ASSERT_OK(dsa_stack_piece_step(plan, 0, l, &h, b.slots, &out));
    h = out;
  }
  EXPECT_STATUS(dsa_stack_piece_step(plan, 0, 0, &h, b.slots, &out), DSA_STATUS_INVALID_ARGUMENT,
                "(layer every layer has run)");
  ASSERT_OK(dsa_stack_piece_finish(plan, 0, b.slots));
  EXPECT_STATUS(dsa_stack_piece_finish(plan, 0, b.slots), DSA_STATUS_INVALID_ARGUMENT, "piece: 0 is not begun");
  EXPECT_STATUS(dsa_stack_piece_begin(plan, 0, b.slots), DSA_STATUS_INVALID_ARGUMENT,
                "piece: 0 is not the next piece (piece 1 is next)");
  dsa_stack_plan_release(plan);
  // A stack without slots takes none.
  std::vector<dsa_sequence_t *> windows = {b.layers[0], b.layers[1]};
  ASSERT_OK(dsa_stack_plan_create(windows.data(), windows.size(), 12, 22, 3, &plan));
  EXPECT_STATUS(dsa_stack_piece_begin(plan, 0, b.slots), DSA_STATUS_INVALID_ARGUMENT,
                "shared: no layer of the stack takes shared slots (pass NULL)");
  ASSERT_OK(dsa_stack_piece_begin(plan, 0, nullptr));
  dsa_stack_plan_release(plan);
  // dsa_sequence_step still refuses the chunk on a layer with slots (the plan is the way through).
  EXPECT_STATUS(dsa_sequence_step(b.layers[2], &h, DSA_START_POS_NEXT, b.slots, &out), DSA_STATUS_INVALID_ARGUMENT,
                "shared: a step of 10 tokens at start_pos 22 > 0");
  dsa_stack_plan_release(nullptr);
}

TEST_F(CApiTest, AgreesWithTheCppSequence) {
  // The C API is a layer over the C++ runtime: the same library, weights and tokens through runtime::Sequence give
  // the same output bits and state, on a compressed layer with shared slots, over a prefill and three decodes.
  dsa_library_t *lib = open(2);
  ASSERT_NE(lib, nullptr);
  const std::string fn = functionOf(lib);
  std::vector<size_t> args;
  std::vector<Buffer> bufs;
  weightsOf(lib, fn, args, bufs);
  std::vector<dsa_buffer_t> descs;
  for (const Buffer &b : bufs)
    descs.push_back(b.b);
  dsa_sequence_t *seq = nullptr;
  ASSERT_OK(dsa_sequence_create(lib, fn.c_str(), descs.size(), args.data(), descs.data(), &seq));
  sequences.push_back(seq);
  dsa_slots_t *slots = nullptr;
  ASSERT_OK(dsa_slots_create(lib, fn.c_str(), &slots));

  auto cpp = dsa::cpu::CPUStepLibrary::open(path(2));
  ASSERT_TRUE(cpp.ok()) << cpp.error();
  std::shared_ptr<const dsa::cpu::CPUStepLibrary> cppLib = cpp.take();
  const dsa::runtime::FunctionSignature &sig = *cppLib->signature(fn);
  std::map<size_t, dsa::runtime::HostValue> fixed;
  for (size_t i = 0; i < args.size(); ++i) {
    dsa::ElementType type = bufs[i].b.dtype == DSA_DTYPE_BF16 ? dsa::ElementType::BF16 : dsa::ElementType::F32;
    auto view = dsa::runtime::HostBuffer::adopt(type, bufs[i].shape, nullptr, bufs[i].bytes.data());
    fixed.emplace(args[i], dsa::runtime::HostBuffer::copyOf(*view));
  }
  auto cppSeq = dsa::runtime::Sequence::start(
      sig,
      dsa::runtime::Sequence::ValueRunner([cppLib, fn](const std::vector<dsa::runtime::HostValue> &a,
                                                       std::vector<dsa::runtime::NamedTensor> *p) {
        return cppLib->runValues(fn, a, p);
      }),
      fixed);
  ASSERT_TRUE(cppSeq.ok()) << cppSeq.error();
  auto cppSlots = dsa::runtime::Sequence::initialSlots(sig);
  ASSERT_TRUE(cppSlots.ok());
  int64_t pos = 0;
  for (int64_t rows : {6, 1, 1, 1}) {
    Buffer in = x(rows, static_cast<uint32_t>(20 + pos)), out(DSA_DTYPE_BF16, {rows, 64});
    ASSERT_OK(dsa_sequence_step(seq, &in, pos, slots, &out));
    auto xv = dsa::runtime::HostBuffer::adopt(dsa::ElementType::BF16, in.shape, nullptr, in.bytes.data());
    auto r = cppSeq->run(xv->toTensor(), pos, &*cppSlots);
    ASSERT_TRUE(r.ok()) << r.error();
    auto want = dsa::runtime::HostBuffer::fromTensor((*r)[static_cast<size_t>(sig.step.output)]);
    EXPECT_EQ(std::memcmp(want->data(), out.bytes.data(), static_cast<size_t>(rows) * 128), 0) << "step at " << pos;
    pos += rows;
  }
  size_t count = 0;
  ASSERT_OK(dsa_sequence_state_count(seq, &count));
  ASSERT_EQ(count, sig.state.size());
  std::vector<size_t> stateArgs;
  for (const auto &b : sig.state)
    stateArgs.push_back(static_cast<size_t>(b.arg));
  std::sort(stateArgs.begin(), stateArgs.end());
  for (size_t k = 0; k < count; ++k) {
    dsa_state_info_t info;
    ASSERT_OK(dsa_sequence_state_info(seq, k, &info));
    EXPECT_EQ(info.arg, stateArgs[k]);
    Buffer got(info.value.dtype, std::vector<int64_t>(info.value.shape, info.value.shape + info.value.rank));
    ASSERT_OK(dsa_sequence_read_state(seq, k, &got));
    const dsa::runtime::HostValue *v = cppSeq->state(info.arg);
    ASSERT_NE(v, nullptr);
    auto want = v->buffer() ? v->sharedBuffer() : dsa::runtime::HostBuffer::fromTensor(*v->tensor());
    EXPECT_EQ(std::memcmp(want->data(), got.bytes.data(), got.b.size_bytes), 0) << info.name;
  }
  dsa_slots_release(slots);
}

//===- Batched decode (dsa_batch_*) ------------------------------------------------------------------------------===//

/// The fixture's batch libraries, or $DSA_CAPI_BATCH_LIBRARIES.
const std::string kBatchLibraries = std::getenv("DSA_CAPI_BATCH_LIBRARIES") ? std::getenv("DSA_CAPI_BATCH_LIBRARIES")
                                                                            : DSA_CAPI_BATCH_LIBRARIES_DIR;

class CApiBatchTest : public CApiTest {
protected:
  void SetUp() override {
    batchedLib = openBatchLibrary("batched-window-layer");
    oneLib = openBatchLibrary("window-layer");
    ASSERT_TRUE(batchedLib && oneLib);
    weightsOf(batchedLib, "batched", weightArgs, weightBufs);
    for (const Buffer &b : weightBufs)
      weightDescs.push_back(b.b);
  }
  /// LIBS-batch/<name>.json, opened.
  dsa_library_t *openBatchLibrary(const char *name) { return openFile(kBatchLibraries + "/" + name + ".json"); }
  void TearDown() override {
    for (dsa_batch_t *b : batches)
      dsa_batch_release(b);
    CApiTest::TearDown();
  }
  dsa_batch_t *create() {
    dsa_batch_t *b = nullptr;
    Status st(dsa_batch_create(batchedLib, "batched", weightDescs.size(), weightArgs.data(), weightDescs.data(), &b));
    EXPECT_TRUE(st.ok()) << st.message();
    if (b)
      batches.push_back(b);
    return b;
  }
  static Buffer ring(uint32_t seed) {
    Buffer r(DSA_DTYPE_BF16, {8, 32});
    r.fill(seed, 1.0f);
    return r;
  }
  static Buffer xs(int64_t b, uint32_t seed) {
    Buffer x(DSA_DTYPE_BF16, {b, 1, 64});
    x.fill(seed, 2.0f);
    return x;
  }
  /// Members, positions and rings.
  static std::vector<int64_t> snapshot(dsa_batch_t *batch) {
    std::vector<int64_t> out;
    size_t n = 0;
    Status c(dsa_batch_member_count(batch, &n));
    EXPECT_TRUE(c.ok()) << c.message();
    for (size_t i = 0; i < n; ++i) {
      dsa_batch_id_t id = -1;
      int64_t p = -1;
      Status m(dsa_batch_member(batch, i, &id));
      Status q(dsa_batch_position(batch, id, &p));
      Buffer r(DSA_DTYPE_BF16, {8, 32});
      Status rr(dsa_batch_read_ring(batch, id, &r));
      EXPECT_TRUE(m.ok() && q.ok() && rr.ok()) << m.message() << q.message() << rr.message();
      out.push_back(id);
      out.push_back(p);
      for (size_t k = 0; k < r.b.size_bytes; k += 2) {
        uint16_t h;
        std::memcpy(&h, r.bytes.data() + k, 2);
        out.push_back(h);
      }
    }
    return out;
  }

  dsa_library_t *batchedLib = nullptr, *oneLib = nullptr;
  std::vector<size_t> weightArgs;
  std::vector<Buffer> weightBufs;
  std::vector<dsa_buffer_t> weightDescs;
  std::vector<dsa_batch_t *> batches;
};

TEST_F(CApiBatchTest, CreateErrors) {
  dsa_batch_t *b = nullptr;
  const size_t n = weightDescs.size();
  EXPECT_STATUS(dsa_batch_create(nullptr, "batched", n, weightArgs.data(), weightDescs.data(), &b),
                DSA_STATUS_INVALID_ARGUMENT, "dsa_batch_create: library is NULL");
  EXPECT_STATUS(dsa_batch_create(batchedLib, "batched", n, weightArgs.data(), weightDescs.data(), nullptr),
                DSA_STATUS_INVALID_ARGUMENT, "out_batch is NULL");
  EXPECT_STATUS(dsa_batch_create(batchedLib, "nope", n, weightArgs.data(), weightDescs.data(), &b),
                DSA_STATUS_NOT_FOUND, "function: no function @nope", "@batched");
  EXPECT_STATUS(dsa_batch_create(batchedLib, nullptr, n, weightArgs.data(), weightDescs.data(), &b),
                DSA_STATUS_INVALID_ARGUMENT, "function is NULL");
  // A batch-1 layer is not a batched step function.
  EXPECT_STATUS(dsa_batch_create(oneLib, "layer0", n, weightArgs.data(), weightDescs.data(), &b),
                DSA_STATUS_FAILED_PRECONDITION, "start_pos: ", "tensor<B x i64>");
  // A batched compressed layer (state beyond the ring, shared slots) is C++-only (runtime::Batch, runtime::stackSlots):
  // refused before its weights are looked at.
  dsa_library_t *compressedLib = openBatchLibrary("batched-compressed-layer");
  ASSERT_TRUE(compressedLib);
  EXPECT_STATUS(dsa_batch_create(compressedLib, "batched_compressed", 0, nullptr, nullptr, &b),
                DSA_STATUS_FAILED_PRECONDITION, "@batched_compressed: a batched compressed layer",
                "the C API batches window-only layers");
  EXPECT_STATUS(dsa_batch_create(batchedLib, "batched", n - 1, weightArgs.data(), weightDescs.data(), &b),
                DSA_STATUS_INVALID_ARGUMENT, "weights: argument #10", "is a weight and was not given");
  EXPECT_STATUS(dsa_batch_create(batchedLib, "batched", n, nullptr, weightDescs.data(), &b),
                DSA_STATUS_INVALID_ARGUMENT, "weight_args is NULL");
  std::vector<size_t> args = weightArgs;
  args[0] = 2; // the ring
  EXPECT_STATUS(dsa_batch_create(batchedLib, "batched", n, args.data(), weightDescs.data(), &b),
                DSA_STATUS_INVALID_ARGUMENT, "weight_args[0]: argument #2 is not a weight");
  args[0] = 99;
  EXPECT_STATUS(dsa_batch_create(batchedLib, "batched", n, args.data(), weightDescs.data(), &b),
                DSA_STATUS_INVALID_ARGUMENT, "weight_args[0]: argument #99 does not exist");
  args = weightArgs;
  args[1] = args[0];
  EXPECT_STATUS(dsa_batch_create(batchedLib, "batched", n, args.data(), weightDescs.data(), &b),
                DSA_STATUS_INVALID_ARGUMENT, "is given twice");
  std::vector<dsa_buffer_t> descs = weightDescs;
  const int64_t wrong[1] = {5};
  descs[0].shape = wrong; // sink tensor<4xf32>
  EXPECT_STATUS(dsa_batch_create(batchedLib, "batched", n, weightArgs.data(), descs.data(), &b),
                DSA_STATUS_INVALID_ARGUMENT, "weights[0] (argument #3)");
  EXPECT_EQ(b, nullptr) << "no output on failure";
}

TEST_F(CApiBatchTest, ErrorsNameTheFieldAndChangeNothing) {
  dsa_batch_t *batch = create(), *twin = create();
  ASSERT_TRUE(batch && twin);
  dsa_batch_id_t a = -1, b = -1, id = -1;
  const Buffer r0 = ring(1), r1 = ring(2);
  for (dsa_batch_t *t : {batch, twin}) {
    ASSERT_OK(dsa_batch_join(t, &r0, 5, &a));
    ASSERT_OK(dsa_batch_join(t, &r1, 20, &b));
  }
  const Buffer x2 = xs(2, 3);
  Buffer out(DSA_DTYPE_BF16, {2, 1, 64});
  ASSERT_OK(dsa_batch_step(batch, &x2, &out));
  ASSERT_OK(dsa_batch_step(twin, &x2, nullptr));
  const std::vector<int64_t> before = snapshot(batch);
  ASSERT_EQ(before, snapshot(twin));

  // join
  Buffer badRing(DSA_DTYPE_BF16, {8, 31});
  EXPECT_STATUS(dsa_batch_join(batch, &badRing, 0, &id), DSA_STATUS_INVALID_ARGUMENT, "dsa_batch_join: ", "ring: ");
  Buffer f32Ring(DSA_DTYPE_F32, {8, 32});
  EXPECT_STATUS(dsa_batch_join(batch, &f32Ring, 0, &id), DSA_STATUS_INVALID_ARGUMENT, "ring: ");
  EXPECT_STATUS(dsa_batch_join(batch, &r0, -1, &id), DSA_STATUS_INVALID_ARGUMENT, "position: ");
  EXPECT_STATUS(dsa_batch_join(batch, nullptr, 0, &id), DSA_STATUS_INVALID_ARGUMENT, "ring is NULL");
  EXPECT_STATUS(dsa_batch_join(batch, &r0, 0, nullptr), DSA_STATUS_INVALID_ARGUMENT, "out_id is NULL");
  EXPECT_STATUS(dsa_batch_join(nullptr, &r0, 0, &id), DSA_STATUS_INVALID_ARGUMENT, "batch is NULL");
  Buffer shortRing = ring(4);
  shortRing.b.size_bytes -= 2;
  EXPECT_STATUS(dsa_batch_join(batch, &shortRing, 0, &id), DSA_STATUS_INVALID_ARGUMENT, "ring: size_bytes");
  EXPECT_EQ(id, -1) << "no output on failure";
  // leave
  EXPECT_STATUS(dsa_batch_leave(batch, 99, nullptr, nullptr), DSA_STATUS_INVALID_ARGUMENT,
                "dsa_batch_leave: ", "sequence 99: not a member");
  int64_t position = -1;
  EXPECT_STATUS(dsa_batch_leave(batch, a, &badRing, &position), DSA_STATUS_INVALID_ARGUMENT, "ring: bf16 [8, 31]",
                "the ring is bf16 [8, 32]");
  EXPECT_EQ(position, -1);
  EXPECT_STATUS(dsa_batch_leave(nullptr, a, nullptr, nullptr), DSA_STATUS_INVALID_ARGUMENT, "batch is NULL");
  // step
  const Buffer x3 = xs(3, 5), x1 = xs(1, 5);
  EXPECT_STATUS(dsa_batch_step(batch, &x3, nullptr), DSA_STATUS_INVALID_ARGUMENT, "dsa_batch_step: ", "x: ");
  EXPECT_STATUS(dsa_batch_step(batch, &x1, nullptr), DSA_STATUS_INVALID_ARGUMENT, "x: ");
  Buffer xRank2(DSA_DTYPE_BF16, {2, 64});
  EXPECT_STATUS(dsa_batch_step(batch, &xRank2, nullptr), DSA_STATUS_INVALID_ARGUMENT, "x: ");
  Buffer xTwoTokens(DSA_DTYPE_BF16, {2, 2, 64});
  EXPECT_STATUS(dsa_batch_step(batch, &xTwoTokens, nullptr), DSA_STATUS_INVALID_ARGUMENT, "x: ");
  Buffer xF32(DSA_DTYPE_F32, {2, 1, 64});
  EXPECT_STATUS(dsa_batch_step(batch, &xF32, nullptr), DSA_STATUS_INVALID_ARGUMENT, "x: ");
  EXPECT_STATUS(dsa_batch_step(batch, nullptr, nullptr), DSA_STATUS_INVALID_ARGUMENT, "x is NULL");
  Buffer badOut(DSA_DTYPE_BF16, {3, 1, 64});
  EXPECT_STATUS(dsa_batch_step(batch, &x2, &badOut), DSA_STATUS_INVALID_ARGUMENT, "output: shape [3, 1, 64]",
                "expected [2, 1, 64]");
  Buffer f32Out(DSA_DTYPE_F32, {2, 1, 64});
  EXPECT_STATUS(dsa_batch_step(batch, &x2, &f32Out), DSA_STATUS_INVALID_ARGUMENT, "output: dtype f32");
  EXPECT_STATUS(dsa_batch_step(nullptr, &x2, nullptr), DSA_STATUS_INVALID_ARGUMENT, "batch is NULL");
  // queries
  size_t count = 0;
  EXPECT_STATUS(dsa_batch_member(batch, 2, &id), DSA_STATUS_INVALID_ARGUMENT, "index: 2 is past the batch's 2 members");
  EXPECT_STATUS(dsa_batch_member(batch, 0, nullptr), DSA_STATUS_INVALID_ARGUMENT, "out_id is NULL");
  EXPECT_STATUS(dsa_batch_member_count(batch, nullptr), DSA_STATUS_INVALID_ARGUMENT, "out_count is NULL");
  EXPECT_STATUS(dsa_batch_member_count(nullptr, &count), DSA_STATUS_INVALID_ARGUMENT, "batch is NULL");
  EXPECT_STATUS(dsa_batch_position(batch, 99, &position), DSA_STATUS_INVALID_ARGUMENT, "sequence 99: not a member");
  EXPECT_STATUS(dsa_batch_position(batch, a, nullptr), DSA_STATUS_INVALID_ARGUMENT, "out_position is NULL");
  Buffer r(DSA_DTYPE_BF16, {8, 32});
  EXPECT_STATUS(dsa_batch_read_ring(batch, 99, &r), DSA_STATUS_INVALID_ARGUMENT, "sequence 99");
  EXPECT_STATUS(dsa_batch_read_ring(batch, a, &badRing), DSA_STATUS_INVALID_ARGUMENT, "dst: bf16 [8, 31]");
  EXPECT_STATUS(dsa_batch_read_ring(batch, a, nullptr), DSA_STATUS_INVALID_ARGUMENT, "dst is NULL");

  EXPECT_EQ(snapshot(batch), before) << "a failed call changes nothing";
  // And it goes on from where it was: the same as the twin that saw no error.
  const Buffer x = xs(2, 6);
  Buffer got(DSA_DTYPE_BF16, {2, 1, 64}), want(DSA_DTYPE_BF16, {2, 1, 64});
  ASSERT_OK(dsa_batch_step(batch, &x, &got));
  ASSERT_OK(dsa_batch_step(twin, &x, &want));
  EXPECT_EQ(got.bytes, want.bytes);
  EXPECT_EQ(snapshot(batch), snapshot(twin));
  // Leaving twice, and a step of an empty batch.
  ASSERT_OK(dsa_batch_leave(batch, a, nullptr, nullptr));
  EXPECT_STATUS(dsa_batch_leave(batch, a, nullptr, nullptr), DSA_STATUS_INVALID_ARGUMENT,
                "sequence " + std::to_string(a) + ": not a member");
  ASSERT_OK(dsa_batch_leave(batch, b, nullptr, &position));
  EXPECT_EQ(position, 22);
  ASSERT_OK(dsa_batch_member_count(batch, &count));
  EXPECT_EQ(count, 0u);
  Buffer x0(DSA_DTYPE_BF16, {0, 1, 64});
  EXPECT_STATUS(dsa_batch_step(batch, &x0, nullptr), DSA_STATUS_INVALID_ARGUMENT, "x: ");
}

TEST_F(CApiBatchTest, PositionOverflowIsAStartPosError) {
  dsa_batch_t *batch = create();
  ASSERT_TRUE(batch);
  const Buffer r = ring(7);
  dsa_batch_id_t id = -1;
  ASSERT_OK(dsa_batch_join(batch, &r, std::numeric_limits<int64_t>::max(), &id));
  const Buffer x = xs(1, 8);
  EXPECT_STATUS(dsa_batch_step(batch, &x, nullptr), DSA_STATUS_INVALID_ARGUMENT, "start_pos: ");
  int64_t p = 0;
  ASSERT_OK(dsa_batch_position(batch, id, &p));
  EXPECT_EQ(p, std::numeric_limits<int64_t>::max());
}

TEST(CApiStatus, NullIsOkAndReleasesAcceptNull) {
  EXPECT_EQ(dsa_status_code(nullptr), DSA_STATUS_OK);
  EXPECT_STREQ(dsa_status_message(nullptr), "");
  EXPECT_STREQ(dsa_status_code_name(DSA_STATUS_OUT_OF_RANGE), "OUT_OF_RANGE");
  dsa_status_free(nullptr);
  dsa_library_release(nullptr);
  dsa_sequence_release(nullptr);
  dsa_slots_release(nullptr);
  dsa_batch_release(nullptr);
  EXPECT_EQ(dsa_dtype_size(DSA_DTYPE_BF16), 2u);
  EXPECT_EQ(dsa_dtype_size(DSA_DTYPE_INDEX), 8u);
  EXPECT_EQ(dsa_dtype_size(static_cast<dsa_dtype_t>(0)), 0u);
  EXPECT_STREQ(dsa_dtype_name(DSA_DTYPE_I1), "i1");
  int64_t p = 0;
  Status st(dsa_sequence_position(nullptr, &p));
  EXPECT_EQ(st.code(), DSA_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(st.message(), "dsa_sequence_position: sequence is NULL");
}

} // namespace
