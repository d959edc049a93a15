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

// The compressed-attention kernels of Kernels.mlir run on the CPU (Inputs/kernels-on-cpu.py: once per global
// thread id) on cases worked by hand from attention-semantics.md sections 2 and 5-9 (the expected values are
// derived in the comments, not produced by any code). The host top-k between dsa_candidate_block_scores and
// dsa_candidate_mask / dsa_topk_map is the runtime's (tested in test/Backend/CPU); here the picks are given.

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefI32(memref<*xi32>)

func.func @print_f32(%m: memref<?xf32>) {
  %u = memref.cast %m : memref<?xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @print_i32(%m: memref<?xi32>) {
  %u = memref.cast %m : memref<?xi32> to memref<*xi32>
  func.call @printMemrefI32(%u) : (memref<*xi32>) -> ()
  return
}

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
  func.call @print_f32(%f) : (memref<?xf32>) -> ()
  memref.dealloc %f : memref<?xf32>
  return
}

func.func @print_i1(%m: memref<?xi1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %m, %c0 : memref<?xi1>
  %f = memref.alloc(%n) : memref<?xi32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %m[%i] : memref<?xi1>
    %w = arith.extui %v : i1 to i32
    memref.store %w, %f[%i] : memref<?xi32>
  }
  func.call @print_i32(%f) : (memref<?xi32>) -> ()
  memref.dealloc %f : memref<?xi32>
  return
}

// A bf16 (resp. f32, i1, i64) buffer holding the values of a global.
func.func @bf16_of(%g: memref<?xf32>) -> memref<?xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %g, %c0 : memref<?xf32>
  %b = memref.alloc(%n) : memref<?xbf16>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %g[%i] : memref<?xf32>
    %w = arith.truncf %v : f32 to bf16
    memref.store %w, %b[%i] : memref<?xbf16>
  }
  return %b : memref<?xbf16>
}

func.func @f32_of(%g: memref<?xf32>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %g, %c0 : memref<?xf32>
  %b = memref.alloc(%n) : memref<?xf32>
  memref.copy %g, %b : memref<?xf32> to memref<?xf32>
  return %b : memref<?xf32>
}

memref.global "private" constant @e2m1_in : memref<16xf32> =
    dense<[0.25, 0.26, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 5.5, 7.0, 0x7F800000, -0.25, -3.0, 0x7FC00000, 0xFF800000,
           0.74]>
memref.global "private" constant @fp4_in : memref<20xf32> =
    dense<[6.0, 3.0, 1.0, -0.75, 12.0, 1.0, 0.5, 0.0, 7.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
           0x7FC00000, 1.0, 0.0, 0.0]>
memref.global "private" constant @fp4_e4_in : memref<12xf32> =
    dense<[6.0, 3.0, 1.0, -0.75, 7.0, 0.0, 0.0, 0.0, 0.01, 0.0, 0.0, 0.0]>
memref.global "private" constant @cp_kv : memref<6xf32> = dense<[1.0, 10.0, 2.0, 20.0, 3.0, 30.0]>
memref.global "private" constant @cp_score : memref<6xf32> = dense<[0.0, 1.0, 0.0, 1.0, 5.0, 0.0]>
memref.global "private" constant @cp_kv_state : memref<4xf32> = dense<[0.0, 0.0, 0.0, 0.0]>
memref.global "private" constant @cp_score_state : memref<4xf32> = dense<[0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000]>
memref.global "private" constant @cp_kv_dec : memref<2xf32> = dense<[4.0, 40.0]>
memref.global "private" constant @cp_score_dec : memref<2xf32> = dense<[5.0, 0xFF800000]>
memref.global "private" constant @cw_cache : memref<8xf32> = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]>
memref.global "private" constant @cw_rows : memref<4xf32> = dense<[10.0, 11.0, 12.0, 13.0]>
memref.global "private" constant @is_iq : memref<4xf32> = dense<[1.0, 2.0, -1.0, 1.0]>
memref.global "private" constant @is_w : memref<2xf32> = dense<[2.0, 4.0]>
memref.global "private" constant @is_keys : memref<6xf32> = dense<[1.0, 0.0, 0.0, 1.0, 1.0, 0.001953125]>
memref.global "private" constant @ones9 : memref<9xf32> = dense<1.0>
memref.global "private" constant @vis_in : memref<9xf32> = dense<1.0>
memref.global "private" constant @ac_scores : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
memref.global "private" constant @bs_prefill : memref<16xf32> =
    dense<[1.0, 3.0, 0x7FC00000, 2.0, 0xFF800000, 0xFF800000, 5.0, 7.0, 2.0, 1.0, 0x7FC00000, 9.0,
           0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000]>
