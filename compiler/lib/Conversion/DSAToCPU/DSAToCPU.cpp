//===- DSAToCPU.cpp - dsa primitives -> upstream dialects for the CPU ---------===//
//
// `dsa-to-cpu` rewrites the dsa primitives into linalg.generic / tensor / arith / math / scf ops on
// tensors, BIT-EXACT to the reference kernels (kernels/lib/Kernels.cpp, core/lib/Numerics): same f32
// operations in the same order, same rounding points.
//
//  - Dot products (linear, rms_norm's sum of squares, grouped_output, sparse_attn's q.k) follow the kernels'
//    dotF32: eight f32 lanes acc[l] += a[8i+l]*b[8i+l] over i ascending, combined as
//    ((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7)), plus a tail sum over the last K % 8 elements (started at 0.0f), added
//    last. Emitted in the body of a parallel linalg.generic over the outputs: an scf.for carrying one
//    vector<8xf32> accumulator (vector.transfer_read of 8 contiguous elements, element-wise extf/mulf/addf), so
//    the lanes live in a register and nothing but the order of the kernel is ever used.
//  - bf16 rounding is arith.truncf f32 -> bf16 (RNE; the pipeline expands it inline with dsa-cpu-expand-bf16,
//    CPUTarget.cpp). e4m3 rounding (RNE, saturating) and pow2_ceil are integer bit manipulation on the f32
//    pattern, the algorithm of core/include/dsa/Numerics/E4M3.h and E8M0.h.
//  - The RoPE frequency table depends only on the attribute: it is core's ropeFrequencies() (dsa/Core/Rope.h: the f32/f64
//    steps of the reference) folded into a dense constant; cos/sin of f32(p) * f[k] are math.cos/math.sin (the
//    libm cosf/sinf the kernels call).
//  - start_pos and the token count stay run-time values (dynamic shapes; scf.if where prefill and decode differ).
//    Run-time checks (start_pos < 0, a multi-token step at start_pos > 0, index ranges, ...) call the external
//    `dsa_cpu_fail(i32)` with a code of core/include/dsa/ABI/RuntimeErrors.h; the code stays memory-safe after
//    a failed check.
//
// This file holds the window-only primitives, the public populate / legality / declaration functions
// (compiler/include/dsa/Conversion/DSAToCPU/DSAToCPU.h) and the pass, a thin wrapper over them; the compressed-attention
// primitives (compress_pool, the fp4 round trips, cache_write, the indexer stages and top-k through the runtime's
// dsa_cpu_topk_set) are in CompressedToCPU.cpp, the shared emission helpers in Support.h. dsa.attention must be
// decomposed first (dsa-decompose-attention) and dsa.probe stripped (dsa-strip-probes); the pass rejects each with a
// diagnostic.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "Support.h"
#include "../Common/RuntimeDeclarations.h"

#include "dsa/ABI/RuntimeErrors.h"
#include "dsa/ABI/RuntimeFunctions.h"
#include "dsa/Conversion/DSAToCPU/DSAToCPU.h"
#include "dsa/Conversion/DSAToCPU/Passes.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Dialect/DSA/IR/RopeParams.h"
#include "dsa/Core/Rope.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>
#include <functional>
#include <limits>

namespace mlir::dsa {
#define GEN_PASS_DEF_CONVERTDSATOCPU
#include "dsa/Conversion/DSAToCPU/Passes.h.inc"

namespace {

using namespace cpu_lowering;

//===----------------------------------------------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------------------------------------------===//

/// `x` [rows, K] as f32 (bf16 widened exactly, in one elementwise generic; an f32 x as is).
Value widenRows(Emit e, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getElementType().isF32())
    return x;
  MLIRContext *ctx = e.b.getContext();
  SmallVector<OpFoldResult> sizes = sizesOf(e, x);
  SmallVector<AffineMap> maps{mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, dimExprs(ctx, 2))};
  return generic(e, tensorType(sizes, e.f32()), ValueRange{x}, e.empty(sizes, e.f32()), maps, parallel(2),
                 [&](OpBuilder &b, Location loc, ValueRange args) {
                   Emit t{b, loc};
                   linalg::YieldOp::create(b, loc, t.toF32(args[0]));
                 });
}

/// linear (section 2): y[m, n] = round(dotF32(x[m, :], w[n, :])), round = bf16 RNE for bf16, none for f32. x is
/// widened to f32 once; the dots are emitGroupedDots' blocked product (G = 1): panels of w rows, blocks of
/// tokens x outputs sharing each loaded vector, every output in dotF32's own order.
struct LinearLowering : OpConversionPattern<LinearOp> {
  LinearLowering(MLIRContext *ctx, GemmTiling t) : OpConversionPattern(ctx), tiling(t) {}
  GemmTiling tiling;
  LogicalResult matchAndRewrite(LinearOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    if (failed(requireStatic(op, op.getWeight(), 1, "weight")) || failed(requireStatic(op, op.getWeight(), 0, "weight")))
      return failure();
    Emit e{rewriter, op.getLoc()};
    Value x = widenRows(e, collapseRows(e, adaptor.getX()));
    Value w = adaptor.getWeight();
    const int64_t K = cast<RankedTensorType>(w.getType()).getDimSize(1);
    const int64_t N = cast<RankedTensorType>(w.getType()).getDimSize(0);
    auto resultType = cast<RankedTensorType>(op.getType());
    Type outElem = resultType.getElementType();
    SmallVector<OpFoldResult> ySizes{sizesOf(e, x)[0], rewriter.getIndexAttr(N)};
    Value y = emitGroupedDots(e, x, w, e.empty(ySizes, outElem), /*G=*/1, N, K, tiling,
                              [&](Emit t, Value dot) { return outElem.isBF16() ? t.toBf16(dot) : dot; });
    rewriter.replaceOp(op, expandRows(e, y, adaptor.getX(), resultType));
    return success();
  }
};

/// rms_norm (section 2): per row r = 1 / sqrt(dotF32(x, x) / D + eps); y = bf16(w[d] * (x[d] * r)).
struct RmsNormLowering : OpConversionPattern<RmsNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(RmsNormOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    auto xType = cast<RankedTensorType>(op.getX().getType());
    if (failed(requireStatic(op, op.getX(), xType.getRank() - 1, "x")))
      return failure();
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    Value x = collapseRows(e, adaptor.getX());
    const int64_t D = xType.getShape().back();
    const float eps = op.getEps().convertToFloat();
    OpFoldResult rows = sizesOf(e, x)[0];
    // r per row.
    Value r = generic(e, tensorType({rows}, e.f32()), {}, e.empty({rows}, e.f32()), {mapOf(ctx, 1, {dimExpr(ctx, 0)})},
                      parallel(1), [&](OpBuilder &b, Location loc, ValueRange) {
                        Emit t{b, loc};
                        Value m = t.linalgIndex(0);
                        Value mean = t.fdiv(emitDotF32(t, x, {m}, x, {m}, D), t.cf(static_cast<float>(D)));
                        Value root = math::SqrtOp::create(b, loc, t.fadd(mean, t.cf(eps)));
                        linalg::YieldOp::create(b, loc, t.fdiv(t.cf(1.0f), root));
                      });
    // y = bf16(w * (x * r)).
    SmallVector<OpFoldResult> ySizes{rows, rewriter.getIndexAttr(D)};
    Type bf16 = rewriter.getBF16Type();
    SmallVector<AffineMap> ymaps{mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, {dimExpr(ctx, 0)}),
                                 mapOf(ctx, 2, {dimExpr(ctx, 1)}), mapOf(ctx, 2, dimExprs(ctx, 2))};
    Value y = generic(e, tensorType(ySizes, bf16), ValueRange{x, r, adaptor.getWeight()}, e.empty(ySizes, bf16),
                      ymaps, parallel(2), [&](OpBuilder &b, Location loc, ValueRange args) {
                        Emit t{b, loc};
                        Value v = t.fmul(t.toF32(args[2]), t.fmul(t.toF32(args[0]), args[1]));
                        linalg::YieldOp::create(b, loc, t.toBf16(v));
                      });
    rewriter.replaceOp(op, expandRows(e, y, adaptor.getX(), cast<RankedTensorType>(op.getType())));
    return success();
  }
};

