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
// window_kv (from the ring BEFORE the step): code 5 (start_pos < 0); kv in prefill, the sibling ring_update's
// result in decode (s == 1: no second ring write), concat(ring, kv) in a chunk at start_pos > 0 (s > 1).
// CHECK: func.call @dsa_cpu_fail(%c5_i32)
// CHECK-NOT: @dsa_cpu_fail(%c6_i32)
// CHECK: %[[PREFILL:[a-z0-9_]+]] = arith.cmpi eq, %[[START]], %c0_i64
// CHECK: %[[ONE:[a-z0-9_]+]] = arith.cmpi eq, %[[S]], %c1
// CHECK: %[[ROWS:[a-z0-9_]+]] = scf.if %[[PREFILL]] -> (tensor<?x32xbf16>) {
// CHECK-NEXT: scf.yield %[[KV]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.if %[[ONE]] -> (tensor<?x32xbf16>) {
// CHECK-NEXT: tensor.cast %[[NEWRING]] : tensor<8x32xbf16> to tensor<?x32xbf16>
// CHECK: } else {
// CHECK-NEXT: tensor.concat dim(0) %[[RING]], %[[KV]] : (tensor<8x32xbf16>, tensor<?x32xbf16>) -> tensor<?x32xbf16>
// window_indices: codes 7, 8 (s < 1), 67 (a chunk whose start_pos + s overflows int64 or W + s rows i32); no 9;
// width min(s, W) in prefill, W in decode and in a chunk.
// CHECK: func.call @dsa_cpu_fail(%c7_i32)
// CHECK: func.call @dsa_cpu_fail(%c8_i32)
// CHECK-NOT: @dsa_cpu_fail(%c9_i32)
// CHECK: arith.cmpi sgt, %{{.*}}, %c2147483639_i64
// CHECK: arith.subi %c9223372036854775807_i64
// CHECK: func.call @dsa_cpu_fail(%c67_i32)
// CHECK: %[[MIN:[a-z0-9_]+]] = arith.minsi %[[S]], %c8
// CHECK: %[[WIDTH:[a-z0-9_]+]] = arith.select %[[PREFILL]], %[[MIN]], %c8
// CHECK: tensor.empty(%[[S]], %[[WIDTH]]) : tensor<?x?xi32>
// prefill: j = max(0, t - W + 1) + i, -1 where j > t.
// CHECK: arith.addi %{{.*}}, %c-7_i64
// CHECK: arith.maxsi
// CHECK: arith.cmpi sgt
// decode: slot (start_pos % W + 1 + i) % W, -1 where the slot exceeds start_pos.
// CHECK: %[[SP:[a-z0-9_]+]] = arith.maxsi %[[START]], %c0_i64
// CHECK: arith.remsi %[[SP]], %c8_i64
// CHECK: arith.addi %{{.*}}, %c1_i64
// CHECK: arith.remsi %{{.*}}, %c8_i64
// CHECK: %[[DEC:[a-z0-9_]+]] = arith.select %{{.*}}, %c-1_i64
// a chunk: pos = start_pos + t - (W - 1) + i; W + pos - start_pos if pos >= start_pos, else pos % W; -1 if pos < 0.
// CHECK: %[[PT:[a-z0-9_]+]] = arith.addi %[[SP]], %{{.*}}
// CHECK: %[[PW:[a-z0-9_]+]] = arith.subi %[[PT]], %c7_i64
// CHECK: %[[POS:[a-z0-9_]+]] = arith.addi %[[PW]], %{{.*}}
// CHECK: %[[POS0:[a-z0-9_]+]] = arith.maxsi %[[POS]], %c0_i64
// CHECK: %[[SLOT:[a-z0-9_]+]] = arith.remsi %[[POS0]], %c8_i64
// CHECK: %[[OFF:[a-z0-9_]+]] = arith.subi %[[POS]], %[[SP]]
// CHECK: %[[ROW:[a-z0-9_]+]] = arith.addi %[[OFF]], %c8_i64
// CHECK: %[[IN:[a-z0-9_]+]] = arith.cmpi sge, %[[POS]], %[[SP]]
// CHECK: %[[RS:[a-z0-9_]+]] = arith.select %[[IN]], %[[ROW]], %[[SLOT]]
// CHECK: %[[NEG:[a-z0-9_]+]] = arith.cmpi slt, %[[POS]], %c0_i64
// CHECK: %[[CHK:[a-z0-9_]+]] = arith.select %[[NEG]], %c-1_i64, %[[RS]]
// CHECK: %[[NP:[a-z0-9_]+]] = arith.select %[[ONE]], %[[DEC]], %[[CHK]]
// CHECK: arith.select %[[PREFILL]], %{{.*}}, %[[NP]]
// CHECK: arith.trunci %{{.*}} : i64 to i32
// CHECK: return %[[NEWRING]], %[[ROWS]]
func.func @step(%ring: tensor<8x32xbf16>, %kv: tensor<?x32xbf16>, %start: i64)
    -> (tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>) {
  %c0 = arith.constant 0 : index
  %s = tensor.dim %kv, %c0 : tensor<?x32xbf16>
  %r1 = dsa.ring_update %ring, %kv, %start : (tensor<8x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<8x32xbf16>
  %rows = dsa.window_kv %kv, %ring, %start : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
  %idx = dsa.window_indices %start, %s {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
  return %r1, %rows, %idx : tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>
}

// Without a ring_update of the same operands, decode's rows are written by window_kv itself (the ring with the
// step's row in slot start_pos % W, ring_update's generic).
// CHECK-LABEL: func.func @rows_alone
// CHECK-SAME: (%[[RING:[a-z0-9_]+]]: tensor<8x32xbf16>, %[[KV:[a-z0-9_]+]]: tensor<?x32xbf16>, %[[START:[a-z0-9_]+]]: i64)
// CHECK: scf.if %{{.*}} -> (tensor<?x32xbf16>) {
// CHECK-NEXT: scf.yield %[[KV]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.if %{{.*}} -> (tensor<?x32xbf16>) {
// CHECK: arith.remsi %[[START]], %c8_i64
// CHECK: linalg.generic {{.*}} ins(%[[RING]] : tensor<8x32xbf16>)
// CHECK: tensor.extract %[[KV]]
// CHECK: } else {
// CHECK: tensor.concat dim(0) %[[RING]], %[[KV]]
func.func @rows_alone(%ring: tensor<8x32xbf16>, %kv: tensor<?x32xbf16>, %start: i64) -> tensor<?x32xbf16> {
  %rows = dsa.window_kv %kv, %ring, %start : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
  return %rows : tensor<?x32xbf16>
}
