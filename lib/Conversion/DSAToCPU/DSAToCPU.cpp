//===- DSAToCPU.cpp - dsa primitives -> upstream dialects for the CPU ---------===//
//
// `dsa-to-cpu` rewrites the window-only dsa primitives into linalg.generic / tensor / arith / math / scf ops on
// tensors, BIT-EXACT to the reference kernels (lib/Interpreter/Kernels/Kernels.cpp, lib/Numerics): same f32
// operations in the same order, same rounding points.
//
//  - Dot products (linear, rms_norm's sum of squares, grouped_output, sparse_attn's q.k) follow the kernels'
//    dotF32: eight f32 lanes acc[l] += a[8i+l]*b[8i+l] over i ascending, combined as
//    ((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7)), plus a tail sum over the last K % 8 elements (started at 0.0f), added
//    last. Emitted in the body of a parallel linalg.generic over the outputs: an scf.for carrying one
//    vector<8xf32> accumulator (vector.transfer_read of 8 contiguous elements, element-wise extf/mulf/addf), so
//    the lanes live in a register and nothing but the order of the kernel is ever used.
//  - bf16 rounding is arith.truncf f32 -> bf16 (RNE; the pipeline expands it inline with --arith-expand
//    include-bf16). e4m3 rounding (RNE, saturating) and pow2_ceil are integer bit manipulation on the f32
//    pattern, the algorithm of include/dsa/Numerics/E4M3.h and E8M0.h.
//  - The RoPE frequency table depends only on the attribute: it is the kernels' own ropeFrequencies() (the f32/f64
//    steps of the reference) folded into a dense constant; cos/sin of f32(p) * f[k] are math.cos/math.sin (the
//    libm cosf/sinf the kernels call).
//  - start_pos and the token count stay run-time values (dynamic shapes; scf.if where prefill and decode differ).
//    Run-time checks (start_pos < 0, a multi-token step at start_pos > 0, index ranges, ...) call the external
//    `dsa_cpu_fail(i32)` with a code of include/dsa/Backend/CPU/RuntimeErrors.h; the code stays memory-safe after
//    a failed check.
//
// dsa.attention must be decomposed first (dsa-decompose-attention) and dsa.probe stripped (dsa-strip-probes);
// the compressed-attention primitives are not lowered yet. Each is rejected with a diagnostic.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Backend/CPU/RuntimeErrors.h"
#include "dsa/Conversion/Passes.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Interpreter/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>
#include <limits>

namespace mlir::dsa {
#define GEN_PASS_DEF_CONVERTDSATOCPU
#include "dsa/Conversion/Passes.h.inc"

namespace {

using ::dsa::cpu::RuntimeError;
using utils::IteratorType;

/// Lanes of the kernels' dotF32.
constexpr int64_t kLanes = 8;

//===----------------------------------------------------------------------------------------------------------===//
// Small emission helpers
//===----------------------------------------------------------------------------------------------------------===//

/// Builder + location with shorthands for the scalar arithmetic the bodies need.
struct Emit {
  OpBuilder &b;
  Location loc;

  Type f32() const { return b.getF32Type(); }
  Type i32() const { return b.getI32Type(); }
  Type i64() const { return b.getI64Type(); }

