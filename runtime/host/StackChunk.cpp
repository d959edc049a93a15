//===- StackChunk.cpp - chunks through a stack of layers sharing slots, layer-major ----------------------------===//
//
// StackChunk.h. Both orders are simulated symbolically: a slot holds (the layer whose value it is, the rows that
// layer's cache had when it published it, when it was published); every read is recorded and the two orders'
// reads compared.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Runtime/Host/StackChunk.h"

#include <algorithm>
#include <array>

namespace dsa::runtime {
namespace {

enum SlotKind { kCompressKv = 0, kIndexK = 1, kTopkIdxs = 2, kCandidates = 3, kNumSlots = 4 };
const char *const kSlotNames[kNumSlots] = {"compress_kv", "index_k", "topk_idxs", "candidates"};

/// What a slot holds: `layer`'s value (-1: the initial empty slot), published with `rows` cache rows, at `stamp`
/// (the position of the decode step, or kChunk for the layer-major chunk's one call).
struct Held {
  int64_t layer = -1, rows = 0, stamp = -1;
};
using Slots = std::array<Held, kNumSlots>;
constexpr int64_t kChunk = -2;

/// One read of a slot by a layer at a token.
struct Read {
  SlotKind kind;
  Held held;
};

bool closes(int64_t pos, int64_t ratio) { return (pos + 1) % ratio == 0; }

/// Whether an index source `r` reads index_k through the slot at position p, not its own keys (a kv source closing a
/// group at p, then it published this step; with own_cache; at ratio 1).
bool readsIndexKSlot(const StackLayerRoles &r, int64_t p) {
  if (r.ratio <= 0 || !r.indexSource)
    return false;
  if (!r.kvSource)
    return true;
  return !(r.ownIndexKeys || r.ratio == 1 || closes(p, r.ratio));
}

/// Layer `l`'s step over positions [a, b): its reads (appended to `reads`, per position when `reads` is given:
/// reads->at(p - a)) and its publications into `slots`. A published_slot kv source's row closing no group reads the
/// index_k slot as it entered the layer (dsa.indexer_scores' entry_keys; within one decode step, the slot as it
/// stands).
void stepLayer(const std::vector<StackLayerRoles> &stack, size_t l, int64_t a, int64_t b, int64_t stamp, Slots &slots,
               std::vector<std::vector<Read>> *reads) {
  const StackLayerRoles &r = stack[l];
  if (r.ratio <= 0)
    return;
  const Slots entering = slots;
  const int64_t layer = static_cast<int64_t>(l);
  // Section 8 step 1: the kv source's compress_kv every step, its index_k with a latent (or every step, own_cache).
  if (r.kvSource) {
    slots[kCompressKv] = Held{layer, b / r.ratio, stamp};
    if (r.ownIndexKeys || b / r.ratio - a / r.ratio > 0)
      slots[kIndexK] = Held{layer, b / r.ratio, stamp};
  }
  for (int64_t p = a; reads && p < b; ++p) {
    std::vector<Read> &at = (*reads)[static_cast<size_t>(p - a)];
    if (r.indexSource) {
      // Through the slot, a kv source's row reads it as it entered the layer (it published nothing at p).
      const bool viaSlot = readsIndexKSlot(r, p);
      at.push_back(Read{kIndexK, viaSlot && r.kvSource ? entering[kIndexK] : slots[kIndexK]});
      if (r.usesCandidates)
        at.push_back(Read{kCandidates, slots[kCandidates]});
    }
  }
  if (r.indexSource) {
    slots[kTopkIdxs] = Held{layer, 0, stamp};
    if (r.candidateSource)
      slots[kCandidates] = Held{layer, 0, stamp};
  }
  for (int64_t p = a; reads && p < b; ++p) {
    std::vector<Read> &at = (*reads)[static_cast<size_t>(p - a)];
    at.push_back(Read{kCompressKv, slots[kCompressKv]});
    at.push_back(Read{kTopkIdxs, slots[kTopkIdxs]});
  }
}

/// The slots as they stand before `startPos`: a prefill of `prefillTokens` (one step), then one decode step per
/// position. Every layer publishing a slot does so at least every `ratio` steps, so the positions from startPos -
/// (largest ratio + 1) on determine the slots (earlier ones only when they are the prefill's).
Slots slotsBefore(const std::vector<StackLayerRoles> &stack, int64_t prefillTokens, int64_t startPos) {
  int64_t maxRatio = 1;
  for (const StackLayerRoles &r : stack)
    maxRatio = std::max(maxRatio, r.ratio);
  Slots slots;
  int64_t from = startPos - (maxRatio + 1);
  if (from <= prefillTokens) {
    for (size_t l = 0; l < stack.size(); ++l)
      stepLayer(stack, l, 0, prefillTokens, prefillTokens - 1, slots, nullptr);
    from = prefillTokens;
  }
  for (int64_t p = from; p < startPos; ++p)
    for (size_t l = 0; l < stack.size(); ++l)
      stepLayer(stack, l, p, p + 1, p, slots, nullptr);
  return slots;
}

std::string describe(const Held &h) {
  if (h.layer < 0)
    return "the initial empty slot";
  return "layer " + std::to_string(h.layer) + "'s (" + std::to_string(h.rows) + " rows, published " +
         (h.stamp == kChunk ? std::string("in the chunk") : "at position " + std::to_string(h.stamp)) + ")";
}

/// The reads of a cache (compress_kv, index_k) agree when they are the same layer's cache with the same rows
/// visible to the row: rows [0, visible) written in both or unwritten in both.
bool sameCacheRead(const Held &tokenwise, const Held &layerMajor, int64_t visible) {
  return tokenwise.layer == layerMajor.layer &&
         std::min(visible, tokenwise.rows) == std::min(visible, layerMajor.rows);
}

} // namespace

Result<StackLayerRoles> stackLayerRoles(const FunctionSignature &signature) {
  if (signature.attention.size() != 1)
    return makeError("@" + signature.name + ": " + std::to_string(signature.attention.size()) +
                     " recorded dsa.attention configs, expected 1 (a layer's step function)");
  const AttentionConfig &c = signature.attention.front();
  StackLayerRoles r;
  r.ratio = c.compressRatio;
  if (c.compressRatio > 0) {
    if (!c.compress)
      return makeError("@" + signature.name + ": compress_ratio " + std::to_string(c.compressRatio) +
                       " without a compress config");
    r.kvSource = c.compress->isKvSource;
    r.indexSource = c.compress->isIndexSource;
    r.candidateSource = c.compress->isCandidateSource;
    r.usesCandidates = c.compress->usesCandidates;
    r.ownIndexKeys = c.compress->indexKSource == "own_cache";
  }
  return r;
}

namespace {

/// The layer-major run of [a, b) with index_k routed (StackSubChunk::indexKFrom); false with `why` on the first
/// read or final slot that differs from token-by-token decode.
bool simulateChunk(const std::vector<StackLayerRoles> &stack, int64_t prefillTokens, int64_t a, int64_t b,
                   StackSubChunk *route, std::string *why) {
  auto fail = [&](std::string m) {
    if (why)
      *why = std::move(m);
    return false;
  };
  const Slots before = slotsBefore(stack, prefillTokens, a);
  const size_t n = static_cast<size_t>(b - a);
  // Token by token: every layer at p, then every layer at p + 1.
  std::vector<std::vector<std::vector<Read>>> tokenwise(stack.size(), std::vector<std::vector<Read>>(n));
  Slots t = before;
  for (int64_t p = a; p < b; ++p)
    for (size_t l = 0; l < stack.size(); ++l) {
      std::vector<std::vector<Read>> one(1);
      stepLayer(stack, l, p, p + 1, p, t, &one);
      tokenwise[l][static_cast<size_t>(p - a)] = std::move(one[0]);
    }
  // Layer-major: every layer once over [a, b), its index_k input chosen among the slot as it entered the chunk
  // (-1) and what each earlier layer's call returned: the threaded value (the last compressed layer's) unless
  // another one is what token-by-token decode reads.
  std::vector<Held> returned(stack.size());
  std::vector<int64_t> from(stack.size(), -1);
  Slots m = before;
  int64_t threaded = -1;
  auto heldOf = [&](int64_t source) { return source < 0 ? before[kIndexK] : returned[static_cast<size_t>(source)]; };
  for (size_t l = 0; l < stack.size(); ++l) {
    const StackLayerRoles &r = stack[l];
    if (r.ratio <= 0)
      continue;
    auto fits = [&](const Held &v) {
      for (size_t i = 0; i < n; ++i) {
        const int64_t p = a + static_cast<int64_t>(i);
        if (!readsIndexKSlot(r, p))
          continue;
        for (const Read &x : tokenwise[l][i])
          if (x.kind == kIndexK && !sameCacheRead(x.held, v, (p + 1) / r.ratio))
            return false;
      }
      return true;
    };
    // A route to the slot as it entered the chunk only when its layer has not run in the chunk yet: an own_cache
    // source publishes its live cache buffer (resident state), which its call in the chunk writes rows into.
    auto routable = [&](int64_t c) {
      if (c >= 0)
        return stack[static_cast<size_t>(c)].ratio > 0;
      return before[kIndexK].layer < 0 || before[kIndexK].layer >= static_cast<int64_t>(l);
    };
    int64_t source = threaded;
    if (!fits(heldOf(source)))
      for (int64_t c = -1; c < static_cast<int64_t>(l); ++c)
        if (routable(c) && fits(heldOf(c))) {
          source = c;
          break;
        }
    from[l] = source;
    m[kIndexK] = heldOf(source);
    std::vector<std::vector<Read>> reads(n);
    stepLayer(stack, l, a, b, kChunk, m, &reads);
    returned[l] = m[kIndexK];
    threaded = static_cast<int64_t>(l);
    for (size_t i = 0; i < n; ++i) {
      const int64_t p = a + static_cast<int64_t>(i);
      const std::vector<Read> &tw = tokenwise[l][i], &lm = reads[i];
      for (size_t k = 0; k < tw.size() && k < lm.size(); ++k) {
        const Read &x = tw[k], &y = lm[k];
        const bool cache = x.kind == kCompressKv || x.kind == kIndexK;
        const bool same = cache ? sameCacheRead(x.held, y.held, (p + 1) / r.ratio)
                                : x.held.layer == y.held.layer && x.held.layer >= 0 && x.held.stamp == p &&
                                      y.held.stamp == kChunk;
        if (!same)
          return fail("layer " + std::to_string(l) + " at position " + std::to_string(p) + " reads " +
                      kSlotNames[x.kind] + " " + describe(x.held) + " token by token but " + describe(y.held) +
                      " layer-major");
      }
    }
  }
  // The slots after the step: the same layer's cache with the same rows (index_k: any of the chunk's values;
  // topk_idxs and candidates: the same layer, their rows per token are read only within a token, planStackChunk's
  // structural check).
  int64_t after = threaded;
  auto sameFinal = [&](const Held &v) { return v.layer == t[kIndexK].layer && v.rows == t[kIndexK].rows; };
  if (!sameFinal(heldOf(after))) {
    after = -2;
    for (int64_t c = -1; c < static_cast<int64_t>(stack.size()) && after == -2; ++c)
      if ((c < 0 || stack[static_cast<size_t>(c)].ratio > 0) && sameFinal(heldOf(c)))
        after = c;
    if (after == -2)
      return fail("after the chunk, index_k holds " + describe(t[kIndexK]) +
                  " token by token, which no layer-major call returns");
  }
  m[kIndexK] = heldOf(after);
  for (int k = 0; k < kNumSlots; ++k) {
    const bool cache = k == kCompressKv || k == kIndexK;
    if (t[k].layer != m[k].layer || (cache && t[k].rows != m[k].rows))
      return fail(std::string("after the chunk, ") + kSlotNames[k] + " holds " + describe(t[k]) +
                  " token by token but " + describe(m[k]) + " layer-major");
  }
  if (route) {
    route->indexKFrom = std::move(from);
    route->indexKAfter = after;
  }
  return true;
}

} // namespace

bool layerMajorIsExact(const std::vector<StackLayerRoles> &stack, int64_t prefillTokens, int64_t startPos,
                       int64_t count, std::string *why, StackSubChunk *route) {
  if (count < 1 || prefillTokens < 1 || prefillTokens > startPos || startPos > INT64_MAX - count) {
    if (why)
      *why = "a chunk needs count >= 1, 0 < prefill tokens <= start_pos and start_pos + count in int64, got count " +
             std::to_string(count) + ", prefill " + std::to_string(prefillTokens) + ", start_pos " +
             std::to_string(startPos);
    return false;
  }
  if (route) {
    route->count = count;
    route->indexKFrom.clear();
    route->indexKAfter = -1;
  }
  if (count == 1) { // a decode step: the slots threaded as they are
    if (route) {
      int64_t last = -1;
      route->indexKFrom.assign(stack.size(), -1);
      for (size_t l = 0; l < stack.size(); ++l)
        if (stack[l].ratio > 0) {
          route->indexKFrom[l] = last;
          last = static_cast<int64_t>(l);
        }
      route->indexKAfter = last;
    }
    return true;
  }
  return simulateChunk(stack, prefillTokens, startPos, startPos + count, route, why);
}

Result<std::vector<StackSubChunk>> planStackChunk(const std::vector<StackLayerRoles> &stack, int64_t prefillTokens,
                                                  int64_t startPos, int64_t s) {
  if (s < 1)
    return makeError("stack chunk: " + std::to_string(s) + " tokens, expected at least 1");
  if (prefillTokens < 1 || prefillTokens > startPos)
    return makeError("stack chunk: the prefill of " + std::to_string(prefillTokens) +
                     " tokens must be at least 1 and at most start_pos " + std::to_string(startPos));
  if (startPos > INT64_MAX - s)
    return makeError("stack chunk: start_pos " + std::to_string(startPos) + " + " + std::to_string(s) +
                     " tokens overflows int64");
  // topk_idxs and candidates are rows per token: each compressed layer must read them from an earlier layer (or
  // publish them itself) of the same token.
  bool topk = false, candidates = false;
  for (size_t l = 0; l < stack.size(); ++l) {
    const StackLayerRoles &r = stack[l];
    if (r.ratio <= 0)
      continue;
    if (r.usesCandidates && !candidates)
      return makeError("stack chunk: layer " + std::to_string(l) +
                       " uses candidates that no earlier layer publishes (it reads another token's rows): step "
                       "the stack one token at a time");
    if (r.indexSource) {
      topk = true;
      candidates = candidates || r.candidateSource;
    }
    if (!topk)
      return makeError("stack chunk: layer " + std::to_string(l) +
                       " reads topk_idxs that no earlier layer publishes (it reads another token's rows): step "
                       "the stack one token at a time");
  }
  std::vector<StackSubChunk> plan;
  for (int64_t first = 0; first < s;) {
    StackSubChunk sub;
    int64_t count = s - first;
    while (!layerMajorIsExact(stack, prefillTokens, startPos + first, count, nullptr, &sub))
      count /= 2; // 1 always qualifies
    sub.first = first;
    plan.push_back(std::move(sub));
    first += count;
  }
  return plan;
}

StackChunkRouter::StackChunkRouter(StackSubChunk piece, size_t indexK)
    : piece_(std::move(piece)), indexK_(indexK), returned_(piece_.indexKFrom.size()) {}

Status StackChunkRouter::checkSlots(const std::vector<HostValue> &slots) const {
  if (slots.size() <= indexK_)
    return makeError("stack chunk: " + std::to_string(slots.size()) + " slots, expected index_k at " +
                     std::to_string(indexK_));
  return Status();
}

Status StackChunkRouter::begin(const std::vector<HostValue> &slots) {
  if (Status st = checkSlots(slots); !st)
    return st;
  entering_ = slots[indexK_];
  returned_.assign(piece_.indexKFrom.size(), std::nullopt);
  return Status();
}

Result<HostValue> StackChunkRouter::routed(int64_t from) const {
  if (!entering_)
    return makeError("stack chunk: begin() was not called");
  if (from < 0)
    return *entering_;
  if (static_cast<size_t>(from) >= returned_.size() || !returned_[static_cast<size_t>(from)])
    return makeError("stack chunk: the route names layer " + std::to_string(from) + ", whose call was not recorded "
                     "(afterLayer)");
  return *returned_[static_cast<size_t>(from)];
}

Status StackChunkRouter::beforeLayer(size_t layer, std::vector<HostValue> &slots) const {
  if (layer >= piece_.indexKFrom.size())
    return makeError("stack chunk: layer " + std::to_string(layer) + " is not in the plan's stack of " +
                     std::to_string(piece_.indexKFrom.size()) + " layers");
  if (Status st = checkSlots(slots); !st)
    return st;
  Result<HostValue> v = routed(piece_.indexKFrom[layer]);
  if (!v)
    return makeError(v.error());
  slots[indexK_] = v.take();
  return Status();
}

Status StackChunkRouter::afterLayer(size_t layer, const std::vector<HostValue> &slots) {
  if (layer >= returned_.size())
    return makeError("stack chunk: layer " + std::to_string(layer) + " is not in the plan's stack of " +
                     std::to_string(returned_.size()) + " layers");
  if (Status st = checkSlots(slots); !st)
    return st;
  returned_[layer] = slots[indexK_];
  return Status();
}

Status StackChunkRouter::finish(std::vector<HostValue> &slots) const {
  if (Status st = checkSlots(slots); !st)
    return st;
  Result<HostValue> v = routed(piece_.indexKAfter);
  if (!v)
    return makeError(v.error());
  slots[indexK_] = v.take();
  return Status();
}

} // namespace dsa::runtime
