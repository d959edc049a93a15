//===- Replay.cpp - judging a whole-model replay against the golden ------------------------------------===//
#include "dsa/Golden/Replay.h"

namespace dsa::golden {

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
    return compareCapture(regime.name, **want, it->second);
  Verdict missing = notCompared(regime.name, name, "nothing produced this capture");
  missing.status = Verdict::Fail;
  return missing;
}

} // namespace dsa::golden