  Value idx(int64_t v) const { return arith::ConstantIndexOp::create(b, loc, v); }
  Value c64(int64_t v) const { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); }
  Value c32(int64_t v) const { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v); }
  Value cBool(bool v) const { return arith::ConstantIntOp::create(b, loc, b.getI1Type(), v ? 1 : 0); }
  Value cf(float v) const { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)); }
  Value cu32(uint32_t v) const { return c32(static_cast<int32_t>(v)); }

  Value add(Value x, Value y) const { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) const { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) const { return arith::MulIOp::create(b, loc, x, y); }
  Value band(Value x, Value y) const { return arith::AndIOp::create(b, loc, x, y); }
  Value bor(Value x, Value y) const { return arith::OrIOp::create(b, loc, x, y); }
  Value shl(Value x, Value y) const { return arith::ShLIOp::create(b, loc, x, y); }
  Value shru(Value x, Value y) const { return arith::ShRUIOp::create(b, loc, x, y); }
  Value cmpi(arith::CmpIPredicate p, Value x, Value y) const { return arith::CmpIOp::create(b, loc, p, x, y); }
  Value sel(Value c, Value x, Value y) const { return arith::SelectOp::create(b, loc, c, x, y); }
  Value maxsi(Value x, Value y) const { return arith::MaxSIOp::create(b, loc, x, y); }
  Value minsi(Value x, Value y) const { return arith::MinSIOp::create(b, loc, x, y); }

  Value fadd(Value x, Value y) const { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) const { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) const { return arith::MulFOp::create(b, loc, x, y); }
  Value fdiv(Value x, Value y) const { return arith::DivFOp::create(b, loc, x, y); }
  Value cmpf(arith::CmpFPredicate p, Value x, Value y) const { return arith::CmpFOp::create(b, loc, p, x, y); }

  /// f32 value of a bf16 or f32 scalar.
  Value toF32(Value v) const {
    if (v.getType().isF32())
      return v;
    return arith::ExtFOp::create(b, loc, f32(), v);
  }
  /// bf16(v) for an f32 v (RNE).
  Value toBf16(Value v) const { return arith::TruncFOp::create(b, loc, b.getBF16Type(), v); }
  Value bitsOf(Value f) const { return arith::BitcastOp::create(b, loc, i32(), f); }
  Value floatOf(Value bits) const { return arith::BitcastOp::create(b, loc, f32(), bits); }
  Value indexToI64(Value v) const { return arith::IndexCastOp::create(b, loc, i64(), v); }
  Value i64ToIndex(Value v) const { return arith::IndexCastOp::create(b, loc, b.getIndexType(), v); }
  Value linalgIndex(int64_t dim) const { return linalg::IndexOp::create(b, loc, dim); }
  Value extract(Value tensor, ValueRange indices) const { return tensor::ExtractOp::create(b, loc, tensor, indices); }

  Value empty(ArrayRef<OpFoldResult> sizes, Type elem) const { return tensor::EmptyOp::create(b, loc, sizes, elem); }
  Value filled(ArrayRef<OpFoldResult> sizes, Value value) const {
    return linalg::FillOp::create(b, loc, ValueRange{value}, ValueRange{empty(sizes, value.getType())})
        .getResult(0);
  }
  /// tensor.cast to `type` when the types differ.
  Value castTo(Value v, Type type) const {
    if (v.getType() == type)
      return v;
    return tensor::CastOp::create(b, loc, type, v);
  }
  Value sizeValue(OpFoldResult ofr) const {
    if (auto v = dyn_cast<Value>(ofr))
      return v;
    return idx(cast<IntegerAttr>(cast<Attribute>(ofr)).getInt());
  }
};

AffineExpr dimExpr(MLIRContext *ctx, unsigned i) { return getAffineDimExpr(i, ctx); }

/// The identity exprs d0..d(n-1).
SmallVector<AffineExpr> dimExprs(MLIRContext *ctx, unsigned n, unsigned first = 0) {
  SmallVector<AffineExpr> e;
  for (unsigned i = 0; i < n; ++i)
    e.push_back(dimExpr(ctx, first + i));
  return e;
}

AffineMap mapOf(MLIRContext *ctx, unsigned numDims, ArrayRef<AffineExpr> results) {
  return AffineMap::get(numDims, 0, results, ctx);
}

SmallVector<IteratorType> parallel(unsigned n) { return SmallVector<IteratorType>(n, IteratorType::parallel); }

using BodyFn = function_ref<void(OpBuilder &, Location, ValueRange)>;

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

//===----------------------------------------------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------------------------------------------===//

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

