//===- FuzzCompiler.cpp - fuzz target: parser, verifier, decomposition, the CPU and the GPU pipelines --------===//
//
// Input: MLIR text. Parses and verifies it (dsa and every upstream dialect), then runs on copies of it:
//  - dsa-decompose-attention;
//  - --dsa-cpu-pipeline (to the LLVM dialect; nothing is compiled to machine code or run);
//  - on a module with at least one dsa op, --dsa-gpu-pipeline (chip sm_90, PTX text: dsa-to-gpu, bufferization,
//    the kernels' launches, NVVM, the gpu.binary) when the CUDA toolkit's libdevice is there
//    ($CUDA_HOME / $CUDA_ROOT / $CUDA_PATH / /usr/local/cuda, the pipeline's own lookup; else its first pass fails
//    with a diagnostic and nothing more runs: no GPU pipeline on that machine).
// A diagnostic is a normal outcome; a crash, hang, leak, sanitizer report, or a dsa pass that succeeds but leaves IR
// that fails verification are bugs: after every pass that succeeded the IR it ran on is verified, and invalid IR after
// a dsa pass aborts naming the pass (after an upstream pass: VerifyAfterEachPass below).
// DSA_FUZZ_VERBOSE=1 prints, per input, which pipelines completed ("compiler: decompose ok, cpu ok, gpu ok"; "-" for a
// diagnostic, "skip" for gpu on a module without dsa ops). Seeds: fuzz/corpus/compiler (scripts/fuzz.sh adds every
// split input of test/**/*.mlir).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "MlirSupport.h"

#include "dsa/Conversion/DSAToCPU/Passes.h"
#include "dsa/Conversion/DSAToGPU/Passes.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace {

/// Verifies the operation a pass ran on after the pass succeeded. Invalid IR after a dsa pass aborts, naming the pass.
/// After an upstream pass it is recorded (`upstreamInvalid`) and the input counts as a diagnostic: the pipeline
/// fails the same way under dsa-opt's verifier, and the bug is not dsa's (one-shot-bufferize makes a linalg.map of
/// negative size from a tensor.pad whose padded size overflows, test/Interpreter/huge-sizes.mlir).
struct VerifyAfterEachPass : mlir::PassInstrumentation {
  bool *upstreamInvalid;
  explicit VerifyAfterEachPass(bool *flag) : upstreamInvalid(flag) {}
  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    if (*upstreamInvalid || mlir::succeeded(mlir::verify(op)))
      return;
    if (pass->getArgument().starts_with("dsa-")) {
      std::fprintf(stderr, "dsa fuzz: pass '%s' (%s) succeeded but left invalid IR\n", pass->getArgument().str().c_str(),
                   pass->getName().str().c_str());
      std::abort();
    }
    *upstreamInvalid = true;
    if (std::getenv("DSA_FUZZ_VERBOSE"))
      std::fprintf(stderr, "compiler: upstream pass '%s' left invalid IR\n", pass->getArgument().str().c_str());
  }
};

/// Runs `build`'s passes on `module`, verifying after each (above). False on a diagnostic (the module is not
/// something the pipeline handles) or when an upstream pass left invalid IR.
bool runPasses(mlir::ModuleOp module, void (*build)(mlir::OpPassManager &)) {
  mlir::PassManager pm(module->getContext());
  pm.enableVerifier(false); // VerifyAfterEachPass verifies instead, and aborts rather than reporting a failure
  bool upstreamInvalid = false;
  pm.addInstrumentation(std::make_unique<VerifyAfterEachPass>(&upstreamInvalid));
  build(pm);
  const bool ok = mlir::succeeded(pm.run(module));
  return ok && !upstreamInvalid;
}

bool hasDsaOp(mlir::ModuleOp module) {
  return module
      ->walk([](mlir::Operation *op) {
        return llvm::isa<mlir::dsa::DSADialect>(op->getDialect()) ? mlir::WalkResult::interrupt()
                                                                  : mlir::WalkResult::advance();
      })
      .wasInterrupted();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const bool verbose = std::getenv("DSA_FUZZ_VERBOSE") != nullptr;
  mlir::OwningOpRef<mlir::ModuleOp> module = dsa::fuzz::parseAndVerify(data, size);
  if (!module) {
    if (verbose)
      std::fprintf(stderr, "compiler: not a valid module\n");
    return 0;
  }
  const bool gpu = hasDsaOp(*module);
  mlir::OwningOpRef<mlir::ModuleOp> decomposeCopy = module->clone();
  const bool decomposed =
      runPasses(*decomposeCopy, [](mlir::OpPassManager &pm) { pm.addPass(mlir::dsa::createDSADecomposeAttention()); });
  mlir::OwningOpRef<mlir::ModuleOp> gpuCopy = module->clone();
  const bool cpuOk = runPasses(*module, [](mlir::OpPassManager &pm) { mlir::dsa::buildDSACPUPipeline(pm); });
  const bool gpuOk =
      gpu && runPasses(*gpuCopy, [](mlir::OpPassManager &pm) { mlir::dsa::buildDSAGPUPipeline(pm, "sm_90"); });
  if (verbose)
    std::fprintf(stderr, "compiler: decompose %s, cpu %s, gpu %s\n", decomposed ? "ok" : "-", cpuOk ? "ok" : "-",
                 !gpu ? "skip" : gpuOk ? "ok" : "-");
  return 0;
}
