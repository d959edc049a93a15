// dsa.sparse_attn (section 10) in the kernel's order: z = dotF32(q, kv[idx]) * scale (-inf for -1, indices
// clamped into [0, n) for the read), m = sink then (m < z ? z : m) over j, den = exp(sink - m) + sum exp(z - m)
// over valid j, p = exp(z - m) / den, o = bf16(sum over valid j of p * kv[idx, d]). Run-time checks: codes 10
// (indices rows != s), 12 (NaN sink), 11 (index outside [-1, n)); n == 0 or a failed row check gives zeros.
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @attn
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<?x4x32xbf16>, %[[KV:[a-z0-9_]+]]: tensor<?x32xbf16>, %[[IDX:[a-z0-9_]+]]: tensor<?x?xi32>, %[[SINK:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK-DAG: %[[NEGINF:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[SCALE:[a-z0-9_]+]] = arith.constant 0.176776692 : f32
// CHECK: func.call @dsa_cpu_fail(%c10_i32)
// CHECK: linalg.generic {{.*}} ins(%[[SINK]] : tensor<4xf32>)
// CHECK: arith.cmpf uno
// CHECK: func.call @dsa_cpu_fail(%c12_i32)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "reduction"]} ins(%[[IDX]]
// CHECK: func.call @dsa_cpu_fail(%c11_i32)
// CHECK: %[[OUT:[a-z0-9_]+]] = scf.if %{{.*}} -> (tensor<?x4x32xbf16>) {
// z[t, h, j]: the dot of q[t, h] with the kv row gathered by index (clamped), times scale; -inf for -1.
// CHECK: %[[Z:[a-z0-9_]+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[IDX]] : tensor<?x?xi32>) outs(%{{.*}} : tensor<?x4x?xf32>)
// CHECK-NEXT: ^bb0(%[[I:[a-z0-9_]+]]: i32, %{{.*}}: f32):
// CHECK-DAG: %[[T:[a-z0-9_]+]] = linalg.index 0 : index
// CHECK-DAG: %[[H:[a-z0-9_]+]] = linalg.index 1 : index
// CHECK-DAG: %[[LO:[a-z0-9_]+]] = arith.minsi %[[I]], %{{.*}} : i32
// CHECK-DAG: %[[CL:[a-z0-9_]+]] = arith.maxsi %[[LO]], %c0_i32 : i32
// CHECK-DAG: %[[ROW:[a-z0-9_]+]] = arith.index_cast %[[CL]] : i32 to index
// CHECK: scf.for %[[K:[a-z0-9_]+]] = %c0 to %c32 step %c8
// CHECK-DAG: vector.transfer_read %[[KV]][%[[ROW]], %[[K]]]
// CHECK-DAG: vector.transfer_read %[[Q]][%[[T]], %[[H]], %[[K]]]
// CHECK: %[[ZS:[a-z0-9_]+]] = arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK: %[[VALID:[a-z0-9_]+]] = arith.cmpi sge, %[[I]], %c0_i32 : i32
// CHECK: arith.select %[[VALID]], %[[ZS]], %[[NEGINF]] : f32
// m: the sink broadcast, then (m < z) ? z : m over j.
// CHECK: %[[SINKB:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[SINK]] : tensor<4xf32>)
// CHECK: %[[M:[a-z0-9_]+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[Z]] : tensor<?x4x?xf32>) outs(%[[SINKB]] : tensor<?x4xf32>)
// CHECK-NEXT: ^bb0(%[[ZV:[a-z0-9_]+]]: f32, %[[MV:[a-z0-9_]+]]: f32):
// CHECK-NEXT: %[[LT:[a-z0-9_]+]] = arith.cmpf olt, %[[MV]], %[[ZV]] : f32
// CHECK-NEXT: arith.select %[[LT]], %[[ZV]], %[[MV]] : f32
// den: exp(sink - m), then + exp(z - m) for valid j.
// CHECK: %[[DEN0:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[SINK]], %[[M]] :
// CHECK: math.exp
// CHECK: %[[DEN:[a-z0-9_]+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[Z]], %[[M]], %[[IDX]] : {{.*}} outs(%[[DEN0]] :
// CHECK: math.exp
// CHECK: %[[P:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[Z]], %[[M]], %[[DEN]] :
// CHECK: %[[E:[a-z0-9_]+]] = math.exp
// CHECK-NEXT: arith.divf %[[E]], %{{.*}} : f32
// o: dims (t, h, d, j), j the reduction.
// CHECK: %[[O:[a-z0-9_]+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[P]], %[[IDX]] :
// CHECK: tensor.extract %[[KV]]
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: } else {
// CHECK: linalg.fill
// CHECK: return %[[OUT]]
func.func @attn(%q: tensor<?x4x32xbf16>, %kv: tensor<?x32xbf16>, %idx: tensor<?x?xi32>, %sink: tensor<4xf32>)
    -> tensor<?x4x32xbf16> {
  %o = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.176776692 : f32}
      : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
  return %o : tensor<?x4x32xbf16>
}
