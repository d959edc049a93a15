// RUN: dsa-opt --dsa-decompose-attention %s | FileCheck %s
// RUN: dsa-opt --dsa-decompose-attention --mlir-print-op-generic %s | FileCheck %s --check-prefix=GENERIC
// The compiled output of every function here verifies after each pass, on the CPU pipeline (serial and OpenMP) and the GPU one.
// RUN: dsa-opt --verify-each --dsa-cpu-pipeline %s -o /dev/null
// RUN: dsa-opt --verify-each --dsa-cpu-pipeline="parallel=true" %s -o /dev/null
// RUN: dsa-opt --verify-each --dsa-gpu-pipeline="chip=sm_90" %s -o /dev/null

// dsa-decompose-attention on compress_ratio > 0 layers (attention-semantics.md sections 3-11, section 8's order;
// docs/design-compressed.md). The expected sequences are written by hand from the spec, for the tiny golden's roles:
// L2 (ratio 2, kv + index source) followed by L3 (ratio 2, reads every slot), L4 (ratio 1, kv + index + candidate
// source) followed by L5 (ratio 1, index source using the candidates), and a ratio-2 kv + index source under
// index_k_source = own_cache. Hand-derived constants: softmax scale 32^-0.5 -> f32 0.176776692 (as for ratio 0);
// indexer weight_scale f32(ihd^-0.5 * IH^-0.5) in f64: 32^-0.5 * 2^-0.5 = 0.125000000000000003 -> f32 0.125,
// 32^-0.5 * 3^-0.5 = 1/sqrt(96) = 0.1020620726159657 -> f32 0x3DD105EC = 0.102062076. The blocks: fp8 32 (window
// row), fp4 e8m0 32 (index q and keys), fp4 e4m3 16 (latent) are the ops' defaults, so only GENERIC shows them.

#rope = #dsa.rope<rope_dim = 8, theta = 4.000000e+04 : f64,
                  yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64,
                          beta_slow = 1.000000e+00 : f64>>

