// A compressed layer of the tiny golden's geometry (ratio 2, the KV and index source: compressor state, caches and
// the shared slots compress_kv, index_k, topk_idxs, candidates) as a batched decode step: B sequences (dynamic), one
// token each at its own position. C++ runs it through runtime::Batch with runtime::stackSlots; the C API's
// dsa_batch_create refuses it (it batches window-only layers): CApiErrorsTest's CApiBatchTest.CreateErrors.
func.func @batched_compressed(
    %x: tensor<?x1x64xbf16>, %start_pos: tensor<?xi64>, %ring: tensor<?x8x32xbf16>,
    %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
    %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>,
    %c_wkv: tensor<32x64xf32>, %c_wgate: tensor<32x64xf32>, %c_norm: tensor<32xbf16>,
    %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %i_wq_b: tensor<64x16xbf16>, %w_proj: tensor<2x64xbf16>,
    %kv_state: tensor<?x2x32xf32>, %score_state: tensor<?x2x32xf32>, %kv_cache: tensor<?x32x32xbf16>,
    %k_cache: tensor<?x32x32xbf16>,
    %s_ckv: tensor<?x?x32xbf16>, %s_ik: tensor<?x?x32xbf16>, %s_topk: tensor<?x1x?xi32>, %s_cand: tensor<?x1x?xi1>)
    -> (tensor<?x1x64xbf16>, tensor<?x8x32xbf16>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x32x32xbf16>,
        tensor<?x32x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x1x?xi32>, tensor<?x1x?xi1>) {
  %out, %nring, %nkvs, %nscs, %nkvc, %nkc, %ckv, %ik, %topk, %cand = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      compressor(%c_wkv, %c_wgate, %c_norm) index_keys(%wk, %k_norm) indexer(%i_wq_b, %w_proj)
      state(%kv_state, %score_state, %kv_cache, %k_cache) shared(%s_ckv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 2, norm_eps = 9.99999968E-21 : f32,
                                 rope = <rope_dim = 8, theta = 4.000000e+04 : f64,
                                         yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64,
                                                 beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64>>,
                                 compress = <is_kv_source = true, is_index_source = true, is_candidate_source = false,
                                             uses_candidates = false, index_n_heads = 2, index_head_dim = 32,
                                             index_topk = 6, candidate_topk_blocks = 0, candidate_block_size = 0,
                                             max_seq_len = 64, index_k_source = <published_slot>,
                                             tie_order = <torch_cpu>>>}
      : (tensor<?x1x64xbf16>, tensor<?xi64>, tensor<?x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>,
         tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>,
         tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>,
         tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>,
         tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x32x32xbf16>, tensor<?x32x32xbf16>,
         tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x1x?xi32>, tensor<?x1x?xi1>)
      -> (tensor<?x1x64xbf16>, tensor<?x8x32xbf16>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x32x32xbf16>,
          tensor<?x32x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x1x?xi32>, tensor<?x1x?xi1>)
  return %out, %nring, %nkvs, %nscs, %nkvc, %nkc, %ckv, %ik, %topk, %cand
      : tensor<?x1x64xbf16>, tensor<?x8x32xbf16>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x32x32xbf16>,
        tensor<?x32x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x1x?xi32>, tensor<?x1x?xi1>
}
