"""dsa.runtime.Batch: a batched window-only layer (start_pos tensor<B x i64>) compiled to a CPU step library serves
several sequences with one call per decode step; sequences join after a batch-1 prefill and leave with their ring.
The oracle is each sequence's own batch-1 run (the batch-1 layer of the same geometry and weights, compiled to a
step library, stepped as a dsa.runtime.Sequence): every out row, ring and position must match it bit for bit. Bad
arguments raise dsa.Error naming the field and leave the batch as it was."""
import numpy as np
import pytest

import dsa
from conftest import ROOT

DIM = 64
BATCHED = ROOT / "test" / "Tools" / "Inputs" / "batched-window-layer.mlir"
ONE = ROOT / "test" / "Conversion" / "DSAToGPU" / "Inputs" / "window-layer.mlir"


def tokens(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dsa.bfloat16)


def bits(a):
    return np.ascontiguousarray(a).view(np.uint16)


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    d = tmp_path_factory.mktemp("batch")
    one = dsa.runtime.StepLibrary(dsa.compiler.compile_cpu(dsa.compiler.parse_file(ONE), d / "one"))
    many = dsa.runtime.StepLibrary(dsa.compiler.compile_cpu(dsa.compiler.parse_file(BATCHED), d / "many"))
    return one, many


@pytest.fixture(scope="module")
def weights(layer0):
    return layer0.weights          # the tiny golden's L0 weights: the same geometry as both layers


def prefilled(one, weights, n, seed):
    seq = one.sequence(weights)
    seq.step(tokens((n, DIM), seed), 0)
    return seq


def ring_of(seq):
    [(arg, ring)] = seq.state().items()
    assert arg == 2
    return ring


class Oracle:
    """The members' batch-1 sequences, by batch id."""

    def __init__(self, batch):
        self.batch, self.seqs = batch, {}

    def join(self, seq):
        id = self.batch.join(ring_of(seq), seq.position)
        assert id not in self.seqs
        self.seqs[id] = seq
        return id

    def step(self, seed):
        members = self.batch.members
        assert members == list(self.seqs)
        x = tokens((len(members), 1, DIM), seed)
        out = self.batch.step(x)
        assert out.dtype == dsa.bfloat16 and out.shape == (len(members), 1, DIM)
        assert np.isfinite(out.astype(np.float32)).all()
        for r, id in enumerate(members):
            seq = self.seqs[id]
            want = seq.step(x[r], seq.position)                 # the sequence's own batch-1 step: [1, dim]
            assert np.array_equal(bits(out[r]), bits(want)), f"row {r} (sequence {id})"
            assert self.batch.position(id) == seq.position
            assert np.array_equal(bits(self.batch.ring(id)), bits(ring_of(seq)))
        return out


def test_signature_is_batched(libs):
    one, many = libs
    sig = many.signature()
    assert sig.args[1] == "tensor<?xi64>" and sig.args[2] == "tensor<?x8x32xbf16>"
    assert sig.state_args == [2] and sig.weight_args == one.signature().weight_args == list(range(3, 11))


def test_rows_equal_batch1_runs_joining_and_leaving(libs, weights, layer0):
    one, many = libs
    batch = many.batch(weights)
    assert batch.members == []
    o = Oracle(batch)
    a = o.join(prefilled(one, weights, 3, 1))
    b = o.join(prefilled(one, weights, 11, 2))                 # past the window (8): the ring has wrapped
    assert batch.members == [a, b] and batch.position(a) == 3 and batch.position(b) == 11
    o.step(10)
    o.step(11)
    c = o.join(prefilled(one, weights, 6, 3))                  # joins later
    assert batch.members == [a, b, c]
    o.step(12)
    o.step(13)
    ring, position = batch.leave(b)                            # leaves, taking its ring ...
    left = o.seqs.pop(b)
    assert batch.members == [a, c] and position == left.position == 15
    assert ring.dtype == dsa.bfloat16 and ring.shape == (8, 32)
    assert np.array_equal(bits(ring), bits(ring_of(left)))
    x = tokens((1, DIM), 20)                                   # ... and goes on as a batch-1 run from that ring
    out = dsa.interpreter.run(dsa.compiler.parse_file(ONE), "layer0", [x, position, ring, *weights])
    assert np.array_equal(bits(out[0]), bits(left.step(x, position)))
    o.step(14)
    o.step(15)
    d = o.join(prefilled(one, weights, 1, 4))
    assert d not in (a, b, c)                                  # ids are never reused
    o.step(16)
    batch.leave(a)
    batch.leave(c)
    o.seqs.pop(a)
    o.seqs.pop(c)
    o.step(17)                                                 # one member