/// positions: result[i] = start + i * stride (i64).
struct PositionsLowering : OpConversionPattern<PositionsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(PositionsOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    Value start = adaptor.getStart();
    using P = arith::CmpIPredicate;
    reportIf(e, e.cmpi(P::slt, start, e.c64(0)), RuntimeError::PositionsNegativeStart);
    const int64_t stride = op.getStride();
    // start + (count - 1) * stride must fit int64 (the kernel's error): (count - 1) > (INT64_MAX - start) / stride,
    // exact for start >= 0 and stride >= 1 (the verifier's). On the error the result is zeros.
    Value count64 = e.indexToI64(adaptor.getCount());
    Value room = arith::DivSIOp::create(
        e.b, e.loc, e.sub(e.c64(std::numeric_limits<int64_t>::max()), e.maxsi(start, e.c64(0))), e.c64(stride));
    Value overflow = e.band(e.band(e.cmpi(P::sge, start, e.c64(0)), e.cmpi(P::sgt, count64, e.c64(0))),
                            e.cmpi(P::sgt, e.sub(count64, e.c64(1)), room));
    reportIf(e, overflow, RuntimeError::PositionsOverflow);
    SmallVector<OpFoldResult> sizes{adaptor.getCount()};
    Value out = generic(e, tensorType(sizes, e.i64()), {}, e.empty(sizes, e.i64()), {mapOf(ctx, 1, {dimExpr(ctx, 0)})},
                        parallel(1), [&](OpBuilder &b, Location loc, ValueRange) {
                          Emit t{b, loc};
                          Value i = t.indexToI64(t.linalgIndex(0));
                          Value v = t.sel(overflow, t.c64(0), t.add(start, t.mul(i, t.c64(stride))));
                          linalg::YieldOp::create(b, loc, v);
                        });
    rewriter.replaceOp(op, e.castTo(out, op.getType()));
    return success();
  }
};

/// The RoPE frequency table of `rope` (core's ropeFrequencies: the reference's f32/f64 steps).
FailureOr<SmallVector<float>> ropeTable(Operation *op, RopeAttr rope) {
  ::dsa::RopeParams params = mlir::dsa::ropeParams(rope);
  std::vector<float> f = ::dsa::ropeFrequencies(params);
  if (f.empty())
    return op->emitOpError() << "dsa-to-cpu: no RoPE table for rope_dim " << params.ropeDim << " and theta "
                             << params.theta;
  return SmallVector<float>(f.begin(), f.end());
}

/// apply_rope (section 2): tables cos/sin [s, rd/2] of a = f32(p) * f[k] (sin negated when inverse), then on the
/// last rd elements of every row (x0, x1) -> (bf16(x0*c - x1*sn), bf16(x0*sn + x1*c)).
struct ApplyRopeLowering : OpConversionPattern<ApplyRopeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ApplyRopeOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    auto xType = cast<RankedTensorType>(op.getX().getType());
    const int64_t rank = xType.getRank();
    if (failed(requireStatic(op, op.getX(), rank - 1, "x")))
      return failure();
    FailureOr<SmallVector<float>> freqs = ropeTable(op, op.getRope());
    if (failed(freqs))
      return failure();
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    const int64_t D = xType.getShape().back();
    const int64_t rd = op.getRope().getRopeDim();
    const int64_t half = rd / 2;
    const bool inverse = op.getInverse();
    Value x = adaptor.getX(), pos = adaptor.getPositions();

    Value s = e.sizeValue(sizesOf(e, x)[0]);
    Value posLen = e.sizeValue(sizesOf(e, pos)[0]);
    Value lengthOk = e.cmpi(arith::CmpIPredicate::eq, s, posLen);
    Value out = guarded(
        e, lengthOk, xType,
        [&](Emit g) -> Value {
          // Negative positions: reported (the kernel's error); the math stays in bounds.
          auto anyNeg = generic(g, RankedTensorType::get({}, g.b.getI1Type()), ValueRange{pos},
                                g.filled({}, g.cBool(false)),
                                {mapOf(ctx, 1, {dimExpr(ctx, 0)}), mapOf(ctx, 1, {})}, {IteratorType::reduction},
                                [&](OpBuilder &b, Location loc, ValueRange args) {
                                  Emit t{b, loc};
                                  Value neg = t.cmpi(arith::CmpIPredicate::slt, args[0], t.c64(0));
                                  linalg::YieldOp::create(b, loc, t.bor(args[1], neg));
                                });
          reportIf(g, g.extract(anyNeg, {}), RuntimeError::RopeNegativePosition);

          auto tableType = RankedTensorType::get({half}, g.f32());
          Value table = arith::ConstantOp::create(g.b, g.loc, DenseElementsAttr::get(tableType, ArrayRef(*freqs)));
          SmallVector<OpFoldResult> csSizes{sizesOf(g, x)[0], g.b.getIndexAttr(half)};
          auto csType = tensorType(csSizes, g.f32());
          auto tables = linalg::GenericOp::create(
              g.b, g.loc, TypeRange{csType, csType}, ValueRange{pos, table},
              ValueRange{g.empty(csSizes, g.f32()), g.empty(csSizes, g.f32())},
              ArrayRef<AffineMap>{mapOf(ctx, 2, {dimExpr(ctx, 0)}), mapOf(ctx, 2, {dimExpr(ctx, 1)}),
                                  mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, dimExprs(ctx, 2))},
              parallel(2), [&](OpBuilder &b, Location loc, ValueRange args) {
                Emit t{b, loc};
                Value p = arith::SIToFPOp::create(b, loc, t.f32(), args[0]);
                Value a = t.fmul(p, args[1]);
                Value c = math::CosOp::create(b, loc, a);
                Value sn = math::SinOp::create(b, loc, a);
                if (inverse)
                  sn = arith::NegFOp::create(b, loc, sn);
                linalg::YieldOp::create(b, loc, ValueRange{c, sn});
              });
          Value cosT = tables.getResult(0), sinT = tables.getResult(1);

          // Only the rotated tail (the last rd of D columns) is computed, into [..., rd], and inserted into x's
          // shape: the first D - rd columns are x's own (a copy by bufferization where x is read later, none
          // where x dies here), where a generic over all D columns copied them element by element (q: 448 of
          // 512 columns of [s, 64, 512]).
          SmallVector<OpFoldResult> xSizes = sizesOf(g, x), tailSizes = xSizes;
          tailSizes.back() = g.b.getIndexAttr(rd);
          auto tailType = tensorType(tailSizes, xType.getElementType());
          Value rotated = generic(
              g, tailType, ValueRange{}, g.empty(tailSizes, xType.getElementType()),
              {mapOf(ctx, rank, dimExprs(ctx, rank))}, parallel(rank), [&](OpBuilder &b, Location loc, ValueRange) {
                Emit t{b, loc};
                SmallVector<Value> ivs;
                for (int64_t i = 0; i < rank; ++i)
                  ivs.push_back(t.linalgIndex(i));
                Value off = ivs.back(); // column D - rd + off of x
                Value k = arith::DivUIOp::create(b, loc, off, t.idx(2));
                Value even = t.cmpi(arith::CmpIPredicate::eq, t.band(off, t.idx(1)), t.idx(0));
                Value i0 = t.add(t.idx(D - rd), t.mul(k, t.idx(2)));
                SmallVector<Value> at(ivs.begin(), ivs.end());
                at.back() = i0;
                Value x0 = t.toF32(t.extract(x, at));
                at.back() = t.add(i0, t.idx(1));
                Value x1 = t.toF32(t.extract(x, at));
                Value c = t.extract(cosT, {ivs[0], k});
                Value sn = t.extract(sinT, {ivs[0], k});
                Value re = t.fsub(t.fmul(x0, c), t.fmul(x1, sn));
                Value im = t.fadd(t.fmul(x0, sn), t.fmul(x1, c));
                linalg::YieldOp::create(b, loc, t.toBf16(t.sel(even, re, im)));
              });
          SmallVector<OpFoldResult> offsets(rank, g.b.getIndexAttr(0)), strides(rank, g.b.getIndexAttr(1));
          offsets.back() = g.b.getIndexAttr(D - rd);
          return tensor::InsertSliceOp::create(g.b, g.loc, rotated, x, offsets, tailSizes, strides).getResult();
        },
        [&](Emit g) -> Value {
          reportIf(g, g.cBool(true), RuntimeError::RopePositionsLength);
          return x;
        });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// ring_update (section 4) of `ring` ([W, hd], static) with `kv`'s rows at positions start .. : the last
