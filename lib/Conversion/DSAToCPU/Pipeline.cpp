//===- Pipeline.cpp - --dsa-cpu-pipeline: dsa -> LLVM dialect for the CPU ------===//
//
// dsa-decompose-attention, dsa-strip-probes, dsa-to-cpu, then upstream: one-shot bufferization across function
// boundaries (identity layouts, so every function argument/result is a plain memref), ownership-based buffer
// deallocation (results are owned by the caller), linalg -> loops, and the conversions to the LLVM dialect with
// bf16 truncation expanded inline (--arith-expand include-bf16: no __truncsfbf2 call, ../shared/toolchain.md).
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
#include "dsa/Conversion/Passes.h"
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
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::dsa {

namespace {

/// Rewrites every memref.copy whose source or target does not have the identity layout (the copies that
/// bufferization makes for tensor.insert_slice, tensor.concat and tensor.extract_slice on dynamic shapes) into
/// linalg.copy, which convert-linalg-to-loops turns into loops. finalize-memref-to-llvm would otherwise lower them to
/// a call of the runner-utils library's `memrefCopy`, which neither the JIT's process nor an AOT step library has.
/// Copies between identity-layout memrefs stay memref.copy (a memcpy).
struct StridedCopiesToLinalgPass : PassWrapper<StridedCopiesToLinalgPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(StridedCopiesToLinalgPass)
  StringRef getArgument() const override { return "dsa-cpu-strided-copies-to-linalg"; }
  void getDependentDialects(DialectRegistry &registry) const override { registry.insert<linalg::LinalgDialect>(); }
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      auto identity = [](Type t) {
        auto m = dyn_cast<MemRefType>(t);
        return m && m.getLayout().isIdentity();
      };
      if (!identity(copy.getSource().getType()) || !identity(copy.getTarget().getType()))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }
};

struct DSACPUPipelineOptions : PassPipelineOptions<DSACPUPipelineOptions> {
  Option<bool> parallel{*this, "parallel",
                        llvm::cl::desc("Run the outputs of every op on OpenMP threads (needs libomp at run time)"),
                        llvm::cl::init(false)};
};
} // namespace

void buildDSACPUPipeline(OpPassManager &pm, bool parallel) {
  pm.addPass(createDSADecomposeAttention());
  pm.addPass(createDSAStripProbes());
  pm.addPass(createConvertDSAToCPU());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  // Also for the values whose layout the analysis does not know (scf.if results): with the default fully dynamic
  // layout, each join would be followed by a strided memref.copy, which lowers to a call of the runner-utils
  // library's memrefCopy (absent from the JIT's process and from an AOT object).
  bufferize.unknownTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(std::make_unique<StridedCopiesToLinalgPass>());

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
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void registerDSACPUPipeline() {
  PassPipelineRegistration<DSACPUPipelineOptions>(
      "dsa-cpu-pipeline",
      "Lower dsa (dsa.attention or the primitives) to the LLVM dialect for the CPU: decompose, strip probes, "
      "dsa-to-cpu, bufferize, loops (OpenMP with parallel=true), LLVM",
      [](OpPassManager &pm, const DSACPUPipelineOptions &options) { buildDSACPUPipeline(pm, options.parallel); });
}

} // namespace mlir::dsa
