// RUN: dsa-opt %S/Inputs/compressed-layers.mlir --dsa-gpu-host-pipeline | FileCheck %s

// dsa-to-gpu on the tiny golden's compressed roles (L2: ratio 2, kv + index source; L4: ratio 1, kv + index +
// candidate source; L5: ratio 1 index source using L4's candidates; L3: ratio 2 reader; geometry of
// attention-semantics.md section 1: hd 32, index heads 2 x 32, window 8, C = 64 / r cache rows, top-k 6, 3 candidate
// blocks of 2). Checked: the kernel sequence of sections 5-8, the step checks, the top-k SETS taken on the host
// (download f32 values, call the runtime's dsa_cpu_topk_set = torch's CPU tie order, check its status, upload the
// i64 picks, free the host copies), the slot republication as a select of buffers, the compressed rows as a view of
// the leading cache rows.

// CHECK: func.func private @dsa_cpu_topk_set(memref<?x?xf32>, i64, memref<?x?xi64>) -> i32 attributes {llvm.emit_c_interface}

// CHECK-LABEL: func.func @attention_L2(
// The compressor: f32 x, two f32 linears [s, 64] x [32, 64]^T, the pool (state update, then the completed groups
// from the step's rows in prefill or from the new state in decode), bf16 rows.
// CHECK: gpu.launch_func @dsa_kernels::@dsa_extf_bf16_f32
// CHECK: gpu.launch_func @dsa_kernels::@dsa_linear_f32 {{.*}} args({{.*}} : memref<?xf32>, {{.*}} : memref<?xf32>, {{.*}} : memref<?xf32>, %dim : index, %c32 : index, %c64 : index)
// CHECK: gpu.launch_func @dsa_kernels::@dsa_linear_f32
// CHECK: func.call @dsa_cpu_fail(%c13_i32) : (i32) -> ()
// (code 13, CompressPoolNegativeStart: dsa.compress_pool: operand 'start_pos' must be >= 0")
// CHECK: func.call @dsa_cpu_fail(%c14_i32) : (i32) -> ()
// (code 14, CompressPoolEmptyStep: dsa.compress_pool: operand 'kv' has no rows (an empty step)")
// CHECK: func.call @dsa_cpu_fail(%c15_i32) : (i32) -> ()
// (code 15, CompressPoolMultiTokenDecode: dsa.compress_pool: a step of several tokens (operand 'kv') at start_pos > 0)
// CHECK: %[[NKV:.*]] = gpu.alloc () : memref<2x32xf32>
// CHECK: %[[NSC:.*]] = gpu.alloc () : memref<2x32xf32>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_compress_state blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1)
// A decode completes a group when start_pos % 2 == 1 ((start_pos + 1) % r == 0 without the add that wraps).
// CHECK-NEXT: %[[REM:.*]] = arith.remui %arg1, %c2_i64 : i64
// CHECK-NEXT: arith.cmpi eq, %[[REM]], %c1_i64 : i64
// CHECK: %[[DEC:.*]] = arith.select %{{.*}}, %c1, %c0 : index
// CHECK-NEXT: %[[PRE:.*]] = arith.divui %dim, %c2 : index
// CHECK-NEXT: %[[G:.*]] = arith.select %{{.*}}, %[[PRE]], %[[DEC]] : index
// CHECK-NEXT: %[[POOLED:.*]] = gpu.alloc (%[[G]]) : memref<?x32xf32>
// CHECK: %[[SRCKV:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : memref<?xf32>
// CHECK: %[[SRCSC:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : memref<?xf32>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_compress_pool {{.*}} args(%[[SRCKV]] : memref<?xf32>, %[[SRCSC]] : memref<?xf32>, {{.*}} : memref<?xf32>, %[[G]] : index, %c2 : index, %c32 : index)
// CHECK: gpu.launch_func @dsa_kernels::@dsa_truncf_f32_bf16
// The index-key cache: fp4 e8m0 (block 32), written at start_pos // 2 of 32 rows, republished when a latent exists.
// CHECK: gpu.launch_func @dsa_kernels::@dsa_fp4_quant {{.*}} threads in (%c128, %c1, %c1) {{.*}}, %c32 : index, %c0_i32 : i32)
// CHECK: func.call @dsa_cpu_fail(%c17_i32) : (i32) -> ()
// (code 17, CacheWriteNegativeStart: dsa.cache_write: operand 'start_pos' must be >= 0")
// (first + g <= C checked as first <= C and g <= C - first: no wrap at a start_pos near INT64_MAX)
// CHECK: %[[ROOM:.*]] = arith.subi %c32, %{{.*}} : index
// CHECK: arith.cmpi ule, %{{.*}}, %[[ROOM]] : index
// CHECK: func.call @dsa_cpu_fail(%c18_i32) : (i32) -> ()
// (code 18, CacheWriteOverflow: dsa.cache_write: operand 'rows' overflows the cache capacity)
// CHECK: %[[IKC:.*]] = gpu.alloc () : memref<32x32xbf16>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_cache_write {{.*}}, %c32 : index, %c32 : index,
// CHECK: %[[IKCAST:.*]] = memref.cast %[[IKC]] : memref<32x32xbf16> to memref<?x32xbf16>
// CHECK: %[[SLOT:.*]] = arith.select %{{.*}}, %[[IKCAST]], %arg23 : memref<?x32xbf16>
// The indexer: q through fp4 e8m0, scores against the slot, visibility, the top-k on the host.
// CHECK: gpu.launch_func @dsa_kernels::@dsa_fp4_quant
// CHECK: func.call @dsa_cpu_fail(%c69_i32) : (i32) -> ()
// (code 69, IndexerScoresEndOverflow: start_pos > INT64_MAX - s)
// CHECK: func.call @dsa_cpu_fail(%c21_i32) : (i32) -> ()
// (code 21, IndexerScoresKeysRows: dsa.indexer_scores: operand 'keys' has fewer rows than width = (start_pos + s) // ratio")
// entry_keys (L2 is a published_slot kv source of ratio 2: a token closing no group reads the slot as it entered,
// %arg23): code 75 (a chunk at start_pos > 0 is refused: one keys buffer per launch), code 74 (its rows, when the
// step reads it), then the launch reads entry_keys when start_pos > 0 and (start_pos + 1) % 2 != 0, else the slot
// as selected above.
// CHECK: %[[KEYSF:.*]] = memref.collapse_shape %[[SLOT]]
// CHECK: func.call @dsa_cpu_fail(%c75_i32) : (i32) -> ()
// CHECK: %[[NEXT:.*]] = arith.addi %arg1, %c1_i64 : i64
// CHECK: %[[REM:.*]] = arith.remsi %[[NEXT]], %c2_i64 : i64
// CHECK: %[[OPEN:.*]] = arith.cmpi ne, %[[REM]], %c0_i64 : i64
// CHECK: %[[USE:.*]] = arith.andi %{{.*}}, %[[OPEN]] : i1
// CHECK: func.call @dsa_cpu_fail(%c74_i32) : (i32) -> ()
// CHECK: %[[ENTRYF:.*]] = memref.collapse_shape %arg23
// CHECK: %[[KEYS:.*]] = arith.select %[[USE]], %[[ENTRYF]], %[[KEYSF]] : memref<?xbf16>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_indexer_scores {{.*}} args(%{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %[[KEYS]] : memref<?xbf16>, {{.*}}, %cst{{.*}} : f32)
// visibility's width check (code 25) is gone: its scores are indexer_scores' new buffer of width
// (start_pos + s) // ratio, so after bufferization canonicalize proves it.
// CHECK-NOT: call @dsa_cpu_fail(%c25_i32)
// CHECK: gpu.launch_func @dsa_kernels::@dsa_compress_visibility {{.*}}, %arg1 : i64, %c2_i64 : i64)
// indexer_topk: its step checks (codes 31-33); its width check (code 34) is proved like visibility's.
// CHECK: call @dsa_cpu_fail(%c31_i32)
// CHECK-NOT: call @dsa_cpu_fail(%c34_i32)
// CHECK: %[[K:.*]] = arith.minui %{{.*}}, %c6 : index
// CHECK: gpu.launch_func @dsa_kernels::@dsa_extf_bf16_f32
// The device picks, then the round trip on the host.
// CHECK: %[[DP:.*]] = gpu.alloc (%{{.*}}, %[[K]]) : memref<?x?xi64>
// CHECK-NEXT: %[[K64:.*]] = arith.index_cast %[[K]] : index to i64
// CHECK-NEXT: %[[HV:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?xf32>
// CHECK-NEXT: gpu.memcpy %[[HV]], %{{.*}} : memref<?x?xf32>, memref<?x?xf32>
// CHECK-NEXT: %[[HP:.*]] = memref.alloc(%{{.*}}, %[[K]]) : memref<?x?xi64>
// CHECK-NEXT: %[[RC:.*]] = call @dsa_cpu_topk_set(%[[HV]], %[[K64]], %[[HP]]) : (memref<?x?xf32>, i64, memref<?x?xi64>) -> i32
// CHECK-NEXT: gpu.memcpy %[[DP]], %[[HP]] : memref<?x?xi64>, memref<?x?xi64>
// CHECK-NEXT: memref.dealloc %[[HV]] : memref<?x?xf32>
// CHECK-NEXT: memref.dealloc %[[HP]] : memref<?x?xi64>
// The status is checked once the host copies are freed (code 35, TopkRuntimeFailed: the host top-k, the runtime's
// dsa_cpu_topk_set, failed).
// CHECK-NEXT: %[[FAILED:.*]] = arith.cmpi ne, %[[RC]], %c0_i32 : i32
// CHECK-NEXT: scf.if %[[FAILED]] {
// CHECK-NEXT: func.call @dsa_cpu_fail(%c35_i32) : (i32) -> ()
// CHECK-NEXT: }
// offset: s in prefill, window_size 8 in decode.
// CHECK-NEXT: %[[OFF:.*]] = arith.select %{{.*}}, %{{.*}}, %c8_i64 : i64
// CHECK: gpu.launch_func @dsa_kernels::@dsa_topk_map {{.*}}, %arg1 : i64, %c2_i64 : i64, %[[OFF]] : i64)
// The compressed KV: fp4 e4m3 (block 16) into its own cache; attention reads the window rows ++ the leading
// (start_pos + s) // 2 cache rows, window indices ++ compressed indices.
// CHECK: gpu.launch_func @dsa_kernels::@dsa_fp4_quant {{.*}}, %c16 : index, %c1_i32 : i32)
// CHECK: %[[KVC:.*]] = gpu.alloc () : memref<32x32xbf16>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_cache_write
// CHECK: func.call @dsa_cpu_fail(%c64_i32) : (i32) -> ()
// (code 64, SliceRowsExceedSource: tensor.extract_slice: the slice has more rows than its source")
// CHECK: memref.subview %[[KVC]][0, 0] [%{{.*}}, 32] [1, 1] : memref<32x32xbf16> to memref<?x32xbf16, strided<[32, 1]>>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_concat_rows_bf16
// CHECK: func.call @dsa_cpu_fail(%c66_i32) : (i32) -> ()
// (code 66, ConcatRows: tensor.concat: the inputs' row counts differ")
// CHECK: gpu.launch_func @dsa_kernels::@dsa_concat_cols_i32
// CHECK: gpu.launch_func @dsa_kernels::@dsa_sparse_attn
// The returned state (new compressor states, both caches) and slots are not freed; the step's scratch is.
// CHECK-NOT: gpu.dealloc %[[NKV]]
// CHECK-NOT: gpu.dealloc %[[NSC]]
// CHECK-NOT: gpu.dealloc %[[IKC]]
// CHECK-NOT: gpu.dealloc %[[KVC]]
// CHECK: gpu.dealloc %[[POOLED]] : memref<?x32xf32>
// CHECK: gpu.dealloc %[[DP]] : memref<?x?xi64>
// CHECK: return %{{.*}}, %{{.*}}, %[[NKV]], %[[NSC]], %[[KVC]], %[[IKC]], %{{.*}}, %[[SLOT]], %{{.*}}, %arg25

