//===- Kernels.mlir - the dsa GPU kernel library (gpu dialect, on flat memrefs) ------------------------------===//
//
// The device side of the GPU backend. `dsa-to-gpu` (DSAToGPU.cpp) parses this file (it is compiled into the pass
// as a string), clones the kernels a module needs into its `gpu.module @dsa_kernels` and launches them from the
// host function with `gpu.launch_func`. The math follows shared/spec/attention-semantics.md and reproduces the
// arithmetic ORDER of the MLIR-free reference kernels (kernels/include/dsa/Kernels/Kernels.h, kernels/lib):
//   - every dot product is dotF32's: eight interleaved f32 lanes over k < K - K%8 (lane l takes k = l mod 8, in
//     increasing k), combined as ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7)), plus a sequential tail over the last K%8
//     elements; products and sums are separate f32 ops (the pipeline never contracts them into fma: the NVPTX
//     backend emits mul.rn/add.rn, which ptxas does not fuse);
//   - f32 division and sqrt are IEEE (div.rn, sqrt.rn via libdevice's __nv_fsqrt_rn: math.sqrt would become
//     libdevice's approximate sqrtf);
//   - exp, cos and sin are evaluated in f64 (libdevice) and rounded to f32, which gives the correctly rounded f32
//     result except in rare double-rounding cases (the CPU reference uses glibc's expf/cosf/sinf);
//   - bf16 rounding is arith.truncf (cvt.rn.bf16.f32, round to nearest even);
//   - the e4m3 round trip and pow2_ceil are integer/bit arithmetic, transliterated from core/include/dsa/Numerics
//     (E4M3.h f32ToE4M3Bits/e4m3BitsToF32, E8M0.h pow2Ceil).
//
// ABI (what runtime/cuda's launcher passes): every tensor is a flat row-major `memref<?xT>` (after
// convert-gpu-to-nvvm: allocated ptr, aligned ptr, i64 offset, i64 size, i64 stride); `index` scalars are i64.
// Launch shapes are given per kernel. A kernel never reads outside [0, size) of its buffers given consistent
// sizes; the host code (DSAToGPU.cpp) checks the sizes it cannot prove statically.
//
//===----------------------------------------------------------------------------------------------------------===//

