//===- PackedCall.h - calling compiled dsa CPU functions on host values (MLIR-free) ----===//
//
// The calling convention of functions lowered by --dsa-cpu-pipeline, shared by the JIT (lib/Backend/CPU) and the
// AOT step libraries (StepLibrary.h). A function's arguments and results are
//   - ranked tensors of bf16 / f32 / i1 / i32 / i64 / index: memref descriptors (allocated ptr, aligned ptr, offset,
//     sizes[rank], strides[rank]) over row-major data; bf16 as 16-bit patterns, i1 as one byte, index as int64;
//   - scalars i64 / index / i32 / i1 / f32.
// A function is called through its packed entry `void _mlir_<name>(void **args)`: args[i] points to the i-th
// LLVM-level argument (each descriptor field is one), and the last pointer receives the result struct (fields in
// order, natural alignment). Result buffers are malloc'ed by the compiled code and owned by the caller.
// Arguments are read-only for the compiled code (marked bufferization.writable = false) except the ones listed in
// FunctionSignature::writableArgs (the compressed-KV and index-key caches of a compressed dsa.attention layer): those
// are updated IN PLACE, and the results that are such an argument after the update (FunctionSignature::inPlace) are
// not returned by the packed entry (its result struct holds the other results, in order). invokePacked passes a
// caller's buffer to a writable argument only when it was given as HostValue::inPlace; otherwise it passes a fresh
// copy, so a Tensor or a shared HostBuffer is never modified. A failed run-time check of the compiled code calls
// dsa_cpu_fail(code) (dsa/ABI/RuntimeErrors.h); invokePacked() turns the first one into an error.
//
// In-place caches and failures: a cache update (dsa.cache_write) writes only rows start_pos // ratio .. of the
// cache, rows past the sequence's visible compressed state (positions < start_pos). A call that fails part-way may
// have written some of them; the visible rows, and every other argument, are unchanged, and the retried (or next)
// step writes those rows again before anything reads them.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_CPU_PACKEDCALL_H
#define DSA_RUNTIME_CPU_PACKEDCALL_H

#include "dsa/Runtime/Host/Values.h"

namespace dsa::cpu {

// The host-side types the CPU runtime's API is written in (dsa/Runtime/Host/Values.h), usable unqualified here.
using runtime::FunctionSignature;
using runtime::HostBuffer;
using runtime::HostValue;
using runtime::NamedTensor;
using runtime::StateBinding;
using runtime::StateInit;
using runtime::StepRoles;
using runtime::ValueKind;

/// The packed entry of a compiled function.
using PackedFunction = void (*)(void **);

/// How a result buffer of the compiled code is freed once its last HostValue is gone: the free of the allocator the
/// code allocated it with (null: std::free).
using ReleaseFunction = void (*)(void *);

/// Checks `args` against `sig` (count, element type, rank, static sizes; errors name the argument, e.g.
/// "argument #1 has shape [2, 5], expected tensor<2x4xbf16> (dimension 1)"; an in-place buffer for a writable
/// argument is checked the same way), calls `fn`, checks the returned tensors' sizes against `sig` ("result #0
/// came back with shape [3, 5], the signature says tensor<?x4xf32>"), and returns the function's own results as
/// Tensors. For a step library's functions `sig` is the signature CPUStepLibrary::open verified against the one
/// compiled into the library (StepLibrary.h); the probe results are appended to `probes` (may be null). A failed run-time check of the
/// compiled code is an error with the check's message. Thread-safe (the check record is per thread).
Result<std::vector<dsa::Tensor>> invokePacked(const FunctionSignature &sig, PackedFunction fn,
                                                 const std::vector<HostValue> &args,
                                                 std::vector<NamedTensor> *probes, ReleaseFunction release = nullptr);

/// invokePacked without the conversion of the results to Tensors: tensor results are the compiled code's buffers
/// adopted as HostValue::inPlace buffers (the caller owns them; results sharing one allocation share one owner,
/// freed once by `release`: null is std::free; the JIT passes dsa_cpu_free, whose cache the code allocates from,
/// so that a large result (a batched step's padded slot) is reused by a later step instead of mapped afresh), an
/// in-place result (FunctionSignature::inPlace) is its argument's value (the caller's inPlace buffer, the fresh copy
/// made for a writable argument given otherwise, or the argument as given for a read-only one: no copy), scalars
/// rank-0 Tensors. Probes are Tensors as with invokePacked. Errors as invokePacked, plus a
/// writableArgs / inPlace entry outside the signature and one inPlace buffer given for two writable arguments.
Result<std::vector<HostValue>> invokePackedValues(const FunctionSignature &sig, PackedFunction fn,
                                                 const std::vector<HostValue> &args,
                                                 std::vector<NamedTensor> *probes, ReleaseFunction release = nullptr);

/// The compiled code's hook (RuntimeErrors.h): records the first code of the current call on this thread. The JIT
/// binds `dsa_cpu_fail` to it; an AOT step library calls it through its `dsa_cpu_fail_hook` pointer.
extern "C" void dsaCpuRecordFailure(int32_t code);

} // namespace dsa::cpu

#endif
