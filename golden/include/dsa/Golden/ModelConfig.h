//===- ModelConfig.h - layer roles and the section-1 validity rules (MLIR-free) ===//
//
// attention-semantics.md section 1: a layer's role in the shared runtime, and the configurations the reference
// accepts silently but that cannot work (a reader whose source publishes another ratio, a candidate mask of another
// width, block sizes that do not divide their rows). validateModelConfig rejects them with a message naming the
// layer and the rule.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_GOLDEN_MODELCONFIG_H
#define DSA_GOLDEN_MODELCONFIG_H

#include "dsa/Golden/GoldenFile.h"
#include "dsa/Support/Result.h"

#include <cstdint>

namespace dsa::golden {

/// Section 1's role of layer l.
struct LayerRole {
  int64_t ratio = 0;            ///< compress_ratios[l]
  bool isKvSource = false;      ///< l in kv_source_layers
  bool isIndexSource = false;   ///< l in index_source_layers
  bool isCandidateSource = false; ///< l == candidate_source_layer
  bool usesCandidates = false;  ///< index source with 0 <= candidate_source_layer < l
};

/// The role of layer `layer` (0 <= layer < n_layers; not checked).
LayerRole layerRole(const Fixture &fixture, int64_t layer);

/// Checks every rule of section 1 ("Valid configurations") plus the sizes the dialect needs: compress_ratios has
/// one entry per layer, each >= 0; kv/index/candidate sources are layers with ratio > 0; a ratio > 0 layer that is
/// not a kv source has a most recent kv source before it with the same ratio; one that is not an index source has
/// a most recent index source before it with the same ratio; an index source that is not a kv source has a most
/// recent kv source before it with the same ratio; the candidate source is an index source and every index source
/// after it has its ratio; 32 divides head_dim (fp8 KV block) and index_head_dim (fp4 block), 16 divides head_dim
/// (latent fp4 block); rope_head_dim is even and <= head_dim; o_groups divides n_heads.
/// Errors name the layer and the rule, e.g. "layer 3 (ratio 2) reads compress_kv, but the most recent kv source
/// before it, layer 2, has ratio 1".
Status validateModelConfig(const Fixture &fixture);

} // namespace dsa::golden

#endif
