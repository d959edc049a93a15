//===- dsa-compile.cpp - the compiler driver: a dsa module to a CPU or GPU step library ----------------------===//
//
//   dsa-compile FILE.mlir --target=cpu|gpu -o DIR [--name=BASE] [--functions=f,g] [--probes]
//               cpu: [--cpu=NAME] [--opt-level=0..3] [--parallel]
//               gpu: [--chip=sm_90] [--format=bin|isa|fatbin]
//
// Compiles the public functions of FILE ('-': stdin; --functions: only those, and what they call) into ONE step
// library for the MLIR-free runtime: DIR/BASE.o, DIR/BASE.so and the step description DIR/BASE.json (BASE defaults
// to FILE's stem; DIR is created). --target=cpu: dsa::cpu::emitCPUStepLibrary (--dsa-cpu-pipeline; --cpu=NAME or
// $DSA_CPU selects the CPU, default the host; runtime/cpu StepLibrary.h loads it). --target=gpu:
// dsa::gpu::emitGPUStepLibrary (--dsa-gpu-pipeline; kernels for --chip as a cubin (bin, needs the CUDA toolkit's
// ptxas), PTX (isa) or fatbin, host code for x86-64; runtime/cuda GpuStepLibrary.h loads it on a GPU machine).
//
// Every public function with a body is compiled, layer step or not. A function holding one dsa.attention whose x
// and start_pos are arguments and whose out is returned gets step roles in the description (x, start_pos, output,
// state, shared slots): a runtime Sequence can step it. Any other function (a primitive, a helper) is described
// by its signature only and runs through StepLibrary::run on explicit arguments. The summary line on stderr says
// which is which.
//
// Output: the description's path on stdout; progress on stderr, unbuffered, as each step starts and ends. Errors go
// to stderr, exit status 1 (the compiler's diagnostics: an op without a lowering, a dynamic feature dimension, a
// missing ptxas), 2 for a bad command line (an option of the other target, an unknown target or function).
// Replaces tools/dsa-gpu-aot (same options for --target=gpu).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Backend/CPU/CPUModule.h"
#include "dsa/Backend/GPU/GPUStepLibrary.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Runtime/Cuda/GpuStepLibrary.h"
#include "dsa/Runtime/Host/StepDescription.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("dsa-compile options");
cl::opt<std::string> input(cl::Positional, cl::desc("<input .mlir file, '-' for stdin>"), cl::Required,
                           cl::cat(category));
cl::opt<std::string> target("target", cl::desc("What to compile for: 'cpu' or 'gpu'"), cl::value_desc("cpu|gpu"),
                            cl::cat(category));
cl::opt<std::string> outputDir("o", cl::desc("Output directory (created if missing)"), cl::value_desc("dir"),
                               cl::cat(category));
cl::opt<std::string> baseName("name", cl::desc("Base name of the files (default: the input's stem)"),
                              cl::value_desc("base"), cl::cat(category));
cl::list<std::string> functions("functions",
                                cl::desc("Compile only these public functions (comma separated) and what they call"),
                                cl::CommaSeparated, cl::value_desc("f,g"), cl::cat(category));
cl::opt<bool> probes("probes", cl::desc("Keep dsa.probe values as extra results (default: stripped)"),
                     cl::cat(category));
// --target=cpu
cl::opt<std::string> cpuName("cpu",
                             cl::desc("--target=cpu: 'host' or an LLVM CPU name (x86-64-v3, x86-64-v4, "
                                      "sapphirerapids, ...; default $DSA_CPU, else the host)"),
                             cl::value_desc("name"), cl::cat(category));
cl::opt<unsigned> optLevel("opt-level", cl::desc("--target=cpu: LLVM optimisation level 0..3 (default 2)"),
                           cl::init(2), cl::cat(category));
cl::opt<bool> parallel("parallel", cl::desc("--target=cpu: run each op's outputs on OpenMP threads (links libomp)"),
                       cl::cat(category));
// --target=gpu
cl::opt<std::string> chip("chip", cl::desc("--target=gpu: the SM (sm_80, sm_90, sm_100, ...; default sm_90)"),
                          cl::init("sm_90"), cl::value_desc("sm_XX"), cl::cat(category));
cl::opt<std::string> format("format",
                            cl::desc("--target=gpu: the kernels' form: bin (cubin, default), isa (PTX), fatbin"),
                            cl::init("bin"), cl::cat(category));

int usage(const std::string &message) {
  llvm::errs() << "dsa-compile: error: " << message << "\n";
  return 2;
}

