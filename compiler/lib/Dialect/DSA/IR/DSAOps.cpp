//===- DSAOps.cpp - dsa operations and their verifiers -----------------------===//
//
// Every verifier follows shared/spec/attention-semantics.md (the section is named in each op's ODS description).
// Shape rule used throughout: a static dimension must equal the static dimension it is checked against; a dynamic
// dimension on either side is accepted (the interpreter checks it at run time). "Result type must equal" checks
// are exact type equality. (Types streamed into a diagnostic are quoted by MLIR: 'tensor<...>'.) Each diagnostic names
// the operand (or attribute) and the mismatch; every message has an expected-error case in test/Dialect/invalid.mlir.
//
//===----------------------------------------------------------------------===//
#include "dsa/Dialect/DSA/IR/DSAOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <string>

using namespace mlir;
using namespace mlir::dsa;

#define GET_OP_CLASSES
#include "dsa/Dialect/DSA/IR/DSAOps.cpp.inc"

namespace {

bool isStaticDim(int64_t d) { return !ShapedType::isDynamic(d); }

/// Two dimensions agree when they are equal or one of them is dynamic.
bool dimsAgree(int64_t a, int64_t b) { return !isStaticDim(a) || !isStaticDim(b) || a == b; }

/// Same rank and every dimension agrees.
bool shapesAgree(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip_equal(a, b))
    if (!dimsAgree(x, y))
      return false;
  return true;
}

/// "[?, 16, 32]".
std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << '[';
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (isStaticDim(d))
      os << d;
    else
      os << '?';
  });
  os << ']';
  return s;
}

/// The window ring (section 4): a static [W, hd] tensor with W, hd > 0 (slot t % W needs W > 0).
LogicalResult verifyRingType(Operation *op, RankedTensorType ring) {
  if (ring.getRank() != 2 || !ring.hasStaticShape() || ring.getDimSize(0) <= 0 || ring.getDimSize(1) <= 0)
    return op->emitOpError("operand 'ring' must be a static rank-2 tensor [W, hd] with W > 0 and hd > 0, got ") << ring;
  return success();
}

/// A step's KV rows [s, hd] with the ring's row width.
LogicalResult verifyKvAgainstRing(Operation *op, RankedTensorType kv, RankedTensorType ring) {
  if (kv.getRank() != 2)
    return op->emitOpError("operand 'kv' must have rank 2 ([s, hd]), got ") << kv;
  if (!dimsAgree(kv.getDimSize(1), ring.getDimSize(1)))
    return op->emitOpError("operand 'kv' has row width ")
           << kv.getDimSize(1) << " but 'ring' has row width " << ring.getDimSize(1);
  return success();
}

LogicalResult verifyResultTypeEquals(Operation *op, Type result, Type operand, StringRef operandName) {
  if (result != operand)
    return op->emitOpError("result type ")
           << result << " must equal the type of '" << operandName << "' (" << operand << ")";
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// linear (section 2)
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  RankedTensorType xTy = getX().getType(), wTy = getWeight().getType(), rTy = getResult().getType();
  if (xTy.getRank() < 2)
    return emitOpError("operand 'x' must have rank >= 2 ([..., K]), got ") << xTy;
  if (wTy.getRank() != 2)
    return emitOpError("operand 'weight' must have rank 2 ([N, K]), got ") << wTy;
  Type ex = xTy.getElementType(), ew = wTy.getElementType(), er = rTy.getElementType();
  if (ex != ew || ew != er)
    return emitOpError("element types must be all bf16 or all f32, got 'x' ")
           << ex << ", 'weight' " << ew << ", result " << er;
  int64_t k = xTy.getShape().back();
  if (!dimsAgree(wTy.getDimSize(1), k))
    return emitOpError("operand 'weight' has K = ")
           << wTy.getDimSize(1) << " (dimension 1) but 'x' has last dimension " << k;
  SmallVector<int64_t> expected(xTy.getShape().drop_back());
  expected.push_back(wTy.getDimSize(0));
  if (!shapesAgree(rTy.getShape(), expected))
    return emitOpError("result must have shape ")
           << shapeStr(expected) << " ('x' leading dimensions followed by 'weight' N), got " << rTy;
  return success();
}

//===----------------------------------------------------------------------===//
// rms_norm (section 2)
//===----------------------------------------------------------------------===//

LogicalResult RmsNormOp::verify() {
  RankedTensorType xTy = getX().getType(), wTy = getWeight().getType(), rTy = getResult().getType();
  if (xTy.getRank() < 1)
    return emitOpError("operand 'x' must have rank >= 1, got ") << xTy;
  if (wTy.getRank() != 1)
    return emitOpError("operand 'weight' must have rank 1 ([row width]), got ") << wTy;
  if (!dimsAgree(wTy.getDimSize(0), xTy.getShape().back()))
    return emitOpError("operand 'weight' has length ")
           << wTy.getDimSize(0) << " but 'x' has last dimension " << xTy.getShape().back();
  if (!shapesAgree(rTy.getShape(), xTy.getShape()))
    return emitOpError("result shape ") << shapeStr(rTy.getShape()) << " must match the shape of 'x' "
                                        << shapeStr(xTy.getShape());
  double eps = getEpsAttr().getValueAsDouble();
  if (!std::isfinite(eps) || eps < 0.0)
    return emitOpError("attribute 'eps' must be finite and >= 0, got ") << eps;
  return success();
}

