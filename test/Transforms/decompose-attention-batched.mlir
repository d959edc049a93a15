// RUN: dsa-opt --dsa-decompose-attention %s | FileCheck %s
// The compiled output verifies after each pass on the CPU pipeline (serial and OpenMP).
// RUN: dsa-opt --verify-each --dsa-cpu-pipeline %s -o /dev/null
// RUN: dsa-opt --verify-each --dsa-cpu-pipeline="parallel=true" %s -o /dev/null

// dsa-decompose-attention on a batched decode step (start_pos a tensor<B x i64>; DSAOps.td, issue 13): the
// row-wise ops over the B rows (one dsa.linear per weight for all sequences; RoPE at each row's own position, which
// is start_pos[b] for a one-token step), one scf.for over the sequences running sequence b's ring, window and sparse
// attention on its slices, then the row-wise output. Written out by hand from the batch-1 decomposition
// (decompose-attention.mlir): the same ops with the same attributes, sliced per sequence.

// CHECK-LABEL: func.func @batched(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x1x64xbf16>, %[[SP:[^:]+]]: tensor<?xi64>, %[[RING:[^:]+]]: tensor<?x8x32xbf16>,
// CHECK-SAME: %[[SINK:[^:]+]]: tensor<4xf32>, %[[WQA:[^:]+]]: tensor<16x64xbf16>, %[[QNORM:[^:]+]]: tensor<16xbf16>,
// CHECK-SAME: %[[WQB:[^:]+]]: tensor<128x16xbf16>, %[[WKV:[^:]+]]: tensor<32x64xbf16>,
// CHECK-SAME: %[[KVNORM:[^:]+]]: tensor<32xbf16>, %[[WOA:[^:]+]]: tensor<32x64xbf16>,
// CHECK-SAME: %[[WOB:[^:]+]]: tensor<64x32xbf16>)
// CHECK-NOT: dsa.attention
// CHECK-NOT: dsa.probe
// CHECK-DAG:  %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG:  %[[C1:.+]] = arith.constant 1 : index
// CHECK:      %[[B:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<?x1x64xbf16>
// CHECK-NEXT: %[[XR:.+]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<?x1x64xbf16> into tensor<?x64xbf16>
// Section 3 over the B rows, RoPE at start_pos (each row's position).
// CHECK-NEXT: %[[QA:.+]] = dsa.linear %[[XR]], %[[WQA]] : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
// CHECK-NEXT: %[[QR:.+]] = dsa.rms_norm %[[QA]], %[[QNORM]] {eps = 9.99999968E-21 : f32}
// CHECK-NEXT: %[[QB:.+]] = dsa.linear %[[QR]], %[[WQB]] : (tensor<?x16xbf16>, tensor<128x16xbf16>) -> tensor<?x128xbf16>
// CHECK-NEXT: %[[QH:.+]] = tensor.expand_shape %[[QB]] {{\[}}[0], [1, 2]] output_shape [%[[B]], 4, 32]
// CHECK-NEXT: %[[Q:.+]] = dsa.apply_rope %[[QH]], %[[SP]] {rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>}
// CHECK-SAME:     : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
// Section 4's kv rows over the B rows.
// CHECK-NEXT: %[[KVA:.+]] = dsa.linear %[[XR]], %[[WKV]] : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
// CHECK-NEXT: %[[KVN:.+]] = dsa.rms_norm %[[KVA]], %[[KVNORM]] {eps = 9.99999968E-21 : f32}
// CHECK-NEXT: %[[KVR:.+]] = dsa.apply_rope %[[KVN]], %[[SP]]
// CHECK-NEXT: %[[KV:.+]] = dsa.act_quant_fp8 %[[KVR]] : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
// The per-sequence loop: sequence b's slices of the ring, the kv rows and the queries.
// CHECK-NEXT: %[[OE:.+]] = tensor.empty(%[[B]]) : tensor<?x4x32xbf16>
// CHECK-NEXT: %[[LOOP:.+]]:2 = scf.for %[[I:.+]] = %[[C0]] to %[[B]] step %[[C1]]
// CHECK-SAME:     iter_args(%[[OACC:.+]] = %[[OE]], %[[RACC:.+]] = %[[RING]]) -> (tensor<?x4x32xbf16>, tensor<?x8x32xbf16>)
// CHECK-NEXT:   %[[SPI:.+]] = tensor.extract %[[SP]][%[[I]]] : tensor<?xi64>
// CHECK-NEXT:   %[[RI:.+]] = tensor.extract_slice %[[RACC]][%[[I]], 0, 0] [1, 8, 32] [1, 1, 1] : tensor<?x8x32xbf16> to tensor<8x32xbf16>
// CHECK-NEXT:   %[[KVI:.+]] = tensor.extract_slice %[[KV]][%[[I]], 0] [1, 32] [1, 1] : tensor<?x32xbf16> to tensor<1x32xbf16>
// CHECK-NEXT:   %[[QI:.+]] = tensor.extract_slice %[[Q]][%[[I]], 0, 0] [1, 4, 32] [1, 1, 1] : tensor<?x4x32xbf16> to tensor<1x4x32xbf16>
// CHECK-NEXT:   %[[NRI:.+]] = dsa.ring_update %[[RI]], %[[KVI]], %[[SPI]] : (tensor<8x32xbf16>, tensor<1x32xbf16>, i64) -> tensor<8x32xbf16>
// CHECK-NEXT:   %[[ROWS:.+]] = dsa.window_kv %[[KVI]], %[[RI]], %[[SPI]] : (tensor<1x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
// CHECK-NEXT:   %[[IDX:.+]] = dsa.window_indices %[[SPI]], %[[C1]] {window_size = 8 : i64} : (i64, index) -> tensor<1x?xi32>
// CHECK-NEXT:   %[[OI:.+]] = dsa.sparse_attn %[[QI]], %[[ROWS]], %[[IDX]], %[[SINK]] {scale = 0.176776692 : f32}
// CHECK-SAME:       : (tensor<1x4x32xbf16>, tensor<?x32xbf16>, tensor<1x?xi32>, tensor<4xf32>) -> tensor<1x4x32xbf16>
// CHECK-NEXT:   %[[OA:.+]] = tensor.insert_slice %[[OI]] into %[[OACC]][%[[I]], 0, 0] [1, 4, 32] [1, 1, 1] : tensor<1x4x32xbf16> into tensor<?x4x32xbf16>
// CHECK-NEXT:   %[[RA:.+]] = tensor.insert_slice %[[NRI]] into %[[RACC]][%[[I]], 0, 0] [1, 8, 32] [1, 1, 1] : tensor<8x32xbf16> into tensor<?x8x32xbf16>
// CHECK-NEXT:   scf.yield %[[OA]], %[[RA]] : tensor<?x4x32xbf16>, tensor<?x8x32xbf16>
// CHECK-NEXT: }
// Section 11 over the B rows.
// CHECK-NEXT: %[[OR:.+]] = dsa.apply_rope %[[LOOP]]#0, %[[SP]] {inverse, rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>}
// CHECK-NEXT: %[[OG:.+]] = dsa.grouped_output %[[OR]], %[[WOA]] {groups = 2 : i64}
// CHECK-NEXT: %[[OUT:.+]] = dsa.linear %[[OG]], %[[WOB]] : (tensor<?x32xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
// CHECK-NEXT: %[[OUT3:.+]] = tensor.expand_shape %[[OUT]] {{\[}}[0, 1], [2]] output_shape [%[[B]], 1, 64] : tensor<?x64xbf16> into tensor<?x1x64xbf16>
// CHECK-NEXT: return %[[OUT3]], %[[LOOP]]#1 : tensor<?x1x64xbf16>, tensor<?x8x32xbf16>
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

// Static B: the shapes carry it, the loop runs to the dimension of x.
// CHECK-LABEL: func.func @batched_static(
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step
// CHECK-SAME: -> (tensor<3x4x32xbf16>, tensor<3x8x32xbf16>)
// CHECK: return %{{.+}}, %{{.+}} : tensor<3x1x64xbf16>, tensor<3x8x32xbf16>
func.func @batched_static(%x: tensor<3x1x64xbf16>, %sp: tensor<3xi64>, %ring: tensor<3x8x32xbf16>, %sink: tensor<4xf32>,
                   %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
                   %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>,
                   %wo_b: tensor<64x32xbf16>) -> (tensor<3x1x64xbf16>, tensor<3x8x32xbf16>) {
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 0, norm_eps = 1.0e-20 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<3x1x64xbf16>, tensor<3xi64>, tensor<3x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<3x1x64xbf16>, tensor<3x8x32xbf16>)
  return %out, %ring1 : tensor<3x1x64xbf16>, tensor<3x8x32xbf16>
}
