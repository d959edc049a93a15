"""The MLIR-free runtime: CPU step libraries and sequences with resident state (dsa/Runtime/CPU/StepLibrary.h,
dsa/Runtime/Host/Sequence.h).

    lib = dsa.runtime.StepLibrary("DIR/attention_L0.json")     # what dsa.compiler.compile_cpu / dsa-run write
    seq = lib.sequence(weights)                                  # the arguments other than x, start_pos, state, slots
    y = seq.step(x, 0)                                           # prefill: x [s, dim] bf16 -> y [s, dim] bf16
    y = seq.step(x[:1], seq.position)                            # decode

A sequence owns its state (ring, compressor state, caches) and its position; a multi-token step at start_pos > 0 (a
chunk) is defined as the same tokens fed one decode step at a time: signature().chunked says whether the compiled code
runs it as one call with those bits (a window-only layer, or a compressed layer that reads only the slots it
publishes itself); otherwise a layer without shared slots splits it into decode steps and a layer with shared slots
refuses it ("shared: ..."; feed such a model one token at a time through every layer, and check chunked on every
layer before sending a chunk through a model: a refusal half-way leaves the earlier layers stepped). A layer with
shared slots (compress_ratio > 0) takes slots= (lib.initial_slots(), passed from layer to layer). Errors raise dsa.Error naming the argument ("x: ...", "start_pos: ...", "weights[3] ...",
"shared: ...", "max_seq_len: ..."); after an error the state, the position and the slots are as before the call.

A chunk through a whole stack of layers sharing slots (dsa/Runtime/Host/StackChunk.h): plan_stack_chunk cuts it into
pieces that run LAYER-MAJOR (each layer once over the piece's tokens) with the bits of token-by-token decode through
every layer, and routes the index_k slot per layer (the reference's quirk reads, at a token closing no group, keys
another layer published at the previous token); step_stack drives it:

    y = dsa.runtime.step_stack(seqs, x, start_pos, slots, prefill_tokens, between=lambda l, y: y)

seqs: one Sequence per layer in stack order (window-only layers too); prefill_tokens: the length of the sequence's
prefill (the slots' history); between(l, y): the model's computation from layer l's output rows to layer l + 1's
input (default: the output itself). Returns the last layer's output rows.

Batched decode (dsa/Runtime/Host/Batch.h): a library of a batched step function (start_pos tensor<B x i64>, x
[B, 1, dim], ring [B, W, hd] and a compressed layer's state and slots with a leading B) runs many sequences' decode
steps as one call:

    batch = blib.batch(weights)                                  # no members
    a = batch.join(seq.state()[2], seq.position)                 # a ring [W, hd] and next position (a prefill's)
    out = batch.step(x)                                          # x [B, 1, dim]: row b for batch.members[b]
    ring, position = batch.leave(a)                              # e.g. to go on as a batch-1 sequence

A stack with compressed layers keeps one Batch per layer with the same members in the same order, joins each with
the sequence's whole state (list(seq.state().values())), and passes batched slots from layer to layer:

    slots = batches[0].stack_slots([prefill_slots_a, prefill_slots_b])   # rebuild when the members change
    for batch in batches: x = batch.step(x, slots)

Each out row equals that sequence's own batch-1 step, bit for bit. Errors raise dsa.Error naming the field
("ring: ...", "state[3]: ...", "position: ...", "x: ...", "shared: ...", "sequence 7: not a member",
"start_pos: ...", "max_seq_len: ..."); the batch is unchanged.
"""
import numpy as np

from . import _dsa
from ._arrays import from_raw, to_raw

Error = _dsa.Error
Signature = _dsa.Signature


def _weights(weights):
    return [to_raw(w, f"weights[{i}]") for i, w in enumerate(weights)]


class Slots:
    """The shared slots (compress_kv, index_k, topk_idxs, candidates) threaded between a model's layers."""

    def __init__(self, raw):
        self._raw = raw

    def tensors(self):
        return [from_raw(t) for t in self._raw.tensors()]


def _slots_raw(slots):
    if not isinstance(slots, Slots):
        raise Error(f"slots: must be dsa.runtime.Slots (StepLibrary.initial_slots()), got {type(slots).__name__}")
    return slots._raw


