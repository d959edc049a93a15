//===- EmitLibraries.cpp - dsa-run --golden --emit-libraries ---------------------===//
#include "EmitLibraries.h"

#include "dsa/Backend/CPU/CPUModule.h"
#include "dsa/Backend/GPU/GPUStepLibrary.h"
#include "dsa/Runtime/Cuda/GpuStepLibrary.h"
#include "dsa/Runtime/CPU/StepLibrary.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

namespace dsa::tools {

Status emitGoldenLayerLibraries(mlir::ModuleOp module, const std::vector<LayerLibrary> &layers, int64_t nLayers,
                                const std::string &directory, bool gpu, const std::string &cpu) {
  nlohmann::json manifest;
  manifest["format"] = "dsa-golden-layers";
  manifest["version"] = 1;
  manifest["n_layers"] = nLayers;
  manifest["layers"] = nlohmann::json::array();
  for (const LayerLibrary &layer : layers) {
    const std::string name = "attention_L" + std::to_string(layer.layer);
    // A module holding only this layer's function: one library per layer.
    mlir::OwningOpRef<mlir::ModuleOp> single(module.clone());
    for (mlir::func::FuncOp f : llvm::make_early_inc_range(single->getOps<mlir::func::FuncOp>()))
      if (f.getName() != name)
        f.erase();
    if (!single->lookupSymbol<mlir::func::FuncOp>(name))
      return makeError("--emit-libraries: the module has no @" + name);
    Result<std::string> json = makeError("");
    if (gpu) {
      gpu::GPUCompileOptions options;
      options.probesAsResults = true;
      json = gpu::emitGPUStepLibrary(*single, directory, name, options);
    } else {
      cpu::CPUCompileOptions options;
      options.probesAsResults = true;
      options.targetCpu = cpu;
      json = cpu::emitCPUStepLibrary(*single, directory, name, options);
    }
    if (!json)
      return makeError("--emit-libraries: layer " + std::to_string(layer.layer) + ": " + json.error());

    // Check the weights against the description's non-role arguments.
    std::ifstream in(*json);
    std::stringstream text;
    text << in.rdbuf();
    Result<runtime::StepLibraryDescription> description = makeError("");
    if (gpu) {
      Result<cuda::GpuStepLibraryDescription> d = cuda::parseGpuStepLibrary(text.str());
      description = d ? Result<runtime::StepLibraryDescription>(d->base) : makeError(d.error());
    } else {
      description = runtime::parseStepLibrary(text.str());
    }
    if (!description)
      return makeError("--emit-libraries: " + *json + ": " + description.error());
    const runtime::FunctionSignature *sig = nullptr;
    for (const runtime::FunctionSignature &f : description->functions)
      if (f.name == name)
        sig = &f;
    if (!sig || !sig->step.present())
      return makeError("--emit-libraries: @" + name + " has no step roles in " + *json);
    std::set<int64_t> roles = {sig->step.x, sig->step.startPos};
    for (const runtime::StateBinding &b : sig->state)
      roles.insert(b.arg);
    for (const runtime::StateBinding &b : sig->step.shared)
      roles.insert(b.arg);
    const size_t weightArgs = sig->args.size() - roles.size();
    if (weightArgs != layer.weights.size())
      return makeError("--emit-libraries: @" + name + " has " + std::to_string(weightArgs) +
                       " weight arguments, the golden layer " + std::to_string(layer.weights.size()));
    manifest["layers"].push_back(
        {{"layer", layer.layer}, {"description", name + ".json"}, {"function", name}, {"weights", layer.weights}});
    // Progress on stderr (unbuffered): each line as its library is written, also through a pipe.
    llvm::errs() << "wrote " << *json << " (" << name << ".so)\n";
  }
  const std::string path = directory + "/" + kGoldenLayersManifest;
  std::ofstream out(path);
  out << manifest.dump(2) << "\n";
  if (!out)
    return makeError("--emit-libraries: cannot write '" + path + "'");
  llvm::errs() << "wrote " << path << "\n";
  return Status::success();
}

} // namespace dsa::tools
