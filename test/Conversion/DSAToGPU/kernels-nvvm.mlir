// RUN: dsa-opt %s --split-input-file --dsa-gpu-host-pipeline --nvvm-attach-target="chip=sm_90" --convert-scf-to-cf \
// RUN:   --convert-gpu-to-nvvm --reconcile-unrealized-casts | FileCheck %s

// The NVVM IR of each window-only kernel family (compiler/lib/Conversion/DSAToGPU/Kernels.mlir): one function per family,
// lowered with dsa-to-gpu, then the device side to NVVM. The checks pin what the reference's rounding needs
// (attention-semantics.md section 2; the interpreter kernels' order of operations): separate fmul/fadd (never an
// fma), bf16 rounding by fptrunc, IEEE division and square root, the e4m3 round trip in integer arithmetic, f64
// libdevice exp/cos/sin, and dotF32's lane combination. Each gpu.module holds only the kernel it launches and the
// helpers that kernel calls.

// CHECK-LABEL: func.func @positions(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_positions
// CHECK: gpu.module @dsa_kernels [#nvvm.target<chip = "sm_90">]
// CHECK-NEXT: llvm.func @dsa_positions(%{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %[[START:.+]]: i64, %[[COUNT:.+]]: i64, %[[STRIDE:.+]]: i64) attributes {gpu.kernel, nvvm.kernel}
// CHECK: nvvm.read.ptx.sreg.ctaid.x
// CHECK: nvvm.read.ptx.sreg.ntid.x
// CHECK: nvvm.read.ptx.sreg.tid.x
// CHECK: llvm.icmp "ult" %{{.+}}, %[[COUNT]] : i64
// CHECK: %[[M:.+]] = llvm.mul %{{.+}}, %[[STRIDE]] : i64
// CHECK: llvm.add %[[START]], %[[M]] : i64
// CHECK-NOT: llvm.func
// CHECK: }
func.func @positions(%start: i64, %n: index) -> tensor<?xi64> {
  %p = dsa.positions %start, %n {stride = 2 : i64} : (i64, index) -> tensor<?xi64>
  return %p : tensor<?xi64>
}

// -----

// linear: the tiled GEMM. Two 16x32 f32 tiles in shared memory (address space 3), the eight lanes and the tail
// in private memory, barriers around the tile, one fmul + fadd per product, one bf16 rounding of the sum.
// CHECK-LABEL: func.func @linear(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_gemm_bf16
// CHECK: gpu.module @dsa_kernels [#nvvm.target<chip = "sm_90">]
// CHECK-DAG: llvm.mlir.global internal @__wg_dsa_gemm_bf16_0() {addr_space = 3 : i32} : !llvm.array<512 x f32>
// CHECK-DAG: llvm.mlir.global internal @__wg_dsa_gemm_bf16_1() {addr_space = 3 : i32} : !llvm.array<512 x f32>
// CHECK: llvm.func @dsa_gemm_bf16(
// CHECK-SAME: attributes {gpu.kernel, nvvm.kernel}
// CHECK: llvm.alloca %{{.+}} x f32
// CHECK: nvvm.read.ptx.sreg.ctaid.z
// CHECK: llvm.call @dsa_gemm_load(
// CHECK: llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: %[[A:.+]] = llvm.load %{{.+}} : !llvm.ptr<3> -> f32
// CHECK: %[[B:.+]] = llvm.load %{{.+}} : !llvm.ptr<3> -> f32
// CHECK: %[[P:.+]] = llvm.fmul %[[A]], %[[B]] : f32
// CHECK: llvm.fadd %{{.+}}, %[[P]] : f32
// CHECK: nvvm.barrier0
// CHECK: %[[S:.+]] = llvm.call @dsa_combine_lanes(
// CHECK: llvm.fptrunc %[[S]] : f32 to bf16
// CHECK-NOT: llvm.intr.fma
// CHECK: llvm.func @dsa_gemm_load(
// CHECK: llvm.fpext %{{.+}} : bf16 to f32
// dotF32's combination: ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)) + tail.
// CHECK: llvm.func @dsa_combine_lanes(%arg0: f32, %arg1: f32, %arg2: f32, %arg3: f32, %arg4: f32, %arg5: f32, %arg6: f32, %arg7: f32, %arg8: f32) -> f32
// CHECK-NEXT: %[[A04:.+]] = llvm.fadd %arg0, %arg4 : f32
// CHECK-NEXT: %[[A15:.+]] = llvm.fadd %arg1, %arg5 : f32
// CHECK-NEXT: %[[A26:.+]] = llvm.fadd %arg2, %arg6 : f32
// CHECK-NEXT: %[[A37:.+]] = llvm.fadd %arg3, %arg7 : f32
// CHECK-NEXT: %[[L:.+]] = llvm.fadd %[[A04]], %[[A15]] : f32
// CHECK-NEXT: %[[R:.+]] = llvm.fadd %[[A26]], %[[A37]] : f32
// CHECK-NEXT: %[[LR:.+]] = llvm.fadd %[[L]], %[[R]] : f32
// CHECK-NEXT: %[[T:.+]] = llvm.fadd %[[LR]], %arg8 : f32
// CHECK-NEXT: llvm.return %[[T]] : f32
// CHECK-NOT: llvm.intr.fma
func.func @linear(%x: tensor<?x64xbf16>, %w: tensor<16x64xbf16>) -> tensor<?x16xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
  return %y : tensor<?x16xbf16>
}

