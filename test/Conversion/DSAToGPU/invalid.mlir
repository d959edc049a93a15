// RUN: dsa-opt %s --split-input-file --dsa-to-gpu --verify-diagnostics

// What dsa-to-gpu does not lower gets a diagnostic on the op, never a crash or partial IR.

func.func @not_decomposed(%x: tensor<?x64xbf16>, %sp: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>,
                          %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
                          %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>,
                          %wo_b: tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>) {
  // expected-error @+1 {{'dsa.attention' op dsa-to-gpu: run dsa-decompose-attention first (--dsa-gpu-pipeline does)}}
  %out, %r = dsa.attention %x, %sp, %ring weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 0, norm_eps = 9.99999968E-21 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return %out, %r : tensor<?x64xbf16>, tensor<8x32xbf16>
}

// -----

func.func @fp4_f32(%k: tensor<?x32xf32>) -> tensor<?x32xbf16> {
  // expected-error @+1 {{'dsa.fp4_quant_e8m0' op dsa-to-gpu: the fp4 round trip of an f32 x is not lowered to the GPU (the model quantises bf16 values)}}
  %q = dsa.fp4_quant_e8m0 %k {block_size = 32 : i64} : (tensor<?x32xf32>) -> tensor<?x32xbf16>
  return %q : tensor<?x32xbf16>
}

// -----

func.func @slice_not_leading_rows(%c: tensor<32x32xbf16>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{'tensor.extract_slice' op dsa-to-gpu: only a slice of the leading rows of a tensor (offsets 0, strides 1, every other dimension whole and static) is lowered}}
  %s = tensor.extract_slice %c[2, 0] [4, 16] [1, 1] : tensor<32x32xbf16> to tensor<4x16xbf16>
  return %s : tensor<4x16xbf16>
}

// -----

func.func @concat_three(%a: tensor<?x32xbf16>, %b: tensor<?x32xbf16>) -> tensor<?x32xbf16> {
  // expected-error @+1 {{'tensor.concat' op dsa-to-gpu: only a concatenation of two tensors is lowered}}
  %c = tensor.concat dim(0) %a, %b, %a : (tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>) -> tensor<?x32xbf16>
  return %c : tensor<?x32xbf16>
}

// -----

func.func @concat_f32_cols(%a: tensor<4x?xf32>, %b: tensor<4x?xf32>) -> tensor<4x?xf32> {
  // expected-error @+1 {{'tensor.concat' op dsa-to-gpu: only bf16 concatenation along dim 0 and i32 [rows, w] along dim 1 are lowered}}
  %c = tensor.concat dim(1) %a, %b : (tensor<4x?xf32>, tensor<4x?xf32>) -> tensor<4x?xf32>
  return %c : tensor<4x?xf32>
}

// -----

func.func @elementwise_select(%m: tensor<4xi1>, %a: tensor<4xbf16>, %b: tensor<4xbf16>) -> tensor<4xbf16> {
  // expected-error @+1 {{'arith.select' op dsa-to-gpu: an elementwise select on tensors is not lowered (only a scalar i1 condition choosing between two tensors)}}
  %c = arith.select %m, %a, %b : tensor<4xi1>, tensor<4xbf16>
  return %c : tensor<4xbf16>
}

// -----

func.func @extf_f64(%a: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{'arith.extf' op dsa-to-gpu: only bf16 -> f32 extf and f32 -> bf16 truncf on tensors are lowered}}
  %c = arith.extf %a : tensor<4xf32> to tensor<4xf64>
  return %c : tensor<4xf64>
}

// -----

// expected-error @+1 {{'func.func' op dsa-to-gpu: the symbol 'dsa_cpu_topk_set' is taken by something other than the top-k runtime's declaration}}
func.func private @dsa_cpu_topk_set(i64) -> i32

func.func @topk(%sc: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xi32> {
  %t = dsa.indexer_topk %sc, %sp {ratio = 1 : i64, index_topk = 6 : i64, window_size = 8 : i64,
                                  tie_order = #dsa.tie_order<torch_cpu>} : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
  return %t : tensor<?x?xi32>
}

// -----

func.func @f32_rms_norm(%x: tensor<?x32xf32>, %w: tensor<32xbf16>) -> tensor<?x32xbf16> {
  // expected-error @+1 {{'dsa.rms_norm' op dsa-to-gpu: rms_norm of an f32 x (the ratio >= 2 compressor's) is not lowered to the GPU yet}}
  %y = dsa.rms_norm %x, %w {eps = 9.99999968E-21 : f32} : (tensor<?x32xf32>, tensor<32xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// -----

func.func @host_tensor_op(%x: tensor<4x32xbf16>) -> tensor<4x32xbf16> {
  // expected-error @+1 {{'tensor.empty' op dsa-to-gpu: unsupported op on the host side (the GPU backend lowers straight-line functions of dsa primitives, tensor.dim/expand_shape/collapse_shape/cast, leading-row extract_slice, two-input concat, a scalar select of tensors, bf16<->f32 extf/truncf and scalar ops)}}
  %e = tensor.empty() : tensor<4x32xbf16>
  return %e : tensor<4x32xbf16>
}

// -----

// expected-error @+1 {{'func.func' op dsa-to-gpu: external functions on tensors are not supported}}
func.func private @external(tensor<4x32xbf16>) -> tensor<4x32xbf16>

// -----

// expected-error @+1 {{'func.func' op dsa-to-gpu: only single-block functions are supported}}
func.func @branches(%x: tensor<4x32xbf16>, %c: i1) -> tensor<4x32xbf16> {
  cf.cond_br %c, ^a, ^b
^a:
  return %x : tensor<4x32xbf16>
^b:
  return %x : tensor<4x32xbf16>
}
