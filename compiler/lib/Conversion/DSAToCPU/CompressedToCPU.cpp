//===- CompressedToCPU.cpp - compressed-attention dsa primitives -> upstream dialects for the CPU ---------===//
//
// The dsa-to-cpu patterns of the compressed-attention primitives (attention-semantics.md sections 2 and 5-9), BIT-
// EXACT to their reference kernels (kernels/lib/{Compressor,Indexer}.cpp, core/lib/Numerics/Quant.cpp):
//
//  - compress_pool: the state update and the softmax pooling of each completed group in f32 exactly as
//    poolGroup computes it (m = fmax over the members, den = sum of exp(score - m) from 0, acc = sum of
//    kv * (exp(score - m) / den) from 0, members ascending), prefill and decode as two branches of an scf.if.
//  - fp4_quant_e8m0 / fp4_quant_e4m3: block amax (NaN-propagating), the scale (pow2_ceil or e4m3 on the f32 bits)
//    and e2m1 rounding as comparisons against the decision points with ties to the even code (E2M1.h), sign kept;
//    no arith.truncf to fp4/fp8 types (their upstream lowering rounds wrongly).
//  - cache_write: tensor.insert_slice at start_pos // ratio after a capacity check.
//  - indexer_scores: the kernel's loops (sequential f32 dot over ihd, bf16 rounding of the dot, relu, of each head's
//    product and of the sum over heads ascending).
//  - compress_visibility, apply_candidates: elementwise -inf masks.
//  - select_candidate_blocks, indexer_topk: block maxima / pinning / index mapping in IR; the top-k SET itself is
//    a call of the runtime's `dsa_cpu_topk_set` (core/include/dsa/ABI/RuntimeFunctions.h), which runs the
//    reference's libstdc++ algorithms (section 9), so the tie order among equal scores is the reference's. Only
//    tie_order = torch_cpu is accepted.
//  - arith.extf / arith.truncf on tensors (the ratio >= 2 compressor's f32 input and bf16 pooled rows, emitted by
//    dsa-decompose-attention): elementwise linalg.generic ops (truncf is bf16 RNE).
//
// Run-time checks follow the kernels' order and call dsa_cpu_fail (codes in RuntimeErrors.h); the code stays memory
// safe after a failed check (a step that cannot run gives zeros / the inputs unchanged).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "Support.h"

#include "dsa/ABI/RuntimeFunctions.h"
#include "dsa/Dialect/DSA/IR/DSAOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

