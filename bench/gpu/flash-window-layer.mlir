// The GPU decode benchmark's layer (bench/gpu/dsa-gpu-bench.cpp, docs/gpu-backend.md "GPU benchmark"): one
// DeepSeek-V4.1-Flash window-only attention layer (compress_ratio 0), the geometry of bench/DsaBench.cpp: dim 5120,
// 64 heads of 512, rope 64, q_lora 1280, 8 output groups of rank 1024, window 128, norm_eps 1e-20, rope theta 1e4.
// The same dsa.attention op that mlir::dsa::buildAttentionFunction builds for this config, with a dynamic token
// count. `scripts/gpu-check.sh --libs` compiles it with dsa-compile --target=gpu into
// .gpu-libs/flash-window-layer.{so,json}.
func.func @flash_window(%x: tensor<?x5120xbf16>, %start_pos: i64, %ring: tensor<128x512xbf16>,
                        %sink: tensor<64xf32>, %wq_a: tensor<1280x5120xbf16>, %q_norm: tensor<1280xbf16>,
                        %wq_b: tensor<32768x1280xbf16>, %wkv: tensor<512x5120xbf16>, %kv_norm: tensor<512xbf16>,
                        %wo_a: tensor<8192x4096xbf16>, %wo_b: tensor<5120x8192xbf16>)
    -> (tensor<?x5120xbf16>, tensor<128x512xbf16>) {
  %out, %new_ring = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 5120, n_heads = 64, head_dim = 512, rope_head_dim = 64,
                                 q_lora_rank = 1280, o_groups = 8, o_lora_rank = 1024, window_size = 128,
                                 compress_ratio = 0, norm_eps = 9.99999968E-21 : f32,
                                 rope = #dsa.rope<rope_dim = 64, theta = 1.000000e+04>>}
      : (tensor<?x5120xbf16>, i64, tensor<128x512xbf16>, tensor<64xf32>, tensor<1280x5120xbf16>,
         tensor<1280xbf16>, tensor<32768x1280xbf16>, tensor<512x5120xbf16>, tensor<512xbf16>,
         tensor<8192x4096xbf16>, tensor<5120x8192xbf16>)
      -> (tensor<?x5120xbf16>, tensor<128x512xbf16>)
  return %out, %new_ring : tensor<?x5120xbf16>, tensor<128x512xbf16>
}
