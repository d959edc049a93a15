//===- GoldenFileTest.cpp - the golden reader against the tiny golden -----------===//
//
// Expected values come from the specs (attention-semantics.md section 1 table, tiny-model-harness.md) and from the
// golden file itself (its stored checksums), never from the reader under test.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Golden/GoldenFile.h"

#include "TestSupport.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dsa/Core/Tensor.h"

#include <cmath>
#include <limits>
#include <functional>
#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace dsa::golden;
using namespace dsa::test;

namespace {

std::string goldenText() { return readText(kTinyGoldenPath); }

/// `text` with the first occurrence of `from` replaced; fails the test when `from` is absent.
std::string replaceOnce(std::string text, const std::string &from, const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "test setup: pattern not in the golden: " << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

/// Parses edited golden text and returns the error message (fails the test when it loads).
std::string loadError(const std::string &text) {
  auto r = GoldenFile::parse(text, "edited.json");
  EXPECT_FALSE(r.ok()) << "edited golden unexpectedly loaded";
  return r.ok() ? std::string() : r.error();
}

/// The golden's text after `edit` on its JSON (the edits another golden of the format would state).
std::string editedGolden(const std::function<void(nlohmann::ordered_json &)> &edit) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(goldenText());
  edit(j);
  return j.dump();
}

/// fixture.steps as the tiny golden would state them: prefill12 [0, 12), decode12 [12, 13), decode13 [13, 14).
nlohmann::ordered_json tinySteps() {
  return nlohmann::ordered_json::parse(
      R"([{"regime": "prefill12", "start_pos": 0, "seqlen": 12, "input_ids_slice": [0, 12]},
          {"regime": "decode12", "start_pos": 12, "seqlen": 1, "input_ids_slice": [12, 13]},
          {"regime": "decode13", "start_pos": 13, "seqlen": 1, "input_ids_slice": [13, 14]}])");
}

} // namespace