namespace mlir::dsa::cpu_lowering {

namespace {

using P = arith::CmpIPredicate;
using F = arith::CmpFPredicate;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int64_t kDyn = ShapedType::kDynamic;

Value cIndexOr(Emit e, OpFoldResult ofr) { return e.sizeValue(ofr); }

/// The codes of the step checks (compress_detail::checkStep): start_pos < 0, s == 0. (A step of s > 1 tokens at
/// start_pos > 0 is a chunk: the lowerings run it as its decode steps, as the kernels do.)
struct StepCodes {
  RuntimeError negativeStart, emptyStep;
};

/// Emits the step checks in the kernels' order and returns the i1 "the step is valid".
Value stepChecks(Emit e, Value start, Value sIndex, StepCodes codes) {
  Value s = e.indexToI64(sIndex);
  Value neg = e.cmpi(P::slt, start, e.c64(0));
  Value empty = e.cmpi(P::slt, s, e.c64(1));
  reportIf(e, neg, codes.negativeStart);
  reportIf(e, empty, codes.emptyStep);
  return e.cmpi(P::eq, e.bor(neg, empty), e.cBool(false));
}

Value floorDiv(Emit e, Value x, Value y) { return arith::FloorDivSIOp::create(e.b, e.loc, x, y); }

/// i1 "start_pos + s overflows int64" for s >= 0 (exact: start > INT64_MAX - s).
Value endOverflows(Emit e, Value start, Value s64) {
  return e.cmpi(P::sgt, start, e.sub(e.c64(std::numeric_limits<int64_t>::max()), s64));
}

/// The checks of the scores consumers (checkScoresStep): the step checks, then width == (start_pos + s) // ratio.
/// Returns the i1 "valid".
Value scoresChecks(Emit e, Value scores, Value start, int64_t ratio, StepCodes codes, RuntimeError endCode,
                   RuntimeError widthCode) {
  SmallVector<OpFoldResult> sizes = sizesOf(e, scores);
  Value s = cIndexOr(e, sizes[0]);
  Value width = e.indexToI64(cIndexOr(e, sizes[1]));
  Value stepOk = stepChecks(e, start, s, codes);
  // start_pos + s must fit int64 (checkScores' error, before the width's); past it the step is invalid.
  Value overflow = e.band(stepOk, endOverflows(e, start, e.indexToI64(s)));
  reportIf(e, overflow, endCode);
  Value endOk = e.band(stepOk, e.cmpi(P::eq, overflow, e.cBool(false)));
  Value want = floorDiv(e, e.add(start, e.indexToI64(s)), e.c64(ratio));
  Value widthBad = e.band(endOk, e.cmpi(P::ne, width, want));
  reportIf(e, widthBad, widthCode);
  return e.band(endOk, e.cmpi(P::eq, width, want));
}

/// compress_len[t] (section 6 step 5) for query t (i64) of a step: (start_pos + t + 1) // ratio, which is
/// (t + 1) // ratio in prefill, (start_pos + 1) // ratio in decode and token t's decode value in a chunk at
/// start_pos > 0 (compress_detail::compressLen). The callers checked that start_pos + s fits int64.
Value compressLen(Emit e, Value t, Value start, int64_t ratio) {
  return floorDiv(e, e.add(e.add(start, t), e.c64(1)), e.c64(ratio));
}

/// scf.if ok { compute() } else { fallback() } yielding several tensors (each cast to its type in `types`).
SmallVector<Value> guardedN(Emit e, Value ok, TypeRange types, function_ref<SmallVector<Value>(Emit)> compute,
                            function_ref<SmallVector<Value>(Emit)> fallback) {
  auto ifOp = scf::IfOp::create(e.b, e.loc, types, ok, /*addThenBlock=*/true, /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(e.b);
  auto fill = [&](Block *block, function_ref<SmallVector<Value>(Emit)> fn) {
    e.b.setInsertionPointToStart(block);
    Emit t{e.b, e.loc};
    SmallVector<Value> values = fn(t);
    assert(values.size() == types.size() && "one value per result type");
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = t.castTo(values[i], types[i]);
    scf::YieldOp::create(e.b, e.loc, values);
  };
  fill(ifOp.thenBlock(), compute);
  fill(ifOp.elseBlock(), fallback);
  return SmallVector<Value>(ifOp.getResults().begin(), ifOp.getResults().end());
}

/// A scalar constant of `type` (bf16/f32) with value v.
Value floatConst(Emit e, Type type, double v) { return arith::ConstantOp::create(e.b, e.loc, FloatAttr::get(type, v)); }

/// scf.for lb..ub step 1 carrying `inits`, the body given (t, iv, iters) -> new iters.
SmallVector<Value> forLoop(Emit e, Value lb, Value ub, ValueRange inits,
                           function_ref<SmallVector<Value>(Emit, Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(e.b, e.loc, lb, ub, e.idx(1), inits,
                                 [&](OpBuilder &b, Location loc, Value iv, ValueRange iters) {
                                   Emit t{b, loc};
                                   scf::YieldOp::create(b, loc, body(t, iv, iters));
                                 });
  return SmallVector<Value>(loop.getResults().begin(), loop.getResults().end());
}

/// A chunk's rows one at a time (s > 1 tokens at start_pos > 0, each row as its decode step): row t's first
/// compress_len[t] = n columns of `scores` as a [1, n] slice, rowResult(u, row, n, len) a [1, w] tensor
/// (w = resultWidth(u, n)) inserted at row t of `init`, the rest of `init` kept. Callers: select_candidate_blocks
/// and indexer_topk.
Value forEachChunkRow(Emit e, Value scores, Value s, Value start, int64_t ratio, Value init,
                      function_ref<Value(Emit, Value, Value, Value)> rowResult,
                      function_ref<Value(Emit, Value)> resultWidth) {
  return forLoop(e, e.idx(0), s, {init}, [&](Emit u, Value t, ValueRange it) -> SmallVector<Value> {
    Value len = compressLen(u, u.indexToI64(t), start, ratio);
    Value n = u.i64ToIndex(len);
    SmallVector<OpFoldResult> at{t, u.b.getIndexAttr(0)}, rowSizes{u.b.getIndexAttr(1), n},
        ones{u.b.getIndexAttr(1), u.b.getIndexAttr(1)};
    Value row = tensor::ExtractSliceOp::create(u.b, u.loc, scores, at, rowSizes, ones);
    Value result = rowResult(u, row, n, len);
    SmallVector<OpFoldResult> resultSizes{u.b.getIndexAttr(1), resultWidth(u, n)};
    return {tensor::InsertSliceOp::create(u.b, u.loc, result, it[0], at, resultSizes, ones).getResult()};
  })[0];
}

//===----------------------------------------------------------------------------------------------------------===//
// Numerics
//===----------------------------------------------------------------------------------------------------------===//

/// roundE2M1 (Numerics/E2M1.h): the grid index is the number of decision points below |v| (ties to the even code:
/// strict > at 0.25, 1.25, 2.5, 5; >= at 0.75, 1.75, 3.5), the magnitude {0, .5, 1, 1.5, 2, 3, 4, 6}[code] with v's
/// sign (also on zero); magnitudes above 6 and infinities give 6; NaN passes through.
Value roundE2M1(Emit e, Value v) {
  Value u = e.bitsOf(v);
  Value a = e.floatOf(e.band(u, e.cu32(0x7FFFFFFFu)));
  struct Point {
    float at;
    bool strict;
  };
  const Point points[] = {{0.25f, true}, {0.75f, false}, {1.25f, true}, {1.75f, false},
                          {2.5f, true},  {3.5f, false},  {5.0f, true}};
  Value code = e.c32(0);
  for (const Point &p : points) {
    Value above = e.cmpf(p.strict ? F::OGT : F::OGE, a, e.cf(p.at));
    code = e.add(code, arith::ExtUIOp::create(e.b, e.loc, e.i32(), above));
  }
  const float grid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  Value mag = e.cf(grid[0]);
  for (int i = 1; i < 8; ++i)
    mag = e.sel(e.cmpi(P::eq, code, e.c32(i)), e.cf(grid[i]), mag);
  Value signed_ = e.floatOf(e.bor(e.bitsOf(mag), e.band(u, e.cu32(0x80000000u))));
  return e.sel(e.cmpf(F::UNO, v, v), v, signed_);
}

/// The top-k SET of every row of `values` (f32 [rows, n]) in the torch_cpu tie order: i64 [rows, k], each row
/// ascending. A call of the runtime's dsa_cpu_topk_set on the buffers (declared by the pass with
/// llvm.emit_c_interface: memref descriptors by pointer); a non-zero return is reported as TopkRuntimeFailed.
Value emitTopkSet(Emit e, Value values, Value k) {
  MLIRContext *ctx = e.b.getContext();
  Value rows = cIndexOr(e, sizesOf(e, values)[0]);
  auto valuesTensor = RankedTensorType::get({kDyn, kDyn}, e.f32());
  auto valuesMemref = MemRefType::get({kDyn, kDyn}, e.f32());
  auto picksMemref = MemRefType::get({kDyn, kDyn}, e.i64());
  Value buffer = bufferization::ToBufferOp::create(e.b, e.loc, valuesMemref, e.castTo(values, valuesTensor),
                                                   /*read_only=*/true);
  Value picks = memref::AllocOp::create(e.b, e.loc, picksMemref, ValueRange{rows, k});
  auto call = func::CallOp::create(e.b, e.loc, FlatSymbolRefAttr::get(ctx, ::dsa::abi::kTopkSymbol),
                                   TypeRange{e.i32()}, ValueRange{buffer, e.indexToI64(k), picks});
  reportIf(e, e.cmpi(P::ne, call.getResult(0), e.c32(0)), RuntimeError::TopkRuntimeFailed);
  return bufferization::ToTensorOp::create(e.b, e.loc, RankedTensorType::get({kDyn, kDyn}, e.i64()), picks,
                                           /*restrict=*/true, /*writable=*/true);
}

/// An f32 copy of a bf16/f32 rank-2 tensor.
Value toF32Tensor(Emit e, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getElementType().isF32())
    return x;
  MLIRContext *ctx = e.b.getContext();
  SmallVector<OpFoldResult> sizes = sizesOf(e, x);
  unsigned rank = type.getRank();
  return generic(e, tensorType(sizes, e.f32()), ValueRange{x}, e.empty(sizes, e.f32()),
                 {mapOf(ctx, rank, dimExprs(ctx, rank)), mapOf(ctx, rank, dimExprs(ctx, rank))}, parallel(rank),
                 [&](OpBuilder &b, Location loc, ValueRange args) {
                   Emit t{b, loc};
                   linalg::YieldOp::create(b, loc, t.toF32(args[0]));
                 });
}

LogicalResult requireTorchCpu(Operation *op, TieOrderAttr order) {
  if (order && order.getValue() == TieOrder::torch_cpu)
    return success();
  return op->emitOpError() << "dsa-to-cpu implements only tie_order = torch_cpu (the reference's top-k set, "
                              "section 9)";
}

//===----------------------------------------------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------------------------------------------===//

/// compress_pool (section 5). Prefill: state slots j < rem = s % r take rows cut + j (cut = s - rem), group gi pools
/// rows gi*r .. gi*r + r - 1. Decode: slot start_pos % r takes the row; when (start_pos + 1) % r == 0 the updated
/// state pools into one row. Pooling per d (poolGroup): m = fmax over j; den = sum_j exp(score - m);
/// acc = sum_j kv * (exp(score - m) / den), all f32, j ascending.
struct CompressPoolLowering : OpConversionPattern<CompressPoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(CompressPoolOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (failed(requireStatic(op, op.getKv(), 1, "kv")))
      return failure();
    auto stateType = cast<RankedTensorType>(op.getKvState().getType());
    if (!stateType.hasStaticShape())
      return op.emitOpError() << "dsa-to-cpu needs 'kv_state' to have a static shape [ratio, hd]";
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    const int64_t r = static_cast<int64_t>(op.getRatio());
    const int64_t hd = cast<RankedTensorType>(op.getKv().getType()).getDimSize(1);
    Value kv = adaptor.getKv(), score = adaptor.getScore();
    Value kvState = adaptor.getKvState(), scoreState = adaptor.getScoreState();
    Value start = adaptor.getStartPos();
    Value s = cIndexOr(e, sizesOf(e, kv)[0]);
    Value shapeOk = e.cmpi(P::eq, s, cIndexOr(e, sizesOf(e, score)[0]));
    reportIf(e, e.cmpi(P::ne, s, cIndexOr(e, sizesOf(e, score)[0])), RuntimeError::CompressPoolScoreShape);
    Value stepOk = stepChecks(e, start, s,
                              {RuntimeError::CompressPoolNegativeStart, RuntimeError::CompressPoolEmptyStep});
    // The step's last position start_pos + s - 1 must fit int64 (a decode step at INT64_MAX is valid).
    Value overflow = e.band(stepOk, endOverflows(e, start, e.sub(e.indexToI64(s), e.c64(1))));
    reportIf(e, overflow, RuntimeError::CompressPoolEndOverflow);
    Value ok = e.band(e.band(shapeOk, stepOk), e.cmpi(P::eq, overflow, e.cBool(false)));

    auto pooledType = RankedTensorType::get({kDyn, hd}, e.f32());
    Type newKvType = op.getNewKvState().getType(), newScoreType = op.getNewScoreState().getType();
    SmallVector<Value> results = guardedN(
        e, ok, TypeRange{pooledType, newKvType, newScoreType},
        [&](Emit g) -> SmallVector<Value> {
          Value sI64 = g.indexToI64(s);
          Value prefill = g.cmpi(P::eq, start, g.c64(0));
          // pooled[gi, d] over the members base + j of (kvSrc, scoreSrc): base gi r (the step's rows) or 0 (the
          // state's slots).
          auto pool = [&](Emit p, Value groups, Value kvSrc, Value scoreSrc, bool fromStep) -> Value {
            SmallVector<OpFoldResult> sizes{groups, p.b.getIndexAttr(hd)};
            return generic(
                p, tensorType(sizes, p.f32()), {}, p.empty(sizes, p.f32()), {mapOf(ctx, 2, dimExprs(ctx, 2))},
                parallel(2), [&](OpBuilder &b, Location loc, ValueRange) {
                  Emit t{b, loc};
                  Value gi = t.linalgIndex(0), d = t.linalgIndex(1);
                  Value base = fromStep ? t.mul(gi, t.idx(r)) : t.idx(0);
                  auto at = [&](Emit u, Value src, Value j) { return u.extract(src, {u.add(base, j), d}); };
                  Value m = at(t, scoreSrc, t.idx(0));
                  m = forLoop(t, t.idx(1), t.idx(r), {m}, [&](Emit u, Value j, ValueRange it) -> SmallVector<Value> {
                        return {arith::MaxNumFOp::create(u.b, u.loc, it[0], at(u, scoreSrc, j))};
                      })[0];
                  Value den = forLoop(t, t.idx(0), t.idx(r), {t.cf(0.0f)},
                                      [&](Emit u, Value j, ValueRange it) -> SmallVector<Value> {
                                        Value ex = math::ExpOp::create(u.b, u.loc, u.fsub(at(u, scoreSrc, j), m));
                                        return {u.fadd(it[0], ex)};
                                      })[0];
                  Value acc = forLoop(t, t.idx(0), t.idx(r), {t.cf(0.0f)},
                                      [&](Emit u, Value j, ValueRange it) -> SmallVector<Value> {
                                        Value ex = math::ExpOp::create(u.b, u.loc, u.fsub(at(u, scoreSrc, j), m));
                                        return {u.fadd(it[0], u.fmul(at(u, kvSrc, j), u.fdiv(ex, den)))};
                                      })[0];
                  linalg::YieldOp::create(b, loc, acc);
                });
          };
          return guardedN(
              g, prefill, TypeRange{pooledType, stateType, stateType},
              [&](Emit p) -> SmallVector<Value> {
                // Prefill: every full group of the step pooled from its rows; the last rem rows into slots 0..rem-1.
                Value rem = arith::RemSIOp::create(p.b, p.loc, sI64, p.c64(r));
                Value cut = p.sub(sI64, rem);
                auto update = [&](Value state, Value rowsSrc) {
                  SmallVector<AffineMap> maps{mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, dimExprs(ctx, 2))};
                  return generic(p, stateType, ValueRange{state}, p.empty(sizesOf(p, state), p.f32()), maps,
                                 parallel(2), [&](OpBuilder &b, Location loc, ValueRange args) {
                                   Emit t{b, loc};
                                   Value j = t.indexToI64(t.linalgIndex(0));
                                   Value take = t.cmpi(P::slt, j, rem);
                                   Value row = t.sel(take, t.add(cut, j), t.c64(0));
                                   Value v = t.extract(rowsSrc, {t.i64ToIndex(row), t.linalgIndex(1)});
                                   linalg::YieldOp::create(b, loc, t.sel(take, v, args[0]));
                                 });
                };
                Value groups = p.i64ToIndex(arith::DivSIOp::create(p.b, p.loc, cut, p.c64(r)));
                return {pool(p, groups, kv, score, /*fromStep=*/true), update(kvState, kv), update(scoreState, score)};
              },
              [&](Emit p) -> SmallVector<Value> {
                // Decode, and a chunk at start_pos > 0 as its decode steps: token t at position start_pos + t into
                // slot (start_pos + t) % r; a token closing a group (slot r - 1) pools the state into the next row
                // of the (start_pos + s) // r - start_pos // r pooled rows.
                // The positions in [start_pos, last] closing a group, without last + 1 (INT64_MAX).
                Value last = p.add(start, p.sub(sI64, p.c64(1)));
                Value closesAtLast = p.cmpi(P::eq, arith::RemSIOp::create(p.b, p.loc, last, p.c64(r)), p.c64(r - 1));
                Value groups = p.i64ToIndex(
                    p.sub(p.add(floorDiv(p, last, p.c64(r)), arith::ExtUIOp::create(p.b, p.loc, p.i64(), closesAtLast)),
                          floorDiv(p, start, p.c64(r))));
                SmallVector<OpFoldResult> pSizes{groups, p.b.getIndexAttr(hd)};
                Value pooled0 = p.castTo(p.empty(pSizes, p.f32()), pooledType);
                SmallVector<OpFoldResult> rowSizes{p.b.getIndexAttr(1), p.b.getIndexAttr(hd)};
                SmallVector<OpFoldResult> ones{p.b.getIndexAttr(1), p.b.getIndexAttr(1)};
                SmallVector<Value> out = forLoop(
                    p, p.idx(0), s, {kvState, scoreState, pooled0, p.idx(0)},
                    [&](Emit u, Value t, ValueRange it) -> SmallVector<Value> {
                      Value slot = u.i64ToIndex(
                          arith::RemSIOp::create(u.b, u.loc, u.add(start, u.indexToI64(t)), u.c64(r)));
                      SmallVector<OpFoldResult> from{t, u.b.getIndexAttr(0)}, to{slot, u.b.getIndexAttr(0)};
                      auto enter = [&](Value rowsSrc, Value state) -> Value {
                        Value row = tensor::ExtractSliceOp::create(u.b, u.loc, rowsSrc, from, rowSizes, ones);
                        return tensor::InsertSliceOp::create(u.b, u.loc, row, state, to, rowSizes, ones);
                      };
                      Value kvS = enter(kv, it[0]), scS = enter(score, it[1]);
                      Value closes = u.cmpi(P::eq, slot, u.idx(r - 1));
                      SmallVector<Value> next = guardedN(
                          u, closes, TypeRange{pooledType, u.b.getIndexType()},
                          [&](Emit c) -> SmallVector<Value> {
                            Value row = c.castTo(pool(c, c.idx(1), kvS, scS, /*fromStep=*/false),
                                                 RankedTensorType::get({1, hd}, c.f32()));
                            SmallVector<OpFoldResult> at{it[3], c.b.getIndexAttr(0)};
                            Value into = tensor::InsertSliceOp::create(c.b, c.loc, row, it[2], at, rowSizes, ones);
                            return {into, c.add(it[3], c.idx(1))};
                          },
                          [&](Emit) -> SmallVector<Value> { return {it[2], it[3]}; });
                      return {kvS, scS, next[0], next[1]};
                    });
                return {out[2], out[0], out[1]};
              });
        },
        [&](Emit g) -> SmallVector<Value> {
          return {g.empty({g.b.getIndexAttr(0), g.b.getIndexAttr(hd)}, g.f32()), kvState, scoreState};
        });
    SmallVector<Value> replaced{e.castTo(results[0], op.getPooled().getType()), results[1], results[2]};
    rewriter.replaceOp(op, replaced);
    return success();
  }
};

/// The three block round trips of section 2 (Numerics/Quant.cpp's roundTripBlocks): per block of B elements of the
/// last dim, amax = max(max|x|, floor) (NaN when the block holds one), s = scale(amax / limit),
/// x = bf16(grid(clamp(x / s, -limit, limit)) * s), with
///   act_quant_fp8:  floor 1e-4,     limit 448, scale pow2_ceil, grid e4m3;
///   fp4_quant_e8m0: floor 6*2^-126, limit 6,   scale pow2_ceil, grid e2m1;
///   fp4_quant_e4m3: floor 6*2^-9,   limit 6,   scale e4m3,      grid e2m1.
enum class RoundTrip { ActQuantFp8, Fp4E8M0, Fp4E4M3 };
template <typename OpTy, RoundTrip Kind> struct BlockRoundTripLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpTy::Adaptor;
  LogicalResult matchAndRewrite(OpTy op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    auto xType = cast<RankedTensorType>(op.getX().getType());
    if (failed(requireStatic(op, op.getX(), xType.getRank() - 1, "x")))
      return failure();
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    const int64_t D = xType.getShape().back();
    const int64_t B = static_cast<int64_t>(op.getBlockSize());
    const int64_t nb = D / B;
    const float floor = Kind == RoundTrip::ActQuantFp8 ? 1e-4f
                        : Kind == RoundTrip::Fp4E4M3   ? 6.0f * 0x1p-9f
                                                       : 6.0f * 0x1p-126f;
    const float limit = Kind == RoundTrip::ActQuantFp8 ? 448.0f : 6.0f;
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
          Value isNan = t.cmpf(F::UNO, a, a);
          Value amax = t.sel(t.cmpf(F::OGT, a, args[1]), a, args[1]);
          linalg::YieldOp::create(b, loc, ValueRange{amax, t.bor(args[2], isNan)});
        });
    Value scale = generic(e, tensorType(bSizes, e.f32()), ValueRange{amaxOp.getResult(0), amaxOp.getResult(1)},
                          e.empty(bSizes, e.f32()),
                          {mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, dimExprs(ctx, 2)),
                           mapOf(ctx, 2, dimExprs(ctx, 2))},
                          parallel(2), [&](OpBuilder &b, Location loc, ValueRange args) {
                            Emit t{b, loc};
                            Value lo = t.cf(floor);
                            Value amax = t.sel(t.cmpf(F::OGT, args[0], lo), args[0], lo);
                            amax = t.sel(args[1], t.cf(std::numeric_limits<float>::quiet_NaN()), amax);
                            Value q = t.fdiv(amax, t.cf(limit));
                            linalg::YieldOp::create(b, loc,
                                                    Kind == RoundTrip::Fp4E4M3 ? roundE4M3(t, q) : pow2Ceil(t, q));
                          });
    Type bf16 = rewriter.getBF16Type();
    Value y3 = generic(e, tensorType(x3Sizes, bf16), ValueRange{x3, scale}, e.empty(x3Sizes, bf16),
                       {mapOf(ctx, 3, dimExprs(ctx, 3)), mapOf(ctx, 3, dimExprs(ctx, 2)),
                        mapOf(ctx, 3, dimExprs(ctx, 3))},
                       parallel(3), [&](OpBuilder &b, Location loc, ValueRange args) {
                         Emit t{b, loc};
                         Value v = clampSym(t, t.fdiv(t.toF32(args[0]), args[1]), limit);
                         Value q = Kind == RoundTrip::ActQuantFp8 ? roundE4M3(t, v) : roundE2M1(t, v);
                         linalg::YieldOp::create(b, loc, t.toBf16(t.fmul(q, args[1])));
                       });
    Value y2 = tensor::CollapseShapeOp::create(e.b, e.loc, y3, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
    rewriter.replaceOp(op, expandRows(e, y2, adaptor.getX(), cast<RankedTensorType>(op.getType())));
    return success();
  }
};

