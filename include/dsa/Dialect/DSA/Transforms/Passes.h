//===- Passes.h - dsa transformation passes ----------------------------------===//
#ifndef DSA_DIALECT_DSA_TRANSFORMS_PASSES_H
#define DSA_DIALECT_DSA_TRANSFORMS_PASSES_H

#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dsa {

#define GEN_PASS_DECL
#include "dsa/Dialect/DSA/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dsa/Dialect/DSA/Transforms/Passes.h.inc"

} // namespace mlir::dsa

#endif
