//===- Pipeline.cpp - --dsa-cpu-pipeline: dsa -> LLVM dialect for the CPU ------===//
//
// dsa-decompose-attention, dsa-strip-probes, dsa-to-cpu, then upstream: one-shot bufferization across function
// boundaries (identity layouts, so every function argument/result is a plain memref), for functions the CPU backend
// marked the results that are an argument's buffer dropped (its caches updated in place), ownership-based buffer
// deallocation (results are owned by the caller), linalg -> loops, bf16 conversions expanded into integer ops with
// core/lib/Numerics' rounding (dsa-cpu-expand-bf16, CPUTarget.cpp) before ANY conversion to the LLVM dialect (serial and
// OpenMP: no __truncsfbf2 call, no vcvtneps2bf16, ../shared/toolchain.md), the conversions to the LLVM dialect, the
// target CPU on every function with cpu=NAME (dsa-cpu-set-target), dsa-cpu-check-bf16, which fails if any bf16
// conversion or arithmetic is left for LLVM, and last dsa-cpu-bf16-as-i16: the bf16 values left only move bits and
// become i16, so the LLVM IR has no bfloat (x86 code generation would convert a bf16 phi through f32).
// No pass here reassociates or contracts f32 arithmetic, so the bit-exactness of dsa-to-cpu survives. Strided
// memref.copy ops left by bufferization (insert_slice/concat/extract_slice on dynamic shapes) become linalg.copy
// loops, so nothing calls the runner-utils library.
//
// parallel=true: the parallel dimensions of every linalg.generic become scf.parallel loops and then OpenMP
// work-sharing loops (omp.parallel + omp.wsloop, __kmpc_* calls: an OpenMP runtime, libomp, must be loadable when
// the code runs). Reductions stay sequential inside each iteration, so results are the same bits with any number
// of threads.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Conversion/CPUTarget.h"
#include "dsa/Conversion/DSAToCPU/Passes.h"
#include "dsa/Conversion/DSAToCPU/InPlaceResults.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/OpenMPToLLVM/ConvertOpenMPToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToOpenMP/SCFToOpenMP.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::dsa {

#define GEN_PASS_DEF_DSACPUSTRIDEDCOPIESTOLINALG
#define GEN_PASS_DEF_DSACPUFLATTENELEMENTWISE
#define GEN_PASS_DEF_DSACPUDROPINPLACERESULTS
#include "dsa/Conversion/DSAToCPU/Passes.h.inc"

//===----------------------------------------------------------------------------------------------------------===//
// The in-place attributes (dsa/Conversion/DSAToCPU/InPlaceResults.h)
//===----------------------------------------------------------------------------------------------------------===//

void setInPlaceArguments(func::FuncOp f, llvm::ArrayRef<int64_t> writableArgs) {
  f->setAttr(kCPUInPlaceAttrName, DenseI64ArrayAttr::get(f.getContext(), writableArgs));
}

std::optional<llvm::SmallVector<int64_t>> takeInPlaceArguments(func::FuncOp f) {
  auto marked = f->getAttrOfType<DenseI64ArrayAttr>(kCPUInPlaceAttrName);
  if (!marked)
    return std::nullopt;
  f->removeAttr(kCPUInPlaceAttrName);
  return llvm::SmallVector<int64_t>(marked.asArrayRef());
}

namespace {

void setPerFunction(ModuleOp module, StringRef name,
                    const llvm::MapVector<llvm::StringRef, llvm::SmallVector<int64_t>> &map) {
  if (map.empty())
    return;
  MLIRContext *ctx = module.getContext();
  SmallVector<NamedAttribute> entries;
  for (const auto &[function, values] : map)
    entries.push_back(NamedAttribute(StringAttr::get(ctx, function), DenseI64ArrayAttr::get(ctx, values)));
  module->setAttr(name, DictionaryAttr::get(ctx, entries));
}

llvm::MapVector<llvm::StringRef, llvm::SmallVector<int64_t>> takePerFunction(ModuleOp module, StringRef name) {
  llvm::MapVector<llvm::StringRef, llvm::SmallVector<int64_t>> map;
  auto dict = module->getAttrOfType<DictionaryAttr>(name);
  if (!dict)
    return map;
  for (NamedAttribute entry : dict)
    if (auto values = dyn_cast<DenseI64ArrayAttr>(entry.getValue()))
      map[entry.getName().getValue()] = llvm::SmallVector<int64_t>(values.asArrayRef());
  module->removeAttr(name);
  return map;
}

} // namespace

