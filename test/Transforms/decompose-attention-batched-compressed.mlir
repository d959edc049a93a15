// RUN: dsa-opt --dsa-decompose-attention %s | FileCheck %s
// The compiled output verifies after each pass on the CPU pipeline (serial and OpenMP).
// RUN: dsa-opt --verify-each --dsa-cpu-pipeline %s -o /dev/null
// RUN: dsa-opt --verify-each --dsa-cpu-pipeline="parallel=true" %s -o /dev/null

// dsa-decompose-attention on a batched decode step of a compressed layer (start_pos a tensor<B x i64>; DSAOps.td,
// issue 13): the tiny golden's L2 (ratio 2, kv + index source, index_k published_slot) with its state and slots
// batched. Row-wise over the B rows: the queries and the window kv row, the compressor's two f32 projections, the
// indexer's queries and head weights. The slots it publishes per sequence are padded first: index_k to
// max(incoming rows, C = 32), topk_idxs to index_topk = 6 columns of -1. One scf.for over the sequences then runs
// sequence b's batch-1 decode ops on its slices (compress_pool on its state rows, the index keys, the quirk's
// select, indexer_scores with entry_keys = its incoming index_k, top-k, the compressed-KV cache) and inserts its
// state and published slots back. Written out by hand from the batch-1 decomposition
// (decompose-attention-compressed.mlir): the same ops with the same attributes, sliced per sequence.