/// c = min(s, W) tokens, positions start_pos+lo .. (lo = s - c), go to slot p % W. Slot j takes row
/// lo + ((j - (start_pos + lo)) mod W) when that offset is < c, else keeps its row. (No checks: the callers'.)
Value emitRingUpdate(Emit e, RankedTensorType ringType, Value ring, Value kv, Value start) {
  MLIRContext *ctx = e.b.getContext();
  const int64_t W = ringType.getDimSize(0);
  Value s = e.indexToI64(e.sizeValue(sizesOf(e, kv)[0]));
  Value nonEmpty = e.cmpi(arith::CmpIPredicate::sgt, s, e.c64(0));
  return guarded(
      e, nonEmpty, ringType,
      [&](Emit g) -> Value {
        Value lo = g.maxsi(g.c64(0), g.sub(s, g.c64(W)));
        Value c = g.sub(s, lo);
        // (j - (start_pos + lo)) mod W as ((j - lo) - start_pos mod W) mod W: no start_pos + lo, which wraps for a
        // start_pos near 2^63 (the same slots as the reference kernel's, at every start_pos).
        Value startMod = arith::RemSIOp::create(g.b, g.loc, start, g.c64(W));
        SmallVector<AffineMap> maps{mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, dimExprs(ctx, 2))};
        return generic(g, ringType, ValueRange{ring}, g.empty(sizesOf(g, ring), ringType.getElementType()), maps,
                       parallel(2), [&](OpBuilder &b, Location loc, ValueRange args) {
                         using P = arith::CmpIPredicate;
                         Emit t{b, loc};
                         Value j = t.indexToI64(t.linalgIndex(0));
                         Value r = arith::RemSIOp::create(b, loc, t.sub(t.sub(j, lo), startMod), t.c64(W));
                         Value off = t.sel(t.cmpi(P::slt, r, t.c64(0)), t.add(r, t.c64(W)), r);
                         Value take = t.cmpi(P::slt, off, c);
                         Value row = t.i64ToIndex(t.sel(take, t.add(lo, off), t.c64(0)));
                         Value v = t.extract(kv, {row, t.linalgIndex(1)});
                         linalg::YieldOp::create(b, loc, t.sel(take, v, args[0]));
                       });
      },
      [&](Emit) -> Value { return ring; });
}

struct RingUpdateLowering : OpConversionPattern<RingUpdateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(RingUpdateOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    auto ringType = cast<RankedTensorType>(op.getRing().getType());
    if (!ringType.hasStaticShape())
      return op.emitOpError() << "dsa-to-cpu needs 'ring' to have a static shape [W, hd]";
    Emit e{rewriter, op.getLoc()};
    Value start = adaptor.getStartPos();
    reportIf(e, e.cmpi(arith::CmpIPredicate::slt, start, e.c64(0)), RuntimeError::RingUpdateNegativeStart);
    rewriter.replaceOp(op, emitRingUpdate(e, ringType, adaptor.getRing(), adaptor.getKv(), start));
    return success();
  }
};

/// The dsa.ring_update of `op`'s ring, kv and start_pos that precedes it in its block, if any (the decomposition's:
/// its result is decode's window rows, so window_kv reuses it instead of writing the slot again).
RingUpdateOp siblingRingUpdate(WindowKvOp op) {
  for (Operation *user : op.getRing().getUsers()) {
    auto update = dyn_cast<RingUpdateOp>(user);
    if (update && update.getRing() == op.getRing() && update.getKv() == op.getKv() &&
        update.getStartPos() == op.getStartPos() && update->getBlock() == op->getBlock() &&
        update->isBeforeInBlock(op))
      return update;
  }
  return {};
}

/// window_kv (section 4) from the ring BEFORE this step: kv in prefill (start_pos == 0), the ring with this step's
/// row written in decode (s == 1: the sibling ring_update's result when there is one), concat(ring, kv) in a chunk
/// at start_pos > 0 (s > 1).
struct WindowKvLowering : OpConversionPattern<WindowKvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(WindowKvOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    using P = arith::CmpIPredicate;
    auto ringType = cast<RankedTensorType>(op.getRing().getType());
    if (!ringType.hasStaticShape())
      return op.emitOpError() << "dsa-to-cpu needs 'ring' to have a static shape [W, hd]";
    Emit e{rewriter, op.getLoc()};
    Value start = adaptor.getStartPos();
    Value s = e.sizeValue(sizesOf(e, adaptor.getKv())[0]);
    reportIf(e, e.cmpi(P::slt, start, e.c64(0)), RuntimeError::WindowKvNegativeStart);
    Value prefill = e.cmpi(P::eq, start, e.c64(0));
    Value oneToken = e.cmpi(P::eq, s, e.idx(1));
    RingUpdateOp sibling = siblingRingUpdate(op);
    Value updated = sibling ? rewriter.getRemappedValue(sibling.getResult()) : Value();
    // The branches' types differ ([s, hd], [W, hd], [W + s, hd]): each is cast to the dynamic [?, hd].
    auto resultType = cast<RankedTensorType>(op.getType());
    auto dynType = RankedTensorType::get({ShapedType::kDynamic, resultType.getDimSize(1)}, resultType.getElementType());
    Value out = guarded(
        e, prefill, dynType, [&](Emit) -> Value { return adaptor.getKv(); },
        [&](Emit g) -> Value {
          return guarded(
              g, oneToken, dynType,
              [&](Emit d) -> Value {
                return updated ? updated : emitRingUpdate(d, ringType, adaptor.getRing(), adaptor.getKv(), start);
              },
              [&](Emit c) -> Value {
                return tensor::ConcatOp::create(c.b, c.loc, /*dim=*/0, ValueRange{adaptor.getRing(), adaptor.getKv()})
                    .getResult();
              });
        });
    rewriter.replaceOp(op, e.castTo(out, resultType));
    return success();
  }
};

/// window_indices (section 4): prefill [s, min(s, W)]: j = max(0, t-W+1) + i, -1 where j > t; decode [1, W]: slot
/// (oldest + i) % W with oldest = start_pos % W + 1, -1 where the slot exceeds start_pos; a chunk at start_pos > 0
/// [s, W]: pos = start_pos + t - W + 1 + i, -1 where pos < 0, W + pos - start_pos where pos >= start_pos (the
/// chunk's rows of window_kv), else pos % W (the ring's).
struct WindowIndicesLowering : OpConversionPattern<WindowIndicesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(WindowIndicesOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    using P = arith::CmpIPredicate;
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    const int64_t W = op.getWindowSize();
    Value start = adaptor.getStartPos();
    Value count = adaptor.getCount();
    reportIf(e, e.cmpi(P::slt, start, e.c64(0)), RuntimeError::WindowIndicesNegativeStart);
    reportIf(e, e.cmpi(P::slt, count, e.idx(1)), RuntimeError::WindowIndicesEmptyStep);
    Value prefill = e.cmpi(P::eq, start, e.c64(0));
    Value oneToken = e.cmpi(P::eq, count, e.idx(1));
    // A chunk: start_pos + count must fit int64 and W + count i32 (the kernel's errors).
    Value count64 = e.indexToI64(count);
    Value chunk = e.band(e.cmpi(P::sgt, start, e.c64(0)), e.cmpi(P::sgt, count64, e.c64(1)));
    Value overflow = e.bor(e.cmpi(P::sgt, start, e.sub(e.c64(std::numeric_limits<int64_t>::max()), count64)),
                           e.cmpi(P::sgt, count64, e.c64(std::numeric_limits<int32_t>::max() - W)));
    reportIf(e, e.band(chunk, overflow), RuntimeError::WindowIndicesChunkOverflow);
    Value width = e.sel(prefill, e.minsi(count, e.idx(W)), e.idx(W));
    SmallVector<OpFoldResult> sizes{count, width};
    Value out = generic(e, tensorType(sizes, e.i32()), {}, e.empty(sizes, e.i32()), {mapOf(ctx, 2, dimExprs(ctx, 2))},
                        parallel(2), [&](OpBuilder &b, Location loc, ValueRange) {
                          Emit t{b, loc};
                          Value tt = t.indexToI64(t.linalgIndex(0));
                          Value i = t.indexToI64(t.linalgIndex(1));
                          Value none = t.c64(-1);
                          // Prefill.
                          Value j = t.add(t.maxsi(t.c64(0), t.add(t.sub(tt, t.c64(W)), t.c64(1))), i);
                          Value pre = t.sel(t.cmpi(P::sgt, j, tt), none, j);
                          // Decode (start > 0 here; the remainders are of non-negative values).
                          Value startNonNeg = t.maxsi(start, t.c64(0));
                          Value oldest = t.add(arith::RemSIOp::create(b, loc, startNonNeg, t.c64(W)), t.c64(1));
                          Value slot = arith::RemSIOp::create(b, loc, t.add(oldest, i), t.c64(W));
                          Value dec = t.sel(t.cmpi(P::sgt, slot, start), none, slot);
                          // A chunk (start > 0, start + count fits int64 once the check above passed).
                          Value pos = t.add(t.sub(t.add(startNonNeg, tt), t.c64(W - 1)), i);
                          Value ringSlot = arith::RemSIOp::create(b, loc, t.maxsi(pos, t.c64(0)), t.c64(W));
                          Value inChunk = t.add(t.c64(W), t.sub(pos, startNonNeg));
                          Value chk = t.sel(t.cmpi(P::slt, pos, t.c64(0)), none,
                                            t.sel(t.cmpi(P::sge, pos, startNonNeg), inChunk, ringSlot));
                          Value v = t.sel(prefill, pre, t.sel(oneToken, dec, chk));
                          linalg::YieldOp::create(b, loc, arith::TruncIOp::create(b, loc, t.i32(), v).getResult());
                        });
    rewriter.replaceOp(op, e.castTo(out, op.getType()));
    return success();
  }
};