void setInPlaceRecord(ModuleOp module, const InPlaceRecord &record) {
  setPerFunction(module, kCPUInPlaceAttrName, record.resultArgs);
  setPerFunction(module, kCPUWrittenAttrName, record.writtenArgs);
}

InPlaceRecord takeInPlaceRecord(ModuleOp module) {
  InPlaceRecord record;
  record.resultArgs = takePerFunction(module, kCPUInPlaceAttrName);
  record.writtenArgs = takePerFunction(module, kCPUWrittenAttrName);
  return record;
}

//===----------------------------------------------------------------------------------------------------------===//
// The passes
//===----------------------------------------------------------------------------------------------------------===//

namespace {

/// dsa-cpu-strided-copies-to-linalg (Passes.td): rewrites every memref.copy whose source or target does not have
/// the identity layout (the copies that bufferization makes for tensor.insert_slice, tensor.concat and
/// tensor.extract_slice on dynamic shapes) into linalg.copy, which convert-linalg-to-loops turns into loops.
/// finalize-memref-to-llvm would otherwise lower them to a call of the runner-utils library's `memrefCopy`, which
/// neither the JIT's process nor an AOT step library has. Copies between identity-layout memrefs stay memref.copy
/// (a memcpy). A copy of rank >= 2 whose trailing dimensions (from some d >= 1: static, row-major contiguous) form
/// one contiguous block per index of the leading ones on both sides, but whose leading sizes are dynamic or whose
/// blocks are apart (a sequence's first C-or-0 index-key rows written into its slice of a padded batched slot; a
/// batched [B, rows, width] slot copied into its padded [B, max(rows, C), width] copy), becomes one scf.for per
/// leading dimension, each innermost iteration one memref.copy of a static contiguous block: an llvm.memcpy of
/// constant size, which LLVM inlines as vector moves (an element-wise linalg.copy moved 4 bytes per iteration, and
/// with parallel=true became one OpenMP loop with an index division per element).
struct StridedCopiesToLinalgPass : impl::DSACPUStridedCopiesToLinalgBase<StridedCopiesToLinalgPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      // What finalize-memref-to-llvm lowers to the llvm.memcpy intrinsic (one call of libc's vectorised memcpy):
      // the identity layout, or a static shape that is one contiguous row-major block at any offset (a cache
      // slice [C, width] of a batched [B, C, width] cache, copied in and out of a batched step, where a scalar
      // linalg.copy loop moved 4 bytes per iteration; the end-to-end gain on the batched index-source step was within
      // noise, docs/benchmarks.md: its larger copies have dynamic row counts, the per-row loops below).
      auto memcpyable = [](Type t) {
        auto m = dyn_cast<MemRefType>(t);
        return m && (m.getLayout().isIdentity() || (m.hasStaticShape() && m.getNumElements() > 0 &&
                                                    memref::isStaticShapeAndContiguousRowMajor(m)));
      };
      if (!memcpyable(copy.getSource().getType()) || !memcpyable(copy.getTarget().getType()))
        copies.push_back(copy);
    });
    // The first dimension d >= 1 from which every dimension is static, nonzero and row-major contiguous (stride 1
    // innermost): each index of dimensions 0 .. d - 1 selects one contiguous block of the rest. Rank if none.
    auto blockFrom = [](Type t) -> int64_t {
      auto m = dyn_cast<MemRefType>(t);
      if (!m || m.getRank() < 2)
        return m ? m.getRank() : 0;
      SmallVector<int64_t> strides;
      int64_t offset;
      if (failed(m.getStridesAndOffset(strides, offset)))
        return m.getRank();
      int64_t inner = 1, from = m.getRank();
      for (int64_t d = m.getRank() - 1; d >= 1; --d) {
        if (ShapedType::isDynamic(m.getDimSize(d)) || m.getDimSize(d) == 0 || strides[d] != inner)
          break;
        inner *= m.getDimSize(d);
        from = d;
      }
      return from;
    };
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      Location loc = copy.getLoc();
      auto source = cast<MemRefType>(copy.getSource().getType());
      const int64_t rank = source.getRank();
      // Blocks contiguous on both sides: dimensions `from` .. rank - 1 (a suffix of a contiguous suffix is one).
      const int64_t from = std::max(blockFrom(source), blockFrom(copy.getTarget().getType()));
      if (rank < 2 || from >= rank) {
        linalg::CopyOp::create(b, loc, copy.getSource(), copy.getTarget());
        copy.erase();
        continue;
      }
      // Block (i0, .., i_{from-1}) of each side: subview [i.., 0...] [1.., block shape] rank-reduced to the block
      // shape (static, contiguous); one scf.for per leading dimension (a dynamic row count, or a batched slot's
      // [B, rows, width] with dynamic B and rows).
      ArrayRef<int64_t> blockShape = source.getShape().drop_front(from);
      Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
      Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
      SmallVector<Value> ivs;
      OpBuilder inner = b;
      for (int64_t d = 0; d < from; ++d) {
        Value n = memref::DimOp::create(inner, loc, copy.getSource(), d);
        auto loop = scf::ForOp::create(inner, loc, c0, n, c1);
        ivs.push_back(loop.getInductionVar());
        inner = OpBuilder::atBlockBegin(loop.getBody());
      }
      auto block = [&](Value m) {
        auto type = cast<MemRefType>(m.getType());
        SmallVector<OpFoldResult> offsets(rank, inner.getIndexAttr(0)), sizes, strides(rank, inner.getIndexAttr(1));
        for (int64_t d = 0; d < from; ++d) {
          offsets[d] = ivs[d];
          sizes.push_back(inner.getIndexAttr(1));
        }
        for (int64_t s : blockShape)
          sizes.push_back(inner.getIndexAttr(s));
        auto blockType = memref::SubViewOp::inferRankReducedResultType(blockShape, type, offsets, sizes, strides);
        return memref::SubViewOp::create(inner, loc, cast<MemRefType>(blockType), m, offsets, sizes, strides)
            .getResult();
      };
      Value fromBlock = block(copy.getSource());
      Value toBlock = block(copy.getTarget());
      memref::CopyOp::create(inner, loc, fromBlock, toBlock);
      copy.erase();
    }
  }
};