memref.global "private" constant @bs_decode : memref<3xf32> = dense<[4.0, 0x7FC00000, 1.0]>
memref.global "private" constant @bs_nolen : memref<2xf32> = dense<[5.0, 6.0]>
memref.global "private" constant @cm_scores : memref<6xf32> = dense<[3.0, 0xFF800000, 0x7F800000, 3.0, 0xFF800000, 0x7F800000]>
memref.global "private" constant @cm_picks : memref<4xi64> = dense<[1, 2, 0, 2]>
memref.global "private" constant @tm_picks : memref<6xi64> = dense<[0, 1, 2, 0, 1, 3]>
memref.global "private" constant @tm_picks_dec : memref<3xi64> = dense<[0, 4, 5]>
memref.global "private" constant @lin_x : memref<18xf32> =
    dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 1.0e8, 1.0, 1.0, 1.0, -1.0e8, 1.0, 1.0, 1.0, 0.0]>
memref.global "private" constant @lin_w : memref<18xf32> =
    dense<[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]>
memref.global "private" constant @tr_in : memref<4xf32> = dense<[1.00390625, 1.01171875, -2.5, 0x7F800000]>
memref.global "private" constant @cat_a : memref<2xf32> = dense<[1.0, 2.0]>
memref.global "private" constant @cat_b : memref<3xf32> = dense<[3.0, 4.0, 5.0]>
memref.global "private" constant @cat_ia : memref<2xi32> = dense<[1, 2]>
memref.global "private" constant @cat_ib : memref<4xi32> = dense<[3, 4, 5, 6]>

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c10 = arith.constant 10 : index
  %c16 = arith.constant 16 : index
  %i0 = arith.constant 0 : i32
  %i1 = arith.constant 1 : i32
  %z64 = arith.constant 0 : i64
  %one64 = arith.constant 1 : i64
  %two64 = arith.constant 2 : i64

  // --- e2m1 rounding (E2M1.h; ties to the even code): 0.25 -> 0; 0.26 -> 0.5; 0.75 (tie 0.5 / 1) -> 1;
  // 1.25 (tie 1 / 1.5) -> 1; 1.75 (tie 1.5 / 2) -> 2; 2.5 (tie 2 / 3) -> 2; 3.5 (tie 3 / 4) -> 4; 5 (tie 4 / 6) -> 4;
  // 5.5 -> 6; 7 and +inf saturate to 6; -0.25 -> -0 (sign kept); -3 exact; NaN stays NaN; -inf -> -6; 0.74 -> 0.5.
  // CHECK-LABEL: sizes = [16]
  // CHECK-NEXT: [0,  0.5,  1,  1,  2,  2,  4,  4,  6,  6,  6,  -0,  -3,  nan,  -6,  0.5]
  %eg = memref.get_global @e2m1_in : memref<16xf32>
  %ef = memref.alloc(%c16) : memref<?xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %eg[%i] : memref<16xf32>
    %r = func.call @dsa_round_e2m1(%v) : (f32) -> f32
    memref.store %r, %ef[%i] : memref<?xf32>
  }
  func.call @print_f32(%ef) : (memref<?xf32>) -> ()

  // --- fp4_quant_e8m0, block 4 (section 2: s = pow2_ceil(max(amax, 6*2^-126) / 6)):
  // [6, 3, 1, -0.75]: s = 1; -0.75 is the tie 0.5 / 1 -> -1                      -> [6, 3, 1, -1]
  // [12, 1, 0.5, 0]: s = 2; x/s = 6, 0.5, 0.25 (tie 0 / 0.5 -> 0), 0               -> [12, 1, 0, 0]
  // [7, 0, 0, 0]: 7/6 -> s = 2; 3.5 is the tie 3 / 4 -> 4                         -> [8, 0, 0, 0]
  // zeros: amax is the floor, s = 2^-126                                            -> [0, 0, 0, 0]
  // [NaN, 1, 0, 0]: amax NaN -> every element NaN.
  // CHECK-LABEL: sizes = [20]
  // CHECK-NEXT: [6,  3,  1,  -1,  12,  1,  0,  0,  8,  0,  0,  0,  0,  0,  0,  0,  nan,  nan,  nan,  nan]
  %fg = memref.get_global @fp4_in : memref<20xf32>
  %fgd = memref.cast %fg : memref<20xf32> to memref<?xf32>
  %fx = func.call @bf16_of(%fgd) : (memref<?xf32>) -> memref<?xbf16>
  %c20 = arith.constant 20 : index
  %fy2 = memref.alloc(%c20) : memref<?xbf16>
  scf.for %g = %c0 to %c5 step %c1 {
    func.call @dsa_fp4_quant(%g, %fx, %fy2, %c5, %c4, %i0) : (index, memref<?xbf16>, memref<?xbf16>, index, index, i32) -> ()
  }
  func.call @print_bf16(%fy2) : (memref<?xbf16>) -> ()

  // --- fp4_quant_e4m3, block 4 (s = e4m3(max(amax, 6*2^-9) / 6)):
  // [6, 3, 1, -0.75]: s = 1                                                          -> [6, 3, 1, -1]
  // [7, 0, 0, 0]: 7/6 = 1.1667 -> e4m3 1.125 (1.25 is farther); 7/1.125 = 6.22 clamps to 6 -> 6.75
  // [0.01, 0, 0, 0]: bf16(0.01) = 0.010009765625 < the floor 0.01171875, s = 2^-9; x/s = 5.125 -> 6 -> 0.01171875
  // CHECK-LABEL: sizes = [12]
  // CHECK-NEXT: [6,  3,  1,  -1,  6.75,  0,  0,  0,  0.0117188,  0,  0,  0]
  %f4g = memref.get_global @fp4_e4_in : memref<12xf32>
  %f4gd = memref.cast %f4g : memref<12xf32> to memref<?xf32>
  %f4x = func.call @bf16_of(%f4gd) : (memref<?xf32>) -> memref<?xbf16>
  %c12 = arith.constant 12 : index
  %f4y = memref.alloc(%c12) : memref<?xbf16>
  scf.for %g = %c0 to %c3 step %c1 {
    func.call @dsa_fp4_quant(%g, %f4x, %f4y, %c3, %c4, %i1) : (index, memref<?xbf16>, memref<?xbf16>, index, index, i32) -> ()
  }
  func.call @print_bf16(%f4y) : (memref<?xbf16>) -> ()

  // --- compress_pool, ratio 2, hd 2 (section 5). Prefill of 3 rows kv [[1,10],[2,20],[3,30]],
  // score [[0,1],[0,1],[5,0]]: rem = 1, so state slot 0 takes row 2 (kv [3,30], score [5,0]) and slot 1 keeps
  // the initial state (kv 0, score -inf); group 0 pools rows 0, 1 with equal scores per d -> [1.5, 15].
  // CHECK-LABEL: sizes = [4]
  // CHECK-NEXT: [3,  30,  0,  0]
  // CHECK-LABEL: sizes = [4]
  // CHECK-NEXT: [5,  0,  -inf,  -inf]
  // CHECK-LABEL: sizes = [2]
  // CHECK-NEXT: [1.5,  15]
  %gkv = memref.get_global @cp_kv : memref<6xf32>
  %gsc = memref.get_global @cp_score : memref<6xf32>
  %gks = memref.get_global @cp_kv_state : memref<4xf32>
  %gss = memref.get_global @cp_score_state : memref<4xf32>
  %kv = memref.cast %gkv : memref<6xf32> to memref<?xf32>
  %sc = memref.cast %gsc : memref<6xf32> to memref<?xf32>
  %ks = memref.cast %gks : memref<4xf32> to memref<?xf32>
  %ss = memref.cast %gss : memref<4xf32> to memref<?xf32>
  %nk = memref.alloc(%c4) : memref<?xf32>
  %ns = memref.alloc(%c4) : memref<?xf32>
  scf.for %g = %c0 to %c4 step %c1 {
    func.call @dsa_compress_state(%g, %kv, %sc, %ks, %ss, %nk, %ns, %c2, %c2, %c3, %z64)
        : (index, memref<?xf32>, memref<?xf32>, memref<?xf32>, memref<?xf32>, memref<?xf32>, memref<?xf32>, index,
           index, index, i64) -> ()
  }
  func.call @print_f32(%nk) : (memref<?xf32>) -> ()
  func.call @print_f32(%ns) : (memref<?xf32>) -> ()
  %pooled = memref.alloc(%c2) : memref<?xf32>
  scf.for %g = %c0 to %c2 step %c1 {
    func.call @dsa_compress_pool(%g, %kv, %sc, %pooled, %c1, %c2, %c2)
        : (index, memref<?xf32>, memref<?xf32>, memref<?xf32>, index, index, index) -> ()
  }
  func.call @print_f32(%pooled) : (memref<?xf32>) -> ()

  // Decode at start_pos 3 (slot 3 % 2 = 1) with kv [4, 40], score [5, -inf]: (3 + 1) % 2 == 0 completes the group
  // of the updated state. d = 0: scores 5, 5 -> weights 1/2 -> (3 + 4) / 2 = 3.5; d = 1: scores 0, -inf ->
  // m = 0, den = exp(0) + exp(-inf) = 1 -> 30 * 1 + 40 * 0 = 30.
  // CHECK-LABEL: sizes = [4]
  // CHECK-NEXT: [3,  30,  4,  40]
  // CHECK-LABEL: sizes = [4]
  // CHECK-NEXT: [5,  0,  5,  -inf]
  // CHECK-LABEL: sizes = [2]
  // CHECK-NEXT: [3.5,  30]
  %gkd = memref.get_global @cp_kv_dec : memref<2xf32>
  %gsd = memref.get_global @cp_score_dec : memref<2xf32>
  %kvd = memref.cast %gkd : memref<2xf32> to memref<?xf32>
  %scd = memref.cast %gsd : memref<2xf32> to memref<?xf32>
  %nk2 = memref.alloc(%c4) : memref<?xf32>
  %ns2 = memref.alloc(%c4) : memref<?xf32>
  %three64 = arith.constant 3 : i64
  scf.for %g = %c0 to %c4 step %c1 {
    func.call @dsa_compress_state(%g, %kvd, %scd, %nk, %ns, %nk2, %ns2, %c2, %c2, %c1, %three64)
        : (index, memref<?xf32>, memref<?xf32>, memref<?xf32>, memref<?xf32>, memref<?xf32>, memref<?xf32>, index,
           index, index, i64) -> ()
  }
  func.call @print_f32(%nk2) : (memref<?xf32>) -> ()
  func.call @print_f32(%ns2) : (memref<?xf32>) -> ()
  %pooled2 = memref.alloc(%c2) : memref<?xf32>
  scf.for %g = %c0 to %c2 step %c1 {
    func.call @dsa_compress_pool(%g, %nk2, %ns2, %pooled2, %c1, %c2, %c2)
        : (index, memref<?xf32>, memref<?xf32>, memref<?xf32>, index, index, index) -> ()
  }
  func.call @print_f32(%pooled2) : (memref<?xf32>) -> ()

  // --- cache_write: cache [4, 2] = 0..7, rows [[10, 11], [12, 13]] at start_pos 5, ratio 2 -> first row 2.
  // CHECK-LABEL: sizes = [8]
  // CHECK-NEXT: [0,  1,  2,  3,  10,  11,  12,  13]
  %gcc = memref.get_global @cw_cache : memref<8xf32>
  %gcr = memref.get_global @cw_rows : memref<4xf32>
  %gccd = memref.cast %gcc : memref<8xf32> to memref<?xf32>
  %gcrd = memref.cast %gcr : memref<4xf32> to memref<?xf32>
  %cache = func.call @bf16_of(%gccd) : (memref<?xf32>) -> memref<?xbf16>
  %rows = func.call @bf16_of(%gcrd) : (memref<?xf32>) -> memref<?xbf16>
  %cout = memref.alloc(%c8) : memref<?xbf16>
  scf.for %g = %c0 to %c8 step %c1 {
    func.call @dsa_cache_write(%g, %cache, %rows, %cout, %c4, %c2, %c2, %c2)
        : (index, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, index, index, index, index) -> ()
  }
  func.call @print_bf16(%cout) : (memref<?xbf16>) -> ()

  // --- indexer_scores (section 6 steps 3-4): s 1, IH 2, ihd 2; iq = [[1, 2], [-1, 1]], weights [2, 4] with
  // weight_scale 0.5 -> w' = [1, 2]; keys [1, 0], [0, 1], [1, 2^-9].
  // p0: h0 dot 1 -> 1 * 1; h1 dot -1 -> relu 0            -> 1
  // p1: h0 dot 2 -> 2 * 1; h1 dot 1 -> 1 * 2              -> 4
  // p2: h0 dot 1 + 2^-8 -> bf16 tie, to even -> 1 -> 1 * 1; h1 dot -1 + 2^-9 < 0 -> 0 -> 1
  // CHECK-LABEL: sizes = [3]
  // CHECK-NEXT: [1,  4,  1]
  %giq = memref.get_global @is_iq : memref<4xf32>
  %giw = memref.get_global @is_w : memref<2xf32>
  %gik = memref.get_global @is_keys : memref<6xf32>
  %giqd = memref.cast %giq : memref<4xf32> to memref<?xf32>
  %giwd = memref.cast %giw : memref<2xf32> to memref<?xf32>
  %gikd = memref.cast %gik : memref<6xf32> to memref<?xf32>
  %iq = func.call @bf16_of(%giqd) : (memref<?xf32>) -> memref<?xbf16>
  %iw = func.call @bf16_of(%giwd) : (memref<?xf32>) -> memref<?xbf16>
  %ik = func.call @bf16_of(%gikd) : (memref<?xf32>) -> memref<?xbf16>
  %iout = memref.alloc(%c3) : memref<?xbf16>
  %half = arith.constant 0.5 : f32
  scf.for %g = %c0 to %c3 step %c1 {
    func.call @dsa_indexer_scores(%g, %iq, %iw, %ik, %iout, %c1, %c2, %c2, %c3, %half)
        : (index, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, index, index, index, index, f32)
        -> ()
  }
  func.call @print_bf16(%iout) : (memref<?xbf16>) -> ()

  // --- compress_visibility (section 6 step 5), prefill of 3 at ratio 1: compress_len[t] = t + 1.
  // CHECK-LABEL: sizes = [9]
  // CHECK-NEXT: [1,  -inf,  -inf,  1,  1,  -inf,  1,  1,  1]
  %gvi = memref.get_global @vis_in : memref<9xf32>
  %gvid = memref.cast %gvi : memref<9xf32> to memref<?xf32>
  %vin = func.call @bf16_of(%gvid) : (memref<?xf32>) -> memref<?xbf16>
  %vout = memref.alloc(%c9) : memref<?xbf16>
  scf.for %g = %c0 to %c9 step %c1 {
    func.call @dsa_compress_visibility(%g, %vin, %vout, %c3, %c3, %z64, %one64)
        : (index, memref<?xbf16>, memref<?xbf16>, index, index, i64, i64) -> ()
  }
  func.call @print_bf16(%vout) : (memref<?xbf16>) -> ()
  // Decode at start_pos 5, ratio 2, width 3: compress_len = (5 + 1) // 2 = 3, everything visible.
  // CHECK-LABEL: sizes = [3]
  // CHECK-NEXT: [1,  1,  1]
  %vout2 = memref.alloc(%c3) : memref<?xbf16>
  %five64 = arith.constant 5 : i64
  scf.for %g = %c0 to %c3 step %c1 {
    func.call @dsa_compress_visibility(%g, %vin, %vout2, %c1, %c3, %five64, %two64)
        : (index, memref<?xbf16>, memref<?xbf16>, index, index, i64, i64) -> ()
  }
  func.call @print_bf16(%vout2) : (memref<?xbf16>) -> ()

  // --- apply_candidates: scores [1, 2, 3, 4], mask [1, 0, 0, 1].
  // CHECK-LABEL: sizes = [4]
  // CHECK-NEXT: [1,  -inf,  -inf,  4]
  %gac = memref.get_global @ac_scores : memref<4xf32>
  %gacd = memref.cast %gac : memref<4xf32> to memref<?xf32>
  %acs = func.call @bf16_of(%gacd) : (memref<?xf32>) -> memref<?xbf16>
  %mask = memref.alloc(%c4) : memref<?xi1>
  %true = arith.constant true
  %false = arith.constant false
  memref.store %true, %mask[%c0] : memref<?xi1>
  memref.store %false, %mask[%c1] : memref<?xi1>
  memref.store %false, %mask[%c2] : memref<?xi1>
  memref.store %true, %mask[%c3] : memref<?xi1>
  %acout = memref.alloc(%c4) : memref<?xbf16>
  scf.for %g = %c0 to %c4 step %c1 {
    func.call @dsa_apply_candidates(%g, %acs, %mask, %acout, %c4)
        : (index, memref<?xbf16>, memref<?xi1>, memref<?xbf16>, index) -> ()
  }
  func.call @print_bf16(%acout) : (memref<?xbf16>) -> ()

  // --- candidate block scores (section 7), prefill of 4 at ratio 1 (compress_len[t] = t + 1), width 4, block 2;
  // the block (len - 1) // 2 is pinned to +inf:
  // row 0 [1, 3, NaN, 2]: pin block 0; block 1 starts with NaN, which wins        -> [inf, nan]
  // row 1 [-inf, -inf, 5, 7]: pin block 0                                         -> [inf, 7]
  // row 2 [2, 1, NaN, 9]: pin block 1; block 0 = 2                                -> [2, inf]
  // row 3 all -inf: pin block 1                                                   -> [-inf, inf]
  // CHECK-LABEL: sizes = [8]
  // CHECK-NEXT: [inf,  nan,  inf,  7,  2,  inf,  -inf,  inf]
  %gbp = memref.get_global @bs_prefill : memref<16xf32>
  %gbpd = memref.cast %gbp : memref<16xf32> to memref<?xf32>
  %bsp = func.call @bf16_of(%gbpd) : (memref<?xf32>) -> memref<?xbf16>
  %bso = memref.alloc(%c8) : memref<?xf32>
  scf.for %g = %c0 to %c8 step %c1 {
    func.call @dsa_candidate_block_scores(%g, %bsp, %bso, %c4, %c4, %c2, %c2, %z64, %one64)
        : (index, memref<?xbf16>, memref<?xf32>, index, index, index, index, i64, i64) -> ()
  }
  func.call @print_f32(%bso) : (memref<?xf32>) -> ()
  // Decode at start_pos 5, ratio 2: compress_len = 3, width 3, block 2: [4, NaN | 1]: block 0 = 4 then NaN -> NaN;
  // block 1 = (3 - 1) // 2 is pinned -> [nan, inf].
  // CHECK-LABEL: sizes = [2]
  // CHECK-NEXT: [nan,  inf]
  %gbd = memref.get_global @bs_decode : memref<3xf32>
  %gbdd = memref.cast %gbd : memref<3xf32> to memref<?xf32>
  %bsd = func.call @bf16_of(%gbdd) : (memref<?xf32>) -> memref<?xbf16>
  %bsdo = memref.alloc(%c2) : memref<?xf32>
  scf.for %g = %c0 to %c2 step %c1 {
    func.call @dsa_candidate_block_scores(%g, %bsd, %bsdo, %c1, %c3, %c2, %c2, %five64, %two64)
        : (index, memref<?xbf16>, memref<?xf32>, index, index, index, index, i64, i64) -> ()
  }
  func.call @print_f32(%bsdo) : (memref<?xf32>) -> ()
  // compress_len 0 (query 0 of a prefill at ratio 2): nothing is pinned -> max(5, 6) = 6.
  // CHECK-LABEL: sizes = [1]
  // CHECK-NEXT: [6]
  %gbn = memref.get_global @bs_nolen : memref<2xf32>
  %gbnd = memref.cast %gbn : memref<2xf32> to memref<?xf32>
  %bsn = func.call @bf16_of(%gbnd) : (memref<?xf32>) -> memref<?xbf16>
  %bsno = memref.alloc(%c1) : memref<?xf32>
  func.call @dsa_candidate_block_scores(%c0, %bsn, %bsno, %c1, %c2, %c1, %c2, %z64, %two64)
      : (index, memref<?xbf16>, memref<?xf32>, index, index, index, index, i64, i64) -> ()
  func.call @print_f32(%bsno) : (memref<?xf32>) -> ()

  // --- candidate mask: block scores [[3, -inf, inf], [3, -inf, inf]], width 5, block 2, picks [[1, 2], [0, 2]]:
  // row 0 picked block 1 only to fill k (its score is -inf: dropped) and block 2 (position 4);
  // row 1 picked blocks 0 (positions 0, 1) and 2.
  // CHECK-LABEL: sizes = [10]
  // CHECK-NEXT: [0,  0,  0,  0,  1,  1,  1,  0,  0,  1]
  %gcm = memref.get_global @cm_scores : memref<6xf32>
  %gcmd = memref.cast %gcm : memref<6xf32> to memref<?xf32>
  %gcp = memref.get_global @cm_picks : memref<4xi64>
  %gcpd = memref.cast %gcp : memref<4xi64> to memref<?xi64>
  %cmask = memref.alloc(%c10) : memref<?xi1>
  scf.for %g = %c0 to %c10 step %c1 {
    func.call @dsa_candidate_mask(%g, %gcmd, %gcpd, %cmask, %c2, %c5, %c3, %c2, %c2)
        : (index, memref<?xf32>, memref<?xi64>, memref<?xi1>, index, index, index, index, index) -> ()
  }
  func.call @print_i1(%cmask) : (memref<?xi1>) -> ()

  // --- indexer_topk's mapping (section 6 step 7): prefill of 2 at ratio 1 (compress_len = t + 1, offset s = 2):
  // row 0 picks [0, 1, 2] -> [2, -1, -1]; row 1 picks [0, 1, 3] -> [2, 3, -1]. Decode at start_pos 9, ratio 2
  // (compress_len 5, offset window_size 8): picks [0, 4, 5] -> [8, 12, -1].
  // CHECK-LABEL: sizes = [6]
  // CHECK-NEXT: [2,  -1,  -1,  2,  3,  -1]
  // CHECK-LABEL: sizes = [3]
  // CHECK-NEXT: [8,  12,  -1]
  %gtp = memref.get_global @tm_picks : memref<6xi64>
  %gtpd = memref.cast %gtp : memref<6xi64> to memref<?xi64>
  %tout = memref.alloc(%c6) : memref<?xi32>
  scf.for %g = %c0 to %c6 step %c1 {
    func.call @dsa_topk_map(%g, %gtpd, %tout, %c2, %c3, %z64, %one64, %two64)
        : (index, memref<?xi64>, memref<?xi32>, index, index, i64, i64, i64) -> ()
  }
  func.call @print_i32(%tout) : (memref<?xi32>) -> ()
  %gtq = memref.get_global @tm_picks_dec : memref<3xi64>
  %gtqd = memref.cast %gtq : memref<3xi64> to memref<?xi64>
  %tout2 = memref.alloc(%c3) : memref<?xi32>
  %nine64 = arith.constant 9 : i64
  %eight64 = arith.constant 8 : i64
  scf.for %g = %c0 to %c3 step %c1 {
    func.call @dsa_topk_map(%g, %gtqd, %tout2, %c1, %c3, %nine64, %two64, %eight64)
        : (index, memref<?xi64>, memref<?xi32>, index, index, i64, i64, i64) -> ()
  }
  func.call @print_i32(%tout2) : (memref<?xi32>) -> ()

  // --- linear f32, K = 9 (eight lanes + a tail of one): x row 0 = 1..9, row 1 = [1e8, 1, 1, 1, -1e8, 1, 1, 1, 0];
  // w row 0 = ones, row 1 = [1, 0 x 7, 1]. y[0] = [45, 1 + 9 = 10]. y[1, 0] in dotF32's order: lanes
  // l0 = 1e8, l4 = -1e8, the others 1: ((l0+l4) + (l1+l5)) + ((l2+l6) + (l3+l7)) = (0 + 2) + (2 + 2) = 6, tail 0
  // (a sequential sum would lose the three 1s added to 1e8 and give 3); y[1, 1] = 1e8 + 0.
  // CHECK-LABEL: sizes = [4]
  // CHECK-NEXT: [45,  10,  6,  1e+08]
  %glx = memref.get_global @lin_x : memref<18xf32>
  %glw = memref.get_global @lin_w : memref<18xf32>
  %glxd = memref.cast %glx : memref<18xf32> to memref<?xf32>
  %glwd = memref.cast %glw : memref<18xf32> to memref<?xf32>
  %ly = memref.alloc(%c4) : memref<?xf32>
  scf.for %g = %c0 to %c4 step %c1 {
    func.call @dsa_linear_f32(%g, %glxd, %glwd, %ly, %c2, %c2, %c9)
        : (index, memref<?xf32>, memref<?xf32>, memref<?xf32>, index, index, index) -> ()
  }
  func.call @print_f32(%ly) : (memref<?xf32>) -> ()

  // --- truncf f32 -> bf16 (RNE) and back: 1 + 2^-8 (tie 1 / 1 + 2^-7) -> 1; 1 + 3*2^-8 (tie 1 + 2^-7 / 1 + 2^-6)
  // -> 1.015625; -2.5 and inf exact.
  // CHECK-LABEL: sizes = [4]
  // CHECK-NEXT: [1,  1.01562,  -2.5,  inf]
  %gtr = memref.get_global @tr_in : memref<4xf32>
  %gtrd = memref.cast %gtr : memref<4xf32> to memref<?xf32>
  %trb = memref.alloc(%c4) : memref<?xbf16>
  %trf = memref.alloc(%c4) : memref<?xf32>
  scf.for %g = %c0 to %c4 step %c1 {
    func.call @dsa_truncf_f32_bf16(%g, %gtrd, %trb, %c4) : (index, memref<?xf32>, memref<?xbf16>, index) -> ()
  }
  scf.for %g = %c0 to %c4 step %c1 {
    func.call @dsa_extf_bf16_f32(%g, %trb, %trf, %c4) : (index, memref<?xbf16>, memref<?xf32>, index) -> ()
  }
  func.call @print_f32(%trf) : (memref<?xf32>) -> ()

  // --- concat: rows [1, 2] ++ [3, 4, 5]; columns [[1], [2]] ++ [[3, 4], [5, 6]] -> [[1, 3, 4], [2, 5, 6]].
  // CHECK-LABEL: sizes = [5]
  // CHECK-NEXT: [1,  2,  3,  4,  5]
  // CHECK-LABEL: sizes = [6]
  // CHECK-NEXT: [1,  3,  4,  2,  5,  6]
  %gca = memref.get_global @cat_a : memref<2xf32>
  %gcb = memref.get_global @cat_b : memref<3xf32>
  %gcad = memref.cast %gca : memref<2xf32> to memref<?xf32>
  %gcbd = memref.cast %gcb : memref<3xf32> to memref<?xf32>
  %ca = func.call @bf16_of(%gcad) : (memref<?xf32>) -> memref<?xbf16>
  %cb = func.call @bf16_of(%gcbd) : (memref<?xf32>) -> memref<?xbf16>
  %cat = memref.alloc(%c5) : memref<?xbf16>
  scf.for %g = %c0 to %c5 step %c1 {
    func.call @dsa_concat_rows_bf16(%g, %ca, %cb, %cat, %c2, %c3)
        : (index, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, index, index) -> ()
  }
  func.call @print_bf16(%cat) : (memref<?xbf16>) -> ()
  %gia = memref.get_global @cat_ia : memref<2xi32>
  %gib = memref.get_global @cat_ib : memref<4xi32>
  %giad = memref.cast %gia : memref<2xi32> to memref<?xi32>
  %gibd = memref.cast %gib : memref<4xi32> to memref<?xi32>
  %icat = memref.alloc(%c6) : memref<?xi32>
  scf.for %g = %c0 to %c6 step %c1 {
    func.call @dsa_concat_cols_i32(%g, %giad, %gibd, %icat, %c2, %c1, %c2)
        : (index, memref<?xi32>, memref<?xi32>, memref<?xi32>, index, index, index) -> ()
  }
  func.call @print_i32(%icat) : (memref<?xi32>) -> ()
  return
}
