//===- DSAToGPU.cpp - dsa -> gpu dialect kernels -------------------------------===//
//
// `dsa-to-gpu` rewrites every function that computes with the dsa primitives (the output of
// `dsa-decompose-attention`, window-only and compressed layers) into host code on memrefs that launches the kernels of
// Kernels.mlir (compiled into this file, see CMakeLists.txt):
//
//   tensor<...xT> function arguments/results -> memref<...xT> (identity layout; device memory: the caller passes
//                                               device buffers and gets device buffers back)
//   dsa.positions       -> gpu.alloc + @dsa_positions
//   dsa.linear (bf16)   -> gpu.alloc + @dsa_gemm_bf16 (one batch)
//   dsa.rms_norm (bf16) -> gpu.alloc + @dsa_rms_norm_bf16
//   dsa.apply_rope      -> gpu.alloc + @dsa_apply_rope; the frequency table is computed here at compile time by
//                          dsa::ropeFrequencies (the reference's own table) and copied to the device
//   dsa.act_quant_fp8   -> gpu.alloc + @dsa_act_quant_fp8
//   dsa.ring_update     -> gpu.alloc + @dsa_ring_update (a new ring; the old one is not modified)
//   dsa.window_kv       -> no kernel: the step's kv rows (start_pos == 0) or the ring, selected on the host
//   dsa.window_indices  -> gpu.alloc + @dsa_window_indices
//   dsa.sparse_attn     -> gpu.alloc (output, f32 scratch) + @dsa_sparse_attn
//   dsa.grouped_output  -> gpu.alloc + @dsa_gemm_bf16 (one batch per group)
//   dsa.probe           -> dropped (compiled backends do not record probes)
//   compressed attention (sections 2, 5-9):
//   dsa.linear (f32)    -> gpu.alloc + @dsa_linear_f32 (the ratio >= 2 compressor)
//   dsa.compress_pool   -> @dsa_compress_state (new states), then @dsa_compress_pool over the completed groups
//   dsa.fp4_quant_*     -> @dsa_fp4_quant (scale kind as an argument)
//   dsa.cache_write     -> @dsa_cache_write (a new cache)
//   dsa.indexer_scores, dsa.compress_visibility, dsa.apply_candidates -> one kernel each
//   dsa.select_candidate_blocks -> @dsa_candidate_block_scores, host top-k, @dsa_candidate_mask
//   dsa.indexer_topk    -> @dsa_extf_bf16_f32, host top-k, @dsa_topk_map
//     (host top-k: download the f32 values, call the CPU runtime's dsa_cpu_topk_set = torch's CPU tie order,
//     assert its status, upload the i64 picks; only tie_order = torch_cpu is accepted)
//   arith.extf / truncf on tensors -> @dsa_extf_bf16_f32 / @dsa_truncf_f32_bf16; tensor.cast -> memref.cast;
//   arith.select of tensors on an i1 -> a select of buffers; tensor.extract_slice of leading rows -> a
//   reinterpret_cast view; tensor.concat of two tensors -> @dsa_concat_rows_bf16 / @dsa_concat_cols_i32
//   tensor.dim / expand_shape / collapse_shape -> their memref counterparts; scalar ops are kept; unused pure ops
//   are skipped.
//
// Facts the verifiers cannot check for dynamic shapes (matching row counts, start_pos >= 0, one-token decode
// steps, scores widths, cache capacity) become cf.assert on the host, with a message naming the op and operand.
// Intermediate buffers that are not returned are freed before the return; one that a returned select of buffers
// (arith.select of tensors, window_kv) may leave unselected is freed in an scf.if on the condition that leaves it
// unselected (argument buffers are never freed). The ops are emitted synchronously; `gpu-async-region` (in
// --dsa-gpu-pipeline) threads them onto one stream.
//
// Not lowered (a diagnostic names the op): rms_norm and fp4 round trips of an f32 x, dsa.attention (run
// dsa-decompose-attention first), other slices / concats / elementwise selects, control flow and calls on tensors.
//
//===----------------------------------------------------------------------===//
#include "dsa/Conversion/Passes.h"
#include "dsa/Dialect/DSA/IR/DSAOps.h"
#include "dsa/Dialect/DSA/IR/RopeParams.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"
#include "dsa/ABI/GpuKernels.h"
#include "dsa/ABI/RuntimeFunctions.h"
#include "dsa/Core/Rope.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <string>

namespace mlir::dsa {
#define GEN_PASS_DEF_CONVERTDSATOGPU
#include "dsa/Conversion/Passes.h.inc"

namespace {

// kKernelLibrary: the text of Kernels.mlir (generated by EmbedKernels.cmake).
#include "DSAGPUKernelLibrary.inc"

constexpr llvm::StringLiteral kKernelModuleName = ::dsa::abi::kGpuKernelModule;

/// Threads per block of the 1-D elementwise kernels, the GEMM tile edge, the per-row kernels' block: core's kernel
/// table (dsa/ABI/GpuKernels.h), shared with the runtime side that launches the kernels directly.
constexpr int64_t kElementwiseBlock = ::dsa::abi::kGpuElementwiseBlock;
constexpr int64_t kQuantBlock = ::dsa::abi::kGpuQuantBlock;
constexpr int64_t kGemmTile = ::dsa::abi::kGpuGemmTile;
constexpr int64_t kRowBlock = ::dsa::abi::kGpuRowBlock;
constexpr int64_t kAttnBlock = ::dsa::abi::kGpuAttnBlock;

MemRefType memrefFor(Type t) {
  auto rt = cast<RankedTensorType>(t);
  return MemRefType::get(rt.getShape(), rt.getElementType());
}

bool hasTensor(TypeRange types) {
  return llvm::any_of(types, [](Type t) { return isa<TensorType>(t); });
}

/// Lowers one function. Straight-line host code is emitted into a new block; values map old -> new.
class FunctionLowering {
public:
  FunctionLowering(func::FuncOp func, gpu::GPUModuleOp kernels, ModuleOp library, ModuleOp module)
      : func(func), kernels(kernels), library(library), module(module), b(func.getContext()) {}

