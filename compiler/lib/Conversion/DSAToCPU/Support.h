//===- Support.h - emission helpers shared by the dsa-to-cpu patterns (private) ----------------===//
//
// Not installed: used by DSAToCPU.cpp (window-only primitives) and CompressedToCPU.cpp (compressed-attention
// primitives). Emit wraps a builder and a location with shorthands for scalar arithmetic; the free functions build
// linalg.generic ops, run-time checks (dsa_cpu_fail), guarded computations, the bit-exact numerics (pow2_ceil,
// e4m3, clamp) and the kernels' dotF32. See DSAToCPU.cpp's header for the bit-exactness rules.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_LIB_CONVERSION_DSATOCPU_SUPPORT_H
#define DSA_LIB_CONVERSION_DSATOCPU_SUPPORT_H

#include "dsa/ABI/RuntimeErrors.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::dsa::cpu_lowering {

using ::dsa::abi::RuntimeError;
using utils::IteratorType;

/// Lanes of the kernels' dotF32.
constexpr int64_t kLanes = 8;

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
  /// bf16(v) for an f32 v, or each lane of a vector of f32 (RNE).
  Value toBf16(Value v) const {
    Type bf16 = b.getBF16Type();
    if (auto vt = dyn_cast<VectorType>(v.getType()))
      return arith::TruncFOp::create(b, loc, VectorType::get(vt.getShape(), bf16), v);
    return arith::TruncFOp::create(b, loc, bf16, v);
  }
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

/// The affine dim expression d<i>.
AffineExpr dimExpr(MLIRContext *ctx, unsigned i);
/// The identity exprs d<first> .. d<first+n-1>.
SmallVector<AffineExpr> dimExprs(MLIRContext *ctx, unsigned n, unsigned first = 0);
/// The map (d0 .. d<numDims-1>) -> (results).
AffineMap mapOf(MLIRContext *ctx, unsigned numDims, ArrayRef<AffineExpr> results);
/// n parallel iterators.
SmallVector<IteratorType> parallel(unsigned n);

using BodyFn = function_ref<void(OpBuilder &, Location, ValueRange)>;
/// A linalg.generic with one result.
Value generic(Emit e, Type resultType, ValueRange ins, Value init, ArrayRef<AffineMap> maps,
              ArrayRef<IteratorType> iterators, BodyFn body);
/// Calls the host's dsa_cpu_fail(code) when `failed` (i1) holds.
void reportIf(Emit e, Value failed, RuntimeError code);
/// scf.if ok { compute() } else { fallback() } yielding one tensor of `type` (each branch's value is cast to it).
Value guarded(Emit e, Value ok, Type type, function_ref<Value(Emit)> compute, function_ref<Value(Emit)> fallback);
/// The sizes of `v`'s dimensions (static ones as attributes).
SmallVector<OpFoldResult> sizesOf(Emit e, Value v);
/// The ranked tensor type of `sizes` (dynamic where a size is a Value).
RankedTensorType tensorType(ArrayRef<OpFoldResult> sizes, Type elem);

/// pow2_ceil on the f32 bits (Numerics/E8M0.h).
Value pow2Ceil(Emit e, Value v);
/// roundE4M3 on the f32 bits (Numerics/E4M3.h): RNE onto the e4m3fn grid, saturating to +-448, NaN kept; an f32.
Value roundE4M3(Emit e, Value v);
/// clamp(v, -lim, lim) as torch.clamp (NaN stays NaN).
Value clampSym(Emit e, Value v, float lim);
/// `src[lead..., k .. k+lanes-1]` (last dimension) as a vector<lanes x f32> (bf16 widened exactly; in bounds).
Value readLanes(Emit e, Value src, ValueRange lead, Value k, int64_t lanes = kLanes);

