// dsa.compress_pool -> the run-time checks in the kernel's order (score rows, then start_pos < 0, s == 0, then
// the step's last position start_pos + s - 1 overflowing int64: dsa_cpu_fail codes 16, 13, 14, 73; a decode step
// at INT64_MAX is valid), then one scf.if yielding (pooled,
// kv_state', score_state') from a nested scf.if on start_pos == 0:
// - prefill: the pooled rows from groups of r step rows, the state slots j < rem taking row cut + j (one generic
//   per state);
// - decode, and a chunk of s > 1 tokens at start_pos > 0 as its decode steps: an scf.for over the step's tokens,
//   token t entering slot (start_pos + t) % r (tensor.insert_slice of its row), and a token closing a group
//   (slot r - 1) pooling the updated state into the next of the (start_pos + s) // r - start_pos // r rows.
// Pooling per (group, d) is the kernel's poolGroup: m = fmax (arith.maxnumf) over the members, den = sum of
// exp(score - m) from 0, acc = sum of kv * (exp(score - m) / den) from 0, all f32.
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @pool
// CHECK: %[[S:.*]] = tensor.dim %arg0, %{{.*}} : tensor<?x32xf32>
// CHECK: %[[S2:.*]] = tensor.dim %arg1, %{{.*}} : tensor<?x32xf32>
// CHECK: arith.cmpi ne, %[[S]], %[[S2]] : index
// CHECK: func.call @dsa_cpu_fail(%c16_i32)
// CHECK: arith.cmpi slt, %arg4, %c0_i64
// CHECK: func.call @dsa_cpu_fail(%c13_i32)
// CHECK: func.call @dsa_cpu_fail(%c14_i32)
// start_pos > INT64_MAX - (s - 1), which canonicalizes to (INT64_MIN - s) in wrapping i64 arithmetic.
// CHECK: arith.subi %c-9223372036854775808_i64
// CHECK: func.call @dsa_cpu_fail(%c73_i32)
// CHECK: %[[R:.*]]:3 = scf.if %{{.*}} -> (tensor<?x32xf32>, tensor<3x32xf32>, tensor<3x32xf32>) {
// CHECK: %[[PREFILL:.*]] = arith.cmpi eq, %arg4, %c0_i64
// CHECK: scf.if %[[PREFILL]] -> (tensor<?x32xf32>, tensor<3x32xf32>, tensor<3x32xf32>) {
// CHECK: %[[REM:.*]] = arith.remsi %{{.*}}, %c3_i64
// Prefill pooling: members gi * r + j of the step's rows.
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
// The prefill's state updates read the step's rows with tensor.extract at the selected row.
// CHECK: %[[KVS:.*]] = linalg.generic {{.*}} ins(%arg2 : tensor<3x32xf32>)
// CHECK: arith.cmpi slt, %{{.*}}, %[[REM]] : i64
// CHECK: tensor.extract %arg0
// CHECK: %[[SCS:.*]] = linalg.generic {{.*}} ins(%arg3 : tensor<3x32xf32>)
// CHECK: tensor.extract %arg1
// CHECK: scf.yield %{{.*}}, %[[KVS]], %[[SCS]]
// Decode / chunk: the group count, last // r + (last % r == r - 1) - start_pos // r for the step's last position
// last = start_pos + s - 1 (no last + 1 to wrap at INT64_MAX), then token by token; the slot's remainder of
// start_pos + t compared with r - 1.
// CHECK: } else {
// CHECK: %[[SM1:.*]] = arith.subi %{{.*}}, %c1_i64 : i64
// CHECK: %[[LASTPOS:.*]] = arith.addi %arg4, %[[SM1]] : i64
// CHECK: %[[LASTREM:.*]] = arith.remsi %[[LASTPOS]], %c3_i64 : i64
// CHECK: %[[CLOSED:.*]] = arith.cmpi eq, %[[LASTREM]], %c2_i64 : i64
// CHECK: %[[FIRST:.*]] = arith.floordivsi %arg4, %c3_i64 : i64
// CHECK: %[[ONE:.*]] = arith.extui %[[CLOSED]] : i1 to i64
// CHECK: %[[LAST:.*]] = arith.floordivsi %[[LASTPOS]], %c3_i64 : i64
// CHECK: %[[UPTO:.*]] = arith.addi %[[LAST]], %[[ONE]] : i64
// CHECK: arith.subi %[[UPTO]], %[[FIRST]] : i64
// CHECK: %[[LOOP:.*]]:4 = scf.for %[[T:.*]] = %c0 to %[[S]] step %c1 iter_args(%[[KVI:.*]] = %arg2, %[[SCI:.*]] = %arg3, %[[OUT:.*]] = %{{.*}}, %[[DONE:.*]] = %c0)
// CHECK: %[[POS:.*]] = arith.addi %arg4, %{{.*}} : i64
// CHECK: arith.remsi %[[POS]], %c3_i64 : i64
// CHECK: %[[SLOT:.*]] = arith.index_cast
// CHECK: %[[KVROW:.*]] = tensor.extract_slice %arg0[%[[T]], 0] [1, 32] [1, 1]
// CHECK: %[[KVS2:.*]] = tensor.insert_slice %[[KVROW]] into %[[KVI]][%[[SLOT]], 0] [1, 32] [1, 1]
// CHECK: %[[SCROW:.*]] = tensor.extract_slice %arg1[%[[T]], 0] [1, 32] [1, 1]
// CHECK: %[[SCS2:.*]] = tensor.insert_slice %[[SCROW]] into %[[SCI]][%[[SLOT]], 0] [1, 32] [1, 1]
// CHECK: %[[CLOSES:.*]] = arith.cmpi eq, %[[SLOT]], %c2 : index
// CHECK: scf.if %[[CLOSES]] -> (tensor<?x32xf32>, index) {
// CHECK: tensor.extract %[[SCS2]]
// CHECK: tensor.extract %[[KVS2]]
// CHECK: tensor.insert_slice %{{.*}} into %[[OUT]][%[[DONE]], 0] [1, 32] [1, 1]
// CHECK: arith.addi %[[DONE]], %c1 : index
// CHECK: } else {
// CHECK: scf.yield %[[OUT]], %[[DONE]] : tensor<?x32xf32>, index
// CHECK: scf.yield %[[KVS2]], %[[SCS2]]
// CHECK: scf.yield %[[LOOP]]#2, %[[LOOP]]#0, %[[LOOP]]#1 : tensor<?x32xf32>, tensor<3x32xf32>, tensor<3x32xf32>
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
