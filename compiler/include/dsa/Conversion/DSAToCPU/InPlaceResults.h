//===- InPlaceResults.h - how compiler/lib/Backend/CPU and dsa-cpu-drop-in-place-results talk -------------------------===//
//
// The CPU backend updates a compressed layer's caches in place (docs/cpu-backend.md "In-place caches"). It tells
// --dsa-cpu-pipeline which functions to treat so, and the pipeline tells it which results it dropped and which
// arguments the code writes, through two discardable attributes. Both sides use only these accessors:
//
//   before the pipeline   func.func @f ... attributes {dsa.cpu_in_place = array<i64: writable arguments>}
//                         (setInPlaceArguments; dsa-cpu-drop-in-place-results reads and removes it:
//                         takeInPlaceArguments)
//   after the pipeline    module attributes {dsa.cpu_in_place = {f = array<i64: argument of each original result,
//                         or -1>}, dsa.cpu_written = {f = array<i64: writable arguments the code may write>}}
//                         (setInPlaceRecord by the pass; takeInPlaceRecord by the backend, which removes them)
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CONVERSION_DSATOCPU_INPLACERESULTS_H
#define DSA_CONVERSION_DSATOCPU_INPLACERESULTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir::dsa {

/// The marker on a function (array<i64>: its writable arguments) and, after the pipeline, the module attribute
/// recording the dropped results ({function name = array<i64>}).
inline constexpr llvm::StringLiteral kCPUInPlaceAttrName = "dsa.cpu_in_place";
/// The module attribute recording, per function, the writable arguments the code may write.
inline constexpr llvm::StringLiteral kCPUWrittenAttrName = "dsa.cpu_written";

/// Marks `f` for dsa-cpu-drop-in-place-results: `writableArgs` are the arguments (tensor, marked
/// bufferization.writable) the caller lets the function update in place.
void setInPlaceArguments(func::FuncOp f, llvm::ArrayRef<int64_t> writableArgs);
/// The arguments `f` was marked with (setInPlaceArguments), the marker removed; std::nullopt when unmarked (or
/// marked with something other than an array<i64>, which is left in place).
std::optional<llvm::SmallVector<int64_t>> takeInPlaceArguments(func::FuncOp f);

/// What dsa-cpu-drop-in-place-results found, per function name (in the order the functions were processed).
struct InPlaceRecord {
  /// For each original result of the function: the argument whose buffer it was (the result was dropped), or -1
  /// (kept). Only for the functions whose results the pass examined.
  llvm::MapVector<llvm::StringRef, llvm::SmallVector<int64_t>> resultArgs;
  /// The marked arguments the code may write (a writable argument bufferization chose to copy is not written).
  llvm::MapVector<llvm::StringRef, llvm::SmallVector<int64_t>> writtenArgs;
};

/// Writes `record` on `module` (an empty map writes no attribute). The names must be the module's functions.
void setInPlaceRecord(ModuleOp module, const InPlaceRecord &record);
/// Reads the record setInPlaceRecord wrote and removes its attributes from `module` (empty maps when absent). The
/// names refer to the module's context (they live as long as it).
InPlaceRecord takeInPlaceRecord(ModuleOp module);

} // namespace mlir::dsa

#endif
