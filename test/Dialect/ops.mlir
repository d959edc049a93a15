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

// A ratio > 0 layer's configuration (an attribute only: dsa.attention does not accept it yet) with YaRN, as a
// discardable attribute so that it round-trips on its own.
// CHECK-LABEL: func.func private @attn_config_ratio2()
// CHECK-SAME: attributes {cfg = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 9.99999968E-21 : f32, rope = <rope_dim = 8, theta = 4.000000e+04 : f64, yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64>>>,
// CHECK-SAME: rope = #dsa.rope<rope_dim = 64, theta = 1.600000e+05 : f64, yarn = <original_seq_len = 65536, factor = 1.600000e+01 : f64, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64>>,
// CHECK-SAME: yarn = #dsa.yarn<original_seq_len = 65536, factor = 1.600000e+01 : f64, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64>}
func.func private @attn_config_ratio2() attributes {
  cfg = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16,
                         o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2,
                         norm_eps = 1.0e-20 : f32,
                         rope = #dsa.rope<rope_dim = 8, theta = 4.0e4,
                                          yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0,
                                                           beta_slow = 1.0>>>,
  rope = #dsa.rope<rope_dim = 64, theta = 1.6e5,
                   yarn = #dsa.yarn<original_seq_len = 65536, factor = 16.0, beta_fast = 32.0, beta_slow = 1.0>>,
  yarn = #dsa.yarn<original_seq_len = 65536, factor = 16.0, beta_fast = 32.0, beta_slow = 1.0>
}
