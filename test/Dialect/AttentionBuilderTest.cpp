//===- AttentionBuilderTest.cpp - mlir::dsa::buildAttentionFunction ----------===//
//
// The layer-function builder (compiler/include/dsa/Dialect/DSA/IR/AttentionBuilder.h):
//   - what it builds equals hand-written MLIR text (the tiny golden's L0, window only, and L5, a ratio-1 index source
//     using candidates; the text written here from DSAOps.td's description, not produced by the builder), verifies,
//     and survives print -> parse -> print unchanged;
//   - the canonical operand types of a ratio-2 kv+index source are those the op description lists (hand-derived);
//   - a bad configuration or operand type gives an error at the given location naming the field or operand, and
//     leaves nothing in the module.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Dialect/DSA/IR/AttentionBuilder.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/IR/DSAOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;
using mlir::dsa::AttentionCompress;
using mlir::dsa::AttentionLayerConfig;
using mlir::dsa::AttentionOperandTypes;
using mlir::dsa::AttentionYarn;

namespace {

/// The tiny golden's geometry (attention-semantics.md section 1) for layer `id` with ratio `ratio`.
AttentionLayerConfig tiny(int64_t id, int64_t ratio) {
  AttentionLayerConfig c;
  c.layerId = id;
  c.dim = 64;
  c.nHeads = 4;
  c.headDim = 32;
  c.ropeHeadDim = 8;
  c.qLoraRank = 16;
  c.oGroups = 2;
  c.oLoraRank = 16;
  c.windowSize = 8;
  c.compressRatio = ratio;
  c.normEps = 1e-20;
  c.ropeTheta = ratio == 0 ? 1e4 : 4e4;
  if (ratio > 0) {
    c.yarn = AttentionYarn{32, 2.0, 32.0, 1.0};
    AttentionCompress cc;
    cc.indexNHeads = 2;
    cc.indexHeadDim = 32;
    cc.indexTopk = 6;
    cc.candidateTopkBlocks = 3;
    cc.candidateBlockSize = 2;
    cc.maxSeqLen = 64;
    c.compress = cc;
  }
  return c;
}

std::string print(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}

std::string print(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

class AttentionBuilderTest : public ::testing::Test {
protected:
  AttentionBuilderTest() {
    context.loadDialect<mlir::dsa::DSADialect, func::FuncDialect>();
    context.printOpOnDiagnostic(false);
    handler = std::make_unique<ScopedDiagnosticHandler>(&context, [this](Diagnostic &d) {
      std::string loc;
      llvm::raw_string_ostream os(loc);
      d.getLocation().print(os);
      diagnostics += loc + ": " + d.str() + "\n";
      return success();
    });
    module = ModuleOp::create(UnknownLoc::get(&context));
  }

  FailureOr<func::FuncOp> build(const AttentionLayerConfig &c) {
    OpBuilder b = OpBuilder::atBlockEnd(module->getBody());
    return mlir::dsa::buildAttentionFunction(b, loc(), c);
  }
  FailureOr<func::FuncOp> build(const AttentionLayerConfig &c, const AttentionOperandTypes &types) {
    OpBuilder b = OpBuilder::atBlockEnd(module->getBody());
    return mlir::dsa::buildAttentionFunction(b, loc(), c, types);
  }
  Location loc() { return NameLoc::get(StringAttr::get(&context, "builder_test")); }

  /// Parses hand-written text and returns its one function printed.
  std::string parsedFunction(const std::string &text) {
    OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(text, &context);
    if (!parsed)
      return "parse failed: " + diagnostics;
    auto fns = parsed->getOps<func::FuncOp>();
    if (std::distance(fns.begin(), fns.end()) != 1)
      return "expected one function";
    return print(*fns.begin());
  }

  /// Expects building `c` to fail with an error at loc() containing `message`, and the module to stay empty.
  void expectError(const FailureOr<func::FuncOp> &built, const std::string &message) {
    EXPECT_TRUE(failed(built));
    EXPECT_NE(diagnostics.find("loc(\"builder_test\"): building the attention function 'attention_L"),
              std::string::npos)
        << diagnostics;
    EXPECT_NE(diagnostics.find(message), std::string::npos) << "want '" << message << "' in:\n" << diagnostics;
    EXPECT_TRUE(module->getBody()->empty()) << print(*module);
    diagnostics.clear();
  }

  MLIRContext context;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::string diagnostics;
  OwningOpRef<ModuleOp> module;
};

TEST_F(AttentionBuilderTest, WindowOnlyLayerEqualsHandWrittenText) {
  FailureOr<func::FuncOp> fn = build(tiny(0, 0));
  ASSERT_TRUE(succeeded(fn)) << diagnostics;
  EXPECT_EQ(fn->getSymName(), "attention_L0");
  EXPECT_TRUE(succeeded(verify(*module)));
  const std::string want = parsedFunction(R"mlir(
func.func @attention_L0(%x: tensor<?x64xbf16>, %start_pos: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>,
                        %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
                        %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>,
                        %wo_b: tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>) {
  %out, %ring1 = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 0, norm_eps = 1.0e-20 : f32,
                                 rope = <rope_dim = 8, theta = 1.0e4 : f64>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return %out, %ring1 : tensor<?x64xbf16>, tensor<8x32xbf16>
}
)mlir");
  EXPECT_EQ(print(*fn), want);
}

TEST_F(AttentionBuilderTest, IndexSourceUsingCandidatesEqualsHandWrittenTextAndRoundTrips) {
  AttentionLayerConfig c = tiny(5, 1);
  c.compress->isIndexSource = true;
  c.compress->usesCandidates = true;
  FailureOr<func::FuncOp> fn = build(c);
  ASSERT_TRUE(succeeded(fn)) << diagnostics;
  EXPECT_TRUE(succeeded(verify(*module)));
  const std::string want = parsedFunction(R"mlir(
func.func @attention_L5(%x: tensor<?x64xbf16>, %start_pos: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>,
                        %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
                        %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>,
                        %wo_b: tensor<64x32xbf16>, %iwq_b: tensor<64x16xbf16>, %weights_proj: tensor<2x64xbf16>,
                        %compress_kv: tensor<?x32xbf16>, %index_k: tensor<?x32xbf16>, %topk: tensor<?x?xi32>,
                        %cand: tensor<?x?xi1>)
    -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>,
        tensor<?x?xi1>) {
  %out, %ring1, %kv1, %ik1, %topk1, %cand1 = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      indexer(%iwq_b, %weights_proj) shared(%compress_kv, %index_k, %topk, %cand)
      {config = #dsa.attn_config<layer_id = 5, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 1, norm_eps = 1.0e-20 : f32,
                                 rope = <rope_dim = 8, theta = 4.0e4 : f64,
                                         yarn = <original_seq_len = 32, factor = 2.0 : f64, beta_fast = 32.0 : f64,
                                                 beta_slow = 1.0 : f64>>,
                                 compress = <is_kv_source = false, is_index_source = true,
                                             is_candidate_source = false, uses_candidates = true, index_n_heads = 2,
                                             index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3,
                                             candidate_block_size = 2, max_seq_len = 64,
                                             index_k_source = <published_slot>, tie_order = <torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<64x16xbf16>, tensor<2x64xbf16>,
         tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>,
          tensor<?x?xi1>)
  return %out, %ring1, %kv1, %ik1, %topk1, %cand1
      : tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>
}
)mlir");
  const std::string got = print(*fn);
  EXPECT_EQ(got, want);
  // print -> parse -> print is the identity.
  EXPECT_EQ(parsedFunction(got), got);
}

TEST_F(AttentionBuilderTest, KvIndexSourceCanonicalTypesAndRoundTrip) {
  // The tiny golden's L2: ratio 2, kv + index source. Expected types from DSAOps.td's operand list, by hand:
  // compressor wkv, wgate [hd, dim] f32 and norm [hd] bf16; index_keys wk [ihd, hd], k_norm [ihd]; indexer wq_b
  // [IH*ihd, q_lora], weights_proj [IH, dim]; state kv_state, score_state [2, hd] f32, caches [64/2, hd] and
  // [64/2, ihd] bf16.
  AttentionLayerConfig c = tiny(2, 2);
  c.compress->isKvSource = true;
  c.compress->isIndexSource = true;
  c.compress->indexKSource = mlir::dsa::IndexKSource::own_cache;
  FailureOr<AttentionOperandTypes> types = mlir::dsa::canonicalAttentionOperandTypes(loc(), c);
  ASSERT_TRUE(succeeded(types)) << diagnostics;
  auto strings = [](ArrayRef<Type> ts) {
    std::vector<std::string> out;
    for (Type t : ts)
      out.push_back(print(t));
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(print(types->x), "tensor<?x64xbf16>");
  EXPECT_EQ(print(types->ring), "tensor<8x32xbf16>");
  EXPECT_EQ(strings(types->compressor), (V{"tensor<32x64xf32>", "tensor<32x64xf32>", "tensor<32xbf16>"}));
  EXPECT_EQ(strings(types->indexKeys), (V{"tensor<32x32xbf16>", "tensor<32xbf16>"}));
  EXPECT_EQ(strings(types->indexer), (V{"tensor<64x16xbf16>", "tensor<2x64xbf16>"}));
  EXPECT_EQ(strings(types->state),
            (V{"tensor<2x32xf32>", "tensor<2x32xf32>", "tensor<32x32xbf16>", "tensor<32x32xbf16>"}));
  EXPECT_EQ(strings(types->shared),
            (V{"tensor<?x32xbf16>", "tensor<?x32xbf16>", "tensor<?x?xi32>", "tensor<?x?xi1>"}));

  c.name = "layer_two";
  FailureOr<func::FuncOp> fn = build(c);
  ASSERT_TRUE(succeeded(fn)) << diagnostics;
  EXPECT_EQ(fn->getSymName(), "layer_two");
  EXPECT_TRUE(succeeded(verify(*module)));
  auto op = *fn->getOps<mlir::dsa::AttentionOp>().begin();
  EXPECT_EQ(op.getCompressor().size(), 3u);
  EXPECT_EQ(op.getIndexKeys().size(), 2u);
  EXPECT_EQ(op.getIndexer().size(), 2u);
  EXPECT_EQ(op.getState().size(), 4u);
  EXPECT_EQ(op.getShared().size(), 4u);
  EXPECT_EQ(op.getNewState().size(), 4u);
  EXPECT_EQ(op.getNewShared().size(), 4u);
  EXPECT_EQ(op.getConfig().getCompress().getIndexKSource().getValue(), mlir::dsa::IndexKSource::own_cache);
  EXPECT_EQ(fn->getFunctionType().getNumInputs(), 3u + 8 + 3 + 2 + 2 + 4 + 4);
  EXPECT_EQ(fn->getFunctionType().getNumResults(), 2u + 4 + 4);
  const std::string got = print(*fn);
  EXPECT_NE(got.find("index_k_source = <own_cache>"), std::string::npos) << got;
  EXPECT_EQ(parsedFunction(got), got);
}

TEST_F(AttentionBuilderTest, BadConfigurationsNameTheField) {
  AttentionLayerConfig c = tiny(0, 0);
  c.ropeHeadDim = 7;
  expectError(build(c), "#dsa.rope: rope_dim must be positive and even, got 7");

  c = tiny(0, 0);
  c.nHeads = 6; // not divisible by o_groups = 4
  c.oGroups = 4;
  expectError(build(c), "#dsa.attn_config: n_heads (6) must be divisible by o_groups (4)");

  c = tiny(0, 0);
  c.dim = -5;
  expectError(build(c), "#dsa.attn_config: dim must be positive, got -5");

  c = tiny(2, 2);
  c.yarn.reset();
  c.compress->isKvSource = true;
  expectError(build(c), "#dsa.attn_config: rope of a compress_ratio > 0 layer must have yarn (section 2)");

  c = tiny(2, 2);
  c.yarn->factor = -1;
  expectError(build(c), "#dsa.yarn: factor must be finite and > 0");

  c = tiny(2, 2);
  c.compress->isCandidateSource = true; // without is_index_source
  expectError(build(c), "#dsa.compress: is_candidate_source requires is_index_source");

  c = tiny(2, 2);
  c.compress.reset();
  expectError(build(c), "#dsa.attn_config: a compress_ratio > 0 layer needs compress");

  c = tiny(0, 0);
  c.compress = tiny(2, 2).compress;
  expectError(build(c), "#dsa.attn_config: compress must be absent on a compress_ratio = 0 layer");
}

TEST_F(AttentionBuilderTest, BadOperandTypesNameTheOperand) {
  const AttentionLayerConfig c = tiny(0, 0);
  FailureOr<AttentionOperandTypes> good = mlir::dsa::canonicalAttentionOperandTypes(loc(), c);
  ASSERT_TRUE(succeeded(good)) << diagnostics;
  Builder b(&context);

  AttentionOperandTypes t = *good;
  t.weights[1] = RankedTensorType::get({16, 65}, b.getBF16Type()); // wq_a must be [q_lora_rank, dim] = [16, 64]
  expectError(build(c, t), "operand 'wq_a' must have shape [q_lora_rank, dim] = [16, 64], got 'tensor<16x65xbf16>'");

  t = *good;
  t.ring = RankedTensorType::get({ShapedType::kDynamic, 32}, b.getBF16Type());
  expectError(build(c, t), "operand 'ring' must have static shape [window_size, head_dim]");

  t = *good;
  t.x = Type();
  expectError(build(c, t), "operand 'x' must have a ranked tensor type");

  t = *good;
  t.weights.pop_back();
  expectError(build(c, t), "the weights group must have 8 operand types");

  t = *good;
  t.state.push_back(b.getI64Type());
  expectError(build(c, t), "operand type #0 of group 'state' must be a ranked tensor type, got 'i64'");

  t = *good; // a state operand on a window-only layer
  t.state.push_back(RankedTensorType::get({2, 32}, b.getF32Type()));
  expectError(build(c, t), "operand group 'state' of a compress_ratio = 0 layer must be");

  // The canonical types of a bad configuration: the configuration's error, no types.
  AttentionLayerConfig bad = c;
  bad.windowSize = 0;
  EXPECT_TRUE(failed(mlir::dsa::canonicalAttentionOperandTypes(loc(), bad)));
  EXPECT_NE(diagnostics.find("window_size must be positive, got 0"), std::string::npos) << diagnostics;
}

} // namespace
