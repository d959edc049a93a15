// Round trip of every dsa op and attribute: custom form -> custom form, and custom -> generic -> custom.
// RUN: dsa-opt %s | dsa-opt | FileCheck %s
// RUN: dsa-opt %s --mlir-print-op-generic | dsa-opt | FileCheck %s
// The generic form itself: properties, default-valued attributes materialised, unit attribute present.
// RUN: dsa-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @linear_bf16
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xbf16>, %[[W:.*]]: tensor<16x64xbf16>)
// CHECK: %[[R:.*]] = dsa.linear %[[X]], %[[W]] : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
// CHECK: return %[[R]]
// GENERIC-LABEL: sym_name = "linear_bf16"
// GENERIC: "dsa.linear"(%{{.*}}, %{{.*}}) : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
func.func @linear_bf16(%x: tensor<?x64xbf16>, %w: tensor<16x64xbf16>) -> tensor<?x16xbf16> {
  %0 = dsa.linear %x, %w : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
  return %0 : tensor<?x16xbf16>
}

// f32, rank 3, dynamic K in x and dynamic N in the result are accepted.
// CHECK-LABEL: func.func @linear_f32
// CHECK: dsa.linear %{{.*}}, %{{.*}} : (tensor<2x?x64xf32>, tensor<32x64xf32>) -> tensor<2x?x32xf32>
// CHECK: dsa.linear %{{.*}}, %{{.*}} : (tensor<2x5x?xf32>, tensor<32x64xf32>) -> tensor<2x5x?xf32>
func.func @linear_f32(%x: tensor<2x?x64xf32>, %y: tensor<2x5x?xf32>, %w: tensor<32x64xf32>)
    -> (tensor<2x?x32xf32>, tensor<2x5x?xf32>) {
  %0 = dsa.linear %x, %w : (tensor<2x?x64xf32>, tensor<32x64xf32>) -> tensor<2x?x32xf32>
  %1 = dsa.linear %y, %w : (tensor<2x5x?xf32>, tensor<32x64xf32>) -> tensor<2x5x?xf32>
  return %0, %1 : tensor<2x?x32xf32>, tensor<2x5x?xf32>
}

// CHECK-LABEL: func.func @rms_norm
// CHECK: dsa.rms_norm %{{.*}}, %{{.*}} {eps = 9.99999968E-21 : f32} : (tensor<?x16xbf16>, tensor<16xbf16>) -> tensor<?x16xbf16>
// CHECK: dsa.rms_norm %{{.*}}, %{{.*}} {eps = 0.000000e+00 : f32} : (tensor<3x32xf32>, tensor<32xbf16>) -> tensor<3x32xbf16>
// GENERIC-LABEL: sym_name = "rms_norm"
// GENERIC: "dsa.rms_norm"(%{{.*}}, %{{.*}}) <{eps = 9.99999968E-21 : f32}> : (tensor<?x16xbf16>, tensor<16xbf16>) -> tensor<?x16xbf16>
func.func @rms_norm(%x: tensor<?x16xbf16>, %w: tensor<16xbf16>, %xf: tensor<3x32xf32>, %w32: tensor<32xbf16>)
    -> (tensor<?x16xbf16>, tensor<3x32xbf16>) {
  %0 = dsa.rms_norm %x, %w {eps = 1.0e-20 : f32} : (tensor<?x16xbf16>, tensor<16xbf16>) -> tensor<?x16xbf16>
  %1 = dsa.rms_norm %xf, %w32 {eps = 0.0 : f32} : (tensor<3x32xf32>, tensor<32xbf16>) -> tensor<3x32xbf16>
  return %0, %1 : tensor<?x16xbf16>, tensor<3x32xbf16>
}

// The default stride (1) is elided by the custom printer and materialised in the generic form.
// CHECK-LABEL: func.func @positions
// CHECK-SAME: (%[[SP:.*]]: i64, %[[N:.*]]: index)
// CHECK: dsa.positions %[[SP]], %[[N]] : (i64, index) -> tensor<?xi64>
// CHECK: dsa.positions %[[SP]], %[[N]] : (i64, index) -> tensor<?xi64>
// CHECK: dsa.positions %[[SP]], %[[N]] {stride = 2 : i64} : (i64, index) -> tensor<?xi64>
// GENERIC-LABEL: sym_name = "positions"
// GENERIC: "dsa.positions"(%{{.*}}, %{{.*}}) <{stride = 1 : i64}> : (i64, index) -> tensor<?xi64>
// GENERIC: "dsa.positions"(%{{.*}}, %{{.*}}) <{stride = 1 : i64}> : (i64, index) -> tensor<?xi64>
// GENERIC: "dsa.positions"(%{{.*}}, %{{.*}}) <{stride = 2 : i64}> : (i64, index) -> tensor<?xi64>
func.func @positions(%sp: i64, %n: index) -> (tensor<?xi64>, tensor<?xi64>, tensor<?xi64>) {
  %0 = dsa.positions %sp, %n : (i64, index) -> tensor<?xi64>
  %1 = dsa.positions %sp, %n {stride = 1 : i64} : (i64, index) -> tensor<?xi64>
  %2 = dsa.positions %sp, %n {stride = 2 : i64} : (i64, index) -> tensor<?xi64>
  return %0, %1, %2 : tensor<?xi64>, tensor<?xi64>, tensor<?xi64>
}