gpu.module @dsa_kernels {

  //===--------------------------------------------------------------------------------------------------------===//
  // Device helpers (private; LLVM inlines them).
  //===--------------------------------------------------------------------------------------------------------===//

  // dotF32 of a[abase .. abase+n) and b[bbase .. bbase+n) (bf16 values widened to f32), the reference's order.
  func.func private @dsa_dot_bf16(%a: memref<?xbf16>, %abase: index, %b: memref<?xbf16>, %bbase: index,
                                  %n: index) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %rem = arith.remui %n, %c8 : index
    %n8 = arith.subi %n, %rem : index
    %l:8 = scf.for %k = %c0 to %n8 step %c8
        iter_args(%a0 = %zero, %a1 = %zero, %a2 = %zero, %a3 = %zero, %a4 = %zero, %a5 = %zero, %a6 = %zero,
                  %a7 = %zero) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
      %ia = arith.addi %abase, %k : index
      %ib = arith.addi %bbase, %k : index
      %p0 = func.call @dsa_prod_bf16(%a, %ia, %b, %ib, %c0) : (memref<?xbf16>, index, memref<?xbf16>, index, index) -> f32
      %p1 = func.call @dsa_prod_bf16(%a, %ia, %b, %ib, %c1) : (memref<?xbf16>, index, memref<?xbf16>, index, index) -> f32
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %c6 = arith.constant 6 : index
      %c7 = arith.constant 7 : index
      %p2 = func.call @dsa_prod_bf16(%a, %ia, %b, %ib, %c2) : (memref<?xbf16>, index, memref<?xbf16>, index, index) -> f32
      %p3 = func.call @dsa_prod_bf16(%a, %ia, %b, %ib, %c3) : (memref<?xbf16>, index, memref<?xbf16>, index, index) -> f32
      %p4 = func.call @dsa_prod_bf16(%a, %ia, %b, %ib, %c4) : (memref<?xbf16>, index, memref<?xbf16>, index, index) -> f32
      %p5 = func.call @dsa_prod_bf16(%a, %ia, %b, %ib, %c5) : (memref<?xbf16>, index, memref<?xbf16>, index, index) -> f32
      %p6 = func.call @dsa_prod_bf16(%a, %ia, %b, %ib, %c6) : (memref<?xbf16>, index, memref<?xbf16>, index, index) -> f32
      %p7 = func.call @dsa_prod_bf16(%a, %ia, %b, %ib, %c7) : (memref<?xbf16>, index, memref<?xbf16>, index, index) -> f32
      %s0 = arith.addf %a0, %p0 : f32
      %s1 = arith.addf %a1, %p1 : f32
      %s2 = arith.addf %a2, %p2 : f32
      %s3 = arith.addf %a3, %p3 : f32
      %s4 = arith.addf %a4, %p4 : f32
      %s5 = arith.addf %a5, %p5 : f32
      %s6 = arith.addf %a6, %p6 : f32
      %s7 = arith.addf %a7, %p7 : f32
      scf.yield %s0, %s1, %s2, %s3, %s4, %s5, %s6, %s7 : f32, f32, f32, f32, f32, f32, f32, f32
    }
    %tail = scf.for %k = %n8 to %n step %c1 iter_args(%t = %zero) -> (f32) {
      %ia = arith.addi %abase, %k : index
      %ib = arith.addi %bbase, %k : index
      %p = func.call @dsa_prod_bf16(%a, %ia, %b, %ib, %c0) : (memref<?xbf16>, index, memref<?xbf16>, index, index) -> f32
      %t1 = arith.addf %t, %p : f32
      scf.yield %t1 : f32
    }
    %s = func.call @dsa_combine_lanes(%l#0, %l#1, %l#2, %l#3, %l#4, %l#5, %l#6, %l#7, %tail)
        : (f32, f32, f32, f32, f32, f32, f32, f32, f32) -> f32
    return %s : f32
  }

  // f32(a[ia + j]) * f32(b[ib + j]).
  func.func private @dsa_prod_bf16(%a: memref<?xbf16>, %ia: index, %b: memref<?xbf16>, %ib: index, %j: index)
      -> f32 {
    %i = arith.addi %ia, %j : index
    %k = arith.addi %ib, %j : index
    %x = memref.load %a[%i] : memref<?xbf16>
    %y = memref.load %b[%k] : memref<?xbf16>
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    return %p : f32
  }

  // ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)) + tail: dotF32's final combination.
  func.func private @dsa_combine_lanes(%l0: f32, %l1: f32, %l2: f32, %l3: f32, %l4: f32, %l5: f32, %l6: f32,
                                       %l7: f32, %tail: f32) -> f32 {
    %a = arith.addf %l0, %l4 : f32
    %b = arith.addf %l1, %l5 : f32
    %c = arith.addf %l2, %l6 : f32
    %d = arith.addf %l3, %l7 : f32
    %ab = arith.addf %a, %b : f32
    %cd = arith.addf %c, %d : f32
    %s = arith.addf %ab, %cd : f32
    %r = arith.addf %s, %tail : f32
    return %r : f32
  }

  // pow2_ceil (E8M0.h): for a normal f32 (exponent field 1..254) 2^e, times 2 when a mantissa bit is set
  // (from 2^127 up this carries into +inf, as on the CPU). Zero, inf and NaN come back unchanged; the quantisers'
  // amax floors make denormal inputs unreachable (a denormal would also come back unchanged).
  func.func private @dsa_pow2_ceil(%v: f32) -> f32 {
    %u = arith.bitcast %v : f32 to i32
    %expMask = arith.constant 0x7F800000 : i32
    %oneExp = arith.constant 0x00800000 : i32
    %normSpan = arith.constant 0x7F000000 : i32
    %keep = arith.constant 0xFF800000 : i32
    %mant = arith.constant 0x007FFFFF : i32
    %zero = arith.constant 0 : i32
    %e = arith.andi %u, %expMask : i32
    %e1 = arith.subi %e, %oneExp : i32
    %normal = arith.cmpi ult, %e1, %normSpan : i32
    %r0 = arith.andi %u, %keep : i32
    %m = arith.andi %u, %mant : i32
    %hasMant = arith.cmpi ne, %m, %zero : i32
    %r1 = arith.addi %r0, %oneExp : i32
    %r = arith.select %hasMant, %r1, %r0 : i32
    %rf = arith.bitcast %r : i32 to f32
    %out = arith.select %normal, %rf, %v : f32
    return %out : f32
  }

  // e4m3(v): round f32 to float8_e4m3fn (RNE, saturating to +-448, |v| <= 2^-10 -> signed zero, NaN -> NaN) and
  // widen back to f32; E4M3.h's f32ToE4M3Bits then e4m3BitsToF32, as selects over the value ranges.
  func.func private @dsa_round_e4m3(%v: f32) -> f32 {
    %u = arith.bitcast %v : f32 to i32
    %c24 = arith.constant 24 : i32
    %c23 = arith.constant 23 : i32
    %c20 = arith.constant 20 : i32
    %c3 = arith.constant 3 : i32
    %c1 = arith.constant 1 : i32
    %c0 = arith.constant 0 : i32
    %c0x80 = arith.constant 0x80 : i32
    %c0x7F = arith.constant 0x7F : i32
    %c0x7E = arith.constant 0x7E : i32
    %absMask = arith.constant 0x7FFFFFFF : i32
    %inf = arith.constant 0x7F800000 : i32
    %sat = arith.constant 0x43E00000 : i32       // 448
    %minNormal = arith.constant 0x3C800000 : i32 // 2^-6
    %halfSub = arith.constant 0x3A800000 : i32   // 2^-10
    %sh = arith.shrui %u, %c24 : i32
    %sign = arith.andi %sh, %c0x80 : i32
    %a = arith.andi %u, %absMask : i32
    // Normal range: keep 3 mantissa bits, RNE on the other 20; the exponent biases differ by 120 (<< 3 = 960).
    %rb = arith.constant 0x7FFFF : i32
    %b20 = arith.shrui %a, %c20 : i32
    %odd = arith.andi %b20, %c1 : i32
    %ar = arith.addi %a, %rb : i32
    %ar2 = arith.addi %ar, %odd : i32
    %top = arith.shrui %ar2, %c20 : i32
    %c960 = arith.constant 960 : i32
    %ncode0 = arith.subi %top, %c960 : i32
    %ncode = arith.minui %ncode0, %c0x7E : i32
    // Subnormal range (2^-10, 2^-6): round sig >> (141 - e) to nearest, ties to even (shift in 21..24; clamped so
    // that the unselected lanes never shift by 32 or more).
    %mant = arith.constant 0x7FFFFF : i32
    %hidden = arith.constant 0x800000 : i32
    %m = arith.andi %a, %mant : i32
    %sig = arith.ori %m, %hidden : i32
    %ef = arith.shrui %a, %c23 : i32
    %c141 = arith.constant 141 : i32
    %shift0 = arith.subi %c141, %ef : i32
    %c31 = arith.constant 31 : i32
    %shift1 = arith.minui %shift0, %c31 : i32
    %shift = arith.maxui %shift1, %c1 : i32
    %shm1 = arith.subi %shift, %c1 : i32
    %half = arith.shli %c1, %shm1 : i32
    %halfm1 = arith.subi %half, %c1 : i32
    %sigs = arith.shrui %sig, %shift : i32
    %sodd = arith.andi %sigs, %c1 : i32
    %q0 = arith.addi %sig, %halfm1 : i32
    %q1 = arith.addi %q0, %sodd : i32
    %scode = arith.shrui %q1, %shift : i32
    // Range selection, from the smallest magnitudes up.
    %isTiny = arith.cmpi ule, %a, %halfSub : i32
    %isNormal = arith.cmpi uge, %a, %minNormal : i32
    %isSat = arith.cmpi uge, %a, %sat : i32
    %isNan = arith.cmpi ugt, %a, %inf : i32
    %k0 = arith.select %isTiny, %c0, %scode : i32
    %k1 = arith.select %isNormal, %ncode, %k0 : i32
    %k2 = arith.select %isSat, %c0x7E, %k1 : i32
    %mag = arith.select %isNan, %c0x7F, %k2 : i32
    // Decode: e == 0 -> m * 2^-9; e == 15 && m == 7 -> NaN; else (1 + m/8) * 2^(e-7). Sign reattached.
    %ce = arith.shrui %mag, %c3 : i32
    %c7 = arith.constant 7 : i32
    %c15 = arith.constant 15 : i32
    %cm = arith.andi %mag, %c7 : i32
    %c120 = arith.constant 120 : i32
    %eb = arith.addi %ce, %c120 : i32
    %ebs = arith.shli %eb, %c23 : i32
    %mbs = arith.shli %cm, %c20 : i32
    %normBits = arith.ori %ebs, %mbs : i32
    %mf = arith.uitofp %cm : i32 to f32
    %sub2 = arith.constant 0.001953125 : f32 // 2^-9
    %subv = arith.mulf %mf, %sub2 : f32
    %subBits = arith.bitcast %subv : f32 to i32
    %qnan = arith.constant 0x7FC00000 : i32
    %eIsZero = arith.cmpi eq, %ce, %c0 : i32
    %isNanCode = arith.cmpi eq, %mag, %c0x7F : i32
    %d0 = arith.select %eIsZero, %subBits, %normBits : i32
    %d1 = arith.select %isNanCode, %qnan, %d0 : i32
    %sign32 = arith.shli %sign, %c24 : i32
    %bits = arith.ori %d1, %sign32 : i32
    %r = arith.bitcast %bits : i32 to f32
    return %r : f32
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // positions (sections 3-5): out[i] = start + i * stride, i < count. Grid: ceil(count / 256) x 256 threads.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_positions(%out: memref<?xi64>, %start: i64, %count: index, %stride: i64) kernel {
    %i = gpu.global_id x
    %in = arith.cmpi ult, %i, %count : index
    scf.if %in {
      %ii = arith.index_cast %i : index to i64
      %m = arith.muli %ii, %stride : i64
      %v = arith.addi %start, %m : i64
      memref.store %v, %out[%i] : memref<?xi64>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // Batched bf16 GEMM with f32 accumulation (section 2 "linear", section 11 "grouped_output"):
  //   y[z*yg + m*ldy + n] = bf16( dotF32( x[z*xg + m*ldx + 0 .. K), w[z*wg + n*K + 0 .. K) ) )
  // for m < M, n < N, batch z = block_id.z. linear: ldx = K, ldy = N, one batch. grouped_output: batch = groups,
  // M = s, N = R, K = H*hd/G, ldx = H*hd, ldy = G*R, xg = K, wg = R*K, yg = R.
  // Grid: (ceil(N/16), ceil(M/16), batch) x (16, 16, 1) threads; thread (tx, ty) computes (m0+ty, n0+tx).
  // 16x32 tiles of x and w are staged in workgroup memory as f32; each thread keeps dotF32's eight lanes and tail
  // in private memory (registers once LLVM unrolls the lane loop).
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_gemm_bf16(%x: memref<?xbf16>, %w: memref<?xbf16>, %y: memref<?xbf16>, %M: index, %N: index,
                          %K: index, %ldx: index, %ldy: index, %xg: index, %wg: index, %yg: index)
      workgroup(%xs: memref<16x32xf32, #gpu.address_space<workgroup>>,
                %ws: memref<16x32xf32, #gpu.address_space<workgroup>>)
      private(%acc: memref<9xf32, #gpu.address_space<private>>)
      kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c9 = arith.constant 9 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c256 = arith.constant 256 : index
    %c512 = arith.constant 512 : index
    %zero = arith.constant 0.0 : f32
    %tx = gpu.thread_id x
    %ty = gpu.thread_id y
    %bx = gpu.block_id x
    %by = gpu.block_id y
    %bz = gpu.block_id z
    %n0 = arith.muli %bx, %c16 : index
    %m0 = arith.muli %by, %c16 : index
    %m = arith.addi %m0, %ty : index
    %n = arith.addi %n0, %tx : index
    %xbase = arith.muli %bz, %xg : index
    %wbase = arith.muli %bz, %wg : index
    %ybase = arith.muli %bz, %yg : index
    %tyx = arith.muli %ty, %c16 : index
    %tid = arith.addi %tyx, %tx : index
    // acc[0..7]: dotF32's lanes; acc[8]: its tail.
    scf.for %l = %c0 to %c9 step %c1 {
      memref.store %zero, %acc[%l] : memref<9xf32, #gpu.address_space<private>>
    }
    scf.for %k0 = %c0 to %K step %c32 {
      // Stage the 16x32 tiles of x (rows m0..) and w (rows n0..), two elements of each per thread; elements
      // outside the matrices are 0 and never enter a sum.
      scf.for %e = %tid to %c512 step %c256 {
        %r = arith.divui %e, %c32 : index
        %c = arith.remui %e, %c32 : index
        %gk = arith.addi %k0, %c : index
        %xm = arith.addi %m0, %r : index
        %xv = func.call @dsa_gemm_load(%x, %xbase, %xm, %M, %ldx, %gk, %K)
            : (memref<?xbf16>, index, index, index, index, index, index) -> f32
        memref.store %xv, %xs[%r, %c] : memref<16x32xf32, #gpu.address_space<workgroup>>
        %wn = arith.addi %n0, %r : index
        %wv = func.call @dsa_gemm_load(%w, %wbase, %wn, %N, %K, %gk, %K)
            : (memref<?xbf16>, index, index, index, index, index, index) -> f32
        memref.store %wv, %ws[%r, %c] : memref<16x32xf32, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      scf.for %kk = %c0 to %c32 step %c8 {
        %kg = arith.addi %k0, %kk : index
        %kg8 = arith.addi %kg, %c8 : index
        %full = arith.cmpi ule, %kg8, %K : index
        scf.for %l = %c0 to %c8 step %c1 {
          %kl = arith.addi %kg, %l : index
          %inK = arith.cmpi ult, %kl, %K : index
          // A full group of 8 feeds lane l; the last K % 8 elements feed the tail, in order.
          %slot = arith.select %full, %l, %c8 : index
          scf.if %inK {
            %kt = arith.addi %kk, %l : index
            %a = memref.load %xs[%ty, %kt] : memref<16x32xf32, #gpu.address_space<workgroup>>
            %bv = memref.load %ws[%tx, %kt] : memref<16x32xf32, #gpu.address_space<workgroup>>
            %p = arith.mulf %a, %bv : f32
            %old = memref.load %acc[%slot] : memref<9xf32, #gpu.address_space<private>>
            %s = arith.addf %old, %p : f32
            memref.store %s, %acc[%slot] : memref<9xf32, #gpu.address_space<private>>
          }
        }
      }
      gpu.barrier
    }
    %mIn = arith.cmpi ult, %m, %M : index
    %nIn = arith.cmpi ult, %n, %N : index
    %in = arith.andi %mIn, %nIn : i1
    scf.if %in {
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %c6 = arith.constant 6 : index
      %c7 = arith.constant 7 : index
      %l0 = memref.load %acc[%c0] : memref<9xf32, #gpu.address_space<private>>
      %l1 = memref.load %acc[%c1] : memref<9xf32, #gpu.address_space<private>>
      %l2 = memref.load %acc[%c2] : memref<9xf32, #gpu.address_space<private>>
      %l3 = memref.load %acc[%c3] : memref<9xf32, #gpu.address_space<private>>
      %l4 = memref.load %acc[%c4] : memref<9xf32, #gpu.address_space<private>>
      %l5 = memref.load %acc[%c5] : memref<9xf32, #gpu.address_space<private>>
      %l6 = memref.load %acc[%c6] : memref<9xf32, #gpu.address_space<private>>
      %l7 = memref.load %acc[%c7] : memref<9xf32, #gpu.address_space<private>>
      %tail = memref.load %acc[%c8] : memref<9xf32, #gpu.address_space<private>>
      %s = func.call @dsa_combine_lanes(%l0, %l1, %l2, %l3, %l4, %l5, %l6, %l7, %tail)
          : (f32, f32, f32, f32, f32, f32, f32, f32, f32) -> f32
      %yo = arith.muli %m, %ldy : index
      %yi0 = arith.addi %ybase, %yo : index
      %yi = arith.addi %yi0, %n : index
      %b = arith.truncf %s : f32 to bf16
      memref.store %b, %y[%yi] : memref<?xbf16>
    }
    gpu.return
  }

  // f32(src[base + row * ld + k]) when row < rows and k < K, else 0 (one element of a GEMM tile).
  func.func private @dsa_gemm_load(%src: memref<?xbf16>, %base: index, %row: index, %rows: index, %ld: index,
                                   %k: index, %K: index) -> f32 {
    %zero = arith.constant 0.0 : f32
    %rIn = arith.cmpi ult, %row, %rows : index
    %kIn = arith.cmpi ult, %k, %K : index
    %in = arith.andi %rIn, %kIn : i1
    %v = scf.if %in -> (f32) {
      %o0 = arith.muli %row, %ld : index
      %o1 = arith.addi %base, %o0 : index
      %o = arith.addi %o1, %k : index
      %b = memref.load %src[%o] : memref<?xbf16>
      %f = arith.extf %b : bf16 to f32
      scf.yield %f : f32
    } else {
      scf.yield %zero : f32
    }
    return %v : f32
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // rms_norm (section 2), bf16 x: per row of D, r = 1 / sqrt(dotF32(x, x) / f32(D) + eps);
  // y[d] = bf16(w[d] * (x[d] * r)). Grid: rows blocks x 256 threads; thread 0 forms r (the reference's order),
  // every thread then writes a strided part of the row.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_rms_norm_bf16(%x: memref<?xbf16>, %w: memref<?xbf16>, %y: memref<?xbf16>, %rows: index,
                              %D: index, %eps: f32)
      workgroup(%sh: memref<1xf32, #gpu.address_space<workgroup>>)
      kernel {
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    %row = gpu.block_id x
    %tid = gpu.thread_id x
    %nt = gpu.block_dim x
    %base = arith.muli %row, %D : index
    %first = arith.cmpi eq, %tid, %c0 : index
    scf.if %first {
      %ss = func.call @dsa_dot_bf16(%x, %base, %x, %base, %D)
          : (memref<?xbf16>, index, memref<?xbf16>, index, index) -> f32
      %di = arith.index_cast %D : index to i64
      %df = arith.sitofp %di : i64 to f32
      %mean = arith.divf %ss, %df : f32
      %me = arith.addf %mean, %eps : f32
      %sq = llvm.call @__nv_fsqrt_rn(%me) : (f32) -> f32
      %r = arith.divf %one, %sq : f32
      memref.store %r, %sh[%c0] : memref<1xf32, #gpu.address_space<workgroup>>
    }
    gpu.barrier
    %r = memref.load %sh[%c0] : memref<1xf32, #gpu.address_space<workgroup>>
    scf.for %d = %tid to %D step %nt {
      %i = arith.addi %base, %d : index
      %xv = memref.load %x[%i] : memref<?xbf16>
      %wv = memref.load %w[%d] : memref<?xbf16>
      %xf = arith.extf %xv : bf16 to f32
      %wf = arith.extf %wv : bf16 to f32
      %xr = arith.mulf %xf, %r : f32
      %v = arith.mulf %wf, %xr : f32
      %b = arith.truncf %v : f32 to bf16
      memref.store %b, %y[%i] : memref<?xbf16>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // apply_rope (section 2): x [s, rpt rows, hd] bf16, pos [s] i64, freqs [rd/2] f32 (ropeFrequencies, computed at
  // compile time). Element d >= hd - rd of a row belongs to adjacent pair k = (d - (hd - rd)) / 2;
  // a = f32(pos[t]) * freqs[k], (c, sn) = (cos a, sin a) (sn negated when inverse != 0);
  // even element: bf16(x0*c - x1*sn), odd: bf16(x0*sn + x1*c). Other elements are copied.
  // Grid: ceil(s*rpt*hd / 256) x 256 threads, one output element each.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_apply_rope(%x: memref<?xbf16>, %pos: memref<?xi64>, %freqs: memref<?xf32>, %y: memref<?xbf16>,
                           %s: index, %rpt: index, %hd: index, %rd: index, %inverse: i32) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %i = gpu.global_id x
    %rows = arith.muli %s, %rpt : index
    %total = arith.muli %rows, %hd : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %row = arith.divui %i, %hd : index
      %d = arith.remui %i, %hd : index
      %t = arith.divui %row, %rpt : index
      %pass = arith.subi %hd, %rd : index
      %copy = arith.cmpi ult, %d, %pass : index
      %v = scf.if %copy -> (bf16) {
        %xv = memref.load %x[%i] : memref<?xbf16>
        scf.yield %xv : bf16
      } else {
        %e = arith.subi %d, %pass : index
        %k = arith.divui %e, %c2 : index
        %odd = arith.remui %e, %c2 : index
        %b = arith.subi %i, %odd : index
        %b1 = arith.addi %b, %c1 : index
        %x0b = memref.load %x[%b] : memref<?xbf16>
        %x1b = memref.load %x[%b1] : memref<?xbf16>
        %x0 = arith.extf %x0b : bf16 to f32
        %x1 = arith.extf %x1b : bf16 to f32
        %pi = memref.load %pos[%t] : memref<?xi64>
        %p = arith.sitofp %pi : i64 to f32
        %f = memref.load %freqs[%k] : memref<?xf32>
        %a = arith.mulf %p, %f : f32
        %ad = arith.extf %a : f32 to f64
        %cd = math.cos %ad : f64
        %sd = math.sin %ad : f64
        %c = arith.truncf %cd : f64 to f32
        %sn0 = arith.truncf %sd : f64 to f32
        %zi = arith.constant 0 : i32
        %inv = arith.cmpi ne, %inverse, %zi : i32
        %nsn = arith.negf %sn0 : f32
        %sn = arith.select %inv, %nsn, %sn0 : f32
        %isOdd = arith.cmpi ne, %odd, %c0 : index
        %r = scf.if %isOdd -> (f32) {
          %p0 = arith.mulf %x0, %sn : f32
          %p1 = arith.mulf %x1, %c : f32
          %o = arith.addf %p0, %p1 : f32
          scf.yield %o : f32
        } else {
          %p0 = arith.mulf %x0, %c : f32
          %p1 = arith.mulf %x1, %sn : f32
          %o = arith.subf %p0, %p1 : f32
          scf.yield %o : f32
        }
        %rb = arith.truncf %r : f32 to bf16
        scf.yield %rb : bf16
      }
      memref.store %v, %y[%i] : memref<?xbf16>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // act_quant_fp8 (section 2) on nblocks consecutive blocks of `block` elements: amax = max(max|x|, 1e-4) (NaN if
  // any element is NaN); s = pow2_ceil(amax / 448); y = bf16(e4m3(clamp(x / s, -448, 448)) * s).
  // Grid: ceil(nblocks / 128) x 128 threads, one block of elements per thread.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_act_quant_fp8(%x: memref<?xbf16>, %y: memref<?xbf16>, %nblocks: index, %block: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %floor = arith.constant 1.000000e-04 : f32
    %fmax = arith.constant 448.0 : f32
    %nfmax = arith.constant -448.0 : f32
    %nan = arith.constant 0x7FC00000 : f32
    %false = arith.constant false
    %b = gpu.global_id x
    %in = arith.cmpi ult, %b, %nblocks : index
    scf.if %in {
      %base = arith.muli %b, %block : index
      %am:2 = scf.for %j = %c0 to %block step %c1 iter_args(%amax = %zero, %anyNan = %false) -> (f32, i1) {
        %i = arith.addi %base, %j : index
        %v = memref.load %x[%i] : memref<?xbf16>
        %f = arith.extf %v : bf16 to f32
        %a = math.absf %f : f32
        %isNan = arith.cmpf uno, %a, %a : f32
        %nn = arith.ori %anyNan, %isNan : i1
        %gt = arith.cmpf ogt, %a, %amax : f32
        %m = arith.select %gt, %a, %amax : f32
        scf.yield %m, %nn : f32, i1
      }
      %aboveFloor = arith.cmpf ogt, %am#0, %floor : f32
      %fl = arith.select %aboveFloor, %am#0, %floor : f32
      %amax = arith.select %am#1, %nan, %fl : f32
      %q = arith.divf %amax, %fmax : f32
      %sc = func.call @dsa_pow2_ceil(%q) : (f32) -> f32
      scf.for %j = %c0 to %block step %c1 {
        %i = arith.addi %base, %j : index
        %v = memref.load %x[%i] : memref<?xbf16>
        %f = arith.extf %v : bf16 to f32
        %u = arith.divf %f, %sc : f32
        %hi = arith.cmpf ogt, %u, %fmax : f32
        %lo = arith.cmpf olt, %u, %nfmax : f32
        %u1 = arith.select %hi, %fmax, %u : f32
        %u2 = arith.select %lo, %nfmax, %u1 : f32
        %e = func.call @dsa_round_e4m3(%u2) : (f32) -> f32
        %r = arith.mulf %e, %sc : f32
        %rb = arith.truncf %r : f32 to bf16
        memref.store %rb, %y[%i] : memref<?xbf16>
      }
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // ring_update (section 4): ring [W, hd], kv [s, hd] at positions start .. start+s-1 (start >= 0). Token i is in
  // slot (start + i) % W for the last min(s, W) tokens i >= i0 = max(0, s - W); slot `slot` holds token
  // i0 + (slot - (start + i0) % W) mod W when that is < s, else keeps the ring's row.
  // Grid: ceil(W*hd / 256) x 256 threads, one element of the new ring each (out must not alias ring or kv).
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_ring_update(%ring: memref<?xbf16>, %kv: memref<?xbf16>, %out: memref<?xbf16>, %W: index,
                            %hd: index, %s: index, %start: i64) kernel {
    %c0 = arith.constant 0 : index
    %i = gpu.global_id x
    %total = arith.muli %W, %hd : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %slot = arith.divui %i, %hd : index
      %d = arith.remui %i, %hd : index
      %more = arith.cmpi ugt, %s, %W : index
      %sw = arith.subi %s, %W : index
      %i0 = arith.select %more, %sw, %c0 : index
      %i064 = arith.index_cast %i0 : index to i64
      %W64 = arith.index_cast %W : index to i64
      %p0 = arith.addi %start, %i064 : i64
      %f64 = arith.remui %p0, %W64 : i64
      %first = arith.index_cast %f64 : i64 to index
      %sW = arith.addi %slot, %W : index
      %rel0 = arith.subi %sW, %first : index
      %rel = arith.remui %rel0, %W : index
      %tok = arith.addi %i0, %rel : index
      %written = arith.cmpi ult, %tok, %s : index
      %v = scf.if %written -> (bf16) {
        %o0 = arith.muli %tok, %hd : index
        %o = arith.addi %o0, %d : index
        %kvv = memref.load %kv[%o] : memref<?xbf16>
        scf.yield %kvv : bf16
      } else {
        %rv = memref.load %ring[%i] : memref<?xbf16>
        scf.yield %rv : bf16
      }
      memref.store %v, %out[%i] : memref<?xbf16>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // window_indices (section 4), i32 [count, width]:
  //   prefill (start == 0, width = min(count, W)): j = max(0, t - W + 1) + c, -1 where j > t;
  //   decode (start > 0, count == 1, width = W): slot = (start % W + 1 + c) % W (oldest first), -1 where
  //   slot > start. The host checks start >= 0 and count == 1 in decode.
  // Grid: ceil(count*width / 256) x 256 threads.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_window_indices(%out: memref<?xi32>, %start: i64, %count: index, %W: index, %width: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %z64 = arith.constant 0 : i64
    %m1 = arith.constant -1 : i64
    %i = gpu.global_id x
    %total = arith.muli %count, %width : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %t = arith.divui %i, %width : index
      %c = arith.remui %i, %width : index
      // prefill
      %t1 = arith.addi %t, %c1 : index
      %past = arith.cmpi ugt, %t1, %W : index
      %lo0 = arith.subi %t1, %W : index
      %lo = arith.select %past, %lo0, %c0 : index
      %j = arith.addi %lo, %c : index
      %after = arith.cmpi ugt, %j, %t : index
      %j64 = arith.index_cast %j : index to i64
      %pv = arith.select %after, %m1, %j64 : i64
      // decode
      %W64 = arith.index_cast %W : index to i64
      %c64 = arith.index_cast %c : index to i64
      %one = arith.constant 1 : i64
      %sm = arith.remui %start, %W64 : i64
      %oldest = arith.addi %sm, %one : i64
      %sc0 = arith.addi %oldest, %c64 : i64
      %slot = arith.remui %sc0, %W64 : i64
      %filling = arith.cmpi sgt, %slot, %start : i64
      %dv = arith.select %filling, %m1, %slot : i64
      %prefill = arith.cmpi eq, %start, %z64 : i64
      %v = arith.select %prefill, %pv, %dv : i64
      %v32 = arith.trunci %v : i64 to i32
      memref.store %v32, %out[%i] : memref<?xi32>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // sparse_attn (section 10): q [s, H, hd], kv [n, hd] bf16, idx [s, k] i32, sink [H] f32 -> o [s, H, hd] bf16;
  // p is an f32 scratch of s*H*k elements. One workgroup per (t, h) (block_id.x = t*H + h), 128 threads:
  //   1. z_j = dotF32(q[t,h], kv[idx_j]) * scale (-inf for idx_j == -1), j strided over the threads;
  //   2. thread 0, in j order as the reference: m = max(sink, z_j...), den = exp(sink - m) + sum_j exp(z_j - m);
  //   3. p_j = exp(z_j - m) / den (0 for idx_j == -1), j strided;
  //   4. o[d] = bf16(sum_j p_j * kv[idx_j, d]) in j order, d strided.
  // A row whose indices are all -1 (or k == 0) gives zeros. An index outside [-1, n) (which the verifier cannot
  // rule out for a dynamic kv) poisons that (t, h) row with NaN instead of reading out of bounds.
  // Grid: s*H workgroups x 128 threads.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_sparse_attn(%q: memref<?xbf16>, %kv: memref<?xbf16>, %idx: memref<?xi32>, %sink: memref<?xf32>,
                            %o: memref<?xbf16>, %p: memref<?xf32>, %s: index, %H: index, %hd: index, %n: index,
                            %k: index, %scale: f32)
      workgroup(%sh: memref<3xf32, #gpu.address_space<workgroup>>)
      kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %i0 = arith.constant 0 : i32
    %im1 = arith.constant -1 : i32
    %zero = arith.constant 0.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %nan = arith.constant 0x7FC00000 : f32
    %fone = arith.constant 1.0 : f32
    %ftwo = arith.constant 2.0 : f32
    %false = arith.constant false
    %true = arith.constant true
    %bid = gpu.block_id x
    %tid = gpu.thread_id x
    %nt = gpu.block_dim x
    %t = arith.divui %bid, %H : index
    %h = arith.remui %bid, %H : index
    %qbase = arith.muli %bid, %hd : index
    %ibase = arith.muli %t, %k : index
    %pbase = arith.muli %bid, %k : index
    %n32 = arith.index_cast %n : index to i32
    // 1. scores
    scf.for %j = %tid to %k step %nt {
      %ij = arith.addi %ibase, %j : index
      %r = memref.load %idx[%ij] : memref<?xi32>
      %nonneg = arith.cmpi sge, %r, %i0 : i32
      %below = arith.cmpi slt, %r, %n32 : i32
      %valid = arith.andi %nonneg, %below : i1
      %z = scf.if %valid -> (f32) {
        %ri = arith.index_cast %r : i32 to index
        %kb = arith.muli %ri, %hd : index
        %dot = func.call @dsa_dot_bf16(%q, %qbase, %kv, %kb, %hd)
            : (memref<?xbf16>, index, memref<?xbf16>, index, index) -> f32
        %zs = arith.mulf %dot, %scale : f32
        scf.yield %zs : f32
      } else {
        scf.yield %ninf : f32
      }
      %pj = arith.addi %pbase, %j : index
      memref.store %z, %p[%pj] : memref<?xf32>
    }
    gpu.barrier
    // 2. max and denominator, sequentially in j order; status: 0 ok, 1 no valid index, 2 bad index.
    %first = arith.cmpi eq, %tid, %c0 : index
    scf.if %first {
      %sk = memref.load %sink[%h] : memref<?xf32>
      %st:3 = scf.for %j = %c0 to %k step %c1 iter_args(%m = %sk, %any = %false, %bad = %false) -> (f32, i1, i1) {
        %ij = arith.addi %ibase, %j : index
        %r = memref.load %idx[%ij] : memref<?xi32>
        %nonneg = arith.cmpi sge, %r, %i0 : i32
        %tooLow = arith.cmpi slt, %r, %im1 : i32
        %tooHigh = arith.cmpi sge, %r, %n32 : i32
        %oob = arith.ori %tooLow, %tooHigh : i1
        %pj = arith.addi %pbase, %j : index
        %z = memref.load %p[%pj] : memref<?xf32>
        // std::max(m, z) = m < z ? z : m
        %lt = arith.cmpf olt, %m, %z : f32
        %m1 = arith.select %lt, %z, %m : f32
        %any1 = arith.ori %any, %nonneg : i1
        %bad1 = arith.ori %bad, %oob : i1
        scf.yield %m1, %any1, %bad1 : f32, i1, i1
      }
      %d0a = arith.subf %sk, %st#0 : f32
      %d0 = func.call @dsa_exp(%d0a) : (f32) -> f32
      %den = scf.for %j = %c0 to %k step %c1 iter_args(%dacc = %d0) -> (f32) {
        %ij = arith.addi %ibase, %j : index
        %r = memref.load %idx[%ij] : memref<?xi32>
        %nonneg = arith.cmpi sge, %r, %i0 : i32
        %dn = scf.if %nonneg -> (f32) {
          %pj = arith.addi %pbase, %j : index
          %z = memref.load %p[%pj] : memref<?xf32>
          %zm = arith.subf %z, %st#0 : f32
          %ez = func.call @dsa_exp(%zm) : (f32) -> f32
          %da = arith.addf %dacc, %ez : f32
          scf.yield %da : f32
        } else {
          scf.yield %dacc : f32
        }
        scf.yield %dn : f32
      }
      %none = arith.xori %st#1, %true : i1
      %stat0 = arith.select %none, %fone, %zero : f32
      %stat = arith.select %st#2, %ftwo, %stat0 : f32
      memref.store %st#0, %sh[%c0] : memref<3xf32, #gpu.address_space<workgroup>>
      memref.store %den, %sh[%c1] : memref<3xf32, #gpu.address_space<workgroup>>
      memref.store %stat, %sh[%c2] : memref<3xf32, #gpu.address_space<workgroup>>
    }
    gpu.barrier
    %mv = memref.load %sh[%c0] : memref<3xf32, #gpu.address_space<workgroup>>
    %denv = memref.load %sh[%c1] : memref<3xf32, #gpu.address_space<workgroup>>
    %statv = memref.load %sh[%c2] : memref<3xf32, #gpu.address_space<workgroup>>
    // 3. probabilities
    scf.for %j = %tid to %k step %nt {
      %ij = arith.addi %ibase, %j : index
      %r = memref.load %idx[%ij] : memref<?xi32>
      %nonneg = arith.cmpi sge, %r, %i0 : i32
      %pj = arith.addi %pbase, %j : index
      %z = memref.load %p[%pj] : memref<?xf32>
      %pv = scf.if %nonneg -> (f32) {
        %zm = arith.subf %z, %mv : f32
        %ez = func.call @dsa_exp(%zm) : (f32) -> f32
        %q1 = arith.divf %ez, %denv : f32
        scf.yield %q1 : f32
      } else {
        scf.yield %zero : f32
      }
      memref.store %pv, %p[%pj] : memref<?xf32>
    }
    gpu.barrier
    // 4. weighted sum of the gathered rows
    %isOk = arith.cmpf oeq, %statv, %zero : f32
    %isNone = arith.cmpf oeq, %statv, %fone : f32
    scf.for %d = %tid to %hd step %nt {
      %acc = scf.for %j = %c0 to %k step %c1 iter_args(%a = %zero) -> (f32) {
        %ij = arith.addi %ibase, %j : index
        %r = memref.load %idx[%ij] : memref<?xi32>
        %nonneg = arith.cmpi sge, %r, %i0 : i32
        %below = arith.cmpi slt, %r, %n32 : i32
        %valid = arith.andi %nonneg, %below : i1
        %an = scf.if %valid -> (f32) {
          %pj = arith.addi %pbase, %j : index
          %pv = memref.load %p[%pj] : memref<?xf32>
          %ri = arith.index_cast %r : i32 to index
          %kb = arith.muli %ri, %hd : index
          %ki = arith.addi %kb, %d : index
          %kvv = memref.load %kv[%ki] : memref<?xbf16>
          %kf = arith.extf %kvv : bf16 to f32
          %pr = arith.mulf %pv, %kf : f32
          %a1 = arith.addf %a, %pr : f32
          scf.yield %a1 : f32
        } else {
          scf.yield %a : f32
        }
        scf.yield %an : f32
      }
      %v0 = arith.select %isNone, %zero, %nan : f32
      %v = arith.select %isOk, %acc, %v0 : f32
      %b = arith.truncf %v : f32 to bf16
      %oi = arith.addi %qbase, %d : index
      memref.store %b, %o[%oi] : memref<?xbf16>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // Compressed attention (sections 2, 5-9; design-compressed.md). Reference kernels: kernels/lib/
  // {Compressor,Indexer}.cpp and core/lib/Numerics/Quant.cpp. The top-k SETS are not taken here: the host downloads the
  // values, runs the reference's top-k (the runtime's dsa_cpu_topk_set, torch's CPU tie order, section 9) and
  // uploads the picks, which dsa_topk_map / dsa_candidate_mask consume.
  //===--------------------------------------------------------------------------------------------------------===//

  // dotF32 of a[abase .. abase+n) and b[bbase .. bbase+n) (f32), the reference's order (as @dsa_dot_bf16).
  func.func private @dsa_dot_f32(%a: memref<?xf32>, %abase: index, %b: memref<?xf32>, %bbase: index,
                                 %n: index) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %rem = arith.remui %n, %c8 : index
    %n8 = arith.subi %n, %rem : index
    %l:8 = scf.for %k = %c0 to %n8 step %c8
        iter_args(%a0 = %zero, %a1 = %zero, %a2 = %zero, %a3 = %zero, %a4 = %zero, %a5 = %zero, %a6 = %zero,
                  %a7 = %zero) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
      %ia = arith.addi %abase, %k : index
      %ib = arith.addi %bbase, %k : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %c6 = arith.constant 6 : index
      %c7 = arith.constant 7 : index
      %p0 = func.call @dsa_prod_f32(%a, %ia, %b, %ib, %c0) : (memref<?xf32>, index, memref<?xf32>, index, index) -> f32
      %p1 = func.call @dsa_prod_f32(%a, %ia, %b, %ib, %c1) : (memref<?xf32>, index, memref<?xf32>, index, index) -> f32
      %p2 = func.call @dsa_prod_f32(%a, %ia, %b, %ib, %c2) : (memref<?xf32>, index, memref<?xf32>, index, index) -> f32
      %p3 = func.call @dsa_prod_f32(%a, %ia, %b, %ib, %c3) : (memref<?xf32>, index, memref<?xf32>, index, index) -> f32
      %p4 = func.call @dsa_prod_f32(%a, %ia, %b, %ib, %c4) : (memref<?xf32>, index, memref<?xf32>, index, index) -> f32
      %p5 = func.call @dsa_prod_f32(%a, %ia, %b, %ib, %c5) : (memref<?xf32>, index, memref<?xf32>, index, index) -> f32
      %p6 = func.call @dsa_prod_f32(%a, %ia, %b, %ib, %c6) : (memref<?xf32>, index, memref<?xf32>, index, index) -> f32
      %p7 = func.call @dsa_prod_f32(%a, %ia, %b, %ib, %c7) : (memref<?xf32>, index, memref<?xf32>, index, index) -> f32
      %s0 = arith.addf %a0, %p0 : f32
      %s1 = arith.addf %a1, %p1 : f32
      %s2 = arith.addf %a2, %p2 : f32
      %s3 = arith.addf %a3, %p3 : f32
      %s4 = arith.addf %a4, %p4 : f32
      %s5 = arith.addf %a5, %p5 : f32
      %s6 = arith.addf %a6, %p6 : f32
      %s7 = arith.addf %a7, %p7 : f32
      scf.yield %s0, %s1, %s2, %s3, %s4, %s5, %s6, %s7 : f32, f32, f32, f32, f32, f32, f32, f32
    }
    %tail = scf.for %k = %n8 to %n step %c1 iter_args(%t = %zero) -> (f32) {
      %ia = arith.addi %abase, %k : index
      %ib = arith.addi %bbase, %k : index
      %p = func.call @dsa_prod_f32(%a, %ia, %b, %ib, %c0) : (memref<?xf32>, index, memref<?xf32>, index, index) -> f32
      %t1 = arith.addf %t, %p : f32
      scf.yield %t1 : f32
    }
    %s = func.call @dsa_combine_lanes(%l#0, %l#1, %l#2, %l#3, %l#4, %l#5, %l#6, %l#7, %tail)
        : (f32, f32, f32, f32, f32, f32, f32, f32, f32) -> f32
    return %s : f32
  }

  // a[ia + j] * b[ib + j] (f32).
  func.func private @dsa_prod_f32(%a: memref<?xf32>, %ia: index, %b: memref<?xf32>, %ib: index, %j: index) -> f32 {
    %i = arith.addi %ia, %j : index
    %k = arith.addi %ib, %j : index
    %x = memref.load %a[%i] : memref<?xf32>
    %y = memref.load %b[%k] : memref<?xf32>
    %p = arith.mulf %x, %y : f32
    return %p : f32
  }

  // f32(bf16(v)): round to bf16 (RNE) and widen back.
  func.func private @dsa_round_bf16(%v: f32) -> f32 {
    %b = arith.truncf %v : f32 to bf16
    %r = arith.extf %b : bf16 to f32
    return %r : f32
  }

  // e2m1(v) (E2M1.h roundE2M1): the grid index is the number of decision points below |v| (ties to the even code:
  // strict > at 0.25, 1.25, 2.5, 5; >= at 0.75, 1.75, 3.5), the magnitude {0, .5, 1, 1.5, 2, 3, 4, 6}[index] with
  // v's sign (also on zero); magnitudes above 6 and infinities give 6; NaN passes through unchanged.
  func.func private @dsa_round_e2m1(%v: f32) -> f32 {
    %u = arith.bitcast %v : f32 to i32
    %absMask = arith.constant 0x7FFFFFFF : i32
    %signMask = arith.constant 0x80000000 : i32
    %au = arith.andi %u, %absMask : i32
    %a = arith.bitcast %au : i32 to f32
    %p0 = arith.constant 0.25 : f32
    %p1 = arith.constant 0.75 : f32
    %p2 = arith.constant 1.25 : f32
    %p3 = arith.constant 1.75 : f32
    %p4 = arith.constant 2.5 : f32
    %p5 = arith.constant 3.5 : f32
    %p6 = arith.constant 5.0 : f32
    %g1 = arith.constant 0.5 : f32
    %g2 = arith.constant 1.0 : f32
    %g3 = arith.constant 1.5 : f32
    %g4 = arith.constant 2.0 : f32
    %g5 = arith.constant 3.0 : f32
    %g6 = arith.constant 4.0 : f32
    %g7 = arith.constant 6.0 : f32
    %zero = arith.constant 0.0 : f32
    // The magnitude rises one grid step per decision point passed (the points are increasing, so a chain of
    // selects from the top gives the same value as counting them).
    %b0 = arith.cmpf ogt, %a, %p0 : f32
    %b1 = arith.cmpf oge, %a, %p1 : f32
    %b2 = arith.cmpf ogt, %a, %p2 : f32
    %b3 = arith.cmpf oge, %a, %p3 : f32
    %b4 = arith.cmpf ogt, %a, %p4 : f32
    %b5 = arith.cmpf oge, %a, %p5 : f32
    %b6 = arith.cmpf ogt, %a, %p6 : f32
    %m0 = arith.select %b0, %g1, %zero : f32
    %m1 = arith.select %b1, %g2, %m0 : f32
    %m2 = arith.select %b2, %g3, %m1 : f32
    %m3 = arith.select %b3, %g4, %m2 : f32
    %m4 = arith.select %b4, %g5, %m3 : f32
    %m5 = arith.select %b5, %g6, %m4 : f32
    %m6 = arith.select %b6, %g7, %m5 : f32
    %mb = arith.bitcast %m6 : f32 to i32
    %sign = arith.andi %u, %signMask : i32
    %rb = arith.ori %mb, %sign : i32
    %r = arith.bitcast %rb : i32 to f32
    %isNan = arith.cmpf uno, %v, %v : f32
    %out = arith.select %isNan, %v, %r : f32
    return %out : f32
  }

  // compress_len[t] (section 6 step 5) of query t of a step of s tokens at start (>= 0, checked by the host):
  // (t + 1) // ratio in prefill (start == 0), (start + s) // ratio in decode.
  func.func private @dsa_compress_len(%t: index, %s: index, %start: i64, %ratio: i64) -> i64 {
    %z = arith.constant 0 : i64
    %one = arith.constant 1 : i64
    %t64 = arith.index_cast %t : index to i64
    %s64 = arith.index_cast %s : index to i64
    %t1 = arith.addi %t64, %one : i64
    %pl = arith.divui %t1, %ratio : i64
    %e = arith.addi %start, %s64 : i64
    %dl = arith.divui %e, %ratio : i64
    %prefill = arith.cmpi eq, %start, %z : i64
    %len = arith.select %prefill, %pl, %dl : i64
    return %len : i64
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // linear, f32 (section 2; the ratio >= 2 compressor's wkv / wgate): y[m, n] = dotF32(x[m, 0..K), w[n, 0..K)), no
  // rounding. One thread per output element (the reference order needs no tiling).
  // Grid: ceil(M*N / 256) x 256 threads.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_linear_f32(%x: memref<?xf32>, %w: memref<?xf32>, %y: memref<?xf32>, %M: index, %N: index,
                           %K: index) kernel {
    %i = gpu.global_id x
    %total = arith.muli %M, %N : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %m = arith.divui %i, %N : index
      %n = arith.remui %i, %N : index
      %xb = arith.muli %m, %K : index
      %wb = arith.muli %n, %K : index
      %d = func.call @dsa_dot_f32(%x, %xb, %w, %wb, %K) : (memref<?xf32>, index, memref<?xf32>, index, index) -> f32
      memref.store %d, %y[%i] : memref<?xf32>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // arith.extf / arith.truncf on tensors (the ratio >= 2 compressor's f32 input and bf16 pooled rows; indexer_topk's
  // f32 copy of the scores for the host top-k): n elements. truncf is cvt.rn.bf16.f32 (RNE).
  // Grid: ceil(n / 256) x 256 threads.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_extf_bf16_f32(%x: memref<?xbf16>, %y: memref<?xf32>, %n: index) kernel {
    %i = gpu.global_id x
    %in = arith.cmpi ult, %i, %n : index
    scf.if %in {
      %v = memref.load %x[%i] : memref<?xbf16>
      %f = arith.extf %v : bf16 to f32
      memref.store %f, %y[%i] : memref<?xf32>
    }
    gpu.return
  }

  gpu.func @dsa_truncf_f32_bf16(%x: memref<?xf32>, %y: memref<?xbf16>, %n: index) kernel {
    %i = gpu.global_id x
    %in = arith.cmpi ult, %i, %n : index
    scf.if %in {
      %v = memref.load %x[%i] : memref<?xf32>
      %b = arith.truncf %v : f32 to bf16
      memref.store %b, %y[%i] : memref<?xbf16>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // compress_pool, state update (section 5): kv, score [s, hd] f32, kv_state, score_state [r, hd] -> new states.
  // Prefill (start == 0): slot j < rem = s % r takes row cut + j (cut = s - rem); decode: slot start % r takes
  // row 0; other slots keep the state. The host checks start >= 0, s >= 1 and s == 1 when start > 0.
  // Grid: ceil(r*hd / 256) x 256 threads (the new states alias nothing).
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_compress_state(%kv: memref<?xf32>, %score: memref<?xf32>, %kvState: memref<?xf32>,
                               %scoreState: memref<?xf32>, %newKv: memref<?xf32>, %newScore: memref<?xf32>,
                               %r: index, %hd: index, %s: index, %start: i64) kernel {
    %c0 = arith.constant 0 : index
    %z64 = arith.constant 0 : i64
    %i = gpu.global_id x
    %total = arith.muli %r, %hd : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %j = arith.divui %i, %hd : index
      %d = arith.remui %i, %hd : index
      %prefill = arith.cmpi eq, %start, %z64 : i64
      %rem = arith.remui %s, %r : index
      %cut = arith.subi %s, %rem : index
      %r64 = arith.index_cast %r : index to i64
      %slot64 = arith.remui %start, %r64 : i64
      %slot = arith.index_cast %slot64 : i64 to index
      %inRem = arith.cmpi ult, %j, %rem : index
      %isSlot = arith.cmpi eq, %j, %slot : index
      %take = arith.select %prefill, %inRem, %isSlot : i1
      %pr = arith.addi %cut, %j : index
      %row = arith.select %prefill, %pr, %c0 : index
      %o0 = arith.muli %row, %hd : index
      %o = arith.addi %o0, %d : index
      %kvv, %scv = scf.if %take -> (f32, f32) {
        %a = memref.load %kv[%o] : memref<?xf32>
        %b = memref.load %score[%o] : memref<?xf32>
        scf.yield %a, %b : f32, f32
      } else {
        %a = memref.load %kvState[%i] : memref<?xf32>
        %b = memref.load %scoreState[%i] : memref<?xf32>
        scf.yield %a, %b : f32, f32
      }
      memref.store %kvv, %newKv[%i] : memref<?xf32>
      memref.store %scv, %newScore[%i] : memref<?xf32>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // compress_pool, pooling (section 5; poolGroup): group gi of kv, score (rows gi*r .. gi*r + r - 1, each hd
  // wide: the step's rows in prefill, the updated state in decode) -> pooled [g, hd] f32. Per (gi, d), members
  // j ascending: m = fmax over j; den = sum_j exp(score_j - m) from 0; acc = sum_j kv_j * (exp(score_j - m) / den)
  // from 0 (exp: @dsa_exp).
  // Grid: ceil(g*hd / 256) x 256 threads.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_compress_pool(%kv: memref<?xf32>, %score: memref<?xf32>, %pooled: memref<?xf32>, %g: index,
                              %r: index, %hd: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %i = gpu.global_id x
    %total = arith.muli %g, %hd : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %gi = arith.divui %i, %hd : index
      %d = arith.remui %i, %hd : index
      %base = arith.muli %gi, %r : index
      %o0a = arith.muli %base, %hd : index
      %o0 = arith.addi %o0a, %d : index
      %m0 = memref.load %score[%o0] : memref<?xf32>
      %m = scf.for %j = %c1 to %r step %c1 iter_args(%mm = %m0) -> (f32) {
        %rj = arith.addi %base, %j : index
        %oa = arith.muli %rj, %hd : index
        %o = arith.addi %oa, %d : index
        %v = memref.load %score[%o] : memref<?xf32>
        %mx = arith.maxnumf %mm, %v : f32
        scf.yield %mx : f32
      }
      %den = scf.for %j = %c0 to %r step %c1 iter_args(%acc = %zero) -> (f32) {
        %rj = arith.addi %base, %j : index
        %oa = arith.muli %rj, %hd : index
        %o = arith.addi %oa, %d : index
        %v = memref.load %score[%o] : memref<?xf32>
        %dv = arith.subf %v, %m : f32
        %e = func.call @dsa_exp(%dv) : (f32) -> f32
        %a1 = arith.addf %acc, %e : f32
        scf.yield %a1 : f32
      }
      %out = scf.for %j = %c0 to %r step %c1 iter_args(%acc = %zero) -> (f32) {
        %rj = arith.addi %base, %j : index
        %oa = arith.muli %rj, %hd : index
        %o = arith.addi %oa, %d : index
        %v = memref.load %score[%o] : memref<?xf32>
        %kvv = memref.load %kv[%o] : memref<?xf32>
        %dv = arith.subf %v, %m : f32
        %e = func.call @dsa_exp(%dv) : (f32) -> f32
        %w = arith.divf %e, %den : f32
        %p = arith.mulf %kvv, %w : f32
        %a1 = arith.addf %acc, %p : f32
        scf.yield %a1 : f32
      }
      memref.store %out, %pooled[%i] : memref<?xf32>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // fp4_quant_e8m0 / fp4_quant_e4m3 (section 2; Quant.cpp roundTripBlocks) on nblocks consecutive blocks of
  // `block` bf16 elements: amax = max(max|x|, floor) (NaN if an element is NaN), s = scale(amax / 6),
  // y = bf16(e2m1(clamp(x / s, -6, 6)) * s), with
  //   e4m3Scale == 0 (e8m0): floor 6*2^-126, scale pow2_ceil;   e4m3Scale != 0: floor 6*2^-9, scale e4m3.
  // (amax / 6 >= 2^-126 resp. 2^-9, so pow2_ceil sees a normal number and e4m3 never rounds the scale to 0.)
  // Grid: ceil(nblocks / 128) x 128 threads, one block of elements per thread.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_fp4_quant(%x: memref<?xbf16>, %y: memref<?xbf16>, %nblocks: index, %block: index,
                          %e4m3Scale: i32) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %i0 = arith.constant 0 : i32
    %zero = arith.constant 0.0 : f32
    %floorE8 = arith.constant 0x01C00000 : f32 // 6 * 2^-126
    %floorE4 = arith.constant 0.01171875 : f32 // 6 * 2^-9
    %fmax = arith.constant 6.0 : f32
    %nfmax = arith.constant -6.0 : f32
    %nan = arith.constant 0x7FC00000 : f32
    %false = arith.constant false
    %b = gpu.global_id x
    %in = arith.cmpi ult, %b, %nblocks : index
    scf.if %in {
      %useE4 = arith.cmpi ne, %e4m3Scale, %i0 : i32
      %floor = arith.select %useE4, %floorE4, %floorE8 : f32
      %base = arith.muli %b, %block : index
      %am:2 = scf.for %j = %c0 to %block step %c1 iter_args(%amax = %zero, %anyNan = %false) -> (f32, i1) {
        %i = arith.addi %base, %j : index
        %v = memref.load %x[%i] : memref<?xbf16>
        %f = arith.extf %v : bf16 to f32
        %a = math.absf %f : f32
        %isNan = arith.cmpf uno, %a, %a : f32
        %nn = arith.ori %anyNan, %isNan : i1
        %gt = arith.cmpf ogt, %a, %amax : f32
        %m = arith.select %gt, %a, %amax : f32
        scf.yield %m, %nn : f32, i1
      }
      %aboveFloor = arith.cmpf ogt, %am#0, %floor : f32
      %fl = arith.select %aboveFloor, %am#0, %floor : f32
      %amax = arith.select %am#1, %nan, %fl : f32
      %q = arith.divf %amax, %fmax : f32
      %s8 = func.call @dsa_pow2_ceil(%q) : (f32) -> f32
      %s4 = func.call @dsa_round_e4m3(%q) : (f32) -> f32
      %sc = arith.select %useE4, %s4, %s8 : f32
      scf.for %j = %c0 to %block step %c1 {
        %i = arith.addi %base, %j : index
        %v = memref.load %x[%i] : memref<?xbf16>
        %f = arith.extf %v : bf16 to f32
        %u = arith.divf %f, %sc : f32
        %hi = arith.cmpf ogt, %u, %fmax : f32
        %lo = arith.cmpf olt, %u, %nfmax : f32
        %u1 = arith.select %hi, %fmax, %u : f32
        %u2 = arith.select %lo, %nfmax, %u1 : f32
        %e = func.call @dsa_round_e2m1(%u2) : (f32) -> f32
        %r = arith.mulf %e, %sc : f32
        %rb = arith.truncf %r : f32 to bf16
        memref.store %rb, %y[%i] : memref<?xbf16>
      }
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // cache_write (sections 6 step 1, 8 step 3): cache [C, w], rows [g, w] -> out [C, w] with rows first .. first+g-1
  // replaced (first = start_pos // ratio; the host checks start_pos >= 0 and first + g <= C).
  // Grid: ceil(C*w / 256) x 256 threads (out aliases neither input).
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_cache_write(%cache: memref<?xbf16>, %rows: memref<?xbf16>, %out: memref<?xbf16>, %C: index,
                            %w: index, %first: index, %g: index) kernel {
    %i = gpu.global_id x
    %total = arith.muli %C, %w : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %row = arith.divui %i, %w : index
      %ge = arith.cmpi uge, %row, %first : index
      %end = arith.addi %first, %g : index
      %lt = arith.cmpi ult, %row, %end : index
      %written = arith.andi %ge, %lt : i1
      %v = scf.if %written -> (bf16) {
        %off = arith.muli %first, %w : index
        %j = arith.subi %i, %off : index
        %rv = memref.load %rows[%j] : memref<?xbf16>
        scf.yield %rv : bf16
      } else {
        %cv = memref.load %cache[%i] : memref<?xbf16>
        scf.yield %cv : bf16
      }
      memref.store %v, %out[%i] : memref<?xbf16>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // indexer_scores (section 6 steps 3-4), the kernel's order: iq [s, IH, ihd], w [s, IH], keys [n, ihd] bf16 ->
  // out [s, width] bf16; w' = bf16(w * weight_scale); out[t, p] = bf16(sum_h bf16(fmax(bf16(dot), 0) * w'[t, h]))
  // with dot = sum_d iq[t,h,d] * keys[p,d] sequential from 0 (NOT dotF32: the reference loop is sequential), the
  // h-sum ascending from 0. The host checks weights [s, IH] and n >= width.
  // Grid: ceil(s*width / 256) x 256 threads, one score each.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_indexer_scores(%iq: memref<?xbf16>, %w: memref<?xbf16>, %keys: memref<?xbf16>,
                               %out: memref<?xbf16>, %s: index, %IH: index, %ihd: index, %width: index,
                               %scale: f32) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %i = gpu.global_id x
    %total = arith.muli %s, %width : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %t = arith.divui %i, %width : index
      %p = arith.remui %i, %width : index
      %kb = arith.muli %p, %ihd : index
      %sum = scf.for %h = %c0 to %IH step %c1 iter_args(%acc = %zero) -> (f32) {
        %th0 = arith.muli %t, %IH : index
        %th = arith.addi %th0, %h : index
        %qb = arith.muli %th, %ihd : index
        %dot = scf.for %d = %c0 to %ihd step %c1 iter_args(%da = %zero) -> (f32) {
          %qi = arith.addi %qb, %d : index
          %ki = arith.addi %kb, %d : index
          %qv = memref.load %iq[%qi] : memref<?xbf16>
          %kv = memref.load %keys[%ki] : memref<?xbf16>
          %qf = arith.extf %qv : bf16 to f32
          %kf = arith.extf %kv : bf16 to f32
          %pr = arith.mulf %qf, %kf : f32
          %d1 = arith.addf %da, %pr : f32
          scf.yield %d1 : f32
        }
        %wv = memref.load %w[%th] : memref<?xbf16>
        %wf = arith.extf %wv : bf16 to f32
        %ws0 = arith.mulf %wf, %scale : f32
        %ws = func.call @dsa_round_bf16(%ws0) : (f32) -> f32
        %db = func.call @dsa_round_bf16(%dot) : (f32) -> f32
        %relu = arith.maxnumf %db, %zero : f32
        %term0 = arith.mulf %relu, %ws : f32
        %term = func.call @dsa_round_bf16(%term0) : (f32) -> f32
        %a1 = arith.addf %acc, %term : f32
        scf.yield %a1 : f32
      }
      %sb = arith.truncf %sum : f32 to bf16
      memref.store %sb, %out[%i] : memref<?xbf16>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // compress_visibility (section 6 step 5): scores [s, width] bf16 -> out, -inf where p >= compress_len[t].
  // Grid: ceil(s*width / 256) x 256 threads.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_compress_visibility(%scores: memref<?xbf16>, %out: memref<?xbf16>, %s: index, %width: index,
                                    %start: i64, %ratio: i64) kernel {
    %ninf = arith.constant 0xFF80 : bf16
    %i = gpu.global_id x
    %total = arith.muli %s, %width : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %t = arith.divui %i, %width : index
      %p = arith.remui %i, %width : index
      %len = func.call @dsa_compress_len(%t, %s, %start, %ratio) : (index, index, i64, i64) -> i64
      %p64 = arith.index_cast %p : index to i64
      %visible = arith.cmpi slt, %p64, %len : i64
      %v = memref.load %scores[%i] : memref<?xbf16>
      %o = arith.select %visible, %v, %ninf : bf16
      memref.store %o, %out[%i] : memref<?xbf16>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // apply_candidates (section 6 step 6): scores bf16, mask i1 (one byte per element), n elements -> out, -inf where
  // the mask is false. Grid: ceil(n / 256) x 256 threads.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_apply_candidates(%scores: memref<?xbf16>, %mask: memref<?xi1>, %out: memref<?xbf16>,
                                 %n: index) kernel {
    %ninf = arith.constant 0xFF80 : bf16
    %i = gpu.global_id x
    %in = arith.cmpi ult, %i, %n : index
    scf.if %in {
      %v = memref.load %scores[%i] : memref<?xbf16>
      %m = memref.load %mask[%i] : memref<?xi1>
      %o = arith.select %m, %v, %ninf : bf16
      memref.store %o, %out[%i] : memref<?xbf16>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // select_candidate_blocks, block scores (section 7): scores [s, width] bf16 -> out [s, nBlocks] f32. Block b's
  // score is the max over positions b*bs .. min(width, (b+1)*bs) - 1 in order from -inf (m = m < v ? v : m; the
  // first NaN wins and ends the block, as the reference); the block (compress_len[t] - 1) // bs is +inf when
  // compress_len[t] > 0. Grid: ceil(s*nBlocks / 256) x 256 threads.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_candidate_block_scores(%scores: memref<?xbf16>, %out: memref<?xf32>, %s: index, %width: index,
                                       %nBlocks: index, %bs: index, %start: i64, %ratio: i64) kernel {
    %c1 = arith.constant 1 : index
    %z64 = arith.constant 0 : i64
    %one64 = arith.constant 1 : i64
    %ninf = arith.constant 0xFF800000 : f32
    %pinf = arith.constant 0x7F800000 : f32
    %false = arith.constant false
    %i = gpu.global_id x
    %total = arith.muli %s, %nBlocks : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %t = arith.divui %i, %nBlocks : index
      %blk = arith.remui %i, %nBlocks : index
      %lo = arith.muli %blk, %bs : index
      %hi0 = arith.addi %lo, %bs : index
      %hi = arith.minui %hi0, %width : index
      %rowBase = arith.muli %t, %width : index
      %mf:2 = scf.for %p = %lo to %hi step %c1 iter_args(%m = %ninf, %seen = %false) -> (f32, i1) {
        %pi = arith.addi %rowBase, %p : index
        %vb = memref.load %scores[%pi] : memref<?xbf16>
        %v = arith.extf %vb : bf16 to f32
        %isNan = arith.cmpf uno, %v, %v : f32
        %lt = arith.cmpf olt, %m, %v : f32
        %larger = arith.select %lt, %v, %m : f32
        %m1 = arith.select %isNan, %v, %larger : f32
        %m2 = arith.select %seen, %m, %m1 : f32
        %seen1 = arith.ori %seen, %isNan : i1
        scf.yield %m2, %seen1 : f32, i1
      }
      %len = func.call @dsa_compress_len(%t, %s, %start, %ratio) : (index, index, i64, i64) -> i64
      %lm1 = arith.subi %len, %one64 : i64
      %bs64 = arith.index_cast %bs : index to i64
      %pinned = arith.divsi %lm1, %bs64 : i64
      %blk64 = arith.index_cast %blk : index to i64
      %hasLen = arith.cmpi sgt, %len, %z64 : i64
      %isPinned = arith.cmpi eq, %blk64, %pinned : i64
      %pin = arith.andi %hasLen, %isPinned : i1
      %v = arith.select %pin, %pinf, %mf#0 : f32
      memref.store %v, %out[%i] : memref<?xf32>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // select_candidate_blocks, mask (section 7): blockScores [s, nBlocks] f32, picks [s, k] i64 (the host's top-k
  // set of each row) -> mask [s, width] i1: true where p's block b = p // bs is among row t's picks and its score
  // is > -inf (a pick of value -inf or NaN only filled k). Grid: ceil(s*width / 256) x 256 threads.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_candidate_mask(%blockScores: memref<?xf32>, %picks: memref<?xi64>, %mask: memref<?xi1>,
                               %s: index, %width: index, %nBlocks: index, %k: index, %bs: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %ninf = arith.constant 0xFF800000 : f32
    %false = arith.constant false
    %i = gpu.global_id x
    %total = arith.muli %s, %width : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %t = arith.divui %i, %width : index
      %p = arith.remui %i, %width : index
      %blk = arith.divui %p, %bs : index
      %blk64 = arith.index_cast %blk : index to i64
      %pb = arith.muli %t, %k : index
      %picked = scf.for %j = %c0 to %k step %c1 iter_args(%acc = %false) -> (i1) {
        %pj = arith.addi %pb, %j : index
        %v = memref.load %picks[%pj] : memref<?xi64>
        %eq = arith.cmpi eq, %v, %blk64 : i64
        %a1 = arith.ori %acc, %eq : i1
        scf.yield %a1 : i1
      }
      %bb0 = arith.muli %t, %nBlocks : index
      %bb = arith.addi %bb0, %blk : index
      %score = memref.load %blockScores[%bb] : memref<?xf32>
      %reachable = arith.cmpf ogt, %score, %ninf : f32
      %m = arith.andi %picked, %reachable : i1
      memref.store %m, %mask[%i] : memref<?xi1>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // indexer_topk, index mapping (section 6 step 7): picks [s, k] i64 (the host's top-k set of each row, ascending)
  // -> out [s, k] i32: p + offset when p < compress_len[t], else -1 (offset: s in prefill, window_size in decode).
  // Grid: ceil(s*k / 256) x 256 threads.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_topk_map(%picks: memref<?xi64>, %out: memref<?xi32>, %s: index, %k: index, %start: i64,
                         %ratio: i64, %offset: i64) kernel {
    %m1 = arith.constant -1 : i64
    %i = gpu.global_id x
    %total = arith.muli %s, %k : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %t = arith.divui %i, %k : index
      %p = memref.load %picks[%i] : memref<?xi64>
      %len = func.call @dsa_compress_len(%t, %s, %start, %ratio) : (index, index, i64, i64) -> i64
      %visible = arith.cmpi slt, %p, %len : i64
      %po = arith.addi %p, %offset : i64
      %v = arith.select %visible, %po, %m1 : i64
      %v32 = arith.trunci %v : i64 to i32
      memref.store %v32, %out[%i] : memref<?xi32>
    }
    gpu.return
  }

  //===--------------------------------------------------------------------------------------------------------===//
  // tensor.concat (the compressed layers' window rows ++ compressed rows, window indices ++ compressed indices):
  //   rows: a [na] ++ b [nb] flat bf16 (concatenation along dim 0 of row-major tensors);
  //   cols: a [rows, wa] ++ b [rows, wb] i32 along dim 1.
  // Grid: ceil(total / 256) x 256 threads.
  //===--------------------------------------------------------------------------------------------------------===//
  gpu.func @dsa_concat_rows_bf16(%a: memref<?xbf16>, %b: memref<?xbf16>, %out: memref<?xbf16>, %na: index,
                                 %nb: index) kernel {
    %i = gpu.global_id x
    %total = arith.addi %na, %nb : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %fromA = arith.cmpi ult, %i, %na : index
      %v = scf.if %fromA -> (bf16) {
        %x = memref.load %a[%i] : memref<?xbf16>
        scf.yield %x : bf16
      } else {
        %j = arith.subi %i, %na : index
        %x = memref.load %b[%j] : memref<?xbf16>
        scf.yield %x : bf16
      }
      memref.store %v, %out[%i] : memref<?xbf16>
    }
    gpu.return
  }

  gpu.func @dsa_concat_cols_i32(%a: memref<?xi32>, %b: memref<?xi32>, %out: memref<?xi32>, %rows: index,
                                %wa: index, %wb: index) kernel {
    %i = gpu.global_id x
    %w = arith.addi %wa, %wb : index
    %total = arith.muli %rows, %w : index
    %in = arith.cmpi ult, %i, %total : index
    scf.if %in {
      %r = arith.divui %i, %w : index
      %c = arith.remui %i, %w : index
      %fromA = arith.cmpi ult, %c, %wa : index
      %v = scf.if %fromA -> (i32) {
        %o0 = arith.muli %r, %wa : index
        %o = arith.addi %o0, %c : index
        %x = memref.load %a[%o] : memref<?xi32>
        scf.yield %x : i32
      } else {
        %o0 = arith.muli %r, %wb : index
        %cb = arith.subi %c, %wa : index
        %o = arith.addi %o0, %cb : index
        %x = memref.load %b[%o] : memref<?xi32>
        scf.yield %x : i32
      }
      memref.store %v, %out[%i] : memref<?xi32>
    }
    gpu.return
  }

  // libdevice's IEEE round-to-nearest f32 square root (math.sqrt would become libdevice's approximate sqrtf, and
  // llvm.intr.sqrt is not accepted by convert-gpu-to-nvvm); gpu-module-to-binary links libdevice. Declared
  // as an llvm.func so that it keeps its name (a func.func declaration would get a _mlir_ciface_ wrapper).
  llvm.func @__nv_fsqrt_rn(f32) -> f32

  // exp(v) in f32: f64 exp (libdevice) rounded to f32.
  func.func private @dsa_exp(%v: f32) -> f32 {
    %d = arith.extf %v : f32 to f64
    %e = math.exp %d : f64
    %r = arith.truncf %e : f64 to f32
    return %r : f32
  }
}
