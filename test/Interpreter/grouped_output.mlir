// dsa.grouped_output on the interpreter (section 11): o[t] viewed as `groups` groups of H*hd/groups contiguous
// values; og[t, g*R + r] = bf16(sum_d o[t, g, d] * wo_a[g*R + r, d]).
// RUN: dsa-run %s --entry=main | FileCheck %s

// o = [[[1, 2^-8], [3, 4]]] (s 1, H 2, hd 2), groups 2 -> group 0 = [1, 2^-8] (head 0), group 1 = [3, 4] (head 1).
// wo_a [4, 2] (R = 2): rows 0, 1 belong to group 0, rows 2, 3 to group 1.
//   og[0] = 1*1 + 2^-8*1 = 1.00390625 -> bf16 tie, even -> 1
//   og[1] = 1*1 + 2^-8*3 = 1.01171875 -> bf16 tie, even -> 1.015625
//   og[2] = 3*2 + 4*0 = 6
//   og[3] = 3*1 + 4*1 = 7
// CHECK:      result 0: tensor<1x4xbf16> = [1, 1.015625, 6, 7]
// groups 1: one group of all 4 values, wo_a [1, 4] = [1, 1, 1, 1]: 1 + 2^-8 + 3 + 4 = 8.00390625 -> bf16 (ulp 2^-4) -> 8
// CHECK-NEXT: result 1: tensor<1x1xbf16> = [8]
func.func @main() -> (tensor<1x4xbf16>, tensor<1x1xbf16>) {
  %o = arith.constant dense<[[[1.0, 0.00390625], [3.0, 4.0]]]> : tensor<1x2x2xbf16>
  %wo_a = arith.constant dense<[[1.0, 1.0], [1.0, 3.0], [2.0, 0.0], [1.0, 1.0]]> : tensor<4x2xbf16>
  %og = dsa.grouped_output %o, %wo_a {groups = 2 : i64} : (tensor<1x2x2xbf16>, tensor<4x2xbf16>) -> tensor<1x4xbf16>
  %w1 = arith.constant dense<1.0> : tensor<1x4xbf16>
  %og1 = dsa.grouped_output %o, %w1 {groups = 1 : i64} : (tensor<1x2x2xbf16>, tensor<1x4xbf16>) -> tensor<1x1xbf16>
  return %og, %og1 : tensor<1x4xbf16>, tensor<1x1xbf16>
}
