//===- Passes.td - the passes of dsa's CPU conversion (dsa-to-cpu and --dsa-cpu-pipeline's own) -------===//
//
// TableGen'd into dsa/Conversion/DSAToCPU/Passes.h.inc (-name DSAToCPU: registerDSAToCPUPasses()) and the passes'
// reference docs (build/docs/DSAToCPUPasses.md). Kept apart from the GPU conversion's passes (DSAToGPU/Passes.td) so
// that a compiler linking only the CPU path (DSA::ConversionCPU) does not pull in the GPU one.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CONVERSION_DSATOCPU_PASSES_TD
#define DSA_CONVERSION_DSATOCPU_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------------------------------------------===//
// CPU (lib/Conversion/DSAToCPU): dsa-to-cpu and the other dsa passes --dsa-cpu-pipeline runs (Pipeline.cpp,
// CPUTarget.cpp). registerDSACPUPipeline() registers them with the pipeline, so its dump replays.
//===----------------------------------------------------------------------------------------------------------===//

def ConvertDSAToCPU : Pass<"dsa-to-cpu", "::mlir::ModuleOp"> {
  let summary = "Lower the dsa primitives to upstream dialects for the CPU (linalg/tensor/arith/math/scf)";
  let description = [{
    Rewrites every dsa primitive into upstream ops that the CPU pipeline (`--dsa-cpu-pipeline`) bufferizes and
    lowers to LLVM. The fp8/fp4/e8m0 round trips are lowered with integer/bit arithmetic so they are bit-exact
    (see ../shared/toolchain.md: the stock arith lowerings round these types wrongly).
  }];
  let options = [
    Option<"vectorRegisters", "vector-registers", "int64_t", /*default=*/"32",
           "Vector registers of the target (32 with AVX-512, 16 with AVX2): sizes the register tile of the linear / "
           "grouped_output products (4 tokens x 8 outputs with 32 (pair-columns), 3 x 3 with 16, so the accumulators do not "
           "spill), and sparse_attn's p.v sums (4 heads x 4 vectors of 16 columns with 32, 4 x 2 of 8 with 16). "
           "--dsa-cpu-pipeline sets it from its cpu. The results are the same bits either way">,
    Option<"pairColumns", "pair-columns", "bool", /*default=*/"true",
           "With 32 vector registers: the prefill blocks (4 tokens x 8 outputs) keep two outputs' 8 lanes in each "
           "16-lane accumulator, reading a widened panel of interleaved w row pairs (one AVX-512 FMA per two dots; "
           "false: 4 x 4 blocks of 8-lane accumulators). The results are the same bits either way">,
    Option<"phaseMinRows", "phase-min-rows", "int64_t", /*default=*/"64",
           "From this many rows of x (counted at run time; 0: never) the linear / grouped_output products use the "
           "phase kernel: each of the dot's 8 lanes computed as its own product by an outer-product register tile "
           "(6 tokens x 16 outputs with 16 vector registers, 12 x 32 with 32) over operands packed phase-major. "
           "The results are the same bits either way">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect", "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect"];
}

def DSACPUDropInPlaceResults : Pass<"dsa-cpu-drop-in-place-results", "::mlir::ModuleOp"> {
  let summary = "Drop the results of CPU-backend-marked functions that bufferization made an argument's buffer";
  let description = [{
    For every function marked `dsa.cpu_in_place = array<i64: writable arguments>` (lib/Backend/CPU's lowerForCPU
    sets it; the marker is removed; dsa/Conversion/DSAToCPU/InPlaceResults.h), drops the results that one-shot
    bufferization made an argument's buffer (caches written in place, a slot passed through, a result repeating
    one of them) and records them in the module attribute `dsa.cpu_in_place = {name = array<i64: argument of each
    original result, or -1>}`, and the writable arguments the code may write in `dsa.cpu_written = {name =
    array<i64: ...>}`. Returned, such a result would be cloned by the ownership-based deallocation (an argument is
    not owned by the function). Functions called within the module, or with more than one block, keep their
    results. Runs between one-shot bufferization and the buffer deallocation; unmarked functions are untouched.
  }];
}

