// RUN: dsa-opt --dsa-decompose-attention %s | FileCheck %s
// RUN: dsa-opt --dsa-decompose-attention --mlir-print-op-generic %s | FileCheck %s --check-prefix=GENERIC
// The compiled output of every function here verifies after each pass, on the CPU pipeline (serial and OpenMP) and the GPU one.
// RUN: dsa-opt --verify-each --dsa-cpu-pipeline %s -o /dev/null
// RUN: dsa-opt --verify-each --dsa-cpu-pipeline="parallel=true" %s -o /dev/null
// RUN: dsa-opt --verify-each --dsa-gpu-pipeline="chip=sm_90" %s -o /dev/null

// dsa-decompose-attention on window-only layers (attention-semantics.md sections 3, 4, 10, 11). The expected
// sequence is the reference's Attention.forward for compress_ratio 0, written out by hand from the spec; the
// softmax scales are head_dim^-0.5 rounded to f32 by hand: 32^-0.5 = 0.17677669529... -> f32 0x3E3504F3
// = 0.176776692, and 64^-0.5 = 0.125 exactly.

// Two tiny-golden ratio-0 layers (L0, L1) chained as in the model: L1 reads L0's output. Dynamic token count.
// CHECK-LABEL: func.func @two_layers(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x64xbf16>, %[[SP:[^:]+]]: i64,
// CHECK-SAME: %[[RING0:[^:]+]]: tensor<8x32xbf16>, %[[RING1:[^:]+]]: tensor<8x32xbf16>,
// CHECK-SAME: %[[SINK:[^:]+]]: tensor<4xf32>, %[[WQA:[^:]+]]: tensor<16x64xbf16>, %[[QNORM:[^:]+]]: tensor<16xbf16>,
// CHECK-SAME: %[[WQB:[^:]+]]: tensor<128x16xbf16>, %[[WKV:[^:]+]]: tensor<32x64xbf16>,
// CHECK-SAME: %[[KVNORM:[^:]+]]: tensor<32xbf16>, %[[WOA:[^:]+]]: tensor<32x64xbf16>,
// CHECK-SAME: %[[WOB:[^:]+]]: tensor<64x32xbf16>)
// CHECK-NOT: dsa.attention
//
// Positions of the step's tokens.
// CHECK:      %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[S:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<?x64xbf16>
// CHECK-NEXT: %[[POS:.+]] = dsa.positions %[[SP]], %[[S]] : (i64, index) -> tensor<?xi64>
//
// Section 3: queries.
// CHECK-NEXT: %[[QA:.+]] = dsa.linear %[[X]], %[[WQA]] : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
// CHECK-NEXT: %[[QR:.+]] = dsa.rms_norm %[[QA]], %[[QNORM]] {eps = 9.99999968E-21 : f32}
// CHECK-SAME:     -> tensor<?x16xbf16>
// CHECK-NEXT: %[[QB:.+]] = dsa.linear %[[QR]], %[[WQB]] : (tensor<?x16xbf16>, tensor<128x16xbf16>) -> tensor<?x128xbf16>
// CHECK-NEXT: %[[QH:.+]] = tensor.expand_shape %[[QB]] {{\[}}[0], [1, 2]] output_shape [%[[S]], 4, 32]
// CHECK-SAME:     : tensor<?x128xbf16> into tensor<?x4x32xbf16>
// CHECK-NEXT: %[[Q:.+]] = dsa.apply_rope %[[QH]], %[[POS]] {rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>}
// CHECK-SAME:     : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
// CHECK-NEXT: dsa.probe "L0.sa_q" %[[Q]] : tensor<?x4x32xbf16>
//
// Section 4: the window KV row, fp8 round trip (block 32: the default, so not printed; see GENERIC), ring.
// CHECK-NEXT: %[[KVA:.+]] = dsa.linear %[[X]], %[[WKV]] : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
// CHECK-NEXT: %[[KVN:.+]] = dsa.rms_norm %[[KVA]], %[[KVNORM]] {eps = 9.99999968E-21 : f32}
// CHECK-NEXT: %[[KVR:.+]] = dsa.apply_rope %[[KVN]], %[[POS]] {rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>}
// CHECK-SAME:     : (tensor<?x32xbf16>, tensor<?xi64>) -> tensor<?x32xbf16>
// CHECK-NEXT: %[[KV:.+]] = dsa.act_quant_fp8 %[[KVR]] : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
// CHECK-NEXT: %[[NRING0:.+]] = dsa.ring_update %[[RING0]], %[[KV]], %[[SP]]
// CHECK-SAME:     : (tensor<8x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<8x32xbf16>
// CHECK-NEXT: %[[ROWS:.+]] = dsa.window_kv %[[KV]], %[[RING0]], %[[SP]]
// CHECK-SAME:     : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
// CHECK-NEXT: dsa.probe "L0.sa_kv" %[[ROWS]] : tensor<?x32xbf16>
// CHECK-NEXT: %[[IDX:.+]] = dsa.window_indices %[[SP]], %[[S]] {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
// CHECK-NEXT: dsa.probe "L0.sa_topk_idxs" %[[IDX]] : tensor<?x?xi32>
//
// Section 10: sparse attention with the sink.
// CHECK-NEXT: %[[O:.+]] = dsa.sparse_attn %[[Q]], %[[ROWS]], %[[IDX]], %[[SINK]] {scale = 0.176776692 : f32}
// CHECK-SAME:     : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
// CHECK-NEXT: dsa.probe "L0.sa_o" %[[O]] : tensor<?x4x32xbf16>
//
// Section 11: inverse RoPE, grouped wo_a, wo_b.
// CHECK-NEXT: %[[OR:.+]] = dsa.apply_rope %[[O]], %[[POS]] {inverse, rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>}
// CHECK-SAME:     : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
// CHECK-NEXT: %[[OG:.+]] = dsa.grouped_output %[[OR]], %[[WOA]] {groups = 2 : i64}
// CHECK-SAME:     : (tensor<?x4x32xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
// CHECK-NEXT: %[[OUT0:.+]] = dsa.linear %[[OG]], %[[WOB]] : (tensor<?x32xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
// CHECK-NEXT: dsa.probe "L0.attn_out" %[[OUT0]] : tensor<?x64xbf16>
//
// The second layer reads L0's output and its own ring; its probes say L1.
// CHECK-NEXT: %[[C0B:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[S1:.+]] = tensor.dim %[[OUT0]], %[[C0B]] : tensor<?x64xbf16>
// CHECK-NEXT: %[[POS1:.+]] = dsa.positions %[[SP]], %[[S1]]
// CHECK-NEXT: %[[QA1:.+]] = dsa.linear %[[OUT0]], %[[WQA]]
// CHECK:      dsa.probe "L1.sa_q"
// CHECK-NEXT: %[[KVA1:.+]] = dsa.linear %[[OUT0]], %[[WKV]]
// CHECK:      %[[NRING1:.+]] = dsa.ring_update %[[RING1]], %{{.+}}, %[[SP]]
// CHECK-NEXT: %[[ROWS1:.+]] = dsa.window_kv %{{.+}}, %[[RING1]], %[[SP]]
// CHECK-NEXT: dsa.probe "L1.sa_kv" %[[ROWS1]]
// CHECK-NEXT: %[[IDX1:.+]] = dsa.window_indices %[[SP]], %[[S1]] {window_size = 8 : i64}
// CHECK-NEXT: dsa.probe "L1.sa_topk_idxs" %[[IDX1]]
// CHECK-NEXT: %[[O1:.+]] = dsa.sparse_attn %{{.+}}, %[[ROWS1]], %[[IDX1]], %[[SINK]]
// CHECK-NEXT: dsa.probe "L1.sa_o" %[[O1]]
// CHECK-NEXT: dsa.apply_rope %[[O1]], %[[POS1]] {inverse
// CHECK-NEXT: dsa.grouped_output
// CHECK-NEXT: %[[OUT1:.+]] = dsa.linear
// CHECK-NEXT: dsa.probe "L1.attn_out" %[[OUT1]]
// CHECK-NEXT: return %[[OUT1]], %[[NRING0]], %[[NRING1]] : tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<8x32xbf16>
// CHECK-NOT: dsa.probe "L0.

