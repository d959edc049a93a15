// dsa.act_quant_fp8 -> per block of 32: amax (a > amax ? a : amax from 0, NaN flag), s = pow2_ceil(max(amax, 1e-4)
// / 448) by bit manipulation (exponent field + 1 when a mantissa bit is set), x = bf16(e4m3(clamp(x/s)) * s) with
// the e4m3 rounding done on the f32 pattern (no arith.truncf to an f8 type: its lowering rounds wrongly).
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @q
// CHECK-NOT: f8E4M3
// CHECK: %[[XB:[a-zA-Z0-9_#]+]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2]] output_shape [%{{.*}}, 2, 32] : tensor<?x64xbf16> into tensor<?x2x32xbf16>
// CHECK: %[[AMAX:[a-zA-Z0-9_#]+]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[XB]]
// CHECK: math.absf
// CHECK: arith.cmpf uno
// CHECK: arith.cmpf ogt
// pow2_ceil of amax / 448: the normal fast path (exponent field in 1..254) ...
// CHECK: %[[SCALE:[a-zA-Z0-9_#]+]] = linalg.generic {{.*}} ins(%[[AMAX]]#0, %[[AMAX]]#1
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: arith.andi %{{.*}}, %c2139095040_i32
// CHECK: arith.subi %{{.*}}, %c8388608_i32
// CHECK: arith.cmpi ult, %{{.*}}, %c2130706432_i32
// ... and the denormal path (smallest power of two >= the pattern, via ctlz).
// CHECK: math.ctlz
// CHECK: linalg.generic {{.*}} ins(%[[XB]], %[[SCALE]] : tensor<?x2x32xbf16>, tensor<?x2xf32>)
// CHECK: arith.divf
// e4m3: saturation at 448 (0x43E00000), normal range from 2^-6 (0x3C800000), zero up to 2^-10 (0x3A800000),
// RNE on the 20 dropped bits (0x7FFFF + lowest kept bit), code bias 120 << 3 = 960, codes capped at 0x7E.
// CHECK-DAG: arith.cmpi uge, %{{.*}}, %c1138753536_i32
// CHECK-DAG: arith.cmpi uge, %{{.*}}, %c1015021568_i32
// CHECK-DAG: arith.cmpi ule, %{{.*}}, %c981467136_i32
// CHECK-DAG: arith.addi %{{.*}}, %c524287_i32
// CHECK-DAG: arith.subi %{{.*}}, %c960_i32
// CHECK-DAG: arith.cmpi ugt, %{{.*}}, %c126_i32
// CHECK: arith.mulf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: tensor.collapse_shape
func.func @q(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %y = dsa.act_quant_fp8 %x {block_size = 32 : i64} : (tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