/// sparse_attn (section 10) with the kernel's order: z_j = dotF32(q, kv[idx_j]) * scale (-inf for -1);
/// m = sink, then m = (m < z_j) ? z_j : m over j; den = exp(sink - m) + sum_j exp(z_j - m) (valid j, ascending);
/// p_j = exp(z_j - m) / den; o[d] = bf16(sum_j p_j * kv[idx_j, d]) (valid j, ascending, from 0).
/// z[t, h, j] = dotF32(q[t, h, :], kv[rowOf(idx[t, j]), :]) * scale, or -inf where idx[t, j] < 0, into `init`
/// [s, H, k] f32. An scf.forall over (t, block of hb heads) (hb = 4, 2 or 1, dividing H); inside, blocks of hb heads x
/// 4 indices (emitDotBlock: each kv row loaded once per step for hb heads, each q row for 4 indices), the leftover
/// indices hb x 1. The block's hb rows of q (bf16) are widened to f32 once per forall iteration (a [hb, hd] f32
/// tensor), not at every load: k / 4 blocks read them. `fused`: emitDotBlock's fused k-loop (one FMA per step and
/// lane), which the caller may ask for only where every product of q and kv is exact (bf16ProductsExact).
Value emitQueryKeyScores(Emit e, Value q, Value kv, Value idx, Value init, int64_t H, int64_t hd, float scale,
                         function_ref<Value(Emit, Value)> rowOf, bool fused) {
  using P = arith::CmpIPredicate;
  constexpr int64_t kKeys = 4;
  const int64_t hb = H % 4 == 0 ? 4 : H % 2 == 0 ? 2 : 1;
  Value s = e.sizeValue(sizesOf(e, init)[0]);
  Value k = e.sizeValue(sizesOf(e, idx)[1]);
  auto forall = scf::ForallOp::create(e.b, e.loc, ArrayRef<OpFoldResult>{s, e.b.getIndexAttr(H / hb)},
                                      ValueRange{init}, std::nullopt);
  OpBuilder::InsertionGuard guard(e.b);
  e.b.setInsertionPoint(forall.getTerminator());
  Emit f{e.b, e.loc};
  Value t = forall.getInductionVar(0), h0 = f.mul(forall.getInductionVar(1), f.idx(hb));
  Value shared = forall.getRegionIterArgs()[0];
  SmallVector<OpFoldResult> offsets{t, h0, f.b.getIndexAttr(0)}, sizes{f.b.getIndexAttr(1), f.b.getIndexAttr(hb), k},
      strides{f.b.getIndexAttr(1), f.b.getIndexAttr(1), f.b.getIndexAttr(1)};
  Value slice = tensor::ExtractSliceOp::create(f.b, f.loc, tensorType(sizes, f.f32()), shared, offsets, sizes, strides);
  const float negInf = -std::numeric_limits<float>::infinity();
  // qf[i, d] = f32(q[t, h0 + i, d]): 8 lanes at a time (readLanes widens), then the hd % 8 tail.
  SmallVector<OpFoldResult> qfSizes{f.b.getIndexAttr(hb), f.b.getIndexAttr(hd)};
  Value qf = f.empty(qfSizes, f.f32());
  const int64_t hd8 = hd / kLanes * kLanes;
  for (int64_t i = 0; i < hb; ++i) {
    Value h = i ? f.add(h0, f.idx(i)) : h0;
    if (hd8 > 0)
      qf = scf::ForOp::create(f.b, f.loc, f.idx(0), f.idx(hd8), f.idx(kLanes), ValueRange{qf},
                              [&](OpBuilder &bb, Location loc, Value d, ValueRange iter) {
                                Emit u{bb, loc};
                                Value lanes = readLanes(u, q, ValueRange{t, h}, d);
                                Value next = vector::TransferWriteOp::create(bb, loc, lanes, iter[0],
                                                                             ValueRange{u.idx(i), d},
                                                                             ArrayRef<bool>{true})
                                                 .getResult();
                                scf::YieldOp::create(bb, loc, next);
                              })
               .getResult(0);
    for (int64_t d = hd8; d < hd; ++d)
      qf = tensor::InsertOp::create(f.b, f.loc, f.toF32(f.extract(q, {t, h, f.idx(d)})), qf,
                                    ValueRange{f.idx(i), f.idx(d)});
  }
  // Indices j .. j+nk-1 for the hb heads, inserted into `acc`.
  auto block = [&](Emit u, Value acc, Value j, int64_t nk) -> Value {
    DotRows a{qf, {}, Value()}, b{kv, {}, Value()};
    for (int64_t i = 0; i < hb; ++i)
      a.rows.push_back({u.idx(i)});
    SmallVector<Value> js, valid;
    for (int64_t c = 0; c < nk; ++c) {
      js.push_back(c ? u.add(j, u.idx(c)) : j);
      Value ij = u.extract(idx, {t, js.back()});
      valid.push_back(u.cmpi(P::sge, ij, u.c32(0)));
      b.rows.push_back({rowOf(u, ij)});
    }
    SmallVector<Value> dots = emitDotBlock(u, a, b, hd, fused);
    for (int64_t i = 0; i < hb; ++i)
      for (int64_t c = 0; c < nk; ++c) {
        Value zz = u.sel(valid[c], u.fmul(dots[i * nk + c], u.cf(scale)), u.cf(negInf));
        acc = tensor::InsertOp::create(u.b, u.loc, zz, acc, ValueRange{u.idx(0), u.idx(i), js[c]});
      }
    return acc;
  };
  Value full = f.sub(k, arith::RemSIOp::create(f.b, f.loc, k, f.idx(kKeys)));
  auto blocks = scf::ForOp::create(f.b, f.loc, f.idx(0), full, f.idx(kKeys), ValueRange{slice},
                                   [&](OpBuilder &bb, Location loc, Value j, ValueRange iter) {
                                     Emit u{bb, loc};
                                     scf::YieldOp::create(bb, loc, block(u, iter[0], j, kKeys));
                                   });
  auto rest = scf::ForOp::create(f.b, f.loc, full, k, f.idx(1), ValueRange{blocks.getResult(0)},
                                 [&](OpBuilder &bb, Location loc, Value j, ValueRange iter) {
                                   Emit u{bb, loc};
                                   scf::YieldOp::create(bb, loc, block(u, iter[0], j, 1));
                                 });
  e.b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(e.b, e.loc, rest.getResult(0), shared, offsets, sizes, strides);
  return forall.getResult(0);
}