// Nested attributes print without their #dsa prefix and with typed floats; the input may use either spelling.
// CHECK-LABEL: func.func @apply_rope
// CHECK-SAME: (%[[Q:.*]]: tensor<?x4x32xbf16>, %[[P:.*]]: tensor<?xi64>
// CHECK: %[[A:.*]] = dsa.apply_rope %[[Q]], %[[P]] {rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>} : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
// CHECK: dsa.apply_rope %[[A]], %[[P]] {inverse, rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>} : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
// CHECK: dsa.apply_rope %{{.*}}, %{{.*}} {rope = #dsa.rope<rope_dim = 32, theta = 4.000000e+04 : f64, yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64>>} : (tensor<5x32xbf16>, tensor<5xi64>) -> tensor<5x32xbf16>
// GENERIC-LABEL: sym_name = "apply_rope"
// GENERIC: "dsa.apply_rope"(%{{.*}}, %{{.*}}) <{rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>}>
// GENERIC: "dsa.apply_rope"(%{{.*}}, %{{.*}}) <{inverse, rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>}>
func.func @apply_rope(%q: tensor<?x4x32xbf16>, %pos: tensor<?xi64>, %k: tensor<5x32xbf16>, %kpos: tensor<5xi64>)
    -> (tensor<?x4x32xbf16>, tensor<5x32xbf16>) {
  %0 = dsa.apply_rope %q, %pos {rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>}
      : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
  %1 = dsa.apply_rope %0, %pos {inverse, rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>}
      : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
  %2 = dsa.apply_rope %k, %kpos {rope = #dsa.rope<rope_dim = 32, theta = 4.0e4,
      yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>}
      : (tensor<5x32xbf16>, tensor<5xi64>) -> tensor<5x32xbf16>
  return %1, %2 : tensor<?x4x32xbf16>, tensor<5x32xbf16>
}

// CHECK-LABEL: func.func @act_quant_fp8
// CHECK: %[[A:.*]] = dsa.act_quant_fp8 %{{.*}} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
// CHECK: %[[B:.*]] = dsa.act_quant_fp8 %[[A]] : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
// CHECK: dsa.act_quant_fp8 %[[B]] {block_size = 16 : i64} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
// CHECK: dsa.act_quant_fp8 %{{.*}} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
// GENERIC-LABEL: sym_name = "act_quant_fp8"
// GENERIC: "dsa.act_quant_fp8"(%{{.*}}) <{block_size = 32 : i64}> : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
func.func @act_quant_fp8(%kv: tensor<?x32xbf16>, %d: tensor<2x?xbf16>) -> (tensor<?x32xbf16>, tensor<2x?xbf16>) {
  %0 = dsa.act_quant_fp8 %kv : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
  %1 = dsa.act_quant_fp8 %0 {block_size = 32 : i64} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
  %2 = dsa.act_quant_fp8 %1 {block_size = 16 : i64} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
  // A dynamic last dimension is checked against block_size at run time.
  %3 = dsa.act_quant_fp8 %d {block_size = 32} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  return %2, %3 : tensor<?x32xbf16>, tensor<2x?xbf16>
}

