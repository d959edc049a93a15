// Every f32 <-> bf16 conversion of --dsa-cpu-pipeline is integer code before anything reaches LLVM
// (dsa-cpu-expand-bf16, compiler/lib/Conversion/DSAToCPU/CPUTarget.cpp): core/lib/Numerics' f32ToBf16Bits (round to nearest
// even, denormals rounded, NaN -> quiet NaN with its sign and top payload) and the exact widening shift, scalars and
// vectors, serial and OpenMP. Left to LLVM, the truncation becomes a call of __truncsfbf2 (x86-64-v3: absent from
// the JIT's process) or vcvtneps2bf16 (AVX512_BF16: flushes denormal inputs to zero); the CONTROL lines show that
// on the same function lowered by upstream passes alone, so the ASM lines can fail. The bits are checked at run time
// by test/Backend/CPU/TargetAndBf16Test.cpp.
//
// The expansion itself:
// RUN: dsa-opt %s --dsa-cpu-expand-bf16 --canonicalize | FileCheck %s --check-prefix=EXPAND \
// RUN:   --implicit-check-not="arith.truncf" --implicit-check-not="arith.extf"
// The pipeline, serial and parallel, for the host and x86-64-v3: no fptrunc / fpext, no __truncsfbf2.
// RUN: dsa-opt %s --dsa-cpu-pipeline | FileCheck %s --check-prefix=LLVM --implicit-check-not="llvm.fptrunc" \
// RUN:   --implicit-check-not="llvm.fpext" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bf16"
// RUN: dsa-opt %s --dsa-cpu-pipeline="parallel=true" | FileCheck %s --check-prefixes=LLVM,PAR \
// RUN:   --implicit-check-not="llvm.fptrunc" --implicit-check-not="llvm.fpext" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bf16"
// RUN: dsa-opt %s --dsa-cpu-pipeline="parallel=true cpu=x86-64-v3" | FileCheck %s --check-prefixes=LLVM,PAR \
// RUN:   --implicit-check-not="llvm.fptrunc" --implicit-check-not="llvm.fpext" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bf16"
// The machine code for a CPU with AVX512_BF16 (sapphirerapids) and for one without (x86-64-v3): neither the
// conversion instruction nor the library call.
// RUN: dsa-opt %s --dsa-cpu-pipeline="parallel=true" | mlir-translate --mlir-to-llvmir | llc -O2 -mcpu=sapphirerapids \
// RUN:   | FileCheck %s --check-prefix=ASM --implicit-check-not="vcvtneps2bf16" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="__extendbfsf2"
// RUN: dsa-opt %s --dsa-cpu-pipeline | mlir-translate --mlir-to-llvmir | llc -O2 -mcpu=sapphirerapids \
// RUN:   | FileCheck %s --check-prefix=ASM --implicit-check-not="vcvtneps2bf16" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bf16"
// RUN: dsa-opt %s --dsa-cpu-pipeline="parallel=true" | mlir-translate --mlir-to-llvmir | llc -O2 -mcpu=x86-64-v3 \
// RUN:   | FileCheck %s --check-prefix=ASM --implicit-check-not="vcvtneps2bf16" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bf16"
// CONTROL: the same functions through upstream's lowering alone.
// RUN: dsa-opt %s --one-shot-bufferize="bufferize-function-boundaries" --convert-linalg-to-loops --convert-scf-to-cf \
// RUN:   --expand-strided-metadata --finalize-memref-to-llvm --convert-arith-to-llvm --convert-func-to-llvm \
// RUN:   --convert-cf-to-llvm --reconcile-unrealized-casts > %t.upstream.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.upstream.mlir | llc -O2 -mcpu=sapphirerapids | FileCheck %s --check-prefix=CONTROL-BF16
// RUN: mlir-translate --mlir-to-llvmir %t.upstream.mlir | llc -O2 -mcpu=x86-64-v3 | FileCheck %s --check-prefix=CONTROL-V3

