//===- DSAToGPU.cpp - dsa -> host code launching the gpu kernels of Kernels.mlir -----------------------------===//
//
// `dsa-to-gpu`: one conversion pattern per op family (populateDSAToGPUPatterns, dsa/Conversion/DSAToGPU.h). The
// patterns work ON TENSORS and leave tensors: each op becomes
//
//   run-time checks      scf.if (!cond) { func.call @dsa_cpu_fail(code) }   (codes: dsa/ABI/RuntimeErrors.h)
//   its operands' buffers bufferization.to_buffer %t read_only                 (identity layout)
//   its results' buffers memref.alloc                                          (device memory, see below)
//   its kernels          func.call @__dsa_gpu_launch_<kernel>(grid x, y, z, kernel arguments...)
//   its results          bufferization.to_tensor %buffer restrict writable
//
// so upstream one-shot bufferization turns the functions into host code on memrefs (function boundaries included:
// tensor arguments/results become identity-layout memrefs, the device buffers the caller passes and gets back;
// tensor.cast / expand_shape / collapse_shape / dim, leading-row extract_slice views and arith.select of two
// tensors are bufferized upstream, as on the CPU path) and upstream ownership-based deallocation frees every buffer
// that is not returned (--dsa-gpu-pipeline, Pipeline.cpp). A kernel launch is first a call of a private
// declaration because gpu.launch_func has no memory-effect interface, which ownership-based deallocation refuses;
// a call is handled by it (it may read and write its memref operands, takes no ownership). After deallocation
// (AfterBufferization.cpp):
//   dsa-gpu-device-buffers     memref.alloc / dealloc / copy -> gpu.alloc / dealloc / memcpy (every buffer of the
//                              host code is device memory at that point);
//   dsa-gpu-launch-kernels     each launch call -> gpu.launch_func of the kernel cloned from Kernels.mlir (skipped at
//                              run time when the grid is empty), each host top-k call -> its host round trip.
//
// Per op (sizes and launch shapes: dsa/ABI/GpuKernels.h):
//   dsa.positions       -> @dsa_positions
//   dsa.linear (bf16)   -> @dsa_gemm_bf16 (one batch);  dsa.linear (f32) -> @dsa_linear_f32
//   dsa.rms_norm (bf16) -> @dsa_rms_norm_bf16
//   dsa.apply_rope      -> @dsa_apply_rope; the frequency table is computed here at compile time by
//                          dsa::ropeFrequencies (the reference's own table) and copied to the device once per
//                          function
//   dsa.act_quant_fp8   -> @dsa_act_quant_fp8;  dsa.fp4_quant_* -> @dsa_fp4_quant (scale kind as an argument)
//   dsa.ring_update     -> @dsa_ring_update (a new ring; the old one is not modified)
//   dsa.window_kv       -> no kernel: arith.select of the step's kv rows (start_pos == 0) and the ring
//   dsa.window_indices  -> @dsa_window_indices
//   dsa.sparse_attn     -> @dsa_sparse_attn (f32 scratch)
//   dsa.grouped_output  -> @dsa_gemm_bf16 (one batch per group)
//   dsa.probe           -> dropped (compiled backends do not record probes)
//   dsa.compress_pool   -> @dsa_compress_state (new states), then @dsa_compress_pool over the completed groups
//   dsa.cache_write     -> @dsa_cache_write (a new cache)
//   dsa.indexer_scores, dsa.compress_visibility, dsa.apply_candidates -> one kernel each
//   dsa.select_candidate_blocks -> @dsa_candidate_block_scores, host top-k, @dsa_candidate_mask
//   dsa.indexer_topk    -> @dsa_extf_bf16_f32, host top-k, @dsa_topk_map
//     (host top-k: func.call @__dsa_gpu_host_topk(values, k, picks) -> status on device buffers; dsa-gpu-launch-kernels
//     makes it the download, the CPU runtime's dsa_cpu_topk_set (torch's CPU tie order), the upload; only
//     tie_order = torch_cpu is accepted)
//   arith.extf / truncf on tensors -> @dsa_extf_bf16_f32 / @dsa_truncf_f32_bf16; tensor.concat of two tensors ->
//   @dsa_concat_rows_bf16 / @dsa_concat_cols_i32; tensor.extract_slice of leading rows -> checked and clamped to the
//   source's rows (then a view, bufferized upstream).
//
// Facts the verifiers cannot check for dynamic shapes (matching row counts, start_pos >= 0, one-token decode
// steps, scores widths, cache capacity, the host top-k's status) are run-time checks: a call of
// `dsa_cpu_fail(code)` when the check fails, with the codes (and so the messages) of
// core/include/dsa/ABI/RuntimeErrors.h that the CPU backend uses; a GPU step library ends the call there
// (compiler/lib/Backend/GPU, runtime/cuda MgpuRuntime).
//
// Not lowered (a diagnostic names the op, before anything is rewritten): rms_norm and fp4 round trips of an f32 x,
// dsa.attention (run dsa-decompose-attention first), other slices / concats / elementwise selects, control flow and
// calls on tensors.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "Symbols.h"

#include "dsa/ABI/RuntimeErrors.h"
#include "dsa/ABI/RuntimeFunctions.h"
#include "dsa/ABI/GpuKernels.h"
#include "dsa/Conversion/DSAToGPU.h"
#include "dsa/Conversion/DSAToGPU/Passes.h"
#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Dialect/DSA/IR/RopeParams.h"
#include "dsa/Core/Rope.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/DialectConversion.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>
#include <string>

namespace mlir::dsa {
#define GEN_PASS_DEF_CONVERTDSATOGPU
#include "dsa/Conversion/DSAToGPU/Passes.h.inc"

namespace {

using Err = ::dsa::abi::RuntimeError;
using Kernel = ::dsa::abi::GpuKernel;

constexpr llvm::StringLiteral kRopePrefix = "__dsa_rope_freqs";

MemRefType memrefFor(Type t) {
  auto rt = cast<RankedTensorType>(t);
  return MemRefType::get(rt.getShape(), rt.getElementType());
}

bool hasTensor(TypeRange types) {
  return llvm::any_of(types, [](Type t) { return isa<TensorType>(t); });
}

/// A run-time check: calls `dsa_cpu_fail(code)` (RuntimeErrors.h) when the i1 `cond` does not hold.
void emitCheck(OpBuilder &b, Location loc, Value cond, Err code) {
  if (std::optional<int64_t> c = getConstantIntValue(cond); c && *c != 0)
    return;
  Value failed = arith::XOrIOp::create(b, loc, cond, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  auto ifOp = scf::IfOp::create(b, loc, failed, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value c = arith::ConstantIntOp::create(b, loc, b.getI32Type(), static_cast<int32_t>(code));
  func::CallOp::create(b, loc, FlatSymbolRefAttr::get(b.getContext(), ::dsa::abi::kFailSymbol), TypeRange{},
                       ValueRange{c});
}

/// The codes of one op's step checks (compress_detail::checkStep): start_pos >= 0, s >= 1, one token when
/// start_pos > 0.
struct StepCodes {
  Err negativeStart, emptyStep, multiTokenDecode;
};

/// The step checks of the compressed kernels (compress_detail::checkStep): start_pos >= 0, s >= 1, one token
/// when start_pos > 0.
void stepChecks(OpBuilder &b, Location loc, Value start, Value s, StepCodes codes) {
  Value zero64 = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
  emitCheck(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, start, zero64), codes.negativeStart);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  emitCheck(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, s, zero), codes.emptyStep);
  Value prefill = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, start, zero64);
  Value one = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, s, arith::ConstantIndexOp::create(b, loc, 1));
  emitCheck(b, loc, arith::OrIOp::create(b, loc, prefill, one), codes.multiTokenDecode);
}

/// The RoPE frequency table of `rope` (the reference's ropeFrequencies) as a dense f32 constant; null when empty.
DenseElementsAttr ropeTableData(MLIRContext *ctx, RopeAttr rope) {
  std::vector<float> freqs = ::dsa::ropeFrequencies(mlir::dsa::ropeParams(rope));
  if (freqs.empty())
    return {};
  auto type = RankedTensorType::get({static_cast<int64_t>(freqs.size())}, Float32Type::get(ctx));
  return DenseElementsAttr::get(type, ArrayRef<float>(freqs));
}

/// The private constant global holding `data` (one per distinct table, created by the pass before the patterns
/// run).
memref::GlobalOp ropeGlobal(ModuleOp module, DenseElementsAttr data) {
  for (auto g : module.getOps<memref::GlobalOp>())
    if (g.getSymName().starts_with(kRopePrefix) && g.getInitialValueAttr() == data)
      return g;
  return {};
}

} // namespace

namespace {

/// Emits the lowering of one op at the rewriter's insertion point. `lookup(v)` is the converted value of an operand
/// of the op: for a tensor, its buffer (bufferization.to_buffer, identity layout, read only); `setResult` records a
/// result's new buffer, handed back as a tensor (bufferization.to_tensor restrict writable: a fresh allocation that
/// nothing else aliases).
class OpLowering {
public:
  OpLowering(ConversionPatternRewriter &b, Operation *op, ValueRange operands, DSAToGPUState &state)
      : b(b), loc(op->getLoc()), state(state), root(op),
        module(op->getParentOfType<ModuleOp>()), func(op->getParentOfType<func::FuncOp>()) {
    mapping.map(op->getOperands(), operands);
  }

