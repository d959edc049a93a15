//===- NpyTest.cpp - dsa::parseNpy / encodeNpy (core/include/dsa/Core/Npy.h) --------===//
//
// Round trips of every element type; files written by numpy (and ml_dtypes for bf16) at test time read back with
// the values numpy was given, and this writer's bytes equal numpy's for the same arrays; numpy reads this writer's
// files back (bf16 through .view(ml_dtypes.bfloat16)); every malformed file is an error naming the file and field.
// The numpy parts skip with a message when python3, numpy or ml_dtypes is missing (scripts/install-deps.sh installs
// them).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Core/Npy.h"

#include "dsa/Numerics/BF16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using dsa::ElementType;
using dsa::Tensor;

namespace {

/// A .npy file by hand: magic, version, header length (2 bytes for 1.0, 4 for 2.0/3.0), `dict` as the header
/// (padded with spaces and '\n' to a multiple of 64 unless `raw`), then `data`.
std::string npyBytes(const std::string &dict, const std::string &data, int major = 1, bool raw = false) {
  const size_t width = major == 1 ? 2 : 4;
  std::string header = dict;
  if (!raw) {
    while ((8 + width + header.size() + 1) % 64 != 0)
      header += ' ';
    header += '\n';
  }
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < width; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}

std::string expectError(const std::string &bytes, const std::string &needle) {
  dsa::Result<Tensor> r = dsa::parseNpy(bytes, "in.npy");
  EXPECT_FALSE(r.ok()) << "parsed a malformed file; expected an error containing: " << needle;
  if (r.ok())
    return "";
  EXPECT_EQ(r.error().rfind("in.npy: ", 0), 0u) << "the error does not start with the source: " << r.error();
  EXPECT_NE(r.error().find(needle), std::string::npos) << "error: " << r.error() << "\nexpected: " << needle;
  return r.error();
}

std::string f32Bytes(std::vector<float> values) {
  return std::string(reinterpret_cast<const char *>(values.data()), values.size() * 4);
}

class TempDir {
public:
  TempDir() {
    char pattern[] = "/tmp/dsa-npy-test.XXXXXX";
    const char *made = mkdtemp(pattern);
    path_ = made ? made : "";
  }
  ~TempDir() {
    if (!path_.empty())
      std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Runs `script` with python3 (DSA_PYTHON3, else python3 on PATH); returns its exit status (-1: could not run).
int runPython(const std::string &dir, const std::string &script) {
  const std::string file = dir + "/script.py";
  std::ofstream(file) << script;
#ifdef DSA_PYTHON3
  const std::string python = DSA_PYTHON3;
#else
  const std::string python = "python3";
#endif
  const int status = std::system(("'" + python + "' '" + file + "'").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Runs `script` after importing `modules`; false with `why` set when python3 or a module is missing (the caller
/// skips), else the script's exit status is `status`.
bool runWithModules(const std::string &dir, const std::string &modules, const std::string &script, int &status,
                    std::string &why) {
  status = runPython(dir, "import sys\ntry:\n  import " + modules + "\nexcept ImportError:\n  sys.exit(77)\n" + script);
  if (status == 77 || status == 127 || status < 0) {
    why = "python3 cannot import " + modules + " (scripts/install-deps.sh installs them)";
    return false;
  }
  return true;
}

} // namespace

TEST(Npy, RoundTripsEveryElementType) {
  const std::vector<Tensor> tensors = {
      Tensor::fromFloats(ElementType::BF16, {2, 3}, {1.0f, -2.5f, 3.140625f, 0.0f, -0.0f, 1e30f}),
      Tensor::fromFloats(ElementType::F32, {4}, {1.0f, 0.1f, -1e-40f, std::numeric_limits<float>::infinity()}),
      Tensor::fromInts(ElementType::I32, {2, 2}, {-1, 2147483647, -2147483648LL, 0}),
      Tensor::fromInts(ElementType::I64, {3}, {std::numeric_limits<int64_t>::min(), 0, 12345678901234LL}),
      Tensor::fromInts(ElementType::I1, {1, 3}, {1, 0, 1}),
      Tensor::scalarI64(-7),
      Tensor::fromFloats(ElementType::BF16, {0, 5}, {}),
  };
  for (const Tensor &t : tensors) {
    dsa::Result<std::string> bytes = dsa::encodeNpy(t);
    ASSERT_TRUE(bytes.ok()) << bytes.error();
    EXPECT_EQ(bytes->find("\x93NUMPY\x01", 0), 0u);
    // The data starts at a multiple of 64.
    const size_t headerLength = static_cast<unsigned char>((*bytes)[8]) | static_cast<unsigned char>((*bytes)[9]) << 8;
    EXPECT_EQ((10 + headerLength) % 64, 0u) << t.typeString();
    dsa::Result<Tensor> back = dsa::parseNpy(*bytes, "roundtrip.npy");
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_EQ(back->elementType(), t.elementType());
    EXPECT_EQ(back->shape(), t.shape());
    if (t.isFloat()) {
      ASSERT_EQ(back->floatVector().size(), t.floatVector().size());
      // Bit for bit (memcmp: -0.0 and NaN payloads count); an empty tensor has no data pointer to compare.
      EXPECT_TRUE(t.floatVector().empty() ||
                  std::memcmp(back->floats(), t.floats(), t.floatVector().size() * 4) == 0)
          << t.typeString();
    } else {
      EXPECT_EQ(back->intVector(), t.intVector()) << t.typeString();
    }
  }
}

TEST(Npy, IndexIsWrittenAsI64) {
  dsa::Result<std::string> bytes = dsa::encodeNpy(Tensor::fromInts(ElementType::Index, {2}, {3, -4}));
  ASSERT_TRUE(bytes.ok());
  EXPECT_NE(bytes->find("'descr': '<i8'"), std::string::npos);
  dsa::Result<Tensor> back = dsa::parseNpy(*bytes, "index.npy");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->elementType(), ElementType::I64);
  EXPECT_EQ(back->intVector(), (std::vector<int64_t>{3, -4}));
}

TEST(Npy, BF16KeepsBitPatternsNaNIncluded) {
  // 0x7FC1: a quiet NaN with a payload bit; 0x0001: the smallest subnormal; 0xFF80: -inf.
  const std::string data("\xC1\x7F\x01\x00\x80\xFF", 6);
  dsa::Result<Tensor> t = dsa::parseNpy(npyBytes("{'descr': '<V2', 'fortran_order': False, 'shape': (3,), }", data),
                                        "bf16.npy");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->elementType(), ElementType::BF16);
  EXPECT_TRUE(std::isnan(t->floats()[0]));
  EXPECT_EQ(t->floats()[1], dsa::numerics::bf16BitsToF32(1));
  EXPECT_EQ(t->floats()[2], -std::numeric_limits<float>::infinity());
  dsa::Result<std::string> again = dsa::encodeNpy(*t);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->substr(again->size() - 6), data);
}

TEST(Npy, ReadsVersions2And3AndUnpaddedHeaders) {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  for (int major : {2, 3}) {
    dsa::Result<Tensor> t = dsa::parseNpy(npyBytes(dict, f32Bytes({1.5f, -2.0f}), major), "v.npy");
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->floatVector(), (std::vector<float>{1.5f, -2.0f}));
  }
  // Keys in another order, double quotes, no trailing comma, no padding.
  dsa::Result<Tensor> t =
      dsa::parseNpy(npyBytes("{\"shape\": (1, 2), \"fortran_order\": False, \"descr\": \"<f4\"}",
                             f32Bytes({1.0f, 2.0f}), 1, /*raw=*/true),
                    "raw.npy");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{1, 2}));
}

