//===- Replay.h - judging a whole-model replay against the golden (MLIR-free) -----------------------------===//
//
// The one rule set every whole-model golden replay applies (dsa-run --golden in interpret/cpu mode, dsa-golden on
// AOT step libraries, CPU or GPU): for each capture of a regime, in file order,
//   - not compared: the stale decode `shared.L<l>.candidates` of a layer before the candidate source (it holds the
//     previous step's mask; shared/spec/tiny-model-harness.md, "Known quirks");
//   - compared with the section 12 tolerance (Compare.h) when the replay produced it;
//   - FAIL "nothing produced this capture" otherwise (a whole-model replay produces every capture).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_GOLDEN_REPLAY_H
#define DSA_GOLDEN_REPLAY_H

#include "dsa/Golden/Compare.h"
#include "dsa/Golden/GoldenFile.h"
#include "dsa/Golden/TinyModel.h"
#include "dsa/Support/Result.h"

#include <string>

namespace dsa::golden {

/// Why capture `name` of `regime` is not compared in a whole-model replay, or "" when it is compared. Only the stale
/// decode (startPos > 0) `shared.L<l>.candidates` with l < fixture.candidate_source_layer is skipped.
std::string wholeModelSkipReason(const Fixture &fixture, const Regime &regime, const std::string &name);

/// The verdict of capture `name` of `regime` for a whole-model replay that produced `produced` (the rules above).
/// Error: the golden has no such capture (names regime and capture).
Result<Verdict> judgeWholeModelCapture(const GoldenFile &file, const Regime &regime, const std::string &name,
                                       const CaptureMap &produced);

} // namespace dsa::golden

#endif // DSA_GOLDEN_REPLAY_H
