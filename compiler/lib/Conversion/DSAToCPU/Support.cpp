//===- Support.cpp - emission helpers shared by the dsa-to-cpu patterns --------------------------===//
//
// See Support.h.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "Support.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
#include <cmath>
#include <tuple>

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
    func::CallOp::create(b, loc, FlatSymbolRefAttr::get(b.getContext(), ::dsa::abi::kFailSymbol), TypeRange{},
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
// Numerics (bit-exact to core/include/dsa/Numerics)
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

/// 8 lanes of `src[lead..., k]` .. `src[lead..., k + 7]` as f32 (bf16 widened exactly).
Value readLanes(Emit t, Value src, ValueRange lead, Value k, int64_t lanes) {
  Type elem = cast<RankedTensorType>(src.getType()).getElementType();
  SmallVector<Value> at(lead.begin(), lead.end());
  at.push_back(k);
  Value pad = arith::ConstantOp::create(t.b, t.loc, t.b.getZeroAttr(elem));
  Value read = vector::TransferReadOp::create(t.b, t.loc, VectorType::get({lanes}, elem), src, at, pad,
                                             ArrayRef<bool>{true});
  if (elem.isF32())
    return read;
  return arith::ExtFOp::create(t.b, t.loc, VectorType::get({lanes}, t.f32()), read);
}

namespace {
/// Column k of a DotRows side whose k values start at `k0` (null: 0).
Value rowColumn(Emit t, Value k0, Value k) { return k0 ? t.add(k0, k) : k; }

/// One k-step of a dot's lanes: fma(a, b, acc) when `fused` (the caller has shown the products exact), else
/// acc + a * b, the kernels' two roundings.
Value multiplyAdd(Emit t, Value a, Value b, Value acc, bool fused) {
  return fused ? vector::FMAOp::create(t.b, t.loc, a, b, acc).getResult() : t.fadd(acc, t.fmul(a, b));
}

/// dotF32's end of one dot: lanes first .. first + 7 of the accumulator `acc` combined as
/// ((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7)), then the tail sum added last.
Value combineLanes(Emit e, Value acc, int64_t first, Value tail) {
  SmallVector<Value> l;
  for (int64_t i = 0; i < kLanes; ++i)
    l.push_back(vector::ExtractOp::create(e.b, e.loc, acc, ArrayRef<int64_t>{first + i}));
  Value s = e.fadd(e.fadd(e.fadd(l[0], l[4]), e.fadd(l[1], l[5])), e.fadd(e.fadd(l[2], l[6]), e.fadd(l[3], l[7])));
  return e.fadd(s, tail);
}
} // namespace

/// dotF32 of the kernels (Kernels.cpp) for every pair of rows (a_i, b_j) of a block, emitted inline (see Support.h).
/// One scf.for over k = 0, 8, .. carries one vector<8xf32> accumulator PER PAIR (acc_ij[l] += a_i[8s+l] *
/// b_j[8s+l], s ascending, from 0): every row is loaded (and widened) once per step and used by every pair it is in,
/// but no pair's sum is shared with or reordered by another's. Element-wise vector ops only (no reduction across
/// lanes, no contraction). Each pair's lanes are combined as ((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7)), then its tail sum
/// over k >= 8*(K/8) (ascending, from 0.0f) is added last.
SmallVector<Value> emitDotBlock(Emit e, const DotRows &a, const DotRows &b, int64_t K, bool fused) {
  const int64_t K8 = K / kLanes;
  const size_t na = a.rows.size(), nb = b.rows.size();
  auto laneType = VectorType::get({kLanes}, e.f32());
  Value zero8 = arith::ConstantOp::create(e.b, e.loc, DenseElementsAttr::get(laneType, 0.0f));
  SmallVector<Value> accs(na * nb, zero8);
  if (K8 > 0) {
    auto loop = scf::ForOp::create(
        e.b, e.loc, e.idx(0), e.idx(K8 * kLanes), e.idx(kLanes), accs,
        [&](OpBuilder &bb, Location loc, Value k, ValueRange iter) {
          Emit t{bb, loc};
          SmallVector<Value> av, bv, next;
          for (const SmallVector<Value> &lead : a.rows)
            av.push_back(readLanes(t, a.tensor, lead, rowColumn(t, a.k0, k)));
          for (const SmallVector<Value> &lead : b.rows)
            bv.push_back(readLanes(t, b.tensor, lead, rowColumn(t, b.k0, k)));
          for (size_t i = 0; i < na; ++i)
            for (size_t j = 0; j < nb; ++j)
              next.push_back(multiplyAdd(t, av[i], bv[j], iter[i * nb + j], fused));
          scf::YieldOp::create(bb, loc, next);
        });
    accs.assign(loop.getResults().begin(), loop.getResults().end());
  }
  SmallVector<Value> tails(na * nb, e.cf(0.0f));
  if (K % kLanes != 0) {
    auto loop = scf::ForOp::create(
        e.b, e.loc, e.idx(K8 * kLanes), e.idx(K), e.idx(1), tails,
        [&](OpBuilder &bb, Location loc, Value k, ValueRange iter) {
          Emit t{bb, loc};
          auto element = [&](const DotRows &r, size_t i) {
            SmallVector<Value> at(r.rows[i].begin(), r.rows[i].end());
            at.push_back(rowColumn(t, r.k0, k));
            return t.toF32(t.extract(r.tensor, at));
          };
          SmallVector<Value> av, bv, next;
          for (size_t i = 0; i < na; ++i)
            av.push_back(element(a, i));
          for (size_t j = 0; j < nb; ++j)
            bv.push_back(element(b, j));
          for (size_t i = 0; i < na; ++i)
            for (size_t j = 0; j < nb; ++j)
              next.push_back(t.fadd(iter[i * nb + j], t.fmul(av[i], bv[j])));
          scf::YieldOp::create(bb, loc, next);
        });
    tails.assign(loop.getResults().begin(), loop.getResults().end());
  }
  SmallVector<Value> dots;
  for (size_t p = 0; p < na * nb; ++p)
    dots.push_back(combineLanes(e, accs[p], 0, tails[p]));
  return dots;
}

Value emitDotF32(Emit e, Value a, ValueRange aLead, Value b, ValueRange bLead, int64_t K) {
  DotRows ar{a, {SmallVector<Value>(aLead.begin(), aLead.end())}, Value()};
  DotRows br{b, {SmallVector<Value>(bLead.begin(), bLead.end())}, Value()};
  return emitDotBlock(e, ar, br, K).front();
}

namespace {
/// The magnitudes an operand's products can reach: the largest |v| (NaN when some v is NaN) and the smallest nonzero
/// |v| (+inf when every v is 0). While folding, each is carried as the i32 bits of |v| (scalars or per vector lane):
/// for non-negative floats, NaNs included (exponent all ones, mantissa nonzero: above +inf's 0x7F800000), the order
/// of the bits as signed integers is the order of the values, so arith.maxsi / minsi (one instruction per vector)
/// give what arith.maximumf / minimumf would (NaN propagated by the maximum; the minimum's NaN does not matter, the
/// maximum already fails productsExact) without their NaN-handling compare-and-blend sequences, which were most of
/// the pass over w that widens a panel (perf, docs/benchmarks.md). combineMagnitudes returns f32 scalars.
struct Magnitudes {
  Value maxAbs, minAbs;
};
/// `type`'s i32 counterpart (f32 -> i32, vector<8xf32> -> vector<8xi32>).
Type bitsTypeOf(Emit e, Type type) {
  if (auto vt = dyn_cast<VectorType>(type))
    return VectorType::get(vt.getShape(), e.i32());
  return e.i32();
}
Value splatI32(Emit e, Type type, int32_t v) {
  if (auto vt = dyn_cast<VectorType>(type))
    return arith::ConstantOp::create(e.b, e.loc, DenseElementsAttr::get(vt, v));
  return e.c32(v);
}
constexpr int32_t kInfBits = 0x7F800000;
/// The magnitudes of no values, as bits: max 0 (|0|), min +inf. `type`: f32 or a vector of f32 (the folded values').
Magnitudes noMagnitudes(Emit e, Type type) {
  Type bits = bitsTypeOf(e, type);
  return {splatI32(e, bits, 0), splatI32(e, bits, kInfBits)};
}
/// `m` with the f32 values `v` (f32 or a vector of f32, matching m's members' i32 shape) folded in.
Magnitudes foldMagnitudes(Emit t, Magnitudes m, Value v) {
  Type bits = bitsTypeOf(t, v.getType());
  Value raw = arith::BitcastOp::create(t.b, t.loc, bits, v);
  Value a = t.band(raw, splatI32(t, bits, 0x7FFFFFFF));
  Value isZero = t.cmpi(arith::CmpIPredicate::eq, a, splatI32(t, bits, 0));
  Value nonzero = t.sel(isZero, splatI32(t, bits, kInfBits), a);
  return {arith::MaxSIOp::create(t.b, t.loc, m.maxAbs, a), arith::MinSIOp::create(t.b, t.loc, m.minAbs, nonzero)};
}
/// Scalar f32 magnitudes from per-lane ones `lanes` and scalar ones `tail` (both as bits).
Magnitudes combineMagnitudes(Emit t, Magnitudes lanes, Magnitudes tail) {
  Value mx = vector::ReductionOp::create(t.b, t.loc, vector::CombiningKind::MAXSI, lanes.maxAbs);
  Value mn = vector::ReductionOp::create(t.b, t.loc, vector::CombiningKind::MINSI, lanes.minAbs);
  Value maxBits = arith::MaxSIOp::create(t.b, t.loc, mx, tail.maxAbs);
  Value minBits = arith::MinSIOp::create(t.b, t.loc, mn, tail.minAbs);
  return {arith::BitcastOp::create(t.b, t.loc, t.f32(), maxBits),
          arith::BitcastOp::create(t.b, t.loc, t.f32(), minBits)};
}

/// What the fused k-loop needs to know of x [M, C] (bf16 or f32), or of its rows first .. first + count - 1 when
/// `first` is given: whether every element is a bf16 value (an f32 element with its low 16 bits clear; always for
/// bf16) and its Magnitudes. One pass over the rows: 8 lanes at a time, then the C % 8 tail of each row.
std::pair<Value, Magnitudes> bf16Magnitudes(Emit e, Value x, int64_t C, Value first = Value(), Value count = Value()) {
  const bool isF32 = cast<RankedTensorType>(x.getType()).getElementType().isF32();
  auto laneType = VectorType::get({kLanes}, e.f32());
  auto bitsType = VectorType::get({kLanes}, e.i32());
  Value M = first ? count : e.sizeValue(sizesOf(e, x)[0]);
  const int64_t C8 = C / kLanes * kLanes;
  Magnitudes lanes0 = noMagnitudes(e, laneType), tail0 = noMagnitudes(e, e.f32());
  Value lowBits0 = arith::ConstantOp::create(e.b, e.loc, DenseElementsAttr::get(bitsType, 0));
  Value tailBits0 = e.c32(0);
  auto rows = scf::ForOp::create(
      e.b, e.loc, e.idx(0), M, e.idx(1),
      ValueRange{lanes0.maxAbs, lanes0.minAbs, lowBits0, tail0.maxAbs, tail0.minAbs, tailBits0},
      [&](OpBuilder &bb, Location loc, Value r, ValueRange it) {
        Emit u{bb, loc};
        Value m = first ? u.add(first, r) : r;
        SmallVector<Value> cur(it.begin(), it.end());
        if (C8 > 0) {
          auto lanesLoop = scf::ForOp::create(
              u.b, u.loc, u.idx(0), u.idx(C8), u.idx(kLanes), ValueRange{cur[0], cur[1], cur[2]},
              [&](OpBuilder &b2, Location l2, Value k, ValueRange li) {
                Emit v{b2, l2};
                Value vals = readLanes(v, x, ValueRange{m}, k);
                Magnitudes next = foldMagnitudes(v, {li[0], li[1]}, vals);
                Value bits = li[2];
                if (isF32) {
                  Value raw = arith::BitcastOp::create(v.b, v.loc, bitsType, vals);
                  Value low = arith::ConstantOp::create(v.b, v.loc, DenseElementsAttr::get(bitsType, 0xFFFF));
                  bits = v.bor(bits, v.band(raw, low));
                }
                scf::YieldOp::create(b2, l2, ValueRange{next.maxAbs, next.minAbs, bits});
              });
          for (int i = 0; i < 3; ++i)
            cur[i] = lanesLoop.getResult(i);
        }
        if (C8 < C) {
          auto tailLoop = scf::ForOp::create(
              u.b, u.loc, u.idx(C8), u.idx(C), u.idx(1), ValueRange{cur[3], cur[4], cur[5]},
              [&](OpBuilder &b2, Location l2, Value k, ValueRange ti) {
                Emit v{b2, l2};
                Value val = v.toF32(v.extract(x, ValueRange{m, k}));
                Magnitudes next = foldMagnitudes(v, {ti[0], ti[1]}, val);
                Value bits = isF32 ? v.bor(ti[2], v.band(v.bitsOf(val), v.c32(0xFFFF))) : ti[2];
                scf::YieldOp::create(b2, l2, ValueRange{next.maxAbs, next.minAbs, bits});
              });
          for (int i = 0; i < 3; ++i)
            cur[3 + i] = tailLoop.getResult(i);
        }
        scf::YieldOp::create(bb, loc, cur);
      });
  Magnitudes mag = combineMagnitudes(e, {rows.getResult(0), rows.getResult(1)}, {rows.getResult(3), rows.getResult(4)});
  if (!isF32)
    return {e.cBool(true), mag};
  Value laneBits = vector::ReductionOp::create(e.b, e.loc, vector::CombiningKind::OR, rows.getResult(2));
  Value exact = e.cmpi(arith::CmpIPredicate::eq, e.bor(laneBits, rows.getResult(5)), e.c32(0));
  return {exact, mag};
}

/// Whether every product of an element of x (bf16 values, magnitudes `xm`) and one of w (bf16, `wm`) is exact in
/// f32, so that fma(a, b, acc) and acc + a * b give the same bits: a bf16 has 8 significant bits, a product 16 of
/// f32's 24, so it rounds only when it overflows (|a b| >= 2^128) or falls below f32's normal range (2^-126).
/// Checked on the extremes: max|x| * max|w| finite (computed in f32: an overflow is +inf) and min|x| * min|w| over
/// nonzero elements >= 2^-126 (an underflow rounds below it). A NaN or an infinity anywhere fails the check
/// (NaN compares false; inf * anything nonzero is inf); a zero product is exact.
Value productsExact(Emit t, Value xBf16, Magnitudes xm, Magnitudes wm) {
  using P = arith::CmpFPredicate;
  Value noOverflow = t.cmpf(P::OLT, t.fmul(xm.maxAbs, wm.maxAbs), t.cf(INFINITY));
  Value noUnderflow = t.cmpf(P::OGE, t.fmul(xm.minAbs, wm.minAbs), t.cf(0x1p-126f));
  return t.band(xBf16, t.band(noOverflow, noUnderflow));
}
} // namespace

Value bf16ProductsExact(Emit e, Value x, int64_t Cx, Value y, int64_t Cy) {
  auto [xBf16, xMag] = bf16Magnitudes(e, x, Cx);
  auto [yBf16, yMag] = bf16Magnitudes(e, y, Cy);
  return productsExact(e, e.band(xBf16, yBf16), xMag, yMag);
}

SmallVector<Value> emitPairedDotBlock(Emit e, const DotRows &a, Value wide, ArrayRef<Value> pairs, int64_t K) {
  const int64_t K8 = K / kLanes * kLanes, T = K - K8;
  const size_t na = a.rows.size(), np = pairs.size();
  auto pairType = VectorType::get({2 * kLanes}, e.f32());
  Value zero16 = arith::ConstantOp::create(e.b, e.loc, DenseElementsAttr::get(pairType, 0.0f));
  SmallVector<Value> accs(na * np, zero16);
  SmallVector<int64_t> twice;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t l = 0; l < kLanes; ++l)
      twice.push_back(l);
  if (K8 > 0) {
    auto loop = scf::ForOp::create(
        e.b, e.loc, e.idx(0), e.idx(K8), e.idx(kLanes), accs,
        [&](OpBuilder &bb, Location loc, Value k, ValueRange iter) {
          Emit t{bb, loc};
          SmallVector<Value> av, wv, next;
          for (const SmallVector<Value> &lead : a.rows) {
            Value lanes = readLanes(t, a.tensor, lead, rowColumn(t, a.k0, k));
            av.push_back(vector::ShuffleOp::create(t.b, t.loc, lanes, lanes, twice)); // x's 8 lanes, twice
          }
          Value pad = t.cf(0.0f);
          Value chunk = t.add(k, k); // chunk k / 8 of a pair's row starts at column 16 (k / 8)
          for (Value p : pairs)
            wv.push_back(vector::TransferReadOp::create(t.b, t.loc, pairType, wide, ValueRange{p, chunk}, pad,
                                                        ArrayRef<bool>{true}));
          for (size_t i = 0; i < na; ++i)
            for (size_t j = 0; j < np; ++j)
              next.push_back(multiplyAdd(t, av[i], wv[j], iter[i * np + j], /*fused=*/true));
          scf::YieldOp::create(bb, loc, next);
        });
    accs.assign(loop.getResults().begin(), loop.getResults().end());
  }
  SmallVector<Value> tails(na * np * 2, e.cf(0.0f));
  if (T > 0) {
    auto loop = scf::ForOp::create(
        e.b, e.loc, e.idx(K8), e.idx(K), e.idx(1), tails, [&](OpBuilder &bb, Location loc, Value k, ValueRange iter) {
          Emit t{bb, loc};
          SmallVector<Value> xs, next;
          for (const SmallVector<Value> &lead : a.rows) {
            SmallVector<Value> at(lead.begin(), lead.end());
            at.push_back(rowColumn(t, a.k0, k));
            xs.push_back(t.toF32(t.extract(a.tensor, at)));
          }
          SmallVector<Value> ws;
          for (Value p : pairs)
            for (int64_t h = 0; h < 2; ++h) // column 2p + h's tail element k at 2 K8 + h T + (k - K8)
              ws.push_back(t.extract(wide, ValueRange{p, t.add(k, t.idx(K8 + h * T))}));
          for (size_t i = 0; i < na; ++i)
            for (size_t c = 0; c < 2 * np; ++c)
              next.push_back(t.fadd(iter[i * 2 * np + c], t.fmul(xs[i], ws[c])));
          scf::YieldOp::create(bb, loc, next);
        });
    tails.assign(loop.getResults().begin(), loop.getResults().end());
  }
  SmallVector<Value> dots;
  for (size_t i = 0; i < na; ++i)
    for (size_t j = 0; j < np; ++j)
      for (int64_t h = 0; h < 2; ++h)
        dots.push_back(combineLanes(e, accs[i * np + j], h * kLanes, tails[(i * np + j) * 2 + h]));
  return dots;
}

