//===- dsa-run.cpp - run dsa IR on the reference interpreter or the CPU backend -----------------------------===//
//
// Function mode:
//   dsa-run FILE.mlir --entry=NAME [--input=@x.npy | --input=NUMBER]... [--backend=interpret|cpu] [--cpu=NAME]
//           [--output=DIR] [--pass-pipeline='builtin.module(...)']
// parses FILE ('-' = stdin), optionally runs a textual pass pipeline on the module, and runs the func.func NAME on
// the arguments given by the --input options, one per argument in argument order:
//   --input=@PATH   a NumPy .npy file (dsa/Core/Npy.h: bf16 as numpy.save writes an ml_dtypes.bfloat16 array, '<V2';
//                   f32 '<f4', i32 '<i4', i64 '<i8', i1 '|b1'; an index argument takes '<i8');
//   --input=NUMBER  a scalar argument (i64, index, i32, i1 as 0/1/true/false, f32, bf16: a bf16-exact value), or a
//                   rank-0 tensor argument of those types.
// Each input is checked against the argument's type (element type, rank, static dimensions); an error names the
// argument (`--input #2 (argument #2 of @f)`) and what it expected. --backend=interpret (the default) runs the
// reference interpreter (dsa/Interpreter/Interpreter.h); --backend=cpu compiles the function and what it calls with
// --dsa-cpu-pipeline and runs it through the JIT (dsa/Backend/CPU/CPUModule.h; --cpu=NAME or $DSA_CPU selects the
// CPU, default the host; probes are stripped).
// Without --output the values go to stdout:
//   probe NAME: TYPE = [v0, v1, ...]     for every dsa.probe executed (interpreter only), in execution order, then
//   result I: TYPE = [v0, v1, ...]       for every returned value,
// where TYPE is the runtime type (`tensor<2x3xbf16>`, or the element type alone for a scalar) and the values are
// the flat row-major elements: floats with %.9g, integers as integers. With --output=DIR (created if missing) result
// I is written to DIR/<NAME>.<I>.npy instead (an index result as '<i8', a scalar as a shape-() array), probe K (in
// execution order, interpreter only) to DIR/<NAME>.probe<K>.npy, and one line per file goes to stderr, naming the
// probe. Result files from the two backends are byte-identical when their results are (test/Tools). Diagnostics and
// progress go to stderr (unbuffered); the exit status is 1 on any error (probes executed before the error are still
// printed), 2 on a bad command line.
//
// Golden mode: dsa-run --golden FILE [--layers ...] [--backend=cpu] ... (GoldenReplay.h); with
// --emit-libraries=DIR it writes the layers' AOT CPU step libraries for tools/dsa-golden instead (EmitLibraries.h).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Backend/CPU/CPUModule.h"
#include "dsa/Core/Npy.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"
#include "dsa/Numerics/BF16.h"
#include "dsa/Interpreter/Interpreter.h"
#include "GoldenReplay.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>

using namespace mlir;
namespace cl = llvm::cl;
namespace interp = ::dsa::interp;
using ::dsa::makeError;
using ::dsa::Result;
using ::dsa::Status;

namespace {

cl::OptionCategory runCategory("dsa-run options");

cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input .mlir file, '-' for stdin>"), cl::init("-"),
                                   cl::cat(runCategory));
cl::opt<std::string> entryName("entry", cl::desc("The func.func to run"),
                               cl::value_desc("name"), cl::cat(runCategory));
cl::list<std::string> inputs("input",
                            cl::desc("An argument of --entry, one per argument in order: @PATH (a NumPy .npy file) "
                                     "or a number (a scalar argument)"),
                            cl::value_desc("@file.npy|number"), cl::cat(runCategory));
cl::opt<std::string> outputDir("output",
                               cl::desc("Write result I of --entry to DIR/<entry>.<I>.npy instead of printing it"),
                               cl::value_desc("dir"), cl::cat(runCategory));
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

//===- Function mode ----------------------------------------------------------------------------------------===//