/// dsa-cpu-flatten-elementwise (Passes.td): whether `op` runs element-wise over whole identity-layout buffers of rank
/// >= 2 (every loop parallel, no linalg.index, memref operands of the identity layout read and written at the
/// identity map, other operands scalars).
bool flattenable(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() < 2 || op.getNumParallelLoops() != op.getNumLoops() ||
      op.hasIndexSemantics() || op->getNumRegions() != 1)
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type) {
      if (isa<ShapedType>(operand.get().getType()) || map.getNumResults() != 0)
        return false;
      continue;
    }
    if (!type.getLayout().isIdentity() || !map.isIdentity())
      return false;
  }
  return true;
}

struct FlattenElementwisePass : impl::DSACPUFlattenElementwiseBase<FlattenElementwisePass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (flattenable(op))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      rewriter.setInsertionPoint(op);
      Location loc = op.getLoc();
      // The named ops (fill, map, ...) as linalg.generic first: their payload then has the generic's block
      // arguments (inputs, then outputs), which the flat generic below takes over.
      linalg::GenericOp generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rewriter, op);
        if (failed(g))
          continue;
        generic = *g;
      }
      ReassociationIndices all;
      for (int64_t d = 0; d < generic.getNumLoops(); ++d)
        all.push_back(d);
      AffineMap elementMap = AffineMap::getMultiDimIdentityMap(1, &getContext());
      AffineMap scalarMap = AffineMap::get(1, 0, &getContext());
      SmallVector<AffineMap> maps;
      auto flat = [&](Value v) -> Value {
        if (!isa<MemRefType>(v.getType())) {
          maps.push_back(scalarMap);
          return v;
        }
        maps.push_back(elementMap);
        return memref::CollapseShapeOp::create(rewriter, loc, v, ArrayRef<ReassociationIndices>{all});
      };
      SmallVector<Value> inputs, outputs;
      for (Value v : generic.getDpsInputs())
        inputs.push_back(flat(v));
      for (Value v : generic.getDpsInits())
        outputs.push_back(flat(v));
      auto flatOp = linalg::GenericOp::create(rewriter, loc, TypeRange{}, inputs, outputs, maps,
                                              ArrayRef<utils::IteratorType>{utils::IteratorType::parallel});
      rewriter.inlineRegionBefore(generic.getRegion(), flatOp.getRegion(), flatOp.getRegion().end());
      rewriter.eraseOp(generic);
    }
  }
};