// CHECK-LABEL: func.func @window
// CHECK-SAME: (%[[RING:.*]]: tensor<8x32xbf16>, %[[KV:.*]]: tensor<?x32xbf16>, %[[SP:.*]]: i64, %[[S:.*]]: index)
// CHECK: %[[R1:.*]] = dsa.ring_update %[[RING]], %[[KV]], %[[SP]] : (tensor<8x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<8x32xbf16>
// CHECK: %[[ROWS:.*]] = dsa.window_kv %[[KV]], %[[R1]], %[[SP]] : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
// CHECK: dsa.window_kv %[[KV]], %[[R1]], %[[SP]] : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<8x32xbf16>
// CHECK: %[[IDX:.*]] = dsa.window_indices %[[SP]], %[[S]] {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
// CHECK: dsa.window_indices %[[SP]], %[[S]] {window_size = 8 : i64} : (i64, index) -> tensor<1x8xi32>
// CHECK: return %[[R1]], %[[ROWS]], %[[IDX]]
// GENERIC-LABEL: sym_name = "window"
// GENERIC: "dsa.ring_update"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<8x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<8x32xbf16>
// GENERIC: "dsa.window_kv"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
// GENERIC: "dsa.window_indices"(%{{.*}}, %{{.*}}) <{window_size = 8 : i64}> : (i64, index) -> tensor<?x?xi32>
func.func @window(%ring: tensor<8x32xbf16>, %kv: tensor<?x32xbf16>, %sp: i64, %s: index)
    -> (tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<8x32xbf16>, tensor<1x8xi32>) {
  %ring1 = dsa.ring_update %ring, %kv, %sp : (tensor<8x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<8x32xbf16>
  %rows = dsa.window_kv %kv, %ring1, %sp : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
  // A decode step's rows (the whole ring) and indices may be typed statically.
  %drows = dsa.window_kv %kv, %ring1, %sp : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<8x32xbf16>
  %idx = dsa.window_indices %sp, %s {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
  %didx = dsa.window_indices %sp, %s {window_size = 8 : i64} : (i64, index) -> tensor<1x8xi32>
  return %ring1, %rows, %idx, %drows, %didx
      : tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<8x32xbf16>, tensor<1x8xi32>
}

// A static prefill chunk of 3 rows: the window is those 3 rows.
// A chunk of 3 tokens at start_pos > 0 reads W + s = 11 rows (the ring before the step, then the chunk).
// CHECK-LABEL: func.func @window_kv_static_chunk
// CHECK: dsa.window_kv %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<11x32xbf16>
func.func @window_kv_static_chunk(%kv: tensor<3x32xbf16>, %ring: tensor<8x32xbf16>, %sp: i64) -> tensor<11x32xbf16> {
  %0 = dsa.window_kv %kv, %ring, %sp : (tensor<3x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<11x32xbf16>
  return %0 : tensor<11x32xbf16>
}

// CHECK-LABEL: func.func @window_kv_static_prefill
// CHECK: dsa.window_kv %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<3x32xbf16>
func.func @window_kv_static_prefill(%kv: tensor<3x32xbf16>, %ring: tensor<8x32xbf16>, %sp: i64) -> tensor<3x32xbf16> {
  %0 = dsa.window_kv %kv, %ring, %sp : (tensor<3x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<3x32xbf16>
  return %0 : tensor<3x32xbf16>
}

// CHECK-LABEL: func.func @sparse_attn
// CHECK-SAME: (%[[Q:.*]]: tensor<?x4x32xbf16>, %[[KV:.*]]: tensor<?x32xbf16>, %[[I:.*]]: tensor<?x?xi32>, %[[SINK:.*]]: tensor<4xf32>)
// CHECK: dsa.sparse_attn %[[Q]], %[[KV]], %[[I]], %[[SINK]] {scale = 0.176776692 : f32} : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
// GENERIC-LABEL: sym_name = "sparse_attn"
// GENERIC: "dsa.sparse_attn"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{scale = 0.176776692 : f32}>
func.func @sparse_attn(%q: tensor<?x4x32xbf16>, %kv: tensor<?x32xbf16>, %idx: tensor<?x?xi32>, %sink: tensor<4xf32>)
    -> tensor<?x4x32xbf16> {
  %0 = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.176776692 : f32}
      : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
  return %0 : tensor<?x4x32xbf16>
}

// CHECK-LABEL: func.func @grouped_output
// CHECK: dsa.grouped_output %{{.*}}, %{{.*}} {groups = 2 : i64} : (tensor<?x4x32xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
// GENERIC-LABEL: sym_name = "grouped_output"
// GENERIC: "dsa.grouped_output"(%{{.*}}, %{{.*}}) <{groups = 2 : i64}> : (tensor<?x4x32xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
func.func @grouped_output(%o: tensor<?x4x32xbf16>, %wo_a: tensor<32x64xbf16>) -> tensor<?x32xbf16> {
  %0 = dsa.grouped_output %o, %wo_a {groups = 2 : i64} : (tensor<?x4x32xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %0 : tensor<?x32xbf16>
}

// CHECK-LABEL: func.func @probe
// CHECK: dsa.probe "L0.sa_q" %{{.*}} : tensor<?x4x32xbf16>
// CHECK: dsa.probe "L0.sa_topk_idxs" %{{.*}} : tensor<?x?xi32>
// GENERIC-LABEL: sym_name = "probe"
// GENERIC: "dsa.probe"(%{{.*}}) <{name = "L0.sa_q"}> : (tensor<?x4x32xbf16>) -> ()
func.func @probe(%q: tensor<?x4x32xbf16>, %idx: tensor<?x?xi32>) {
  dsa.probe "L0.sa_q" %q : tensor<?x4x32xbf16>
  dsa.probe "L0.sa_topk_idxs" %idx : tensor<?x?xi32>
  return
}

// The tiny golden's L0 geometry (attention-semantics.md section 1).
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x64xbf16>, %[[SP:[^:]*]]: i64, %[[RING:[^:]*]]: tensor<8x32xbf16>, %[[SINK:[^:]*]]: tensor<4xf32>, %[[WQA:[^:]*]]: tensor<16x64xbf16>, %[[QN:[^:]*]]: tensor<16xbf16>, %[[WQB:[^:]*]]: tensor<128x16xbf16>, %[[WKV:[^:]*]]: tensor<32x64xbf16>, %[[KVN:[^:]*]]: tensor<32xbf16>, %[[WOA:[^:]*]]: tensor<32x64xbf16>, %[[WOB:[^:]*]]: tensor<64x32xbf16>)
// CHECK: %[[OUT:[^ ,]+]], %[[NR:[^ ,]+]] = dsa.attention %[[X]], %[[SP]], %[[RING]] weights(%[[SINK]], %[[WQA]], %[[QN]], %[[WQB]], %[[WKV]], %[[KVN]], %[[WOA]], %[[WOB]])
// CHECK-SAME: {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 9.99999968E-21 : f32, rope = <rope_dim = 8, theta = 1.000000e+04 : f64>>}
// CHECK-SAME: : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
// CHECK: return %[[OUT]], %[[NR]]
// GENERIC-LABEL: sym_name = "attention"
// GENERIC: "dsa.attention"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{config = #dsa.attn_config<layer_id = 0, {{.*}}, compress_ratio = 0, {{.*}}>}>
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>,
                     %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
                     %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>,
                     %wo_b: tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>) {
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 0, norm_eps = 1.0e-20 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return %out, %ring1 : tensor<?x64xbf16>, tensor<8x32xbf16>
}

// The same layer as a batched decode step (start_pos one position per sequence; DSAOps.td).
// CHECK-LABEL: func.func @attention_batched
// CHECK: dsa.attention %{{.+}}, %{{.+}}, %{{.+}} weights(
// CHECK-SAME: : (tensor<?x1x64xbf16>, tensor<?xi64>, tensor<?x8x32xbf16>, tensor<4xf32>, {{.*}}) -> (tensor<?x1x64xbf16>, tensor<?x8x32xbf16>)
// GENERIC-LABEL: sym_name = "attention_batched"
// GENERIC: "dsa.attention"({{.*}}) <{config = {{.*}}}> {{.*}}: (tensor<?x1x64xbf16>, tensor<?xi64>, tensor<?x8x32xbf16>,
func.func @attention_batched(%x: tensor<?x1x64xbf16>, %sp: tensor<?xi64>, %ring: tensor<?x8x32xbf16>, %sink: tensor<4xf32>,
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

// A batched decode step of a compressed layer (the tiny golden's L5: ratio-1 index source using the candidates):
// the slots with a leading B, topk_idxs and candidates one token row per sequence.
// CHECK-LABEL: func.func @attention_batched_compressed
// CHECK: dsa.attention %{{.+}}, %{{.+}}, %{{.+}} weights({{.*}}) indexer({{.*}}) shared(
// CHECK-SAME: -> (tensor<?x1x64xbf16>, tensor<?x8x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x1x?xi32>, tensor<?x1x?xi1>)
// GENERIC-LABEL: sym_name = "attention_batched_compressed"
// GENERIC: "dsa.attention"({{.*}}) <{config = {{.*}}}> {{.*}}: (tensor<?x1x64xbf16>, tensor<?xi64>, tensor<?x8x32xbf16>,
func.func @attention_batched_compressed(%x: tensor<?x1x64xbf16>, %sp: tensor<?xi64>, %ring: tensor<?x8x32xbf16>,
    %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
    %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>,
    %iwq: tensor<64x16xbf16>, %wp: tensor<2x64xbf16>, %s_kv: tensor<?x?x32xbf16>, %s_ik: tensor<?x?x32xbf16>,
    %s_topk: tensor<?x1x?xi32>, %s_cand: tensor<?x1x?xi1>)
    -> (tensor<?x1x64xbf16>, tensor<?x8x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x1x?xi32>,
        tensor<?x1x?xi1>) {
  %out, %ring1, %kv1, %ik1, %topk1, %cand1 = dsa.attention %x, %sp, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) indexer(%iwq, %wp)
      shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 5, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 1, norm_eps = 1.0e-20 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32,
                                                  factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>,
                                 compress = #dsa.compress<is_kv_source = false, is_index_source = true,
                                     is_candidate_source = false, uses_candidates = true, index_n_heads = 2,
                                     index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3,
                                     candidate_block_size = 2, max_seq_len = 64,
                                     index_k_source = #dsa.index_k_source<published_slot>,
                                     tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x1x64xbf16>, tensor<?xi64>, tensor<?x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x1x?xi32>,
         tensor<?x1x?xi1>)
      -> (tensor<?x1x64xbf16>, tensor<?x8x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x1x?xi32>,
          tensor<?x1x?xi1>)
  return %out, %ring1, %kv1, %ik1, %topk1, %cand1 : tensor<?x1x64xbf16>, tensor<?x8x32xbf16>, tensor<?x?x32xbf16>,
      tensor<?x?x32xbf16>, tensor<?x1x?xi32>, tensor<?x1x?xi1>
}


//===----------------------------------------------------------------------===//
// Compressed attention (sections 5-9)
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @compress_pool
// CHECK-SAME: (%[[KV:.*]]: tensor<?x32xf32>, %[[SC:.*]]: tensor<?x32xf32>, %[[KVS:.*]]: tensor<2x32xf32>, %[[SCS:.*]]: tensor<2x32xf32>, %[[SP:.*]]: i64)
// CHECK: %[[P:[^ ,]+]], %[[KVS1:[^ ,]+]], %[[SCS1:[^ ,]+]] = dsa.compress_pool %[[KV]], %[[SC]], %[[KVS]], %[[SCS]], %[[SP]] {ratio = 2 : i64} : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, i64) -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>)
// CHECK: return %[[P]], %[[KVS1]], %[[SCS1]]
// GENERIC-LABEL: sym_name = "compress_pool"
// GENERIC: "dsa.compress_pool"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{ratio = 2 : i64}> : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, i64) -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>)
func.func @compress_pool(%kv: tensor<?x32xf32>, %score: tensor<?x32xf32>, %kvs: tensor<2x32xf32>, %scs: tensor<2x32xf32>,
                         %sp: i64) -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>) {
  %pooled, %kvs1, %scs1 = dsa.compress_pool %kv, %score, %kvs, %scs, %sp {ratio = 2 : i64}
      : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, i64)
      -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>)
  return %pooled, %kvs1, %scs1 : tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>
}