  /// The op's new results (after a successful lower*).
  SmallVector<Value> results() const {
    SmallVector<Value> r;
    for (Value v : root->getResults())
      r.push_back(resultValues.lookup(v));
    return r;
  }

  LogicalResult lowerLinear(LinearOp op);
  LogicalResult lowerRmsNorm(RmsNormOp op);
  LogicalResult lowerPositions(PositionsOp op);
  LogicalResult lowerApplyRope(ApplyRopeOp op);
  LogicalResult lowerActQuant(ActQuantFp8Op op);
  LogicalResult lowerRingUpdate(RingUpdateOp op);
  LogicalResult lowerWindowKv(WindowKvOp op);
  LogicalResult lowerWindowIndices(WindowIndicesOp op);
  LogicalResult lowerSparseAttn(SparseAttnOp op);
  LogicalResult lowerGroupedOutput(GroupedOutputOp op);
  LogicalResult lowerCompressPool(CompressPoolOp op);
  LogicalResult lowerFp4QuantE8M0(Fp4QuantE8M0Op op) {
    return lowerFp4Quant(op, op.getX(), op.getResult(), op.getBlockSizeAttr().getInt(), /*e4m3Scale=*/false);
  }
  LogicalResult lowerFp4QuantE4M3(Fp4QuantE4M3Op op) {
    return lowerFp4Quant(op, op.getX(), op.getResult(), op.getBlockSizeAttr().getInt(), /*e4m3Scale=*/true);
  }
  LogicalResult lowerCacheWrite(CacheWriteOp op);
  LogicalResult lowerIndexerScores(IndexerScoresOp op);
  LogicalResult lowerCompressVisibility(CompressVisibilityOp op);
  LogicalResult lowerApplyCandidates(ApplyCandidatesOp op);
  LogicalResult lowerSelectCandidateBlocks(SelectCandidateBlocksOp op);
  LogicalResult lowerIndexerTopk(IndexerTopkOp op);
  LogicalResult lowerExtF(arith::ExtFOp op) { return lowerElementwiseCast(op); }
  LogicalResult lowerTruncF(arith::TruncFOp op) { return lowerElementwiseCast(op); }
  LogicalResult lowerExtractSlice(tensor::ExtractSliceOp op);
  LogicalResult lowerConcat(tensor::ConcatOp op);

private:
  // ---- helpers -------------------------------------------------------------------------------------------------
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value i32c(int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v); }
  Value i64c(int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); }
  Value f32c(float v) { return arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(v)); }
  Value mul(Value a, Value c) { return arith::MulIOp::create(b, loc, a, c); }
  Value ceilDiv(Value a, int64_t d) { return arith::CeilDivUIOp::create(b, loc, a, idx(d)); }
  Value divu(Value a, Value c) { return arith::DivUIOp::create(b, loc, a, c); }
  Value toI64(Value index) { return arith::IndexCastOp::create(b, loc, b.getI64Type(), index); }
  Value toIndex(Value i64) { return arith::IndexCastOp::create(b, loc, b.getIndexType(), i64); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) { return arith::CmpIOp::create(b, loc, p, x, y); }
  Value dim(Value m, int64_t i) {
    auto t = cast<MemRefType>(m.getType());
    if (!t.isDynamicDim(i))
      return idx(t.getDimSize(i));
    return memref::DimOp::create(b, loc, m, i);
  }
  /// The product of dims [from, to) of m.
  Value dimProduct(Value m, int64_t from, int64_t to) {
    Value p = idx(1);
    for (int64_t i = from; i < to; ++i)
      p = mul(p, dim(m, i));
    return p;
  }
  Value numel(Value m) { return dimProduct(m, 0, cast<MemRefType>(m.getType()).getRank()); }

  /// m viewed as a flat memref<?xT> (all memrefs here have the identity layout, so this is a collapse).
  Value flat(Value m) {
    auto t = cast<MemRefType>(m.getType());
    Value v = m;
    if (t.getRank() != 1) {
      ReassociationIndices all;
      for (int64_t i = 0; i < t.getRank(); ++i)
        all.push_back(i);
      // The collapsed size is dynamic when any dim is, even with a static 0 among them: the verifier requires it
      // (the builder's inferred type would be a static 0 for memref<?x0xT>, which does not verify).
      const int64_t n = t.hasStaticShape() ? t.getNumElements() : ShapedType::kDynamic;
      v = memref::CollapseShapeOp::create(b, loc, MemRefType::get({n}, t.getElementType()), m,
                                          ArrayRef<ReassociationIndices>{all});
    }
    auto dynType = MemRefType::get({ShapedType::kDynamic}, t.getElementType());
    if (v.getType() != dynType)
      v = memref::CastOp::create(b, loc, dynType, v);
    return v;
  }

  /// A new (device) buffer of type `t` whose dynamic dims are `dynSizes`; ownership-based deallocation frees it
  /// unless it is returned.
  Value alloc(MemRefType t, ValueRange dynSizes) { return memref::AllocOp::create(b, loc, t, dynSizes); }
  /// Allocates the buffer for tensor result `r`, taking dynamic dims from `dims` (the full shape, as values).
  Value allocLike(Value r, ArrayRef<Value> dims) {
    MemRefType t = memrefFor(r.getType());
    SmallVector<Value> dyn;
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (t.isDynamicDim(i))
        dyn.push_back(dims[i]);
    return alloc(t, dyn);
  }

  /// A run-time check: calls dsa_cpu_fail(code) unless `cond` holds.
  void check(Value cond, Err code) { emitCheck(b, loc, cond, code); }
  void checkEq(Value a, Value c, Err code) {
    if (auto ca = getConstantIntValue(a))
      if (auto cc = getConstantIntValue(c))
        if (*ca == *cc)
          return;
    check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a, c), code);
  }

  /// The launch of kernel `kind` on `grid` (its block: core's dsa/ABI/GpuKernels.h), as a call of the private declaration
  /// @__dsa_gpu_launch_<kernel>(grid x, y, z, args...) that dsa-gpu-launch-kernels makes a gpu.launch_func.
  void launch(Kernel kind, std::array<Value, 3> grid, ValueRange args) {
    const ::dsa::abi::GpuKernelInfo &g = ::dsa::abi::gpuKernel(kind);
    SmallVector<Value> operands(grid.begin(), grid.end());
    llvm::append_range(operands, args);
    std::string callee = (kLaunchPrefix + StringRef(g.symbol)).str();
    func::CallOp::create(b, loc, FlatSymbolRefAttr::get(b.getContext(), callee), TypeRange{}, operands);
  }
  /// A 1-D launch over `items` work items: ceil(items / itemsPerBlock) blocks.
  void launch1d(Kernel kind, Value items, ValueRange args) {
    const int64_t perBlock = ::dsa::abi::gpuKernel(kind).itemsPerBlock;
    assert(perBlock > 0 && "not a 1-D kernel");
    launch(kind, {ceilDiv(items, perBlock), idx(1), idx(1)}, args);
  }

  /// The converted value of operand `v` of the op: a tensor's buffer, a scalar as is.
  Value lookup(Value v) {
    Value n = mapping.lookupOrDefault(v);
    auto t = dyn_cast<RankedTensorType>(n.getType());
    if (!t)
      return n;
    Value &buf = buffers[n];
    if (!buf)
      buf = bufferization::ToBufferOp::create(b, loc, memrefFor(t), n, /*readOnly=*/true);
    return buf;
  }
  /// Records `buffer` (a new allocation of this op) as result `r`.
  void setResult(Value r, Value buffer) {
    resultValues.map(r, bufferization::ToTensorOp::create(b, loc, r.getType(), buffer, /*restrict=*/true,
                                                          /*writable=*/true));
  }

  /// dsa.linear as a flat GEMM, shared by the bf16 and f32 kernels: x [.., K] read as M = prod(..) rows, weight
  /// [N, K] (its column count checked against K), and the new result buffer y [.., N].
  struct LinearOperands {
    Value x, w, y, M, N, K;
  };
  LinearOperands linearOperands(LinearOp op);
  LogicalResult lowerLinearF32(LinearOp op);
  Value ropeTable(ApplyRopeOp op);
  LogicalResult lowerFp4Quant(Operation *op, Value xOld, Value result, int64_t block, bool e4m3Scale);
  LogicalResult lowerElementwiseCast(Operation *op);
  /// i1 "start_pos + s fits int64" (start_pos >= 0 checked before; s an index): start_pos <= INT64_MAX - s.
  Value endFits(Value start, Value s) {
    Value s64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), s);
    return cmp(arith::CmpIPredicate::ule, start,
               arith::SubIOp::create(b, loc, i64c(std::numeric_limits<int64_t>::max()), s64));
  }
  /// The checks of the scores consumers (step checks, start_pos + s fits int64, then width == (start_pos + s) //
  /// ratio), as run-time checks naming the op; returns s and width.
  std::pair<Value, Value> scoresChecks(Operation *op, Value scores, Value start, int64_t ratio, StepCodes codes,
                                       Err endCode, Err widthCode);
  /// The host top-k of `values` (device f32 [rows, n]) into new device picks (i64 [rows, k], each row ascending):
  /// @__dsa_gpu_host_topk(values, k, picks) -> status (dsa-gpu-launch-kernels: download, the runtime's
  /// dsa_cpu_topk_set = torch's CPU tie order (section 9), upload), the status checked.
  Value hostTopk(Value values, Value rows, Value n, Value k);

  ConversionPatternRewriter &b;
  Location loc;
  DSAToGPUState &state;
  Operation *root;
  ModuleOp module;
  func::FuncOp func;
  IRMapping mapping;              ///< the op's operands -> the adaptor's
  DenseMap<Value, Value> buffers; ///< tensor operand -> its to_buffer
  IRMapping resultValues;         ///< the op's results -> their new tensors
};

