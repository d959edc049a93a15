//===- Compare.cpp - compare a computed tensor with a golden capture -----------===//
//
// The tolerance rule of attention-semantics.md section 12; constants in dsa/Golden/Compare.h.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Golden/Compare.h"

#include "dsa/Numerics/E2M1.h"
#include "dsa/Numerics/E4M3.h"
#include "dsa/Numerics/E8M0.h"
#include "dsa/Support/CheckedArithmetic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace dsa::golden {
namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<int64_t> dropLeadingOnes(const std::vector<int64_t> &shape) {
  size_t i = 0;
  while (i < shape.size() && shape[i] == 1)
    ++i;
  return std::vector<int64_t>(shape.begin() + static_cast<std::ptrdiff_t>(i), shape.end());
}

/// The coordinates of flat index `flat` in `shape` (row-major), e.g. "[0,3,1,7]".
std::string coords(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> c(shape.size(), 0);
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] > 0) {
      c[k] = flat % shape[k];
      flat /= shape[k];
    }
  }
  return shapeString(c);
}

const double kInf = std::numeric_limits<double>::infinity();

//===- Quantisation boundary flips ----------------------------------------------------------------------------===//

bool isE4M3Grid(QuantGrid grid) { return grid == QuantGrid::E4M3Pow2; }