TEST(Npy, MalformedFilesNameTheFileAndField) {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string two = f32Bytes({1.0f, 2.0f});
  expectError("", "not a .npy file (the magic string");
  expectError("PK\x03\x04 a zip file, not npy", "not a .npy file");
  std::string v4 = npyBytes(ok, two);
  v4[6] = 4;
  expectError(v4, ".npy version 4.0 is not supported");
  expectError(std::string("\x93NUMPY\x02\x00\x10", 9), "truncated: the header length field needs 12 bytes");
  std::string longHeader = npyBytes(ok, two);
  longHeader[8] = '\xFF';
  longHeader[9] = '\x7F';
  expectError(longHeader, "truncated: the header length field says 32767 bytes of header");
  expectError(npyBytes("['descr']", two), ".npy header: expected '{' at the start of the header dict");
  expectError(npyBytes("{'descr': '<f4', 'shape': (2,), }", two), ".npy header: missing key 'fortran_order'");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, }", two), "missing key 'shape'");
  expectError(npyBytes("{'fortran_order': False, 'shape': (2,), }", two), "missing key 'descr'");
  expectError(npyBytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", two),
              ".npy header: duplicate key 'descr'");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1, }", two),
              "'extra': expected a string, True, False or a tuple");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': (), }", two),
              ".npy header: unknown key 'extra'");
  expectError(npyBytes("{'descr': (2,), 'fortran_order': False, 'shape': (2,), }", two),
              ".npy header: 'descr' must be a string");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", two),
              "'fortran_order': expected a string, True, False or a tuple");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': 'no', 'shape': (2,), }", two),
              ".npy header: 'fortran_order' must be True or False");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': '2', }", two),
              ".npy header: 'shape' must be a tuple of integers");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }", two),
              "'shape': negative dimension");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", two),
              "'shape': dimension overflows int64");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", two),
              "'shape' (4294967296, 4294967296): the element count overflows");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", two),
              "'shape': expected ',' or ')' in the tuple");
  expectError(npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", two + two),
              ".npy header: 'descr': unsupported dtype '<f8'; supported: '<V2' (bf16");
  expectError(npyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", two),
              "unsupported dtype '>f4' (big-endian: save the array with .astype('<f4') first)");
  expectError(npyBytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", two),
              "'descr': a list (a structured dtype) is not supported");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", two),
              ".npy header: 'fortran_order' is True; only C-order arrays are read");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, }", two),
              "'shape': expected a non-negative integer");
  expectError(npyBytes("{'descr': '<f4, 'fortran_order': False, 'shape': (2,), }", two),
              "expected ',' or '}' after the value of 'descr'");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", two),
              "unexpected text after the header dict");
  expectError(npyBytes("{'descr': '<f4", two), "unterminated string");
  expectError(npyBytes(ok, two.substr(0, 7)),
              "truncated data: 'shape' (2,) of '<f4' needs 8 bytes, the file has 7");
  expectError(npyBytes(ok, two + "x"), "size mismatch: 'shape' (2,) of '<f4' is 8 bytes, the file has 1 more");
  expectError(npyBytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\x01\x00\x02", 3)),
              "'|b1' element 2 is byte 2, not 0 or 1");
}