LogicalResult OpLowering::lowerPositions(PositionsOp op) {
  Value start = lookup(op.getStart()), count = lookup(op.getCount());
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, start,
                              arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0)), Err::PositionsNegativeStart);
  Value out = allocLike(op.getResult(), {count});
  Value stride = arith::ConstantIntOp::create(b, loc, b.getI64Type(), op.getStrideAttr().getInt());
  // start + (count - 1) * stride fits int64 (the kernel's error): count == 0 or (count - 1) <= (INT64_MAX - start) /
  // stride, exact for start >= 0 (checked above) and stride >= 1 (the verifier's).
  Value count64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), count);
  Value max64 = arith::ConstantIntOp::create(b, loc, b.getI64Type(), std::numeric_limits<int64_t>::max());
  Value room = arith::DivUIOp::create(b, loc, arith::SubIOp::create(b, loc, max64, start), stride);
  Value one64 = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 1);
  check(arith::OrIOp::create(
            b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, count64, one64),
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, arith::SubIOp::create(b, loc, count64, one64),
                                  room)),
        Err::PositionsOverflow);
  launch1d(Kernel::Positions, count, {flat(out), start, count, stride});
  setResult(op.getResult(), out);
  return success();
}

LogicalResult OpLowering::lowerLinear(LinearOp op) {
  auto xt = cast<RankedTensorType>(op.getX().getType());
  if (xt.getElementType().isF32())
    return lowerLinearF32(op);
  auto [x, w, y, M, N, K] = linearOperands(op);
  Value z = idx(0);
  launch(Kernel::GemmBf16, {ceilDiv(N, ::dsa::abi::kGpuGemmTile), ceilDiv(M, ::dsa::abi::kGpuGemmTile), idx(1)},
         {flat(x), flat(w), flat(y), M, N, K, K, N, z, z, z});
  setResult(op.getResult(), y);
  return success();
}

OpLowering::LinearOperands OpLowering::linearOperands(LinearOp op) {
  const int64_t r = cast<RankedTensorType>(op.getX().getType()).getRank();
  Value x = lookup(op.getX()), w = lookup(op.getWeight());
  Value K = dim(x, r - 1), N = dim(w, 0);
  checkEq(dim(w, 1), K, Err::LinearWeightColumns);
  Value M = dimProduct(x, 0, r - 1);
  SmallVector<Value> shape;
  for (int64_t i = 0; i + 1 < r; ++i)
    shape.push_back(dim(x, i));
  shape.push_back(N);
  return {x, w, allocLike(op.getResult(), shape), M, N, K};
}

LogicalResult OpLowering::lowerRmsNorm(RmsNormOp op) {
  auto xt = cast<RankedTensorType>(op.getX().getType());
  if (!xt.getElementType().isBF16())
    return failure(); // checkSupported has reported it
  float eps = op.getEps().convertToFloat();
  if (!(eps >= 0.0f) || !std::isfinite(eps))
    return failure(); // checkSupported has reported it
  Value x = lookup(op.getX()), w = lookup(op.getWeight());
  const int64_t r = xt.getRank();
  Value D = dim(x, r - 1);
  checkEq(dim(w, 0), D, Err::RmsNormWeightSize);
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, D, idx(0)), Err::RmsNormEmptyRow);
  Value rows = dimProduct(x, 0, r - 1);
  SmallVector<Value> shape;
  for (int64_t i = 0; i < r; ++i)
    shape.push_back(dim(x, i));
  Value y = allocLike(op.getResult(), shape);
  launch(Kernel::RmsNormBf16, {rows, idx(1), idx(1)}, {flat(x), flat(w), flat(y), rows, D, f32c(eps)});
  setResult(op.getResult(), y);
  return success();
}

Value OpLowering::ropeTable(ApplyRopeOp op) {
  DenseElementsAttr data = ropeTableData(b.getContext(), op.getRope());
  memref::GlobalOp global = data ? ropeGlobal(module, data) : memref::GlobalOp();
  if (!global)
    return Value();
  // One device copy per table and function (made at the first use; every use is in the function's block).
  Value &dev = state.deviceTables[{func.getOperation(), global.getOperation()}];
  if (!dev) {
    auto type = cast<MemRefType>(global.getType());
    Value host = memref::GetGlobalOp::create(b, loc, type, global.getSymName());
    dev = alloc(type, {});
    gpu::MemcpyOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{}, dev, host);
  }
  return dev;
}

LogicalResult OpLowering::lowerApplyRope(ApplyRopeOp op) {
  auto xt = cast<RankedTensorType>(op.getX().getType());
  Value x = lookup(op.getX()), pos = lookup(op.getPositions());
  const int64_t r = xt.getRank();
  const int64_t rd = op.getRope().getRopeDim();
  if (!xt.isDynamicDim(r - 1) && rd > xt.getDimSize(r - 1))
    return failure(); // checkSupported has reported it
  Value table = ropeTable(op);
  if (!table)
    return failure(); // checkSupported has reported it
  Value s = dim(x, 0), hd = dim(x, r - 1);
  checkEq(dim(pos, 0), s, Err::RopePositionsLength);
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, hd, idx(rd)), Err::RopeDimExceedsRow);
  Value rpt = dimProduct(x, 1, r - 1);
  SmallVector<Value> shape;
  for (int64_t i = 0; i < r; ++i)
    shape.push_back(dim(x, i));
  Value y = allocLike(op.getResult(), shape);
  Value total = mul(mul(s, rpt), hd);
  launch1d(Kernel::ApplyRope, total,
           {flat(x), flat(pos), flat(table), flat(y), s, rpt, hd, idx(rd), i32c(op.getInverse() ? 1 : 0)});
  setResult(op.getResult(), y);
  return success();
}

LogicalResult OpLowering::lowerActQuant(ActQuantFp8Op op) {
  auto xt = cast<RankedTensorType>(op.getX().getType());
  const int64_t block = op.getBlockSizeAttr().getInt();
  if (block <= 0)
    return failure(); // checkSupported has reported it
  Value x = lookup(op.getX());
  const int64_t r = xt.getRank();
  Value D = dim(x, r - 1);
  Value rem = arith::RemUIOp::create(b, loc, D, idx(block));
  checkEq(rem, idx(0), Err::ActQuantBlockMultiple);
  Value nblocks = divu(numel(x), idx(block));
  SmallVector<Value> shape;
  for (int64_t i = 0; i < r; ++i)
    shape.push_back(dim(x, i));
  Value y = allocLike(op.getResult(), shape);
  launch1d(Kernel::ActQuantFp8, nblocks, {flat(x), flat(y), nblocks, idx(block)});
  setResult(op.getResult(), y);
  return success();
}

LogicalResult OpLowering::lowerRingUpdate(RingUpdateOp op) {
  Value ring = lookup(op.getRing()), kv = lookup(op.getKv()), start = lookup(op.getStartPos());
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, start,
                              arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0)), Err::RingUpdateNegativeStart);
  Value W = dim(ring, 0), hd = dim(ring, 1), s = dim(kv, 0);
  checkEq(dim(kv, 1), hd, Err::RingUpdateRowWidth);
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, W, idx(0)), Err::RingUpdateNoSlots);
  Value out = allocLike(op.getResult(), {W, hd});
  launch1d(Kernel::RingUpdate, mul(W, hd), {flat(ring), flat(kv), flat(out), W, hd, s, start});
  setResult(op.getResult(), out);
  return success();
}

