//===- Batch.h - many sequences' decode steps through one batched step function (MLIR-free) --------------===//
//
// Batched decode (issue 13 scope 1; attention-semantics.md section 13: each row equals its own batch-1 run). A
// batched step function is a dsa.attention whose start_pos is a `tensor<B x i64>` (DSAOps.td "Batched decode"): x
// `[B, 1, dim]`, one token per sequence at its own position, out `[B, 1, dim]`, and the layer's state with a leading
// B (the ring `[B, window_size, head_dim]`; a compressed layer's compressor state and caches). A Batch holds the
// members' state and positions and runs ONE call per step for all of them (the linears as one product over the B
// rows). Sequences join and leave between steps:
//
//   runtime::Batch batch = runtime::Batch::start(signature, runner, weights).take();  // no members
//   // a new sequence's prefill runs through the batch-1 function (a runtime::Sequence); then
//   runtime::Batch::SequenceId a = batch.join(stateAfterPrefill, prefillTokens).take();  // or join(ring, ...)
//   runtime::HostValue out = batch.step(x).take();   // x [B, 1, dim]: row b is members()[b]'s next token
//   runtime::Batch::Member left = batch.leave(a).take(); // its state and next position, e.g. for a batch-1 Sequence
//
// Each state binding of every member stays in ONE [B, ...] buffer (the compiled code's result of the last step;
// a compressed layer's caches updated in place: FunctionSignature::writableArgs) while the membership does not
// change; join and leave rebuild them (one copy of the state) before the next step.
//
// A model of compressed layers keeps one Batch per layer, all with the same members in the same order (join and
// leave the same sequences on every layer), and passes the shared slots from layer to layer: step(x, &slots) reads
// a batched SlotSet (each slot [B, ...], row b for members()[b]) and replaces it with what the layer published.
// stackSlots / slotsOf (below) convert between the members' batch-1 slot sets and the batched one; rebuild it with
// them whenever the membership changes.
//
// Errors (Result errors naming the field; a failed call leaves the members, their state and positions unchanged;
// with in-place caches "the state" is the visible state, as for a Sequence: a failed step may have written cache rows
// at positions no member has reached, which its next step writes again):
//   start: "step roles" missing; "start_pos: ... is not a tensor<B x i64>" (not a batched step function: use
//          Sequence); x not [B, 1, ...]; a state binding not [B, ...] with static trailing dimensions; a writable
//          argument that is not a state argument; a weight missing, given twice or given for x / start_pos / a
//          state or slot argument; an argument that does not exist;
//   join:  "state: ..." not one value per state binding; "state <i>: ..." / "ring: ..." not the binding's element
//          type or shape (its row); "position: ..." negative;
//   leave: "sequence <id>: not a member";
//   step:  "x: ..." wrong element type, rank or shape (B must be the member count, which must be >= 1);
//          "start_pos: ..." a member's position + 1 overflows int64; "max_seq_len: ..." a member at the capacity;
//          "shared: ..." slots missing, given to a layer without slots, miscounted, or not [B, ...] of the slot's
//          element type and trailing shape; the function's own error (a failed run-time check) otherwise.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_HOST_BATCH_H
#define DSA_RUNTIME_HOST_BATCH_H

