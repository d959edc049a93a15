// dsa.compress_visibility on the interpreter (section 6 step 5): compress_len[t] = (t + 1) // ratio in prefill,
// (start_pos + s) // ratio in decode; score[t, p] = -inf for p >= compress_len[t].
// RUN: dsa-run %s --entry=main | FileCheck %s
// RUN: not dsa-run %s --entry=bad_width 2>&1 | FileCheck %s --check-prefix=WIDTH

// Prefill s = 4 at ratio 2: width 2, compress_len = [1//2, 2//2, 3//2, 4//2] = [0, 1, 1, 2].
// CHECK:      result 0: tensor<4x2xbf16> = [-inf, -inf, 3, -inf, 5, -inf, 7, 8]
// Decode at start_pos 5, ratio 2: width 3 = compress_len, every position stays.
// CHECK-NEXT: result 1: tensor<1x3xbf16> = [1, 2, 3]
func.func @main() -> (tensor<4x2xbf16>, tensor<1x3xbf16>) {
  %c0 = arith.constant 0 : i64
  %c5 = arith.constant 5 : i64
  %scores = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xbf16>
  %v = dsa.compress_visibility %scores, %c0 {ratio = 2 : i64} : (tensor<4x2xbf16>, i64) -> tensor<4x2xbf16>
  %d = arith.constant dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xbf16>
  %vd = dsa.compress_visibility %d, %c5 {ratio = 2 : i64} : (tensor<1x3xbf16>, i64) -> tensor<1x3xbf16>
  return %v, %vd : tensor<4x2xbf16>, tensor<1x3xbf16>
}

// Decode at start_pos 3, ratio 2 sees (3 + 1) // 2 = 2 positions, not 3.
// WIDTH: compress_visibility.mlir:[[@LINE+4]]:{{[0-9]+}}: error: dsa interpreter: 'dsa.compress_visibility' failed: compress_visibility: scores must have width (start_pos + s) // ratio = (3 + 1) // 2 = 2 columns, got tensor<1x3xbf16>
func.func @bad_width() -> tensor<1x3xbf16> {
  %c3 = arith.constant 3 : i64
  %d = arith.constant dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xbf16>
  %v = dsa.compress_visibility %d, %c3 {ratio = 2 : i64} : (tensor<1x3xbf16>, i64) -> tensor<1x3xbf16>
  return %v : tensor<1x3xbf16>
}