class Sequence:
    def __init__(self, raw):
        self._seq = raw

    @property
    def signature(self):
        return self._seq.signature

    @property
    def position(self):
        """The next start_pos step() accepts (tokens consumed so far)."""
        return self._seq.position

    def step(self, x, start_pos, slots=None, probes=False):
        """Runs tokens x ([s, dim]) at start_pos .. start_pos + s - 1 and returns the output rows ([s, dim]);
        with probes=True also the kept probes [(name, array)]."""
        if isinstance(start_pos, bool) or not isinstance(start_pos, (int, np.integer)):
            raise Error(f"start_pos: must be an integer, got {type(start_pos).__name__}")
        out, probed = self._seq.step(to_raw(x, "x"), int(start_pos),
                                     _slots_raw(slots) if slots is not None else None, probes)
        if probes:
            return from_raw(out), [(name, from_raw(r)) for name, r in probed]
        return from_raw(out)

    def step_piece(self, x, start_pos, slots, piece, layer):
        """Layer `layer` (its index in the plan's stack) of one piece of plan_stack_chunk: the piece's rows x at
        start_pos as ONE call (a layer with shared slots: index_k routed as the piece says), returns the output rows.
        Call piece.begin(slots) before the piece's first layer and piece.finish(slots) after its last."""
        return from_raw(self._seq.step_piece(to_raw(x, "x"), _integer(start_pos, "start_pos"), _slots_raw(slots),
                                             piece._raw, _integer(layer, "layer")))

    def state(self):
        """The state after the last successful step: {argument index: array} (ring, compressor state, caches)."""
        return {arg: from_raw(r) for arg, r in self._seq.state()}

    def reset(self):
        """Back to the initial state at position 0."""
        self._seq.reset()


