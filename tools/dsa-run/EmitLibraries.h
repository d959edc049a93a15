//===- EmitLibraries.h - dsa-run --golden --emit-libraries: per-layer AOT step libraries -----===//
//
// Writes, for a golden's layer functions (`@attention_L<l>`, one dsa.attention each, before decomposition), one CPU
// step library per layer (dsa::cpu::emitCPUStepLibrary, probes kept as results): DIR/attention_L<l>.{o,so,json}, and
// the manifest DIR/golden_layers.json that tells the MLIR-free replay (tools/dsa-golden) which golden weight each
// weight argument is:
//   {"format": "dsa-golden-layers", "version": 1, "n_layers": 6,
//    "layers": [{"layer": 0, "description": "attention_L0.json", "function": "attention_L0",
//                "weights": ["layers.0.attn.attn_sink", ...]}, ...]}
// "weights" lists, in argument order, the arguments that are not x, start_pos, state or a shared slot (the
// description's step roles and state bindings), each as its name in the golden's weights_meta.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_TOOLS_DSA_RUN_EMITLIBRARIES_H
#define DSA_TOOLS_DSA_RUN_EMITLIBRARIES_H

#include "dsa/Support/Result.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dsa::tools {

struct LayerLibrary {
  int64_t layer = 0;
  std::vector<std::string> weights; ///< golden weight names of the weight arguments, in argument order
};

inline constexpr const char *kGoldenLayersManifest = "golden_layers.json";

/// Emits the step library of every layer in `layers` from `module` (which holds `@attention_L<l>` for each) into
/// `directory` and writes the manifest. Prints one line per library on stderr (unbuffered) as it is written.
/// Errors: the compiler's, a weight count that does not match the function's non-role arguments, an unwritable
/// directory. With `gpu`, the libraries are GPU step libraries (dsa::gpu::emitGPUStepLibrary, sm_90 cubin, probes
/// kept as results) for the replay on a GPU machine; the manifest is the same. `cpu`: the CPU step libraries' target
/// (dsa::cpu::CPUCompileOptions::targetCpu; empty: $DSA_CPU, else the host).
Status emitGoldenLayerLibraries(mlir::ModuleOp module, const std::vector<LayerLibrary> &layers, int64_t nLayers,
                                const std::string &directory, bool gpu = false, const std::string &cpu = "");

} // namespace dsa::tools

#endif
