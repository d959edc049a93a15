"""dsa.runtime.Batch over compressed layers: the tiny golden's L2 (ratio 2, kv + index source) and L3 (ratio 2,
reads L2's compress_kv and topk_idxs) as batched decode steps (dsa.golden.layer(..., batched=True)) compiled to CPU
step libraries, one Batch per layer with the same members, the batched shared slots passed from layer to layer. The
oracle is each sequence's own batch-1 run through the same two layers (batch-1 step libraries, their own slots):
every out row and every state value must match it bit for bit, as sequences join after their prefills and leave.
Bad arguments raise dsa.Error naming the field and leave the batch as it was."""
import numpy as np
import pytest

import dsa

LAYERS = (2, 3)
DIM = 64


def tokens(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dsa.bfloat16)


def same(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.fixture(scope="module")
def stack(golden_path, tmp_path_factory):
    d = tmp_path_factory.mktemp("batch_compressed")
    out = []
    for l in LAYERS:
        one = dsa.golden.layer(golden_path, l)
        many = dsa.golden.layer(golden_path, l, batched=True)
        lib_one = dsa.runtime.StepLibrary(dsa.compiler.compile_cpu(one.module, d / f"one{l}"))
        lib_many = dsa.runtime.StepLibrary(dsa.compiler.compile_cpu(many.module, d / f"many{l}"))
        out.append((one.weights, lib_one, lib_many))
    return out


class Oracle:
    """Each member's batch-1 sequences (one per layer) and slots, by batch id; the batches, one per layer."""

    def __init__(self, stack):
        self.stack = stack
        self.batches = [many.batch(w) for w, _, many in stack]
        self.members = {}          # id -> (seqs, slots)
        self.slots = None          # the batched slots

    def prefill(self, n, seed):
        w0, one0, _ = self.stack[0]
        seqs = [one.sequence(w) for w, one, _ in self.stack]
        slots = one0.initial_slots()
        h = tokens((n, DIM), seed)
        for seq in seqs:
            h = seq.step(h, 0, slots)
        return seqs, slots

    def rows(self):
        """Each member's batch-1 slots, from the batched slots (members order)."""
        if self.slots is None:
            return {}
        return {id: self.batches[0].slots_of(self.slots, b) for b, id in enumerate(self.batches[0].members)}

    def join(self, n, seed):
        rows = self.rows()
        seqs, slots = self.prefill(n, seed)
        ids = {batch.join(list(seq.state().values()), seq.position) for batch, seq in zip(self.batches, seqs)}
        assert len(ids) == 1, "every layer's batch numbers the sequence alike"
        id = ids.pop()
        self.members[id] = (seqs, slots)
        rows[id] = slots
        self.slots = self.batches[0].stack_slots([rows[m] for m in self.batches[0].members])
        return id

    def leave(self, id):
        rows = self.rows()
        seqs, _ = self.members.pop(id)
        for batch, seq in zip(self.batches, seqs):
            state, position = batch.leave(id)
            if batch.state_count == 1:               # L3 (no compressor of its own): its ring, as for window-only
                state = [state]
            want = list(seq.state().values())
            assert position == seq.position and len(state) == len(want) == batch.state_count
            assert all(same(a, b) for a, b in zip(state, want)), "the state handed back on leaving"
        del rows[id]
        members = self.batches[0].members
        self.slots = self.batches[0].stack_slots([rows[m] for m in members]) if members else None

    def step(self, seed):
        members = self.batches[0].members
        assert members == list(self.members)
        h = tokens((len(members), 1, DIM), seed)
        want = []
        for r, id in enumerate(members):
            seqs, slots = self.members[id]
            y = h[r]
            for seq in seqs:
                y = seq.step(y, seq.position, slots)
            want.append(y)
        for batch in self.batches:
            h = batch.step(h, self.slots)
        assert h.shape == (len(members), 1, DIM)
        for r, id in enumerate(members):
            assert same(h[r], want[r]), f"row {r} (sequence {id})"
            seqs, _ = self.members[id]
            for batch, seq in zip(self.batches, seqs):
                assert batch.position(id) == seq.position
                got, expect = batch.state(id), list(seq.state().values())
                assert len(got) == len(expect)
                for i, (a, b) in enumerate(zip(got, expect)):
                    assert same(a, b), f"sequence {id}: state {i}"


def test_stack_rows_equal_batch1_runs_joining_and_leaving(stack):
    o = Oracle(stack)
    assert o.batches[0].state_count == 5          # ring, kv_state, score_state, compressed-KV, index-key caches
    assert o.batches[1].state_count == 1          # L3 reads L2's caches: its state is its ring
    a = o.join(5, 1)
    o.step(10)
    b = o.join(3, 2)
    c = o.join(8, 3)
    for seed in range(11, 15):
        o.step(seed)
    o.leave(b)
    o.step(20)
    o.leave(a)
    o.step(21)
    assert o.batches[0].members == [c]


def test_errors_name_the_field_and_change_nothing(stack):
    o = Oracle(stack)
    first = o.batches[0]
    seqs, slots = o.prefill(4, 5)
    with pytest.raises(dsa.Error, match="state: 1 values, the function has 5 state bindings"):
        first.join(seqs[0].state()[2], 4)
    state = list(seqs[0].state().values())
    with pytest.raises(dsa.Error, match=r"state\[3\]"):
        first.join(state[:3] + ["not an array"] + state[4:], 4)
    assert first.members == []
    o.join(4, 5)
    o.join(6, 6)
    before = [first.state(id) for id in first.members]
    x = tokens((2, 1, DIM), 7)
    with pytest.raises(dsa.Error, match="shared: the layer takes 4 shared slots, none given"):
        first.step(x)
    with pytest.raises(dsa.Error, match="slots: must be dsa.runtime.Slots"):
        first.step(x, [np.zeros((2, 1, 1), np.int32)])
    with pytest.raises(dsa.Error, match="x: shape"):
        first.step(tokens((3, 1, DIM), 8), o.slots)
    with pytest.raises(dsa.Error, match="stackSlots @attention_L2: no members"):
        first.stack_slots([])
    with pytest.raises(dsa.Error, match="slotsOf: b: 2 is outside"):
        first.slots_of(o.slots, 2)
    for id, was in zip(first.members, before):
        assert all(same(a, b) for a, b in zip(first.state(id), was))
        assert first.position(id) in (4, 6)
    o.step(9)                                        # the batch goes on as if nothing had been refused
