//===- CPUTestSupport.h - shared pieces of the CPU backend tests (MLIR side) -------===//
//
// haveOpenMP(): whether compileForCPU can find an OpenMP runtime (CPUCompileOptions::parallel), by the same search
// as the backend ($DSA_OPENMP_LIB, then LLVM 22's libomp.so, libomp.so.5, libiomp5.so).
// MlirTestContext: a test fixture base with every upstream dialect and dsa loaded, diagnostics collected into
// `diagnostics` (not printed), and parse() of module text.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_TEST_BACKEND_CPU_CPUTESTSUPPORT_H
#define DSA_TEST_BACKEND_CPU_CPUTESTSUPPORT_H

#include "dsa/Dialect/DSA/IR/DSADialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

namespace dsa::test {

inline bool haveOpenMP() {
  if (const char *env = std::getenv("DSA_OPENMP_LIB"))
    return std::ifstream(env).good();
  for (const char *p : {"/usr/lib/llvm-22/lib/libomp.so", "/usr/lib/x86_64-linux-gnu/libomp.so.5",
                        "/usr/lib/x86_64-linux-gnu/libiomp5.so"})
    if (std::ifstream(p).good())
      return true;
  return false;
}

class MlirTestContext : public ::testing::Test {
protected:
  MlirTestContext() {
    mlir::DialectRegistry registry;
    mlir::registerAllDialects(registry);
    registry.insert<mlir::dsa::DSADialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    context.printOpOnDiagnostic(false);
    handler = std::make_unique<mlir::ScopedDiagnosticHandler>(&context, [this](mlir::Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return mlir::success();
    });
  }

  mlir::OwningOpRef<mlir::ModuleOp> parse(const std::string &text) {
    mlir::OwningOpRef<mlir::ModuleOp> m = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
    EXPECT_TRUE(m) << diagnostics;
    return m;
  }

  mlir::MLIRContext context;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
  std::string diagnostics;
};

} // namespace dsa::test

#endif // DSA_TEST_BACKEND_CPU_CPUTESTSUPPORT_H