LogicalResult OpLowering::lowerWindowKv(WindowKvOp op) {
  Value kv = lookup(op.getKv()), ring = lookup(op.getRing()), start = lookup(op.getStartPos());
  Value zero64 = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, start, zero64), Err::WindowKvNegativeStart);
  Value prefill = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, start, zero64);
  Value oneToken = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, dim(kv, 0), idx(1));
  // A chunk at start_pos > 0 (s > 1) is not lowered to the GPU: the runtime splits it (StepRoles::chunked false).
  check(arith::OrIOp::create(b, loc, prefill, oneToken), Err::WindowKvMultiTokenDecode);
  checkEq(dim(kv, 1), dim(ring, 1), Err::WindowKvRowWidth);
  // Decode reads `ring` (the ring before the step) with this step's row written: the result of the ring_update of
  // the same ring, kv and start_pos before it in the block (the decomposition's), or one written here.
  Value updated;
  for (Operation *user : op.getRing().getUsers())
    if (auto u = dyn_cast<RingUpdateOp>(user); u && u.getRing() == op.getRing() && u.getKv() == op.getKv() &&
                                               u.getStartPos() == op.getStartPos() &&
                                               u->getBlock() == op->getBlock() && u->isBeforeInBlock(op)) {
      updated = b.getRemappedValue(u.getResult());
      break;
    }
  if (!updated) {
    Value W = dim(ring, 0), hd = dim(ring, 1);
    check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, W, idx(0)), Err::RingUpdateNoSlots);
    Value out = alloc(memrefFor(op.getRing().getType()), {});
    launch1d(Kernel::RingUpdate, mul(W, hd), {flat(ring), flat(kv), flat(out), W, hd, dim(kv, 0), start});
    updated = bufferization::ToTensorOp::create(b, loc, op.getRing().getType(), out, /*restrict=*/true,
                                                /*writable=*/true);
  }
  // A choice between the step's rows and the updated ring, on tensors (bufferized as a select of buffers).
  auto rt = cast<RankedTensorType>(op.getResult().getType());
  auto castTo = [&](Value v) -> Value {
    return v.getType() == rt ? v : tensor::CastOp::create(b, loc, rt, v).getResult();
  };
  Value sel = arith::SelectOp::create(b, loc, prefill, castTo(mapping.lookupOrDefault(op.getKv())), castTo(updated));
  resultValues.map(op.getResult(), sel);
  return success();
}

LogicalResult OpLowering::lowerWindowIndices(WindowIndicesOp op) {
  const int64_t window = op.getWindowSizeAttr().getInt();
  if (window <= 0)
    return failure(); // checkSupported has reported it
  Value start = lookup(op.getStartPos()), count = lookup(op.getCount());
  Value zero64 = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, start, zero64), Err::WindowIndicesNegativeStart);
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, count, idx(0)), Err::WindowIndicesEmptyStep);
  Value prefill = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, start, zero64);
  Value oneToken = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, count, idx(1));
  check(arith::OrIOp::create(b, loc, prefill, oneToken), Err::WindowIndicesMultiTokenDecode);
  Value W = idx(window);
  Value width = arith::SelectOp::create(b, loc, prefill, arith::MinUIOp::create(b, loc, count, W), W);
  auto rt = cast<RankedTensorType>(op.getResult().getType());
  if (!rt.isDynamicDim(0))
    checkEq(count, idx(rt.getDimSize(0)), Err::WindowIndicesResultRows);
  if (!rt.isDynamicDim(1))
    checkEq(width, idx(rt.getDimSize(1)), Err::WindowIndicesResultWidth);
  Value out = allocLike(op.getResult(), {count, width});
  launch1d(Kernel::WindowIndices, mul(count, width), {flat(out), start, count, W, width});
  setResult(op.getResult(), out);
  return success();
}

LogicalResult OpLowering::lowerSparseAttn(SparseAttnOp op) {
  float scale = op.getScale().convertToFloat();
  if (!(scale > 0.0f) || !std::isfinite(scale))
    return failure(); // checkSupported has reported it
  Value q = lookup(op.getQ()), kv = lookup(op.getKv()), ind = lookup(op.getIndices()), sink = lookup(op.getSink());
  Value s = dim(q, 0), H = dim(q, 1), hd = dim(q, 2), n = dim(kv, 0), k = dim(ind, 1);
  checkEq(dim(kv, 1), hd, Err::SparseAttnKvRowWidth);
  checkEq(dim(ind, 0), s, Err::SparseAttnIndicesRows);
  checkEq(dim(sink, 0), H, Err::SparseAttnSinkSize);
  Value o = allocLike(op.getResult(), {s, H, hd});
  Value sh = mul(s, H);
  // f32 scratch for the scores / probabilities, at least one element (an empty allocation is not portable).
  Value scratchSize = arith::MaxUIOp::create(b, loc, mul(sh, k), idx(1));
  Value scratch = alloc(MemRefType::get({ShapedType::kDynamic}, b.getF32Type()), {scratchSize});
  launch(Kernel::SparseAttn, {sh, idx(1), idx(1)},
         {flat(q), flat(kv), flat(ind), flat(sink), flat(o), scratch, s, H, hd, n, k, f32c(scale)});
  setResult(op.getResult(), o);
  return success();
}

LogicalResult OpLowering::lowerGroupedOutput(GroupedOutputOp op) {
  const int64_t groups = op.getGroupsAttr().getInt();
  if (groups <= 0)
    return failure(); // checkSupported has reported it
  Value o = lookup(op.getO()), woA = lookup(op.getWoA());
  Value s = dim(o, 0), H = dim(o, 1), hd = dim(o, 2);
  Value G = idx(groups);
  checkEq(arith::RemUIOp::create(b, loc, H, G), idx(0), Err::GroupedOutputHeads);
  Value rowWidth = mul(H, hd);
  Value gw = divu(rowWidth, G);
  checkEq(dim(woA, 1), gw, Err::GroupedOutputWeightColumns);
  checkEq(arith::RemUIOp::create(b, loc, dim(woA, 0), G), idx(0), Err::GroupedOutputWeightRows);
  Value R = divu(dim(woA, 0), G);
  Value GR = dim(woA, 0);
  Value y = allocLike(op.getResult(), {s, GR});
  launch(Kernel::GemmBf16, {ceilDiv(R, ::dsa::abi::kGpuGemmTile), ceilDiv(s, ::dsa::abi::kGpuGemmTile), G},
         {flat(o), flat(woA), flat(y), s, R, gw, rowWidth, GR, gw, mul(R, gw), R});
  setResult(op.getResult(), y);
  return success();
}

//===----------------------------------------------------------------------===//
// Compressed attention (sections 2, 5-9; design-compressed.md)
//===----------------------------------------------------------------------===//

LogicalResult OpLowering::lowerLinearF32(LinearOp op) {
  auto [x, w, y, M, N, K] = linearOperands(op);
  launch1d(Kernel::LinearF32, mul(M, N), {flat(x), flat(w), flat(y), M, N, K});
  setResult(op.getResult(), y);
  return success();
}

LogicalResult OpLowering::lowerCompressPool(CompressPoolOp op) {
  const int64_t r = static_cast<int64_t>(op.getRatio());
  if (r < 2)
    return failure(); // checkSupported has reported it
  Value kv = lookup(op.getKv()), score = lookup(op.getScore()), kvState = lookup(op.getKvState()),
        scoreState = lookup(op.getScoreState()), start = lookup(op.getStartPos());
  Value s = dim(kv, 0), hd = dim(kv, 1);
  checkEq(dim(score, 0), s, Err::CompressPoolScoreShape);
  checkEq(dim(score, 1), hd, Err::CompressPoolScoreWidth);
  checkEq(dim(kvState, 0), idx(r), Err::CompressPoolKvStateRows);
  checkEq(dim(kvState, 1), hd, Err::CompressPoolKvStateWidth);
  checkEq(dim(scoreState, 0), idx(r), Err::CompressPoolScoreStateRows);
  checkEq(dim(scoreState, 1), hd, Err::CompressPoolScoreStateWidth);
  stepChecks(b, loc, start, s,
             {Err::CompressPoolNegativeStart, Err::CompressPoolEmptyStep, Err::CompressPoolMultiTokenDecode});
  Value newKv = allocLike(op.getNewKvState(), {idx(r), hd});
  Value newScore = allocLike(op.getNewScoreState(), {idx(r), hd});
  launch1d(Kernel::CompressState, mul(idx(r), hd),
           {flat(kv), flat(score), flat(kvState), flat(scoreState), flat(newKv), flat(newScore), idx(r), hd, s, start});
  // Completed groups: s // r in prefill; in decode one when (start_pos + 1) % r == 0, i.e. start_pos % r == r - 1
  // (no wrap at start_pos = INT64_MAX), pooling the new state.
  Value prefill = cmp(arith::CmpIPredicate::eq, start, i64c(0));
  Value completes = cmp(arith::CmpIPredicate::eq, arith::RemUIOp::create(b, loc, start, i64c(r)), i64c(r - 1));
  Value g = arith::SelectOp::create(b, loc, prefill, divu(s, idx(r)),
                                    arith::SelectOp::create(b, loc, completes, idx(1), idx(0)));
  auto rt = cast<RankedTensorType>(op.getPooled().getType());
  if (!rt.isDynamicDim(0))
    checkEq(g, idx(rt.getDimSize(0)), Err::CompressPoolResultRows);
  Value pooled = allocLike(op.getPooled(), {g, hd});
  Value srcKv = arith::SelectOp::create(b, loc, prefill, flat(kv), flat(newKv));
  Value srcScore = arith::SelectOp::create(b, loc, prefill, flat(score), flat(newScore));
  launch1d(Kernel::CompressPool, mul(g, hd), {srcKv, srcScore, flat(pooled), g, idx(r), hd});
  setResult(op.getPooled(), pooled);
  setResult(op.getNewKvState(), newKv);
  setResult(op.getNewScoreState(), newScore);
  return success();
}

