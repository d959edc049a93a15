//===- Batch.h - many sequences' decode steps through one batched step function (MLIR-free) --------------===//
//
// Batched decode (issue 13 scope 1; attention-semantics.md section 13: each row equals its own batch-1 run). A
// batched step function is a dsa.attention whose start_pos is a `tensor<B x i64>` (DSAOps.td "Batched decode";
// window-only layers): x `[B, 1, dim]`, one token per sequence at its own position, ring `[B, window_size,
// head_dim]`, out `[B, 1, dim]`. A Batch holds the members' rings and positions and runs ONE call per step for all
// of them (the linears as one product over the B rows). Sequences join and leave between steps:
//
//   runtime::Batch batch = runtime::Batch::start(signature, runner, weights).take();  // no members
//   // a new sequence's prefill runs through the batch-1 function (a runtime::Sequence); then
//   runtime::Batch::SequenceId a = batch.join(ringAfterPrefill, prefillTokens).take();
//   runtime::HostValue out = batch.step(x).take();   // x [B, 1, dim]: row b is members()[b]'s next token
//   runtime::Batch::Member left = batch.leave(a).take(); // its ring and next position, e.g. for a batch-1 Sequence
//
// The ring of every member stays in ONE [B, W, hd] buffer (the compiled code's result of the last step) while the
// membership does not change; join and leave rebuild it (one copy of the rings) before the next step.
//
// Errors (Result errors naming the field; a failed call leaves the members, their rings and positions unchanged):
//   start: "step roles" missing; "start_pos: ... is not a tensor<B x i64>" (not a batched step function: use
//          Sequence); x not [B, 1, ...]; not exactly one state binding (the ring) of shape [?, W, hd]; shared slots
//          or writable (in-place cache) arguments (compressed layers have no batched form yet); a weight missing,
//          given twice or given for x / start_pos / the ring; an argument that does not exist;
//   join:  "ring: ..." not the ring's element type or shape [W, hd]; "position: ..." negative;
//   leave: "sequence <id>: not a member";
//   step:  "x: ..." wrong element type, rank or shape (B must be the member count, which must be >= 1);
//          "start_pos: ..." a member's position + 1 overflows int64; the function's own error (a failed run-time
//          check) otherwise.
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

  /// What a sequence takes into and out of a batch: its ring ([window_size, head_dim], the batch-1 layer's state)
  /// and the position of its next token.
  struct Member {
    HostValue ring;
    int64_t position = 0;
  };

  /// `signature`: a batched step function's, with step roles (dsa::cpu::addStepRoles; a CPU step library's
  /// signature has them). `fixed`: every argument that is not x, start_pos or the ring (the weights), by index.
  static Result<Batch> start(FunctionSignature signature, ValueRunner runner, std::map<size_t, HostValue> fixed);

  /// Adds a sequence whose next token is at `position` with `ring` (copied). Returns its id (never reused).
  Result<SequenceId> join(const HostValue &ring, int64_t position);
  /// Removes a member; returns its ring (after its last step) and next position.
  Result<Member> leave(SequenceId id);

  /// One decode step of every member, in members() order: `x` [B, 1, ...] with B = members().size() >= 1. Returns
  /// `out` [B, 1, ...] (row b for members()[b]); every member's position advances by one.
  Result<HostValue> step(const HostValue &x);

  /// The members in the order step() takes their rows: join order, a member that left removed.
  const std::vector<SequenceId> &members() const { return ids_; }
  /// A member's next position; -1 if `id` is not a member.
  int64_t position(SequenceId id) const;
  /// A member's ring as it stands (a copy); an error if `id` is not a member.
  Result<HostValue> ring(SequenceId id) const;

private:
  Batch() = default;
  /// The rings of the members as one [B, W, hd] buffer (rebuilt after a join or leave).
  Status gatherRings();
  /// The batched buffer back into one ring per member (before the membership changes).
  void splitRings();
  int64_t indexOf(SequenceId id) const;

  FunctionSignature signature_;
  ValueRunner runner_;
  std::vector<HostValue> args_;
  size_t x_ = 0, startPos_ = 0, ringArg_ = 0, ringResult_ = 0, output_ = 0;
  dsa::ElementType ringType_ = dsa::ElementType::BF16;
  std::vector<int64_t> ringShape_; ///< [W, hd]
  std::vector<SequenceId> ids_;
  std::vector<int64_t> positions_;
  /// Each member's ring when `batched_` is stale (after join/leave); else empty.
  std::vector<std::shared_ptr<const HostBuffer>> rings_;
  /// The members' rings, [B, W, hd], row b for ids_[b]; null when stale.
  std::shared_ptr<const HostBuffer> batched_;
  SequenceId nextId_ = 0;
};

} // namespace dsa::runtime

#endif