/// The transpose of `rows` (4 or 8 vector<8xT>, rows[j][l]; any element type): 8 vectors, result[l][j] =
/// rows[j][l], each as wide as there are rows. Three stages of two-input shuffles for 8 rows (pairs of rows
/// interleaved, pairs of pairs, then 128-bit halves of f32: 24 shuffles instead of 64 element moves), two for 4 rows
/// (then each half is one result's 4 values: 16 shuffles instead of 32 moves); the x86 backend selects unpck /
/// shufps / perm2f128 (punpck for 16-bit elements). Used by the phase kernel's packing and indexer_scores' kT.
SmallVector<Value> transposeRows(Emit e, ArrayRef<Value> rows);
/// The kernels' dotF32 of a[aLead..., 0:K] and b[bLead..., 0:K] (last dims, K static), in a generic's body.
Value emitDotF32(Emit e, Value a, ValueRange aLead, Value b, ValueRange bLead, int64_t K);

/// Rows of one side of a dot block: row i is tensor[rows[i]..., k0 + k] for k in [0, K) (k0 null = 0). The tensor
/// is bf16 or f32; its last dimension holds the k values.
struct DotRows {
  Value tensor;
  SmallVector<SmallVector<Value>> rows;
  Value k0;
};
/// The kernels' dotF32 of every pair (a row i, b row j), K static, as result[i * b.rows.size() + j]: one k-loop with
/// one vector<8xf32> accumulator per pair, each row loaded once per step. Every dot keeps dotF32's order exactly
/// (its own 8 lanes, the fixed lane combination, the tail added last), so a block of dots gives the bits of the
/// dots one at a time. Keep a.rows.size() * b.rows.size() <= ~24 (one register per accumulator).
/// `fused`: the k-loop's acc + a * b is one fused multiply-add (vector.fma). It gives the same bits only when every
/// product a * b is exact in f32; the caller must have established that (emitGroupedDots' run-time check: bf16
/// operands, no product overflowing or below f32's normal range).
SmallVector<Value> emitDotBlock(Emit e, const DotRows &a, const DotRows &b, int64_t K, bool fused = false);

/// Whether every product of an element of x [Mx, Cx] and one of y [My, Cy] (bf16, or f32 holding bf16 values) is
/// exact in f32, so that emitDotBlock's fused k-loop gives the bits of its unfused one: both operands bf16 values
/// (an f32 element's low 16 bits clear), max|x| max|y| finite, min|x| min|y| over nonzero elements >= 2^-126 (a
/// NaN or an infinity anywhere fails). One pass over each operand (i1 result).
Value bf16ProductsExact(Emit e, Value x, int64_t Cx, Value y, int64_t Cy);

/// The dots of x rows `a` and the pairs of w rows `pairs` of a paired panel `wide` [pairs, 2K] (f32; pair p's row
/// holds w rows 2p and 2p + 1: chunk s < K/8 of row 2p + h at columns [16s + 8h, 16s + 8h + 8), their K % 8 tails
/// T = K % 8 wide at [2 K8 + h T, 2 K8 + h T + T)), as result[(i * pairs.size() + j) * 2 + h] = dotF32(a_i, w row
/// 2 pairs[j] + h). One vector<16xf32> accumulator per (row, pair): x's 8 lanes twice against the pair's 16, so
/// each half is one dot's 8 lanes, in dotF32's order (its lanes, the lane combination, the tail last) exactly as
/// emitDotBlock. Fused only (vector.fma in the 8-lane steps; the tail unfused, as emitDotBlock's): the caller must
/// have established that every product is exact in f32 (emitGroupedDots' run-time check); its unfused rows take
/// the unpaired blocks.
SmallVector<Value> emitPairedDotBlock(Emit e, const DotRows &a, Value wide, ArrayRef<Value> pairs, int64_t K);