struct FunctionRun {
  std::string entry;
  std::vector<std::string> inputs;
  std::string backend; // "interpret" or "cpu"
  std::string cpu;
  std::string outputDir;
};

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// A scalar argument's value from its text (--input=NUMBER), as a rank-0 Tensor of the type's element type.
Result<::dsa::Tensor> scalarFromText(const std::string &text, Type type) {
  Type element = type;
  if (auto ranked = dyn_cast<RankedTensorType>(type)) {
    if (ranked.getRank() != 0)
      return makeError("a number is a scalar, the argument is " + typeText(type) + ": give a .npy file, --input=@PATH");
    element = ranked.getElementType();
  }
  Result<::dsa::ElementType> et = interp::elementTypeFromMlir(element);
  if (!et)
    return makeError(et.error());
  const char *begin = text.c_str();
  char *end = nullptr;
  errno = 0;
  if (::dsa::isFloatType(*et)) {
    const float v = std::strtof(begin, &end);
    if (text.empty() || *end != '\0' || errno == ERANGE)
      return makeError("'" + text + "' is not a " + typeText(element) + " number");
    if (*et == ::dsa::ElementType::BF16 && !(std::isnan(v) || ::dsa::numerics::roundBf16(v) == v))
      return makeError("'" + text + "' is not a bf16 value (the nearest is " +
                       std::to_string(::dsa::numerics::roundBf16(v)) + ")");
    return ::dsa::Tensor::fromFloats(*et, {}, {v});
  }
  int64_t v = 0;
  if (*et == ::dsa::ElementType::I1 && (text == "true" || text == "false")) {
    v = text == "true";
  } else {
    v = std::strtoll(begin, &end, 10);
    if (text.empty() || *end != '\0')
      return makeError("'" + text + "' is not an integer (the argument is " + typeText(type) + ")");
    if (errno == ERANGE)
      return makeError("'" + text + "' does not fit in 64 bits");
  }
  if (*et == ::dsa::ElementType::I1 && v != 0 && v != 1)
    return makeError("an i1 argument takes 0, 1, true or false, got '" + text + "'");
  if (*et == ::dsa::ElementType::I32 && (v < INT32_MIN || v > INT32_MAX))
    return makeError("'" + text + "' does not fit in i32");
  return ::dsa::Tensor::fromInts(*et, {}, {v});
}

/// The Tensor of --input #i for an argument of type `type`: a .npy file (an i64 file for an index argument becomes an
/// index tensor) or a number; checked against the type.
Result<::dsa::Tensor> inputValue(const std::string &input, Type type, size_t i, StringRef entry) {
  const std::string what = "--input #" + std::to_string(i) + " (argument #" + std::to_string(i) + " of @" +
                           entry.str() + ", " + typeText(type) + ")";
  Result<::dsa::Tensor> value = makeError("");
  if (!input.empty() && input[0] == '@') {
    value = ::dsa::readNpyFile(input.substr(1));
    if (!value)
      return makeError(what + ": " + value.error());
    Type element = type;
    if (auto shaped = dyn_cast<ShapedType>(type))
      element = shaped.getElementType();
    if (element.isIndex() && value->elementType() == ::dsa::ElementType::I64)
      value = ::dsa::Tensor::fromInts(::dsa::ElementType::Index, value->shape(), value->intVector());
  } else {
    value = scalarFromText(input, type);
    if (!value)
      return makeError(what + ": " + value.error());
  }
  const std::string source = input[0] == '@' ? input.substr(1) : "'" + input + "'";
  if (Status ok = interp::checkTensorMatchesType(*value, type, source); !ok)
    return makeError(what + ": " + ok.error());
  return value;
}

