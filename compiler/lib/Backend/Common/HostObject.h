//===- HostObject.h - shared AOT steps of the CPU and GPU step libraries (private to compiler/lib/Backend) ----------===//
//
// What emitCPUStepLibrary (compiler/lib/Backend/CPU/AOT.cpp) and emitGPUStepLibrary (compiler/lib/Backend/GPU) both do with an LLVM
// module translated from the lowered MLIR: add the packed entries of the calling convention
// (runtime/cpu/include/dsa/Runtime/CPU/PackedCall.h), optimise it like MLIR's ExecutionEngine (no fast-math: the f32
// order is kept), write an x86-64 object file and link it into a shared object with the system C compiler.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_LIB_BACKEND_COMMON_HOSTOBJECT_H
#define DSA_LIB_BACKEND_COMMON_HOSTOBJECT_H

#include "dsa/Runtime/CPU/PackedCall.h"
#include "dsa/Support/Result.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace dsa::backend {

/// The CPU an object is compiled for.
struct HostTarget {
  /// LLVM's CPU name; empty: the host CPU (llvm::sys::getHostCPUName) with the host's features.
  std::string cpu;
  /// Target features ("+avx2,-avx512f,..."); used only with an explicit `cpu`.
  std::string features;
};

/// A target machine for the process triple (PIC), `target` and optimisation level `optLevel` (0..3, clamped).
/// `resolvedCpu` receives the CPU name used. Errors name the triple/CPU. `what` prefixes messages.
Result<std::unique_ptr<llvm::TargetMachine>> createHostTargetMachine(const HostTarget &target, unsigned optLevel,
                                                                     std::string &resolvedCpu, const std::string &what);

/// Adds `void _mlir_<name>(void **args)` for every function of `functions` defined in `m` (args[i] points to the
/// i-th LLVM argument; the last pointer receives the result, when there is one): the packed convention of Values.h.
void addPackedEntries(llvm::Module &m, const std::vector<runtime::FunctionSignature> &functions);

/// Sets `m`'s triple and data layout from `tm` (call before adding code that depends on it).
void configureModule(llvm::Module &m, llvm::TargetMachine &tm);

/// Optimises `m` (mlir::makeOptimizingTransformer at `optLevel`) and writes it as an object file to `objPath`.
/// `beforeCodegen` (optional) sees the optimised module before code generation; its error stops the emission.
Status optimizeAndEmitObject(llvm::Module &m, llvm::TargetMachine &tm, unsigned optLevel, const std::string &objPath,
                             const std::string &what,
                             const std::function<Status(llvm::Module &)> &beforeCodegen = nullptr);

/// That `m`, as code generation gets it (after LLVM's optimisations), holds no bfloat at all (what --dsa-cpu-pipeline
/// guarantees: conversions expanded, bf16 data carried as i16): an error naming the first global, function
/// signature or instruction with a bfloat type, or a reference to __truncsfbf2 / __truncdfbf2 / __extendbfsf2. x86
/// code generation converts bfloat values, even a phi of two loads: a call of __truncsfbf2 (absent from the JIT's
/// process) or, with AVX512_BF16, vcvtneps2bf16 (denormals flushed to zero).
Status checkNoBf16Conversions(const llvm::Module &m, const std::string &what);

/// Renames the declarations `malloc` and `free` of `m` (what finalize-memref-to-llvm lowers memref.alloc and
/// memref.dealloc to) to `dsa_cpu_alloc` and `dsa_cpu_free`, core's dsa/ABI/BufferCache.h (malloc with a bounded
/// cache of large blocks). Call it on the OPTIMISED module, so that LLVM's knowledge of malloc (a result that
/// aliases nothing) has shaped the code. An error when `m` defines either name, or already has the new ones.
Status routeAllocationsToBufferCache(llvm::Module &m, const std::string &what);

/// Links `objPath` into the shared object `soPath` with `cc -shared`, then `extraArgs` (archives, -l options).
/// What the run-time check hook dsa_cpu_fail does after calling through `dsa_cpu_fail_hook`.
enum class FailHookEnd {
  Return, ///< CPU code: the compiled function carries on (clamped indices, zeros) and the caller reports the code
  Abort,  ///< GPU host code: must not go on launching kernels on sizes a check rejected, so it ends in abort()
};
/// Defines the run-time check hook `dsa_cpu_fail(i32)` (core's dsa/ABI/RuntimeErrors.h) of a step library as a call
/// through the global function pointer `dsa_cpu_fail_hook` (defined, null, in every library: the loader sets it),
/// then `end`. `always`: define the function even where the code declares no call of it.
void defineFailHook(llvm::Module &m, FailHookEnd end, bool always);

/// Adds the library's own signature (dsa/ABI/StepLibrary.h): the constant NUL-terminated `text`
/// (runtime::compiledSignatureText) as the exported global `dsa_step_library_signature`.
void embedSignature(llvm::Module &m, const std::string &text);

/// Gives every definition of `m` internal linkage except the library's entry points: `_mlir_<name>` of each of
/// `functions`, `dsa_cpu_fail_hook` and `dsa_step_library_signature` (LLVM's internalizeModule, before optimisation:
/// the function bodies, upstream's `dealloc_helper`, the GPU module globals and constructors become private to the
/// object, so the optimiser may inline and drop them and no two libraries in one process, nor a library and the
/// executable, can interpose each other's symbols; the dynamic symbol table lists only the entry points).
void keepOnlyEntryPoints(llvm::Module &m, const std::vector<runtime::FunctionSignature> &functions);

/// The linker arguments that give a step library the runtime functions compiled code may call (core's
/// dsa/ABI/RuntimeFunctions.h: the top-k set): the static archives libDSACPURuntime.a and libDSANumerics.a, kept out
/// of the .so's dynamic symbol table (--exclude-libs: only members the object needs are pulled), and libstdc++/libm.
/// The archives: $DSA_RUNTIME_ARCHIVE_DIR if set, else the build tree's (a build in place), else the installed ones
/// (<prefix>/lib of `cmake --install`). Error: none of them exists, naming where it looked.
Result<std::vector<std::string>> runtimeLinkArguments();

/// Errors: no `cc` on PATH; a failed link, with its exit status and the command line.
Status linkSharedObject(const std::string &objPath, const std::string &soPath, const std::vector<std::string> &extraArgs,
                        const std::string &what);

} // namespace dsa::backend

#endif
