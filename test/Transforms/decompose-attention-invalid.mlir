// RUN: dsa-opt --dsa-decompose-attention --split-input-file --verify-diagnostics %s

// A layer with compressed KV (ratio 2, the tiny golden's L2 kind) is not decomposed yet: the pass reports it on the
// op and fails instead of crashing or emitting a window-only decomposition.
func.func @ratio2(%x: tensor<?x64xbf16>, %start_pos: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>,
                  %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
                  %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>,
                  %wo_b: tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>) {
  // expected-error @+1 {{'dsa.attention' op compress_ratio 2 is not supported yet by dsa-decompose-attention (only window-only layers, compress_ratio = 0)}}
  %out, %ring1 = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 2, norm_eps = 9.99999968E-21 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 4.000000e+04,
                                                  yarn = #dsa.yarn<original_seq_len = 32, factor = 2.000000e+00,
                                                                   beta_fast = 3.200000e+01, beta_slow = 1.000000e+00>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return %out, %ring1 : tensor<?x64xbf16>, tensor<8x32xbf16>
}

// -----

// Ratio 1 (the tiny golden's L4/L5 kind) likewise, and every unsupported layer of the input is reported, not just
// the first; the supported ratio-0 layer between them does not hide them.
func.func @ratio1_twice(%x: tensor<?x64xbf16>, %start_pos: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>,
                        %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
                        %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>,
                        %wo_b: tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>) {
  // expected-error @+1 {{compress_ratio 1 is not supported yet}}
  %out4, %ring4 = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 4, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 1, norm_eps = 9.99999968E-21 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 4.000000e+04,
                                                  yarn = #dsa.yarn<original_seq_len = 32, factor = 2.000000e+00,
                                                                   beta_fast = 3.200000e+01, beta_slow = 1.000000e+00>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  %out0, %ring0 = dsa.attention %out4, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 0, norm_eps = 9.99999968E-21 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  // expected-error @+1 {{'dsa.attention' op compress_ratio 1 is not supported yet}}
  %out5, %ring5 = dsa.attention %out0, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 5, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 1, norm_eps = 9.99999968E-21 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 4.000000e+04,
                                                  yarn = #dsa.yarn<original_seq_len = 32, factor = 2.000000e+00,
                                                                   beta_fast = 3.200000e+01, beta_slow = 1.000000e+00>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return %out5, %ring5 : tensor<?x64xbf16>, tensor<8x32xbf16>
}
