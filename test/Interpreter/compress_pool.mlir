// dsa.compress_pool on the interpreter (section 5, ratio r >= 2): a prefill pools every full group and parks the
// remainder in the state slots 0..rem-1; a decode step writes slot start_pos % r and pools the whole state when
// (start_pos + 1) % r == 0; a chunk (s > 1 tokens at start_pos > 0) is its tokens' decode steps in order. Pooling per dimension d: sum_j kv[j,d] * softmax_j(score[j,d]) over the r members.
// The scores are chosen so that every softmax weight is exact: equal scores give 1/2 each, a -inf member gets
// exp(-inf) = 0 and the other exp(0) / 1 = 1.
// RUN: dsa-run %s --entry=main | FileCheck %s
// RUN: dsa-run %s --entry=chunk | FileCheck %s --check-prefix=CHUNK
// RUN: not dsa-run %s --entry=bad_state 2>&1 | FileCheck %s --check-prefix=STATE

// Prefill s = 3 at ratio 2: rem = 1, cut = 2, one group (rows 0, 1).
//   kv = [[1, 2], [3, 4], [5, 6]], score = [[0, -inf], [0, 0], [2, -inf]]
//   d = 0: scores (0, 0) -> weights (1/2, 1/2) -> 1/2 + 3/2 = 2
//   d = 1: scores (-inf, 0) -> weights (0, 1) -> 4
// Row 2 goes to slot 0; slot 1 keeps the initial zeros / -inf.
// CHECK:      probe prefill.pooled: tensor<1x2xf32> = [2, 4]
// CHECK-NEXT: probe prefill.kv_state: tensor<2x2xf32> = [5, 6, 0, 0]
// CHECK-NEXT: probe prefill.score_state: tensor<2x2xf32> = [2, -inf, -inf, -inf]
// Decode at start_pos 3: slot 3 % 2 = 1 <- kv [7, 8], score [2, 3]; (3 + 1) % 2 == 0 completes the group (token 2
// from the prefill, token 3 now):
//   d = 0: scores (2, 2) -> (5 + 7) / 2 = 6
//   d = 1: scores (-inf, 3) -> weights (0, 1) -> 8
// CHECK-NEXT: probe decode3.pooled: tensor<1x2xf32> = [6, 8]
// CHECK-NEXT: probe decode3.kv_state: tensor<2x2xf32> = [5, 6, 7, 8]
// CHECK-NEXT: probe decode3.score_state: tensor<2x2xf32> = [2, -inf, 2, 3]
// Decode at start_pos 4: slot 0 <- kv [9, 10], score [0, 0]; (4 + 1) % 2 != 0: no group, g = 0.
// CHECK-NEXT: result 0: tensor<0x2xf32> = []
// CHECK-NEXT: result 1: tensor<2x2xf32> = [9, 10, 7, 8]
// CHECK-NEXT: result 2: tensor<2x2xf32> = [0, 0, 2, 3]
func.func @main() -> (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %c0 = arith.constant 0 : i64
  %c3 = arith.constant 3 : i64
  %c4 = arith.constant 4 : i64
  %kv_state0 = arith.constant dense<0.0> : tensor<2x2xf32>
  %score_state0 = arith.constant dense<0xFF800000> : tensor<2x2xf32>

  %kv = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %score = arith.constant dense<[[0.0, 0xFF800000], [0.0, 0.0], [2.0, 0xFF800000]]> : tensor<3x2xf32>
  %p0, %kvs1, %scs1 = dsa.compress_pool %kv, %score, %kv_state0, %score_state0, %c0 {ratio = 2 : i64}
      : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, i64)
      -> (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
  dsa.probe "prefill.pooled" %p0 : tensor<?x2xf32>
  dsa.probe "prefill.kv_state" %kvs1 : tensor<2x2xf32>
  dsa.probe "prefill.score_state" %scs1 : tensor<2x2xf32>

  %kv3 = arith.constant dense<[[7.0, 8.0]]> : tensor<1x2xf32>
  %score3 = arith.constant dense<[[2.0, 3.0]]> : tensor<1x2xf32>
  %p1, %kvs2, %scs2 = dsa.compress_pool %kv3, %score3, %kvs1, %scs1, %c3 {ratio = 2 : i64}
      : (tensor<1x2xf32>, tensor<1x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, i64)
      -> (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
  dsa.probe "decode3.pooled" %p1 : tensor<?x2xf32>
  dsa.probe "decode3.kv_state" %kvs2 : tensor<2x2xf32>
  dsa.probe "decode3.score_state" %scs2 : tensor<2x2xf32>

  %kv4 = arith.constant dense<[[9.0, 10.0]]> : tensor<1x2xf32>
  %score4 = arith.constant dense<[[0.0, 0.0]]> : tensor<1x2xf32>
  %p2, %kvs3, %scs3 = dsa.compress_pool %kv4, %score4, %kvs2, %scs2, %c4 {ratio = 2 : i64}
      : (tensor<1x2xf32>, tensor<1x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, i64)
      -> (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
  return %p2, %kvs3, %scs3 : tensor<?x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}

// A chunk of two tokens at start_pos 3, ratio 2: the decode steps at 3 then 4. State before: slot 0 holds
// position 2 (kv [1, 2], score [0, 0]), slot 1 a stale row.
//   position 3 -> slot 1 <- kv [3, 4], score [0, -inf]; (3 + 1) % 2 == 0 pools positions 2, 3:
//     d = 0: scores (0, 0) -> (1 + 3) / 2 = 2;  d = 1: scores (0, -inf) -> weights (1, 0) -> 2
//   position 4 -> slot 0 <- kv [5, 6], score [1, 1]; (4 + 1) % 2 != 0: no group.
// CHUNK:      result 0: tensor<1x2xf32> = [2, 2]
// CHUNK-NEXT: result 1: tensor<2x2xf32> = [5, 6, 3, 4]
// CHUNK-NEXT: result 2: tensor<2x2xf32> = [1, 1, 0, -inf]
func.func @chunk() -> (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %c3 = arith.constant 3 : i64
  %kv = arith.constant dense<[[3.0, 4.0], [5.0, 6.0]]> : tensor<2x2xf32>
  %score = arith.constant dense<[[0.0, 0xFF800000], [1.0, 1.0]]> : tensor<2x2xf32>
  %kv_state = arith.constant dense<[[1.0, 2.0], [9.0, 9.0]]> : tensor<2x2xf32>
  %score_state = arith.constant dense<[[0.0, 0.0], [7.0, 7.0]]> : tensor<2x2xf32>
  %p, %k, %s = dsa.compress_pool %kv, %score, %kv_state, %score_state, %c3 {ratio = 2 : i64}
      : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, i64)
      -> (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
  return %p, %k, %s : tensor<?x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}

// A state with 3 slots at ratio 2, hidden from the verifier by a dynamic dimension.
// STATE: compress_pool.mlir:[[@LINE+6]]:{{[0-9]+}}: error: dsa interpreter: 'dsa.compress_pool' failed: compress_pool: kv_state must be [ratio, hd] = [2, 2], got tensor<3x2xf32>
func.func @bad_state() -> tensor<?x2xf32> {
  %c0 = arith.constant 0 : i64
  %kv = arith.constant dense<1.0> : tensor<2x2xf32>
  %state3 = arith.constant dense<0.0> : tensor<3x2xf32>
  %state = tensor.cast %state3 : tensor<3x2xf32> to tensor<?x2xf32>
  %p, %k, %s = dsa.compress_pool %kv, %kv, %state, %state, %c0 {ratio = 2 : i64}
      : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, i64)
      -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>)
  return %p : tensor<?x2xf32>
}