// The default block sizes (32 for e8m0, 16 for e4m3) are elided; an f32 input gives a bf16 result.
// CHECK-LABEL: func.func @fp4_quant
// CHECK: dsa.fp4_quant_e8m0 %{{.*}} : (tensor<?x2x32xbf16>) -> tensor<?x2x32xbf16>
// CHECK: dsa.fp4_quant_e8m0 %{{.*}} : (tensor<3x64xf32>) -> tensor<3x64xbf16>
// CHECK: dsa.fp4_quant_e8m0 %{{.*}} {block_size = 16 : i64} : (tensor<3x64xf32>) -> tensor<3x64xbf16>
// CHECK: dsa.fp4_quant_e4m3 %{{.*}} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
// CHECK: dsa.fp4_quant_e4m3 %{{.*}} {block_size = 32 : i64} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
// GENERIC-LABEL: sym_name = "fp4_quant"
// GENERIC: "dsa.fp4_quant_e8m0"(%{{.*}}) <{block_size = 32 : i64}> : (tensor<?x2x32xbf16>) -> tensor<?x2x32xbf16>
// GENERIC: "dsa.fp4_quant_e8m0"(%{{.*}}) <{block_size = 32 : i64}> : (tensor<3x64xf32>) -> tensor<3x64xbf16>
// GENERIC: "dsa.fp4_quant_e8m0"(%{{.*}}) <{block_size = 16 : i64}>
// GENERIC: "dsa.fp4_quant_e4m3"(%{{.*}}) <{block_size = 16 : i64}> : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
// GENERIC: "dsa.fp4_quant_e4m3"(%{{.*}}) <{block_size = 32 : i64}>
func.func @fp4_quant(%iq: tensor<?x2x32xbf16>, %f: tensor<3x64xf32>, %lat: tensor<?x32xbf16>)
    -> (tensor<?x2x32xbf16>, tensor<3x64xbf16>, tensor<3x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>) {
  %0 = dsa.fp4_quant_e8m0 %iq : (tensor<?x2x32xbf16>) -> tensor<?x2x32xbf16>
  %1 = dsa.fp4_quant_e8m0 %f {block_size = 32 : i64} : (tensor<3x64xf32>) -> tensor<3x64xbf16>
  %2 = dsa.fp4_quant_e8m0 %f {block_size = 16 : i64} : (tensor<3x64xf32>) -> tensor<3x64xbf16>
  %3 = dsa.fp4_quant_e4m3 %lat : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
  %4 = dsa.fp4_quant_e4m3 %lat {block_size = 32 : i64} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
  return %0, %1, %2, %3, %4 : tensor<?x2x32xbf16>, tensor<3x64xbf16>, tensor<3x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>
}