// -----

// rms_norm: thread 0 forms r = 1 / sqrt(dot / f32(D) + eps) with IEEE division and libdevice's round-to-nearest
// sqrt (not its approximate sqrtf), shares it through shared memory; y = bf16(w * (x * r)).
// CHECK-LABEL: func.func @rms_norm(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_rms_norm_bf16
// CHECK: llvm.mlir.global internal @__wg_dsa_rms_norm_bf16_0() {addr_space = 3 : i32} : !llvm.array<1 x f32>
// CHECK: llvm.func @dsa_rms_norm_bf16(
// CHECK-SAME: %[[EPS:arg[0-9]+]]: f32) attributes {gpu.kernel, nvvm.kernel}
// CHECK: %[[SS:.+]] = llvm.call @dsa_dot_bf16(
// CHECK: %[[DF:.+]] = llvm.sitofp %{{.+}} : i64 to f32
// CHECK: %[[MEAN:.+]] = llvm.fdiv %[[SS]], %[[DF]] : f32
// CHECK: %[[ME:.+]] = llvm.fadd %[[MEAN]], %[[EPS]] : f32
// CHECK: %[[SQ:.+]] = llvm.call @__nv_fsqrt_rn(%[[ME]]) : (f32) -> f32
// CHECK: %[[R:.+]] = llvm.fdiv %{{.+}}, %[[SQ]] : f32
// CHECK: llvm.store %[[R]], %{{.+}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: %[[RV:.+]] = llvm.load %{{.+}} : !llvm.ptr<3> -> f32
// CHECK: %[[XF:.+]] = llvm.fpext %{{.+}} : bf16 to f32
// CHECK: %[[WF:.+]] = llvm.fpext %{{.+}} : bf16 to f32
// CHECK: %[[XR:.+]] = llvm.fmul %[[XF]], %[[RV]] : f32
// CHECK: %[[V:.+]] = llvm.fmul %[[WF]], %[[XR]] : f32
// CHECK: llvm.fptrunc %[[V]] : f32 to bf16
// CHECK: llvm.func @dsa_dot_bf16(
// CHECK: llvm.func @__nv_fsqrt_rn(f32) -> f32
// CHECK-NOT: llvm.intr.fma
func.func @rms_norm(%x: tensor<?x32xbf16>, %w: tensor<32xbf16>) -> tensor<?x32xbf16> {
  %y = dsa.rms_norm %x, %w {eps = 9.99999968E-21 : f32} : (tensor<?x32xbf16>, tensor<32xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// -----

// apply_rope: a = f32(pos) * f[k] in f32; cos and sin in f64 (libdevice) rounded to f32; sin negated for the
// inverse; even element x0*c - x1*sn, odd element x0*sn + x1*c, each rounded to bf16.
// CHECK-LABEL: func.func @rope(
// CHECK: memref.get_global @__dsa_rope_freqs_0 : memref<4xf32>
// CHECK: gpu.launch_func @dsa_kernels::@dsa_apply_rope
// CHECK-SAME: %c1_i32 : i32)
// CHECK: llvm.func @dsa_apply_rope(
// CHECK-SAME: %[[INV:arg[0-9]+]]: i32) attributes {gpu.kernel, nvvm.kernel}
// CHECK: %[[P:.+]] = llvm.sitofp %{{.+}} : i64 to f32
// CHECK: %[[F:.+]] = llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK: %[[A:.+]] = llvm.fmul %[[P]], %[[F]] : f32
// CHECK: %[[AD:.+]] = llvm.fpext %[[A]] : f32 to f64
// CHECK: %[[CD:.+]] = llvm.call @__nv_cos(%[[AD]]) : (f64) -> f64
// CHECK: %[[SD:.+]] = llvm.call @__nv_sin(%[[AD]]) : (f64) -> f64
// CHECK: %[[C:.+]] = llvm.fptrunc %[[CD]] : f64 to f32
// CHECK: %[[SN0:.+]] = llvm.fptrunc %[[SD]] : f64 to f32
// CHECK: %[[ISINV:.+]] = llvm.icmp "ne" %[[INV]], %{{.+}} : i32
// CHECK: %[[NSN:.+]] = llvm.fneg %[[SN0]] : f32
// CHECK: %[[SN:.+]] = llvm.select %[[ISINV]], %[[NSN]], %[[SN0]] : i1, f32
// CHECK-DAG: llvm.fmul %{{.+}}, %[[SN]] : f32
// CHECK-DAG: llvm.fmul %{{.+}}, %[[C]] : f32
// CHECK-DAG: llvm.fadd
// CHECK-DAG: llvm.fsub
// CHECK: llvm.fptrunc %{{.+}} : f32 to bf16
// CHECK-NOT: llvm.intr.fma
func.func @rope(%x: tensor<?x4x32xbf16>, %p: tensor<?xi64>) -> tensor<?x4x32xbf16> {
  %y = dsa.apply_rope %x, %p {inverse, rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>}
      : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
  return %y : tensor<?x4x32xbf16>
}

// -----

// act_quant_fp8: amax with NaN tracking and the 1e-4 floor, an IEEE division by 448, pow2_ceil and the e4m3 round
// trip as integer bit operations on the f32 pattern (no fp8 type anywhere), the product rounded to bf16.
// The constants are E4M3.h's: 0x43E00000 = 448 (1138753536), 0x3C800000 = 2^-6 (1015021568),
// 0x3A800000 = 2^-10 (981467136), the RNE bias 0x7FFFF (524287), the exponent rebias 120 << 3 = 960.
// CHECK-LABEL: func.func @act_quant(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_act_quant_fp8
// CHECK: llvm.func @dsa_act_quant_fp8(
// CHECK-SAME: attributes {gpu.kernel, nvvm.kernel}
// CHECK: llvm.call @__nv_fabsf(
// CHECK: llvm.fcmp "uno"
// CHECK: %[[Q:.+]] = llvm.fdiv %{{.+}}, %{{.+}} : f32
// CHECK: %[[S:.+]] = llvm.call @dsa_pow2_ceil(%[[Q]]) : (f32) -> f32
// CHECK: %[[U:.+]] = llvm.fdiv %{{.+}}, %[[S]] : f32
// CHECK: llvm.fcmp "ogt" %[[U]]
// CHECK: llvm.fcmp "olt" %[[U]]
// CHECK: %[[E:.+]] = llvm.call @dsa_round_e4m3(%{{.+}}) : (f32) -> f32
// CHECK: %[[RS:.+]] = llvm.fmul %[[E]], %[[S]] : f32
// CHECK: llvm.fptrunc %[[RS]] : f32 to bf16
// CHECK-DAG: llvm.mlir.constant(1138753536 : i32)
// CHECK-DAG: llvm.mlir.constant(1015021568 : i32)
// CHECK-DAG: llvm.mlir.constant(981467136 : i32)
// CHECK-DAG: llvm.mlir.constant(524287 : i32)
// CHECK-DAG: llvm.mlir.constant(960 : i32)
// CHECK-DAG: llvm.bitcast %arg0 : f32 to i32
// CHECK-DAG: llvm.func @dsa_round_e4m3(%arg0: f32) -> f32
// CHECK-DAG: llvm.func @dsa_pow2_ceil(%arg0: f32) -> f32
// CHECK-NOT: f8E4M3FN
func.func @act_quant(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %y = dsa.act_quant_fp8 %x : (tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// ring_update and window_indices: integer index arithmetic only (modular slots, the -1 fill).
// CHECK-LABEL: func.func @ring(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_ring_update
// CHECK: gpu.launch_func @dsa_kernels::@dsa_window_indices
// CHECK: llvm.func @dsa_ring_update(
// CHECK-SAME: %[[START:arg[0-9]+]]: i64) attributes {gpu.kernel, nvvm.kernel}
// CHECK: %[[P0:.+]] = llvm.add %[[START]], %{{.+}} : i64
// CHECK: llvm.urem %[[P0]], %{{.+}} : i64
// CHECK: llvm.icmp "ult"
// CHECK: llvm.load %{{.+}} : !llvm.ptr -> bf16
// CHECK: llvm.func @dsa_window_indices(
// CHECK-SAME: %arg4: i64, %arg5: i64, %arg6: i64, %arg7: i64, %arg8: i64) attributes {gpu.kernel, nvvm.kernel}
// CHECK: llvm.urem %arg5, %{{.+}} : i64
// CHECK: llvm.icmp "sgt" %{{.+}}, %arg5 : i64
// CHECK: llvm.icmp "eq" %arg5, %{{.+}} : i64
// CHECK: llvm.trunc %{{.+}} : i64 to i32
// CHECK-NOT: llvm.fadd
// CHECK-NOT: llvm.func @dsa_dot_bf16
func.func @ring(%r: tensor<8x32xbf16>, %kv: tensor<?x32xbf16>, %sp: i64, %n: index)
    -> (tensor<8x32xbf16>, tensor<?x?xi32>) {
  %r1 = dsa.ring_update %r, %kv, %sp : (tensor<8x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<8x32xbf16>
  %i = dsa.window_indices %sp, %n {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
  return %r1, %i : tensor<8x32xbf16>, tensor<?x?xi32>
}

// -----

// sparse_attn: the scores z = dot * scale, thread 0's max and denominator in j order, p_j = exp(z_j - m) / den,
// the weighted sum rounded to bf16; exp is f64 libdevice rounded to f32; three barriers between the phases.
// CHECK-LABEL: func.func @sparse(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_sparse_attn
// CHECK: llvm.mlir.global internal @__wg_dsa_sparse_attn_0() {addr_space = 3 : i32} : !llvm.array<3 x f32>
// CHECK: llvm.func @dsa_sparse_attn(
// CHECK-SAME: %[[SCALE:arg[0-9]+]]: f32) attributes {gpu.kernel, nvvm.kernel}
// CHECK: %[[DOT:.+]] = llvm.call @dsa_dot_bf16(
// CHECK: llvm.fmul %[[DOT]], %[[SCALE]] : f32
// CHECK: nvvm.barrier0
// CHECK: llvm.fcmp "olt"
// CHECK: llvm.call @dsa_exp(
// CHECK: nvvm.barrier0
// CHECK: %[[EZ:.+]] = llvm.call @dsa_exp(
// CHECK: llvm.fdiv %[[EZ]], %{{.+}} : f32
// CHECK: nvvm.barrier0
// CHECK: %[[PK:.+]] = llvm.fmul %{{.+}}, %{{.+}} : f32
// CHECK: llvm.fadd %{{.+}}, %[[PK]] : f32
// CHECK: llvm.fptrunc %{{.+}} : f32 to bf16
// CHECK: llvm.func @dsa_exp(%arg0: f32) -> f32
// CHECK-NEXT: %[[D:.+]] = llvm.fpext %arg0 : f32 to f64
// CHECK-NEXT: %[[E:.+]] = llvm.call @__nv_exp(%[[D]]) : (f64) -> f64
// CHECK-NEXT: %[[R:.+]] = llvm.fptrunc %[[E]] : f64 to f32
// CHECK-NOT: llvm.intr.fma
func.func @sparse(%q: tensor<?x4x32xbf16>, %kv: tensor<?x32xbf16>, %i: tensor<?x?xi32>, %s: tensor<4xf32>)
    -> tensor<?x4x32xbf16> {
  %o = dsa.sparse_attn %q, %kv, %i, %s {scale = 0.176776692 : f32}
      : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
  return %o : tensor<?x4x32xbf16>
}

// -----

// grouped_output: the GEMM kernel batched over the groups (grid z = 2).
// CHECK-LABEL: func.func @grouped(
// CHECK: gpu.launch_func @dsa_kernels::@dsa_gemm_bf16 blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads
// CHECK: llvm.func @dsa_gemm_bf16(
// CHECK: nvvm.read.ptx.sreg.ctaid.z
func.func @grouped(%o: tensor<?x4x32xbf16>, %w: tensor<32x64xbf16>) -> tensor<?x32xbf16> {
  %og = dsa.grouped_output %o, %w {groups = 2 : i64} : (tensor<?x4x32xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %og : tensor<?x32xbf16>
}