// CHECK-LABEL: func.func @batched_ratio2_source(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x1x64xbf16>, %[[SP:[^:]+]]: tensor<?xi64>, %[[RING:[^:]+]]: tensor<?x8x32xbf16>,
// CHECK-SAME: %[[SINK:[^:]+]]: tensor<4xf32>, %[[WQA:[^:]+]]: tensor<16x64xbf16>, %[[QNORM:[^:]+]]: tensor<16xbf16>,
// CHECK-SAME: %[[WQB:[^:]+]]: tensor<128x16xbf16>, %[[WKV:[^:]+]]: tensor<32x64xbf16>,
// CHECK-SAME: %[[KVNORM:[^:]+]]: tensor<32xbf16>, %[[WOA:[^:]+]]: tensor<32x64xbf16>,
// CHECK-SAME: %[[WOB:[^:]+]]: tensor<64x32xbf16>, %[[CWKV:[^:]+]]: tensor<32x64xf32>,
// CHECK-SAME: %[[CWGATE:[^:]+]]: tensor<32x64xf32>, %[[CNORM:[^:]+]]: tensor<32xbf16>,
// CHECK-SAME: %[[WK:[^:]+]]: tensor<32x32xbf16>, %[[KNORM:[^:]+]]: tensor<32xbf16>,
// CHECK-SAME: %[[IWQB:[^:]+]]: tensor<64x16xbf16>, %[[WPROJ:[^:]+]]: tensor<2x64xbf16>,
// CHECK-SAME: %[[KVS:[^:]+]]: tensor<?x2x32xf32>, %[[SCS:[^:]+]]: tensor<?x2x32xf32>,
// CHECK-SAME: %[[KVC:[^:]+]]: tensor<?x32x32xbf16>, %[[KC:[^:]+]]: tensor<?x32x32xbf16>,
// CHECK-SAME: %[[SCKV:[^:]+]]: tensor<?x?x32xbf16>, %[[SIK:[^:]+]]: tensor<?x?x32xbf16>,
// CHECK-SAME: %[[STOPK:[^:]+]]: tensor<?x1x?xi32>, %[[SCAND:[^:]+]]: tensor<?x1x?xi1>)
// CHECK-NOT: dsa.attention
// CHECK-NOT: dsa.probe
// CHECK:      %[[B:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x1x64xbf16>
// CHECK-NEXT: %[[XR:.+]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<?x1x64xbf16> into tensor<?x64xbf16>
// Sections 3 and 4 over the B rows (decompose-attention-batched.mlir), then the compressed part's row-wise inputs.
// CHECK:      %[[QR:.+]] = dsa.rms_norm
// CHECK:      %[[Q:.+]] = dsa.apply_rope %{{.+}}, %[[SP]]
// CHECK:      %[[KV:.+]] = dsa.act_quant_fp8
// CHECK-NEXT: %[[XF:.+]] = arith.extf %[[XR]] : tensor<?x64xbf16> to tensor<?x64xf32>
// CHECK-NEXT: %[[CKV:.+]] = dsa.linear %[[XF]], %[[CWKV]] : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
// CHECK-NEXT: %[[CSC:.+]] = dsa.linear %[[XF]], %[[CWGATE]] : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
// CHECK-NEXT: %[[IQB:.+]] = dsa.linear %[[QR]], %[[IWQB]] : (tensor<?x16xbf16>, tensor<64x16xbf16>) -> tensor<?x64xbf16>
// CHECK-NEXT: %[[IQH:.+]] = tensor.expand_shape %[[IQB]] {{\[}}[0], [1, 2]] output_shape [%[[B]], 2, 32]
// CHECK-NEXT: %[[IQR:.+]] = dsa.apply_rope %[[IQH]], %[[SP]]
// CHECK-NEXT: %[[IQ:.+]] = dsa.fp4_quant_e8m0 %[[IQR]] : (tensor<?x2x32xbf16>) -> tensor<?x2x32xbf16>
// CHECK-NEXT: %[[W:.+]] = dsa.linear %[[XR]], %[[WPROJ]] : (tensor<?x64xbf16>, tensor<2x64xbf16>) -> tensor<?x2xbf16>
// The padded slots this layer publishes per sequence: index_k to max(rows, C) rows of 0, topk_idxs to 6 columns of -1.
// CHECK:      %[[IKROWS:.+]] = tensor.dim %[[SIK]], %{{.+}} : tensor<?x?x32xbf16>
// CHECK-NEXT: %[[CAP:.+]] = arith.constant 32 : index
// CHECK-NEXT: %[[IKMAX:.+]] = arith.maxsi %[[IKROWS]], %[[CAP]] : index
// CHECK-NEXT: %[[IKEXTRA:.+]] = arith.subi %[[IKMAX]], %[[IKROWS]] : index
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant 0.000000e+00 : bf16
// CHECK-NEXT: %[[IKPAD:.+]] = tensor.pad %[[SIK]] low[0, 0, 0] high[0, %[[IKEXTRA]], 0]
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   tensor.yield %[[ZERO]] : bf16
// CHECK-NEXT: } : tensor<?x?x32xbf16> to tensor<?x?x32xbf16>
// CHECK-NEXT: %[[TKE:.+]] = tensor.empty(%[[B]]) : tensor<?x1x0xi32>
// CHECK-NEXT: %[[MINUS1:.+]] = arith.constant -1 : i32
// CHECK-NEXT: %[[TKPAD:.+]] = tensor.pad %[[TKE]] low[0, 0, 0] high[0, 0, 6]
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   tensor.yield %[[MINUS1]] : i32
// CHECK-NEXT: } : tensor<?x1x0xi32> to tensor<?x1x6xi32>
// CHECK-NEXT: %[[OE:.+]] = tensor.empty(%[[B]]) : tensor<?x4x32xbf16>
// CHECK-NEXT: %[[LOOP:.+]]:8 = scf.for %[[I:[^ ,]+]] = %{{[^ ]+}} to %[[B]] step %{{[^ ]+}}
// CHECK-SAME:     iter_args(%[[OACC:[^ ,]+]] = %[[OE]], %[[RACC:[^ ,]+]] = %[[RING]], %[[KVSACC:[^ ,]+]] = %[[KVS]],
// CHECK-SAME:     %[[SCSACC:[^ ,]+]] = %[[SCS]], %[[KVCACC:[^ ,]+]] = %[[KVC]], %[[KCACC:[^ ,]+]] = %[[KC]],
// CHECK-SAME:     %[[IKACC:[^ ,]+]] = %[[IKPAD]], %[[TKACC:[^ ,]+]] = %[[TKPAD]])
// Sequence b's slices: its position, ring, kv row and queries, its state rows, its incoming slots.
// CHECK-NEXT:   %[[SPI:.+]] = tensor.extract %[[SP]][%[[I]]] : tensor<?xi64>
// CHECK:        %[[KVSI:.+]] = tensor.extract_slice %[[KVSACC]][%[[I]], 0, 0] [1, 2, 32] [1, 1, 1] : tensor<?x2x32xf32> to tensor<2x32xf32>
// CHECK-NEXT:   %[[SCSI:.+]] = tensor.extract_slice %[[SCSACC]][%[[I]], 0, 0] [1, 2, 32] [1, 1, 1] : tensor<?x2x32xf32> to tensor<2x32xf32>
// CHECK-NEXT:   %[[KVCI:.+]] = tensor.extract_slice %[[KVCACC]][%[[I]], 0, 0] [1, 32, 32] [1, 1, 1] : tensor<?x32x32xbf16> to tensor<32x32xbf16>
// CHECK-NEXT:   %[[KCI:.+]] = tensor.extract_slice %[[KCACC]][%[[I]], 0, 0] [1, 32, 32] [1, 1, 1] : tensor<?x32x32xbf16> to tensor<32x32xbf16>
// CHECK:        %[[SIKI:.+]] = tensor.extract_slice %[[SIK]][%[[I]], 0, 0] [1, %{{.+}}, 32] [1, 1, 1] : tensor<?x?x32xbf16> to tensor<?x32xbf16>
// The batch-1 decode's compressed part on them (decompose-attention-compressed.mlir's order).
// CHECK:        %[[CKVI:.+]] = tensor.extract_slice %[[CKV]][%[[I]], 0] [1, 32] [1, 1] : tensor<?x32xf32> to tensor<1x32xf32>
// CHECK-NEXT:   %[[CSCI:.+]] = tensor.extract_slice %[[CSC]][%[[I]], 0] [1, 32] [1, 1] : tensor<?x32xf32> to tensor<1x32xf32>
// CHECK-NEXT:   %[[POOLED:[^ ,]+]], %[[NKVS:[^ ,]+]], %[[NSCS:[^ ,]+]] = dsa.compress_pool
// CHECK-SAME:     %[[CKVI]], %[[CSCI]], %[[KVSI]], %[[SCSI]], %[[SPI]] {ratio = 2 : i64}
// CHECK:        %[[NKC:.+]] = dsa.cache_write %[[KCI]], %{{.+}}, %[[SPI]] {ratio = 2 : i64}
// The index_k quirk without a select of tensors: the padded slot holds sequence b's incoming slot, the new cache
// is written over its first C rows when the step produced a latent (else 0 rows), and the indexer reads sequence
// b's slice cut to the batch-1 slot's rows (C, or the incoming rows); the cache and the read-only incoming slot
// stay in separate buffers for bufferization (test/Conversion/DSAToCPU/batched-in-place-caches.mlir).
// CHECK-NEXT:   %[[HAS:.+]] = arith.cmpi sgt
// CHECK:        %[[WROTE:.+]] = arith.select %[[HAS]], %{{.+}}, %{{.+}} : index
// CHECK-NEXT:   %[[PART:.+]] = tensor.extract_slice %[[NKC]][0, 0] [%[[WROTE]], 32] [1, 1] : tensor<32x32xbf16> to tensor<?x32xbf16>
// CHECK:        %[[IKB:.+]] = tensor.insert_slice %[[PART]] into %[[IKACC]][%[[I]], 0, 0] [1, %{{.+}}, 32] [1, 1, 1] : tensor<?x32xbf16> into tensor<?x?x32xbf16>
// CHECK:        %[[ROWS:.+]] = arith.select %[[HAS]], %{{.+}}, %{{.+}} : index
// CHECK-NEXT:   %[[IK:.+]] = tensor.extract_slice %[[IKB]][%[[I]], 0, 0] [1, %[[ROWS]], 32] [1, 1, 1] : tensor<?x?x32xbf16> to tensor<?x32xbf16>
// CHECK-NEXT:   %[[IQI:.+]] = tensor.extract_slice %[[IQ]][%[[I]], 0, 0] [1, 2, 32] [1, 1, 1] : tensor<?x2x32xbf16> to tensor<1x2x32xbf16>
// CHECK-NEXT:   %[[WI:.+]] = tensor.extract_slice %[[W]][%[[I]], 0] [1, 2] [1, 1] : tensor<?x2xbf16> to tensor<1x2xbf16>
// CHECK-NEXT:   %[[SC:.+]] = dsa.indexer_scores %[[IQI]], %[[WI]], %[[IK]], %[[SPI]] entry_keys %[[SIKI]]
// CHECK:        %[[TOPK:.+]] = dsa.indexer_topk
// CHECK:        %[[NKVC:.+]] = dsa.cache_write %[[KVCI]], %{{.+}}, %[[SPI]] {ratio = 2 : i64}
// Its attention, then its state rows and published slots back into the batch: after sparse_attn, the last reader
// of the new compressed-KV cache, so that bufferization writes the cache in place (no copy of the slice per
// sequence; CPUBatchedCompressedTest.CompressedKvCacheIsUpdatedInPlace).
// CHECK:        dsa.sparse_attn
// CHECK-DAG:    tensor.insert_slice %[[NKVS]] into %[[KVSACC]][%[[I]], 0, 0] [1, 2, 32] [1, 1, 1]
// CHECK-DAG:    tensor.insert_slice %[[NSCS]] into %[[SCSACC]][%[[I]], 0, 0] [1, 2, 32] [1, 1, 1]
// CHECK-DAG:    tensor.insert_slice %[[NKVC]] into %[[KVCACC]][%[[I]], 0, 0] [1, 32, 32] [1, 1, 1]
// CHECK-DAG:    tensor.insert_slice %[[NKC]] into %[[KCACC]][%[[I]], 0, 0] [1, 32, 32] [1, 1, 1]
// CHECK-DAG:    tensor.insert_slice %{{.+}} into %[[TKACC]][%[[I]], 0, 0] [1, %{{.+}}, %{{.+}}] [1, 1, 1] : tensor<?x?xi32> into tensor<?x1x6xi32>
// CHECK:        scf.yield %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %[[IKB]], %{{[^ ,]+}} :
// CHECK:      %[[OUT:.+]] = tensor.expand_shape
// The slots after the layer: compress_kv is the batched compressed-KV cache, index_k and topk_idxs the padded ones,
// candidates as it came.
// CHECK-NEXT: %[[CKVSLOT:.+]] = tensor.cast %[[LOOP]]#4 : tensor<?x32x32xbf16> to tensor<?x?x32xbf16>
// CHECK-NEXT: %[[TKSLOT:.+]] = tensor.cast %[[LOOP]]#7 : tensor<?x1x6xi32> to tensor<?x1x?xi32>
// CHECK-NEXT: return %[[OUT]], %[[LOOP]]#1, %[[LOOP]]#2, %[[LOOP]]#3, %[[LOOP]]#4, %[[LOOP]]#5, %[[CKVSLOT]], %[[LOOP]]#6, %[[TKSLOT]], %[[SCAND]]
func.func @batched_ratio2_source(
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
