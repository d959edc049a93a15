//===- DSADialect.cpp - dsa dialect registration -----------------------------===//
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/IR/DSAAttrs.h"
#include "dsa/Dialect/DSA/IR/DSAOps.h"

using namespace mlir;
using namespace mlir::dsa;

#include "dsa/Dialect/DSA/IR/DSADialect.cpp.inc"

void DSADialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dsa/Dialect/DSA/IR/DSAOps.cpp.inc"
      >();
  registerAttributes();
}