/// The entry-block argument whose buffer `v` is after bufferization: the argument itself, through memref.cast, and
/// through scf.if when every branch yields that argument's buffer (dsa-to-cpu's guarded cache_write: the rows
/// inserted into the argument in one branch, the argument in the other). Null otherwise.
BlockArgument argumentBuffer(Value v, func::FuncOp f, int depth = 0) {
  if (depth > 32)
    return {};
  while (auto cast = v.getDefiningOp<memref::CastOp>())
    v = cast.getSource();
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == &f.front() ? arg : BlockArgument();
  if (auto ifOp = v.getDefiningOp<scf::IfOp>()) {
    if (ifOp.getElseRegion().empty())
      return {};
    const unsigned i = cast<OpResult>(v).getResultNumber();
    BlockArgument t = argumentBuffer(ifOp.thenYield().getOperand(i), f, depth + 1);
    BlockArgument e = argumentBuffer(ifOp.elseYield().getOperand(i), f, depth + 1);
    return t && t == e ? t : BlockArgument();
  }
  return {};
}

/// Whether the function may write the memory of its argument `arg` (after bufferization): an op with a write (or
/// free) effect on `arg` or on a value that may alias it (any memref result of an op taking one, scf.if / scf.for
/// results and loop arguments fed by scf.yield), or an op of unknown effects taking one (a call). Conservative.
bool mayWriteArgument(BlockArgument arg) {
  SmallVector<Value> work{arg};
  llvm::DenseSet<Value> seen{arg};
  auto alias = [&](Value v) {
    if (seen.insert(v).second)
      work.push_back(v);
  };
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *op = use.getOwner();
      if (isa<func::ReturnOp>(op))
        continue;
      if (auto yield = dyn_cast<scf::YieldOp>(op)) {
        Operation *parent = yield->getParentOp();
        const unsigned i = use.getOperandNumber();
        if (!isa<scf::IfOp, scf::ForOp>(parent))
          return true;
        alias(parent->getResult(i));
        if (auto loop = dyn_cast<scf::ForOp>(parent))
          alias(loop.getRegionIterArgs()[i]);
        continue;
      }
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        if (use.getOperandNumber() < loop.getNumControlOperands())
          continue;
        const unsigned i = use.getOperandNumber() - loop.getNumControlOperands();
        alias(loop.getRegionIterArgs()[i]);
        alias(loop.getResult(i));
        continue;
      }
      auto effects = dyn_cast<MemoryEffectOpInterface>(op);
      if (!effects)
        return true;
      SmallVector<SideEffects::EffectInstance<MemoryEffects::Effect>> list;
      effects.getEffectsOnValue(v, list);
      for (const auto &e : list)
        if (isa<MemoryEffects::Write, MemoryEffects::Free>(e.getEffect()))
          return true;
      for (Value r : op->getResults())
        if (isa<BaseMemRefType>(r.getType()))
          alias(r);
    }
  }
  return false;
}

