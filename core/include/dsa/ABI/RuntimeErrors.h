//===- RuntimeErrors.h - run-time checks of code compiled by dsa-to-cpu (MLIR-free) ---===//
//
// Code produced by `dsa-to-cpu` and the GPU host code of `dsa-to-gpu` checks what only the run-time values can tell
// (start_pos, the dynamic token count, index ranges; the checks of the interpreter's kernels,
// kernels/include/dsa/Kernels/Kernels.h). A failed check calls the external C function
//
//     void dsa_cpu_fail(int32_t code);   // kFailSymbol
//
// with one of the codes below. CPU code then carries on without ever reading or writing out of bounds (an index is
// clamped, a step that cannot be computed yields zeros); its results are meaningless. The host that runs the code
// (compiler/lib/Backend/CPU's JIT, or the MLIR-free runtime for an AOT object) defines `dsa_cpu_fail`, records the first code
// of a call and turns it into an error naming the op and the check (runtimeErrorMessage). GPU host code does not go
// on (its kernels index by the checked sizes): a GPU step library's dsa_cpu_fail ends the call through the CUDA
// runtime's hook (runtime/cuda MgpuRuntime: the same message, the call's device memory freed), or aborts when no
// hook is set. Codes are stable: the compiled code and the host must agree on them.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_ABI_RUNTIMEERRORS_H
#define DSA_ABI_RUNTIMEERRORS_H

#include <cstdint>

namespace dsa::abi {

/// The symbol the compiled code calls on a failed run-time check: `extern "C" void dsa_cpu_fail(int32_t code)`.
inline constexpr const char *kFailSymbol = "dsa_cpu_fail";

/// The run-time checks, one code each (0 = no error): RuntimeErrors.def.
enum class RuntimeError : int32_t {
#define DSA_RUNTIME_ERROR(Name, Code, Message) Name = Code,
#include "dsa/ABI/RuntimeErrors.def"
};

/// The message of a code, naming the op and the violated condition (the interpreter's wording where it has one);
/// "unknown run-time error code" for a code not in RuntimeErrors.def.
inline const char *runtimeErrorMessage(int32_t code) {
  switch (static_cast<RuntimeError>(code)) {
#define DSA_RUNTIME_ERROR(Name, Code, Message)                                                                     \
  case RuntimeError::Name:                                                                                         \
    return Message;
#include "dsa/ABI/RuntimeErrors.def"
  }
  return "unknown run-time error code";
}

} // namespace dsa::abi

#endif
