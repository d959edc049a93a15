//===- MlirSupport.cpp - the MLIR fuzz targets' context and parser -------------------------------------------===//
#include "MlirSupport.h"

#include "dsa/Core/Tensor.h"
#include "dsa/Dialect/DSA/IR/DSADialect.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include <string>

// The fuzz build instruments dsa's code but not Debian's libMLIR/libLLVM: LLVM's BumpPtrAllocator, inlined into
// instrumented code, poisons the unused part of its slabs (__asan_poison_memory_region) and the uninstrumented
// copy in libMLIR then allocates from that part without unpoisoning it, a false use-after-poison. Manual poisoning
// off; ASan still checks every heap, stack and global access. ($ASAN_OPTIONS, when set, comes after these.)
extern "C" const char *__asan_default_options() { return "allow_user_poisoning=0"; }

namespace dsa::fuzz {

mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    mlir::DialectRegistry registry;
    mlir::registerAllDialects(registry);
    mlir::registerAllExtensions(registry);
    mlir::registerAllToLLVMIRTranslations(registry); // the GPU pipeline's gpu.binary translates the kernels
    registry.insert<mlir::dsa::DSADialect>();
    auto *c = new mlir::MLIRContext(registry, mlir::MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    // Diagnostics are the expected outcome of most inputs; printing them would only slow the fuzzer down.
    c->getDiagEngine().registerHandler([](mlir::Diagnostic &) { return mlir::success(); });
    dsa::Tensor::setTensorByteLimit(int64_t(64) << 20);
    return c;
  }();
  return *ctx;
}

mlir::OwningOpRef<mlir::ModuleOp> parseAndVerify(const uint8_t *data, size_t size) {
  // A NUL-terminated copy: MLIR's lexer reads the byte after the buffer (files reach it through a MemoryBuffer
  // with a terminator, as dsa-opt's and dsa-run's do); libFuzzer's data has none.
  const std::string text(reinterpret_cast<const char *>(data), size);
  mlir::ParserConfig config(&context(), /*verifyAfterParse=*/true);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(text, config, "<fuzz>");
  if (!module || mlir::failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

} // namespace dsa::fuzz