// CHECK-LABEL: func.func @cache_write
// CHECK-SAME: (%[[C:.*]]: tensor<32x32xbf16>, %[[R:.*]]: tensor<?x32xbf16>, %[[SP:.*]]: i64)
// CHECK: dsa.cache_write %[[C]], %[[R]], %[[SP]] {ratio = 2 : i64} : (tensor<32x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<32x32xbf16>
// GENERIC-LABEL: sym_name = "cache_write"
// GENERIC: "dsa.cache_write"(%{{.*}}, %{{.*}}, %{{.*}}) <{ratio = 2 : i64}> : (tensor<32x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<32x32xbf16>
func.func @cache_write(%cache: tensor<32x32xbf16>, %rows: tensor<?x32xbf16>, %sp: i64) -> tensor<32x32xbf16> {
  %0 = dsa.cache_write %cache, %rows, %sp {ratio = 2 : i64} : (tensor<32x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<32x32xbf16>
  return %0 : tensor<32x32xbf16>
}

// The indexer chain of a ratio-1 candidate user (sections 6, 7): scores, visibility, candidates, top-k.
// CHECK-LABEL: func.func @indexer
// CHECK-SAME: (%[[IQ:.*]]: tensor<?x2x32xbf16>, %[[W:.*]]: tensor<?x2xbf16>, %[[K:.*]]: tensor<?x32xbf16>, %[[SP:.*]]: i64)
// CHECK: %[[SC:.*]] = dsa.indexer_scores %[[IQ]], %[[W]], %[[K]], %[[SP]] {ratio = 1 : i64, weight_scale = 1.250000e-01 : f32} : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x?xbf16>
// CHECK: %[[V:.*]] = dsa.compress_visibility %[[SC]], %[[SP]] {ratio = 1 : i64} : (tensor<?x?xbf16>, i64) -> tensor<?x?xbf16>
// CHECK: %[[M:.*]] = dsa.select_candidate_blocks %[[V]], %[[SP]] {block_size = 2 : i64, ratio = 1 : i64, tie_order = #dsa.tie_order<torch_cpu>, topk_blocks = 3 : i64} : (tensor<?x?xbf16>, i64) -> tensor<?x?xi1>
// CHECK: %[[A:.*]] = dsa.apply_candidates %[[V]], %[[M]] : (tensor<?x?xbf16>, tensor<?x?xi1>) -> tensor<?x?xbf16>
// CHECK: %[[T:.*]] = dsa.indexer_topk %[[A]], %[[SP]] {index_topk = 6 : i64, ratio = 1 : i64, tie_order = #dsa.tie_order<torch_cpu>, window_size = 8 : i64} : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
// CHECK: return %[[M]], %[[T]]
// GENERIC-LABEL: sym_name = "indexer"
// GENERIC: "dsa.indexer_scores"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{ratio = 1 : i64, weight_scale = 1.250000e-01 : f32}>
// GENERIC: "dsa.compress_visibility"(%{{.*}}, %{{.*}}) <{ratio = 1 : i64}>
// GENERIC: "dsa.select_candidate_blocks"(%{{.*}}, %{{.*}}) <{block_size = 2 : i64, ratio = 1 : i64, tie_order = #dsa.tie_order<torch_cpu>, topk_blocks = 3 : i64}>
// GENERIC: "dsa.apply_candidates"(%{{.*}}, %{{.*}}) : (tensor<?x?xbf16>, tensor<?x?xi1>) -> tensor<?x?xbf16>
// GENERIC: "dsa.indexer_topk"(%{{.*}}, %{{.*}}) <{index_topk = 6 : i64, ratio = 1 : i64, tie_order = #dsa.tie_order<torch_cpu>, window_size = 8 : i64}>
func.func @indexer(%iq: tensor<?x2x32xbf16>, %w: tensor<?x2xbf16>, %keys: tensor<?x32xbf16>, %sp: i64)
    -> (tensor<?x?xi1>, tensor<?x?xi32>) {
  %sc = dsa.indexer_scores %iq, %w, %keys, %sp {ratio = 1 : i64, weight_scale = 0.125 : f32}
      : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x?xbf16>
  %v = dsa.compress_visibility %sc, %sp {ratio = 1 : i64} : (tensor<?x?xbf16>, i64) -> tensor<?x?xbf16>
  %mask = dsa.select_candidate_blocks %v, %sp
      {ratio = 1 : i64, topk_blocks = 3 : i64, block_size = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<?x?xbf16>, i64) -> tensor<?x?xi1>
  %m = dsa.apply_candidates %v, %mask : (tensor<?x?xbf16>, tensor<?x?xi1>) -> tensor<?x?xbf16>
  %idx = dsa.indexer_topk %m, %sp
      {ratio = 1 : i64, index_topk = 6 : i64, window_size = 8 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
  return %mask, %idx : tensor<?x?xi1>, tensor<?x?xi32>
}

// entry_keys (the index_k quirk per token: a token closing no group scores against the slot as it entered).
// CHECK-LABEL: func.func @indexer_entry_keys
// CHECK-SAME: (%[[IQ:.*]]: tensor<?x2x32xbf16>, %[[W:.*]]: tensor<?x2xbf16>, %[[K:.*]]: tensor<64x32xbf16>, %[[SP:.*]]: i64, %[[E:.*]]: tensor<?x32xbf16>)
// CHECK: dsa.indexer_scores %[[IQ]], %[[W]], %[[K]], %[[SP]] entry_keys %[[E]] {ratio = 4 : i64, weight_scale = 1.250000e-01 : f32} : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<64x32xbf16>, i64, tensor<?x32xbf16>) -> tensor<?x?xbf16>
// GENERIC-LABEL: sym_name = "indexer_entry_keys"
// GENERIC: "dsa.indexer_scores"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{ratio = 4 : i64, weight_scale = 1.250000e-01 : f32}>
func.func @indexer_entry_keys(%iq: tensor<?x2x32xbf16>, %w: tensor<?x2xbf16>, %keys: tensor<64x32xbf16>, %sp: i64,
                              %entry: tensor<?x32xbf16>) -> tensor<?x?xbf16> {
  %sc = dsa.indexer_scores %iq, %w, %keys, %sp entry_keys %entry {ratio = 4 : i64, weight_scale = 0.125 : f32}
      : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<64x32xbf16>, i64, tensor<?x32xbf16>) -> tensor<?x?xbf16>
  return %sc : tensor<?x?xbf16>
}

// Static shapes: a decode step (s = 1) of a ratio-2 layer at start_pos 7 sees width 4; k = min(6, 4) = 4.
// CHECK-LABEL: func.func @indexer_static
// CHECK: dsa.indexer_scores %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {ratio = 2 : i64, weight_scale = 1.250000e-01 : f32} : (tensor<1x2x32xbf16>, tensor<1x2xbf16>, tensor<32x32xbf16>, i64) -> tensor<1x4xbf16>
// CHECK: dsa.select_candidate_blocks %{{.*}}, %{{.*}} {{{.*}}} : (tensor<1x4xbf16>, i64) -> tensor<1x4xi1>
// CHECK: dsa.apply_candidates %{{.*}}, %{{.*}} : (tensor<1x4xbf16>, tensor<1x4xi1>) -> tensor<1x4xbf16>
// CHECK: dsa.indexer_topk %{{.*}}, %{{.*}} {{{.*}}} : (tensor<1x4xbf16>, i64) -> tensor<1x4xi32>
// CHECK: dsa.indexer_topk %{{.*}}, %{{.*}} {{{.*}}} : (tensor<1x4xbf16>, i64) -> tensor<?x?xi32>
func.func @indexer_static(%iq: tensor<1x2x32xbf16>, %w: tensor<1x2xbf16>, %keys: tensor<32x32xbf16>, %sp: i64)
    -> (tensor<1x4xi32>, tensor<?x?xi32>) {
  %sc = dsa.indexer_scores %iq, %w, %keys, %sp {ratio = 2 : i64, weight_scale = 0.125 : f32}
      : (tensor<1x2x32xbf16>, tensor<1x2xbf16>, tensor<32x32xbf16>, i64) -> tensor<1x4xbf16>
  %mask = dsa.select_candidate_blocks %sc, %sp
      {ratio = 2 : i64, topk_blocks = 3 : i64, block_size = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<1x4xbf16>, i64) -> tensor<1x4xi1>
  %m = dsa.apply_candidates %sc, %mask : (tensor<1x4xbf16>, tensor<1x4xi1>) -> tensor<1x4xbf16>
  %idx = dsa.indexer_topk %m, %sp
      {ratio = 2 : i64, index_topk = 6 : i64, window_size = 8 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<1x4xbf16>, i64) -> tensor<1x4xi32>
  %didx = dsa.indexer_topk %m, %sp
      {ratio = 2 : i64, index_topk = 6 : i64, window_size = 8 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<1x4xbf16>, i64) -> tensor<?x?xi32>
  return %idx, %didx : tensor<1x4xi32>, tensor<?x?xi32>
}

// The compressed-attention attributes on their own (discardable attributes), both spellings of the nested enums.
// CHECK-LABEL: func.func private @compress_attrs()
// CHECK-SAME: attributes {cfg = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = true, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>,
// CHECK-SAME: fix = #dsa.index_k_source<own_cache>,
// CHECK-SAME: reader = #dsa.compress<is_kv_source = false, is_index_source = false, is_candidate_source = false, uses_candidates = false, index_n_heads = 0, index_head_dim = 0, index_topk = 0, candidate_topk_blocks = 0, candidate_block_size = 0, max_seq_len = 64, index_k_source = <own_cache>, tie_order = <torch_cpu>>,
// CHECK-SAME: ref = #dsa.index_k_source<published_slot>, tie = #dsa.tie_order<torch_cpu>}
func.func private @compress_attrs() attributes {
  cfg = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = true, uses_candidates = false,
                      index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3,
                      candidate_block_size = 2, max_seq_len = 64,
                      index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>,
  // A plain reader needs no indexer or candidate geometry.
  reader = #dsa.compress<is_kv_source = false, is_index_source = false, is_candidate_source = false,
                         uses_candidates = false, index_n_heads = 0, index_head_dim = 0, index_topk = 0,
                         candidate_topk_blocks = 0, candidate_block_size = 0, max_seq_len = 64,
                         index_k_source = <own_cache>, tie_order = <torch_cpu>>,
  tie = #dsa.tie_order<torch_cpu>,
  ref = #dsa.index_k_source<published_slot>,
  fix = #dsa.index_k_source<own_cache>
}

// The tiny golden's L2: a ratio-2 kv + index source (section 1). C = ceil(64 / 2) = 32 cache rows.
// CHECK-LABEL: func.func @attention_ratio2_kv_index_source
// CHECK: %[[OUT:[^ ,]+]], %[[NR:[^ ,]+]], %[[NS:[^ ,]+]]:4, %[[NSH:[^ ,]+]]:4 = dsa.attention %{{.*}}, %{{.*}}, %{{.*}} weights(%{{[^)]*}})
// CHECK-SAME: compressor(%[[WKVC:[^,]*]], %[[WGATE:[^,]*]], %[[NORMC:[^)]*]]) index_keys(%[[WK:[^,]*]], %[[KN:[^)]*]])
// CHECK-SAME: indexer(%[[WQBI:[^,]*]], %[[WP:[^)]*]]) state(%[[KVS:[^,]*]], %[[SCS:[^,]*]], %[[KC:[^,]*]], %[[IKC:[^)]*]])
// CHECK-SAME: shared(%[[SKV:[^,]*]], %[[SIK:[^,]*]], %[[STI:[^,]*]], %[[SCA:[^)]*]])
// CHECK-SAME: {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 9.99999968E-21 : f32, rope = <rope_dim = 8, theta = 4.000000e+04 : f64, yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64>>, compress = <is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>>}
// CHECK-SAME: : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
// CHECK-SAME: tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>,
// CHECK-SAME: tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
// CHECK-SAME: -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
// CHECK: return %[[OUT]], %[[NR]], %[[NS]]#0, %[[NS]]#1, %[[NS]]#2, %[[NS]]#3, %[[NSH]]#0, %[[NSH]]#1, %[[NSH]]#2, %[[NSH]]#3
// GENERIC-LABEL: sym_name = "attention_ratio2_kv_index_source"
// GENERIC: "dsa.attention"({{.*}}) <{config = #dsa.attn_config<layer_id = 2, {{.*}}>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 2, 2, 4, 4>, resultSegmentSizes = array<i32: 1, 1, 4, 4>}>
func.func @attention_ratio2_kv_index_source(
    %x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>,
    %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>,
    %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>,
    %wkv_c: tensor<32x64xf32>, %wgate_c: tensor<32x64xf32>, %norm_c: tensor<32xbf16>,
    %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %wq_b_idx: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>,
    %kvs: tensor<2x32xf32>, %scs: tensor<2x32xf32>, %kv_cache: tensor<32x32xbf16>, %ik_cache: tensor<32x32xbf16>,
    %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>)
    -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>,
        tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) {
  %out, %ring1, %kvs1, %scs1, %kvc1, %ikc1, %s_kv1, %s_ik1, %s_topk1, %s_cand1 =
      dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      compressor(%wkv_c, %wgate_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_idx, %wproj)
      state(%kvs, %scs, %kv_cache, %ik_cache) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 2, norm_eps = 1.0e-20 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 4.0e4,
                                                  yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0,
                                                                   beta_fast = 32.0, beta_slow = 1.0>>,
                                 compress = #dsa.compress<is_kv_source = true, is_index_source = true,
                                                          is_candidate_source = false, uses_candidates = false,
                                                          index_n_heads = 2, index_head_dim = 32, index_topk = 6,
                                                          candidate_topk_blocks = 3, candidate_block_size = 2,
                                                          max_seq_len = 64,
                                                          index_k_source = #dsa.index_k_source<published_slot>,
                                                          tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>,
         tensor<64x16xbf16>, tensor<2x64xbf16>,
         tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>,
         tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>,
          tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return %out, %ring1, %kvs1, %scs1, %kvc1, %ikc1, %s_kv1, %s_ik1, %s_topk1, %s_cand1
      : tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>,
        tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>
}