LogicalResult OpLowering::lowerFp4Quant(Operation *op, Value xOld, Value result, int64_t block,
                                              bool e4m3Scale) {
  auto xt = cast<RankedTensorType>(xOld.getType());
  if (!xt.getElementType().isBF16())
    return failure(); // checkSupported has reported it
  if (block <= 0)
    return failure(); // checkSupported has reported it
  Value x = lookup(xOld);
  const int64_t r = xt.getRank();
  Value D = dim(x, r - 1);
  checkEq(arith::RemUIOp::create(b, loc, D, idx(block)), idx(0),
          e4m3Scale ? Err::Fp4QuantE4M3BlockMultiple : Err::Fp4QuantE8M0BlockMultiple);
  Value nblocks = divu(numel(x), idx(block));
  SmallVector<Value> shape;
  for (int64_t i = 0; i < r; ++i)
    shape.push_back(dim(x, i));
  Value y = allocLike(result, shape);
  launch1d(Kernel::Fp4Quant, nblocks, {flat(x), flat(y), nblocks, idx(block), i32c(e4m3Scale ? 1 : 0)});
  setResult(result, y);
  return success();
}

LogicalResult OpLowering::lowerCacheWrite(CacheWriteOp op) {
  const int64_t ratio = static_cast<int64_t>(op.getRatio());
  if (ratio < 1)
    return failure(); // checkSupported has reported it
  Value cache = lookup(op.getCache()), rows = lookup(op.getRows()), start = lookup(op.getStartPos());
  Value C = dim(cache, 0), w = dim(cache, 1), g = dim(rows, 0);
  check(cmp(arith::CmpIPredicate::sge, start, i64c(0)), Err::CacheWriteNegativeStart);
  checkEq(dim(rows, 1), w, Err::CacheWriteRowWidth);
  Value first = toIndex(arith::DivUIOp::create(b, loc, start, i64c(ratio)));
  // first + g <= C as first <= C and g <= C - first (no wrap at a start_pos near INT64_MAX).
  check(arith::AndIOp::create(b, loc, cmp(arith::CmpIPredicate::ule, first, C),
                              cmp(arith::CmpIPredicate::ule, g, arith::SubIOp::create(b, loc, C, first))),
        Err::CacheWriteOverflow);
  Value out = allocLike(op.getResult(), {C, w});
  launch1d(Kernel::CacheWrite, mul(C, w), {flat(cache), flat(rows), flat(out), C, w, first, g});
  setResult(op.getResult(), out);
  return success();
}

LogicalResult OpLowering::lowerIndexerScores(IndexerScoresOp op) {
  const int64_t ratio = static_cast<int64_t>(op.getRatio());
  if (ratio < 1)
    return failure(); // checkSupported has reported it
  float scale = op.getWeightScale().convertToFloat();
  if (!std::isfinite(scale))
    return failure(); // checkSupported has reported it
  Value iq = lookup(op.getIq()), w = lookup(op.getWeights()), keys = lookup(op.getKeys()),
        start = lookup(op.getStartPos());
  Value s = dim(iq, 0), IH = dim(iq, 1), ihd = dim(iq, 2), n = dim(keys, 0);
  check(cmp(arith::CmpIPredicate::sge, start, i64c(0)), Err::IndexerScoresNegativeStart);
  checkEq(dim(w, 0), s, Err::IndexerScoresWeightsRows);
  checkEq(dim(w, 1), IH, Err::IndexerScoresWeightsColumns);
  checkEq(dim(keys, 1), ihd, Err::IndexerScoresKeysWidth);
  check(endFits(start, s), Err::IndexerScoresEndOverflow);
  Value width = toIndex(arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, start, toI64(s)), i64c(ratio)));
  check(cmp(arith::CmpIPredicate::uge, n, width), Err::IndexerScoresKeysRows);
  Value keysRead = flat(keys);
  if (op.getEntryKeys()) {
    // The quirk per token: a token closing no group at start_pos > 0 reads entry_keys. The kernel takes one keys
    // buffer, so a one-token step picks it; a chunk (start_pos > 0, s > 1) is refused, as window_kv refuses it.
    Value entry = lookup(op.getEntryKeys());
    checkEq(dim(entry, 1), ihd, Err::IndexerScoresEntryKeysWidth);
    Value positive = cmp(arith::CmpIPredicate::sgt, start, i64c(0));
    Value many = cmp(arith::CmpIPredicate::ugt, s, idx(1));
    Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    if (ratio >= 2) {
      check(arith::XOrIOp::create(b, loc, arith::AndIOp::create(b, loc, positive, many), yes),
            Err::IndexerScoresEntryKeysChunk);
      Value next = arith::AddIOp::create(b, loc, start, i64c(1));
      Value open = cmp(arith::CmpIPredicate::ne, arith::RemSIOp::create(b, loc, next, i64c(ratio)), i64c(0));
      Value reads = arith::AndIOp::create(b, loc, positive, open);
      // Its rows are checked when the step reads it (a prefill enters with an empty slot).
      check(arith::OrIOp::create(b, loc, arith::XOrIOp::create(b, loc, reads, yes),
                                 cmp(arith::CmpIPredicate::uge, dim(entry, 0), width)),
            Err::IndexerScoresEntryKeysRows);
      keysRead = arith::SelectOp::create(b, loc, reads, flat(entry), keysRead);
    }
  }
  auto rt = cast<RankedTensorType>(op.getResult().getType());
  if (!rt.isDynamicDim(1))
    checkEq(width, idx(rt.getDimSize(1)), Err::IndexerScoresResultWidth);
  Value out = allocLike(op.getResult(), {s, width});
  launch1d(Kernel::IndexerScores, mul(s, width),
           {flat(iq), flat(w), keysRead, flat(out), s, IH, ihd, width, f32c(scale)});
  setResult(op.getResult(), out);
  return success();
}

std::pair<Value, Value> OpLowering::scoresChecks(Operation *op, Value scores, Value start, int64_t ratio,
                                                       StepCodes codes, Err endCode, Err widthCode) {
  Value s = dim(scores, 0), width = dim(scores, 1);
  stepChecks(b, loc, start, s, codes);
  check(endFits(start, s), endCode);
  Value want = toIndex(arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, start, toI64(s)), i64c(ratio)));
  checkEq(width, want, widthCode);
  return {s, width};
}

LogicalResult OpLowering::lowerCompressVisibility(CompressVisibilityOp op) {
  const int64_t ratio = static_cast<int64_t>(op.getRatio());
  if (ratio < 1)
    return failure(); // checkSupported has reported it
  Value scores = lookup(op.getScores()), start = lookup(op.getStartPos());
  auto [s, width] = scoresChecks(op, scores, start, ratio,
                                 {Err::CompressVisibilityNegativeStart, Err::CompressVisibilityEmptyStep,
                                  Err::CompressVisibilityMultiTokenDecode},
                                 Err::CompressVisibilityEndOverflow, Err::CompressVisibilityWidth);
  Value out = allocLike(op.getResult(), {s, width});
  launch1d(Kernel::CompressVisibility, mul(s, width), {flat(scores), flat(out), s, width, start, i64c(ratio)});
  setResult(op.getResult(), out);
  return success();
}

LogicalResult OpLowering::lowerApplyCandidates(ApplyCandidatesOp op) {
  Value scores = lookup(op.getScores()), mask = lookup(op.getMask());
  Value s = dim(scores, 0), width = dim(scores, 1);
  checkEq(dim(mask, 0), s, Err::ApplyCandidatesMaskShape);
  checkEq(dim(mask, 1), width, Err::ApplyCandidatesMaskShape);
  Value out = allocLike(op.getResult(), {s, width});
  Value n = mul(s, width);
  launch1d(Kernel::ApplyCandidates, n, {flat(scores), flat(mask), flat(out), n});
  setResult(op.getResult(), out);
  return success();
}

Value OpLowering::hostTopk(Value values, Value rows, Value n, Value k) {
  (void)n; // the values' width: dsa-gpu-launch-kernels reads it from the buffer
  auto valuesType = MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type());
  auto picksType = MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getI64Type());
  Value anyValues = values.getType() == valuesType ? values : memref::CastOp::create(b, loc, valuesType, values);
  Value picks = alloc(picksType, {rows, k});
  auto call = func::CallOp::create(b, loc, FlatSymbolRefAttr::get(b.getContext(), kHostTopkSymbol),
                                   TypeRange{b.getI32Type()}, ValueRange{anyValues, toI64(k), picks});
  check(cmp(arith::CmpIPredicate::eq, call.getResult(0), i32c(0)), Err::TopkRuntimeFailed);
  return picks;
}

