//===- Passes.h - both of dsa's conversions (CPU and GPU) --------------------------------------------------===//
//
// The CPU conversion (dsa/Conversion/DSAToCPU/Passes.h, CMake target DSAToCPU, DSA::ConversionCPU) and the GPU one
// (dsa/Conversion/DSAToGPU/Passes.h, DSAToGPU, DSA::ConversionGPU). A compiler that wants only one includes that
// one's header and links only its library; this header is for tools that register everything (dsa-opt, the plugin):
// calling registerDSAConversionPasses() needs both libraries (DSA::Conversion).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CONVERSION_PASSES_H
#define DSA_CONVERSION_PASSES_H

#include "dsa/Conversion/DSAToCPU/Passes.h"
#include "dsa/Conversion/DSAToGPU/Passes.h"

namespace mlir::dsa {

/// Registers every pass of both conversions (registerDSAToCPUPasses, registerDSAToGPUPasses); the pipelines are
/// registered by registerDSACPUPipeline / registerDSAGPUPipeline. Idempotent.
inline void registerDSAConversionPasses() {
  registerDSAToCPUPasses();
  registerDSAToGPUPasses();
}

} // namespace mlir::dsa

#endif
