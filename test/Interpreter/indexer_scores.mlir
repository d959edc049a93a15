// dsa.indexer_scores on the interpreter (section 6 steps 3-4): with w'[t,h] = bf16(weights[t,h] * weight_scale),
// score[t, p] = bf16( sum_h bf16( relu(bf16(iq[t,h] . keys[p])) * w'[t,h] ) ), p < width = (start_pos + s) // ratio.
// RUN: dsa-run %s --entry=main | FileCheck %s
// RUN: not dsa-run %s --entry=short_keys 2>&1 | FileCheck %s --check-prefix=KEYS
// RUN: dsa-run %s --entry=entry_keys | FileCheck %s --check-prefix=ENTRY
// RUN: not dsa-run %s --entry=short_entry_keys 2>&1 | FileCheck %s --check-prefix=ENTRY-ROWS

// Prefill s = 2 at ratio 1: width 2 (keys row 2 is not read). IH = 2, ihd = 2, weight_scale 0.5.
//   iq[0] = [[1, 3], [3, -1]], iq[1] = [[0.5, 0], [1, 1]]; weights = [[2, 4], [1, -2]] -> w' = [[1, 2], [0.5, -1]]
//   keys = [[1, 1], [2, -1], [16, 3]]
//   t0 p0: h0 [1,3].[1,1] = 4 -> 4*1 = 4;   h1 [3,-1].[1,1] = 2 -> 2*2 = 4;      sum 8
//   t0 p1: h0 [1,3].[2,-1] = -1 -> relu 0;  h1 [3,-1].[2,-1] = 7 -> 7*2 = 14;    sum 14
//   t1 p0: h0 [0.5,0].[1,1] = 0.5 -> 0.25;  h1 [1,1].[1,1] = 2 -> 2*(-1) = -2;   sum -1.75
//   t1 p1: h0 [0.5,0].[2,-1] = 1 -> 0.5;    h1 [1,1].[2,-1] = 1 -> -1;           sum -0.5
// CHECK:      result 0: tensor<2x2xbf16> = [8, 14, -1.75, -0.5]
// Decode at start_pos 2, ratio 1: width 3. iq = [[16, 1], [0, 0]], weights [2, 6] -> w' = [1, 3].
//   p0: [16,1].[1,1] = 17; p1: [16,1].[2,-1] = 31; p2: [16,1].[16,3] = 259 = 1.00000011b*2^8, 8 mantissa bits:
//   bf16 keeps 7, 259 lies halfway between 258 (..0000001) and 260 (..0000010), the tie goes to the even 260.
//   Head 1 dots are 0, so each sum is head 0's bf16(relu(dot) * 1).
// CHECK-NEXT: result 1: tensor<1x3xbf16> = [17, 31, 260]
// Decode at start_pos 5, ratio 2: width 6 // 2 = 3, the same keys: the same three scores.
// CHECK-NEXT: result 2: tensor<1x3xbf16> = [17, 31, 260]
func.func @main() -> (tensor<2x?xbf16>, tensor<1x?xbf16>, tensor<1x?xbf16>) {
  %c0 = arith.constant 0 : i64
  %c2 = arith.constant 2 : i64
  %c5 = arith.constant 5 : i64
  %keys = arith.constant dense<[[1.0, 1.0], [2.0, -1.0], [16.0, 3.0]]> : tensor<3x2xbf16>
  %iq = arith.constant dense<[[[1.0, 3.0], [3.0, -1.0]], [[0.5, 0.0], [1.0, 1.0]]]> : tensor<2x2x2xbf16>
  %w = arith.constant dense<[[2.0, 4.0], [1.0, -2.0]]> : tensor<2x2xbf16>
  %prefill = dsa.indexer_scores %iq, %w, %keys, %c0 {ratio = 1 : i64, weight_scale = 5.000000e-01 : f32}
      : (tensor<2x2x2xbf16>, tensor<2x2xbf16>, tensor<3x2xbf16>, i64) -> tensor<2x?xbf16>
  %iq1 = arith.constant dense<[[[16.0, 1.0], [0.0, 0.0]]]> : tensor<1x2x2xbf16>
  %w1 = arith.constant dense<[[2.0, 6.0]]> : tensor<1x2xbf16>
  %decode = dsa.indexer_scores %iq1, %w1, %keys, %c2 {ratio = 1 : i64, weight_scale = 5.000000e-01 : f32}
      : (tensor<1x2x2xbf16>, tensor<1x2xbf16>, tensor<3x2xbf16>, i64) -> tensor<1x?xbf16>
  %decode2 = dsa.indexer_scores %iq1, %w1, %keys, %c5 {ratio = 2 : i64, weight_scale = 5.000000e-01 : f32}
      : (tensor<1x2x2xbf16>, tensor<1x2xbf16>, tensor<3x2xbf16>, i64) -> tensor<1x?xbf16>
  return %prefill, %decode, %decode2 : tensor<2x?xbf16>, tensor<1x?xbf16>, tensor<1x?xbf16>
}

