// dsa.cache_write on the interpreter (sections 6 step 1, 8 step 3): rows are written at start_pos // ratio ..,
// the other cache rows are unchanged; writing past the capacity is an error, not a crash.
// RUN: dsa-run %s --entry=main | FileCheck %s
// RUN: not dsa-run %s --entry=overflow 2>&1 | FileCheck %s --check-prefix=OVERFLOW

// Cache of C = 4 rows, all 9. Prefill at 0, ratio 2, two groups: rows 0 and 1.
// CHECK:      probe prefill: tensor<4x2xbf16> = [1, 2, 3, 4, 9, 9, 9, 9]
// Decode at start_pos 5, ratio 2 (the group of tokens 4, 5): row 5 // 2 = 2.
// CHECK-NEXT: probe decode5: tensor<4x2xbf16> = [1, 2, 3, 4, 5, 6, 9, 9]
// Decode at start_pos 6, no group completed (g = 0, from tensor.empty): the cache is unchanged.
// CHECK-NEXT: result 0: tensor<4x2xbf16> = [1, 2, 3, 4, 5, 6, 9, 9]
func.func @main() -> tensor<4x2xbf16> {
  %c0 = arith.constant 0 : i64
  %c5 = arith.constant 5 : i64
  %c6 = arith.constant 6 : i64
  %cache0 = arith.constant dense<9.0> : tensor<4x2xbf16>
  %rows01 = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xbf16>
  %cache1 = dsa.cache_write %cache0, %rows01, %c0 {ratio = 2 : i64}
      : (tensor<4x2xbf16>, tensor<2x2xbf16>, i64) -> tensor<4x2xbf16>
  dsa.probe "prefill" %cache1 : tensor<4x2xbf16>
  %row2 = arith.constant dense<[[5.0, 6.0]]> : tensor<1x2xbf16>
  %cache2 = dsa.cache_write %cache1, %row2, %c5 {ratio = 2 : i64}
      : (tensor<4x2xbf16>, tensor<1x2xbf16>, i64) -> tensor<4x2xbf16>
  dsa.probe "decode5" %cache2 : tensor<4x2xbf16>
  %none = tensor.empty() : tensor<0x2xbf16>
  %cache3 = dsa.cache_write %cache2, %none, %c6 {ratio = 2 : i64}
      : (tensor<4x2xbf16>, tensor<0x2xbf16>, i64) -> tensor<4x2xbf16>
  return %cache3 : tensor<4x2xbf16>
}

// start_pos 7 at ratio 2 starts at row 3; two rows would need rows 3..4 of a 4-row cache.
// OVERFLOW: cache_write.mlir:[[@LINE+5]]:{{[0-9]+}}: error: dsa interpreter: 'dsa.cache_write' failed: cache_write: rows 3..4 (start_pos 7 // ratio 2, 2 rows) overflow the cache capacity of 4 rows
func.func @overflow() -> tensor<4x2xbf16> {
  %c7 = arith.constant 7 : i64
  %cache = arith.constant dense<0.0> : tensor<4x2xbf16>
  %rows = arith.constant dense<1.0> : tensor<2x2xbf16>
  %c = dsa.cache_write %cache, %rows, %c7 {ratio = 2 : i64} : (tensor<4x2xbf16>, tensor<2x2xbf16>, i64) -> tensor<4x2xbf16>
  return %c : tensor<4x2xbf16>
}