/// linear (section 2): y[m, n] = round(dotF32(x[m, :], w[n, :])), round = bf16 RNE for bf16, none for f32. One
/// parallel generic over (n, m) (n outer: a weight row is reused from cache by every token) whose body is the dot.
struct LinearLowering : OpConversionPattern<LinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(LinearOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    if (failed(requireStatic(op, op.getWeight(), 1, "weight")) || failed(requireStatic(op, op.getWeight(), 0, "weight")))
      return failure();
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    Value x = collapseRows(e, adaptor.getX());
    Value w = adaptor.getWeight();
    const int64_t K = cast<RankedTensorType>(w.getType()).getDimSize(1);
    const int64_t N = cast<RankedTensorType>(w.getType()).getDimSize(0);
    auto resultType = cast<RankedTensorType>(op.getType());
    Type outElem = resultType.getElementType();
    SmallVector<OpFoldResult> ySizes{sizesOf(e, x)[0], rewriter.getIndexAttr(N)};
    Value y = generic(e, tensorType(ySizes, outElem), {}, e.empty(ySizes, outElem),
                      {mapOf(ctx, 2, {dimExpr(ctx, 1), dimExpr(ctx, 0)})}, parallel(2),
                      [&](OpBuilder &b, Location loc, ValueRange) {
                        Emit t{b, loc};
                        Value n = t.linalgIndex(0), m = t.linalgIndex(1);
                        Value s = emitDotF32(t, x, {m}, w, {n}, K);
                        linalg::YieldOp::create(b, loc, outElem.isBF16() ? t.toBf16(s) : s);
                      });
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
    reportIf(e, e.cmpi(arith::CmpIPredicate::slt, start, e.c64(0)), RuntimeError::PositionsNegativeStart);
    const int64_t stride = op.getStride();
    SmallVector<OpFoldResult> sizes{adaptor.getCount()};
    Value out = generic(e, tensorType(sizes, e.i64()), {}, e.empty(sizes, e.i64()), {mapOf(ctx, 1, {dimExpr(ctx, 0)})},
                        parallel(1), [&](OpBuilder &b, Location loc, ValueRange) {
                          Emit t{b, loc};
                          Value i = t.indexToI64(t.linalgIndex(0));
                          linalg::YieldOp::create(b, loc, t.add(start, t.mul(i, t.c64(stride))));
                        });
    rewriter.replaceOp(op, e.castTo(out, op.getType()));
    return success();
  }
};

/// The RoPE frequency table of `rope` (the kernels' ropeFrequencies: the reference's f32/f64 steps).
FailureOr<SmallVector<float>> ropeTable(Operation *op, RopeAttr rope) {
  ::dsa::interp::RopeParams params;
  params.ropeDim = rope.getRopeDim();
  params.theta = rope.getTheta().getValueAsDouble();
  if (YarnAttr yarn = rope.getYarn()) {
    ::dsa::interp::YarnParams y;
    y.originalSeqLen = yarn.getOriginalSeqLen();
    y.factor = yarn.getFactor().getValueAsDouble();
    y.betaFast = yarn.getBetaFast().getValueAsDouble();
    y.betaSlow = yarn.getBetaSlow().getValueAsDouble();
    params.yarn = y;
  }
  std::vector<float> f = ::dsa::interp::ropeFrequencies(params);
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

          SmallVector<OpFoldResult> xSizes = sizesOf(g, x);
          SmallVector<AffineMap> maps{mapOf(ctx, rank, dimExprs(ctx, rank)), mapOf(ctx, rank, dimExprs(ctx, rank))};
          return generic(g, xType, ValueRange{x}, g.empty(xSizes, xType.getElementType()), maps, parallel(rank),
                         [&](OpBuilder &b, Location loc, ValueRange args) {
                           using P = arith::CmpIPredicate;
                           Emit t{b, loc};
                           SmallVector<Value> ivs;
                           for (int64_t i = 0; i < rank; ++i)
                             ivs.push_back(t.linalgIndex(i));
                           Value d = ivs.back();
                           Value tailStart = t.idx(D - rd);
                           Value inTail = t.cmpi(P::uge, d, tailStart);
                           Value off = t.sel(inTail, t.sub(d, tailStart), t.idx(0));
                           Value k = arith::DivUIOp::create(b, loc, off, t.idx(2));
                           Value even = t.cmpi(P::eq, t.band(off, t.idx(1)), t.idx(0));
                           Value i0 = t.add(tailStart, t.mul(k, t.idx(2)));
                           SmallVector<Value> at(ivs.begin(), ivs.end());
                           at.back() = i0;
                           Value x0 = t.toF32(t.extract(x, at));
                           at.back() = t.add(i0, t.idx(1));
                           Value x1 = t.toF32(t.extract(x, at));
                           Value c = t.extract(cosT, {ivs[0], k});
                           Value sn = t.extract(sinT, {ivs[0], k});
                           Value re = t.fsub(t.fmul(x0, c), t.fmul(x1, sn));
                           Value im = t.fadd(t.fmul(x0, sn), t.fmul(x1, c));
                           Value rotated = t.toBf16(t.sel(even, re, im));
                           linalg::YieldOp::create(b, loc, t.sel(inTail, rotated, args[0]));
                         });
        },
        [&](Emit g) -> Value {
          reportIf(g, g.cBool(true), RuntimeError::RopePositionsLength);
          return x;
        });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// act_quant_fp8 (section 2): per block of B elements of the last dim, amax = max(max|x|, 1e-4) (NaN if the
