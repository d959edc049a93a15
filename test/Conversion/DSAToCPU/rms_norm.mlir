// dsa.rms_norm -> the kernel's order: sum of squares as a lane dot (dotF32), mean = sum / f32(D),
// r = 1 / sqrt(mean + eps) (math.sqrt and an f32 division, never rsqrt), y = bf16(w[d] * (x[d] * r)).
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @rms
// CHECK-DAG: %[[ONE:[a-zA-Z0-9_#]+]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[EPS:[a-zA-Z0-9_#]+]] = arith.constant 9.99999968E-21 : f32
// CHECK-DAG: %[[D:[a-zA-Z0-9_#]+]] = arith.constant 1.600000e+01 : f32
// CHECK-DAG: %[[ZERO:[a-zA-Z0-9_#]+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[R:[a-zA-Z0-9_#]+]] = linalg.generic {{.*}}iterator_types = ["parallel"]} outs(%{{.*}} : tensor<?xf32>)
// CHECK: %[[ROW:[a-zA-Z0-9_#]+]] = linalg.index 0 : index
// CHECK: scf.for %[[K:[a-zA-Z0-9_#]+]] = %c0 to %c16 step %c8 iter_args(%[[A:[a-zA-Z0-9_#]+]] = %{{.*}}) -> (vector<8xf32>)
// CHECK: %[[XV:[a-zA-Z0-9_#]+]] = vector.transfer_read %arg0[%[[ROW]], %[[K]]]
// CHECK: %[[XF:[a-zA-Z0-9_#]+]] = arith.extf %[[XV]]
// CHECK: %[[SQ:[a-zA-Z0-9_#]+]] = arith.mulf %[[XF]], %[[XF]] : vector<8xf32>
// CHECK: arith.addf %[[A]], %[[SQ]] : vector<8xf32>
// The kernel's dotF32 adds its (empty) tail sum, +0.0, last.
// CHECK: %[[SUM:[a-zA-Z0-9_#]+]] = arith.addf %{{.*}}, %[[ZERO]] : f32
// CHECK-NEXT: %[[MEAN:[a-zA-Z0-9_#]+]] = arith.divf %[[SUM]], %[[D]] : f32
// CHECK-NEXT: %[[ME:[a-zA-Z0-9_#]+]] = arith.addf %[[MEAN]], %[[EPS]] : f32
// CHECK-NEXT: %[[ROOT:[a-zA-Z0-9_#]+]] = math.sqrt %[[ME]] : f32
// CHECK-NEXT: %[[INV:[a-zA-Z0-9_#]+]] = arith.divf %[[ONE]], %[[ROOT]] : f32
// CHECK-NEXT: linalg.yield %[[INV]] : f32
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[R]], %arg1 : tensor<?x16xbf16>, tensor<?xf32>, tensor<16xbf16>)
// CHECK-NEXT: ^bb0(%[[XV:[a-zA-Z0-9_#]+]]: bf16, %[[RV:[a-zA-Z0-9_#]+]]: f32, %[[WV:[a-zA-Z0-9_#]+]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[XF:[a-zA-Z0-9_#]+]] = arith.extf %[[XV]] : bf16 to f32
// CHECK-NEXT: %[[XR:[a-zA-Z0-9_#]+]] = arith.mulf %[[XF]], %[[RV]] : f32
// CHECK-NEXT: %[[WF:[a-zA-Z0-9_#]+]] = arith.extf %[[WV]] : bf16 to f32
// CHECK-NEXT: %[[Y:[a-zA-Z0-9_#]+]] = arith.mulf %[[WF]], %[[XR]] : f32
// CHECK-NEXT: %[[YB:[a-zA-Z0-9_#]+]] = arith.truncf %[[Y]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[YB]] : bf16
func.func @rms(%x: tensor<?x16xbf16>, %w: tensor<16xbf16>) -> tensor<?x16xbf16> {
  %y = dsa.rms_norm %x, %w {eps = 9.99999968E-21 : f32} : (tensor<?x16xbf16>, tensor<16xbf16>) -> tensor<?x16xbf16>
  return %y : tensor<?x16xbf16>
}

// An f32 input (the compressor's pooled rows) is used as is; a rank-1 x is viewed as one row.
// CHECK-LABEL: func.func @rms_f32_rank1
// CHECK: tensor.expand_shape %arg0 {{\[}}[0, 1]] output_shape [1, 24] : tensor<24xf32> into tensor<1x24xf32>
// CHECK-NOT: arith.extf %{{.*}} : f32
// CHECK: math.sqrt
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1]] : tensor<1x24xbf16> into tensor<24xbf16>
func.func @rms_f32_rank1(%x: tensor<24xf32>, %w: tensor<24xbf16>) -> tensor<24xbf16> {
  %y = dsa.rms_norm %x, %w {eps = 1.0e-6 : f32} : (tensor<24xf32>, tensor<24xbf16>) -> tensor<24xbf16>
  return %y : tensor<24xbf16>
}
