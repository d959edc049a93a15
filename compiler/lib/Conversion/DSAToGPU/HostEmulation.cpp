//===- HostEmulation.cpp - dsa-gpu-to-host-emulation: the GPU kernels as host code for the host emulator -----===//
//
// The kernels of a gpu.module become func.func's of the top module that call the emulator's hooks
// (core/include/dsa/ABI/GpuHostEmulation.h) for the work item's ids, barriers, workgroup memory and memory accesses;
// the rest of the lowering to a shared object is upstream (scf/arith/math/memref/func to LLVM). The emulator
// (test/Runtime/Cuda/HostEmulator.cpp) runs every work item of a block as its own coroutine, so barriers may sit
// anywhere (in loops, in uniform branches) and values live across them stay where they are: nothing is split or
// spilled here. Design and limits: docs/gpu-backend.md, "Host emulation".
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/ABI/GpuHostEmulation.h"
#include "dsa/Conversion/DSAToGPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::dsa {
#define GEN_PASS_DEF_DSAGPUTOHOSTEMULATION
#include "dsa/Conversion/DSAToGPU/Passes.h.inc"

namespace {

namespace abi = ::dsa::abi;

/// The byte size of a memref element the emulator can track, 0 for any other type.
int64_t elementBytes(Type t) {
  if (t.isIndex())
    return 8;
  if (t.isIntOrFloat())
    return (t.getIntOrFloatBitWidth() + 7) / 8;
  return 0;
}

/// The memref type without a gpu address space (the host has one memory).
MemRefType hostType(MemRefType t) { return MemRefType::get(t.getShape(), t.getElementType(), t.getLayout()); }

bool hasGpuAddressSpace(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  return m && m.getMemorySpace() && isa<gpu::AddressSpaceAttr>(m.getMemorySpace());
}

/// The LLVM struct of a memref descriptor of rank `rank`: allocated and aligned pointers, offset, sizes, strides.
Type descriptorType(MLIRContext *ctx, int64_t rank) {
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = IntegerType::get(ctx, 64);
  SmallVector<Type> fields{ptr, ptr, i64};
  if (rank > 0) {
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
  }
  return LLVM::LLVMStructType::getLiteral(ctx, fields);
}

/// A memref of type `type` over the descriptor fields `allocated`, `aligned`, `offset`, `sizes`, `strides` (the
/// upstream LLVM lowering folds the cast away: reconcile-unrealized-casts).
Value makeMemref(OpBuilder &b, Location loc, MemRefType type, Value allocated, Value aligned, Value offset,
                 ArrayRef<Value> sizes, ArrayRef<Value> strides) {
  MLIRContext *ctx = b.getContext();
  const int64_t rank = type.getRank();
  Value d = LLVM::PoisonOp::create(b, loc, descriptorType(ctx, rank));
  d = LLVM::InsertValueOp::create(b, loc, d, allocated, ArrayRef<int64_t>{0});
  d = LLVM::InsertValueOp::create(b, loc, d, aligned, ArrayRef<int64_t>{1});
  d = LLVM::InsertValueOp::create(b, loc, d, offset, ArrayRef<int64_t>{2});
  for (int64_t i = 0; i < rank; ++i) {
    d = LLVM::InsertValueOp::create(b, loc, d, sizes[i], ArrayRef<int64_t>{3, i});
    d = LLVM::InsertValueOp::create(b, loc, d, strides[i], ArrayRef<int64_t>{4, i});
  }
  return UnrealizedConversionCastOp::create(b, loc, TypeRange{type}, ValueRange{d}).getResult(0);
}

struct GpuToHostEmulation : impl::DSAGPUToHostEmulationBase<GpuToHostEmulation> {
  using DSAGPUToHostEmulationBase::DSAGPUToHostEmulationBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();

    // gpu.global_id -> block_id * block_dim + thread_id (upstream's rewrite). The walk driver applies it and
    // nothing else: no folding, no removal of dead ops (an op this pass rejects must not vanish unseen).
    RewritePatternSet patterns(ctx);
    populateGpuGlobalIdPatterns(patterns);
    walkAndApplyPatterns(module, std::move(patterns));

    SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
    if (gpuModules.empty()) {
      module.emitError("dsa-gpu-to-host-emulation: the module holds no gpu.module");
      return signalPassFailure();
    }
    if (failed(declareHooks(module)))
      return signalPassFailure();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> moved, kernels;
    for (gpu::GPUModuleOp gm : gpuModules) {
      for (Operation &op : llvm::make_early_inc_range(gm.getBody()->getOperations())) {
        if (op.hasTrait<OpTrait::IsTerminator>())
          continue;
        if (auto sym = dyn_cast<SymbolOpInterface>(op); sym && symbols.lookup(sym.getName())) {
          op.emitOpError("dsa-gpu-to-host-emulation: the symbol '")
              << sym.getName() << "' of " << gm.getName() << " is already defined in the host module";
          return signalPassFailure();
        }
        if (auto gf = dyn_cast<gpu::GPUFuncOp>(op)) {
          func::FuncOp f = convertFunc(gf, gm);
          if (!f)
            return signalPassFailure();
          moved.push_back(f);
          if (f->hasAttr("dsa.emu.kernel"))
            kernels.push_back(f);
          symbols.insert(f);
          continue;
        }
        op.moveBefore(gm);
        if (auto f = dyn_cast<func::FuncOp>(op))
          moved.push_back(f);
        if (isa<SymbolOpInterface>(op))
          symbols.insert(&op);
      }
      gm.erase();
    }
    module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());