  LogicalResult run();

private:
  // ---- helpers -------------------------------------------------------------------------------------------------
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value i32c(int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v); }
  Value f32c(float v) { return arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(v)); }
  Value mul(Value a, Value c) { return arith::MulIOp::create(b, loc, a, c); }
  Value ceilDiv(Value a, int64_t d) { return arith::CeilDivUIOp::create(b, loc, a, idx(d)); }
  Value divu(Value a, Value c) { return arith::DivUIOp::create(b, loc, a, c); }
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
      v = memref::CollapseShapeOp::create(b, loc, m, ArrayRef<ReassociationIndices>{all});
    }
    auto dynType = MemRefType::get({ShapedType::kDynamic}, t.getElementType());
    if (v.getType() != dynType)
      v = memref::CastOp::create(b, loc, dynType, v);
    return v;
  }

  /// A device buffer of type `t` whose dynamic dims are `dynSizes`; freed at the return unless returned.
  Value alloc(MemRefType t, ValueRange dynSizes) {
    Value m = gpu::AllocOp::create(b, loc, t, /*asyncToken=*/Type(), ValueRange{}, dynSizes, ValueRange{},
                                   /*hostShared=*/false)
                  .getMemref();
    allocs.insert(m);
    return m;
  }
  /// Allocates the buffer for tensor result `r`, taking dynamic dims from `dims` (the full shape, as values).
  Value allocLike(Value r, ArrayRef<Value> dims) {
    MemRefType t = memrefFor(r.getType());
    SmallVector<Value> dyn;
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (t.isDynamicDim(i))
        dyn.push_back(dims[i]);
    return alloc(t, dyn);
  }

  void check(Value cond, const std::string &msg) { cf::AssertOp::create(b, loc, cond, msg); }
  void checkEq(Value a, Value c, const std::string &msg) {
    if (auto ca = getConstantIntValue(a))
      if (auto cc = getConstantIntValue(c))
        if (*ca == *cc)
          return;
    check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a, c), msg);
  }

  /// Clones kernel `name` and the device helpers it calls (transitively) into the module's gpu.module.
  gpu::GPUFuncOp kernel(StringRef name) {
    if (auto k = kernels.lookupSymbol<gpu::GPUFuncOp>(name))
      return k;
    auto libModule = *library.getOps<gpu::GPUModuleOp>().begin();
    OpBuilder kb = OpBuilder::atBlockEnd(kernels.getBody());
    // Breadth first, callees in the order they are called: the kernel, then its helpers (a stable layout).
    SmallVector<Operation *> work{libModule.lookupSymbol(name)};
    assert(work.front() && "kernel missing from Kernels.mlir");
    gpu::GPUFuncOp result;
    for (size_t next = 0; next < work.size(); ++next) {
      Operation *src = work[next];
      if (kernels.lookupSymbol(SymbolTable::getSymbolName(src)))
        continue;
      Operation *copy = kb.clone(*src);
      if (auto k = dyn_cast<gpu::GPUFuncOp>(copy); k && k.getName() == name)
        result = k;
      src->walk([&](Operation *op) {
        for (NamedAttribute attr : op->getAttrs())
          if (auto ref = dyn_cast<FlatSymbolRefAttr>(attr.getValue()))
            if (Operation *callee = libModule.lookupSymbol(ref.getValue()))
              work.push_back(callee);
      });
    }
    return result;
  }

  /// gpu.launch_func of `name`, skipped at run time when the grid is empty (CUDA rejects a zero grid).
  void launch(StringRef name, std::array<Value, 3> grid, std::array<int64_t, 3> block, ValueRange args) {
    gpu::GPUFuncOp k = kernel(name);
    Value total = mul(mul(grid[0], grid[1]), grid[2]);
    Value nonEmpty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, total, idx(0));
    auto ifOp = scf::IfOp::create(b, loc, nonEmpty, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    gpu::LaunchFuncOp::create(b, loc, k, gpu::KernelDim3{grid[0], grid[1], grid[2]},
                              gpu::KernelDim3{idx(block[0]), idx(block[1]), idx(block[2])},
                              /*dynamicSharedMemorySize=*/Value(), args);
  }

  Value lookup(Value v) { return mapping.lookup(v); }
  /// Maps `oldV` to `newV`, a view of (or the same buffer as) each of `viewOf` (new values).
  void setResult(Value oldV, Value newV, ArrayRef<Value> viewOf = {}) {
    mapping.map(oldV, newV);
    if (!allocs.contains(newV) && !aliases.count(newV))
      aliases[newV] = Alias{SmallVector<Value>(viewOf), Value()};
  }
  /// Maps `oldV` to `newV` = (cond ? t : f), a host choice between two buffers (new values): at the return, an
  /// allocation reached only through the unselected side is freed under the condition that leaves it unselected.
  void setChoice(Value oldV, Value newV, Value cond, Value t, Value f) {
    mapping.map(oldV, newV);
    if (!allocs.contains(newV) && !aliases.count(newV))
      aliases[newV] = Alias{{t, f}, cond};
  }

  /// Whether allocation `a` is reachable from `v` at run time: never, always, or when the i1 `value` holds.
  struct Liveness {
    enum Kind { Never, Always, When } kind = Never;
    Value value;
  };
  Value notI1(Value c) {
    return arith::XOrIOp::create(b, loc, c, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  }
  Liveness anyOf(Liveness x, Liveness y) {
    if (x.kind == Liveness::Always || y.kind == Liveness::Never)
      return x;
    if (y.kind == Liveness::Always || x.kind == Liveness::Never)
      return y;
    if (x.value == y.value)
      return x;
    return {Liveness::When, arith::OrIOp::create(b, loc, x.value, y.value)};
  }
  /// (c ? x : y) as a liveness.
  Liveness choose(Value c, Liveness x, Liveness y) {
    if (x.kind == y.kind && x.value == y.value)
      return x;
    auto when = [&](Value v) { return Liveness{Liveness::When, v}; };
    auto asI1 = [&](Liveness l) -> Value {
      if (l.kind == Liveness::When)
        return l.value;
      return arith::ConstantIntOp::create(b, loc, b.getI1Type(), l.kind == Liveness::Always ? 1 : 0);
    };
    if (x.kind == Liveness::Always && y.kind == Liveness::Never)
      return when(c);
    if (x.kind == Liveness::Never && y.kind == Liveness::Always)
      return when(notI1(c));
    return when(arith::SelectOp::create(b, loc, c, asI1(x), asI1(y)));
  }
  Liveness liveness(Value a, Value v, unsigned depth = 0) {
    if (v == a)
      return {Liveness::Always, Value()};
    if (depth > 64) // deeper than any lowering makes: keep the buffer (a leak is safer than a use after free)
      return {Liveness::Always, Value()};
    auto it = aliases.find(v);
    if (it == aliases.end())
      return {Liveness::Never, Value()};
    Alias alias = it->second;
    if (alias.cond)
      return choose(alias.cond, liveness(a, alias.sources[0], depth + 1), liveness(a, alias.sources[1], depth + 1));
    Liveness l;
    for (Value s : alias.sources)
      l = anyOf(l, liveness(a, s, depth + 1));
    return l;
  }

  // ---- ops -----------------------------------------------------------------------------------------------------
  LogicalResult lower(Operation *op);
  LogicalResult lowerLinear(LinearOp op);
  /// dsa.linear as a flat GEMM, shared by the bf16 and f32 kernels: x [.., K] read as M = prod(..) rows, weight
  /// [N, K] (its column count checked against K), and the new result buffer y [.., N].
  struct LinearOperands {
    Value x, w, y, M, N, K;
  };
  LinearOperands linearOperands(LinearOp op);
  LogicalResult lowerRmsNorm(RmsNormOp op);
  LogicalResult lowerPositions(PositionsOp op);
  LogicalResult lowerApplyRope(ApplyRopeOp op);
  LogicalResult lowerActQuant(ActQuantFp8Op op);
  LogicalResult lowerRingUpdate(RingUpdateOp op);
  LogicalResult lowerWindowKv(WindowKvOp op);
  LogicalResult lowerWindowIndices(WindowIndicesOp op);
  LogicalResult lowerSparseAttn(SparseAttnOp op);
  LogicalResult lowerGroupedOutput(GroupedOutputOp op);
  Value ropeTable(ApplyRopeOp op);
  // Compressed attention (sections 2, 5-9).
  LogicalResult lowerLinearF32(LinearOp op);
  LogicalResult lowerCompressPool(CompressPoolOp op);
  LogicalResult lowerFp4Quant(Operation *op, Value xOld, Value result, int64_t block, bool e4m3Scale);
  LogicalResult lowerCacheWrite(CacheWriteOp op);
  LogicalResult lowerIndexerScores(IndexerScoresOp op);
  LogicalResult lowerCompressVisibility(CompressVisibilityOp op);
  LogicalResult lowerApplyCandidates(ApplyCandidatesOp op);
  LogicalResult lowerSelectCandidateBlocks(SelectCandidateBlocksOp op);
  LogicalResult lowerIndexerTopk(IndexerTopkOp op);
  LogicalResult lowerElementwiseCast(Operation *op);
  LogicalResult lowerExtractSlice(tensor::ExtractSliceOp op);
  LogicalResult lowerConcat(tensor::ConcatOp op);
  /// The checks of the scores consumers (step checks, then width == (start_pos + s) // ratio), as cf.asserts
  /// naming the op; returns s and width.
  std::pair<Value, Value> scoresChecks(Operation *op, Value scores, Value start, int64_t ratio);
  /// The host top-k: downloads `values` (device f32 [rows, n]), runs the runtime's dsa_cpu_topk_set (torch's CPU
  /// tie order, section 9) on the host, uploads and returns the picks (device i64 [rows, k], each row ascending).
  Value hostTopk(StringRef opName, Value values, Value rows, Value n, Value k);
  Value i64c(int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); }
  Value toI64(Value index) { return arith::IndexCastOp::create(b, loc, b.getI64Type(), index); }
  Value toIndex(Value i64) { return arith::IndexCastOp::create(b, loc, b.getIndexType(), i64); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) { return arith::CmpIOp::create(b, loc, p, x, y); }

  func::FuncOp func;
  gpu::GPUModuleOp kernels;
  ModuleOp library;
  ModuleOp module;
  OpBuilder b;
  Location loc = UnknownLoc::get(func.getContext());
  IRMapping mapping;
  llvm::SetVector<Value> allocs;
  /// A memref value that is not an allocation: a view of its sources, or (cond set) cond ? sources[0] : sources[1].
  struct Alias {
    SmallVector<Value> sources;
    Value cond;
  };
  DenseMap<Value, Alias> aliases;
  DenseMap<Operation *, Value> deviceTables; ///< rope table global -> its device copy

public:
  bool needsTopk = false; ///< a host top-k call was emitted (the module declares dsa_cpu_topk_set)
};