TEST(GoldenFile, FixtureMatchesSpecTable) {
  const Fixture &f = golden().fixture();
  // attention-semantics.md section 1, "tiny golden" column.
  EXPECT_EQ(f.dim, 64);
  EXPECT_EQ(f.nHeads, 4);
  EXPECT_EQ(f.headDim, 32);
  EXPECT_EQ(f.ropeHeadDim, 8);
  EXPECT_EQ(f.qLoraRank, 16);
  EXPECT_EQ(f.oGroups, 2);
  EXPECT_EQ(f.oLoraRank, 16);
  EXPECT_EQ(f.windowSize, 8);
  EXPECT_EQ(f.compressRatios, (std::vector<int64_t>{0, 0, 2, 2, 1, 1}));
  EXPECT_EQ(f.kvSourceLayers, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(f.indexSourceLayers, (std::vector<int64_t>{2, 4, 5}));
  EXPECT_EQ(f.candidateSourceLayer, 4);
  EXPECT_EQ(f.candidateTopkBlocks, 3);
  EXPECT_EQ(f.candidateBlockSize, 2);
  EXPECT_EQ(f.indexNHeads, 2);
  EXPECT_EQ(f.indexHeadDim, 32);
  EXPECT_EQ(f.indexTopk, 6);
  EXPECT_EQ(f.normEps, 1e-20);
  EXPECT_EQ(f.ropeTheta, 1e4);
  EXPECT_EQ(f.compressRopeTheta, 4e4);
  EXPECT_EQ(f.originalSeqLen, 32);
  EXPECT_EQ(f.ropeFactor, 2.0);
  EXPECT_EQ(f.betaFast, 32.0);
  EXPECT_EQ(f.betaSlow, 1.0);
  EXPECT_EQ(f.maxSeqLen, 64);
  // tiny-model-harness.md: 6 layers, three regimes, prefill of 12.
  EXPECT_EQ(f.nLayers, 6);
  EXPECT_EQ(f.prefillLen, 12);
  EXPECT_EQ(f.batch, 1);
  EXPECT_EQ(f.regimes, (std::vector<std::string>{"prefill12", "decode12", "decode13"}));
  // Values read off the file's fixture object.
  EXPECT_EQ(f.vocabSize, 64);
  EXPECT_EQ(f.hcMult, 4);
  EXPECT_EQ(f.hcSinkhornIters, 20);
  EXPECT_EQ(f.hcEps, 1e-6);
  EXPECT_EQ(f.nRoutedExperts, 4);
  EXPECT_EQ(f.nActivatedExperts, 2);
  EXPECT_EQ(f.moeInterDim, 24);
  EXPECT_EQ(f.scoreFunc, "sqrtsoftplus");
  EXPECT_EQ(f.routeScale, 1.5);
  EXPECT_TRUE(f.normTopkProb);
  EXPECT_EQ(f.swigluLimit, 10.0);
  EXPECT_FALSE(f.expertDtype.has_value());
  EXPECT_EQ(f.lcgProbe.size(), 8u);
  EXPECT_EQ(f.lcgProbe[1], 17455673724717726068ull); // above INT64_MAX: read as u64
}

TEST(GoldenFile, EngramTables) {
  const EngramTables &e = golden().fixture().engram;
  EXPECT_EQ(e.layerIds, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(e.maxNgramSize, 4);
  EXPECT_EQ(e.nHeads, 2);
  EXPECT_EQ(e.headDim, 32);
  EXPECT_EQ(e.nHashCols, 6);
  EXPECT_EQ(e.numEmbeddings, (std::vector<int64_t>{462, 630}));
  EXPECT_EQ(e.padIdCompressed, 2);
  ASSERT_EQ(e.tokenMap.size(), 64u);
  EXPECT_EQ(e.tokenMap[63], 63);
  ASSERT_EQ(e.multipliers.size(), 2u);
  EXPECT_EQ(e.multipliers[0][0], 118650432209603643LL);
  EXPECT_EQ(e.multipliers[1][3], 29348051253447937LL);
  ASSERT_EQ(e.primes.size(), 2u);
  EXPECT_EQ(e.primes[0][0], (std::vector<int64_t>{67, 71}));
  EXPECT_EQ(e.primes[1][2], (std::vector<int64_t>{109, 113}));
  EXPECT_EQ(e.offsets[1], (std::vector<int64_t>{0, 97, 198, 301, 408, 517}));
  EXPECT_EQ(e.scaleBlock, 32);
  ASSERT_EQ(e.scales.size(), 2u);
  EXPECT_EQ(e.scales[0].size(), 462u);
  EXPECT_EQ(e.scales[1].size(), 630u);
  EXPECT_EQ(e.scales[0][0], 0.5);
  EXPECT_EQ(e.scales[0][1], 1.0);
}

TEST(GoldenFile, RegimesAndPositions) {
  const auto &regimes = golden().regimes();
  ASSERT_EQ(regimes.size(), 3u);
  // prefill12 at 0 with 12 tokens; the decodes follow with one token each.
  EXPECT_EQ(regimes[0].name, "prefill12");
  EXPECT_EQ(regimes[0].startPos, 0);
  EXPECT_EQ(regimes[0].numTokens, 12);
  EXPECT_EQ(regimes[1].name, "decode12");
  EXPECT_EQ(regimes[1].startPos, 12);
  EXPECT_EQ(regimes[1].numTokens, 1);
  EXPECT_EQ(regimes[2].name, "decode13");
  EXPECT_EQ(regimes[2].startPos, 13);
  EXPECT_EQ(regimes[2].numTokens, 1);
  EXPECT_EQ(regimes[0].captures.size(), 147u);
  EXPECT_EQ(regimes[1].captures.size(), 148u);
  EXPECT_EQ(regimes[0].captureOrder.front(), "input_ids");
  EXPECT_EQ(regimes[0].captureOrder.size(), regimes[0].captures.size());
  EXPECT_NE(golden().regime("decode12"), nullptr);
  EXPECT_EQ(golden().regime("decode14"), nullptr);
}

TEST(GoldenFile, WeightsAndCaptures) {
  const GoldenFile &g = golden();
  EXPECT_EQ(g.weights().size(), 226u);
  const WeightMeta *embed = g.weight("embed.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(embed->n, 4096);
  EXPECT_EQ(embed->scale, 0.5);
  EXPECT_EQ(embed->offset, 0.0);
  EXPECT_EQ(embed->dtype, "bfloat16");
  EXPECT_EQ(embed->ck, 51667.900228500366);
  EXPECT_EQ(g.weight("no.such.weight"), nullptr);

  auto q = g.capture("prefill12", "L0.sa_q");
  ASSERT_TRUE(q.ok()) << q.error();
  EXPECT_EQ((*q)->shape, (std::vector<int64_t>{1, 12, 4, 32}));
  EXPECT_EQ((*q)->n, 1536);
  EXPECT_EQ((*q)->stride, 131);
  EXPECT_EQ((*q)->data.size(), 12u); // ceil(1536 / 131)
  EXPECT_FALSE((*q)->isInteger);

  auto idx = g.capture("prefill12", "L0.sa_topk_idxs");
  ASSERT_TRUE(idx.ok()) << idx.error();
  EXPECT_TRUE((*idx)->isInteger);
  auto mix = g.capture("prefill12", "L0.pre_mix_in"); // floats that happen to be integral (1.0, 0.0)
  ASSERT_TRUE(mix.ok()) << mix.error();
  EXPECT_FALSE((*mix)->isInteger);

  auto ids = g.capture("decode13", "input_ids");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ((*ids)->data, (std::vector<double>{8}));

  auto missing = g.capture("prefill12", "L9.sa_q");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.error(), "prefill12")) << missing.error();
  EXPECT_TRUE(contains(missing.error(), "L9.sa_q")) << missing.error();
  auto noRegime = g.capture("decode99", "L0.sa_q");
  ASSERT_FALSE(noRegime.ok());
  EXPECT_TRUE(contains(noRegime.error(), "decode99")) << noRegime.error();
}

// Every full capture (stride 1) reproduces its stored ck = sum_i f64(x_i) * (i+1): an independent check that the
// reader delivers the stored values in order. The sum is recomputed here, in f64.
TEST(GoldenFile, FullCapturesReproduceTheirChecksum) {
  int full = 0;
  for (const Regime &r : golden().regimes()) {
    for (const auto &[name, c] : r.captures) {
      EXPECT_EQ(static_cast<int64_t>(c.data.size()), (c.n + c.stride - 1) / c.stride) << r.name << "." << name;
      if (c.stride != 1)
        continue;
      ++full;
      double ck = 0, mass = 0;
      for (size_t i = 0; i < c.data.size(); ++i) {
        ck += c.data[i] * static_cast<double>(i + 1);
        mass += std::fabs(c.data[i]) * static_cast<double>(i + 1);
      }
      // The producer's f64 summation order may differ: allow f64 rounding only (far below any element's ulp).
      EXPECT_LE(std::fabs(ck - c.ck), 1e-13 * mass) << r.name << "." << name << " got " << ck << " want " << c.ck;
    }
  }
  EXPECT_EQ(full, 156); // golden/README.md: "all 156 full captures reproduce their stored checksum"
}

// ---- load errors ---------------------------------------------------------------------------------------------

TEST(GoldenFileErrors, NonexistentPath) {
  auto r = GoldenFile::load("/nonexistent/dir/golden.json");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error(), "/nonexistent/dir/golden.json")) << r.error();
  EXPECT_TRUE(contains(r.error(), "cannot open")) << r.error();
}

