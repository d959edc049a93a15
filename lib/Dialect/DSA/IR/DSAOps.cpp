//===- DSAOps.cpp - dsa operations and their verifiers -----------------------===//
#include "dsa/Dialect/DSA/IR/DSAOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::dsa;

#define GET_OP_CLASSES
#include "dsa/Dialect/DSA/IR/DSAOps.cpp.inc"

LogicalResult LinearOp::verify() { return success(); } // TODO(verifier)
LogicalResult RmsNormOp::verify() { return success(); } // TODO(verifier)
LogicalResult PositionsOp::verify() { return success(); } // TODO(verifier)
LogicalResult ApplyRopeOp::verify() { return success(); } // TODO(verifier)
LogicalResult ActQuantFp8Op::verify() { return success(); } // TODO(verifier)
LogicalResult RingUpdateOp::verify() { return success(); } // TODO(verifier)
LogicalResult WindowKvOp::verify() { return success(); } // TODO(verifier)
LogicalResult WindowIndicesOp::verify() { return success(); } // TODO(verifier)
LogicalResult SparseAttnOp::verify() { return success(); } // TODO(verifier)
LogicalResult GroupedOutputOp::verify() { return success(); } // TODO(verifier)
LogicalResult ProbeOp::verify() { return success(); } // TODO(verifier)
LogicalResult AttentionOp::verify() { return success(); } // TODO(verifier)