/// block holds one), s = pow2_ceil(amax / 448), x = bf16(e4m3(clamp(x / s, -448, 448)) * s).
struct ActQuantFp8Lowering : OpConversionPattern<ActQuantFp8Op> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ActQuantFp8Op op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    auto xType = cast<RankedTensorType>(op.getX().getType());
    if (failed(requireStatic(op, op.getX(), xType.getRank() - 1, "x")))
      return failure();
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    const int64_t D = xType.getShape().back();
    const int64_t B = op.getBlockSize();
    const int64_t nb = D / B;
    // x as [rows, nb, B].
    Value x2 = collapseRows(e, adaptor.getX());
    OpFoldResult rows = sizesOf(e, x2)[0];
    SmallVector<OpFoldResult> x3Sizes{rows, rewriter.getIndexAttr(nb), rewriter.getIndexAttr(B)};
    Value x3 = tensor::ExpandShapeOp::create(e.b, e.loc, tensorType(x3Sizes, xType.getElementType()), x2,
                                             ArrayRef<ReassociationIndices>{{0}, {1, 2}}, x3Sizes);
    SmallVector<OpFoldResult> bSizes{rows, rewriter.getIndexAttr(nb)};
    // amax and the NaN flag per block (blockAmax: a > amax ? a : amax from 0, in element order).
    auto amaxOp = linalg::GenericOp::create(
        e.b, e.loc, TypeRange{tensorType(bSizes, e.f32()), tensorType(bSizes, e.b.getI1Type())}, ValueRange{x3},
        ValueRange{e.filled(bSizes, e.cf(0.0f)), e.filled(bSizes, e.cBool(false))},
        ArrayRef<AffineMap>{mapOf(ctx, 3, dimExprs(ctx, 3)), mapOf(ctx, 3, dimExprs(ctx, 2)),
                            mapOf(ctx, 3, dimExprs(ctx, 2))},
        ArrayRef<IteratorType>{IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Emit t{b, loc};
          Value a = math::AbsFOp::create(b, loc, t.toF32(args[0]));
          Value isNan = t.cmpf(arith::CmpFPredicate::UNO, a, a);
          Value amax = t.sel(t.cmpf(arith::CmpFPredicate::OGT, a, args[1]), a, args[1]);
          linalg::YieldOp::create(b, loc, ValueRange{amax, t.bor(args[2], isNan)});
        });
    // s per block.
    Value scale = generic(e, tensorType(bSizes, e.f32()), ValueRange{amaxOp.getResult(0), amaxOp.getResult(1)},
                          e.empty(bSizes, e.f32()),
                          {mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, dimExprs(ctx, 2)),
                           mapOf(ctx, 2, dimExprs(ctx, 2))},
                          parallel(2), [&](OpBuilder &b, Location loc, ValueRange args) {
                            Emit t{b, loc};
                            Value floor = t.cf(1e-4f);
                            Value amax = t.sel(t.cmpf(arith::CmpFPredicate::OGT, args[0], floor), args[0], floor);
                            amax = t.sel(args[1], t.cf(std::numeric_limits<float>::quiet_NaN()), amax);
                            linalg::YieldOp::create(b, loc, pow2Ceil(t, t.fdiv(amax, t.cf(448.0f))));
                          });
    Type bf16 = rewriter.getBF16Type();
    Value y3 = generic(e, tensorType(x3Sizes, bf16), ValueRange{x3, scale}, e.empty(x3Sizes, bf16),
                       {mapOf(ctx, 3, dimExprs(ctx, 3)), mapOf(ctx, 3, dimExprs(ctx, 2)),
                        mapOf(ctx, 3, dimExprs(ctx, 3))},
                       parallel(3), [&](OpBuilder &b, Location loc, ValueRange args) {
                         Emit t{b, loc};
                         Value v = clampSym(t, t.fdiv(t.toF32(args[0]), args[1]), 448.0f);
                         linalg::YieldOp::create(b, loc, t.toBf16(t.fmul(roundE4M3(t, v), args[1])));
                       });
    Value y2 = tensor::CollapseShapeOp::create(e.b, e.loc, y3, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
    rewriter.replaceOp(op, expandRows(e, y2, adaptor.getX(), cast<RankedTensorType>(op.getType())));
    return success();
  }
};

