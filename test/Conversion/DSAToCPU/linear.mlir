// dsa.linear -> the kernels' dotF32 order (Kernels.cpp): a reduction generic over [M, N, K/8, 8] with the eight
// lanes as the innermost parallel dim, a tail generic over the last K % 8 columns, and a combining generic
// ((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7)) + tail, rounded to bf16 (bf16 linear) or not (f32 linear).
// RUN: dsa-opt %s --dsa-to-cpu | FileCheck %s

// K = 13: 1 lane block + a tail of 5.
// CHECK-LABEL: func.func @linear_tail
// CHECK-SAME: (%[[X:[a-zA-Z0-9_#]+]]: tensor<?x13xbf16>, %[[W:[a-zA-Z0-9_#]+]]: tensor<5x13xbf16>)
// CHECK: %[[ACC0:[a-zA-Z0-9_#]+]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x5x8xf32>)
// CHECK: %[[XS:[a-zA-Z0-9_#]+]] = tensor.extract_slice %[[X]][0, 0] [%{{.*}}, 8] [1, 1]
// CHECK: %[[XL:[a-zA-Z0-9_#]+]] = tensor.expand_shape %[[XS]] {{\[}}[0], [1, 2]] {{.*}} into tensor<?x1x8xbf16>
// CHECK: %[[WS:[a-zA-Z0-9_#]+]] = tensor.extract_slice %[[W]][0, 0] [5, 8] [1, 1]
// CHECK: %[[WL:[a-zA-Z0-9_#]+]] = tensor.expand_shape %[[WS]] {{.*}} into tensor<5x1x8xbf16>
// CHECK: %[[ACC:[a-zA-Z0-9_#]+]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction", "parallel"]
// CHECK-SAME: ins(%[[XL]], %[[WL]] : tensor<?x1x8xbf16>, tensor<5x1x8xbf16>) outs(%[[ACC0]] : tensor<?x5x8xf32>)
// CHECK: arith.extf
// CHECK: arith.extf
// CHECK: %[[P:[a-zA-Z0-9_#]+]] = arith.mulf
// CHECK: arith.addf %{{.*}}, %[[P]] : f32
// CHECK: tensor.extract_slice %[[X]][0, 8] [%{{.*}}, 5] [1, 1]
// CHECK: tensor.extract_slice %[[W]][0, 8] [5, 5] [1, 1]
// CHECK: %[[TAIL:[a-zA-Z0-9_#]+]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[ACC]], %[[ACC]], %[[ACC]], %[[ACC]], %[[ACC]], %[[ACC]], %[[ACC]], %[[ACC]], %[[TAIL]] :
// CHECK-NEXT: ^bb0(%[[A0:[a-zA-Z0-9_#]+]]: f32, %[[A1:[a-zA-Z0-9_#]+]]: f32, %[[A2:[a-zA-Z0-9_#]+]]: f32, %[[A3:[a-zA-Z0-9_#]+]]: f32, %[[A4:[a-zA-Z0-9_#]+]]: f32, %[[A5:[a-zA-Z0-9_#]+]]: f32, %[[A6:[a-zA-Z0-9_#]+]]: f32, %[[A7:[a-zA-Z0-9_#]+]]: f32, %[[T:[a-zA-Z0-9_#]+]]: f32, %{{.*}}: bf16):
// CHECK-DAG: %[[S26:[a-zA-Z0-9_#]+]] = arith.addf %[[A2]], %[[A6]]
// CHECK-DAG: %[[S37:[a-zA-Z0-9_#]+]] = arith.addf %[[A3]], %[[A7]]
// CHECK-DAG: %[[S15:[a-zA-Z0-9_#]+]] = arith.addf %[[A1]], %[[A5]]
// CHECK-DAG: %[[S04:[a-zA-Z0-9_#]+]] = arith.addf %[[A0]], %[[A4]]
// CHECK-DAG: %[[HI:[a-zA-Z0-9_#]+]] = arith.addf %[[S26]], %[[S37]]
// CHECK-DAG: %[[LO:[a-zA-Z0-9_#]+]] = arith.addf %[[S04]], %[[S15]]
// CHECK: %[[SUM:[a-zA-Z0-9_#]+]] = arith.addf %[[LO]], %[[HI]]
// CHECK: %[[DOT:[a-zA-Z0-9_#]+]] = arith.addf %[[SUM]], %[[T]]
// CHECK: %[[R:[a-zA-Z0-9_#]+]] = arith.truncf %[[DOT]] : f32 to bf16
// CHECK: linalg.yield %[[R]] : bf16
// CHECK-NOT: dsa.
func.func @linear_tail(%x: tensor<?x13xbf16>, %w: tensor<5x13xbf16>) -> tensor<?x5xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x13xbf16>, tensor<5x13xbf16>) -> tensor<?x5xbf16>
  return %y : tensor<?x5xbf16>
}

// K = 64 (no tail: the kernel still adds its +0.0 tail sum); rank 3 x is collapsed to rows and expanded back.
// CHECK-LABEL: func.func @linear_rank3
// CHECK: %[[XR:[a-zA-Z0-9_#]+]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<2x3x64xbf16> into tensor<6x64xbf16>
// CHECK-NOT: tensor.extract_slice
// CHECK: tensor.expand_shape %[[XR]] {{.*}} into tensor<6x8x8xbf16>
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction", "parallel"]
// CHECK: %[[ZERO:[a-zA-Z0-9_#]+]] = arith.constant 0.000000e+00 : f32
// CHECK: arith.addf %{{.*}}, %[[ZERO]] : f32
// CHECK: arith.truncf
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [2, 3, 24] : tensor<6x24xbf16> into tensor<2x3x24xbf16>
func.func @linear_rank3(%x: tensor<2x3x64xbf16>, %w: tensor<24x64xbf16>) -> tensor<2x3x24xbf16> {
  %y = dsa.linear %x, %w : (tensor<2x3x64xbf16>, tensor<24x64xbf16>) -> tensor<2x3x24xbf16>
  return %y : tensor<2x3x24xbf16>
}

// f32 linear (the ratio >= 2 compressor): no extf, no rounding.
// CHECK-LABEL: func.func @linear_f32
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: return %{{.*}} : tensor<?x7xf32>
func.func @linear_f32(%x: tensor<?x16xf32>, %w: tensor<7x16xf32>) -> tensor<?x7xf32> {
  %y = dsa.linear %x, %w : (tensor<?x16xf32>, tensor<7x16xf32>) -> tensor<?x7xf32>
  return %y : tensor<?x7xf32>
}