// L2 then L3 of the tiny golden (ratio 2), dynamic token count. L2 is a kv + index source (published_slot); L3
// owns no compressor or indexer and reads the four slots as L2 left them.
// CHECK-LABEL: func.func @ratio2_source_then_reader(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x64xbf16>, %[[SP:[^:]+]]: i64,
// CHECK-SAME: %[[RING2:[^:]+]]: tensor<8x32xbf16>, %[[RING3:[^:]+]]: tensor<8x32xbf16>,
// CHECK-SAME: %[[SINK:[^:]+]]: tensor<4xf32>, %[[WQA:[^:]+]]: tensor<16x64xbf16>, %[[QNORM:[^:]+]]: tensor<16xbf16>,
// CHECK-SAME: %[[WQB:[^:]+]]: tensor<128x16xbf16>, %[[WKV:[^:]+]]: tensor<32x64xbf16>,
// CHECK-SAME: %[[KVNORM:[^:]+]]: tensor<32xbf16>, %[[WOA:[^:]+]]: tensor<32x64xbf16>,
// CHECK-SAME: %[[WOB:[^:]+]]: tensor<64x32xbf16>, %[[CWKV:[^:]+]]: tensor<32x64xf32>,
// CHECK-SAME: %[[CWGATE:[^:]+]]: tensor<32x64xf32>, %[[CNORM:[^:]+]]: tensor<32xbf16>,
// CHECK-SAME: %[[WK:[^:]+]]: tensor<32x32xbf16>, %[[KNORM:[^:]+]]: tensor<32xbf16>,
// CHECK-SAME: %[[IWQB:[^:]+]]: tensor<64x16xbf16>, %[[WPROJ:[^:]+]]: tensor<2x64xbf16>,
// CHECK-SAME: %[[KVS:[^:]+]]: tensor<2x32xf32>, %[[SCS:[^:]+]]: tensor<2x32xf32>,
// CHECK-SAME: %[[KVC:[^:]+]]: tensor<32x32xbf16>, %[[KC:[^:]+]]: tensor<32x32xbf16>,
// CHECK-SAME: %[[SCKV:[^:]+]]: tensor<?x32xbf16>, %[[SIK:[^:]+]]: tensor<?x32xbf16>,
// CHECK-SAME: %[[STOPK:[^:]+]]: tensor<?x?xi32>, %[[SCAND:[^:]+]]: tensor<?x?xi1>)
// CHECK-NOT: dsa.attention
//
// Sections 3 and 4 as for ratio 0, with the layer's YaRN table; no probe on the window part alone.
// CHECK:      %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[S:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<?x64xbf16>
// CHECK-NEXT: %[[POS:.+]] = dsa.positions %[[SP]], %[[S]] : (i64, index) -> tensor<?xi64>
// CHECK-NEXT: %[[QA:.+]] = dsa.linear %[[X]], %[[WQA]]
// CHECK-NEXT: %[[QR:.+]] = dsa.rms_norm %[[QA]], %[[QNORM]]
// CHECK-NEXT: %[[QB:.+]] = dsa.linear %[[QR]], %[[WQB]]
// CHECK-NEXT: %[[QH:.+]] = tensor.expand_shape %[[QB]] {{\[}}[0], [1, 2]] output_shape [%[[S]], 4, 32]
// CHECK-NEXT: %[[Q:.+]] = dsa.apply_rope %[[QH]], %[[POS]] {rope = #dsa.rope<rope_dim = 8, theta = 4.000000e+04 : f64,
// CHECK-SAME:     yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64,
// CHECK-SAME:     beta_slow = 1.000000e+00 : f64>>} : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
// CHECK-NEXT: dsa.probe "L2.sa_q" %[[Q]] : tensor<?x4x32xbf16>
// CHECK-NEXT: %[[KVA:.+]] = dsa.linear %[[X]], %[[WKV]]
// CHECK-NEXT: %[[KVN:.+]] = dsa.rms_norm %[[KVA]], %[[KVNORM]]
// CHECK-NEXT: %[[KVR:.+]] = dsa.apply_rope %[[KVN]], %[[POS]] {rope = #dsa.rope<{{.*}}yarn = <original_seq_len = 32
// CHECK-NEXT: %[[KV:.+]] = dsa.act_quant_fp8 %[[KVR]]
// CHECK-NEXT: %[[NRING2:.+]] = dsa.ring_update %[[RING2]], %[[KV]], %[[SP]]
// CHECK-NEXT: %[[WROWS:.+]] = dsa.window_kv %[[KV]], %[[RING2]], %[[SP]]
// CHECK-NEXT: %[[WIDX:.+]] = dsa.window_indices %[[SP]], %[[S]] {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
//
// Section 8 step 1, the ratio-2 compressor (section 5): f32 projections, pooling with the state, bf16, norm.
// CHECK-NEXT: %[[XF:.+]] = arith.extf %[[X]] : tensor<?x64xbf16> to tensor<?x64xf32>
// CHECK-NEXT: %[[CKV:.+]] = dsa.linear %[[XF]], %[[CWKV]] : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
// CHECK-NEXT: %[[CSC:.+]] = dsa.linear %[[XF]], %[[CWGATE]] : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
// CHECK-NEXT: %[[POOLED:[^ ,]+]], %[[NKVS:[^ ,]+]], %[[NSCS:[^ ,]+]] = dsa.compress_pool
// CHECK-SAME:     %[[CKV]], %[[CSC]], %[[KVS]], %[[SCS]], %[[SP]] {ratio = 2 : i64}
// CHECK-SAME:     : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, i64)
// CHECK-SAME:     -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>)
// CHECK-NEXT: %[[PBF:.+]] = arith.truncf %[[POOLED]] : tensor<?x32xf32> to tensor<?x32xbf16>
// CHECK-NEXT: %[[LAT:.+]] = dsa.rms_norm %[[PBF]], %[[CNORM]] {eps = 9.99999968E-21 : f32}
// CHECK-SAME:     : (tensor<?x32xbf16>, tensor<32xbf16>) -> tensor<?x32xbf16>
// g groups at positions (start_pos // 2) * 2 + 2j.
// CHECK-NEXT: %[[G:.+]] = tensor.dim %[[LAT]], %[[C0]] : tensor<?x32xbf16>
// CHECK-NEXT: %[[R64:.+]] = arith.constant 2 : i64
// CHECK-NEXT: %[[GQ:.+]] = arith.floordivsi %[[SP]], %[[R64]] : i64
// CHECK-NEXT: %[[GSTART:.+]] = arith.muli %[[GQ]], %[[R64]] : i64
// CHECK-NEXT: %[[GPOS:.+]] = dsa.positions %[[GSTART]], %[[G]] {stride = 2 : i64} : (i64, index) -> tensor<?xi64>
// Index keys from the PRE-RoPE latent (section 6 step 1), then the index_k quirk: republished only when g > 0.
// CHECK-NEXT: %[[KL:.+]] = dsa.linear %[[LAT]], %[[WK]] : (tensor<?x32xbf16>, tensor<32x32xbf16>) -> tensor<?x32xbf16>
// CHECK-NEXT: %[[KN:.+]] = dsa.rms_norm %[[KL]], %[[KNORM]] {eps = 9.99999968E-21 : f32}
// CHECK-NEXT: %[[KR:.+]] = dsa.apply_rope %[[KN]], %[[GPOS]] {rope = #dsa.rope<{{.*}}yarn = <original_seq_len = 32
// CHECK-SAME:     : (tensor<?x32xbf16>, tensor<?xi64>) -> tensor<?x32xbf16>
// CHECK-NEXT: %[[KQ:.+]] = dsa.fp4_quant_e8m0 %[[KR]] : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
// CHECK-NEXT: %[[NKC:.+]] = dsa.cache_write %[[KC]], %[[KQ]], %[[SP]] {ratio = 2 : i64}
// CHECK-SAME:     : (tensor<32x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<32x32xbf16>
// CHECK-NEXT: %[[NKCD:.+]] = tensor.cast %[[NKC]] : tensor<32x32xbf16> to tensor<?x32xbf16>
// CHECK-NEXT: %[[HAS:.+]] = arith.cmpi sgt, %[[G]], %[[C0]] : index
// CHECK-NEXT: %[[IK:.+]] = arith.select %[[HAS]], %[[NKCD]], %[[SIK]] : tensor<?x32xbf16>
//
// Step 2, the indexer (section 6), scoring against the index_k slot as it now stands; topk_idxs published. A
// token closing no group scores against the slot as it entered the layer (entry_keys %SIK: the quirk per token).
// CHECK-NEXT: %[[IQB:.+]] = dsa.linear %[[QR]], %[[IWQB]] : (tensor<?x16xbf16>, tensor<64x16xbf16>) -> tensor<?x64xbf16>
// CHECK-NEXT: %[[IQH:.+]] = tensor.expand_shape %[[IQB]] {{\[}}[0], [1, 2]] output_shape [%[[S]], 2, 32]
// CHECK-SAME:     : tensor<?x64xbf16> into tensor<?x2x32xbf16>
// CHECK-NEXT: %[[IQR:.+]] = dsa.apply_rope %[[IQH]], %[[POS]] {rope = #dsa.rope<{{.*}}yarn = <original_seq_len = 32
// CHECK-SAME:     : (tensor<?x2x32xbf16>, tensor<?xi64>) -> tensor<?x2x32xbf16>
// CHECK-NEXT: %[[IQ:.+]] = dsa.fp4_quant_e8m0 %[[IQR]] : (tensor<?x2x32xbf16>) -> tensor<?x2x32xbf16>
// CHECK-NEXT: %[[W:.+]] = dsa.linear %[[X]], %[[WPROJ]] : (tensor<?x64xbf16>, tensor<2x64xbf16>) -> tensor<?x2xbf16>
// CHECK-NEXT: %[[SC:.+]] = dsa.indexer_scores %[[IQ]], %[[W]], %[[IK]], %[[SP]] entry_keys %[[SIK]] {ratio = 2 : i64, weight_scale = 1.250000e-01 : f32}
// CHECK-SAME:     : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64, tensor<?x32xbf16>) -> tensor<?x?xbf16>
// CHECK-NEXT: %[[VIS:.+]] = dsa.compress_visibility %[[SC]], %[[SP]] {ratio = 2 : i64} : (tensor<?x?xbf16>, i64) -> tensor<?x?xbf16>
// CHECK-NEXT: %[[TOPK:.+]] = dsa.indexer_topk %[[VIS]], %[[SP]]
// CHECK-SAME:     {index_topk = 6 : i64, ratio = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>, window_size = 8 : i64}
// CHECK-SAME:     : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
//
// Step 3: the latent rotated at its group positions, fp4 with e4m3 scales, into the KV cache, published.
// CHECK-NEXT: %[[LR:.+]] = dsa.apply_rope %[[LAT]], %[[GPOS]] {rope = #dsa.rope<{{.*}}yarn = <original_seq_len = 32
// CHECK-NEXT: %[[LQ:.+]] = dsa.fp4_quant_e4m3 %[[LR]] : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
// CHECK-NEXT: %[[NKVC:.+]] = dsa.cache_write %[[KVC]], %[[LQ]], %[[SP]] {ratio = 2 : i64}
// CHECK-SAME:     : (tensor<32x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<32x32xbf16>
// CHECK-NEXT: %[[CKVS:.+]] = tensor.cast %[[NKVC]] : tensor<32x32xbf16> to tensor<?x32xbf16>
//
// Step 4: window rows ++ compress_kv[0 .. (start_pos + s) // 2), window indices ++ the indexer's.
// CHECK-NEXT: %[[SPI:.+]] = arith.index_cast %[[SP]] : i64 to index
// CHECK-NEXT: %[[END:.+]] = arith.addi %[[SPI]], %[[S]] : index
// CHECK-NEXT: %[[RIDX:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[N:.+]] = arith.floordivsi %[[END]], %[[RIDX]] : index
// CHECK-NEXT: %[[CROWS:.+]] = tensor.extract_slice %[[CKVS]][0, 0] [%[[N]], 32] [1, 1] : tensor<?x32xbf16> to tensor<?x32xbf16>
// CHECK-NEXT: %[[ROWS:.+]] = tensor.concat dim(0) %[[WROWS]], %[[CROWS]]
// CHECK-SAME:     : (tensor<?x32xbf16>, tensor<?x32xbf16>) -> tensor<?x32xbf16>
// CHECK-NEXT: %[[IDX:.+]] = tensor.concat dim(1) %[[WIDX]], %[[TOPK]] : (tensor<?x?xi32>, tensor<?x?xi32>) -> tensor<?x?xi32>
// CHECK-NEXT: dsa.probe "L2.sa_kv" %[[ROWS]] : tensor<?x32xbf16>
// CHECK-NEXT: dsa.probe "L2.sa_topk_idxs" %[[IDX]] : tensor<?x?xi32>
// CHECK-NEXT: %[[O:.+]] = dsa.sparse_attn %[[Q]], %[[ROWS]], %[[IDX]], %[[SINK]] {scale = 0.176776692 : f32}
// CHECK-SAME:     : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
// CHECK-NEXT: dsa.probe "L2.sa_o" %[[O]] : tensor<?x4x32xbf16>
// CHECK-NEXT: %[[OR:.+]] = dsa.apply_rope %[[O]], %[[POS]] {inverse, rope = #dsa.rope<{{.*}}yarn = <original_seq_len = 32
// CHECK-NEXT: %[[OG:.+]] = dsa.grouped_output %[[OR]], %[[WOA]] {groups = 2 : i64}
// CHECK-NEXT: %[[OUT2:.+]] = dsa.linear %[[OG]], %[[WOB]] : (tensor<?x32xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
// CHECK-NEXT: dsa.probe "L2.attn_out" %[[OUT2]] : tensor<?x64xbf16>
// The slots after L2, the caches cut to (start_pos + s) // 2 rows; candidates passes through (never published).
// CHECK-NEXT: dsa.probe "shared.L2.compress_kv" %[[CROWS]] : tensor<?x32xbf16>
// CHECK-NEXT: %[[IKROWS:.+]] = tensor.extract_slice %[[IK]][0, 0] [%[[N]], 32] [1, 1] : tensor<?x32xbf16> to tensor<?x32xbf16>
// CHECK-NEXT: dsa.probe "shared.L2.index_k" %[[IKROWS]] : tensor<?x32xbf16>
// CHECK-NEXT: dsa.probe "shared.L2.topk_idxs" %[[TOPK]] : tensor<?x?xi32>
// CHECK-NEXT: dsa.probe "shared.L2.candidates" %[[SCAND]] : tensor<?x?xi1>
//
// L3: window part on L2's output, no compressor / indexer / state; compressed rows from L2's published cache and
// L2's top-k indices.
// CHECK-NEXT: %[[C0B:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[S3:.+]] = tensor.dim %[[OUT2]], %[[C0B]] : tensor<?x64xbf16>
// CHECK-NEXT: %[[POS3:.+]] = dsa.positions %[[SP]], %[[S3]]
// CHECK:      dsa.probe "L3.sa_q" %[[Q3:[^ ]+]] :
// CHECK:      %[[NRING3:.+]] = dsa.ring_update %[[RING3]], %{{.+}}, %[[SP]]
// CHECK-NEXT: %[[WROWS3:.+]] = dsa.window_kv %{{.+}}, %[[RING3]], %[[SP]]
// CHECK-NEXT: %[[WIDX3:.+]] = dsa.window_indices %[[SP]], %[[S3]] {window_size = 8 : i64}
// CHECK-NEXT: %[[SPI3:.+]] = arith.index_cast %[[SP]] : i64 to index
// CHECK-NEXT: %[[END3:.+]] = arith.addi %[[SPI3]], %[[S3]] : index
// CHECK-NEXT: %[[RIDX3:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[N3:.+]] = arith.floordivsi %[[END3]], %[[RIDX3]] : index
// CHECK-NEXT: %[[CROWS3:.+]] = tensor.extract_slice %[[CKVS]][0, 0] [%[[N3]], 32] [1, 1]
// CHECK-NEXT: %[[ROWS3:.+]] = tensor.concat dim(0) %[[WROWS3]], %[[CROWS3]]
// CHECK-NEXT: %[[IDX3:.+]] = tensor.concat dim(1) %[[WIDX3]], %[[TOPK]] : (tensor<?x?xi32>, tensor<?x?xi32>) -> tensor<?x?xi32>
// CHECK-NEXT: dsa.probe "L3.sa_kv" %[[ROWS3]] : tensor<?x32xbf16>
// CHECK-NEXT: dsa.probe "L3.sa_topk_idxs" %[[IDX3]] : tensor<?x?xi32>
// CHECK-NEXT: %[[O3:.+]] = dsa.sparse_attn %[[Q3]], %[[ROWS3]], %[[IDX3]], %[[SINK]] {scale = 0.176776692 : f32}
// CHECK-NEXT: dsa.probe "L3.sa_o" %[[O3]]
// CHECK-NEXT: dsa.apply_rope %[[O3]], %[[POS3]] {inverse
// CHECK-NEXT: dsa.grouped_output
// CHECK-NEXT: %[[OUT3:.+]] = dsa.linear
// CHECK-NEXT: dsa.probe "L3.attn_out" %[[OUT3]]
// CHECK-NEXT: dsa.probe "shared.L3.compress_kv" %[[CROWS3]] : tensor<?x32xbf16>
// CHECK-NEXT: %[[IKROWS3:.+]] = tensor.extract_slice %[[IK]][0, 0] [%[[N3]], 32] [1, 1]
// CHECK-NEXT: dsa.probe "shared.L3.index_k" %[[IKROWS3]] : tensor<?x32xbf16>
// CHECK-NEXT: dsa.probe "shared.L3.topk_idxs" %[[TOPK]] : tensor<?x?xi32>
// CHECK-NEXT: dsa.probe "shared.L3.candidates" %[[SCAND]] : tensor<?x?xi1>
// new_state in the state operands' order, then the four slots after L3.
// CHECK-NEXT: return %[[OUT3]], %[[NRING2]], %[[NRING3]], %[[NKVS]], %[[NSCS]], %[[NKVC]], %[[NKC]],
// CHECK-SAME:     %[[CKVS]], %[[IK]], %[[TOPK]], %[[SCAND]] :

