//===- StrictJsonTest.cpp - dsa/Support/StrictJson.h: FieldReader's checks and both wordings ---------------===//
//
// The golden reader (Detailed wording) and the step-description reader (Combined wording) share FieldReader; their
// own tests (Golden/GoldenFileTest.cpp, Runtime/CPU/CPURuntimeTest.cpp) check the messages on whole files. These
// check the reader itself: every type check, key paths, the first error kept, defaults after it.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Support/StrictJson.h"

#include <gtest/gtest.h>

namespace {

using dsa::json::FieldMessages;
using Json = nlohmann::ordered_json;

template <class J = Json> J parse(const char *text) { return J::parse(text); }

TEST(StrictJsonFieldReader, ReadsEveryTypeOfField) {
  const Json j = parse(R"({"i": -3, "big": 9223372036854775807, "f": 2.5, "fi": 4, "b": true, "s": "x",
                           "n": null, "o": {"k": 1}, "is": [1, -2], "us": [0, 7], "fs": [1, 0.5], "ss": ["a", "b"],
                           "m": [[1], [2, 3]]})");
  dsa::json::FieldReader<Json> r(j, "top");
  EXPECT_EQ(r.i64("i"), -3);
  EXPECT_EQ(r.i64("big"), 9223372036854775807LL);
  EXPECT_EQ(r.f64("f"), 2.5);
  EXPECT_EQ(r.f64("fi"), 4.0); // an integer is a number
  EXPECT_TRUE(r.boolean("b"));
  EXPECT_EQ(r.str("s"), "x");
  EXPECT_EQ(r.nonEmptyStr("s"), "x");
  EXPECT_EQ(r.nullableStr("n"), std::nullopt);
  EXPECT_EQ(r.nullableStr("s"), std::optional<std::string>("x"));
  EXPECT_EQ(r.optionalI64("absent"), std::nullopt);
  EXPECT_EQ(r.optionalI64("i"), std::optional<int64_t>(-3));
  EXPECT_EQ(r.optionalStr("absent"), "");
  ASSERT_NE(r.object("o"), nullptr);
  EXPECT_EQ((*r.object("o"))["k"], 1);
  EXPECT_EQ(r.i64s("is"), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(r.u64s("us"), (std::vector<uint64_t>{0, 7}));
  EXPECT_EQ(r.f64s(j["fs"], r.keyPath("fs")), (std::vector<double>{1, 0.5}));
  EXPECT_EQ(r.strs("ss"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.i64Matrix(j["m"], r.keyPath("m")), (std::vector<std::vector<int64_t>>{{1}, {2, 3}}));
  EXPECT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r.status());
}

/// The error one read of `read` records on the object `text` (read at path "top"), in `style`.
template <class Read> std::string errorOf(const char *text, FieldMessages style, Read read) {
  const Json j = parse(text);
  dsa::json::FieldReader<Json> r(j, "top", style);
  read(r, j);
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.status());
  return r.error();
}

TEST(StrictJsonFieldReader, DetailedWordingSaysMissingOrWhatItGot) {
  using R = dsa::json::FieldReader<Json>;
  const FieldMessages d = FieldMessages::Detailed;
  EXPECT_EQ(errorOf("{}", d, [](R &r, const Json &) { r.i64("k"); }), "top.k: missing");
  EXPECT_EQ(errorOf("{}", d, [](R &r, const Json &) { r.boolean("k"); }), "top.k: missing");
  EXPECT_EQ(errorOf(R"({"k": "3"})", d, [](R &r, const Json &) { r.i64("k"); }),
            "top.k: expected an integer, got string");
  EXPECT_EQ(errorOf(R"({"k": 1e12})", d, [](R &r, const Json &) { r.i64("k"); }),
            "top.k: expected an integer, got number 1000000000000.0");
  EXPECT_EQ(errorOf(R"({"k": 9223372036854775808})", d, [](R &r, const Json &) { r.i64("k"); }),
            "top.k: integer 9223372036854775808 does not fit in i64");
  EXPECT_EQ(errorOf(R"({"k": [1, -1]})", d, [](R &r, const Json &) { r.u64s("k"); }),
            "top.k[1]: expected a non-negative integer, got number -1");
  EXPECT_EQ(errorOf(R"({"k": true})", d, [](R &r, const Json &) { r.f64("k"); }),
            "top.k: expected a number, got boolean");
  EXPECT_EQ(errorOf(R"({"k": 1})", d, [](R &r, const Json &) { r.boolean("k"); }),
            "top.k: expected a boolean, got number");
  EXPECT_EQ(errorOf(R"({"k": 1})", d, [](R &r, const Json &) { r.str("k"); }), "top.k: expected a string, got number");
  EXPECT_EQ(errorOf(R"({"k": ""})", d, [](R &r, const Json &) { r.nonEmptyStr("k"); }),
            "top.k: expected a non-empty string, got string \"\"");
  EXPECT_EQ(errorOf(R"({"k": 1})", d, [](R &r, const Json &) { r.nullableStr("k"); }),
            "top.k: expected a string or null, got number");
  EXPECT_EQ(errorOf(R"({"k": 1})", d, [](R &r, const Json &) { r.object("k"); }),
            "top.k: expected an object, got number");
  EXPECT_EQ(errorOf(R"({"k": {}})", d, [](R &r, const Json &) { r.list("k"); }), "top.k: expected a list, got object");
  EXPECT_EQ(errorOf(R"({"k": [1, "2"]})", d, [](R &r, const Json &) { r.i64s("k"); }),
            "top.k[1]: expected an integer, got string");
  EXPECT_EQ(errorOf(R"({"k": [1, 2]})", d, [](R &r, const Json &) { r.strs("k"); }),
            "top.k[0]: expected a string, got number");
  EXPECT_EQ(errorOf(R"({"k": 5})", d, [](R &r, const Json &j) { r.f64s(j["k"], "top.k"); }),
            "top.k: expected a list of numbers, got number");
  EXPECT_EQ(errorOf(R"({"k": [5]})", d, [](R &r, const Json &j) { r.i64Matrix(j["k"], "top.k"); }),
            "top.k[0]: expected a list of integers, got number");
  EXPECT_EQ(errorOf(R"({"k": 5})", d, [](R &r, const Json &j) { r.i64Matrix(j["k"], "top.k"); }),
            "top.k: expected a list of lists, got number");
  EXPECT_EQ(errorOf("[]", d, [](R &, const Json &) {}), "top: expected an object, got array");
}

