//===- HostFeatures.h - the x86-64 features of the running CPU (MLIR-free, LLVM-free) ---===//
//
// What an AOT step library needs from the CPU it runs on: the description (StepLibrary.h) lists the LLVM target
// features its code was compiled with ("target_features", e.g. "avx2", "fma", "avx512f", "amx-tile"), and
// CPUStepLibrary::open refuses, BEFORE dlopen, a library whose features this host lacks, naming them (instead of a
// SIGILL at the first instruction the CPU does not have). The JIT (compiler/lib/Backend/CPU) applies the same check to a
// target CPU chosen by the user, since it runs the code here.
//
// Detection: cpuid (leaves 1, 7.0, 7.1, 0xD.1, 0x14, 0x19, 0x1E.1, 0x24, 0x80000001, 0x80000008) and xgetbv (XCR0:
// the OS saves the AVX / AVX-512 / AMX register state), with LLVM's feature names and LLVM's rules for which
// features need which saved state (llvm/lib/TargetParser/Host.cpp, getHostCPUFeatures; checked against it by
// CPURuntimeAOTTest.HostFeaturesMatchLLVM). Only x86-64 hosts are supported (elsewhere no feature is detected and
// every feature counts as missing).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_CPU_HOSTFEATURES_H
#define DSA_RUNTIME_CPU_HOSTFEATURES_H

#include "dsa/Support/Result.h"

#include <string>
#include <vector>

namespace dsa::cpu {

/// Every feature name this runtime can detect, sorted (LLVM's x86 names: "avx2", "avx512f", "amx-tile", ...).
const std::vector<std::string> &knownCpuFeatures();

/// The features of the running CPU (a subset of knownCpuFeatures()), sorted. Computed once.
const std::vector<std::string> &hostCpuFeatures();

/// Whether the running CPU has every feature of `required` (names as in knownCpuFeatures()); an error otherwise:
///   "<what> was built for <cpu>; this host lacks amx-bf16, amx-tile, avx512fp16"  (sorted, each named once)
///   "<what> was built for <cpu>; it requires no-such-feature, which this runtime cannot detect"
/// (both parts when both apply). `what` names the code (e.g. "step library l0.so").
Status checkHostHasFeatures(const std::string &what, const std::string &cpu, const std::vector<std::string> &required);

} // namespace dsa::cpu

#endif
