//===- Support.cpp - emission helpers shared by the dsa-to-cpu patterns --------------------------===//
//
// See Support.h.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "Support.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::dsa::cpu_lowering {

AffineExpr dimExpr(MLIRContext *ctx, unsigned i) { return getAffineDimExpr(i, ctx); }

/// The identity exprs d0..d(n-1).
SmallVector<AffineExpr> dimExprs(MLIRContext *ctx, unsigned n, unsigned first) {
  SmallVector<AffineExpr> e;
  for (unsigned i = 0; i < n; ++i)
    e.push_back(dimExpr(ctx, first + i));
  return e;
}

AffineMap mapOf(MLIRContext *ctx, unsigned numDims, ArrayRef<AffineExpr> results) {
  return AffineMap::get(numDims, 0, results, ctx);
}

SmallVector<IteratorType> parallel(unsigned n) { return SmallVector<IteratorType>(n, IteratorType::parallel); }

/// A linalg.generic with one result.
Value generic(Emit e, Type resultType, ValueRange ins, Value init, ArrayRef<AffineMap> maps,
              ArrayRef<IteratorType> iterators, BodyFn body) {
  auto op = linalg::GenericOp::create(e.b, e.loc, TypeRange{resultType}, ins, ValueRange{init}, maps, iterators, body);
  return op.getResult(0);
}

/// Calls the host's dsa_cpu_fail(code) when `failed` holds.
void reportIf(Emit e, Value failed, RuntimeError code) {
  scf::IfOp::create(e.b, e.loc, failed, [&](OpBuilder &b, Location loc) {
    Emit t{b, loc};
    func::CallOp::create(b, loc, FlatSymbolRefAttr::get(b.getContext(), ::dsa::cpu::kFailSymbol), TypeRange{},
                         ValueRange{t.c32(static_cast<int32_t>(code))});
    scf::YieldOp::create(b, loc);
  });
}

