//===- FuzzCompiler.cpp - fuzz target: parser, verifier, decomposition and the CPU pipeline on dsa modules ----===//
//
// Input: MLIR text. Parses and verifies it (dsa and every upstream dialect), then runs dsa-decompose-attention with
// the verifier after each pass, and on what verified, --dsa-cpu-pipeline (to the LLVM dialect; nothing is compiled
// to machine code or run). A diagnostic is a normal outcome; a crash, hang, leak, sanitizer report, or IR that
// fails verification after a dsa pass (the pass manager's verifier reports it as a failure, which we turn into a
// crash: a dsa pass must never emit invalid IR) are bugs. Seeds: fuzz/corpus/compiler (scripts/fuzz.sh adds every
// split input of test/**/*.mlir).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "MlirSupport.h"

#include "dsa/Conversion/DSAToCPU/Passes.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cstdio>
#include <cstdlib>

namespace {

/// Runs `build`'s passes on `module`; aborts if a pass succeeded but left invalid IR.
bool runPasses(mlir::ModuleOp module, void (*build)(mlir::OpPassManager &)) {
  mlir::PassManager pm(module->getContext());
  pm.enableVerifier(false); // verified below, after the passes that succeeded
  build(pm);
  if (mlir::failed(pm.run(module)))
    return false; // a diagnostic: the module is not something the pass handles
  if (mlir::failed(mlir::verify(module))) {
    std::fprintf(stderr, "dsa fuzz: a pipeline succeeded but produced invalid IR\n");
    std::abort();
  }
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::OwningOpRef<mlir::ModuleOp> module = dsa::fuzz::parseAndVerify(data, size);
  if (!module)
    return 0;
  mlir::OwningOpRef<mlir::ModuleOp> copy = module->clone();
  runPasses(*copy, [](mlir::OpPassManager &pm) { pm.addPass(mlir::dsa::createDSADecomposeAttention()); });
  runPasses(*module, [](mlir::OpPassManager &pm) { mlir::dsa::buildDSACPUPipeline(pm); });
  return 0;
}