/// One line per function of the description: its name, and its step roles or why it has none.
std::string describeFunctions(const dsa::runtime::StepLibraryDescription &description) {
  std::string text;
  for (const dsa::runtime::FunctionSignature &f : description.functions) {
    auto count = [](size_t n, const char *what) {
      return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
    };
    text += "  @" + f.name + ": " + count(f.args.size(), "argument") + ", " + count(f.numResults, "result");
    if (!f.probeNames.empty())
      text += " + " + count(f.probeNames.size(), "probe");
    if (f.step.present() && f.args[static_cast<size_t>(f.step.startPos)].isTensor)
      text += "; batched decode step (runtime::Batch): x #" + std::to_string(f.step.x) + ", start_pos #" +
              std::to_string(f.step.startPos) + " (one per sequence), output result #" +
              std::to_string(f.step.output) + ", " + std::to_string(f.state.size()) + " state";
    else if (f.step.present())
      text += "; layer step: x #" + std::to_string(f.step.x) + ", start_pos #" + std::to_string(f.step.startPos) +
              ", output result #" + std::to_string(f.step.output) + ", " + std::to_string(f.state.size()) +
              " state, " + std::to_string(f.step.shared.size()) + " shared slots";
    else
      text += "; not a layer step (no single dsa.attention with x and start_pos arguments): called with explicit "
              "arguments (StepLibrary::run), not stepped by a Sequence";
    text += "\n";
  }
  return text;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "dsa-compile: compile a dsa module into a CPU or GPU step library for the runtime\n");

  if (target != "cpu" && target != "gpu")
    return usage(target.empty() ? "--target=cpu or --target=gpu is required"
                                : "--target must be 'cpu' or 'gpu', got '" + target + "'");
  if (outputDir.empty())
    return usage("-o DIR is required (the directory the step library is written to)");
  const bool gpu = target == "gpu";
  const cl::Option *cpuOnly[] = {&cpuName, &optLevel, &parallel};
  const cl::Option *gpuOnly[] = {&chip, &format};
  for (const cl::Option *option : gpu ? llvm::ArrayRef<const cl::Option *>(cpuOnly)
                                      : llvm::ArrayRef<const cl::Option *>(gpuOnly))
    if (option->getNumOccurrences() > 0)
      return usage("--" + option->ArgStr.str() + " only applies with --target=" + (gpu ? "cpu" : "gpu"));
  if (optLevel > 3)
    return usage("--opt-level must be 0..3, got " + std::to_string(optLevel));
  std::string base = baseName;
  if (base.empty())
    base = input == "-" ? "stdin" : llvm::sys::path::stem(input).str();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  registry.insert<mlir::dsa::DSADialect>();
  mlir::MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  std::string error;
  auto file = mlir::openInputFile(input, &error);
  if (!file) {
    llvm::errs() << "dsa-compile: error: " << error << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module) {
    llvm::errs() << "dsa-compile: error: cannot parse " << input << "\n";
    return 1;
  }

  // --functions: keep those and what they call (directly or not).
  if (!functions.empty()) {
    std::set<std::string> keep;
    std::vector<mlir::func::FuncOp> work;
    for (const std::string &name : functions) {
      auto fn = module->lookupSymbol<mlir::func::FuncOp>(name);
      if (!fn || fn.isPrivate() || fn.isExternal())
        return usage("--functions: no public func.func with a body named '" + name + "' in " + input);
      if (keep.insert(name).second)
        work.push_back(fn);
    }
    while (!work.empty()) {
      mlir::func::FuncOp fn = work.back();
      work.pop_back();
      fn.walk([&](mlir::func::CallOp call) {
        if (keep.insert(call.getCallee().str()).second)
          if (auto callee = module->lookupSymbol<mlir::func::FuncOp>(call.getCallee()))
            work.push_back(callee);
      });
    }
    for (mlir::func::FuncOp f : llvm::make_early_inc_range(module->getOps<mlir::func::FuncOp>()))
      if (!keep.count(f.getName().str()))
        f.erase();
  }
  size_t publicFunctions = 0;
  for (mlir::func::FuncOp f : module->getOps<mlir::func::FuncOp>())
    publicFunctions += f.isPublic() && !f.isExternal();
  if (publicFunctions == 0) {
    llvm::errs() << "dsa-compile: error: " << input << " has no public func.func with a body: nothing to compile\n";
    return 1;
  }

  const auto started = std::chrono::steady_clock::now();
  llvm::errs() << "dsa-compile: compiling " << publicFunctions << " function" << (publicFunctions == 1 ? "" : "s")
               << " of " << input << " for "
               << (gpu ? "the GPU (" + chip + ", " + format + ")"
                       : "the CPU (" + (cpuName.empty() ? std::string("$DSA_CPU or the host") : cpuName) + ")")
               << " into " << outputDir << "/" << base << ".{o,so,json}\n";
  dsa::Result<std::string> json = dsa::makeError("");
  if (gpu) {
    dsa::gpu::GPUCompileOptions options;
    options.chip = chip;
    options.format = format;
    options.probesAsResults = probes;
    json = dsa::gpu::emitGPUStepLibrary(*module, outputDir, base, options);
  } else {
    dsa::cpu::CPUCompileOptions options;
    options.targetCpu = cpuName;
    options.optLevel = optLevel;
    options.parallel = parallel;
    options.probesAsResults = probes;
    json = dsa::cpu::emitCPUStepLibrary(*module, outputDir, base, options);
  }
  if (!json) {
    llvm::errs() << "dsa-compile: error: " << json.error() << "\n";
    if (publicFunctions > 1 && functions.empty())
      llvm::errs() << "dsa-compile: note: every public function of the module goes into the library; "
                      "--functions=f,g compiles only those (and what they call)\n";
    return 1;
  }

  // The summary, from the description as the runtime will read it.
  std::ifstream in(*json);
  std::stringstream text;
  text << in.rdbuf();
  dsa::Result<dsa::runtime::StepLibraryDescription> description = dsa::makeError("");
  if (gpu) {
    dsa::Result<dsa::cuda::GpuStepLibraryDescription> d = dsa::cuda::parseGpuStepLibrary(text.str());
    description = d ? dsa::Result<dsa::runtime::StepLibraryDescription>(d->base) : dsa::makeError(d.error());
  } else {
    description = dsa::runtime::parseStepLibrary(text.str());
  }
  if (!description) {
    llvm::errs() << "dsa-compile: error: " << *json << ": " << description.error() << "\n";
    return 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  llvm::errs() << "dsa-compile: wrote " << outputDir << "/" << description->library << " and " << *json << " in "
               << llvm::format("%.1f", seconds) << " s:\n"
               << describeFunctions(*description);
  llvm::outs() << *json << "\n";
  return 0;
}