LogicalResult FunctionLowering::lowerPositions(PositionsOp op) {
  Value start = lookup(op.getStart()), count = lookup(op.getCount());
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, start,
                              arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0)),
        "dsa.positions: operand 'start' must be >= 0");
  Value out = allocLike(op.getResult(), {count});
  Value stride = arith::ConstantIntOp::create(b, loc, b.getI64Type(), op.getStrideAttr().getInt());
  launch("dsa_positions", {ceilDiv(count, kElementwiseBlock), idx(1), idx(1)}, {kElementwiseBlock, 1, 1},
         {flat(out), start, count, stride});
  setResult(op.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lowerLinear(LinearOp op) {
  auto xt = cast<RankedTensorType>(op.getX().getType());
  if (xt.getElementType().isF32())
    return lowerLinearF32(op);
  auto [x, w, y, M, N, K] = linearOperands(op);
  Value z = idx(0);
  launch("dsa_gemm_bf16", {ceilDiv(N, kGemmTile), ceilDiv(M, kGemmTile), idx(1)}, {kGemmTile, kGemmTile, 1},
         {flat(x), flat(w), flat(y), M, N, K, K, N, z, z, z});
  setResult(op.getResult(), y);
  return success();
}

FunctionLowering::LinearOperands FunctionLowering::linearOperands(LinearOp op) {
  const int64_t r = cast<RankedTensorType>(op.getX().getType()).getRank();
  Value x = lookup(op.getX()), w = lookup(op.getWeight());
  Value K = dim(x, r - 1), N = dim(w, 0);
  checkEq(dim(w, 1), K, "dsa.linear: operand 'weight' has a column count that differs from x's last dimension");
  Value M = dimProduct(x, 0, r - 1);
  SmallVector<Value> shape;
  for (int64_t i = 0; i + 1 < r; ++i)
    shape.push_back(dim(x, i));
  shape.push_back(N);
  return {x, w, allocLike(op.getResult(), shape), M, N, K};
}

LogicalResult FunctionLowering::lowerRmsNorm(RmsNormOp op) {
  auto xt = cast<RankedTensorType>(op.getX().getType());
  if (!xt.getElementType().isBF16())
    return op.emitOpError("dsa-to-gpu: rms_norm of an f32 x (the ratio >= 2 compressor's) is not lowered to the "
                          "GPU yet");
  float eps = op.getEps().convertToFloat();
  if (!(eps >= 0.0f) || !std::isfinite(eps))
    return op.emitOpError("dsa-to-gpu: attribute 'eps' must be finite and >= 0");
  Value x = lookup(op.getX()), w = lookup(op.getWeight());
  const int64_t r = xt.getRank();
  Value D = dim(x, r - 1);
  checkEq(dim(w, 0), D, "dsa.rms_norm: operand 'weight' has a size that differs from x's last dimension");
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, D, idx(0)),
        "dsa.rms_norm: operand 'x' has an empty last dimension");
  Value rows = dimProduct(x, 0, r - 1);
  SmallVector<Value> shape;
  for (int64_t i = 0; i < r; ++i)
    shape.push_back(dim(x, i));
  Value y = allocLike(op.getResult(), shape);
  launch("dsa_rms_norm_bf16", {rows, idx(1), idx(1)}, {kRowBlock, 1, 1}, {flat(x), flat(w), flat(y), rows, D, f32c(eps)});
  setResult(op.getResult(), y);
  return success();
}

Value FunctionLowering::ropeTable(ApplyRopeOp op) {
  RopeAttr rope = op.getRope();
  ::dsa::RopeParams params = mlir::dsa::ropeParams(rope);
  std::vector<float> freqs = ::dsa::ropeFrequencies(params);
  if (freqs.empty())
    return Value();
  // One private constant global per distinct table.
  auto type = MemRefType::get({static_cast<int64_t>(freqs.size())}, b.getF32Type());
  auto data = DenseElementsAttr::get(RankedTensorType::get(type.getShape(), b.getF32Type()), ArrayRef<float>(freqs));
  memref::GlobalOp global;
  for (auto g : module.getOps<memref::GlobalOp>())
    if (g.getSymName().starts_with("__dsa_rope_freqs") && g.getInitialValueAttr() == data)
      global = g;
  if (!global) {
    OpBuilder gb = OpBuilder::atBlockBegin(module.getBody());
    int64_t existing = llvm::count_if(module.getOps<memref::GlobalOp>(), [](memref::GlobalOp g) {
      return g.getSymName().starts_with("__dsa_rope_freqs");
    });
    std::string name = "__dsa_rope_freqs_" + std::to_string(existing);
    global = memref::GlobalOp::create(gb, loc, name, gb.getStringAttr("private"), type, data, /*constant=*/true,
                                      /*alignment=*/IntegerAttr());
  }
  // One device copy per table and function (made at the first use; every use is in the function's block).
  Value &dev = deviceTables[global.getOperation()];
  if (!dev) {
    Value host = memref::GetGlobalOp::create(b, loc, type, global.getSymName());
    dev = alloc(type, {});
    gpu::MemcpyOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{}, dev, host);
  }
  return dev;
}

LogicalResult FunctionLowering::lowerApplyRope(ApplyRopeOp op) {
  auto xt = cast<RankedTensorType>(op.getX().getType());
  Value x = lookup(op.getX()), pos = lookup(op.getPositions());
  const int64_t r = xt.getRank();
  const int64_t rd = op.getRope().getRopeDim();
  if (!xt.isDynamicDim(r - 1) && rd > xt.getDimSize(r - 1))
    return op.emitOpError("dsa-to-gpu: rope_dim exceeds x's last dimension");
  Value table = ropeTable(op);
  if (!table)
    return op.emitOpError("dsa-to-gpu: attribute 'rope' has no frequency table (rope_dim must be positive and "
                          "even, theta positive)");
  Value s = dim(x, 0), hd = dim(x, r - 1);
  checkEq(dim(pos, 0), s, "dsa.apply_rope: operand 'positions' has a length that differs from x's row count");
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, hd, idx(rd)),
        "dsa.apply_rope: rope_dim exceeds operand 'x''s last dimension");
  Value rpt = dimProduct(x, 1, r - 1);
  SmallVector<Value> shape;
  for (int64_t i = 0; i < r; ++i)
    shape.push_back(dim(x, i));
  Value y = allocLike(op.getResult(), shape);
  Value total = mul(mul(s, rpt), hd);
  launch("dsa_apply_rope", {ceilDiv(total, kElementwiseBlock), idx(1), idx(1)}, {kElementwiseBlock, 1, 1},
         {flat(x), flat(pos), flat(table), flat(y), s, rpt, hd, idx(rd), i32c(op.getInverse() ? 1 : 0)});
  setResult(op.getResult(), y);
  return success();
}

LogicalResult FunctionLowering::lowerActQuant(ActQuantFp8Op op) {
  auto xt = cast<RankedTensorType>(op.getX().getType());
  const int64_t block = op.getBlockSizeAttr().getInt();
  if (block <= 0)
    return op.emitOpError("dsa-to-gpu: attribute 'block_size' must be > 0");
  Value x = lookup(op.getX());
  const int64_t r = xt.getRank();
  Value D = dim(x, r - 1);
  Value rem = arith::RemUIOp::create(b, loc, D, idx(block));
  checkEq(rem, idx(0), "dsa.act_quant_fp8: operand 'x''s last dimension is not a multiple of block_size");
  Value nblocks = divu(numel(x), idx(block));
  SmallVector<Value> shape;
  for (int64_t i = 0; i < r; ++i)
    shape.push_back(dim(x, i));
  Value y = allocLike(op.getResult(), shape);
  launch("dsa_act_quant_fp8", {ceilDiv(nblocks, kQuantBlock), idx(1), idx(1)}, {kQuantBlock, 1, 1},
         {flat(x), flat(y), nblocks, idx(block)});
  setResult(op.getResult(), y);
  return success();
}