TEST(Npy, AnAbsurdShapeIsAnErrorBeforeAllocation) {
  // 2^40 f32 elements: the header is valid and the data short; the size check reports it without allocating.
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", ""),
              "truncated data: 'shape' (1099511627776,) of '<f4' needs 4398046511104 bytes, the file has 0");
  // Within the file's size but above the tensor byte limit: Tensor::zeros' error, prefixed with the source.
  Tensor::setTensorByteLimit(16);
  expectError(npyBytes("{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }", std::string(32, '\0')),
              "in.npy: tensor shape [4] (i64) needs 32 bytes, more than the limit of 16 bytes");
  Tensor::setTensorByteLimit(0);
}

TEST(Npy, FilesAndTheirErrors) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/x.npy";
  const Tensor t = Tensor::fromInts(ElementType::I32, {2}, {5, -6});
  ASSERT_TRUE(dsa::writeNpyFile(t, path).ok());
  dsa::Result<Tensor> back = dsa::readNpyFile(path);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->intVector(), t.intVector());

  dsa::Result<Tensor> missing = dsa::readNpyFile(dir.path() + "/none.npy");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/none.npy: cannot open for reading"), std::string::npos) << missing.error();
  dsa::Status unwritable = dsa::writeNpyFile(t, dir.path() + "/no/such/dir/x.npy");
  ASSERT_FALSE(unwritable.ok());
  EXPECT_NE(unwritable.error().find("/no/such/dir/x.npy: cannot open for writing"), std::string::npos);
  dsa::Result<std::string> placeholder = dsa::encodeNpy(Tensor());
  ASSERT_FALSE(placeholder.ok());
  EXPECT_NE(placeholder.error().find("placeholder"), std::string::npos) << placeholder.error();
  // A file error names the path.
  std::ofstream(dir.path() + "/bad.npy") << "not numpy";
  dsa::Result<Tensor> bad = dsa::readNpyFile(dir.path() + "/bad.npy");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().rfind(dir.path() + "/bad.npy: not a .npy file", 0), 0u) << bad.error();
}

