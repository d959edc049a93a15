// dsa.window_kv on the interpreter (section 4), given the ring as it stands BEFORE this step's ring_update: prefill
// (start_pos 0) reads the step's own kv rows; decode (start_pos > 0, one token) reads the ring with the step's row
// in slot start_pos % W; a chunk at start_pos > 0 (several tokens) reads the ring, then its own rows.
// RUN: dsa-run %s --entry=main | FileCheck %s

// Prefill of 3 tokens with W = 4: the 3 kv rows themselves, not the ring.
// CHECK:      result 0: tensor<3x2xbf16> = [1, 2, 3, 4, 5, 6]
// Decode at 5 with W = 4: the 4 ring rows, slot 5 % 4 = 1 holding the step's row (18, 19).
// CHECK-NEXT: result 1: tensor<4x2xbf16> = [10, 11, 18, 19, 14, 15, 16, 17]
// A chunk of 2 tokens at 3 with W = 4: the 4 ring rows, then the 2 kv rows.
// CHECK-NEXT: result 2: tensor<6x2xbf16> = [10, 11, 12, 13, 14, 15, 16, 17, 1, 2, 3, 4]
func.func @main() -> (tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>) {
  %c0 = arith.constant 0 : i64
  %c3 = arith.constant 3 : i64
  %c5 = arith.constant 5 : i64
  %kv = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xbf16>
  %ring = arith.constant dense<[[10.0, 11.0], [12.0, 13.0], [14.0, 15.0], [16.0, 17.0]]> : tensor<4x2xbf16>
  %prefill = dsa.window_kv %kv, %ring, %c0 : (tensor<3x2xbf16>, tensor<4x2xbf16>, i64) -> tensor<?x2xbf16>
  %one = arith.constant dense<[[18.0, 19.0]]> : tensor<1x2xbf16>
  %decode = dsa.window_kv %one, %ring, %c5 : (tensor<1x2xbf16>, tensor<4x2xbf16>, i64) -> tensor<?x2xbf16>
  %two = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xbf16>
  %chunk = dsa.window_kv %two, %ring, %c3 : (tensor<2x2xbf16>, tensor<4x2xbf16>, i64) -> tensor<?x2xbf16>
  return %prefill, %decode, %chunk : tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>
}