TEST(GoldenFileErrors, MalformedJsonFile) {
  char path[] = "/tmp/dsa_golden_malformedXXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string text = "{\"fixture\": {\"dim\": 64,, }}";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  auto r = GoldenFile::load(path);
  std::remove(path);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error(), path)) << r.error();
  EXPECT_TRUE(contains(r.error(), "malformed JSON at byte 24")) << r.error(); // the second ',' is byte 24
}

TEST(GoldenFileErrors, TruncatedGolden) {
  std::string text = goldenText();
  std::string err = loadError(text.substr(0, text.size() / 2));
  EXPECT_TRUE(contains(err, "malformed JSON")) << err;
}

TEST(GoldenFileErrors, TopLevelNotObject) {
  std::string err = loadError("[1, 2]");
  EXPECT_TRUE(contains(err, "expected an object")) << err;
}

TEST(GoldenFileErrors, UneditedTextLoads) {
  auto r = GoldenFile::parse(goldenText(), "copy.json");
  ASSERT_TRUE(r.ok()) << r.error(); // the edits below are the only reason for their errors
}

TEST(GoldenFileErrors, MissingFixture) {
  std::string err = loadError(replaceOnce(goldenText(), "\"fixture\":", "\"fixtur\":"));
  EXPECT_TRUE(contains(err, "fixture: missing")) << err;
}

TEST(GoldenFileErrors, MissingFixtureKey) {
  std::string err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["fixture"].erase("dim"); }));
  EXPECT_TRUE(contains(err, "fixture.dim: missing")) << err;
  err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["fixture"]["engram"].erase("scale_block"); }));
  EXPECT_TRUE(contains(err, "fixture.engram.scale_block: missing")) << err;
  // Renamed (misspelt): the unknown key is what is reported, with the keys the object may hold.
  err = loadError(replaceOnce(goldenText(), "\"dim\":64,", "\"dimension\":64,"));
  EXPECT_TRUE(contains(err, "fixture.dimension: unknown key (expected one of: vocab_size, dim, ")) << err;
  err = loadError(replaceOnce(goldenText(), "\"scale_block\":", "\"scale_blocks\":"));
  EXPECT_TRUE(contains(err, "fixture.engram.scale_blocks: unknown key")) << err;
}