//===----------------------------------------------------------------------------------------------------------===//
// Phase kernel (emitGroupedDots with many rows of x)
//===----------------------------------------------------------------------------------------------------------===//
//
// dotF32's lane l is the sum over i ascending of a[8i + l] * b[8i + l]: a dot product of its own over the columns
// k = l (mod 8), its "phase". The phase kernel computes the 8 phases of every output as 8 separate products, each
// by the classic outer-product register tile (a column of MR x values broadcast, NV vectors of NR = NV x VW outputs
// of w loaded, MR x NV fused multiply-adds into the tile's accumulators, one k-step per i), so each accumulator
// lane sums exactly one output's phase in dotF32's order. Fused only: it runs on a panel only where every product
// of x and the panel's w is exact in f32 (panelProductsExact), so fma and acc + x w give the same bits; elsewhere
// emitGroupedDots runs the blocks, which have both k-loops. Then, per output, the 8 phase sums are
// combined as dotF32 combines its lanes and the K % 8 tail (summed from 0.0f in k order) is added last: the same
// bits as one dotF32 per output. Operands are packed phase-major so every k-step reads contiguous memory:
//   xp [G, NB, S, MR]  (NB = ceil(M / MR), S = 8 K8 + T, K8 = K / 8, T = K % 8): xp[g, b, l K8 + i, r] =
//                      x[b MR + r, g K + 8 i + l], xp[g, b, 8 K8 + j, r] = x[b MR + r, g K + 8 K8 + j], rows past
//                      M zero; packed once per call.
//   wp [JP, S, NR]     (a panel of nc w rows, JP = ceil(nc / NR)): wp[p, l K8 + i, c] = w[col0 + p NR + c, 8 i + l],
//                      the tail likewise, columns past nc zero; packed once per panel, the panel sized so that
//                      one phase of it (nc K8 f32) stays in L2 while every band of MR rows passes over it.
//   partials [8, NB, JP, MR NR]: the phase sums, then combined.

