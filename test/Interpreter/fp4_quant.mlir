// The fp4 round trips on the interpreter (section 2): per block, a scale s, then x = bf16(e2m1(clamp(x/s, -6, 6)) * s)
// with e2m1 rounding to the grid {0, 0.5, 1, 1.5, 2, 3, 4, 6}, ties to the EVEN code (codes 0..7 in that order):
// 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4, sign kept.
// RUN: dsa-run %s --entry=main | FileCheck %s
// RUN: not dsa-run %s --entry=bad_block 2>&1 | FileCheck %s --check-prefix=BLOCK

// fp4_quant_e8m0 (block 32): s = pow2_ceil(max(amax, 6*2^-126) / 6).
// Row 0: amax = 6, s = pow2_ceil(1) = 1 (mantissa zero), so x/s = x and only the e2m1 ties show:
//   6 -> 6, 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4, -0.75 -> -1, -2.5 -> -2,
//   0.3 (bf16 0.30078125, above the 0.25 midpoint) -> 0.5, zeros stay 0.
// CHECK:      result 0: tensor<2x32xbf16> = [6, 0, 1, 1, 2, 2, 4, 4, -1, -2, 0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
// Row 1: amax = 7, 7/6 = 1.1666.. (mantissa not zero) -> s = 2: 7/2 = 3.5 -> 4 (tie to even) -> 8; 3/2 = 1.5 -> 3;
//   1/2 = 0.5 -> 1; 0.5/2 = 0.25 -> 0 (tie to even).
// CHECK-SAME: 8, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
// fp4_quant_e4m3 (block 16): s = e4m3(max(amax, 6*2^-9) / 6).
// Block 0: amax = 6, s = e4m3(1) = 1: as row 0 above.
// CHECK-NEXT: result 1: tensor<1x32xbf16> = [6, 0, 1, 1, 2, 2, 4, 4, -1, -2, 0.5, 0, 0, 0, 0, 0,
// Block 1: amax = 7, 7/6 = 1.1666.. -> e4m3 (3 mantissa bits: 1, 1.125, 1.25, ..) rounds to s = 1.125:
//   7/1.125 = 6.22 -> clamped to 6 -> 6 * 1.125 = 6.75; 3/1.125 = 2.67 -> 3 -> 3.375; 1/1.125 = 0.89 -> 1 -> 1.125;
//   1.40625/1.125 = 1.25 exactly -> tie -> 1 (even code 2) -> 1.125; -0.5625/1.125 = -0.5 -> -0.5625.
// CHECK-SAME: 6.75, 3.375, 1.125, 1.125, -0.5625, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
func.func @main() -> (tensor<2x32xbf16>, tensor<1x32xbf16>) {
  %x = arith.constant dense<[[6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.75, -2.5, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                             [7.0, 3.0, 1.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<2x32xbf16>
  %q8 = dsa.fp4_quant_e8m0 %x {block_size = 32 : i64} : (tensor<2x32xbf16>) -> tensor<2x32xbf16>
  %y = arith.constant dense<[[6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.75, -2.5, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 7.0, 3.0, 1.0, 1.40625, -0.5625, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<1x32xbf16>
  %q4 = dsa.fp4_quant_e4m3 %y {block_size = 16 : i64} : (tensor<1x32xbf16>) -> tensor<1x32xbf16>
  return %q8, %q4 : tensor<2x32xbf16>, tensor<1x32xbf16>
}

// A row of 24 (hidden from the verifier by a dynamic width) is not a whole number of 16-blocks.
// BLOCK: fp4_quant.mlir:[[@LINE+4]]:{{[0-9]+}}: error: dsa interpreter: 'dsa.fp4_quant_e4m3' failed: fp4_quant_e4m3: block_size 16 does not divide the last dim of x (tensor<1x24xbf16>)
func.func @bad_block() -> tensor<1x?xbf16> {
  %x = arith.constant dense<1.0> : tensor<1x24xbf16>
  %xd = tensor.cast %x : tensor<1x24xbf16> to tensor<1x?xbf16>
  %q = dsa.fp4_quant_e4m3 %xd {block_size = 16 : i64} : (tensor<1x?xbf16>) -> tensor<1x?xbf16>
  return %q : tensor<1x?xbf16>
}
