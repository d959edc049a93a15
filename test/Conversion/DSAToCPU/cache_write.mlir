// dsa.cache_write -> first row = start_pos floordiv ratio (arith.floordivsi), checks start_pos >= 0 (code 17) and
// first + g <= C (code 18, only when start_pos >= 0; compared as g <= C - first, which cannot wrap at a start_pos
// near INT64_MAX as first + g did), then tensor.insert_slice of the rows in an scf.if whose
// other branch returns the cache unchanged.
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @cache
// CHECK: %[[G:.*]] = tensor.dim %arg1, %c0 : tensor<?x8xbf16>
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %arg2, %c0_i64
// CHECK: %[[FIRST:.*]] = arith.floordivsi %arg2, %c4_i64 : i64
// CHECK: %[[ROOM:.*]] = arith.subi %c16_i64, %[[FIRST]] : i64
// CHECK: %[[G64:.*]] = arith.index_cast %[[G]] : index to i64
// CHECK: arith.cmpi sgt, %[[G64]], %[[ROOM]] : i64
// CHECK: scf.if %[[NEG]] {
// CHECK-NEXT: func.call @dsa_cpu_fail(%c17_i32)
// CHECK: func.call @dsa_cpu_fail(%c18_i32)
// CHECK: scf.if %{{.*}} -> (tensor<16x8xbf16>) {
// CHECK: %[[AT:.*]] = arith.index_cast %[[FIRST]] : i64 to index
// CHECK: tensor.insert_slice %arg1 into %arg0[%[[AT]], 0] [%[[G]], 8] [1, 1] : tensor<?x8xbf16> into tensor<16x8xbf16>
// CHECK: } else {
// CHECK-NEXT: scf.yield %arg0 : tensor<16x8xbf16>
func.func @cache(%c: tensor<16x8xbf16>, %r: tensor<?x8xbf16>, %sp: i64) -> tensor<16x8xbf16> {
  %y = dsa.cache_write %c, %r, %sp {ratio = 4 : i64} : (tensor<16x8xbf16>, tensor<?x8xbf16>, i64) -> tensor<16x8xbf16>
  return %y : tensor<16x8xbf16>
}

// Static rows (a one-token step of a ratio-1 compressor): the slice keeps the static row count, so the insert_slice
// verifies (it used to take the count as an index value, a dynamic size against the static source type).
// CHECK-LABEL: func.func @static_rows
// CHECK: tensor.insert_slice %arg1 into %arg0[%{{.*}}, 0] [1, 8] [1, 1] : tensor<1x8xbf16> into tensor<16x8xbf16>
func.func @static_rows(%c: tensor<16x8xbf16>, %r: tensor<1x8xbf16>, %sp: i64) -> tensor<16x8xbf16> {
  %y = dsa.cache_write %c, %r, %sp {ratio = 1 : i64} : (tensor<16x8xbf16>, tensor<1x8xbf16>, i64) -> tensor<16x8xbf16>
  return %y : tensor<16x8xbf16>
}