LogicalResult OpLowering::lowerSelectCandidateBlocks(SelectCandidateBlocksOp op) {
  if (op.getTieOrder() != TieOrder::torch_cpu)
    return failure(); // checkSupported has reported it
  const int64_t ratio = static_cast<int64_t>(op.getRatio());
  const int64_t bs = static_cast<int64_t>(op.getBlockSize());
  const int64_t topkBlocks = static_cast<int64_t>(op.getTopkBlocks());
  if (ratio < 1 || bs < 1 || topkBlocks < 0)
    return failure(); // checkSupported has reported it
  Value scores = lookup(op.getScores()), start = lookup(op.getStartPos());
  auto [s, width] = scoresChecks(op, scores, start, ratio,
                                 {Err::SelectCandidateBlocksNegativeStart, Err::SelectCandidateBlocksEmptyStep,
                                  Err::SelectCandidateBlocksMultiTokenDecode},
                                 Err::SelectCandidateBlocksEndOverflow, Err::SelectCandidateBlocksWidth);
  Value nBlocks = ceilDiv(width, bs);
  Value k = arith::MinUIOp::create(b, loc, nBlocks, idx(topkBlocks));
  Value blockScores = alloc(MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type()),
                            {s, nBlocks});
  launch1d(Kernel::CandidateBlockScores, mul(s, nBlocks),
           {flat(scores), flat(blockScores), s, width, nBlocks, idx(bs), start, i64c(ratio)});
  Value picks = hostTopk(blockScores, s, nBlocks, k);
  Value mask = allocLike(op.getResult(), {s, width});
  launch1d(Kernel::CandidateMask, mul(s, width),
           {flat(blockScores), flat(picks), flat(mask), s, width, nBlocks, k, idx(bs)});
  setResult(op.getResult(), mask);
  return success();
}

LogicalResult OpLowering::lowerIndexerTopk(IndexerTopkOp op) {
  if (op.getTieOrder() != TieOrder::torch_cpu)
    return failure(); // checkSupported has reported it
  const int64_t ratio = static_cast<int64_t>(op.getRatio());
  const int64_t indexTopk = static_cast<int64_t>(op.getIndexTopk());
  const int64_t window = static_cast<int64_t>(op.getWindowSize());
  if (ratio < 1 || window < 1 || indexTopk < 0)
    return failure(); // checkSupported has reported it
  Value scores = lookup(op.getScores()), start = lookup(op.getStartPos());
  auto [s, width] = scoresChecks(
      op, scores, start, ratio,
      {Err::IndexerTopkNegativeStart, Err::IndexerTopkEmptyStep, Err::IndexerTopkMultiTokenDecode},
      Err::IndexerTopkEndOverflow, Err::IndexerTopkWidth);
  Value k = arith::MinUIOp::create(b, loc, width, idx(indexTopk));
  auto rt = cast<RankedTensorType>(op.getResult().getType());
  if (!rt.isDynamicDim(1))
    checkEq(k, idx(rt.getDimSize(1)), Err::IndexerTopkResultWidth);
  // The host top-k reads f32 values (torchCpuTopkSet's input): widen the bf16 scores on the device first.
  Value values = alloc(MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type()), {s, width});
  Value n = mul(s, width);
  launch1d(Kernel::ExtfBf16F32, n, {flat(scores), flat(values), n});
  Value picks = hostTopk(values, s, width, k);
  Value prefill = cmp(arith::CmpIPredicate::eq, start, i64c(0));
  Value offset = arith::SelectOp::create(b, loc, prefill, toI64(s), i64c(window));
  Value out = allocLike(op.getResult(), {s, k});
  launch1d(Kernel::TopkMap, mul(s, k), {flat(picks), flat(out), s, k, start, i64c(ratio), offset});
  setResult(op.getResult(), out);
  return success();
}

LogicalResult OpLowering::lowerElementwiseCast(Operation *op) {
  auto in = cast<RankedTensorType>(op->getOperand(0).getType());
  auto outType = cast<RankedTensorType>(op->getResult(0).getType());
  std::optional<Kernel> kernel;
  if (isa<arith::ExtFOp>(op) && in.getElementType().isBF16() && outType.getElementType().isF32())
    kernel = Kernel::ExtfBf16F32;
  else if (isa<arith::TruncFOp>(op) && in.getElementType().isF32() && outType.getElementType().isBF16())
    kernel = Kernel::TruncfF32Bf16;
  if (!kernel)
    return failure(); // checkSupported has reported it
  Value x = lookup(op->getOperand(0));
  SmallVector<Value> shape;
  for (int64_t i = 0; i < in.getRank(); ++i)
    shape.push_back(dim(x, i));
  Value y = allocLike(op->getResult(0), shape);
  Value n = numel(x);
  launch1d(*kernel, n, {flat(x), flat(y), n});
  setResult(op->getResult(0), y);
  return success();
}