/// ring_update (section 4): the last c = min(s, W) tokens, positions start_pos+lo .. (lo = s - c), go to slot
/// p % W. Slot j takes row lo + ((j - (start_pos + lo)) mod W) when that offset is < c, else keeps its row.
struct RingUpdateLowering : OpConversionPattern<RingUpdateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(RingUpdateOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    auto ringType = cast<RankedTensorType>(op.getRing().getType());
    if (!ringType.hasStaticShape())
      return op.emitOpError() << "dsa-to-cpu needs 'ring' to have a static shape [W, hd]";
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    const int64_t W = ringType.getDimSize(0);
    Value ring = adaptor.getRing(), kv = adaptor.getKv(), start = adaptor.getStartPos();
    reportIf(e, e.cmpi(arith::CmpIPredicate::slt, start, e.c64(0)), RuntimeError::RingUpdateNegativeStart);
    Value s = e.indexToI64(e.sizeValue(sizesOf(e, kv)[0]));
    Value nonEmpty = e.cmpi(arith::CmpIPredicate::sgt, s, e.c64(0));
    Value out = guarded(
        e, nonEmpty, ringType,
        [&](Emit g) -> Value {
          Value lo = g.maxsi(g.c64(0), g.sub(s, g.c64(W)));
          Value c = g.sub(s, lo);
          Value first = g.add(start, lo);
          SmallVector<AffineMap> maps{mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, dimExprs(ctx, 2))};
          return generic(g, ringType, ValueRange{ring}, g.empty(sizesOf(g, ring), ringType.getElementType()), maps,
                         parallel(2), [&](OpBuilder &b, Location loc, ValueRange args) {
                           using P = arith::CmpIPredicate;
                           Emit t{b, loc};
                           Value j = t.indexToI64(t.linalgIndex(0));
                           Value r = arith::RemSIOp::create(b, loc, t.sub(j, first), t.c64(W));
                           Value off = t.sel(t.cmpi(P::slt, r, t.c64(0)), t.add(r, t.c64(W)), r);
                           Value take = t.cmpi(P::slt, off, c);
                           Value row = t.i64ToIndex(t.sel(take, t.add(lo, off), t.c64(0)));
                           Value v = t.extract(kv, {row, t.linalgIndex(1)});
                           linalg::YieldOp::create(b, loc, t.sel(take, v, args[0]));
                         });
        },
        [&](Emit) -> Value { return ring; });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// window_kv (section 4): kv in prefill (start_pos == 0), the (updated) ring in decode.
