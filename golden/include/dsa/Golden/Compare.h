//===- Compare.h - compare a computed tensor with a golden capture -------------===//
//
// The one implementation of the golden tolerance rule, attention-semantics.md section 12 ("Precision summary and
// tolerances"). Every comparison of the project against a golden goes through compareCapture.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_GOLDEN_COMPARE_H
#define DSA_GOLDEN_COMPARE_H

#include "dsa/Golden/GoldenFile.h"
#include "dsa/Core/Tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dsa::golden {

// Tolerances of attention-semantics.md section 12, written once. Never loosen them.
/// Float elements: |got - want| <= kRelTol * |want| + kAbsTolOfMax * max|want| (max over the compared samples).
inline constexpr double kRelTol = 1.0 / 64.0;      // 2^-6
inline constexpr double kAbsTolOfMax = 1.0 / 256.0; // 2^-8
/// Float checksums: |ck_got - ck_want| <= kCkRelTol * sum_i |x_i| * (i+1), x = got over the whole tensor.
inline constexpr double kCkRelTol = 2e-3;
// Integer captures (indices, ids, hashes, masks): every sample and the checksum exactly.
//
// Section 12's two rules for production geometry, where another accumulation order moves a value by one bf16 ulp
// (both need to know how the capture was produced: CaptureRules below; without rules a capture is compared by the
// tolerance / exactly, as above). Samples they explain are not mismatches: they are counted apart, shown on the
// verdict line (` flips F`, ` near_ties T`) and in the summary.
//   Quantisation boundary flips: a float sample outside the tolerance in a block of an fp8/fp4 round trip passes
//   as a flip when got and want are adjacent values of the block's grid (got's block scale s, which the comparator
//   reads off got's whole block: the scales that put every got value of the block on the grid and give its
//   largest value the scale rule's range), or the reference's block scale s' is one step from s (one power of two
//   for pow2 scales, the adjacent e4m3 value for fp4_quant_e4m3's e4m3 scales: the amax crossed a rounding
//   boundary) and got, want are adjacent in the union of the two grids. Every want sample of such a block must lie
//   on the grid of s', and every out-of-tolerance sample of the block must be explained by the same (s, s'). The
//   checksum is then compared with the flips' differences taken out.
//   Near-tie top-k swaps: a row of an index capture whose set (or candidate block set) differs from the want row
//   passes when every index in the symmetric difference has a score, as the implementation computed it, within
//   one bf16 ulp of the row's k-th largest score (a finite one: an -inf tie is compared exactly, its order is
//   pinned by section 9). Rows stored only at a stride are checked on their samples: every stored want index is
//   in got's row or within the band, and the got members above the band fit where the stored ones sit. The
//   checksum of a full capture is compared with the swaps taken out; a strided one with swaps is not compared
//   (the swaps in its unstored elements cannot be told from wrong indices), which the verdict's detail says.

/// The grids of section 2's round trips. After the round trip an element is bf16(q * s): q a value of the grid,
/// s its block's scale.
enum class QuantGrid {
  E4M3Pow2, ///< act_quant_fp8 (window KV rows): q e4m3, s = pow2_ceil(max(amax, 1e-4) / 448)
  E2M1Pow2, ///< fp4_quant_e8m0 (index keys): q e2m1, s = pow2_ceil(max(amax, 6*2^-126) / 6)
  E2M1E4M3, ///< fp4_quant_e4m3 (compressed KV latent): q e2m1, s = e4m3(max(amax, 6*2^-9) / 6)
};

/// Flat elements [begin, end) of a float capture that came out of one round trip, in blocks of `block`
/// consecutive elements ((end - begin) a multiple of block), one scale per block.
struct QuantSpan {
  int64_t begin = 0;
  int64_t end = 0;
  QuantGrid grid = QuantGrid::E4M3Pow2;
  int64_t block = 0;
};

/// An integer capture whose rows are top-k selections (section 12, near ties), and the scores they came from.
struct SelectionRule {
  enum Kind {
    /// Each row: columns [firstColumn, cols) hold the k = cols - firstColumn selected positions p, stored as
    /// p + offset, -1 where none (section 6 step 7); the columns before firstColumn are compared exactly.
    IndexSet,
    /// Each row: a 0/1 mask over `width` positions, true on every position of a kept block (section 7): at most
    /// k blocks of blockSize positions, pinnedBlock[row] (-1: none) has score +inf.
    BlockMask,
  };
  Kind kind = IndexSet;
  int64_t firstColumn = 0;
  int64_t offset = 0;
  int64_t k = 0;         ///< BlockMask: min(topk_blocks, number of blocks)
  int64_t blockSize = 0; ///< BlockMask only
  std::vector<int64_t> pinnedBlock; ///< BlockMask only: one per row
  /// The scores the implementation under test selected from, [rows, width] (bf16 values): for IndexSet the
  /// scores its top-k read (after visibility and the candidate mask), for BlockMask the candidate source's scores
  /// (after visibility) that its block maxima come from.
  dsa::Tensor scores;
};

