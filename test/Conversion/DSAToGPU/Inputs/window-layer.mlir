// A tiny-golden ratio-0 layer (L0's geometry: dim 64, 4 heads of 32, rope 8, q_lora 16, 2 output groups of
// rank 16, window 8) with a dynamic token count: every window-only kernel family in one function.
func.func @layer0(%x: tensor<?x64xbf16>, %start_pos: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>,
                  %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
                  %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>,
                  %wo_b: tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>) {
  %out, %new_ring = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 0, norm_eps = 9.99999968E-21 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return %out, %new_ring : tensor<?x64xbf16>, tensor<8x32xbf16>
}