// The tiny golden's L3: a ratio-2 layer that is no source reads the four slots (static slot shapes are accepted).
// CHECK-LABEL: func.func @attention_ratio2_reader
// CHECK: %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}:4 = dsa.attention %{{.*}}, %{{.*}}, %{{.*}} weights(%{{[^)]*}}) shared(%{{[^)]*}})
// CHECK-SAME: {config = #dsa.attn_config<layer_id = 3, {{.*}}, compress_ratio = 2, {{.*}}, compress = <is_kv_source = false, is_index_source = false, is_candidate_source = false, uses_candidates = false, {{.*}}>>}
// CHECK-SAME: tensor<64x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<1x32xi1>)
// CHECK-SAME: -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<1x32xi1>)
// GENERIC-LABEL: sym_name = "attention_ratio2_reader"
// GENERIC: "dsa.attention"({{.*}}) <{config = #dsa.attn_config<layer_id = 3, {{.*}}>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 4>, resultSegmentSizes = array<i32: 1, 1, 0, 4>}>
func.func @attention_ratio2_reader(
    %x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>,
    %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>,
    %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>,
    %s_kv: tensor<32x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<1x32xi1>)
    -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>,
        tensor<1x32xi1>) {
  %out, %ring1, %s_kv1, %s_ik1, %s_topk1, %s_cand1 =
      dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 3, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 2, norm_eps = 1.0e-20 : f32,
                                 rope = <rope_dim = 8, theta = 4.0e4,
                                         yarn = <original_seq_len = 32, factor = 2.0, beta_fast = 32.0,
                                                 beta_slow = 1.0>>,
                                 compress = <is_kv_source = false, is_index_source = false,
                                             is_candidate_source = false, uses_candidates = false,
                                             index_n_heads = 2, index_head_dim = 32, index_topk = 6,
                                             candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64,
                                             index_k_source = <published_slot>, tie_order = <torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<1x32xi1>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>,
          tensor<1x32xi1>)
  return %out, %ring1, %s_kv1, %s_ik1, %s_topk1, %s_cand1
      : tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<1x32xi1>
}