SmallVector<Value> transposeRows(Emit e, ArrayRef<Value> rows) {
  auto shuffle = [&](Value a, Value b, ArrayRef<int64_t> mask) {
    return vector::ShuffleOp::create(e.b, e.loc, a, b, mask).getResult();
  };
  const int64_t lo[8] = {0, 8, 1, 9, 4, 12, 5, 13}, hi[8] = {2, 10, 3, 11, 6, 14, 7, 15};
  const int64_t pairLo[8] = {0, 1, 8, 9, 4, 5, 12, 13}, pairHi[8] = {2, 3, 10, 11, 6, 7, 14, 15};
  const int64_t halfLo[8] = {0, 1, 2, 3, 8, 9, 10, 11}, halfHi[8] = {4, 5, 6, 7, 12, 13, 14, 15};
  const int64_t n = static_cast<int64_t>(rows.size());
  assert((n == 4 || n == 8) && "transposeRows takes 4 or 8 rows");
  Value t[8], s[8];
  for (int64_t p = 0; p < n / 2; ++p) {
    t[2 * p] = shuffle(rows[2 * p], rows[2 * p + 1], lo);
    t[2 * p + 1] = shuffle(rows[2 * p], rows[2 * p + 1], hi);
  }
  // s[4 p + 2 h + d]: lanes (2 h + d, 2 h + d + 4) of rows 4 p .. 4 p + 3.
  for (int64_t p = 0; p < n / 4; ++p)
    for (int64_t h = 0; h < 2; ++h) {
      s[4 * p + 2 * h] = shuffle(t[4 * p + h], t[4 * p + h + 2], pairLo);
      s[4 * p + 2 * h + 1] = shuffle(t[4 * p + h], t[4 * p + h + 2], pairHi);
    }
  SmallVector<Value> out(8);
  if (n == 4) {
    const int64_t first[4] = {0, 1, 2, 3}, second[4] = {4, 5, 6, 7};
    for (int64_t l = 0; l < 4; ++l) {
      out[l] = shuffle(s[l], s[l], first);
      out[l + 4] = shuffle(s[l], s[l], second);
    }
    return out;
  }
  for (int64_t l = 0; l < 4; ++l) {
    out[l] = shuffle(s[l], s[l + 4], halfLo);
    out[l + 4] = shuffle(s[l], s[l + 4], halfHi);
  }
  return out;
}