/// o[t, h, d] = bf16(sum over j ascending with idx[t, j] >= 0 of p[t, h, j] * kv[rowOf(idx[t, j]), d]), the sum
/// from 0.0f (the kernel's `acc[d] += p * row[d]`, f32 mulf then addf), into `init` [s, H, hd] bf16. An scf.forall
/// over (t, block of hb heads) (hb = 4, 2 or 1, dividing H; OpenMP with parallel=true); inside, chunks of up to nv
/// vectors of `lanes` columns (nv = 4 with 16 lanes, 2 with 8: hb x nv sums + nv kv vectors + 1 broadcast fit 32 or
/// 16 registers; the hd % lanes tail columns as scalars), one scf.for over j per chunk carrying the hb x nv vector
/// sums: each kv row chunk is loaded once per j for the hb heads (the heads of a token read the same
/// rows), and a skipped j leaves the sums unchanged (select). Every column keeps the kernel's own sum, whatever the
/// lanes or the heads per block; the sums are rounded to bf16 a vector at a time as they are written.
Value emitWeightedRowSums(Emit e, Value p, Value idx, Value kv, Value init, int64_t H, int64_t hd, int64_t lanes,
                          function_ref<Value(Emit, Value)> rowOf) {
  using P = arith::CmpIPredicate;
  const int64_t kChunkVectors = lanes >= 16 ? 4 : 2;
  const int64_t hb = H % 4 == 0 ? 4 : H % 2 == 0 ? 2 : 1;
  Value s = e.sizeValue(sizesOf(e, init)[0]);
  Value k = e.sizeValue(sizesOf(e, idx)[1]);
  auto forall = scf::ForallOp::create(e.b, e.loc, ArrayRef<OpFoldResult>{s, e.b.getIndexAttr(H / hb)},
                                      ValueRange{init}, std::nullopt);
  OpBuilder::InsertionGuard guard(e.b);
  e.b.setInsertionPoint(forall.getTerminator());
  Emit f{e.b, e.loc};
  Value t = forall.getInductionVar(0), h0 = f.mul(forall.getInductionVar(1), f.idx(hb));
  Value shared = forall.getRegionIterArgs()[0];
  Type outElem = cast<RankedTensorType>(init.getType()).getElementType();
  SmallVector<OpFoldResult> offsets{t, h0, f.b.getIndexAttr(0)},
      sizes{f.b.getIndexAttr(1), f.b.getIndexAttr(hb), f.b.getIndexAttr(hd)},
      strides{f.b.getIndexAttr(1), f.b.getIndexAttr(1), f.b.getIndexAttr(1)};
  auto rowType = RankedTensorType::get({1, hb, hd}, outElem);
  Value row = tensor::ExtractSliceOp::create(f.b, f.loc, rowType, shared, offsets, sizes, strides);
  auto laneType = VectorType::get({lanes}, f.f32());
  Value zeroV = arith::ConstantOp::create(f.b, f.loc, DenseElementsAttr::get(laneType, 0.0f));
  const int64_t vectors = hd / lanes;
  for (int64_t c0 = 0; c0 < hd; c0 += kChunkVectors * lanes) {
    const int64_t nv = std::min(kChunkVectors, vectors - c0 / lanes);
    const int64_t tailCols = (nv < kChunkVectors) ? hd % lanes : 0; // the last chunk carries the tail columns
    if (nv == 0 && tailCols == 0)
      break;
    // iter: head i's vector v at i * nv + v, then head i's tail column c at hb * nv + i * tailCols + c.
    SmallVector<Value> inits(hb * nv, zeroV);
    for (int64_t i = 0; i < hb * tailCols; ++i)
      inits.push_back(f.cf(0.0f));
    auto loop = scf::ForOp::create(
        f.b, f.loc, f.idx(0), k, f.idx(1), inits, [&](OpBuilder &bb, Location loc, Value j, ValueRange iter) {
          Emit u{bb, loc};
          Value ij = u.extract(idx, {t, j});
          Value valid = u.cmpi(P::sge, ij, u.c32(0));
          Value r = rowOf(u, ij);
          SmallVector<Value> kvv, kvs;
          for (int64_t v = 0; v < nv; ++v)
            kvv.push_back(readLanes(u, kv, {r}, u.idx(c0 + v * lanes), lanes));
          for (int64_t c = 0; c < tailCols; ++c)
            kvs.push_back(u.toF32(u.extract(kv, {r, u.idx(vectors * lanes + c)})));
          SmallVector<Value> next(iter.size());
          for (int64_t i = 0; i < hb; ++i) {
            Value pj = u.extract(p, {t, i ? u.add(h0, u.idx(i)) : h0, j});
            if (nv > 0) {
              Value pv = vector::BroadcastOp::create(bb, loc, laneType, pj);
              for (int64_t v = 0; v < nv; ++v) {
                Value a = iter[i * nv + v];
                next[i * nv + v] = u.sel(valid, u.fadd(a, u.fmul(pv, kvv[v])), a);
              }
            }
            for (int64_t c = 0; c < tailCols; ++c) {
              Value a = iter[hb * nv + i * tailCols + c];
              next[hb * nv + i * tailCols + c] = u.sel(valid, u.fadd(a, u.fmul(pj, kvs[c])), a);
            }
          }
          scf::YieldOp::create(bb, loc, next);
        });
    for (int64_t i = 0; i < hb; ++i) {
      for (int64_t v = 0; v < nv; ++v)
        row = vector::TransferWriteOp::create(f.b, f.loc, f.toBf16(loop.getResult(i * nv + v)), row,
                                              ValueRange{f.idx(0), f.idx(i), f.idx(c0 + v * lanes)},
                                              ArrayRef<bool>{true})
                  .getResult();
      for (int64_t c = 0; c < tailCols; ++c)
        row = tensor::InsertOp::create(f.b, f.loc, f.toBf16(loop.getResult(hb * nv + i * tailCols + c)), row,
                                       ValueRange{f.idx(0), f.idx(i), f.idx(vectors * lanes + c)});
    }
  }
  e.b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(e.b, e.loc, row, shared, offsets, sizes, strides);
  return forall.getResult(0);
}

struct SparseAttnLowering : OpConversionPattern<SparseAttnOp> {
  SparseAttnLowering(MLIRContext *ctx, int64_t rowSumLanes) : OpConversionPattern(ctx), rowSumLanes(rowSumLanes) {}
  int64_t rowSumLanes; ///< emitWeightedRowSums' lanes: 16 with 32 vector registers (AVX-512), else 8
  LogicalResult matchAndRewrite(SparseAttnOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    using P = arith::CmpIPredicate;
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    if (failed(requireStatic(op, op.getQ(), 1, "q")) || failed(requireStatic(op, op.getQ(), 2, "q")))
      return failure();
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    const int64_t H = qType.getDimSize(1), hd = qType.getDimSize(2);
    const float scale = op.getScale().convertToFloat();
    Value q = adaptor.getQ(), kv = adaptor.getKv(), idx = adaptor.getIndices(), sink = adaptor.getSink();
    Type f32 = e.f32(), i1 = rewriter.getI1Type();

    SmallVector<OpFoldResult> qSizes = sizesOf(e, q);
    Value s = e.sizeValue(qSizes[0]);
    // kv as the decomposition builds it, tensor.concat(window rows, compressed rows) along dim 0: its parts are read
    // directly (a decode step gathers its rows from them), so the concatenation is materialised (a full copy of
    // the compressed cache's rows) only where all of kv is widened anyway (prefill).
    SmallVector<Value> kvParts{kv};
    if (auto cat = kv.getDefiningOp<tensor::ConcatOp>(); cat && cat.getDim() == 0 && cat.getInputs().size() >= 2)
      kvParts.assign(cat.getInputs().begin(), cat.getInputs().end());
    SmallVector<Value> partEnds; // running row counts: part i holds rows [partEnds[i-1], partEnds[i])
    for (Value part : kvParts)
      partEnds.push_back(partEnds.empty() ? e.sizeValue(sizesOf(e, part)[0])
                                          : e.add(partEnds.back(), e.sizeValue(sizesOf(e, part)[0])));
    Value n = partEnds.back();
    Value idxRows = e.sizeValue(sizesOf(e, idx)[0]);
    OpFoldResult k = sizesOf(e, idx)[1];
    Value rowsOk = e.cmpi(P::eq, s, idxRows);
    reportIf(e, e.cmpi(P::ne, s, idxRows), RuntimeError::SparseAttnIndicesRows);

    // Sink NaN check.
    auto scalarI1 = RankedTensorType::get({}, i1);
    Value sinkNan = generic(e, scalarI1, ValueRange{sink}, e.filled({}, e.cBool(false)),
                            {mapOf(ctx, 1, {dimExpr(ctx, 0)}), mapOf(ctx, 1, {})}, {IteratorType::reduction},
                            [&](OpBuilder &b, Location loc, ValueRange args) {
                              Emit t{b, loc};
                              Value nan = t.cmpf(arith::CmpFPredicate::UNO, args[0], args[0]);
                              linalg::YieldOp::create(b, loc, t.bor(args[1], nan));
                            });
    reportIf(e, e.extract(sinkNan, {}), RuntimeError::SparseAttnNanSink);

    // Index range check (every entry in [-1, n)).
    Value n32 = arith::IndexCastOp::create(e.b, e.loc, e.i32(), n);
    Value badIndex = generic(e, scalarI1, ValueRange{idx}, e.filled({}, e.cBool(false)),
                             {mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, {})},
                             {IteratorType::reduction, IteratorType::reduction},
                             [&](OpBuilder &b, Location loc, ValueRange args) {
                               Emit t{b, loc};
                               Value bad = t.bor(t.cmpi(P::slt, args[0], t.c32(-1)), t.cmpi(P::sge, args[0], n32));
                               linalg::YieldOp::create(b, loc, t.bor(args[1], bad));
                             });
    reportIf(e, e.extract(badIndex, {}), RuntimeError::SparseAttnIndexOutOfRange);