LogicalResult FunctionLowering::lowerRingUpdate(RingUpdateOp op) {
  Value ring = lookup(op.getRing()), kv = lookup(op.getKv()), start = lookup(op.getStartPos());
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, start,
                              arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0)),
        "dsa.ring_update: operand 'start_pos' must be >= 0");
  Value W = dim(ring, 0), hd = dim(ring, 1), s = dim(kv, 0);
  checkEq(dim(kv, 1), hd, "dsa.ring_update: operand 'kv' has a row width that differs from the ring's");
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, W, idx(0)),
        "dsa.ring_update: operand 'ring' has no slots");
  Value out = allocLike(op.getResult(), {W, hd});
  launch("dsa_ring_update", {ceilDiv(mul(W, hd), kElementwiseBlock), idx(1), idx(1)}, {kElementwiseBlock, 1, 1},
         {flat(ring), flat(kv), flat(out), W, hd, s, start});
  setResult(op.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lowerWindowKv(WindowKvOp op) {
  Value kv = lookup(op.getKv()), ring = lookup(op.getRing()), start = lookup(op.getStartPos());
  Value zero64 = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, start, zero64),
        "dsa.window_kv: operand 'start_pos' must be >= 0");
  Value prefill = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, start, zero64);
  Value oneToken = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, dim(kv, 0), idx(1));
  check(arith::OrIOp::create(b, loc, prefill, oneToken),
        "dsa.window_kv: a step of several tokens at start_pos > 0 (operand 'kv'): multi-token steps at "
        "start_pos > 0 are split into decode steps by the runtime");
  checkEq(dim(kv, 1), dim(ring, 1), "dsa.window_kv: operand 'kv' has a row width that differs from the ring's");
  MemRefType rt = memrefFor(op.getResult().getType());
  auto castTo = [&](Value v) -> Value {
    return v.getType() == rt ? v : memref::CastOp::create(b, loc, rt, v).getResult();
  };
  Value sel = arith::SelectOp::create(b, loc, prefill, castTo(kv), castTo(ring));
  setChoice(op.getResult(), sel, prefill, kv, ring);
  return success();
}

LogicalResult FunctionLowering::lowerWindowIndices(WindowIndicesOp op) {
  const int64_t window = op.getWindowSizeAttr().getInt();
  if (window <= 0)
    return op.emitOpError("dsa-to-gpu: attribute 'window_size' must be > 0");
  Value start = lookup(op.getStartPos()), count = lookup(op.getCount());
  Value zero64 = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, start, zero64),
        "dsa.window_indices: operand 'start_pos' must be >= 0");
  check(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, count, idx(0)),
        "dsa.window_indices: operand 'count' must be >= 1");
  Value prefill = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, start, zero64);
  Value oneToken = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, count, idx(1));
  check(arith::OrIOp::create(b, loc, prefill, oneToken),
        "dsa.window_indices: a step of several tokens (operand 'count') at start_pos > 0: multi-token steps at "
        "start_pos > 0 are split into decode steps by the runtime");
  Value W = idx(window);
  Value width = arith::SelectOp::create(b, loc, prefill, arith::MinUIOp::create(b, loc, count, W), W);
  auto rt = cast<RankedTensorType>(op.getResult().getType());
  if (!rt.isDynamicDim(0))
    checkEq(count, idx(rt.getDimSize(0)), "dsa.window_indices: the result's static row count differs from 'count'");
  if (!rt.isDynamicDim(1))
    checkEq(width, idx(rt.getDimSize(1)),
            "dsa.window_indices: the result's static width differs from this step's window width");
  Value out = allocLike(op.getResult(), {count, width});
  launch("dsa_window_indices", {ceilDiv(mul(count, width), kElementwiseBlock), idx(1), idx(1)},
         {kElementwiseBlock, 1, 1}, {flat(out), start, count, W, width});
  setResult(op.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lowerSparseAttn(SparseAttnOp op) {
  float scale = op.getScale().convertToFloat();
  if (!(scale > 0.0f) || !std::isfinite(scale))
    return op.emitOpError("dsa-to-gpu: attribute 'scale' must be finite and > 0");
  Value q = lookup(op.getQ()), kv = lookup(op.getKv()), ind = lookup(op.getIndices()), sink = lookup(op.getSink());
  Value s = dim(q, 0), H = dim(q, 1), hd = dim(q, 2), n = dim(kv, 0), k = dim(ind, 1);
  checkEq(dim(kv, 1), hd, "dsa.sparse_attn: operand 'kv' has a row width that differs from q's head_dim");
  checkEq(dim(ind, 0), s, "dsa.sparse_attn: operand 'indices' has a row count that differs from q's token count");
  checkEq(dim(sink, 0), H, "dsa.sparse_attn: operand 'sink' has a size that differs from q's head count");
  Value o = allocLike(op.getResult(), {s, H, hd});
  Value sh = mul(s, H);
  // f32 scratch for the scores / probabilities, at least one element (an empty allocation is not portable).
  Value scratchSize = arith::MaxUIOp::create(b, loc, mul(sh, k), idx(1));
  Value scratch = alloc(MemRefType::get({ShapedType::kDynamic}, b.getF32Type()), {scratchSize});
  launch("dsa_sparse_attn", {sh, idx(1), idx(1)}, {kAttnBlock, 1, 1},
         {flat(q), flat(kv), flat(ind), flat(sink), flat(o), scratch, s, H, hd, n, k, f32c(scale)});
  setResult(op.getResult(), o);
  return success();
}

LogicalResult FunctionLowering::lowerGroupedOutput(GroupedOutputOp op) {
  const int64_t groups = op.getGroupsAttr().getInt();
  if (groups <= 0)
    return op.emitOpError("dsa-to-gpu: attribute 'groups' must be > 0");
  Value o = lookup(op.getO()), woA = lookup(op.getWoA());
  Value s = dim(o, 0), H = dim(o, 1), hd = dim(o, 2);
  Value G = idx(groups);
  checkEq(arith::RemUIOp::create(b, loc, H, G), idx(0),
          "dsa.grouped_output: operand 'o''s head count is not divisible by groups");
  Value rowWidth = mul(H, hd);
  Value gw = divu(rowWidth, G);
  checkEq(dim(woA, 1), gw, "dsa.grouped_output: operand 'wo_a' has a column count that differs from "
                           "n_heads*head_dim/groups");
  checkEq(arith::RemUIOp::create(b, loc, dim(woA, 0), G), idx(0),
          "dsa.grouped_output: operand 'wo_a''s row count is not a multiple of groups");
  Value R = divu(dim(woA, 0), G);
  Value GR = dim(woA, 0);
  Value y = allocLike(op.getResult(), {s, GR});
  launch("dsa_gemm_bf16", {ceilDiv(R, kGemmTile), ceilDiv(s, kGemmTile), G}, {kGemmTile, kGemmTile, 1},
         {flat(o), flat(woA), flat(y), s, R, gw, rowWidth, GR, gw, mul(R, gw), R});
  setResult(op.getResult(), y);
  return success();
}

//===----------------------------------------------------------------------===//
// Compressed attention (sections 2, 5-9; design-compressed.md)
//===----------------------------------------------------------------------===//

LogicalResult FunctionLowering::lowerLinearF32(LinearOp op) {
  auto [x, w, y, M, N, K] = linearOperands(op);
  launch("dsa_linear_f32", {ceilDiv(mul(M, N), kElementwiseBlock), idx(1), idx(1)}, {kElementwiseBlock, 1, 1},
         {flat(x), flat(w), flat(y), M, N, K});
  setResult(op.getResult(), y);
  return success();
}

/// The step checks of the compressed kernels (compress_detail::checkStep): start_pos >= 0, s >= 1, one token
/// when start_pos > 0.
static void stepChecks(OpBuilder &b, Location loc, StringRef name, StringRef rowsOperand,
                       Value start, Value s) {
  Value zero64 = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
  cf::AssertOp::create(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, start, zero64),
                       (name + ": operand 'start_pos' must be >= 0").str());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  cf::AssertOp::create(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, s, zero),
                       (name + ": operand '" + rowsOperand + "' has no rows (an empty step)").str());
  Value prefill = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, start, zero64);
  Value one = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, s, arith::ConstantIndexOp::create(b, loc, 1));
  cf::AssertOp::create(b, loc, arith::OrIOp::create(b, loc, prefill, one),
                       (name + ": a step of several tokens (operand '" + rowsOperand +
                        "') at start_pos > 0: multi-token steps at start_pos > 0 are split into decode steps by the "
                        "runtime")
                           .str());
}

