// dsa.rms_norm on the interpreter (section 2): per row r = 1/sqrt(mean(x^2) + eps) in f32,
// y = bf16(w[d] * (x[d] * r)).
// RUN: dsa-run %s --entry=main | FileCheck %s

// Row 0: x = [3, 4, 0, 0]: mean(x^2) = 25/4 = 6.25 (+1e-20 vanishes in f32), sqrt = 2.5, r = f32(0.4).
//   3*r = 1.2000000 -> bf16 neighbours 1.1953125 / 1.203125 (midpoint 1.19921875) -> 1.203125   (w = 1)
//   4*r = 1.6000000, w = 2 -> 3.2000000 -> bf16 neighbours 3.1875 / 3.203125 (midpoint 3.1953125) -> 3.203125
//   0, 0 -> 0 (w = 0.5, -1)
// Row 1: x = [1, 1, 1, 1]: mean = 1, r = 1 -> y = w = [1, 2, 0.5, -1].
// Row 2: x = 0: r = 1/sqrt(1e-20) = 1e10, 0 * r = 0 -> zeros (eps keeps the row finite).
// CHECK:      result 0: tensor<3x4xbf16> = [1.203125, 3.203125, 0, -0, 1, 2, 0.5, -1, 0, 0, 0, -0]
// The same rows as f32 input give the same bf16 result.
// CHECK-NEXT: result 1: tensor<3x4xbf16> = [1.203125, 3.203125, 0, -0, 1, 2, 0.5, -1, 0, 0, 0, -0]
func.func @main() -> (tensor<3x4xbf16>, tensor<3x4xbf16>) {
  %x = arith.constant dense<[[3.0, 4.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]]> : tensor<3x4xbf16>
  %xf = arith.constant dense<[[3.0, 4.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]]> : tensor<3x4xf32>
  %w = arith.constant dense<[1.0, 2.0, 0.5, -1.0]> : tensor<4xbf16>
  %y = dsa.rms_norm %x, %w {eps = 1.0e-20 : f32} : (tensor<3x4xbf16>, tensor<4xbf16>) -> tensor<3x4xbf16>
  %yf = dsa.rms_norm %xf, %w {eps = 1.0e-20 : f32} : (tensor<3x4xf32>, tensor<4xbf16>) -> tensor<3x4xbf16>
  return %y, %yf : tensor<3x4xbf16>, tensor<3x4xbf16>
}