// GENERIC-LABEL: sym_name = "two_layers"
// GENERIC:      "dsa.positions"({{.*}}) <{stride = 1 : i64}>
// GENERIC:      "dsa.act_quant_fp8"({{.*}}) <{block_size = 32 : i64}> : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
// GENERIC:      "dsa.positions"({{.*}}) <{stride = 1 : i64}>
// GENERIC:      "dsa.act_quant_fp8"({{.*}}) <{block_size = 32 : i64}> : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
func.func @two_layers(%x: tensor<?x64xbf16>, %start_pos: i64, %ring0: tensor<8x32xbf16>, %ring1: tensor<8x32xbf16>,
                      %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
                      %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>,
                      %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>)
    -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<8x32xbf16>) {
  %out0, %new_ring0 = dsa.attention %x, %start_pos, %ring0
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 0, norm_eps = 9.99999968E-21 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  %out1, %new_ring1 = dsa.attention %out0, %start_pos, %ring1
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 1, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 0, norm_eps = 9.99999968E-21 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return %out1, %new_ring0, %new_ring1 : tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<8x32xbf16>
}

// Another geometry, a static one-token step (a decode step), layer 7: the attributes follow the config (heads 2,
// head_dim 64, rope 4 at theta 5e4, one output group, window 4, eps 1e-6) and the static token count reaches every
// per-token type and the expand_shape.
// CHECK-LABEL: func.func @decode_step_layer7(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x64xbf16>, %[[SP:[^:]+]]: i64, %[[RING:[^:]+]]: tensor<4x64xbf16>,
// CHECK-SAME: %[[SINK:[^:]+]]: tensor<2xf32>, %[[WQA:[^:]+]]: tensor<8x64xbf16>, %[[QNORM:[^:]+]]: tensor<8xbf16>,
// CHECK-SAME: %[[WQB:[^:]+]]: tensor<128x8xbf16>, %[[WKV:[^:]+]]: tensor<64x64xbf16>, %[[KVNORM:[^:]+]]: tensor<64xbf16>,
// CHECK-SAME: %[[WOA:[^:]+]]: tensor<8x128xbf16>, %[[WOB:[^:]+]]: tensor<64x8xbf16>)
// CHECK:      %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[S:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<1x64xbf16>
// CHECK-NEXT: %[[POS:.+]] = dsa.positions %[[SP]], %[[S]] : (i64, index) -> tensor<1xi64>
// CHECK-NEXT: %[[QA:.+]] = dsa.linear %[[X]], %[[WQA]] : (tensor<1x64xbf16>, tensor<8x64xbf16>) -> tensor<1x8xbf16>
// CHECK-NEXT: %[[QR:.+]] = dsa.rms_norm %[[QA]], %[[QNORM]] {eps = 9.99999997E-7 : f32}
// CHECK-SAME:     : (tensor<1x8xbf16>, tensor<8xbf16>) -> tensor<1x8xbf16>
// CHECK-NEXT: %[[QB:.+]] = dsa.linear %[[QR]], %[[WQB]] : (tensor<1x8xbf16>, tensor<128x8xbf16>) -> tensor<1x128xbf16>
// CHECK-NEXT: %[[QH:.+]] = tensor.expand_shape %[[QB]] {{\[}}[0], [1, 2]] output_shape [1, 2, 64]
// CHECK-SAME:     : tensor<1x128xbf16> into tensor<1x2x64xbf16>
// CHECK-NEXT: %[[Q:.+]] = dsa.apply_rope %[[QH]], %[[POS]] {rope = #dsa.rope<rope_dim = 4, theta = 5.000000e+04 : f64>}
// CHECK-SAME:     : (tensor<1x2x64xbf16>, tensor<1xi64>) -> tensor<1x2x64xbf16>
// CHECK-NEXT: dsa.probe "L7.sa_q" %[[Q]] : tensor<1x2x64xbf16>
// CHECK-NEXT: %[[KVA:.+]] = dsa.linear %[[X]], %[[WKV]] : (tensor<1x64xbf16>, tensor<64x64xbf16>) -> tensor<1x64xbf16>
// CHECK-NEXT: %[[KVN:.+]] = dsa.rms_norm %[[KVA]], %[[KVNORM]] {eps = 9.99999997E-7 : f32}
// CHECK-NEXT: %[[KVR:.+]] = dsa.apply_rope %[[KVN]], %[[POS]] {rope = #dsa.rope<rope_dim = 4, theta = 5.000000e+04 : f64>}
// CHECK-NEXT: %[[KV:.+]] = dsa.act_quant_fp8 %[[KVR]] : (tensor<1x64xbf16>) -> tensor<1x64xbf16>
// CHECK-NEXT: %[[NRING:.+]] = dsa.ring_update %[[RING]], %[[KV]], %[[SP]]
// CHECK-SAME:     : (tensor<4x64xbf16>, tensor<1x64xbf16>, i64) -> tensor<4x64xbf16>
// CHECK-NEXT: %[[ROWS:.+]] = dsa.window_kv %[[KV]], %[[RING]], %[[SP]]
// CHECK-SAME:     : (tensor<1x64xbf16>, tensor<4x64xbf16>, i64) -> tensor<?x64xbf16>
// CHECK-NEXT: dsa.probe "L7.sa_kv" %[[ROWS]] : tensor<?x64xbf16>
// CHECK-NEXT: %[[IDX:.+]] = dsa.window_indices %[[SP]], %[[S]] {window_size = 4 : i64} : (i64, index) -> tensor<1x?xi32>
// CHECK-NEXT: dsa.probe "L7.sa_topk_idxs" %[[IDX]] : tensor<1x?xi32>
// CHECK-NEXT: %[[O:.+]] = dsa.sparse_attn %[[Q]], %[[ROWS]], %[[IDX]], %[[SINK]] {scale = 1.250000e-01 : f32}
// CHECK-SAME:     : (tensor<1x2x64xbf16>, tensor<?x64xbf16>, tensor<1x?xi32>, tensor<2xf32>) -> tensor<1x2x64xbf16>
// CHECK-NEXT: dsa.probe "L7.sa_o" %[[O]] : tensor<1x2x64xbf16>
// CHECK-NEXT: %[[OR:.+]] = dsa.apply_rope %[[O]], %[[POS]] {inverse, rope = #dsa.rope<rope_dim = 4, theta = 5.000000e+04 : f64>}
// CHECK-NEXT: %[[OG:.+]] = dsa.grouped_output %[[OR]], %[[WOA]] {groups = 1 : i64}
// CHECK-SAME:     : (tensor<1x2x64xbf16>, tensor<8x128xbf16>) -> tensor<1x8xbf16>
// CHECK-NEXT: %[[OUT:.+]] = dsa.linear %[[OG]], %[[WOB]] : (tensor<1x8xbf16>, tensor<64x8xbf16>) -> tensor<1x64xbf16>
// CHECK-NEXT: dsa.probe "L7.attn_out" %[[OUT]] : tensor<1x64xbf16>
// CHECK-NEXT: return %[[OUT]], %[[NRING]] : tensor<1x64xbf16>, tensor<4x64xbf16>
func.func @decode_step_layer7(%x: tensor<1x64xbf16>, %start_pos: i64, %ring: tensor<4x64xbf16>,
                              %sink: tensor<2xf32>, %wq_a: tensor<8x64xbf16>, %q_norm: tensor<8xbf16>,
                              %wq_b: tensor<128x8xbf16>, %wkv: tensor<64x64xbf16>, %kv_norm: tensor<64xbf16>,
                              %wo_a: tensor<8x128xbf16>, %wo_b: tensor<64x8xbf16>)
    -> (tensor<1x64xbf16>, tensor<4x64xbf16>) {
  %out, %new_ring = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 7, dim = 64, n_heads = 2, head_dim = 64, rope_head_dim = 4,
                                 q_lora_rank = 8, o_groups = 1, o_lora_rank = 8, window_size = 4,
                                 compress_ratio = 0, norm_eps = 9.99999997E-7 : f32,
                                 rope = #dsa.rope<rope_dim = 4, theta = 5.000000e+04>>}
      : (tensor<1x64xbf16>, i64, tensor<4x64xbf16>, tensor<2xf32>, tensor<8x64xbf16>, tensor<8xbf16>,
         tensor<128x8xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<8x128xbf16>, tensor<64x8xbf16>)
      -> (tensor<1x64xbf16>, tensor<4x64xbf16>)
  return %out, %new_ring : tensor<1x64xbf16>, tensor<4x64xbf16>
}
