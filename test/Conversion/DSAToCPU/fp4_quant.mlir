// dsa.fp4_quant_e8m0 / dsa.fp4_quant_e4m3 -> per block: amax (a > amax ? a : amax from 0, NaN flag), the floor
// (6 * 2^-126 = 7.0529661E-38 for e8m0, 6 * 2^-9 = 0.01171875 for e4m3), the scale on the f32 bits of amax / 6
// (pow2_ceil: exponent field + 1 when a mantissa bit is set, ctlz for denormals; or the e4m3 RNE rounding), then
// x = bf16(e2m1(clamp(x / s, -6, 6)) * s) with e2m1 as the number of decision points below |v|: strict > at 0.25,
// 1.25, 2.5, 5 and >= at 0.75, 1.75, 3.5 (ties to the even code), the grid magnitude with v's sign bit, NaN kept.
// No fp4/fp8 builtin types are used (their upstream lowering rounds wrongly).
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s --implicit-check-not=f4E2M1 \
// RUN:   --implicit-check-not=f8E4M3 --implicit-check-not=f8E8M0

// CHECK-LABEL: func.func @e8m0
// CHECK-DAG: %[[FLOOR:.*]] = arith.constant 7.0529661E-38 : f32
// CHECK-DAG: %[[SIX:.*]] = arith.constant 6.000000e+00 : f32
// CHECK-DAG: %[[MSIX:.*]] = arith.constant -6.000000e+00 : f32
// CHECK: %[[XB:.*]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2]] output_shape [%{{.*}}, 2, 32] : tensor<?x64xbf16> into tensor<?x2x32xbf16>
// CHECK: %[[AMAX:.*]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[XB]]
// CHECK: math.absf
// CHECK: arith.cmpf uno
// CHECK: %[[SCALE:.*]] = linalg.generic {{.*}} ins(%[[AMAX]]#0, %[[AMAX]]#1
// CHECK: arith.cmpf ogt, %{{.*}}, %[[FLOOR]] : f32
// CHECK: arith.divf %{{.*}}, %[[SIX]] : f32
// CHECK: arith.andi %{{.*}}, %c2139095040_i32
// CHECK: math.ctlz
// CHECK: linalg.generic {{.*}} ins(%[[XB]], %[[SCALE]] : tensor<?x2x32xbf16>, tensor<?x2xf32>)
// CHECK: %[[Q:.*]] = arith.divf
// CHECK: arith.cmpf olt, %[[Q]], %[[MSIX]]
// CHECK: arith.cmpf ogt, %[[Q]], %[[SIX]]
// CHECK: %[[ABS:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.cmpf ogt, %[[ABS]], %{{.*}} : f32
// CHECK: arith.cmpf oge, %[[ABS]], %{{.*}} : f32
// CHECK: arith.cmpf ogt, %[[ABS]], %{{.*}} : f32
// CHECK: arith.cmpf oge, %[[ABS]], %{{.*}} : f32
// CHECK: arith.cmpf ogt, %[[ABS]], %{{.*}} : f32
// CHECK: arith.cmpf oge, %[[ABS]], %{{.*}} : f32
// CHECK: arith.cmpf ogt, %[[ABS]], %{{.*}} : f32
// CHECK: arith.andi %{{.*}}, %c-2147483648_i32
// CHECK: arith.cmpf uno
// CHECK: arith.mulf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: tensor.collapse_shape
func.func @e8m0(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %y = dsa.fp4_quant_e8m0 %x {block_size = 32 : i64} : (tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// An f32 input is quantised as given (no bf16 rounding first); the e4m3 scale: saturation at 448 (0x43E00000),
// normal range from 2^-6 (0x3C800000), RNE on the 20 dropped bits (0x7FFFF + the lowest kept bit).
// CHECK-LABEL: func.func @e4m3
// CHECK-DAG: %[[FLOOR4:.*]] = arith.constant 0.01171875 : f32
// CHECK: tensor.expand_shape %arg0 {{\[}}[0], [1, 2]] output_shape [%{{.*}}, 2, 16] : tensor<?x32xf32> into tensor<?x2x16xf32>
// CHECK: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32, %{{.*}}: i1):
// CHECK-NEXT: math.absf %[[IN]] : f32
// CHECK: arith.cmpf ogt, %{{.*}}, %[[FLOOR4]] : f32
// CHECK-NOT: math.ctlz
// CHECK-DAG: arith.cmpi uge, %{{.*}}, %c1138753536_i32
// CHECK-DAG: arith.cmpi uge, %{{.*}}, %c1015021568_i32
// CHECK-DAG: arith.addi %{{.*}}, %c524287_i32
// CHECK: linalg.yield
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @e4m3(%x: tensor<?x32xf32>) -> tensor<?x32xbf16> {
  %y = dsa.fp4_quant_e4m3 %x {block_size = 16 : i64} : (tensor<?x32xf32>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}