TEST(GoldenFileErrors, MistypedFixtureKey) {
  std::string err = loadError(replaceOnce(goldenText(), "\"n_heads\":4,", "\"n_heads\":\"4\","));
  EXPECT_TRUE(contains(err, "fixture.n_heads: expected an integer, got string")) << err;
  err = loadError(replaceOnce(goldenText(), "\"window_size\":8,", "\"window_size\":8.5,"));
  EXPECT_TRUE(contains(err, "fixture.window_size: expected an integer")) << err;
  err = loadError(replaceOnce(goldenText(), "\"compress_ratios\":[0,0,2,2,1,1]", "\"compress_ratios\":[0,0,2,2,1]"));
  EXPECT_TRUE(contains(err, "fixture.compress_ratios")) << err;
  err = loadError(replaceOnce(goldenText(), "\"norm_topk_prob\":true", "\"norm_topk_prob\":1"));
  EXPECT_TRUE(contains(err, "fixture.norm_topk_prob: expected a boolean")) << err;
  err = loadError(replaceOnce(goldenText(), "\"lcg_probe\":[4530187002354869821,", "\"lcg_probe\":[-1,"));
  EXPECT_TRUE(contains(err, "fixture.lcg_probe[0]")) << err;
  err = loadError(replaceOnce(goldenText(), "\"n_hash_cols\":6", "\"n_hash_cols\":5"));
  EXPECT_TRUE(contains(err, "fixture.engram.n_hash_cols")) << err;
}

TEST(GoldenFileErrors, MissingWeightsMetaOrField) {
  std::string err = loadError(editedGolden([](nlohmann::ordered_json &j) { j.erase("weights_meta"); }));
  EXPECT_TRUE(contains(err, "weights_meta: missing")) << err;
  err = loadError(replaceOnce(goldenText(), "\"weights_meta\":", "\"weights\":"));
  EXPECT_TRUE(contains(err, "edited.json: weights: unknown key (expected one of: fixture, weights_meta, ")) << err;
  err = loadError(replaceOnce(goldenText(), "\"embed.weight\":{\"shape\":[64,64],\"n\":4096,",
                              "\"embed.weight\":{\"shape\":[64,64],\"n\":4095,"));
  EXPECT_TRUE(contains(err, "weights_meta.embed.weight")) << err;
  EXPECT_TRUE(contains(err, "n = 4095")) << err;
  err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["weights_meta"]["embed.weight"].erase("ck"); }));
  EXPECT_TRUE(contains(err, "weights_meta.embed.weight.ck: missing")) << err;
  err = loadError(replaceOnce(goldenText(), "\"dtype\":\"bfloat16\",\"ck\":51667.900228500366",
                              "\"dtype\":\"bfloat16\",\"ckk\":51667.900228500366"));
  EXPECT_TRUE(contains(err, "weights_meta.embed.weight.ckk: unknown key (expected one of: shape, n, scale, offset, "
                            "kind, dtype, ck)"))
      << err;
}

TEST(GoldenFileErrors, MissingRegimeObject) {
  std::string err = loadError(replaceOnce(goldenText(), "\"regimes\":[\"prefill12\",\"decode12\",\"decode13\"]",
                                          "\"regimes\":[\"prefill12\",\"decode12\",\"decode13\",\"decode14\"]"));
  EXPECT_TRUE(contains(err, "decode14: missing")) << err;
}

TEST(GoldenFileErrors, BadCaptures) {
  const std::string ids = "\"decode13\":{\"input_ids\":{\"shape\":[1,1],\"n\":1,\"stride\":1,\"ck\":8.0,\"data\":[8]}";
  std::string err = loadError(
      replaceOnce(goldenText(), ids, "\"decode13\":{\"input_ids\":{\"shape\":[1,1],\"n\":1,\"stride\":1,\"ck\":8.0}"));
  EXPECT_TRUE(contains(err, "decode13.input_ids.data: missing")) << err;
  err = loadError(
      replaceOnce(goldenText(), ids, "\"decode13\":{\"input_ids\":{\"n\":1,\"stride\":1,\"ck\":8.0,\"data\":[8]}"));
  EXPECT_TRUE(contains(err, "decode13.input_ids.shape: missing")) << err;
  err = loadError(replaceOnce(goldenText(), ids,
                              "\"decode13\":{\"input_ids\":{\"shape\":[1,1],\"n\":1,\"stride\":1,\"ck\":8.0,"
                              "\"data\":[8,9]}"));
  EXPECT_TRUE(contains(err, "decode13.input_ids.data: has 2 values, expected ceil(n/stride) = 1")) << err;
  err = loadError(replaceOnce(goldenText(), ids,
                              "\"decode13\":{\"input_ids\":{\"shape\":[1,2],\"n\":1,\"stride\":1,\"ck\":8.0,"
                              "\"data\":[8]}"));
  EXPECT_TRUE(contains(err, "decode13.input_ids: shape [1, 2] has 2 elements but n = 1")) << err;
  err = loadError(replaceOnce(goldenText(), ids,
                              "\"decode13\":{\"input_ids\":{\"shape\":[1,2],\"n\":2,\"stride\":1,\"ck\":8.0,"
                              "\"data\":[8,1.5]}"));
  EXPECT_TRUE(contains(err, "decode13.input_ids.data: mixes integers")) << err;
  // A strided capture whose sample count does not match its stride (ceil(1536 / 140) = 11).
  err = loadError(replaceOnce(goldenText(), "\"L0.sa_q\":{\"shape\":[1,12,4,32],\"n\":1536,\"stride\":131",
                              "\"L0.sa_q\":{\"shape\":[1,12,4,32],\"n\":1536,\"stride\":140"));
  EXPECT_TRUE(contains(err, "prefill12.L0.sa_q.data: has 12 values, expected ceil(n/stride) = 11")) << err;
}

