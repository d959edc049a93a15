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
// A chunk of 3 at 4, W = 4, over the rows [ring slots 0..3, tokens 4, 5, 6]: token p reads positions p-3 .. p
// (decode's order), each the ring slot (position % 4) before the chunk, else the chunk's row 4 + (position - 4).
//   t4: positions 1..4 -> [1, 2, 3, 4]   t5: 2..5 -> [2, 3, 4, 5]   t6: 3..6 -> [3, 4, 5, 6]
// CHECK-NEXT: result 5: tensor<3x4xi32> = [1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6]
// A chunk of 2 at 1, W = 8 (ring still filling): positions p-7 .. p, -1 where negative; position 0 is slot 0,
// positions 1, 2 the chunk's rows 8, 9.
// CHECK-NEXT: result 6: tensor<2x8xi32> = [-1, -1, -1, -1, -1, -1, 0, 8, -1, -1, -1, -1, -1, 0, 8, 9]
// A chunk of 2 at 6, W = 4, crossing the wrap: t6: positions 3, 4, 5 (slots 3, 0, 1), 6 (row 4); t7: 4, 5, 6, 7.
// CHECK-NEXT: result 7: tensor<2x4xi32> = [3, 0, 1, 4, 0, 1, 4, 5]
func.func @main() -> (tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>,
                      tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>) {
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
  %c1 = arith.constant 1 : i64
  %c4 = arith.constant 4 : i64
  %n2 = arith.constant 2 : index
  %f = dsa.window_indices %c4, %n3 {window_size = 4 : i64} : (i64, index) -> tensor<?x?xi32>
  %g = dsa.window_indices %c1, %n2 {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
  %h = dsa.window_indices %c6, %n2 {window_size = 4 : i64} : (i64, index) -> tensor<?x?xi32>
  return %a, %b, %c, %d, %e, %f, %g, %h : tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>,
                                          tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>
}