#include "dsa/Runtime/Host/Sequence.h"

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace dsa::runtime {

class Batch {
public:
  using ValueRunner = Sequence::ValueRunner;
  using SequenceId = int64_t;

  /// What a sequence takes into and out of a batch: its state, one value per state binding of the function
  /// (FunctionSignature::state order: the ring [window_size, head_dim] first, then a compressed layer's kv_state,
  /// score_state, compressed-KV and index-key caches: the batch-1 layer's state), and the position of its next token.
  struct Member {
    std::vector<HostValue> state;
    int64_t position = 0;
    /// The ring (the first state value).
    const HostValue &ring() const { return state.front(); }
  };

  /// `signature`: a batched step function's, with step roles (dsa::cpu::addStepRoles; a CPU step library's
  /// signature has them). `fixed`: every argument that is not x, start_pos, state or a shared slot (the weights),
  /// by index.
  static Result<Batch> start(FunctionSignature signature, ValueRunner runner, std::map<size_t, HostValue> fixed);

  /// Adds a sequence whose next token is at `position` with `state` (one value per state binding, each copied).
  /// Returns its id (never reused).
  Result<SequenceId> join(const std::vector<HostValue> &state, int64_t position);
  /// join({ring}, position): a window-only layer, whose state is its ring.
  Result<SequenceId> join(const HostValue &ring, int64_t position);
  /// Removes a member; returns its state (after its last step) and next position.
  Result<Member> leave(SequenceId id);

  /// One decode step of every member, in members() order: `x` [B, 1, ...] with B = members().size() >= 1. Returns
  /// `out` [B, 1, ...] (row b for members()[b]); every member's position advances by one. `shared`: the batched
  /// slots (required iff the layer has shared slots), replaced by the slots after this layer.
  Result<HostValue> step(const HostValue &x, Sequence::SlotSet *shared = nullptr);

  /// The members in the order step() takes their rows: join order, a member that left removed.
  const std::vector<SequenceId> &members() const { return ids_; }
  /// A member's next position; -1 if `id` is not a member.
  int64_t position(SequenceId id) const;
  /// A member's ring as it stands (a copy); an error if `id` is not a member.
  Result<HostValue> ring(SequenceId id) const;
  /// A member's state as it stands (copies, one per state binding); an error if `id` is not a member.
  Result<std::vector<HostValue>> state(SequenceId id) const;
  const FunctionSignature &signature() const { return signature_; }

private:
  Batch() = default;
  /// The members' state as one [B, ...] buffer per binding (rebuilt after a join or leave).
  void gather();
  /// The batched buffers back into one value per member and binding (before the membership changes).
  void split();
  int64_t indexOf(SequenceId id) const;

  /// One state binding: its argument and result, element type, the shape of one member's row, whether the compiled
  /// code updates it in place.
  struct Binding {
    size_t arg = 0, result = 0;
    dsa::ElementType type = dsa::ElementType::BF16;
    std::vector<int64_t> rowShape;
    bool writable = false;
  };

  FunctionSignature signature_;
  ValueRunner runner_;
  std::vector<HostValue> args_;
  size_t x_ = 0, startPos_ = 0, output_ = 0;
  std::vector<Binding> bindings_;
  std::vector<SequenceId> ids_;
  std::vector<int64_t> positions_;
  /// Each member's state (per binding) when the batched buffers are stale (after join/leave); else empty.
  std::vector<std::vector<std::shared_ptr<HostBuffer>>> rows_;
  /// The members' state, one [B, ...] buffer per binding, row b for ids_[b]; empty when stale. Owned by the batch
  /// (a writable binding's buffer is handed to the call as HostValue::inPlace).
  std::vector<std::shared_ptr<HostBuffer>> batched_;
  SequenceId nextId_ = 0;
};

/// The batched shared slots of members whose batch-1 slot sets (Sequence::SlotSet, e.g. after their prefill, as a
/// batch-1 layer left them; in members() order) are `members`, for the batched step function `signature` (its
/// shared slot arguments give the element types and static widths): slot i is [B, rows, width], row b sequence
/// b's slot followed by padding (compress_kv / index_k: zero rows, never read; topk_idxs: -1 columns, which sparse
/// attention skips; candidates: false columns). topk_idxs and candidates hold one token row per sequence: a slot
/// with several rows (after a prefill) contributes its last row, the one a decode step continues from.
/// Errors: no members, a slot set of the wrong size, a slot of another element type, rank or static width.
Result<Sequence::SlotSet> stackSlots(const FunctionSignature &signature,
                                     const std::vector<Sequence::SlotSet> &members);
/// Row b of batched slots (stackSlots' or a batched step's) as a batch-1 slot set (copies, padding kept: readers
/// take their prefix). Errors: b outside the slots' rows.
Result<Sequence::SlotSet> slotsOf(const Sequence::SlotSet &batched, int64_t b);

} // namespace dsa::runtime

#endif
