//===- Replay.cpp - judging a whole-model replay against the golden ------------------------------------===//
#include "dsa/Golden/Replay.h"

#include "dsa/Numerics/Quant.h"

#include <algorithm>

namespace dsa::golden {
namespace {

/// "L<l>.<rest>" or "shared.L<l>.<rest>": l and rest, or l = -1.
std::pair<int64_t, std::string> splitLayerName(const std::string &name, bool &shared) {
  std::string n = name;
  shared = n.rfind("shared.", 0) == 0;
  if (shared)
    n = n.substr(7);
  if (n.size() < 3 || n[0] != 'L')
    return {-1, ""};
  const size_t dot = n.find('.');
  if (dot == std::string::npos || dot == 1 || dot > 10)
    return {-1, ""};
  const std::string digits = n.substr(1, dot - 1);
  if (digits.find_first_not_of("0123456789") != std::string::npos)
    return {-1, ""};
  return {std::stoll(digits), n.substr(dot + 1)};
}

/// The most recent index source at or before `layer`, or -1.
int64_t indexSourceFor(const Fixture &f, int64_t layer) {
  int64_t src = -1;
  for (int64_t l : f.indexSourceLayers)
    if (l <= layer && l > src)
      src = l;
  return src;
}

} // namespace

std::string indexScoreName(int64_t layer) { return "L" + std::to_string(layer) + ".index_score"; }

CaptureRules captureRules(const Fixture &f, const Regime &regime, const std::string &name, const dsa::Tensor &got,
                          const CaptureMap &produced) {
  CaptureRules rules;
  bool shared = false;
  const auto [layer, capture] = splitLayerName(name, shared);
  if (layer < 0 || layer >= f.nLayers)
    return rules;
  const int64_t ratio = f.compressRatios[static_cast<size_t>(layer)];
  const int64_t s = regime.numTokens, start = regime.startPos, end = start + s;
  const bool prefill = start == 0;
  const int64_t windowRows = prefill ? s : f.windowSize;             // section 4: the rows attention reads
  const int64_t windowCols = prefill ? std::min(s, f.windowSize) : f.windowSize; // the window indices' width
  const int64_t n = got.numElements();
  auto span = [&](int64_t begin, int64_t stop, QuantGrid grid, int64_t block) {
    if (block > 0 && begin >= 0 && stop <= n && begin < stop && (stop - begin) % block == 0)
      rules.quant.push_back(QuantSpan{begin, stop, grid, block});
  };
  auto scoresOf = [&](int64_t src) -> const dsa::Tensor * {
    auto it = produced.find(indexScoreName(src));
    return it == produced.end() ? nullptr : &it->second;
  };

  if (!shared && capture == "sa_kv" && got.isFloat()) {
    const int64_t hd = f.headDim;
    const int64_t compressedRows = ratio > 0 ? end / ratio : 0;
    const int64_t rows = hd > 0 ? n / hd : 0;
    if (rows - compressedRows == windowRows || (ratio == 0 && rows == windowRows)) {
      span(0, windowRows * hd, QuantGrid::E4M3Pow2, numerics::kActQuantBlock);
      if (compressedRows > 0)
        span(windowRows * hd, n, QuantGrid::E2M1E4M3, numerics::kFp4E4M3Block);
    }
  } else if (shared && capture == "compress_kv" && got.isFloat()) {
    span(0, n, QuantGrid::E2M1E4M3, numerics::kFp4E4M3Block);
  } else if (shared && capture == "index_k" && got.isFloat()) {
    span(0, n, QuantGrid::E2M1Pow2, numerics::kFp4E8M0Block);
  } else if (ratio > 0 && ((!shared && capture == "sa_topk_idxs") || (shared && capture == "topk_idxs")) &&
             !got.isFloat()) {
    const int64_t src = indexSourceFor(f, layer);
    const dsa::Tensor *scores = src >= 0 ? scoresOf(src) : nullptr;
    if (scores) {
      SelectionRule rule;
      rule.kind = SelectionRule::IndexSet;
      rule.firstColumn = shared ? 0 : windowCols;
      rule.offset = windowRows;
      rule.scores = *scores;
      rules.selection = std::move(rule);
    }
  } else if (shared && capture == "candidates" && !got.isFloat() && f.candidateSourceLayer >= 0 &&
             layer >= f.candidateSourceLayer && f.candidateBlockSize > 0) {
    const int64_t src = f.candidateSourceLayer;
    const int64_t r = f.compressRatios[static_cast<size_t>(src)];
    const dsa::Tensor *scores = scoresOf(src);
    if (scores && r > 0 && scores->rank() == 2) {
      SelectionRule rule;
      rule.kind = SelectionRule::BlockMask;
      rule.blockSize = f.candidateBlockSize;
      const int64_t width = scores->dim(1);
      const int64_t blocks = (width + rule.blockSize - 1) / rule.blockSize;
      rule.k = std::min(f.candidateTopkBlocks, blocks);
      for (int64_t t = 0; t < scores->dim(0); ++t) {
        // Section 6 step 5 / 7: compress_len = (t+1)//r in prefill, end//r in decode; the block of the newest
        // visible position, floor((compress_len - 1) / bs), is pinned (-1 when compress_len is 0).
        const int64_t compressLen = prefill ? (t + 1) / r : end / r;
        rule.pinnedBlock.push_back(compressLen > 0 ? (compressLen - 1) / rule.blockSize : -1);
      }
      rule.scores = *scores;
      rules.selection = std::move(rule);
    }
  }
  return rules;
}

bool isStepStateCapture(const std::string &name) {
  bool shared = false;
  const auto [layer, capture] = splitLayerName(name, shared);
  return layer >= 0 && shared && (capture == "compress_kv" || capture == "index_k");
}

Result<std::optional<dsa::Tensor>> decodeRowOfChunkCapture(const Fixture &f, const std::string &name,
                                                           const dsa::Tensor &v, int64_t start, int64_t s,
                                                           int64_t t) {
  auto bad = [&](const std::string &why) -> Result<std::optional<dsa::Tensor>> {
    return makeError("capture " + name + " " + v.typeString() + " of the " + std::to_string(s) +
                     "-token chunk at start_pos " + std::to_string(start) + ": " + why);
  };
  if (isStepStateCapture(name))
    return std::optional<dsa::Tensor>();
  if (start <= 0 || s < 1 || t < 0 || t >= s)
    return bad("token " + std::to_string(t) + " is not one of a chunk's at start_pos > 0");
  bool shared = false;
  const auto [layer, capture] = splitLayerName(name, shared);
  const int64_t W = f.windowSize, p = start + t;
  const int64_t ratio = layer >= 0 && layer < f.nLayers ? f.compressRatios[static_cast<size_t>(layer)] : 0;
  const int64_t rank = v.rank();
  const int64_t width = rank >= 1 && v.dim(0) > 0 ? v.numElements() / v.dim(0) : 0;
  // Row t of a per-token [s, ...] tensor, as [1, ...].
  auto row = [&](const dsa::Tensor &x) {
    std::vector<int64_t> shape = x.shape();
    shape[0] = 1;
    dsa::Tensor out(x.elementType(), shape);
    if (x.isFloat())
      std::copy(x.floats() + t * width, x.floats() + (t + 1) * width, out.floats());
    else
      std::copy(x.ints() + t * width, x.ints() + (t + 1) * width, out.ints());
    return out;
  };
  // A kv row index of the chunk as the decode at p numbers it (-2: it has none).
  auto decodeIndex = [&](int64_t c) -> int64_t {
    if (c == -1)
      return -1;
    if (c < 0)
      return -2;
    if (c < W) { // the entering ring's slot c: its newest position q < start, which p must still see
      const int64_t q = (start - 1) - (((start - 1 - c) % W) + W) % W;
      return q >= 0 && q > p - W ? c : -2;
    }
    if (c < W + s) // chunk row j: position start + j, written by then when j <= t
      return c - W <= t ? (start + c - W) % W : -2;
    // Compressed row c - W - s, which p sees when it is one of its (p + 1) / ratio.
    return ratio > 0 && c - W - s < (p + 1) / ratio ? c - s : -2;
  };
  auto mapIndices = [&](bool compressedOnly) -> Result<std::optional<dsa::Tensor>> {
    if (v.isFloat() || rank != 2 || v.dim(0) != s)
      return bad("expected [" + std::to_string(s) + ", k] indices");
    dsa::Tensor out = row(v);
    for (int64_t i = 0; i < width; ++i) {
      const int64_t c = out.ints()[i];
      const int64_t d = compressedOnly && c >= 0 && c < W + s ? -2 : decodeIndex(c);
      if (d == -2)
        return bad("token " + std::to_string(t) + " (position " + std::to_string(p) + "), column " +
                   std::to_string(i) + ": index " + std::to_string(c) + " is no row a decode at " +
                   std::to_string(p) + " reads");
      out.ints()[i] = d;
    }
    return std::optional<dsa::Tensor>(std::move(out));
  };
  if (!shared && capture == "sa_kv") {
    const int64_t chunkCompressed = ratio > 0 ? (start + s) / ratio : 0;
    const int64_t visible = ratio > 0 ? (p + 1) / ratio : 0;
    if (!v.isFloat() || rank != 2 || v.dim(0) != W + s + chunkCompressed)
      return bad("expected [" + std::to_string(W + s + chunkCompressed) +
                 ", head_dim] (the entering ring, the chunk's rows, the compressed rows)");
    dsa::Tensor out(v.elementType(), {W + visible, width});
    for (int64_t i = 0; i < W + visible; ++i) {
      int64_t src = i < W ? i : W + s + (i - W);
      for (int64_t j = 0; i < W && j <= t; ++j)
        if ((start + j) % W == i)
          src = W + j;
      std::copy(v.floats() + src * width, v.floats() + (src + 1) * width, out.floats() + i * width);
    }
    return std::optional<dsa::Tensor>(std::move(out));
  }
  if (!shared && capture == "sa_topk_idxs")
    return mapIndices(false);
  if (shared && capture == "topk_idxs")
    return mapIndices(true);
  if (shared && capture == "candidates") {
    const int64_t src = f.candidateSourceLayer;
    const int64_t r = src >= 0 && src < f.nLayers ? f.compressRatios[static_cast<size_t>(src)] : 0;
    const int64_t visible = r > 0 ? (p + 1) / r : 0;
    if (v.isFloat() || rank != 2 || v.dim(0) != s || width < visible)
      return bad("expected [" + std::to_string(s) + ", C >= " + std::to_string(visible) + "] (a mask per token)");
    for (int64_t c = visible; c < width; ++c)
      if (v.ints()[t * width + c] != 0)
        return bad("token " + std::to_string(t) + " (position " + std::to_string(p) + ") has column " +
                   std::to_string(c) + " set, which a decode at " + std::to_string(p) + " does not see");
    dsa::Tensor out(v.elementType(), {1, visible});
    std::copy(v.ints() + t * width, v.ints() + t * width + visible, out.ints());
    return std::optional<dsa::Tensor>(std::move(out));
  }
  if (rank < 1 || v.dim(0) != s)
    return bad("expected one row per token ([" + std::to_string(s) + ", ...])");
  return std::optional<dsa::Tensor>(row(v));
}

std::string wholeModelSkipReason(const Fixture &fixture, const Regime &regime, const std::string &name) {
  const std::string prefix = "shared.L", suffix = ".candidates";
  if (regime.startPos <= 0 || name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return "";
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9)
    return "";
  const int64_t layer = std::stoll(digits);
  if (fixture.candidateSourceLayer >= 0 && layer < fixture.candidateSourceLayer)
    return "stale: holds the previous step's candidate mask (tiny-model-harness.md, known quirks)";
  return "";
}

Result<Verdict> judgeWholeModelCapture(const GoldenFile &file, const Regime &regime, const std::string &name,
                                       const CaptureMap &produced) {
  Result<const Capture *> want = file.capture(regime.name, name);
  if (!want)
    return makeError(want.error());
  const std::string skip = wholeModelSkipReason(file.fixture(), regime, name);
  if (!skip.empty())
    return notCompared(regime.name, name, skip);
  auto it = produced.find(name);
  if (it != produced.end())
    return compareCapture(regime.name, **want, it->second,
                          captureRules(file.fixture(), regime, name, it->second, produced));
  Verdict missing = notCompared(regime.name, name, "nothing produced this capture");
  missing.status = Verdict::Fail;
  return missing;
}

const Capture *forceableCapture(const GoldenFile &file, const Regime &regime, const std::string &name) {
  auto it = regime.captures.find(name);
  if (it == regime.captures.end() || it->second.stride != 1 || it->second.n == 0)
    return nullptr;
  if (!wholeModelSkipReason(file.fixture(), regime, name).empty())
    return nullptr;
  return &it->second;
}

bool forceFromGolden(const GoldenFile &file, const Regime &regime, const std::string &name, dsa::Tensor &value) {
  const Capture *c = forceableCapture(file, regime, name);
  if (!c || c->isInteger == value.isFloat() || c->n != value.numElements())
    return false;
  auto dropOnes = [](std::vector<int64_t> shape) {
    size_t i = 0;
    while (i < shape.size() && shape[i] == 1)
      ++i;
    return std::vector<int64_t>(shape.begin() + static_cast<std::ptrdiff_t>(i), shape.end());
  };
  if (dropOnes(c->shape) != dropOnes(value.shape()))
    return false;
  if (value.isFloat()) {
    value = dsa::Tensor::fromFloats(value.elementType(), value.shape(),
                                       std::vector<float>(c->data.begin(), c->data.end()));
  } else {
    std::vector<int64_t> ints(c->data.size());
    for (size_t i = 0; i < ints.size(); ++i)
      ints[i] = static_cast<int64_t>(c->data[i]);
    if (value.elementType() == dsa::ElementType::I1)
      for (int64_t v : ints)
        if (v != 0 && v != 1)
          return false;
    value = dsa::Tensor::fromInts(value.elementType(), value.shape(), std::move(ints));
  }
  return true;
}

} // namespace dsa::golden
