// Every diagnostic of the dsa verifiers (lib/Dialect/DSA/IR/DSAOps.cpp, DSAAttrs.cpp), one case per message.
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
  // expected-error @+1 {{result has 5 rows but the window has s = 3 rows (prefill, 'kv') or W = 8 rows (decode, 'ring')}}
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
// dsa.attention (one operand wrong per case; the rest is the tiny golden's L0)
//===----------------------------------------------------------------------===//

// -----

func.func @attention(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>, %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>,
    %wq_b: tensor<128x16xbf16>, %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>, %wo_b: tensor<64x32xbf16>) {
  // expected-error @+1 {{compress_ratio > 0 layers are not supported yet (config has compress_ratio = 2)}}
  %out, %ring1 = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 2, norm_eps = 1.0e-20 : f32, rope = #dsa.rope<rope_dim = 8, theta = 4.0e4, yarn = #dsa.yarn<original_seq_len = 32, factor = 2.0, beta_fast = 32.0, beta_slow = 1.0>>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return
}

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