// tiny-model-harness.md, "Other goldens in this format": the optional keys and a model without engram layers.
TEST(GoldenFileFormat, TinyGoldenHasNoStepsNorNTokens) {
  const Fixture &f = golden().fixture();
  EXPECT_TRUE(f.steps.empty());
  EXPECT_FALSE(f.nTokens.has_value());
  EXPECT_TRUE(f.hasEngram);
  // Without steps, each regime feeds the ids of its own positions.
  for (const Regime &r : golden().regimes()) {
    EXPECT_EQ(r.idsBegin, r.startPos) << r.name;
    EXPECT_EQ(r.idsEnd, r.startPos + r.numTokens) << r.name;
  }
}

TEST(GoldenFileFormat, StepsAndNTokens) {
  auto loaded = GoldenFile::parse(editedGolden([](nlohmann::ordered_json &j) {
    j["fixture"]["steps"] = tinySteps();
    j["fixture"]["steps"][2]["input_ids_slice"] = {20, 21}; // any slice of seqlen ids
    j["fixture"]["n_tokens"] = 32;
  }));
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  const Fixture &f = loaded->fixture();
  ASSERT_EQ(f.steps.size(), 3u);
  EXPECT_EQ(f.steps[1].regime, "decode12");
  EXPECT_EQ(f.steps[1].startPos, 12);
  EXPECT_EQ(f.steps[1].seqlen, 1);
  ASSERT_TRUE(f.nTokens.has_value());
  EXPECT_EQ(*f.nTokens, 32);
  const auto &r = loaded->regimes();
  EXPECT_EQ(r[0].idsBegin, 0);
  EXPECT_EQ(r[0].idsEnd, 12);
  EXPECT_EQ(r[2].startPos, 13); // positions still come from the regimes before it
  EXPECT_EQ(r[2].idsBegin, 20);
  EXPECT_EQ(r[2].idsEnd, 21);
}

TEST(GoldenFileFormat, StepsThatDisagreeWithTheRegimes) {
  auto errorOf = [](const std::function<void(nlohmann::ordered_json &)> &edit) {
    return loadError(editedGolden([&](nlohmann::ordered_json &j) {
      j["fixture"]["steps"] = tinySteps();
      edit(j);
    }));
  };
  std::string err = errorOf([](nlohmann::ordered_json &j) { j["fixture"]["steps"].erase(2); });
  EXPECT_TRUE(contains(err, "fixture.steps: has 2 entries, fixture.regimes 3")) << err;
  err = errorOf([](nlohmann::ordered_json &j) { j["fixture"]["steps"][1]["regime"] = "decode13"; });
  EXPECT_TRUE(contains(err, "fixture.steps[1].regime: 'decode13', but fixture.regimes[1] is 'decode12'")) << err;
  err = errorOf([](nlohmann::ordered_json &j) { j["fixture"]["steps"][2]["start_pos"] = 12; });
  EXPECT_TRUE(contains(err, "fixture.steps[2].start_pos: 12, but the regimes before 'decode13' hold 13 tokens"))
      << err;
  err = errorOf([](nlohmann::ordered_json &j) {
    j["fixture"]["steps"][0]["seqlen"] = 11;
    j["fixture"]["steps"][0]["input_ids_slice"] = {0, 11};
  });
  EXPECT_TRUE(contains(err, "fixture.steps[0].seqlen: 11, but prefill12.input_ids has 12 tokens")) << err;
  err = errorOf([](nlohmann::ordered_json &j) { j["fixture"]["steps"][1]["input_ids_slice"] = {12, 14}; });
  EXPECT_TRUE(contains(err, "fixture.steps[1].input_ids_slice: [12, 14] does not hold seqlen = 1 ids")) << err;
  err = errorOf([](nlohmann::ordered_json &j) { j["fixture"]["steps"][1]["input_ids_slice"] = {12}; });
  EXPECT_TRUE(contains(err, "fixture.steps[1].input_ids_slice: expected [begin, end)")) << err;
  err = errorOf([](nlohmann::ordered_json &j) { j["fixture"]["steps"][1].erase("start_pos"); });
  EXPECT_TRUE(contains(err, "fixture.steps[1].start_pos: missing")) << err;
  err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["fixture"]["n_tokens"] = 0; }));
  EXPECT_TRUE(contains(err, "fixture.n_tokens: must be >= 1, got 0")) << err;
  err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["fixture"]["n_tokens"] = "14"; }));
  EXPECT_TRUE(contains(err, "fixture.n_tokens: expected an integer")) << err;
}

