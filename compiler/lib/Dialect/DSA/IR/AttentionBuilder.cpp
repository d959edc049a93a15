//===- AttentionBuilder.cpp - build a dsa.attention layer function -----------===//
//
// See compiler/include/dsa/Dialect/DSA/IR/AttentionBuilder.h.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Dialect/DSA/IR/AttentionBuilder.h"

#include "dsa/Dialect/DSA/IR/DSAOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

namespace mlir::dsa {

std::string AttentionLayerConfig::functionName() const {
  return name.empty() ? "attention_L" + std::to_string(layerId) : name;
}

namespace {
/// An error at `loc` that names the function being built and what is being built of it.
InFlightDiagnostic errorAt(Location loc, const AttentionLayerConfig &config, StringRef what) {
  return emitError(loc) << "building the attention function '" << config.functionName() << "': " << what;
}
} // namespace

FailureOr<AttnConfigAttr> buildAttnConfig(Location loc, const AttentionLayerConfig &config) {
  MLIRContext *ctx = loc.getContext();
  Builder b(ctx);

  YarnAttr yarn;
  if (config.yarn) {
    const AttentionYarn &y = *config.yarn;
    yarn = YarnAttr::getChecked([&] { return errorAt(loc, config, "#dsa.yarn: "); }, ctx, y.originalSeqLen,
                                b.getF64FloatAttr(y.factor), b.getF64FloatAttr(y.betaFast),
                                b.getF64FloatAttr(y.betaSlow));
    if (!yarn)
      return failure();
  }
  RopeAttr rope = RopeAttr::getChecked([&] { return errorAt(loc, config, "#dsa.rope: "); }, ctx, config.ropeHeadDim,
                                       b.getF64FloatAttr(config.ropeTheta), yarn);
  if (!rope)
    return failure();

  CompressConfigAttr compress;
  if (config.compress) {
    const AttentionCompress &c = *config.compress;
    compress = CompressConfigAttr::getChecked(
        [&] { return errorAt(loc, config, "#dsa.compress: "); }, ctx, b.getBoolAttr(c.isKvSource),
        b.getBoolAttr(c.isIndexSource), b.getBoolAttr(c.isCandidateSource), b.getBoolAttr(c.usesCandidates),
        c.indexNHeads, c.indexHeadDim, c.indexTopk, c.candidateTopkBlocks, c.candidateBlockSize, c.maxSeqLen,
        IndexKSourceAttr::get(ctx, c.indexKSource), TieOrderAttr::get(ctx, c.tieOrder));
    if (!compress)
      return failure();
  }
  AttnConfigAttr attr = AttnConfigAttr::getChecked(
      [&] { return errorAt(loc, config, "#dsa.attn_config: "); }, ctx, config.layerId, config.dim, config.nHeads,
      config.headDim, config.ropeHeadDim, config.qLoraRank, config.oGroups, config.oLoraRank, config.windowSize,
      config.compressRatio, b.getF32FloatAttr(static_cast<float>(config.normEps)), rope, compress);
  if (!attr)
    return failure();
  return attr;
}

FailureOr<AttentionOperandTypes> canonicalAttentionOperandTypes(Location loc, const AttentionLayerConfig &config) {
  // Validate first: the shapes below are only meaningful (positive, divisible) for a valid configuration.
  if (failed(buildAttnConfig(loc, config)))
    return failure();
  Builder b(loc.getContext());
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  const int64_t dyn = ShapedType::kDynamic;
  auto tensor = [](ArrayRef<int64_t> shape, Type element) -> Type { return RankedTensorType::get(shape, element); };

  const AttentionLayerConfig &c = config;
  AttentionOperandTypes t;
  t.x = tensor({dyn, c.dim}, bf16);
  t.ring = tensor({c.windowSize, c.headDim}, bf16);
  const int64_t groupWidth = c.nHeads * c.headDim / c.oGroups;
  t.weights = {tensor({c.nHeads}, f32),
               tensor({c.qLoraRank, c.dim}, bf16),
               tensor({c.qLoraRank}, bf16),
               tensor({c.nHeads * c.headDim, c.qLoraRank}, bf16),
               tensor({c.headDim, c.dim}, bf16),
               tensor({c.headDim}, bf16),
               tensor({c.oGroups * c.oLoraRank, groupWidth}, bf16),
               tensor({c.dim, c.oGroups * c.oLoraRank}, bf16)};
  const int64_t r = c.compressRatio;
  if (r == 0)
    return t;

  const AttentionCompress &cc = *c.compress; // present: buildAttnConfig checked it
  const int64_t ihd = cc.indexHeadDim;
  if (cc.isKvSource) {
    t.compressor.push_back(tensor({c.headDim, c.dim}, r >= 2 ? f32 : bf16)); // wkv
    if (r >= 2)
      t.compressor.push_back(tensor({c.headDim, c.dim}, f32)); // wgate
    t.compressor.push_back(tensor({c.headDim}, bf16));       // norm
    t.indexKeys = {tensor({ihd, c.headDim}, bf16), tensor({ihd}, bf16)}; // wk, k_norm
    if (r >= 2) {
      t.state.push_back(tensor({r, c.headDim}, f32)); // kv_state
      t.state.push_back(tensor({r, c.headDim}, f32)); // score_state
    }
    const int64_t capacity = (cc.maxSeqLen + r - 1) / r;
    t.state.push_back(tensor({capacity, c.headDim}, bf16)); // compressed-KV cache
    t.state.push_back(tensor({capacity, ihd}, bf16));       // index-key cache
  }
  if (cc.isIndexSource)
    t.indexer = {tensor({cc.indexNHeads * ihd, c.qLoraRank}, bf16), tensor({cc.indexNHeads, c.dim}, bf16)};
  // A plain reader may leave index_head_dim 0: its index_k slot's width is then left dynamic.
  t.shared = {tensor({dyn, c.headDim}, bf16), tensor({dyn, ihd > 0 ? ihd : dyn}, bf16), tensor({dyn, dyn}, b.getI32Type()),
              tensor({dyn, dyn}, b.getI1Type())};
  return t;
}

FailureOr<AttentionOperandTypes> batchedAttentionOperandTypes(Location loc, const AttentionLayerConfig &config,
                                                              int64_t batch) {
  FailureOr<AttentionOperandTypes> types = canonicalAttentionOperandTypes(loc, config);
  if (failed(types))
    return failure();
  if (batch != ShapedType::kDynamic && batch < 1)
    return errorAt(loc, config, "a batched step needs batch >= 1 (or dynamic), got ") << batch;
  Builder b(loc.getContext());
  types->x = RankedTensorType::get({batch, 1, config.dim}, b.getBF16Type());
  types->ring = RankedTensorType::get({batch, config.windowSize, config.headDim}, b.getBF16Type());
  types->startPos = RankedTensorType::get({batch}, b.getI64Type());
  // A compressed layer: each state tensor and slot gets the leading B; topk_idxs and candidates hold one token
  // row per sequence.
  auto leadingBatch = [&](Type t, std::optional<int64_t> rows = std::nullopt) -> Type {
    auto type = cast<RankedTensorType>(t);
    SmallVector<int64_t> shape{batch};
    shape.append(type.getShape().begin(), type.getShape().end());
    if (rows)
      shape[1] = *rows;
    return RankedTensorType::get(shape, type.getElementType());
  };
  for (Type &t : types->state)
    t = leadingBatch(t);
  for (auto [i, t] : llvm::enumerate(types->shared))
    t = leadingBatch(t, i >= 2 ? std::optional<int64_t>(1) : std::nullopt);
  return types;
}

FailureOr<func::FuncOp> buildAttentionFunction(OpBuilder &builder, Location loc, const AttentionLayerConfig &config,
                                               const AttentionOperandTypes &types) {
  FailureOr<AttnConfigAttr> attr = buildAttnConfig(loc, config);
  if (failed(attr))
    return failure();

  // Operand types the op's builder cannot take: caught here with the operand's name (the rest is the verifier's).
  if (!isa_and_nonnull<RankedTensorType>(types.x))
    return errorAt(loc, config, "operand 'x' must have a ranked tensor type, got ") << types.x;
  if (!isa_and_nonnull<RankedTensorType>(types.ring))
    return errorAt(loc, config, "operand 'ring' must have a ranked tensor type, got ") << types.ring;
  if (types.weights.size() != 8)
    return errorAt(loc, config, "the weights group must have 8 operand types (attn_sink, wq_a, q_norm, wq_b, wkv, "
                                "kv_norm, wo_a, wo_b), got ")
           << types.weights.size();
  const std::pair<StringRef, ArrayRef<Type>> groups[] = {{"weights", types.weights},     {"compressor", types.compressor},
                                                         {"index_keys", types.indexKeys}, {"indexer", types.indexer},
                                                         {"state", types.state},         {"shared", types.shared}};
  for (auto [name, group] : groups)
    for (auto [i, type] : llvm::enumerate(group))
      if (!isa_and_nonnull<RankedTensorType>(type))
        return errorAt(loc, config, "") << "operand type #" << i << " of group '" << name
                                        << "' must be a ranked tensor type, got " << type;

  if (types.startPos && !isa<IntegerType, RankedTensorType>(types.startPos))
    return errorAt(loc, config, "operand 'start_pos' must be i64 or a tensor<B x i64>, got ") << types.startPos;
  SmallVector<Type> argTypes = {types.x, types.startPos ? types.startPos : builder.getI64Type(), types.ring};
  for (auto [name, group] : groups)
    argTypes.append(group.begin(), group.end());
  SmallVector<Type> resultTypes = {types.x, types.ring};
  resultTypes.append(types.state.begin(), types.state.end());
  resultTypes.append(types.shared.begin(), types.shared.end());

  OpBuilder::InsertionGuard guard(builder);
  auto fn = func::FuncOp::create(builder, loc, config.functionName(), builder.getFunctionType(argTypes, resultTypes));
  Block *entry = fn.addEntryBlock();
  builder.setInsertionPointToStart(entry);

  ArrayRef<BlockArgument> args = entry->getArguments();
  size_t next = 3;
  auto take = [&](size_t n) {
    ValueRange values = ValueRange(args.slice(next, n));
    next += n;
    return values;
  };
  ValueRange w = take(8), compressor = take(types.compressor.size()), indexKeys = take(types.indexKeys.size()),
             indexer = take(types.indexer.size()), state = take(types.state.size()),
             shared = take(types.shared.size());
  auto op = AttentionOp::create(builder, loc, types.x, types.ring, TypeRange(types.state), TypeRange(types.shared),
                                args[0], args[1], args[2], w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], compressor,
                                indexKeys, indexer, state, shared, *attr);
  func::ReturnOp::create(builder, loc, op->getResults());

  // The op's verifier checks every operand type against the configuration and names the bad one.
  if (failed(verify(fn))) {
    errorAt(loc, config, "the function does not verify (see the error above)");
    fn.erase();
    return failure();
  }
  return fn;
}

FailureOr<func::FuncOp> buildAttentionFunction(OpBuilder &builder, Location loc, const AttentionLayerConfig &config) {
  FailureOr<AttentionOperandTypes> types = canonicalAttentionOperandTypes(loc, config);
  if (failed(types))
    return failure();
  return buildAttentionFunction(builder, loc, config, *types);
}

} // namespace mlir::dsa
