// dsa.window_indices on the interpreter (section 4, V4.1 ring order).
// RUN: dsa-run %s --entry=main | FileCheck %s

// Prefill, s = 3, W = 4: width min(3, 4) = 3, idx[t, i] = max(0, t-3) + i, -1 where it exceeds t.
//   t0: [0, -1, -1]   t1: [0, 1, -1]   t2: [0, 1, 2]
// CHECK:      result 0: tensor<3x3xi32> = [0, -1, -1, 0, 1, -1, 0, 1, 2]
// Prefill, s = 6, W = 4: width 4.
//   t0: [0,-1,-1,-1] t1: [0,1,-1,-1] t2: [0,1,2,-1] t3: [0,1,2,3] t4: 1+i = [1,2,3,4] t5: 2+i = [2,3,4,5]
// CHECK-NEXT: result 1: tensor<6x4xi32> = [0, -1, -1, -1, 0, 1, -1, -1, 0, 1, 2, -1, 0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5]
// Decode at 6, W = 4: oldest = 6 % 4 + 1 = 3: slots 3, then 0, 1, 2; none exceeds 6.
// CHECK-NEXT: result 2: tensor<1x4xi32> = [3, 0, 1, 2]
// Decode at 3, W = 8 (the spec's worked example, ring still filling): oldest = 4: slots 4..7 then 0..3; slots 4..7
// exceed 3 -> -1.
// CHECK-NEXT: result 3: tensor<1x8xi32> = [-1, -1, -1, -1, 0, 1, 2, 3]
// Decode at 12, W = 8 (worked example after a prefill of 12): oldest = 5: slots 5, 6, 7, 0, 1, 2, 3, 4.
// CHECK-NEXT: result 4: tensor<1x8xi32> = [5, 6, 7, 0, 1, 2, 3, 4]
func.func @main() -> (tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>) {
  %c0 = arith.constant 0 : i64
  %c3 = arith.constant 3 : i64
  %c6 = arith.constant 6 : i64
  %c12 = arith.constant 12 : i64
  %n1 = arith.constant 1 : index
  %n3 = arith.constant 3 : index
  %n6 = arith.constant 6 : index
  %a = dsa.window_indices %c0, %n3 {window_size = 4 : i64} : (i64, index) -> tensor<?x?xi32>
  %b = dsa.window_indices %c0, %n6 {window_size = 4 : i64} : (i64, index) -> tensor<?x?xi32>
  %c = dsa.window_indices %c6, %n1 {window_size = 4 : i64} : (i64, index) -> tensor<?x?xi32>
  %d = dsa.window_indices %c3, %n1 {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
  %e = dsa.window_indices %c12, %n1 {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
  return %a, %b, %c, %d, %e : tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>
}
