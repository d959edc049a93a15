//===- dsa-gpu-aot.cpp - write a GPU step library for the MLIR-free CUDA runtime --------------------------===//
//
//   dsa-gpu-aot layer.mlir -o DIR [--name BASE] [--chip sm_90] [--format bin|isa|fatbin] [--probes]
//
// Compiles every public function of layer.mlir (dsa.attention of window-only layers, or the window-only
// primitives) with dsa::gpu::emitGPUStepLibrary into DIR/BASE.{o,so,json} (BASE defaults to the input's stem).
// Prints the description's path; errors go to stderr with exit status 1. docs/gpu-backend.md "Step libraries".
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Backend/GPU/GPUStepLibrary.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::OptionCategory category("dsa-gpu-aot options");
static cl::opt<std::string> input(cl::Positional, cl::desc("<input .mlir>"), cl::Required, cl::cat(category));
static cl::opt<std::string> outputDir("o", cl::desc("Output directory"), cl::value_desc("dir"), cl::Required,
                                      cl::cat(category));
static cl::opt<std::string> baseName("name", cl::desc("Base name of the files (default: the input's stem)"),
                                     cl::cat(category));
static cl::opt<std::string> chip("chip", cl::desc("Target SM (sm_80, sm_90, sm_100, ...)"), cl::init("sm_90"),
                                 cl::cat(category));
static cl::opt<std::string> format("format", cl::desc("Kernel form: bin (cubin), isa (PTX), fatbin"),
                                   cl::init("bin"), cl::cat(category));
static cl::opt<bool> probes("probes", cl::desc("Keep dsa.probe values as extra results"), cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "dsa GPU step library compiler\n");

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  registry.insert<mlir::dsa::DSADialect>();
  mlir::MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  std::string error;
  auto file = mlir::openInputFile(input, &error);
  if (!file) {
    llvm::errs() << "dsa-gpu-aot: error: " << error << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module) {
    llvm::errs() << "dsa-gpu-aot: error: cannot parse " << input << "\n";
    return 1;
  }
  dsa::gpu::GPUCompileOptions options;
  options.chip = chip;
  options.format = format;
  options.probesAsResults = probes;
  const std::string base = baseName.empty() ? llvm::sys::path::stem(input).str() : std::string(baseName);
  dsa::Result<std::string> json = dsa::gpu::emitGPUStepLibrary(*module, outputDir, base, options);
  if (!json) {
    llvm::errs() << "dsa-gpu-aot: error: " << json.error() << "\n";
    return 1;
  }
  llvm::outs() << *json << "\n";
  return 0;
}