/// dsa-cpu-drop-in-place-results (Passes.td). For every function marked `dsa.cpu_in_place` (the marker is removed;
/// compiler/lib/Backend/CPU's lowerForCPU sets it on a function whose caches it made writable, as one-shot bufferization
/// drops the bufferization.writable argument attributes; InPlaceResults.h): drops the results that one-shot
/// bufferization made an argument's buffer (argumentBuffer: the caches written in place into their writable
/// arguments, a shared slot passed through, a result repeating one of them) and records, per function, the argument
/// of each original result or -1 in the module attribute `dsa.cpu_in_place` = {name = array<i64: ...>}, and the
/// writable arguments the code may write (mayWriteArgument) in `dsa.cpu_written` = {name = array<i64: ...>} (a
/// writable argument bufferization chose to copy is not written: the runtime need not protect it). Returned,
/// such a result would be cloned by the ownership-based deallocation (an argument is not owned by the function): a
/// copy of the whole cache per call. Like upstream's drop-equivalent-buffer-results, but for public functions whose
/// callers (the CPU runtime) learn the dropped results from the record. Functions called within the module, or
/// with more than one block, are left as they are. Runs between one-shot bufferization and the deallocation.
struct DropInPlaceResultsPass : impl::DSACPUDropInPlaceResultsBase<DropInPlaceResultsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::DenseSet<StringRef> called;
    module.walk([&](func::CallOp call) { called.insert(call.getCallee()); });
    InPlaceRecord record;
    for (func::FuncOp f : module.getOps<func::FuncOp>()) {
      std::optional<SmallVector<int64_t>> marked = takeInPlaceArguments(f);
      if (!marked)
        continue;
      if (f.isDeclaration())
        continue;
      SmallVector<int64_t> &writtenArgs = record.writtenArgs[f.getName()];
      for (int64_t a : *marked)
        if (a >= 0 && a < static_cast<int64_t>(f.getNumArguments()) && mayWriteArgument(f.getArgument(a)))
          writtenArgs.push_back(a);
      if (called.contains(f.getName()) || !f.getBody().hasOneBlock())
        continue;
      auto ret = dyn_cast<func::ReturnOp>(f.front().getTerminator());
      if (!ret)
        continue;
      SmallVector<int64_t> perResult;
      llvm::BitVector drop(ret.getNumOperands());
      SmallVector<Value> kept;
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        BlockArgument arg = isa<BaseMemRefType>(v.getType()) ? argumentBuffer(v, f) : BlockArgument();
        perResult.push_back(arg ? static_cast<int64_t>(arg.getArgNumber()) : -1);
        if (arg)
          drop.set(i);
        else
          kept.push_back(v);
      }
      record.resultArgs[f.getName()] = perResult;
      if (drop.none())
        continue;
      ret->setOperands(kept);
      if (failed(f.eraseResults(drop)))
        return signalPassFailure();
    }
    setInPlaceRecord(module, record);
  }
};

struct DSACPUPipelineOptions : PassPipelineOptions<DSACPUPipelineOptions> {
  Option<bool> parallel{*this, "parallel",
                        llvm::cl::desc("Run the outputs of every op on OpenMP threads (needs libomp at run time)"),
                        llvm::cl::init(false)};
  Option<std::string> cpu{*this, "cpu",
                          llvm::cl::desc("Compile for this CPU: 'host' or an LLVM x86-64 CPU name (x86-64-v3, "
                                         "sapphirerapids, ...), written on every llvm.func as target_cpu / "
                                         "target_features; empty (default): no target attributes"),
                          llvm::cl::init("")};
  Option<int64_t> phaseMinRows{*this, "phase-min-rows",
                               llvm::cl::desc("dsa-to-cpu's phase-min-rows: from this many rows of x (counted at run "
                                              "time; 0: never) the products use the phase kernel; the same bits "
                                              "either way"),
                               llvm::cl::init(64)};
};
} // namespace

