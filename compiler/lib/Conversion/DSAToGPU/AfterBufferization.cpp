//===- AfterBufferization.cpp - GPU host code after one-shot bufferization and deallocation ------------------===//
//
// The passes of --dsa-gpu-pipeline that finish what dsa-to-gpu began, once upstream one-shot bufferization and
// ownership-based deallocation have made its tensors memrefs (docs/gpu-backend.md):
//   dsa-gpu-share-returned-buffers  a returned buffer the function does not own is returned, not cloned;
//   dsa-gpu-device-buffers          memref.alloc / dealloc / copy -> gpu.alloc / dealloc / memcpy;
//   dsa-gpu-launch-kernels          the launch calls -> gpu.launch_func of the embedded kernels, the host top-k calls
//                                   -> their host round trip.
// Also the declarations the passes share (Symbols.h).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "EmbeddedKernels.h"
#include "Symbols.h"
#include "../Common/RuntimeDeclarations.h"

#include "dsa/ABI/RuntimeFunctions.h"
#include "dsa/ABI/GpuKernels.h"
#include "dsa/Conversion/DSAToGPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::dsa {
#define GEN_PASS_DEF_DSAGPUDEVICEBUFFERS
#define GEN_PASS_DEF_DSAGPULAUNCHKERNELS
#define GEN_PASS_DEF_DSAGPUSHARERETURNEDBUFFERS
#include "dsa/Conversion/DSAToGPU/Passes.h.inc"

LogicalResult declareFunction(ModuleOp module, StringRef name, FunctionType type, StringRef what,
                              bool cInterface) {
  OpBuilder mb = OpBuilder::atBlockBegin(module.getBody()); // each declaration goes first (the module's layout)
  return conversion::declareRuntimeFunction(module, mb, name, type, "dsa-to-gpu", what, cInterface);
}

LogicalResult declareTopk(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  auto dyn2 = [&](Type t) { return MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, t); };
  Builder bb(ctx);
  auto type =
      FunctionType::get(ctx, {dyn2(bb.getF32Type()), bb.getI64Type(), dyn2(bb.getI64Type())}, {bb.getI32Type()});
  return declareFunction(module, ::dsa::abi::kTopkSymbol, type, "the top-k runtime's declaration",
                         /*cInterface=*/true);
}


namespace {

//===----------------------------------------------------------------------===//
// After bufferization and deallocation
//===----------------------------------------------------------------------===//

/// The ownership clones of returned buffers dropped: ownership-based deallocation guarantees a function's results
/// do not alias its arguments by cloning a returned buffer the function does not own (an argument, or a select
/// that may be one: `scf.if %owned { yield %m } else { yield (bufferization.clone %m) }`). The GPU calling
/// convention has no such rule (a returned argument is shared, runtime/cuda GpuStepLibrary.h), so %m is returned
/// itself; the deallocations that retain the result then keep whatever it may be.
struct ShareReturnedBuffersPass : impl::DSAGPUShareReturnedBuffersBase<ShareReturnedBuffersPass> {
  void runOnOperation() override {
    auto clonedValue = [](Value v) -> Value {
      if (auto clone = v.getDefiningOp<bufferization::CloneOp>())
        return clone.getInput();
      auto ifOp = v.getDefiningOp<scf::IfOp>();
      if (!ifOp || ifOp.getNumResults() != 1 || !ifOp.elseBlock())
        return {};
      Value thenV = ifOp.thenYield().getOperand(0), elseV = ifOp.elseYield().getOperand(0);
      auto clone = elseV.getDefiningOp<bufferization::CloneOp>();
      if (!clone || clone.getInput() != thenV || &ifOp.getThenRegion().front().front() != ifOp.thenYield() ||
          clone->getBlock() != ifOp.elseBlock())
        return {};
      return thenV;
    };
    getOperation().walk([&](func::ReturnOp ret) {
      for (OpOperand &operand : ret->getOpOperands()) {
        Value original = clonedValue(operand.get());
        if (!original || original.getType() != operand.get().getType())
          continue;
        Operation *def = operand.get().getDefiningOp();
        operand.get().replaceAllUsesWith(original);
        if (def->use_empty())
          def->erase();
      }
    });
  }
};

/// Every buffer of the host code is device memory here (the functions' memref arguments are device buffers, the
/// allocations are the kernels' results and scratch): memref.alloc / dealloc / copy become gpu.alloc / dealloc /
/// memcpy. Runs after deallocation and before dsa-gpu-launch-kernels (whose host top-k copies are host memory).
struct DeviceBuffersPass : impl::DSAGPUDeviceBuffersBase<DeviceBuffersPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](func::FuncOp f) {
      if (f->getParentOfType<gpu::GPUModuleOp>()) // device code (kernel helpers), not host buffers
        return;
      f.walk([&](Operation *op) {
        if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp>(op))
          ops.push_back(op);
        else if (isa<memref::AllocaOp, memref::ReallocOp>(op))
          ops.push_back(op);
      });
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      if (auto a = dyn_cast<memref::AllocOp>(op)) {
        Value m = gpu::AllocOp::create(b, loc, a.getType(), /*asyncToken=*/Type(), ValueRange{},
                                       a.getDynamicSizes(), a.getSymbolOperands(), /*hostShared=*/false)
                      .getMemref();
        a.replaceAllUsesWith(m);
        a.erase();
      } else if (auto d = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{}, d.getMemref());
        d.erase();
      } else if (auto c = dyn_cast<memref::CopyOp>(op)) {
        gpu::MemcpyOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{}, c.getTarget(), c.getSource());
        c.erase();
      } else {
        op->emitOpError("dsa-gpu-device-buffers: a host buffer in GPU host code (expected memref.alloc only)");
        return signalPassFailure();
      }
    }
  }
};

