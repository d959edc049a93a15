//===- DSAAttrs.td - dsa attributes -------------------------------------------===//
#ifndef DSA_ATTRS_TD
#define DSA_ATTRS_TD

include "dsa/Dialect/DSA/IR/DSADialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

class DSA_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<DSA_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def DSA_YarnAttr : DSA_Attr<"Yarn", "yarn"> {
  let summary = "YaRN frequency blending parameters (attention-semantics.md section 2)";
  let description = [{
    The reference's `original_seq_len`, `rope_factor`, `beta_fast`, `beta_slow`. With these,
    `cdim(rot) = rope_dim * ln(original_seq_len / (rot*2*pi)) / (2*ln(theta))` (f64),
    `low = max(floor(cdim(beta_fast)), 0)`, `high = min(ceil(cdim(beta_slow)), rope_dim-1)`,
    `ramp[k] = clamp((k - low) / max(high - low, 0.001), 0, 1)`, `smooth = 1 - ramp`,
    `f[k] = f[k]/factor*(1-smooth) + f[k]*smooth`. Only ratio > 0 layers and their indexer use YaRN.

    Verified: `original_seq_len` > 0; `factor`, `beta_fast`, `beta_slow` are f64 (a float literal without a type
    is f64), finite and > 0.

    Example (as printed; the tiny golden's values, V4.1-Flash has 65536, 16, 32, 1):
    ```mlir
    #dsa.yarn<original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64,
              beta_slow = 1.000000e+00 : f64>
    ```
  }];
  let parameters = (ins
    "int64_t":$original_seq_len,
    "::mlir::FloatAttr":$factor,
    "::mlir::FloatAttr":$beta_fast,
    "::mlir::FloatAttr":$beta_slow
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def DSA_RopeAttr : DSA_Attr<"Rope", "rope"> {
  let summary = "RoPE table parameters (attention-semantics.md section 2)";
  let description = [{
    The frequency table of a rotary embedding over the last `rope_dim` elements of a row:
    `f[k] = 1 / theta^(2k/rope_dim)`, k < rope_dim/2, blended by YaRN when `yarn` is present. Ratio-0 layers use
    `theta = rope_theta` without YaRN; ratio > 0 layers and their indexer use `compress_rope_theta` with YaRN.
    Float parameters are f64 attributes (the reference computes the table in f64 before casting to f32).

    Verified: `rope_dim` positive and even (pairs are adjacent elements); `theta` f64, finite and > 1; `yarn` as
    for `#dsa.yarn`. Nested in another dsa attribute, it prints without its `#dsa.rope` prefix (`rope = <...>`);
    both spellings parse.

    Example (as printed):
    ```mlir
    #dsa.rope<rope_dim = 8, theta = 1.000000e+04 : f64>
    #dsa.rope<rope_dim = 8, theta = 4.000000e+04 : f64,
              yarn = <original_seq_len = 32, factor = 2.000000e+00 : f64, beta_fast = 3.200000e+01 : f64,
                      beta_slow = 1.000000e+00 : f64>>
    ```
  }];
  let parameters = (ins
    "int64_t":$rope_dim,
    "::mlir::FloatAttr":$theta,
    OptionalParameter<"YarnAttr">:$yarn
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def DSA_TieOrder : I32EnumAttr<"TieOrder", "which set a top-k returns among equal values (section 9)", [
    I32EnumAttrCase<"torch_cpu", 0>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::dsa";
}
def DSA_TieOrderAttr : EnumAttr<DSA_Dialect, DSA_TieOrder, "tie_order"> {
  let summary = "top-k tie order";
  let description = [{
    The set a top-k selection returns among equal values. `torch_cpu` is the reference's: the set torch's CPU
    `topk(k, largest=True)` returns (libstdc++ `partial_sort` when k*64 <= n, else `nth_element`, section 9). A
    backend that selects another set among ties must name its own order here. Example: `#dsa.tie_order<torch_cpu>`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def DSA_IndexKSource : I32EnumAttr<"IndexKSource", "which index-key cache a kv+index source scores against", [
    I32EnumAttrCase<"published_slot", 0>,
    I32EnumAttrCase<"own_cache", 1>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::dsa";
}
def DSA_IndexKSourceAttr : EnumAttr<DSA_Dialect, DSA_IndexKSource, "index_k_source"> {
  let summary = "index-key publication behaviour (section 8, the reference quirk)";
  let description = [{
    `published_slot` (the reference, default): an index source scores against the shared `index_k` slot as it
    stands, and a kv source republishes its index-key cache only in a step that produced a latent, so a ratio >= 2
    kv+index source at a decode step that completes no group reads whatever was published last (possibly another
    kv source's cache). `own_cache` (the named correction): a kv+index source always scores against its own
    index-key cache. Example: `#dsa.index_k_source<published_slot>`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def DSA_CompressConfigAttr : DSA_Attr<"CompressConfig", "compress"> {
  let summary = "role and indexer geometry of a compress_ratio > 0 layer (sections 1, 5-8)";
  let description = [{
    Present on `#dsa.attn_config` exactly when `compress_ratio > 0`. The layer's role in the shared runtime:
    `is_kv_source` (owns a Compressor and an index-key cache, publishes `compress_kv` and `index_k`),
    `is_index_source` (owns an Indexer, publishes `topk_idxs`), `is_candidate_source` (publishes `candidates`),
    `uses_candidates` (an index source after the candidate source: applies its mask). The indexer geometry
    `index_n_heads`, `index_head_dim`, `index_topk`; the level-one candidate selection `candidate_topk_blocks`,
    `candidate_block_size`; `max_seq_len` (cache capacity in tokens: caches hold ceil(max_seq_len / ratio) rows);
    `index_k_source` and the top-k `tie_order`.

    Verified (section 1's rules for one layer): `is_candidate_source` and `uses_candidates` each require
    `is_index_source` and exclude each other; `index_n_heads`, `index_head_dim`, `index_topk` positive for a kv or
    index source, `candidate_topk_blocks`, `candidate_block_size` positive for a candidate source or user (all of
    them >= 0 otherwise: a plain reader may leave them 0); `index_head_dim` a multiple of 32 (the fp4 e8m0 block of
    the index queries and keys); `max_seq_len` positive. `index_k_source` only matters on a kv + index source.

    Example (the tiny golden's L4):
    ```mlir
    #dsa.compress<is_kv_source = true, is_index_source = true, is_candidate_source = true, uses_candidates = false,
                  index_n_heads = 2, index_head_dim = 32, index_topk = 6, candidate_topk_blocks = 3,
                  candidate_block_size = 2, max_seq_len = 64, index_k_source = <published_slot>,
                  tie_order = <torch_cpu>>
    ```
  }];
  let parameters = (ins
    "::mlir::BoolAttr":$is_kv_source,
    "::mlir::BoolAttr":$is_index_source,
    "::mlir::BoolAttr":$is_candidate_source,
    "::mlir::BoolAttr":$uses_candidates,
    "int64_t":$index_n_heads,
    "int64_t":$index_head_dim,
    "int64_t":$index_topk,
    "int64_t":$candidate_topk_blocks,
    "int64_t":$candidate_block_size,
    "int64_t":$max_seq_len,
    "IndexKSourceAttr":$index_k_source,
    "TieOrderAttr":$tie_order
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def DSA_AttnConfigAttr : DSA_Attr<"AttnConfig", "attn_config"> {
  let summary = "geometry and role of one attention layer (attention-semantics.md section 1)";
  let description = [{
    The configuration of one `dsa.attention` layer, named as in the reference's `ModelArgs`:
    `dim`, `n_heads`, `head_dim`, `rope_head_dim`, `q_lora_rank`, `o_groups`, `o_lora_rank`, `window_size`,
    `compress_ratio` (0 = window only), `norm_eps`, the layer's RoPE table (`rope`), `layer_id` (used to name
    the probes the decomposition emits, `L<layer_id>.sa_q` and so on), and for compress_ratio > 0 layers their role
    and indexer geometry (`compress`, a `#dsa.compress`).

    Verified (section 1's "valid configurations" that concern one layer): `layer_id` >= 0; every size positive;
    `rope_head_dim` even and <= `head_dim`; `head_dim` a multiple of 32 (the fp8 block of the window KV row,
    section 4); `n_heads` divisible by `o_groups`; `compress_ratio` >= 0; `norm_eps` an f32, finite and >= 0;
    `rope.rope_dim == rope_head_dim`; `rope` has `yarn` exactly when `compress_ratio` > 0 (section 2); `compress`
    is present exactly when `compress_ratio` > 0 (and verified as `#dsa.compress`).

    Example (as printed; the tiny golden's L0):
    ```mlir
    #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8, q_lora_rank = 16,
                     o_groups = 2, o_lora_rank = 16, window_size = 8, compress_ratio = 0,
                     norm_eps = 9.99999968E-21 : f32, rope = <rope_dim = 8, theta = 1.000000e+04 : f64>>
    ```
  }];
  let parameters = (ins
    "int64_t":$layer_id,
    "int64_t":$dim,
    "int64_t":$n_heads,
    "int64_t":$head_dim,
    "int64_t":$rope_head_dim,
    "int64_t":$q_lora_rank,
    "int64_t":$o_groups,
    "int64_t":$o_lora_rank,
    "int64_t":$window_size,
    "int64_t":$compress_ratio,
    "::mlir::FloatAttr":$norm_eps,
    "RopeAttr":$rope,
    OptionalParameter<"CompressConfigAttr">:$compress
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // DSA_ATTRS_TD