    Value ok = e.band(rowsOk, e.cmpi(P::sgt, n, e.idx(0)));
    // The attention proper over the rows kvF (kv widened to f32 once, or the step's gathered bf16 rows, each load
    // widened: exact either way) as indexed by idxA (idx, or its gathered row numbers), rowsA32 rows.
    auto attend = [&](Emit g, Value kvF, Value idx, Value rowsA32) -> Value {
          Value nMinus1 = g.sub(rowsA32, g.c32(1));
          // The row an index reads, clamped into [0, n) (a -1 is masked out of every sum).
          auto rowOf = [nMinus1](Emit t, Value i) {
            return arith::IndexCastOp::create(t.b, t.loc, t.b.getIndexType(), t.maxsi(t.minsi(i, nMinus1), t.c32(0)))
                .getResult();
          };
          // z[t, h, j] = dotF32(q[t, h], kv[row(idx[t, j])]) * scale, -inf for -1: blocks of heads x 4 indices
          // (emitQueryKeyScores), each dot in dotF32's order.
          SmallVector<OpFoldResult> zSizes{qSizes[0], g.b.getIndexAttr(H), k};
          // Fused multiply-adds where every product of q and kv is exact in f32 (the same bits: one pass over q
          // and one over kvF decide), else the kernels' mulf then addf.
          SmallVector<ReassociationIndices> rows{{0, 1}, {2}};
          Value qRows = tensor::CollapseShapeOp::create(g.b, g.loc, q, rows);
          Value exact = bf16ProductsExact(g, qRows, hd, kvF, hd);
          auto zType = tensorType(zSizes, f32);
          Value z = guarded(
              g, exact, zType,
              [&](Emit u) {
                return emitQueryKeyScores(u, q, kvF, idx, u.empty(zSizes, f32), H, hd, scale, rowOf, /*fused=*/true);
              },
              [&](Emit u) {
                return emitQueryKeyScores(u, q, kvF, idx, u.empty(zSizes, f32), H, hd, scale, rowOf,
                                          /*fused=*/false);
              });
          // m[t, h] = max over sink and z (std::max order).
          SmallVector<OpFoldResult> thSizes{qSizes[0], g.b.getIndexAttr(H)};
          auto thType = tensorType(thSizes, f32);
          Value sinkInit = generic(g, thType, ValueRange{sink}, g.empty(thSizes, f32),
                                   {mapOf(ctx, 2, {dimExpr(ctx, 1)}), mapOf(ctx, 2, dimExprs(ctx, 2))}, parallel(2),
                                   [&](OpBuilder &b, Location loc, ValueRange args) {
                                     linalg::YieldOp::create(b, loc, args[0]);
                                   });
          SmallVector<IteratorType> thjIters{IteratorType::parallel, IteratorType::parallel, IteratorType::reduction};
          Value m = generic(g, thType, ValueRange{z}, sinkInit,
                            {mapOf(ctx, 3, dimExprs(ctx, 3)), mapOf(ctx, 3, dimExprs(ctx, 2))}, thjIters,
                            [&](OpBuilder &b, Location loc, ValueRange args) {
                              Emit t{b, loc};
                              Value less = t.cmpf(arith::CmpFPredicate::OLT, args[1], args[0]);
                              linalg::YieldOp::create(b, loc, t.sel(less, args[0], args[1]));
                            });
          // den[t, h] = exp(sink - m) + sum over valid j of exp(z - m).
          Value denInit = generic(g, thType, ValueRange{sink, m}, g.empty(thSizes, f32),
                                  {mapOf(ctx, 2, {dimExpr(ctx, 1)}), mapOf(ctx, 2, dimExprs(ctx, 2)),
                                   mapOf(ctx, 2, dimExprs(ctx, 2))},
                                  parallel(2), [&](OpBuilder &b, Location loc, ValueRange args) {
                                    Emit t{b, loc};
                                    Value ex = math::ExpOp::create(b, loc, t.fsub(args[0], args[1]));
                                    linalg::YieldOp::create(b, loc, ex);
                                  });
          // ez[t, h, j] = exp(z - m), once (the same libm call on the same input as the kernel's two).
          Value ez = generic(g, tensorType(zSizes, f32), ValueRange{z, m}, g.empty(zSizes, f32),
                             {mapOf(ctx, 3, dimExprs(ctx, 3)), mapOf(ctx, 3, dimExprs(ctx, 2)),
                              mapOf(ctx, 3, dimExprs(ctx, 3))},
                             parallel(3), [&](OpBuilder &b, Location loc, ValueRange args) {
                               Emit t{b, loc};
                               Value ex = math::ExpOp::create(b, loc, t.fsub(args[0], args[1]));
                               linalg::YieldOp::create(b, loc, ex);
                             });
          Value den = generic(g, thType, ValueRange{ez, idx}, denInit,
                              {mapOf(ctx, 3, dimExprs(ctx, 3)), mapOf(ctx, 3, {dimExpr(ctx, 0), dimExpr(ctx, 2)}),
                               mapOf(ctx, 3, dimExprs(ctx, 2))},
                              thjIters, [&](OpBuilder &b, Location loc, ValueRange args) {
                                Emit t{b, loc};
                                Value valid = t.cmpi(P::sge, args[1], t.c32(0));
                                linalg::YieldOp::create(b, loc, t.sel(valid, t.fadd(args[2], args[0]), args[2]));
                              });
          // p[t, h, j] = exp(z - m) / den.
          Value p = generic(g, tensorType(zSizes, f32), ValueRange{ez, den}, g.empty(zSizes, f32),
                            {mapOf(ctx, 3, dimExprs(ctx, 3)), mapOf(ctx, 3, dimExprs(ctx, 2)),
                             mapOf(ctx, 3, dimExprs(ctx, 3))},
                            parallel(3), [&](OpBuilder &b, Location loc, ValueRange args) {
                              Emit t{b, loc};
                              linalg::YieldOp::create(b, loc, t.fdiv(args[0], args[1]));
                            });
          // o[t, h, d] = bf16(sum over valid j (ascending) of p * kv[idx_j, d], from 0): an scf.forall over (t,
          // block of 4 heads); per chunk of columns, one scf.for over j carrying each head's vector sums, so the
          // index, validity and kv row chunk of j are loaded once per chunk for the 4 heads and every column keeps
          // the kernel's own sum (j ascending, invalid j skipped); rounded as written (emitWeightedRowSums).
          SmallVector<OpFoldResult> oSizes{qSizes[0], g.b.getIndexAttr(H), g.b.getIndexAttr(hd)};
          return emitWeightedRowSums(g, p, idx, kvF, g.empty(oSizes, g.b.getBF16Type()), H, hd, rowSumLanes,
                                     rowOf);
    };
    Value out = guarded(
        e, ok, qType,
        [&](Emit g) -> Value {
          // kv widened to f32 once when the step reads at least as many rows (s * k, with repeats) as kv has
          // (prefill: every (t, h) then reads widened rows, none widens them again); else (decode: 1 x ~640 of
          // e.g. 16512 rows) the rows are widened as they are loaded, so the whole of kv (the compressed cache
          // included) is not converted and written every step. Either way the same f32 values.
          Value kIdx = g.sizeValue(k);
          Value reads = g.mul(s, kIdx);
          auto whole = [&](Emit h) -> Value {
            Value all = kvParts.size() == 1 ? kvParts[0]
                                            : tensor::ConcatOp::create(h.b, h.loc, /*dim=*/0, kvParts).getResult();
            return attend(h, widenRows(h, all), idx, n32);
          };
          // The gathered rows: kvG[t * k + j] = kv[row(idx[t, j])] (bf16, from the part holding the row), and
          // idxG[t, j] = t * k + j, or -1 where idx[t, j] < 0 (the same validity, the same row contents).
          auto gathered = [&](Emit h) -> Value {
            Type kvElem = cast<RankedTensorType>(kvParts[0].getType()).getElementType();
            Value nMinus1 = h.sub(n32, h.c32(1));
            SmallVector<OpFoldResult> gSizes{reads, h.b.getIndexAttr(hd)};
            // An scf.forall over the gathered rows (OpenMP with parallel=true): row r's index, clamp and part are
            // found once, then its hd columns copied 8 at a time (vector reads from the part holding the row, the
            // hd % 8 tail as scalars). An element-wise generic over [reads, hd] did the index division and the part
            // choice per element (with parallel=true both dimensions collapsed into one OpenMP loop, so nothing
            // was hoisted): per decode step of the index-source layer ~0.3 M elements, each a scalar division.
            auto gather = scf::ForallOp::create(h.b, h.loc, ArrayRef<OpFoldResult>{reads},
                                                ValueRange{h.empty(gSizes, kvElem)}, std::nullopt);
            {
              OpBuilder::InsertionGuard guard(h.b);
              h.b.setInsertionPoint(gather.getTerminator());
              Emit t{h.b, h.loc};
              Value r = gather.getInductionVar(0);
              Value i = t.extract(idx, {arith::DivUIOp::create(t.b, t.loc, r, kIdx).getResult(),
                                        arith::RemUIOp::create(t.b, t.loc, r, kIdx).getResult()});
              Value row = arith::IndexCastOp::create(t.b, t.loc, t.b.getIndexType(),
                                                     t.maxsi(t.minsi(i, nMinus1), t.c32(0)));
              SmallVector<OpFoldResult> rOffsets{r, t.b.getIndexAttr(0)}, rSizes{t.b.getIndexAttr(1),
                                                                                 t.b.getIndexAttr(hd)},
                  rStrides{t.b.getIndexAttr(1), t.b.getIndexAttr(1)};
              Value shared = gather.getRegionIterArgs()[0];
              Value dst = tensor::ExtractSliceOp::create(t.b, t.loc, tensorType(rSizes, kvElem), shared, rOffsets,
                                                         rSizes, rStrides);
              auto laneType = VectorType::get({kLanes}, kvElem);
              Value pad = arith::ConstantOp::create(t.b, t.loc, t.b.getZeroAttr(kvElem));
              // Part p holds the row when row < partEnds[p] (the last part takes the rest): nested scf.if, so no
              // part is read out of its bounds (a part may be empty). `read` reads one value or vector of it.
              std::function<Value(Emit, size_t, Type, function_ref<Value(Emit, Value, Value)>)> from =
                  [&](Emit u, size_t p, Type type, function_ref<Value(Emit, Value, Value)> read) -> Value {
                Value local = p == 0 ? row : u.sub(row, partEnds[p - 1]);
                if (p + 1 == kvParts.size())
                  return read(u, kvParts[p], local);
                auto branch = scf::IfOp::create(u.b, u.loc, TypeRange{type}, u.cmpi(P::slt, row, partEnds[p]),
                                                /*withElse=*/true);
                OpBuilder::InsertionGuard inner(u.b);
                u.b.setInsertionPointToStart(&branch.getThenRegion().front());
                scf::YieldOp::create(u.b, u.loc, read(u, kvParts[p], local));
                u.b.setInsertionPointToStart(&branch.getElseRegion().front());
                Emit v{u.b, u.loc};
                scf::YieldOp::create(u.b, u.loc, from(v, p + 1, type, read));
                return branch.getResult(0);
              };
              const int64_t hd8 = hd / kLanes * kLanes;
              if (hd8 > 0)
                dst = scf::ForOp::create(
                          t.b, t.loc, t.idx(0), t.idx(hd8), t.idx(kLanes), ValueRange{dst},
                          [&](OpBuilder &bb, Location loc, Value d, ValueRange iter) {
                            Emit u{bb, loc};
                            Value lanes = from(u, 0, laneType, [&](Emit w, Value part, Value local) -> Value {
                              return vector::TransferReadOp::create(w.b, w.loc, laneType, part,
                                                                    ValueRange{local, d}, pad, ArrayRef<bool>{true});
                            });
                            Value next = vector::TransferWriteOp::create(bb, loc, lanes, iter[0],
                                                                         ValueRange{u.idx(0), d}, ArrayRef<bool>{true})
                                             .getResult();
                            scf::YieldOp::create(bb, loc, next);
                          })
                          .getResult(0);
              for (int64_t d = hd8; d < hd; ++d) {
                Value v = from(t, 0, kvElem, [&](Emit w, Value part, Value local) -> Value {
                  return w.extract(part, {local, w.idx(d)});
                });
                dst = tensor::InsertOp::create(t.b, t.loc, v, dst, ValueRange{t.idx(0), t.idx(d)});
              }
              t.b.setInsertionPointToStart(gather.getTerminator().getBody());
              tensor::ParallelInsertSliceOp::create(t.b, t.loc, dst, shared, rOffsets, rSizes, rStrides);
            }
            Value kvG = gather.getResult(0);
            SmallVector<OpFoldResult> iSizes = sizesOf(h, idx);
            Value idxG = generic(h, tensorType(iSizes, h.i32()), ValueRange{idx}, h.empty(iSizes, h.i32()),
                                 {mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, dimExprs(ctx, 2))}, parallel(2),
                                 [&](OpBuilder &b, Location loc, ValueRange args) {
                                   Emit t{b, loc};
                                   Value r = t.add(t.mul(t.linalgIndex(0), kIdx), t.linalgIndex(1));
                                   Value r32 = arith::IndexCastOp::create(b, loc, t.i32(), r);
                                   linalg::YieldOp::create(
                                       b, loc, t.sel(t.cmpi(P::sge, args[0], t.c32(0)), r32, t.c32(-1)));
                                 });
            return attend(h, kvG, idxG, arith::IndexCastOp::create(h.b, h.loc, h.i32(), reads));
          };
          return guarded(g, g.cmpi(P::sge, reads, n), qType, whole, gathered);
        },
        [&](Emit g) -> Value {
          // No rows to read (n == 0: every index must be -1, and the output is zeros), or a failed check.
          return g.filled(qSizes, arith::ConstantOp::create(g.b, g.loc, g.b.getZeroAttr(qType.getElementType())));
        });
    rewriter.replaceOp(op, e.castTo(out, op.getType()));
    return success();
  }
};