struct WindowKvLowering : OpConversionPattern<WindowKvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(WindowKvOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    using P = arith::CmpIPredicate;
    Emit e{rewriter, op.getLoc()};
    Value start = adaptor.getStartPos();
    Value s = e.sizeValue(sizesOf(e, adaptor.getKv())[0]);
    reportIf(e, e.cmpi(P::slt, start, e.c64(0)), RuntimeError::WindowKvNegativeStart);
    reportIf(e, e.band(e.cmpi(P::sgt, start, e.c64(0)), e.cmpi(P::ne, s, e.idx(1))),
             RuntimeError::WindowKvMultiTokenDecode);
    Value prefill = e.cmpi(P::eq, start, e.c64(0));
    // The branches' types differ ([s, hd] and [W, hd]): both are cast to the dynamic [?, hd].
    auto resultType = cast<RankedTensorType>(op.getType());
    auto dynType = RankedTensorType::get({ShapedType::kDynamic, resultType.getDimSize(1)}, resultType.getElementType());
    Value out = guarded(
        e, prefill, dynType, [&](Emit) -> Value { return adaptor.getKv(); },
        [&](Emit) -> Value { return adaptor.getRing(); });
    rewriter.replaceOp(op, e.castTo(out, resultType));
    return success();
  }
};

/// window_indices (section 4): prefill [s, min(s, W)]: j = max(0, t-W+1) + i, -1 where j > t; decode [1, W]: slot
/// (oldest + i) % W with oldest = start_pos % W + 1, -1 where the slot exceeds start_pos.
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
    reportIf(e, e.band(e.cmpi(P::sgt, start, e.c64(0)), e.cmpi(P::ne, count, e.idx(1))),
             RuntimeError::WindowIndicesMultiTokenDecode);
    Value prefill = e.cmpi(P::eq, start, e.c64(0));
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
                          Value v = t.sel(prefill, pre, dec);
                          linalg::YieldOp::create(b, loc, arith::TruncIOp::create(b, loc, t.i32(), v).getResult());
                        });
    rewriter.replaceOp(op, e.castTo(out, op.getType()));
    return success();
  }
};

