// dsa.grouped_output (section 11): o[t] viewed as G groups of H*hd/G values, wo_a as [G, R, H*hd/G];
// og[t, g, r] = bf16(dotF32(o[t, g, :], wo_a[g, r, :])) in one parallel generic, flattened to [s, G*R].
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @grouped
// CHECK: %[[OF:[a-z0-9_]+]] = tensor.collapse_shape %arg0 {{\[}}[0], [1, 2]] : tensor<?x4x32xbf16> into tensor<?x128xbf16>
// CHECK: %[[OL:[a-z0-9_]+]] = tensor.expand_shape %[[OF]] {{\[}}[0], [1, 2]] output_shape [%{{.*}}, 2, 64] : tensor<?x128xbf16> into tensor<?x2x64xbf16>
// CHECK: %[[WL:[a-z0-9_]+]] = tensor.expand_shape %arg1 {{\[}}[0, 1], [2]] output_shape [2, 16, 64] : tensor<32x64xbf16> into tensor<2x16x64xbf16>
// CHECK: %[[Y:[a-z0-9_]+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]} outs(%{{.*}} : tensor<?x2x16xbf16>)
// CHECK: %[[T:[a-z0-9_]+]] = linalg.index 0 : index
// CHECK: %[[G:[a-z0-9_]+]] = linalg.index 1 : index
// CHECK: %[[R:[a-z0-9_]+]] = linalg.index 2 : index
// CHECK: scf.for %[[K:[a-z0-9_]+]] = %c0 to %c64 step %c8
// CHECK-DAG: vector.transfer_read %[[WL]][%[[G]], %[[R]], %[[K]]]
// CHECK-DAG: vector.transfer_read %[[OL]][%[[T]], %[[G]], %[[K]]]
// CHECK: arith.truncf
// CHECK: tensor.collapse_shape %[[Y]] {{\[}}[0], [1, 2]] : tensor<?x2x16xbf16> into tensor<?x32xbf16>
func.func @grouped(%o: tensor<?x4x32xbf16>, %w: tensor<32x64xbf16>) -> tensor<?x32xbf16> {
  %og = dsa.grouped_output %o, %w {groups = 2 : i64} : (tensor<?x4x32xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %og : tensor<?x32xbf16>
}