namespace {

/// Where k-column `k` of a row goes in the phase-major order: i = k / 8 (k < 8 K8) at phase k % 8, else the tail.
/// Packs `rows` [count, .. K ..] (bf16 or f32; row r at rowOf(r), its columns from `k0`) into `into` at
/// at(r, slot) for every row r < count and slot < S. With `rowBlock` = 4 or 8 (the caller's promise: for r a
/// multiple of rowBlock with r + rowBlock <= count, rows r .. r + rowBlock - 1 are at(r, slot) and the positions
/// after it in the last dimension), the k < 8 K8 part of every full block of rowBlock rows is packed a block at a
/// time: per i, the block's rows' lanes 8i .. 8i + 7 transposed (transposeRows) and written as 8 vectors of
/// rowBlock values, one per phase; the rest (rowBlock 0: everything) element by element.
Value packPhaseMajor(Emit e, Value src, Value count, function_ref<Value(Emit, Value)> rowOf, Value k0, int64_t K,
                     Value into, function_ref<SmallVector<Value>(Emit, Value, Value)> at, int64_t rowBlock = 0) {
  const int64_t K8 = K / kLanes, T = K % kLanes;
  Value blockRows = e.idx(0); // rows [0, blockRows) have their K8 part packed by blocks
  assert((rowBlock == 0 || rowBlock == 4 || rowBlock == 8) && "rowBlock is 0, 4 or 8");
  if (rowBlock > 0 && K8 > 0) {
    blockRows = e.mul(arith::DivSIOp::create(e.b, e.loc, count, e.idx(rowBlock)), e.idx(rowBlock));
    auto blocks = scf::ForOp::create(
        e.b, e.loc, e.idx(0), blockRows, e.idx(rowBlock), ValueRange{into},
        [&](OpBuilder &bb, Location loc, Value r0, ValueRange iter) {
          Emit u{bb, loc};
          SmallVector<Value> rowIdx;
          for (int64_t j = 0; j < rowBlock; ++j)
            rowIdx.push_back(rowOf(u, u.add(r0, u.idx(j))));
          auto steps = scf::ForOp::create(
              u.b, u.loc, u.idx(0), u.idx(K8), u.idx(1), ValueRange{iter[0]},
              [&](OpBuilder &b2, Location l2, Value i, ValueRange it) {
                Emit v{b2, l2};
                Value k = v.add(k0, v.mul(i, v.idx(kLanes)));
                SmallVector<Value> lanes;
                for (int64_t j = 0; j < rowBlock; ++j)
                  lanes.push_back(readLanes(v, src, ValueRange{rowIdx[j]}, k));
                SmallVector<Value> phases = transposeRows(v, lanes);
                Value next = it[0];
                for (int64_t l = 0; l < kLanes; ++l)
                  next = vector::TransferWriteOp::create(v.b, v.loc, phases[l], next,
                                                         at(v, r0, v.add(v.idx(l * K8), i)), ArrayRef<bool>{true})
                             .getResult();
                scf::YieldOp::create(b2, l2, next);
              });
          scf::YieldOp::create(bb, loc, steps.getResult(0));
        });
    into = blocks.getResult(0);
  }
  auto rows = scf::ForOp::create(
      e.b, e.loc, e.idx(0), count, e.idx(1), ValueRange{into},
      [&](OpBuilder &bb, Location loc, Value r, ValueRange iter) {
        Emit u{bb, loc};
        Value row = rowOf(u, r);
        Value cur = iter[0];
        // The row's k < 8 K8 part element by element (rows past the blocks above only, with a rowBlock).
        auto elementwise = [&](Emit w0) -> Value {
          auto steps = scf::ForOp::create(
              w0.b, w0.loc, w0.idx(0), w0.idx(K8), w0.idx(1), ValueRange{cur},
              [&](OpBuilder &b2, Location l2, Value i, ValueRange it) {
                Emit v{b2, l2};
                Value lanes = readLanes(v, src, ValueRange{row}, v.add(k0, v.mul(i, v.idx(kLanes))));
                Value next = it[0];
                for (int64_t l = 0; l < kLanes; ++l) {
                  Value val = vector::ExtractOp::create(v.b, v.loc, lanes, ArrayRef<int64_t>{l});
                  next = tensor::InsertOp::create(v.b, v.loc, val, next, at(v, r, v.add(v.idx(l * K8), i)));
                }
                scf::YieldOp::create(b2, l2, next);
              });
          return steps.getResult(0);
        };
        if (K8 > 0 && rowBlock > 0)
          cur = guarded(u, u.cmpi(arith::CmpIPredicate::sge, r, blockRows), cur.getType(), elementwise,
                        [&](Emit) { return cur; });
        else if (K8 > 0)
          cur = elementwise(u);
        if (T > 0) {
          auto tail = scf::ForOp::create(
              u.b, u.loc, u.idx(0), u.idx(T), u.idx(1), ValueRange{cur},
              [&](OpBuilder &b2, Location l2, Value j, ValueRange it) {
                Emit v{b2, l2};
                Value val = v.toF32(v.extract(src, ValueRange{row, v.add(k0, v.add(v.idx(8 * K8), j))}));
                scf::YieldOp::create(b2, l2,
                                     tensor::InsertOp::create(v.b, v.loc, val, it[0], at(v, r, v.add(v.idx(8 * K8), j)))
                                         .getResult());
              });
          cur = tail.getResult(0);
        }
        scf::YieldOp::create(bb, loc, cur);
      });
  return rows.getResult(0);
}

/// `into` with `width` zeros at [lead..., slot, 0] for every slot < S: vectors of `width` f32 in a sequential loop.
/// (Not a linalg.fill: inside an scf.forall body, with parallel=true, that became an OpenMP loop nested in the
/// forall's, collapsed to one scalar store per element with its index divisions.)
Value zeroSlots(Emit e, Value into, ValueRange lead, int64_t S, int64_t width) {
  Value zeros = arith::ConstantOp::create(e.b, e.loc, DenseElementsAttr::get(VectorType::get({width}, e.f32()), 0.0f));
  auto loop = scf::ForOp::create(e.b, e.loc, e.idx(0), e.idx(S), e.idx(1), ValueRange{into},
                                 [&](OpBuilder &b, Location l, Value slot, ValueRange it) {
                                   Emit v{b, l};
                                   SmallVector<Value> at(lead.begin(), lead.end());
                                   at.push_back(slot);
                                   at.push_back(v.idx(0));
                                   scf::YieldOp::create(
                                       b, l,
                                       vector::TransferWriteOp::create(b, l, zeros, it[0], at, ArrayRef<bool>{true})
                                           .getResult());
                                 });
  return loop.getResult(0);
}

/// xp [G, NB, S, MR] of x [M, G K] (see above), zeros past row M: an scf.forall over (group, band of MR rows)
/// (OpenMP with parallel=true), each band packed into its own [S, MR] tile (zero-filled first only when the band
/// runs past row M) and inserted by tensor.parallel_insert_slice.
Value packPhaseX(Emit e, Value x, Value M, int64_t G, int64_t K, int64_t MR) {
  const int64_t S = K;
  Value NB = arith::CeilDivSIOp::create(e.b, e.loc, M, e.idx(MR));
  SmallVector<OpFoldResult> sizes{e.b.getIndexAttr(G), NB, e.b.getIndexAttr(S), e.b.getIndexAttr(MR)};
  Value xp0 = e.empty(sizes, e.f32());
  auto forall = scf::ForallOp::create(e.b, e.loc, ArrayRef<OpFoldResult>{e.b.getIndexAttr(G), NB}, ValueRange{xp0},
                                      std::nullopt);
  OpBuilder::InsertionGuard guard(e.b);
  e.b.setInsertionPoint(forall.getTerminator());
  Emit f{e.b, e.loc};
  Value g = forall.getInductionVar(0), b = forall.getInductionVar(1);
  Value r0 = f.mul(b, f.idx(MR));
  Value rows = f.minsi(f.idx(MR), f.sub(M, r0));
  SmallVector<OpFoldResult> tileSizes{f.b.getIndexAttr(S), f.b.getIndexAttr(MR)};
  Value empty = f.empty(tileSizes, f.f32());
  Value tile0 = guarded(
      f, f.cmpi(arith::CmpIPredicate::slt, rows, f.idx(MR)), empty.getType(),
      [&](Emit u) { return zeroSlots(u, empty, ValueRange{}, S, MR); }, [&](Emit) { return empty; });
  Value tile = packPhaseMajor(
      f, x, rows, [&](Emit u, Value r) { return u.add(r0, r); }, f.mul(g, f.idx(K)), K, tile0,
      [&](Emit, Value r, Value slot) -> SmallVector<Value> { return {slot, r}; }, /*rowBlock=*/4);
  e.b.setInsertionPointToStart(forall.getTerminator().getBody());
  SmallVector<OpFoldResult> offsets{g, b, e.b.getIndexAttr(0), e.b.getIndexAttr(0)};
  SmallVector<OpFoldResult> insertSizes{e.b.getIndexAttr(1), e.b.getIndexAttr(1), e.b.getIndexAttr(S),
                                        e.b.getIndexAttr(MR)};
  SmallVector<OpFoldResult> ones(4, e.b.getIndexAttr(1));
  tensor::ParallelInsertSliceOp::create(e.b, e.loc, tile, forall.getRegionIterArgs()[0], offsets, insertSizes, ones);
  return forall.getResult(0);
}

/// One panel of the phase kernel: out columns col0 .. col0 + nc - 1 (the panel's `slice` [M, nc]) of group g.
/// `finish` is applied to vectors of outputs (element-wise, as emitGroupedDots' callers' bf16 rounding is).
Value emitPhasePanel(Emit f, Value slice, Value xp, Value w, Value g, Value col0, Value nc, int64_t panelCols,
                     Value M, int64_t K, const GemmTiling &tiling, function_ref<Value(Emit, Value)> finish) {
  const int64_t K8 = K / kLanes, T = K % kLanes, S = K;
  const int64_t MR = tiling.phaseRows, NV = tiling.phaseVectors, VW = tiling.phaseLanes, NR = NV * VW;
  auto sliceType = cast<RankedTensorType>(slice.getType());
  Type outElem = sliceType.getElementType();
  auto vecType = VectorType::get({VW}, f.f32());
  Value NB = arith::CeilDivSIOp::create(f.b, f.loc, M, f.idx(MR));
  Value JP = arith::CeilDivSIOp::create(f.b, f.loc, nc, f.idx(NR));

  // wp [JP, S, NR], zeros past column nc. Only the last column tile has such columns (when NR does not divide
  // nc): it alone is zeroed first (zeroSlots; a linalg.fill of all of wp wrote the whole panel twice, and with
  // parallel=true as a scalar nested OpenMP loop: measured as long as the k-loop at 64 rows).
  SmallVector<OpFoldResult> wSizes{JP, f.b.getIndexAttr(S), f.b.getIndexAttr(NR)};
  Value wp0 = f.empty(wSizes, f.f32());
  Value ragged = f.cmpi(arith::CmpIPredicate::ne, arith::RemSIOp::create(f.b, f.loc, nc, f.idx(NR)), f.idx(0));
  wp0 = guarded(
      f, ragged, wp0.getType(), [&](Emit u) { return zeroSlots(u, wp0, ValueRange{u.sub(JP, u.idx(1))}, S, NR); },
      [&](Emit) { return wp0; });
  Value wp = packPhaseMajor(
      f, w, nc, [&](Emit u, Value r) { return u.add(col0, r); }, f.idx(0), K, wp0,
      [&](Emit v, Value r, Value slot) -> SmallVector<Value> {
        return {arith::DivSIOp::create(v.b, v.loc, r, v.idx(NR)), slot, arith::RemSIOp::create(v.b, v.loc, r, v.idx(NR))};
      },
      /*rowBlock=*/NR % kLanes == 0 ? kLanes : 0);

  // Bands per row block: the block's phase sums [8, MCB, JP, MR NR] (reused by every block of the panel) fill
  // about tiling.phasePanelBytes at the panel's full width.
  const int64_t fullTiles = std::max<int64_t>(1, (panelCols + NR - 1) / NR);
  const int64_t MCB = std::max<int64_t>(1, tiling.phasePanelBytes / (kLanes * fullTiles * MR * NR * 4));
  // One k-step of the tile at packed column `slot` of band b and column tile p: acc[r NV + q] + x_r w_q for the
  // tile's MR broadcast x values and NV vectors of w (fused: one fma; else the kernels' mulf then addf).
  auto tileStep = [&](Emit v, Value b, Value p, Value slot, ValueRange acc, bool fused) -> SmallVector<Value> {
    Value pad = v.cf(0.0f);
    SmallVector<Value> wv, next;
    for (int64_t q = 0; q < NV; ++q)
      wv.push_back(vector::TransferReadOp::create(v.b, v.loc, vecType, wp, ValueRange{p, slot, v.idx(q * VW)}, pad,
                                                  ArrayRef<bool>{true}));
    for (int64_t r = 0; r < MR; ++r) {
      Value xv = vector::BroadcastOp::create(v.b, v.loc, vecType, v.extract(xp, ValueRange{g, b, slot, v.idx(r)}));
      for (int64_t q = 0; q < NV; ++q)
        next.push_back(multiplyAdd(v, xv, wv[q], acc[r * NV + q], fused));
    }
    return next;
  };
  // for bb < bCount (band b = bFirst + bb): for p < JP (column tile): carried = body(b, bb, p, carried).
  auto overBandTiles = [&](Emit e0, Value bFirst, Value bCount, Value init,
                           function_ref<Value(Emit, Value, Value, Value, Value)> body) -> Value {
    auto bands = scf::ForOp::create(
        e0.b, e0.loc, e0.idx(0), bCount, e0.idx(1), ValueRange{init},
        [&](OpBuilder &b2, Location l2, Value bb, ValueRange it2) {
          Emit u2{b2, l2};
          Value b = u2.add(bFirst, bb);
          auto tiles = scf::ForOp::create(b2, l2, u2.idx(0), JP, u2.idx(1), ValueRange{it2[0]},
                                          [&](OpBuilder &b3, Location l3, Value p, ValueRange it3) {
                                            scf::YieldOp::create(b3, l3, body(Emit{b3, l3}, b, bb, p, it3[0]));
                                          });
          scf::YieldOp::create(b2, l2, tiles.getResult(0));
        });
    return bands.getResult(0);
  };
  // Only fused: emitGroupedDots runs the phase kernel where every product is exact (panelProductsExact), the
  // blocks elsewhere, so that one copy of the tile is compiled.
  const bool fused = true;
  Emit t = f;
  {
    Value zero = arith::ConstantOp::create(t.b, t.loc, DenseElementsAttr::get(vecType, 0.0f));
    SmallVector<OpFoldResult> pSizes{t.b.getIndexAttr(kLanes), t.b.getIndexAttr(MCB), JP, t.b.getIndexAttr(MR * NR)};
    Value partials0 = t.empty(pSizes, t.f32());
    SmallVector<OpFoldResult> oSizes{t.mul(NB, t.idx(MR)), t.mul(JP, t.idx(NR))};
    Value padded0 = t.empty(oSizes, outElem);
    // Row blocks of MCB bands: the 8 phases of the block (for each band b and column tile p of NR outputs, K8
    // k-steps of the tile), then the block's outputs.
    auto blocks = scf::ForOp::create(
        t.b, t.loc, t.idx(0), NB, t.idx(MCB), ValueRange{partials0, padded0},
        [&](OpBuilder &b0b, Location l0, Value bFirst, ValueRange it0) {
          Emit u0{b0b, l0};
          Value bCount = u0.minsi(u0.idx(MCB), u0.sub(NB, bFirst));
          auto phases = scf::ForOp::create(
              b0b, l0, u0.idx(0), u0.idx(kLanes), u0.idx(1), ValueRange{it0[0]},
              [&](OpBuilder &b1, Location l1, Value l, ValueRange it1) {
                Emit u1{b1, l1};
                Value base = u1.mul(l, u1.idx(K8));
                Value phaseDone = overBandTiles(
                    u1, bFirst, bCount, it1[0], [&](Emit u3, Value b, Value bb, Value p, Value part) -> Value {
                      SmallVector<Value> accs(MR * NV, zero);
                      if (K8 > 0) {
                        auto steps = scf::ForOp::create(
                            u3.b, u3.loc, u3.idx(0), u3.idx(K8), u3.idx(1), accs,
                            [&](OpBuilder &b4, Location l4, Value i, ValueRange acc) {
                              Emit v{b4, l4};
                              scf::YieldOp::create(b4, l4, tileStep(v, b, p, v.add(base, i), acc, fused));
                            });
                        accs.assign(steps.getResults().begin(), steps.getResults().end());
                      }
                      for (int64_t r = 0; r < MR; ++r)
                        for (int64_t q = 0; q < NV; ++q)
                          part = vector::TransferWriteOp::create(u3.b, u3.loc, accs[r * NV + q], part,
                                                                 ValueRange{l, bb, p, u3.idx(r * NR + q * VW)},
                                                                 ArrayRef<bool>{true})
                                     .getResult();
                      return part;
                    });
                scf::YieldOp::create(b1, l1, phaseDone);
              });
          Value partials = phases.getResult(0);
          // dotF32's end of every output of the block: the phases combined as its lanes, the tail (k >= 8 K8,
          // summed from 0.0f, k ascending, never fused) added last, then finish; into the padded [NB MR, JP NR]
          // tile of out.
          Value outDone = overBandTiles(
              u0, bFirst, bCount, it0[1], [&](Emit u3, Value b, Value bb, Value p, Value out) -> Value {
                SmallVector<Value> tails(MR * NV, zero);
                if (T > 0) {
                  auto tailLoop = scf::ForOp::create(
                      u3.b, u3.loc, u3.idx(8 * K8), u3.idx(S), u3.idx(1), tails,
                      [&](OpBuilder &b4, Location l4, Value slot, ValueRange acc) {
                        Emit v{b4, l4};
                        scf::YieldOp::create(b4, l4, tileStep(v, b, p, slot, acc, /*fused=*/false));
                      });
                  tails.assign(tailLoop.getResults().begin(), tailLoop.getResults().end());
                }
                Value pad = u3.cf(0.0f);
                for (int64_t r = 0; r < MR; ++r)
                  for (int64_t q = 0; q < NV; ++q) {
                    Value ph[kLanes];
                    for (int64_t l = 0; l < kLanes; ++l)
                      ph[l] = vector::TransferReadOp::create(u3.b, u3.loc, vecType, partials,
                                                             ValueRange{u3.idx(l), bb, p, u3.idx(r * NR + q * VW)},
                                                             pad, ArrayRef<bool>{true});
                    Value s = u3.fadd(u3.fadd(u3.fadd(ph[0], ph[4]), u3.fadd(ph[1], ph[5])),
                                      u3.fadd(u3.fadd(ph[2], ph[6]), u3.fadd(ph[3], ph[7])));
                    s = u3.fadd(s, tails[r * NV + q]);
                    Value row = u3.add(u3.mul(b, u3.idx(MR)), u3.idx(r));
                    Value col = u3.add(u3.mul(p, u3.idx(NR)), u3.idx(q * VW));
                    // finish on the VW dots at once (the callers' rounding is element-wise).
                    out = vector::TransferWriteOp::create(u3.b, u3.loc, finish(u3, s), out, ValueRange{row, col},
                                                          ArrayRef<bool>{true})
                              .getResult();
                  }
                return out;
              });
          scf::YieldOp::create(b0b, l0, ValueRange{partials, outDone});
        });
    SmallVector<OpFoldResult> zeros{t.b.getIndexAttr(0), t.b.getIndexAttr(0)}, ones{t.b.getIndexAttr(1),
                                                                                      t.b.getIndexAttr(1)};
    SmallVector<OpFoldResult> sizes{M, nc};
    Value cut = tensor::ExtractSliceOp::create(t.b, t.loc, tensorType(sizes, outElem), blocks.getResult(1), zeros,
                                               sizes, ones);
    return t.castTo(cut, sliceType);
  }
}

/// Whether every product of x (bf16 values `xBf16`, magnitudes `xMag`) and the panel's w rows col0 .. col0 + nc - 1
/// (bf16) is exact in f32 (productsExact): bf16Magnitudes' pass over those rows.
Value panelProductsExact(Emit e, Value w, Value col0, Value nc, int64_t K, Value xBf16, Magnitudes xMag) {
  return productsExact(e, xBf16, xMag, bf16Magnitudes(e, w, K, col0, nc).second);
}

} // namespace

