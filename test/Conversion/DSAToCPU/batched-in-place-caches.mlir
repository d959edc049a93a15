// In-place caches in a batched decode step of a compressed layer (issue 13): sequence b's slices of the batched
// compressed-KV cache and index-key cache [B, C, head_dim] are written where they lie. dsa-decompose-attention
// inserts each sequence's state back into the batched tensors after its sparse_attn (the last reader of the new
// cache); inserted before it, one-shot bufferization's analysis saw a write of the iter_arg followed by a read of
// an alias and copied the whole C x head_dim slice out and back for every sequence at every step (measured: two
// scalar copies of 16640 x 512 bf16 per sequence at V4.1-Flash size, docs/benchmarks.md). The index-key cache was
// copied too while the section-8 quirk chose the published index_k slot by an arith.select of the new cache and
// the read-only incoming slot (and the indexer its keys by a select of that and entry_keys): a select joins both
// buffers in one alias set, so a write into either became a copy. The batched step now writes the cache into its
// padded published slot with a dynamic row count (C or 0) and the indexer reads a slice of that; the CPU lowering
// picks the indexer's keys with an scf.if. The analysis alone (test-analysis-only) with the CPU pipeline's options,
// the caches writable as lowerForCPU marks them.
// RUN: dsa-opt %s --dsa-decompose-attention --dsa-to-cpu --canonicalize --cse \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map unknown-type-conversion=identity-layout-map allow-return-allocs-from-loops test-analysis-only" \
// RUN:   | FileCheck %s
// And the whole pipeline compiles it: both caches and the compress_kv slot (the kv cache) are the arguments' buffers,
// the candidates slot passed through.
// RUN: dsa-opt %s --dsa-cpu-pipeline | FileCheck %s --check-prefix=PIPELINE

// CHECK-LABEL: func.func @batched_ratio2_source(
// CHECK:      scf.for
// CHECK:      tensor.extract_slice %{{.+}}[%{{.+}}, 0, 0] [1, 32, 32] [1, 1, 1] {__inplace_operands_attr__ = ["true", "none"]} : tensor<?x32x32xbf16> to tensor<32x32xbf16>
// CHECK-NEXT: tensor.extract_slice %{{.+}}[%{{.+}}, 0, 0] [1, 32, 32] [1, 1, 1] {__inplace_operands_attr__ = ["true", "none"]} : tensor<?x32x32xbf16> to tensor<32x32xbf16>
// The new index-key cache's first C or 0 rows written into sequence b's slice of the padded index_k slot in place.
// CHECK:      tensor.insert_slice %{{.+}} into %{{.+}}[%{{.+}}, 0, 0] [1, %{{.+}}, 32] [1, 1, 1] {__inplace_operands_attr__ = ["true", "true", "none", "none"]} : tensor<?x32xbf16> into tensor<?x?x32xbf16>

// PIPELINE: module attributes {dsa.cpu_in_place = {batched_ratio2_source = array<i64: -1, -1, -1, -1, 20, 21, 20, -1, -1, 25>}, dsa.cpu_written = {batched_ratio2_source = array<i64: 20, 21>}}
func.func @batched_ratio2_source(
    %x: tensor<?x1x64xbf16> {bufferization.writable = false}, %start_pos: tensor<?xi64> {bufferization.writable = false}, %ring: tensor<?x8x32xbf16> {bufferization.writable = false},
    %sink: tensor<4xf32> {bufferization.writable = false}, %wq_a: tensor<16x64xbf16> {bufferization.writable = false}, %q_norm: tensor<16xbf16> {bufferization.writable = false}, %wq_b: tensor<128x16xbf16> {bufferization.writable = false},
    %wkv: tensor<32x64xbf16> {bufferization.writable = false}, %kv_norm: tensor<32xbf16> {bufferization.writable = false}, %wo_a: tensor<32x64xbf16> {bufferization.writable = false}, %wo_b: tensor<64x32xbf16> {bufferization.writable = false},
    %c_wkv: tensor<32x64xf32> {bufferization.writable = false}, %c_wgate: tensor<32x64xf32> {bufferization.writable = false}, %c_norm: tensor<32xbf16> {bufferization.writable = false},
    %wk: tensor<32x32xbf16> {bufferization.writable = false}, %k_norm: tensor<32xbf16> {bufferization.writable = false}, %i_wq_b: tensor<64x16xbf16> {bufferization.writable = false}, %w_proj: tensor<2x64xbf16> {bufferization.writable = false},
    %kv_state: tensor<?x2x32xf32> {bufferization.writable = false}, %score_state: tensor<?x2x32xf32> {bufferization.writable = false}, %kv_cache: tensor<?x32x32xbf16> {bufferization.writable = true},
    %k_cache: tensor<?x32x32xbf16> {bufferization.writable = true},
    %s_ckv: tensor<?x?x32xbf16> {bufferization.writable = false}, %s_ik: tensor<?x?x32xbf16> {bufferization.writable = false}, %s_topk: tensor<?x1x?xi32> {bufferization.writable = false}, %s_cand: tensor<?x1x?xi1> {bufferization.writable = false})
    -> (tensor<?x1x64xbf16>, tensor<?x8x32xbf16>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x32x32xbf16>,
        tensor<?x32x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x1x?xi32>, tensor<?x1x?xi1>) attributes {dsa.cpu_in_place = array<i64: 20, 21>} {
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
