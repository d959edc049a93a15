// RUN: dsa-opt %S/Inputs/window-layer.mlir --dsa-gpu-host-pipeline | FileCheck %s

// dsa-to-gpu on one window-only layer (L0 of the tiny golden: dim 64, 4 heads of 32, rope 8, q_lora 16, 2 output
// groups of rank 16, window 8): host code on memrefs launching the kernel library, in the order of the
// decomposition (attention-semantics.md sections 3, 4, 10, 11). The expected sizes below are the layer's, worked
// out by hand from its shapes.

// The RoPE table f[k] = 1 / 10000^(2k/8), k < 4, computed at compile time: 1, 1/10, 1/100, 1/1000 as f32
// (1/100 = 0.00999999977 and 1/1000 = 1.000000e-03 are the f32 nearest to those fractions).
// CHECK: memref.global "private" constant @__dsa_rope_freqs_0 : memref<4xf32> =
// CHECK-SAME: dense<[1.000000e+00, 1.000000e-01, 0.00999999977, 1.000000e-03]>

// Tensors become memrefs of the same shape.
// CHECK-LABEL: func.func @layer0(
// CHECK-SAME: %[[X:[^:]+]]: memref<?x64xbf16>, %[[SP:[^:]+]]: i64, %[[RING:[^:]+]]: memref<8x32xbf16>,
// CHECK-SAME: %[[SINK:[^:]+]]: memref<4xf32>, %{{[^:]+}}: memref<16x64xbf16>, %{{[^:]+}}: memref<16xbf16>,
// CHECK-SAME: %{{[^:]+}}: memref<128x16xbf16>, %{{[^:]+}}: memref<32x64xbf16>, %{{[^:]+}}: memref<32xbf16>,
// CHECK-SAME: %{{[^:]+}}: memref<32x64xbf16>, %{{[^:]+}}: memref<64x32xbf16>) -> (memref<?x64xbf16>, memref<8x32xbf16>)
// CHECK: %[[S:.+]] = memref.dim %[[X]], %c0 : memref<?x64xbf16>

// Positions: start_pos >= 0 is checked at run time; one thread per token in blocks of 256.
// CHECK: func.call @dsa_cpu_fail(%c1_i32) : (i32) -> ()
// (code 1, PositionsNegativeStart: dsa.positions: operand 'start' must be >= 0")
// CHECK: %[[POS:.+]] = gpu.alloc (%[[S]]) : memref<?xi64>
// start + (count - 1) * stride must fit int64 (code 68: count - 1 <= (INT64_MAX - start) / stride, unsigned; the
// division by stride 1 folds).
// CHECK: %[[ROOM:.+]] = arith.subi %c9223372036854775807_i64, %[[SP]] : i64
// CHECK: arith.cmpi ule, %{{.*}}, %[[ROOM]] : i64
// CHECK: func.call @dsa_cpu_fail(%c68_i32) : (i32) -> ()
// CHECK: scf.if
// CHECK-NEXT: gpu.launch_func @dsa_kernels::@dsa_positions blocks in (%{{.+}}, %c1, %c1) threads in (%c256, %c1, %c1)
// CHECK-SAME: args(%[[POS]] : memref<?xi64>, %[[SP]] : i64, %[[S]] : index, %c1_i64 : i64)