/// What the comparator may know about how a capture was produced. Empty: the plain rule.
struct CaptureRules {
  std::vector<QuantSpan> quant;           ///< float captures: the round trips' elements
  std::optional<SelectionRule> selection; ///< integer captures: the selections
};

/// The outcome of one comparison.
struct Verdict {
  enum Status { Pass, Fail, NotCompared };

  std::string name;      ///< the capture name (e.g. "L0.sa_q")
  std::string regime;    ///< optional: the regime, printed as a prefix when non-empty
  Status status = NotCompared;
  double maxAbsErr = 0;  ///< max |got - want| over the compared samples
  double maxUlpErr = 0;  ///< max |got - want| in bf16 ulps of want (ulp(0) = 2^-133); 0 for integer captures
  int64_t compared = 0;  ///< samples compared
  int64_t mismatches = 0; ///< samples outside the tolerance (integer: not equal) that no rule explains
  int64_t flips = 0;      ///< samples outside the tolerance explained as quantisation boundary flips
  int64_t nearTies = 0;   ///< near-tie swaps (selected members replaced, counted per row on the stored samples)
  double ckGot = 0;      ///< sum_i f64(got_i) * (i+1) over the whole got tensor
  double ckWant = 0;     ///< the capture's ck
  double ckTol = 0;      ///< the allowed |ckGot - ckWant| (0 for integer captures)
  bool ckOk = false;     ///< the checksum is within ckTol
  std::string detail;    ///< why it failed (first mismatch, shape/type) or why it was not compared; empty on Pass
};

/// The bf16 ulp at |v|: 2^(floor(log2|v|) - 7) for |v| >= 2^-126, 2^-133 below (bf16 subnormals); inf/NaN -> NaN.
double bf16Ulp(double v);

/// Compares `got` with the capture `want`.
/// Shapes: leading 1s are dropped from both shapes before comparing (the golden has batch 1: a capture
/// [1,s,H,hd] matches got [s,H,hd] or [1,s,H,hd]); a difference is a Fail naming both shapes.
/// Element kind: an integer capture needs an integer tensor (i1/i32/i64/index) and a float capture a float tensor
/// (bf16/f32); otherwise Fail.
/// Floats: each stored sample want.data[j] against got flat[j * stride] with the kRelTol/kAbsTolOfMax rule, AND
/// the checksum with kCkRelTol (NaN/inf in got fail). Integers: every sample and ck exactly.
/// A capture that is itself inconsistent (data.size() != ceil(n/stride), stride < 1) is NotCompared.
/// With `rules`: section 12's flips and near ties as described at the top of this file.
Verdict compareCapture(const Capture &want, const dsa::Tensor &got, const CaptureRules &rules = {});
/// As above, with verdict.regime set.
Verdict compareCapture(const std::string &regime, const Capture &want, const dsa::Tensor &got,
                       const CaptureRules &rules = {});

/// The scales s a block of round-trip output `x[0..n)` can have had (usually one, two where the largest value
/// fits both, e.g. 448*s = 224*(2s)): those that put every value on `grid`'s values times s and give the largest
/// |x| the range the scale rule allows. Empty when none does (not a round trip's output).
std::vector<double> quantBlockScales(const float *x, int64_t n, QuantGrid grid);
/// True when v == q * s for a value q of `grid` (exactly).
bool onQuantGrid(double v, double s, QuantGrid grid);

/// A verdict for a capture deliberately skipped (e.g. a known quirk of the golden); `reason` becomes the detail.
Verdict notCompared(const std::string &regime, const std::string &name, const std::string &reason);

/// One line, stable format:
/// `PASS  prefill12 L0.sa_q  max_abs 0 max_ulp 0 bad 0/384 ck 1234.5/1234.5`
/// (`FAIL` / `SKIP` for the other statuses; no regime word when it is empty; the numbers only when samples were
/// compared, then ` flips F` / ` near_ties T` when nonzero; then ` -- <detail>` when there is one). Numbers are
/// printed with %.6g.
std::string formatVerdict(const Verdict &verdict);

/// Counts of a list of verdicts.
struct Summary {
  int64_t passed = 0;
  int64_t failed = 0;
  int64_t notCompared = 0;
  int64_t flips = 0;    ///< over every verdict, passed or failed
  int64_t nearTies = 0; ///< over every verdict, passed or failed
  bool allPassed() const { return failed == 0; }
};
Summary summarize(const std::vector<Verdict> &verdicts);
/// `golden: N passed, M failed` (+ ` (K not compared)` when K > 0); with flips or near ties
/// `golden: N passed, M failed (K not compared; F flips, T near-ties)` (K printed even when 0). Without flips and
/// near ties the line is exactly the older one, which CI and the tests read.
std::string formatSummary(const Summary &summary);
std::string formatSummary(const std::vector<Verdict> &verdicts);

} // namespace dsa::golden

#endif // DSA_GOLDEN_COMPARE_H
