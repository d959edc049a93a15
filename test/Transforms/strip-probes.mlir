// RUN: dsa-opt --dsa-strip-probes %s | FileCheck %s
// RUN: dsa-opt --dsa-decompose-attention --dsa-strip-probes %s | FileCheck %s --check-prefix=PIPE
// The compiled output of every function here verifies after each pass, on the CPU pipeline (serial and OpenMP) (the GPU backend rejects
// the scf.if of @probes with a diagnostic: it lowers straight-line functions).
// RUN: dsa-opt --verify-each --dsa-cpu-pipeline %s -o /dev/null
// RUN: dsa-opt --verify-each --dsa-cpu-pipeline="parallel=true" %s -o /dev/null

// dsa-strip-probes erases every dsa.probe, also inside nested regions, and nothing else: the probed values and
// their producers stay (a probe has no effect on the computation), and ops that are not probes are untouched.

// CHECK-LABEL: func.func @probes(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x64xbf16>, %[[W:[^:]+]]: tensor<16x64xbf16>, %[[SP:[^:]+]]: i64, %[[C:[^:]+]]: i1)
// CHECK-NOT:  dsa.probe
// CHECK:      %[[Y:.+]] = dsa.linear %[[X]], %[[W]] : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
// CHECK-NEXT: %[[Z:.+]] = scf.if %[[C]] -> (tensor<?x16xbf16>) {
// CHECK-NEXT:   %[[W2:.+]] = arith.constant dense<1.000000e+00> : tensor<16x16xbf16>
// CHECK-NEXT:   %[[N:.+]] = dsa.linear %[[Y]], %[[W2]] : (tensor<?x16xbf16>, tensor<16x16xbf16>) -> tensor<?x16xbf16>
// CHECK-NEXT:   scf.yield %[[N]] : tensor<?x16xbf16>
// CHECK-NEXT: } else {
// CHECK-NEXT:   scf.yield %[[Y]] : tensor<?x16xbf16>
// CHECK-NEXT: }
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[S:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<?x64xbf16>
// CHECK-NEXT: %[[IDX:.+]] = dsa.window_indices %[[SP]], %[[S]] {window_size = 8 : i64}
// CHECK-NEXT: return %[[Z]], %[[IDX]] : tensor<?x16xbf16>, tensor<?x?xi32>
// CHECK-NOT:  dsa.probe
func.func @probes(%x: tensor<?x64xbf16>, %w: tensor<16x64xbf16>, %start_pos: i64, %c: i1)
    -> (tensor<?x16xbf16>, tensor<?x?xi32>) {
  dsa.probe "L0.attn_in" %x : tensor<?x64xbf16>
  %y = dsa.linear %x, %w : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
  dsa.probe "L0.y" %y : tensor<?x16xbf16>
  %z = scf.if %c -> (tensor<?x16xbf16>) {
    %w2 = arith.constant dense<1.0> : tensor<16x16xbf16>
    %n = dsa.linear %y, %w2 : (tensor<?x16xbf16>, tensor<16x16xbf16>) -> tensor<?x16xbf16>
    dsa.probe "L0.nested" %n : tensor<?x16xbf16>
    scf.yield %n : tensor<?x16xbf16>
  } else {
    scf.yield %y : tensor<?x16xbf16>
  }
  %c0 = arith.constant 0 : index
  %s = tensor.dim %x, %c0 : tensor<?x64xbf16>
  %idx = dsa.window_indices %start_pos, %s {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
  dsa.probe "L0.sa_topk_idxs" %idx : tensor<?x?xi32>
  return %z, %idx : tensor<?x16xbf16>, tensor<?x?xi32>
}

// After the decomposition, stripping leaves the whole computation (every primitive) and no probe.
// PIPE-LABEL: func.func @layer(
// PIPE-NOT:   dsa.probe
// PIPE:       arith.constant 0 : index
// PIPE-NEXT:  tensor.dim
// PIPE-NEXT:  dsa.positions
// PIPE-NEXT:  dsa.linear
// PIPE-NEXT:  dsa.rms_norm
// PIPE-NEXT:  dsa.linear
// PIPE-NEXT:  tensor.expand_shape
// PIPE-NEXT:  dsa.apply_rope
// PIPE-NEXT:  dsa.linear
// PIPE-NEXT:  dsa.rms_norm
// PIPE-NEXT:  dsa.apply_rope
// PIPE-NEXT:  dsa.act_quant_fp8
// PIPE-NEXT:  %[[RING:.+]] = dsa.ring_update
// PIPE-NEXT:  dsa.window_kv
// PIPE-NEXT:  dsa.window_indices
// PIPE-NEXT:  dsa.sparse_attn
// PIPE-NEXT:  dsa.apply_rope
// PIPE-NEXT:  dsa.grouped_output
// PIPE-NEXT:  %[[OUT:.+]] = dsa.linear
// PIPE-NEXT:  return %[[OUT]], %[[RING]]
// PIPE-NOT:   dsa.probe
func.func @layer(%x: tensor<?x64xbf16>, %start_pos: i64, %ring: tensor<8x32xbf16>, %sink: tensor<4xf32>,
                 %wq_a: tensor<16x64xbf16>, %q_norm: tensor<16xbf16>, %wq_b: tensor<128x16xbf16>,
                 %wkv: tensor<32x64xbf16>, %kv_norm: tensor<32xbf16>, %wo_a: tensor<32x64xbf16>,
                 %wo_b: tensor<64x32xbf16>) -> (tensor<?x64xbf16>, tensor<8x32xbf16>) {
  %out, %ring1 = dsa.attention %x, %start_pos, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 0, norm_eps = 9.99999968E-21 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04>>}
      : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
  return %out, %ring1 : tensor<?x64xbf16>, tensor<8x32xbf16>
}