LogicalResult FunctionLowering::lowerCompressPool(CompressPoolOp op) {
  const int64_t r = static_cast<int64_t>(op.getRatio());
  if (r < 2)
    return op.emitOpError("dsa-to-gpu: attribute 'ratio' must be >= 2");
  Value kv = lookup(op.getKv()), score = lookup(op.getScore()), kvState = lookup(op.getKvState()),
        scoreState = lookup(op.getScoreState()), start = lookup(op.getStartPos());
  Value s = dim(kv, 0), hd = dim(kv, 1);
  checkEq(dim(score, 0), s, "dsa.compress_pool: operand 'score' has a row count that differs from kv's");
  checkEq(dim(score, 1), hd, "dsa.compress_pool: operand 'score' has a row width that differs from kv's");
  checkEq(dim(kvState, 0), idx(r), "dsa.compress_pool: operand 'kv_state' does not have ratio rows");
  checkEq(dim(kvState, 1), hd, "dsa.compress_pool: operand 'kv_state' has a row width that differs from kv's");
  checkEq(dim(scoreState, 0), idx(r), "dsa.compress_pool: operand 'score_state' does not have ratio rows");
  checkEq(dim(scoreState, 1), hd,
          "dsa.compress_pool: operand 'score_state' has a row width that differs from kv's");
  stepChecks(b, loc, "dsa.compress_pool", "kv", start, s);
  Value newKv = allocLike(op.getNewKvState(), {idx(r), hd});
  Value newScore = allocLike(op.getNewScoreState(), {idx(r), hd});
  launch("dsa_compress_state", {ceilDiv(mul(idx(r), hd), kElementwiseBlock), idx(1), idx(1)},
         {kElementwiseBlock, 1, 1},
         {flat(kv), flat(score), flat(kvState), flat(scoreState), flat(newKv), flat(newScore), idx(r), hd, s, start});
  // Completed groups: s // r in prefill; in decode one when (start_pos + 1) % r == 0 (pooling the new state).
  Value prefill = cmp(arith::CmpIPredicate::eq, start, i64c(0));
  Value completes = cmp(arith::CmpIPredicate::eq,
                        arith::RemUIOp::create(b, loc, arith::AddIOp::create(b, loc, start, i64c(1)), i64c(r)),
                        i64c(0));
  Value g = arith::SelectOp::create(b, loc, prefill, divu(s, idx(r)),
                                    arith::SelectOp::create(b, loc, completes, idx(1), idx(0)));
  auto rt = cast<RankedTensorType>(op.getPooled().getType());
  if (!rt.isDynamicDim(0))
    checkEq(g, idx(rt.getDimSize(0)), "dsa.compress_pool: the result 'pooled' has a static row count that differs "
                                      "from this step's completed groups");
  Value pooled = allocLike(op.getPooled(), {g, hd});
  Value srcKv = arith::SelectOp::create(b, loc, prefill, flat(kv), flat(newKv));
  Value srcScore = arith::SelectOp::create(b, loc, prefill, flat(score), flat(newScore));
  launch("dsa_compress_pool", {ceilDiv(mul(g, hd), kElementwiseBlock), idx(1), idx(1)}, {kElementwiseBlock, 1, 1},
         {srcKv, srcScore, flat(pooled), g, idx(r), hd});
  setResult(op.getPooled(), pooled);
  setResult(op.getNewKvState(), newKv);
  setResult(op.getNewScoreState(), newScore);
  return success();
}

LogicalResult FunctionLowering::lowerFp4Quant(Operation *op, Value xOld, Value result, int64_t block,
                                              bool e4m3Scale) {
  auto xt = cast<RankedTensorType>(xOld.getType());
  if (!xt.getElementType().isBF16())
    return op->emitOpError("dsa-to-gpu: the fp4 round trip of an f32 x is not lowered to the GPU (the model "
                           "quantises bf16 values)");
  if (block <= 0)
    return op->emitOpError("dsa-to-gpu: attribute 'block_size' must be > 0");
  Value x = lookup(xOld);
  const int64_t r = xt.getRank();
  Value D = dim(x, r - 1);
  checkEq(arith::RemUIOp::create(b, loc, D, idx(block)), idx(0),
          (op->getName().getStringRef() + ": operand 'x''s last dimension is not a multiple of block_size").str());
  Value nblocks = divu(numel(x), idx(block));
  SmallVector<Value> shape;
  for (int64_t i = 0; i < r; ++i)
    shape.push_back(dim(x, i));
  Value y = allocLike(result, shape);
  launch("dsa_fp4_quant", {ceilDiv(nblocks, kQuantBlock), idx(1), idx(1)}, {kQuantBlock, 1, 1},
         {flat(x), flat(y), nblocks, idx(block), i32c(e4m3Scale ? 1 : 0)});
  setResult(result, y);
  return success();
}

LogicalResult FunctionLowering::lowerCacheWrite(CacheWriteOp op) {
  const int64_t ratio = static_cast<int64_t>(op.getRatio());
  if (ratio < 1)
    return op.emitOpError("dsa-to-gpu: attribute 'ratio' must be >= 1");
  Value cache = lookup(op.getCache()), rows = lookup(op.getRows()), start = lookup(op.getStartPos());
  Value C = dim(cache, 0), w = dim(cache, 1), g = dim(rows, 0);
  check(cmp(arith::CmpIPredicate::sge, start, i64c(0)), "dsa.cache_write: operand 'start_pos' must be >= 0");
  checkEq(dim(rows, 1), w, "dsa.cache_write: operand 'rows' has a row width that differs from the cache's");
  Value first = toIndex(arith::DivUIOp::create(b, loc, start, i64c(ratio)));
  check(cmp(arith::CmpIPredicate::ule, arith::AddIOp::create(b, loc, first, g), C),
        "dsa.cache_write: operand 'rows' overflows the cache capacity (start_pos // ratio + its row count exceeds "
        "the cache's rows)");
  Value out = allocLike(op.getResult(), {C, w});
  launch("dsa_cache_write", {ceilDiv(mul(C, w), kElementwiseBlock), idx(1), idx(1)}, {kElementwiseBlock, 1, 1},
         {flat(cache), flat(rows), flat(out), C, w, first, g});
  setResult(op.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lowerIndexerScores(IndexerScoresOp op) {
  const int64_t ratio = static_cast<int64_t>(op.getRatio());
  if (ratio < 1)
    return op.emitOpError("dsa-to-gpu: attribute 'ratio' must be >= 1");
  float scale = op.getWeightScale().convertToFloat();
  if (!std::isfinite(scale))
    return op.emitOpError("dsa-to-gpu: attribute 'weight_scale' must be finite");
  Value iq = lookup(op.getIq()), w = lookup(op.getWeights()), keys = lookup(op.getKeys()),
        start = lookup(op.getStartPos());
  Value s = dim(iq, 0), IH = dim(iq, 1), ihd = dim(iq, 2), n = dim(keys, 0);
  check(cmp(arith::CmpIPredicate::sge, start, i64c(0)), "dsa.indexer_scores: operand 'start_pos' must be >= 0");
  checkEq(dim(w, 0), s, "dsa.indexer_scores: operand 'weights' has a row count that differs from iq's token count");
  checkEq(dim(w, 1), IH, "dsa.indexer_scores: operand 'weights' has a column count that differs from iq's heads");
  checkEq(dim(keys, 1), ihd, "dsa.indexer_scores: operand 'keys' has a row width that differs from iq's head dim");
  Value width = toIndex(arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, start, toI64(s)), i64c(ratio)));
  check(cmp(arith::CmpIPredicate::uge, n, width),
        "dsa.indexer_scores: operand 'keys' has fewer rows than width = (start_pos + s) // ratio");
  auto rt = cast<RankedTensorType>(op.getResult().getType());
  if (!rt.isDynamicDim(1))
    checkEq(width, idx(rt.getDimSize(1)),
            "dsa.indexer_scores: the result's static width differs from (start_pos + s) // ratio");
  Value out = allocLike(op.getResult(), {s, width});
  launch("dsa_indexer_scores", {ceilDiv(mul(s, width), kElementwiseBlock), idx(1), idx(1)},
         {kElementwiseBlock, 1, 1}, {flat(iq), flat(w), flat(keys), flat(out), s, IH, ihd, width, f32c(scale)});
  setResult(op.getResult(), out);
  return success();
}

std::pair<Value, Value> FunctionLowering::scoresChecks(Operation *op, Value scores, Value start, int64_t ratio) {
  std::string name = op->getName().getStringRef().str();
  Value s = dim(scores, 0), width = dim(scores, 1);
  stepChecks(b, loc, name, "scores", start, s);
  Value want = toIndex(arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, start, toI64(s)), i64c(ratio)));
  checkEq(width, want, name + ": operand 'scores' has a width that differs from (start_pos + s) // ratio");
  return {s, width};
}