TEST(GoldenFileFormat, EngramNull) {
  // A model without engram layers: engram null, engram_layer_ids empty; the other engram_* keys may go.
  auto loaded = GoldenFile::parse(editedGolden([](nlohmann::ordered_json &j) {
    nlohmann::ordered_json &f = j["fixture"];
    f["engram"] = nullptr;
    f["engram_layer_ids"] = nlohmann::ordered_json::array();
    for (const char *key : {"engram_max_ngram_size", "engram_vocab_size", "engram_n_heads", "engram_head_dim",
                            "engram_pad_id", "engram_compressed_vocab_size", "engram_num_embeddings"})
      f.erase(key);
  }));
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  const Fixture &f = loaded->fixture();
  EXPECT_FALSE(f.hasEngram);
  EXPECT_TRUE(f.engramLayerIds.empty());
  EXPECT_TRUE(f.engram.layerIds.empty());
  EXPECT_TRUE(f.engram.tokenMap.empty());
  EXPECT_EQ(f.engramMaxNgramSize, 0);

  // null tables but engram layers named: contradictory.
  std::string err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["fixture"]["engram"] = nullptr; }));
  EXPECT_TRUE(contains(err, "fixture.engram is null (no engram layer) but fixture.engram_layer_ids is [1, 4]"))
      << err;
  // Neither null nor an object.
  err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["fixture"]["engram"] = 3; }));
  EXPECT_TRUE(contains(err, "fixture.engram: expected an object, got number")) << err;
}

// Hostile input (issue 12, docs/robustness.md): every size, count and index is bounded on load, and the error names
// the field by its JSON path with the allowed range; nothing is allocated or looped over first.
TEST(GoldenFileHostile, SizesAndCountsAreBounded) {
  struct Case {
    std::string from, to, needle;
  };
  const Case cases[] = {
      {"\"window_size\":8,", "\"window_size\":-1,", "fixture.window_size: -1 is out of range [1, 1048576]"},
      {"\"max_seq_len\":64,", "\"max_seq_len\":-1,", "fixture.max_seq_len: -1 is out of range [1, 4194304]"},
      {"\"max_seq_len\":64,", "\"max_seq_len\":1000000000000,",
       "fixture.max_seq_len: 1000000000000 is out of range [1, 4194304]"},
      {"\"head_dim\":32,", "\"head_dim\":1099511627776,", "fixture.head_dim: 1099511627776 is out of range [1, 65536]"},
      {"\"dim\":64,", "\"dim\":4611686018427387904,", "fixture.dim: 4611686018427387904 is out of range [1, 65536]"},
      {"\"o_lora_rank\":16,", "\"o_lora_rank\":4611686018427387904,", "fixture.o_lora_rank: 4611686018427387904"},
      {"\"hc_sinkhorn_iters\":20,", "\"hc_sinkhorn_iters\":1000000000000,",
       "fixture.hc_sinkhorn_iters: 1000000000000 is out of range [1, 1000]"},
      {"\"compress_ratios\":[0,0,2,2,1,1]", "\"compress_ratios\":[0,0,1099511627776,2,1,1]",
       "fixture.compress_ratios[2]: 1099511627776 is out of range [0, 65536]"},
      {"\"candidate_source_layer\":4,", "\"candidate_source_layer\":-7,",
       "fixture.candidate_source_layer: -7 is out of range [-1, 5]"},
      {"\"prefill_len\":12,", "\"prefill_len\":65,", "fixture.prefill_len: 65 is out of range [0, 64]"},
  };
  for (const Case &c : cases) {
    std::string err = loadError(replaceOnce(goldenText(), c.from, c.to));
    EXPECT_TRUE(contains(err, c.needle)) << c.to << ": " << err;
  }
}

TEST(GoldenFileHostile, ProductsAreOverflowCheckedAndWithinTheByteLimit) {
  // Each factor within its bound, the ring [window_size, head_dim] above a 1 GB limit: named by both fields.
  dsa::Tensor::setTensorByteLimit(int64_t(1) << 30);
  std::string err = loadError(editedGolden([](nlohmann::ordered_json &j) {
    j["fixture"]["window_size"] = 1 << 20;
    j["fixture"]["head_dim"] = 1 << 14;
  }));
  dsa::Tensor::setTensorByteLimit(0);
  EXPECT_TRUE(contains(err, "fixture.window_size * fixture.head_dim (the window ring): 17179869184 elements")) << err;
  // engram.n_heads near 2^62: (max_ngram_size - 1) * n_heads would overflow; the bound catches it first.
  err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["fixture"]["engram"]["n_heads"] = int64_t(1) << 62; }));
  EXPECT_TRUE(contains(err, "fixture.engram.n_heads: must be <= 4096")) << err;
}

