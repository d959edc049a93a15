// dsa.ring_update on the interpreter (section 4): token t lives in slot t % W; the last min(s, W) rows of the
// step are written, the other slots keep their contents.
// RUN: dsa-run %s --entry=main | FileCheck %s

// W = 4, hd = 2, ring all 9 initially.
// Prefill s = 2 at 0 (s < W): slots 0, 1 <- tokens 0, 1; slots 2, 3 keep 9.
// CHECK:      probe short: tensor<4x2xbf16> = [0, -0.5, 1, -1.5, 9, 9, 9, 9]
// Prefill s = 6 at 0 (kv row t = [t, -t - 0.5]): the last 4 tokens 2..5 go to slots 2, 3, 0, 1.
// CHECK-NEXT: probe prefill: tensor<4x2xbf16> = [4, -4.5, 5, -5.5, 2, -2.5, 3, -3.5]
// Decode at 6 (s = 1): slot 6 % 4 = 2 <- [60, 61].
// CHECK-NEXT: probe decode6: tensor<4x2xbf16> = [4, -4.5, 5, -5.5, 60, 61, 3, -3.5]
// Decode at 7: slot 3 <- [70, 71].
// CHECK-NEXT: result 0: tensor<4x2xbf16> = [4, -4.5, 5, -5.5, 60, 61, 70, 71]
func.func @main() -> tensor<4x2xbf16> {
  %ring0 = arith.constant dense<9.0> : tensor<4x2xbf16>
  %c0 = arith.constant 0 : i64
  %c6 = arith.constant 6 : i64
  %c7 = arith.constant 7 : i64
  %kv2 = arith.constant dense<[[0.0, -0.5], [1.0, -1.5]]> : tensor<2x2xbf16>
  %short = dsa.ring_update %ring0, %kv2, %c0 : (tensor<4x2xbf16>, tensor<2x2xbf16>, i64) -> tensor<4x2xbf16>
  dsa.probe "short" %short : tensor<4x2xbf16>
  %kv6 = arith.constant dense<[[0.0, -0.5], [1.0, -1.5], [2.0, -2.5], [3.0, -3.5], [4.0, -4.5], [5.0, -5.5]]> : tensor<6x2xbf16>
  %ring1 = dsa.ring_update %ring0, %kv6, %c0 : (tensor<4x2xbf16>, tensor<6x2xbf16>, i64) -> tensor<4x2xbf16>
  dsa.probe "prefill" %ring1 : tensor<4x2xbf16>
  %d6 = arith.constant dense<[[60.0, 61.0]]> : tensor<1x2xbf16>
  %ring2 = dsa.ring_update %ring1, %d6, %c6 : (tensor<4x2xbf16>, tensor<1x2xbf16>, i64) -> tensor<4x2xbf16>
  dsa.probe "decode6" %ring2 : tensor<4x2xbf16>
  %d7 = arith.constant dense<[[70.0, 71.0]]> : tensor<1x2xbf16>
  %ring3 = dsa.ring_update %ring2, %d7, %c7 : (tensor<4x2xbf16>, tensor<1x2xbf16>, i64) -> tensor<4x2xbf16>
  return %ring3 : tensor<4x2xbf16>
}
