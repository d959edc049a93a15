//===- Compare.cpp - compare a computed tensor with a golden capture -----------===//
//
// The tolerance rule of attention-semantics.md section 12; constants in dsa/Golden/Compare.h.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Golden/Compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

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

} // namespace

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

Verdict compareCapture(const Capture &want, const interp::Tensor &got) {
  Verdict v;
  v.name = want.name;
  v.ckWant = want.ck;

  // The capture itself must be consistent (GoldenFile::load guarantees it; hand-made captures may not be).
  int64_t prod = 1;
  for (int64_t d : want.shape)
    prod = d < 0 ? -1 : prod * d;
  if (want.stride < 1 || prod != want.n ||
      static_cast<int64_t>(want.data.size()) != (want.n + want.stride - 1) / std::max<int64_t>(want.stride, 1)) {
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
  int64_t firstBad = -1;
  double firstGot = 0, firstWant = 0, firstTol = 0;

  if (want.isInteger) {
    const int64_t *x = got.ints();
    for (int64_t j = 0; j < v.compared; ++j) {
      const double g = static_cast<double>(x[j * stride]);
      const double w = want.data[static_cast<size_t>(j)];
      if (g != w) {
        ++v.mismatches;
        v.maxAbsErr = std::max(v.maxAbsErr, std::fabs(g - w));
        if (firstBad < 0) {
          firstBad = j;
          firstGot = g;
          firstWant = w;
        }
      }
    }
    double ck = 0;
    for (int64_t i = 0; i < n; ++i)
      ck += static_cast<double>(x[i]) * static_cast<double>(i + 1);
    v.ckGot = ck;
    v.ckTol = 0;
    v.ckOk = ck == want.ck;
  } else {
    const float *x = n > 0 ? got.floats() : nullptr;
    double maxWant = 0;
    for (double w : want.data)
      maxWant = std::max(maxWant, std::fabs(w));
    for (int64_t j = 0; j < v.compared; ++j) {
      const double g = static_cast<double>(x[j * stride]);
      const double w = want.data[static_cast<size_t>(j)];
      const double tol = kRelTol * std::fabs(w) + kAbsTolOfMax * maxWant;
      double err = std::fabs(g - w);
      if (std::isnan(err))
        err = kInf;
      v.maxAbsErr = std::max(v.maxAbsErr, err);
      v.maxUlpErr = std::max(v.maxUlpErr, err / bf16Ulp(w));
      if (!(err <= tol)) {
        ++v.mismatches;
        if (firstBad < 0) {
          firstBad = j;
          firstGot = g;
          firstWant = w;
          firstTol = tol;
        }
      }
    }
    double ck = 0, mass = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double g = static_cast<double>(x[i]);
      ck += g * static_cast<double>(i + 1);
      mass += std::fabs(g) * static_cast<double>(i + 1);
    }
    v.ckGot = ck;
    v.ckTol = kCkRelTol * mass;
    v.ckOk = std::fabs(ck - want.ck) <= v.ckTol; // false on NaN/inf
  }

  v.status = (v.mismatches == 0 && v.ckOk) ? Verdict::Pass : Verdict::Fail;
  if (v.status == Verdict::Fail) {
    std::string d;
    if (firstBad >= 0) {
      const int64_t flat = firstBad * stride;
      d = std::to_string(v.mismatches) + " of " + std::to_string(v.compared) + " samples differ; first at flat " +
          std::to_string(flat) + " " + coords(flat, want.shape) + ": got " + num(firstGot) + " want " +
          num(firstWant);
      if (!want.isInteger)
        d += " tol " + num(firstTol);
    }
    if (!v.ckOk) {
      if (!d.empty())
        d += "; ";
      d += "ck got " + num(v.ckGot) + " want " + num(v.ckWant) +
           (want.isInteger ? std::string(" (exact)") : " tol " + num(v.ckTol));
    }
    v.detail = d;
  }
  return v;
}

Verdict compareCapture(const std::string &regime, const Capture &want, const interp::Tensor &got) {
  Verdict v = compareCapture(want, got);
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
  }
  return s;
}

std::string formatSummary(const Summary &s) {
  std::string out = "golden: " + std::to_string(s.passed) + " passed, " + std::to_string(s.failed) + " failed";
  if (s.notCompared > 0)
    out += " (" + std::to_string(s.notCompared) + " not compared)";
  return out;
}

std::string formatSummary(const std::vector<Verdict> &verdicts) { return formatSummary(summarize(verdicts)); }

} // namespace dsa::golden
