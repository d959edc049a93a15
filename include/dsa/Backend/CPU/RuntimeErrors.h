//===- RuntimeErrors.h - run-time checks of code compiled by dsa-to-cpu (MLIR-free) ---===//
//
// Code produced by `dsa-to-cpu` and the GPU host code of `dsa-to-gpu` checks what only the run-time values can tell
// (start_pos, the dynamic token count, index ranges; the checks of the interpreter's kernels,
// include/dsa/Interpreter/Kernels.h). A failed check calls the external C function
//
//     void dsa_cpu_fail(int32_t code);   // kFailSymbol
//
// with one of the codes below. CPU code then carries on without ever reading or writing out of bounds (an index is
// clamped, a step that cannot be computed yields zeros); its results are meaningless. The host that runs the code
// (lib/Backend/CPU's JIT, or the MLIR-free runtime for an AOT object) defines `dsa_cpu_fail`, records the first code
// of a call and turns it into an error naming the op and the check (runtimeErrorMessage). GPU host code does not go
// on (its kernels index by the checked sizes): a GPU step library's dsa_cpu_fail ends the call through the CUDA
// runtime's hook (runtime/cuda MgpuRuntime: the same message, the call's device memory freed), or aborts when no
// hook is set. Codes are stable: the compiled code and the host must agree on them.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_BACKEND_CPU_RUNTIMEERRORS_H
#define DSA_BACKEND_CPU_RUNTIMEERRORS_H

#include <cstdint>

