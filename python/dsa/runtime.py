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

Batched decode (dsa/Runtime/Host/Batch.h): a library of a batched step function (start_pos tensor<B x i64>, x
[B, 1, dim], ring [B, W, hd]; window-only layers) runs many sequences' decode steps as one call:

    batch = blib.batch(weights)                                  # no members
    a = batch.join(seq.state()[2], seq.position)                 # a ring [W, hd] and next position (a prefill's)
    out = batch.step(x)                                          # x [B, 1, dim]: row b for batch.members[b]
    ring, position = batch.leave(a)                              # e.g. to go on as a batch-1 sequence

Each out row equals that sequence's own batch-1 step, bit for bit. Errors raise dsa.Error naming the field
("ring: ...", "position: ...", "x: ...", "sequence 7: not a member", "start_pos: ..."); the batch is unchanged.
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
        if slots is not None and not isinstance(slots, Slots):
            raise Error(f"slots: must be dsa.runtime.Slots (StepLibrary.initial_slots()), got {type(slots).__name__}")
        out, probed = self._seq.step(to_raw(x, "x"), int(start_pos), slots._raw if slots is not None else None,
                                     probes)
        if probes:
            return from_raw(out), [(name, from_raw(r)) for name, r in probed]
        return from_raw(out)

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


class Batch:
    """Many sequences' decode steps as one call of a batched step function (StepLibrary.batch)."""

    def __init__(self, raw):
        self._batch = raw

    @property
    def members(self):
        """The member ids in the order step() takes their rows (join order; a member that left removed)."""
        return list(self._batch.members)

    def join(self, ring, position):
        """Adds a sequence whose next token is at `position` with `ring` ([window_size, head_dim], copied), e.g. a
        batch-1 Sequence's state after its prefill. Returns its id (never reused)."""
        return self._batch.join(to_raw(ring, "ring"), _integer(position, "position"))

    def leave(self, id):
        """Removes member `id`; returns (ring, position): its ring after its last step and its next position."""
        ring, position = self._batch.leave(_integer(id, "id"))
        return from_raw(ring), position

    def step(self, x):
        """One decode step of every member: x [B, 1, dim] (B = len(members) >= 1); returns out [B, 1, dim], row b
        for members[b]. Every member's position advances by one."""
        return from_raw(self._batch.step(to_raw(x, "x")))

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
