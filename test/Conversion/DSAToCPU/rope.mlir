// dsa.positions and dsa.apply_rope. The frequency table is folded into a constant computed by the kernels'
// ropeFrequencies (theta 1e4, rd 8: 1, 0.1, 0.01, 0.001); cos/sin of f32(p) * f[k] per token; the rotated tail
// pairs ADJACENT elements: (x0*c - x1*sn, x0*sn + x1*c), each rounded to bf16; sin is negated for inverse.
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func private @dsa_cpu_fail(i32)

// CHECK-LABEL: func.func @rope
// CHECK-SAME: (%[[X:[a-zA-Z0-9_#]+]]: tensor<?x4x32xbf16>, %[[START:[a-zA-Z0-9_#]+]]: i64)
// CHECK-DAG: %[[TABLE:[a-zA-Z0-9_#]+]] = arith.constant dense<[1.000000e+00, 1.000000e-01, 0.00999999977, 1.000000e-03]> : tensor<4xf32>
// positions: start < 0 is reported (code 1), then start + (count - 1) * stride overflowing int64 (code 68:
// count - 1 > (INT64_MAX - start) / stride), then start + i * stride (0 after code 68).
// CHECK: %[[NEG:[a-zA-Z0-9_#]+]] = arith.cmpi slt, %[[START]], %{{.*}} : i64
// CHECK-NEXT: scf.if %[[NEG]] {
// CHECK-NEXT: func.call @dsa_cpu_fail(%{{.*}}) : (i32) -> ()
// CHECK: %[[ROOMN:[a-zA-Z0-9_#]+]] = arith.subi %c9223372036854775807_i64, %{{.*}} : i64
// CHECK: %[[ROOM:[a-zA-Z0-9_#]+]] = arith.divsi %[[ROOMN]], %{{.*}} : i64
// CHECK: arith.cmpi sgt, %{{.*}}, %[[ROOM]] : i64
// CHECK: func.call @dsa_cpu_fail(%c68_i32)
// CHECK: %[[POS:[a-zA-Z0-9_#]+]] = linalg.generic
// CHECK: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: arith.addi %[[START]], %{{.*}} : i64
// apply_rope: positions must have one entry per row (else code 2 and x is returned).
// CHECK: %[[OUT:[a-zA-Z0-9_#]+]] = scf.if %{{.*}} -> (tensor<?x4x32xbf16>) {
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%[[POS]] : tensor<?xi64>)
// CHECK: %[[CS:[a-zA-Z0-9_#]+]]:2 = linalg.generic {{.*}} ins(%[[POS]], %[[TABLE]] : tensor<?xi64>, tensor<4xf32>)
// CHECK-NEXT: ^bb0(%[[P:[a-zA-Z0-9_#]+]]: i64, %[[F:[a-zA-Z0-9_#]+]]: f32,
// CHECK-NEXT: %[[PF:[a-zA-Z0-9_#]+]] = arith.sitofp %[[P]] : i64 to f32
// CHECK-NEXT: %[[A:[a-zA-Z0-9_#]+]] = arith.mulf %[[PF]], %[[F]] : f32
// CHECK-NEXT: %[[C:[a-zA-Z0-9_#]+]] = math.cos %[[A]] : f32
// CHECK-NEXT: %[[S:[a-zA-Z0-9_#]+]] = math.sin %[[A]] : f32
// CHECK-NEXT: %[[NS:[a-zA-Z0-9_#]+]] = arith.negf %[[S]] : f32
// CHECK-NEXT: linalg.yield %[[C]], %[[NS]] : f32, f32
// Only the tail of rd = 8 columns (24 .. 31 of 32) is computed, into [?, 4, 8], and inserted into x: the first 24
// columns are x's own (no per-element copy of them).
// CHECK: %[[TAIL:[a-zA-Z0-9_#]+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x4x8xbf16>)
// CHECK: %[[OFF:[a-zA-Z0-9_#]+]] = linalg.index 2 : index
// CHECK: %[[K:[a-zA-Z0-9_#]+]] = arith.divui %[[OFF]], %c2 : index
// CHECK: %[[K2:[a-zA-Z0-9_#]+]] = arith.muli %[[K]], %c2 : index
// CHECK: %[[I0:[a-zA-Z0-9_#]+]] = arith.addi %[[K2]], %c24 : index
// CHECK: tensor.extract %[[X]][%{{.*}}, %{{.*}}, %[[I0]]]
// CHECK: tensor.extract %[[X]]
// CHECK: %[[COS:[a-zA-Z0-9_#]+]] = tensor.extract %[[CS]]#0
// CHECK: %[[SIN:[a-zA-Z0-9_#]+]] = tensor.extract %[[CS]]#1
// CHECK: arith.subf
// CHECK: arith.addf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: tensor.insert_slice %[[TAIL]] into %[[X]][0, 0, 24] [%{{.*}}, 4, 8] [1, 1, 1] : tensor<?x4x8xbf16> into tensor<?x4x32xbf16>
// CHECK: } else {
// CHECK: func.call @dsa_cpu_fail
// CHECK: scf.yield %[[X]]
// CHECK: return %[[OUT]]
func.func @rope(%x: tensor<?x4x32xbf16>, %start: i64) -> tensor<?x4x32xbf16> {
  %c0 = arith.constant 0 : index
  %s = tensor.dim %x, %c0 : tensor<?x4x32xbf16>
  %pos = dsa.positions %start, %s {stride = 3 : i64} : (i64, index) -> tensor<?xi64>
  %y = dsa.apply_rope %x, %pos {inverse, rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>}
      : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
  return %y : tensor<?x4x32xbf16>
}

// Forward rotation: no negf. YaRN tables are folded the same way (4 frequencies for rope_dim 8).
// CHECK-LABEL: func.func @rope_yarn
// CHECK: arith.constant dense<{{\[}}{{.*}}> : tensor<4xf32>
// CHECK: math.sin
// CHECK-NOT: arith.negf
// CHECK: return
func.func @rope_yarn(%x: tensor<?x16xbf16>, %pos: tensor<?xi64>) -> tensor<?x16xbf16> {
  %y = dsa.apply_rope %x, %pos {rope = #dsa.rope<rope_dim = 8, theta = 4.000000e+04 : f64,
      yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64,
              beta_slow = 1.000000e+00 : f64>>}
      : (tensor<?x16xbf16>, tensor<?xi64>) -> tensor<?x16xbf16>
  return %y : tensor<?x16xbf16>
}
