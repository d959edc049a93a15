// --dsa-cpu-pipeline: a whole window-only dsa.attention layer (decomposed, probes stripped, dsa-to-cpu,
// bufferized, lowered) ends as pure LLVM dialect that mlir-translate accepts. No runtime-library calls but malloc,
// free and the run-time check hook (no memrefCopy; no bf16 fptrunc / fpext, which LLVM would turn into a
// __truncsfbf2 call or vcvtneps2bf16: the conversions are expanded inline, serial and parallel, and no bf16 type at
// all, bf16 data being moved as i16; checked on every RUN line below).
// RUN: dsa-opt %s --dsa-cpu-pipeline | FileCheck %s --implicit-check-not="dsa." --implicit-check-not="linalg." \
// RUN:   --implicit-check-not="tensor." --implicit-check-not="memref." --implicit-check-not="bufferization." \
// RUN:   --implicit-check-not="scf." --implicit-check-not="cf." --implicit-check-not="arith." \
// RUN:   --implicit-check-not="math." --implicit-check-not="affine." --implicit-check-not="func.func" \
// RUN:   --implicit-check-not="unrealized_conversion_cast" --implicit-check-not="memrefCopy" \
// RUN:   --implicit-check-not="llvm.fptrunc" --implicit-check-not="llvm.fpext" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bf16"
// RUN: dsa-opt %s --dsa-cpu-pipeline | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR \
// RUN:   --implicit-check-not="fptrunc" --implicit-check-not="fpext" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bfloat"
// parallel=true: OpenMP work-sharing loops over the outputs, lowered to __kmpc_* calls (libomp at run time).
// RUN: dsa-opt %s --dsa-cpu-pipeline="parallel=true" | FileCheck %s --check-prefix=PAR --implicit-check-not="scf." \
// RUN:   --implicit-check-not="linalg." --implicit-check-not="memref." --implicit-check-not="alloca_scope" \
// RUN:   --implicit-check-not="arith." --implicit-check-not="llvm.fptrunc" --implicit-check-not="llvm.fpext" \
// RUN:   --implicit-check-not="__truncsfbf2" --implicit-check-not="bf16"
// RUN: dsa-opt %s --dsa-cpu-pipeline="parallel=true" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=PARIR \
// RUN:   --implicit-check-not="fptrunc" --implicit-check-not="fpext" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bfloat"
// For another CPU (cpu=x86-64-v3): the same code with target attributes on every function (target.mlir).
// RUN: dsa-opt %s --dsa-cpu-pipeline="parallel=true cpu=x86-64-v3" | FileCheck %s --check-prefix=PAR \
// RUN:   --implicit-check-not="llvm.fptrunc" --implicit-check-not="llvm.fpext" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bf16"

// CHECK-DAG: llvm.func @free(!llvm.ptr)
// CHECK-DAG: llvm.func @malloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @dsa_cpu_fail(i32)
// The memref arguments are expanded (allocated, aligned, offset, sizes, strides); x is [?, 64] bf16 (i16 in memory).
// CHECK: llvm.func @attention_L0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %[[START:.*]]: i64,
// CHECK-SAME: -> !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>)>
// CHECK-DAG: llvm.intr.cos
// CHECK-DAG: llvm.intr.sin
// CHECK-DAG: llvm.intr.exp
// CHECK-DAG: llvm.intr.sqrt
// CHECK-DAG: llvm.intr.ctlz
// CHECK-DAG: llvm.call @dsa_cpu_fail
// CHECK-DAG: llvm.call @malloc
// CHECK-DAG: llvm.call @free
// CHECK: llvm.return

// LLVMIR-DAG: declare void @dsa_cpu_fail(i32)
// LLVMIR-DAG: define { { ptr, ptr, i64, [2 x i64], [2 x i64] }, { ptr, ptr, i64, [2 x i64], [2 x i64] } } @attention_L0(
// LLVMIR-DAG: call float @llvm.cos.f32(
// LLVMIR-DAG: call float @llvm.exp.f32(
// LLVMIR-NOT: fptrunc
// PAR: llvm.func @attention_L0(
// PAR: omp.parallel {
// PAR-NEXT: omp.wsloop {
// PAR-NEXT: omp.loop_nest
// PAR: llvm.return

// PARIR-DAG: call void (ptr, i32, ptr, ...) @__kmpc_fork_call(
// PARIR-DAG: call void @__kmpc_for_static_init_8u(
func.func @attention_L0(%x: tensor<?x64xbf16>, %start_pos: i64, %ring: tensor<8x32xbf16>, %w0: tensor<4xf32>,
                        %w1: tensor<16x64xbf16>, %w2: tensor<16xbf16>, %w3: tensor<128x16xbf16>,
                        %w4: tensor<32x64xbf16>, %w5: tensor<32xbf16>, %w6: tensor<32x64xbf16>,
                        %w7: tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>) {
  %out, %new_ring = dsa.attention %x, %start_pos, %ring weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6, %w7)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
       q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0,
       norm_eps = 9.99999968E-21 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return %out, %new_ring : tensor<?x64xbf16>, tensor<8x32xbf16>
}
