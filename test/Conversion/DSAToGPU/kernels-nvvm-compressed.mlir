// RUN: dsa-opt %s --split-input-file --dsa-gpu-host-pipeline --nvvm-attach-target="chip=sm_90" --convert-scf-to-cf \
// RUN:   --convert-gpu-to-nvvm --reconcile-unrealized-casts | FileCheck %s

// The NVVM IR of the compressed-attention kernel families (compiler/lib/Conversion/DSAToGPU/Kernels.mlir), one function per
// family as in kernels-nvvm.mlir. The checks pin what bit-exactness with the reference kernels needs
// (attention-semantics.md sections 2 and 5-9; kernels/lib/{Compressor,Indexer}.cpp): separate fmul/fadd
// (never an fma) in the reference's order, fmax as libdevice's fmaxf, IEEE fdiv, f64 libdevice exp rounded to f32,
// bf16 rounding by fptrunc, the quantisers' scales and grids in integer/bit arithmetic (no fp8/fp4 types).

// compress_pool: the state kernel, then the pool kernel: m = fmax over the members, den = sum exp(score - m),
// acc = sum kv * (exp(score - m) / den).
// CHECK-LABEL: func.func @compress_pool(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_compress_state
// CHECK: gpu.launch_func @dsa_kernels::@dsa_compress_pool
// CHECK: gpu.module @dsa_kernels [#nvvm.target<chip = "sm_90">]
// CHECK: llvm.func @dsa_compress_state(
// CHECK-SAME: attributes {gpu.kernel, nvvm.kernel}
// CHECK-NOT: llvm.fadd
// CHECK: llvm.func @dsa_compress_pool(
// CHECK: llvm.call @__nv_fmaxf(
// CHECK: %[[E1:.+]] = llvm.call @dsa_exp(
// CHECK-NEXT: llvm.fadd %{{.+}}, %[[E1]] : f32
// CHECK: %[[E2:.+]] = llvm.call @dsa_exp(
// CHECK-NEXT: %[[W:.+]] = llvm.fdiv %[[E2]], %{{.+}} : f32
// CHECK-NEXT: %[[P:.+]] = llvm.fmul %{{.+}}, %[[W]] : f32
// CHECK-NEXT: llvm.fadd %{{.+}}, %[[P]] : f32
// CHECK-NOT: llvm.intr.fma
// CHECK: llvm.func @dsa_exp(%arg0: f32) -> f32
// CHECK-NEXT: %[[D:.+]] = llvm.fpext %arg0 : f32 to f64
// CHECK-NEXT: %[[X:.+]] = llvm.call @__nv_exp(%[[D]]) : (f64) -> f64
// CHECK-NEXT: llvm.fptrunc %[[X]] : f64 to f32
func.func @compress_pool(%kv: tensor<?x4xf32>, %sc: tensor<?x4xf32>, %ks: tensor<2x4xf32>, %ss: tensor<2x4xf32>,
                         %sp: i64) -> (tensor<?x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %p, %k, %s = dsa.compress_pool %kv, %sc, %ks, %ss, %sp {ratio = 2 : i64}
      : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, i64)
      -> (tensor<?x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  return %p, %k, %s : tensor<?x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// fp4 round trips: one kernel, the scale chosen by its last argument (0: pow2_ceil, e8m0; 1: e4m3). amax |x|,
// q = amax / 6 (fdiv), x / s (fdiv), e2m1 by comparisons on the f32 bits, one fmul by s, one bf16 rounding.
// CHECK-LABEL: func.func @fp4(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_fp4_quant {{.*}} %c32{{.*}} : index, %c0_i32{{.*}} : i32)
// CHECK: gpu.launch_func @dsa_kernels::@dsa_fp4_quant {{.*}} %c16{{.*}} : index, %c1_i32{{.*}} : i32)
// CHECK: llvm.func @dsa_fp4_quant(
// CHECK: llvm.call @__nv_fabsf(
// CHECK: %[[Q:.+]] = llvm.fdiv %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: llvm.call @dsa_pow2_ceil(%[[Q]]) : (f32) -> f32
// CHECK-NEXT: llvm.call @dsa_round_e4m3(%[[Q]]) : (f32) -> f32
// CHECK: llvm.fdiv
// CHECK: %[[G:.+]] = llvm.call @dsa_round_e2m1(
// CHECK-NEXT: %[[R:.+]] = llvm.fmul %[[G]], %{{.+}} : f32
// CHECK-NEXT: llvm.fptrunc %[[R]] : f32 to bf16
// CHECK: llvm.func @dsa_round_e2m1(%arg0: f32) -> f32
// CHECK: llvm.bitcast %arg0 : f32 to i32
// CHECK: llvm.fcmp "ogt"
// CHECK: llvm.fcmp "oge"
// CHECK: llvm.fcmp "uno" %arg0, %arg0 : f32
// CHECK-NOT: llvm.fptrunc
// CHECK: llvm.return
func.func @fp4(%x: tensor<?x32xbf16>) -> (tensor<?x32xbf16>, tensor<?x32xbf16>) {
  %q = dsa.fp4_quant_e8m0 %x {block_size = 32 : i64} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
  %r = dsa.fp4_quant_e4m3 %x {block_size = 16 : i64} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
  return %q, %r : tensor<?x32xbf16>, tensor<?x32xbf16>
}

// -----

// indexer_scores in the kernel's order: a sequential dot (fmul + fadd per element, NOT dotF32's lanes), then
// w' = bf16(w * scale), relu(bf16(dot)) as fmaxf, bf16 of the product, the sum over heads, a last bf16 rounding.
// CHECK-LABEL: func.func @scores(
// CHECK: call @dsa_cpu_fail(%c21_i32) : (i32) -> ()
// (code 21, IndexerScoresKeysRows: dsa.indexer_scores: operand 'keys' has fewer rows than width = (start_pos + s) // ratio")
// CHECK: gpu.launch_func @dsa_kernels::@dsa_indexer_scores
// CHECK: llvm.func @dsa_indexer_scores(
// CHECK: %[[PR:.+]] = llvm.fmul %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: llvm.fadd %{{.+}}, %[[PR]] : f32
// CHECK: %[[WS:.+]] = llvm.fmul %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: %[[WR:.+]] = llvm.call @dsa_round_bf16(%[[WS]]) : (f32) -> f32
// CHECK-NEXT: %[[DR:.+]] = llvm.call @dsa_round_bf16(%{{.+}}) : (f32) -> f32
// CHECK-NEXT: %[[RELU:.+]] = llvm.call @__nv_fmaxf(%[[DR]], %{{.+}}) : (f32, f32) -> f32
// CHECK-NEXT: %[[T:.+]] = llvm.fmul %[[RELU]], %[[WR]] : f32
// CHECK-NEXT: %[[TR:.+]] = llvm.call @dsa_round_bf16(%[[T]]) : (f32) -> f32
// CHECK-NEXT: llvm.fadd %{{.+}}, %[[TR]] : f32
// CHECK: llvm.fptrunc %{{.+}} : f32 to bf16
// CHECK-NOT: llvm.intr.fma
// CHECK: llvm.func @dsa_round_bf16(%arg0: f32) -> f32
// CHECK-NEXT: %[[B:.+]] = llvm.fptrunc %arg0 : f32 to bf16
// CHECK-NEXT: llvm.fpext %[[B]] : bf16 to f32
func.func @scores(%iq: tensor<?x2x32xbf16>, %w: tensor<?x2xbf16>, %k: tensor<?x32xbf16>, %sp: i64)
    -> tensor<?x?xbf16> {
  %s = dsa.indexer_scores %iq, %w, %k, %sp {ratio = 2 : i64, weight_scale = 1.250000e-01 : f32}
      : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x?xbf16>
  return %s : tensor<?x?xbf16>
}

// -----

// linear f32: one output per thread, dotF32's lanes (dsa_dot_f32) and combination, no rounding of the result.
// CHECK-LABEL: func.func @linear_f32(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_linear_f32
// CHECK: llvm.func @dsa_linear_f32(
// CHECK: %[[D:.+]] = llvm.call @dsa_dot_f32(
// CHECK: llvm.store %[[D]], %{{.+}} : f32, !llvm.ptr
// CHECK: llvm.func @dsa_dot_f32(
// CHECK-COUNT-8: llvm.call @dsa_prod_f32(
// CHECK-COUNT-8: llvm.fadd
// CHECK: llvm.call @dsa_combine_lanes(
// CHECK: llvm.func @dsa_prod_f32(
// CHECK: llvm.fmul %{{.+}}, %{{.+}} : f32
// CHECK-NOT: llvm.fptrunc
// CHECK: llvm.func @dsa_combine_lanes(
func.func @linear_f32(%x: tensor<?x9xf32>, %w: tensor<3x9xf32>) -> tensor<?x3xf32> {
  %y = dsa.linear %x, %w : (tensor<?x9xf32>, tensor<3x9xf32>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// select_candidate_blocks: block scores (max with the first NaN winning, the newest visible block pinned), the
// host top-k, the mask as i1 stores.
// CHECK-LABEL: func.func @cands(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_candidate_block_scores
// CHECK: call @dsa_cpu_topk_set(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_candidate_mask
// CHECK: llvm.func @dsa_candidate_block_scores(
// CHECK: llvm.fcmp "uno"
// CHECK: llvm.fcmp "olt"
// CHECK: llvm.call @dsa_compress_len(
// CHECK: llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr
// CHECK: llvm.func @dsa_compress_len(
// CHECK: llvm.udiv
// CHECK: llvm.func @dsa_candidate_mask(
// CHECK: llvm.fcmp "ogt"
// CHECK: llvm.store %{{.+}}, %{{.+}} : i1, !llvm.ptr
func.func @cands(%sc: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xi1> {
  %m = dsa.select_candidate_blocks %sc, %sp {ratio = 1 : i64, topk_blocks = 3 : i64, block_size = 2 : i64,
                                            tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?x?xbf16>, i64) -> tensor<?x?xi1>
  return %m : tensor<?x?xi1>
}

// -----

// indexer_topk: scores widened to f32 on the device, the host top-k, the picks mapped to attention rows as i32.
// CHECK-LABEL: func.func @topk(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_extf_bf16_f32
// CHECK: call @dsa_cpu_topk_set(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_topk_map
// CHECK: llvm.func @dsa_extf_bf16_f32(
// CHECK: llvm.fpext %{{.+}} : bf16 to f32
// CHECK: llvm.func @dsa_topk_map(
// CHECK: llvm.call @dsa_compress_len(
// CHECK: llvm.trunc %{{.+}} : i64 to i32
func.func @topk(%sc: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xi32> {
  %t = dsa.indexer_topk %sc, %sp {ratio = 2 : i64, index_topk = 6 : i64, window_size = 8 : i64,
                                  tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
  return %t : tensor<?x?xi32>
}

// -----

// cache_write, compress_visibility, apply_candidates: selects only (no arithmetic on the values).
// CHECK-LABEL: func.func @masks(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_cache_write
// CHECK: gpu.launch_func @dsa_kernels::@dsa_compress_visibility
// CHECK: gpu.launch_func @dsa_kernels::@dsa_apply_candidates
// CHECK: llvm.func @dsa_cache_write(
// CHECK-NOT: llvm.f{{add|mul|sub|div}}
// CHECK: llvm.func @dsa_compress_visibility(
// CHECK: llvm.mlir.constant(0xFF80 : bf16) : bf16
// CHECK-NOT: llvm.f{{add|mul|sub|div}}
// CHECK: llvm.func @dsa_apply_candidates(
// CHECK: llvm.load %{{.+}} : !llvm.ptr -> i1
// CHECK-NOT: llvm.f{{add|mul|sub|div}}
// CHECK: llvm.return
func.func @masks(%c: tensor<32x32xbf16>, %rows: tensor<?x32xbf16>, %sc: tensor<?x?xbf16>, %m: tensor<?x?xi1>,
                 %sp: i64) -> (tensor<32x32xbf16>, tensor<?x?xbf16>, tensor<?x?xbf16>) {
  %w = dsa.cache_write %c, %rows, %sp {ratio = 2 : i64} : (tensor<32x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<32x32xbf16>
  %v = dsa.compress_visibility %sc, %sp {ratio = 2 : i64} : (tensor<?x?xbf16>, i64) -> tensor<?x?xbf16>
  %a = dsa.apply_candidates %v, %m : (tensor<?x?xbf16>, tensor<?x?xi1>) -> tensor<?x?xbf16>
  return %w, %v, %a : tensor<32x32xbf16>, tensor<?x?xbf16>, tensor<?x?xbf16>
}
