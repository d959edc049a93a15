// dsa.linear on the interpreter (attention-semantics.md section 2): y[m, n] = sum_k x[m, k] * W[n, k], f32
// accumulation; bf16 operands round the result to bf16 (RNE), f32 operands do not round.
// RUN: dsa-run %s --entry=main | FileCheck %s

// x = [[1, 2^-8], [0.5, -2]], W = [[1, 1], [1, 3], [2, 0.25]] (all bf16-exact).
//   y[0,0] = 1 + 2^-8          = 1.00390625   -> bf16: halfway between 1 and 1+2^-7, ties to even -> 1
//   y[0,1] = 1 + 3*2^-8        = 1.01171875   -> halfway between 1+2^-7 (odd) and 1+2^-6 (even) -> 1.015625
//   y[0,2] = 2 + 2^-8*0.25     = 2.0009765625 -> bf16 ulp at 2 is 2^-6 -> 2
//   y[1,0] = 0.5 - 2           = -1.5
//   y[1,1] = 0.5 - 6           = -5.5
//   y[1,2] = 1 - 0.5           = 0.5
// The f32 form of the same operands keeps the unrounded sums.
// CHECK:      result 0: tensor<2x3xbf16> = [1, 1.015625, 2, -1.5, -5.5, 0.5]
// CHECK-NEXT: result 1: tensor<2x3xf32> = [1.00390625, 1.01171875, 2.00097656, -1.5, -5.5, 0.5]
// A leading batch dimension (x [1, 2, 2]) and a dynamic row count: shapes come from the runtime values.
// CHECK-NEXT: result 2: tensor<1x2x3xbf16> = [1, 1.015625, 2, -1.5, -5.5, 0.5]
func.func @main() -> (tensor<?x3xbf16>, tensor<2x3xf32>, tensor<1x2x3xbf16>) {
  %x = arith.constant dense<[[1.0, 0.00390625], [0.5, -2.0]]> : tensor<2x2xbf16>
  %w = arith.constant dense<[[1.0, 1.0], [1.0, 3.0], [2.0, 0.25]]> : tensor<3x2xbf16>
  %xd = tensor.cast %x : tensor<2x2xbf16> to tensor<?x2xbf16>
  %y = dsa.linear %xd, %w : (tensor<?x2xbf16>, tensor<3x2xbf16>) -> tensor<?x3xbf16>

  %xf = arith.constant dense<[[1.0, 0.00390625], [0.5, -2.0]]> : tensor<2x2xf32>
  %wf = arith.constant dense<[[1.0, 1.0], [1.0, 3.0], [2.0, 0.25]]> : tensor<3x2xf32>
  %yf = dsa.linear %xf, %wf : (tensor<2x2xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>

  %x3 = tensor.expand_shape %x [[0, 1], [2]] output_shape [1, 2, 2] : tensor<2x2xbf16> into tensor<1x2x2xbf16>
  %y3 = dsa.linear %x3, %w : (tensor<1x2x2xbf16>, tensor<3x2xbf16>) -> tensor<1x2x3xbf16>
  return %y, %yf, %y3 : tensor<?x3xbf16>, tensor<2x3xf32>, tensor<1x2x3xbf16>
}