    for (func::FuncOp f : moved)
      if (failed(lowerBody(f)))
        return signalPassFailure();
    for (func::FuncOp k : kernels) {
      k->removeAttr("dsa.emu.kernel");
      if (failed(addPackedEntry(module, symbols, k)))
        return signalPassFailure();
    }
    // Nothing of the gpu dialect may be left (a host launch, an op lowerBody does not know).
    WalkResult left = module.walk([&](Operation *op) {
      if (isa<gpu::GPUDialect>(op->getDialect())) {
        op->emitOpError("dsa-gpu-to-host-emulation: not emulated on the host");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      return signalPassFailure();
  }

  LogicalResult declareHooks(ModuleOp module) {
    MLIRContext *ctx = module.getContext();
    Builder bb(ctx);
    Type i32 = bb.getI32Type(), i64 = bb.getI64Type(), ptr = LLVM::LLVMPointerType::get(ctx);
    const std::pair<const char *, FunctionType> hooks[] = {
        {abi::kEmuThreadId, FunctionType::get(ctx, {i32}, {i64})},
        {abi::kEmuBlockId, FunctionType::get(ctx, {i32}, {i64})},
        {abi::kEmuBlockDim, FunctionType::get(ctx, {i32}, {i64})},
        {abi::kEmuGridDim, FunctionType::get(ctx, {i32}, {i64})},
        {abi::kEmuBarrier, FunctionType::get(ctx, {i32}, {})},
        {abi::kEmuWorkgroup, FunctionType::get(ctx, {i32, i64}, {ptr})},
        {abi::kEmuAccess, FunctionType::get(ctx, {i64, i64, i32}, {})},
    };
    OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
    for (const auto &[name, type] : hooks) {
      if (Operation *existing = module.lookupSymbol(name)) {
        auto f = dyn_cast<func::FuncOp>(existing);
        if (!f || f.getFunctionType() != type)
          return existing->emitOpError("dsa-gpu-to-host-emulation: the symbol '")
                 << name << "' is taken by something other than the emulator hook " << type;
        continue;
      }
      auto decl = func::FuncOp::create(mb, module.getLoc(), name, type);
      decl.setPrivate();
    }
    return success();
  }

  /// A gpu.func of `gm` as a func.func of the host module (before gm) with the same body: workgroup attributions from
  /// dsa_emu_workgroup, private ones as allocas; a kernel is marked for addPackedEntry.
  func::FuncOp convertFunc(gpu::GPUFuncOp gf, gpu::GPUModuleOp gm) {
    MLIRContext *ctx = gf.getContext();
    for (Type t : gf.getFunctionType().getInputs())
      if (hasGpuAddressSpace(t)) {
        gf.emitOpError("dsa-gpu-to-host-emulation: an argument in a gpu address space is not emulated (") << t << ")";
        return nullptr;
      }
    OpBuilder b(gm); // in the host module, before the gpu.module
    auto f = func::FuncOp::create(b, gf.getLoc(), gf.getName(), gf.getFunctionType());
    if (gf.isKernel())
      f->setAttr("dsa.emu.kernel", UnitAttr::get(ctx));
    else
      f.setPrivate();
    f.getBody().takeBody(gf.getBody());
    Block &entry = f.getBody().front();
    const unsigned nArgs = gf.getFunctionType().getNumInputs();
    const unsigned nWorkgroup = gf.getNumWorkgroupAttributions();
    const unsigned nAttr = entry.getNumArguments() - nArgs;
    OpBuilder eb = OpBuilder::atBlockBegin(&entry);
    Location loc = gf.getLoc();
    for (unsigned i = 0; i < nAttr; ++i) {
      BlockArgument a = entry.getArgument(nArgs + i);
      auto type = dyn_cast<MemRefType>(a.getType());
      if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity() || !elementBytes(type.getElementType())) {
        gf.emitOpError("dsa-gpu-to-host-emulation: attribution ")
            << i << " is not a static, identity-layout memref of integers or floats (" << a.getType() << ")";
        f.erase();
        return nullptr;
      }
      MemRefType host = hostType(type);
      Value v;
      if (i < nWorkgroup) {
        const int64_t bytes = type.getNumElements() * elementBytes(type.getElementType());
        Value idx = arith::ConstantIntOp::create(eb, loc, eb.getI32Type(), i);
        Value size = arith::ConstantIntOp::create(eb, loc, eb.getI64Type(), bytes);
        Value p = func::CallOp::create(eb, loc, abi::kEmuWorkgroup, TypeRange{LLVM::LLVMPointerType::get(ctx)},
                                       ValueRange{idx, size})
                      .getResult(0);
        SmallVector<Value> sizes, strides;
        SmallVector<int64_t> st = computeStrides(type.getShape());
        for (int64_t d = 0; d < type.getRank(); ++d) {
          sizes.push_back(arith::ConstantIntOp::create(eb, loc, eb.getI64Type(), type.getDimSize(d)));
          strides.push_back(arith::ConstantIntOp::create(eb, loc, eb.getI64Type(), st[d]));
        }
        Value zero = arith::ConstantIntOp::create(eb, loc, eb.getI64Type(), 0);
        v = makeMemref(eb, loc, host, p, p, zero, sizes, strides);
      } else {
        v = memref::AllocaOp::create(eb, loc, host);
      }
      a.replaceAllUsesWith(v);
    }
    entry.eraseArguments(nArgs, nAttr);
    gf.erase();
    return f;
  }

  static SmallVector<int64_t> computeStrides(ArrayRef<int64_t> shape) {
    SmallVector<int64_t> st(shape.size(), 1);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
      st[d] = st[d + 1] * shape[d + 1];
    return st;
  }

  /// The gpu ops of a moved function as hook calls; every memref.load / store reported to dsa_emu_access.
  LogicalResult lowerBody(func::FuncOp f) {
    int32_t site = 0;
    SmallVector<Operation *> ops;
    f.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      auto dimHook = [&](const char *hook, gpu::Dimension dim) {
        Value d = arith::ConstantIntOp::create(b, loc, b.getI32Type(), static_cast<int32_t>(dim));
        Value v = func::CallOp::create(b, loc, hook, TypeRange{b.getI64Type()}, ValueRange{d}).getResult(0);
        Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
        op->getResult(0).replaceAllUsesWith(i);
        op->erase();
      };
      if (auto o = dyn_cast<gpu::ThreadIdOp>(op)) {
        dimHook(abi::kEmuThreadId, o.getDimension());
      } else if (auto o = dyn_cast<gpu::BlockIdOp>(op)) {
        dimHook(abi::kEmuBlockId, o.getDimension());
      } else if (auto o = dyn_cast<gpu::BlockDimOp>(op)) {
        dimHook(abi::kEmuBlockDim, o.getDimension());
      } else if (auto o = dyn_cast<gpu::GridDimOp>(op)) {
        dimHook(abi::kEmuGridDim, o.getDimension());
      } else if (isa<gpu::BarrierOp>(op)) {
        Value s = arith::ConstantIntOp::create(b, loc, b.getI32Type(), site++);
        func::CallOp::create(b, loc, abi::kEmuBarrier, TypeRange{}, ValueRange{s});
        op->erase();
      } else if (auto r = dyn_cast<gpu::ReturnOp>(op)) {
        func::ReturnOp::create(b, loc, r.getOperands());
        op->erase();
      } else if (isa<gpu::GPUDialect>(op->getDialect())) {
        return op->emitOpError("dsa-gpu-to-host-emulation: not emulated on the host");
      } else if (auto l = dyn_cast<memref::LoadOp>(op)) {
        if (failed(checkAddressSpaces(op)))
          return failure();
        if (instrumentAccesses && failed(report(b, loc, op, l.getMemRef(), l.getIndices(), false)))
          return failure();
      } else if (auto s = dyn_cast<memref::StoreOp>(op)) {
        if (failed(checkAddressSpaces(op)))
          return failure();
        if (instrumentAccesses && failed(report(b, loc, op, s.getMemRef(), s.getIndices(), true)))
          return failure();
      } else if (failed(checkAddressSpaces(op)) || failed(checkUnseenAccess(op))) {
        return failure();
      }
    }
    return success();
  }

