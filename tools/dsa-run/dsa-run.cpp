//===- dsa-run.cpp - run dsa IR on the reference interpreter ------------------===//
//
// Interpret mode:
//   dsa-run FILE.mlir --entry=NAME [--pass-pipeline='builtin.module(...)']
// parses FILE ('-' = stdin), optionally runs a textual pass pipeline on the module, interprets the zero-argument
// func.func NAME with the reference interpreter (dsa/Interpreter/Interpreter.h) and prints, on stdout,
//   probe NAME: TYPE = [v0, v1, ...]     for every dsa.probe executed, in execution order, then
//   result I: TYPE = [v0, v1, ...]       for every returned value,
// where TYPE is the runtime type (`tensor<2x3xbf16>`, or the element type alone for a scalar) and the values are
// the flat row-major elements: floats with %.9g, integers as integers. Diagnostics go to stderr; the exit status
// is 1 on any error (probes executed before the error are still printed).
//
// Golden mode: dsa-run --golden FILE [--layers ...] [--backend=cpu] ... (GoldenReplay.h); with
// --emit-libraries=DIR it writes the layers' AOT CPU step libraries for tools/dsa-golden instead (EmitLibraries.h).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"
#include "dsa/Interpreter/Interpreter.h"
#include "GoldenReplay.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

using namespace mlir;
namespace cl = llvm::cl;
namespace interp = ::dsa::interp;

namespace {

cl::OptionCategory runCategory("dsa-run options");

cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input .mlir file, '-' for stdin>"), cl::init("-"),
                                   cl::cat(runCategory));
cl::opt<std::string> entryName("entry", cl::desc("Zero-argument func.func to interpret"),
                               cl::value_desc("name"), cl::cat(runCategory));
cl::opt<std::string> passPipeline("pass-pipeline",
                                  cl::desc("Textual pass pipeline to run on the module before interpreting, "
                                           "e.g. 'builtin.module(dsa-decompose-attention)'"),
                                  cl::value_desc("pipeline"), cl::cat(runCategory));

//===- Common: load, transform, print -----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> loadModule(MLIRContext &context, llvm::SourceMgr &sourceMgr, StringRef filename) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(filename, &error);
  if (!file) {
    llvm::errs() << "dsa-run: " << error << "\n";
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}

LogicalResult runPipeline(ModuleOp module, StringRef pipeline) {
  if (pipeline.empty())
    return success();
  std::string errorText;
  llvm::raw_string_ostream errorStream(errorText);
  FailureOr<OpPassManager> parsed = parsePassPipeline(pipeline, errorStream);
  if (failed(parsed)) {
    llvm::errs() << "dsa-run: bad --pass-pipeline '" << pipeline << "': " << errorText << "\n";
    return failure();
  }
  if (parsed->getOpAnchorName() != ModuleOp::getOperationName()) {
    llvm::errs() << "dsa-run: --pass-pipeline must be anchored on builtin.module, e.g. "
                    "'builtin.module(dsa-decompose-attention)', got '"
                 << pipeline << "'\n";
    return failure();
  }
  PassManager pm(module->getContext(), ModuleOp::getOperationName());
  static_cast<OpPassManager &>(pm) = std::move(*parsed);
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  return pm.run(module);
}

std::string runtimeType(const ::dsa::Tensor &value) {
  std::string text = ::dsa::elementTypeName(value.elementType());
  if (value.rank() == 0)
    return text;
  std::string shape;
  for (int64_t d : value.shape())
    shape += std::to_string(d) + "x";
  return "tensor<" + shape + text + ">";
}

void printTensor(llvm::raw_ostream &os, StringRef label, const ::dsa::Tensor &value) {
  os << label << ": " << runtimeType(value) << " = [";
  const int64_t n = value.numElements();
  for (int64_t i = 0; i < n; ++i) {
    if (i)
      os << ", ";
    if (value.isFloat())
      os << llvm::format("%.9g", static_cast<double>(value.floats()[i]));
    else
      os << value.ints()[i];
  }
  os << "]\n";
}

//===- Interpret mode ---------------------------------------------------------------------------------------===//

LogicalResult runInterpretMode(ModuleOp module, StringRef entry) {
  if (entry.empty()) {
    llvm::errs() << "dsa-run: --entry=NAME is required (the zero-argument function to interpret)\n";
    return failure();
  }
  auto fn = module.lookupSymbol<func::FuncOp>(entry);
  if (!fn) {
    llvm::errs() << "dsa-run: no func.func named '" << entry << "' in the module\n";
    return failure();
  }
  if (fn.getNumArguments() != 0)
    return fn.emitError() << "dsa-run: --entry function '" << entry << "' takes " << fn.getNumArguments()
                          << " arguments; interpret mode runs a zero-argument function";

  interp::ProbeLog probes;
  FailureOr<std::vector<::dsa::Tensor>> results = interp::interpretFunction(fn, {}, &probes);
  llvm::raw_ostream &os = llvm::outs();
  for (const interp::ProbeRecord &probe : probes)
    printTensor(os, "probe " + probe.name, probe.value);
  if (failed(results))
    return failure();
  for (size_t i = 0; i < results->size(); ++i)
    printTensor(os, "result " + std::to_string(i), (*results)[i]);
  os.flush();
  return success();
}

//===- Golden replay mode (GoldenReplay.cpp) ------------------------------------------------------------------===//