LogicalResult OpLowering::lowerExtractSlice(tensor::ExtractSliceOp op) {
  // Only the leading rows of a row-major tensor (compress_kv[0 .. end//r), design-compressed.md): a view of the
  // same buffer, no copy.
  auto srcType = op.getSourceType();
  auto resType = op.getResultType();
  const int64_t r = srcType.getRank();
  bool prefix = resType.getRank() == r && r >= 1;
  for (int64_t i = 0; prefix && i < r; ++i) {
    prefix = op.isDynamicOffset(i) == false && op.getStaticOffset(i) == 0 && !op.isDynamicStride(i) &&
             op.getStaticStride(i) == 1;
    if (prefix && i >= 1)
      prefix = !op.isDynamicSize(i) && !srcType.isDynamicDim(i) && op.getStaticSize(i) == srcType.getDimSize(i);
  }
  if (!prefix)
    return failure(); // checkSupported has reported it
  // Checked, and clamped to the source's rows (the slice stays in bounds whatever the check's outcome), then left
  // to bufferization (a view of the source's buffer, no copy).
  Value srcT = mapping.lookupOrDefault(op.getSource());
  Value rows = op.isDynamicSize(0) ? mapping.lookupOrDefault(op.getDynamicSizes().front()) : idx(op.getStaticSize(0));
  Value srcRows = srcType.isDynamicDim(0) ? Value(tensor::DimOp::create(b, loc, srcT, 0)) : idx(srcType.getDimSize(0));
  check(cmp(arith::CmpIPredicate::ule, rows, srcRows), Err::SliceRowsExceedSource);
  Value clamped = arith::MinUIOp::create(b, loc, rows, srcRows);
  SmallVector<OpFoldResult> offsets(r, b.getIndexAttr(0)), strides(r, b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes{clamped};
  for (int64_t i = 1; i < r; ++i)
    sizes.push_back(b.getIndexAttr(srcType.getDimSize(i)));
  Value slice = tensor::ExtractSliceOp::create(b, loc, srcT, offsets, sizes, strides);
  if (slice.getType() != resType)
    slice = tensor::CastOp::create(b, loc, resType, slice);
  resultValues.map(op.getResult(), slice);
  return success();
}

LogicalResult OpLowering::lowerConcat(tensor::ConcatOp op) {
  if (op.getInputs().size() != 2)
    return failure(); // checkSupported has reported it
  auto type = cast<RankedTensorType>(op.getType());
  const int64_t r = type.getRank();
  const int64_t d = static_cast<int64_t>(op.getDim());
  Value a = lookup(op.getInputs()[0]), c = lookup(op.getInputs()[1]);
  if (d == 0 && type.getElementType().isBF16()) {
    SmallVector<Value> shape{arith::AddIOp::create(b, loc, dim(a, 0), dim(c, 0))};
    for (int64_t i = 1; i < r; ++i) {
      checkEq(dim(c, i), dim(a, i), Err::ConcatTrailingDims);
      shape.push_back(dim(a, i));
    }
    Value out = allocLike(op.getResult(), shape);
    Value na = numel(a), nb = numel(c);
    launch1d(Kernel::ConcatRowsBf16, arith::AddIOp::create(b, loc, na, nb), {flat(a), flat(c), flat(out), na, nb});
    setResult(op.getResult(), out);
    return success();
  }
  if (d == 1 && r == 2 && type.getElementType().isInteger(32)) {
    Value rows = dim(a, 0), wa = dim(a, 1), wb = dim(c, 1);
    checkEq(dim(c, 0), rows, Err::ConcatRows);
    Value w = arith::AddIOp::create(b, loc, wa, wb);
    Value out = allocLike(op.getResult(), {rows, w});
    launch1d(Kernel::ConcatColsI32, mul(rows, w), {flat(a), flat(c), flat(out), rows, wa, wb});
    setResult(op.getResult(), out);
    return success();
  }
  return failure(); // checkSupported has reported it
}


//===----------------------------------------------------------------------===//
// What is lowered (diagnostics, before anything is rewritten)
//===----------------------------------------------------------------------===//

/// Whether `op` is a leading-row slice (offsets 0, strides 1, every other dimension whole and static).
bool isLeadingRowSlice(tensor::ExtractSliceOp op) {
  auto srcType = op.getSourceType();
  auto resType = op.getResultType();
  const int64_t r = srcType.getRank();
  bool prefix = resType.getRank() == r && r >= 1;
  for (int64_t i = 0; prefix && i < r; ++i) {
    prefix = op.isDynamicOffset(i) == false && op.getStaticOffset(i) == 0 && !op.isDynamicStride(i) &&
             op.getStaticStride(i) == 1;
    if (prefix && i >= 1)
      prefix = !op.isDynamicSize(i) && !srcType.isDynamicDim(i) && op.getStaticSize(i) == srcType.getDimSize(i);
  }
  return prefix;
}

/// A leading-row slice whose row count is already clamped to the source's (what the slice pattern leaves).
bool isClampedSlice(tensor::ExtractSliceOp op) {
  if (!isLeadingRowSlice(op) || !op.isDynamicSize(0))
    return false;
  auto min = op.getDynamicSizes().front().getDefiningOp<arith::MinUIOp>();
  if (!min)
    return false;
  Value bound = min.getRhs();
  if (auto d = bound.getDefiningOp<tensor::DimOp>())
    return d.getSource() == op.getSource() && getConstantIntValue(d.getIndex()) == 0;
  std::optional<int64_t> c = getConstantIntValue(bound);
  return c && !op.getSourceType().isDynamicDim(0) && *c == op.getSourceType().getDimSize(0);
}

/// The diagnostic of an op dsa-to-gpu does not lower (or of attributes its lowering rejects); success otherwise.
LogicalResult checkSupported(Operation *op) {
  auto needsBf16Rows = [](Operation *o, Value x, StringRef what) -> LogicalResult {
    if (!cast<RankedTensorType>(x.getType()).getElementType().isBF16())
      return o->emitOpError(what);
    return success();
  };
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([](RmsNormOp o) -> LogicalResult {
        if (!cast<RankedTensorType>(o.getX().getType()).getElementType().isBF16())
          return o.emitOpError("dsa-to-gpu: rms_norm of an f32 x (the ratio >= 2 compressor's) is not lowered to "
                               "the GPU yet");
        float eps = o.getEps().convertToFloat();
        if (!(eps >= 0.0f) || !std::isfinite(eps))
          return o.emitOpError("dsa-to-gpu: attribute 'eps' must be finite and >= 0");
        return success();
      })
      .Case([](ApplyRopeOp o) -> LogicalResult {
        auto xt = cast<RankedTensorType>(o.getX().getType());
        const int64_t r = xt.getRank();
        if (!xt.isDynamicDim(r - 1) && o.getRope().getRopeDim() > xt.getDimSize(r - 1))
          return o.emitOpError("dsa-to-gpu: rope_dim exceeds x's last dimension");
        if (!ropeTableData(o.getContext(), o.getRope()))
          return o.emitOpError("dsa-to-gpu: attribute 'rope' has no frequency table (rope_dim must be positive "
                               "and even, theta positive)");
        return success();
      })
      .Case([](ActQuantFp8Op o) -> LogicalResult {
        if (o.getBlockSizeAttr().getInt() <= 0)
          return o.emitOpError("dsa-to-gpu: attribute 'block_size' must be > 0");
        return success();
      })
      .Case([](WindowIndicesOp o) -> LogicalResult {
        if (o.getWindowSizeAttr().getInt() <= 0)
          return o.emitOpError("dsa-to-gpu: attribute 'window_size' must be > 0");
        return success();
      })
      .Case([](SparseAttnOp o) -> LogicalResult {
        float scale = o.getScale().convertToFloat();
        if (!(scale > 0.0f) || !std::isfinite(scale))
          return o.emitOpError("dsa-to-gpu: attribute 'scale' must be finite and > 0");
        return success();
      })
      .Case([](GroupedOutputOp o) -> LogicalResult {
        if (o.getGroupsAttr().getInt() <= 0)
          return o.emitOpError("dsa-to-gpu: attribute 'groups' must be > 0");
        return success();
      })
      .Case([](CompressPoolOp o) -> LogicalResult {
        if (static_cast<int64_t>(o.getRatio()) < 2)
          return o.emitOpError("dsa-to-gpu: attribute 'ratio' must be >= 2");
        return success();
      })
      .Case<Fp4QuantE8M0Op, Fp4QuantE4M3Op>([&](auto o) -> LogicalResult {
        if (failed(needsBf16Rows(o, o.getX(),
                                 "dsa-to-gpu: the fp4 round trip of an f32 x is not lowered to the GPU (the model "
                                 "quantises bf16 values)")))
          return failure();
        if (o.getBlockSizeAttr().getInt() <= 0)
          return o.emitOpError("dsa-to-gpu: attribute 'block_size' must be > 0");
        return success();
      })
      .Case<CacheWriteOp, CompressVisibilityOp>([](auto o) -> LogicalResult {
        if (static_cast<int64_t>(o.getRatio()) < 1)
          return o.emitOpError("dsa-to-gpu: attribute 'ratio' must be >= 1");
        return success();
      })
      .Case([](IndexerScoresOp o) -> LogicalResult {
        if (static_cast<int64_t>(o.getRatio()) < 1)
          return o.emitOpError("dsa-to-gpu: attribute 'ratio' must be >= 1");
        if (!std::isfinite(o.getWeightScale().convertToFloat()))
          return o.emitOpError("dsa-to-gpu: attribute 'weight_scale' must be finite");
        return success();
      })
      .Case([](SelectCandidateBlocksOp o) -> LogicalResult {
        if (o.getTieOrder() != TieOrder::torch_cpu)
          return o.emitOpError("dsa-to-gpu implements only tie_order = torch_cpu (a host top-k, section 9)");
        if (static_cast<int64_t>(o.getRatio()) < 1 || static_cast<int64_t>(o.getBlockSize()) < 1 ||
            static_cast<int64_t>(o.getTopkBlocks()) < 0)
          return o.emitOpError("dsa-to-gpu: attributes 'ratio' and 'block_size' must be >= 1, 'topk_blocks' >= 0");
        return success();
      })
      .Case([](IndexerTopkOp o) -> LogicalResult {
        if (o.getTieOrder() != TieOrder::torch_cpu)
          return o.emitOpError("dsa-to-gpu implements only tie_order = torch_cpu (a host top-k, section 9)");
        if (static_cast<int64_t>(o.getRatio()) < 1 || static_cast<int64_t>(o.getWindowSize()) < 1 ||
            static_cast<int64_t>(o.getIndexTopk()) < 0)
          return o.emitOpError("dsa-to-gpu: attributes 'ratio' and 'window_size' must be >= 1, 'index_topk' >= 0");
        return success();
      })
      .Case<LinearOp, PositionsOp, RingUpdateOp, WindowKvOp, ApplyCandidatesOp, ProbeOp>(
          [](Operation *) { return success(); })
      .Case([](AttentionOp o) -> LogicalResult {
        return o.emitOpError("dsa-to-gpu: run dsa-decompose-attention first (--dsa-gpu-pipeline does)");
      })
      .Case<arith::ExtFOp, arith::TruncFOp>([](Operation *o) -> LogicalResult {
        if (!hasTensor(o->getResultTypes()))
          return success();
        auto in = cast<RankedTensorType>(o->getOperand(0).getType()).getElementType();
        auto out = cast<RankedTensorType>(o->getResult(0).getType()).getElementType();
        if ((isa<arith::ExtFOp>(o) && in.isBF16() && out.isF32()) ||
            (isa<arith::TruncFOp>(o) && in.isF32() && out.isBF16()))
          return success();
        return o->emitOpError("dsa-to-gpu: only bf16 -> f32 extf and f32 -> bf16 truncf on tensors are lowered");
      })
      .Case([](arith::SelectOp o) -> LogicalResult {
        if (isa<RankedTensorType>(o.getType()) && !o.getCondition().getType().isInteger(1))
          return o.emitOpError("dsa-to-gpu: an elementwise select on tensors is not lowered (only a scalar i1 "
                               "condition choosing between two tensors)");
        return success();
      })
      .Case([](tensor::ExtractSliceOp o) -> LogicalResult {
        if (!isLeadingRowSlice(o))
          return o.emitOpError("dsa-to-gpu: only a slice of the leading rows of a tensor (offsets 0, strides 1, "
                               "every other dimension whole and static) is lowered");
        return success();
      })
      .Case([](tensor::ConcatOp o) -> LogicalResult {
        if (o.getInputs().size() != 2)
          return o.emitOpError("dsa-to-gpu: only a concatenation of two tensors is lowered");
        auto type = cast<RankedTensorType>(o.getType());
        const int64_t d = static_cast<int64_t>(o.getDim());
        if ((d == 0 && type.getElementType().isBF16()) ||
            (d == 1 && type.getRank() == 2 && type.getElementType().isInteger(32)))
          return success();
        return o.emitOpError("dsa-to-gpu: only bf16 concatenation along dim 0 and i32 [rows, w] along dim 1 are "
                             "lowered");
      })
      .Case<tensor::CastOp, tensor::DimOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp, func::ReturnOp>(
          [](Operation *) { return success(); })
      .Default([](Operation *o) -> LogicalResult {
        if (isa<DSADialect>(o->getDialect()))
          return o->emitOpError("dsa-to-gpu: this dsa op is not lowered to the GPU");
        if (hasTensor(o->getOperandTypes()) || hasTensor(o->getResultTypes()) || o->getNumRegions() != 0)
          return o->emitOpError("dsa-to-gpu: unsupported op on the host side (the GPU backend lowers straight-line "
                                "functions of dsa primitives, tensor.dim/expand_shape/collapse_shape/cast, "
                                "leading-row extract_slice, two-input concat, a scalar select of tensors, "
                                "bf16<->f32 extf/truncf and scalar ops)");
        return success();
      });
}

/// Whether dsa-to-gpu rewrites `func` (it has tensors or dsa ops), after checking what it can lower. Pure ops whose
/// results nobody reads (e.g. the decomposition's unused slot prefix) are erased first: they would only add launches
/// and checks that the step does not need.
FailureOr<bool> prepareFunction(func::FuncOp func) {
  FunctionType type = func.getFunctionType();
  const bool tensorSignature = hasTensor(type.getInputs()) || hasTensor(type.getResults());
  if (func.isExternal()) {
    if (tensorSignature)
      return func.emitOpError("dsa-to-gpu: external functions on tensors are not supported");
    return false;
  }
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("dsa-to-gpu: only single-block functions are supported");
  Block &block = func.getBody().front();
  bool relevant = tensorSignature;
  block.walk([&](Operation *op) {
    if (isa<DSADialect>(op->getDialect()) || hasTensor(op->getResultTypes()))
      relevant = true;
  });
  if (!relevant)
    return false;
  for (Type t : type.getInputs())
    if (isa<TensorType>(t) && !isa<RankedTensorType>(t))
      return func.emitOpError("dsa-to-gpu: unranked tensor arguments are not supported");
  SmallVector<Operation *> backwards;
  for (Operation &op : block.without_terminator())
    backwards.push_back(&op);
  for (Operation *op : llvm::reverse(backwards))
    if (isOpTriviallyDead(op))
      op->erase();
  // A batched decode step (dsa.attention with start_pos a tensor<B x i64>) decomposes into an scf.for over the
  // sequences: the GPU backend has no lowering for it yet (the CPU backend does).
  for (Operation &op : block.without_terminator())
    if (auto loop = dyn_cast<scf::ForOp>(op);
        loop && !loop.getBody()->getOps<RingUpdateOp>().empty())
      return loop.emitOpError("dsa-to-gpu: a batched decode step (dsa.attention with start_pos a tensor<B x i64>, "
                              "decomposed into a loop over the sequences) is not lowered to the GPU yet; compile "
                              "it for the CPU");
  for (Operation &op : block.without_terminator())
    if (failed(checkSupported(&op)))
      return failure();
  if (!isa<func::ReturnOp>(block.getTerminator()))
    return func.emitOpError("dsa-to-gpu: expected func.return");
  return true;
}

//===----------------------------------------------------------------------===//
// The patterns
//===----------------------------------------------------------------------===//

/// One op family's lowering: OpLowering::*Lower at the op, its results replaced by the new tensors.
template <typename OpT, LogicalResult (OpLowering::*Lower)(OpT)>
struct GPUOpLowering : OpConversionPattern<OpT> {
  GPUOpLowering(MLIRContext *ctx, DSAToGPUState &state) : OpConversionPattern<OpT>(ctx), state(state) {}
  LogicalResult matchAndRewrite(OpT op, typename OpConversionPattern<OpT>::OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    OpLowering lowering(rewriter, op, adaptor.getOperands(), state);
    if (failed((lowering.*Lower)(op)))
      return failure();
    rewriter.replaceOp(op, lowering.results());
    return success();
  }
  DSAToGPUState &state;
};

/// dsa.probe: compiled backends do not record probes.
struct DropProbe : OpConversionPattern<ProbeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ProbeOp op, OpAdaptor, ConversionPatternRewriter &rewriter) const override {
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void populateDSAToGPUPatterns(RewritePatternSet &patterns, DSAToGPUState &state) {
  MLIRContext *ctx = patterns.getContext();
  // Window-only layers (sections 3, 4, 10, 11).
  patterns.add<GPUOpLowering<PositionsOp, &OpLowering::lowerPositions>,
               GPUOpLowering<LinearOp, &OpLowering::lowerLinear>,
               GPUOpLowering<RmsNormOp, &OpLowering::lowerRmsNorm>,
               GPUOpLowering<ApplyRopeOp, &OpLowering::lowerApplyRope>,
               GPUOpLowering<ActQuantFp8Op, &OpLowering::lowerActQuant>,
               GPUOpLowering<RingUpdateOp, &OpLowering::lowerRingUpdate>,
               GPUOpLowering<WindowKvOp, &OpLowering::lowerWindowKv>,
               GPUOpLowering<WindowIndicesOp, &OpLowering::lowerWindowIndices>,
               GPUOpLowering<SparseAttnOp, &OpLowering::lowerSparseAttn>,
               GPUOpLowering<GroupedOutputOp, &OpLowering::lowerGroupedOutput>>(ctx, state);
  // Compressed attention (sections 2, 5-9).
  patterns.add<GPUOpLowering<CompressPoolOp, &OpLowering::lowerCompressPool>,
               GPUOpLowering<Fp4QuantE8M0Op, &OpLowering::lowerFp4QuantE8M0>,
               GPUOpLowering<Fp4QuantE4M3Op, &OpLowering::lowerFp4QuantE4M3>,
               GPUOpLowering<CacheWriteOp, &OpLowering::lowerCacheWrite>,
               GPUOpLowering<IndexerScoresOp, &OpLowering::lowerIndexerScores>,
               GPUOpLowering<CompressVisibilityOp, &OpLowering::lowerCompressVisibility>,
               GPUOpLowering<ApplyCandidatesOp, &OpLowering::lowerApplyCandidates>,
               GPUOpLowering<SelectCandidateBlocksOp, &OpLowering::lowerSelectCandidateBlocks>,
               GPUOpLowering<IndexerTopkOp, &OpLowering::lowerIndexerTopk>>(ctx, state);
  // The upstream tensor ops around them that need a kernel or a check (the rest is bufferized upstream).
  patterns.add<GPUOpLowering<arith::ExtFOp, &OpLowering::lowerExtF>,
               GPUOpLowering<arith::TruncFOp, &OpLowering::lowerTruncF>,
               GPUOpLowering<tensor::ConcatOp, &OpLowering::lowerConcat>,
               GPUOpLowering<tensor::ExtractSliceOp, &OpLowering::lowerExtractSlice>>(ctx, state);
  patterns.add<DropProbe>(ctx);
}

void configureDSAToGPUTarget(ConversionTarget &target) {
  target.addIllegalDialect<DSADialect>();
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  target.addDynamicallyLegalOp<arith::ExtFOp, arith::TruncFOp>(
      [](Operation *op) { return !isa<RankedTensorType>(op->getResult(0).getType()); });
  target.addIllegalOp<tensor::ConcatOp>();
  target.addDynamicallyLegalOp<tensor::ExtractSliceOp>([](tensor::ExtractSliceOp op) { return isClampedSlice(op); });
}

namespace {

struct ConvertDSAToGPUPass : impl::ConvertDSAToGPUBase<ConvertDSAToGPUPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    impl::ConvertDSAToGPUBase<ConvertDSAToGPUPass>::getDependentDialects(registry);
    registry.insert<bufferization::BufferizationDialect, func::FuncDialect, math::MathDialect, tensor::TensorDialect,
                    LLVM::LLVMDialect>();
    // What the NVVM pipeline after this pass needs from the context: the NVVM target attribute's serializer,
    // the ConvertToLLVM interfaces (gpu-to-llvm) and the LLVM IR translations (gpu-module-to-binary).
    registerAllExtensions(registry);
    registerAllGPUToLLVMIRTranslations(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    bool any = false;
    for (func::FuncOp f : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      FailureOr<bool> relevant = prepareFunction(f);
      if (failed(relevant))
        return signalPassFailure();
      any |= *relevant;
    }
    if (!any)
      return;
    // The RoPE tables: one private constant global per distinct table, at the start of the module.
    OpBuilder gb = OpBuilder::atBlockBegin(module.getBody());
    int64_t tables = llvm::count_if(module.getOps<memref::GlobalOp>(),
                                    [](memref::GlobalOp g) { return g.getSymName().starts_with(kRopePrefix); });
    module.walk([&](ApplyRopeOp op) {
      DenseElementsAttr data = ropeTableData(ctx, op.getRope());
      if (ropeGlobal(module, data))
        return;
      auto type = MemRefType::get(data.getType().getShape(), gb.getF32Type());
      memref::GlobalOp::create(gb, op.getLoc(), (kRopePrefix + "_" + Twine(tables++)).str(),
                               gb.getStringAttr("private"), type, data, /*constant=*/true, IntegerAttr());
    });

    DSAToGPUState state;
    RewritePatternSet patterns(ctx);
    populateDSAToGPUPatterns(patterns, state);
    ConversionTarget target(*ctx);
    configureDSAToGPUTarget(target);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    // The private declarations the new calls name: the kernel launches (one per kernel, from the first call's
    // operand types), the host top-k, the run-time check hook.
    llvm::MapVector<StringRef, FunctionType> callees; // in the order of the first calls: a stable module layout
    module.walk([&](func::CallOp call) {
      callees.try_emplace(call.getCallee(), FunctionType::get(ctx, call.getOperandTypes(), call.getResultTypes()));
    });
    for (auto &[name, type] : callees) {
      StringRef what;
      if (name.starts_with(kLaunchPrefix))
        what = "a dsa kernel launch";
      else if (name == kHostTopkSymbol)
        what = "the host top-k of dsa-to-gpu";
      else if (name == ::dsa::abi::kFailSymbol)
        what = "the run-time check hook";
      else
        continue;
      if (failed(declareFunction(module, name, type, what)))
        return signalPassFailure();
    }
    // The top-k runtime function the host top-k will call (dsa-gpu-launch-kernels), declared now so that a symbol
    // taken by something else is this pass's diagnostic.
    if (callees.count(kHostTopkSymbol) && failed(declareTopk(module)))
      return signalPassFailure();
  }
};

} // namespace

} // namespace mlir::dsa
