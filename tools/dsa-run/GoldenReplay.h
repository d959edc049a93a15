//===- GoldenReplay.h - replay a DeepSeek golden through the dsa dialect -----===//
//
// `dsa-run --golden FILE --layers L,...`: for each requested layer, build a module holding one `dsa.attention`
// configured from the golden's fixture, lower it with `dsa-decompose-attention`, then run the golden's regimes in
// order with one persistent per-layer state on the reference interpreter, feeding each layer the golden's stored
// `L<l>.attn_in`, and compare every probed capture (`sa_q`, `sa_kv`, `sa_topk_idxs`, `sa_o`, `attn_out`) with the
// golden (attention-semantics.md section 12 tolerance). Prints one line per capture and `golden: N passed, M failed`.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_TOOLS_DSA_RUN_GOLDENREPLAY_H
#define DSA_TOOLS_DSA_RUN_GOLDENREPLAY_H

#include <cstdint>
#include <string>
#include <vector>

namespace dsa::tools {

struct GoldenReplayOptions {
  std::string goldenPath;
  /// Layers to replay; empty = every layer of the fixture.
  std::vector<int64_t> layers;
  /// "" (none), "attention" (the module before decomposition) or "primitives" (after): printed before the verdicts.
  std::string emit;
  /// Print the not-compared captures one per line instead of one summary line per regime.
  bool verbose = false;
};

/// Runs the replay; returns the process exit status (0 iff every compared capture passed, 1 if one failed,
/// 2 on an error that stopped the replay: bad golden path, malformed JSON, missing capture or weight, ...).
int runGoldenReplay(const GoldenReplayOptions &options);

} // namespace dsa::tools

#endif
