// dsa.indexer_topk on the interpreter (section 6 step 7): k = min(index_topk, width); per row the torch-CPU top-k
// SET sorted ascending, then p -> p + offset if p < compress_len[t] else -1, with offset = s in prefill (the
// chunk's own window rows come first) and window_size in decode (the ring). A chunk (s > 1 tokens at start_pos > 0) ranks, in row t, its decode
// width compress_len[t] = (start_pos + t + 1) // ratio with its decode k = min(index_topk, compress_len[t]), offset
// window_size + s (the ring, then the chunk's rows), the rest of the row's k entries -1.
// Tie sets: for k*64 > n torch runs std::nth_element, which on n <= 3 elements is an insertion sort that moves an
// element only past strictly smaller values (comparator: a.value > b.value).
// RUN: dsa-run %s --entry=main | FileCheck %s
// RUN: dsa-run %s --entry=chunk | FileCheck %s --check-prefix=CHUNK

// Prefill s = 4 at ratio 2: width 2, compress_len [0, 1, 1, 2]; index_topk 3 -> k = min(3, 2) = 2; offset s = 4.
//   t0 [-inf, -inf] -> {0, 1}, both >= compress_len 0 -> [-1, -1]
//   t1 [5, -inf]    -> {0, 1}: 0 -> 0 + 4 = 4, 1 >= 1 -> -1
//   t2 [5, -inf]    -> [4, -1]
//   t3 [2, 7]       -> [4, 5]
// CHECK:      result 0: tensor<4x2xi32> = [-1, -1, 4, -1, 4, -1, 4, 5]
// Prefill s = 3 at ratio 1: width 3, compress_len [1, 2, 3]; index_topk 2 -> k = 2; offset 3.
//   t0 [4, -inf, -inf] -> 4 first, then the tie among -inf keeps index order: {0, 1} -> [3, -1]
//   t1 [1, 6, -inf]    -> {1, 0} -> ascending [0, 1] -> [3, 4]
//   t2 [1, 6, 9]       -> {2, 1} -> [1, 2] -> [4, 5]
// CHECK-NEXT: result 1: tensor<3x2xi32> = [3, -1, 3, 4, 4, 5]
// Decode at start_pos 5, ratio 2: width 3, compress_len 3; window_size 4 is the offset; index_topk 2.
//   [7, 1, 3] -> {0, 2} -> [4, 6]
// CHECK-NEXT: result 2: tensor<1x2xi32> = [4, 6]
//   [-inf, 8, -inf] (candidate-masked): insertion sort moves 8 to the front, then index 0 precedes index 2 among the
//   -inf: {1, 0} -> [0, 1] -> [4, 5]: position 0 is a valid row although its score is -inf (compress_len decides).
// CHECK-NEXT: result 3: tensor<1x2xi32> = [4, 5]
func.func @main() -> (tensor<4x2xi32>, tensor<3x2xi32>, tensor<1x2xi32>, tensor<1x2xi32>) {
  %c0 = arith.constant 0 : i64
  %c5 = arith.constant 5 : i64
  %p1 = arith.constant dense<[[0xFF80, 0xFF80], [5.0, 0xFF80], [5.0, 0xFF80], [2.0, 7.0]]> : tensor<4x2xbf16>
  %r0 = dsa.indexer_topk %p1, %c0
      {ratio = 2 : i64, index_topk = 3 : i64, window_size = 4 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<4x2xbf16>, i64) -> tensor<4x2xi32>
  %p2 = arith.constant dense<[[4.0, 0xFF80, 0xFF80], [1.0, 6.0, 0xFF80], [1.0, 6.0, 9.0]]> : tensor<3x3xbf16>
  %r1 = dsa.indexer_topk %p2, %c0
      {ratio = 1 : i64, index_topk = 2 : i64, window_size = 4 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<3x3xbf16>, i64) -> tensor<3x2xi32>
  %d1 = arith.constant dense<[[7.0, 1.0, 3.0]]> : tensor<1x3xbf16>
  %r2 = dsa.indexer_topk %d1, %c5
      {ratio = 2 : i64, index_topk = 2 : i64, window_size = 4 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<1x3xbf16>, i64) -> tensor<1x2xi32>
  %d2 = arith.constant dense<[[0xFF80, 8.0, 0xFF80]]> : tensor<1x3xbf16>
  %r3 = dsa.indexer_topk %d2, %c5
      {ratio = 2 : i64, index_topk = 2 : i64, window_size = 4 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<1x3xbf16>, i64) -> tensor<1x2xi32>
  return %r0, %r1, %r2, %r3 : tensor<4x2xi32>, tensor<3x2xi32>, tensor<1x2xi32>, tensor<1x2xi32>
}

// A chunk of 3 tokens at start_pos 3, ratio 2, window_size 4, index_topk 3: width 3, k = 3, offset 4 + 3 = 7,
// compress_len = [2, 2, 3].
//   row 0 [1, 6, 9]:     ranks [1, 6] with k 2 -> {0, 1} -> [7, 8, -1] (9 is not visible to position 3's step)
//   row 1 [-inf, 5, 2]:  ranks [-inf, 5] with k 2 -> {0, 1} -> [7, 8, -1]
//   row 2 [4, 1, 2]:     ranks all 3 -> {0, 1, 2} -> [7, 8, 9]
// CHUNK: result 0: tensor<3x3xi32> = [7, 8, -1, 7, 8, -1, 7, 8, 9]
func.func @chunk() -> tensor<3x3xi32> {
  %c3 = arith.constant 3 : i64
  %s = arith.constant dense<[[1.0, 6.0, 9.0], [0xFF80, 5.0, 2.0], [4.0, 1.0, 2.0]]> : tensor<3x3xbf16>
  %r = dsa.indexer_topk %s, %c3
      {ratio = 2 : i64, index_topk = 3 : i64, window_size = 4 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<3x3xbf16>, i64) -> tensor<3x3xi32>
  return %r : tensor<3x3xi32>
}
