// What dsa-to-cpu rejects, with a diagnostic naming the missing step or the dimension it needs static.
// RUN: dsa-opt %s --dsa-to-cpu --split-input-file --verify-diagnostics

func.func @probe(%x: tensor<2xf32>) {
  // expected-error @+1 {{'dsa.probe' op must be removed before dsa-to-cpu (run dsa-strip-probes first)}}
  dsa.probe "L0.x" %x : tensor<2xf32>
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %start_pos: i64, %ring: tensor<8x32xbf16>, %w0: tensor<4xf32>,
                     %w1: tensor<16x64xbf16>, %w2: tensor<16xbf16>, %w3: tensor<128x16xbf16>, %w4: tensor<32x64xbf16>,
                     %w5: tensor<32xbf16>, %w6: tensor<32x64xbf16>, %w7: tensor<64x32xbf16>)
    -> (tensor<?x64xbf16>, tensor<8x32xbf16>) {
  // expected-error @+1 {{'dsa.attention' op must be decomposed before dsa-to-cpu (run dsa-decompose-attention first)}}
  %out, %new_ring = dsa.attention %x, %start_pos, %ring weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6, %w7)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
       q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0,
       norm_eps = 9.99999968E-21 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return %out, %new_ring : tensor<?x64xbf16>, tensor<8x32xbf16>
}

// -----

func.func @pool_dynamic_hd(%kv: tensor<?x?xf32>, %kvs: tensor<2x32xf32>, %sp: i64)
    -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>) {
  // expected-error @+2 {{'dsa.compress_pool' op dsa-to-cpu needs dimension 1 of 'kv' to be static}}
  // expected-error @+1 {{failed to legalize operation 'dsa.compress_pool'}}
  %p, %a, %b = dsa.compress_pool %kv, %kv, %kvs, %kvs, %sp {ratio = 2 : i64}
      : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<2x32xf32>, tensor<2x32xf32>, i64)
      -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>)
  return %p, %a, %b : tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>
}

// -----

func.func @pool_dynamic_state(%kv: tensor<?x32xf32>, %kvs: tensor<?x32xf32>, %sp: i64)
    -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  // expected-error @+2 {{'dsa.compress_pool' op dsa-to-cpu needs 'kv_state' to have a static shape [ratio, hd]}}
  // expected-error @+1 {{failed to legalize operation 'dsa.compress_pool'}}
  %p, %a, %b = dsa.compress_pool %kv, %kv, %kvs, %kvs, %sp {ratio = 2 : i64}
      : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>, i64)
      -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>)
  return %p, %a, %b : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

func.func @fp4_dynamic_width(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16> {
  // expected-error @+2 {{'dsa.fp4_quant_e8m0' op dsa-to-cpu needs dimension 1 of 'x' to be static}}
  // expected-error @+1 {{failed to legalize operation 'dsa.fp4_quant_e8m0'}}
  %y = dsa.fp4_quant_e8m0 %x {block_size = 32 : i64} : (tensor<?x?xbf16>) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}

// -----

func.func @cache_dynamic_width(%c: tensor<8x?xbf16>, %r: tensor<?x?xbf16>, %sp: i64) -> tensor<8x?xbf16> {
  // expected-error @+2 {{'dsa.cache_write' op dsa-to-cpu needs dimension 1 of 'cache' to be static}}
  // expected-error @+1 {{failed to legalize operation 'dsa.cache_write'}}
  %y = dsa.cache_write %c, %r, %sp {ratio = 2 : i64} : (tensor<8x?xbf16>, tensor<?x?xbf16>, i64) -> tensor<8x?xbf16>
  return %y : tensor<8x?xbf16>
}

// -----

func.func @scores_dynamic_heads(%iq: tensor<?x?x32xbf16>, %w: tensor<?x?xbf16>, %k: tensor<?x32xbf16>, %sp: i64)
    -> tensor<?x?xbf16> {
  // expected-error @+2 {{'dsa.indexer_scores' op dsa-to-cpu needs dimension 1 of 'iq' to be static}}
  // expected-error @+1 {{failed to legalize operation 'dsa.indexer_scores'}}
  %y = dsa.indexer_scores %iq, %w, %k, %sp {ratio = 1 : i64, weight_scale = 1.250000e-01 : f32}
      : (tensor<?x?x32xbf16>, tensor<?x?xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}

// -----

func.func @dynamic_k(%x: tensor<?x?xbf16>, %w: tensor<2x?xbf16>) -> tensor<?x2xbf16> {
  // expected-error @+2 {{'dsa.linear' op dsa-to-cpu needs dimension 1 of 'weight' to be static}}
  // expected-error @+1 {{failed to legalize operation 'dsa.linear'}}
  %y = dsa.linear %x, %w : (tensor<?x?xbf16>, tensor<2x?xbf16>) -> tensor<?x2xbf16>
  return %y : tensor<?x2xbf16>
}

// -----

// A runtime function's name taken by a declaration of another type (found by the compiler fuzzer,
// fuzz/regressions/compiler/topk-symbol-taken.mlir): an error, not calls that fail verification later.
// expected-error @+1 {{'func.func' op dsa-to-cpu: the symbol 'dsa_cpu_topk_set' is taken by something other than the top-k runtime's declaration}}
func.func private @dsa_cpu_topk_set(i64) -> i32

func.func @topk(%sc: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xi32> {
  %t = dsa.indexer_topk %sc, %sp {ratio = 1 : i64, index_topk = 6 : i64, window_size = 8 : i64,
                                  tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
  return %t : tensor<?x?xi32>
}

// -----

// The run-time check hook's name taken by a function of another type.
// expected-error @+1 {{'func.func' op dsa-to-cpu: the symbol 'dsa_cpu_fail' is taken by something other than the run-time check hook's declaration}}
func.func private @dsa_cpu_fail(i64)

func.func @positions(%sp: i64, %n: index) -> tensor<?xi64> {
  %p = dsa.positions %sp, %n {stride = 1 : i64} : (i64, index) -> tensor<?xi64>
  return %p : tensor<?xi64>
}
