// dsa.indexer_scores -> the kernel's loops: w' = bf16(weights * weight_scale) per (t, h), then per (t, p) an
// scf.for over heads (ascending, from 0.0) around an scf.for over ihd (the dot, sequential from 0.0, not the
// 8-lane dotF32), bf16(dot), relu as arith.maxnumf(., 0) (fmax: a NaN dot gives 0), bf16(relu * w'), the bf16 of
// the sum. Width = (start_pos + s) floordiv ratio; checks start_pos >= 0 (19), weights rows (20), keys rows >= width
// (21); zeros when one fails.
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @scores
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: func.call @dsa_cpu_fail(%c19_i32)
// CHECK: func.call @dsa_cpu_fail(%c20_i32)
// CHECK: %[[W:.*]] = arith.floordivsi %{{.*}}, %c2_i64 : i64
// CHECK: func.call @dsa_cpu_fail(%c21_i32)
// CHECK: scf.if %{{.*}} -> (tensor<?x?xbf16>) {
// CHECK: %[[WS:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<?x2xbf16>)
// CHECK: arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK-NEXT: arith.truncf
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x?xbf16>) {
// CHECK: %[[T:.*]] = linalg.index 0 : index
// CHECK: %[[P:.*]] = linalg.index 1 : index
// CHECK: scf.for %[[H:.*]] = %c0 to %c2 step %c1 iter_args(%[[SUM:.*]] = %[[ZERO]]) -> (f32) {
// CHECK: %[[DOT:.*]] = scf.for %[[D:.*]] = %c0 to %c32 step %c1 iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
// CHECK: tensor.extract %arg0[%[[T]], %[[H]], %[[D]]]
// CHECK: tensor.extract %arg2[%[[P]], %[[D]]]
// CHECK: %[[PROD:.*]] = arith.mulf
// CHECK: arith.addf %[[ACC]], %[[PROD]] : f32
// CHECK: %[[DB:.*]] = arith.truncf %[[DOT]] : f32 to bf16
// CHECK: %[[DF:.*]] = arith.extf %[[DB]] : bf16 to f32
// CHECK: %[[RELU:.*]] = arith.maxnumf %[[DF]], %[[ZERO]] : f32
// CHECK: %[[WTH:.*]] = tensor.extract %[[WS]][%[[T]], %[[H]]]
// CHECK: %[[TERM:.*]] = arith.mulf %[[RELU]], %[[WTH]] : f32
// CHECK: arith.truncf %[[TERM]] : f32 to bf16
// CHECK: arith.addf %[[SUM]], %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: } else {
// CHECK: linalg.fill
func.func @scores(%iq: tensor<?x2x32xbf16>, %w: tensor<?x2xbf16>, %k: tensor<?x32xbf16>, %sp: i64) -> tensor<?x?xbf16> {
  %y = dsa.indexer_scores %iq, %w, %k, %sp {ratio = 2 : i64, weight_scale = 1.250000e-01 : f32}
      : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}
