// Issue 12 class 1: ring_update at a start_pos near INT64_MAX (an out-of-bounds write before the kernels' checks).
func.func @main() -> tensor<4x2xbf16> {
  %ring0 = arith.constant dense<9.0> : tensor<4x2xbf16>
  %huge = arith.constant 9223372036854775806 : i64
  %kv = arith.constant dense<[[0.0, -0.5], [1.0, -1.5]]> : tensor<2x2xbf16>
  %ring1 = dsa.ring_update %ring0, %kv, %huge : (tensor<4x2xbf16>, tensor<2x2xbf16>, i64) -> tensor<4x2xbf16>
  return %ring1 : tensor<4x2xbf16>
}
