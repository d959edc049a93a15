"""dsa.runtime: a golden layer compiled to a CPU step library, run as a sequence (prefill, then decode steps),
bit-identical to the reference interpreter taking the same steps; bad arguments raise dsa.Error naming them and
leave the sequence's state and position as they were."""
import numpy as np
import pytest

import dsa
from conftest import GOLDEN

DIM = 64


def tokens(n, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, DIM)).astype(dsa.bfloat16)


def bits(a):
    return np.ascontiguousarray(a).view(np.uint16)


def test_signature(lib0, layer0):
    sig = lib0.signature()
    assert lib0.functions == ["attention_L0"] and sig.name == "attention_L0"
    assert sig.x_arg == 0 and sig.start_pos_arg == 1 and sig.output == 0
    assert sig.state_args == [2] and not sig.has_shared_slots
    assert sig.chunked  # a window-only layer of a CPU step library runs a chunk as one call
    assert len(sig.weight_args) == len(layer0.weights) == len(layer0.weight_names)


def test_decode_bit_identical_to_interpreter(lib0, layer0):
    sig = lib0.signature()
    cpu = lib0.sequence(layer0.weights)
    ref = dsa.interpreter.sequence(layer0.module, sig, layer0.weights)
    x = tokens(5, 0)
    y_cpu, y_ref = cpu.step(x[:3], 0), ref.step(x[:3], 0)             # prefill of 3 tokens
    assert y_cpu.dtype == dsa.bfloat16 and y_cpu.shape == (3, DIM)
    assert np.array_equal(bits(y_cpu), bits(y_ref))
    for t in (3, 4):                                                  # two decode steps
        y_cpu, y_ref = cpu.step(x[t:t + 1], t), ref.step(x[t:t + 1], t)
        assert np.array_equal(bits(y_cpu), bits(y_ref))
        assert np.isfinite(y_cpu.astype(np.float32)).all()
    assert cpu.position == ref.position == 5
    [(arg, ring)] = cpu.state().items()
    assert arg == 2 and np.array_equal(bits(ring), bits(ref.state()[2]))
    # The interpreter's first step is dsa.interpreter.run on the same arguments.
    out = dsa.interpreter.run(layer0.module, layer0.function, [x[:3], 0, layer0.ring, *layer0.weights])
    fresh = lib0.sequence(layer0.weights)
    assert np.array_equal(bits(out[0]), bits(fresh.step(x[:3], 0)))


def test_multi_token_step_after_prefill_equals_decode_steps(lib0, layer0):
    a, b = lib0.sequence(layer0.weights), lib0.sequence(layer0.weights)
    x = tokens(4, 1)
    a.step(x[:2], 0)
    b.step(x[:2], 0)
    y = a.step(x[2:], 2)                                               # one chunk call (a window-only layer)
    y2, y3 = b.step(x[2:3], 2), b.step(x[3:], 3)
    assert np.array_equal(bits(y), bits(np.concatenate([y2, y3])))


def state_of(seq):
    return seq.position, {k: bits(v).copy() for k, v in seq.state().items()}


def assert_unchanged(seq, before):
    position, state = state_of(seq)
    assert position == before[0]
    assert state.keys() == before[1].keys()
    for k in state:
        assert np.array_equal(state[k], before[1][k])