/// out[m, g*N + n] = finish(dotF32(x[m, g*K : g*K + K], w[g*N + n, :])) (see Support.h). Loop nest, on tensors:
///   scf.forall (g, panel) over G x ceil(N / panelRows), shared out: the panel's columns [M, nc] as an
///   extract_slice of the shared out, filled by
///     for m0 in [0, M - M % blockRows) step blockRows:  for n in panel step blockCols: a blockRows x blockCols
///                                                       block; leftover columns one at a time
///     for m in the leftover rows:                       for n in panel step rowCols: a 1 x rowCols block; leftovers
///   and written back with tensor.parallel_insert_slice.
/// A panel of W rows stays in L2 while every block of x rows passes over it; a block's x rows and w rows are each
/// loaded once per k-step for all blockRows x blockCols dots.
Value emitGroupedDots(Emit e, Value x, Value w, Value out, int64_t G, int64_t N, int64_t K, const GemmTiling &tilingIn,
                      function_ref<Value(Emit, Value)> finish) {
  if (G == 0 || N == 0) // no output column: `out` is empty, nothing to compute (a zero panel size would divide by 0)
    return out;
  // No row (a static 0 rows of x): `out` is empty too, and the panels' extract_slice at row 0 of a static 0-row
  // tensor would not verify ("offset 0 is out-of-bounds").
  if (cast<RankedTensorType>(x.getType()).getDimSize(0) == 0)
    return out;
  GemmTiling tiling = tilingIn;
  const int64_t wBytes = cast<RankedTensorType>(w.getType()).getElementType().isF32() ? 4 : 2;
  if (tiling.rowCols == 0) // short rows: fewer concurrent streams measured faster
    tiling.rowCols = K * wBytes <= 4096 ? 4 : 8;
  const int64_t unit = std::max(tiling.blockCols, tiling.rowCols);
  auto panelRows = [&](int64_t bytes) {
    int64_t rows = std::max<int64_t>(1, bytes / std::max<int64_t>(1, K * wBytes));
    return std::min(N, std::max(unit, rows / unit * unit));
  };
  // A bf16 w is widened to f32 once per panel when x has at least one block of rows (prefill), so the blocks read
  // f32 rows (no widening in the k-loop, where it took a quarter of the vector pipes' slots); the panel is sized
  // by its f32 bytes. Decode reads the bf16 rows directly (every row is used once: widening would double the
  // bytes moved).
  const bool widenPanel = wBytes == 2 && tiling.widenPanels;
  // The widened panel in pairs of rows (16-lane accumulators holding two dots each), for blocks of an even number
  // of columns.
  const bool paired = widenPanel && tiling.pairColumns && tiling.blockCols % 2 == 0;
  auto panelRowsF32 = [&](int64_t bytes) {
    int64_t rows = std::max<int64_t>(1, bytes / std::max<int64_t>(1, K * 4));
    return std::min(N, std::max(unit, rows / unit * unit));
  };
  const int64_t smallPanel = widenPanel ? panelRowsF32(tiling.widePanelBytes) : panelRows(tiling.panelBytes),
                largePanel = panelRows(tiling.streamPanelBytes);
  Value M = e.sizeValue(sizesOf(e, x)[0]);
  Type outElem = cast<RankedTensorType>(out.getType()).getElementType();
  const int64_t mb = tiling.blockRows;
  // Fewer rows than one block (decode): every w row is read once, the panels only split the work; large panels
  // give each strided row set long sequential streams (below).
  Value panel = e.sel(e.cmpi(arith::CmpIPredicate::slt, M, e.idx(mb)), e.idx(largePanel), e.idx(smallPanel));
  // The phase kernel (above) from tiling.phaseMinRows rows of x: its panels hold a multiple of its NR outputs and
  // one phase of a panel (nc x K8 f32) fills tiling.phasePanelBytes, narrowed when that leaves fewer
  // than tiling.phaseMinPanels panels in all.
  // (bf16 w only: the fused tile needs exact products, which an f32 w does not give.)
  const bool phaseOn = tiling.phaseMinRows > 0 && tiling.phaseRows > 0 && tiling.phaseVectors > 0 &&
                       tiling.phaseLanes > 0 && K > 0 && wBytes == 2;
  Value usePhase;
  int64_t phasePanel = 0;
  if (phaseOn) {
    const int64_t NR = tiling.phaseVectors * tiling.phaseLanes;
    const int64_t phaseBytes = std::max<int64_t>(1, K / kLanes) * 4;
    phasePanel = std::min(N, std::max(NR, tiling.phasePanelBytes / phaseBytes / NR * NR));
    // At least tiling.phaseMinPanels panels over the G products (as wide as that allows, a multiple of NR), but
    // no narrower than a quarter of the phasePanelBytes width (small products keep their one panel).
    const int64_t perProduct = (std::max<int64_t>(1, tiling.phaseMinPanels) + G - 1) / G;
    const int64_t narrowest = std::max(NR, tiling.phasePanelBytes / 4 / phaseBytes / NR * NR);
    phasePanel = std::min(phasePanel, std::max(narrowest, N / perProduct / NR * NR));
    usePhase = e.cmpi(arith::CmpIPredicate::sge, M, e.idx(std::max(tiling.phaseMinRows, tiling.phaseRows)));
    panel = e.sel(usePhase, e.idx(phasePanel), panel);
  }
  Value panels = arith::CeilDivSIOp::create(e.b, e.loc, e.idx(N), panel);

  // For the fused k-loop of the widened panels and the phase kernel (below): x's magnitudes, once per call (x is
  // small beside w).
  Value xBf16;
  Magnitudes xMag;
  if (widenPanel || phaseOn)
    std::tie(xBf16, xMag) = bf16Magnitudes(e, x, G * K);
  // The phase kernel's packed x (an empty one when it does not run).
  Value xp;
  if (phaseOn) {
    const int64_t MR = tiling.phaseRows;
    RankedTensorType xpType = tensorType({e.b.getIndexAttr(G), M, e.b.getIndexAttr(K), e.b.getIndexAttr(MR)}, e.f32());
    xp = guarded(
        e, usePhase, xpType, [&](Emit t) { return packPhaseX(t, x, M, G, K, MR); },
        [&](Emit t) {
          return t.empty({t.b.getIndexAttr(G), t.b.getIndexAttr(0), t.b.getIndexAttr(K), t.b.getIndexAttr(MR)},
                         t.f32());
        });
  }

  auto forall = scf::ForallOp::create(e.b, e.loc, ArrayRef<OpFoldResult>{e.b.getIndexAttr(G), panels},
                                      ValueRange{out}, std::nullopt);
  OpBuilder::InsertionGuard guard(e.b);
  e.b.setInsertionPoint(forall.getTerminator());
  Emit f{e.b, e.loc};
  Value g = forall.getInductionVar(0), p = forall.getInductionVar(1);
  Value shared = forall.getRegionIterArgs()[0];
  Value n0 = f.mul(p, panel);
  Value nc = f.minsi(panel, f.sub(f.idx(N), n0));
  Value col0 = f.add(f.mul(g, f.idx(N)), n0); // the panel's first column of out, and its first row of w
  Value xk0 = f.mul(g, f.idx(K));
  SmallVector<OpFoldResult> offsets{f.b.getIndexAttr(0), col0}, sizes{M, nc}, strides{f.b.getIndexAttr(1),
                                                                                      f.b.getIndexAttr(1)};
  Value slice = tensor::ExtractSliceOp::create(f.b, f.loc, tensorType(sizes, outElem), shared, offsets, sizes, strides);
  // With the phase kernel: scf.if usePhase { the phase kernel } else { the blocks below }.
  scf::IfOp phaseIf;
  if (phaseOn) {
    // The phase kernel (fused only) where every product of x and the panel's w is exact; else the blocks, which
    // have both k-loops. The check reads the panel only when there are enough rows for the phase kernel.
    auto check = scf::IfOp::create(f.b, f.loc, TypeRange{f.b.getI1Type()}, usePhase, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(f.b);
      f.b.setInsertionPointToStart(&check.getThenRegion().front());
      scf::YieldOp::create(f.b, f.loc, panelProductsExact(f, w, col0, nc, K, xBf16, xMag));
      f.b.setInsertionPointToStart(&check.getElseRegion().front());
      scf::YieldOp::create(f.b, f.loc, f.cBool(false));
    }
    phaseIf = scf::IfOp::create(f.b, f.loc, TypeRange{slice.getType()}, check.getResult(0), /*withElseRegion=*/true);
    f.b.setInsertionPointToStart(&phaseIf.getThenRegion().front());
    Value done = emitPhasePanel(f, slice, xp, w, g, col0, nc, phasePanel, M, K, tiling, finish);
    scf::YieldOp::create(f.b, f.loc, done);
    f.b.setInsertionPointToStart(&phaseIf.getElseRegion().front());
  }

  // One block: rows m0 .. m0+mb-1 of x times the panel columns `cols`, inserted into `acc`. The w rows come from
  // `wSrc`: w itself (row col0 + c) or the panel's widened copy (row c, wBase null).
  // `lastRow` (when set): rows past it are clamped to it, so a band past the end of x recomputes row lastRow and
  // writes the same bits to it again (the few-rows bands below).
  auto block = [&](Emit t, Value acc, Value m0, int64_t rows, ArrayRef<Value> cols, Value wSrc, Value wBase,
                   bool fused, Value lastRow) -> Value {
    DotRows a{x, {}, xk0}, b{wSrc, {}, Value()};
    for (int64_t i = 0; i < rows; ++i)
      a.rows.push_back({i ? (lastRow ? t.minsi(t.add(m0, t.idx(i)), lastRow) : t.add(m0, t.idx(i))) : m0});
    for (Value c : cols)
      b.rows.push_back({wBase ? t.add(wBase, c) : c});
    SmallVector<Value> dots = emitDotBlock(t, a, b, K, fused);
    const int64_t nb = static_cast<int64_t>(cols.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < nb; ++j)
        acc = tensor::InsertOp::create(t.b, t.loc, finish(t, dots[i * nb + j]), acc, ValueRange{a.rows[i][0], cols[j]});
    return acc;
  };
  // The panel's columns for rows m0 .. m0+rows-1, in blocks of nb columns, then the leftover columns one at a time.
  // Adjacent columns (rows == mb): the block's w rows are adjacent in memory. Strided (one x row, decode): block c
  // takes columns c, c + q, .., c + (nb-1)q (q = nc / nb), so each of its nb w rows continues a sequential stream of
  // q rows (adjacent short rows would be nb short streams restarted every block, which the prefetcher follows badly).
  auto rowBand = [&](Emit t, Value acc, Value m0, int64_t rows, int64_t nb, bool strided, Value wSrc,
                     Value wBase, bool fused, Value lastRow = Value()) -> Value {
    Value q = arith::DivSIOp::create(t.b, t.loc, nc, t.idx(nb));
    Value full = t.mul(q, t.idx(nb));
    Value upper = strided ? q : full;
    Value step = t.idx(strided ? 1 : nb);
    auto blocks = scf::ForOp::create(t.b, t.loc, t.idx(0), upper, step, ValueRange{acc},
                                     [&](OpBuilder &bb, Location loc, Value c, ValueRange iter) {
                                       Emit u{bb, loc};
                                       SmallVector<Value> cols{c};
                                       for (int64_t j = 1; j < nb; ++j)
                                         cols.push_back(u.add(c, strided ? u.mul(q, u.idx(j)) : u.idx(j)));
                                       scf::YieldOp::create(bb, loc,
                                                            block(u, iter[0], m0, rows, cols, wSrc, wBase, fused,
                                                                  lastRow));
                                     });
    if (nb == 1)
      return blocks.getResult(0);
    auto rest = scf::ForOp::create(t.b, t.loc, full, nc, t.idx(1), ValueRange{blocks.getResult(0)},
                                   [&](OpBuilder &bb, Location loc, Value c, ValueRange iter) {
                                     Emit u{bb, loc};
                                     scf::YieldOp::create(bb, loc,
                                                          block(u, iter[0], m0, rows, {c}, wSrc, wBase, fused,
                                                                lastRow));
                                   });
    return rest.getResult(0);
  };
  Value mFull = f.sub(M, arith::RemSIOp::create(f.b, f.loc, M, f.idx(mb)));
  Value filled = slice;
  Value restFrom; // the first row the decode loop below computes (from the bf16 w rows, strided blocks)
  if (mb > 1) {
    // The paired panel's band (tiling.pairColumns): blocks of mb rows x blockCols columns (blockCols / 2 pairs),
    // the leftover pairs one at a time, and an odd last column as a pair whose second dot (the zero padding row) is
    // dropped. Fused only (emitPairedDotBlock): the paired panel's bands run only where the widened panel's check
    // showed every product exact; elsewhere the few-rows bands below, unpaired and unfused, do its rows.
    auto pairedBand = [&](Emit t, Value acc, Value m0, Value wide) -> Value {
      const int64_t nb = tiling.blockCols, np = nb / 2;
      Value q = arith::DivSIOp::create(t.b, t.loc, nc, t.idx(nb));
      Value full = t.mul(q, t.idx(nb));
      Value even = t.sub(nc, arith::RemSIOp::create(t.b, t.loc, nc, t.idx(2)));
      auto pairBlock = [&](Emit u, Value in, Value c, int64_t pairsHere, int64_t colsKept) -> Value {
        DotRows a{x, {}, xk0};
        for (int64_t i = 0; i < mb; ++i)
          a.rows.push_back({i ? u.add(m0, u.idx(i)) : m0});
        Value p0 = arith::DivSIOp::create(u.b, u.loc, c, u.idx(2));
        SmallVector<Value> pairs{p0};
        for (int64_t j = 1; j < pairsHere; ++j)
          pairs.push_back(u.add(p0, u.idx(j)));
        SmallVector<Value> dots = emitPairedDotBlock(u, a, wide, pairs, K);
        for (int64_t i = 0; i < mb; ++i)
          for (int64_t cc = 0; cc < colsKept; ++cc) {
            Value col = cc ? u.add(c, u.idx(cc)) : c;
            in = tensor::InsertOp::create(u.b, u.loc, finish(u, dots[i * 2 * pairsHere + cc]), in,
                                          ValueRange{a.rows[i][0], col});
          }
        return in;
      };
      auto blocks = scf::ForOp::create(t.b, t.loc, t.idx(0), full, t.idx(nb), ValueRange{acc},
                                       [&](OpBuilder &bb, Location loc, Value c, ValueRange iter) {
                                         Emit u{bb, loc};
                                         scf::YieldOp::create(bb, loc, pairBlock(u, iter[0], c, np, nb));
                                       });
      auto rest = scf::ForOp::create(t.b, t.loc, full, even, t.idx(2), ValueRange{blocks.getResult(0)},
                                     [&](OpBuilder &bb, Location loc, Value c, ValueRange iter) {
                                       Emit u{bb, loc};
                                       scf::YieldOp::create(bb, loc, pairBlock(u, iter[0], c, 1, 2));
                                     });
      Value done = rest.getResult(0);
      Value odd = t.cmpi(arith::CmpIPredicate::slt, even, nc);
      return guarded(
          t, odd, done.getType(), [&](Emit u) { return pairBlock(u, done, even, 1, 1); },
          [&](Emit) { return done; });
    };
    auto bandsOver = [&](Emit t, Value init, Value wSrc, Value wBase, bool fused, bool inPairs) -> Value {
      auto bands = scf::ForOp::create(t.b, t.loc, t.idx(0), mFull, t.idx(mb), ValueRange{init},
                                      [&](OpBuilder &bb, Location loc, Value m0, ValueRange iter) {
                                        Emit u{bb, loc};
                                        scf::YieldOp::create(bb, loc,
                                                             inPairs ? pairedBand(u, iter[0], m0, wSrc)
                                                                    : rowBand(u, iter[0], m0, mb, tiling.blockCols,
                                                                              /*strided=*/false, wSrc, wBase, fused));
                                      });
      if (inPairs || wBase)
        return bands.getResult(0);
      // The rows past the last full band (M % mb of them) over the same widened panel, one row at a time in blocks
      // of blockCols adjacent columns: the panel is in cache, so this costs no second pass over w in memory (the
      // decode path below would stream every bf16 w row again for each leftover row: measured at B = 4, one band
      // of 3 rows and one leftover row, as much time as a whole decode step).
      auto rest = scf::ForOp::create(t.b, t.loc, mFull, M, t.idx(1), ValueRange{bands.getResult(0)},
                                     [&](OpBuilder &bb, Location loc, Value m, ValueRange iter) {
                                       Emit u{bb, loc};
                                       scf::YieldOp::create(bb, loc,
                                                            rowBand(u, iter[0], m, 1, tiling.blockCols,
                                                                    /*strided=*/false, wSrc, wBase, fused));
                                     });
      return rest.getResult(0);
    };
    if (widenPanel) {
      // The panel's w rows [nc, K] widened to f32 (exact), only when there is a band of mb rows to use them and at
      // least tiling.widenMinRows rows in all; its bands are fused (the products exact: see below). Otherwise, with
      // 2 rows or more (a few rows, or a widened panel whose products are not all exact), bands of mb rows over the
      // bf16 panel, unfused (below): the one unfused copy of the blocks, so each product has as many k-loop copies
      // as before the few-rows bands (each copy costs compile time: one more measured +57% on a compressed layer).
      Value any = f.cmpi(arith::CmpIPredicate::sgt, mFull, f.idx(0));
      if (tiling.widenMinRows > mb)
        any = arith::AndIOp::create(f.b, f.loc, any,
                                    f.cmpi(arith::CmpIPredicate::sge, M, f.idx(tiling.widenMinRows)));
      auto wideIf = scf::IfOp::create(f.b, f.loc, TypeRange{slice.getType(), f.b.getI1Type()}, any,
                                      /*addThenBlock=*/true, /*addElseBlock=*/true);
      {
        OpBuilder::InsertionGuard wideGuard(f.b);
        f.b.setInsertionPointToStart(wideIf.thenBlock());
        Emit t{f.b, f.loc};
        // Sequential loops (not a linalg.generic: with parallel=true that would be an OpenMP loop nested in the
        // panel's): 8 lanes at a time, then the K % 8 tail.
        const int64_t K8 = K / kLanes * kLanes, T = K - K8;
        // Unpaired: [nc, K], row r = w row col0 + r. Paired: [ceil(nc / 2), 2K], row p = w rows 2p and 2p + 1
        // interleaved by chunks of 8 lanes (emitPairedDotBlock); an odd nc's padding row is zeros.
        Value wide0;
        if (paired) {
          Value pairsN = arith::CeilDivSIOp::create(t.b, t.loc, nc, t.idx(2));
          SmallVector<OpFoldResult> wSizes{pairsN, t.b.getIndexAttr(2 * K)};
          Value odd = t.cmpi(arith::CmpIPredicate::ne, arith::RemSIOp::create(t.b, t.loc, nc, t.idx(2)), t.idx(0));
          Value empty = t.empty(wSizes, t.f32());
          wide0 = guarded(
              t, odd, empty.getType(),
              [&](Emit u) {
                return linalg::FillOp::create(u.b, u.loc, ValueRange{u.cf(0.0f)}, ValueRange{empty}).getResult(0);
              },
              [&](Emit) { return empty; });
        } else {
          SmallVector<OpFoldResult> wSizes{nc, t.b.getIndexAttr(K)};
          wide0 = t.empty(wSizes, t.f32());
        }
        auto laneType = VectorType::get({kLanes}, t.f32());
        Magnitudes lanes0 = noMagnitudes(t, laneType), tail0 = noMagnitudes(t, t.f32());
        auto rowsLoop = scf::ForOp::create(
            t.b, t.loc, t.idx(0), nc, t.idx(1),
            ValueRange{wide0, lanes0.maxAbs, lanes0.minAbs, tail0.maxAbs, tail0.minAbs},
            [&](OpBuilder &bb, Location loc, Value r, ValueRange iter) {
              Emit u{bb, loc};
              Value row = u.add(col0, r);
              SmallVector<Value> cur(iter.begin(), iter.end());
              // Where lane k of row r goes: (r, k), or paired (r / 2, 2k + 8 (r % 2)) for k < K8 and
              // (r / 2, k + K8 + (r % 2) T) for the tail.
              Value wideRow = r, half;
              if (paired) {
                wideRow = arith::DivSIOp::create(u.b, u.loc, r, u.idx(2));
                half = arith::RemSIOp::create(u.b, u.loc, r, u.idx(2));
              }
              if (K8 > 0) {
                auto lanes = scf::ForOp::create(
                    u.b, u.loc, u.idx(0), u.idx(K8), u.idx(kLanes), ValueRange{cur[0], cur[1], cur[2]},
                    [&](OpBuilder &b2, Location l2, Value k, ValueRange it) {
                      Emit v{b2, l2};
                      Value lanesF32 = readLanes(v, w, ValueRange{row}, k);
                      Value at = paired ? v.add(v.add(k, k), v.mul(half, v.idx(kLanes))) : k;
                      Value next = vector::TransferWriteOp::create(v.b, v.loc, lanesF32, it[0],
                                                                   ValueRange{wideRow, at}, ArrayRef<bool>{true})
                                       .getResult();
                      Magnitudes m = foldMagnitudes(v, {it[1], it[2]}, lanesF32);
                      scf::YieldOp::create(b2, l2, ValueRange{next, m.maxAbs, m.minAbs});
                    });
                for (int i = 0; i < 3; ++i)
                  cur[i] = lanes.getResult(i);
              }
              if (K8 < K) {
                auto tail = scf::ForOp::create(
                    u.b, u.loc, u.idx(K8), u.idx(K), u.idx(1), ValueRange{cur[0], cur[3], cur[4]},
                    [&](OpBuilder &b2, Location l2, Value k, ValueRange it) {
                      Emit v{b2, l2};
                      Value x1 = v.toF32(v.extract(w, ValueRange{row, k}));
                      Value at = paired ? v.add(v.add(k, v.idx(K8)), v.mul(half, v.idx(T))) : k;
                      Value next =
                          tensor::InsertOp::create(v.b, v.loc, x1, it[0], ValueRange{wideRow, at}).getResult();
                      Magnitudes m = foldMagnitudes(v, {it[1], it[2]}, x1);
                      scf::YieldOp::create(b2, l2, ValueRange{next, m.maxAbs, m.minAbs});
                    });
                cur[0] = tail.getResult(0);
                cur[3] = tail.getResult(1);
                cur[4] = tail.getResult(2);
              }
              scf::YieldOp::create(bb, loc, cur);
            });
        Value wide = rowsLoop.getResult(0);
        Magnitudes wMag = combineMagnitudes(t, {rowsLoop.getResult(1), rowsLoop.getResult(2)},
                                            {rowsLoop.getResult(3), rowsLoop.getResult(4)});
        // Fused multiply-adds when they give the same bits as the kernels' acc + a * b (productsExact), which is
        // what bf16 activations and weights give outside overflow and underflow corners; else (ran = false) the
        // unfused bands below. Both keep dotF32's order.
        Value exact = productsExact(t, xBf16, xMag, wMag);
        Value fused = guarded(
            t, exact, slice.getType(),
            [&](Emit u) { return bandsOver(u, slice, wide, Value(), /*fused=*/true, paired); },
            [&](Emit) { return slice; });
        scf::YieldOp::create(t.b, t.loc, ValueRange{fused, exact});
        f.b.setInsertionPointToStart(wideIf.elseBlock());
        scf::YieldOp::create(f.b, f.loc, ValueRange{slice, f.cBool(false)});
      }
      Value wideOk = wideIf.getResult(1);
      Value needFew = arith::AndIOp::create(f.b, f.loc, f.cmpi(arith::CmpIPredicate::sge, M, f.idx(2)),
                                            arith::XOrIOp::create(f.b, f.loc, wideOk, f.cBool(true)));
      // The decode loop below starts at M after the few-rows bands (every row) and after an unpaired widened panel
      // (its bands do the leftover rows); else (one row, or a paired widened panel's leftover rows) at mFull.
      restFrom = f.sel(needFew, M, paired ? mFull : f.sel(wideOk, M, mFull));
      // The few-rows bands: strided blocks of mb rows x nb columns (as the decode loop's: each w row continues a
      // sequential stream) on the bf16 rows, unfused (exactness would need w's magnitudes, a pass over the panel).
      // The last band's rows past M - 1 are row M - 1 again (lastRow): the same bits written twice.
      const int64_t nb = paired ? tiling.blockCols / 2 : tiling.blockCols;
      Value lastRow = f.sub(M, f.idx(1));
      filled = guarded(
          f, needFew, slice.getType(),
          [&](Emit t) {
            auto bands = scf::ForOp::create(
                t.b, t.loc, t.idx(0), M, t.idx(mb), ValueRange{slice},
                [&](OpBuilder &bb, Location loc, Value m0, ValueRange iter) {
                  Emit u{bb, loc};
                  scf::YieldOp::create(bb, loc,
                                       rowBand(u, iter[0], m0, mb, nb, /*strided=*/true, w, col0, /*fused=*/false,
                                               lastRow));
                });
            return bands.getResult(0);
          },
          [&](Emit) { return wideIf.getResult(0); });
    } else {
      filled = bandsOver(f, filled, w, col0, /*fused=*/false, /*paired=*/false);
    }
  } else {
    mFull = f.idx(0);
  }
  if (!restFrom)
    restFrom = mFull;
  auto rows = scf::ForOp::create(f.b, f.loc, restFrom, M, f.idx(1), ValueRange{filled},
                                 [&](OpBuilder &bb, Location loc, Value m, ValueRange iter) {
                                   Emit u{bb, loc};
                                   scf::YieldOp::create(bb, loc,
                                                        rowBand(u, iter[0], m, 1, tiling.rowCols, true, w, col0,
                                                                /*fused=*/false));
                                 });
  filled = rows.getResult(0);
  if (phaseIf) {
    scf::YieldOp::create(f.b, f.loc, filled);
    filled = phaseIf.getResult(0);
  }
  e.b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(e.b, e.loc, filled, shared, offsets, sizes, strides);
  return forall.getResult(0);
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
