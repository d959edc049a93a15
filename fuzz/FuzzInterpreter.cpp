//===- FuzzInterpreter.cpp - fuzz target: the reference interpreter on small dsa modules ---------------------===//
//
// Input: MLIR text. Parses and verifies it, decomposes dsa.attention (dsa-decompose-attention), and interprets
// every function that takes no arguments (the form of test/Interpreter's tests) on the reference interpreter, with
// the tensor byte limit at 64 MB (an absurd size is an error) and at most 1000 scf.for iterations per run. An error is a normal outcome; a crash, hang, leak or
// sanitizer report is a bug. Seeds: fuzz/corpus/interpreter (scripts/fuzz.sh adds test/Interpreter's inputs).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "MlirSupport.h"

#include "dsa/Dialect/DSA/Transforms/Passes.h"
#include "dsa/Interpreter/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // scf.for bounds are data: a mutated bound must end in an error, not in libFuzzer's timeout (the tensor byte
  // limit bounds each iteration's work, this the number of iterations).
  static const bool limited = (dsa::interp::setLoopIterationLimit(1000), true);
  (void)limited;
  mlir::OwningOpRef<mlir::ModuleOp> module = dsa::fuzz::parseAndVerify(data, size);
  if (!module)
    return 0;
  mlir::PassManager pm(module->getContext());
  pm.addPass(mlir::dsa::createDSADecomposeAttention());
  if (mlir::failed(pm.run(*module)))
    return 0;
  std::vector<mlir::func::FuncOp> functions;
  module->walk([&](mlir::func::FuncOp fn) {
    if (!fn.isExternal() && fn.getNumArguments() == 0)
      functions.push_back(fn);
  });
  for (mlir::func::FuncOp fn : functions) {
    dsa::interp::ProbeLog probes;
    (void)dsa::interp::interpretFunction(fn, {}, &probes);
  }
  return 0;
}