cl::opt<std::string> goldenPath("golden",
                                cl::desc("Replay a DeepSeek golden (tiny-model-harness.md format) through the dialect "
                                         "and print one verdict per capture"),
                                cl::value_desc("file.json"), cl::cat(runCategory));
cl::list<int64_t> goldenLayers("layers", cl::desc("Layers to replay (comma separated; default: every layer)"),
                               cl::CommaSeparated, cl::cat(runCategory));
cl::opt<std::string> emitStage("emit",
                               cl::desc("With --golden: print the module at a stage before the verdicts: "
                                        "'attention' (dsa.attention per layer) or 'primitives' (decomposed)"),
                               cl::value_desc("stage"), cl::cat(runCategory));
cl::opt<bool> goldenVerbose("verbose", cl::desc("With --golden: list every capture that is not compared"),
                            cl::cat(runCategory));
cl::opt<bool> goldenResync("resync",
                           cl::desc("With --golden (whole model): feed each layer the golden's attn_in and return the "
                                    "golden's attn_out wherever they are stored in full (off by default)"),
                           cl::cat(runCategory));
cl::opt<bool> goldenForce("force",
                          cl::desc("With --golden: after comparing each capture, continue with the golden's value "
                                   "wherever it is stored in full (the ring, caches and shared slots included), "
                                   "so that a quantisation flip or near-tie swap does not propagate (default: "
                                   "strict, the replay's own values)"),
                          cl::cat(runCategory));
cl::opt<int64_t> residentWeightsMb("resident-weights-mb",
                                   cl::desc("With --golden: MB of layer attention weights kept in memory (f32); the "
                                            "layers past it regenerate their weights for each step (default 4096)"),
                                   cl::init(4096), cl::cat(runCategory));
cl::opt<std::string> backendName("backend",
                                 cl::desc("With --golden: 'interpret' (the reference interpreter, default) or 'cpu' "
                                          "(compiled by --dsa-cpu-pipeline, JIT-run); with --emit-libraries also "
                                          "'gpu' (GPU step libraries, --dsa-gpu-pipeline, for dsa-golden on a GPU)"),
                                 cl::init("interpret"), cl::cat(runCategory));
cl::opt<std::string> indexKSource("index-k-source",
                                  cl::desc("With --golden: 'published_slot' (the reference, default) or 'own_cache' "
                                           "(attention-semantics.md section 8's named correction)"),
                                  cl::init("published_slot"), cl::cat(runCategory));

cl::opt<std::string> cpuName("cpu",
                             cl::desc("With --backend=cpu or --emit-libraries (CPU): the CPU to compile for, 'host' "
                                      "or an LLVM CPU name (x86-64-v3, x86-64-v4, sapphirerapids, ...; default "
                                      "$DSA_CPU, else the host)"),
                             cl::value_desc("name"), cl::cat(runCategory));

cl::opt<std::string> emitLibraries("emit-libraries",
                                   cl::desc("With --golden: write each layer's AOT CPU step library "
                                            "(DIR/attention_L<l>.{so,json}) and DIR/golden_layers.json for the "
                                            "MLIR-free replay `dsa-golden --golden FILE --libraries DIR`, instead "
                                            "of replaying"),
                                   cl::value_desc("dir"), cl::cat(runCategory));

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  mlir::dsa::registerDSAPasses();
  mlir::registerTransformsPasses();
  // Only dsa-run's own options in --help; the hundreds of LLVM backend options libLLVM registers, and the MLIR
  // printing/context options registered above, still work and are listed by --help-hidden.
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(argc, argv, "dsa-run: run dsa IR on the reference interpreter\n");

  if (!goldenPath.empty() && inputFilename.getNumOccurrences() > 0) {
    llvm::errs() << "dsa-run: error: --golden builds its own module and takes no input file (got '" << inputFilename
                 << "')\n";
    return 2;
  }
  if (goldenPath.empty()) {
    const cl::Option *goldenOnly[] = {std::addressof(goldenLayers), &emitStage, &goldenVerbose, &goldenResync,
                                      &goldenForce, &indexKSource, &backendName, &emitLibraries,
                                      &residentWeightsMb, &cpuName};
    for (const cl::Option *option : goldenOnly)
      if (option->getNumOccurrences() > 0) {
        llvm::errs() << "dsa-run: error: --" << option->ArgStr << " only applies with --golden\n";
        return 2;
      }
  }

  if (!goldenPath.empty()) {
    if (!emitStage.empty() && emitStage != "attention" && emitStage != "primitives") {
      llvm::errs() << "dsa-run: error: --emit must be 'attention' or 'primitives', got '" << emitStage << "'\n";
      return 2;
    }
    ::dsa::tools::GoldenReplayOptions options;
    options.goldenPath = goldenPath;
    options.layers.assign(goldenLayers.begin(), goldenLayers.end());
    options.emit = emitStage;
    options.verbose = goldenVerbose;
    options.resync = goldenResync;
    options.force = goldenForce;
    options.residentWeightsMb = residentWeightsMb;
    options.indexKSource = indexKSource;
    options.backend = backendName;
    options.emitLibraries = emitLibraries;
    options.cpu = cpuName;
    return ::dsa::tools::runGoldenReplay(options);
  }

  DialectRegistry registry;
  registry.insert<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, tensor::TensorDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = loadModule(context, sourceMgr, inputFilename);
  if (!module)
    return 1;
  if (failed(runPipeline(*module, passPipeline)))
    return 1;
  return failed(runInterpretMode(*module, entryName)) ? 1 : 0;
}
