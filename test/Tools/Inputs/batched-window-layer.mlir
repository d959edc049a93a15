// A window-only layer of the tiny golden's geometry (L0) as a batched decode step: B sequences (dynamic), one token
// each at its own position (start_pos [B]), each with its own ring (ring [B, 8, 32]). README "Batched decode";
// test/Tools/run-batched.test.
func.func @batched(%x: tensor<?x1x64xbf16>, %sp: tensor<?xi64>, %ring: tensor<?x8x32xbf16>, %sink: tensor<4xf32>,
                   %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
                   %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>,
                   %wo_b: tensor<64x32xbf16>) -> (tensor<?x1x64xbf16>, tensor<?x8x32xbf16>) {
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 0, norm_eps = 1.0e-20 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x1x64xbf16>, tensor<?xi64>, tensor<?x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x1x64xbf16>, tensor<?x8x32xbf16>)
  return %out, %ring1 : tensor<?x1x64xbf16>, tensor<?x8x32xbf16>
}