/// scf.if ok { compute() } else { fallback() } yielding one tensor of `type` (each branch's value is cast to it).
Value guarded(Emit e, Value ok, Type type, function_ref<Value(Emit)> compute, function_ref<Value(Emit)> fallback) {
  auto ifOp = scf::IfOp::create(e.b, e.loc, TypeRange{type}, ok, /*addThenBlock=*/true, /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(e.b);
  e.b.setInsertionPointToStart(ifOp.thenBlock());
  Emit t{e.b, e.loc};
  scf::YieldOp::create(e.b, e.loc, t.castTo(compute(t), type));
  e.b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(e.b, e.loc, t.castTo(fallback(t), type));
  return ifOp.getResult(0);
}

/// Sets the sizes with the values of `v`'s dimensions (static ones as attributes).
SmallVector<OpFoldResult> sizesOf(Emit e, Value v) { return tensor::getMixedSizes(e.b, e.loc, v); }

RankedTensorType tensorType(ArrayRef<OpFoldResult> sizes, Type elem) {
  SmallVector<int64_t> shape;
  for (OpFoldResult s : sizes) {
    if (auto attr = dyn_cast<Attribute>(s))
      shape.push_back(cast<IntegerAttr>(attr).getInt());
    else
      shape.push_back(ShapedType::kDynamic);
  }
  return RankedTensorType::get(shape, elem);
}

//===----------------------------------------------------------------------------------------------------------===//
// Numerics (bit-exact to include/dsa/Numerics)
//===----------------------------------------------------------------------------------------------------------===//

/// pow2_ceil (Numerics/E8M0.h pow2Ceil + pow2CeilSlow): for a normal v, 2^e, plus one octave when a mantissa bit is
/// set; a NaN is quietened, +-inf and +-0 are kept, a denormal gives the smallest power of two >= it.
Value pow2Ceil(Emit e, Value v) {
  using P = arith::CmpIPredicate;
  Value u = e.bitsOf(v);
  Value expField = e.band(u, e.cu32(0x7F800000u));
  Value normal = e.cmpi(P::ult, e.sub(expField, e.cu32(0x00800000u)), e.cu32(0x7F000000u));
  Value r = e.band(u, e.cu32(0xFF800000u));
  Value hasMantissa = e.cmpi(P::ne, e.band(u, e.cu32(0x007FFFFFu)), e.c32(0));
  Value normalResult = e.sel(hasMantissa, e.add(r, e.cu32(0x00800000u)), r);
  // Slow path.
  Value sign = e.band(u, e.cu32(0x80000000u));
  Value mag = e.band(u, e.cu32(0x7FFFFFFFu));
  Value isNan = e.cmpi(P::ugt, mag, e.cu32(0x7F800000u));
  Value keep = e.bor(e.cmpi(P::eq, mag, e.cu32(0x7F800000u)), e.cmpi(P::eq, mag, e.c32(0)));
  // Denormal (0 < mag < 2^23): the smallest power of two >= mag, as an integer pattern.
  Value magMinus1 = e.sub(mag, e.c32(1));
  Value isPow2 = e.cmpi(P::eq, e.band(mag, magMinus1), e.c32(0));
  Value lz = math::CountLeadingZerosOp::create(e.b, e.loc, magMinus1);
  Value shift = e.sub(e.c32(32), lz); // in [1, 23] for a denormal that is not a power of two
  Value shiftSafe = e.sel(isPow2, e.c32(0), shift);
  Value p = e.sel(isPow2, mag, e.shl(e.c32(1), shiftSafe));
  Value denormalResult = e.bor(sign, p);
  Value slow = e.sel(isNan, e.bor(u, e.cu32(0x00400000u)), e.sel(keep, u, denormalResult));
  return e.floatOf(e.sel(normal, normalResult, slow));
}

/// roundE4M3 (Numerics/E4M3.h): RNE onto the e4m3fn grid, saturating to +-448, NaN kept; as an f32.
Value roundE4M3(Emit e, Value v) {
  using P = arith::CmpIPredicate;
  Value u = e.bitsOf(v);
  Value signBit = e.band(u, e.cu32(0x80000000u));
  Value a = e.band(u, e.cu32(0x7FFFFFFFu));
  Value isNan = e.cmpi(P::ugt, a, e.cu32(0x7F800000u));
  Value saturate = e.cmpi(P::uge, a, e.cu32(0x43E00000u));
  Value normal = e.cmpi(P::uge, a, e.cu32(0x3C800000u));
  Value tiny = e.cmpi(P::ule, a, e.cu32(0x3A800000u));
  // Normal range: keep 3 of the 23 mantissa bits, RNE on the other 20; code = (a >> 20) - (120 << 3), <= 0x7E.
  Value an = e.add(e.add(a, e.cu32(0x7FFFFu)), e.band(e.shru(a, e.c32(20)), e.c32(1)));
  Value codeN = e.sub(e.shru(an, e.c32(20)), e.c32(120 << 3));
  codeN = e.sel(e.cmpi(P::ugt, codeN, e.c32(0x7E)), e.c32(0x7E), codeN);
  // Subnormal range (2^-10, 2^-6): q = RNE(sig >> (141 - exponent field)).
  Value sig = e.bor(e.band(a, e.cu32(0x7FFFFFu)), e.cu32(0x800000u));
  Value shiftRaw = e.sub(e.c32(141), e.shru(a, e.c32(23)));
  Value subnormal = e.band(e.cmpi(P::ult, a, e.cu32(0x3C800000u)), e.cmpi(P::ugt, a, e.cu32(0x3A800000u)));
  Value shift = e.sel(subnormal, shiftRaw, e.c32(21)); // keep the unused arm's shift amounts in range
  Value half = e.sub(e.shl(e.c32(1), e.sub(shift, e.c32(1))), e.c32(1));
  Value odd = e.band(e.shru(sig, shift), e.c32(1));
  Value codeS = e.shru(e.add(e.add(sig, half), odd), shift);
  Value code = e.sel(tiny, e.c32(0), e.sel(normal, codeN, codeS));
  code = e.sel(saturate, e.c32(0x7E), code);
  // Decode: e == 0 -> m * 2^-9; else exponent field e + 120, mantissa m << 20.
  Value ex = e.band(e.shru(code, e.c32(3)), e.c32(0xF));
  Value m = e.band(code, e.c32(7));
  Value normalBits = e.bor(e.shl(e.add(ex, e.c32(120)), e.c32(23)), e.shl(m, e.c32(20)));
  Value subValue = e.fmul(arith::UIToFPOp::create(e.b, e.loc, e.f32(), m), e.cf(0x1p-9f));
  Value magBits = e.sel(e.cmpi(P::eq, ex, e.c32(0)), e.bitsOf(subValue), normalBits);
  Value result = e.bor(signBit, magBits);
  result = e.sel(isNan, e.bor(signBit, e.cu32(0x7FC00000u)), result);
  return e.floatOf(result);
}

/// clamp(v, -lim, lim) as torch.clamp (Numerics/Quant.cpp clampSym): NaN stays NaN.
Value clampSym(Emit e, Value v, float lim) {
  using P = arith::CmpFPredicate;
  Value hi = e.cf(lim), lo = e.cf(-lim);
  return e.sel(e.cmpf(P::OGT, v, hi), hi, e.sel(e.cmpf(P::OLT, v, lo), lo, v));
}

//===----------------------------------------------------------------------------------------------------------===//
// Lane dot products (the kernels' dotF32)
//===----------------------------------------------------------------------------------------------------------===//

/// dotF32 of the kernels (Kernels.cpp) of two rows, emitted in a generic's body: `a[aLead..., 0:K]` and
/// `b[bLead..., 0:K]` (bf16 or f32 tensors whose LAST dimension has K elements, K static, read in place). Eight f32
/// lanes accumulate acc[l] += a[8i+l] * b[8i+l] over i ascending, from 0: one vector<8xf32> accumulator in an
/// scf.for, element-wise vector ops only (no reduction across lanes, no contraction). The lanes are combined as
/// ((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7)), then the tail sum over k >= 8*(K/8) (ascending, from 0.0f) is added last.
Value emitDotF32(Emit e, Value a, ValueRange aLead, Value b, ValueRange bLead, int64_t K) {
  const int64_t K8 = K / kLanes;
  auto laneType = VectorType::get({kLanes}, e.f32());
  Value acc = arith::ConstantOp::create(e.b, e.loc, DenseElementsAttr::get(laneType, 0.0f));
  auto readLanes = [](Emit t, Value src, ValueRange lead, Value k) -> Value {
    Type elem = cast<RankedTensorType>(src.getType()).getElementType();
    SmallVector<Value> at(lead.begin(), lead.end());
    at.push_back(k);
    Value pad = arith::ConstantOp::create(t.b, t.loc, t.b.getZeroAttr(elem));
    Value read = vector::TransferReadOp::create(t.b, t.loc, VectorType::get({kLanes}, elem), src, at, pad,
                                               ArrayRef<bool>{true});
    if (elem.isF32())
      return read;
    return arith::ExtFOp::create(t.b, t.loc, VectorType::get({kLanes}, t.f32()), read);
  };
  if (K8 > 0) {
    auto loop = scf::ForOp::create(
        e.b, e.loc, e.idx(0), e.idx(K8 * kLanes), e.idx(kLanes), ValueRange{acc},
        [&](OpBuilder &bb, Location loc, Value k, ValueRange iter) {
          Emit t{bb, loc};
          Value p = t.fmul(readLanes(t, a, aLead, k), readLanes(t, b, bLead, k));
          scf::YieldOp::create(bb, loc, t.fadd(iter[0], p));
        });
    acc = loop.getResult(0);
  }
  Value tail = e.cf(0.0f);
  if (K % kLanes != 0) {
    auto loop = scf::ForOp::create(
        e.b, e.loc, e.idx(K8 * kLanes), e.idx(K), e.idx(1), ValueRange{tail},
        [&](OpBuilder &bb, Location loc, Value k, ValueRange iter) {
          Emit t{bb, loc};
          SmallVector<Value> ai(aLead.begin(), aLead.end()), bi(bLead.begin(), bLead.end());
          ai.push_back(k);
          bi.push_back(k);
          Value p = t.fmul(t.toF32(t.extract(a, ai)), t.toF32(t.extract(b, bi)));
          scf::YieldOp::create(bb, loc, t.fadd(iter[0], p));
        });
    tail = loop.getResult(0);
  }
  SmallVector<Value> l;
  for (int64_t i = 0; i < kLanes; ++i)
    l.push_back(vector::ExtractOp::create(e.b, e.loc, acc, ArrayRef<int64_t>{i}));
  Value s = e.fadd(e.fadd(e.fadd(l[0], l[4]), e.fadd(l[1], l[5])), e.fadd(e.fadd(l[2], l[6]), e.fadd(l[3], l[7])));
  return e.fadd(s, tail);
}

/// The generic's loop indices d0 .. d(n-1).
SmallVector<Value> loopIndices(Emit e, unsigned n) {
  SmallVector<Value> ivs;
  for (unsigned i = 0; i < n; ++i)
    ivs.push_back(e.linalgIndex(i));
  return ivs;
}

/// Requires `v`'s dimension `dim` to be static; emits the diagnostic otherwise.
LogicalResult requireStatic(Operation *op, Value v, int64_t dim, StringRef operand) {
  auto type = cast<RankedTensorType>(v.getType());
  if (!type.isDynamicDim(dim))
    return success();
  return op->emitOpError() << "dsa-to-cpu needs dimension " << dim << " of '" << operand
                           << "' to be static (it sizes an unrolled reduction or a constant table)";
}

/// `x` [d0, ..., dn-1, K] as rows [rows, K]: leading dims collapsed (rank > 2), a row added (rank 1), rank 2 as is.
Value collapseRows(Emit e, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() == 2)
    return x;
  if (type.getRank() == 1) {
    SmallVector<OpFoldResult> shape{e.b.getIndexAttr(1), sizesOf(e, x)[0]};
    return tensor::ExpandShapeOp::create(e.b, e.loc, tensorType(shape, type.getElementType()), x,
                                         ArrayRef<ReassociationIndices>{{0, 1}}, shape);
  }
  ReassociationIndices lead;
  for (int64_t i = 0; i + 1 < type.getRank(); ++i)
    lead.push_back(i);
  return tensor::CollapseShapeOp::create(e.b, e.loc, x, ArrayRef<ReassociationIndices>{lead, {type.getRank() - 1}});
}

/// `y` [rows, N] back to `like`'s leading dims followed by N (the inverse of collapseRows), cast to `resultType`.
Value expandRows(Emit e, Value y, Value like, RankedTensorType resultType) {
  auto likeType = cast<RankedTensorType>(like.getType());
  if (likeType.getRank() == 2)
    return e.castTo(y, resultType);
  if (likeType.getRank() == 1)
    return e.castTo(tensor::CollapseShapeOp::create(e.b, e.loc, y, ArrayRef<ReassociationIndices>{{0, 1}}),
                    resultType);
  SmallVector<OpFoldResult> shape = sizesOf(e, like);
  shape.back() = sizesOf(e, y).back();
  ReassociationIndices lead;
  for (int64_t i = 0; i + 1 < likeType.getRank(); ++i)
    lead.push_back(i);
  auto yType = cast<RankedTensorType>(y.getType());
  return e.castTo(tensor::ExpandShapeOp::create(e.b, e.loc, tensorType(shape, yType.getElementType()), y,
                                                ArrayRef<ReassociationIndices>{lead, {likeType.getRank() - 1}}, shape),
                  resultType);
}

} // namespace mlir::dsa::cpu_lowering
