// Issue 12 class 1: select_candidate_blocks with a block size far beyond the scores (an out-of-bounds write before
// the kernels' checks).
func.func @main() -> tensor<1x5xi1> {
  %c4 = arith.constant 4 : i64
  %d1 = arith.constant dense<[[1.0, 6.0, 4.0, 5.0, 0xFF80]]> : tensor<1x5xbf16>
  %m1 = dsa.select_candidate_blocks %d1, %c4
      {ratio = 1 : i64, topk_blocks = 2 : i64, block_size = 4611686018427387904 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<1x5xbf16>, i64) -> tensor<1x5xi1>
  return %m1 : tensor<1x5xi1>
}
