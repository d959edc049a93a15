// dsa.grouped_output (section 11): o[t] viewed as G groups of H*hd/G values, wo_a as [G, R, H*hd/G];
// og[t, g, r] = bf16(dotF32(o[t, g, :], wo_a[g, r, :])), flattened to [s, G*R].
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @grouped
// CHECK: %[[OF:[a-z0-9_]+]] = tensor.collapse_shape %arg0 {{\[}}[0], [1, 2]] : tensor<?x4x32xbf16> into tensor<?x128xbf16>
// CHECK: %[[OL:[a-z0-9_]+]] = tensor.expand_shape %[[OF]] {{.*}} into tensor<?x2x8x8xbf16>
// CHECK: %[[WL:[a-z0-9_]+]] = tensor.expand_shape %arg1 {{\[}}[0, 1], [2, 3]] output_shape [2, 16, 8, 8] : tensor<32x64xbf16> into tensor<2x16x8x8xbf16>
// CHECK: %[[ACC:[a-z0-9_]+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[OL]], %[[WL]] :
// CHECK: %[[Y:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[ACC]], %[[ACC]], %[[ACC]], %[[ACC]], %[[ACC]], %[[ACC]], %[[ACC]], %[[ACC]] : {{.*}} outs(%{{.*}} : tensor<?x2x16xbf16>)
// CHECK: arith.truncf
// CHECK: tensor.collapse_shape %[[Y]] {{\[}}[0], [1, 2]] : tensor<?x2x16xbf16> into tensor<?x32xbf16>
func.func @grouped(%o: tensor<?x4x32xbf16>, %w: tensor<32x64xbf16>) -> tensor<?x32xbf16> {
  %og = dsa.grouped_output %o, %w {groups = 2 : i64} : (tensor<?x4x32xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %og : tensor<?x32xbf16>
}
