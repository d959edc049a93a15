//===- DSAOps.td - dsa operations ---------------------------------------------===//
//
// The ops of one DeepSeek-V4.1 attention layer. Semantics: shared/spec/attention-semantics.md (the section each op
// follows is named in its summary). Verifiers: compiler/lib/Dialect/DSA/IR/DSAOps.cpp. Op list: docs/ops.md.
//
//===----------------------------------------------------------------------===//
#ifndef DSA_OPS_TD
#define DSA_OPS_TD

include "dsa/Dialect/DSA/IR/DSADialect.td"
include "dsa/Dialect/DSA/IR/DSAAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

// Every dsa tensor is ranked: the verifiers check ranks and the static dimensions they can (a dynamic dimension
// is accepted wherever a static one is expected and is checked at run time by the interpreter).
def DSA_FloatTensor : RankedTensorOf<[BF16, F32]>;
def DSA_BF16Tensor : RankedTensorOf<[BF16]>;
def DSA_F32Tensor : RankedTensorOf<[F32]>;
def DSA_IndexTensor : RankedTensorOf<[I32]>;
def DSA_PositionTensor : RankedTensorOf<[I64]>;
def DSA_MaskTensor : RankedTensorOf<[I1]>;

//===----------------------------------------------------------------------===//
// Primitives
//===----------------------------------------------------------------------===//