TEST(Npy, NumpyFilesReadAndThisWriterMatchesNumpyByteForByte) {
  TempDir dir;
  std::string why;
  int status = 0;
  const std::string d = dir.path();
  if (!runWithModules(d, "numpy", "import numpy as np\n"
                            "d = '" + d + "'\n"
                            "np.save(d + '/f32.npy', np.array([[1.5, -0.1], [3e38, 1e-45]], dtype=np.float32))\n"
                            "np.save(d + '/i32.npy', np.array([-2147483648, 7], dtype=np.int32))\n"
                            "np.save(d + '/i64.npy', np.arange(-3, 3, dtype=np.int64).reshape(2, 1, 3))\n"
                            "np.save(d + '/b1.npy', np.array([[True, False, True]]))\n"
                            "np.save(d + '/scalar.npy', np.int64(42))\n"
                            "np.save(d + '/empty.npy', np.zeros((0, 4), dtype=np.float32))\n",
                      status, why))
    GTEST_SKIP() << why;
  ASSERT_EQ(status, 0) << "the numpy script failed";
  struct Case {
    const char *file;
    ElementType type;
    std::vector<int64_t> shape;
    std::vector<float> floats;
    std::vector<int64_t> ints;
  };
  const std::vector<Case> cases = {
      {"f32.npy", ElementType::F32, {2, 2}, {1.5f, -0.1f, 3e38f, 1e-45f}, {}},
      {"i32.npy", ElementType::I32, {2}, {}, {-2147483648LL, 7}},
      {"i64.npy", ElementType::I64, {2, 1, 3}, {}, {-3, -2, -1, 0, 1, 2}},
      {"b1.npy", ElementType::I1, {1, 3}, {}, {1, 0, 1}},
      {"scalar.npy", ElementType::I64, {}, {}, {42}},
      {"empty.npy", ElementType::F32, {0, 4}, {}, {}},
  };
  for (const Case &c : cases) {
    const std::string path = d + "/" + c.file;
    dsa::Result<Tensor> t = dsa::readNpyFile(path);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->elementType(), c.type) << c.file;
    EXPECT_EQ(t->shape(), c.shape) << c.file;
    if (dsa::isFloatType(c.type))
      EXPECT_EQ(t->floatVector(), c.floats) << c.file;
    else
      EXPECT_EQ(t->intVector(), c.ints) << c.file;
    dsa::Result<std::string> mine = dsa::encodeNpy(*t);
    ASSERT_TRUE(mine.ok());
    EXPECT_EQ(*mine, readFile(path)) << c.file << ": this writer's bytes differ from numpy.save's";
  }
}

TEST(Npy, BF16FilesOfMlDtypes) {
  TempDir dir;
  std::string why;
  int status = 0;
  const std::string d = dir.path();
  // numpy + ml_dtypes write a bfloat16 array; the values are bf16-exact.
  if (!runWithModules(d, "numpy, ml_dtypes", "import numpy as np, ml_dtypes\n"
                            "d = '" + d + "'\n"
                            "a = np.array([[1.0, -2.5, 3.140625], [float('inf'), 2.0**-133, -0.0]], "
                            "dtype=ml_dtypes.bfloat16)\n"
                            "np.save(d + '/numpy_bf16.npy', a)\n",
                      status, why))
    GTEST_SKIP() << why;
  ASSERT_EQ(status, 0) << "the numpy + ml_dtypes script failed";
  dsa::Result<Tensor> t = dsa::readNpyFile(d + "/numpy_bf16.npy");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->elementType(), ElementType::BF16);
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{2, 3}));
  const std::vector<float> expected = {1.0f, -2.5f, 3.140625f, std::numeric_limits<float>::infinity(),
                                       std::ldexp(1.0f, -133), -0.0f};
  EXPECT_EQ(t->floatVector(), expected);
  EXPECT_TRUE(std::signbit(t->floats()[5]));
  dsa::Result<std::string> mine = dsa::encodeNpy(*t);
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(*mine, readFile(d + "/numpy_bf16.npy")) << "this writer's bf16 bytes differ from numpy.save's";

  // This writer's bf16 file: numpy.load gives a 2-byte void array whose view as ml_dtypes.bfloat16 is the tensor.
  const Tensor mineT = Tensor::fromFloats(ElementType::BF16, {3}, {0.5f, -1.0f / 3.0f, 65280.0f});
  ASSERT_TRUE(dsa::writeNpyFile(mineT, d + "/dsa_bf16.npy").ok());
  std::ostringstream want;
  want.precision(9);
  for (float v : mineT.floatVector())
    want << v << ", ";
  EXPECT_EQ(0, runPython(d, "import sys, numpy as np, ml_dtypes\n"
                            "a = np.load('" + d + "/dsa_bf16.npy')\n"
                            "assert a.dtype == np.dtype('V2'), a.dtype\n"
                            "b = a.view(ml_dtypes.bfloat16)\n"
                            "assert b.shape == (3,), b.shape\n"
                            "got = [float(v) for v in b.astype(np.float32)]\n"
                            "want = [" + want.str() + "]\n"
                            "if got != want:\n"
                            "  print('numpy read', got, 'expected', want); sys.exit(1)\n"));
}