/// A copy of `module` holding only `entry` and the functions it calls (directly or not): the CPU backend compiles
/// every public function of its module, and the others in the file need not have a lowering.
OwningOpRef<ModuleOp> moduleOfEntry(ModuleOp module, StringRef entry) {
  OwningOpRef<ModuleOp> copy(module.clone());
  std::set<std::string> keep;
  std::vector<func::FuncOp> work;
  if (auto fn = copy->lookupSymbol<func::FuncOp>(entry)) {
    keep.insert(entry.str());
    work.push_back(fn);
  }
  while (!work.empty()) {
    func::FuncOp fn = work.back();
    work.pop_back();
    fn.walk([&](func::CallOp call) {
      if (keep.insert(call.getCallee().str()).second)
        if (auto callee = copy->lookupSymbol<func::FuncOp>(call.getCallee()))
          work.push_back(callee);
    });
  }
  for (func::FuncOp f : llvm::make_early_inc_range(copy->getOps<func::FuncOp>()))
    if (!keep.count(f.getName().str()))
      f.erase();
  return copy;
}

LogicalResult runFunctionMode(ModuleOp module, const FunctionRun &run) {
  if (run.entry.empty()) {
    llvm::errs() << "dsa-run: --entry=NAME is required (the function to run)\n";
    return failure();
  }
  auto fn = module.lookupSymbol<func::FuncOp>(run.entry);
  if (!fn) {
    llvm::errs() << "dsa-run: no func.func named '" << run.entry << "' in the module\n";
    return failure();
  }
  if (fn.getNumArguments() != run.inputs.size()) {
    std::string types;
    for (Type t : fn.getArgumentTypes())
      types += (types.empty() ? "" : ", ") + typeText(t);
    return emitError(fn.getLoc()) << "dsa-run: --entry function '" << run.entry << "' takes " << fn.getNumArguments()
                          << " argument" << (fn.getNumArguments() == 1 ? "" : "s")
                          << (types.empty() ? "" : " (" + types + ")") << ", got " << run.inputs.size()
                          << " --input (one per argument, in order: --input=@FILE.npy or --input=NUMBER)";
  }
  std::vector<::dsa::Tensor> args;
  for (size_t i = 0; i < run.inputs.size(); ++i) {
    Result<::dsa::Tensor> value = inputValue(run.inputs[i], fn.getArgumentTypes()[i], i, run.entry);
    if (!value) {
      llvm::errs() << "dsa-run: error: " << value.error() << "\n";
      return failure();
    }
    args.push_back(value.take());
  }

  std::vector<::dsa::Tensor> results;
  interp::ProbeLog probes;
  llvm::raw_ostream &os = llvm::outs();
  if (run.backend == "cpu") {
    OwningOpRef<ModuleOp> single = moduleOfEntry(module, run.entry);
    ::dsa::cpu::CPUCompileOptions options;
    options.targetCpu = run.cpu;
    llvm::errs() << "dsa-run: compiling @" << run.entry << " for the CPU ("
                 << (run.cpu.empty() ? "$DSA_CPU or the host" : run.cpu) << ")\n";
    Result<std::unique_ptr<::dsa::cpu::CPUModule>> compiled = ::dsa::cpu::compileForCPU(*single, options);
    if (!compiled) {
      llvm::errs() << "dsa-run: error: --backend=cpu: cannot compile @" << run.entry << " for the CPU: "
                   << compiled.error() << "\n";
      return failure();
    }
    Result<std::vector<::dsa::Tensor>> called = (*compiled)->call(run.entry, args);
    if (!called) {
      llvm::errs() << "dsa-run: error: --backend=cpu: @" << run.entry << " failed on the CPU: " << called.error()
                   << "\n";
      return failure();
    }
    results = called.take();
  } else {
    FailureOr<std::vector<::dsa::Tensor>> interpreted = interp::interpretFunction(fn, args, &probes);
    if (run.outputDir.empty()) {
      for (const interp::ProbeRecord &probe : probes)
        printTensor(os, "probe " + probe.name, probe.value);
      os.flush();
    }
    if (failed(interpreted))
      return failure();
    results = std::move(*interpreted);
  }

  if (run.outputDir.empty()) {
    for (size_t i = 0; i < results.size(); ++i)
      printTensor(os, "result " + std::to_string(i), results[i]);
    os.flush();
    return success();
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(run.outputDir)) {
    llvm::errs() << "dsa-run: error: --output: cannot create directory '" << run.outputDir << "': " << ec.message()
                 << "\n";
    return failure();
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string path = run.outputDir + "/" + run.entry + "." + std::to_string(i) + ".npy";
    if (Status written = ::dsa::writeNpyFile(results[i], path); !written) {
      llvm::errs() << "dsa-run: error: --output: " << written.error() << "\n";
      return failure();
    }
    llvm::errs() << "dsa-run: wrote " << path << " (result " << i << ": " << runtimeType(results[i]) << ")\n";
  }
  for (size_t k = 0; k < probes.size(); ++k) {
    const std::string path = run.outputDir + "/" + run.entry + ".probe" + std::to_string(k) + ".npy";
    if (Status written = ::dsa::writeNpyFile(probes[k].value, path); !written) {
      llvm::errs() << "dsa-run: error: --output: " << written.error() << "\n";
      return failure();
    }
    llvm::errs() << "dsa-run: wrote " << path << " (probe " << probes[k].name << ": "
                 << runtimeType(probes[k].value) << ")\n";
  }
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
                                 cl::desc("'interpret' (the reference interpreter, default) or 'cpu' (compiled by "
                                          "--dsa-cpu-pipeline, JIT-run); with --golden --emit-libraries also 'gpu' "
                                          "(GPU step libraries, --dsa-gpu-pipeline, for dsa-golden on a GPU)"),
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
  cl::ParseCommandLineOptions(argc, argv,
                              "dsa-run: run a dsa function on the reference interpreter or the CPU backend\n");

  if (!goldenPath.empty() && inputFilename.getNumOccurrences() > 0) {
    llvm::errs() << "dsa-run: error: --golden builds its own module and takes no input file (got '" << inputFilename
                 << "')\n";
    return 2;
  }
  if (goldenPath.empty()) {
    const cl::Option *goldenOnly[] = {std::addressof(goldenLayers), &emitStage, &goldenVerbose, &goldenResync,
                                      &goldenForce, &indexKSource, &emitLibraries, &residentWeightsMb};
    for (const cl::Option *option : goldenOnly)
      if (option->getNumOccurrences() > 0) {
        llvm::errs() << "dsa-run: error: --" << option->ArgStr << " only applies with --golden\n";
        return 2;
      }
    if (backendName != "interpret" && backendName != "cpu") {
      llvm::errs() << "dsa-run: error: --backend must be 'interpret' or 'cpu' for a function, got '" << backendName
                   << "'" << (backendName == "gpu" ? " (GPU code runs on a GPU machine: compile it with "
                                                     "dsa-compile FILE --target=gpu -o DIR)"
                                                   : "")
                   << "\n";
      return 2;
    }
    if (cpuName.getNumOccurrences() > 0 && backendName != "cpu") {
      llvm::errs() << "dsa-run: error: --cpu only applies with --backend=cpu (or --golden)\n";
      return 2;
    }
  } else {
    const cl::Option *functionOnly[] = {&entryName, std::addressof(inputs), &outputDir, &passPipeline};
    for (const cl::Option *option : functionOnly)
      if (option->getNumOccurrences() > 0) {
        llvm::errs() << "dsa-run: error: --" << option->ArgStr << " does not apply with --golden (it runs a "
                     << "function of FILE: dsa-run FILE --entry=NAME ...)\n";
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
  registry.insert<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, scf::SCFDialect,
                  tensor::TensorDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = loadModule(context, sourceMgr, inputFilename);
  if (!module)
    return 1;
  if (failed(runPipeline(*module, passPipeline)))
    return 1;
  FunctionRun run;
  run.entry = entryName;
  run.inputs.assign(inputs.begin(), inputs.end());
  run.backend = backendName;
  run.cpu = cpuName;
  run.outputDir = outputDir;
  return failed(runFunctionMode(*module, run)) ? 1 : 0;
}