/// sparse_attn (section 10) with the kernel's order: z_j = dotF32(q, kv[idx_j]) * scale (-inf for -1);
/// m = sink, then m = (m < z_j) ? z_j : m over j; den = exp(sink - m) + sum_j exp(z_j - m) (valid j, ascending);
/// p_j = exp(z_j - m) / den; o[d] = bf16(sum_j p_j * kv[idx_j, d]) (valid j, ascending, from 0).
struct SparseAttnLowering : OpConversionPattern<SparseAttnOp> {
  using OpConversionPattern::OpConversionPattern;
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
    Value n = e.sizeValue(sizesOf(e, kv)[0]);
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
    Value out = guarded(
        e, ok, qType,
        [&](Emit g) -> Value {
          Value nMinus1 = g.sub(n32, g.c32(1));
          // The row an index reads, clamped into [0, n) (a -1 is masked out of every sum).
          auto rowOf = [nMinus1](Emit t, Value i) {
            return arith::IndexCastOp::create(t.b, t.loc, t.b.getIndexType(), t.maxsi(t.minsi(i, nMinus1), t.c32(0)))
                .getResult();
          };
          // z[t, h, j] = dotF32(q[t, h], kv[row(idx[t, j])]) * scale, -inf for -1.
          SmallVector<OpFoldResult> zSizes{qSizes[0], g.b.getIndexAttr(H), k};
          Value z = generic(g, tensorType(zSizes, f32), ValueRange{idx}, g.empty(zSizes, f32),
                            {mapOf(ctx, 3, {dimExpr(ctx, 0), dimExpr(ctx, 2)}), mapOf(ctx, 3, dimExprs(ctx, 3))},
                            parallel(3), [&](OpBuilder &b, Location loc, ValueRange args) {
                              Emit t{b, loc};
                              SmallVector<Value> iv = loopIndices(t, 3);
                              Value row = rowOf(t, args[0]);
                              Value zz = t.fmul(emitDotF32(t, q, {iv[0], iv[1]}, kv, {row}, hd), t.cf(scale));
                              Value valid = t.cmpi(P::sge, args[0], t.c32(0));
                              linalg::YieldOp::create(
                                  b, loc, t.sel(valid, zz, t.cf(-std::numeric_limits<float>::infinity())));
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
          Value den = generic(g, thType, ValueRange{z, m, idx}, denInit,
                              {mapOf(ctx, 3, dimExprs(ctx, 3)), mapOf(ctx, 3, dimExprs(ctx, 2)),
                               mapOf(ctx, 3, {dimExpr(ctx, 0), dimExpr(ctx, 2)}), mapOf(ctx, 3, dimExprs(ctx, 2))},
                              thjIters, [&](OpBuilder &b, Location loc, ValueRange args) {
                                Emit t{b, loc};
                                Value valid = t.cmpi(P::sge, args[2], t.c32(0));
                                Value ez = math::ExpOp::create(b, loc, t.fsub(args[0], args[1]));
                                linalg::YieldOp::create(b, loc, t.sel(valid, t.fadd(args[3], ez), args[3]));
                              });
          // p[t, h, j] = exp(z - m) / den.
          Value p = generic(g, tensorType(zSizes, f32), ValueRange{z, m, den}, g.empty(zSizes, f32),
                            {mapOf(ctx, 3, dimExprs(ctx, 3)), mapOf(ctx, 3, dimExprs(ctx, 2)),
                             mapOf(ctx, 3, dimExprs(ctx, 2)), mapOf(ctx, 3, dimExprs(ctx, 3))},
                            parallel(3), [&](OpBuilder &b, Location loc, ValueRange args) {
                              Emit t{b, loc};
                              Value ez = math::ExpOp::create(b, loc, t.fsub(args[0], args[1]));
                              linalg::YieldOp::create(b, loc, t.fdiv(ez, args[2]));
                            });
          // o[t, h, d] = sum over valid j (ascending) of p * kv[idx_j, d]; dims (t, h, d, j).
          SmallVector<OpFoldResult> oSizes{qSizes[0], g.b.getIndexAttr(H), g.b.getIndexAttr(hd)};
          Value o32 = generic(g, tensorType(oSizes, f32), ValueRange{p, idx}, g.filled(oSizes, g.cf(0.0f)),
                              {mapOf(ctx, 4, {dimExpr(ctx, 0), dimExpr(ctx, 1), dimExpr(ctx, 3)}),
                               mapOf(ctx, 4, {dimExpr(ctx, 0), dimExpr(ctx, 3)}), mapOf(ctx, 4, dimExprs(ctx, 3))},
                              {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
                               IteratorType::reduction},
                              [&](OpBuilder &b, Location loc, ValueRange args) {
                                Emit t{b, loc};
                                Value valid = t.cmpi(P::sge, args[1], t.c32(0));
                                Value v = t.toF32(t.extract(kv, {rowOf(t, args[1]), t.linalgIndex(2)}));
                                linalg::YieldOp::create(b, loc, t.sel(valid, t.fadd(args[2], t.fmul(args[0], v)),
                                                                      args[2]));
                              });
          Type bf16 = g.b.getBF16Type();
          return generic(g, tensorType(oSizes, bf16), ValueRange{o32}, g.empty(oSizes, bf16),
                         {mapOf(ctx, 3, dimExprs(ctx, 3)), mapOf(ctx, 3, dimExprs(ctx, 3))}, parallel(3),
                         [&](OpBuilder &b, Location loc, ValueRange args) {
                           Emit t{b, loc};
                           linalg::YieldOp::create(b, loc, t.toBf16(args[0]));
                         });
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
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GroupedOutputOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    auto oType = cast<RankedTensorType>(op.getO().getType());
    auto wType = cast<RankedTensorType>(op.getWoA().getType());
    if (failed(requireStatic(op, op.getO(), 1, "o")) || failed(requireStatic(op, op.getO(), 2, "o")))
      return failure();
    if (!wType.hasStaticShape())
      return op.emitOpError() << "dsa-to-cpu needs 'wo_a' to have a static shape";
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    const int64_t G = op.getGroups();
    const int64_t H = oType.getDimSize(1), hd = oType.getDimSize(2);
    const int64_t gw = H / G * hd;
    const int64_t R = wType.getDimSize(0) / G;
    Value o = adaptor.getO();
    OpFoldResult s = sizesOf(e, o)[0];
    Value oFlat = tensor::CollapseShapeOp::create(e.b, e.loc, o, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
    SmallVector<OpFoldResult> o3Sizes{s, rewriter.getIndexAttr(G), rewriter.getIndexAttr(gw)};
    Value o3 = tensor::ExpandShapeOp::create(e.b, e.loc, tensorType(o3Sizes, oType.getElementType()), oFlat,
                                             ArrayRef<ReassociationIndices>{{0}, {1, 2}}, o3Sizes);
    SmallVector<OpFoldResult> w3Sizes{rewriter.getIndexAttr(G), rewriter.getIndexAttr(R), rewriter.getIndexAttr(gw)};
    Value w3 = tensor::ExpandShapeOp::create(e.b, e.loc, tensorType(w3Sizes, wType.getElementType()),
                                             adaptor.getWoA(), ArrayRef<ReassociationIndices>{{0, 1}, {2}}, w3Sizes);
    SmallVector<OpFoldResult> pSizes{s, rewriter.getIndexAttr(G), rewriter.getIndexAttr(R)};
    Type bf16 = rewriter.getBF16Type();
    Value y3 = generic(e, tensorType(pSizes, bf16), {}, e.empty(pSizes, bf16), {mapOf(ctx, 3, dimExprs(ctx, 3))},
                       parallel(3), [&](OpBuilder &b, Location loc, ValueRange) {
                         Emit t{b, loc};
                         SmallVector<Value> iv = loopIndices(t, 3);
                         Value dot = emitDotF32(t, o3, {iv[0], iv[1]}, w3, {iv[1], iv[2]}, gw);
                         linalg::YieldOp::create(b, loc, t.toBf16(dot));
                       });
    Value y = tensor::CollapseShapeOp::create(e.b, e.loc, y3, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
    rewriter.replaceOp(op, e.castTo(y, op.getType()));
    return success();
  }
};

//===----------------------------------------------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------------------------------------------===//

struct ConvertDSAToCPUPass : impl::ConvertDSAToCPUBase<ConvertDSAToCPUPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    ConvertDSAToCPUBase::getDependentDialects(registry);
    registry.insert<func::FuncDialect, vector::VectorDialect>();
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
                       WindowIndicesOp, SparseAttnOp, GroupedOutputOp>(op)) {
        op->emitOpError() << "is not lowered by dsa-to-cpu yet (only the window-only primitives are)";
        unsupported = true;
      }
    });
    if (unsupported)
      return signalPassFailure();

    // The run-time check hook, declared once (the host defines it, see RuntimeErrors.h).
    bool needsFail = false;
    module.walk([&](Operation *op) {
      if (isa<PositionsOp, ApplyRopeOp, RingUpdateOp, WindowKvOp, WindowIndicesOp, SparseAttnOp>(op))
        needsFail = true;
    });
    if (needsFail && !module.lookupSymbol(::dsa::cpu::kFailSymbol)) {
      OpBuilder b(ctx);
      b.setInsertionPointToStart(module.getBody());
      auto decl = func::FuncOp::create(b, module.getLoc(), ::dsa::cpu::kFailSymbol,
                                       b.getFunctionType({b.getI32Type()}, {}));
      decl.setPrivate();
    }

    ConversionTarget target(*ctx);
    target.addIllegalDialect<DSADialect>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect, tensor::TensorDialect, math::MathDialect,
                           scf::SCFDialect, func::FuncDialect, vector::VectorDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(ctx);
    patterns.add<LinearLowering, RmsNormLowering, PositionsLowering, ApplyRopeLowering, ActQuantFp8Lowering,
                 RingUpdateLowering, WindowKvLowering, WindowIndicesLowering, SparseAttnLowering,
                 GroupedOutputLowering>(ctx);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::dsa
