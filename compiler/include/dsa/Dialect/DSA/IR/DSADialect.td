//===- DSADialect.td - the dsa dialect ---------------------------------------===//
#ifndef DSA_DIALECT_TD
#define DSA_DIALECT_TD

include "mlir/IR/OpBase.td"

def DSA_Dialect : Dialect {
  let name = "dsa";
  let cppNamespace = "::mlir::dsa";
  let summary = "DeepSeek-V4.1 sparse attention";
  let description = [{
    The `dsa` dialect expresses one DeepSeek-V4.1 attention layer (`Attention.forward` of the reference
    `inference/model.py`) and the primitives it decomposes into. Values are builtin tensors: bf16 tensors hold
    bf16-exact values, indices are i32 with -1 for "no row", positions and the step's `start_pos` are i64 runtime
    values, so one function serves every decode step. Layer state (the window ring) is an explicit SSA value that
    ops read and return updated; the caller threads it from one step to the next.

    The exact behaviour of every op is `shared/spec/attention-semantics.md`; each op's description names the
    section it follows.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect"];
}

class DSA_Op<string mnemonic, list<Trait> traits = []> : Op<DSA_Dialect, mnemonic, traits>;

#endif // DSA_DIALECT_TD
