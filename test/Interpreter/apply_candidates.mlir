// dsa.apply_candidates on the interpreter (section 6 step 6): -inf wherever the candidate mask is false.
// RUN: dsa-run %s --entry=main | FileCheck %s
// RUN: not dsa-run %s --entry=bad_mask 2>&1 | FileCheck %s --check-prefix=MASK

// CHECK: result 0: tensor<2x3xbf16> = [1, -inf, 3, -inf, -inf, 6]
func.func @main() -> tensor<2x3xbf16> {
  %scores = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xbf16>
  %mask = arith.constant dense<[[true, false, true], [false, false, true]]> : tensor<2x3xi1>
  %r = dsa.apply_candidates %scores, %mask : (tensor<2x3xbf16>, tensor<2x3xi1>) -> tensor<2x3xbf16>
  return %r : tensor<2x3xbf16>
}

// A mask published for another width (hidden from the verifier by dynamic shapes).
// MASK: apply_candidates.mlir:[[@LINE+6]]:{{[0-9]+}}: error: dsa interpreter: 'dsa.apply_candidates' failed: apply_candidates: mask must have the shape of scores tensor<2x3xbf16>, got tensor<2x2xi1>
func.func @bad_mask() -> tensor<2x?xbf16> {
  %scores = arith.constant dense<1.0> : tensor<2x3xbf16>
  %mask = arith.constant dense<true> : tensor<2x2xi1>
  %sd = tensor.cast %scores : tensor<2x3xbf16> to tensor<2x?xbf16>
  %md = tensor.cast %mask : tensor<2x2xi1> to tensor<2x?xi1>
  %r = dsa.apply_candidates %sd, %md : (tensor<2x?xbf16>, tensor<2x?xi1>) -> tensor<2x?xbf16>
  return %r : tensor<2x?xbf16>
}
