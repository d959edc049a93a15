// --dsa-cpu-pipeline on compressed layers (the tiny golden's L2: ratio 2 kv + index source, compress_pool and the
// tensor casts around it; L4: ratio 1 kv + index + candidate source): pure LLVM dialect that mlir-translate
// accepts. External calls: malloc, free, dsa_cpu_fail and the top-k runtime's C interface
// (_mlir_ciface_dsa_cpu_topk_set, called from a private wrapper that packs the two memref descriptors); the strided
// copies of insert_slice / concat / extract_slice are loops (no memrefCopy), bf16 conversions are inline integer
// code (no fptrunc / fpext, no __truncsfbf2, no bf16 type: bf16 data moves as i16; serial and parallel, every RUN
// line).
// RUN: dsa-opt %s --dsa-cpu-pipeline | FileCheck %s --implicit-check-not="dsa." --implicit-check-not="linalg." \
// RUN:   --implicit-check-not="tensor." --implicit-check-not="memref." --implicit-check-not="bufferization." \
// RUN:   --implicit-check-not="scf." --implicit-check-not="arith." --implicit-check-not="math." \
// RUN:   --implicit-check-not="func.func" --implicit-check-not="unrealized_conversion_cast" \
// RUN:   --implicit-check-not="memrefCopy" --implicit-check-not="llvm.fptrunc" --implicit-check-not="llvm.fpext" \
// RUN:   --implicit-check-not="__truncsfbf2" --implicit-check-not="bf16"
// RUN: dsa-opt %s --dsa-cpu-pipeline | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR \
// RUN:   --implicit-check-not="fptrunc" --implicit-check-not="fpext" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bfloat"
// RUN: dsa-opt %s --dsa-cpu-pipeline="parallel=true" | FileCheck %s --check-prefix=PAR --implicit-check-not="dsa." \
// RUN:   --implicit-check-not="linalg." --implicit-check-not="tensor." --implicit-check-not="memref." \
// RUN:   --implicit-check-not="scf." --implicit-check-not="arith." --implicit-check-not="alloca_scope" \
// RUN:   --implicit-check-not="llvm.fptrunc" --implicit-check-not="llvm.fpext" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bf16"
// RUN: dsa-opt %s --dsa-cpu-pipeline="parallel=true" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=PARIR \
// RUN:   --implicit-check-not="fptrunc" --implicit-check-not="fpext" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bfloat"

// CHECK-DAG: llvm.func @free(!llvm.ptr)
// CHECK-DAG: llvm.func @malloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @dsa_cpu_fail(i32)
// CHECK-DAG: llvm.func private @dsa_cpu_topk_set(
// CHECK-DAG: llvm.func @_mlir_ciface_dsa_cpu_topk_set(!llvm.ptr, i64, !llvm.ptr) -> i32
// CHECK-DAG: llvm.func @attention_L2(
// CHECK-DAG: llvm.func @attention_L4(
// CHECK-DAG: llvm.call @_mlir_ciface_dsa_cpu_topk_set(
// CHECK-DAG: llvm.call @dsa_cpu_topk_set(

// LLVMIR-DAG: declare i32 @_mlir_ciface_dsa_cpu_topk_set(ptr, i64, ptr)
// LLVMIR-DAG: define private i32 @dsa_cpu_topk_set(
// LLVMIR-DAG: define { {{.*}} } @attention_L2(
// LLVMIR-DAG: define { {{.*}} } @attention_L4(
// LLVMIR-NOT: memrefCopy

// PAR-DAG: llvm.func @attention_L2(
// PAR-DAG: llvm.func @attention_L4(
// PAR-DAG: omp.parallel
// PAR-DAG: omp.wsloop
// PAR-DAG: llvm.call @_mlir_ciface_dsa_cpu_topk_set(

// PARIR-DAG: declare i32 @_mlir_ciface_dsa_cpu_topk_set(ptr, i64, ptr)
// PARIR-DAG: call void (ptr, i32, ptr, ...) @__kmpc_fork_call(
func.func @attention_L2(%arg0: tensor<?x64xbf16>, %arg1: i64, %arg2: tensor<8x32xbf16>, %arg3: tensor<4xf32>, %arg4: tensor<16x64xbf16>, %arg5: tensor<16xbf16>, %arg6: tensor<128x16xbf16>, %arg7: tensor<32x64xbf16>, %arg8: tensor<32xbf16>, %arg9: tensor<32x64xbf16>, %arg10: tensor<64x32xbf16>, %arg11: tensor<32x64xf32>, %arg12: tensor<32x64xf32>, %arg13: tensor<32xbf16>, %arg14: tensor<32x32xbf16>, %arg15: tensor<32xbf16>, %arg16: tensor<64x16xbf16>, %arg17: tensor<2x64xbf16>, %arg18: tensor<2x32xf32>, %arg19: tensor<2x32xf32>, %arg20: tensor<32x32xbf16>, %arg21: tensor<32x32xbf16>, %arg22: tensor<?x32xbf16>, %arg23: tensor<?x32xbf16>, %arg24: tensor<?x?xi32>, %arg25: tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) {
  %out, %new_ring, %new_state:4, %new_shared:4 = dsa.attention %arg0, %arg1, %arg2 weights(%arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10) compressor(%arg11, %arg12, %arg13) index_keys(%arg14, %arg15) indexer(%arg16, %arg17) state(%arg18, %arg19, %arg20, %arg21) shared(%arg22, %arg23, %arg24, %arg25) {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 9.99999968E-21 : f32, rope = <rope_dim = 8, theta = 4.000000e+04 : f64, yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64>>, compress = <is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>>} : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return %out, %new_ring, %new_state#0, %new_state#1, %new_state#2, %new_state#3, %new_shared#0, %new_shared#1, %new_shared#2, %new_shared#3 : tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>
}
func.func @attention_L4(%arg0: tensor<?x64xbf16>, %arg1: i64, %arg2: tensor<8x32xbf16>, %arg3: tensor<4xf32>, %arg4: tensor<16x64xbf16>, %arg5: tensor<16xbf16>, %arg6: tensor<128x16xbf16>, %arg7: tensor<32x64xbf16>, %arg8: tensor<32xbf16>, %arg9: tensor<32x64xbf16>, %arg10: tensor<64x32xbf16>, %arg11: tensor<32x64xbf16>, %arg12: tensor<32xbf16>, %arg13: tensor<32x32xbf16>, %arg14: tensor<32xbf16>, %arg15: tensor<64x16xbf16>, %arg16: tensor<2x64xbf16>, %arg17: tensor<64x32xbf16>, %arg18: tensor<64x32xbf16>, %arg19: tensor<?x32xbf16>, %arg20: tensor<?x32xbf16>, %arg21: tensor<?x?xi32>, %arg22: tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) {
  %out, %new_ring, %new_state:2, %new_shared:4 = dsa.attention %arg0, %arg1, %arg2 weights(%arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10) compressor(%arg11, %arg12) index_keys(%arg13, %arg14) indexer(%arg15, %arg16) state(%arg17, %arg18) shared(%arg19, %arg20, %arg21, %arg22) {config = #dsa.attn_config<layer_id = 4, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 1, norm_eps = 9.99999968E-21 : f32, rope = <rope_dim = 8, theta = 4.000000e+04 : f64, yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64>>, compress = <is_kv_source = true, is_index_source = true, is_candidate_source = true, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>>} : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return %out, %new_ring, %new_state#0, %new_state#1, %new_shared#0, %new_shared#1, %new_shared#2, %new_shared#3 : tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>
}
