// dsa.positions on the interpreter: result[i] = start + i * stride, i < count (i64). The scalar operands are
// computed with arith ops to exercise them too.
// RUN: dsa-run %s --entry=main | FileCheck %s

// start = 2*3 - 1 = 5, count = index_cast(3) = 3, stride 1      -> [5, 6, 7]
// CHECK:      result 0: tensor<3xi64> = [5, 6, 7]
// compressed groups at ratio 2 for start_pos 5: start = (5 // 2) * 2 = 4 (written as 5 - 1), stride 2 -> [4, 6, 8]
// CHECK-NEXT: result 1: tensor<3xi64> = [4, 6, 8]
// count 0 -> empty
// CHECK-NEXT: result 2: tensor<0xi64> = []
// the scalars themselves: start (i64) and count (index)
// CHECK-NEXT: result 3: i64 = [5]
// CHECK-NEXT: result 4: index = [3]
func.func @main() -> (tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, i64, index) {
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c3 = arith.constant 3 : i64
  %six = arith.muli %c2, %c3 : i64
  %start = arith.subi %six, %c1 : i64
  %count = arith.index_cast %c3 : i64 to index
  %p = dsa.positions %start, %count {stride = 1 : i64} : (i64, index) -> tensor<?xi64>
  %gstart = arith.subi %start, %c1 : i64
  %g = dsa.positions %gstart, %count {stride = 2 : i64} : (i64, index) -> tensor<?xi64>
  %zero = arith.constant 0 : index
  %e = dsa.positions %start, %zero : (i64, index) -> tensor<?xi64>
  return %p, %g, %e, %start, %count : tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, i64, index
}