// CHECK-LABEL: func.func @attention_L4(
// Ratio 1: no compressor state, no pooling; the candidate source's level-one top-k over blocks of 2.
// CHECK-NOT: dsa_compress_pool
// The width check (code 29) is proved (the scores are indexer_scores' new buffer), the step checks stay.
// CHECK-NOT: call @dsa_cpu_fail(%c29_i32)
// CHECK: call @dsa_cpu_fail(%c26_i32)
// CHECK: %[[NB:.*]] = arith.ceildivui %{{.*}}, %c2 : index
// CHECK: %[[KB:.*]] = arith.minui %[[NB]], %c3 : index
// CHECK: %[[BS:.*]] = gpu.alloc (%{{.*}}, %[[NB]]) : memref<?x?xf32>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_candidate_block_scores {{.*}}, %c2 : index, %arg1 : i64, %c1_i64 : i64)
// CHECK: %[[BHV:.*]] = memref.alloc(%{{.*}}, %[[NB]]) : memref<?x?xf32>
// CHECK-NEXT: gpu.memcpy %[[BHV]], %[[BS]] : memref<?x?xf32>, memref<?x?xf32>
// CHECK: call @dsa_cpu_topk_set(%[[BHV]], %{{.*}}, %{{.*}}) : (memref<?x?xf32>, i64, memref<?x?xi64>) -> i32
// CHECK: func.call @dsa_cpu_fail(%c35_i32) : (i32) -> ()
// (code 35, TopkRuntimeFailed: dsa.select_candidate_blocks: the host top-k (the runtime's dsa_cpu_topk_set, torch's CPU tie order) failed)
// CHECK: %[[MASK:.*]] = gpu.alloc (%{{.*}}, %{{.*}}) : memref<?x?xi1>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_candidate_mask {{.*}} : memref<?xi1>, {{.*}}, %[[NB]] : index, %[[KB]] : index, %c2 : index)
// CHECK: call @dsa_cpu_topk_set(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_topk_map {{.*}}, %arg1 : i64, %c1_i64 : i64,
// CHECK-NOT: gpu.dealloc %[[MASK]]
// CHECK: return {{.*}}, %[[MASK]] :