// Section 3. x @ wq_a^T: M = s, N = 16, K = 64 (ldx = 64, ldy = 16), 16x16 tiles.
// CHECK: %[[QA:.+]] = gpu.alloc (%[[S]]) : memref<?x16xbf16>
// CHECK: %[[XF:.+]] = memref.collapse_shape %[[X]] {{\[}}[0, 1]] : memref<?x64xbf16> into memref<?xbf16>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_gemm_bf16 blocks in (%c1, %{{.+}}, %c1) threads in (%c16, %c16, %c1)
// CHECK-SAME: args(%[[XF]] : memref<?xbf16>, %{{.+}} : memref<?xbf16>, %{{.+}} : memref<?xbf16>,
// CHECK-SAME: %[[S]] : index, %c16 : index, %c64 : index, %c64 : index, %c16 : index, %c0 : index, %c0 : index, %c0 : index)
// rms_norm over D = 16, one block per row, eps = 1e-20 as f32.
// CHECK: gpu.launch_func @dsa_kernels::@dsa_rms_norm_bf16 blocks in (%[[S]], %c1, %c1) threads in (%c256, %c1, %c1)
// CHECK-SAME: %[[S]] : index, %c16 : index, %{{.+}} : f32)
// qr @ wq_b^T: N = 128 (8 column tiles), K = 16.
// CHECK: gpu.launch_func @dsa_kernels::@dsa_gemm_bf16 blocks in (%c8, %{{.+}}, %c1)
// CHECK-SAME: %[[S]] : index, %c128 : index, %c16 : index, %c16 : index, %c128 : index,
// CHECK: memref.expand_shape %{{.+}} {{\[}}[0], [1, 2]] output_shape [%[[S]], 4, 32] : memref<?x128xbf16> into memref<?x4x32xbf16>
// The table is copied to the device once per function.
// CHECK: %[[HT:.+]] = memref.get_global @__dsa_rope_freqs_0 : memref<4xf32>
// CHECK: %[[DT:.+]] = gpu.alloc () : memref<4xf32>
// CHECK: gpu.memcpy %[[DT]], %[[HT]] : memref<4xf32>, memref<4xf32>
// CHECK: func.call @dsa_cpu_fail(%c2_i32) : (i32) -> ()
// (code 2, RopePositionsLength: dsa.apply_rope: operand 'positions' has a length that differs from x's row count")
// RoPE on q: 4 rows per token of hd 32, rope_dim 8, forward (inverse = 0).
// CHECK: %[[Q:.+]] = gpu.alloc (%{{.+}}) : memref<?x4x32xbf16>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_apply_rope
// CHECK-SAME: %[[POS]] : memref<?xi64>, %{{.+}} : memref<?xf32>, %{{.+}} : memref<?xbf16>, %{{.+}} : index, %c4 : index, %c32 : index, %c8 : index, %c0_i32 : i32)

// Section 4. kv = act_quant_fp8(apply_rope(rms_norm(x @ wkv^T))): N = 32, D = 32, one row per token, then
// s*32/32 blocks of 32.
// CHECK: gpu.launch_func @dsa_kernels::@dsa_gemm_bf16 blocks in (%c2,
// CHECK-SAME: %[[S]] : index, %c32 : index, %c64 : index, %c64 : index, %c32 : index,
// CHECK: gpu.launch_func @dsa_kernels::@dsa_rms_norm_bf16
// CHECK-SAME: %c32 : index, %{{.+}} : f32)
// CHECK-NOT: gpu.memcpy
// CHECK: gpu.launch_func @dsa_kernels::@dsa_apply_rope
// CHECK-SAME: %c1 : index, %c32 : index, %c8 : index, %c0_i32 : i32)
// CHECK: %[[KV:.+]] = gpu.alloc (%[[S]]) : memref<?x32xbf16>
// CHECK: %[[KVF:.+]] = memref.collapse_shape %[[KV]]
// CHECK: gpu.launch_func @dsa_kernels::@dsa_act_quant_fp8 blocks in (%{{.+}}, %c1, %c1) threads in (%c128, %c1, %c1)
// CHECK-SAME: %c32 : index)
// The new ring is a new buffer: W = 8 slots of 32 = 256 elements, one block.
// CHECK: func.call @dsa_cpu_fail(%c4_i32) : (i32) -> ()
// (code 4, RingUpdateNegativeStart: dsa.ring_update: operand 'start_pos' must be >= 0")
// CHECK: %[[NRING:.+]] = gpu.alloc () : memref<8x32xbf16>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_ring_update blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1)
// CHECK-SAME: %[[KVF]] : memref<?xbf16>, %{{.+}} : memref<?xbf16>, %c8 : index, %c32 : index, %[[S]] : index, %[[SP]] : i64)
// window_kv picks the chunk's rows in prefill, the new ring in decode, on the host.
// CHECK: %[[PREFILL:.+]] = arith.cmpi eq, %[[SP]], %c0_i64 : i64
// CHECK: func.call @dsa_cpu_fail(%c6_i32) : (i32) -> ()
// (code 6, WindowKvMultiTokenDecode: dsa.window_kv: a step of several tokens at start_pos > 0 (operand 'kv'): multi-token steps at start_pos > 0 are split into decode steps by the runtime")
// CHECK: %[[RINGD:.+]] = memref.cast %[[NRING]] : memref<8x32xbf16> to memref<?x32xbf16>
// CHECK: %[[ROWS:.+]] = arith.select %[[PREFILL]], %[[KV]], %[[RINGD]] : memref<?x32xbf16>
// Window indices: width min(s, 8) in prefill, 8 in decode.
// CHECK: %[[MIN:.+]] = arith.minui %[[S]], %c8 : index
// CHECK: %[[WIDTH:.+]] = arith.select %[[PREFILL]], %[[MIN]], %c8 : index
// CHECK: %[[IDX:.+]] = gpu.alloc (%[[S]], %[[WIDTH]]) : memref<?x?xi32>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_window_indices
// CHECK-SAME: %[[SP]] : i64, %[[S]] : index, %c8 : index, %[[WIDTH]] : index)

