// dsa.sparse_attn on the interpreter (section 10): z_j = (q[t,h] . kv[idx[t,j]]) * scale (-inf for idx -1),
// m = max(sink[h], max_j z_j), den = exp(sink[h] - m) + sum_j exp(z_j - m),
// o[t,h] = bf16(sum_j exp(z_j - m)/den * kv[idx[t,j]]); a row of only -1 gives zeros.
// RUN: dsa-run %s --entry=main | FileCheck %s
// RUN: not dsa-run %s --entry=bad_index 2>&1 | FileCheck %s --check-prefix=BADIDX

// kv = [[0, 2], [1, 1], [5, 5]], scale 0.5, sink = [0, 0], idx = [[0, 1, -1], [-1, -1, -1]].
// Token 0, head 0, q = [2, 0]: z = [0, 1, -inf], m = max(0, 1) = 1,
//   den = exp(0-1) [sink] + exp(0-1) + exp(0) = 1 + 2/e = 1.7357589
//   w0 = exp(-1)/den = 0.2119416, w1 = 1/den = 0.5761169
//   o = w0*[0, 2] + w1*[1, 1] = [0.5761169, 1.0000000]
//   bf16: 0.5761169*256 = 147.49 -> 147/256 = 0.57421875; 1.0 -> 1
// Token 0, head 1, q = [0, 0]: z = [0, 0], m = 0, den = 1 + 1 + 1 = 3,
//   o = ([0, 2] + [1, 1])/3 = [0.3333333, 1] -> bf16: 0.3333333*512 = 170.67 -> 171/512 = 0.333984375; 1
// Token 1: all indices -1 -> zeros (the sink alone fills the denominator).
// CHECK: result 0: tensor<2x2x2xbf16> = [0.57421875, 1, 0.333984375, 1, 0, 0, 0, 0]
func.func @main() -> tensor<?x2x2xbf16> {
  %q = arith.constant dense<[[[2.0, 0.0], [0.0, 0.0]], [[1.0, 1.0], [3.0, 3.0]]]> : tensor<2x2x2xbf16>
  %kv = arith.constant dense<[[0.0, 2.0], [1.0, 1.0], [5.0, 5.0]]> : tensor<3x2xbf16>
  %idx = arith.constant dense<[[0, 1, -1], [-1, -1, -1]]> : tensor<2x3xi32>
  %sink = arith.constant dense<0.0> : tensor<2xf32>
  %qd = tensor.cast %q : tensor<2x2x2xbf16> to tensor<?x2x2xbf16>
  %o = dsa.sparse_attn %qd, %kv, %idx, %sink {scale = 0.5 : f32}
      : (tensor<?x2x2xbf16>, tensor<3x2xbf16>, tensor<2x3xi32>, tensor<2xf32>) -> tensor<?x2x2xbf16>
  return %o : tensor<?x2x2xbf16>
}

// An index past the 3 kv rows: the kernel's error names the index and becomes a diagnostic at the op.
// BADIDX: sparse_attn.mlir:[[@LINE+6]]:{{[0-9]+}}: error: dsa interpreter: 'dsa.sparse_attn' failed: {{.*}}indices[0, 1]{{.*}}3
func.func @bad_index() -> tensor<1x1x2xbf16> {
  %q = arith.constant dense<1.0> : tensor<1x1x2xbf16>
  %kv = arith.constant dense<1.0> : tensor<3x2xbf16>
  %idx = arith.constant dense<[[0, 3]]> : tensor<1x2xi32>
  %sink = arith.constant dense<0.0> : tensor<1xf32>
  %o = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.5 : f32}
      : (tensor<1x1x2xbf16>, tensor<3x2xbf16>, tensor<1x2xi32>, tensor<1xf32>) -> tensor<1x1x2xbf16>
  return %o : tensor<1x1x2xbf16>
}