//===----------------------------------------------------------------------===//
// positions (sections 3-5)
//===----------------------------------------------------------------------===//

LogicalResult PositionsOp::verify() {
  if (getStride() <= 0)
    return emitOpError("attribute 'stride' must be > 0, got ") << getStride();
  if (getResult().getType().getRank() != 1)
    return emitOpError("result must have rank 1 ([count]), got ") << getResult().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// apply_rope (section 2)
//===----------------------------------------------------------------------===//

LogicalResult ApplyRopeOp::verify() {
  RankedTensorType xTy = getX().getType(), pTy = getPositions().getType();
  RopeAttr rope = getRope();
  // The attribute's own invariants (rope_dim positive and even, theta, YaRN) are checked when it is parsed; check
  // them again here for attributes built in C++ with RopeAttr::get, which does not verify.
  if (failed(RopeAttr::verify([&] { return emitOpError("attribute 'rope': "); }, rope.getRopeDim(), rope.getTheta(),
                              rope.getYarn())))
    return failure();
  if (xTy.getRank() < 2)
    return emitOpError("operand 'x' must have rank >= 2 ([s, ..., row]), got ") << xTy;
  int64_t row = xTy.getShape().back();
  if (isStaticDim(row) && rope.getRopeDim() > row)
    return emitOpError("rope.rope_dim (") << rope.getRopeDim() << ") exceeds the row width of 'x' (" << row << ")";
  if (pTy.getRank() != 1)
    return emitOpError("operand 'positions' must have rank 1 ([s]), got ") << pTy;
  if (!dimsAgree(pTy.getDimSize(0), xTy.getDimSize(0)))
    return emitOpError("operand 'positions' has length ")
           << pTy.getDimSize(0) << " but 'x' has leading dimension " << xTy.getDimSize(0);
  return verifyResultTypeEquals(*this, getResult().getType(), xTy, "x");
}

//===----------------------------------------------------------------------===//
// act_quant_fp8 (section 2)
//===----------------------------------------------------------------------===//

LogicalResult ActQuantFp8Op::verify() {
  RankedTensorType xTy = getX().getType();
  int64_t block = getBlockSize();
  if (block <= 0)
    return emitOpError("attribute 'block_size' must be > 0, got ") << block;
  if (xTy.getRank() < 1)
    return emitOpError("operand 'x' must have rank >= 1, got ") << xTy;
  int64_t row = xTy.getShape().back();
  if (isStaticDim(row) && row % block != 0)
    return emitOpError("block_size (") << block << ") must divide the last dimension of 'x' (" << row << ")";
  return verifyResultTypeEquals(*this, getResult().getType(), xTy, "x");
}

//===----------------------------------------------------------------------===//
// ring_update, window_kv, window_indices (section 4)
//===----------------------------------------------------------------------===//

LogicalResult RingUpdateOp::verify() {
  RankedTensorType ring = getRing().getType();
  if (failed(verifyRingType(*this, ring)) || failed(verifyKvAgainstRing(*this, getKv().getType(), ring)))
    return failure();
  return verifyResultTypeEquals(*this, getResult().getType(), ring, "ring");
}

LogicalResult WindowKvOp::verify() {
  RankedTensorType ring = getRing().getType(), kv = getKv().getType(), rTy = getResult().getType();
  if (failed(verifyRingType(*this, ring)) || failed(verifyKvAgainstRing(*this, kv, ring)))
    return failure();
  int64_t w = ring.getDimSize(0), hd = ring.getDimSize(1);
  if (rTy.getRank() != 2 || !dimsAgree(rTy.getDimSize(1), hd))
    return emitOpError("result must have rank 2 with row width hd = ") << hd << ", got " << rTy;
  // Prefill returns kv's s rows, decode the ring's W rows, a chunk at start_pos > 0 W + s rows: a static row count
  // must be one of them.
  int64_t n = rTy.getDimSize(0), s = kv.getDimSize(0);
  if (isStaticDim(n) && n != w && !dimsAgree(n, s) && n != w + s)
    return emitOpError("result has ") << n << " rows but the window has s = " << s << " rows (prefill, 'kv'), W = "
                                      << w << " rows (decode, 'ring') or W + s rows (a chunk at start_pos > 0)";
  return success();
}

LogicalResult WindowIndicesOp::verify() {
  int64_t w = getWindowSize();
  if (w <= 0)
    return emitOpError("attribute 'window_size' must be > 0, got ") << w;
  RankedTensorType rTy = getResult().getType();
  if (rTy.getRank() != 2)
    return emitOpError("result must have rank 2 ([queries, width]), got ") << rTy;
  if (isStaticDim(rTy.getDimSize(1)) && rTy.getDimSize(1) != w)
    return emitOpError("result width ") << rTy.getDimSize(1) << " must be window_size (" << w << ") or dynamic";
  return success();
}

//===----------------------------------------------------------------------===//
// sparse_attn (section 10)
//===----------------------------------------------------------------------===//

LogicalResult SparseAttnOp::verify() {
  RankedTensorType qTy = getQ().getType(), kvTy = getKv().getType(), iTy = getIndices().getType(),
                   sTy = getSink().getType();
  if (qTy.getRank() != 3)
    return emitOpError("operand 'q' must have rank 3 ([s, H, hd]), got ") << qTy;
  if (kvTy.getRank() != 2)
    return emitOpError("operand 'kv' must have rank 2 ([n, hd]), got ") << kvTy;
  if (!dimsAgree(kvTy.getDimSize(1), qTy.getDimSize(2)))
    return emitOpError("operand 'kv' has row width ")
           << kvTy.getDimSize(1) << " but 'q' has head_dim " << qTy.getDimSize(2);
  if (iTy.getRank() != 2)
    return emitOpError("operand 'indices' must have rank 2 ([s, k]), got ") << iTy;
  if (!dimsAgree(iTy.getDimSize(0), qTy.getDimSize(0)))
    return emitOpError("operand 'indices' has ")
           << iTy.getDimSize(0) << " rows but 'q' has " << qTy.getDimSize(0) << " queries";
  if (sTy.getRank() != 1)
    return emitOpError("operand 'sink' must have rank 1 ([H]), got ") << sTy;
  if (!dimsAgree(sTy.getDimSize(0), qTy.getDimSize(1)))
    return emitOpError("operand 'sink' has length ")
           << sTy.getDimSize(0) << " but 'q' has " << qTy.getDimSize(1) << " heads";
  double scale = getScaleAttr().getValueAsDouble();
  if (!std::isfinite(scale) || !(scale > 0.0))
    return emitOpError("attribute 'scale' must be finite and > 0, got ") << scale;
  return verifyResultTypeEquals(*this, getResult().getType(), qTy, "q");
}

//===----------------------------------------------------------------------===//
// grouped_output (section 11)
//===----------------------------------------------------------------------===//

LogicalResult GroupedOutputOp::verify() {
  RankedTensorType oTy = getO().getType(), wTy = getWoA().getType(), rTy = getResult().getType();
  int64_t groups = getGroups();
  if (groups <= 0)
    return emitOpError("attribute 'groups' must be > 0, got ") << groups;
  if (oTy.getRank() != 3)
    return emitOpError("operand 'o' must have rank 3 ([s, H, hd]), got ") << oTy;
  if (wTy.getRank() != 2)
    return emitOpError("operand 'wo_a' must have rank 2 ([groups*R, H*hd/groups]), got ") << wTy;
  int64_t h = oTy.getDimSize(1), hd = oTy.getDimSize(2);
  if (isStaticDim(h) && h % groups != 0)
    return emitOpError("groups (") << groups << ") must divide the head count H (" << h << ") of 'o'";
  if (isStaticDim(h) && isStaticDim(hd) && !dimsAgree(wTy.getDimSize(1), h * hd / groups))
    return emitOpError("operand 'wo_a' has ") << wTy.getDimSize(1) << " columns but H*hd/groups = " << h << "*" << hd
                                              << "/" << groups << " = " << h * hd / groups;
  int64_t rows = wTy.getDimSize(0);
  if (isStaticDim(rows) && rows % groups != 0)
    return emitOpError("operand 'wo_a' has ") << rows << " rows, not a multiple of groups (" << groups << ")";
  SmallVector<int64_t> expected{oTy.getDimSize(0), rows};
  if (!shapesAgree(rTy.getShape(), expected))
    return emitOpError("result must have shape [s, wo_a rows] = ") << shapeStr(expected) << ", got " << rTy;
  return success();
}

//===----------------------------------------------------------------------===//
// probe
//===----------------------------------------------------------------------===//

LogicalResult ProbeOp::verify() {
  if (getName().empty())
    return emitOpError("attribute 'name' must not be empty");
  return success();
}

//===----------------------------------------------------------------------===//
// Compressed attention primitives (sections 5-9)
//===----------------------------------------------------------------------===//

namespace {

/// `kind 'name' must have shape dims = [..], got T` unless `ty`'s shape agrees with `want`.
LogicalResult expectShape(Operation *op, StringRef kind, StringRef name, StringRef dims, RankedTensorType ty,
                          ArrayRef<int64_t> want) {
  if (shapesAgree(ty.getShape(), want))
    return success();
  return op->emitOpError() << kind << " '" << name << "' must have shape " << dims << " = " << shapeStr(want)
                           << ", got " << ty;
}

LogicalResult expectRank(Operation *op, StringRef name, StringRef dims, RankedTensorType ty) {
  if (ty.getRank() == static_cast<int64_t>(dims.count(',') + 1))
    return success();
  return op->emitOpError() << "operand '" << name << "' must have rank " << dims.count(',') + 1 << " (" << dims
                           << "), got " << ty;
}

/// Compressed positions are counted with floor division by the ratio (section 6: width = end // r).
LogicalResult verifyRatioAtLeast(Operation *op, int64_t ratio, int64_t min) {
  if (ratio < min)
    return op->emitOpError("attribute 'ratio' must be >= ") << min << ", got " << ratio;
  return success();
}

LogicalResult verifyPositiveAttr(Operation *op, StringRef name, int64_t v) {
  if (v <= 0)
    return op->emitOpError("attribute '") << name << "' must be > 0, got " << v;
  return success();
}

/// The fp4 round trips (section 2): block_size > 0 dividing the last dimension; bf16 result of x's shape.
LogicalResult verifyFp4Quant(Operation *op, RankedTensorType xTy, RankedTensorType rTy, int64_t block) {
  if (failed(verifyPositiveAttr(op, "block_size", block)))
    return failure();
  if (xTy.getRank() < 1)
    return op->emitOpError("operand 'x' must have rank >= 1, got ") << xTy;
  int64_t row = xTy.getShape().back();
  if (isStaticDim(row) && row % block != 0)
    return op->emitOpError("block_size (") << block << ") must divide the last dimension of 'x' (" << row << ")";
  if (rTy.getShape() != xTy.getShape())
    return op->emitOpError("result shape ")
           << shapeStr(rTy.getShape()) << " must equal the shape of 'x' " << shapeStr(xTy.getShape());
  return success();
}

/// scores [s, width] of the indexer stages (section 6).
LogicalResult verifyScores(Operation *op, RankedTensorType ty) { return expectRank(op, "scores", "[s, width]", ty); }

} // namespace

LogicalResult CompressPoolOp::verify() {
  const int64_t dyn = ShapedType::kDynamic;
  int64_t r = getRatio();
  // Ratio 1 has no state and no pooling (section 5): its latent is rms_norm(linear(x, wkv_c)).
  if (r < 2)
    return emitOpError("attribute 'ratio' must be >= 2 (a ratio-1 compressor does not pool, section 5), got ") << r;
  RankedTensorType kvTy = getKv().getType(), stTy = getKvState().getType();
  if (failed(expectRank(*this, "kv", "[s, hd]", kvTy)))
    return failure();
  if (getScore().getType() != kvTy)
    return emitOpError("operand 'score' type ")
           << getScore().getType() << " must equal the type of 'kv' (" << kvTy << ")";
  int64_t hd = kvTy.getDimSize(1);
  if (failed(expectShape(*this, "operand", "kv_state", "[ratio, hd]", stTy, {r, hd})))
    return failure();
  if (getScoreState().getType() != stTy)
    return emitOpError("operand 'score_state' type ")
           << getScoreState().getType() << " must equal the type of 'kv_state' (" << stTy << ")";
  if (failed(expectShape(*this, "result", "pooled", "[g, hd]", getPooled().getType(), {dyn, hd})))
    return failure();
  if (getNewKvState().getType() != stTy)
    return emitOpError("result 'new_kv_state' type ")
           << getNewKvState().getType() << " must equal the type of 'kv_state' (" << stTy << ")";
  if (getNewScoreState().getType() != stTy)
    return emitOpError("result 'new_score_state' type ")
           << getNewScoreState().getType() << " must equal the type of 'score_state' (" << stTy << ")";
  return success();
}

LogicalResult Fp4QuantE8M0Op::verify() {
  return verifyFp4Quant(*this, getX().getType(), getResult().getType(), getBlockSize());
}

LogicalResult Fp4QuantE4M3Op::verify() {
  return verifyFp4Quant(*this, getX().getType(), getResult().getType(), getBlockSize());
}

LogicalResult CacheWriteOp::verify() {
  RankedTensorType cTy = getCache().getType(), rowsTy = getRows().getType();
  if (failed(verifyRatioAtLeast(*this, getRatio(), 1)) || failed(expectRank(*this, "cache", "[C, w]", cTy)) ||
      failed(expectRank(*this, "rows", "[g, w]", rowsTy)))
    return failure();
  if (!dimsAgree(rowsTy.getDimSize(1), cTy.getDimSize(1)))
    return emitOpError("operand 'rows' has row width ")
           << rowsTy.getDimSize(1) << " but 'cache' has row width " << cTy.getDimSize(1);
  return verifyResultTypeEquals(*this, getResult().getType(), cTy, "cache");
}

LogicalResult IndexerScoresOp::verify() {
  const int64_t dyn = ShapedType::kDynamic;
  if (failed(verifyRatioAtLeast(*this, getRatio(), 1)))
    return failure();
  double scale = getWeightScaleAttr().getValueAsDouble();
  if (!std::isfinite(scale) || !(scale > 0.0))
    return emitOpError("attribute 'weight_scale' must be finite and > 0, got ") << scale;
  RankedTensorType iqTy = getIq().getType();
  if (failed(expectRank(*this, "iq", "[s, IH, ihd]", iqTy)))
    return failure();
  int64_t s = iqTy.getDimSize(0), ih = iqTy.getDimSize(1), ihd = iqTy.getDimSize(2);
  if (failed(expectShape(*this, "operand", "weights", "[s, IH] (from 'iq')", getWeights().getType(), {s, ih})) ||
      failed(expectShape(*this, "operand", "keys", "[n, ihd] (ihd from 'iq')", getKeys().getType(), {dyn, ihd})) ||
      failed(expectShape(*this, "result", "result", "[s, width] (s from 'iq')", getResult().getType(), {s, dyn})))
    return failure();
  if (Value entry = getEntryKeys())
    if (failed(expectShape(*this, "operand", "entry_keys", "[n, ihd] (ihd from 'iq')",
                           cast<RankedTensorType>(entry.getType()), {dyn, ihd})))
      return failure();
  return success();
}

LogicalResult CompressVisibilityOp::verify() {
  if (failed(verifyRatioAtLeast(*this, getRatio(), 1)) || failed(verifyScores(*this, getScores().getType())))
    return failure();
  return verifyResultTypeEquals(*this, getResult().getType(), getScores().getType(), "scores");
}

LogicalResult SelectCandidateBlocksOp::verify() {
  RankedTensorType sTy = getScores().getType();
  if (failed(verifyRatioAtLeast(*this, getRatio(), 1)) ||
      failed(verifyPositiveAttr(*this, "topk_blocks", getTopkBlocks())) ||
      failed(verifyPositiveAttr(*this, "block_size", getBlockSize())) || failed(verifyScores(*this, sTy)))
    return failure();
  return expectShape(*this, "result", "result", "[s, width] (the shape of 'scores')", getResult().getType(),
                     sTy.getShape());
}

LogicalResult ApplyCandidatesOp::verify() {
  RankedTensorType sTy = getScores().getType();
  if (failed(verifyScores(*this, sTy)) ||
      failed(expectShape(*this, "operand", "mask", "[s, width] (the shape of 'scores')", getMask().getType(),
                         sTy.getShape())))
    return failure();
  return verifyResultTypeEquals(*this, getResult().getType(), sTy, "scores");
}

LogicalResult IndexerTopkOp::verify() {
  const int64_t dyn = ShapedType::kDynamic;
  int64_t topk = getIndexTopk();
  RankedTensorType sTy = getScores().getType(), rTy = getResult().getType();
  if (failed(verifyRatioAtLeast(*this, getRatio(), 1)) || failed(verifyPositiveAttr(*this, "index_topk", topk)) ||
      failed(verifyPositiveAttr(*this, "window_size", getWindowSize())) || failed(verifyScores(*this, sTy)))
    return failure();
  // k = min(index_topk, width): static when the scores' width is.
  int64_t width = sTy.getDimSize(1);
  int64_t k = isStaticDim(width) ? std::min(topk, width) : dyn;
  if (failed(expectShape(*this, "result", "result", "[s, min(index_topk, width)]", rTy, {sTy.getDimSize(0), k})))
    return failure();
  if (isStaticDim(rTy.getDimSize(1)) && rTy.getDimSize(1) > topk)
    return emitOpError("result width ") << rTy.getDimSize(1) << " exceeds index_topk (" << topk << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// attention (sections 3-11)
//===----------------------------------------------------------------------===//

namespace {

constexpr unsigned kNumFixedOperands = 11; // x, start_pos, ring, 8 weights
constexpr StringLiteral kGroupNames[] = {"compressor", "index_keys", "indexer", "state", "shared"};

/// One operand a group must hold: its name, element type, shape (dims spelled in config's names) and whether the
/// shape must be static (state, like the ring, has a fixed capacity).
struct GroupSlot {
  StringRef name;
  Type elementType;
  std::string dims;
  SmallVector<int64_t> shape;
  bool requireStatic = false;
};

std::string slotNames(ArrayRef<GroupSlot> slots) {
  std::string s = "(";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(slots, os, [&](const GroupSlot &slot) { os << slot.name; });
  os << ')';
  return s;
}

/// Checks that operand group `group` holds exactly `slots` (empty: the group must be absent) for a layer described
/// by `role`, each operand of the slot's element type and shape.
LogicalResult verifyGroup(Operation *op, StringRef group, StringRef role, OperandRange operands,
                          ArrayRef<GroupSlot> slots) {
  if (operands.size() != slots.size()) {
    auto diag = op->emitOpError() << "operand group '" << group << "' of " << role << " must be ";
    if (slots.empty())
      diag << "empty";
    else
      diag << slotNames(slots);
    return diag << ", got " << operands.size() << " operand" << (operands.size() == 1 ? "" : "s");
  }
  for (auto [i, value, slot] : llvm::enumerate(operands, slots)) {
    auto ty = cast<RankedTensorType>(value.getType());
    // requireStatic: every dimension the slot states is static and equal (a batched step's leading B may be
    // dynamic in the slot: then it agrees with anything).
    auto staticAgree = [&]() {
      if (ty.getRank() != static_cast<int64_t>(slot.shape.size()))
        return false;
      for (auto [got, want] : llvm::zip_equal(ty.getShape(), slot.shape))
        if (!ShapedType::isDynamic(want) && got != want)
          return false;
      return true;
    };
    bool ok = ty.getElementType() == slot.elementType &&
              (slot.requireStatic ? staticAgree() : shapesAgree(ty.getShape(), slot.shape));
    if (!ok)
      return op->emitOpError() << "operand '" << slot.name << "' (operand group '" << group << "' #" << i << ") of "
                               << role << " must be a " << (slot.requireStatic ? "static " : "") << "tensor "
                               << slot.dims << " = " << shapeStr(slot.shape) << " of " << slot.elementType << ", got "
                               << ty;
  }
  return success();
}

/// new_state / new_shared carry the updated state / slots: one result per operand of the group, of its type.
LogicalResult verifyResultGroup(Operation *op, StringRef resultGroup, StringRef operandGroup, ResultRange results,
                                OperandRange operands) {
  if (results.size() != operands.size())
    return op->emitOpError() << "result group '" << resultGroup << "' must have one result per operand of group '"
                             << operandGroup << "' (" << operands.size() << "), got " << results.size();
  for (auto [i, res, opd] : llvm::enumerate(results, operands))
    if (res.getType() != opd.getType())
      return op->emitOpError() << "result '" << resultGroup << "' #" << i << " type " << res.getType()
                               << " must equal the type of operand group '" << operandGroup << "' #" << i << " ("
                               << opd.getType() << ")";
  return success();
}

} // namespace

ParseResult AttentionOp::parse(OpAsmParser &parser, OperationState &result) {
  SmallVector<OpAsmParser::UnresolvedOperand, 16> fixed(3);
  SmallVector<OpAsmParser::UnresolvedOperand, 8> weights;
  SMLoc weightsLoc;
  if (parser.parseOperand(fixed[0]) || parser.parseComma() || parser.parseOperand(fixed[1]) || parser.parseComma() ||
      parser.parseOperand(fixed[2]) || parser.parseKeyword("weights") || parser.getCurrentLocation(&weightsLoc) ||
      parser.parseOperandList(weights, OpAsmParser::Delimiter::Paren))
    return failure();
  if (weights.size() != kNumFixedOperands - 3)
    return parser.emitError(weightsLoc) << "'weights(...)' must list the 8 weights (attn_sink, wq_a, q_norm, wq_b, "
                                           "wkv, kv_norm, wo_a, wo_b), got "
                                        << weights.size();
  fixed.append(weights);
  // The groups in their fixed order, each omitted when empty (as a declarative `(kw ( $g^ ))?` would parse them).
  SmallVector<OpAsmParser::UnresolvedOperand, 4> groups[std::size(kGroupNames)];
  for (auto [name, group] : llvm::zip_equal(kGroupNames, groups))
    if (succeeded(parser.parseOptionalKeyword(name)) && parser.parseOperandList(group, OpAsmParser::Delimiter::Paren))
      return failure();
  SMLoc attrLoc = parser.getCurrentLocation();
  if (parser.parseOptionalAttrDict(result.attributes) ||
      failed(verifyInherentAttrs(result.name, result.attributes, [&] {
        return parser.emitError(attrLoc) << "'" << result.name.getStringRef() << "' op ";
      })))
    return failure();
  SMLoc typeLoc;
  FunctionType fnType;
  if (parser.parseColon() || parser.getCurrentLocation(&typeLoc) || parser.parseType(fnType))
    return failure();

  const size_t numState = groups[3].size(), numShared = groups[4].size();
  const size_t numResults = 2 + numState + numShared;
  if (fnType.getNumResults() != numResults)
    return parser.emitError(typeLoc) << "'dsa.attention' has " << numResults
                                     << " results (out, new_ring, one new_state per 'state' operand (" << numState
                                     << "), one new_shared per 'shared' operand (" << numShared
                                     << ")), but the type lists " << fnType.getNumResults();
  auto &props = result.getOrAddProperties<AttentionOp::Properties>();
  int32_t operandSizes[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  llvm::copy(operandSizes, props.operandSegmentSizes.begin());
  for (auto [i, group] : llvm::enumerate(groups))
    props.operandSegmentSizes[kNumFixedOperands + i] = static_cast<int32_t>(group.size());
  props.resultSegmentSizes = {1, 1, static_cast<int32_t>(numState), static_cast<int32_t>(numShared)};
  result.addTypes(fnType.getResults());
  return parser.resolveOperands(
      llvm::concat<const OpAsmParser::UnresolvedOperand>(fixed, groups[0], groups[1], groups[2], groups[3], groups[4]),
      fnType.getInputs(), parser.getNameLoc(), result.operands);
}

void AttentionOp::print(OpAsmPrinter &p) {
  p << ' ' << getX() << ", " << getStartPos() << ", " << getRing() << " weights(" << getAttnSink() << ", " << getWqA()
    << ", " << getQNorm() << ", " << getWqB() << ", " << getWkv() << ", " << getKvNorm() << ", " << getWoA() << ", "
    << getWoB() << ')';
  OperandRange groups[] = {getCompressor(), getIndexKeys(), getIndexer(), getState(), getShared()};
  for (auto [name, group] : llvm::zip_equal(kGroupNames, groups))
    if (!group.empty())
      p << ' ' << name << '(' << group << ')';
  p.printOptionalAttrDict((*this)->getAttrs(), {"operandSegmentSizes", "resultSegmentSizes"});
  p << " : ";
  p.printFunctionalType(getOperation()->getOperandTypes(), getOperation()->getResultTypes());
}

LogicalResult AttentionOp::verify() {
  AttnConfigAttr c = getConfig();
  // As for apply_rope: re-check the attribute's invariants (divisions below rely on them) for attributes built with
  // AttnConfigAttr::get, which does not verify. This also re-checks config.compress.
  if (failed(AttnConfigAttr::verify([&] { return emitOpError("attribute 'config': "); }, c.getLayerId(), c.getDim(),
                                    c.getNHeads(), c.getHeadDim(), c.getRopeHeadDim(), c.getQLoraRank(), c.getOGroups(),
                                    c.getOLoraRank(), c.getWindowSize(), c.getCompressRatio(), c.getNormEps(),
                                    c.getRope(), c.getCompress())))
    return failure();

  const int64_t dyn = ShapedType::kDynamic;
  const int64_t dim = c.getDim(), heads = c.getNHeads(), hd = c.getHeadDim(), qr = c.getQLoraRank(),
                groups = c.getOGroups(), oRank = c.getOLoraRank(), w = c.getWindowSize(),
                r = c.getCompressRatio();
  Operation *op = *this;

  RankedTensorType xTy = getX().getType(), ringTy = getRing().getType();
  // Batched decode: start_pos is a tensor<B x i64>, x [B, 1, dim], ring [B, W, hd] (B agreeing where static).
  auto batchTy = dyn_cast<RankedTensorType>(getStartPos().getType());
  int64_t batch = dyn;
  if (batchTy) {
    if (batchTy.getRank() != 1)
      return emitOpError("operand 'start_pos' of a batched step must be a tensor<B x i64> (one position per "
                         "sequence), got ")
             << batchTy;
    // B: the first static one of start_pos's, x's and ring's leading dimensions; the others must agree with it.
    batch = batchTy.getDimSize(0);
    for (RankedTensorType ty : {xTy, ringTy})
      if (ShapedType::isDynamic(batch) && ty.getRank() == 3)
        batch = ty.getDimSize(0);
    if (xTy.getRank() != 3 || xTy.getDimSize(1) != 1 || !shapesAgree(xTy.getShape(), {batch, 1, dim}))
      return emitOpError("operand 'x' of a batched step must have shape [B, 1, dim] = ")
             << shapeStr({batch, 1, dim}) << " (B from 'start_pos', one token per sequence), got " << xTy;
    if (ringTy.getRank() != 3 || ShapedType::isDynamic(ringTy.getDimSize(1)) ||
        ShapedType::isDynamic(ringTy.getDimSize(2)) || !shapesAgree(ringTy.getShape(), {batch, w, hd}))
      return emitOpError("operand 'ring' of a batched step must have shape [B, window_size, head_dim] = ")
             << shapeStr({batch, w, hd}) << " (window_size and head_dim static), got " << ringTy;
  } else {
    if (failed(expectShape(op, "operand", "x", "[s, dim]", xTy, {dyn, dim})))
      return failure();
    if (!ringTy.hasStaticShape() || ringTy.getShape() != ArrayRef<int64_t>{w, hd})
      return emitOpError("operand 'ring' must have static shape [window_size, head_dim] = ")
             << shapeStr({w, hd}) << ", got " << ringTy;
  }
  if (failed(expectShape(op, "operand", "attn_sink", "[n_heads]", getAttnSink().getType(), {heads})) ||
      failed(expectShape(op, "operand", "wq_a", "[q_lora_rank, dim]", getWqA().getType(), {qr, dim})) ||
      failed(expectShape(op, "operand", "q_norm", "[q_lora_rank]", getQNorm().getType(), {qr})) ||
      failed(expectShape(op, "operand", "wq_b", "[n_heads*head_dim, q_lora_rank]", getWqB().getType(),
                         {heads * hd, qr})) ||
      failed(expectShape(op, "operand", "wkv", "[head_dim, dim]", getWkv().getType(), {hd, dim})) ||
      failed(expectShape(op, "operand", "kv_norm", "[head_dim]", getKvNorm().getType(), {hd})) ||
      failed(expectShape(op, "operand", "wo_a", "[o_groups*o_lora_rank, n_heads*head_dim/o_groups]", getWoA().getType(),
                         {groups * oRank, heads * hd / groups})) ||
      failed(expectShape(op, "operand", "wo_b", "[dim, o_groups*o_lora_rank]", getWoB().getType(),
                         {dim, groups * oRank})) ||
      failed(batchTy ? expectShape(op, "result", "out", "[B, 1, dim] (the shape of 'x')", getOut().getType(),
                                   xTy.getShape())
                     : expectShape(op, "result", "out", "[s, dim] (s = rows of 'x')", getOut().getType(),
                                   {xTy.getDimSize(0), dim})))
    return failure();
  if (getNewRing().getType() != ringTy)
    return emitOpError("result 'new_ring' type ")
           << getNewRing().getType() << " must equal the type of 'ring' (" << ringTy << ")";

  // The compressed part (sections 5-8): which operand groups a layer has follows from its ratio and role.
  OperandRange compressor = getCompressor(), indexKeys = getIndexKeys(), indexer = getIndexer(), state = getState(),
               shared = getShared();
  if (r == 0) {
    OperandRange all[] = {compressor, indexKeys, indexer, state, shared};
    for (auto [name, group] : llvm::zip_equal(kGroupNames, all))
      if (failed(verifyGroup(op, name, "a compress_ratio = 0 layer", group, {})))
        return failure();
  } else {
    CompressConfigAttr cc = c.getCompress();
    const bool kvSource = cc.getIsKvSource().getValue(), indexSource = cc.getIsIndexSource().getValue();
    const int64_t ih = cc.getIndexNHeads(), ihd = cc.getIndexHeadDim();
    // C = ceil(max_seq_len / ratio) cache rows (section 1: max_seq_len is the capacity in tokens).
    const int64_t cap = (cc.getMaxSeqLen() + r - 1) / r;
    Builder b(getContext());
    Type bf16 = b.getBF16Type(), f32 = b.getF32Type(), i32 = b.getI32Type(), i1 = b.getI1Type();

    std::string kvRole, notKvRole = "a layer that is not a kv source (config.compress.is_kv_source = false)";
    llvm::raw_string_ostream(kvRole) << "a ratio-" << r << " kv source";
    StringRef kvGroupRole = kvSource ? StringRef(kvRole) : StringRef(notKvRole);
    StringRef indexGroupRole = indexSource
                                   ? "an index source"
                                   : "a layer that is not an index source (config.compress.is_index_source = false)";

    SmallVector<GroupSlot> compressorSlots, indexKeySlots, indexerSlots, stateSlots;
    // A batched step's state and slots have a leading B (one row per sequence); its slots hold one token row per
    // sequence (topk_idxs and candidates [B, 1, ?]).
    auto perSequence = [&](GroupSlot slot) {
      if (!batchTy)
        return slot;
      slot.dims = "[B, " + slot.dims.substr(1);
      slot.shape.insert(slot.shape.begin(), batch);
      return slot;
    };
    if (kvSource) {
      // Section 5: ratio 1 is a bf16 linear + rms_norm; ratio >= 2 projects kv and gate in f32 and pools.
      if (r == 1) {
        compressorSlots.push_back({"wkv", bf16, "[head_dim, dim]", {hd, dim}});
      } else {
        compressorSlots.push_back({"wkv", f32, "[head_dim, dim]", {hd, dim}});
        compressorSlots.push_back({"wgate", f32, "[head_dim, dim]", {hd, dim}});
      }
      compressorSlots.push_back({"norm", bf16, "[head_dim]", {hd}});
      // Section 6 step 1: index keys from the pre-RoPE latent.
      indexKeySlots.push_back({"wk", bf16, "[index_head_dim, head_dim]", {ihd, hd}});
      indexKeySlots.push_back({"k_norm", bf16, "[index_head_dim]", {ihd}});
      if (r >= 2) {
        stateSlots.push_back(perSequence({"kv_state", f32, "[compress_ratio, head_dim]", {r, hd}, true}));
        stateSlots.push_back(perSequence({"score_state", f32, "[compress_ratio, head_dim]", {r, hd}, true}));
      }
      stateSlots.push_back(perSequence(
          {"kv_cache", bf16, "[C, head_dim] (C = ceil(max_seq_len / compress_ratio))", {cap, hd}, true}));
      stateSlots.push_back(perSequence(
          {"index_k_cache", bf16, "[C, index_head_dim] (C = ceil(max_seq_len / compress_ratio))", {cap, ihd}, true}));
    }
    if (indexSource) {
      // Section 6 steps 2-3.
      indexerSlots.push_back({"wq_b", bf16, "[index_n_heads*index_head_dim, q_lora_rank]", {ih * ihd, qr}});
      indexerSlots.push_back({"weights_proj", bf16, "[index_n_heads, dim]", {ih, dim}});
    }
    // Section 8: the four slots as they stand before this layer. A reader's config need not state index_head_dim
    // (the attribute only requires it of sources): then the index_k slot's width is not checked here.
    const int64_t slotIhd = ihd > 0 ? ihd : dyn;
    const int64_t slotRows = batchTy ? 1 : dyn;
    GroupSlot sharedSlots[] = {perSequence({"compress_kv", bf16, "[?, head_dim]", {dyn, hd}}),
                               perSequence({"index_k", bf16, "[?, index_head_dim]", {dyn, slotIhd}}),
                               perSequence({"topk_idxs", i32, batchTy ? "[1, ?]" : "[?, ?]", {slotRows, dyn}}),
                               perSequence({"candidates", i1, batchTy ? "[1, ?]" : "[?, ?]", {slotRows, dyn}})};
    if (failed(verifyGroup(op, "compressor", kvGroupRole, compressor, compressorSlots)) ||
        failed(verifyGroup(op, "index_keys", kvGroupRole, indexKeys, indexKeySlots)) ||
        failed(verifyGroup(op, "indexer", indexGroupRole, indexer, indexerSlots)) ||
        failed(verifyGroup(op, "state", kvGroupRole, state, stateSlots)) ||
        failed(verifyGroup(op, "shared", "a compress_ratio > 0 layer", shared, sharedSlots)))
      return failure();
  }
  if (failed(verifyResultGroup(op, "new_state", "state", getNewState(), state)) ||
      failed(verifyResultGroup(op, "new_shared", "shared", getNewShared(), shared)))
    return failure();
  return success();
}
