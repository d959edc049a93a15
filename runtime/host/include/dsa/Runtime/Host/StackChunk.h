//===- StackChunk.h - chunks through a stack of layers sharing slots, layer-major -------------------------------===//
//
// A multi-token step at start_pos > 0 is DEFINED as its tokens fed one decode step at a time through every layer
// (attention-semantics.md section 13). A model driver runs a chunk LAYER-MAJOR: each layer once over all its tokens,
// the shared slots (section 8: compress_kv, index_k, topk_idxs, candidates) threaded from layer to layer. The two
// agree bit for bit wherever every read of a shared slot sees the same data in both orders; planStackChunk says
// where that holds, from the layers' roles alone, and cuts a chunk where it does not.
//
// Who reads what (section 8; dsa-decompose-attention): a kv source publishes compress_kv every step and index_k in
// a step that closes a group (published_slot, the reference's quirk) or every step (own_cache); an index source
// reads index_k (row t: its own cache when it is a kv source closing a group at t, or with own_cache; else the slot,
// which for a published_slot kv source is dsa.indexer_scores' `entry_keys`, the slot as it entered the layer) and
// publishes topk_idxs; a candidate source publishes candidates, a candidate user reads them; every compressed layer's
// attention reads compress_kv and topk_idxs. Caches are written once per row, so a read of a cache through a slot
// is the same in both orders when the slot holds the same layer's cache and the rows the row can see
// (`(p + 1) // ratio`, compress_visibility) are written, or unwritten, in both. topk_idxs and candidates are per-token
// rows: a layer must read them from an EARLIER layer of the same token, in both orders.
//
// MLIR-free (the runtime layer): the roles come from FunctionSignature::attention (StepDescription.h).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_HOST_STACKCHUNK_H
#define DSA_RUNTIME_HOST_STACKCHUNK_H

#include "dsa/Support/Result.h"
#include "dsa/Runtime/Host/Values.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dsa::runtime {

/// One layer of a stack as the shared slots see it (#dsa.compress, section 1). ratio 0: a window-only layer (no
/// slots).
struct StackLayerRoles {
  int64_t ratio = 0;
  bool kvSource = false, indexSource = false, candidateSource = false, usesCandidates = false;
  bool ownIndexKeys = false; ///< index_k_source = own_cache (false: published_slot, the reference's quirk)
};

/// The roles of a step function's single dsa.attention op (FunctionSignature::attention). Errors: no recorded
/// attention config, or more than one.
Result<StackLayerRoles> stackLayerRoles(const FunctionSignature &signature);

/// A piece of a chunk that runs layer-major: tokens [first, first + count) of the chunk, at start_pos + first, and
/// the index_k slot each layer must be given. indexKFrom[l]: -1 = the index_k slot as it entered this sub-chunk,
/// X >= 0 = the index_k slot layer X's call returned in this sub-chunk (usually the previous compressed layer's:
/// plain threading; another one where token-by-token decode reads another layer's keys, e.g. V4.1-Flash's layer 8
/// at a token closing no group reads layer 20's keys of the previous token, not layer 2's; unused for window-only
/// layers). indexKAfter: the same for the slot the sub-chunk leaves (the next step's).
struct StackSubChunk {
  int64_t first = 0, count = 0;
  std::vector<int64_t> indexKFrom;
  int64_t indexKAfter = -1;
};

/// Whether `count` tokens at `startPos` run layer-major through `stack` (stack order) give, bit for bit, what they
/// give fed one decode step at a time through every layer, for a sequence whose prefill was `prefillTokens` tokens
/// (the slots' history: which layer published each slot last, and how many rows it had, before startPos). A 1-token
/// step is a decode step: always true. Layer-major, each layer's index_k input may be routed (StackSubChunk): true
/// when some routing makes every read equal; `route` (optional) receives it (first = 0). `why` (optional): the first
/// read that differs (layer, position, slot). Requires 0 < prefillTokens <= startPos and count >= 1 (false with
/// `why` saying so otherwise).
bool layerMajorIsExact(const std::vector<StackLayerRoles> &stack, int64_t prefillTokens, int64_t startPos,
                       int64_t count, std::string *why = nullptr, StackSubChunk *route = nullptr);

/// Cuts `s` tokens at `startPos` into sub-chunks that each run layer-major exactly (layerMajorIsExact), greedily:
/// from the first token, the longest prefix found by halving the rest (s, s/2, ...; 1 always qualifies). Errors:
/// s < 1, prefillTokens < 1 or > startPos, a layer reading topk_idxs or candidates that no earlier layer of the
/// stack publishes (such a layer would read another step's rows after any multi-token sub-chunk: run one token at a
/// time instead, which the error says).
Result<std::vector<StackSubChunk>> planStackChunk(const std::vector<StackLayerRoles> &stack, int64_t prefillTokens,
                                                  int64_t startPos, int64_t s);

/// A model driver's routing of index_k through one piece of the plan, over the shared slots it threads from layer
/// to layer (Sequence::SlotSet, slot `indexK` = 1 for dsa.attention): begin() before the first layer,
/// beforeLayer(l) before layer l's Sequence::runStackChunkValues (it sets index_k to the route), afterLayer(l)
/// after it (it records what the layer returned), finish() after the last layer (index_k as the piece leaves it).
/// Window-only layers (no slots) need neither call. Errors: a layer index outside the piece's routes, a route to a
/// layer whose call was not recorded, slots without an index_k entry; the slots are then unchanged.
class StackChunkRouter {
public:
  explicit StackChunkRouter(StackSubChunk piece, size_t indexK = 1);
  Status begin(const std::vector<HostValue> &slots);
  Status beforeLayer(size_t layer, std::vector<HostValue> &slots) const;
  Status afterLayer(size_t layer, const std::vector<HostValue> &slots);
  Status finish(std::vector<HostValue> &slots) const;
  const StackSubChunk &piece() const { return piece_; }

private:
  Result<HostValue> routed(int64_t from) const;
  Status checkSlots(const std::vector<HostValue> &slots) const;
  StackSubChunk piece_;
  size_t indexK_;
  std::optional<HostValue> entering_;
  std::vector<std::optional<HostValue>> returned_;
};

} // namespace dsa::runtime

#endif // DSA_RUNTIME_HOST_STACKCHUNK_H
