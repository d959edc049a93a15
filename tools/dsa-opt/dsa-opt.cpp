//===- dsa-opt.cpp - mlir-opt with the dsa dialect and passes ----------------===//
#include "dsa/Conversion/Passes.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  registry.insert<mlir::dsa::DSADialect>();
  mlir::registerAllPasses();
  mlir::dsa::registerDSAPasses();
  mlir::dsa::registerDSAConversionPasses();
  mlir::dsa::registerDSACPUPipeline();
  mlir::dsa::registerDSAGPUPipeline();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "dsa optimizer driver\n", registry));
}