/// Register and cache blocking of emitGroupedDots.
struct GemmTiling {
  int64_t blockRows = 4;        // rows of x (tokens) per block
  int64_t blockCols = 4;        // rows of w (outputs) per block
  int64_t rowCols = 0;          // rows of w per block for the leftover single x rows (decode: the only path);
                                // 0: 4 when a w row has <= 4 KiB, else 8
  int64_t panelBytes = 256 << 10; // bytes of w per panel (the unit of reuse from L2, and of OpenMP work)
  int64_t streamPanelBytes = 2 << 20; // bytes of w per panel when x has fewer than blockRows rows (decode)
  bool widenPanels = true; // bf16 w: each panel widened to f32 once before its blocks of rows (when x has a full
                           // block of rows), so the k-loop reads f32 rows and widens nothing
  int64_t widePanelBytes = 512 << 10; // bytes of the widened f32 panel (instead of panelBytes)
  // From 2 rows of x up to widenMinRows - 1 (a run-time count; a few sequences of a batched decode step), the bf16
  // panel is not widened: bands of blockRows rows (the last one's rows past M - 1 recompute row M - 1) read the bf16
  // w rows directly, widening each load, so every w row is read once from memory and the rest of the bands find
  // the panel in cache, with no pass that writes an f32 copy. 0: widen from one band of rows (the older rule).
  int64_t widenMinRows = 8;
  bool pairColumns = false; // the widened panel in pairs of w rows and the blocks' accumulators 16 lanes wide, two
                            // dots each (emitPairedDotBlock; AVX-512: one zmm FMA per two dots' 8 lanes)
  // The phase kernel (emitGroupedDots, "Phase kernel"): with at least phaseMinRows rows of x (0: never), every
  // panel is packed phase-major and computed by an outer-product register tile of phaseRows x rows times
  // phaseVectors x phaseLanes outputs (broadcast x, FMA into the tile), each of dotF32's 8 lanes as its own pass.
  int64_t phaseMinRows = 64;
  int64_t phaseRows = 6;    // AVX2: 6 x 2 accumulators + 2 w vectors + 1 broadcast of 16 registers
  int64_t phaseVectors = 2; // vectors of w per k-step
  int64_t phaseLanes = 8;   // lanes per vector (16 with AVX-512)
  int64_t phasePanelBytes = 128 << 10; // f32 bytes of one phase of a packed panel (its 8 phases: 8 x this)
  int64_t phaseMinPanels = 8; // panels narrowed (to a multiple of NR, down to a quarter of the phasePanelBytes
                              // width) until the G products have at least this many in all: the units of OpenMP
                              // work (wq_a's 1280 outputs in 7 panels of 192 left one of two threads idle for a
                              // seventh of the product)
};
/// G independent blocked products: out[m, g*N + n] = finish(dotF32(x[m, g*K .. g*K+K), w[g*N + n, 0:K))) for
/// m < rows of x, g < G, n < N. x [M, G*K] and w [G*N, K] are bf16 or f32 (f32 x avoids widening x in every
/// block), out [M, G*N]; returns the updated out. An scf.forall over (g, panel of w rows) (parallel=true turns it into
/// OpenMP); inside, blocks of tiling.blockRows x tiling.blockCols dots (emitDotBlock), leftover rows as 1 x
/// tiling.rowCols blocks, leftover columns one at a time; from tiling.phaseMinRows rows of x (a run-time count) the
/// phase kernel instead (Support.cpp, "Phase kernel"). Bit-identical to one dotF32 per output. `finish` is
/// element-wise and takes an f32 or a vector of f32 (the phase kernel rounds a vector of outputs at once).
Value emitGroupedDots(Emit e, Value x, Value w, Value out, int64_t G, int64_t N, int64_t K, const GemmTiling &tiling,
                      function_ref<Value(Emit, Value)> finish);
/// The enclosing generic's loop indices d0 .. d(n-1).
SmallVector<Value> loopIndices(Emit e, unsigned n);

/// Requires `v`'s dimension `dim` to be static; emits the diagnostic otherwise.
LogicalResult requireStatic(Operation *op, Value v, int64_t dim, StringRef operand);
/// `x` [d0, ..., dn-1, K] as rows [rows, K]: leading dims collapsed (rank > 2), a row added (rank 1), rank 2 as is.
Value collapseRows(Emit e, Value x);
/// `y` [rows, N] back to `like`'s leading dims followed by N (the inverse of collapseRows), cast to `resultType`.
Value expandRows(Emit e, Value y, Value like, RankedTensorType resultType);

/// The patterns of CompressedToCPU.cpp (compressed-attention primitives, elementwise arith on tensors).
void populateCompressedToCPUPatterns(RewritePatternSet &patterns);
/// Whether `op` is one of the ops CompressedToCPU.cpp lowers, and whether it needs dsa_cpu_fail / the top-k
/// runtime function.
bool isCompressedPrimitive(Operation *op);
bool compressedNeedsFail(Operation *op);
bool compressedNeedsTopk(Operation *op);

} // namespace mlir::dsa::cpu_lowering

#endif
