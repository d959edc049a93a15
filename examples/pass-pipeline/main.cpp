//===- main.cpp - dsa's passes in a compiler of your own, through the installed DSA package -------------------===//
//
// Reads a module with dsa ops, runs dsa's CPU pipeline (dsa.attention or the primitives -> the LLVM dialect) in this
// program's own PassManager and prints the result: what a compiler that embeds dsa does. Usage:
//   dsa-pass-pipeline-example FILE.mlir [--decompose-only | --pass-pipeline=PIPELINE]
// --pass-pipeline takes a textual pipeline of upstream and dsa passes (e.g. 'builtin.module(dsa-decompose-attention,
// dsa-strip-probes,dsa-to-cpu)'): the CPU conversion's passes are registered by name (registerDSACPUPipeline). It links only the CPU
// conversion (DSA::ConversionCPU), not the GPU one. Exit status 1 with MLIR's diagnostics on a parse or pass failure,
// 2 on a usage error.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Conversion/DSAToCPU/Passes.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

int main(int argc, char **argv) {
  const char *pipelinePrefix = "--pass-pipeline=";
  bool decomposeOnly = argc == 3 && std::strcmp(argv[2], "--decompose-only") == 0;
  bool textual = argc == 3 && std::strncmp(argv[2], pipelinePrefix, std::strlen(pipelinePrefix)) == 0;
  if (argc < 2 || argc > 3 || (argc == 3 && !decomposeOnly && !textual)) {
    llvm::errs() << "usage: " << argv[0] << " FILE.mlir [--decompose-only | --pass-pipeline=PIPELINE]\n";
    return 2;
  }
  mlir::registerAllPasses();
  mlir::dsa::registerDSACPUPipeline(); // --dsa-cpu-pipeline and every dsa pass it runs, by name
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  registry.insert<mlir::dsa::DSADialect>();
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1; // the parser has reported the error
  mlir::PassManager pm(&context);
  if (textual) {
    // A pipeline rooted on the module, as mlir-opt's --pass-pipeline takes it: 'builtin.module(...)'.
    mlir::FailureOr<mlir::OpPassManager> parsed = mlir::parsePassPipeline(argv[2] + std::strlen(pipelinePrefix));
    if (mlir::failed(parsed))
      return 2; // the parser has reported the error
    if (parsed->getOpAnchorName() != mlir::ModuleOp::getOperationName()) {
      llvm::errs() << "--pass-pipeline must be rooted on builtin.module, not " << parsed->getOpAnchorName() << "\n";
      return 2;
    }
    static_cast<mlir::OpPassManager &>(pm) = std::move(*parsed);
  } else if (decomposeOnly)
    pm.addPass(mlir::dsa::createDSADecomposeAttention());
  else
    mlir::dsa::buildDSACPUPipeline(pm, /*parallel=*/false, /*cpu=*/"");
  if (mlir::failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}
