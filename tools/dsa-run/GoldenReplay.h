//===- GoldenReplay.h - replay a DeepSeek golden through the dsa dialect -----===//
//
// `dsa-run --golden FILE`: build one `@attention_L<l>` function per layer, each a `dsa.attention` configured from the
// golden's fixture (its role in the shared runtime included), lower it with `dsa-decompose-attention`, and run the
// golden's regimes in order on the reference interpreter with one persistent state per sequence (rings, compressor
// partial groups, caches, the four shared slots).
//
// - Without --layers (the main job): the tiny-model harness (golden/lib/TinyModel) runs the model around attention
//   and calls the dialect for every layer's attention; every capture of the golden is compared (section 12 tolerance),
//   except the stale decode `shared.L<l>.candidates` of layers before the candidate source (tiny-model-harness.md).
// - With --layers L,...: only those window-only layers run, fed the golden's stored `L<l>.attn_in` (must be stored
//   in full); their attention captures are compared and the rest is listed as not compared.
// Prints one line per capture and `golden: N passed, M failed`.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_TOOLS_DSA_RUN_GOLDENREPLAY_H
#define DSA_TOOLS_DSA_RUN_GOLDENREPLAY_H

#include "dsa/Core/Tensor.h"
#include "dsa/Golden/Compare.h"
#include "dsa/Support/Result.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace dsa::tools {

struct GoldenReplayOptions {
  std::string goldenPath;
  /// Layers to replay from their stored attn_in; empty = the whole model through the harness.
  std::vector<int64_t> layers;
  /// "" (none), "attention" (the module before decomposition) or "primitives" (after): printed before the verdicts.
  std::string emit;
  /// Print the not-compared captures one per line instead of one summary line per regime.
  bool verbose = false;
  /// Whole-model mode: feed each layer the golden's attn_in and hand the golden's attn_out back to the model wherever
  /// the golden stores them in full (resynchronisation points). Off by default.
  bool resync = false;
  /// --force (attention-semantics.md section 12): wherever the golden stores a capture in full and compares it,
  /// the replay continues with the golden's value after comparing its own, so that one flip or near-tie swap does
  /// not propagate: every harness capture (TinyModel's override), each layer's ring, caches and shared slots
  /// (after its step), and on the interpreter also the attention internals sa_q, sa_kv, sa_topk_idxs, sa_o inside
  /// the layer. Off by default (strict). Not with index_k_source own_cache (the golden follows the reference).
  bool force = false;
  /// The layers' attention weights kept in memory (f32 storage, MB); the layers past it regenerate their weights
  /// (ck-checked) for each step and drop them after it. A production-geometry layer is ~0.5 GB.
  int64_t residentWeightsMb = 4096;
  /// "interpret" (the reference interpreter, default) or "cpu" (the module compiled by --dsa-cpu-pipeline and JIT-run
  /// through compiler/lib/Backend/CPU, probes returned as results).
  std::string backend = "interpret";
  /// "published_slot" (the reference, default) or "own_cache" (section 8's named correction).
  std::string indexKSource = "published_slot";
  /// Non-empty: write the layers' AOT CPU step libraries and golden_layers.json into this directory
  /// (EmitLibraries.h) instead of replaying; the MLIR-free tools/dsa-golden replays them.
  std::string emitLibraries;
  /// The CPU the CPU backend compiles for (--backend=cpu, CPU step libraries): dsa::cpu::CPUCompileOptions::targetCpu
  /// ("host", an LLVM CPU name; empty: $DSA_CPU, else the host).
  std::string cpu;
};

/// What a replay found: every verdict in the order dsa-run prints them (NotCompared ones are the SKIP lines), their
/// summary, and the exit status dsa-run returns for it.
struct GoldenReplayReport {
  std::vector<golden::Verdict> verdicts;
  golden::Summary summary;
  /// 0 iff every compared capture passed, 1 if one failed, 2 on an error that stopped the replay (bad golden path,
  /// malformed JSON, invalid configuration or option, missing capture or weight, ...): then `error` says why (an
  /// option's name as dsa-run spells it, e.g. "--layers: ...") and `verdicts` is empty.
  int exitStatus = 0;
  std::string error;
};

/// Runs the replay. `out` receives, in order, exactly what `dsa-run --golden` prints on stdout: the IR of --emit,
/// one line per verdict (golden::formatVerdict), the not-compared lines of --layers, the summary line
/// (golden::formatSummary); nothing on an error (exit status 2). Progress lines of large goldens and MLIR
/// diagnostics go to stderr. With `emitLibraries` the libraries are written and the report has no verdicts.
GoldenReplayReport replayGolden(const GoldenReplayOptions &options, llvm::raw_ostream &out);

/// dsa-run's golden mode: replayGolden onto stdout, then on an error `dsa-run: error: <message>` on stderr; returns
/// the report's exit status.
int runGoldenReplay(const GoldenReplayOptions &options);

/// One layer of a golden as the replay runs it: `@attention_L<l>` (one dsa.attention configured from the fixture,
/// before decomposition) and its operands. The function's arguments are, in order: x [s, dim] bf16, start_pos i64,
/// the ring [window_size, head_dim] bf16, `weights` (the golden's weights, regenerated and ck-checked, bf16 or f32
/// as stored), `state` (a kv source's compressor state and caches, at their initial values), and for a layer with
/// compress_ratio > 0 the four shared slots (compress_kv, index_k, topk_idxs, candidates). Its results: out
/// [s, dim] bf16, the new ring, the new state, the slots after the layer.
struct GoldenLayer {
  int64_t layer = 0;
  std::string function; ///< "attention_L<l>"
  int64_t dim = 0;      ///< fixture.dim: x's row width
  std::vector<std::string> weightNames; ///< golden weights_meta names, in argument order
  std::vector<Tensor> weights;
  Tensor ring;
  std::vector<Tensor> state;
  bool hasSharedSlots = false;
};

/// Adds layer `layer`'s function to `module` (loading the dialects it needs into its context) and returns its
/// operands. Errors: those of the golden's loading and validation, a layer that does not exist ("layer: ..."),
/// a module that already holds the function, an unknown `indexKSource` ("published_slot" or "own_cache").
/// `batched`: the function is the layer's batched decode step (DSAOps.td "Batched decode": x [B, 1, dim],
/// start_pos tensor<B x i64>, ring / state / slots with a leading B; runtime::Batch runs it); `ring` and `state`
/// are still one sequence's initial values (what Batch::join takes).
Result<GoldenLayer> buildGoldenLayer(mlir::ModuleOp module, const std::string &goldenPath, int64_t layer,
                                     const std::string &indexKSource = "published_slot", bool batched = false);

} // namespace dsa::tools

#endif