// entry_keys (the index_k quirk per token): at start_pos > 0 a row whose token closes no group of `ratio`
// ((start_pos + t + 1) % ratio != 0) reads entry_keys; the others, and every prefill row, read keys. Every row has
// iq = [[16, 1], [0, 0]], w' = [1, 3] (as the decode above), so a row's scores are its keys' head-0 dots:
//   keys  = [[1, 1], [2, -1], [16, 3]] -> [17, 31, 260] (above);  entry = [[2, 0], [0, 1], [1, 1]] -> [32, 1, 17].
// Chunk of 3 at start_pos 3, ratio 2 (width 3): positions 3, 4, 5; 4 closes no group (5 % 2 != 0): row 1 reads entry.
// ENTRY:      result 0: tensor<3x3xbf16> = [17, 31, 260, 32, 1, 17, 17, 31, 260]
// Prefill of 3 at start_pos 0, ratio 2 (width 1): every row reads keys.
// ENTRY-NEXT: result 1: tensor<3x1xbf16> = [17, 17, 17]
// Decode at start_pos 4 (closes no group; width 5 // 2 = 2): entry. At start_pos 5 (closes one; width 3): keys.
// ENTRY-NEXT: result 2: tensor<1x2xbf16> = [32, 1]
// ENTRY-NEXT: result 3: tensor<1x3xbf16> = [17, 31, 260]
// Ratio 1: every token closes a group, entry_keys is never read.
// ENTRY-NEXT: result 4: tensor<3x6xbf16> = [17, 31, 260, 17, 31, 260, 17, 31, 260, 17, 31, 260, 17, 31, 260, 17, 31, 260]
func.func @entry_keys() -> (tensor<3x?xbf16>, tensor<3x?xbf16>, tensor<1x?xbf16>, tensor<1x?xbf16>, tensor<3x?xbf16>) {
  %c0 = arith.constant 0 : i64
  %c3 = arith.constant 3 : i64
  %c4 = arith.constant 4 : i64
  %c5 = arith.constant 5 : i64
  %keys = arith.constant dense<[[1.0, 1.0], [2.0, -1.0], [16.0, 3.0], [1.0, 1.0], [2.0, -1.0], [16.0, 3.0]]> : tensor<6x2xbf16>
  %entry = arith.constant dense<[[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]]> : tensor<3x2xbf16>
  %iq3 = arith.constant dense<[[[16.0, 1.0], [0.0, 0.0]], [[16.0, 1.0], [0.0, 0.0]], [[16.0, 1.0], [0.0, 0.0]]]> : tensor<3x2x2xbf16>
  %w3 = arith.constant dense<[[2.0, 6.0], [2.0, 6.0], [2.0, 6.0]]> : tensor<3x2xbf16>
  %iq1 = arith.constant dense<[[[16.0, 1.0], [0.0, 0.0]]]> : tensor<1x2x2xbf16>
  %w1 = arith.constant dense<[[2.0, 6.0]]> : tensor<1x2xbf16>
  %chunk = dsa.indexer_scores %iq3, %w3, %keys, %c3 entry_keys %entry {ratio = 2 : i64, weight_scale = 5.000000e-01 : f32}
      : (tensor<3x2x2xbf16>, tensor<3x2xbf16>, tensor<6x2xbf16>, i64, tensor<3x2xbf16>) -> tensor<3x?xbf16>
  %prefill = dsa.indexer_scores %iq3, %w3, %keys, %c0 entry_keys %entry {ratio = 2 : i64, weight_scale = 5.000000e-01 : f32}
      : (tensor<3x2x2xbf16>, tensor<3x2xbf16>, tensor<6x2xbf16>, i64, tensor<3x2xbf16>) -> tensor<3x?xbf16>
  %open = dsa.indexer_scores %iq1, %w1, %keys, %c4 entry_keys %entry {ratio = 2 : i64, weight_scale = 5.000000e-01 : f32}
      : (tensor<1x2x2xbf16>, tensor<1x2xbf16>, tensor<6x2xbf16>, i64, tensor<3x2xbf16>) -> tensor<1x?xbf16>
  %closing = dsa.indexer_scores %iq1, %w1, %keys, %c5 entry_keys %entry {ratio = 2 : i64, weight_scale = 5.000000e-01 : f32}
      : (tensor<1x2x2xbf16>, tensor<1x2xbf16>, tensor<6x2xbf16>, i64, tensor<3x2xbf16>) -> tensor<1x?xbf16>
  %r1 = dsa.indexer_scores %iq3, %w3, %keys, %c3 entry_keys %keys {ratio = 1 : i64, weight_scale = 5.000000e-01 : f32}
      : (tensor<3x2x2xbf16>, tensor<3x2xbf16>, tensor<6x2xbf16>, i64, tensor<6x2xbf16>) -> tensor<3x?xbf16>
  return %chunk, %prefill, %open, %closing, %r1
      : tensor<3x?xbf16>, tensor<3x?xbf16>, tensor<1x?xbf16>, tensor<1x?xbf16>, tensor<3x?xbf16>
}