def _integer(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise Error(f"{what}: must be an integer, got {type(value).__name__}")
    return int(value)


class StackPiece:
    """One piece of plan_stack_chunk: tokens [first, first + count) of the chunk, run layer-major."""

    def __init__(self, raw):
        self._raw = raw

    @property
    def first(self):
        return self._raw.first

    @property
    def count(self):
        return self._raw.count

    @property
    def index_k_from(self):
        """Per layer: -1 (index_k as it entered the piece) or the layer whose returned index_k this layer gets."""
        return list(self._raw.index_k_from)

    def begin(self, slots):
        self._raw.begin(_slots_raw(slots))

    def finish(self, slots):
        self._raw.finish(_slots_raw(slots))


def plan_stack_chunk(layers, prefill_tokens, start_pos, s):
    """The pieces of s tokens at start_pos through `layers` (Sequences or Signatures, stack order) that run
    layer-major with token-by-token decode's bits, for a sequence whose prefill was prefill_tokens tokens. Raises
    dsa.Error: s < 1, prefill_tokens outside 1 .. start_pos, a layer without a recorded attention config, a layer
    reading topk_idxs or candidates no earlier layer publishes."""
    sigs = [l.signature if isinstance(l, Sequence) else l for l in layers]
    return [StackPiece(p) for p in _dsa.plan_stack_chunk(sigs, _integer(prefill_tokens, "prefill_tokens"),
                                                         _integer(start_pos, "start_pos"), _integer(s, "s"))]


def step_stack(sequences, x, start_pos, slots, prefill_tokens, between=None):
    """s = len(x) tokens at start_pos through every layer (module docstring): a prefill (start_pos 0) or a decode step
    layer by layer, a chunk at start_pos > 0 by plan_stack_chunk's pieces. Returns the last layer's output rows."""
    start_pos = _integer(start_pos, "start_pos")
    between = between or (lambda layer, y: y)
    if start_pos == 0 or len(x) == 1:
        h = x
        for l, seq in enumerate(sequences):
            h = seq.step(h, start_pos, slots=slots if seq.signature.has_shared_slots else None)
            if l + 1 < len(sequences):
                h = between(l, h)
        return h
    outs = []
    for piece in plan_stack_chunk(sequences, prefill_tokens, start_pos, len(x)):
        piece.begin(slots)
        h = x[piece.first:piece.first + piece.count]
        for l, seq in enumerate(sequences):
            h = seq.step_piece(h, start_pos + piece.first, slots, piece, l)
            if l + 1 < len(sequences):
                h = between(l, h)
        piece.finish(slots)
        outs.append(h)
    return np.concatenate(outs, axis=0)


class Batch:
    """Many sequences' decode steps as one call of a batched step function (StepLibrary.batch)."""

    def __init__(self, raw):
        self._batch = raw

    @property
    def members(self):
        """The member ids in the order step() takes their rows (join order; a member that left removed)."""
        return list(self._batch.members)

    @property
    def state_count(self):
        """The state values of one member: 1 (the ring) for a window-only layer; a compressed layer's ring,
        kv_state, score_state, compressed-KV cache and index-key cache (its batch-1 Sequence.state() values, in
        order)."""
        return self._batch.state_count

    def join(self, state, position):
        """Adds a sequence whose next token is at `position` with `state` (copied), e.g. a batch-1 Sequence's after
        its prefill: the ring [window_size, head_dim] for a window-only layer, else a list of state_count arrays
        (list(seq.state().values())). Returns its id (never reused)."""
        if isinstance(state, (list, tuple)):
            values = [to_raw(v, f"state[{i}]") for i, v in enumerate(state)]
        else:
            values = [to_raw(state, "ring")]
        return self._batch.join(values, _integer(position, "position"))

    def leave(self, id):
        """Removes member `id`; returns (state, position): its state after its last step (the ring for a
        window-only layer, else a list of state_count arrays, the ring first) and its next position."""
        state, position = self._batch.leave(_integer(id, "id"))
        if len(state) == 1:
            return from_raw(state[0]), position
        return [from_raw(v) for v in state], position

    def step(self, x, slots=None):
        """One decode step of every member: x [B, 1, dim] (B = len(members) >= 1); returns out [B, 1, dim], row b
        for members[b]. Every member's position advances by one. slots: a compressed layer's batched shared slots
        (stack_slots(); row b for members[b]), replaced by the slots after this layer, as Sequence.step does."""
        return from_raw(self._batch.step(to_raw(x, "x"), _slots_raw(slots) if slots is not None else None))

    def stack_slots(self, members):
        """The batched shared slots of members whose batch-1 slots are `members` (a list of Slots in members order,
        e.g. each sequence's after its prefill, or slots_of() rows): slot i [B, rows, width], each row padded
        (compress_kv / index_k zero rows, topk_idxs -1, candidates false); topk_idxs and candidates keep a
        prefill's last row. Rebuild them whenever the members change. Raises dsa.Error naming the member and slot."""
        return Slots(self._batch.stack_slots([_slots_raw(m) for m in members]))

    def slots_of(self, slots, b):
        """Row b of batched slots as one sequence's Slots (padding kept; readers take their prefix)."""
        return Slots(self._batch.slots_of(_slots_raw(slots), _integer(b, "b")))

    def state(self, id):
        """Member `id`'s state as it stands (copies): a list of state_count arrays, the ring first."""
        return [from_raw(v) for v in self._batch.state(_integer(id, "id"))]

    def position(self, id):
        """Member `id`'s next position."""
        return self._batch.position(_integer(id, "id"))

    def ring(self, id):
        """Member `id`'s ring as it stands (a copy)."""
        return from_raw(self._batch.ring(_integer(id, "id")))


class StepLibrary:
    """A loaded CPU step library (its JSON description; the host must have its CPU features)."""

    def __init__(self, path):
        self._lib = _dsa.StepLibrary(str(path))

    @property
    def path(self):
        return self._lib.path

    @property
    def functions(self):
        return self._lib.functions

    @property
    def target_cpu(self):
        return self._lib.target_cpu

    def signature(self, function=None):
        """The function's signature (the only one when function is None): args, results, probes, state_args,
        weight_args, x_arg, start_pos_arg, output, max_seq_len, has_shared_slots, chunked (bool: a multi-token step at
        start_pos > 0 is one call; see the module's docstring)."""
        return self._lib.signature(function)

    def initial_slots(self, function=None):
        return Slots(self._lib.initial_slots(function))

    def sequence(self, weights, function=None):
        """A new sequence at position 0 with `weights`: the arguments listed by signature().weight_args, in order."""
        return Sequence(self._lib.sequence(_weights(weights), function))

    def batch(self, weights, function=None):
        """A new, empty Batch of a batched step function with `weights` (signature().weight_args, in order)."""
        return Batch(self._lib.batch(_weights(weights), function))


def load(path):
    return StepLibrary(path)
