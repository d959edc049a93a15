// dsa.select_candidate_blocks on the interpreter (section 7): rows padded with -inf to whole blocks, block score =
// max over the block, the block (compress_len - 1) // block_size pinned to +inf (none when compress_len == 0), the
// torch-CPU top-k set of min(topk_blocks, n_blocks) blocks, picks of value -inf dropped; the mask is true on every
// position of a kept block. In a step at start_pos > 0 row t ranks its own decode width compress_len[t] =
// (start_pos + t + 1) // ratio (n_blocks and k from it, nothing past it kept): a chunk picks what its decode steps do.
// RUN: dsa-run %s --entry=main | FileCheck %s
// RUN: dsa-run %s --entry=chunk | FileCheck %s --check-prefix=CHUNK

// Prefill s = 8 at ratio 4: width 2, compress_len[t] = (t + 1) // 4 = [0, 0, 0, 1, 1, 1, 1, 2]; block_size 1 (a
// block per position), topk_blocks 1.
//   t0 [3, 5]       len 0, no pin: the larger block 1                        -> [0, 1]
//   t1 [-inf, -inf] len 0, no pin: the one pick has score -inf, dropped      -> [0, 0]
//   t2 [5, 5]       len 0, no pin, a tie: k*64 > n, torch runs nth_element, which on 2 elements is an insertion
//                   sort that moves nothing between equal values: block 0    -> [1, 0]
//   t3 [2, 9]       len 1: block 0 pinned to +inf beats 9                    -> [1, 0]
//   t4 [-inf, -inf] len 1: block 0 pinned, kept although its scores are -inf -> [1, 0]
//   t5 [0, 8]       len 1                                                    -> [1, 0]
//   t6 [-inf, 0]    len 1                                                    -> [1, 0]
//   t7 [9, 2]       len 2: block 1 pinned beats 9                            -> [0, 1]
// CHECK:      result 0: tensor<8x2xi1> = [0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1]
// Decode at start_pos 4, ratio 1: width 5, compress_len 5; block_size 2: blocks {0,1}, {2,3}, {4,pad}; topk 2.
//   [1, 6, 4, 5, -inf]: block scores [6, 5, -inf]; block (5-1)//2 = 2 pinned -> [6, 5, +inf]; top-2 {2, 0}
// CHECK-NEXT: result 1: tensor<1x5xi1> = [1, 1, 0, 0, 1]
//   [-inf, -inf, -inf, -inf, 3]: block scores [-inf, -inf, +inf (pinned)]; top-2 = block 2 and a -inf block,
//   which is dropped
// CHECK-NEXT: result 2: tensor<1x5xi1> = [0, 0, 0, 0, 1]
// Decode at start_pos 5, ratio 2: width 3, compress_len 3; block_size 2, topk 1: [9, 1, 0] -> blocks [9, 0]; block
// (3-1)//2 = 1 pinned beats 9; the mask covers only position 2 (the padding is cut at width).
// CHECK-NEXT: result 3: tensor<1x3xi1> = [0, 0, 1]
func.func @main() -> (tensor<8x2xi1>, tensor<1x5xi1>, tensor<1x5xi1>, tensor<1x3xi1>) {
  %c0 = arith.constant 0 : i64
  %c4 = arith.constant 4 : i64
  %c5 = arith.constant 5 : i64
  %prefill = arith.constant dense<[[3.0, 5.0], [0xFF80, 0xFF80], [5.0, 5.0], [2.0, 9.0], [0xFF80, 0xFF80],
                                   [0.0, 8.0], [0xFF80, 0.0], [9.0, 2.0]]> : tensor<8x2xbf16>
  %m0 = dsa.select_candidate_blocks %prefill, %c0
      {ratio = 4 : i64, topk_blocks = 1 : i64, block_size = 1 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<8x2xbf16>, i64) -> tensor<8x2xi1>
  %d1 = arith.constant dense<[[1.0, 6.0, 4.0, 5.0, 0xFF80]]> : tensor<1x5xbf16>
  %m1 = dsa.select_candidate_blocks %d1, %c4
      {ratio = 1 : i64, topk_blocks = 2 : i64, block_size = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<1x5xbf16>, i64) -> tensor<1x5xi1>
  %d2 = arith.constant dense<[[0xFF80, 0xFF80, 0xFF80, 0xFF80, 3.0]]> : tensor<1x5xbf16>
  %m2 = dsa.select_candidate_blocks %d2, %c4
      {ratio = 1 : i64, topk_blocks = 2 : i64, block_size = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<1x5xbf16>, i64) -> tensor<1x5xi1>
  %d3 = arith.constant dense<[[9.0, 1.0, 0.0]]> : tensor<1x3xbf16>
  %m3 = dsa.select_candidate_blocks %d3, %c5
      {ratio = 2 : i64, topk_blocks = 1 : i64, block_size = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<1x3xbf16>, i64) -> tensor<1x3xi1>
  return %m0, %m1, %m2, %m3 : tensor<8x2xi1>, tensor<1x5xi1>, tensor<1x5xi1>, tensor<1x3xi1>
}

// A chunk of 3 tokens at start_pos 3, ratio 2: width 6 // 2 = 3, compress_len = [2, 2, 3]; topk_blocks 2,
// block_size 1.
//   row 0 [5, 1, 9]:     ranks 2 blocks, block 1 pinned: [5, +inf] -> both -> [1, 1, 0] (over the whole width it
//                        would keep {1, 2}: 9 is not visible to the decode step at position 3)
//   row 1 [7, 3, -inf]:  [7, +inf] -> both -> [1, 1, 0]
//   row 2 [4, 1, 2]:     3 blocks, block 2 pinned: [4, 1, +inf] -> {2, 0} -> [1, 0, 1]
// CHUNK: result 0: tensor<3x3xi1> = [1, 1, 0, 1, 1, 0, 1, 0, 1]
func.func @chunk() -> tensor<3x3xi1> {
  %c3 = arith.constant 3 : i64
  %s = arith.constant dense<[[5.0, 1.0, 9.0], [7.0, 3.0, 0xFF80], [4.0, 1.0, 2.0]]> : tensor<3x3xbf16>
  %m = dsa.select_candidate_blocks %s, %c3
      {ratio = 2 : i64, topk_blocks = 2 : i64, block_size = 1 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<3x3xbf16>, i64) -> tensor<3x3xi1>
  return %m : tensor<3x3xi1>
}