// core/lib/Numerics' f32ToBf16Bits: NaN when |u| > 0x7F800000 -> (u >> 16) | 0x40; else (u + 0x7FFF + ((u >> 16) & 1)) >> 16.
// EXPAND-LABEL: func.func @trunc(
// EXPAND-DAG: %[[MAG:.*]] = arith.constant 2147483647 : i32
// EXPAND-DAG: %[[INF:.*]] = arith.constant 2139095040 : i32
// EXPAND-DAG: %[[C16:.*]] = arith.constant 16 : i32
// EXPAND-DAG: %[[QUIET:.*]] = arith.constant 64 : i32
// EXPAND-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// EXPAND-DAG: %[[HALF:.*]] = arith.constant 32767 : i32
// EXPAND: %[[U:.*]] = arith.bitcast %{{.*}} : f32 to i32
// EXPAND: %[[A:.*]] = arith.andi %[[U]], %[[MAG]] : i32
// EXPAND: %[[NAN:.*]] = arith.cmpi ugt, %[[A]], %[[INF]] : i32
// EXPAND: %[[HI:.*]] = arith.shrui %[[U]], %[[C16]] : i32
// EXPAND: %[[Q:.*]] = arith.ori %[[HI]], %[[QUIET]] : i32
// EXPAND: %[[LSB:.*]] = arith.andi %[[HI]], %[[ONE]] : i32
// EXPAND: %[[BIAS:.*]] = arith.addi %[[LSB]], %[[HALF]] : i32
// EXPAND: %[[SUM:.*]] = arith.addi %[[U]], %[[BIAS]] : i32
// EXPAND: %[[R:.*]] = arith.shrui %[[SUM]], %[[C16]] : i32
// EXPAND: %[[SEL:.*]] = arith.select %[[NAN]], %[[Q]], %[[R]] : i32
// EXPAND: %[[T:.*]] = arith.trunci %[[SEL]] : i32 to i16
// EXPAND: arith.bitcast %[[T]] : i16 to bf16
// EXPAND-LABEL: func.func @trunc_vector(
// EXPAND: arith.bitcast %{{.*}} : vector<8xf32> to vector<8xi32>
// EXPAND: arith.cmpi ugt, %{{.*}}, %{{.*}} : vector<8xi32>
// EXPAND: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xi32>
// EXPAND: arith.trunci %{{.*}} : vector<8xi32> to vector<8xi16>
// EXPAND: arith.bitcast %{{.*}} : vector<8xi16> to vector<8xbf16>
// EXPAND-LABEL: func.func @ext(
// EXPAND: %[[H:.*]] = arith.bitcast %{{.*}} : bf16 to i16
// EXPAND: %[[W:.*]] = arith.extui %[[H]] : i16 to i32
// EXPAND: %[[S:.*]] = arith.shli %[[W]], %{{.*}} : i32
// EXPAND: arith.bitcast %[[S]] : i32 to f32
// EXPAND-LABEL: func.func @ext_vector(
// EXPAND: arith.extui %{{.*}} : vector<8xi16> to vector<8xi32>
// EXPAND: arith.shli %{{.*}}, %{{.*}} : vector<8xi32>

// LLVM: llvm.func @trunc(
// PAR: omp.wsloop
// LLVM: llvm.icmp "ugt"
// LLVM: llvm.func @ext(

// ASM-LABEL: trunc:
// ASM-LABEL: ext:

// CONTROL-BF16: vcvtneps2bf16
// CONTROL-V3: __truncsfbf2

func.func @trunc(%x: tensor<?xf32>) -> tensor<?xbf16> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xbf16>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%x : tensor<?xf32>) outs(%e : tensor<?xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<?xbf16>
  return %y : tensor<?xbf16>
}

func.func @trunc_vector(%v: vector<8xf32>) -> vector<8xbf16> {
  %t = arith.truncf %v : vector<8xf32> to vector<8xbf16>
  return %t : vector<8xbf16>
}

func.func @ext(%x: tensor<?xbf16>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xbf16>
  %e = tensor.empty(%n) : tensor<?xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%x : tensor<?xbf16>) outs(%e : tensor<?xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %t = arith.extf %a : bf16 to f32
    linalg.yield %t : f32
  } -> tensor<?xf32>
  return %y : tensor<?xf32>
}

func.func @ext_vector(%v: vector<8xbf16>) -> vector<8xf32> {
  %t = arith.extf %v : vector<8xbf16> to vector<8xf32>
  return %t : vector<8xf32>
}
