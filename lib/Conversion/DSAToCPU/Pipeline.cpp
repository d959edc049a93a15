//===- Pipeline.cpp - --dsa-cpu-pipeline: dsa -> LLVM dialect for the CPU ------===//
//
// dsa-decompose-attention, dsa-strip-probes, dsa-to-cpu, then upstream: one-shot bufferization across function
// boundaries (identity layouts, so every function argument/result is a plain memref), ownership-based buffer
// deallocation (results are owned by the caller), linalg -> loops, and the conversions to the LLVM dialect with
// bf16 truncation expanded inline (--arith-expand include-bf16: no __truncsfbf2 call, ../shared/toolchain.md).
// No pass here reassociates or contracts f32 arithmetic, so the bit-exactness of dsa-to-cpu survives.
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
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::dsa {

void buildDSACPUPipeline(OpPassManager &pm) {
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

  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
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
  PassPipelineRegistration<>("dsa-cpu-pipeline",
                             "Lower dsa (dsa.attention or the primitives) to the LLVM dialect for the CPU: "
                             "decompose, strip probes, dsa-to-cpu, bufferize, loops, LLVM",
                             buildDSACPUPipeline);
}

} // namespace mlir::dsa
