//===- MlirSupport.h - what the MLIR fuzz targets share: one context with the dialects dsa modules use -------===//
#ifndef DSA_FUZZ_MLIRSUPPORT_H
#define DSA_FUZZ_MLIRSUPPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstddef>
#include <cstdint>

namespace dsa::fuzz {

/// One context for the whole fuzzing run (every upstream dialect, their extensions and LLVM IR translations, and
/// dsa's; single-threaded, diagnostics dropped: an error is a normal outcome), reused across inputs as mlir-opt
/// reuses one across a file's split inputs.
mlir::MLIRContext &context();

/// Parses `data` as a module (null on a parse error) and verifies it (null if invalid).
mlir::OwningOpRef<mlir::ModuleOp> parseAndVerify(const uint8_t *data, size_t size);

} // namespace dsa::fuzz

#endif
