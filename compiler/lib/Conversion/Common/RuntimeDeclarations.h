//===- RuntimeDeclarations.h - declaring the C functions compiled code calls (dsa-to-cpu, dsa-to-gpu) -----------===//
//
// Private to compiler/lib/Conversion (header-only, not installed). Both conversions call functions the host
// defines (the run-time check hook `dsa_cpu_fail`, the top-k runtime `dsa_cpu_topk_set`; core/include/dsa/ABI) and
// must declare them in the module they convert. A module may already hold the symbol: a declaration of exactly the
// expected type is reused; anything else under that name (another type, a global, a function with a body of
// another type) is an error on the op that holds it, because calls to it would fail verification later or call
// the wrong thing (fuzz/regressions/compiler/topk-symbol-taken.mlir).
//
//===----------------------------------------------------------------------------------------------------------===//

#ifndef DSA_CONVERSION_COMMON_RUNTIMEDECLARATIONS_H
#define DSA_CONVERSION_COMMON_RUNTIMEDECLARATIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::dsa::conversion {

/// Declares `name` with `type` as a private func.func in `module`, unless a func.func of exactly that type is
/// already there. `builder` must point into the module's body; the declaration is inserted at its insertion point
/// (so successive calls keep their order). `pass` prefixes the error ("dsa-to-cpu"), `what` names the function in
/// it ("the top-k runtime's declaration"). `cInterface` adds `llvm.emit_c_interface` (memref descriptors passed by
/// pointer). Fails, with a diagnostic on the holder, when the symbol is taken by anything else.
inline LogicalResult declareRuntimeFunction(ModuleOp module, OpBuilder &builder, StringRef name, FunctionType type,
                                            StringRef pass, StringRef what, bool cInterface) {
  if (Operation *existing = module.lookupSymbol(name)) {
    auto f = dyn_cast<func::FuncOp>(existing);
    if (!f || f.getFunctionType() != type)
      return existing->emitOpError(pass) << ": the symbol '" << name << "' is taken by something other than "
                                         << what << " " << type;
    return success();
  }
  auto decl = func::FuncOp::create(builder, module.getLoc(), name, type);
  decl.setPrivate();
  if (cInterface)
    decl->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), builder.getUnitAttr());
  return success();
}

} // namespace mlir::dsa::conversion

#endif // DSA_CONVERSION_COMMON_RUNTIMEDECLARATIONS_H
