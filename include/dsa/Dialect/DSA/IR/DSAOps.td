//===- DSAOps.td - dsa operations ---------------------------------------------===//
#ifndef DSA_OPS_TD
#define DSA_OPS_TD

include "dsa/Dialect/DSA/IR/DSADialect.td"
include "dsa/Dialect/DSA/IR/DSAAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

def DSA_FloatTensor : TensorOf<[BF16, F32]>;
def DSA_BF16Tensor : TensorOf<[BF16]>;
def DSA_F32Tensor : TensorOf<[F32]>;
def DSA_IndexTensor : TensorOf<[I32]>;
def DSA_PositionTensor : TensorOf<[I64]>;

//===----------------------------------------------------------------------===//
// Primitives
//===----------------------------------------------------------------------===//

def DSA_LinearOp : DSA_Op<"linear", [Pure]> {
  let summary = "nn.Linear without bias: y = x W^T (attention-semantics.md section 2)";
  let description = [{
    `y[..., n] = sum_k x[..., k] * weight[n, k]` with f32 accumulation in any order. The weight is stored
    `[out, in]` as `nn.Linear` stores it. With bf16 operands the result is rounded to bf16 (the reference's bf16
    GEMM); with f32 operands it is f32 with no rounding (the ratio >= 2 compressor). `x` and `weight` have the same
    element type as the result.

    Example:
    ```mlir
    %qr = dsa.linear %x, %wq_a : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
    ```
  }];
  let arguments = (ins DSA_FloatTensor:$x, DSA_FloatTensor:$weight);
  let results = (outs DSA_FloatTensor:$result);
  let assemblyFormat = "$x `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_RmsNormOp : DSA_Op<"rms_norm", [Pure]> {
  let summary = "RMSNorm over the last dimension, bf16 result (section 2)";
  let description = [{
    Per row: `r = 1/sqrt(mean(x^2) + eps)` in f32; `y = bf16(weight[d] * (x[d] * r))`. `x` may be bf16 or f32;
    `weight` is a bf16 vector of the row's width; the result is bf16 with `x`'s shape.

    Example:
    ```mlir
    %n = dsa.rms_norm %qr, %q_norm {eps = 9.99999968E-21 : f32}
        : (tensor<?x16xbf16>, tensor<16xbf16>) -> tensor<?x16xbf16>
    ```
  }];
  let arguments = (ins DSA_FloatTensor:$x, DSA_BF16Tensor:$weight, F32Attr:$eps);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$x `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_PositionsOp : DSA_Op<"positions", [Pure]> {
  let summary = "absolute positions of a step's rows: start + i * stride";
  let description = [{
    `result[i] = start + i * stride` for `i < count`: the positions the RoPE of a step's rows uses. Tokens of a step
    at `start_pos` use stride 1; compressed groups at ratio r use `start = (start_pos // r) * r`, stride r
    (section 5).

    Example:
    ```mlir
    %pos = dsa.positions %start_pos, %s {stride = 1 : i64} : (i64, index) -> tensor<?xi64>
    ```
  }];
  let arguments = (ins I64:$start, Index:$count, DefaultValuedAttr<I64Attr, "1">:$stride);
  let results = (outs DSA_PositionTensor:$result);
  let assemblyFormat = "$start `,` $count attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_ApplyRopeOp : DSA_Op<"apply_rope", [Pure]> {
  let summary = "rotary embedding on the last rope_dim elements of each row (section 2)";
  let description = [{
    `x` is `[s, ..., hd]`; row `x[t, ...]` is rotated at position `positions[t]`. On the last `rope.rope_dim`
    elements, pair k is the complex number `(row[2k], row[2k+1])` (ADJACENT elements) multiplied by
    `(cos a, sin a)`, `a = f32(p) * f[k]` (by `(cos a, -sin a)` with `inverse`), in f32, each result rounded to
    bf16. The other elements pass through.

    Example:
    ```mlir
    %qrot = dsa.apply_rope %q, %pos {rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04>}
        : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$x, DSA_PositionTensor:$positions, DSA_RopeAttr:$rope,
                       UnitAttr:$inverse);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$x `,` $positions attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_ActQuantFp8Op : DSA_Op<"act_quant_fp8", [Pure]> {
  let summary = "fp8 e4m3 round trip with power-of-two block scales (section 2)";
  let description = [{
    The reference's `act_quant(x, block_size, "ue8m0", inplace=True)`: per block of `block_size` consecutive
    elements of the last dimension, `amax = max(max|x|, 1e-4)`, `s = pow2_ceil(amax / 448)`,
    `x = bf16(e4m3(clamp(x / s, -448, 448)) * s)`. `block_size` must divide the last dimension.

    Example:
    ```mlir
    %kvq = dsa.act_quant_fp8 %kv {block_size = 32 : i64} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$x, DefaultValuedAttr<I64Attr, "32">:$block_size);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_RingUpdateOp : DSA_Op<"ring_update", [Pure]> {
  let summary = "write a step's KV rows into the sliding-window ring (section 4)";
  let description = [{
    `ring` is `[W, hd]`; `kv` holds the step's `s` rows for positions `start_pos .. start_pos+s-1`. Token t lives
    in slot `t % W`: the last `min(s, W)` rows are written there and the other slots keep their contents. This is
    the reference's prefill seeding (start_pos 0, any s) and decode write (s 1) in one rule. Returns the updated
    ring.

    Example:
    ```mlir
    %ring1 = dsa.ring_update %ring, %kv, %start_pos
        : (tensor<8x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<8x32xbf16>
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$ring, DSA_BF16Tensor:$kv, I64:$start_pos);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$ring `,` $kv `,` $start_pos attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_WindowKvOp : DSA_Op<"window_kv", [Pure]> {
  let summary = "the window rows attention reads: the chunk in prefill, the ring in decode (section 4)";
  let description = [{
    Prefill (`start_pos == 0`): the step's own `kv` rows (`[s, hd]`). Decode (`start_pos > 0`): the whole ring
    AFTER this step's `dsa.ring_update` (`[W, hd]`). A step with `start_pos > 0` and more than one token is not a
    reference regime: the runtime splits it into decode steps; an interpreter given one reports an error.

    Example:
    ```mlir
    %rows = dsa.window_kv %kv, %ring1, %start_pos
        : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$kv, DSA_BF16Tensor:$ring, I64:$start_pos);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$kv `,` $ring `,` $start_pos attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_WindowIndicesOp : DSA_Op<"window_indices", [Pure]> {
  let summary = "rows of the window each query reads, V4.1 ring order (section 4)";
  let description = [{
    Prefill (`start_pos == 0`, `count` = s queries): width `min(s, W)`, `idx[t, i] = max(0, t-W+1) + i`, -1 where
    that exceeds t. Decode (`start_pos > 0`, one query): width W, the ring slots oldest first
    (`start_pos % W + 1 .. W-1`, then `0 .. start_pos % W`), each -1 when the slot number exceeds `start_pos`
    (ring still filling). Indices refer to the rows `dsa.window_kv` returns.

    Example:
    ```mlir
    %idx = dsa.window_indices %start_pos, %s {window_size = 8 : i64} : (i64, index) -> tensor<?x?xi32>
    ```
  }];
  let arguments = (ins I64:$start_pos, Index:$count, I64Attr:$window_size);
  let results = (outs DSA_IndexTensor:$result);
  let assemblyFormat = "$start_pos `,` $count attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_SparseAttnOp : DSA_Op<"sparse_attn", [Pure]> {
  let summary = "attention over gathered rows with a per-head sink (section 10)";
  let description = [{
    `q[s, H, hd]`, `kv[n, hd]`, `indices[s, k]` (i32, -1 = no row), `sink[H]` (f32). For query t, head h:
    `z_j = (q[t,h] . kv[indices[t,j]]) * scale` in f32 (-inf where the index is -1), `m = max(sink[h], max_j z_j)`,
    `den = exp(sink[h]-m) + sum_j exp(z_j-m)`, `o[t,h] = bf16(sum_j exp(z_j-m)/den * kv[indices[t,j]])`. The sink
    enters the denominator only; a row whose indices are all -1 gives zeros. `scale` is `hd^-0.5` in the model.

    Example:
    ```mlir
    %o = dsa.sparse_attn %q, %rows, %idx, %sink {scale = 0.176776692 : f32}
        : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$q, DSA_BF16Tensor:$kv, DSA_IndexTensor:$indices, DSA_F32Tensor:$sink,
                       F32Attr:$scale);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$q `,` $kv `,` $indices `,` $sink attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_GroupedOutputOp : DSA_Op<"grouped_output", [Pure]> {
  let summary = "block-diagonal first stage of the grouped output projection (section 11)";
  let description = [{
    `o[s, H, hd]` viewed as `groups` groups of `H*hd/groups` contiguous values per token; `wo_a` is
    `[groups*R, H*hd/groups]`; `og[t, g*R + r] = bf16(sum_d o[t, g, d] * wo_a[g*R + r, d])`. Result
    `[s, groups*R]` bf16. `groups` must divide H.

    Example:
    ```mlir
    %og = dsa.grouped_output %o, %wo_a {groups = 2 : i64}
        : (tensor<?x4x32xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$o, DSA_BF16Tensor:$wo_a, I64Attr:$groups);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$o `,` $wo_a attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_ProbeOp : DSA_Op<"probe", [MemoryEffects<[MemWrite]>]> {
  let summary = "names an intermediate so it stays observable (golden captures)";
  let description = [{
    Records `value` under `name` (the golden's capture name, e.g. `L0.sa_q`). The reference interpreter stores
    every probed value of a run, in order; compiled backends drop probes or return them as extra outputs. A probe
    has no effect on the computation. The layout of a probed tensor is the op's operand as is (the golden's
    leading batch dimension of 1 is implied).

    Example:
    ```mlir
    dsa.probe "L0.sa_q" %q : tensor<?x4x32xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$name, AnyRankedTensor:$value);
  let assemblyFormat = "$name $value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Composite
//===----------------------------------------------------------------------===//

def DSA_AttentionOp : DSA_Op<"attention", [Pure]> {
  let summary = "one DeepSeek-V4.1 attention layer (Attention.forward)";
  let description = [{
    One layer of the reference's `Attention.forward` for a step of `s` tokens at `start_pos`: queries (section 3),
    the window KV row with its fp8 round trip and the ring (section 4), sparse attention with the sink (section 10),
    inverse RoPE and the grouped output projection (section 11). `config` carries the geometry and role. Operands:
    the layer input `x[s, dim]` (bf16, after attn_norm), `start_pos` (i64), the layer's ring `[window_size,
    head_dim]`, and the weights as `nn.Linear` stores them. Results: `out[s, dim]` and the updated ring.
    `dsa-decompose-attention` rewrites it into the primitives, with `dsa.probe`s named `L<layer_id>.sa_q`,
    `.sa_kv`, `.sa_topk_idxs`, `.sa_o`, `.attn_out`.

    Only `compress_ratio = 0` (window-only) layers are supported so far.

    Example:
    ```mlir
    %out, %ring1 = dsa.attention %x, %start_pos, %ring
        weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
        {config = #dsa.attn_config<...>}
        : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
           tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
        -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$x, I64:$start_pos, DSA_BF16Tensor:$ring,
                       DSA_F32Tensor:$attn_sink, DSA_BF16Tensor:$wq_a, DSA_BF16Tensor:$q_norm,
                       DSA_BF16Tensor:$wq_b, DSA_BF16Tensor:$wkv, DSA_BF16Tensor:$kv_norm,
                       DSA_BF16Tensor:$wo_a, DSA_BF16Tensor:$wo_b,
                       DSA_AttnConfigAttr:$config);
  let results = (outs DSA_BF16Tensor:$out, DSA_BF16Tensor:$new_ring);
  let assemblyFormat = [{
    $x `,` $start_pos `,` $ring `weights` `(` $attn_sink `,` $wq_a `,` $q_norm `,` $wq_b `,` $wkv `,` $kv_norm `,`
    $wo_a `,` $wo_b `)` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // DSA_OPS_TD