LogicalResult FunctionLowering::lowerCompressVisibility(CompressVisibilityOp op) {
  const int64_t ratio = static_cast<int64_t>(op.getRatio());
  if (ratio < 1)
    return op.emitOpError("dsa-to-gpu: attribute 'ratio' must be >= 1");
  Value scores = lookup(op.getScores()), start = lookup(op.getStartPos());
  auto [s, width] = scoresChecks(op, scores, start, ratio);
  Value out = allocLike(op.getResult(), {s, width});
  launch("dsa_compress_visibility", {ceilDiv(mul(s, width), kElementwiseBlock), idx(1), idx(1)},
         {kElementwiseBlock, 1, 1}, {flat(scores), flat(out), s, width, start, i64c(ratio)});
  setResult(op.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lowerApplyCandidates(ApplyCandidatesOp op) {
  Value scores = lookup(op.getScores()), mask = lookup(op.getMask());
  Value s = dim(scores, 0), width = dim(scores, 1);
  checkEq(dim(mask, 0), s, "dsa.apply_candidates: operand 'mask' has a row count that differs from the scores'");
  checkEq(dim(mask, 1), width, "dsa.apply_candidates: operand 'mask' has a width that differs from the scores'");
  Value out = allocLike(op.getResult(), {s, width});
  Value n = mul(s, width);
  launch("dsa_apply_candidates", {ceilDiv(n, kElementwiseBlock), idx(1), idx(1)}, {kElementwiseBlock, 1, 1},
         {flat(scores), flat(mask), flat(out), n});
  setResult(op.getResult(), out);
  return success();
}

Value FunctionLowering::hostTopk(StringRef opName, Value values, Value rows, Value n, Value k) {
  MLIRContext *ctx = b.getContext();
  auto valuesType = MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type());
  auto picksType = MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getI64Type());
  Value hostValues = memref::AllocOp::create(b, loc, valuesType, ValueRange{rows, n});
  gpu::MemcpyOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{}, hostValues, values);
  Value hostPicks = memref::AllocOp::create(b, loc, picksType, ValueRange{rows, k});
  auto call = func::CallOp::create(b, loc, FlatSymbolRefAttr::get(ctx, ::dsa::abi::kTopkSymbol),
                                   TypeRange{b.getI32Type()}, ValueRange{hostValues, toI64(k), hostPicks});
  check(cmp(arith::CmpIPredicate::eq, call.getResult(0), i32c(0)),
        (opName + ": the host top-k (the runtime's dsa_cpu_topk_set, torch's CPU tie order) failed").str());
  Value picks = alloc(picksType, {rows, k});
  gpu::MemcpyOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{}, picks, hostPicks);
  memref::DeallocOp::create(b, loc, hostValues);
  memref::DeallocOp::create(b, loc, hostPicks);
  needsTopk = true;
  return picks;
}

LogicalResult FunctionLowering::lowerSelectCandidateBlocks(SelectCandidateBlocksOp op) {
  if (op.getTieOrder() != TieOrder::torch_cpu)
    return op.emitOpError("dsa-to-gpu implements only tie_order = torch_cpu (a host top-k, section 9)");
  const int64_t ratio = static_cast<int64_t>(op.getRatio());
  const int64_t bs = static_cast<int64_t>(op.getBlockSize());
  const int64_t topkBlocks = static_cast<int64_t>(op.getTopkBlocks());
  if (ratio < 1 || bs < 1 || topkBlocks < 0)
    return op.emitOpError("dsa-to-gpu: attributes 'ratio' and 'block_size' must be >= 1, 'topk_blocks' >= 0");
  Value scores = lookup(op.getScores()), start = lookup(op.getStartPos());
  auto [s, width] = scoresChecks(op, scores, start, ratio);
  Value nBlocks = ceilDiv(width, bs);
  Value k = arith::MinUIOp::create(b, loc, nBlocks, idx(topkBlocks));
  Value blockScores = alloc(MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type()),
                            {s, nBlocks});
  launch("dsa_candidate_block_scores", {ceilDiv(mul(s, nBlocks), kElementwiseBlock), idx(1), idx(1)},
         {kElementwiseBlock, 1, 1},
         {flat(scores), flat(blockScores), s, width, nBlocks, idx(bs), start, i64c(ratio)});
  Value picks = hostTopk("dsa.select_candidate_blocks", blockScores, s, nBlocks, k);
  Value mask = allocLike(op.getResult(), {s, width});
  launch("dsa_candidate_mask", {ceilDiv(mul(s, width), kElementwiseBlock), idx(1), idx(1)},
         {kElementwiseBlock, 1, 1}, {flat(blockScores), flat(picks), flat(mask), s, width, nBlocks, k, idx(bs)});
  setResult(op.getResult(), mask);
  return success();
}

