// dsa.apply_rope on the interpreter (section 2): on the last rope_dim elements of each row, pair k is the complex
// number (row[2k], row[2k+1]) times (cos a, sin a) (or (cos a, -sin a) with `inverse`), a = f32(p) * f[k],
// each result rounded to bf16; the leading elements pass through. Row x[t, h] uses positions[t].
// RUN: dsa-run %s --entry=main | FileCheck %s

// rope_dim 4 of head_dim 6, theta 1e4: f[0] = 1, f[1] = 1/1e4^(2/4) = 0.01.
// Token 0 at p = 1: angles 1 and 0.01.
//   cos 1 = 0.5403023 -> bf16 (ulp 2^-8): 138.32/256 -> 138/256 = 0.5390625
//   sin 1 = 0.8414710 -> 215.42/256 -> 215/256 = 0.83984375
//   sin 0.01 = 0.0099998 -> bf16 (ulp 2^-14): 163.84*2^-14 -> 164*2^-14 = 0.010009765625
//   cos 0.01 = 0.99995 -> 255.99/256 -> 1
//   head 0 = [7, -3 | 1, 0 | 0, 1]: (1,0)(c,s) = (c, s); (0,1)(c,s) = (-s, c)
//     -> [7, -3, 0.5390625, 0.83984375, -0.010009765625, 1]
//   head 1 = [0, 0 | 0, 1 | 1, 0]: -> [0, 0, -0.83984375, 0.5390625, 1, 0.010009765625]
// Token 1 at p = 0: angle 0, rows unchanged.
// CHECK:      result 0: tensor<2x2x6xbf16> = [7, -3, 0.5390625, 0.83984375, -0.0100097656, 1, 0, 0, -0.83984375, 0.5390625, 1, 0.0100097656, 1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6]
// inverse: (1,0)(c,-s) = (c, -s); (0,1)(c,-s) = (s, c)
//   head 0 -> [7, -3, 0.5390625, -0.83984375, 0.010009765625, 1]; head 1 -> [0, 0, 0.83984375, 0.5390625, 1, -0.010009765625]
// CHECK-NEXT: result 1: tensor<2x2x6xbf16> = [7, -3, 0.5390625, -0.83984375, 0.0100097656, 1, 0, 0, 0.83984375, 0.5390625, 1, -0.0100097656, 1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6]
// YaRN (original_seq_len 32, factor 2, beta_fast 32, beta_slow 1), rope_dim 4, theta 1e4:
//   cdim(32) = 4*ln(32/(32*2pi))/(2*ln 1e4) = -0.399 -> low = max(floor, 0) = 0
//   cdim(1)  = 4*ln(32/(2pi))/(2*ln 1e4)    =  0.353 -> high = min(ceil, 3) = 1
//   ramp = [0, 1], smooth = [1, 0]: f[0] = 1 (kept), f[1] = 0.01/2 = 0.005.
//   sin 0.005 = 0.0049999792 -> bf16 (ulp 2^-15): 163.84*2^-15 -> 164*2^-15 = 0.0050048828125; cos 0.005 -> 1.
// CHECK-NEXT: result 2: tensor<2x2x6xbf16> = [7, -3, 0.5390625, 0.83984375, -0.00500488281, 1, 0, 0, -0.83984375, 0.5390625, 1, 0.00500488281, 1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6]
func.func @main() -> (tensor<2x2x6xbf16>, tensor<2x2x6xbf16>, tensor<2x2x6xbf16>) {
  %x = arith.constant dense<[[[7.0, -3.0, 1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0, 1.0, 0.0]],
                             [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]]]> : tensor<2x2x6xbf16>
  %pos = arith.constant dense<[1, 0]> : tensor<2xi64>
  %r = dsa.apply_rope %x, %pos {rope = #dsa.rope<rope_dim = 4, theta = 1.000000e+04>}
      : (tensor<2x2x6xbf16>, tensor<2xi64>) -> tensor<2x2x6xbf16>
  %inv = dsa.apply_rope %x, %pos {inverse, rope = #dsa.rope<rope_dim = 4, theta = 1.000000e+04>}
      : (tensor<2x2x6xbf16>, tensor<2xi64>) -> tensor<2x2x6xbf16>
  %y = dsa.apply_rope %x, %pos {rope = #dsa.rope<rope_dim = 4, theta = 1.000000e+04,
          yarn = #dsa.yarn<original_seq_len = 32, factor = 2.000000e+00, beta_fast = 3.200000e+01, beta_slow = 1.000000e+00>>}
      : (tensor<2x2x6xbf16>, tensor<2xi64>) -> tensor<2x2x6xbf16>
  return %r, %inv, %y : tensor<2x2x6xbf16>, tensor<2x2x6xbf16>, tensor<2x2x6xbf16>
}
