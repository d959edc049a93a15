//===- StepLibrary.h - what an AOT step library exports, and its ABI version (MLIR-free) -------------------===//
//
// The compiler's step-library emitters (compiler/lib/Backend/CPU/AOT.cpp, compiler/lib/Backend/GPU) and the
// runtimes' loaders (runtime/cpu StepLibrary.h, runtime/cuda GpuStepLibrary.h) agree on these names. A step library
// exports exactly (the rest has internal linkage):
//   _mlir_<name>                 the packed entry of each function (runtime/cpu PackedCall.h's convention);
//   dsa_cpu_fail_hook            a function pointer the loader sets; the code's failed run-time checks call it;
//   dsa_step_library_signature   a NUL-terminated canonical JSON text: the ABI version, the target (CPU name and
//                                features, OpenMP, a GPU library's chip and binary format) and per function the
//                                argument and result element types and shapes, the writable arguments and the
//                                in-place results, and the configuration (#dsa.attn_config) of each dsa.attention
//                                the function was compiled from: its "attention" list, an optional key added
//                                without changing the ABI version (older libraries have none) (runtime/host
//                                StepDescription.h: compiledSignatureText). The loader compares it with the step
//                                description before any call.
// kStepLibraryAbiVersion numbers the calling convention those entries follow (descriptor layout, result struct,
// in-place results not returned, the fail hook); a library of another ABI version is refused.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_ABI_STEPLIBRARY_H
#define DSA_ABI_STEPLIBRARY_H

#include <cstdint>

namespace dsa::abi {

inline constexpr int64_t kStepLibraryAbiVersion = 1;
inline constexpr const char *kStepLibrarySignatureSymbol = "dsa_step_library_signature";
inline constexpr const char *kFailHookSymbol = "dsa_cpu_fail_hook";
inline constexpr const char *kPackedEntryPrefix = "_mlir_";

} // namespace dsa::abi

#endif