def snapshot(batch):
    return [(id, batch.position(id), bits(batch.ring(id)).copy()) for id in batch.members]


def assert_same(batch, before):
    after = snapshot(batch)
    assert [(i, p) for i, p, _ in after] == [(i, p) for i, p, _ in before]
    for (_, _, r0), (_, _, r1) in zip(before, after):
        assert np.array_equal(r0, r1)


@pytest.mark.parametrize("call,match", [
    (lambda b, ids: b.join(np.zeros((8, 31), dsa.bfloat16), 0), r"ring: "),
    (lambda b, ids: b.join(np.zeros((8, 32), np.float32), 0), r"ring: "),
    (lambda b, ids: b.join(np.zeros((8, 32), np.float64), 0), r"ring: numpy dtype float64"),
    (lambda b, ids: b.join(np.zeros((8, 32), dsa.bfloat16), -1), r"position: "),
    (lambda b, ids: b.join(np.zeros((8, 32), dsa.bfloat16), 1.0), r"position: must be an integer"),
    (lambda b, ids: b.leave(999), r"sequence 999: not a member"),
    (lambda b, ids: b.leave(1.0), r"id: must be an integer"),
    (lambda b, ids: b.position(999), r"sequence 999: not a member"),
    (lambda b, ids: b.ring(999), r"sequence 999"),
    (lambda b, ids: b.step(np.zeros((3, 1, DIM), dsa.bfloat16)), r"x: "),             # B is the member count (2)
    (lambda b, ids: b.step(np.zeros((2, 1, DIM), np.float32)), r"x: "),
    (lambda b, ids: b.step(np.zeros((2, DIM), dsa.bfloat16)), r"x: "),                # rank
    (lambda b, ids: b.step(np.zeros((2, 2, DIM), dsa.bfloat16)), r"x: "),             # one token per sequence
    (lambda b, ids: b.step(np.zeros((2, 1, DIM + 1), dsa.bfloat16)), r"x: "),
])
def test_bad_calls_name_the_field_and_keep_the_batch(libs, weights, call, match):
    one, many = libs
    batch = many.batch(weights)
    o = Oracle(batch)
    ids = [o.join(prefilled(one, weights, 4, 5)), o.join(prefilled(one, weights, 9, 6))]
    o.step(30)
    before = snapshot(batch)
    with pytest.raises(dsa.Error, match=match):
        call(batch, ids)
    assert_same(batch, before)
    o.step(31)                                                 # and it goes on from where it was


def test_leave_twice_and_empty_step(libs, weights):
    one, many = libs
    batch = many.batch(weights)
    with pytest.raises(dsa.Error, match=r"x: "):
        batch.step(np.zeros((0, 1, DIM), dsa.bfloat16))          # no members
    id = batch.join(ring_of(prefilled(one, weights, 2, 7)), 2)
    batch.leave(id)
    with pytest.raises(dsa.Error, match=rf"sequence {id}: not a member"):
        batch.leave(id)
    assert batch.members == []


def test_position_overflow(libs, weights):
    _, many = libs
    batch = many.batch(weights)
    id = batch.join(np.zeros((8, 32), dsa.bfloat16), np.iinfo(np.int64).max)
    with pytest.raises(dsa.Error, match=r"start_pos: "):
        batch.step(np.zeros((1, 1, DIM), dsa.bfloat16))
    assert batch.position(id) == np.iinfo(np.int64).max


def test_bad_batch_creation(libs, weights):
    one, many = libs
    with pytest.raises(dsa.Error, match=r"start_pos: .*tensor<B x i64>"):
        one.batch(weights)                                     # a batch-1 layer: use Sequence
    with pytest.raises(dsa.Error, match=rf"weights: {len(weights) - 1} given, @batched takes {len(weights)}"):
        many.batch(weights[:-1])
    wrong = list(weights)
    wrong[1] = wrong[1].astype(np.float32)
    with pytest.raises(dsa.Error, match=r"weights\[1\] \(argument #4, tensor<16x64xbf16>\): got f32"):
        many.batch(wrong)
