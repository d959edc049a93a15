//===- Passes.td - dsa transformation passes ---------------------------------===//
#ifndef DSA_TRANSFORMS_PASSES_TD
#define DSA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DSADecomposeAttention : Pass<"dsa-decompose-attention"> {
  let summary = "Rewrite dsa.attention into the dsa primitives";
  let description = [{
    Replaces every `dsa.attention` by the primitives of its layer kind, with `dsa.probe`s naming the golden's
    captures (`L<l>.sa_q`, `L<l>.sa_kv`, `L<l>.sa_topk_idxs`, `L<l>.sa_o`, `L<l>.attn_out`). Window-only layers
    follow attention-semantics.md sections 3, 4, 10, 11. A compress_ratio > 0 layer adds, in section 8's order, its
    roles from `config.compress`: the kv source's compressor (section 5), index keys and caches, the index source's
    indexer (section 6) with the candidate blocks (section 7), the shared slots threaded as SSA values
    (docs/design-compressed.md; `arith.select` on "a latent was produced" for the `index_k` quirk under
    `index_k_source = published_slot`), attention over the window rows concatenated with the compressed rows, and
    the probes `shared.L<l>.{compress_kv, index_k, topk_idxs, candidates}`. The result is what the interpreter and
    the lowerings run.

    With `probe-index-scores`, an index source also probes `L<l>.index_score`: the scores its top-k selects from
    (after visibility and, for a layer that uses candidates, the candidate mask; for the candidate source also
    what select_candidate_blocks reads). Not a golden capture: the golden replay passes them to the comparator's
    near-tie rule (attention-semantics.md section 12).

    A batched step (`start_pos` a `tensor<B x i64>`, window-only layers) decomposes into the row-wise ops over the
    B rows (the linears as one product over all sequences, RMSNorm, RoPE at each row's own position, the fp8
    round trip, inverse RoPE, the grouped output) around one `scf.for` over the sequences that runs the
    per-sequence ops (ring_update, window_kv, window_indices, sparse_attn) on sequence b's slices
    (`tensor.extract_slice` / `tensor.insert_slice` of the batched ring, queries and outputs): row b is sequence
    b's batch-1 step, bit for bit. No probes are emitted for a batched step.
  }];
  let options = [
    Option<"probeIndexScores", "probe-index-scores", "bool", /*default=*/"false",
           "Also probe each index source's top-k scores as L<l>.index_score">,
  ];
  let dependentDialects = ["::mlir::dsa::DSADialect", "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect", "::mlir::scf::SCFDialect"];
}

def DSAStripProbes : Pass<"dsa-strip-probes"> {
  let summary = "Erase dsa.probe ops (what compiled backends do with probes by default)";
  let description = [{
    Erases every `dsa.probe`. Compiled pipelines run this first unless they are asked to return probed values.
  }];
}

#endif
