//===- DSAPlugin.cpp - the dsa dialect and passes as a plugin of upstream mlir-opt -------------------------===//
//
// One shared object, both kinds of MLIR plugin:
//   mlir-opt --load-dialect-plugin=libDSAPlugin.so --load-pass-plugin=libDSAPlugin.so FILE \
//            --pass-pipeline='builtin.module(dsa-decompose-attention, dsa-cpu-pipeline)'
// The dialect plugin registers the dsa dialect; the pass plugin registers every dsa pass (dsa-decompose-attention,
// dsa-strip-probes, the conversions' passes) and the dsa-cpu-pipeline / dsa-gpu-pipeline pipelines, exactly what
// dsa-opt adds to upstream mlir-opt. It links the dsa libraries statically and MLIR through libMLIR.so, the same
// shared library as the mlir-opt that loads it (Debian's llvm-22 packages), so there is one MLIR in the process.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Conversion/Passes.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "DSA", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) { registry->insert<mlir::dsa::DSADialect>(); }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "DSAPasses", LLVM_VERSION_STRING, [] {
            mlir::dsa::registerDSAPasses();
            mlir::dsa::registerDSAConversionPasses();
            mlir::dsa::registerDSACPUPipeline();
            mlir::dsa::registerDSAGPUPipeline();
          }};
}
