// REQUIRES: mlir-runner
// RUN: %python %S/Inputs/kernels-on-cpu.py %S/../../../compiler/lib/Conversion/DSAToGPU/Kernels.mlir %s > %t.mlir
// RUN: mlir-opt %t.mlir --arith-expand="include-bf16=true" --convert-scf-to-cf --convert-math-to-llvm \
// RUN:   --expand-strided-metadata --lower-affine --finalize-memref-to-llvm --convert-func-to-llvm \
// RUN:   --convert-arith-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN: | mlir-runner -e main --entry-point-result=void --mattr=-avx512bf16,-avxneconvert --shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s
// The JIT is told the host has no bf16 conversion instructions (-avx512bf16, -avxneconvert): a bf16 value the
// kernels carry across blocks is then rounded by the same code on every x86-64 host, never by vcvtneps2bf16 (which
// flushes denormals).

// The GPU kernel library run on the CPU (Inputs/kernels-on-cpu.py) on hand-worked cases from
// attention-semantics.md: the barrier-free kernels (positions, apply_rope, act_quant_fp8, ring_update,
// window_indices) once per global thread id, rms_norm and sparse_attn as one-thread blocks, and the e4m3 /
// pow2_ceil helpers. The 16x16 GEMM (linear, grouped_output) is left out here: every kernel, the GEMM included, runs at
// its real block and grid sizes on the host emulator against the reference kernels (test/Runtime/Cuda/
// CudaKernelsOnCpuTest.cpp), and on a GPU in test/Runtime/Cuda/CudaKernelsTest.cpp. (On the CPU, bf16 rounding is arith-expand's RNE,
// exp/cos/sin are libm's f64 functions; on the GPU cvt.rn.bf16.f32 and libdevice.)

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefI32(memref<*xi32>)
func.func private @printMemrefI64(memref<*xi64>)

func.func @print_bf16(%m: memref<?xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %m, %c0 : memref<?xbf16>
  %f = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %m[%i] : memref<?xbf16>
    %w = arith.extf %v : bf16 to f32
    memref.store %w, %f[%i] : memref<?xf32>
  }
  %u = memref.cast %f : memref<?xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %f : memref<?xf32>
  return
}

func.func @bf16_buffer(%vals: memref<?xf32>) -> memref<?xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %vals, %c0 : memref<?xf32>
  %b = memref.alloc(%n) : memref<?xbf16>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %vals[%i] : memref<?xf32>
    %w = arith.truncf %v : f32 to bf16
    memref.store %w, %b[%i] : memref<?xbf16>
  }
  return %b : memref<?xbf16>
}

memref.global "private" constant @aq_in : memref<16xf32> =
    dense<[3.0, 1.52587890625E-5, 2.288818359375E-5, 3.814697265625E-6, 10.0, 1.0625, -0.0078125, 0.0,
           0.0, 0.0, 0.0, 0.0, 1.0, -2.0, 3.0, 0.5]>
memref.global "private" constant @e4m3_in : memref<16xf32> =
    dense<[448.0, 1000.0, 0.001953125, 0.0029296875, 4.8828125E-4, 9.765625E-4, 1.0625, 1.1875,
           17.0, 19.0, 0.0146484375, -0.0, -3.5, 0x7FC00000, 0xFF800000, 1.0E-30]>
memref.global "private" constant @pow2_in : memref<8xf32> =
    dense<[1.0, 1.5, 3.0, 9.5367431640625E-7, 1.00000012, 2.5521178E+38, 0.0, 0x7FC00000]>