TEST(GoldenFileHostile, DuplicateKeysAreErrorsNamingThePath) {
  std::string err = loadError(replaceOnce(goldenText(), "\"window_size\":8,", "\"window_size\":8,\"window_size\":16,"));
  EXPECT_TRUE(contains(err, "edited.json: fixture.window_size: duplicate key")) << err;
  err = loadError(replaceOnce(goldenText(), "\"kind\":\"f32\"", "\"kind\":\"f32\",\"kind\":\"fp8\""));
  EXPECT_TRUE(contains(err, "weights_meta.embed.weight.kind: duplicate key")) << err;
  // Inside a list: the element's index is in the path.
  std::string steps = editedGolden([](nlohmann::ordered_json &j) { j["fixture"]["steps"] = tinySteps(); });
  err = loadError(replaceOnce(steps, "\"regime\":\"decode12\",", "\"regime\":\"decode12\",\"regime\":\"decode12\","));
  EXPECT_TRUE(contains(err, "fixture.steps[1].regime: duplicate key")) << err;
  // Top level.
  err = loadError(replaceOnce(goldenText(), "{\"fixture\":", "{\"decode13\":{},\"fixture\":"));
  EXPECT_TRUE(contains(err, "edited.json: decode13: duplicate key")) << err;
}

// A key the format does not have (a misspelt optional key used to be ignored) is an error naming its path and the
// keys that object may hold; weight and capture names are data, not keys of the format.
TEST(GoldenFileHostile, UnknownKeysAreErrorsNamingThePathAndTheExpectedKeys) {
  // The fixture: a misspelt key (window_size itself is then missing, but the unknown key is what is reported).
  std::string err = loadError(replaceOnce(goldenText(), "\"window_size\":8,", "\"window_sise\":8,"));
  EXPECT_TRUE(contains(err, "edited.json: fixture.window_sise: unknown key (expected one of: vocab_size, dim, "))
      << err;
  EXPECT_TRUE(contains(err, "window_size, ")) << err;
  // A misspelt OPTIONAL key (n_tokens): nothing would miss it.
  err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["fixture"]["n_token"] = 32; }));
  EXPECT_TRUE(contains(err, "fixture.n_token: unknown key (expected one of: ")) << err;
  err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["fixture"]["engram"]["scale_blocks"] = 4; }));
  EXPECT_TRUE(contains(err, "fixture.engram.scale_blocks: unknown key (expected one of: layer_ids, max_ngram_size, "))
      << err;
  err = loadError(editedGolden([](nlohmann::ordered_json &j) {
    j["fixture"]["steps"] = tinySteps();
    j["fixture"]["steps"][1]["startpos"] = 12;
  }));
  EXPECT_TRUE(contains(err, "fixture.steps[1].startpos: unknown key (expected one of: regime, start_pos, seqlen, "
                            "input_ids_slice)"))
      << err;
  // A weight and a capture.
  err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["weights_meta"]["embed.weight"]["scael"] = 0.5; }));
  EXPECT_TRUE(contains(err, "weights_meta.embed.weight.scael: unknown key (expected one of: shape, n, scale, offset, "
                            "kind, dtype, ck)"))
      << err;
  err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["decode12"]["L0.sa_q"]["strides"] = 1; }));
  EXPECT_TRUE(contains(err, "decode12.L0.sa_q.strides: unknown key (expected one of: shape, n, stride, ck, data)"))
      << err;
  // The top level: an object that is no regime of fixture.regimes (its captures would never be read).
  err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["decode14"] = j["decode13"]; }));
  EXPECT_TRUE(contains(err, "edited.json: decode14: unknown key (expected one of: fixture, weights_meta, prefill12, "
                            "decode12, decode13) (a regime's captures are read only when fixture.regimes names it)"))
      << err;
  err = loadError(editedGolden([](nlohmann::ordered_json &j) { j["weight_meta"] = nlohmann::ordered_json::object(); }));
  EXPECT_TRUE(contains(err, "weight_meta: unknown key")) << err;
  // Names are data: a capture of any name and a weight nobody reads load (a replay fails a capture it does not
  // produce: "nothing produced this capture").
  auto named = GoldenFile::parse(editedGolden([](nlohmann::ordered_json &j) {
                                   j["decode12"]["L0.not_a_capture"] = j["decode12"]["L0.sa_q"];
                                   j["weights_meta"]["layers.9.unused"] = j["weights_meta"]["embed.weight"];
                                 }),
                                 "named.json");
  ASSERT_TRUE(named.ok()) << named.error();
  EXPECT_TRUE(named->capture("decode12", "L0.not_a_capture").ok());
  // Both shared goldens hold only the format's keys (the debug golden adds fixture.storage).
  EXPECT_TRUE(GoldenFile::load(kTinyGoldenPath).ok());
  if (std::ifstream(kFullGoldenPath).good()) {
    auto full = GoldenFile::load(kFullGoldenPath);
    EXPECT_TRUE(full.ok()) << full.error();
  }
}

