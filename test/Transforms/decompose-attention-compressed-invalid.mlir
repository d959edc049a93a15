// RUN: dsa-opt --mlir-very-unsafe-disable-verifier-on-parsing --dsa-decompose-attention -split-input-file -verify-diagnostics %s

// dsa-decompose-attention's own checks: the facts the rewrite relies on (operand group sizes implied by the role in
// config.compress, rank-2 slots, a rank-2 x), re-checked by the pass so that an op that did not go through the
// dsa.attention verifier gets a diagnostic naming the group or operand, never malformed IR. The verifier rejects all
// of these at parse time, so these inputs are parsed with verification disabled.

#rope = #dsa.rope<rope_dim = 8, theta = 4.000000e+04 : f64,
                  yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64,
                          beta_slow = 1.000000e+00 : f64>>
// A ratio-2 kv source without its state (kv_state, score_state and the two caches).
func.func @kv_source_without_state(
    %x: tensor<?x64xbf16>, %start_pos: i64, %ring: tensor<8x32xbf16>,
    %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
    %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>,
    %c_wkv: tensor<32x64xf32>, %c_wgate: tensor<32x64xf32>, %c_norm: tensor<32xbf16>,
    %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>,
    %s_ckv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error@+1 {{'dsa.attention' op operand group 'state' has 0 operands, this layer's config needs 4 (kv_state, score_state, kv_cache, index_k_cache)}}
  %out, %nring, %ckv, %ik, %topk, %cand = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      compressor(%c_wkv, %c_wgate, %c_norm) index_keys(%wk, %k_norm) shared(%s_ckv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 2, norm_eps = 9.99999968E-21 : f32, rope = #rope,
                                 compress = <is_kv_source = true, is_index_source = false, is_candidate_source = false,
                                             uses_candidates = false, index_n_heads = 2, index_head_dim = 32,
                                             index_topk = 6, candidate_topk_blocks = 0, candidate_block_size = 0,
                                             max_seq_len = 64, index_k_source = <published_slot>,
                                             tie_order = <torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>,
         tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

#rope = #dsa.rope<rope_dim = 8, theta = 4.000000e+04 : f64,
                  yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64,
                          beta_slow = 1.000000e+00 : f64>>
// A reader (no role) given index-source weights.
func.func @reader_with_indexer(
    %x: tensor<?x64xbf16>, %start_pos: i64, %ring: tensor<8x32xbf16>,
    %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
    %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>,
    %i_wq_b: tensor<64x16xbf16>, %w_proj: tensor<2x64xbf16>,
    %s_ckv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error@+1 {{'dsa.attention' op operand group 'indexer' has 2 operands, this layer's config needs 0}}
  %out, %nring, %ckv, %ik, %topk, %cand = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      indexer(%i_wq_b, %w_proj) shared(%s_ckv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 3, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 2, norm_eps = 9.99999968E-21 : f32, rope = #rope,
                                 compress = <is_kv_source = false, is_index_source = false, is_candidate_source = false,
                                             uses_candidates = false, index_n_heads = 0, index_head_dim = 0,
                                             index_topk = 0, candidate_topk_blocks = 0, candidate_block_size = 0,
                                             max_seq_len = 64, index_k_source = <published_slot>,
                                             tie_order = <torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<64x16xbf16>, tensor<2x64xbf16>,
         tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

#rope = #dsa.rope<rope_dim = 8, theta = 4.000000e+04 : f64,
                  yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64,
                          beta_slow = 1.000000e+00 : f64>>
// The topk_idxs slot must be [?, ?].
func.func @topk_slot_of_rank_one(
    %x: tensor<?x64xbf16>, %start_pos: i64, %ring: tensor<8x32xbf16>,
    %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
    %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>,
    %s_ckv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error@+1 {{'dsa.attention' op shared slot 'topk_idxs' must be a rank-2 tensor}}
  %out, %nring, %ckv, %ik, %topk, %cand = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      shared(%s_ckv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 3, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 2, norm_eps = 9.99999968E-21 : f32, rope = #rope,
                                 compress = <is_kv_source = false, is_index_source = false, is_candidate_source = false,
                                             uses_candidates = false, index_n_heads = 0, index_head_dim = 0,
                                             index_topk = 0, candidate_topk_blocks = 0, candidate_block_size = 0,
                                             max_seq_len = 64, index_k_source = <published_slot>,
                                             tie_order = <torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?x?xi1>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?x?xi1>)
  return
}

// -----

func.func @x_of_rank_one(%x: tensor<64xbf16>, %start_pos: i64, %ring: tensor<8x32xbf16>,
                          %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
                          %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>,
                          %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error@+1 {{'dsa.attention' op operand 'x' must be a rank-2 tensor [s, dim] to be decomposed}}
  %out, %new_ring = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 0, norm_eps = 9.99999968E-21 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04>>}
      : (tensor<64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<64xbf16>, tensor<8x32xbf16>)
  return
}
