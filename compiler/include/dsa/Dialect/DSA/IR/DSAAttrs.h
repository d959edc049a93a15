//===- DSAAttrs.h - dsa attributes -------------------------------------------===//
#ifndef DSA_DIALECT_DSA_IR_DSAATTRS_H
#define DSA_DIALECT_DSA_IR_DSAATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "dsa/Dialect/DSA/IR/DSAEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dsa/Dialect/DSA/IR/DSAAttrs.h.inc"

#endif