/// cache_write (sections 6 step 1, 8 step 3): rows [g, w] into cache [C, w] at row start_pos // ratio, after the
/// checks start_pos >= 0 and start_pos // ratio + g <= C (the cache is returned unchanged when one fails).
struct CacheWriteLowering : OpConversionPattern<CacheWriteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(CacheWriteOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    if (failed(requireStatic(op, op.getCache(), 1, "cache")) || failed(requireStatic(op, op.getRows(), 1, "rows")))
      return failure();
    Emit e{rewriter, op.getLoc()};
    Value cache = adaptor.getCache(), rows = adaptor.getRows(), start = adaptor.getStartPos();
    auto cacheType = cast<RankedTensorType>(cache.getType());
    const int64_t w = cacheType.getDimSize(1);
    // The slice's row count stays a static size when rows has one (insert_slice needs the source type to match).
    const OpFoldResult gSize = sizesOf(e, rows)[0];
    Value g = cIndexOr(e, gSize);
    Value capacity = e.indexToI64(cIndexOr(e, sizesOf(e, cache)[0]));
    Value neg = e.cmpi(P::slt, start, e.c64(0));
    Value first = floorDiv(e, start, e.c64(static_cast<int64_t>(op.getRatio())));
    // first + g > C as g > C - first (C, first >= 0: no wrap at a start_pos near INT64_MAX).
    Value overflow = e.band(e.cmpi(P::sge, start, e.c64(0)), e.cmpi(P::sgt, e.indexToI64(g), e.sub(capacity, first)));
    reportIf(e, neg, RuntimeError::CacheWriteNegativeStart);
    reportIf(e, overflow, RuntimeError::CacheWriteOverflow);
    Value ok = e.cmpi(P::eq, e.bor(neg, overflow), e.cBool(false));
    Value out = guarded(
        e, ok, cacheType,
        [&](Emit t) -> Value {
          SmallVector<OpFoldResult> offsets{t.i64ToIndex(first), t.b.getIndexAttr(0)};
          SmallVector<OpFoldResult> sizes{gSize, t.b.getIndexAttr(w)};
          SmallVector<OpFoldResult> strides{t.b.getIndexAttr(1), t.b.getIndexAttr(1)};
          return tensor::InsertSliceOp::create(t.b, t.loc, rows, cache, offsets, sizes, strides);
        },
        [&](Emit) -> Value { return cache; });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// The f32 head sums of indexer_scores (before the final bf16): sum[t, p] = sum over h ascending from 0.0 of
/// bf16(fmax(bf16(dot(t, h, p)), 0) * w'[t, h]), dot = the SEQUENTIAL f32 dot of iq[t, h, :] and keys[p, :] (d
/// ascending from 0.0: the kernel's loop, not dotF32). Vectorised ACROSS POSITIONS: lane l of a vector<8xf32> is
/// position p0 + l, so every lane runs the kernel's scalar order for its own (t, p, h). keys are transposed once
/// into kT [chunks, ihd, 32] of the keys' type (blocks of 32 positions, wp = width rounded up to 8, zeros past width;
/// 8 x 8 blocks by vector.shuffle when ihd is a multiple of 8) and iq widened to f32; then an
/// scf.forall over (t, chunk of 32 positions) computes blocks of hb heads (4, 2 or 1, dividing IH) x 4 vectors of
/// positions: per d, 4 kT loads and hb broadcasts of q feed hb x 4 accumulators. Returns [s, wp] f32 (columns >=
/// width unused).
/// With `entry` (indexer_scores' entry_keys; `start` its i64 start_pos, `ratio` >= 2): row t closing no group at
/// start_pos > 0 reads `entry`. A one-token step picks its keys once (one transpose, the decode cost unchanged); a
/// chunk at start_pos > 0 transposes both and picks per row.
Value emitIndexerSums(Emit e, Value iq, Value keys, Value wScaled, Value width, int64_t IH, int64_t ihd,
                      Value entry = Value(), Value start = Value(), int64_t ratio = 1) {
  MLIRContext *ctx = e.b.getContext();
  constexpr int64_t kVectors = 4; // position vectors per block
  const int64_t hb = IH % 4 == 0 ? 4 : IH % 2 == 0 ? 2 : 1;
  Value s = e.sizeValue(sizesOf(e, iq)[0]);
  Value wp = e.mul(arith::CeilDivSIOp::create(e.b, e.loc, width, e.idx(kLanes)), e.idx(kLanes));
  const int64_t chunk = kVectors * kLanes;
  Value chunks = arith::CeilDivSIOp::create(e.b, e.loc, wp, e.idx(chunk));
  // kT[c, d, l] = f32(keys[c * chunk + l, d]) for c * chunk + l < width, else 0: blocked by chunk so that the
  // ihd x chunk block one forall iteration reads is contiguous (8 KB bf16). A plain [ihd, wp] f32 transpose put the ihd rows
  // of a chunk wp * 4 bytes apart: at wp = 16384 (65536 tokens of context, ratio 4) that is 64 KB, every row in
  // the same L1 and L2 set, and each kT load went to L3 (the decode step 3x slower than its 4096-token one).
  // kT keeps the keys' element type (bf16: half the bytes written per step; each load is widened, exactly).
  Type keyElem = cast<RankedTensorType>(keys.getType()).getElementType();
  SmallVector<OpFoldResult> ktSizes{chunks, e.b.getIndexAttr(ihd), e.b.getIndexAttr(chunk)};
  // With ihd a multiple of 8: an scf.forall over the chunks, each 8 x 8 block (8 positions, 8 of d) read as 8 rows
  // of keys (rows past width read row 0 and are replaced by zeros), transposed by transposeRows (three stages of
  // vector.shuffle, as the phase kernel packs w) and written as 8 rows of kT. The element-wise
  // generic it replaces (kept for other ihd) was a scalar load, compare and select per element: ~10% of the
  // index-source decode step at 65536 tokens of context (perf, docs/benchmarks.md).
  auto transposedBlocks = [&](Emit te, Value src) -> Value {
    auto rowType = VectorType::get({kLanes}, keyElem);
    auto forall = scf::ForallOp::create(te.b, te.loc, ArrayRef<OpFoldResult>{chunks}, ValueRange{te.empty(ktSizes, keyElem)},
                                        std::nullopt);
    OpBuilder::InsertionGuard guard(te.b);
    te.b.setInsertionPoint(forall.getTerminator());
    Emit f{te.b, te.loc};
    Value c = forall.getInductionVar(0);
    SmallVector<OpFoldResult> offsets{c, f.b.getIndexAttr(0), f.b.getIndexAttr(0)},
        sizes{f.b.getIndexAttr(1), f.b.getIndexAttr(ihd), f.b.getIndexAttr(chunk)},
        strides(3, f.b.getIndexAttr(1));
    Value shared = forall.getRegionIterArgs()[0];
    Value block = tensor::ExtractSliceOp::create(f.b, f.loc, tensorType(sizes, keyElem), shared, offsets, sizes, strides);
    Value zeroRow = arith::ConstantOp::create(f.b, f.loc, DenseElementsAttr::get(rowType, f.b.getZeroAttr(keyElem)));
    Value pad = arith::ConstantOp::create(f.b, f.loc, f.b.getZeroAttr(keyElem));
    auto groups = scf::ForOp::create(
        f.b, f.loc, f.idx(0), f.idx(chunk), f.idx(kLanes), ValueRange{block},
        [&](OpBuilder &bb, Location loc, Value l0, ValueRange iterG) {
          Emit g{bb, loc};
          Value p0 = g.add(g.mul(c, g.idx(chunk)), l0);
          SmallVector<Value> rowOf, inOf;
          for (int64_t r = 0; r < kLanes; ++r) {
            Value p = g.add(p0, g.idx(r));
            Value in = g.cmpi(P::slt, p, width);
            inOf.push_back(in);
            rowOf.push_back(g.sel(in, p, g.idx(0)));
          }
          auto dBlocks = scf::ForOp::create(
              bb, loc, g.idx(0), g.idx(ihd), g.idx(kLanes), ValueRange{iterG[0]},
              [&](OpBuilder &b2, Location loc2, Value d0, ValueRange iterD) {
                Emit x{b2, loc2};
                SmallVector<Value> v;
                for (int64_t r = 0; r < kLanes; ++r) {
                  Value read = vector::TransferReadOp::create(b2, loc2, rowType, src, ValueRange{rowOf[r], d0}, pad,
                                                             ArrayRef<bool>{true});
                  v.push_back(x.sel(inOf[r], read, zeroRow));
                }
                // Column d0 + l of the 8 rows, lane r being position p0 + r (transposeRows: 24 shuffles).
                SmallVector<Value> cols = transposeRows(x, v);
                Value acc = iterD[0];
                for (int64_t l = 0; l < kLanes; ++l)
                  acc = vector::TransferWriteOp::create(b2, loc2, cols[l], acc,
                                                        ValueRange{x.idx(0), l ? x.add(d0, x.idx(l)) : d0, l0},
                                                        ArrayRef<bool>{true})
                            .getResult();
                scf::YieldOp::create(b2, loc2, acc);
              });
          scf::YieldOp::create(bb, loc, dBlocks.getResult(0));
        });
    te.b.setInsertionPointToStart(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(te.b, te.loc, groups.getResult(0), shared, offsets, sizes, strides);
    return forall.getResult(0);
  };
  auto transposed = [&](Emit te, Value src) -> Value {
    if (ihd % kLanes == 0)
      return transposedBlocks(te, src);
    return generic(te, tensorType(ktSizes, keyElem), {}, te.empty(ktSizes, keyElem),
                   {mapOf(ctx, 3, dimExprs(ctx, 3))}, parallel(3), [&](OpBuilder &b, Location loc, ValueRange) {
                     Emit t{b, loc};
                     Value d = t.linalgIndex(1);
                     Value p = t.add(t.mul(t.linalgIndex(0), t.idx(chunk)), t.linalgIndex(2));
                     Value in = t.cmpi(P::slt, p, width);
                     Value v = t.extract(src, {t.sel(in, p, t.idx(0)), d});
                     Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(keyElem));
                     linalg::YieldOp::create(b, loc, t.sel(in, v, zero));
                   });
  };
  // Row t closes no group: (start + t + 1) % ratio != 0 (i64; start + s fits int64, checked by the caller).
  auto closesNoGroup = [&](Emit te, Value tI64) {
    Value r = arith::RemSIOp::create(te.b, te.loc, te.add(te.add(start, tI64), te.c64(1)), te.c64(ratio));
    return te.cmpi(P::ne, r, te.c64(0));
  };
  Value chunkRows; // i1: a step of s > 1 tokens at start_pos > 0 with entry keys (rows pick their keys)
  Value kT, kTEntry;
  if (entry) {
    auto dynKeys = RankedTensorType::get({ShapedType::kDynamic, ihd}, keyElem);
    Value own = e.castTo(keys, dynKeys), slot = e.castTo(entry, dynKeys);
    Value positive = e.cmpi(P::sgt, start, e.c64(0));
    Value sI64 = e.indexToI64(s);
    Value one = e.cmpi(P::eq, sI64, e.c64(1));
    chunkRows = e.band(positive, e.cmpi(P::sgt, sI64, e.c64(1)));
    Value decodeEntry = e.band(e.band(positive, one), closesNoGroup(e, e.c64(0)));
    // The choice as an scf.if of two transposes (one runs), not a transpose of an arith.select of the key
    // tensors: a select would join both keys' buffers in one alias set for bufferization, and in a batched step
    // (own = a slice of the padded index_k slot this layer writes, slot = the read-only incoming one) that made
    // every write into the padded slot a copy of the whole slot.
    kT = scf::IfOp::create(
             e.b, e.loc, decodeEntry,
             [&](OpBuilder &b, Location loc) { scf::YieldOp::create(b, loc, transposed(Emit{b, loc}, slot)); },
             [&](OpBuilder &b, Location loc) { scf::YieldOp::create(b, loc, transposed(Emit{b, loc}, own)); })
             .getResult(0);
    auto pick = scf::IfOp::create(
        e.b, e.loc, chunkRows,
        [&](OpBuilder &b, Location loc) { scf::YieldOp::create(b, loc, transposed(Emit{b, loc}, slot)); },
        [&](OpBuilder &b, Location loc) { scf::YieldOp::create(b, loc, kT); });
    kTEntry = pick.getResult(0);
  } else {
    kT = transposed(e, keys);
  }
  SmallVector<OpFoldResult> qSizes = sizesOf(e, iq);
  SmallVector<AffineMap> qMaps{mapOf(ctx, 3, dimExprs(ctx, 3)), mapOf(ctx, 3, dimExprs(ctx, 3))};
  Value qf = generic(e, tensorType(qSizes, e.f32()), ValueRange{iq}, e.empty(qSizes, e.f32()), qMaps, parallel(3),
                     [&](OpBuilder &b, Location loc, ValueRange args) {
                       Emit t{b, loc};
                       linalg::YieldOp::create(b, loc, t.toF32(args[0]));
                     });
  SmallVector<OpFoldResult> outSizes{s, wp};
  Value init = e.empty(outSizes, e.f32());
  auto forall = scf::ForallOp::create(e.b, e.loc, ArrayRef<OpFoldResult>{s, chunks}, ValueRange{init}, std::nullopt);
  OpBuilder::InsertionGuard guard(e.b);
  e.b.setInsertionPoint(forall.getTerminator());
  Emit f{e.b, e.loc};
  Value t = forall.getInductionVar(0), ci = forall.getInductionVar(1), c0 = f.mul(ci, f.idx(chunk));
  Value shared = forall.getRegionIterArgs()[0];
  Value kTRow = kT; // the transposed keys row t reads
  if (entry)
    kTRow = f.sel(f.band(chunkRows, closesNoGroup(f, f.indexToI64(t))), kTEntry, kT);
  Value len = f.minsi(f.idx(chunk), f.sub(wp, c0)); // a multiple of 8
  SmallVector<OpFoldResult> offsets{t, c0}, sizes{f.b.getIndexAttr(1), len},
      strides{f.b.getIndexAttr(1), f.b.getIndexAttr(1)};
  Value slice =
      tensor::ExtractSliceOp::create(f.b, f.loc, tensorType(sizes, f.f32()), shared, offsets, sizes, strides);
  auto laneType = VectorType::get({kLanes}, f.f32());
  auto bf16Lanes = VectorType::get({kLanes}, f.b.getBF16Type());
  // nv vectors of positions starting at chunk column v0 (relative), all heads; written into `acc`.
  auto block = [&](Emit u, Value acc, Value v0, int64_t nv) -> Value {
    Value zero8 = arith::ConstantOp::create(u.b, u.loc, DenseElementsAttr::get(laneType, 0.0f));
    SmallVector<Value> cols; // within the chunk
    for (int64_t v = 0; v < nv; ++v)
      cols.push_back(u.add(v0, u.idx(v * kLanes)));
    auto heads = scf::ForOp::create(
        u.b, u.loc, u.idx(0), u.idx(IH), u.idx(hb), SmallVector<Value>(nv, zero8),
        [&](OpBuilder &bb, Location loc, Value h0, ValueRange sumsIn) {
          Emit w{bb, loc};
          auto dots = scf::ForOp::create(
              bb, loc, w.idx(0), w.idx(ihd), w.idx(1), SmallVector<Value>(hb * nv, zero8),
              [&](OpBuilder &b2, Location loc2, Value d, ValueRange acc) {
                Emit x{b2, loc2};
                SmallVector<Value> kv, next;
                for (int64_t v = 0; v < nv; ++v)
                  kv.push_back(readLanes(x, kTRow, {ci, d}, cols[v]));
                for (int64_t i = 0; i < hb; ++i) {
                  Value q = x.extract(qf, {t, i ? x.add(h0, x.idx(i)) : h0, d});
                  Value qv = vector::BroadcastOp::create(b2, loc2, laneType, q);
                  for (int64_t v = 0; v < nv; ++v)
                    next.push_back(x.fadd(acc[i * nv + v], x.fmul(qv, kv[v])));
                }
                scf::YieldOp::create(b2, loc2, next);
              });
          SmallVector<Value> sums(sumsIn.begin(), sumsIn.end());
          auto roundLanes = [&](Value v) {
            Value r = arith::TruncFOp::create(bb, loc, bf16Lanes, v);
            return arith::ExtFOp::create(bb, loc, laneType, r).getResult();
          };
          for (int64_t i = 0; i < hb; ++i) { // heads in ascending order
            Value wh = w.extract(wScaled, {t, i ? w.add(h0, w.idx(i)) : h0});
            Value whv = vector::BroadcastOp::create(bb, loc, laneType, wh);
            for (int64_t v = 0; v < nv; ++v) {
              Value relu = arith::MaxNumFOp::create(bb, loc, roundLanes(dots.getResult(i * nv + v)), zero8);
              sums[v] = w.fadd(sums[v], roundLanes(w.fmul(relu, whv)));
            }
          }
          scf::YieldOp::create(bb, loc, sums);
        });
    for (int64_t v = 0; v < nv; ++v)
      acc = vector::TransferWriteOp::create(u.b, u.loc, heads.getResult(v), acc,
                                            ValueRange{u.idx(0), u.add(v0, u.idx(v * kLanes))}, ArrayRef<bool>{true})
                .getResult();
    return acc;
  };
  Value full = f.mul(arith::DivSIOp::create(f.b, f.loc, len, f.idx(chunk)), f.idx(chunk)); // chunk or 0
  auto blocks = scf::ForOp::create(f.b, f.loc, f.idx(0), full, f.idx(chunk), ValueRange{slice},
                                   [&](OpBuilder &bb, Location loc, Value v0, ValueRange iter) {
                                     Emit u{bb, loc};
                                     scf::YieldOp::create(bb, loc, block(u, iter[0], v0, kVectors));
                                   });
  auto rest = scf::ForOp::create(f.b, f.loc, full, len, f.idx(kLanes), ValueRange{blocks.getResult(0)},
                                 [&](OpBuilder &bb, Location loc, Value v0, ValueRange iter) {
                                   Emit u{bb, loc};
                                   scf::YieldOp::create(bb, loc, block(u, iter[0], v0, 1));
                                 });
  e.b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(e.b, e.loc, rest.getResult(0), shared, offsets, sizes, strides);
  return forall.getResult(0);
}

/// indexer_scores (section 6 steps 3-4) in the kernel's order: w'[t,h] = bf16(weights[t,h] * weight_scale);
/// score[t,p] = bf16(sum_h bf16(fmax(bf16(dot(iq[t,h], keys[p])), 0) * w'[t,h])), the dot sequential over ihd
/// from 0.0f, the h-sum ascending from 0.0f, p < width = (start_pos + s) // ratio.
struct IndexerScoresLowering : OpConversionPattern<IndexerScoresOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(IndexerScoresOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (failed(requireStatic(op, op.getIq(), 1, "iq")) || failed(requireStatic(op, op.getIq(), 2, "iq")) ||
        failed(requireStatic(op, op.getKeys(), 1, "keys")) ||
        (op.getEntryKeys() && failed(requireStatic(op, op.getEntryKeys(), 1, "entry_keys"))))
      return failure();
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    auto iqType = cast<RankedTensorType>(op.getIq().getType());
    const int64_t IH = iqType.getDimSize(1), ihd = iqType.getDimSize(2);
    const int64_t ratio = static_cast<int64_t>(op.getRatio());
    const float weightScale = op.getWeightScale().convertToFloat();
    Value iq = adaptor.getIq(), weights = adaptor.getWeights(), keys = adaptor.getKeys();
    Value start = adaptor.getStartPos();
    Value s = cIndexOr(e, sizesOf(e, iq)[0]);
    Value n = e.indexToI64(cIndexOr(e, sizesOf(e, keys)[0]));
    Value neg = e.cmpi(P::slt, start, e.c64(0));
    reportIf(e, neg, RuntimeError::IndexerScoresNegativeStart);
    Value wRowsBad = e.cmpi(P::ne, cIndexOr(e, sizesOf(e, weights)[0]), s);
    reportIf(e, e.band(e.cmpi(P::sge, start, e.c64(0)), wRowsBad), RuntimeError::IndexerScoresWeightsRows);
    // start_pos + s must fit int64 (the kernel's error, after the weights' rows): the width is 0 past it.
    Value overflow = e.band(e.cmpi(P::eq, e.bor(neg, wRowsBad), e.cBool(false)),
                            endOverflows(e, start, e.indexToI64(s)));
    reportIf(e, overflow, RuntimeError::IndexerScoresEndOverflow);
    Value bad = e.bor(e.bor(neg, wRowsBad), overflow);
    Value width = e.sel(e.bor(neg, overflow), e.c64(0), floorDiv(e, e.add(start, e.indexToI64(s)), e.c64(ratio)));
    Value keysShort = e.cmpi(P::slt, n, width);
    reportIf(e, e.band(e.cmpi(P::eq, bad, e.cBool(false)), keysShort), RuntimeError::IndexerScoresKeysRows);
    bad = e.bor(bad, keysShort);
    // entry_keys (the quirk per token): at ratio 1 every row closes a group, so it is never read.
    Value entry = ratio >= 2 ? adaptor.getEntryKeys() : Value();
    if (adaptor.getEntryKeys()) {
      // Checked when a row reads it (the kernel's rule): start_pos > 0, ratio > 1, and s > 1 or a one-token step
      // closing no group; a prefill enters with an empty slot.
      Value entryShort = e.cmpi(P::slt, e.indexToI64(cIndexOr(e, sizesOf(e, adaptor.getEntryKeys())[0])), width);
      Value readsEntry = e.cBool(false);
      if (ratio > 1) {
        Value sI64 = e.indexToI64(s);
        Value open = e.cmpi(P::ne, arith::RemSIOp::create(e.b, e.loc, e.add(start, e.c64(1)), e.c64(ratio)), e.c64(0));
        readsEntry = e.band(e.cmpi(P::sgt, start, e.c64(0)), e.bor(e.cmpi(P::sgt, sI64, e.c64(1)), open));
      }
      entryShort = e.band(entryShort, readsEntry);
      reportIf(e, e.band(e.cmpi(P::eq, bad, e.cBool(false)), entryShort), RuntimeError::IndexerScoresEntryKeysRows);
      bad = e.bor(bad, entryShort);
    }
    Value ok = e.cmpi(P::eq, bad, e.cBool(false));
    Type bf16 = rewriter.getBF16Type();
    SmallVector<OpFoldResult> outSizes{s, e.i64ToIndex(width)};
    auto outType = tensorType(outSizes, bf16);
    Value out = guarded(
        e, ok, outType,
        [&](Emit g) -> Value {
          // w' [s, IH] in f32 (bf16-exact).
          SmallVector<OpFoldResult> wSizes{s, g.b.getIndexAttr(IH)};
          Value wScaled = generic(g, tensorType(wSizes, g.f32()), ValueRange{weights}, g.empty(wSizes, g.f32()),
                                  {mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, dimExprs(ctx, 2))}, parallel(2),
                                  [&](OpBuilder &b, Location loc, ValueRange args) {
                                    Emit t{b, loc};
                                    Value v = t.fmul(t.toF32(args[0]), t.cf(weightScale));
                                    linalg::YieldOp::create(b, loc, t.toF32(t.toBf16(v)));
                                  });
          Value sumsPadded = emitIndexerSums(g, iq, keys, wScaled, g.i64ToIndex(width), IH, ihd, entry, start, ratio);
          SmallVector<OpFoldResult> zeros{g.b.getIndexAttr(0), g.b.getIndexAttr(0)},
              ones{g.b.getIndexAttr(1), g.b.getIndexAttr(1)};
          Value sums = tensor::ExtractSliceOp::create(g.b, g.loc, tensorType(outSizes, g.f32()), sumsPadded, zeros,
                                                      outSizes, ones);
          return generic(g, outType, ValueRange{sums}, g.empty(outSizes, bf16),
                         {mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, dimExprs(ctx, 2))}, parallel(2),
                         [&](OpBuilder &b, Location loc, ValueRange args) {
                           Emit t{b, loc};
                           linalg::YieldOp::create(b, loc, t.toBf16(args[0]));
                         });
        },
        [&](Emit g) -> Value { return g.filled(outSizes, floatConst(g, bf16, 0.0)); });
    rewriter.replaceOp(op, e.castTo(out, op.getType()));
    return success();
  }
};