memref.global "private" constant @ring_in : memref<4xf32> = dense<[0.0, 0.0, 0.0, 0.0]>
memref.global "private" constant @tokens : memref<6xf32> = dense<[10.0, 11.0, 12.0, 13.0, 14.0, 15.0]>
memref.global "private" constant @rope_in : memref<8xf32> = dense<[7.0, -3.0, 1.0, 0.0, 7.0, -3.0, 1.0, 0.0]>
memref.global "private" constant @rope_pos : memref<2xi64> = dense<[0, 1]>
memref.global "private" constant @rope_freqs : memref<1xf32> = dense<[1.0]>
memref.global "private" constant @rms_x : memref<11xf32> = dense<[3.0, 4.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]>
memref.global "private" constant @rms_w2 : memref<2xf32> = dense<[1.0, 2.0]>
memref.global "private" constant @rms_w9 : memref<9xf32> = dense<[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0]>
memref.global "private" constant @sa_q : memref<12xf32> = dense<[1.0, 0.0, 0.0, 2.0, 1.0, 0.0, 0.0, 2.0, 1.0, 0.0, 0.0, 2.0]>
memref.global "private" constant @sa_kv : memref<4xf32> = dense<[1.0, 0.0, 0.0, 1.0]>
memref.global "private" constant @sa_idx : memref<6xi32> = dense<[0, 1, -1, -1, 5, 0]>
memref.global "private" constant @sa_sink : memref<2xf32> = dense<[0.0, 0xFF800000]>