/// grouped_output (section 11): og[t, g, r] = bf16(dotF32(o[t, g, :], wo_a[g*R + r, :])), o[t] viewed as G groups.
struct GroupedOutputLowering : OpConversionPattern<GroupedOutputOp> {
  GroupedOutputLowering(MLIRContext *ctx, GemmTiling t) : OpConversionPattern(ctx), tiling(t) {}
  GemmTiling tiling;
  LogicalResult matchAndRewrite(GroupedOutputOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    auto oType = cast<RankedTensorType>(op.getO().getType());
    auto wType = cast<RankedTensorType>(op.getWoA().getType());
    if (failed(requireStatic(op, op.getO(), 1, "o")) || failed(requireStatic(op, op.getO(), 2, "o")))
      return failure();
    if (!wType.hasStaticShape())
      return op.emitOpError() << "dsa-to-cpu needs 'wo_a' to have a static shape";
    Emit e{rewriter, op.getLoc()};
    const int64_t G = op.getGroups();
    const int64_t H = oType.getDimSize(1), hd = oType.getDimSize(2);
    const int64_t gw = H / G * hd;
    const int64_t R = wType.getDimSize(0) / G;
    Value o = adaptor.getO();
    OpFoldResult s = sizesOf(e, o)[0];
    Value oFlat = widenRows(e, tensor::CollapseShapeOp::create(e.b, e.loc, o, ArrayRef<ReassociationIndices>{{0}, {1, 2}}));
    SmallVector<OpFoldResult> ySizes{s, rewriter.getIndexAttr(G * R)};
    Type bf16 = rewriter.getBF16Type();
    Value y = emitGroupedDots(e, oFlat, adaptor.getWoA(), e.empty(ySizes, bf16), G, R, gw, tiling,
                              [&](Emit t, Value dot) { return t.toBf16(dot); });
    rewriter.replaceOp(op, e.castTo(y, op.getType()));
    return success();
  }
};

} // namespace

