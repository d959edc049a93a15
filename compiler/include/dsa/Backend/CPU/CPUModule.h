//===- CPUModule.h - JIT-compile a dsa module for the CPU and call it on Tensors ---===//
//
// compileForCPU() lowers a module holding dsa functions (dsa.attention or the window-only primitives, probes
// allowed: they are stripped) with --dsa-cpu-pipeline (compiler/include/dsa/Conversion/Passes.h) and JIT-compiles it with
// MLIR's ExecutionEngine (LLVM ORC; for the host CPU unless CPUCompileOptions::targetCpu or $DSA_CPU names another).
// CPUModule::call() runs one of its functions on dsa::Tensor values, the interpreter's value type, so a caller
// can swap the interpreter (dsa/Interpreter/Interpreter.h) for the CPU backend without changing its data handling.
// Results are bit-exact to the interpreter (docs/cpu-backend.md).
//
// Calling convention (what call() converts, per argument and result of the func.func, in order):
//   - ranked tensor of bf16 / f32 / i1 / i32 / i64 / index <-> Tensor of ElementType BF16 / F32 / I1 / I32 / I64 /
//     Index with the same rank; static dimensions must match, dynamic ones take the Tensor's size (results:
//     whatever size the function produced, e.g. the [n, hd] rows of dsa.window_kv).
//     bf16 values travel as bf16 bit patterns (a BF16 Tensor's f32 values are bf16-exact; a value that is not is
//     rounded to nearest even); i1 as one byte per element.
//   - scalar i64 / index / i32 / i1 / f32 <-> rank-0 Tensor of that element type (Tensor::scalarI64, ...).
//   Argument buffers are read-only for the compiled code (marked bufferization.writable = false, so a function
//   that updates state, e.g. the ring, writes a new buffer), except the compressed-KV and index-key caches of a
//   compressed dsa.attention (state operands): the code updates them in place and does not return them
//   (FunctionSignature::writableArgs / inPlace, Values.h); call()/run() hand such a result back as the updated
//   argument, and never modify a caller's Tensor or HostBuffer (a writable argument given as one is copied for the
//   call; only a HostValue::inPlace buffer is updated where it is). Result buffers are owned by the caller and
//   freed by call()/run() after the copy into the returned Tensors; runValues() keeps them as buffers.
//   A large argument that does not change between calls (a weight) can be converted once with
//   HostBuffer::fromTensor and passed to run() as a HostValue: no per-call conversion or copy. HostBuffer, HostValue
//   and the marshalling are the MLIR-free runtime's (runtime/cpu/include/dsa/Runtime/CPU/PackedCall.h), shared with
//   AOT step libraries (emitCPUStepLibrary below, StepLibrary.h).
//
// Errors (dsa::Result, never an abort): compileForCPU reports the pipeline's or the JIT's diagnostics (an
// unsupported op, a dynamic dimension a lowering needs static, an argument type call() cannot pass, missing
// symbols). call() reports an unknown function name, a wrong argument count, and an argument of the wrong element
// type, rank or static size (naming it, e.g. "argument #2"), and a failed run-time check of the compiled code
// (core/include/dsa/ABI/RuntimeErrors.h: e.g. a multi-token step at start_pos > 0), with the check's message.
//
// Thread safety: call() may run concurrently from several threads on one CPUModule (the run-time check record is
// per thread).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_BACKEND_CPU_CPUMODULE_H
#define DSA_BACKEND_CPU_CPUMODULE_H

#include "dsa/Interpreter/Interpreter.h"
#include "dsa/Core/Tensor.h"
#include "dsa/Runtime/CPU/PackedCall.h"
#include "dsa/Support/Result.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace dsa::cpu {

struct CPUCompileOptions {
  /// LLVM optimisation level of the generated code, 0..3 (none of them reassociates or contracts f32 arithmetic:
  /// the results do not depend on it).
  unsigned optLevel = 2;
  /// Keep the probes: dsa.attention is decomposed first, and every `dsa.probe` in the body of a public function
  /// becomes an extra result of the compiled function, which call() hands back in its ProbeLog (name and value, in
  /// program order, like interp::interpretFunction's). A probe nested in a region, or in a function with more than
  /// one block, is an error. When false (the default) probes are stripped (dsa-strip-probes).
  bool probesAsResults = false;
  /// Run the outputs of every op on OpenMP threads (--dsa-cpu-pipeline parallel=true; OMP_NUM_THREADS applies). The
  /// JIT loads an OpenMP runtime: $DSA_OPENMP_LIB if set, else the first of libomp.so (LLVM 22), libomp.so.5,
  /// libiomp5.so that exists; compileForCPU fails naming them when none does. Results are the same bits as serial.
  bool parallel = false;
  /// Update the compressed-KV and index-key caches of a compressed dsa.attention in place (their arguments writable,
  /// the results that are them not returned: FunctionSignature::writableArgs / inPlace). false: every argument
  /// read-only and every result returned, each step copying the caches (the behaviour before in-place caches; for
  /// comparisons). Results are the same bits either way.
  bool inPlaceCaches = true;
  /// The CPU the code is compiled for: "host" (the running CPU, exactly its features) or an LLVM x86-64 CPU name
  /// ("x86-64-v3": AVX2 + FMA, no AVX-512; "x86-64-v4", "skylake-avx512", "sapphirerapids", "znver4", ...: `llc
  /// -mcpu=help`). Empty (the default): $DSA_CPU when set, else the host. An unknown name is an error. The JIT runs
  /// the code here, so it also refuses a CPU whose features this host lacks (naming them); a step library
  /// (emitCPUStepLibrary) may target any CPU and records its features, which the runtime checks when it loads it.
  std::string targetCpu;
  /// The linear / grouped_output products use the phase kernel from this many rows of x (the pipeline's
  /// phase-min-rows; 0: never, the blocks of docs/cpu-backend.md "Lowering" only). For comparisons and tuning: the
  /// results are the same bits either way.
  int64_t phaseMinRows = 64;
  /// The register tiles of the products as for a target with this many vector registers (16 or 32; 0, the
  /// default: from the target CPU, 32 with AVX-512). 32 on a host without AVX-512 runs the AVX-512 tiles' code
  /// with each 16-lane vector split in two (tests of those tiles on any host); the results are the same bits.
  int64_t vectorRegisters = 0;
};