/// The grid's values q, ascending (both signs, one zero).
const std::vector<double> &gridValues(QuantGrid grid) {
  static const std::vector<double> e4m3 = [] {
    std::vector<double> v;
    for (unsigned code = 0; code <= 0x7Eu; ++code) {
      const double q = numerics::e4m3BitsToF32(static_cast<uint8_t>(code));
      v.push_back(q);
      if (q != 0)
        v.push_back(-q);
    }
    std::sort(v.begin(), v.end());
    return v;
  }();
  static const std::vector<double> e2m1 = {-6, -4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return isE4M3Grid(grid) ? e4m3 : e2m1;
}

bool isPowerOfTwo(double v) {
  if (!(v > 0) || !std::isfinite(v))
    return false;
  int e = 0;
  return std::frexp(v, &e) == 0.5;
}

bool isE4M3Value(double v) {
  const float f = static_cast<float>(v);
  return v > 0 && static_cast<double>(f) == v && numerics::roundE4M3(f) == f;
}

/// The scales one step from s: half and double for power-of-two scales, the adjacent positive e4m3 values for the
/// e4m3 scales of fp4_quant_e4m3.
std::vector<double> neighbourScales(double s, QuantGrid grid) {
  if (grid != QuantGrid::E2M1E4M3)
    return {s / 2, s * 2};
  std::vector<double> out;
  const uint8_t code = numerics::f32ToE4M3Bits(static_cast<float>(s));
  if (code > 1)
    out.push_back(numerics::e4m3BitsToF32(static_cast<uint8_t>(code - 1)));
  if (code < 0x7E)
    out.push_back(numerics::e4m3BitsToF32(static_cast<uint8_t>(code + 1)));
  return out;
}

/// No value of the grid at scale s1 or s2 lies strictly between a and b (a != b): adjacent in the union of the two
/// grids.
bool adjacentInUnion(double a, double b, double s1, double s2, QuantGrid grid) {
  const double lo = std::min(a, b), hi = std::max(a, b);
  if (!(lo < hi))
    return false;
  for (double s : {s1, s2})
    for (double q : gridValues(grid)) {
      const double v = q * s;
      if (lo < v && v < hi)
        return false;
    }
  return true;
}

/// One stored sample: its index j in want.data (flat j * stride), got and want.
struct Sample {
  int64_t j = 0;
  double got = 0, want = 0;
  bool bad = false; ///< outside the tolerance
};

/// Whether the out-of-tolerance samples of one block are flips: some scale s of got's block (quantBlockScales)
/// and s' in {s, its neighbours} put every want sample of the block on the grid at s' and each bad sample's got
/// and want adjacent in the union of the grids at s and s'.
bool blockIsFlips(const float *gotBlock, int64_t block, QuantGrid grid, const std::vector<Sample> &samples) {
  for (double s : quantBlockScales(gotBlock, block, grid)) {
    std::vector<double> candidates = {s};
    for (double n : neighbourScales(s, grid))
      candidates.push_back(n);
    for (double s2 : candidates) {
      bool ok = true;
      for (const Sample &x : samples) {
        if (!onQuantGrid(x.want, s2, grid) || (x.bad && !adjacentInUnion(x.got, x.want, s, s2, grid))) {
          ok = false;
          break;
        }
      }
      if (ok)
        return true;
    }
  }
  return false;
}

/// The bad samples (indices into `samples`) that the quantisation rule explains.
std::set<int64_t> explainFlips(const Capture &want, const float *got, const std::vector<QuantSpan> &spans,
                               const std::vector<Sample> &samples) {
  std::set<int64_t> explained;
  const int64_t stride = want.stride;
  // Bad samples by (span, block).
  std::map<std::pair<size_t, int64_t>, bool> blocks;
  for (const Sample &x : samples) {
    if (!x.bad)
      continue;
    const int64_t flat = x.j * stride;
    for (size_t sp = 0; sp < spans.size(); ++sp) {
      const QuantSpan &span = spans[sp];
      if (span.block <= 0 || flat < span.begin || flat >= span.end || span.end > want.n ||
          (span.end - span.begin) % span.block != 0)
        continue;
      blocks[{sp, (flat - span.begin) / span.block}] = true;
      break;
    }
  }
  for (const auto &[key, unused] : blocks) {
    const QuantSpan &span = spans[key.first];
    const int64_t first = span.begin + key.second * span.block, last = first + span.block; // [first, last)
    std::vector<Sample> inBlock;
    for (int64_t j = (first + stride - 1) / stride; j * stride < last; ++j)
      inBlock.push_back(samples[static_cast<size_t>(j)]);
    if (blockIsFlips(got + first, span.block, span.grid, inBlock))
      for (const Sample &x : inBlock)
        if (x.bad)
          explained.insert(x.j);
  }
  return explained;
}

//===- Near-tie top-k swaps -----------------------------------------------------------------------------------===//

/// The k-th largest of `row` (k >= 1), or NaN when the row holds a NaN or has fewer than k values.
double kthLargest(std::vector<double> row, int64_t k) {
  if (k < 1 || static_cast<int64_t>(row.size()) < k)
    return std::numeric_limits<double>::quiet_NaN();
  for (double v : row)
    if (std::isnan(v))
      return v;
  std::nth_element(row.begin(), row.begin() + (k - 1), row.end(), std::greater<double>());
  return row[static_cast<size_t>(k - 1)];
}

/// Within one bf16 ulp of a finite k-th score (an infinite score, or an infinite k-th, is never a near tie).
bool inBand(double score, double kth) {
  return std::isfinite(score) && std::isfinite(kth) && std::fabs(score - kth) <= bf16Ulp(kth);
}

struct NearTieResult {
  std::set<int64_t> explained; ///< sample indices j
  int64_t swaps = 0;
};

/// The rows of an integer capture whose mismatching samples the near-tie rule explains.
NearTieResult explainNearTies(const Capture &want, const int64_t *got, const SelectionRule &rule,
                              const std::vector<Sample> &samples) {
  NearTieResult result;
  if (want.shape.empty())
    return result;
  const int64_t stride = want.stride, n = want.n;
  const int64_t cols = want.shape.back(); // a row: the set columns (IndexSet) or the mask's width (BlockMask)
  if (cols <= 0 || n % cols != 0 || rule.scores.rank() != 2 || !rule.scores.isFloat())
    return result;
  const int64_t rows = n / cols, width = rule.scores.dim(1);
  if (rule.scores.dim(0) != rows)
    return result;
  std::set<int64_t> badRows;
  for (const Sample &x : samples)
    if (x.bad)
      badRows.insert(x.j * stride / cols);

  for (int64_t t : badRows) {
    const float *sc = rule.scores.floats() + t * width;
    const int64_t rowBegin = t * cols, rowEnd = rowBegin + cols;
    std::vector<int64_t> rowSamples; // j of the stored samples in this row
    for (int64_t j = (rowBegin + stride - 1) / stride; j * stride < rowEnd; ++j)
      rowSamples.push_back(j);
    const bool fullRow = stride == 1;
    bool ok = true;
    int64_t swaps = 0;

    if (rule.kind == SelectionRule::IndexSet) {
      const int64_t first = rule.firstColumn, k = cols - first;
      const double kth = kthLargest(std::vector<double>(sc, sc + width), k);
      auto band = [&](int64_t v) {
        const int64_t p = v - rule.offset;
        return v >= 0 && p >= 0 && p < width && inBand(sc[p], kth);
      };
      std::multiset<int64_t> gotSet;
      for (int64_t c = first; c < cols; ++c)
        gotSet.insert(got[rowBegin + c]);
      for (int64_t j : rowSamples) {
        const Sample &x = samples[static_cast<size_t>(j)];
        if (x.bad && j * stride - rowBegin < first)
          ok = false; // the window part is exact
      }
      if (ok && fullRow) {
        std::multiset<int64_t> wantSet;
        for (int64_t j : rowSamples)
          if (j * stride - rowBegin >= first)
            wantSet.insert(static_cast<int64_t>(samples[static_cast<size_t>(j)].want));
        std::vector<int64_t> gotOnly, wantOnly;
        std::set_difference(gotSet.begin(), gotSet.end(), wantSet.begin(), wantSet.end(),
                            std::back_inserter(gotOnly));
        std::set_difference(wantSet.begin(), wantSet.end(), gotSet.begin(), gotSet.end(),
                            std::back_inserter(wantOnly));
        for (int64_t v : gotOnly)
          ok = ok && band(v);
        for (int64_t v : wantOnly)
          ok = ok && band(v);
        swaps = static_cast<int64_t>(std::max(gotOnly.size(), wantOnly.size()));
      } else if (ok) {
        // Only some columns are stored. A row is its valid positions ascending, then its -1s. If the reference's
        // set W is got's set G with members X (in the band) taken out and Y (in the band) put in, a stored want
        // index w at set column c has c = #G(<w) - #X(<w) + #Y(<w): so w is in G or the band, and
        // -#(G in the band, <w) <= c - #G(<w) <= #(band outside G, <w).
        std::vector<int64_t> bandPositions;
        for (int64_t p = 0; p < width; ++p)
          if (inBand(sc[p], kth))
            bandPositions.push_back(p + rule.offset);
        for (int64_t j : rowSamples) {
          const int64_t c = j * stride - rowBegin - first;
          if (c < 0)
            continue;
          const int64_t w = static_cast<int64_t>(samples[static_cast<size_t>(j)].want);
          if (w < 0) {
            ok = ok && gotSet.count(-1) > 0;
            continue;
          }
          const bool inGot = gotSet.count(w) > 0;
          if (!inGot && !band(w)) {
            ok = false;
            break;
          }
          swaps += inGot ? 0 : 1;
          int64_t gotBelow = 0, gotBandBelow = 0, bandOutsideBelow = 0;
          for (int64_t v : gotSet)
            if (v >= 0 && v < w) {
              ++gotBelow;
              gotBandBelow += band(v) ? 1 : 0;
            }
          for (int64_t v : bandPositions)
            if (v < w && !gotSet.count(v))
              ++bandOutsideBelow;
          const int64_t shift = c - gotBelow;
          if (shift < -gotBandBelow || shift > bandOutsideBelow) {
            ok = false;
            break;
          }
        }
        swaps = std::max<int64_t>(swaps, 1); // the row differs, so at least one member was swapped
      }
    } else { // BlockMask
      const int64_t bs = rule.blockSize;
      if (bs <= 0 || cols != width)
        return result;
      const int64_t nb = (width + bs - 1) / bs;
      std::vector<double> blockScore(static_cast<size_t>(nb), -kInf);
      for (int64_t p = 0; p < width; ++p)
        blockScore[static_cast<size_t>(p / bs)] = std::max(blockScore[static_cast<size_t>(p / bs)],
                                                           static_cast<double>(sc[p]));
      const int64_t pinned = t < static_cast<int64_t>(rule.pinnedBlock.size()) ? rule.pinnedBlock[t] : -1;
      if (pinned >= 0 && pinned < nb)
        blockScore[static_cast<size_t>(pinned)] = kInf;
      const double kth = kthLargest(blockScore, rule.k);
      // got's blocks (each block's mask must be uniform in got).
      std::vector<int64_t> gotBlock(static_cast<size_t>(nb), -1);
      for (int64_t p = 0; p < width; ++p) {
        int64_t &b = gotBlock[static_cast<size_t>(p / bs)];
        const int64_t g = got[rowBegin + p];
        if (b >= 0 && b != g)
          ok = false;
        b = g;
      }
      std::set<int64_t> gotOnly, wantOnly;
      for (int64_t j : rowSamples) {
        const Sample &x = samples[static_cast<size_t>(j)];
        if (!x.bad)
          continue;
        const int64_t b = (j * stride - rowBegin) / bs;
        if ((x.want != 0 && x.want != 1) || !inBand(blockScore[static_cast<size_t>(b)], kth)) {
          ok = false;
          break;
        }
        (x.want == 1 ? wantOnly : gotOnly).insert(b);
      }
      swaps = static_cast<int64_t>(std::max(gotOnly.size(), wantOnly.size()));
    }
    if (ok && swaps > 0) {
      for (int64_t j : rowSamples)
        if (samples[static_cast<size_t>(j)].bad)
          result.explained.insert(j);
      result.swaps += swaps;
    }
  }
  return result;
}

} // namespace