// CHECK-LABEL: func.func @attention_L5(
// A reader of L4's slots: its scores lose the blocks outside the published candidates; its compressed rows are the
// leading rows of the published compress_kv slot (an argument: viewed, not copied, not freed).
// CHECK: func.call @dsa_cpu_fail(%c30_i32) : (i32) -> ()
// (code 30, ApplyCandidatesMaskShape: dsa.apply_candidates: operand 'mask' has a row count that differs from the scores'")
// CHECK: func.call @dsa_cpu_fail(%c30_i32) : (i32) -> ()
// (code 30, ApplyCandidatesMaskShape: dsa.apply_candidates: operand 'mask' has a width that differs from the scores'")
// CHECK: gpu.launch_func @dsa_kernels::@dsa_apply_candidates {{.*}} args({{.*}} : memref<?xbf16>, {{.*}} : memref<?xi1>, {{.*}} : memref<?xbf16>, {{.*}} : index)
// CHECK: call @dsa_cpu_topk_set(
// CHECK: memref.subview %arg13[0, 0] [%{{.*}}, 32] [1, 1] : memref<?x32xbf16> to memref<?x32xbf16, strided<[32, 1]>>
// CHECK-NOT: gpu.dealloc %arg13
// CHECK: return

// CHECK-LABEL: func.func @attention_L3(
// A reader: no compressor, no indexer; the leading rows of L2's compress_kv slot and L2's top-k indices, both
// arguments, read in place and passed through.
// CHECK-NOT: call @dsa_cpu_topk_set
// CHECK: memref.subview %arg11[0, 0] [%{{.*}}, 32] [1, 1] : memref<?x32xbf16> to memref<?x32xbf16, strided<[32, 1]>>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_concat_rows_bf16
// CHECK: %[[TOPK:.*]] = memref.collapse_shape %arg13 {{\[}}[0, 1]] : memref<?x?xi32> into memref<?xi32>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_concat_cols_i32 {{.*}}, %[[TOPK]] : memref<?xi32>,
// CHECK: gpu.launch_func @dsa_kernels::@dsa_sparse_attn
// CHECK: return %{{.*}}, %{{.*}}, %arg11, %arg12, %arg13, %arg14 :

// The kernel module holds each kernel once.
// CHECK: gpu.module @dsa_kernels
// CHECK-DAG: gpu.func @dsa_compress_state(
// CHECK-DAG: gpu.func @dsa_compress_pool(
// CHECK-DAG: gpu.func @dsa_linear_f32(
// CHECK-DAG: gpu.func @dsa_fp4_quant(
// CHECK-DAG: gpu.func @dsa_cache_write(
// CHECK-DAG: gpu.func @dsa_indexer_scores(
// CHECK-DAG: gpu.func @dsa_compress_visibility(
// CHECK-DAG: gpu.func @dsa_candidate_block_scores(
// CHECK-DAG: gpu.func @dsa_candidate_mask(
// CHECK-DAG: gpu.func @dsa_topk_map(
// CHECK-DAG: gpu.func @dsa_apply_candidates(
// CHECK-DAG: func.func private @dsa_round_e2m1(
// CHECK-DAG: func.func private @dsa_compress_len(
