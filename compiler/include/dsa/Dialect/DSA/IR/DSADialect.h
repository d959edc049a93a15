//===- DSADialect.h - the dsa dialect ----------------------------------------===//
#ifndef DSA_DIALECT_DSA_IR_DSADIALECT_H
#define DSA_DIALECT_DSA_IR_DSADIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "dsa/Dialect/DSA/IR/DSADialect.h.inc"

#endif