std::vector<double> quantBlockScales(const float *x, int64_t n, QuantGrid grid) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double a = std::fabs(static_cast<double>(x[i]));
    if (!std::isfinite(a))
      return {};
    m = std::max(m, a);
  }
  std::vector<double> candidates;
  double floorScale = 0, floorMaxRatio = 0;
  switch (grid) {
  case QuantGrid::E4M3Pow2: { // s = pow2_ceil(max(amax, 1e-4) / 448): |largest| / s = e4m3 of (224, 448]
    floorScale = numerics::pow2Ceil(1e-4f / numerics::kE4M3Max);
    floorMaxRatio = numerics::kE4M3Max;
    if (m > 0) {
      const int e = std::ilogb(m);
      for (int k = e - 9; k <= e - 7; ++k) {
        const double s = std::ldexp(1.0, k), r = m / s;
        if (r >= 224 && r <= 448)
          candidates.push_back(s);
      }
    }
    break;
  }
  case QuantGrid::E2M1Pow2: // s = pow2_ceil(max(amax, 6*2^-126) / 6): |largest| / s = e2m1 of (3, 6] = 3, 4, 6
    floorScale = numerics::pow2Ceil(numerics::kE2M1Max * 0x1p-126f / numerics::kE2M1Max);
    floorMaxRatio = numerics::kE2M1Max;
    for (double q : {3.0, 4.0, 6.0})
      if (isPowerOfTwo(m / q))
        candidates.push_back(m / q);
    break;
  case QuantGrid::E2M1E4M3: // s = e4m3(max(amax, 6*2^-9) / 6): |largest| / s = 6 (4 for the subnormal 2^-8)
    floorScale = numerics::roundE4M3(numerics::kE2M1Max * 0x1p-9f / numerics::kE2M1Max);
    floorMaxRatio = numerics::kE2M1Max;
    for (double q : {6.0, 4.0})
      if (m > 0 && isE4M3Value(m / q) && (q == 6.0 || m / q < 0x1p-6))
        candidates.push_back(m / q);
    break;
  }
  if (m / floorScale <= floorMaxRatio && std::find(candidates.begin(), candidates.end(), floorScale) == candidates.end())
    candidates.push_back(floorScale);
  std::vector<double> out;
  for (double s : candidates) {
    bool all = true;
    for (int64_t i = 0; i < n && all; ++i)
      all = onQuantGrid(x[i], s, grid);
    if (all)
      out.push_back(s);
  }
  return out;
}