TEST(StrictJsonFieldReader, CombinedWordingSaysMissingOrNot) {
  using R = dsa::json::FieldReader<Json>;
  const FieldMessages c = FieldMessages::Combined;
  EXPECT_EQ(errorOf("{}", c, [](R &r, const Json &) { r.i64("k"); }), "top.k: missing or not an integer");
  EXPECT_EQ(errorOf(R"({"k": 1.5})", c, [](R &r, const Json &) { r.i64("k"); }), "top.k: missing or not an integer");
  EXPECT_EQ(errorOf("{}", c, [](R &r, const Json &) { r.f64("k"); }), "top.k: missing or not a number");
  EXPECT_EQ(errorOf(R"({"k": "1"})", c, [](R &r, const Json &) { r.f64("k"); }), "top.k: missing or not a number");
  EXPECT_EQ(errorOf(R"({"k": 0})", c, [](R &r, const Json &) { r.boolean("k"); }), "top.k: missing or not a boolean");
  EXPECT_EQ(errorOf(R"({"k": 0})", c, [](R &r, const Json &) { r.str("k"); }), "top.k: missing or not a string");
  EXPECT_EQ(errorOf(R"({"k": ""})", c, [](R &r, const Json &) { r.nonEmptyStr("k"); }),
            "top.k: missing or not a non-empty string");
  EXPECT_EQ(errorOf("{}", c, [](R &r, const Json &) { r.object("k"); }), "top.k: missing or not an object");
  EXPECT_EQ(errorOf(R"({"k": {}})", c, [](R &r, const Json &) { r.list("k"); }), "top.k: missing or not an array");
  // Beyond int64 is said as such in both wordings (not "not an integer").
  EXPECT_EQ(errorOf(R"({"k": 18446744073709551615})", c, [](R &r, const Json &) { r.i64("k"); }),
            "top.k: integer 18446744073709551615 does not fit in i64");
  // field() knows no type: "missing" alone.
  EXPECT_EQ(errorOf("{}", c, [](R &r, const Json &) { r.field("k"); }), "top.k: missing");
}

TEST(StrictJsonFieldReader, KeepsTheFirstErrorAndReturnsDefaultsAfterIt) {
  const Json j = parse(R"({"a": "x", "b": "y", "c": 7, "d": true})");
  dsa::json::FieldReader<Json> r(j, "top", FieldMessages::Combined);
  EXPECT_EQ(r.i64("a"), 0);
  EXPECT_EQ(r.i64("b"), 0);
  EXPECT_EQ(r.i64("c"), 0); // present and an integer, but a field before it failed: not read
  EXPECT_FALSE(r.boolean("d"));
  EXPECT_EQ(r.error(), "top.a: missing or not an integer");
}

TEST(StrictJsonFieldReader, AnEmptyPathNamesTopLevelKeysAloneAndPlainJsonWorks) {
  const nlohmann::json j = parse<nlohmann::json>(R"({"version": "5"})");
  dsa::json::FieldReader<nlohmann::json> r(j, "", FieldMessages::Combined);
  EXPECT_EQ(r.keyPath("version"), "version");
  r.i64("version");
  EXPECT_EQ(r.error(), "version: missing or not an integer");
}

} // namespace