// The tiny golden's L4: a ratio-1 kv + index + candidate source (bf16 compressor, no pooling state, C = 64), here with
// the named correction index_k_source = own_cache.
// CHECK-LABEL: func.func @attention_ratio1_candidate_source
// CHECK: %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}:2, %{{[^ ,]+}}:4 = dsa.attention %{{.*}}, %{{.*}}, %{{.*}} weights(%{{[^)]*}})
// CHECK-SAME: compressor(%{{[^,]*}}, %{{[^)]*}}) index_keys(%{{[^,]*}}, %{{[^)]*}}) indexer(%{{[^,]*}}, %{{[^)]*}})
// CHECK-SAME: state(%{{[^,]*}}, %{{[^)]*}}) shared(%{{[^)]*}})
// CHECK-SAME: compress_ratio = 1, {{.*}}, compress = <is_kv_source = true, is_index_source = true, is_candidate_source = true, uses_candidates = false, {{.*}}, index_k_source = <own_cache>, tie_order = <torch_cpu>>>}
// CHECK-SAME: tensor<64x32xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>,
// CHECK-SAME: -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
// GENERIC-LABEL: sym_name = "attention_ratio1_candidate_source"
// GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4>, resultSegmentSizes = array<i32: 1, 1, 2, 4>
func.func @attention_ratio1_candidate_source(
    %x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>,
    %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>,
    %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>,
    %wkv_c: tensor<32x64xbf16>, %norm_c: tensor<32xbf16>,
    %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %wq_b_idx: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>,
    %kv_cache: tensor<64x32xbf16>, %ik_cache: tensor<64x32xbf16>,
    %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>)
    -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>,
        tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) {
  %out, %ring1, %kvc1, %ikc1, %s_kv1, %s_ik1, %s_topk1, %s_cand1 =
      dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      compressor(%wkv_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_idx, %wproj)
      state(%kv_cache, %ik_cache) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 4, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 1, norm_eps = 1.0e-20 : f32,
                                 rope = <rope_dim = 8, theta = 4.0e4,
                                         yarn = <original_seq_len = 32, factor = 2.0, beta_fast = 32.0,
                                                 beta_slow = 1.0>>,
                                 compress = <is_kv_source = true, is_index_source = true,
                                             is_candidate_source = true, uses_candidates = false,
                                             index_n_heads = 2, index_head_dim = 32, index_topk = 6,
                                             candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64,
                                             index_k_source = <own_cache>, tie_order = <torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>,
         tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>,
         tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>,
          tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return %out, %ring1, %kvc1, %ikc1, %s_kv1, %s_ik1, %s_topk1, %s_cand1
      : tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>,
        tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>
}