//===----------------------------------------------------------------------------------------------------------===//
// The patterns (dsa/Conversion/DSAToCPU/DSAToCPU.h)
//===----------------------------------------------------------------------------------------------------------===//

void populateDSAToCPUPatterns(RewritePatternSet &patterns, int64_t vectorRegisters, bool pairColumns,
                              int64_t phaseMinRows) {
  // The register tile of the blocked products: rows x cols accumulators plus the rows' and columns' vectors and a
  // product must fit the registers (4 x 4: 16 + 8 + 1 of 32; with 16 registers 4 x 4 spilled accumulators every
  // k-step, 3 x 3: 9 + 6 + 1).
  GemmTiling tiling;
  if (vectorRegisters < 32) {
    tiling.blockRows = 3;
    tiling.blockCols = 3;
  } else if (pairColumns) {
    // AVX-512: 4 rows x 4 pairs of columns, 16 accumulators of 16 lanes (two dots each) + 4 x + 1 w of 32.
    tiling.pairColumns = true;
    tiling.blockCols = 8;
  }
  // The phase kernel's register tile: rows x (vectors x lanes) accumulators + the vectors + one broadcast. 16
  // registers: 6 x 2 x 8 lanes (12 + 2 + 1); 32: 12 x 2 x 16 lanes (24 + 2 + 1).
  tiling.phaseMinRows = std::max<int64_t>(0, phaseMinRows);
  // A phase of a panel of 512 KiB with 32 registers: AVX-512 x86 cores have at least 1 MiB of L2 (Zen 4 / 5, Xeon
  // from Skylake-SP). With 128 KiB, a product with a long K (wo_b: K = 8192, 4 KiB per output per phase) had ONE
  // column tile per panel, so every band of x was streamed from L3 again for each 32 outputs: measured on Zen 5
  // (docs/benchmarks.md, "an AVX-512 host (AMD Zen 5)", 1.), CPUOp/wo_b 499-530 -> 250-265 ms, CPU/prefill512
  // 1299-1356 -> 985-1087 ms.
  if (vectorRegisters >= 32) {
    tiling.phaseRows = 12;
    tiling.phaseLanes = 16;
    tiling.phasePanelBytes = 512 << 10;
  }
  patterns.add<LinearLowering, GroupedOutputLowering>(patterns.getContext(), tiling);
  patterns.add<RmsNormLowering, PositionsLowering, ApplyRopeLowering, RingUpdateLowering, WindowKvLowering,
               WindowIndicesLowering>(patterns.getContext());
  // sparse_attn's p.v sums: 4 heads x 4 vectors of 16 lanes with 32 registers (16 sums + 4 kv + 1 broadcast), 4 x 2
  // of 8 with 16 (each column its own sum either way: the lanes are columns, not a dot's phases).
  patterns.add<SparseAttnLowering>(patterns.getContext(), vectorRegisters >= 32 ? 16 : 8);
  // The compressed-attention primitives and the elementwise casts on tensors; act_quant_fp8 and the fp4 round trips
  // share one lowering (BlockRoundTripLowering, CompressedToCPU.cpp).
  cpu_lowering::populateCompressedToCPUPatterns(patterns);
}

void configureDSAToCPUConversionLegality(ConversionTarget &target) {
  target.addIllegalDialect<DSADialect>();
  target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect, tensor::TensorDialect, math::MathDialect,
                         scf::SCFDialect, func::FuncDialect, vector::VectorDialect,
                         bufferization::BufferizationDialect, memref::MemRefDialect>();
  // Elementwise casts on tensors (from dsa-decompose-attention) become linalg.generic ops; scalar ones stay.
  target.addDynamicallyLegalOp<arith::ExtFOp, arith::TruncFOp>(
      [](Operation *op) { return !isa<RankedTensorType>(op->getResult(0).getType()); });
}

LogicalResult declareDSAToCPURuntimeFunctions(ModuleOp module) {
  bool needsFail = false, needsTopk = false;
  module.walk([&](Operation *op) {
    if (isa<PositionsOp, ApplyRopeOp, RingUpdateOp, WindowKvOp, WindowIndicesOp, SparseAttnOp>(op) ||
        cpu_lowering::compressedNeedsFail(op))
      needsFail = true;
    if (cpu_lowering::compressedNeedsTopk(op))
      needsTopk = true;
  });
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  // The run-time check hook (the host defines it, see RuntimeErrors.h).
  if (needsFail && failed(conversion::declareRuntimeFunction(module, b, ::dsa::abi::kFailSymbol,
                                                             b.getFunctionType({b.getI32Type()}, {}), "dsa-to-cpu",
                                                             "the run-time check hook's declaration", /*cInterface=*/false)))
    return failure();
  // The top-k runtime function (RuntimeFunctions.h), memref descriptors passed by pointer (C interface).
  if (needsTopk) {
    const int64_t dyn = ShapedType::kDynamic;
    auto values = MemRefType::get({dyn, dyn}, b.getF32Type());
    auto picks = MemRefType::get({dyn, dyn}, b.getI64Type());
    if (failed(conversion::declareRuntimeFunction(module, b, ::dsa::abi::kTopkSymbol,
                                                  b.getFunctionType({values, b.getI64Type(), picks}, {b.getI32Type()}),
                                                  "dsa-to-cpu", "the top-k runtime's declaration", /*cInterface=*/true)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------------------------------------------===//
// The pass: the patterns above, after a check naming what they cannot lower
//===----------------------------------------------------------------------------------------------------------===//

namespace {

struct ConvertDSAToCPUPass : impl::ConvertDSAToCPUBase<ConvertDSAToCPUPass> {
  using ConvertDSAToCPUBase::ConvertDSAToCPUBase;
  void getDependentDialects(DialectRegistry &registry) const override {
    ConvertDSAToCPUBase::getDependentDialects(registry);
    registry.insert<func::FuncDialect, vector::VectorDialect, bufferization::BufferizationDialect,
                    memref::MemRefDialect, LLVM::LLVMDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // Reject what is not lowered, with a diagnostic naming the missing step, before rewriting anything.
    bool unsupported = false;
    module.walk([&](Operation *op) {
      if (!isa<DSADialect>(op->getDialect()))
        return;
      if (isa<AttentionOp>(op)) {
        op->emitOpError() << "must be decomposed before dsa-to-cpu (run dsa-decompose-attention first)";
        unsupported = true;
      } else if (isa<ProbeOp>(op)) {
        op->emitOpError() << "must be removed before dsa-to-cpu (run dsa-strip-probes first)";
        unsupported = true;
      } else if (!isa<LinearOp, RmsNormOp, PositionsOp, ApplyRopeOp, ActQuantFp8Op, RingUpdateOp, WindowKvOp,
                       WindowIndicesOp, SparseAttnOp, GroupedOutputOp>(op) &&
                 !isCompressedPrimitive(op)) {
        op->emitOpError() << "is not lowered by dsa-to-cpu";
        unsupported = true;
      }
    });
    if (unsupported)
      return signalPassFailure();

    if (failed(declareDSAToCPURuntimeFunctions(module)))
      return signalPassFailure();
    ConversionTarget target(*ctx);
    configureDSAToCPUConversionLegality(target);
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(ctx);
    populateDSAToCPUPatterns(patterns, vectorRegisters, pairColumns, phaseMinRows);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::dsa