@pytest.mark.parametrize("x,start_pos,match", [
    (np.zeros((1, DIM), np.float32), 2, r"x: "),                       # element type
    (np.zeros((1, DIM + 1), dsa.bfloat16), 2, r"x: "),                # static width
    (np.zeros((0, DIM), dsa.bfloat16), 2, r"x: "),                    # no rows
    (np.zeros((1, DIM), np.float64), 2, r"x: numpy dtype float64"),
    (np.zeros((1, DIM), dsa.bfloat16), 5, r"start_pos: "),            # out of order
    (np.zeros((1, DIM), dsa.bfloat16), 1, r"start_pos: "),            # repeated
    (np.zeros((1, DIM), dsa.bfloat16), -1, r"start_pos: "),
    (np.zeros((1, DIM), dsa.bfloat16), 2.0, r"start_pos: must be an integer"),
])
def test_bad_step_names_the_argument_and_keeps_the_state(lib0, layer0, x, start_pos, match):
    seq = lib0.sequence(layer0.weights)
    seq.step(tokens(2, 2), 0)
    before = state_of(seq)
    with pytest.raises(dsa.Error, match=match):
        seq.step(x, start_pos)
    assert_unchanged(seq, before)
    seq.step(tokens(1, 3), 2)                                          # and it goes on from where it was
    assert seq.position == 3


def test_bad_weights_name_the_argument(lib0, layer0):
    sig = lib0.signature()
    with pytest.raises(dsa.Error, match=rf"weights: {len(layer0.weights) - 1} given, @attention_L0 takes "
                                        rf"{len(layer0.weights)}"):
        lib0.sequence(layer0.weights[:-1])
    wrong = list(layer0.weights)
    wrong[2] = np.zeros(wrong[2].shape[0] + 1, wrong[2].dtype)
    with pytest.raises(dsa.Error, match=rf"weights\[2\] \(argument #{sig.weight_args[2]}, tensor<"):
        lib0.sequence(wrong)
    wrong[2] = layer0.weights[2].astype(np.float32)
    with pytest.raises(dsa.Error, match=r"weights\[2\] .*got f32"):
        lib0.sequence(wrong)


def test_bad_library_path(tmp_path):
    with pytest.raises(dsa.Error, match=r"path: .*nothing\.json"):
        dsa.runtime.StepLibrary(tmp_path / "nothing.json")


def test_unknown_function(lib0):
    with pytest.raises(dsa.Error, match=r"function: .* has no function 'nope' \(it has: attention_L0\)"):
        lib0.signature("nope")


def test_compressed_layer_with_shared_slots(tmp_path):
    # Layer 2 (compress_ratio 2) reads and publishes the shared slots; layer 0 has none, so the slots start empty.
    layer = dsa.golden.layer(GOLDEN, 2)
    lib = dsa.runtime.StepLibrary(dsa.compiler.compile_cpu(layer.module, tmp_path))
    sig = lib.signature()
    assert sig.has_shared_slots and sig.max_seq_len > 0
    assert not sig.chunked  # it scores against the published index_k slot (the reference quirk)
    cpu = lib.sequence(layer.weights)
    ref = dsa.interpreter.sequence(layer.module, sig, layer.weights)
    s_cpu, s_ref = lib.initial_slots(), lib.initial_slots()
    with pytest.raises(dsa.Error, match="shared: .*slots="):
        cpu.step(tokens(1, 4), 0)
    assert cpu.position == 0
    x = tokens(5, 5)
    assert np.array_equal(bits(cpu.step(x[:4], 0, slots=s_cpu)), bits(ref.step(x[:4], 0, slots=s_ref)))
    assert np.array_equal(bits(cpu.step(x[4:], 4, slots=s_cpu)), bits(ref.step(x[4:], 4, slots=s_ref)))
    for a, b in zip(s_cpu.tensors(), s_ref.tensors()):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    with pytest.raises(dsa.Error, match="max_seq_len: "):
        cpu.step(np.zeros((sig.max_seq_len, DIM), dsa.bfloat16), 5, slots=s_cpu)
    assert cpu.position == 5
    # Not chunked: a multi-token step at start_pos > 0 is refused, naming the slots; nothing changes.
    before = [t.tobytes() for t in s_cpu.tensors()]
    with pytest.raises(dsa.Error, match="shared: "):
        cpu.step(tokens(2, 6), 5, slots=s_cpu)
    assert cpu.position == 5 and [t.tobytes() for t in s_cpu.tensors()] == before