/// compress_visibility (section 6 step 5): score[t, p] = -inf for p >= compress_len[t] (elementwise; nothing is
/// read out of bounds even when a check fails).
struct CompressVisibilityLowering : OpConversionPattern<CompressVisibilityOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(CompressVisibilityOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    const int64_t ratio = static_cast<int64_t>(op.getRatio());
    Value scores = adaptor.getScores(), start = adaptor.getStartPos();
    (void)scoresChecks(e, scores, start, ratio,
                       {RuntimeError::CompressVisibilityNegativeStart, RuntimeError::CompressVisibilityEmptyStep},
                       RuntimeError::CompressVisibilityEndOverflow, RuntimeError::CompressVisibilityWidth);
    auto type = cast<RankedTensorType>(scores.getType());
    SmallVector<OpFoldResult> sizes = sizesOf(e, scores);
    Value out = generic(e, type, ValueRange{scores}, e.empty(sizes, type.getElementType()),
                        {mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, dimExprs(ctx, 2))}, parallel(2),
                        [&](OpBuilder &b, Location loc, ValueRange args) {
                          Emit t{b, loc};
                          Value tt = t.indexToI64(t.linalgIndex(0)), p = t.indexToI64(t.linalgIndex(1));
                          Value visible = t.cmpi(P::slt, p, compressLen(t, tt, start, ratio));
                          Value negInf = floatConst(t, type.getElementType(), -kInf);
                          linalg::YieldOp::create(b, loc, t.sel(visible, args[0], negInf));
                        });
    rewriter.replaceOp(op, e.castTo(out, op.getType()));
    return success();
  }
};