  /// An op whose memref operands or results keep a gpu address space is not emulated (the attributions are the
  /// only gpu memory this pass turns into host memory).
  static LogicalResult checkAddressSpaces(Operation *op) {
    for (Type t : op->getOperandTypes())
      if (hasGpuAddressSpace(t))
        return op->emitOpError("dsa-gpu-to-host-emulation: a memref in a gpu address space that is not an "
                               "attribution is not emulated (")
               << t << ")";
    for (Type t : op->getResultTypes())
      if (hasGpuAddressSpace(t))
        return op->emitOpError("dsa-gpu-to-host-emulation: a memref in a gpu address space that is not an "
                               "attribution is not emulated (")
               << t << ")";
    return success();
  }

  /// An op that reads or writes a memref other than memref.load / store (atomics, copies, vector transfers) would
  /// escape the race checks: rejected rather than run unchecked.
  LogicalResult checkUnseenAccess(Operation *op) {
    if (!instrumentAccesses || isa<func::CallOp>(op))
      return success();
    auto iface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!iface) {
      // Unknown effects: fine for region ops whose body is checked op by op, not for an op taking a memref.
      if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() || isa<UnrealizedConversionCastOp>(op))
        return success();
      for (Value v : op->getOperands())
        if (isa<MemRefType>(v.getType()))
          return op->emitOpError("dsa-gpu-to-host-emulation: a memory access the emulator cannot check");
      return success();
    }
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const MemoryEffects::EffectInstance &e : effects) {
      if (!isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()))
        continue;
      Value v = e.getValue();
      if (v && isa<MemRefType>(v.getType()))
        return op->emitOpError("dsa-gpu-to-host-emulation: a memory access the emulator cannot check (only "
                               "memref.load and memref.store are reported)");
    }
    return success();
  }

  /// dsa_emu_access(aligned + (offset + sum idx_i * stride_i) * bytes, bytes, isWrite) before `op`.
  LogicalResult report(OpBuilder &b, Location loc, Operation *op, Value m, ValueRange indices, bool write) {
    // A private attribution (an alloca on the work item's own stack) is nobody else's: not reported. (The emulator
    // also ignores addresses on the item's stack, e.g. an alloca passed to a helper.)
    if (m.getDefiningOp<memref::AllocaOp>())
      return success();
    auto type = cast<MemRefType>(m.getType());
    const int64_t bytes = elementBytes(type.getElementType());
    if (!bytes)
      return op->emitOpError("dsa-gpu-to-host-emulation: a memref of ")
             << type.getElementType() << " elements is not emulated";
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, m);
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, m);
    Value lin = meta.getOffset();
    for (auto [i, idx] : llvm::enumerate(indices)) {
      Value t = arith::MulIOp::create(b, loc, idx, meta.getStrides()[i]);
      lin = arith::AddIOp::create(b, loc, lin, t);
    }
    Value eb = arith::ConstantIndexOp::create(b, loc, bytes);
    Value off = arith::MulIOp::create(b, loc, lin, eb);
    Value addr = arith::AddIOp::create(b, loc, base, off);
    Value a64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), addr);
    Value n = arith::ConstantIntOp::create(b, loc, b.getI64Type(), bytes);
    Value w = arith::ConstantIntOp::create(b, loc, b.getI32Type(), write ? 1 : 0);
    func::CallOp::create(b, loc, abi::kEmuAccess, TypeRange{}, ValueRange{a64, n, w});
    return success();
  }

  /// `<kernel>_dsa_emu(params)`: loads each LLVM-level parameter through cuLaunchKernel's `void **` array and calls
  /// the kernel; `<kernel>_dsa_emu_params`: how many it reads.
  LogicalResult addPackedEntry(ModuleOp module, SymbolTable &symbols, func::FuncOp k) {
    MLIRContext *ctx = module.getContext();
    const std::string name = (k.getName() + abi::kEmuEntrySuffix).str();
    const std::string countName = (k.getName() + abi::kEmuParamCountSuffix).str();
    for (const std::string &s : {name, countName})
      if (symbols.lookup(s))
        return k.emitOpError("dsa-gpu-to-host-emulation: the symbol '") << s << "' is already defined";
    Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = IntegerType::get(ctx, 64);
    OpBuilder b(ctx);
    b.setInsertionPointAfter(k);
    Location loc = k.getLoc();
    auto entry = func::FuncOp::create(b, loc, name, FunctionType::get(ctx, {ptr}, {}));
    Block *body = entry.addEntryBlock();
    OpBuilder eb = OpBuilder::atBlockBegin(body);
    Value params = body->getArgument(0);
    int64_t slot = 0;
    auto param = [&](Type t) -> Value {
      Value gep = LLVM::GEPOp::create(eb, loc, ptr, ptr, params, ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(slot++)});
      Value p = LLVM::LoadOp::create(eb, loc, ptr, gep);
      return LLVM::LoadOp::create(eb, loc, t, p);
    };
    SmallVector<Value> args;
    for (Type t : k.getFunctionType().getInputs()) {
      if (auto m = dyn_cast<MemRefType>(t)) {
        Value allocated = param(ptr), aligned = param(ptr), offset = param(i64);
        SmallVector<Value> sizes, strides;
        for (int64_t d = 0; d < m.getRank(); ++d)
          sizes.push_back(param(i64));
        for (int64_t d = 0; d < m.getRank(); ++d)
          strides.push_back(param(i64));
        args.push_back(makeMemref(eb, loc, m, allocated, aligned, offset, sizes, strides));
      } else if (t.isIndex()) {
        args.push_back(arith::IndexCastOp::create(eb, loc, eb.getIndexType(), param(i64)));
      } else if (t.isIntOrFloat() && (t.getIntOrFloatBitWidth() == 32 || t.getIntOrFloatBitWidth() == 64)) {
        args.push_back(param(t));
      } else {
        return k.emitOpError("dsa-gpu-to-host-emulation: a kernel parameter of type ")
               << t << " has no packed layout (memrefs, index and 32/64-bit scalars have)";
      }
    }
    func::CallOp::create(eb, loc, k, args);
    func::ReturnOp::create(eb, loc);
    symbols.insert(entry);
    auto count = LLVM::GlobalOp::create(b, loc, i64, /*isConstant=*/true, LLVM::Linkage::External, countName,
                                        b.getI64IntegerAttr(slot));
    symbols.insert(count);
    return success();
  }
};

} // namespace
} // namespace mlir::dsa