def DSA_LinearOp : DSA_Op<"linear", [Pure]> {
  let summary = "nn.Linear without bias: y = x W^T (attention-semantics.md section 2)";
  let description = [{
    `y[..., n] = sum_k x[..., k] * weight[n, k]` with f32 accumulation in any order (section 2, "linear"). The
    weight is stored `[out, in]` = `[N, K]` as `nn.Linear` stores it.

    - bf16 `x`, `weight` and result: the reference's bf16 GEMM, the sum rounded to bf16 (RNE).
    - f32 `x`, `weight` and result: no rounding (only the ratio >= 2 compressor uses it, section 5).

    Verified: `x` has rank >= 2 (`[..., K]`), `weight` has rank 2, `weight`'s K equals `x`'s last dimension, the
    result is `x`'s leading dimensions followed by N, and the three element types are all bf16 or all f32.

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
  let summary = "RMSNorm over the last dimension, bf16 result (attention-semantics.md section 2)";
  let description = [{
    Per row of the last dimension (width D): `r = 1/sqrt(mean(x^2) + eps)` in f32, then
    `y[d] = bf16(weight[d] * (x[d] * r))` (section 2, "rms_norm"). `x` may be bf16 or f32 (the ratio >= 2
    compressor normalises its bf16-rounded pooled rows); `weight` is a bf16 vector `[D]` used as f32; the result is
    bf16 with `x`'s shape. `eps` is the model's `norm_eps` (1e-20), an f32 attribute that must be finite and >= 0.

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
  let summary = "absolute positions of a step's rows: start + i * stride (attention-semantics.md sections 3-5)";
  let description = [{
    `result[i] = start + i * stride` for `i < count` (i64): the positions at which RoPE rotates a step's rows. The
    `s` tokens of a step at `start_pos` use `start = start_pos`, stride 1 (sections 3 and 4). Compressed group j
    stands for position `j * r` (section 5), so a step's groups use `start = (start_pos // r) * r`, stride r.
    `stride` must be > 0 (default 1); the result is a rank-1 tensor of `count` elements.

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
  let summary = "rotary embedding on the last rope_dim elements of each row (attention-semantics.md section 2)";
  let description = [{
    `x` is `[s, ..., D]` (rank >= 2, bf16); every row `x[t, ...]` is rotated at position `positions[t]`
    (`positions` is `[s]`, i64). With the frequency table `f` of `rope` (section 2, "RoPE tables") and
    `a = f32(p) * f[k]`: on the last `rope.rope_dim` elements of the row, pair k is the complex number
    `(row[2k], row[2k+1])` (ADJACENT elements, not halves) multiplied by `(cos a, sin a)`, or by `(cos a, -sin a)`
    when `inverse` is set (the output's inverse RoPE, section 11), in f32, each result rounded to bf16. The first
    `D - rope_dim` elements pass through. `rope.rope_dim` (even, by the attribute) must not exceed D; the result
    has `x`'s type.

    Example:
    ```mlir
    %qrot = dsa.apply_rope %q, %pos {rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>}
        : (tensor<?x4x32xbf16>, tensor<?xi64>) -> tensor<?x4x32xbf16>
    %orot = dsa.apply_rope %o, %pos {inverse, rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>}
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
  let summary = "fp8 e4m3 round trip with power-of-two block scales (attention-semantics.md section 2)";
  let description = [{
    The reference's `act_quant(x, block_size, "ue8m0", inplace=True)` (section 2, "act_quant_fp8"): per block of
    `block_size` consecutive elements of the last dimension, `amax = max(max|x|, 1e-4)`,
    `s = pow2_ceil(amax / 448)`, `x = bf16(e4m3(clamp(x / s, -448, 448)) * s)`. The window KV row is quantised
    whole, rope tail included (section 4). `block_size` (default 32) must be > 0 and divide the last dimension;
    the result has `x`'s type.

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
  let summary = "write a step's KV rows into the sliding-window ring (attention-semantics.md section 4)";
  let description = [{
    `ring` is the layer's window cache `[W, hd]` (static shape, bf16, zero-initialised by the caller); `kv` holds
    the step's `s` rows `[s, hd]` for positions `start_pos .. start_pos+s-1`. Token t lives in slot `t % W`: the
    last `min(s, W)` rows are written to their slots and the other slots keep their contents. This is the
    reference's prefill seeding (`start_pos == 0`, any s: with `s > W`, slots `s%W .. W-1` get tokens
    `s-W ..` and slots `0 .. s%W-1` the last `s%W` tokens) and its decode write (s = 1, slot `start_pos % W`) in
    one rule. `kv`'s row width must equal the ring's; the result is the updated ring, of `ring`'s type.

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
  let summary = "window rows attention reads: the chunk in prefill, the ring in decode (attention-semantics.md section 4)";
  let description = [{
    `ring` is the layer's ring as it stands BEFORE this step's `dsa.ring_update` (static `[W, hd]`), `kv` the
    step's rows `[s, hd]` (same width). Prefill (`start_pos == 0`): `kv` itself (`[s, hd]`). Decode
    (`start_pos > 0`, s = 1): the ring with this step's row in slot `start_pos % W`, i.e. `dsa.ring_update`'s
    result (`[W, hd]`; given the updated ring it returns the same rows). A chunk at `start_pos > 0` with s > 1
    (not a reference regime; section 13 defines it as the tokens fed one decode step at a time):
    `concat(ring, kv)` (`[W + s, hd]`), the rows `dsa.window_indices` maps each token's decode window to
    (docs/architecture.md, "Steps the reference does not have"). The result is `[n, hd]`; a static `n` must be
    `W`, `kv`'s static row count `s` or `W + s`.

    Example:
    ```mlir
    %rows = dsa.window_kv %kv, %ring, %start_pos
        : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$kv, DSA_BF16Tensor:$ring, I64:$start_pos);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$kv `,` $ring `,` $start_pos attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_WindowIndicesOp : DSA_Op<"window_indices", [Pure]> {
  let summary = "rows of the window each query reads, in V4.1 ring order (attention-semantics.md section 4)";
  let description = [{
    `result[t, i]` (i32) is the row of `dsa.window_kv`'s result that query t reads, -1 for none.
    Prefill (`start_pos == 0`, `count` = s queries): width `min(s, W)`, `idx[t, i] = max(0, t-W+1) + i`, -1 where
    that exceeds t. Decode (`start_pos > 0`, `count` = 1): width W, the ring slots oldest first
    (`start_pos % W + 1 .. W-1`, then `0 .. start_pos % W`), each -1 when the slot number exceeds `start_pos` (the
    ring is still filling). Example with W = 8, prefill 3 then decode at 3: `[-1,-1,-1,-1,0,1,2,3]`. This is V4.1's
    order; V4 (0731) lists `[0..sp, -1, ...]` instead, and index tensors are compared exactly.
    A chunk at `start_pos > 0` with `count` > 1: width W, row t (position p = start_pos + t) is decode's row at p
    over the rows of `concat(ring before the step, chunk)`: entry i stands for position `pos = p - W + 1 + i` (what
    slot `(p % W + 1 + i) % W` holds at p) and is -1 if `pos < 0`, `W + pos - start_pos` if `pos >= start_pos`, else
    `pos % W`; so every token reads the same rows, in the same order, as its own decode step.
    `window_size` (W) must be > 0; the result is rank 2, its width static W or dynamic.

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
  let summary = "attention over gathered rows with a per-head sink (attention-semantics.md section 10)";
  let description = [{
    `q[s, H, hd]` (bf16), `kv[n, hd]` (bf16), `indices[s, k]` (i32, -1 = no row), `sink[H]` (f32). For query t and
    head h: `z_j = (q[t,h] . kv[indices[t,j]]) * scale` in f32 (-inf where the index is -1),
    `m = max(sink[h], max_j z_j)`, `den = exp(sink[h]-m) + sum_j exp(z_j-m)`,
    `o[t,h] = bf16(sum_j exp(z_j-m)/den * kv[indices[t,j]])`. The sink enters the denominator only; a row whose
    indices are all -1 gives zeros (never NaN). `scale` is `hd^-0.5` in the model and must be finite and > 0. The
    result has `q`'s type.

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
  let summary = "block-diagonal first stage of the grouped output projection (attention-semantics.md section 11)";
  let description = [{
    `o[s, H, hd]` (after the inverse RoPE) viewed as `groups` groups of `H*hd/groups` contiguous values per token
    (group g holds heads `g*H/groups ..`); `wo_a` is `[groups*R, H*hd/groups]`;
    `og[t, g*R + r] = bf16(sum_d o[t, g, d] * wo_a[g*R + r, d])`, f32 accumulation. The result is
    `[s, groups*R]` bf16 (the input of `wo_b`). `groups` (the model's `o_groups`) must be > 0 and divide H, and
    `wo_a`'s row count must be a multiple of `groups`.

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
  let summary = "names an intermediate so it stays observable (golden captures, tiny-model-harness.md)";
  let description = [{
    Records `value` under `name` (the golden's capture name, e.g. `L0.sa_q`; must not be empty). The reference
    interpreter stores every probed value of a run, in order; compiled backends drop probes
    (`dsa-strip-probes`) or return them as extra outputs. A probe does not change the computation; its write
    effect only keeps it from being folded away. The layout of a probed tensor is the operand as is (the golden's
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
// Compressed attention primitives (sections 5-9; design: docs/design-compressed.md)
//===----------------------------------------------------------------------===//

def DSA_CompressPoolOp : DSA_Op<"compress_pool", [Pure]> {
  let summary = "ratio >= 2 Compressor state update and softmax pooling (attention-semantics.md section 5)";
  let description = [{
    `kv`, `score` are the step's f32 projections `[s, hd]`; `kv_state` / `score_state` `[ratio, hd]` f32 hold the
    partial group (zeros / -inf initially). Prefill (`start_pos == 0`): with `rem = s % ratio`, the last rem rows go
    to state slots `0..rem-1`; every full group pools. Decode (`start_pos > 0`, one token): the row goes to slot
    `start_pos % ratio`; when `(start_pos+1) % ratio == 0` the whole state pools. A chunk (`s > 1` tokens at
    `start_pos > 0`, section 13) is its tokens' decode steps in order. Pooling, per dimension d:
    `sum_i kv[i,d] * softmax_i(score[i,d])` over the group's `ratio` members, f32. Results: `pooled` `[g, hd]` f32
    (g = completed groups, possibly 0), and the updated states.

    Verified: `ratio` >= 2 (ratio 1 does not pool); `kv` rank 2 and `score` of `kv`'s type; `kv_state` `[ratio, hd]`
    and `score_state` of `kv_state`'s type; `pooled` `[g, hd]`; `new_kv_state` / `new_score_state` of the states'
    type.

    Example:
    ```mlir
    %pooled, %kvs1, %scs1 = dsa.compress_pool %kv, %score, %kvs, %scs, %start_pos {ratio = 2 : i64}
        : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, i64)
        -> (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>)
    ```
  }];
  let arguments = (ins DSA_F32Tensor:$kv, DSA_F32Tensor:$score, DSA_F32Tensor:$kv_state,
                       DSA_F32Tensor:$score_state, I64:$start_pos, I64Attr:$ratio);
  let results = (outs DSA_F32Tensor:$pooled, DSA_F32Tensor:$new_kv_state, DSA_F32Tensor:$new_score_state);
  let assemblyFormat = [{
    $kv `,` $score `,` $kv_state `,` $score_state `,` $start_pos attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def DSA_Fp4QuantE8M0Op : DSA_Op<"fp4_quant_e8m0", [Pure]> {
  let summary = "fp4 e2m1 round trip with power-of-two block scales (section 2; indexer q and keys)";
  let description = [{
    The reference's `fp4_act_quant(x, block_size, inplace=True)`: per block of `block_size` (32) consecutive
    elements of the last dimension, `amax = max(max|x|, 6*2^-126)`, `s = pow2_ceil(amax / 6)`,
    `x = bf16(e2m1(clamp(x/s, -6, 6)) * s)`. Result bf16 with `x`'s shape.

    Verified (both fp4 ops): `block_size` > 0 and dividing the last dimension of `x` (rank >= 1); the result has
    exactly `x`'s shape.

    Example:
    ```mlir
    %kq = dsa.fp4_quant_e8m0 %k {block_size = 32 : i64} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
    ```
  }];
  let arguments = (ins DSA_FloatTensor:$x, DefaultValuedAttr<I64Attr, "32">:$block_size);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_Fp4QuantE4M3Op : DSA_Op<"fp4_quant_e4m3", [Pure]> {
  let summary = "fp4 e2m1 round trip with e4m3 block scales (section 2; the compressed KV latent)";
  let description = [{
    The reference's `fp4_act_quant(x, block_size, inplace=True, scale_dtype=e4m3)`: per block of `block_size` (16)
    elements, `amax = max(max|x|, 6*2^-9)`, `s = e4m3(amax / 6)`, `x = bf16(e2m1(clamp(x/s, -6, 6)) * s)`.

    Example:
    ```mlir
    %lq = dsa.fp4_quant_e4m3 %latent {block_size = 16 : i64} : (tensor<?x32xbf16>) -> tensor<?x32xbf16>
    ```
  }];
  let arguments = (ins DSA_FloatTensor:$x, DefaultValuedAttr<I64Attr, "16">:$block_size);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_CacheWriteOp : DSA_Op<"cache_write", [Pure]> {
  let summary = "write compressed rows into a per-layer cache at start_pos // ratio (sections 6, 8)";
  let description = [{
    `cache` `[C, w]`, `rows` `[g, w]`: rows `start_pos // ratio .. start_pos // ratio + g - 1` of the cache are
    replaced by `rows` (g may be 0). Writing past row C is an error at run time. Returns the updated cache.

    Verified: `ratio` >= 1; `cache` and `rows` rank 2 with the same row width; the result has `cache`'s type.

    Example:
    ```mlir
    %c1 = dsa.cache_write %cache, %rows, %start_pos {ratio = 2 : i64}
        : (tensor<32x32xbf16>, tensor<?x32xbf16>, i64) -> tensor<32x32xbf16>
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$cache, DSA_BF16Tensor:$rows, I64:$start_pos, I64Attr:$ratio);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$cache `,` $rows `,` $start_pos attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_IndexerScoresOp : DSA_Op<"indexer_scores", [Pure]> {
  let summary = "indexer scores over the compressed positions (section 6 steps 3-4)";
  let description = [{
    `iq` `[s, IH, ihd]` bf16 (rotated, fp4 round-tripped queries), `weights` `[s, IH]` bf16 (the `weights_proj`
    output), `keys` `[n, ihd]` bf16 (the index-key slot as it stands; n >= width). With `w = bf16(weights *
    weight_scale)` and `width = (start_pos + s) // ratio`:
    `score[t, p] = bf16( sum_h bf16( relu(bf16(iq[t,h] . keys[p])) * w[t,h] ) )`, f32 dot products. Result bf16
    `[s, width]`. `weight_scale` is `f32(ihd^-0.5 * IH^-0.5)` in the model.

    Optional `entry_keys` `[n', ihd]` bf16 (n' >= width whenever a row reads it): the keys a token that closes no
    group of `ratio` scores against at `start_pos > 0`. Row t with `(start_pos + t + 1) % ratio != 0` reads `entry_keys` instead of `keys`
    when `start_pos > 0`; every other row (every row of a prefill at `start_pos == 0`, every row at ratio 1) reads
    `keys`. This is the reference's index_k quirk (section 8) per token: token by token, a kv + index source with
    `index_k_source = published_slot` scores a token that produced no latent against the `index_k` slot as it
    stood (`dsa-decompose-attention` passes the slot as it entered the layer, and `keys` = its own cache once it
    published it), so a chunk of several tokens (section 13) can give each row its decode step's keys. Without
    `entry_keys` every row reads `keys`.

    Verified: `ratio` >= 1; `weight_scale` finite and > 0; `iq` rank 3, `weights` `[s, IH]`, `keys` and
    `entry_keys` `[n, ihd]` agreeing with `iq`; the result `[s, width]` (width static or dynamic).

    Example:
    ```mlir
    %sc = dsa.indexer_scores %iq, %w, %keys, %start_pos {ratio = 1 : i64, weight_scale = 1.250000e-01 : f32}
        : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x?xbf16>
    %sq = dsa.indexer_scores %iq, %w, %own, %start_pos entry_keys %slot
        {ratio = 4 : i64, weight_scale = 1.250000e-01 : f32}
        : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<64x32xbf16>, i64, tensor<64x32xbf16>) -> tensor<?x?xbf16>
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$iq, DSA_BF16Tensor:$weights, DSA_BF16Tensor:$keys, I64:$start_pos,
                       Optional<DSA_BF16Tensor>:$entry_keys, I64Attr:$ratio, F32Attr:$weight_scale);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$iq `,` $weights `,` $keys `,` $start_pos (`entry_keys` $entry_keys^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_CompressVisibilityOp : DSA_Op<"compress_visibility", [Pure]> {
  let summary = "mask compressed positions a prefill query cannot see (section 6 step 5)";
  let description = [{
    `compress_len[t] = (start_pos + t + 1) // ratio`: `(t + 1) // ratio` in prefill (`start_pos == 0`),
    `(start_pos + 1) // ratio` in decode, token t's decode value in a chunk (`s > 1` tokens at `start_pos > 0`);
    `score[t, p] = -inf` for `p >= compress_len[t]`. Result: `scores`' type.

    Verified: `ratio` >= 1; `scores` rank 2 (`[s, width]`); the result has `scores`' type.

    Example:
    ```mlir
    %v = dsa.compress_visibility %sc, %start_pos {ratio = 2 : i64} : (tensor<?x?xbf16>, i64) -> tensor<?x?xbf16>
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$scores, I64:$start_pos, I64Attr:$ratio);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$scores `,` $start_pos attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_SelectCandidateBlocksOp : DSA_Op<"select_candidate_blocks", [Pure]> {
  let summary = "level-one top-k over blocks of compressed positions (section 7)";
  let description = [{
    Pads each score row with -inf to a multiple of `block_size`; a block's score is the max over its positions; the
    block holding the query's newest visible position `(compress_len[t] - 1) // block_size` (floor division: none
    when compress_len is 0) is set to +inf; the `tie_order` top-k set of `min(topk_blocks, n_blocks)` blocks is
    taken and picks of value -inf are dropped. Result: i1 `[s, width]`, true on every position of a kept block.
    At `start_pos > 0` row t is ranked as its decode step ranks it: over its first `compress_len[t]` positions only
    (n_blocks and k from that width; the rest of the row false), so a chunk picks what its decode steps pick.

    Verified: `ratio`, `topk_blocks`, `block_size` >= 1; `scores` rank 2; the result has `scores`' shape.

    Example:
    ```mlir
    %mask = dsa.select_candidate_blocks %v, %start_pos
        {ratio = 1 : i64, topk_blocks = 3 : i64, block_size = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>}
        : (tensor<?x?xbf16>, i64) -> tensor<?x?xi1>
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$scores, I64:$start_pos, I64Attr:$ratio, I64Attr:$topk_blocks,
                       I64Attr:$block_size, DSA_TieOrderAttr:$tie_order);
  let results = (outs DSA_MaskTensor:$result);
  let assemblyFormat = "$scores `,` $start_pos attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_ApplyCandidatesOp : DSA_Op<"apply_candidates", [Pure]> {
  let summary = "set scores outside the published candidate blocks to -inf (section 6 step 6)";
  let description = [{
    `score[t, p] = -inf` wherever `mask[t, p]` is false; `mask` has `scores`' shape.

    Verified: `scores` rank 2; `mask` of `scores`' shape; the result has `scores`' type.

    Example:
    ```mlir
    %m = dsa.apply_candidates %v, %mask : (tensor<?x?xbf16>, tensor<?x?xi1>) -> tensor<?x?xbf16>
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$scores, DSA_MaskTensor:$mask);
  let results = (outs DSA_BF16Tensor:$result);
  let assemblyFormat = "$scores `,` $mask attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DSA_IndexerTopkOp : DSA_Op<"indexer_topk", [Pure]> {
  let summary = "the indexer's top-k compressed positions, mapped to attention rows (section 6 step 7)";
  let description = [{
    `k = min(index_topk, width)`; per query row, the `tie_order` top-k SET of positions, sorted ascending, then
    `p -> p + offset` if `p < compress_len[t]` else -1, where `offset` is the number of window rows attention reads
    (`s` in prefill, `window_size` in decode). Result i32 `[s, k]` (k = 0 when width = 0). A chunk (`s > 1`
    tokens at `start_pos > 0`) ranks row t as its decode step does: over its first `compress_len[t]` positions with
    `k_t = min(index_topk, compress_len[t])`, entries past `k_t` -1 (skipped by `dsa.sparse_attn`), offset
    `window_size + s` (`dsa.window_kv`'s rows in a chunk).

    Verified: `ratio`, `index_topk`, `window_size` >= 1; `scores` rank 2; the result `[s, k]` with a static k equal
    to `min(index_topk, width)` when `scores`' width is static and never above `index_topk`.

    Example:
    ```mlir
    %ci = dsa.indexer_topk %m, %start_pos
        {ratio = 1 : i64, index_topk = 6 : i64, window_size = 8 : i64, tie_order = #dsa.tie_order<torch_cpu>}
        : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$scores, I64:$start_pos, I64Attr:$ratio, I64Attr:$index_topk,
                       I64Attr:$window_size, DSA_TieOrderAttr:$tie_order);
  let results = (outs DSA_IndexTensor:$result);
  let assemblyFormat = "$scores `,` $start_pos attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Composite
//===----------------------------------------------------------------------===//

def DSA_AttentionOp : DSA_Op<"attention", [Pure, AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "one DeepSeek-V4.1 attention layer (Attention.forward; attention-semantics.md sections 3-11)";
  let description = [{
    One layer of the reference's `Attention.forward` for a step of `s` tokens at `start_pos`: queries (section 3),
    the window KV row with its fp8 round trip and the ring (section 4), for compress_ratio > 0 the compressor,
    indexer and shared runtime (sections 5-8), sparse attention with the sink (section 10), inverse RoPE and the
    grouped output projection (section 11). `config` carries the geometry and, for ratio > 0, the role
    (`config.compress`).

    Operands (with `config`'s names; every shape is verified against `config`):
    - `x` `[s, dim]` bf16, the layer input after attn_norm; `start_pos` i64;
    - `ring` `[window_size, head_dim]` bf16, static: the layer's window cache (section 4);
    - `weights(...)`: `attn_sink` `[n_heads]` f32, `wq_a` `[q_lora_rank, dim]`, `q_norm` `[q_lora_rank]`,
      `wq_b` `[n_heads*head_dim, q_lora_rank]`, `wkv` `[head_dim, dim]`, `kv_norm` `[head_dim]`,
      `wo_a` `[o_groups*o_lora_rank, n_heads*head_dim/o_groups]`, `wo_b` `[dim, o_groups*o_lora_rank]`, bf16
      `[out, in]` as `nn.Linear` stores them;
    - `compressor(...)` (kv sources): ratio 1: `wkv` `[head_dim, dim]` bf16, `norm` `[head_dim]` bf16;
      ratio >= 2: `wkv` and `wgate` `[head_dim, dim]` f32, `norm` `[head_dim]` bf16;
    - `index_keys(...)` (kv sources): `wk` `[index_head_dim, head_dim]`, `k_norm` `[index_head_dim]` bf16;
    - `indexer(...)` (index sources): `wq_b` `[index_n_heads*index_head_dim, q_lora_rank]`,
      `weights_proj` `[index_n_heads, dim]` bf16;
    - `state(...)` (kv sources): ratio >= 2: `kv_state`, `score_state` `[ratio, head_dim]` f32; then the
      compressed-KV cache `[C, head_dim]` and the index-key cache `[C, index_head_dim]` bf16,
      C = ceil(max_seq_len / ratio);
    - `shared(...)` (every ratio > 0 layer): the four shared slots as they stand before this layer:
      `compress_kv` `[?, head_dim]` bf16, `index_k` `[?, index_head_dim]` bf16, `topk_idxs` `[?, ?]` i32,
      `candidates` `[?, ?]` i1.

    Results: `out` `[s, dim]` bf16, `new_ring`, `new_state` (the `state` operands updated, same types) and
    `new_shared` (the four slots after this layer: what it published, the rest passed through).

    Verified: every shape above against `config` (a dynamic dimension is accepted where a weight or slot shape is
    given; `ring` and the `state` operands must be static). With `compress_ratio = 0` every group is empty and there
    are no `new_state` / `new_shared` results. With `compress_ratio > 0`: `compressor`, `index_keys` and `state`
    are present exactly for a kv source, `indexer` exactly for an index source, `shared` always (4 slots), each
    with the listed operands in order, their element types and shapes; `new_state` / `new_shared` have the types of
    `state` / `shared`. The custom form gives `new_state` one result per `state` operand and `new_shared` one per
    `shared` operand (the segment sizes are not printed).
    `dsa-decompose-attention` rewrites it into the primitives, with `dsa.probe`s named after the golden's captures
    (`L<layer_id>.sa_q`, `.sa_kv`, `.sa_topk_idxs`, `.sa_o`, `.attn_out`, and `shared.L<layer_id>.*`).

    Batched decode (issue 13; attention-semantics.md section 13: each row equals its own batch-1 run): with
    `start_pos` a `tensor<B x i64>` (one position per sequence) the step serves B sequences of one token each:
    `x` and `out` are `[B, 1, dim]`, `ring` and `new_ring` `[B, window_size, head_dim]` (W and head_dim static,
    B may be dynamic and must agree across x, start_pos and ring). A compressed layer's `state` operands get the
    leading B too (`[B, ratio, head_dim]`, `[B, C, ...]`), and its slots are `compress_kv` `[B, ?, head_dim]`,
    `index_k` `[B, ?, index_head_dim]`, `topk_idxs` `[B, 1, ?]` i32 and `candidates` `[B, 1, ?]` i1 (one token row
    per sequence). Row b of every result is what the batch-1 op returns for sequence b (`x[b]`, `start_pos[b]`, its
    ring, state and slots), bit for bit, where row b of a slot is sequence b's batch-1 slot followed by padding:
    `compress_kv` / `index_k` rows past it (never read: readers take rows [0, (start_pos + 1) // ratio)),
    `topk_idxs` columns of -1 (sparse attention skips them), `candidates` columns of false (a reader takes its own
    width). What a layer publishes is padded to one shape for the batch: `index_k` (the quirk's per-sequence choice)
    to max(incoming rows, C), `topk_idxs` to `index_topk` columns, `candidates` to C columns; `compress_kv` (and
    `index_k` with `own_cache`) is the batched cache itself. A batched step does not decompose with probes
    (captures are per sequence).

    Example (window-only):
    ```mlir
    %out, %ring1 = dsa.attention %x, %start_pos, %ring
        weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
        {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                   q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                   compress_ratio = 0, norm_eps = 9.99999968E-21 : f32,
                                   rope = <rope_dim = 8, theta = 1.000000e+04 : f64>>}
        : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
           tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
        -> (tensor<?x64xbf16>, tensor<8x32xbf16>)
    ```

    Example (the same layer, batched decode of B sequences):
    ```mlir
    %out, %ring1 = dsa.attention %x, %start_pos, %ring
        weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b) {config = #cfg0}
        : (tensor<?x1x64xbf16>, tensor<?xi64>, tensor<?x8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>,
           tensor<16xbf16>, tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>,
           tensor<64x32xbf16>)
        -> (tensor<?x1x64xbf16>, tensor<?x8x32xbf16>)
    ```

    Example (the tiny golden's L5, a ratio-1 index source using the candidate mask; `#cfg5` is its
    `#dsa.attn_config` with `compress = <is_kv_source = false, is_index_source = true, uses_candidates = true, ...>`):
    ```mlir
    %out, %ring1, %kv1, %ik1, %topk1, %cand1 = dsa.attention %x, %start_pos, %ring
        weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
        indexer(%wq_b_idx, %weights_proj) shared(%compress_kv, %index_k, %topk_idxs, %candidates)
        {config = #cfg5}
        : (tensor<?x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
           tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
           tensor<64x16xbf16>, tensor<2x64xbf16>,
           tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<?x?xi1>)
        -> (tensor<?x64xbf16>, tensor<8x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>,
            tensor<?x?xi1>)
    ```
  }];
  let arguments = (ins DSA_BF16Tensor:$x, AnyTypeOf<[I64, DSA_PositionTensor]>:$start_pos, DSA_BF16Tensor:$ring,
                       DSA_F32Tensor:$attn_sink, DSA_BF16Tensor:$wq_a, DSA_BF16Tensor:$q_norm,
                       DSA_BF16Tensor:$wq_b, DSA_BF16Tensor:$wkv, DSA_BF16Tensor:$kv_norm,
                       DSA_BF16Tensor:$wo_a, DSA_BF16Tensor:$wo_b,
                       Variadic<AnyRankedTensor>:$compressor,
                       Variadic<AnyRankedTensor>:$index_keys,
                       Variadic<AnyRankedTensor>:$indexer,
                       Variadic<AnyRankedTensor>:$state,
                       Variadic<AnyRankedTensor>:$shared,
                       DSA_AttnConfigAttr:$config);
  let results = (outs DSA_BF16Tensor:$out, DSA_BF16Tensor:$new_ring,
                      Variadic<AnyRankedTensor>:$new_state,
                      Variadic<AnyRankedTensor>:$new_shared);
  // The custom form is
  //   $x `,` $start_pos `,` $ring `weights` `(` 8 weights `)` (`compressor` `(` ... `)`)? (`index_keys` `(` ... `)`)?
  //   (`indexer` `(` ... `)`)? (`state` `(` ... `)`)? (`shared` `(` ... `)`)? attr-dict `:` functional-type
  // (the groups in this order, each omitted when empty). It is hand-written (DSAOps.cpp) because the declarative
  // format cannot infer `resultSegmentSizes` from a functional type: the parser gives `new_state` as many results
  // as `state` has operands and `new_shared` as many as `shared`, and both segment-size properties are elided.
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

#endif // DSA_OPS_TD