TEST(GoldenFileHostile, UnsupportedSettingsAreErrors) {
  std::string err = loadError(replaceOnce(goldenText(), "\"batch\":1,", "\"batch\":2,"));
  EXPECT_TRUE(contains(err, "fixture.batch: 2 is not supported: the harness and the replays run one sequence")) << err;
  err = loadError(replaceOnce(goldenText(), "\"dtype\":\"bf16\"", "\"dtype\":\"fp64\""));
  EXPECT_TRUE(contains(err, "fixture.dtype: 'fp64' is not supported")) << err;
  err = loadError(replaceOnce(goldenText(), "\"expert_dtype\":null", "\"expert_dtype\":\"fp4\""));
  EXPECT_TRUE(contains(err, "fixture.expert_dtype: 'fp4' is not supported")) << err;
  err = loadError(replaceOnce(goldenText(), "\"rope_theta\":10000.0", "\"rope_theta\":-1.0"));
  EXPECT_TRUE(contains(err, "fixture.rope_theta: -1.000000 must be finite and > 0")) << err;
}

TEST(GoldenFileHostile, WeightKindDtypeAndShapeAreChecked) {
  std::string err = loadError(replaceOnce(goldenText(), "\"kind\":\"f32\"", "\"kind\":\"fp4\""));
  EXPECT_TRUE(contains(err, "weights_meta.embed.weight.kind: unknown kind 'fp4' (expected one of f32, fp8, e8m0)"))
      << err;
  err = loadError(replaceOnce(goldenText(), "\"dtype\":\"bfloat16\"", "\"dtype\":\"float64\""));
  EXPECT_TRUE(contains(err, "weights_meta.embed.weight.dtype: unknown dtype 'float64'")) << err;
  err = loadError(replaceOnce(goldenText(), "\"dtype\":\"bfloat16\"", "\"dtype\":\"float8_e4m3fn\""));
  EXPECT_TRUE(contains(err, "weights_meta.embed.weight.dtype: 'float8_e4m3fn' is not a dtype of kind 'f32'")) << err;
  // shape [-1] with n -1: the product (-1, "negative") used to equal n.
  err = loadError(replaceOnce(goldenText(), "\"embed.weight\":{\"shape\":[64,64],\"n\":4096,",
                              "\"embed.weight\":{\"shape\":[-1],\"n\":-1,"));
  EXPECT_TRUE(contains(err, "weights_meta.embed.weight.shape: [-1] has a negative extent")) << err;
  // A capture whose n + stride - 1 overflowed: the shape's product is checked first.
  err = loadError(editedGolden([](nlohmann::ordered_json &j) {
    j["prefill12"]["L0.sa_q"]["shape"] = {int64_t(1) << 62, 4};
    j["prefill12"]["L0.sa_q"]["n"] = int64_t(1) << 62;
  }));
  EXPECT_TRUE(contains(err, "prefill12.L0.sa_q.shape: [4611686018427387904, 4] has a negative extent or more than "
                            "INT64_MAX elements"))
      << err;
  err = loadError(editedGolden([](nlohmann::ordered_json &j) {
    j["prefill12"]["L0.sa_q"]["n"] = std::numeric_limits<int64_t>::max();
    j["prefill12"]["L0.sa_q"]["shape"] = {std::numeric_limits<int64_t>::max()};
    j["prefill12"]["L0.sa_q"]["stride"] = 2;
  }));
  EXPECT_TRUE(contains(err, "prefill12.L0.sa_q.n: 9223372036854775807 is out of range")) << err;
}

TEST(GoldenFileHostile, CaptureStrideAndSizeAreBounded) {
  // A stride near 2^62 with one sample used to load (ceil(n / stride) = 1) and made the comparator's n + stride - 1
  // overflow for strides near INT64_MAX.
  std::string err = loadError(editedGolden([](nlohmann::ordered_json &j) {
    j["prefill12"]["L0.sa_q"]["stride"] = int64_t(1) << 62;
    j["prefill12"]["L0.sa_q"]["data"] = {0.0};
  }));
  EXPECT_TRUE(contains(err, "prefill12.L0.sa_q.stride: 4611686018427387904 is out of range [1, 2147483648]")) << err;
  err = loadError(editedGolden([](nlohmann::ordered_json &j) {
    j["prefill12"]["L0.sa_q"]["shape"] = {int64_t(1) << 50};
    j["prefill12"]["L0.sa_q"]["n"] = int64_t(1) << 50;
    j["prefill12"]["L0.sa_q"]["stride"] = int64_t(1) << 31;
  }));
  EXPECT_TRUE(contains(err, "prefill12.L0.sa_q.n: 1125899906842624 is out of range [0, 281474976710656]")) << err;
}