// Section 10: one workgroup per (token, head), an f32 scratch of s*4*width scores, scale = 32^-0.5.
// CHECK: %[[N:.+]] = memref.dim %[[ROWS]], %c0 : memref<?x32xbf16>
// CHECK: %[[SH:.+]] = arith.muli %{{.+}}, %c4 : index
// CHECK: %[[SHK:.+]] = arith.muli %[[SH]], %[[WIDTH]] : index
// CHECK: %[[SCR:.+]] = arith.maxui %[[SHK]], %c1 : index
// CHECK: %[[SCRATCH:.+]] = gpu.alloc (%[[SCR]]) : memref<?xf32>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_sparse_attn blocks in (%[[SH]], %c1, %c1) threads in (%c128, %c1, %c1)
// CHECK-SAME: %[[SCRATCH]] : memref<?xf32>, %{{.+}} : index, %c4 : index, %c32 : index, %[[N]] : index, %[[WIDTH]] : index, %{{.+}} : f32)

// Section 11: inverse RoPE, then the grouped wo_a as a GEMM batched over the 2 groups: M = s, N = R = 16,
// K = 4*32/2 = 64, ldx = 128, ldy = 2*16 = 32, per-group offsets 64 (x), 16*64 = 1024 (wo_a), 16 (output).
// CHECK: gpu.launch_func @dsa_kernels::@dsa_apply_rope
// CHECK-SAME: %c1_i32 : i32)
// CHECK: gpu.launch_func @dsa_kernels::@dsa_gemm_bf16 blocks in (%c1, %{{.+}}, %c2) threads in (%c16, %c16, %c1)
// CHECK-SAME: %c16 : index, %c64 : index, %c128 : index, %c32 : index, %c64 : index, %c1024 : index, %c16 : index)
// CHECK: %[[OUT:.+]] = gpu.alloc (%{{.+}}) : memref<?x64xbf16>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_gemm_bf16 blocks in (%c4,
// CHECK-SAME: %c64 : index, %c32 : index, %c32 : index, %c64 : index, %c0 : index, %c0 : index, %c0 : index)

// Every intermediate (15 of the 17 buffers) is freed; the two results are not.
// CHECK-COUNT-15: gpu.dealloc
// CHECK-NOT: gpu.dealloc
// CHECK: return %[[OUT]], %[[NRING]] : memref<?x64xbf16>, memref<8x32xbf16>

// The kernels launched, once each, in one gpu.module.
// CHECK: gpu.module @dsa_kernels
// CHECK-DAG: gpu.func @dsa_positions(
// CHECK-DAG: gpu.func @dsa_gemm_bf16(
// CHECK-DAG: gpu.func @dsa_rms_norm_bf16(
// CHECK-DAG: gpu.func @dsa_apply_rope(
// CHECK-DAG: gpu.func @dsa_act_quant_fp8(
// CHECK-DAG: gpu.func @dsa_ring_update(
// CHECK-DAG: gpu.func @dsa_window_indices(
// CHECK-DAG: gpu.func @dsa_sparse_attn(