LogicalResult FunctionLowering::lowerIndexerTopk(IndexerTopkOp op) {
  if (op.getTieOrder() != TieOrder::torch_cpu)
    return op.emitOpError("dsa-to-gpu implements only tie_order = torch_cpu (a host top-k, section 9)");
  const int64_t ratio = static_cast<int64_t>(op.getRatio());
  const int64_t indexTopk = static_cast<int64_t>(op.getIndexTopk());
  const int64_t window = static_cast<int64_t>(op.getWindowSize());
  if (ratio < 1 || window < 1 || indexTopk < 0)
    return op.emitOpError("dsa-to-gpu: attributes 'ratio' and 'window_size' must be >= 1, 'index_topk' >= 0");
  Value scores = lookup(op.getScores()), start = lookup(op.getStartPos());
  auto [s, width] = scoresChecks(op, scores, start, ratio);
  Value k = arith::MinUIOp::create(b, loc, width, idx(indexTopk));
  auto rt = cast<RankedTensorType>(op.getResult().getType());
  if (!rt.isDynamicDim(1))
    checkEq(k, idx(rt.getDimSize(1)), "dsa.indexer_topk: the result's static width differs from "
                                      "min(index_topk, width)");
  // The host top-k reads f32 values (torchCpuTopkSet's input): widen the bf16 scores on the device first.
  Value values = alloc(MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type()), {s, width});
  Value n = mul(s, width);
  launch("dsa_extf_bf16_f32", {ceilDiv(n, kElementwiseBlock), idx(1), idx(1)}, {kElementwiseBlock, 1, 1},
         {flat(scores), flat(values), n});
  Value picks = hostTopk("dsa.indexer_topk", values, s, width, k);
  Value prefill = cmp(arith::CmpIPredicate::eq, start, i64c(0));
  Value offset = arith::SelectOp::create(b, loc, prefill, toI64(s), i64c(window));
  Value out = allocLike(op.getResult(), {s, k});
  launch("dsa_topk_map", {ceilDiv(mul(s, k), kElementwiseBlock), idx(1), idx(1)}, {kElementwiseBlock, 1, 1},
         {flat(picks), flat(out), s, k, start, i64c(ratio), offset});
  setResult(op.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lowerElementwiseCast(Operation *op) {
  auto in = cast<RankedTensorType>(op->getOperand(0).getType());
  auto outType = cast<RankedTensorType>(op->getResult(0).getType());
  const char *kernelName = nullptr;
  if (isa<arith::ExtFOp>(op) && in.getElementType().isBF16() && outType.getElementType().isF32())
    kernelName = "dsa_extf_bf16_f32";
  else if (isa<arith::TruncFOp>(op) && in.getElementType().isF32() && outType.getElementType().isBF16())
    kernelName = "dsa_truncf_f32_bf16";
  if (!kernelName)
    return op->emitOpError("dsa-to-gpu: only bf16 -> f32 extf and f32 -> bf16 truncf on tensors are lowered");
  Value x = lookup(op->getOperand(0));
  SmallVector<Value> shape;
  for (int64_t i = 0; i < in.getRank(); ++i)
    shape.push_back(dim(x, i));
  Value y = allocLike(op->getResult(0), shape);
  Value n = numel(x);
  launch(kernelName, {ceilDiv(n, kElementwiseBlock), idx(1), idx(1)}, {kElementwiseBlock, 1, 1},
         {flat(x), flat(y), n});
  setResult(op->getResult(0), y);
  return success();
}

LogicalResult FunctionLowering::lowerExtractSlice(tensor::ExtractSliceOp op) {
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
    return op.emitOpError("dsa-to-gpu: only a slice of the leading rows of a tensor (offsets 0, strides 1, every "
                          "other dimension whole and static) is lowered");
  Value src = lookup(op.getSource());
  Value rows = op.isDynamicSize(0) ? lookup(op.getDynamicSizes().front()) : idx(op.getStaticSize(0));
  check(cmp(arith::CmpIPredicate::ule, rows, dim(src, 0)),
        "tensor.extract_slice: the slice has more rows than its source");
  SmallVector<OpFoldResult> sizes{rows};
  SmallVector<OpFoldResult> strides(r, b.getIndexAttr(1));
  int64_t stride = 1;
  for (int64_t i = r - 1; i >= 1; --i) {
    sizes.insert(sizes.begin() + 1, b.getIndexAttr(srcType.getDimSize(i)));
    strides[i] = b.getIndexAttr(stride);
    stride *= srcType.getDimSize(i);
  }
  strides[0] = b.getIndexAttr(stride);
  Value v = memref::ReinterpretCastOp::create(b, loc, memrefFor(resType), src, b.getIndexAttr(0), sizes, strides);
  setResult(op.getResult(), v, {src});
  return success();
}

LogicalResult FunctionLowering::lowerConcat(tensor::ConcatOp op) {
  if (op.getInputs().size() != 2)
    return op.emitOpError("dsa-to-gpu: only a concatenation of two tensors is lowered");
  auto type = cast<RankedTensorType>(op.getType());
  const int64_t r = type.getRank();
  const int64_t d = static_cast<int64_t>(op.getDim());
  Value a = lookup(op.getInputs()[0]), c = lookup(op.getInputs()[1]);
  if (d == 0 && type.getElementType().isBF16()) {
    SmallVector<Value> shape{arith::AddIOp::create(b, loc, dim(a, 0), dim(c, 0))};
    for (int64_t i = 1; i < r; ++i) {
      checkEq(dim(c, i), dim(a, i), "tensor.concat: the inputs' trailing dimensions differ");
      shape.push_back(dim(a, i));
    }
    Value out = allocLike(op.getResult(), shape);
    Value na = numel(a), nb = numel(c);
    launch("dsa_concat_rows_bf16", {ceilDiv(arith::AddIOp::create(b, loc, na, nb), kElementwiseBlock), idx(1), idx(1)},
           {kElementwiseBlock, 1, 1}, {flat(a), flat(c), flat(out), na, nb});
    setResult(op.getResult(), out);
    return success();
  }
  if (d == 1 && r == 2 && type.getElementType().isInteger(32)) {
    Value rows = dim(a, 0), wa = dim(a, 1), wb = dim(c, 1);
    checkEq(dim(c, 0), rows, "tensor.concat: the inputs' row counts differ");
    Value w = arith::AddIOp::create(b, loc, wa, wb);
    Value out = allocLike(op.getResult(), {rows, w});
    launch("dsa_concat_cols_i32", {ceilDiv(mul(rows, w), kElementwiseBlock), idx(1), idx(1)},
           {kElementwiseBlock, 1, 1}, {flat(a), flat(c), flat(out), rows, wa, wb});
    setResult(op.getResult(), out);
    return success();
  }
  return op.emitOpError("dsa-to-gpu: only bf16 concatenation along dim 0 and i32 [rows, w] along dim 1 are "
                        "lowered");
}

LogicalResult FunctionLowering::lower(Operation *op) {
  loc = op->getLoc();
  if (isa<ProbeOp>(op))
    return success();
  // A pure op whose result nobody reads (e.g. the decomposition's unused slot prefix) would only add launches and
  // checks that the step does not need.
  if (isOpTriviallyDead(op))
    return success();
  if (auto o = dyn_cast<PositionsOp>(op))
    return lowerPositions(o);
  if (auto o = dyn_cast<LinearOp>(op))
    return lowerLinear(o);
  if (auto o = dyn_cast<RmsNormOp>(op))
    return lowerRmsNorm(o);
  if (auto o = dyn_cast<ApplyRopeOp>(op))
    return lowerApplyRope(o);
  if (auto o = dyn_cast<ActQuantFp8Op>(op))
    return lowerActQuant(o);
  if (auto o = dyn_cast<RingUpdateOp>(op))
    return lowerRingUpdate(o);
  if (auto o = dyn_cast<WindowKvOp>(op))
    return lowerWindowKv(o);
  if (auto o = dyn_cast<WindowIndicesOp>(op))
    return lowerWindowIndices(o);
  if (auto o = dyn_cast<SparseAttnOp>(op))
    return lowerSparseAttn(o);
  if (auto o = dyn_cast<GroupedOutputOp>(op))
    return lowerGroupedOutput(o);
  if (auto o = dyn_cast<CompressPoolOp>(op))
    return lowerCompressPool(o);
  if (auto o = dyn_cast<Fp4QuantE8M0Op>(op))
    return lowerFp4Quant(op, o.getX(), o.getResult(), o.getBlockSizeAttr().getInt(), /*e4m3Scale=*/false);
  if (auto o = dyn_cast<Fp4QuantE4M3Op>(op))
    return lowerFp4Quant(op, o.getX(), o.getResult(), o.getBlockSizeAttr().getInt(), /*e4m3Scale=*/true);
  if (auto o = dyn_cast<CacheWriteOp>(op))
    return lowerCacheWrite(o);
  if (auto o = dyn_cast<IndexerScoresOp>(op))
    return lowerIndexerScores(o);
  if (auto o = dyn_cast<CompressVisibilityOp>(op))
    return lowerCompressVisibility(o);
  if (auto o = dyn_cast<ApplyCandidatesOp>(op))
    return lowerApplyCandidates(o);
  if (auto o = dyn_cast<SelectCandidateBlocksOp>(op))
    return lowerSelectCandidateBlocks(o);
  if (auto o = dyn_cast<IndexerTopkOp>(op))
    return lowerIndexerTopk(o);
  if (isa<AttentionOp>(op))
    return op->emitOpError("dsa-to-gpu: run dsa-decompose-attention first (--dsa-gpu-pipeline does)");
  if (isa<DSADialect>(op->getDialect()))
    return op->emitOpError("dsa-to-gpu: this dsa op is not lowered to the GPU");
  if (isa<arith::ExtFOp, arith::TruncFOp>(op) && hasTensor(op->getResultTypes()))
    return lowerElementwiseCast(op);
  if (auto c = dyn_cast<tensor::CastOp>(op)) {
    Value src = lookup(c.getSource());
    Value v = memref::CastOp::create(b, loc, memrefFor(c.getType()), src);
    setResult(c.getResult(), v, {src});
    return success();
  }
  if (auto sel = dyn_cast<arith::SelectOp>(op); sel && isa<RankedTensorType>(sel.getType())) {
    // A choice between two buffers on the host (the index_k slot republication, design-compressed.md).
    if (!sel.getCondition().getType().isInteger(1))
      return op->emitOpError("dsa-to-gpu: an elementwise select on tensors is not lowered (only a scalar i1 "
                             "condition choosing between two tensors)");
    Value t = lookup(sel.getTrueValue()), f = lookup(sel.getFalseValue());
    Value v = arith::SelectOp::create(b, loc, lookup(sel.getCondition()), t, f);
    setChoice(sel.getResult(), v, lookup(sel.getCondition()), t, f);
    return success();
  }
  if (auto e = dyn_cast<tensor::ExtractSliceOp>(op))
    return lowerExtractSlice(e);
  if (auto c = dyn_cast<tensor::ConcatOp>(op))
    return lowerConcat(c);
  if (auto d = dyn_cast<tensor::DimOp>(op)) {
    mapping.map(d.getResult(), memref::DimOp::create(b, loc, lookup(d.getSource()), lookup(d.getIndex())));
    return success();
  }
  if (auto e = dyn_cast<tensor::ExpandShapeOp>(op)) {
    SmallVector<OpFoldResult> shape;
    for (OpFoldResult f : e.getMixedOutputShape())
      shape.push_back(isa<Value>(f) ? OpFoldResult(lookup(cast<Value>(f))) : f);
    Value src = lookup(e.getSrc());
    Value v = memref::ExpandShapeOp::create(b, loc, memrefFor(e.getType()), src, e.getReassociationIndices(), shape);
    setResult(e.getResult(), v, {src});
    return success();
  }
  if (auto c = dyn_cast<tensor::CollapseShapeOp>(op)) {
    Value src = lookup(c.getSrc());
    Value v = memref::CollapseShapeOp::create(b, loc, memrefFor(c.getType()), src, c.getReassociationIndices());
    setResult(c.getResult(), v, {src});
    return success();
  }
  if (hasTensor(op->getOperandTypes()) || hasTensor(op->getResultTypes()) || op->getNumRegions() != 0)
    return op->emitOpError("dsa-to-gpu: unsupported op on the host side (the GPU backend lowers straight-line "
                           "functions of dsa primitives, tensor.dim/expand_shape/collapse_shape/cast, leading-row "
                           "extract_slice, two-input concat, a scalar select of tensors, bf16<->f32 extf/truncf and "
                           "scalar ops)");
  b.clone(*op, mapping);
  return success();
}

LogicalResult FunctionLowering::run() {
  if (func.isExternal()) {
    if (hasTensor(func.getFunctionType().getInputs()) || hasTensor(func.getFunctionType().getResults()))
      return func.emitOpError("dsa-to-gpu: external functions on tensors are not supported");
    return success();
  }
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("dsa-to-gpu: only single-block functions are supported");
  Block &oldBlock = func.getBody().front();
  bool relevant = hasTensor(func.getFunctionType().getInputs()) || hasTensor(func.getFunctionType().getResults());
  oldBlock.walk([&](Operation *op) {
    if (isa<DSADialect>(op->getDialect()) || hasTensor(op->getResultTypes()))
      relevant = true;
  });
  if (!relevant)
    return success();

  auto convert = [](Type t) -> Type { return isa<RankedTensorType>(t) ? Type(memrefFor(t)) : t; };
  for (Type t : func.getFunctionType().getInputs())
    if (isa<TensorType>(t) && !isa<RankedTensorType>(t))
      return func.emitOpError("dsa-to-gpu: unranked tensor arguments are not supported");
  SmallVector<Type> ins, outs;
  for (Type t : func.getFunctionType().getInputs())
    ins.push_back(convert(t));
  for (Type t : func.getFunctionType().getResults())
    outs.push_back(convert(t));

  auto *newBlock = new Block();
  for (auto [arg, t] : llvm::zip(oldBlock.getArguments(), ins))
    mapping.map(arg, newBlock->addArgument(t, arg.getLoc()));
  b.setInsertionPointToEnd(newBlock);
  for (Operation &op : oldBlock.without_terminator())
    if (failed(lower(&op))) {
      delete newBlock;
      return failure();
    }
  auto ret = dyn_cast<func::ReturnOp>(oldBlock.getTerminator());
  if (!ret) {
    delete newBlock;
    return func.emitOpError("dsa-to-gpu: expected func.return");
  }
  loc = ret.getLoc();
  SmallVector<Value> results;
  for (Value v : ret.getOperands())
    results.push_back(lookup(v));
  // Each allocation is freed unless a result may be (a view of) it: an allocation that only one side of a returned
  // select reaches is freed under the condition that leaves it unselected (an argument buffer is never freed).
  for (Value a : allocs) {
    Liveness live;
    for (Value r : results)
      live = anyOf(live, liveness(a, r));
    if (live.kind == Liveness::Always)
      continue;
    if (live.kind == Liveness::Never) {
      gpu::DeallocOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{}, a);
      continue;
    }
    auto ifOp = scf::IfOp::create(b, loc, notI1(live.value), /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    gpu::DeallocOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{}, a);
  }
  func::ReturnOp::create(b, loc, results);

  oldBlock.dropAllDefinedValueUses();
  oldBlock.erase();
  func.getBody().push_back(newBlock);
  func.setFunctionType(FunctionType::get(func.getContext(), ins, outs));
  return success();
}