func.func @global_bf16(%g: memref<?xf32>) -> memref<?xbf16> {
  %b = func.call @bf16_buffer(%g) : (memref<?xf32>) -> memref<?xbf16>
  return %b : memref<?xbf16>
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %c12 = arith.constant 12 : index
  %c16 = arith.constant 16 : index

  // --- positions: start 5, stride 3, four tokens -> 5, 8, 11, 14.
  // CHECK-LABEL: sizes = [4]
  // CHECK-NEXT: [5,  8,  11,  14]
  %pos = memref.alloc(%c4) : memref<?xi64>
  %s5 = arith.constant 5 : i64
  %s3 = arith.constant 3 : i64
  scf.for %g = %c0 to %c4 step %c1 {
    func.call @dsa_positions(%g, %pos, %s5, %c4, %s3) : (index, memref<?xi64>, i64, index, i64) -> ()
  }
  %posu = memref.cast %pos : memref<?xi64> to memref<*xi64>
  func.call @printMemrefI64(%posu) : (memref<*xi64>) -> ()

  // --- act_quant_fp8, block 4 (the interpreter's hand-worked case, test/Interpreter/act_quant_fp8.mlir):
  // block [3, 2^-16, 1.5*2^-16, 2^-18]: s = 2^-7; x/s = 384, 2^-9, 1.5*2^-9 (tie -> even code 2 = 2^-8), 2^-11 (-> 0)
  //   -> [3, 2^-16, 2^-15, 0]; block [10, 1.0625, -2^-7, 0]: s = 2^-5, x/s = 320, 34 (tie 32/36 -> 32), -0.25, 0
  //   -> [10, 1, -0.0078125, 0]; a zero block stays 0; [1, -2, 3, 0.5] is exact.
  // CHECK-LABEL: sizes = [16]
  // CHECK-NEXT: [3,  1.52588e-05,  3.05176e-05,  0,  10,  1,  -0.0078125,  0,  0,  0,  0,  0,  1,  -2,  3,  0.5]
  %aqg = memref.get_global @aq_in : memref<16xf32>
  %aqd = memref.cast %aqg : memref<16xf32> to memref<?xf32>
  %aqx = func.call @bf16_buffer(%aqd) : (memref<?xf32>) -> memref<?xbf16>
  %aqy = memref.alloc(%c16) : memref<?xbf16>
  scf.for %g = %c0 to %c4 step %c1 {
    func.call @dsa_act_quant_fp8(%g, %aqx, %aqy, %c4, %c4) : (index, memref<?xbf16>, memref<?xbf16>, index, index) -> ()
  }
  func.call @print_bf16(%aqy) : (memref<?xbf16>) -> ()

  // --- the e4m3 round trip (E4M3.h): 448 -> 448; 1000 saturates to 448; 2^-9 (smallest subnormal) stays;
  // 1.5*2^-9 is a tie -> even code 2 = 2^-8; 2^-11 -> 0; 2^-10 (half the smallest subnormal, a tie) -> 0;
  // 1.0625 (tie 1 / 1.125) -> 1; 1.1875 (tie 1.125 / 1.25) -> 1.25; 17 (tie 16 / 18) -> 16; 19 (tie 18 / 20) -> 20;
  // 15*2^-10 (tie between subnormal 7*2^-9 and 2^-6) -> 2^-6; -0 keeps its sign; -3.5 exact; NaN stays NaN;
  // -inf saturates to -448; 1e-30 -> 0.
  // CHECK-LABEL: sizes = [16]
  // CHECK-NEXT: [448,  448,  0.00195312,  0.00390625,  0,  0,  1,  1.25,  16,  20,  0.015625,  -0,  -3.5,  nan,  -448,  0]
  %eg = memref.get_global @e4m3_in : memref<16xf32>
  %ef = memref.alloc() : memref<16xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %eg[%i] : memref<16xf32>
    %r = func.call @dsa_round_e4m3(%v) : (f32) -> f32
    memref.store %r, %ef[%i] : memref<16xf32>
  }
  %efu = memref.cast %ef : memref<16xf32> to memref<*xf32>
  func.call @printMemrefF32(%efu) : (memref<*xf32>) -> ()

  // --- pow2_ceil (E8M0.h): 1 -> 1, 1.5 -> 2, 3 -> 4, 2^-20 -> 2^-20, 1 + 2^-23 -> 2, 1.5 * 2^127 -> inf; 0 and NaN
  // come back unchanged.
  // CHECK-LABEL: sizes = [8]
  // CHECK-NEXT: [1,  2,  4,  9.53674e-07,  2,  inf,  0,  nan]
  %pg = memref.get_global @pow2_in : memref<8xf32>
  %pf = memref.alloc() : memref<8xf32>
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %pg[%i] : memref<8xf32>
    %r = func.call @dsa_pow2_ceil(%v) : (f32) -> f32
    memref.store %r, %pf[%i] : memref<8xf32>
  }
  %pfu = memref.cast %pf : memref<8xf32> to memref<*xf32>
  func.call @printMemrefF32(%pfu) : (memref<*xf32>) -> ()

  // --- ring_update, W = 4, rows of one element. A prefill of 6 tokens with values 10..15: token t goes to slot
  // t % 4 and the last 4 tokens win -> [14, 15, 12, 13]; a decode step at 6 with value 10 writes slot 2
  // -> [14, 15, 10, 13]; a 3-token step at 7 with values 10, 11, 12 (positions 7, 8, 9) writes slots 3, 0, 1
  // -> [11, 12, 10, 10].
  // CHECK-LABEL: sizes = [4]
  // CHECK-NEXT: [14,  15,  12,  13]
  // CHECK-LABEL: sizes = [4]
  // CHECK-NEXT: [14,  15,  10,  13]
  // CHECK-LABEL: sizes = [4]
  // CHECK-NEXT: [11,  12,  10,  10]
  %rg = memref.get_global @ring_in : memref<4xf32>
  %rgd = memref.cast %rg : memref<4xf32> to memref<?xf32>
  %ring0 = func.call @bf16_buffer(%rgd) : (memref<?xf32>) -> memref<?xbf16>
  %tg = memref.get_global @tokens : memref<6xf32>
  %tgd = memref.cast %tg : memref<6xf32> to memref<?xf32>
  %toks = func.call @bf16_buffer(%tgd) : (memref<?xf32>) -> memref<?xbf16>
  %ring1 = memref.alloc(%c4) : memref<?xbf16>
  %p0 = arith.constant 0 : i64
  scf.for %g = %c0 to %c4 step %c1 {
    func.call @dsa_ring_update(%g, %ring0, %toks, %ring1, %c4, %c1, %c6, %p0)
        : (index, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, index, index, index, i64) -> ()
  }
  func.call @print_bf16(%ring1) : (memref<?xbf16>) -> ()
  %ring2 = memref.alloc(%c4) : memref<?xbf16>
  %p6 = arith.constant 6 : i64
  scf.for %g = %c0 to %c4 step %c1 {
    func.call @dsa_ring_update(%g, %ring1, %toks, %ring2, %c4, %c1, %c1, %p6)
        : (index, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, index, index, index, i64) -> ()
  }
  func.call @print_bf16(%ring2) : (memref<?xbf16>) -> ()
  %ring3 = memref.alloc(%c4) : memref<?xbf16>
  %p7 = arith.constant 7 : i64
  scf.for %g = %c0 to %c4 step %c1 {
    func.call @dsa_ring_update(%g, %ring2, %toks, %ring3, %c4, %c1, %c3, %p7)
        : (index, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, index, index, index, i64) -> ()
  }
  func.call @print_bf16(%ring3) : (memref<?xbf16>) -> ()

  // --- window_indices, W = 8 (section 4): prefill of 12 (rows 0, 7, 8, 11 shown by the checks: row t reads
  // max(0, t-7) .. +7, -1 past t); decode at 12 reads slots 5, 6, 7, 0, 1, 2, 3, 4; decode at 3 after a prefill of 3
  // reads [-1, -1, -1, -1, 0, 1, 2, 3] (the spec's example).
  // CHECK-LABEL: sizes = [12, 8]
  // CHECK-NEXT: {{\[}}[0,   -1,   -1,   -1,   -1,   -1,   -1,   -1],
  // CHECK-NEXT: [0,   1,   -1,   -1,   -1,   -1,   -1,   -1],
  // CHECK-NEXT: [0,   1,   2,   -1,   -1,   -1,   -1,   -1],
  // CHECK-NEXT: [0,   1,   2,   3,   -1,   -1,   -1,   -1],
  // CHECK-NEXT: [0,   1,   2,   3,   4,   -1,   -1,   -1],
  // CHECK-NEXT: [0,   1,   2,   3,   4,   5,   -1,   -1],
  // CHECK-NEXT: [0,   1,   2,   3,   4,   5,   6,   -1],
  // CHECK-NEXT: [0,   1,   2,   3,   4,   5,   6,   7],
  // CHECK-NEXT: [1,   2,   3,   4,   5,   6,   7,   8],
  // CHECK-NEXT: [2,   3,   4,   5,   6,   7,   8,   9],
  // CHECK-NEXT: [3,   4,   5,   6,   7,   8,   9,   10],
  // CHECK-NEXT: [4,   5,   6,   7,   8,   9,   10,   11]]
  %wi = memref.alloc() : memref<12x8xi32>
  %wic = memref.collapse_shape %wi [[0, 1]] : memref<12x8xi32> into memref<96xi32>
  %wid = memref.cast %wic : memref<96xi32> to memref<?xi32>
  %c96 = arith.constant 96 : index
  scf.for %g = %c0 to %c96 step %c1 {
    func.call @dsa_window_indices(%g, %wid, %p0, %c12, %c8, %c8) : (index, memref<?xi32>, i64, index, index, index) -> ()
  }
  %wiu = memref.cast %wi : memref<12x8xi32> to memref<*xi32>
  func.call @printMemrefI32(%wiu) : (memref<*xi32>) -> ()
  // CHECK-LABEL: sizes = [8]
  // CHECK-NEXT: [5,  6,  7,  0,  1,  2,  3,  4]
  // CHECK-LABEL: sizes = [8]
  // CHECK-NEXT: [-1,  -1,  -1,  -1,  0,  1,  2,  3]
  %p12 = arith.constant 12 : i64
  %p3 = arith.constant 3 : i64
  %dec = memref.alloc(%c8) : memref<?xi32>
  scf.for %g = %c0 to %c8 step %c1 {
    func.call @dsa_window_indices(%g, %dec, %p12, %c1, %c8, %c8) : (index, memref<?xi32>, i64, index, index, index) -> ()
  }
  %decu = memref.cast %dec : memref<?xi32> to memref<*xi32>
  func.call @printMemrefI32(%decu) : (memref<*xi32>) -> ()
  scf.for %g = %c0 to %c8 step %c1 {
    func.call @dsa_window_indices(%g, %dec, %p3, %c1, %c8, %c8) : (index, memref<?xi32>, i64, index, index, index) -> ()
  }
  func.call @printMemrefI32(%decu) : (memref<*xi32>) -> ()

  // --- apply_rope, hd = 4, rope_dim 2 (the last pair), f[0] = 1, tokens at positions 0 and 1, row [7, -3, 1, 0]:
  // the head [7, -3] is copied; at position 0 the pair (1, 0) is unchanged; at position 1 it becomes
  // (cos 1, sin 1) = (0.540302306, 0.841470985) -> bf16 (0.5390625, 0.83984375), and (cos 1, -sin 1) for the
  // inverse rotation.
  // CHECK-LABEL: sizes = [8]
  // CHECK-NEXT: [7,  -3,  1,  0,  7,  -3,  0.539062,  0.839844]
  // CHECK-LABEL: sizes = [8]
  // CHECK-NEXT: [7,  -3,  1,  0,  7,  -3,  0.539062,  -0.839844]
  %rig = memref.get_global @rope_in : memref<8xf32>
  %rigd = memref.cast %rig : memref<8xf32> to memref<?xf32>
  %rx = func.call @bf16_buffer(%rigd) : (memref<?xf32>) -> memref<?xbf16>
  %rpg = memref.get_global @rope_pos : memref<2xi64>
  %rp = memref.cast %rpg : memref<2xi64> to memref<?xi64>
  %rfg = memref.get_global @rope_freqs : memref<1xf32>
  %rf = memref.cast %rfg : memref<1xf32> to memref<?xf32>
  %ry = memref.alloc(%c8) : memref<?xbf16>
  %i0 = arith.constant 0 : i32
  %i1 = arith.constant 1 : i32
  scf.for %g = %c0 to %c8 step %c1 {
    func.call @dsa_apply_rope(%g, %rx, %rp, %rf, %ry, %c2, %c1, %c4, %c2, %i0)
        : (index, memref<?xbf16>, memref<?xi64>, memref<?xf32>, memref<?xbf16>, index, index, index, index, i32) -> ()
  }
  func.call @print_bf16(%ry) : (memref<?xbf16>) -> ()
  scf.for %g = %c0 to %c8 step %c1 {
    func.call @dsa_apply_rope(%g, %rx, %rp, %rf, %ry, %c2, %c1, %c4, %c2, %i1)
        : (index, memref<?xbf16>, memref<?xi64>, memref<?xf32>, memref<?xbf16>, index, index, index, index, i32) -> ()
  }
  func.call @print_bf16(%ry) : (memref<?xbf16>) -> ()

  // --- rms_norm (one-thread blocks), eps 0. Row [3, 4] (dotF32's tail only), w = [1, 2]: mean = 12.5,
  // r = 1/sqrt(12.5) = 0.282842712; y = [bf16(3r), bf16(2 * 4r)] = [bf16(0.848528), bf16(2.262742)]
  // = [0.84765625, 2.265625]. Row of nine 2s (eight lanes and a one-element tail), w = [1 x 8, -1]: mean 4,
  // r = 0.5 -> [1 x 8, -1].
  // CHECK-LABEL: sizes = [2]
  // CHECK-NEXT: [0.847656,  2.26562]
  // CHECK-LABEL: sizes = [9]
  // CHECK-NEXT: [1,  1,  1,  1,  1,  1,  1,  1,  -1]
  %rxg = memref.get_global @rms_x : memref<11xf32>
  %rxd = memref.cast %rxg : memref<11xf32> to memref<?xf32>
  %rxb = func.call @bf16_buffer(%rxd) : (memref<?xf32>) -> memref<?xbf16>
  %rx2 = memref.subview %rxb[0] [2] [1] : memref<?xbf16> to memref<2xbf16, strided<[1]>>
  %rx9 = memref.subview %rxb[2] [9] [1] : memref<?xbf16> to memref<9xbf16, strided<[1], offset: 2>>
  %rx2c = memref.alloc(%c2) : memref<?xbf16>
  %c9 = arith.constant 9 : index
  %rx9c = memref.alloc(%c9) : memref<?xbf16>
  memref.copy %rx2, %rx2c : memref<2xbf16, strided<[1]>> to memref<?xbf16>
  memref.copy %rx9, %rx9c : memref<9xbf16, strided<[1], offset: 2>> to memref<?xbf16>
  %w2g = memref.get_global @rms_w2 : memref<2xf32>
  %w2d = memref.cast %w2g : memref<2xf32> to memref<?xf32>
  %w2 = func.call @bf16_buffer(%w2d) : (memref<?xf32>) -> memref<?xbf16>
  %w9g = memref.get_global @rms_w9 : memref<9xf32>
  %w9d = memref.cast %w9g : memref<9xf32> to memref<?xf32>
  %w9 = func.call @bf16_buffer(%w9d) : (memref<?xf32>) -> memref<?xbf16>
  %zero = arith.constant 0.0 : f32
  %ry2 = memref.alloc(%c2) : memref<?xbf16>
  func.call @dsa_rms_norm_bf16(%c0, %rx2c, %w2, %ry2, %c1, %c2, %zero)
      : (index, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, index, index, f32) -> ()
  func.call @print_bf16(%ry2) : (memref<?xbf16>) -> ()
  %ry9 = memref.alloc(%c9) : memref<?xbf16>
  func.call @dsa_rms_norm_bf16(%c0, %rx9c, %w9, %ry9, %c1, %c9, %zero)
      : (index, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, index, index, f32) -> ()
  func.call @print_bf16(%ry9) : (memref<?xbf16>) -> ()

  // --- sparse_attn (one-thread blocks): 3 tokens, 2 heads, hd 2, kv rows [1, 0] and [0, 1], scale 1.
  // Token 0, indices [0, 1]. Head 0: q = [1, 0], sink 0: z = [1, 0], m = 1, den = e^-1 + 1 + e^-1 = 1.73575888;
  //   o = [1/den, e^-1/den] = [0.576116885, 0.211941558] -> bf16 [0.57421875, 0.211914062].
  //   Head 1: q = [0, 2], sink -inf (no sink): z = [0, 2], m = 2, den = e^-2 + 1 = 1.13533528;
  //   o = [e^-2/den, 1/den] = [0.119202922, 0.880797078] -> bf16 [0.119140625, 0.87890625].
  // Token 1, indices [-1, -1]: zeros. Token 2, indices [5, 0]: 5 is not a row of kv -> NaN (poisoned).
  // CHECK-LABEL: sizes = [12]
  // CHECK-NEXT: [0.574219,  0.211914,  0.119141,  0.878906,  0,  0,  0,  0,  nan,  nan,  nan,  nan]
  %qg = memref.get_global @sa_q : memref<12xf32>
  %qd = memref.cast %qg : memref<12xf32> to memref<?xf32>
  %q = func.call @bf16_buffer(%qd) : (memref<?xf32>) -> memref<?xbf16>
  %kvg = memref.get_global @sa_kv : memref<4xf32>
  %kvd = memref.cast %kvg : memref<4xf32> to memref<?xf32>
  %kv = func.call @bf16_buffer(%kvd) : (memref<?xf32>) -> memref<?xbf16>
  %ig = memref.get_global @sa_idx : memref<6xi32>
  %idx = memref.cast %ig : memref<6xi32> to memref<?xi32>
  %sg = memref.get_global @sa_sink : memref<2xf32>
  %sink = memref.cast %sg : memref<2xf32> to memref<?xf32>
  %o = memref.alloc(%c12) : memref<?xbf16>
  %scratch = memref.alloc(%c12) : memref<?xf32>
  %one = arith.constant 1.0 : f32
  scf.for %b = %c0 to %c6 step %c1 {
    func.call @dsa_sparse_attn(%b, %q, %kv, %idx, %sink, %o, %scratch, %c3, %c2, %c2, %c2, %c2, %one)
        : (index, memref<?xbf16>, memref<?xbf16>, memref<?xi32>, memref<?xf32>, memref<?xbf16>, memref<?xf32>,
           index, index, index, index, index, f32) -> ()
  }
  func.call @print_bf16(%o) : (memref<?xbf16>) -> ()
  return
}
