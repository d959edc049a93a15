//===- CPUTarget.h - the CPU --dsa-cpu-pipeline compiles for; bf16 conversions without the backend -------===//
//
// Two guarantees of the CPU pipeline (compiler/lib/Conversion/DSAToCPU, docs/cpu-backend.md "Target CPU" and "bf16"):
//
//   - The code targets a CPU the user chose. resolveCPUTarget turns a name into the CPU and LLVM target features to
//     compile for: "host" (or empty) = the running CPU with exactly its features (llvm::sys::getHostCPUFeatures),
//     otherwise an LLVM x86-64 CPU name ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "skylake-avx512",
//     "sapphirerapids", "znver4", ... as `llc -mcpu=help` lists them) with the features it implies. The pass
//     dsa-cpu-set-target (--dsa-cpu-pipeline cpu=NAME) writes them on every llvm.func as target_cpu /
//     target_features, which LLVM's code generation honours per function whatever target machine compiles it.
//
//   - No f32 -> bf16 (or bf16 -> f32) conversion reaches LLVM un-expanded: dsa-cpu-expand-bf16 rewrites every
//     arith.truncf f32 -> bf16 and arith.extf bf16 -> f32 (scalars and vectors) into integer operations with the
//     rounding of core/lib/Numerics (numerics::f32ToBf16Bits: round to nearest even, denormals rounded like any value,
//     NaN -> quiet NaN with the input's sign and top payload bits; widening is the exact 16-bit shift), before any
//     conversion to the LLVM dialect (serial or OpenMP). Left to LLVM, the conversion is a call of __truncsfbf2
//     (absent from the JIT's process) or, with AVX512_BF16, vcvtneps2bf16 (denormal inputs flushed to zero).
//     dsa-cpu-check-bf16 then rejects any LLVM-dialect op that still converts or computes on bf16
//     (checkNoBf16Conversions), and dsa-cpu-bf16-as-i16, last in the pipeline, carries the remaining bf16 values
//     (loads, stores, selects, block arguments: bit moves) as i16, so LLVM never holds a bf16 value it could
//     convert.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CONVERSION_CPUTARGET_H
#define DSA_CONVERSION_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace mlir::dsa {

/// What the code is compiled for.
struct CPUTarget {
  std::string cpu; ///< LLVM's CPU name (the host's, e.g. "znver4", for "host")
  /// LLVM target features, "+name" / "-name" (the host: every feature LLVM detects, on or off; a named CPU: "+"
  /// for each of its features and the ones they imply).
  std::vector<std::string> features;
  bool host = false; ///< resolved from "host" / ""
  /// The features the code may use: the names of the "+" entries, sorted.
  std::vector<std::string> enabledFeatures() const;
  /// `features` joined with commas (the form TargetMachine and the "target-features" attribute take).
  std::string featureString() const;
};

/// The CPU name meaning the running CPU (resolveCPUTarget, dsa-cpu-set-target's default, $DSA_CPU's default).
inline constexpr llvm::StringLiteral kHostCPU = "host";

/// Resolves a CPU name ("host" or empty: the running CPU). Failure: `error` says the name is unknown and how to
/// list the known ones.
FailureOr<CPUTarget> resolveCPUTarget(llvm::StringRef cpu, std::string &error);

// The passes (compiler/include/dsa/Conversion/DSAToCPU/Passes.td, created by createDSACPU*() of dsa/Conversion/DSAToCPU/Passes.h):
//   dsa-cpu-set-target{cpu=NAME}: target_cpu / target_features of resolveCPUTarget(NAME) on every llvm.func
//     definition of the module (an unknown name fails the pass with resolveCPUTarget's message);
//   dsa-cpu-expand-bf16: arith.truncf f32 -> bf16 and arith.extf bf16 -> f32 (scalar or vector, any op) as integer
//     arithmetic with core/lib/Numerics' rounding; a truncf to bf16 from another type, or with a rounding mode other
//     than to_nearest_even, is an error;
//   dsa-cpu-check-bf16: fails, naming each op, when checkNoBf16Conversions does;
//   dsa-cpu-bf16-as-i16 (after the check, which it repeats): bf16 becomes i16 in every type and attribute of the
//     module (values, block arguments, function types, GEP element types, constants and globals keep their bits),
//     so the LLVM IR holds no bfloat at all. x86 code generation converts even a bf16 value that only crosses
//     blocks (a phi): extended to f32 and rounded back with __truncsfbf2 or vcvtneps2bf16 (signalling NaNs quieted;
//     with AVX512_BF16, bf16 denormals flushed to zero). Scalar bf16 function arguments and results become i16.

/// Emits an error on every LLVM-dialect op of `module` that would make LLVM convert or compute on bf16:
/// llvm.fptrunc to / llvm.fpext from bf16, int <-> bf16 conversions, any other op with a bf16 operand or result
/// except those that only move bits (load, store, bitcast, constants, element/value insert and extract, shuffles,
/// select, masked loads/stores/gathers/scatters, branches, calls of functions defined in the module), and any
/// call or declaration of __truncsfbf2 / __truncdfbf2 / __extendbfsf2. Success when there is none.
LogicalResult checkNoBf16Conversions(ModuleOp module);

/// The routines LLVM calls to convert bf16 (__truncsfbf2: f32 -> bf16, __truncdfbf2: f64 -> bf16, __extendbfsf2:
/// bf16 -> f32; compiler-rt/libgcc, absent from the JIT's process). Compiled CPU code must reference none of them:
/// checked on the LLVM dialect by checkNoBf16Conversions and on LLVM IR by compiler/lib/Backend's checkNoBf16Conversions.
inline bool isBf16ConversionRoutine(llvm::StringRef name) {
  return name == "__truncsfbf2" || name == "__truncdfbf2" || name == "__extendbfsf2";
}

} // namespace mlir::dsa

#endif
