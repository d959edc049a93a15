//===- main.cpp - dsa's passes in a compiler of your own, through the installed DSA package -------------------===//
//
// Reads a module with dsa ops, runs dsa's CPU pipeline (dsa.attention or the primitives -> the LLVM dialect) in this
// program's own PassManager and prints the result: what a compiler that embeds dsa does. Usage:
//   dsa-pass-pipeline-example FILE.mlir [--decompose-only]
// Exit status 1 with MLIR's diagnostics on a parse or pass failure, 2 on a usage error.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Conversion/Passes.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::strcmp(argv[2], "--decompose-only") != 0)) {
    llvm::errs() << "usage: " << argv[0] << " FILE.mlir [--decompose-only]\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  registry.insert<mlir::dsa::DSADialect>();
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1; // the parser has reported the error
  mlir::PassManager pm(&context);
  if (argc == 3)
    pm.addPass(mlir::dsa::createDSADecomposeAttention());
  else
    mlir::dsa::buildDSACPUPipeline(pm, /*parallel=*/false, /*cpu=*/"");
  if (mlir::failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}