namespace dsa::cpu {

/// The symbol the compiled code calls on a failed run-time check: `extern "C" void dsa_cpu_fail(int32_t code)`.
inline constexpr const char *kFailSymbol = "dsa_cpu_fail";

/// The run-time checks, one code each (0 = no error).
enum class RuntimeError : int32_t {
  None = 0,
  PositionsNegativeStart = 1,
  RopePositionsLength = 2,
  RopeNegativePosition = 3,
  RingUpdateNegativeStart = 4,
  WindowKvNegativeStart = 5,
  WindowKvMultiTokenDecode = 6,
  WindowIndicesNegativeStart = 7,
  WindowIndicesEmptyStep = 8,
  WindowIndicesMultiTokenDecode = 9,
  SparseAttnIndicesRows = 10,
  SparseAttnIndexOutOfRange = 11,
  SparseAttnNanSink = 12,
  // Compressed-attention primitives (sections 5-9; the checks of include/dsa/Interpreter/CompressKernels.h).
  CompressPoolNegativeStart = 13,
  CompressPoolEmptyStep = 14,
  CompressPoolMultiTokenDecode = 15,
  CompressPoolScoreShape = 16,
  CacheWriteNegativeStart = 17,
  CacheWriteOverflow = 18,
  IndexerScoresNegativeStart = 19,
  IndexerScoresWeightsRows = 20,
  IndexerScoresKeysRows = 21,
  CompressVisibilityNegativeStart = 22,
  CompressVisibilityEmptyStep = 23,
  CompressVisibilityMultiTokenDecode = 24,
  CompressVisibilityWidth = 25,
  SelectCandidateBlocksNegativeStart = 26,
  SelectCandidateBlocksEmptyStep = 27,
  SelectCandidateBlocksMultiTokenDecode = 28,
  SelectCandidateBlocksWidth = 29,
  ApplyCandidatesMaskShape = 30,
  IndexerTopkNegativeStart = 31,
  IndexerTopkEmptyStep = 32,
  IndexerTopkMultiTokenDecode = 33,
  IndexerTopkWidth = 34,
  TopkRuntimeFailed = 35,
  // Checks of the GPU host code (dsa-to-gpu) on the dynamic shapes its kernels index by (the CPU lowering needs
  // static shapes there, or clamps).
  LinearWeightColumns = 36,
  RmsNormWeightSize = 37,
  RmsNormEmptyRow = 38,
  RopeDimExceedsRow = 39,
  ActQuantBlockMultiple = 40,
  RingUpdateRowWidth = 41,
  RingUpdateNoSlots = 42,
  WindowKvRowWidth = 43,
  WindowIndicesResultRows = 44,
  WindowIndicesResultWidth = 45,
  SparseAttnKvRowWidth = 46,
  SparseAttnSinkSize = 47,
  GroupedOutputHeads = 48,
  GroupedOutputWeightColumns = 49,
  GroupedOutputWeightRows = 50,
  CompressPoolScoreWidth = 51,
  CompressPoolKvStateRows = 52,
  CompressPoolKvStateWidth = 53,
  CompressPoolScoreStateRows = 54,
  CompressPoolScoreStateWidth = 55,
  CompressPoolResultRows = 56,
  Fp4QuantE8M0BlockMultiple = 57,
  Fp4QuantE4M3BlockMultiple = 58,
  CacheWriteRowWidth = 59,
  IndexerScoresWeightsColumns = 60,
  IndexerScoresKeysWidth = 61,
  IndexerScoresResultWidth = 62,
  IndexerTopkResultWidth = 63,
  SliceRowsExceedSource = 64,
  ConcatTrailingDims = 65,
  ConcatRows = 66,
};

/// The message of a code, naming the op and the violated condition (the interpreter's wording where it has one);
/// "unknown run-time error code" for a code not listed above.
inline const char *runtimeErrorMessage(int32_t code) {
  switch (static_cast<RuntimeError>(code)) {
  case RuntimeError::None:
    return "no error";
  case RuntimeError::PositionsNegativeStart:
    return "dsa.positions: start is negative, expected >= 0";
  case RuntimeError::RopePositionsLength:
    return "dsa.apply_rope: positions does not have one element per row of x (dimension 0)";
  case RuntimeError::RopeNegativePosition:
    return "dsa.apply_rope: a position is negative, expected >= 0";
  case RuntimeError::RingUpdateNegativeStart:
    return "dsa.ring_update: start_pos is negative, expected >= 0";
  case RuntimeError::WindowKvNegativeStart:
    return "dsa.window_kv: start_pos is negative, expected >= 0";
  case RuntimeError::WindowKvMultiTokenDecode:
    return "dsa.window_kv: a step of more than one token at start_pos > 0: multi-token steps at start_pos > 0 are "
           "split into decode steps by the runtime";
  case RuntimeError::WindowIndicesNegativeStart:
    return "dsa.window_indices: start_pos is negative, expected >= 0";
  case RuntimeError::WindowIndicesEmptyStep:
    return "dsa.window_indices: the token count is 0, expected >= 1";
  case RuntimeError::WindowIndicesMultiTokenDecode:
    return "dsa.window_indices: a step of more than one token at start_pos > 0: multi-token steps at start_pos > 0 "
           "are split into decode steps by the runtime";
  case RuntimeError::SparseAttnIndicesRows:
    return "dsa.sparse_attn: indices does not have one row per token of q (dimension 0)";
  case RuntimeError::SparseAttnIndexOutOfRange:
    return "dsa.sparse_attn: an index is outside [-1, n) (n = the rows of kv)";
  case RuntimeError::SparseAttnNanSink:
    return "dsa.sparse_attn: the sink holds a NaN";
  case RuntimeError::CompressPoolNegativeStart:
    return "dsa.compress_pool: start_pos is negative, expected >= 0";
  case RuntimeError::CompressPoolEmptyStep:
    return "dsa.compress_pool: a step needs at least one token, got s = 0";
  case RuntimeError::CompressPoolMultiTokenDecode:
    return "dsa.compress_pool: a step of more than one token at start_pos > 0: feed the tokens one decode step at "
           "a time";
  case RuntimeError::CompressPoolScoreShape:
    return "dsa.compress_pool: score does not have kv's shape (dimension 0)";
  case RuntimeError::CacheWriteNegativeStart:
    return "dsa.cache_write: start_pos is negative, expected >= 0";
  case RuntimeError::CacheWriteOverflow:
    return "dsa.cache_write: rows start_pos // ratio .. start_pos // ratio + g - 1 overflow the cache capacity "
           "(dimension 0 of cache)";
  case RuntimeError::IndexerScoresNegativeStart:
    return "dsa.indexer_scores: start_pos is negative, expected >= 0";
  case RuntimeError::IndexerScoresWeightsRows:
    return "dsa.indexer_scores: weights does not have one row per token of iq (dimension 0)";
  case RuntimeError::IndexerScoresKeysRows:
    return "dsa.indexer_scores: keys has fewer than width = (start_pos + s) // ratio rows";
  case RuntimeError::CompressVisibilityNegativeStart:
    return "dsa.compress_visibility: start_pos is negative, expected >= 0";
  case RuntimeError::CompressVisibilityEmptyStep:
    return "dsa.compress_visibility: a step needs at least one token, got s = 0";
  case RuntimeError::CompressVisibilityMultiTokenDecode:
    return "dsa.compress_visibility: a step of more than one token at start_pos > 0: feed the tokens one decode "
           "step at a time";
  case RuntimeError::CompressVisibilityWidth:
    return "dsa.compress_visibility: scores does not have width (start_pos + s) // ratio columns (dimension 1)";
  case RuntimeError::SelectCandidateBlocksNegativeStart:
    return "dsa.select_candidate_blocks: start_pos is negative, expected >= 0";
  case RuntimeError::SelectCandidateBlocksEmptyStep:
    return "dsa.select_candidate_blocks: a step needs at least one token, got s = 0";
  case RuntimeError::SelectCandidateBlocksMultiTokenDecode:
    return "dsa.select_candidate_blocks: a step of more than one token at start_pos > 0: feed the tokens one "
           "decode step at a time";
  case RuntimeError::SelectCandidateBlocksWidth:
    return "dsa.select_candidate_blocks: scores does not have width (start_pos + s) // ratio columns (dimension 1)";
  case RuntimeError::ApplyCandidatesMaskShape:
    return "dsa.apply_candidates: mask does not have the shape of scores";
  case RuntimeError::IndexerTopkNegativeStart:
    return "dsa.indexer_topk: start_pos is negative, expected >= 0";
  case RuntimeError::IndexerTopkEmptyStep:
    return "dsa.indexer_topk: a step needs at least one token, got s = 0";
  case RuntimeError::IndexerTopkMultiTokenDecode:
    return "dsa.indexer_topk: a step of more than one token at start_pos > 0: feed the tokens one decode step at a "
           "time";
  case RuntimeError::IndexerTopkWidth:
    return "dsa.indexer_topk: scores does not have width (start_pos + s) // ratio columns (dimension 1)";
  case RuntimeError::TopkRuntimeFailed:
    return "dsa.indexer_topk / dsa.select_candidate_blocks: the top-k runtime function dsa_cpu_topk_set rejected "
           "its arguments (values null, or k outside [0, n])";
  case RuntimeError::LinearWeightColumns:
    return "dsa.linear: operand 'weight' has a column count that differs from x's last dimension";
  case RuntimeError::RmsNormWeightSize:
    return "dsa.rms_norm: operand 'weight' has a size that differs from x's last dimension";
  case RuntimeError::RmsNormEmptyRow:
    return "dsa.rms_norm: operand 'x' has an empty last dimension";
  case RuntimeError::RopeDimExceedsRow:
    return "dsa.apply_rope: rope_dim exceeds operand 'x''s last dimension";
  case RuntimeError::ActQuantBlockMultiple:
    return "dsa.act_quant_fp8: operand 'x''s last dimension is not a multiple of block_size";
  case RuntimeError::RingUpdateRowWidth:
    return "dsa.ring_update: operand 'kv' has a row width that differs from the ring's";
  case RuntimeError::RingUpdateNoSlots:
    return "dsa.ring_update: operand 'ring' has no slots";
  case RuntimeError::WindowKvRowWidth:
    return "dsa.window_kv: operand 'kv' has a row width that differs from the ring's";
  case RuntimeError::WindowIndicesResultRows:
    return "dsa.window_indices: the result's static row count differs from 'count'";
  case RuntimeError::WindowIndicesResultWidth:
    return "dsa.window_indices: the result's static width differs from this step's window width";
  case RuntimeError::SparseAttnKvRowWidth:
    return "dsa.sparse_attn: operand 'kv' has a row width that differs from q's head_dim";
  case RuntimeError::SparseAttnSinkSize:
    return "dsa.sparse_attn: operand 'sink' has a size that differs from q's head count";
  case RuntimeError::GroupedOutputHeads:
    return "dsa.grouped_output: operand 'o''s head count is not divisible by groups";
  case RuntimeError::GroupedOutputWeightColumns:
    return "dsa.grouped_output: operand 'wo_a' has a column count that differs from n_heads*head_dim/groups";
  case RuntimeError::GroupedOutputWeightRows:
    return "dsa.grouped_output: operand 'wo_a''s row count is not a multiple of groups";
  case RuntimeError::CompressPoolScoreWidth:
    return "dsa.compress_pool: operand 'score' has a row width that differs from kv's";
  case RuntimeError::CompressPoolKvStateRows:
    return "dsa.compress_pool: operand 'kv_state' does not have ratio rows";
  case RuntimeError::CompressPoolKvStateWidth:
    return "dsa.compress_pool: operand 'kv_state' has a row width that differs from kv's";
  case RuntimeError::CompressPoolScoreStateRows:
    return "dsa.compress_pool: operand 'score_state' does not have ratio rows";
  case RuntimeError::CompressPoolScoreStateWidth:
    return "dsa.compress_pool: operand 'score_state' has a row width that differs from kv's";
  case RuntimeError::CompressPoolResultRows:
    return "dsa.compress_pool: the result 'pooled' has a static row count that differs from this step's completed "
           "groups";
  case RuntimeError::Fp4QuantE8M0BlockMultiple:
    return "dsa.fp4_quant_e8m0: operand 'x''s last dimension is not a multiple of block_size";
  case RuntimeError::Fp4QuantE4M3BlockMultiple:
    return "dsa.fp4_quant_e4m3: operand 'x''s last dimension is not a multiple of block_size";
  case RuntimeError::CacheWriteRowWidth:
    return "dsa.cache_write: operand 'rows' has a row width that differs from the cache's";
  case RuntimeError::IndexerScoresWeightsColumns:
    return "dsa.indexer_scores: operand 'weights' has a column count that differs from iq's heads";
  case RuntimeError::IndexerScoresKeysWidth:
    return "dsa.indexer_scores: operand 'keys' has a row width that differs from iq's head dim";
  case RuntimeError::IndexerScoresResultWidth:
    return "dsa.indexer_scores: the result's static width differs from (start_pos + s) // ratio";
  case RuntimeError::IndexerTopkResultWidth:
    return "dsa.indexer_topk: the result's static width differs from min(index_topk, width)";
  case RuntimeError::SliceRowsExceedSource:
    return "tensor.extract_slice: the slice has more rows than its source";
  case RuntimeError::ConcatTrailingDims:
    return "tensor.concat: the inputs' trailing dimensions differ";
  case RuntimeError::ConcatRows:
    return "tensor.concat: the inputs' row counts differ";
  }
  return "unknown run-time error code";
}

} // namespace dsa::cpu

#endif