class CPUModule {
public:
  struct Impl;
  explicit CPUModule(std::unique_ptr<Impl> impl);
  ~CPUModule();
  CPUModule(const CPUModule &) = delete;
  CPUModule &operator=(const CPUModule &) = delete;

  /// The functions call() accepts: every public func.func with a body in the source module, in module order.
  std::vector<std::string> functionNames() const;
  /// The signature of `name` as compiled (results include the kept probes; state bindings: a dsa.attention's
  /// new_ring/new_state results that are function results, paired with its ring/state operands that are function
  /// arguments), or null.
  const FunctionSignature *signature(const std::string &name) const;

  /// Runs function `name` on `args` (see the calling convention above) and returns its results in order.
  /// With CPUCompileOptions::probesAsResults, `probes` (may be null) receives the function's probes, appended in
  /// program order; without it, `probes` is left as is.
  Result<std::vector<dsa::Tensor>> call(const std::string &name, const std::vector<dsa::Tensor> &args,
                                           interp::ProbeLog *probes = nullptr) const;
  /// call() with arguments that may be prepared CPUBuffers (checked against the signature like Tensors; a null
  /// buffer is an error naming the argument).
  Result<std::vector<dsa::Tensor>> run(const std::string &name, const std::vector<HostValue> &args,
                                          interp::ProbeLog *probes = nullptr) const;
  /// run() without converting the results to Tensors (Values.h invokePackedValues): tensor results are the compiled
  /// code's buffers, in-place results (FunctionSignature::inPlace) the argument's buffer. The runner of a
  /// Sequence that keeps its state resident (Sequence::ValueRunner).
  Result<std::vector<HostValue>> runValues(const std::string &name, const std::vector<HostValue> &args,
                                          interp::ProbeLog *probes = nullptr) const;

  /// The module in the LLVM dialect as the JIT compiled it (for --emit style debugging and tests).
  const std::string &loweredModule() const;

private:
  std::unique_ptr<Impl> impl_;
};

/// Lowers a copy of `module` (the caller's module is not modified; its MLIRContext gets the dialects and the LLVM IR
/// translation interfaces registered) with --dsa-cpu-pipeline and JIT-compiles it.
Result<std::unique_ptr<CPUModule>> compileForCPU(mlir::ModuleOp module, const CPUCompileOptions &options = {});

/// Ahead-of-time: lowers a copy of `module` like compileForCPU and writes a step library for the MLIR-free runtime
/// (runtime/cpu/include/dsa/Runtime/CPU/StepLibrary.h) into `directory`: `<baseName>.o` (for options.targetCpu,
/// by default the host; options.optLevel),
/// `<baseName>.so` (linked with the system C compiler `cc`, plus libomp with options.parallel) and the step
/// description `<baseName>.json` (with target_cpu and the target_features the runtime checks before loading the
/// library). Returns the description's path. Errors: those of compileForCPU, an unwritable
/// directory, a failed link (with the linker's exit status).
Result<std::string> emitCPUStepLibrary(mlir::ModuleOp module, const std::string &directory,
                                       const std::string &baseName, const CPUCompileOptions &options = {});

/// Fills `signature.step` (StepRoles: x, start_pos, output, max_seq_len, shared slots, chunked: true for a ratio-0
/// layer, whose chunk at start_pos > 0 the CPU lowering runs as one step) and the -inf init of a
/// ratio >= 2 compressor's score_state from the function of `module` named `signature.name`, when that function
/// holds exactly one dsa.attention (before decomposition) whose x and start_pos are arguments and whose out is
/// returned; leaves it absent otherwise. emitCPUStepLibrary calls it for every function it describes; a JIT user
/// calls it on CPUModule::signature() to drive a Sequence::run().
void addStepRoles(mlir::ModuleOp module, FunctionSignature &signature);

/// Fills `signature.attention` (Values.h AttentionConfig) with the #dsa.attn_config of every dsa.attention of the
/// function of `module` named `signature.name`, in IR order (none: a decomposed module or a function without one).
/// The step-library emitters (CPU and GPU) call it for every function they describe, so that the description and the
/// library's signature record the configuration the code was compiled for.
void addAttentionConfigs(mlir::ModuleOp module, FunctionSignature &signature);

} // namespace dsa::cpu

#endif
