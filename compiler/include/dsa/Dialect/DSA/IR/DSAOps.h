//===- DSAOps.h - dsa operations ---------------------------------------------===//
#ifndef DSA_DIALECT_DSA_IR_DSAOPS_H
#define DSA_DIALECT_DSA_IR_DSAOPS_H

#include "dsa/Dialect/DSA/IR/DSAAttrs.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dsa/Dialect/DSA/IR/DSAOps.h.inc"

#endif
