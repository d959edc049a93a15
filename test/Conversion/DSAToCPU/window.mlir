// dsa.ring_update, dsa.window_kv, dsa.window_indices (section 4) with start_pos and s as run-time values.
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[RING:[a-z0-9_]+]]: tensor<8x32xbf16>, %[[KV:[a-z0-9_]+]]: tensor<?x32xbf16>, %[[START:[a-z0-9_]+]]: i64)
// CHECK: %[[S:[a-z0-9_]+]] = tensor.dim %[[KV]], %c0
// ring_update: start_pos < 0 reported (code 4); an empty step keeps the ring; else slot j takes row
// lo + ((j - (start_pos + lo)) mod W) when that offset is < c = s - lo, lo = max(0, s - W); the offset computed as
// ((j - lo) - start_pos mod W) mod W, which cannot overflow at a start_pos near 2^63.
// CHECK: %[[NEG:[a-z0-9_]+]] = arith.cmpi slt, %[[START]], %c0_i64
// CHECK: func.call @dsa_cpu_fail(%c4_i32)
// CHECK: %[[NEWRING:[a-z0-9_]+]] = scf.if %{{.*}} -> (tensor<8x32xbf16>) {
// CHECK: %[[SMW:[a-z0-9_]+]] = arith.subi %{{.*}}, %c8_i64
// CHECK: %[[LO:[a-z0-9_]+]] = arith.maxsi %[[SMW]], %c0_i64
// CHECK: %[[C:[a-z0-9_]+]] = arith.subi %{{.*}}, %[[LO]]
// CHECK: %[[SMOD:[a-z0-9_]+]] = arith.remsi %[[START]], %c8_i64
// CHECK: linalg.generic {{.*}} ins(%[[RING]] : tensor<8x32xbf16>)
// CHECK: %[[JLO:[a-z0-9_]+]] = arith.subi %{{.*}}, %[[LO]]
// CHECK: arith.subi %[[JLO]], %[[SMOD]]
// CHECK: arith.remsi %{{.*}}, %c8_i64
// CHECK: %[[TAKE:[a-z0-9_]+]] = arith.cmpi slt, %{{.*}}, %[[C]]
// CHECK: tensor.extract %[[KV]]
// CHECK: arith.select %[[TAKE]]
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[RING]]
// window_kv: codes 5 (start_pos < 0) and 6 (s != 1 at start_pos > 0); kv in prefill, the new ring in decode.
// CHECK: func.call @dsa_cpu_fail(%c5_i32)
// CHECK: %[[MULTI:[a-z0-9_]+]] = arith.andi
// CHECK: func.call @dsa_cpu_fail(%c6_i32)
// CHECK: %[[PREFILL:[a-z0-9_]+]] = arith.cmpi eq, %[[START]], %c0_i64
// CHECK: %[[ROWS:[a-z0-9_]+]] = scf.if %[[PREFILL]] -> (tensor<?x32xbf16>) {
// CHECK-NEXT: scf.yield %[[KV]]
// CHECK: tensor.cast %[[NEWRING]] : tensor<8x32xbf16> to tensor<?x32xbf16>
// window_indices: codes 7, 8 (s < 1), 9; width min(s, W) in prefill, W in decode.
// CHECK: func.call @dsa_cpu_fail(%c7_i32)
// CHECK: func.call @dsa_cpu_fail(%c8_i32)
// CHECK: func.call @dsa_cpu_fail(%c9_i32)
// CHECK: %[[MIN:[a-z0-9_]+]] = arith.minsi %[[S]], %c8
// CHECK: %[[WIDTH:[a-z0-9_]+]] = arith.select %[[PREFILL]], %[[MIN]], %c8
// CHECK: tensor.empty(%[[S]], %[[WIDTH]]) : tensor<?x?xi32>
// prefill: j = max(0, t - W + 1) + i, -1 where j > t.
// CHECK: arith.addi %{{.*}}, %c-7_i64
// CHECK: arith.maxsi
// CHECK: arith.cmpi sgt
// decode: slot (start_pos % W + 1 + i) % W, -1 where the slot exceeds start_pos.
// CHECK: arith.remsi %{{.*}}, %c8_i64
// CHECK: arith.addi %{{.*}}, %c1_i64
// CHECK: arith.remsi %{{.*}}, %c8_i64
// CHECK: arith.cmpi sgt, %{{.*}}, %[[START]]
// CHECK: arith.select %[[PREFILL]]
// CHECK: arith.trunci %{{.*}} : i64 to i32
// CHECK: return %[[NEWRING]], %[[ROWS]]
func.func @step(%ring: tensor<8x32xbf16>, %kv: tensor<?x32xbf16>, %start: i64)
    -> (tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>) {
  %c0 = arith.constant 0 : index
  %s = tensor.dim %kv, %c0 : tensor<?x32xbf16>
  %r1 = dsa.ring_update %ring, %kv, %start : (tensor<8x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<8x32xbf16>
  %rows = dsa.window_kv %kv, %r1, %start : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
  %idx = dsa.window_indices %start, %s {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
  return %r1, %rows, %idx : tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>
}