def DSACPUFlattenElementwise : Pass<"dsa-cpu-flatten-elementwise", "::mlir::ModuleOp"> {
  let summary = "Run element-wise linalg ops on whole identity-layout buffers as one loop over their elements";
  let description = [{
    Every linalg op on memrefs (after bufferization) of rank >= 2 whose loops are all parallel, whose memref
    operands all have the identity layout and the identity indexing map (scalars: no result), and whose body reads
    no linalg.index (a fill, an element-wise linalg.map or linalg.generic over whole buffers) becomes a
    linalg.generic of one parallel loop over `memref.collapse_shape` views of its operands: the same element
    operations in row-major order. Such an op of rank r otherwise becomes r nested loops, which with parallel=true
    SCF-to-OpenMP collapses into one OpenMP loop that recovers the r indices with a division per element (the
    batched step's fill of a padded [B, rows, width] index-key slot); one loop over the elements has no division
    and a contiguous body that LLVM vectorises. Ops on subviews (strided layouts) are left as they are.

    Example: `linalg.fill ins(%z : bf16) outs(%a : memref<?x?x128xbf16>)` becomes
    `%f = memref.collapse_shape %a [[0, 1, 2]]` and a linalg.generic over `memref<?xbf16>` yielding `%z`.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect"];
}

def DSACPUStridedCopiesToLinalg : Pass<"dsa-cpu-strided-copies-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Rewrite memref.copy between non-identity layouts into per-row memcpy loops or linalg.copy (no runner-utils memrefCopy)";
  let description = [{
    Every memref.copy that finalize-memref-to-llvm would lower to a call of the runner-utils library's
    `memrefCopy` (which neither the JIT's process nor an AOT step library has) becomes linalg.copy, which
    convert-linalg-to-loops turns into loops: a source or target that has neither the identity layout nor a
    static shape forming one contiguous row-major block (the copies bufferization makes for
    tensor.insert_slice, tensor.concat and tensor.extract_slice on dynamic shapes, and strided ones). Copies
    between identity-layout or static contiguous memrefs (e.g. `memref<16x8xbf16, strided<[8, 1], offset: ?>>`,
    a row of a batched cache) stay memref.copy: the llvm.memcpy intrinsic. A copy of rank >= 2 whose trailing
    dimensions (from some d >= 1) are static and one contiguous block per index of the leading ones on both sides
    becomes one scf.for per leading dimension with one static memref.copy per block (a constant-size memcpy,
    inlined by LLVM as vector moves): e.g. a batched slot `memref<?x?x128xbf16>` copied into a subview of its
    padded copy is a loop over sequences and rows of one 256-byte memcpy each.

    Example: `memref.copy %a, %b : memref<?x8xf32, strided<[16, 1]>> to memref<?x8xf32>` becomes
    `scf.for` over `memref.dim %a, 0` copying `memref<8xf32, strided<[1], offset: ?>>` rows;
    `memref.copy %s, %t : memref<4x8xf32, strided<[8, 1], offset: ?>> to memref<4x8xf32>` stays;
    `memref.copy %c, %d : memref<4x8xf32, strided<[16, 2]>> to memref<4x8xf32>` becomes `linalg.copy`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect"];
}

def DSACPUExpandBf16 : Pass<"dsa-cpu-expand-bf16", "::mlir::ModuleOp"> {
  let summary = "Expand arith.truncf f32 -> bf16 and arith.extf bf16 -> f32 into integer ops (lib/Numerics' rounding)";
  let description = [{
    Rewrites every arith.truncf f32 -> bf16 and arith.extf bf16 -> f32 (scalars and vectors, in any op) into
    integer arithmetic on the bits: numerics::f32ToBf16Bits (round to nearest even, denormals rounded like any
    value, NaN -> quiet NaN keeping the sign and the top payload bits) and the exact 16-bit shift for widening. A
    truncf to bf16 from another type, or with a rounding mode other than to_nearest_even, is an error
    (dsa/Conversion/CPUTarget.h).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def DSACPUCheckBf16 : Pass<"dsa-cpu-check-bf16", "::mlir::ModuleOp"> {
  let summary = "Fail on any LLVM-dialect op that converts or computes on bf16 (or calls __truncsfbf2)";
  let description = [{
    Emits an error naming each LLVM-dialect op that LLVM would convert or compute on as bf16 (llvm.fptrunc to /
    llvm.fpext from bf16, arithmetic on bf16, a call or declaration of __truncsfbf2 / __truncdfbf2 /
    __extendbfsf2) and fails: checkNoBf16Conversions (dsa/Conversion/CPUTarget.h).
  }];
}

def DSACPUBf16AsI16 : Pass<"dsa-cpu-bf16-as-i16", "::mlir::ModuleOp"> {
  let summary = "Carry bf16 values as i16 in the LLVM dialect (after dsa-cpu-check-bf16: only bit moves are left)";
  let description = [{
    Repeats dsa-cpu-check-bf16, then replaces bf16 by i16 in every type and attribute of the module (values, block
    arguments, function types, GEP element types; constants and globals keep their bits) and removes the identity
    bitcasts left, so the LLVM IR holds no bfloat: x86 code generation would convert even a bf16 value that only
    crosses blocks (a phi) through f32 with __truncsfbf2 / vcvtneps2bf16.
  }];
}

def DSACPUSetTarget : Pass<"dsa-cpu-set-target", "::mlir::ModuleOp"> {
  let summary = "Set target_cpu / target_features of every llvm.func definition to a CPU ('host' or an LLVM CPU name)";
  let description = [{
    Writes the CPU and the LLVM target features of resolveCPUTarget(cpu) (dsa/Conversion/CPUTarget.h) on every
    llvm.func definition as target_cpu / target_features, which LLVM's code generation honours per function over
    the target machine's defaults. An unknown CPU name fails the pass with resolveCPUTarget's message.
  }];
  let options = [
    Option<"cpu", "cpu", "std::string", /*default=*/"\"host\"",
           "The CPU to compile for: 'host' (the running CPU with exactly its features) or an LLVM x86-64 CPU name "
           "(x86-64, x86-64-v2, x86-64-v3, x86-64-v4, skylake-avx512, sapphirerapids, znver4, ...; "
           "`llc -mcpu=help` lists them)">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif
