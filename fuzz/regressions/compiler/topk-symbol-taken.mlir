

// expected-error @+1 {{'func.func' op dsa-to-gpu: the symbol 'dsa_cpu_topk_set' is taken by something other than the top-k runtime's declaration}}
func.func private @dsa_cpu_topk_set(i64) -> i32

func.func @topk(%sc: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xi32> {
  %t = dsa.indexer_topk %sc, %sp {ratio = 1 : i64, index_topk = 6 : i64, window_size = 8 : i64,
                                  tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
  return %t : tensor<?x?xi32>
}

