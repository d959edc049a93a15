// dsa.compress_pool -> the run-time checks in the kernel's order (score rows, then start_pos < 0, s == 0, s > 1 at
// start_pos > 0: dsa_cpu_fail codes 16, 13, 14, 15), then one scf.if yielding (pooled, kv_state', score_state'):
// the state slots updated by one generic each (prefill: slot j < rem takes row cut + j; decode: slot start_pos % r
// takes row 0), and the pooled rows from a nested scf.if (prefill: groups of r step rows; decode: the updated
// state, 0 or 1 group). Pooling per (group, d) is the kernel's poolGroup: m = fmax (arith.maxnumf) over the
// members, den = sum of exp(score - m) from 0, acc = sum of kv * (exp(score - m) / den) from 0, all f32.
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @pool
// CHECK: %[[S:.*]] = tensor.dim %arg0, %{{.*}} : tensor<?x32xf32>
// CHECK: %[[S2:.*]] = tensor.dim %arg1, %{{.*}} : tensor<?x32xf32>
// CHECK: arith.cmpi ne, %[[S]], %[[S2]] : index
// CHECK: func.call @dsa_cpu_fail(%c16_i32)
// CHECK: arith.cmpi slt, %arg4, %c0_i64
// CHECK: func.call @dsa_cpu_fail(%c13_i32)
// CHECK: func.call @dsa_cpu_fail(%c14_i32)
// CHECK: func.call @dsa_cpu_fail(%c15_i32)
// CHECK: %[[R:.*]]:3 = scf.if %{{.*}} -> (tensor<?x32xf32>, tensor<3x32xf32>, tensor<3x32xf32>) {
// CHECK: %[[PREFILL:.*]] = arith.cmpi eq, %arg4, %c0_i64
// CHECK: %[[REM:.*]] = arith.remsi %{{.*}}, %c3_i64
// CHECK: %[[SLOT:.*]] = arith.remsi %arg4, %c3_i64
// The state updates read the step's rows with tensor.extract at the selected row.
// CHECK: %[[KVS:.*]] = linalg.generic {{.*}} ins(%arg2 : tensor<3x32xf32>)
// CHECK-DAG: arith.cmpi slt, %{{.*}}, %[[REM]] : i64
// CHECK-DAG: arith.cmpi eq, %{{.*}}, %[[SLOT]] : i64
// CHECK: tensor.extract %arg0
// CHECK: %[[SCS:.*]] = linalg.generic {{.*}} ins(%arg3 : tensor<3x32xf32>)
// CHECK: tensor.extract %arg1
// Prefill pooling: members gi * r + j of the step's rows.
// CHECK: scf.if %[[PREFILL]] -> (tensor<?x32xf32>) {
// CHECK: arith.divsi
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} outs(
// CHECK: arith.muli %{{.*}}, %c3
// CHECK: scf.for {{.*}} iter_args(%[[M:.*]] = %{{.*}}) -> (f32) {
// CHECK: arith.maxnumf %[[M]], %{{.*}} : f32
// CHECK: %[[D:.*]] = scf.for {{.*}} iter_args(%[[DEN:.*]] = %cst{{.*}}) -> (f32) {
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: arith.addf %[[DEN]], %{{.*}} : f32
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %cst{{.*}}) -> (f32) {
// CHECK: %[[E:.*]] = math.exp
// CHECK: %[[P:.*]] = arith.divf %[[E]], %[[D]] : f32
// CHECK: %[[KV:.*]] = tensor.extract %arg0
// CHECK: %[[T:.*]] = arith.mulf %[[KV]], %[[P]] : f32
// CHECK: arith.addf %[[ACC]], %[[T]] : f32
// Decode pooling: one group when (start_pos + 1) % r == 0, computed as start_pos % r == r - 1 (the slot's
// remainder: no start_pos + 1 to wrap at INT64_MAX), over the updated state.
// CHECK: } else {
// CHECK-NOT: arith.addi %arg4, %c1_i64
// CHECK: arith.cmpi eq, %[[SLOT]], %c2_i64 : i64
// CHECK: tensor.extract %[[SCS]]
// CHECK: tensor.extract %[[KVS]]
// CHECK: scf.yield %{{.*}}, %[[KVS]], %[[SCS]] : tensor<?x32xf32>, tensor<3x32xf32>, tensor<3x32xf32>
// A failed check yields no rows and the states unchanged.
// CHECK: } else {
// CHECK: tensor.empty() : tensor<0x32xf32>
// CHECK: scf.yield %{{.*}}, %arg2, %arg3
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @pool(%kv: tensor<?x32xf32>, %sc: tensor<?x32xf32>, %kvs: tensor<3x32xf32>, %scs: tensor<3x32xf32>,
                %sp: i64) -> (tensor<?x32xf32>, tensor<3x32xf32>, tensor<3x32xf32>) {
  %p, %a, %b = dsa.compress_pool %kv, %sc, %kvs, %scs, %sp {ratio = 3 : i64}
      : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<3x32xf32>, tensor<3x32xf32>, i64)
      -> (tensor<?x32xf32>, tensor<3x32xf32>, tensor<3x32xf32>)
  return %p, %a, %b : tensor<?x32xf32>, tensor<3x32xf32>, tensor<3x32xf32>
}

// The compressor's f32 input and bf16 pooled rows (arith.extf / arith.truncf on tensors, from
// dsa-decompose-attention) become elementwise generics; scalar casts stay.
// CHECK-LABEL: func.func @casts
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<?x64xbf16>) outs(%{{.*}} : tensor<?x64xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<?x32xf32>) outs(%{{.*}} : tensor<?x32xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.extf %arg2 : bf16 to f32
func.func @casts(%x: tensor<?x64xbf16>, %p: tensor<?x32xf32>, %c: bf16) -> (tensor<?x64xf32>, tensor<?x32xbf16>, f32) {
  %xf = arith.extf %x : tensor<?x64xbf16> to tensor<?x64xf32>
  %pb = arith.truncf %p : tensor<?x32xf32> to tensor<?x32xbf16>
  %cf = arith.extf %c : bf16 to f32
  return %xf, %pb, %cf : tensor<?x64xf32>, tensor<?x32xbf16>, f32
}
