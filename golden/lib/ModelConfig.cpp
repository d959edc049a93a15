//===- ModelConfig.cpp - layer roles and the section-1 validity rules ---------===//
#include "dsa/Golden/ModelConfig.h"

#include <algorithm>
#include <string>

namespace dsa::golden {
namespace {

bool contains(const std::vector<int64_t> &v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::string layerName(const Fixture &f, int64_t l) {
  return "layer " + std::to_string(l) + " (ratio " + std::to_string(f.compressRatios[static_cast<size_t>(l)]) + ")";
}

/// The most recent layer before `l` in `sources`, or -1.
int64_t mostRecentBefore(const std::vector<int64_t> &sources, int64_t l) {
  int64_t best = -1;
  for (int64_t s : sources)
    if (s < l && s > best)
      best = s;
  return best;
}

Status checkReader(const Fixture &f, int64_t l, const std::vector<int64_t> &sources, const char *slot,
                   const char *sourceKind) {
  int64_t src = mostRecentBefore(sources, l);
  int64_t ratio = f.compressRatios[static_cast<size_t>(l)];
  if (src < 0)
    return makeError(layerName(f, l) + " reads " + slot + ", but no " + sourceKind + " comes before it");
  int64_t srcRatio = f.compressRatios[static_cast<size_t>(src)];
  if (srcRatio != ratio)
    return makeError(layerName(f, l) + " reads " + slot + ", but the most recent " + sourceKind +
                     " before it, layer " + std::to_string(src) + ", has ratio " + std::to_string(srcRatio));
  return Status::success();
}

} // namespace

LayerRole layerRole(const Fixture &f, int64_t layer) {
  LayerRole role;
  role.ratio = f.compressRatios[static_cast<size_t>(layer)];
  role.isKvSource = contains(f.kvSourceLayers, layer);
  role.isIndexSource = contains(f.indexSourceLayers, layer);
  role.isCandidateSource = f.candidateSourceLayer == layer;
  role.usesCandidates = role.isIndexSource && f.candidateSourceLayer >= 0 && f.candidateSourceLayer < layer;
  return role;
}

Status validateModelConfig(const Fixture &f) {
  if (static_cast<int64_t>(f.compressRatios.size()) != f.nLayers)
    return makeError("compress_ratios has " + std::to_string(f.compressRatios.size()) + " entries but n_layers is " +
                     std::to_string(f.nLayers));
  if (f.headDim % 32 != 0)
    return makeError("head_dim " + std::to_string(f.headDim) + " is not a multiple of the fp8 block 32");
  if (f.headDim % 16 != 0)
    return makeError("head_dim " + std::to_string(f.headDim) + " is not a multiple of the latent fp4 block 16");
  if (f.ropeHeadDim <= 0 || f.ropeHeadDim % 2 != 0 || f.ropeHeadDim > f.headDim)
    return makeError("rope_head_dim " + std::to_string(f.ropeHeadDim) + " must be even, positive and <= head_dim " +
                     std::to_string(f.headDim));
  if (f.oGroups <= 0 || f.nHeads % f.oGroups != 0)
    return makeError("n_heads " + std::to_string(f.nHeads) + " is not divisible by o_groups " +
                     std::to_string(f.oGroups));
  for (int64_t l = 0; l < f.nLayers; ++l)
    if (f.compressRatios[static_cast<size_t>(l)] < 0)
      return makeError(layerName(f, l) + ": compress_ratio must be >= 0");
  auto checkSources = [&](const std::vector<int64_t> &sources, const char *what) -> Status {
    for (int64_t s : sources) {
      if (s < 0 || s >= f.nLayers)
        return makeError(std::string(what) + " names layer " + std::to_string(s) + ", which does not exist");
      if (f.compressRatios[static_cast<size_t>(s)] == 0)
        return makeError(std::string(what) + " names layer " + std::to_string(s) +
                         ", which has compress_ratio 0 (window only)");
    }
    return Status::success();
  };
  if (Status s = checkSources(f.kvSourceLayers, "kv_source_layers"); !s)
    return s;
  if (Status s = checkSources(f.indexSourceLayers, "index_source_layers"); !s)
    return s;
  bool anyIndexSource = !f.indexSourceLayers.empty();
  if (anyIndexSource && (f.indexHeadDim <= 0 || f.indexHeadDim % 32 != 0))
    return makeError("index_head_dim " + std::to_string(f.indexHeadDim) +
                     " must be a positive multiple of the fp4 block 32");
  if (anyIndexSource && (f.indexNHeads <= 0 || f.indexTopk <= 0))
    return makeError("index_n_heads and index_topk must be positive");
  if (f.candidateSourceLayer >= 0) {
    if (f.candidateSourceLayer >= f.nLayers || !contains(f.indexSourceLayers, f.candidateSourceLayer))
      return makeError("candidate_source_layer " + std::to_string(f.candidateSourceLayer) +
                       " must be one of index_source_layers");
    if (f.candidateTopkBlocks <= 0 || f.candidateBlockSize <= 0)
      return makeError("candidate_topk_blocks and candidate_block_size must be positive");
    int64_t ratio = f.compressRatios[static_cast<size_t>(f.candidateSourceLayer)];
    for (int64_t s : f.indexSourceLayers)
      if (s > f.candidateSourceLayer && f.compressRatios[static_cast<size_t>(s)] != ratio)
        return makeError(layerName(f, s) + " applies the candidate mask of layer " +
                         std::to_string(f.candidateSourceLayer) + ", which has ratio " + std::to_string(ratio) +
                         " (the mask would have another width)");
  }
  for (int64_t l = 0; l < f.nLayers; ++l) {
    LayerRole role = layerRole(f, l);
    if (role.ratio == 0)
      continue;
    if (!role.isKvSource)
      if (Status s = checkReader(f, l, f.kvSourceLayers, "compress_kv", "kv source"); !s)
        return s;
    if (!role.isIndexSource)
      if (Status s = checkReader(f, l, f.indexSourceLayers, "topk_idxs", "index source"); !s)
        return s;
    if (role.isIndexSource && !role.isKvSource)
      if (Status s = checkReader(f, l, f.kvSourceLayers, "index_k", "kv source"); !s)
        return s;
  }
  return Status::success();
}

} // namespace dsa::golden