bool onQuantGrid(double v, double s, QuantGrid grid) {
  if (!(s > 0) || !std::isfinite(v) || !std::isfinite(s))
    return false;
  const double q = v / s;
  const float qf = static_cast<float>(q);
  if (static_cast<double>(qf) != q || q * s != v)
    return false;
  const float r = isE4M3Grid(grid) ? numerics::roundE4M3(qf) : numerics::roundE2M1(qf);
  return r == qf;
}

double bf16Ulp(double v) {
  if (!std::isfinite(v))
    return std::numeric_limits<double>::quiet_NaN();
  double a = std::fabs(v);
  if (a < std::ldexp(1.0, -126))
    return std::ldexp(1.0, -133);
  int e = 0;
  std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1): floor(log2 a) = e - 1
  return std::ldexp(1.0, e - 1 - 7);
}

Verdict compareCapture(const Capture &want, const dsa::Tensor &got, const CaptureRules &rules) {
  Verdict v;
  v.name = want.name;
  v.ckWant = want.ck;

  // The capture itself must be consistent (GoldenFile::load guarantees it; hand-made captures may not be).
  std::optional<int64_t> prod = 1;
  for (int64_t d : want.shape)
    prod = prod && d >= 0 ? checkedMul(*prod, d) : std::nullopt;
  if (want.stride < 1 || !prod || *prod != want.n ||
      static_cast<int64_t>(want.data.size()) != ceilDivNonNegative(want.n, want.stride)) {
    v.status = Verdict::NotCompared;
    v.detail = "inconsistent capture: shape " + shapeString(want.shape) + ", n " + std::to_string(want.n) +
               ", stride " + std::to_string(want.stride) + ", " + std::to_string(want.data.size()) + " samples";
    return v;
  }

  // Shapes, after dropping the leading 1s (batch) of both.
  const std::vector<int64_t> wantShape = dropLeadingOnes(want.shape);
  const std::vector<int64_t> gotShape = dropLeadingOnes(got.shape());
  if (wantShape != gotShape) {
    v.status = Verdict::Fail;
    v.detail = "shape mismatch: capture " + shapeString(want.shape) + " vs got " + got.typeString() +
               " (compared as " + shapeString(wantShape) + " vs " + shapeString(gotShape) + ")";
    return v;
  }
  const int64_t n = want.n;
  if (n > 0 && want.isInteger == got.isFloat()) {
    v.status = Verdict::Fail;
    v.detail = std::string("element kind mismatch: capture holds ") + (want.isInteger ? "integers" : "floats") +
               ", got " + got.typeString();
    return v;
  }
  const size_t storage = got.isFloat() ? got.floatVector().size() : got.intVector().size();
  if (static_cast<int64_t>(storage) != n) {
    v.status = Verdict::Fail;
    v.detail = "got " + got.typeString() + " holds " + std::to_string(storage) + " values, expected " +
               std::to_string(n);
    return v;
  }

  const int64_t stride = want.stride;
  v.compared = static_cast<int64_t>(want.data.size());
  std::vector<Sample> samples(static_cast<size_t>(v.compared));
  std::vector<double> tols(samples.size(), 0.0); // float captures: each sample's tolerance
  std::set<int64_t> explained;                   // samples a section-12 rule explains
  std::string ckNote;

  if (want.isInteger) {
    const int64_t *x = got.ints();
    for (int64_t j = 0; j < v.compared; ++j) {
      Sample &sm = samples[static_cast<size_t>(j)];
      sm.j = j;
      sm.got = static_cast<double>(x[j * stride]);
      sm.want = want.data[static_cast<size_t>(j)];
      sm.bad = sm.got != sm.want;
      if (sm.bad)
        v.maxAbsErr = std::max(v.maxAbsErr, std::fabs(sm.got - sm.want));
    }
    if (rules.selection) {
      NearTieResult nt = explainNearTies(want, x, *rules.selection, samples);
      explained = std::move(nt.explained);
      v.nearTies = nt.swaps;
    }
    double ck = 0, ckExplained = 0;
    for (int64_t i = 0; i < n; ++i)
      ck += static_cast<double>(x[i]) * static_cast<double>(i + 1);
    for (int64_t j : explained) {
      const Sample &sm = samples[static_cast<size_t>(j)];
      ckExplained += (sm.got - sm.want) * static_cast<double>(j * stride + 1);
    }
    v.ckGot = ck;
    v.ckTol = 0;
    if (v.nearTies > 0 && stride > 1) {
      v.ckOk = true;
      ckNote = "ck not compared: near-tie swaps in a strided capture";
    } else {
      v.ckOk = ck - ckExplained == want.ck;
    }
  } else {
    const float *x = n > 0 ? got.floats() : nullptr;
    double maxWant = 0;
    for (double w : want.data)
      maxWant = std::max(maxWant, std::fabs(w));
    for (int64_t j = 0; j < v.compared; ++j) {
      Sample &sm = samples[static_cast<size_t>(j)];
      sm.j = j;
      sm.got = static_cast<double>(x[j * stride]);
      sm.want = want.data[static_cast<size_t>(j)];
      tols[static_cast<size_t>(j)] = kRelTol * std::fabs(sm.want) + kAbsTolOfMax * maxWant;
      double err = std::fabs(sm.got - sm.want);
      if (std::isnan(err))
        err = kInf;
      v.maxAbsErr = std::max(v.maxAbsErr, err);
      v.maxUlpErr = std::max(v.maxUlpErr, err / bf16Ulp(sm.want));
      sm.bad = !(err <= tols[static_cast<size_t>(j)]);
    }
    if (!rules.quant.empty())
      explained = explainFlips(want, x, rules.quant, samples);
    v.flips = static_cast<int64_t>(explained.size());
    double ck = 0, mass = 0, ckExplained = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double g = static_cast<double>(x[i]);
      ck += g * static_cast<double>(i + 1);
      mass += std::fabs(g) * static_cast<double>(i + 1);
    }
    for (int64_t j : explained) {
      const Sample &sm = samples[static_cast<size_t>(j)];
      ckExplained += (sm.got - sm.want) * static_cast<double>(j * stride + 1);
    }
    v.ckGot = ck;
    v.ckTol = kCkRelTol * mass;
    v.ckOk = std::fabs(ck - ckExplained - want.ck) <= v.ckTol; // false on NaN/inf
  }
  for (int64_t j : explained)
    samples[static_cast<size_t>(j)].bad = false;
  for (const Sample &sm : samples)
    v.mismatches += sm.bad ? 1 : 0;

  v.status = (v.mismatches == 0 && v.ckOk) ? Verdict::Pass : Verdict::Fail;
  std::string d;
  auto at = [&](const Sample &sm) {
    const int64_t flat = sm.j * stride;
    return "flat " + std::to_string(flat) + " " + coords(flat, want.shape) + ": got " + num(sm.got) + " want " +
           num(sm.want);
  };
  for (const Sample &sm : samples)
    if (sm.bad) {
      d = std::to_string(v.mismatches) + " of " + std::to_string(v.compared) + " samples differ; first at " + at(sm);
      if (!want.isInteger)
        d += " tol " + num(tols[static_cast<size_t>(sm.j)]);
      break;
    }
  if (!v.ckOk) {
    if (!d.empty())
      d += "; ";
    d += "ck got " + num(v.ckGot) + " want " + num(v.ckWant) +
         (want.isInteger ? std::string(" (exact)") : " tol " + num(v.ckTol));
    if (!explained.empty())
      d += " (the explained samples' differences taken out)";
  }
  // What the section-12 rules explained, on a PASS too.
  if (v.flips > 0)
    d += (d.empty() ? "" : "; ") + std::to_string(v.flips) +
         (v.flips == 1 ? " quantisation flip" : " quantisation flips") + ", first at " +
         at(samples[static_cast<size_t>(*explained.begin())]);
  if (v.nearTies > 0)
    d += (d.empty() ? "" : "; ") + std::to_string(v.nearTies) +
         (v.nearTies == 1 ? " near-tie swap" : " near-tie swaps") + ", first at " +
         at(samples[static_cast<size_t>(*explained.begin())]);
  if (!ckNote.empty())
    d += (d.empty() ? "" : "; ") + ckNote;
  v.detail = d;
  return v;
}

