//===- Compare.h - compare a computed tensor with a golden capture -------------===//
//
// The one implementation of the golden tolerance rule, attention-semantics.md section 12 ("Precision summary and
// tolerances"). Every comparison of the project against a golden goes through compareCapture.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_GOLDEN_COMPARE_H
#define DSA_GOLDEN_COMPARE_H

#include "dsa/Golden/GoldenFile.h"
#include "dsa/Interpreter/Tensor.h"

#include <cstdint>
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

/// The outcome of one comparison.
struct Verdict {
  enum Status { Pass, Fail, NotCompared };

  std::string name;      ///< the capture name (e.g. "L0.sa_q")
  std::string regime;    ///< optional: the regime, printed as a prefix when non-empty
  Status status = NotCompared;
  double maxAbsErr = 0;  ///< max |got - want| over the compared samples
  double maxUlpErr = 0;  ///< max |got - want| in bf16 ulps of want (ulp(0) = 2^-133); 0 for integer captures
  int64_t compared = 0;  ///< samples compared
  int64_t mismatches = 0; ///< samples outside the tolerance (integer: not equal)
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
Verdict compareCapture(const Capture &want, const interp::Tensor &got);
/// As above, with verdict.regime set.
Verdict compareCapture(const std::string &regime, const Capture &want, const interp::Tensor &got);

/// A verdict for a capture deliberately skipped (e.g. a known quirk of the golden); `reason` becomes the detail.
Verdict notCompared(const std::string &regime, const std::string &name, const std::string &reason);

/// One line, stable format:
/// `PASS  prefill12 L0.sa_q  max_abs 0 max_ulp 0 bad 0/384 ck 1234.5/1234.5`
/// (`FAIL` / `SKIP` for the other statuses; no regime word when it is empty; the numbers only when samples were
/// compared; then ` -- <detail>` when there is one). Numbers are printed with %.6g.
std::string formatVerdict(const Verdict &verdict);

/// Counts of a list of verdicts.
struct Summary {
  int64_t passed = 0;
  int64_t failed = 0;
  int64_t notCompared = 0;
  bool allPassed() const { return failed == 0; }
};
Summary summarize(const std::vector<Verdict> &verdicts);
/// `golden: N passed, M failed` (+ ` (K not compared)` when K > 0). The plain `N passed, M failed` form is what
/// CI reads.
std::string formatSummary(const Summary &summary);
std::string formatSummary(const std::vector<Verdict> &verdicts);

} // namespace dsa::golden

#endif // DSA_GOLDEN_COMPARE_H