/// apply_candidates (section 6 step 6): score = -inf where the mask is false (scores unchanged when the shapes
/// differ, after the run-time check).
struct ApplyCandidatesLowering : OpConversionPattern<ApplyCandidatesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ApplyCandidatesOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    Value scores = adaptor.getScores(), mask = adaptor.getMask();
    auto type = cast<RankedTensorType>(scores.getType());
    SmallVector<OpFoldResult> sSizes = sizesOf(e, scores), mSizes = sizesOf(e, mask);
    Value same = e.band(e.cmpi(P::eq, cIndexOr(e, sSizes[0]), cIndexOr(e, mSizes[0])),
                        e.cmpi(P::eq, cIndexOr(e, sSizes[1]), cIndexOr(e, mSizes[1])));
    reportIf(e, e.cmpi(P::eq, same, e.cBool(false)), RuntimeError::ApplyCandidatesMaskShape);
    Value out = guarded(
        e, same, type,
        [&](Emit g) -> Value {
          SmallVector<AffineMap> maps(3, mapOf(ctx, 2, dimExprs(ctx, 2)));
          return generic(g, type, ValueRange{scores, g.castTo(mask, RankedTensorType::get(
                                                                           type.getShape(), g.b.getI1Type()))},
                         g.empty(sSizes, type.getElementType()), maps, parallel(2),
                         [&](OpBuilder &b, Location loc, ValueRange args) {
                           Emit t{b, loc};
                           Value negInf = floatConst(t, type.getElementType(), -kInf);
                           linalg::YieldOp::create(b, loc, t.sel(args[1], args[0], negInf));
                         });
        },
        [&](Emit) -> Value { return scores; });
    rewriter.replaceOp(op, e.castTo(out, op.getType()));
    return success();
  }
};