// Decode at start_pos 3, ratio 1: width 4, but the key slot holds 3 rows.
// KEYS: indexer_scores.mlir:[[@LINE+6]]:{{[0-9]+}}: error: dsa interpreter: 'dsa.indexer_scores' failed: indexer_scores: keys must hold at least width = (start_pos + s) // ratio = 4 rows, got tensor<3x2xbf16>
func.func @short_keys() -> tensor<1x?xbf16> {
  %c3 = arith.constant 3 : i64
  %keys = arith.constant dense<1.0> : tensor<3x2xbf16>
  %iq = arith.constant dense<1.0> : tensor<1x2x2xbf16>
  %w = arith.constant dense<1.0> : tensor<1x2xbf16>
  %s = dsa.indexer_scores %iq, %w, %keys, %c3 {ratio = 1 : i64, weight_scale = 5.000000e-01 : f32}
      : (tensor<1x2x2xbf16>, tensor<1x2xbf16>, tensor<3x2xbf16>, i64) -> tensor<1x?xbf16>
  return %s : tensor<1x?xbf16>
}

// A chunk of 4 at start_pos 4, ratio 2: width 4, but entry_keys holds 3 rows (checked whether or not a row reads it).
// ENTRY-ROWS: indexer_scores.mlir:[[@LINE+7]]:{{[0-9]+}}: error: dsa interpreter: 'dsa.indexer_scores' failed: indexer_scores: entry_keys must hold at least width = (start_pos + s) // ratio = 4 rows (a row closing no group reads it), got tensor<3x2xbf16>
func.func @short_entry_keys() -> tensor<4x?xbf16> {
  %c4 = arith.constant 4 : i64
  %keys = arith.constant dense<1.0> : tensor<8x2xbf16>
  %entry = arith.constant dense<1.0> : tensor<3x2xbf16>
  %iq = arith.constant dense<1.0> : tensor<4x2x2xbf16>
  %w = arith.constant dense<1.0> : tensor<4x2xbf16>
  %s = dsa.indexer_scores %iq, %w, %keys, %c4 entry_keys %entry {ratio = 2 : i64, weight_scale = 5.000000e-01 : f32}
      : (tensor<4x2x2xbf16>, tensor<4x2xbf16>, tensor<8x2xbf16>, i64, tensor<3x2xbf16>) -> tensor<4x?xbf16>
  return %s : tensor<4x?xbf16>
}