/// Declares the host top-k of the runtime (core/include/dsa/ABI/RuntimeFunctions.h):
/// `func.func private @dsa_cpu_topk_set(memref<?x?xf32>, i64, memref<?x?xi64>) -> i32 {llvm.emit_c_interface}`,
/// which the LLVM lowering turns into a call of `_mlir_ciface_dsa_cpu_topk_set` with the descriptors by pointer.
LogicalResult declareTopk(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  auto dyn2 = [&](Type t) { return MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, t); };
  Builder bb(ctx);
  auto type = FunctionType::get(ctx, {dyn2(bb.getF32Type()), bb.getI64Type(), dyn2(bb.getI64Type())},
                                {bb.getI32Type()});
  if (Operation *existing = module.lookupSymbol(::dsa::abi::kTopkSymbol)) {
    auto f = dyn_cast<func::FuncOp>(existing);
    if (!f || f.getFunctionType() != type)
      return existing->emitOpError("dsa-to-gpu: the symbol '")
             << ::dsa::abi::kTopkSymbol << "' is taken by something other than the top-k runtime's declaration "
             << type;
    return success();
  }
  OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
  auto decl = func::FuncOp::create(mb, module.getLoc(), ::dsa::abi::kTopkSymbol, type);
  decl.setPrivate();
  decl->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), UnitAttr::get(ctx));
  return success();
}

struct ConvertDSAToGPUPass : impl::ConvertDSAToGPUBase<ConvertDSAToGPUPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    impl::ConvertDSAToGPUBase<ConvertDSAToGPUPass>::getDependentDialects(registry);
    registry.insert<cf::ControlFlowDialect, func::FuncDialect, math::MathDialect, LLVM::LLVMDialect>();
    // What the NVVM pipeline after this pass needs from the context: the NVVM target attribute's serializer,
    // the ConvertToLLVM interfaces (gpu-to-llvm) and the LLVM IR translations (gpu-module-to-binary).
    registerAllExtensions(registry);
    registerAllGPUToLLVMIRTranslations(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    ParserConfig config(ctx);
    OwningOpRef<ModuleOp> library = parseSourceString<ModuleOp>(kKernelLibrary, config, "Kernels.mlir");
    if (!library || library->getOps<gpu::GPUModuleOp>().empty()) {
      module.emitError("dsa-to-gpu: the embedded kernel library (Kernels.mlir) does not parse");
      return signalPassFailure();
    }
    if (module.lookupSymbol(kKernelModuleName)) {
      module.emitError("dsa-to-gpu: the module already has a symbol named '") << kKernelModuleName << "'";
      return signalPassFailure();
    }
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    auto kernels = gpu::GPUModuleOp::create(mb, module.getLoc(), kKernelModuleName);

    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    bool needsTopk = false;
    for (func::FuncOp f : funcs) {
      FunctionLowering lowering(f, kernels, *library, module);
      if (failed(lowering.run()))
        return signalPassFailure();
      needsTopk |= lowering.needsTopk;
    }
    if (needsTopk && failed(declareTopk(module)))
      return signalPassFailure();
    if (kernels.getBody()->without_terminator().empty())
      kernels.erase();
    else
      module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// --dsa-gpu-pipeline
//===----------------------------------------------------------------------===//

namespace {
struct DSAGPUPipelineOptions : PassPipelineOptions<DSAGPUPipelineOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("Target SM (sm_80, sm_90, sm_100, ...)"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features such as +ptx80; empty: the chip's minimum PTX ISA"),
                               llvm::cl::init("")};
  Option<std::string> format{*this, "format",
                             llvm::cl::desc("gpu.binary payload: isa (PTX text), bin (cubin, runs ptxas), fatbin"),
                             llvm::cl::init("isa")};
  Option<int> optLevel{*this, "opt-level", llvm::cl::desc("NVVM optimisation level"), llvm::cl::init(3)};
  Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("CUDA toolkit (libdevice, ptxas); empty: $CUDA_ROOT, $CUDA_HOME, $CUDA_PATH, /usr/local/cuda"),
      llvm::cl::init("")};
};

std::string resolveCudaPath(const std::string &option) {
  if (!option.empty())
    return option;
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *v = std::getenv(var); v && *v)
      return v;
  return "/usr/local/cuda";
}

/// Fails the pipeline up front when libdevice is missing: the kernels call libdevice (__nv_exp, __nv_cos,
/// __nv_sin, __nv_fsqrt_rn, __nv_fabsf), and gpu-module-to-binary would otherwise emit PTX with unresolved calls.
struct CheckLibdevicePass : PassWrapper<CheckLibdevicePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckLibdevicePass)
  explicit CheckLibdevicePass(std::string cudaPath) : cudaPath(std::move(cudaPath)) {}
  StringRef getArgument() const override { return "dsa-check-libdevice"; }
  void runOnOperation() override {
    llvm::SmallString<256> path(cudaPath);
    llvm::sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
    if (!llvm::sys::fs::is_regular_file(path)) {
      mlir::emitError(getOperation().getLoc(), "--dsa-gpu-pipeline: libdevice not found at '")
          << path << "': pass cuda-path=<CUDA toolkit> or set CUDA_HOME (the dsa kernels call libdevice)";
      signalPassFailure();
    }
  }
  std::string cudaPath;
};

void buildDSAGPUPipeline(OpPassManager &pm, const DSAGPUPipelineOptions &options) {
  const std::string cuda = resolveCudaPath(options.cudaPath);
  pm.addPass(std::make_unique<CheckLibdevicePass>(cuda));
  // dsa -> host code on memrefs + a gpu.module of kernels.
  pm.addPass(createDSADecomposeAttention());
  pm.addPass(createDSAStripProbes());
  pm.addPass(createConvertDSAToGPU());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  // Device: NVVM (upstream's gpu-lower-to-nvvm-pipeline, with the toolkit path made explicit).
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createSCFToControlFlowPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  // Host: the LLVM dialect with calls into the GPU runtime (mgpu*), then the gpu.module -> gpu.binary.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  binary.toolkitPath = cuda;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}
} // namespace

void registerDSAGPUPipeline() {
  PassPipelineRegistration<DSAGPUPipelineOptions>(
      "dsa-gpu-pipeline",
      "dsa (dsa.attention or primitives) -> gpu kernels -> NVVM -> a gpu.binary (PTX with format=isa, a cubin with "
      "format=bin) plus host code in the LLVM dialect calling the GPU runtime",
      buildDSAGPUPipeline);
}

} // namespace mlir::dsa