void buildDSACPUPipeline(OpPassManager &pm, bool parallel, llvm::StringRef cpu, int64_t phaseMinRows,
                         int64_t vectorRegisters) {
  pm.addPass(createDSADecomposeAttention());
  pm.addPass(createDSAStripProbes());
  // The register tile of the blocked products follows the target's vector registers (32 with AVX-512, else 16).
  // An unknown cpu name fails dsa-cpu-set-target below, with resolveCPUTarget's message.
  ConvertDSAToCPUOptions convert;
  std::string targetError;
  FailureOr<CPUTarget> target = resolveCPUTarget(cpu.empty() ? llvm::StringRef(kHostCPU) : cpu, targetError);
  if (succeeded(target))
    convert.vectorRegisters =
        llvm::is_contained(target->features, std::string("+avx512f")) ? 32 : 16;
  if (vectorRegisters > 0)
    convert.vectorRegisters = vectorRegisters;
  convert.phaseMinRows = phaseMinRows;
  pm.addPass(createConvertDSAToCPU(convert));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  // Also for the values whose layout the analysis does not know (scf.if results): with the default fully dynamic
  // layout, each join would be followed by a strided memref.copy, which lowers to a call of the runner-utils
  // library's memrefCopy (absent from the JIT's process and from an AOT object).
  bufferize.unknownTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  // An scf.for may carry a tensor its body computes anew (an iter_arg yielded from a dsa op's result, not updated in
  // place like an insert_slice's dest): each iteration then yields a new buffer, which the ownership-based
  // deallocation below frees once the next iteration has consumed it.
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Each scf.forall iteration (DSAToCPU's blocked dots) writes its slice of the shared result in place; bufferizing
  // its tensor.parallel_insert_slice leaves a copy from that slice to an identical second subview. Folding the loops'
  // memref results, merging the two subviews and erasing the self-copy removes it (no f32 arithmetic is touched:
  // canonicalization folds nothing inexact).
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  // Functions compiler/lib/Backend/CPU marked: the results that are an argument's buffer (caches updated in place) dropped.
  pm.addPass(createDSACPUDropInPlaceResults());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createDSACPUStridedCopiesToLinalg());
  // Fills and element-wise ops over whole buffers as one loop over the elements (no index division per element in
  // an OpenMP loop; a contiguous body).
  pm.addPass(createDSACPUFlattenElementwise());

  // The blocked dot products are scf.forall loops (DSAToCPU's emitGroupedDots): OpenMP loops with parallel=true,
  // sequential ones otherwise.
  if (parallel) {
    pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  } else {
    pm.addNestedPass<func::FuncOp>(createForallToForLoopPass());
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  }
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createLowerAffinePass());
  // Every f32 <-> bf16 conversion as integer ops now, while all of them are still arith ops: with parallel=true the
  // OpenMP regions' bodies are converted to LLVM by the passes below (convert-openmp-to-llvm), before any later
  // arith expansion could see them.
  pm.addPass(createDSACPUExpandBf16());
  if (parallel) {
    // The OpenMP loop bodies are wrapped in memref.alloca_scope, a single-block region: lower the memref ops (and
    // with them the scopes) while the nested scf.for are still structured, then the control flow.
    pm.addPass(createConvertSCFToOpenMPPass());
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createConvertVectorToLLVMPass());
    pm.addPass(createFinalizeMemRefToLLVMConversionPass());
    pm.addPass(createSCFToControlFlowPass());
    pm.addPass(createConvertOpenMPToLLVMPass());
  } else {
    pm.addPass(createSCFToControlFlowPass());
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createConvertVectorToLLVMPass());
    pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  }
  pm.addPass(createConvertMathToLLVMPass());
  // The other arith expansions (ceildiv, floordiv, ...); bf16 is dsa-cpu-expand-bf16's (a truncation created after
  // it would reach arith-to-llvm as llvm.fptrunc and fail dsa-cpu-check-bf16).
  pm.addPass(arith::createArithExpandOpsPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (!cpu.empty())
    pm.addPass(createDSACPUSetTarget(DSACPUSetTargetOptions{cpu.str()}));
  pm.addPass(createDSACPUCheckBf16());
  pm.addPass(createDSACPUBf16AsI16());
}

void registerDSACPUPipeline() {
  PassPipelineRegistration<DSACPUPipelineOptions>(
      "dsa-cpu-pipeline",
      "Lower dsa (dsa.attention or the primitives) to the LLVM dialect for the CPU: decompose, strip probes, "
      "dsa-to-cpu, bufferize, loops (OpenMP with parallel=true), bf16 expanded, LLVM (target CPU with cpu=NAME)",
      [](OpPassManager &pm, const DSACPUPipelineOptions &options) {
        buildDSACPUPipeline(pm, options.parallel, options.cpu, options.phaseMinRows);
      });
  // Every dsa pass the pipeline runs, so that its --dump-pass-pipeline output replays (test/Conversion/DSAToCPU/
  // pipeline-replay.test). Registering a pass twice (dsa-opt's registerDSAConversionPasses too) is harmless.
  registerDSADecomposeAttention();
  registerDSAStripProbes();
  registerDSAToCPUPasses();
}

} // namespace mlir::dsa
