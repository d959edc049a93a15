// dsa.window_kv on the interpreter (section 4): prefill (start_pos 0) reads the step's own kv rows; decode
// (start_pos > 0, one token) reads the whole ring after this step's ring_update; a multi-token step at
// start_pos > 0 is not a reference regime and is an error.
// RUN: dsa-run %s --entry=main | FileCheck %s
// RUN: not dsa-run %s --entry=multi_token_decode 2>&1 | FileCheck %s --check-prefix=MULTI

// Prefill of 3 tokens with W = 4: the 3 kv rows themselves, not the ring.
// CHECK:      result 0: tensor<3x2xbf16> = [1, 2, 3, 4, 5, 6]
// Decode at 5 with W = 4: the 4 ring rows.
// CHECK-NEXT: result 1: tensor<4x2xbf16> = [10, 11, 12, 13, 14, 15, 16, 17]
func.func @main() -> (tensor<?x2xbf16>, tensor<?x2xbf16>) {
  %c0 = arith.constant 0 : i64
  %c5 = arith.constant 5 : i64
  %kv = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xbf16>
  %ring = arith.constant dense<[[10.0, 11.0], [12.0, 13.0], [14.0, 15.0], [16.0, 17.0]]> : tensor<4x2xbf16>
  %prefill = dsa.window_kv %kv, %ring, %c0 : (tensor<3x2xbf16>, tensor<4x2xbf16>, i64) -> tensor<?x2xbf16>
  %one = arith.constant dense<[[16.0, 17.0]]> : tensor<1x2xbf16>
  %decode = dsa.window_kv %one, %ring, %c5 : (tensor<1x2xbf16>, tensor<4x2xbf16>, i64) -> tensor<?x2xbf16>
  return %prefill, %decode : tensor<?x2xbf16>, tensor<?x2xbf16>
}

// Two tokens at start_pos 3: the kernel's error becomes a diagnostic at the op.
// MULTI: window_kv.mlir:[[@LINE+5]]:{{[0-9]+}}: error: dsa interpreter: 'dsa.window_kv' failed: {{.*}}2 tokens at start_pos 3
func.func @multi_token_decode() -> tensor<?x2xbf16> {
  %c3 = arith.constant 3 : i64
  %kv = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xbf16>
  %ring = arith.constant dense<0.0> : tensor<4x2xbf16>
  %r = dsa.window_kv %kv, %ring, %c3 : (tensor<2x2xbf16>, tensor<4x2xbf16>, i64) -> tensor<?x2xbf16>
  return %r : tensor<?x2xbf16>
}
