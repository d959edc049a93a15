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
  // Prefill returns kv's s rows, decode the ring's W rows: a static row count must be one of them.
  int64_t n = rTy.getDimSize(0), s = kv.getDimSize(0);
  if (isStaticDim(n) && n != w && !dimsAgree(n, s))
    return emitOpError("result has ") << n << " rows but the window has s = " << s
                                      << " rows (prefill, 'kv') or W = " << w << " rows (decode, 'ring')";
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
// attention (sections 3-11)
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  AttnConfigAttr c = getConfig();
  // As for apply_rope: re-check the attribute's invariants (divisions below rely on them) for attributes built with
  // AttnConfigAttr::get, which does not verify.
  if (failed(AttnConfigAttr::verify([&] { return emitOpError("attribute 'config': "); }, c.getLayerId(), c.getDim(),
                                    c.getNHeads(), c.getHeadDim(), c.getRopeHeadDim(), c.getQLoraRank(), c.getOGroups(),
                                    c.getOLoraRank(), c.getWindowSize(), c.getCompressRatio(), c.getNormEps(),
                                    c.getRope(), c.getCompress())))
    return failure();
  if (c.getCompressRatio() != 0)
    return emitOpError("compress_ratio > 0 layers are not supported yet (config has compress_ratio = ")
           << c.getCompressRatio() << ")";

  const int64_t dyn = ShapedType::kDynamic;
  const int64_t dim = c.getDim(), heads = c.getNHeads(), hd = c.getHeadDim(), qr = c.getQLoraRank(),
                groups = c.getOGroups(), oRank = c.getOLoraRank(), w = c.getWindowSize();
  auto expectShape = [&](StringRef kind, StringRef name, StringRef dims, RankedTensorType ty,
                         ArrayRef<int64_t> want) -> LogicalResult {
    if (shapesAgree(ty.getShape(), want))
      return success();
    return emitOpError() << kind << " '" << name << "' must have shape " << dims << " = " << shapeStr(want) << ", got "
                         << ty;
  };

  RankedTensorType xTy = getX().getType(), ringTy = getRing().getType();
  if (failed(expectShape("operand", "x", "[s, dim]", xTy, {dyn, dim})))
    return failure();
  if (!ringTy.hasStaticShape() || ringTy.getShape() != ArrayRef<int64_t>{w, hd})
    return emitOpError("operand 'ring' must have static shape [window_size, head_dim] = ")
           << shapeStr({w, hd}) << ", got " << ringTy;
  if (failed(expectShape("operand", "attn_sink", "[n_heads]", getAttnSink().getType(), {heads})) ||
      failed(expectShape("operand", "wq_a", "[q_lora_rank, dim]", getWqA().getType(), {qr, dim})) ||
      failed(expectShape("operand", "q_norm", "[q_lora_rank]", getQNorm().getType(), {qr})) ||
      failed(expectShape("operand", "wq_b", "[n_heads*head_dim, q_lora_rank]", getWqB().getType(), {heads * hd, qr})) ||
      failed(expectShape("operand", "wkv", "[head_dim, dim]", getWkv().getType(), {hd, dim})) ||
      failed(expectShape("operand", "kv_norm", "[head_dim]", getKvNorm().getType(), {hd})) ||
      failed(expectShape("operand", "wo_a", "[o_groups*o_lora_rank, n_heads*head_dim/o_groups]", getWoA().getType(),
                         {groups * oRank, heads * hd / groups})) ||
      failed(
          expectShape("operand", "wo_b", "[dim, o_groups*o_lora_rank]", getWoB().getType(), {dim, groups * oRank})) ||
      failed(expectShape("result", "out", "[s, dim] (s = rows of 'x')", getOut().getType(), {xTy.getDimSize(0), dim})))
    return failure();
  if (getNewRing().getType() != ringTy)
    return emitOpError("result 'new_ring' type ")
           << getNewRing().getType() << " must equal the type of 'ring' (" << ringTy << ")";
  return success();
}
LogicalResult CompressPoolOp::verify() { return success(); } // TODO(dialect3): verifier
LogicalResult Fp4QuantE8M0Op::verify() { return success(); } // TODO(dialect3): verifier
LogicalResult Fp4QuantE4M3Op::verify() { return success(); } // TODO(dialect3): verifier
LogicalResult CacheWriteOp::verify() { return success(); } // TODO(dialect3): verifier
LogicalResult IndexerScoresOp::verify() { return success(); } // TODO(dialect3): verifier
LogicalResult CompressVisibilityOp::verify() { return success(); } // TODO(dialect3): verifier
LogicalResult SelectCandidateBlocksOp::verify() { return success(); } // TODO(dialect3): verifier
LogicalResult ApplyCandidatesOp::verify() { return success(); } // TODO(dialect3): verifier
LogicalResult IndexerTopkOp::verify() { return success(); } // TODO(dialect3): verifier