/// select_candidate_blocks (section 7): block scores [s, n_blocks] in f32 (max over the block's positions in order
/// as the kernel takes it: the first NaN wins, else m = m < v ? v : m from -inf), the block (compress_len - 1) //
/// block_size pinned to +inf when compress_len > 0, the torch_cpu top-k set of min(topk_blocks, n_blocks) blocks
/// (dsa_cpu_topk_set), picks of value -inf (or NaN) dropped, the mask true on the kept blocks' positions. A chunk
/// (s > 1 tokens at start_pos > 0) ranks row t as its decode step would: over its width compress_len[t].
struct SelectCandidateBlocksLowering : OpConversionPattern<SelectCandidateBlocksOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(SelectCandidateBlocksOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (failed(requireTorchCpu(op, op.getTieOrderAttr())))
      return failure();
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    const int64_t ratio = static_cast<int64_t>(op.getRatio());
    const int64_t bs = static_cast<int64_t>(op.getBlockSize());
    const int64_t topkBlocks = static_cast<int64_t>(op.getTopkBlocks());
    Value scores = adaptor.getScores(), start = adaptor.getStartPos();
    Value ok = scoresChecks(e, scores, start, ratio,
                            {RuntimeError::SelectCandidateBlocksNegativeStart,
                             RuntimeError::SelectCandidateBlocksEmptyStep},
                            RuntimeError::SelectCandidateBlocksEndOverflow, RuntimeError::SelectCandidateBlocksWidth);
    SmallVector<OpFoldResult> sizes = sizesOf(e, scores);
    Value sIdx = cIndexOr(e, sizes[0]), widthIdx = cIndexOr(e, sizes[1]);
    Type i1 = rewriter.getI1Type();
    auto maskType = tensorType(sizes, i1);
    // The mask of `rows` [R, n] (ranked whole: n blocks' worth), row tt's compress_len lenOf(tt).
    auto select = [&](Emit g, Value rows, Value n, function_ref<Value(Emit, Value)> lenOf) -> Value {
      SmallVector<OpFoldResult> rSizes = sizesOf(g, rows);
      Value rowCount = cIndexOr(g, rSizes[0]);
      Value nBlocks = arith::CeilDivUIOp::create(g.b, g.loc, n, g.idx(bs));
      Value k = g.minsi(nBlocks, g.idx(topkBlocks));
      SmallVector<OpFoldResult> bSizes{rowCount, nBlocks};
      Value blockScore = generic(
          g, tensorType(bSizes, g.f32()), {}, g.empty(bSizes, g.f32()), {mapOf(ctx, 2, dimExprs(ctx, 2))},
          parallel(2), [&](OpBuilder &b, Location loc, ValueRange) {
            Emit t{b, loc};
            Value tt = t.linalgIndex(0), blk = t.linalgIndex(1);
            Value lo = t.mul(blk, t.idx(bs));
            Value hi = t.minsi(n, t.add(lo, t.idx(bs)));
            SmallVector<Value> mf = forLoop(
                t, lo, hi, {t.cf(-kInf), t.cBool(false)}, [&](Emit u, Value p, ValueRange it) -> SmallVector<Value> {
                  Value v = u.toF32(u.extract(rows, {tt, p}));
                  Value isNan = u.cmpf(F::UNO, v, v);
                  Value larger = u.sel(u.cmpf(F::OLT, it[0], v), v, it[0]);
                  Value m = u.sel(it[1], it[0], u.sel(isNan, v, larger));
                  return {m, u.bor(it[1], isNan)};
                });
            Value len = lenOf(t, t.indexToI64(tt));
            Value pinned = floorDiv(t, t.sub(len, t.c64(1)), t.c64(bs));
            Value pin = t.band(t.cmpi(P::sgt, len, t.c64(0)), t.cmpi(P::eq, t.indexToI64(blk), pinned));
            linalg::YieldOp::create(b, loc, t.sel(pin, t.cf(kInf), mf[0]));
          });
      Value picks = emitTopkSet(g, blockScore, k);
      return generic(g, tensorType(rSizes, i1), {}, g.empty(rSizes, i1), {mapOf(ctx, 2, dimExprs(ctx, 2))},
                     parallel(2), [&](OpBuilder &b, Location loc, ValueRange) {
                       Emit t{b, loc};
                       Value tt = t.linalgIndex(0), p = t.linalgIndex(1);
                       Value blk = arith::DivUIOp::create(b, loc, p, t.idx(bs));
                       Value blk64 = t.indexToI64(blk);
                       Value picked = forLoop(t, t.idx(0), k, {t.cBool(false)},
                                              [&](Emit u, Value j, ValueRange it) -> SmallVector<Value> {
                                                Value pj = u.extract(picks, {tt, j});
                                                return {u.bor(it[0], u.cmpi(P::eq, pj, blk64))};
                                              })[0];
                       Value reachable = t.cmpf(F::OGT, t.extract(blockScore, {tt, blk}), t.cf(-kInf));
                       linalg::YieldOp::create(b, loc, t.band(picked, reachable));
                     });
    };
    Value chunk = e.band(e.cmpi(P::sgt, start, e.c64(0)), e.cmpi(P::sgt, sIdx, e.idx(1)));
    Value out = guarded(
        e, ok, maskType,
        [&](Emit g) -> Value {
          return guarded(
              g, chunk, maskType,
              [&](Emit c) -> Value {
                // A chunk at start_pos > 0: row t as its decode step, over its width compress_len[t] (the rest of
                // the row false).
                return forEachChunkRow(
                    c, scores, sIdx, start, ratio, c.filled(sizes, c.cBool(false)),
                    [&](Emit u, Value row, Value n, Value len) {
                      return select(u, row, n, [&](Emit, Value) { return len; });
                    },
                    [](Emit, Value n) { return n; });
              },
              [&](Emit p) -> Value {
                return select(p, scores, widthIdx, [&](Emit t, Value tt) { return compressLen(t, tt, start, ratio); });
              });
        },
        [&](Emit g) -> Value { return g.filled(sizes, g.cBool(false)); });
    rewriter.replaceOp(op, e.castTo(out, op.getType()));
    return success();
  }
};