// The tiny golden's L5: a ratio-1 index source after the candidate source (uses_candidates); no compressor, no state.
// CHECK-LABEL: func.func @attention_ratio1_candidate_user
// CHECK: %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}:4 = dsa.attention %{{.*}}, %{{.*}}, %{{.*}} weights(%{{[^)]*}}) indexer(%{{[^,]*}}, %{{[^)]*}}) shared(%{{[^)]*}})
// CHECK-SAME: compress = <is_kv_source = false, is_index_source = true, is_candidate_source = false, uses_candidates = true, {{.*}}>>}
// CHECK-SAME: -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
// GENERIC-LABEL: sym_name = "attention_ratio1_candidate_user"
// GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 2, 0, 4>, resultSegmentSizes = array<i32: 1, 1, 0, 4>
func.func @attention_ratio1_candidate_user(
    %x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>,
    %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>,
    %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wq_b_idx: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>,
    %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>)
    -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>,
        tensor<?x?xi1>) {
  %out, %ring1, %s_kv1, %s_ik1, %s_topk1, %s_cand1 =
      dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      indexer(%wq_b_idx, %wproj) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 5, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 1, norm_eps = 1.0e-20 : f32,
                                 rope = <rope_dim = 8, theta = 4.0e4,
                                         yarn = <original_seq_len = 32, factor = 2.0, beta_fast = 32.0,
                                                 beta_slow = 1.0>>,
                                 compress = <is_kv_source = false, is_index_source = true,
                                             is_candidate_source = false, uses_candidates = true,
                                             index_n_heads = 2, index_head_dim = 32, index_topk = 6,
                                             candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64,
                                             index_k_source = <published_slot>, tie_order = <torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<64x16xbf16>, tensor<2x64xbf16>,
         tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>,
          tensor<?x?xi1>)
  return %out, %ring1, %s_kv1, %s_ik1, %s_topk1, %s_cand1
      : tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>
}