Verdict compareCapture(const std::string &regime, const Capture &want, const dsa::Tensor &got,
                       const CaptureRules &rules) {
  Verdict v = compareCapture(want, got, rules);
  v.regime = regime;
  return v;
}

Verdict notCompared(const std::string &regime, const std::string &name, const std::string &reason) {
  Verdict v;
  v.regime = regime;
  v.name = name;
  v.status = Verdict::NotCompared;
  v.detail = reason;
  return v;
}

std::string formatVerdict(const Verdict &v) {
  const char *tag = v.status == Verdict::Pass ? "PASS" : v.status == Verdict::Fail ? "FAIL" : "SKIP";
  std::string s = std::string(tag) + "  " + (v.regime.empty() ? "" : v.regime + " ") + v.name;
  if (v.status != Verdict::NotCompared && v.compared > 0) {
    s += "  max_abs " + num(v.maxAbsErr) + " max_ulp " + num(v.maxUlpErr) + " bad " + std::to_string(v.mismatches) +
         "/" + std::to_string(v.compared) + " ck " + num(v.ckGot) + "/" + num(v.ckWant);
    if (v.flips > 0)
      s += " flips " + std::to_string(v.flips);
    if (v.nearTies > 0)
      s += " near_ties " + std::to_string(v.nearTies);
  }
  if (!v.detail.empty())
    s += " -- " + v.detail;
  return s;
}

Summary summarize(const std::vector<Verdict> &verdicts) {
  Summary s;
  for (const Verdict &v : verdicts) {
    if (v.status == Verdict::Pass)
      ++s.passed;
    else if (v.status == Verdict::Fail)
      ++s.failed;
    else
      ++s.notCompared;
    s.flips += v.flips;
    s.nearTies += v.nearTies;
  }
  return s;
}

std::string formatSummary(const Summary &s) {
  std::string out = "golden: " + std::to_string(s.passed) + " passed, " + std::to_string(s.failed) + " failed";
  if (s.flips > 0 || s.nearTies > 0)
    out += " (" + std::to_string(s.notCompared) + " not compared; " + std::to_string(s.flips) + " flips, " +
           std::to_string(s.nearTies) + " near-ties)";
  else if (s.notCompared > 0)
    out += " (" + std::to_string(s.notCompared) + " not compared)";
  return out;
}

std::string formatSummary(const std::vector<Verdict> &verdicts) { return formatSummary(summarize(verdicts)); }

} // namespace dsa::golden