/// indexer_topk (section 6 step 7): k = min(index_topk, width); the torch_cpu top-k set of each row
/// (dsa_cpu_topk_set, ascending), p -> p + offset when p < compress_len[t] else -1; offset = s in prefill,
/// window_size in decode. A chunk (s > 1 tokens at start_pos > 0) ranks row t as its decode step would (width
/// compress_len[t], k = min(index_topk, compress_len[t]), -1 past it), offset window_size + s. i32 [s, k] (zeros
/// when a check fails).
struct IndexerTopkLowering : OpConversionPattern<IndexerTopkOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(IndexerTopkOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    if (failed(requireTorchCpu(op, op.getTieOrderAttr())))
      return failure();
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    const int64_t ratio = static_cast<int64_t>(op.getRatio());
    const int64_t indexTopk = static_cast<int64_t>(op.getIndexTopk());
    const int64_t window = static_cast<int64_t>(op.getWindowSize());
    Value scores = adaptor.getScores(), start = adaptor.getStartPos();
    Value ok = scoresChecks(e, scores, start, ratio,
                            {RuntimeError::IndexerTopkNegativeStart, RuntimeError::IndexerTopkEmptyStep},
                            RuntimeError::IndexerTopkEndOverflow, RuntimeError::IndexerTopkWidth);
    SmallVector<OpFoldResult> sizes = sizesOf(e, scores);
    Value sIdx = cIndexOr(e, sizes[0]), widthIdx = cIndexOr(e, sizes[1]);
    Value k = e.minsi(widthIdx, e.idx(indexTopk));
    SmallVector<OpFoldResult> outSizes{sizes[0], k};
    auto outType = tensorType(outSizes, e.i32());
    // The indices of `rows` [R, n] (top-k of min(index_topk, n) over the whole width n), row tt's compress_len
    // lenOf(tt), the window rows first (offset).
    auto rank = [&](Emit g, Value rows, Value n, Value offset, function_ref<Value(Emit, Value)> lenOf) -> Value {
      Value kr = g.minsi(n, g.idx(indexTopk));
      SmallVector<OpFoldResult> rSizes{sizesOf(g, rows)[0], kr};
      auto rType = tensorType(rSizes, g.i32());
      Value picks = emitTopkSet(g, toF32Tensor(g, rows), kr);
      return generic(g, rType, ValueRange{picks}, g.empty(rSizes, g.i32()),
                     {mapOf(ctx, 2, dimExprs(ctx, 2)), mapOf(ctx, 2, dimExprs(ctx, 2))}, parallel(2),
                     [&](OpBuilder &b, Location loc, ValueRange args) {
                       Emit t{b, loc};
                       Value len = lenOf(t, t.indexToI64(t.linalgIndex(0)));
                       Value p = args[0];
                       Value mapped = t.sel(t.cmpi(P::slt, p, len), t.add(p, offset), t.c64(-1));
                       linalg::YieldOp::create(b, loc, arith::TruncIOp::create(b, loc, t.i32(), mapped).getResult());
                     });
    };
    Value chunk = e.band(e.cmpi(P::sgt, start, e.c64(0)), e.cmpi(P::sgt, sIdx, e.idx(1)));
    Value out = guarded(
        e, ok, outType,
        [&](Emit g) -> Value {
          Value s = g.indexToI64(sIdx);
          return guarded(
              g, chunk, outType,
              [&](Emit c) -> Value {
                // A chunk at start_pos > 0: row t as its decode step (its width compress_len[t], its k), offset
                // window_size + s (the ring, then the chunk's rows), -1 past its k.
                Value offset = c.add(c.c64(window), s);
                return forEachChunkRow(
                    c, scores, sIdx, start, ratio, c.filled(outSizes, c.c32(-1)),
                    [&](Emit u, Value row, Value n, Value len) {
                      return rank(u, row, n, offset, [&](Emit, Value) { return len; });
                    },
                    [&](Emit u, Value n) { return u.minsi(n, u.idx(indexTopk)); });
              },
              [&](Emit p) -> Value {
                // Prefill (offset s, the step's own rows) and decode (offset window_size, the ring).
                Value offset = p.sel(p.cmpi(P::eq, start, p.c64(0)), s, p.c64(window));
                return rank(p, scores, widthIdx, offset,
                            [&](Emit t, Value tt) { return compressLen(t, tt, start, ratio); });
              });
        },
        [&](Emit g) -> Value { return g.filled(outSizes, g.c32(0)); });
    rewriter.replaceOp(op, e.castTo(out, op.getType()));
    return success();
  }
};