/// Each kernel launch call -> gpu.launch_func of the kernel (cloned with its helpers from Kernels.mlir into
/// gpu.module @dsa_kernels) with its block (core's dsa/ABI/GpuKernels.h), skipped at run time when the grid is empty (CUDA
/// rejects a zero grid); each host top-k call -> its round trip on the host: download the f32 values
/// (memref.alloc + gpu.memcpy), dsa_cpu_topk_set (declared with the C interface: _mlir_ciface_dsa_cpu_topk_set,
/// runtime/cpu TopkRuntime), upload the picks, free the host copies; the status is the call's result.
struct LaunchKernelsPass : impl::DSAGPULaunchKernelsBase<LaunchKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<func::CallOp> launches, topks;
    module.walk([&](func::CallOp call) {
      if (call.getCallee().starts_with(kLaunchPrefix))
        launches.push_back(call);
      else if (call.getCallee() == kHostTopkSymbol)
        topks.push_back(call);
    });
    if (launches.empty() && topks.empty())
      return;
    FailureOr<std::unique_ptr<EmbeddedKernels>> kernels = EmbeddedKernels::create(module);
    if (failed(kernels))
      return signalPassFailure();
    for (func::CallOp call : launches) {
      StringRef name = call.getCallee().drop_front(kLaunchPrefix.size());
      const ::dsa::abi::GpuKernelInfo *g = nullptr;
      for (const ::dsa::abi::GpuKernelInfo &k : ::dsa::abi::kGpuKernels)
        if (name == k.symbol)
          g = &k;
      if (!g || call.getNumOperands() < 3) {
        call.emitOpError("dsa-gpu-launch-kernels: no dsa kernel named '") << name << "'";
        return signalPassFailure();
      }
      OpBuilder b(call);
      Location loc = call.getLoc();
      auto idx = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
      ValueRange grid = call.getOperands().take_front(3);
      Value total = arith::MulIOp::create(b, loc, arith::MulIOp::create(b, loc, grid[0], grid[1]), grid[2]);
      Value nonEmpty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, total, idx(0));
      auto ifOp = scf::IfOp::create(b, loc, nonEmpty, /*withElseRegion=*/false);
      b.setInsertionPointToStart(ifOp.thenBlock());
      gpu::GPUFuncOp k = (*kernels)->kernel(name);
      gpu::LaunchFuncOp::create(b, loc, k, gpu::KernelDim3{grid[0], grid[1], grid[2]},
                                gpu::KernelDim3{idx(g->block[0]), idx(g->block[1]), idx(g->block[2])},
                                /*dynamicSharedMemorySize=*/Value(), call.getOperands().drop_front(3));
      call.erase();
    }
    if (!topks.empty() && failed(declareTopk(module)))
      return signalPassFailure();
    for (func::CallOp call : topks) {
      OpBuilder b(call);
      Location loc = call.getLoc();
      Value values = call.getOperand(0), k = call.getOperand(1), picks = call.getOperand(2);
      auto valuesType = cast<MemRefType>(values.getType());
      auto picksType = cast<MemRefType>(picks.getType());
      Value rows = memref::DimOp::create(b, loc, values, 0), n = memref::DimOp::create(b, loc, values, 1);
      Value kIdx = memref::DimOp::create(b, loc, picks, 1);
      Value hostValues = memref::AllocOp::create(b, loc, valuesType, ValueRange{rows, n});
      gpu::MemcpyOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{}, hostValues, values);
      Value hostPicks = memref::AllocOp::create(b, loc, picksType, ValueRange{rows, kIdx});
      auto topk = func::CallOp::create(b, loc, FlatSymbolRefAttr::get(ctx, ::dsa::abi::kTopkSymbol),
                                       TypeRange{b.getI32Type()}, ValueRange{hostValues, k, hostPicks});
      gpu::MemcpyOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{}, picks, hostPicks);
      memref::DeallocOp::create(b, loc, hostValues);
      memref::DeallocOp::create(b, loc, hostPicks);
      call.replaceAllUsesWith(topk.getResults());
      call.erase();
    }
    // The declarations the calls named.
    for (func::FuncOp f : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (f.isExternal() && (f.getName().starts_with(kLaunchPrefix) || f.getName() == kHostTopkSymbol) &&
          SymbolTable::symbolKnownUseEmpty(f, module))
        f.erase();
    (*kernels)->finish();
  }
};

} // namespace

} // namespace mlir::dsa
