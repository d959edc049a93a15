// dsa.grouped_output (section 11): og[t, g*R + r] = bf16(dotF32(o[t, g, :], wo_a[g*R + r, :])), o[t] viewed as G
// groups of H*hd/G values. o is flattened to [s, G*gw] and widened to f32 once; then emitGroupedDots: an
// scf.forall over (group, panel) (the panel dimension folded away when one panel holds a group's R rows), group g
// reading x columns g*gw + k and w rows g*R + r and writing result columns g*R + r, in blocks of 4 tokens x 4
// outputs with one vector<8xf32> accumulator per output (dotF32's order, see linear.mlir).
// RUN: dsa-opt %s --dsa-to-cpu=pair-columns=0 --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @grouped
// CHECK-SAME: (%[[O:[a-z0-9_]+]]: tensor<?x4x32xbf16>, %[[W:[a-z0-9_]+]]: tensor<32x64xbf16>)
// CHECK: %[[OF:[a-z0-9_]+]] = tensor.collapse_shape %[[O]] {{\[}}[0], [1, 2]] : tensor<?x4x32xbf16> into tensor<?x128xbf16>
// CHECK: %[[XF:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[OF]] : tensor<?x128xbf16>) outs(%{{.*}} : tensor<?x128xf32>)
// CHECK: %[[OUT:[a-z0-9_]+]] = tensor.empty(%{{.*}}) : tensor<?x32xbf16>
// CHECK: %[[Y:[a-z0-9_]+]] = scf.forall (%[[G:[a-z0-9_]+]]) in (2) shared_outs(%[[SH:[a-z0-9_]+]] = %[[OUT]]) -> (tensor<?x32xbf16>) {
// CHECK-DAG: %[[COL0:[a-z0-9_]+]] = arith.muli %[[G]], %c16 : index
// CHECK-DAG: %[[XK0:[a-z0-9_]+]] = arith.muli %[[G]], %c64 : index
// CHECK: %[[SLICE:[a-z0-9_]+]] = tensor.extract_slice %[[SH]][0, %[[COL0]]] [%{{.*}}, 16] [1, 1] : tensor<?x32xbf16> to tensor<?x16xbf16>
// CHECK: scf.for %[[M0:[a-z0-9_]+]] = %c0 to %{{.*}} step %c4 iter_args(%{{.*}} = %[[SLICE]]) -> (tensor<?x16xbf16>) {
// CHECK: scf.for %[[C0:[a-z0-9_]+]] = %c0 to %c16 step %c4
// CHECK: %[[WR0:[a-z0-9_]+]] = arith.addi %[[COL0]], %[[C0]] : index
// CHECK: scf.for %[[K:[a-z0-9_]+]] = %c0 to %c64 step %c8 iter_args({{.*}}) -> (vector<8xf32>,
// CHECK: %[[XK:[a-z0-9_]+]] = arith.addi %[[XK0]], %[[K]] : index
// CHECK-DAG: vector.transfer_read %[[XF]][%[[M0]], %[[XK]]], %{{.*}} {in_bounds = [true]} : tensor<?x128xf32>, vector<8xf32>
// CHECK-DAG: vector.transfer_read %[[W]][%[[WR0]], %[[K]]], %{{.*}} {in_bounds = [true]} : tensor<32x64xbf16>, vector<8xbf16>
// CHECK: arith.truncf
// CHECK: scf.forall.in_parallel {
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[SH]][0, %[[COL0]]] [%{{.*}}, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x32xbf16>
// CHECK: return %[[Y]] : tensor<?x32xbf16>
func.func @grouped(%o: tensor<?x4x32xbf16>, %w: tensor<32x64xbf16>) -> tensor<?x32xbf16> {
  %og = dsa.grouped_output %o, %w {groups = 2 : i64} : (tensor<?x4x32xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %og : tensor<?x32xbf16>
}