/// arith.extf / arith.truncf on ranked tensors (emitted by dsa-decompose-attention around the ratio >= 2
/// compressor) as elementwise linalg.generic ops; truncf to bf16 is RNE (expanded inline by the pipeline).
template <typename OpTy> struct ElementwiseCastLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpTy::Adaptor;
  LogicalResult matchAndRewrite(OpTy op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    auto inType = dyn_cast<RankedTensorType>(op.getIn().getType());
    auto outType = dyn_cast<RankedTensorType>(op.getType());
    if (!inType || !outType)
      return failure();
    Emit e{rewriter, op.getLoc()};
    MLIRContext *ctx = rewriter.getContext();
    Value in = adaptor.getIn();
    unsigned rank = inType.getRank();
    SmallVector<OpFoldResult> sizes = sizesOf(e, in);
    Type elem = outType.getElementType();
    Value out = generic(e, tensorType(sizes, elem), ValueRange{in}, e.empty(sizes, elem),
                        {mapOf(ctx, rank, dimExprs(ctx, rank)), mapOf(ctx, rank, dimExprs(ctx, rank))},
                        parallel(rank), [&](OpBuilder &b, Location loc, ValueRange args) {
                          Value v = OpTy::create(b, loc, elem, args[0]);
                          linalg::YieldOp::create(b, loc, v);
                        });
    rewriter.replaceOp(op, e.castTo(out, outType));
    return success();
  }
};

} // namespace

void populateCompressedToCPUPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<CompressPoolLowering, BlockRoundTripLowering<ActQuantFp8Op, RoundTrip::ActQuantFp8>,
               BlockRoundTripLowering<Fp4QuantE8M0Op, RoundTrip::Fp4E8M0>,
               BlockRoundTripLowering<Fp4QuantE4M3Op, RoundTrip::Fp4E4M3>,
               CacheWriteLowering, IndexerScoresLowering, CompressVisibilityLowering, ApplyCandidatesLowering,
               SelectCandidateBlocksLowering, IndexerTopkLowering, ElementwiseCastLowering<arith::ExtFOp>,
               ElementwiseCastLowering<arith::TruncFOp>>(ctx);
}

bool isCompressedPrimitive(Operation *op) {
  return isa<CompressPoolOp, Fp4QuantE8M0Op, Fp4QuantE4M3Op, CacheWriteOp, IndexerScoresOp, CompressVisibilityOp,
             SelectCandidateBlocksOp, ApplyCandidatesOp, IndexerTopkOp>(op);
}

bool compressedNeedsFail(Operation *op) { return isCompressedPrimitive(op) && !isa<Fp4QuantE8M0Op, Fp4QuantE4M3Op>(op); }

bool compressedNeedsTopk(Operation *op) { return isa<SelectCandidateBlocksOp, IndexerTopkOp>(op); }

} // namespace mlir::dsa::cpu_lowering
