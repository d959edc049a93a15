// dsa.act_quant_fp8 on the interpreter (section 2): per block of block_size elements of a row,
// amax = max(max|x|, 1e-4), s = pow2_ceil(amax/448), x = bf16(e4m3(clamp(x/s, -448, 448)) * s).
// e4m3fn: 3 mantissa bits, RNE, normals down to 2^-6, subnormals k*2^-9.
// RUN: dsa-run %s --entry=main | FileCheck %s

// block_size 4, rows of 8 (two blocks per row).
// Row 0, block 0 = [3, 2^-16, 3*2^-17, 2^-18]: amax = 3, 3/448 = 1.71*2^-8 -> s = 2^-7.
//   x/s = [384 (= 1.5*2^8, exact), 2^-9 (smallest subnormal, exact), 1.5*2^-9 (tie between codes 1 and 2 -> even
//   code 2 = 2^-8), 2^-11 (below half the smallest subnormal -> 0)]
//   -> [3, 2^-16 = 1.52587891e-05, 2^-8*2^-7 = 2^-15 = 3.05175781e-05, 0]
// Row 0, block 1 = [10, 1.0625, -0.0078125, 0]: amax = 10, 10/448 = 1.43*2^-6 -> s = 2^-5.
//   x/s = [320 (= 1.25*2^8, exact), 34 (tie between 32 (mantissa 000) and 36 (001) -> 32), -0.25 (exact), 0]
//   -> [10, 1, -0.0078125, 0]
// Row 1, block 0 = zeros: amax = 1e-4, stays 0.
// Row 1, block 1 = [1, -2, 3, 0.5]: s = 2^-7, x/s = [128, -256, 384, 64], all exact -> unchanged.
// CHECK: result 0: tensor<2x8xbf16> = [3, 1.52587891e-05, 3.05175781e-05, 0, 10, 1, -0.0078125, 0, 0, 0, 0, 0, 1, -2, 3, 0.5]
func.func @main() -> tensor<2x8xbf16> {
  %x = arith.constant dense<[[3.0, 1.52587890625E-5, 2.288818359375E-5, 3.814697265625E-6, 10.0, 1.0625, -0.0078125, 0.0],
                             [0.0, 0.0, 0.0, 0.0, 1.0, -2.0, 3.0, 0.5]]> : tensor<2x8xbf16>
  %q = dsa.act_quant_fp8 %x {block_size = 4 : i64} : (tensor<2x8xbf16>) -> tensor<2x8xbf16>
  return %q : tensor<2x8xbf16>
}
