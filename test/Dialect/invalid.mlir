// Every diagnostic of the dsa verifiers (compiler/lib/Dialect/DSA/IR/DSAOps.cpp, DSAAttrs.cpp), one case per message.
// RUN: dsa-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// Type constraints (ODS): dsa tensors are ranked, with the element types of their role.
//===----------------------------------------------------------------------===//

func.func @unranked(%x: tensor<*xbf16>, %w: tensor<16x64xbf16>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of bfloat16 type or 32-bit float values, but got 'tensor<*xbf16>'}}
  %0 = dsa.linear %x, %w : (tensor<*xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @f16_input(%x: tensor<?x16xf16>, %w: tensor<16xbf16>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of bfloat16 type or 32-bit float values, but got 'tensor<?x16xf16>'}}
  %0 = dsa.rms_norm %x, %w {eps = 1.0e-20 : f32} : (tensor<?x16xf16>, tensor<16xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @i64_indices(%sp: i64, %s: index) {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit signless integer values, but got 'tensor<?x?xi64>'}}
  %0 = dsa.window_indices %sp, %s {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi64>
  return
}

//===----------------------------------------------------------------------===//
// dsa.linear
//===----------------------------------------------------------------------===//

// -----

func.func @linear_x_rank(%x: tensor<64xbf16>, %w: tensor<16x64xbf16>) {
  // expected-error @+1 {{'dsa.linear' op operand 'x' must have rank >= 2 ([..., K]), got 'tensor<64xbf16>'}}
  %0 = dsa.linear %x, %w : (tensor<64xbf16>, tensor<16x64xbf16>) -> tensor<16xbf16>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<?x64xbf16>, %w: tensor<2x16x64xbf16>) {
  // expected-error @+1 {{operand 'weight' must have rank 2 ([N, K]), got 'tensor<2x16x64xbf16>'}}
  %0 = dsa.linear %x, %w : (tensor<?x64xbf16>, tensor<2x16x64xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @linear_mixed_types(%x: tensor<?x64xbf16>, %w: tensor<16x64xf32>) {
  // expected-error @+1 {{element types must be all bf16 or all f32, got 'x' 'bf16', 'weight' 'f32', result 'bf16'}}
  %0 = dsa.linear %x, %w : (tensor<?x64xbf16>, tensor<16x64xf32>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @linear_f32_result(%x: tensor<?x64xbf16>, %w: tensor<16x64xbf16>) {
  // expected-error @+1 {{element types must be all bf16 or all f32, got 'x' 'bf16', 'weight' 'bf16', result 'f32'}}
  %0 = dsa.linear %x, %w : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xf32>
  return
}

// -----

func.func @linear_k(%x: tensor<?x64xbf16>, %w: tensor<16x32xbf16>) {
  // expected-error @+1 {{operand 'weight' has K = 32 (dimension 1) but 'x' has last dimension 64}}
  %0 = dsa.linear %x, %w : (tensor<?x64xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @linear_result_n(%x: tensor<?x64xbf16>, %w: tensor<16x64xbf16>) {
  // expected-error @+1 {{result must have shape [?, 16] ('x' leading dimensions followed by 'weight' N), got 'tensor<?x8xbf16>'}}
  %0 = dsa.linear %x, %w : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

func.func @linear_result_leading(%x: tensor<2x3x64xf32>, %w: tensor<16x64xf32>) {
  // expected-error @+1 {{result must have shape [2, 3, 16] ('x' leading dimensions followed by 'weight' N), got 'tensor<3x2x16xf32>'}}
  %0 = dsa.linear %x, %w : (tensor<2x3x64xf32>, tensor<16x64xf32>) -> tensor<3x2x16xf32>
  return
}

// -----

func.func @linear_result_rank(%x: tensor<2x3x64xf32>, %w: tensor<16x64xf32>) {
  // expected-error @+1 {{result must have shape [2, 3, 16] ('x' leading dimensions followed by 'weight' N), got 'tensor<6x16xf32>'}}
  %0 = dsa.linear %x, %w : (tensor<2x3x64xf32>, tensor<16x64xf32>) -> tensor<6x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// dsa.rms_norm
//===----------------------------------------------------------------------===//

// -----

func.func @rms_norm_x_rank(%x: tensor<bf16>, %w: tensor<16xbf16>) {
  // expected-error @+1 {{'dsa.rms_norm' op operand 'x' must have rank >= 1, got 'tensor<bf16>'}}
  %0 = dsa.rms_norm %x, %w {eps = 1.0e-20 : f32} : (tensor<bf16>, tensor<16xbf16>) -> tensor<bf16>
  return
}

// -----

func.func @rms_norm_weight_rank(%x: tensor<?x16xbf16>, %w: tensor<1x16xbf16>) {
  // expected-error @+1 {{operand 'weight' must have rank 1 ([row width]), got 'tensor<1x16xbf16>'}}
  %0 = dsa.rms_norm %x, %w {eps = 1.0e-20 : f32} : (tensor<?x16xbf16>, tensor<1x16xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @rms_norm_weight_length(%x: tensor<?x16xbf16>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{operand 'weight' has length 32 but 'x' has last dimension 16}}
  %0 = dsa.rms_norm %x, %w {eps = 1.0e-20 : f32} : (tensor<?x16xbf16>, tensor<32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @rms_norm_result_shape(%x: tensor<3x16xf32>, %w: tensor<16xbf16>) {
  // expected-error @+1 {{result shape [4, 16] must match the shape of 'x' [3, 16]}}
  %0 = dsa.rms_norm %x, %w {eps = 1.0e-20 : f32} : (tensor<3x16xf32>, tensor<16xbf16>) -> tensor<4x16xbf16>
  return
}

// -----

func.func @rms_norm_eps_negative(%x: tensor<?x16xbf16>, %w: tensor<16xbf16>) {
  // expected-error @+1 {{attribute 'eps' must be finite and >= 0, got -1.500000e+00}}
  %0 = dsa.rms_norm %x, %w {eps = -1.5 : f32} : (tensor<?x16xbf16>, tensor<16xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @rms_norm_eps_nan(%x: tensor<?x16xbf16>, %w: tensor<16xbf16>) {
  // expected-error @+1 {{attribute 'eps' must be finite and >= 0, got nan}}
  %0 = dsa.rms_norm %x, %w {eps = 0x7FC00000 : f32} : (tensor<?x16xbf16>, tensor<16xbf16>) -> tensor<?x16xbf16>
  return
}

//===----------------------------------------------------------------------===//
// dsa.positions
//===----------------------------------------------------------------------===//

// -----

func.func @positions_stride(%sp: i64, %n: index) {
  // expected-error @+1 {{'dsa.positions' op attribute 'stride' must be > 0, got 0}}
  %0 = dsa.positions %sp, %n {stride = 0 : i64} : (i64, index) -> tensor<?xi64>
  return
}

// -----

func.func @positions_rank(%sp: i64, %n: index) {
  // expected-error @+1 {{'dsa.positions' op result must have rank 1 ([count]), got 'tensor<?x1xi64>'}}
  %0 = dsa.positions %sp, %n : (i64, index) -> tensor<?x1xi64>
  return
}

//===----------------------------------------------------------------------===//
// dsa.apply_rope
//===----------------------------------------------------------------------===//

// -----

func.func @apply_rope_x_rank(%x: tensor<32xbf16>, %p: tensor<?xi64>) {
  // expected-error @+1 {{'dsa.apply_rope' op operand 'x' must have rank >= 2 ([s, ..., row]), got 'tensor<32xbf16>'}}
  %0 = dsa.apply_rope %x, %p {rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>} : (tensor<32xbf16>, tensor<?xi64>) -> tensor<32xbf16>
  return
}

// -----

func.func @apply_rope_too_wide(%x: tensor<?x4x32xbf16>, %p: tensor<?xi64>) {
  // expected-error @+1 {{rope.rope_dim (64) exceeds the row width of 'x' (32)}}
  %0 = dsa.apply_rope %x, %p {rope = #dsa.rope<rope_dim = 64, theta = 1.0e4>} : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @apply_rope_positions_rank(%x: tensor<?x4x32xbf16>, %p: tensor<?x1xi64>) {
  // expected-error @+1 {{operand 'positions' must have rank 1 ([s]), got 'tensor<?x1xi64>'}}
  %0 = dsa.apply_rope %x, %p {rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>} : (tensor<?x4x32xbf16>, tensor<?x1xi64>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @apply_rope_positions_length(%x: tensor<5x4x32xbf16>, %p: tensor<3xi64>) {
  // expected-error @+1 {{operand 'positions' has length 3 but 'x' has leading dimension 5}}
  %0 = dsa.apply_rope %x, %p {rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>} : (tensor<5x4x32xbf16>, tensor<3xi64>) -> tensor<5x4x32xbf16>
  return
}

// -----

func.func @apply_rope_result(%x: tensor<?x4x32xbf16>, %p: tensor<?xi64>) {
  // expected-error @+1 {{result type 'tensor<5x4x32xbf16>' must equal the type of 'x' ('tensor<?x4x32xbf16>')}}
  %0 = dsa.apply_rope %x, %p {rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>} : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<5x4x32xbf16>
  return
}

//===----------------------------------------------------------------------===//
// dsa.act_quant_fp8
//===----------------------------------------------------------------------===//

// -----

func.func @act_quant_block_zero(%x: tensor<?x32xbf16>) {
  // expected-error @+1 {{'dsa.act_quant_fp8' op attribute 'block_size' must be > 0, got 0}}
  %0 = dsa.act_quant_fp8 %x {block_size = 0 : i64} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @act_quant_x_rank(%x: tensor<bf16>) {
  // expected-error @+1 {{operand 'x' must have rank >= 1, got 'tensor<bf16>'}}
  %0 = dsa.act_quant_fp8 %x : (tensor<bf16>) -> tensor<bf16>
  return
}

// -----

func.func @act_quant_divide(%x: tensor<?x48xbf16>) {
  // expected-error @+1 {{block_size (32) must divide the last dimension of 'x' (48)}}
  %0 = dsa.act_quant_fp8 %x : (tensor<?x48xbf16>) -> tensor<?x48xbf16>
  return
}

// -----

func.func @act_quant_result(%x: tensor<?x32xbf16>) {
  // expected-error @+1 {{result type 'tensor<?x64xbf16>' must equal the type of 'x' ('tensor<?x32xbf16>')}}
  %0 = dsa.act_quant_fp8 %x : (tensor<?x32xbf16>) -> tensor<?x64xbf16>
  return
}

//===----------------------------------------------------------------------===//
// dsa.ring_update
//===----------------------------------------------------------------------===//

// -----

func.func @ring_update_dynamic_ring(%ring: tensor<?x32xbf16>, %kv: tensor<?x32xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.ring_update' op operand 'ring' must be a static rank-2 tensor [W, hd] with W > 0 and hd > 0, got 'tensor<?x32xbf16>'}}
  %0 = dsa.ring_update %ring, %kv, %sp : (tensor<?x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x32xbf16>
  return
}

// -----

func.func @ring_update_empty_ring(%ring: tensor<0x32xbf16>, %kv: tensor<?x32xbf16>, %sp: i64) {
  // expected-error @+1 {{operand 'ring' must be a static rank-2 tensor [W, hd] with W > 0 and hd > 0, got 'tensor<0x32xbf16>'}}
  %0 = dsa.ring_update %ring, %kv, %sp : (tensor<0x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<0x32xbf16>
  return
}

// -----

func.func @ring_update_kv_rank(%ring: tensor<8x32xbf16>, %kv: tensor<?x1x32xbf16>, %sp: i64) {
  // expected-error @+1 {{operand 'kv' must have rank 2 ([s, hd]), got 'tensor<?x1x32xbf16>'}}
  %0 = dsa.ring_update %ring, %kv, %sp : (tensor<8x32xbf16>, tensor<?x1x32xbf16>, i64) -> tensor<8x32xbf16>
  return
}

// -----

func.func @ring_update_kv_width(%ring: tensor<8x32xbf16>, %kv: tensor<?x16xbf16>, %sp: i64) {
  // expected-error @+1 {{operand 'kv' has row width 16 but 'ring' has row width 32}}
  %0 = dsa.ring_update %ring, %kv, %sp : (tensor<8x32xbf16>, tensor<?x16xbf16>, i64) -> tensor<8x32xbf16>
  return
}

// -----

func.func @ring_update_result(%ring: tensor<8x32xbf16>, %kv: tensor<?x32xbf16>, %sp: i64) {
  // expected-error @+1 {{result type 'tensor<?x32xbf16>' must equal the type of 'ring' ('tensor<8x32xbf16>')}}
  %0 = dsa.ring_update %ring, %kv, %sp : (tensor<8x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x32xbf16>
  return
}

//===----------------------------------------------------------------------===//
// dsa.window_kv
//===----------------------------------------------------------------------===//

// -----

func.func @window_kv_ring(%kv: tensor<?x32xbf16>, %ring: tensor<8xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.window_kv' op operand 'ring' must be a static rank-2 tensor [W, hd] with W > 0 and hd > 0, got 'tensor<8xbf16>'}}
  %0 = dsa.window_kv %kv, %ring, %sp : (tensor<?x32xbf16>, tensor<8xbf16>, i64) -> tensor<?x32xbf16>
  return
}

// -----

func.func @window_kv_kv_rank(%kv: tensor<32xbf16>, %ring: tensor<8x32xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.window_kv' op operand 'kv' must have rank 2 ([s, hd]), got 'tensor<32xbf16>'}}
  %0 = dsa.window_kv %kv, %ring, %sp : (tensor<32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
  return
}

// -----

func.func @window_kv_kv_width(%kv: tensor<?x64xbf16>, %ring: tensor<8x32xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.window_kv' op operand 'kv' has row width 64 but 'ring' has row width 32}}
  %0 = dsa.window_kv %kv, %ring, %sp : (tensor<?x64xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
  return
}

// -----

func.func @window_kv_result_width(%kv: tensor<?x32xbf16>, %ring: tensor<8x32xbf16>, %sp: i64) {
  // expected-error @+1 {{result must have rank 2 with row width hd = 32, got 'tensor<?x16xbf16>'}}
  %0 = dsa.window_kv %kv, %ring, %sp : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x16xbf16>
  return
}

// -----

func.func @window_kv_result_rank(%kv: tensor<?x32xbf16>, %ring: tensor<8x32xbf16>, %sp: i64) {
  // expected-error @+1 {{result must have rank 2 with row width hd = 32, got 'tensor<?xbf16>'}}
  %0 = dsa.window_kv %kv, %ring, %sp : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?xbf16>
  return
}

// -----

func.func @window_kv_result_rows(%kv: tensor<3x32xbf16>, %ring: tensor<8x32xbf16>, %sp: i64) {
  // expected-error @+1 {{result has 5 rows but the window has s = 3 rows (prefill, 'kv'), W = 8 rows (decode, 'ring') or W + s rows (a chunk at start_pos > 0)}}
  %0 = dsa.window_kv %kv, %ring, %sp : (tensor<3x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<5x32xbf16>
  return
}

//===----------------------------------------------------------------------===//
// dsa.window_indices
//===----------------------------------------------------------------------===//

// -----

func.func @window_indices_size(%sp: i64, %s: index) {
  // expected-error @+1 {{'dsa.window_indices' op attribute 'window_size' must be > 0, got -8}}
  %0 = dsa.window_indices %sp, %s {window_size = -8 : i64} : (i64, index) -> tensor<?x?xi32>
  return
}

// -----

func.func @window_indices_rank(%sp: i64, %s: index) {
  // expected-error @+1 {{result must have rank 2 ([queries, width]), got 'tensor<?xi32>'}}
  %0 = dsa.window_indices %sp, %s {window_size = 8 : i64} : (i64, index) -> tensor<?xi32>
  return
}

// -----

func.func @window_indices_width(%sp: i64, %s: index) {
  // expected-error @+1 {{result width 4 must be window_size (8) or dynamic}}
  %0 = dsa.window_indices %sp, %s {window_size = 8 : i64} : (i64, index) -> tensor<?x4xi32>
  return
}

//===----------------------------------------------------------------------===//
// dsa.sparse_attn
//===----------------------------------------------------------------------===//

// -----

func.func @sparse_attn_q_rank(%q: tensor<?x128xbf16>, %kv: tensor<?x32xbf16>, %i: tensor<?x?xi32>, %sink: tensor<4xf32>) {
  // expected-error @+1 {{'dsa.sparse_attn' op operand 'q' must have rank 3 ([s, H, hd]), got 'tensor<?x128xbf16>'}}
  %0 = dsa.sparse_attn %q, %kv, %i, %sink {scale = 0.176776692 : f32} : (tensor<?x128xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x128xbf16>
  return
}

// -----

func.func @sparse_attn_kv_rank(%q: tensor<?x4x32xbf16>, %kv: tensor<1x?x32xbf16>, %i: tensor<?x?xi32>, %sink: tensor<4xf32>) {
  // expected-error @+1 {{operand 'kv' must have rank 2 ([n, hd]), got 'tensor<1x?x32xbf16>'}}
  %0 = dsa.sparse_attn %q, %kv, %i, %sink {scale = 0.176776692 : f32} : (tensor<?x4x32xbf16>, tensor<1x?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @sparse_attn_kv_width(%q: tensor<?x4x32xbf16>, %kv: tensor<?x64xbf16>, %i: tensor<?x?xi32>, %sink: tensor<4xf32>) {
  // expected-error @+1 {{operand 'kv' has row width 64 but 'q' has head_dim 32}}
  %0 = dsa.sparse_attn %q, %kv, %i, %sink {scale = 0.176776692 : f32} : (tensor<?x4x32xbf16>, tensor<?x64xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @sparse_attn_indices_rank(%q: tensor<?x4x32xbf16>, %kv: tensor<?x32xbf16>, %i: tensor<?xi32>, %sink: tensor<4xf32>) {
  // expected-error @+1 {{operand 'indices' must have rank 2 ([s, k]), got 'tensor<?xi32>'}}
  %0 = dsa.sparse_attn %q, %kv, %i, %sink {scale = 0.176776692 : f32} : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @sparse_attn_indices_rows(%q: tensor<5x4x32xbf16>, %kv: tensor<?x32xbf16>, %i: tensor<3x8xi32>, %sink: tensor<4xf32>) {
  // expected-error @+1 {{operand 'indices' has 3 rows but 'q' has 5 queries}}
  %0 = dsa.sparse_attn %q, %kv, %i, %sink {scale = 0.176776692 : f32} : (tensor<5x4x32xbf16>, tensor<?x32xbf16>, tensor<3x8xi32>, tensor<4xf32>) -> tensor<5x4x32xbf16>
  return
}

// -----

func.func @sparse_attn_sink_rank(%q: tensor<?x4x32xbf16>, %kv: tensor<?x32xbf16>, %i: tensor<?x?xi32>, %sink: tensor<1x4xf32>) {
  // expected-error @+1 {{operand 'sink' must have rank 1 ([H]), got 'tensor<1x4xf32>'}}
  %0 = dsa.sparse_attn %q, %kv, %i, %sink {scale = 0.176776692 : f32} : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<1x4xf32>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @sparse_attn_sink_length(%q: tensor<?x4x32xbf16>, %kv: tensor<?x32xbf16>, %i: tensor<?x?xi32>, %sink: tensor<2xf32>) {
  // expected-error @+1 {{operand 'sink' has length 2 but 'q' has 4 heads}}
  %0 = dsa.sparse_attn %q, %kv, %i, %sink {scale = 0.176776692 : f32} : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<2xf32>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @sparse_attn_scale_zero(%q: tensor<?x4x32xbf16>, %kv: tensor<?x32xbf16>, %i: tensor<?x?xi32>, %sink: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'scale' must be finite and > 0, got 0.000000e+00}}
  %0 = dsa.sparse_attn %q, %kv, %i, %sink {scale = 0.0 : f32} : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @sparse_attn_scale_inf(%q: tensor<?x4x32xbf16>, %kv: tensor<?x32xbf16>, %i: tensor<?x?xi32>, %sink: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'scale' must be finite and > 0, got INF}}
  %0 = dsa.sparse_attn %q, %kv, %i, %sink {scale = 0x7F800000 : f32} : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @sparse_attn_result(%q: tensor<?x4x32xbf16>, %kv: tensor<?x32xbf16>, %i: tensor<?x?xi32>, %sink: tensor<4xf32>) {
  // expected-error @+1 {{result type 'tensor<?x128xbf16>' must equal the type of 'q' ('tensor<?x4x32xbf16>')}}
  %0 = dsa.sparse_attn %q, %kv, %i, %sink {scale = 0.176776692 : f32} : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x128xbf16>
  return
}

//===----------------------------------------------------------------------===//
// dsa.grouped_output
//===----------------------------------------------------------------------===//

// -----

func.func @grouped_output_groups(%o: tensor<?x4x32xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{'dsa.grouped_output' op attribute 'groups' must be > 0, got 0}}
  %0 = dsa.grouped_output %o, %w {groups = 0 : i64} : (tensor<?x4x32xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @grouped_output_o_rank(%o: tensor<?x128xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{operand 'o' must have rank 3 ([s, H, hd]), got 'tensor<?x128xbf16>'}}
  %0 = dsa.grouped_output %o, %w {groups = 2 : i64} : (tensor<?x128xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @grouped_output_wo_a_rank(%o: tensor<?x4x32xbf16>, %w: tensor<2x16x64xbf16>) {
  // expected-error @+1 {{operand 'wo_a' must have rank 2 ([groups*R, H*hd/groups]), got 'tensor<2x16x64xbf16>'}}
  %0 = dsa.grouped_output %o, %w {groups = 2 : i64} : (tensor<?x4x32xbf16>, tensor<2x16x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @grouped_output_divide(%o: tensor<?x4x32xbf16>, %w: tensor<30x42xbf16>) {
  // expected-error @+1 {{groups (3) must divide the head count H (4) of 'o'}}
  %0 = dsa.grouped_output %o, %w {groups = 3 : i64} : (tensor<?x4x32xbf16>, tensor<30x42xbf16>) -> tensor<?x30xbf16>
  return
}

// -----

func.func @grouped_output_columns(%o: tensor<?x4x32xbf16>, %w: tensor<32x128xbf16>) {
  // expected-error @+1 {{operand 'wo_a' has 128 columns but H*hd/groups = 4*32/2 = 64}}
  %0 = dsa.grouped_output %o, %w {groups = 2 : i64} : (tensor<?x4x32xbf16>, tensor<32x128xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @grouped_output_rows(%o: tensor<?x4x32xbf16>, %w: tensor<31x64xbf16>) {
  // expected-error @+1 {{operand 'wo_a' has 31 rows, not a multiple of groups (2)}}
  %0 = dsa.grouped_output %o, %w {groups = 2 : i64} : (tensor<?x4x32xbf16>, tensor<31x64xbf16>) -> tensor<?x31xbf16>
  return
}

// -----

func.func @grouped_output_result(%o: tensor<5x4x32xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{result must have shape [s, wo_a rows] = [5, 32], got 'tensor<5x16xbf16>'}}
  %0 = dsa.grouped_output %o, %w {groups = 2 : i64} : (tensor<5x4x32xbf16>, tensor<32x64xbf16>) -> tensor<5x16xbf16>
  return
}

//===----------------------------------------------------------------------===//
// dsa.probe
//===----------------------------------------------------------------------===//

// -----

func.func @probe_name(%q: tensor<?x4x32xbf16>) {
  // expected-error @+1 {{'dsa.probe' op attribute 'name' must not be empty}}
  dsa.probe "" %q : tensor<?x4x32xbf16>
  return
}

//===----------------------------------------------------------------------===//
// #dsa.yarn
//===----------------------------------------------------------------------===//

// -----

func.func private @yarn_factor_f32() attributes {
  // expected-error @+1 {{factor must be an f64 float attribute}}
  y = #dsa.yarn<original_seq_len = 32, factor = 2.0 : f32, beta_fast = 32.0, beta_slow = 1.0>}

// -----

func.func private @yarn_beta_fast_f32() attributes {
  // expected-error @+1 {{beta_fast must be an f64 float attribute}}
  y = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0 : f32, beta_slow = 1.0>}

// -----

func.func private @yarn_beta_slow_f16() attributes {
  // expected-error @+1 {{beta_slow must be an f64 float attribute}}
  y = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0 : f16>}

// -----

func.func private @yarn_original_seq_len() attributes {
  // expected-error @+1 {{original_seq_len must be positive, got 0}}
  y = #dsa.yarn<original_seq_len = 0, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>}

// -----

func.func private @yarn_factor() attributes {
  // expected-error @+1 {{factor must be finite and > 0, got -2.000000e+00}}
  y = #dsa.yarn<original_seq_len = 32, factor = -2.0, beta_fast = 32.0, beta_slow = 1.0>}

// -----

func.func private @yarn_beta_fast() attributes {
  // expected-error @+1 {{beta_fast must be finite and > 0, got 0.000000e+00}}
  y = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 0.0, beta_slow = 1.0>}

// -----

func.func private @yarn_beta_slow() attributes {
  // expected-error @+1 {{beta_slow must be finite and > 0, got INF}}
  y = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 0x7FF0000000000000 : f64>}

//===----------------------------------------------------------------------===//
// #dsa.rope
//===----------------------------------------------------------------------===//

// -----

func.func private @rope_dim_odd() attributes {
  // expected-error @+1 {{rope_dim must be positive and even, got 7}}
  r = #dsa.rope<rope_dim = 7, theta = 1.0e4>}

// -----

func.func private @rope_dim_zero() attributes {
  // expected-error @+1 {{rope_dim must be positive and even, got 0}}
  r = #dsa.rope<rope_dim = 0, theta = 1.0e4>}

// -----

func.func private @rope_theta_f32() attributes {
  // expected-error @+1 {{theta must be an f64 float attribute}}
  r = #dsa.rope<rope_dim = 8, theta = 1.0e4 : f32>}

// -----

func.func private @rope_theta_small() attributes {
  // expected-error @+1 {{theta must be finite and > 1, got 1.000000e+00}}
  r = #dsa.rope<rope_dim = 8, theta = 1.0>}

// -----

// An invalid nested #dsa.yarn fails its own verifier, then the #dsa.rope parse that contains it.
func.func private @rope_bad_yarn() attributes {
  // expected-error @+2 {{original_seq_len must be positive, got -1}}
  // expected-error @+1 {{failed to parse DSA_RopeAttr parameter 'yarn' which is to be a `YarnAttr`}}
  r = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = -1, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>}

//===----------------------------------------------------------------------===//
// #dsa.attn_config (one field wrong per case; the rest is the tiny golden's L0)
//===----------------------------------------------------------------------===//

// -----

func.func private @attn_config_layer_id() attributes {
  // expected-error @+1 {{layer_id must be >= 0, got -1}}
  c = #dsa.attn_config<layer_id = -1, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_dim() attributes {
  // expected-error @+1 {{dim must be positive, got 0}}
  c = #dsa.attn_config<layer_id = 0, dim = 0, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_n_heads() attributes {
  // expected-error @+1 {{n_heads must be positive, got 0}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 0, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_head_dim() attributes {
  // expected-error @+1 {{head_dim must be positive, got 0}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 0, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_rope_head_dim() attributes {
  // expected-error @+1 {{rope_head_dim must be positive, got 0}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 0, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_q_lora_rank() attributes {
  // expected-error @+1 {{q_lora_rank must be positive, got -16}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = -16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_o_groups() attributes {
  // expected-error @+1 {{o_groups must be positive, got 0}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 0, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_o_lora_rank() attributes {
  // expected-error @+1 {{o_lora_rank must be positive, got 0}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 0, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_window_size() attributes {
  // expected-error @+1 {{window_size must be positive, got 0}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 0, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_rope_head_dim_too_wide() attributes {
  // expected-error @+1 {{rope_head_dim (64) must not exceed head_dim (32)}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 64, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 64, theta = 1.0e4>>}

// -----

func.func private @attn_config_rope_head_dim_odd() attributes {
  // expected-error @+1 {{rope_head_dim must be even, got 7}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 7, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_head_dim_block() attributes {
  // expected-error @+1 {{head_dim (48) must be a multiple of 32, the fp8 block of the window KV row (section 4)}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 48, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_o_lora_rank_product_overflows() attributes {
  // expected-error @+1 {{o_groups * o_lora_rank = 2 * 4611686018427387904 overflows int64}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 4611686018427387904, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_head_product_overflows() attributes {
  // expected-error @+1 {{n_heads * head_dim = 4 * 4611686018427387904 overflows int64}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 4611686018427387904, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @compress_index_product_overflows() attributes {
  // expected-error @+1 {{index_n_heads * index_head_dim = 3 * 4611686018427387904 overflows int64}}
  c = #dsa.compress<is_kv_source = true, is_index_source = false, is_candidate_source = false, uses_candidates = false, index_n_heads = 3, index_head_dim = 4611686018427387904, index_topk = 6, candidate_topk_blocks = 0, candidate_block_size = 0, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>}

// -----

func.func private @attn_config_o_groups_divide() attributes {
  // expected-error @+1 {{n_heads (4) must be divisible by o_groups (3)}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 3, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_compress_ratio() attributes {
  // expected-error @+1 {{compress_ratio must be >= 0, got -1}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = -1, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_norm_eps_f64() attributes {
  // expected-error @+1 {{norm_eps must be an f32 attribute}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_norm_eps_negative() attributes {
  // expected-error @+1 {{norm_eps must be finite and >= 0, got -1.000000e+00}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = -1.0 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

// -----

func.func private @attn_config_rope_dim() attributes {
  // expected-error @+1 {{rope.rope_dim (16) must equal rope_head_dim (8)}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 16, theta = 1.0e4>>}

// -----

func.func private @attn_config_ratio0_yarn() attributes {
  // expected-error @+1 {{rope of a compress_ratio = 0 layer must not have yarn (section 2)}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>>}

// -----

func.func private @attn_config_ratio2_no_yarn() attributes {
  // expected-error @+1 {{rope of a compress_ratio > 0 layer must have yarn (section 2)}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}

//===----------------------------------------------------------------------===//
// #dsa.compress (one field wrong per case; the rest is the tiny golden's L4)
//===----------------------------------------------------------------------===//

// -----

func.func private @compress_candidate_not_index() attributes {
  // expected-error @+1 {{is_candidate_source requires is_index_source (the candidate blocks are selected from the layer's indexer scores, section 7)}}
  c = #dsa.compress<is_kv_source = true, is_index_source = false, is_candidate_source = true, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>}

// -----

func.func private @compress_uses_not_index() attributes {
  // expected-error @+1 {{uses_candidates requires is_index_source (only an index source applies the candidate mask, section 6 step 6)}}
  c = #dsa.compress<is_kv_source = false, is_index_source = false, is_candidate_source = false, uses_candidates = true, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>}

// -----

func.func private @compress_candidate_exclusive() attributes {
  // expected-error @+1 {{is_candidate_source and uses_candidates are exclusive (a layer uses the mask of a candidate source BEFORE it)}}
  c = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = true, uses_candidates = true, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>}

// -----

// A kv source that is not an index source still computes index keys: it needs the indexer geometry.
func.func private @compress_kv_source_index_n_heads() attributes {
  // expected-error @+1 {{index_n_heads must be positive for a kv or index source, got 0}}
  c = #dsa.compress<is_kv_source = true, is_index_source = false, is_candidate_source = false, uses_candidates = false, index_n_heads = 0, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 0, candidate_block_size = 0, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>}

// -----

func.func private @compress_index_head_dim() attributes {
  // expected-error @+1 {{index_head_dim must be positive for a kv or index source, got 0}}
  c = #dsa.compress<is_kv_source = false, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 0, index_topk = 6, candidate_topk_blocks = 0, candidate_block_size = 0, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>}

// -----

func.func private @compress_index_topk() attributes {
  // expected-error @+1 {{index_topk must be positive for a kv or index source, got -6}}
  c = #dsa.compress<is_kv_source = false, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = -6, candidate_topk_blocks = 0, candidate_block_size = 0, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>}

// -----

func.func private @compress_candidate_topk_blocks() attributes {
  // expected-error @+1 {{candidate_topk_blocks must be positive for a candidate source or a layer that uses candidates, got 0}}
  c = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = true, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 0, candidate_block_size = 2, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>}

// -----

func.func private @compress_candidate_block_size() attributes {
  // expected-error @+1 {{candidate_block_size must be positive for a candidate source or a layer that uses candidates, got 0}}
  c = #dsa.compress<is_kv_source = false, is_index_source = true, is_candidate_source = false, uses_candidates = true, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 0, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>}

// -----

// A plain reader may leave the indexer geometry at 0, but never negative.
func.func private @compress_reader_negative() attributes {
  // expected-error @+1 {{candidate_block_size must be >= 0, got -2}}
  c = #dsa.compress<is_kv_source = false, is_index_source = false, is_candidate_source = false, uses_candidates = false, index_n_heads = 0, index_head_dim = 0, index_topk = 0, candidate_topk_blocks = 0, candidate_block_size = -2, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>}

// -----

func.func private @compress_index_head_dim_block() attributes {
  // expected-error @+1 {{index_head_dim (48) must be a multiple of 32, the fp4 e8m0 block of the index queries and keys (section 6)}}
  c = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = true, uses_candidates = false, index_n_heads = 2, index_head_dim = 48, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>}

// -----

func.func private @compress_max_seq_len() attributes {
  // expected-error @+1 {{max_seq_len must be positive, got 0}}
  c = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = true, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 0, index_k_source = <published_slot>, tie_order = <torch_cpu>>}

// -----

func.func private @compress_bad_tie_order() attributes {
  // expected-error @+2 {{expected ::mlir::dsa::TieOrder to be one of: torch_cpu}}
  // expected-error @+1 {{failed to parse DSA_TieOrderAttr parameter 'value' which is to be a `::mlir::dsa::TieOrder`}}
  t = #dsa.tie_order<cuda>}

// -----

func.func private @attn_config_ratio2_no_compress() attributes {
  // expected-error @+1 {{a compress_ratio > 0 layer needs compress = #dsa.compress<...> (its role and indexer)}}
  c = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>>}

// -----

func.func private @attn_config_ratio0_compress() attributes {
  // expected-error @+1 {{compress must be absent on a compress_ratio = 0 layer}}
  c = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>, compress = <is_kv_source = false, is_index_source = false, is_candidate_source = false, uses_candidates = false, index_n_heads = 0, index_head_dim = 0, index_topk = 0, candidate_topk_blocks = 0, candidate_block_size = 0, max_seq_len = 64, index_k_source = <published_slot>, tie_order = <torch_cpu>>>}


//===----------------------------------------------------------------------===//
// dsa.attention (one operand wrong per case; the rest is the tiny golden's L0)
//===----------------------------------------------------------------------===//

// -----

func.func @attention(%x: tensor<?x32xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'x' must have shape [s, dim] = [?, 64], got 'tensor<?x32xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x32xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<?x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'ring' must have static shape [window_size, head_dim] = [8, 32], got 'tensor<?x32xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<?x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<2xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'attn_sink' must have shape [n_heads] = [4], got 'tensor<2xf32>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<2xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x32xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'wq_a' must have shape [q_lora_rank, dim] = [16, 64], got 'tensor<16x32xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x32xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<8xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'q_norm' must have shape [q_lora_rank] = [16], got 'tensor<8xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<8xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<64x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'wq_b' must have shape [n_heads*head_dim, q_lora_rank] = [128, 16], got 'tensor<64x16xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<64x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<64x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'wkv' must have shape [head_dim, dim] = [32, 64], got 'tensor<64x64xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<64x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32x1xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'kv_norm' must have shape [head_dim] = [32], got 'tensor<32x1xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32x1xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x128xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'wo_a' must have shape [o_groups*o_lora_rank, n_heads*head_dim/o_groups] = [32, 64], got 'tensor<32x128xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x128xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x16xbf16>) {
  // expected-error @+1 {{operand 'wo_b' must have shape [dim, o_groups*o_lora_rank] = [64, 32], got 'tensor<64x16xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x16xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{result 'out' must have shape [s, dim] (s = rows of 'x') = [?, 64], got 'tensor<?x32xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x32xbf16>, tensor<8x32xbf16>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{result 'new_ring' type 'tensor<?x32xbf16>' must equal the type of 'ring' ('tensor<8x32xbf16>')}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>)
  return
}

// -----

// A static token count must be the same in 'x' and 'out'.
func.func @attention(%x: tensor<3x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{result 'out' must have shape [s, dim] (s = rows of 'x') = [3, 64], got 'tensor<5x64xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<3x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<5x64xbf16>, tensor<8x32xbf16>)
  return
}

//===----------------------------------------------------------------------===//
// dsa.compress_pool
//===----------------------------------------------------------------------===//

// -----

func.func @compress_pool_ratio(%kv: tensor<?x32xf32>, %st: tensor<1x32xf32>, %sp: i64) {
  // expected-error @+1 {{'dsa.compress_pool' op attribute 'ratio' must be >= 2 (a ratio-1 compressor does not pool, section 5), got 1}}
  %p, %a, %b = dsa.compress_pool %kv, %kv, %st, %st, %sp {ratio = 1 : i64} : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<1x32xf32>, tensor<1x32xf32>, i64) -> (tensor<?x32xf32>, tensor<1x32xf32>, tensor<1x32xf32>)
  return
}

// -----

func.func @compress_pool_kv_rank(%kv: tensor<32xf32>, %st: tensor<2x32xf32>, %sp: i64) {
  // expected-error @+1 {{'dsa.compress_pool' op operand 'kv' must have rank 2 ([s, hd]), got 'tensor<32xf32>'}}
  %p, %a, %b = dsa.compress_pool %kv, %kv, %st, %st, %sp {ratio = 2 : i64} : (tensor<32xf32>, tensor<32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, i64) -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>)
  return
}

// -----

func.func @compress_pool_score(%kv: tensor<?x32xf32>, %score: tensor<3x32xf32>, %st: tensor<2x32xf32>, %sp: i64) {
  // expected-error @+1 {{'dsa.compress_pool' op operand 'score' type 'tensor<3x32xf32>' must equal the type of 'kv' ('tensor<?x32xf32>')}}
  %p, %a, %b = dsa.compress_pool %kv, %score, %st, %st, %sp {ratio = 2 : i64} : (tensor<?x32xf32>, tensor<3x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, i64) -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>)
  return
}

// -----

func.func @compress_pool_state_rows(%kv: tensor<?x32xf32>, %st: tensor<4x32xf32>, %sp: i64) {
  // expected-error @+1 {{'dsa.compress_pool' op operand 'kv_state' must have shape [ratio, hd] = [2, 32], got 'tensor<4x32xf32>'}}
  %p, %a, %b = dsa.compress_pool %kv, %kv, %st, %st, %sp {ratio = 2 : i64} : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>, i64) -> (tensor<?x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>)
  return
}

// -----

func.func @compress_pool_score_state(%kv: tensor<?x32xf32>, %st: tensor<2x32xf32>, %sst: tensor<?x32xf32>, %sp: i64) {
  // expected-error @+1 {{'dsa.compress_pool' op operand 'score_state' type 'tensor<?x32xf32>' must equal the type of 'kv_state' ('tensor<2x32xf32>')}}
  %p, %a, %b = dsa.compress_pool %kv, %kv, %st, %sst, %sp {ratio = 2 : i64} : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<2x32xf32>, tensor<?x32xf32>, i64) -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<?x32xf32>)
  return
}

// -----

func.func @compress_pool_pooled(%kv: tensor<?x32xf32>, %st: tensor<2x32xf32>, %sp: i64) {
  // expected-error @+1 {{'dsa.compress_pool' op result 'pooled' must have shape [g, hd] = [?, 32], got 'tensor<?x16xf32>'}}
  %p, %a, %b = dsa.compress_pool %kv, %kv, %st, %st, %sp {ratio = 2 : i64} : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, i64) -> (tensor<?x16xf32>, tensor<2x32xf32>, tensor<2x32xf32>)
  return
}

// -----

func.func @compress_pool_new_kv_state(%kv: tensor<?x32xf32>, %st: tensor<2x32xf32>, %sp: i64) {
  // expected-error @+1 {{'dsa.compress_pool' op result 'new_kv_state' type 'tensor<?x32xf32>' must equal the type of 'kv_state' ('tensor<2x32xf32>')}}
  %p, %a, %b = dsa.compress_pool %kv, %kv, %st, %st, %sp {ratio = 2 : i64} : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, i64) -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<2x32xf32>)
  return
}

// -----

func.func @compress_pool_new_score_state(%kv: tensor<?x32xf32>, %st: tensor<2x32xf32>, %sp: i64) {
  // expected-error @+1 {{'dsa.compress_pool' op result 'new_score_state' type 'tensor<2x?xf32>' must equal the type of 'score_state' ('tensor<2x32xf32>')}}
  %p, %a, %b = dsa.compress_pool %kv, %kv, %st, %st, %sp {ratio = 2 : i64} : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, i64) -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x?xf32>)
  return
}

//===----------------------------------------------------------------------===//
// dsa.fp4_quant_e8m0, dsa.fp4_quant_e4m3
//===----------------------------------------------------------------------===//

// -----

func.func @fp4_block_zero(%x: tensor<?x32xbf16>) {
  // expected-error @+1 {{'dsa.fp4_quant_e8m0' op attribute 'block_size' must be > 0, got 0}}
  %0 = dsa.fp4_quant_e8m0 %x {block_size = 0 : i64} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @fp4_rank0(%x: tensor<bf16>) {
  // expected-error @+1 {{'dsa.fp4_quant_e8m0' op operand 'x' must have rank >= 1, got 'tensor<bf16>'}}
  %0 = dsa.fp4_quant_e8m0 %x : (tensor<bf16>) -> tensor<bf16>
  return
}

// -----

// e4m3's default block is 16: a row of 24 is not whole blocks.
func.func @fp4_e4m3_block(%x: tensor<?x24xbf16>) {
  // expected-error @+1 {{'dsa.fp4_quant_e4m3' op block_size (16) must divide the last dimension of 'x' (24)}}
  %0 = dsa.fp4_quant_e4m3 %x : (tensor<?x24xbf16>) -> tensor<?x24xbf16>
  return
}

// -----

func.func @fp4_result_shape(%x: tensor<?x2x32xf32>) {
  // expected-error @+1 {{'dsa.fp4_quant_e8m0' op result shape [?, 64] must equal the shape of 'x' [?, 2, 32]}}
  %0 = dsa.fp4_quant_e8m0 %x : (tensor<?x2x32xf32>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @fp4_result_bf16(%x: tensor<?x32xf32>) {
  // expected-error @+1 {{'dsa.fp4_quant_e4m3' op result #0 must be ranked tensor of bfloat16 type values, but got 'tensor<?x32xf32>'}}
  %0 = dsa.fp4_quant_e4m3 %x : (tensor<?x32xf32>) -> tensor<?x32xf32>
  return
}

//===----------------------------------------------------------------------===//
// dsa.cache_write
//===----------------------------------------------------------------------===//

// -----

func.func @cache_write_ratio(%c: tensor<32x32xbf16>, %r: tensor<?x32xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.cache_write' op attribute 'ratio' must be >= 1, got 0}}
  %0 = dsa.cache_write %c, %r, %sp {ratio = 0 : i64} : (tensor<32x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<32x32xbf16>
  return
}

// -----

func.func @cache_write_cache_rank(%c: tensor<32x4x8xbf16>, %r: tensor<?x32xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.cache_write' op operand 'cache' must have rank 2 ([C, w]), got 'tensor<32x4x8xbf16>'}}
  %0 = dsa.cache_write %c, %r, %sp {ratio = 2 : i64} : (tensor<32x4x8xbf16>, tensor<?x32xbf16>, i64) -> tensor<32x4x8xbf16>
  return
}

// -----

func.func @cache_write_rows_rank(%c: tensor<32x32xbf16>, %r: tensor<32xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.cache_write' op operand 'rows' must have rank 2 ([g, w]), got 'tensor<32xbf16>'}}
  %0 = dsa.cache_write %c, %r, %sp {ratio = 2 : i64} : (tensor<32x32xbf16>, tensor<32xbf16>, i64) -> tensor<32x32xbf16>
  return
}

// -----

func.func @cache_write_width(%c: tensor<32x32xbf16>, %r: tensor<?x16xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.cache_write' op operand 'rows' has row width 16 but 'cache' has row width 32}}
  %0 = dsa.cache_write %c, %r, %sp {ratio = 2 : i64} : (tensor<32x32xbf16>, tensor<?x16xbf16>, i64) -> tensor<32x32xbf16>
  return
}

// -----

func.func @cache_write_result(%c: tensor<32x32xbf16>, %r: tensor<?x32xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.cache_write' op result type 'tensor<?x32xbf16>' must equal the type of 'cache' ('tensor<32x32xbf16>')}}
  %0 = dsa.cache_write %c, %r, %sp {ratio = 2 : i64} : (tensor<32x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x32xbf16>
  return
}

//===----------------------------------------------------------------------===//
// dsa.indexer_scores
//===----------------------------------------------------------------------===//

// -----

func.func @indexer_scores_ratio(%iq: tensor<?x2x32xbf16>, %w: tensor<?x2xbf16>, %k: tensor<?x32xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.indexer_scores' op attribute 'ratio' must be >= 1, got -1}}
  %0 = dsa.indexer_scores %iq, %w, %k, %sp {ratio = -1 : i64, weight_scale = 0.125 : f32} : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x?xbf16>
  return
}

// -----

func.func @indexer_scores_scale(%iq: tensor<?x2x32xbf16>, %w: tensor<?x2xbf16>, %k: tensor<?x32xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.indexer_scores' op attribute 'weight_scale' must be finite and > 0, got 0.000000e+00}}
  %0 = dsa.indexer_scores %iq, %w, %k, %sp {ratio = 1 : i64, weight_scale = 0.0 : f32} : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x?xbf16>
  return
}

// -----

func.func @indexer_scores_iq_rank(%iq: tensor<?x64xbf16>, %w: tensor<?x2xbf16>, %k: tensor<?x32xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.indexer_scores' op operand 'iq' must have rank 3 ([s, IH, ihd]), got 'tensor<?x64xbf16>'}}
  %0 = dsa.indexer_scores %iq, %w, %k, %sp {ratio = 1 : i64, weight_scale = 0.125 : f32} : (tensor<?x64xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x?xbf16>
  return
}

// -----

func.func @indexer_scores_weights(%iq: tensor<?x2x32xbf16>, %w: tensor<?x4xbf16>, %k: tensor<?x32xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.indexer_scores' op operand 'weights' must have shape [s, IH] (from 'iq') = [?, 2], got 'tensor<?x4xbf16>'}}
  %0 = dsa.indexer_scores %iq, %w, %k, %sp {ratio = 1 : i64, weight_scale = 0.125 : f32} : (tensor<?x2x32xbf16>, tensor<?x4xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x?xbf16>
  return
}

// -----

func.func @indexer_scores_keys(%iq: tensor<?x2x32xbf16>, %w: tensor<?x2xbf16>, %k: tensor<?x64xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.indexer_scores' op operand 'keys' must have shape [n, ihd] (ihd from 'iq') = [?, 32], got 'tensor<?x64xbf16>'}}
  %0 = dsa.indexer_scores %iq, %w, %k, %sp {ratio = 1 : i64, weight_scale = 0.125 : f32} : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x64xbf16>, i64) -> tensor<?x?xbf16>
  return
}

// -----

func.func @indexer_scores_entry_keys(%iq: tensor<?x2x32xbf16>, %w: tensor<?x2xbf16>, %k: tensor<?x32xbf16>, %sp: i64, %e: tensor<8x16xbf16>) {
  // expected-error @+1 {{'dsa.indexer_scores' op operand 'entry_keys' must have shape [n, ihd] (ihd from 'iq') = [?, 32], got 'tensor<8x16xbf16>'}}
  %0 = dsa.indexer_scores %iq, %w, %k, %sp entry_keys %e {ratio = 2 : i64, weight_scale = 0.125 : f32} : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64, tensor<8x16xbf16>) -> tensor<?x?xbf16>
  return
}

// -----

func.func @indexer_scores_result(%iq: tensor<3x2x32xbf16>, %w: tensor<3x2xbf16>, %k: tensor<?x32xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.indexer_scores' op result 'result' must have shape [s, width] (s from 'iq') = [3, ?], got 'tensor<1x?xbf16>'}}
  %0 = dsa.indexer_scores %iq, %w, %k, %sp {ratio = 1 : i64, weight_scale = 0.125 : f32} : (tensor<3x2x32xbf16>, tensor<3x2xbf16>, tensor<?x32xbf16>, i64) -> tensor<1x?xbf16>
  return
}

//===----------------------------------------------------------------------===//
// dsa.compress_visibility, dsa.select_candidate_blocks, dsa.apply_candidates, dsa.indexer_topk
//===----------------------------------------------------------------------===//

// -----

func.func @visibility_ratio(%s: tensor<?x?xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.compress_visibility' op attribute 'ratio' must be >= 1, got 0}}
  %0 = dsa.compress_visibility %s, %sp {ratio = 0 : i64} : (tensor<?x?xbf16>, i64) -> tensor<?x?xbf16>
  return
}

// -----

func.func @visibility_rank(%s: tensor<?x2x?xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.compress_visibility' op operand 'scores' must have rank 2 ([s, width]), got 'tensor<?x2x?xbf16>'}}
  %0 = dsa.compress_visibility %s, %sp {ratio = 2 : i64} : (tensor<?x2x?xbf16>, i64) -> tensor<?x2x?xbf16>
  return
}

// -----

func.func @visibility_result(%s: tensor<?x?xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.compress_visibility' op result type 'tensor<1x?xbf16>' must equal the type of 'scores' ('tensor<?x?xbf16>')}}
  %0 = dsa.compress_visibility %s, %sp {ratio = 2 : i64} : (tensor<?x?xbf16>, i64) -> tensor<1x?xbf16>
  return
}

// -----

func.func @candidates_ratio(%s: tensor<?x?xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.select_candidate_blocks' op attribute 'ratio' must be >= 1, got 0}}
  %0 = dsa.select_candidate_blocks %s, %sp {ratio = 0 : i64, topk_blocks = 3 : i64, block_size = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?x?xbf16>, i64) -> tensor<?x?xi1>
  return
}

// -----

func.func @candidates_topk_blocks(%s: tensor<?x?xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.select_candidate_blocks' op attribute 'topk_blocks' must be > 0, got 0}}
  %0 = dsa.select_candidate_blocks %s, %sp {ratio = 1 : i64, topk_blocks = 0 : i64, block_size = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?x?xbf16>, i64) -> tensor<?x?xi1>
  return
}

// -----

func.func @candidates_block_size(%s: tensor<?x?xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.select_candidate_blocks' op attribute 'block_size' must be > 0, got -2}}
  %0 = dsa.select_candidate_blocks %s, %sp {ratio = 1 : i64, topk_blocks = 3 : i64, block_size = -2 : i64, tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?x?xbf16>, i64) -> tensor<?x?xi1>
  return
}

// -----

func.func @candidates_scores_rank(%s: tensor<?xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.select_candidate_blocks' op operand 'scores' must have rank 2 ([s, width]), got 'tensor<?xbf16>'}}
  %0 = dsa.select_candidate_blocks %s, %sp {ratio = 1 : i64, topk_blocks = 3 : i64, block_size = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?xbf16>, i64) -> tensor<?x?xi1>
  return
}

// -----

func.func @candidates_result(%s: tensor<1x6xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.select_candidate_blocks' op result 'result' must have shape [s, width] (the shape of 'scores') = [1, 6], got 'tensor<1x3xi1>'}}
  %0 = dsa.select_candidate_blocks %s, %sp {ratio = 1 : i64, topk_blocks = 3 : i64, block_size = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>} : (tensor<1x6xbf16>, i64) -> tensor<1x3xi1>
  return
}

// -----

func.func @apply_candidates_rank(%s: tensor<?x?x?xbf16>, %m: tensor<?x?xi1>) {
  // expected-error @+1 {{'dsa.apply_candidates' op operand 'scores' must have rank 2 ([s, width]), got 'tensor<?x?x?xbf16>'}}
  %0 = dsa.apply_candidates %s, %m : (tensor<?x?x?xbf16>, tensor<?x?xi1>) -> tensor<?x?x?xbf16>
  return
}

// -----

func.func @apply_candidates_mask(%s: tensor<?x6xbf16>, %m: tensor<?x4xi1>) {
  // expected-error @+1 {{'dsa.apply_candidates' op operand 'mask' must have shape [s, width] (the shape of 'scores') = [?, 6], got 'tensor<?x4xi1>'}}
  %0 = dsa.apply_candidates %s, %m : (tensor<?x6xbf16>, tensor<?x4xi1>) -> tensor<?x6xbf16>
  return
}

// -----

func.func @apply_candidates_result(%s: tensor<?x6xbf16>, %m: tensor<?x6xi1>) {
  // expected-error @+1 {{'dsa.apply_candidates' op result type 'tensor<?x?xbf16>' must equal the type of 'scores' ('tensor<?x6xbf16>')}}
  %0 = dsa.apply_candidates %s, %m : (tensor<?x6xbf16>, tensor<?x6xi1>) -> tensor<?x?xbf16>
  return
}

// -----

func.func @topk_ratio(%s: tensor<?x?xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.indexer_topk' op attribute 'ratio' must be >= 1, got 0}}
  %0 = dsa.indexer_topk %s, %sp {ratio = 0 : i64, index_topk = 6 : i64, window_size = 8 : i64, tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
  return
}

// -----

func.func @topk_index_topk(%s: tensor<?x?xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.indexer_topk' op attribute 'index_topk' must be > 0, got 0}}
  %0 = dsa.indexer_topk %s, %sp {ratio = 1 : i64, index_topk = 0 : i64, window_size = 8 : i64, tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
  return
}

// -----

func.func @topk_window_size(%s: tensor<?x?xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.indexer_topk' op attribute 'window_size' must be > 0, got 0}}
  %0 = dsa.indexer_topk %s, %sp {ratio = 1 : i64, index_topk = 6 : i64, window_size = 0 : i64, tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
  return
}

// -----

func.func @topk_scores_rank(%s: tensor<?xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.indexer_topk' op operand 'scores' must have rank 2 ([s, width]), got 'tensor<?xbf16>'}}
  %0 = dsa.indexer_topk %s, %sp {ratio = 1 : i64, index_topk = 6 : i64, window_size = 8 : i64, tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?xbf16>, i64) -> tensor<?x?xi32>
  return
}

// -----

// width 10 > index_topk: k = min(6, 10) = 6.
func.func @topk_result_k(%s: tensor<1x10xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.indexer_topk' op result 'result' must have shape [s, min(index_topk, width)] = [1, 6], got 'tensor<1x10xi32>'}}
  %0 = dsa.indexer_topk %s, %sp {ratio = 1 : i64, index_topk = 6 : i64, window_size = 8 : i64, tie_order = #dsa.tie_order<torch_cpu>} : (tensor<1x10xbf16>, i64) -> tensor<1x10xi32>
  return
}

// -----

func.func @topk_result_exceeds(%s: tensor<?x?xbf16>, %sp: i64) {
  // expected-error @+1 {{'dsa.indexer_topk' op result width 7 exceeds index_topk (6)}}
  %0 = dsa.indexer_topk %s, %sp {ratio = 1 : i64, index_topk = 6 : i64, window_size = 8 : i64, tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?x?xbf16>, i64) -> tensor<?x7xi32>
  return
}

//===----------------------------------------------------------------------===//
// dsa.attention: operand groups of each role (attention-semantics.md sections 5-8; the tiny golden's geometry)
//===----------------------------------------------------------------------===//

// -----

// A compress_ratio = 0 layer has no compressed operand groups.
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xbf16>) {
  // expected-error @+1 {{operand group 'compressor' of a compress_ratio = 0 layer must be empty, got 1 operand}}
  %r0, %r1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return
}

// -----

// A ratio-2 kv source has (wkv, wgate, norm): the ratio-1 form is rejected.
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xbf16>, %norm_c: tensor<32xbf16>, %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %kvs: tensor<2x32xf32>, %scs: tensor<2x32xf32>, %kvc: tensor<32x32xbf16>, %ikc: tensor<32x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand group 'compressor' of a ratio-2 kv source must be (wkv, wgate, norm), got 2 operands}}
  %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_i, %wproj) state(%kvs, %scs, %kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

// The ratio >= 2 compressor projects in f32 (section 5).
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xbf16>, %wgate_c: tensor<32x64xf32>, %norm_c: tensor<32xbf16>, %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %kvs: tensor<2x32xf32>, %scs: tensor<2x32xf32>, %kvc: tensor<32x32xbf16>, %ikc: tensor<32x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand 'wkv' (operand group 'compressor' #0) of a ratio-2 kv source must be a tensor [head_dim, dim] = [32, 64] of 'f32', got 'tensor<32x64xbf16>'}}
  %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %wgate_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_i, %wproj) state(%kvs, %scs, %kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xbf16>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

// The ratio-1 compressor is a bf16 linear (section 5).
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xf32>, %norm_c: tensor<32xbf16>, %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %kvc: tensor<64x32xbf16>, %ikc: tensor<64x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand 'wkv' (operand group 'compressor' #0) of a ratio-1 kv source must be a tensor [head_dim, dim] = [32, 64] of 'bf16', got 'tensor<32x64xf32>'}}
  %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_i, %wproj) state(%kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 1, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = true, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xf32>, %wgate_c: tensor<32x64xf32>, %norm_c: tensor<16xbf16>, %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %kvs: tensor<2x32xf32>, %scs: tensor<2x32xf32>, %kvc: tensor<32x32xbf16>, %ikc: tensor<32x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand 'norm' (operand group 'compressor' #2) of a ratio-2 kv source must be a tensor [head_dim] = [32] of 'bf16', got 'tensor<16xbf16>'}}
  %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %wgate_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_i, %wproj) state(%kvs, %scs, %kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<16xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

// A kv source needs its index-key projection.
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xf32>, %wgate_c: tensor<32x64xf32>, %norm_c: tensor<32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %kvs: tensor<2x32xf32>, %scs: tensor<2x32xf32>, %kvc: tensor<32x32xbf16>, %ikc: tensor<32x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand group 'index_keys' of a ratio-2 kv source must be (wk, k_norm), got 0 operands}}
  %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %wgate_c, %norm_c) indexer(%wq_b_i, %wproj) state(%kvs, %scs, %kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xf32>, %wgate_c: tensor<32x64xf32>, %norm_c: tensor<32xbf16>, %wk: tensor<32x64xbf16>, %k_norm: tensor<32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %kvs: tensor<2x32xf32>, %scs: tensor<2x32xf32>, %kvc: tensor<32x32xbf16>, %ikc: tensor<32x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand 'wk' (operand group 'index_keys' #0) of a ratio-2 kv source must be a tensor [index_head_dim, head_dim] = [32, 32] of 'bf16', got 'tensor<32x64xbf16>'}}
  %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %wgate_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_i, %wproj) state(%kvs, %scs, %kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

// An index source needs its indexer weights.
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand group 'indexer' of an index source must be (wq_b, weights_proj), got 0 operands}}
  %r0, %r1, %r2, %r3, %r4, %r5 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 1, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = false, is_index_source = true, is_candidate_source = false, uses_candidates = true, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<4x64xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand 'weights_proj' (operand group 'indexer' #1) of an index source must be a tensor [index_n_heads, dim] = [2, 64] of 'bf16', got 'tensor<4x64xbf16>'}}
  %r0, %r1, %r2, %r3, %r4, %r5 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) indexer(%wq_b_i, %wproj) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 1, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = false, is_index_source = true, is_candidate_source = false, uses_candidates = true, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<64x16xbf16>, tensor<4x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wq_b_i: tensor<128x16xbf16>, %wproj: tensor<2x64xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand 'wq_b' (operand group 'indexer' #0) of an index source must be a tensor [index_n_heads*index_head_dim, q_lora_rank] = [64, 16] of 'bf16', got 'tensor<128x16xbf16>'}}
  %r0, %r1, %r2, %r3, %r4, %r5 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) indexer(%wq_b_i, %wproj) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 1, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = false, is_index_source = true, is_candidate_source = false, uses_candidates = true, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<128x16xbf16>, tensor<2x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

// A layer that is no source owns no compressor, index keys, indexer or state.
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xf32>, %wgate_c: tensor<32x64xf32>, %norm_c: tensor<32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand group 'compressor' of a layer that is not a kv source (config.compress.is_kv_source = false) must be empty, got 3 operands}}
  %r0, %r1, %r2, %r3, %r4, %r5 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %wgate_c, %norm_c) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = false, is_index_source = false, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand group 'indexer' of a layer that is not an index source (config.compress.is_index_source = false) must be empty, got 2 operands}}
  %r0, %r1, %r2, %r3, %r4, %r5 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) indexer(%wq_b_i, %wproj) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = false, is_index_source = false, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

// A ratio-1 kv source keeps no pooling state.
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xbf16>, %norm_c: tensor<32xbf16>, %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %kvs: tensor<1x32xf32>, %scs: tensor<1x32xf32>, %kvc: tensor<64x32xbf16>, %ikc: tensor<64x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand group 'state' of a ratio-1 kv source must be (kv_cache, index_k_cache), got 4 operands}}
  %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_i, %wproj) state(%kvs, %scs, %kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 1, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = true, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<1x32xf32>, tensor<1x32xf32>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<1x32xf32>, tensor<1x32xf32>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xf32>, %wgate_c: tensor<32x64xf32>, %norm_c: tensor<32xbf16>, %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %kvc: tensor<32x32xbf16>, %ikc: tensor<32x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand group 'state' of a ratio-2 kv source must be (kv_state, score_state, kv_cache, index_k_cache), got 2 operands}}
  %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %wgate_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_i, %wproj) state(%kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xf32>, %wgate_c: tensor<32x64xf32>, %norm_c: tensor<32xbf16>, %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %kvs: tensor<2x32xf32>, %scs: tensor<2x32xbf16>, %kvc: tensor<32x32xbf16>, %ikc: tensor<32x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand 'score_state' (operand group 'state' #1) of a ratio-2 kv source must be a static tensor [compress_ratio, head_dim] = [2, 32] of 'f32', got 'tensor<2x32xbf16>'}}
  %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %wgate_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_i, %wproj) state(%kvs, %scs, %kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<2x32xf32>, tensor<2x32xbf16>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xbf16>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

// The caches have a fixed capacity: a dynamic row count is rejected.
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xf32>, %wgate_c: tensor<32x64xf32>, %norm_c: tensor<32xbf16>, %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %kvs: tensor<2x32xf32>, %scs: tensor<2x32xf32>, %kvc: tensor<?x32xbf16>, %ikc: tensor<32x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand 'kv_cache' (operand group 'state' #2) of a ratio-2 kv source must be a static tensor [C, head_dim] (C = ceil(max_seq_len / compress_ratio)) = [32, 32] of 'bf16', got 'tensor<?x32xbf16>'}}
  %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %wgate_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_i, %wproj) state(%kvs, %scs, %kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<?x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<?x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

// C = ceil(max_seq_len / compress_ratio) = ceil(63 / 2) = 32.
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xf32>, %wgate_c: tensor<32x64xf32>, %norm_c: tensor<32xbf16>, %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %kvs: tensor<2x32xf32>, %scs: tensor<2x32xf32>, %kvc: tensor<32x32xbf16>, %ikc: tensor<31x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand 'index_k_cache' (operand group 'state' #3) of a ratio-2 kv source must be a static tensor [C, index_head_dim] (C = ceil(max_seq_len / compress_ratio)) = [32, 32] of 'bf16', got 'tensor<31x32xbf16>'}}
  %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %wgate_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_i, %wproj) state(%kvs, %scs, %kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 63, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<31x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<31x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

// Every ratio > 0 layer threads the four shared slots.
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>) {
  // expected-error @+1 {{operand group 'shared' of a compress_ratio > 0 layer must be (compress_kv, index_k, topk_idxs, candidates), got 3 operands}}
  %r0, %r1, %r2, %r3, %r4 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) shared(%s_kv, %s_ik, %s_topk)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = false, is_index_source = false, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi64>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand 'topk_idxs' (operand group 'shared' #2) of a compress_ratio > 0 layer must be a tensor [?, ?] = [?, ?] of 'i32', got 'tensor<?x?xi64>'}}
  %r0, %r1, %r2, %r3, %r4, %r5 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = false, is_index_source = false, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi64>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi64>, tensor<?x?xi1>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %s_kv: tensor<?x64xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand 'compress_kv' (operand group 'shared' #0) of a compress_ratio > 0 layer must be a tensor [?, head_dim] = [?, 32] of 'bf16', got 'tensor<?x64xbf16>'}}
  %r0, %r1, %r2, %r3, %r4, %r5 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = false, is_index_source = false, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x64xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand 'index_k' (operand group 'shared' #1) of a compress_ratio > 0 layer must be a tensor [?, index_head_dim] = [?, 32] of 'bf16', got 'tensor<?x64xbf16>'}}
  %r0, %r1, %r2, %r3, %r4, %r5 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = false, is_index_source = false, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x64xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x64xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?xi1>) {
  // expected-error @+1 {{operand 'candidates' (operand group 'shared' #3) of a compress_ratio > 0 layer must be a tensor [?, ?] = [?, ?] of 'i1', got 'tensor<?xi1>'}}
  %r0, %r1, %r2, %r3, %r4, %r5 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = false, is_index_source = false, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?xi1>)
  return
}

// -----

// new_shared carries the slots' types (a published cache is cast to the slot type).
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xf32>, %wgate_c: tensor<32x64xf32>, %norm_c: tensor<32xbf16>, %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %kvs: tensor<2x32xf32>, %scs: tensor<2x32xf32>, %kvc: tensor<32x32xbf16>, %ikc: tensor<32x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{result 'new_shared' #0 type 'tensor<32x32xbf16>' must equal the type of operand group 'shared' #0 ('tensor<?x32xbf16>')}}
  %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %wgate_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_i, %wproj) state(%kvs, %scs, %kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %wkv_c: tensor<32x64xf32>, %wgate_c: tensor<32x64xf32>, %norm_c: tensor<32xbf16>, %wk: tensor<32x32xbf16>, %k_norm: tensor<32xbf16>, %wq_b_i: tensor<64x16xbf16>, %wproj: tensor<2x64xbf16>, %kvs: tensor<2x32xf32>, %scs: tensor<2x32xf32>, %kvc: tensor<32x32xbf16>, %ikc: tensor<32x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{result 'new_state' #3 type 'tensor<?x32xbf16>' must equal the type of operand group 'state' #3 ('tensor<32x32xbf16>')}}
  %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%wkv_c, %wgate_c, %norm_c) index_keys(%wk, %k_norm) indexer(%wq_b_i, %wproj) state(%kvs, %scs, %kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

// The custom form derives the result groups from the operand groups.
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+3 {{'dsa.attention' has 6 results (out, new_ring, one new_state per 'state' operand (0), one new_shared per 'shared' operand (4)), but the type lists 5}}
  %r0, %r1, %r2, %r3, %r4 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = false, is_index_source = false, is_candidate_source = false, uses_candidates = false, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>)
  return
}

// -----

// The generic form can state any result segments: a ratio-0 layer has no new_state.
func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{result group 'new_state' must have one result per operand of group 'state' (0), got 1}}
  %r:3 = "dsa.attention"(%x, %sp, %ring, %sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      <{config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>,
        operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1, 0>}>
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<8x32xbf16>)
  return
}

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>) {
  // expected-error @+1 {{'weights(...)' must list the 8 weights (attn_sink, wq_a, q_norm, wq_b, wkv, kv_norm, wo_a, wo_b), got 2}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return
}

//===----------------------------------------------------------------------===//
// dsa.attention, batched decode (start_pos a tensor<B x i64>): one wrong operand per case
//===----------------------------------------------------------------------===//

// -----

func.func @attention_batched(%x: tensor<?x1x64xbf16>, %sp: tensor<2x3xi64>, %ring: tensor<?x8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'start_pos' of a batched step must be a tensor<B x i64> (one position per sequence), got 'tensor<2x3xi64>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x1x64xbf16>, tensor<2x3xi64>, tensor<?x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x1x64xbf16>, tensor<?x8x32xbf16>)
  return
}

// -----

func.func @attention_batched(%x: tensor<?x2x64xbf16>, %sp: tensor<?xi64>, %ring: tensor<?x8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'x' of a batched step must have shape [B, 1, dim] = [?, 1, 64] (B from 'start_pos', one token per sequence), got 'tensor<?x2x64xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x2x64xbf16>, tensor<?xi64>, tensor<?x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x2x64xbf16>, tensor<?x8x32xbf16>)
  return
}

// -----

func.func @attention_batched(%x: tensor<?x64xbf16>, %sp: tensor<?xi64>, %ring: tensor<?x8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'x' of a batched step must have shape [B, 1, dim] = [?, 1, 64] (B from 'start_pos', one token per sequence), got 'tensor<?x64xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x64xbf16>, tensor<?xi64>, tensor<?x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<?x8x32xbf16>)
  return
}

// -----

func.func @attention_batched(%x: tensor<3x1x64xbf16>, %sp: tensor<4xi64>, %ring: tensor<?x8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'x' of a batched step must have shape [B, 1, dim] = [4, 1, 64] (B from 'start_pos', one token per sequence), got 'tensor<3x1x64xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<3x1x64xbf16>, tensor<4xi64>, tensor<?x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<3x1x64xbf16>, tensor<?x8x32xbf16>)
  return
}

// -----

func.func @attention_batched(%x: tensor<3x1x64xbf16>, %sp: tensor<?xi64>, %ring: tensor<4x8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'ring' of a batched step must have shape [B, window_size, head_dim] = [3, 8, 32] (window_size and head_dim static), got 'tensor<4x8x32xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<3x1x64xbf16>, tensor<?xi64>, tensor<4x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<3x1x64xbf16>, tensor<4x8x32xbf16>)
  return
}

// -----

func.func @attention_batched(%x: tensor<?x1x64xbf16>, %sp: tensor<?xi64>, %ring: tensor<?x?x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'ring' of a batched step must have shape [B, window_size, head_dim] = [?, 8, 32] (window_size and head_dim static), got 'tensor<?x?x32xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x1x64xbf16>, tensor<?xi64>, tensor<?x?x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x1x64xbf16>, tensor<?x?x32xbf16>)
  return
}

// -----

func.func @attention_batched(%x: tensor<?x1x64xbf16>, %sp: tensor<?xi64>, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operand 'ring' of a batched step must have shape [B, window_size, head_dim] = [?, 8, 32] (window_size and head_dim static), got 'tensor<8x32xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x1x64xbf16>, tensor<?xi64>, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x1x64xbf16>, tensor<8x32xbf16>)
  return
}

// -----

func.func @attention_batched(%x: tensor<?x1x64xbf16>, %sp: tensor<?xi64>, %ring: tensor<?x8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{result 'out' must have shape [B, 1, dim] (the shape of 'x') = [?, 1, 64], got 'tensor<?x64xbf16>'}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 1.0e4>>}
      : (tensor<?x1x64xbf16>, tensor<?xi64>, tensor<?x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<?x8x32xbf16>)
  return
}

// -----

// A batched compressed layer: the slots have a leading B (rank 2 is the batch-1 form).
func.func @attention(%x: tensor<?x1x64xbf16>, %sp: tensor<?xi64>, %ring: tensor<?x8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %iwq: tensor<64x16xbf16>, %wp: tensor<2x64xbf16>, %s_kv: tensor<?x32xbf16>, %s_ik: tensor<?x32xbf16>, %s_topk: tensor<?x?xi32>, %s_cand: tensor<?x?xi1>) {
  // expected-error @+1 {{operand 'compress_kv' (operand group 'shared' #0) of a compress_ratio > 0 layer must be a tensor [B, ?, head_dim] = [?, ?, 32] of 'bf16', got 'tensor<?x32xbf16>'}}
  %r0, %r1, %r2, %r3, %r4, %r5 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) indexer(%iwq, %wp) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 1, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = false, is_index_source = true, is_candidate_source = false, uses_candidates = true, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x1x64xbf16>, tensor<?xi64>, tensor<?x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>) -> (tensor<?x1x64xbf16>, tensor<?x8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
  return
}

// -----

// A batched step's topk_idxs and candidates slots hold one token row per sequence: [B, 1, ?].
func.func @attention(%x: tensor<?x1x64xbf16>, %sp: tensor<?xi64>, %ring: tensor<?x8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %iwq: tensor<64x16xbf16>, %wp: tensor<2x64xbf16>, %s_kv: tensor<?x?x32xbf16>, %s_ik: tensor<?x?x32xbf16>, %s_topk: tensor<?x2x?xi32>, %s_cand: tensor<?x1x?xi1>) {
  // expected-error @+1 {{operand 'topk_idxs' (operand group 'shared' #2) of a compress_ratio > 0 layer must be a tensor [B, 1, ?] = [?, 1, ?] of 'i32', got 'tensor<?x2x?xi32>'}}
  %r0, %r1, %r2, %r3, %r4, %r5 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) indexer(%iwq, %wp) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 1, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = false, is_index_source = true, is_candidate_source = false, uses_candidates = true, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<?x1x64xbf16>, tensor<?xi64>, tensor<?x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x2x?xi32>, tensor<?x1x?xi1>) -> (tensor<?x1x64xbf16>, tensor<?x8x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x2x?xi32>, tensor<?x1x?xi1>)
  return
}

// -----

// A batched kv source's state has a leading B; B agrees with start_pos's (4 here).
func.func @attention(%x: tensor<4x1x64xbf16>, %sp: tensor<4xi64>, %ring: tensor<4x8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>, %cwkv: tensor<32x64xf32>, %cwg: tensor<32x64xf32>, %cn: tensor<32xbf16>, %wk: tensor<32x32xbf16>, %kn: tensor<32xbf16>, %iwq: tensor<64x16xbf16>, %wp: tensor<2x64xbf16>, %kvs: tensor<4x2x32xf32>, %scs: tensor<3x2x32xf32>, %kvc: tensor<4x32x32xbf16>, %ikc: tensor<4x32x32xbf16>, %s_kv: tensor<?x?x32xbf16>, %s_ik: tensor<?x?x32xbf16>, %s_topk: tensor<?x1x?xi32>, %s_cand: tensor<?x1x?xi1>) {
  // expected-error @+1 {{operand 'score_state' (operand group 'state' #1) of a ratio-2 kv source must be a static tensor [B, compress_ratio, head_dim] = [4, 2, 32] of 'f32', got 'tensor<3x2x32xf32>'}}
  %r:10 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) compressor(%cwkv, %cwg, %cn) index_keys(%wk, %kn) indexer(%iwq, %wp) state(%kvs, %scs, %kvc, %ikc) shared(%s_kv, %s_ik, %s_topk, %s_cand)
      {config = #dsa.attn_config<layer_id = 2, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>, compress = #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = false, uses_candidates = true, index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3, candidate_block_size = 2, max_seq_len = 64, index_k_source = #dsa.index_k_source<published_slot>, tie_order = #dsa.tie_order<torch_cpu>>>}
      : (tensor<4x1x64xbf16>, tensor<4xi64>, tensor<4x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>, tensor<64x16xbf16>, tensor<2x64xbf16>, tensor<4x2x32xf32>, tensor<3x2x32xf32>, tensor<4x32x32xbf16>, tensor<4x32x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x1x?xi32>, tensor<?x1x?xi1>) -> (tensor<4x1x64xbf16>, tensor<4x8x32xbf16>, tensor<4x2x32xf32>, tensor<3x2x32xf32>, tensor<4x32x32xbf16>, tensor<4x32x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x1x?xi32>, tensor<?x1x?xi1>)
  return
}