// The block sizes and strides the custom form elides as defaults.
// GENERIC-LABEL: sym_name = "ratio2_source_then_reader"
// GENERIC:      "dsa.positions"({{.*}}) <{stride = 1 : i64}>
// GENERIC:      "dsa.act_quant_fp8"({{.*}}) <{block_size = 32 : i64}>
// GENERIC:      "dsa.positions"({{.*}}) <{stride = 2 : i64}>
// GENERIC:      "dsa.fp4_quant_e8m0"({{.*}}) <{block_size = 32 : i64}> : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
// GENERIC:      "dsa.fp4_quant_e8m0"({{.*}}) <{block_size = 32 : i64}> : (tensor<?x2x32xbf16>) -> tensor<?x2x32xbf16>
// GENERIC:      "dsa.fp4_quant_e4m3"({{.*}}) <{block_size = 16 : i64}> : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
func.func @ratio2_source_then_reader(
    %x: tensor<?x64xbf16>, %start_pos: i64, %ring2: tensor<8x32xbf16>, %ring3: tensor<8x32xbf16>,
    %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
    %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>,
    %c_wkv: tensor<32x64xf32>, %c_wgate: tensor<32x64xf32>, %c_norm: tensor<32xbf16>,
    %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %i_wq_b: tensor<64x16xbf16>, %w_proj: tensor<2x64xbf16>,
    %kv_state: tensor<2x32xf32>, %score_state: tensor<2x32xf32>, %kv_cache: tensor<32x32xbf16>,
    %k_cache: tensor<32x32xbf16>,
    %s_ckv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>)
    -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>,
        tensor<32x32xbf16>, tensor<32x32xbf16>,
        tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) {
  %out2, %nring2, %nkvs, %nscs, %nkvc, %nkc, %ckv2, %ik2, %topk2, %cand2 = dsa.attention %x, %start_pos, %ring2
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
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>,
         tensor<64x16xbf16>, tensor<2x64xbf16>,
         tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>,
         tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>,
          tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  %out3, %nring3, %ckv3, %ik3, %topk3, %cand3 = dsa.attention %out2, %start_pos, %ring3
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      shared(%ckv2, %ik2, %topk2, %cand2)
      {config = #dsa.attn_config<layer_id = 3, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 2, norm_eps = 9.99999968E-21 : f32,
                                 rope = <rope_dim = 8, theta = 4.000000e+04 : f64,
                                         yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64,
                                                 beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64>>,
                                 compress = <is_kv_source = false, is_index_source = false, is_candidate_source = false,
                                             uses_candidates = false, index_n_heads = 0, index_head_dim = 0,
                                             index_topk = 0, candidate_topk_blocks = 0, candidate_block_size = 0,
                                             max_seq_len = 64, index_k_source = <published_slot>,
                                             tie_order = <torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return %out3, %nring2, %nring3, %nkvs, %nscs, %nkvc, %nkc, %ckv3, %ik3, %topk3, %cand3
      : tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>,
        tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>
}

// L4 then L5 of the tiny golden (ratio 1) on a one-token step (static shapes, as in decode). L4 is a kv + index +
// candidate source; L5 an index source that applies L4's candidate mask and scores against L4's index keys. The
// per-token results [1, ?] are cast to the slots' type [?, ?] when published.
// CHECK-LABEL: func.func @ratio1_candidate_source_then_user(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x64xbf16>, %[[SP:[^:]+]]: i64,
// CHECK-SAME: %[[RING4:[^:]+]]: tensor<8x32xbf16>, %[[RING5:[^:]+]]: tensor<8x32xbf16>,
// CHECK-SAME: %[[SINK:[^:]+]]: tensor<4xf32>, %[[WQA:[^:]+]]: tensor<16x64xbf16>, %[[QNORM:[^:]+]]: tensor<16xbf16>,
// CHECK-SAME: %[[WQB:[^:]+]]: tensor<128x16xbf16>, %[[WKV:[^:]+]]: tensor<32x64xbf16>,
// CHECK-SAME: %[[KVNORM:[^:]+]]: tensor<32xbf16>, %[[WOA:[^:]+]]: tensor<32x64xbf16>,
// CHECK-SAME: %[[WOB:[^:]+]]: tensor<64x32xbf16>, %[[CWKV:[^:]+]]: tensor<32x64xbf16>,
// CHECK-SAME: %[[CNORM:[^:]+]]: tensor<32xbf16>, %[[WK:[^:]+]]: tensor<32x32xbf16>, %[[KNORM:[^:]+]]: tensor<32xbf16>,
// CHECK-SAME: %[[IWQB:[^:]+]]: tensor<64x16xbf16>, %[[WPROJ:[^:]+]]: tensor<2x64xbf16>,
// CHECK-SAME: %[[KVC:[^:]+]]: tensor<64x32xbf16>, %[[KC:[^:]+]]: tensor<64x32xbf16>,
// CHECK-SAME: %[[SCKV:[^:]+]]: tensor<?x32xbf16>, %[[SIK:[^:]+]]: tensor<?x32xbf16>,
// CHECK-SAME: %[[STOPK:[^:]+]]: tensor<?x?xi32>, %[[SCAND:[^:]+]]: tensor<?x?xi1>)
// CHECK:      %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[S:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<1x64xbf16>
// CHECK-NEXT: %[[POS:.+]] = dsa.positions %[[SP]], %[[S]] : (i64, index) -> tensor<1xi64>
// CHECK-NEXT: dsa.linear %[[X]], %[[WQA]]
// CHECK-NEXT: %[[QR:.+]] = dsa.rms_norm
// CHECK:      dsa.probe "L4.sa_q"
// CHECK:      %[[WROWS:.+]] = dsa.window_kv
// CHECK-NEXT: %[[WIDX:.+]] = dsa.window_indices %[[SP]], %[[S]] {window_size = 8 : i64} : (i64, index) -> tensor<1x?xi32>
// The ratio-1 compressor (section 5): one latent row per token, no state, no f32 path.
// CHECK-NEXT: %[[CL:.+]] = dsa.linear %[[X]], %[[CWKV]] : (tensor<1x64xbf16>, tensor<32x64xbf16>) -> tensor<1x32xbf16>
// CHECK-NEXT: %[[LAT:.+]] = dsa.rms_norm %[[CL]], %[[CNORM]] {eps = 9.99999968E-21 : f32}
// CHECK-SAME:     : (tensor<1x32xbf16>, tensor<32xbf16>) -> tensor<1x32xbf16>
// CHECK-NEXT: %[[G:.+]] = tensor.dim %[[LAT]], %[[C0]] : tensor<1x32xbf16>
// CHECK-NEXT: %[[R64:.+]] = arith.constant 1 : i64
// CHECK-NEXT: %[[GQ:.+]] = arith.floordivsi %[[SP]], %[[R64]] : i64
// CHECK-NEXT: %[[GSTART:.+]] = arith.muli %[[GQ]], %[[R64]] : i64
// CHECK-NEXT: %[[GPOS:.+]] = dsa.positions %[[GSTART]], %[[G]] : (i64, index) -> tensor<1xi64>
// CHECK-NEXT: %[[KL:.+]] = dsa.linear %[[LAT]], %[[WK]] : (tensor<1x32xbf16>, tensor<32x32xbf16>) -> tensor<1x32xbf16>
// CHECK-NEXT: %[[KN:.+]] = dsa.rms_norm %[[KL]], %[[KNORM]]
// CHECK-NEXT: %[[KR:.+]] = dsa.apply_rope %[[KN]], %[[GPOS]] {rope = #dsa.rope<{{.*}}yarn = <original_seq_len = 32
// CHECK-NEXT: %[[KQ:.+]] = dsa.fp4_quant_e8m0 %[[KR]] : (tensor<1x32xbf16>) -> tensor<1x32xbf16>
// CHECK-NEXT: %[[NKC:.+]] = dsa.cache_write %[[KC]], %[[KQ]], %[[SP]] {ratio = 1 : i64}
// CHECK-SAME:     : (tensor<64x32xbf16>, tensor<1x32xbf16>, i64) -> tensor<64x32xbf16>
// CHECK-NEXT: %[[NKCD:.+]] = tensor.cast %[[NKC]] : tensor<64x32xbf16> to tensor<?x32xbf16>
// CHECK-NEXT: %[[HAS:.+]] = arith.cmpi sgt, %[[G]], %[[C0]] : index
// CHECK-NEXT: %[[IK:.+]] = arith.select %[[HAS]], %[[NKCD]], %[[SIK]] : tensor<?x32xbf16>
// The indexer; the candidate source selects its blocks from the visible scores and publishes the mask, but does
// not apply it to its own scores.
// CHECK-NEXT: %[[IQB:.+]] = dsa.linear %[[QR]], %[[IWQB]] : (tensor<1x16xbf16>, tensor<64x16xbf16>) -> tensor<1x64xbf16>
// CHECK-NEXT: %[[IQH:.+]] = tensor.expand_shape %[[IQB]] {{\[}}[0], [1, 2]] output_shape [1, 2, 32]
// CHECK-NEXT: %[[IQR:.+]] = dsa.apply_rope %[[IQH]], %[[POS]]
// CHECK-NEXT: %[[IQ:.+]] = dsa.fp4_quant_e8m0 %[[IQR]] : (tensor<1x2x32xbf16>) -> tensor<1x2x32xbf16>
// CHECK-NEXT: %[[W:.+]] = dsa.linear %[[X]], %[[WPROJ]] : (tensor<1x64xbf16>, tensor<2x64xbf16>) -> tensor<1x2xbf16>
// CHECK-NEXT: %[[SC:.+]] = dsa.indexer_scores %[[IQ]], %[[W]], %[[IK]], %[[SP]] {ratio = 1 : i64, weight_scale = 1.250000e-01 : f32}
// CHECK-SAME:     : (tensor<1x2x32xbf16>, tensor<1x2xbf16>, tensor<?x32xbf16>, i64) -> tensor<1x?xbf16>
// CHECK-NEXT: %[[VIS:.+]] = dsa.compress_visibility %[[SC]], %[[SP]] {ratio = 1 : i64}
// CHECK-NEXT: %[[MASK:.+]] = dsa.select_candidate_blocks %[[VIS]], %[[SP]]
// CHECK-SAME:     {block_size = 2 : i64, ratio = 1 : i64, tie_order = #dsa.tie_order<torch_cpu>, topk_blocks = 3 : i64}
// CHECK-SAME:     : (tensor<1x?xbf16>, i64) -> tensor<1x?xi1>
// CHECK-NEXT: %[[CAND:.+]] = tensor.cast %[[MASK]] : tensor<1x?xi1> to tensor<?x?xi1>
// CHECK-NEXT: %[[TOPK4:.+]] = dsa.indexer_topk %[[VIS]], %[[SP]]
// CHECK-SAME:     {index_topk = 6 : i64, ratio = 1 : i64, tie_order = #dsa.tie_order<torch_cpu>, window_size = 8 : i64}
// CHECK-SAME:     : (tensor<1x?xbf16>, i64) -> tensor<1x?xi32>
// CHECK-NEXT: %[[TOPK4D:.+]] = tensor.cast %[[TOPK4]] : tensor<1x?xi32> to tensor<?x?xi32>
// CHECK-NEXT: %[[LR:.+]] = dsa.apply_rope %[[LAT]], %[[GPOS]]
// CHECK-NEXT: %[[LQ:.+]] = dsa.fp4_quant_e4m3 %[[LR]] : (tensor<1x32xbf16>) -> tensor<1x32xbf16>
// CHECK-NEXT: %[[NKVC:.+]] = dsa.cache_write %[[KVC]], %[[LQ]], %[[SP]] {ratio = 1 : i64}
// CHECK-NEXT: %[[CKVS:.+]] = tensor.cast %[[NKVC]] : tensor<64x32xbf16> to tensor<?x32xbf16>
// CHECK-NEXT: %[[SPI:.+]] = arith.index_cast %[[SP]] : i64 to index
// CHECK-NEXT: %[[END:.+]] = arith.addi %[[SPI]], %[[S]] : index
// CHECK-NEXT: %[[RIDX:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[N:.+]] = arith.floordivsi %[[END]], %[[RIDX]] : index
// CHECK-NEXT: %[[CROWS:.+]] = tensor.extract_slice %[[CKVS]][0, 0] [%[[N]], 32] [1, 1]
// CHECK-NEXT: %[[ROWS:.+]] = tensor.concat dim(0) %[[WROWS]], %[[CROWS]]
// CHECK-NEXT: %[[IDX:.+]] = tensor.concat dim(1) %[[WIDX]], %[[TOPK4]] : (tensor<1x?xi32>, tensor<1x?xi32>) -> tensor<1x?xi32>
// CHECK-NEXT: dsa.probe "L4.sa_kv" %[[ROWS]] : tensor<?x32xbf16>
// CHECK-NEXT: dsa.probe "L4.sa_topk_idxs" %[[IDX]] : tensor<1x?xi32>
// CHECK-NEXT: %[[O:.+]] = dsa.sparse_attn %{{.+}}, %[[ROWS]], %[[IDX]], %[[SINK]]
// CHECK:      %[[OUT4:.+]] = dsa.linear %{{.+}}, %[[WOB]]
// CHECK-NEXT: dsa.probe "L4.attn_out" %[[OUT4]]
// CHECK-NEXT: dsa.probe "shared.L4.compress_kv" %[[CROWS]] : tensor<?x32xbf16>
// CHECK-NEXT: %[[IKROWS:.+]] = tensor.extract_slice %[[IK]][0, 0] [%[[N]], 32] [1, 1]
// CHECK-NEXT: dsa.probe "shared.L4.index_k" %[[IKROWS]]
// CHECK-NEXT: dsa.probe "shared.L4.topk_idxs" %[[TOPK4D]] : tensor<?x?xi32>
// CHECK-NEXT: dsa.probe "shared.L4.candidates" %[[CAND]] : tensor<?x?xi1>
//
// L5: no compressor (the next op after the window indices is its indexer); keys = L4's index_k slot; L4's mask.
// CHECK:      %[[S5:.+]] = tensor.dim %[[OUT4]], %{{.+}} : tensor<1x64xbf16>
// CHECK-NEXT: %[[POS5:.+]] = dsa.positions %[[SP]], %[[S5]]
// CHECK-NEXT: dsa.linear %[[OUT4]], %[[WQA]]
// CHECK-NEXT: %[[QR5:.+]] = dsa.rms_norm
// CHECK:      %[[WROWS5:.+]] = dsa.window_kv
// CHECK-NEXT: %[[WIDX5:.+]] = dsa.window_indices %[[SP]], %[[S5]] {window_size = 8 : i64}
// CHECK-NEXT: %[[IQB5:.+]] = dsa.linear %[[QR5]], %[[IWQB]]
// CHECK-NEXT: %[[IQH5:.+]] = tensor.expand_shape %[[IQB5]]
// CHECK-NEXT: %[[IQR5:.+]] = dsa.apply_rope %[[IQH5]], %[[POS5]]
// CHECK-NEXT: %[[IQ5:.+]] = dsa.fp4_quant_e8m0 %[[IQR5]]
// CHECK-NEXT: %[[W5:.+]] = dsa.linear %[[OUT4]], %[[WPROJ]]
// CHECK-NEXT: %[[SC5:.+]] = dsa.indexer_scores %[[IQ5]], %[[W5]], %[[IK]], %[[SP]] {ratio = 1 : i64, weight_scale = 1.250000e-01 : f32}
// CHECK-NEXT: %[[VIS5:.+]] = dsa.compress_visibility %[[SC5]], %[[SP]] {ratio = 1 : i64}
// CHECK-NEXT: %[[MASKED5:.+]] = dsa.apply_candidates %[[VIS5]], %[[CAND]] : (tensor<1x?xbf16>, tensor<?x?xi1>) -> tensor<1x?xbf16>
// CHECK-NEXT: %[[TOPK5:.+]] = dsa.indexer_topk %[[MASKED5]], %[[SP]]
// CHECK-SAME:     {index_topk = 6 : i64, ratio = 1 : i64, tie_order = #dsa.tie_order<torch_cpu>, window_size = 8 : i64}
// CHECK-NEXT: %[[TOPK5D:.+]] = tensor.cast %[[TOPK5]] : tensor<1x?xi32> to tensor<?x?xi32>
// CHECK-NEXT: %[[SPI5:.+]] = arith.index_cast %[[SP]] : i64 to index
// CHECK-NEXT: %[[END5:.+]] = arith.addi %[[SPI5]], %[[S5]] : index
// CHECK-NEXT: %[[RIDX5:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[N5:.+]] = arith.floordivsi %[[END5]], %[[RIDX5]] : index
// CHECK-NEXT: %[[CROWS5:.+]] = tensor.extract_slice %[[CKVS]][0, 0] [%[[N5]], 32] [1, 1]
// CHECK-NEXT: %[[ROWS5:.+]] = tensor.concat dim(0) %[[WROWS5]], %[[CROWS5]]
// CHECK-NEXT: %[[IDX5:.+]] = tensor.concat dim(1) %[[WIDX5]], %[[TOPK5]]
// CHECK-NEXT: dsa.probe "L5.sa_kv" %[[ROWS5]]
// CHECK-NEXT: dsa.probe "L5.sa_topk_idxs" %[[IDX5]]
// CHECK-NEXT: dsa.sparse_attn %{{.+}}, %[[ROWS5]], %[[IDX5]], %[[SINK]]
// CHECK:      %[[OUT5:.+]] = dsa.linear %{{.+}}, %[[WOB]]
// CHECK-NEXT: dsa.probe "L5.attn_out" %[[OUT5]]
// CHECK-NEXT: dsa.probe "shared.L5.compress_kv" %[[CROWS5]]
// CHECK-NEXT: %[[IKROWS5:.+]] = tensor.extract_slice %[[IK]][0, 0] [%[[N5]], 32] [1, 1]
// CHECK-NEXT: dsa.probe "shared.L5.index_k" %[[IKROWS5]]
// CHECK-NEXT: dsa.probe "shared.L5.topk_idxs" %[[TOPK5D]] : tensor<?x?xi32>
// CHECK-NEXT: dsa.probe "shared.L5.candidates" %[[CAND]] : tensor<?x?xi1>
// CHECK-NEXT: return %[[OUT5]], %{{.+}}, %{{.+}}, %[[NKVC]], %[[NKC]], %[[CKVS]], %[[IK]], %[[TOPK5D]], %[[CAND]] :

// GENERIC-LABEL: sym_name = "ratio1_candidate_source_then_user"
// GENERIC:      "dsa.positions"({{.*}}) <{stride = 1 : i64}> : (i64, index) -> tensor<1xi64>
// GENERIC:      "dsa.positions"({{.*}}) <{stride = 1 : i64}> : (i64, index) -> tensor<1xi64>
// GENERIC:      "dsa.fp4_quant_e8m0"({{.*}}) <{block_size = 32 : i64}> : (tensor<1x32xbf16>) -> tensor<1x32xbf16>
// GENERIC:      "dsa.fp4_quant_e8m0"({{.*}}) <{block_size = 32 : i64}> : (tensor<1x2x32xbf16>) -> tensor<1x2x32xbf16>
// GENERIC:      "dsa.fp4_quant_e4m3"({{.*}}) <{block_size = 16 : i64}> : (tensor<1x32xbf16>) -> tensor<1x32xbf16>
func.func @ratio1_candidate_source_then_user(
    %x: tensor<1x64xbf16>, %start_pos: i64, %ring4: tensor<8x32xbf16>, %ring5: tensor<8x32xbf16>,
    %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
    %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>,
    %c_wkv: tensor<32x64xbf16>, %c_norm: tensor<32xbf16>, %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>,
    %i_wq_b: tensor<64x16xbf16>, %w_proj: tensor<2x64xbf16>, %kv_cache: tensor<64x32xbf16>,
    %k_cache: tensor<64x32xbf16>,
    %s_ckv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>)
    -> (tensor<1x64xbf16>, tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>,
        tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) {
  %out4, %nring4, %nkvc, %nkc, %ckv4, %ik4, %topk4, %cand4 = dsa.attention %x, %start_pos, %ring4
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      compressor(%c_wkv, %c_norm) index_keys(%wk, %k_norm) indexer(%i_wq_b, %w_proj)
      state(%kv_cache, %k_cache) shared(%s_ckv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 4, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 1, norm_eps = 9.99999968E-21 : f32, rope = #rope,
                                 compress = <is_kv_source = true, is_index_source = true, is_candidate_source = true,
                                             uses_candidates = false, index_n_heads = 2, index_head_dim = 32,
                                             index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2,
                                             max_seq_len = 64, index_k_source = <published_slot>,
                                             tie_order = <torch_cpu>>>}
      : (tensor<1x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>,
         tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>,
         tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
      -> (tensor<1x64xbf16>, tensor<8x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>,
          tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  %out5, %nring5, %ckv5, %ik5, %topk5, %cand5 = dsa.attention %out4, %start_pos, %ring5
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      indexer(%i_wq_b, %w_proj) shared(%ckv4, %ik4, %topk4, %cand4)
      {config = #dsa.attn_config<layer_id = 5, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 1, norm_eps = 9.99999968E-21 : f32, rope = #rope,
                                 compress = <is_kv_source = false, is_index_source = true, is_candidate_source = false,
                                             uses_candidates = true, index_n_heads = 2, index_head_dim = 32,
                                             index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2,
                                             max_seq_len = 64, index_k_source = <published_slot>,
                                             tie_order = <torch_cpu>>>}
      : (tensor<1x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<64x16xbf16>, tensor<2x64xbf16>,
         tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
      -> (tensor<1x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return %out5, %nring4, %nring5, %nkvc, %nkc, %ckv5, %ik5, %topk5, %cand5
      : tensor<1x64xbf16>, tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>,
        tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>
}

// index_k_source = own_cache (section 8's named correction): the kv + index source publishes its index-key cache
// every step (no arith.select on g > 0) and its indexer scores against that cache. Another geometry: one token,
// window 4, 3 index heads (weight_scale 0.102062076), index_topk 5, max_seq_len 16 (caches of 8 rows), layer 8.
// CHECK-LABEL: func.func @own_cache_decode_step(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x64xbf16>, %[[SP:[^:]+]]: i64, %[[RING:[^:]+]]: tensor<4x32xbf16>,
// CHECK-SAME: %[[SINK:[^:]+]]: tensor<4xf32>, {{.*}}, %[[WOB:[^:]+]]: tensor<64x32xbf16>,
// CHECK-SAME: %[[CWKV:[^:]+]]: tensor<32x64xf32>, %[[CWGATE:[^:]+]]: tensor<32x64xf32>, %[[CNORM:[^:]+]]: tensor<32xbf16>,
// CHECK-SAME: %[[WK:[^:]+]]: tensor<32x32xbf16>, %[[KNORM:[^:]+]]: tensor<32xbf16>,
// CHECK-SAME: %[[IWQB:[^:]+]]: tensor<96x16xbf16>, %[[WPROJ:[^:]+]]: tensor<3x64xbf16>,
// CHECK-SAME: %[[KVS:[^:]+]]: tensor<2x32xf32>, %[[SCS:[^:]+]]: tensor<2x32xf32>,
// CHECK-SAME: %[[KVC:[^:]+]]: tensor<8x32xbf16>, %[[KC:[^:]+]]: tensor<8x32xbf16>,
// CHECK-SAME: %[[SCKV:[^:]+]]: tensor<?x32xbf16>, %[[SIK:[^:]+]]: tensor<?x32xbf16>,
// CHECK-SAME: %[[STOPK:[^:]+]]: tensor<?x?xi32>, %[[SCAND:[^:]+]]: tensor<?x?xi1>)
// CHECK:      %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[S:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<1x64xbf16>
// CHECK-NEXT: %[[POS:.+]] = dsa.positions %[[SP]], %[[S]] : (i64, index) -> tensor<1xi64>
// CHECK-NEXT: dsa.linear %[[X]]
// CHECK-NEXT: %[[QR:.+]] = dsa.rms_norm
// CHECK:      dsa.probe "L8.sa_q"
// CHECK:      %[[NRING:.+]] = dsa.ring_update %[[RING]], %{{.+}}, %[[SP]] : (tensor<4x32xbf16>, tensor<1x32xbf16>, i64) -> tensor<4x32xbf16>
// CHECK-NEXT: %[[WROWS:.+]] = dsa.window_kv
// CHECK-NEXT: %[[WIDX:.+]] = dsa.window_indices %[[SP]], %[[S]] {window_size = 4 : i64} : (i64, index) -> tensor<1x?xi32>
// CHECK-NEXT: %[[XF:.+]] = arith.extf %[[X]] : tensor<1x64xbf16> to tensor<1x64xf32>
// CHECK-NEXT: %[[CKV:.+]] = dsa.linear %[[XF]], %[[CWKV]] : (tensor<1x64xf32>, tensor<32x64xf32>) -> tensor<1x32xf32>
// CHECK-NEXT: %[[CSC:.+]] = dsa.linear %[[XF]], %[[CWGATE]]
// CHECK-NEXT: %[[POOLED:[^ ,]+]], %[[NKVS:[^ ,]+]], %[[NSCS:[^ ,]+]] = dsa.compress_pool
// CHECK-SAME:     %[[CKV]], %[[CSC]], %[[KVS]], %[[SCS]], %[[SP]] {ratio = 2 : i64}
// CHECK-SAME:     : (tensor<1x32xf32>, tensor<1x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, i64)
// CHECK-SAME:     -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>)
// CHECK-NEXT: %[[PBF:.+]] = arith.truncf %[[POOLED]] : tensor<?x32xf32> to tensor<?x32xbf16>
// CHECK-NEXT: %[[LAT:.+]] = dsa.rms_norm %[[PBF]], %[[CNORM]]
// CHECK-NEXT: %[[G:.+]] = tensor.dim %[[LAT]], %[[C0]]
// CHECK-NEXT: %[[R64:.+]] = arith.constant 2 : i64
// CHECK-NEXT: %[[GQ:.+]] = arith.floordivsi %[[SP]], %[[R64]] : i64
// CHECK-NEXT: %[[GSTART:.+]] = arith.muli %[[GQ]], %[[R64]] : i64
// CHECK-NEXT: %[[GPOS:.+]] = dsa.positions %[[GSTART]], %[[G]] {stride = 2 : i64} : (i64, index) -> tensor<?xi64>
// CHECK-NEXT: %[[KL:.+]] = dsa.linear %[[LAT]], %[[WK]]
// CHECK-NEXT: %[[KN:.+]] = dsa.rms_norm %[[KL]], %[[KNORM]]
// CHECK-NEXT: %[[KR:.+]] = dsa.apply_rope %[[KN]], %[[GPOS]]
// CHECK-NEXT: %[[KQ:.+]] = dsa.fp4_quant_e8m0 %[[KR]]
// CHECK-NEXT: %[[NKC:.+]] = dsa.cache_write %[[KC]], %[[KQ]], %[[SP]] {ratio = 2 : i64}
// CHECK-SAME:     : (tensor<8x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<8x32xbf16>
// CHECK-NEXT: %[[IK:.+]] = tensor.cast %[[NKC]] : tensor<8x32xbf16> to tensor<?x32xbf16>
// CHECK-NEXT: %[[IQB:.+]] = dsa.linear %[[QR]], %[[IWQB]] : (tensor<1x16xbf16>, tensor<96x16xbf16>) -> tensor<1x96xbf16>
// CHECK-NEXT: %[[IQH:.+]] = tensor.expand_shape %[[IQB]] {{\[}}[0], [1, 2]] output_shape [1, 3, 32]
// CHECK-SAME:     : tensor<1x96xbf16> into tensor<1x3x32xbf16>
// CHECK-NEXT: %[[IQR:.+]] = dsa.apply_rope %[[IQH]], %[[POS]]
// CHECK-NEXT: %[[IQ:.+]] = dsa.fp4_quant_e8m0 %[[IQR]] : (tensor<1x3x32xbf16>) -> tensor<1x3x32xbf16>
// CHECK-NEXT: %[[W:.+]] = dsa.linear %[[X]], %[[WPROJ]] : (tensor<1x64xbf16>, tensor<3x64xbf16>) -> tensor<1x3xbf16>
// CHECK-NEXT: %[[SC:.+]] = dsa.indexer_scores %[[IQ]], %[[W]], %[[IK]], %[[SP]] {ratio = 2 : i64, weight_scale = 0.102062076 : f32}
// CHECK-SAME:     : (tensor<1x3x32xbf16>, tensor<1x3xbf16>, tensor<?x32xbf16>, i64) -> tensor<1x?xbf16>
// CHECK-NEXT: %[[VIS:.+]] = dsa.compress_visibility %[[SC]], %[[SP]] {ratio = 2 : i64}
// CHECK-NEXT: %[[TOPK:.+]] = dsa.indexer_topk %[[VIS]], %[[SP]]
// CHECK-SAME:     {index_topk = 5 : i64, ratio = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>, window_size = 4 : i64}
// CHECK-NEXT: %[[TOPKD:.+]] = tensor.cast %[[TOPK]] : tensor<1x?xi32> to tensor<?x?xi32>
// CHECK-NEXT: %[[LR:.+]] = dsa.apply_rope %[[LAT]], %[[GPOS]]
// CHECK-NEXT: %[[LQ:.+]] = dsa.fp4_quant_e4m3 %[[LR]]
// CHECK-NEXT: %[[NKVC:.+]] = dsa.cache_write %[[KVC]], %[[LQ]], %[[SP]] {ratio = 2 : i64}
// CHECK-NEXT: %[[CKVS:.+]] = tensor.cast %[[NKVC]] : tensor<8x32xbf16> to tensor<?x32xbf16>
// CHECK-NEXT: %[[SPI:.+]] = arith.index_cast %[[SP]] : i64 to index
// CHECK-NEXT: %[[END:.+]] = arith.addi %[[SPI]], %[[S]] : index
// CHECK-NEXT: %[[RIDX:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[N:.+]] = arith.floordivsi %[[END]], %[[RIDX]] : index
// CHECK-NEXT: %[[CROWS:.+]] = tensor.extract_slice %[[CKVS]][0, 0] [%[[N]], 32] [1, 1]
// CHECK-NEXT: %[[ROWS:.+]] = tensor.concat dim(0) %[[WROWS]], %[[CROWS]]
// CHECK-NEXT: %[[IDX:.+]] = tensor.concat dim(1) %[[WIDX]], %[[TOPK]] : (tensor<1x?xi32>, tensor<1x?xi32>) -> tensor<1x?xi32>
// CHECK-NEXT: dsa.probe "L8.sa_kv" %[[ROWS]]
// CHECK-NEXT: dsa.probe "L8.sa_topk_idxs" %[[IDX]]
// CHECK-NEXT: dsa.sparse_attn %{{.+}}, %[[ROWS]], %[[IDX]], %[[SINK]]
// CHECK:      %[[OUT:.+]] = dsa.linear %{{.+}}, %[[WOB]]
// CHECK-NEXT: dsa.probe "L8.attn_out" %[[OUT]]
// CHECK-NEXT: dsa.probe "shared.L8.compress_kv" %[[CROWS]]
// CHECK-NEXT: %[[IKROWS:.+]] = tensor.extract_slice %[[IK]][0, 0] [%[[N]], 32] [1, 1]
// CHECK-NEXT: dsa.probe "shared.L8.index_k" %[[IKROWS]]
// CHECK-NEXT: dsa.probe "shared.L8.topk_idxs" %[[TOPKD]]
// CHECK-NEXT: dsa.probe "shared.L8.candidates" %[[SCAND]]
// CHECK-NEXT: return %[[OUT]], %[[NRING]], %[[NKVS]], %[[NSCS]], %[[NKVC]], %[[NKC]], %[[CKVS]], %[[IK]], %[[TOPKD]], %[[SCAND]] :
func.func @own_cache_decode_step(
    %x: tensor<1x64xbf16>, %start_pos: i64, %ring: tensor<4x32xbf16>,
    %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
    %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>,
    %c_wkv: tensor<32x64xf32>, %c_wgate: tensor<32x64xf32>, %c_norm: tensor<32xbf16>,
    %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %i_wq_b: tensor<96x16xbf16>, %w_proj: tensor<3x64xbf16>,
    %kv_state: tensor<2x32xf32>, %score_state: tensor<2x32xf32>, %kv_cache: tensor<8x32xbf16>,
    %k_cache: tensor<8x32xbf16>,
    %s_ckv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>)
    -> (tensor<1x64xbf16>, tensor<4x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<8x32xbf16>,
        tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) {
  %out, %nring, %nkvs, %nscs, %nkvc, %nkc, %ckv, %ik, %topk, %cand = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      compressor(%c_wkv, %c_wgate, %c_norm) index_keys(%wk, %k_norm) indexer(%i_wq_b, %w_proj)
      state(%kv_state, %score_state, %kv_cache, %k_cache) shared(%s_ckv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 8, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 4,
                                 compress_ratio = 2, norm_eps = 9.99999968E-21 : f32, rope = #rope,
                                 compress = <is_kv_source = true, is_index_source = true, is_candidate_source = false,
                                             uses_candidates = false, index_n_heads = 3, index_head_dim = 32,
                                             index_topk = 5, candidate_topk_blocks = 0, candidate_block_size = 0,
                                             max_seq_len = 16, index_k_source = <own_cache>,
                                             tie_order = <torch_cpu>>>}
      : (tensor<1x64xbf16>, i64, tensor<4x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>,
         tensor<96x16xbf16>, tensor<3x64xbf16>,
         tensor<2x32xf32>, tensor<2x32xf32>, tensor<8x32xbf16>, tensor<8x32xbf16>,
         tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
      -> (tensor<1x64xbf16>, tensor<4x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<8x32xbf16>,
          tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return %out, %nring, %nkvs, %nscs, %nkvc, %nkc, %ckv, %ik, %topk, %cand
      : tensor<1x64xbf16>, tensor<4x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<8x32xbf16>,
        tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>
}
