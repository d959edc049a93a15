"""dsa.runtime.plan_stack_chunk / step_stack: a chunk at start_pos > 0 through the golden's whole stack of six layers
(compressed layers sharing slots, the index_k quirk), run layer-major by the plan's pieces on CPU step libraries,
bit-identical to the same tokens fed one decode step at a time through every layer; bad arguments raise dsa.Error."""
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


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    layers = [dsa.golden.layer(GOLDEN, i) for i in range(6)]
    libs = [dsa.runtime.StepLibrary(dsa.compiler.compile_cpu(l.module, tmp_path_factory.mktemp(f"stack{i}")))
            for i, l in enumerate(layers)]
    return layers, libs


def between(layer, y):
    # Some model computation between layers (the golden's MoE would be here): any function of the rows.
    return (y.astype(np.float32) * 0.5 + 0.25).astype(dsa.bfloat16)


def test_the_golden_stack_chunked_equals_token_by_token(stack):
    layers, libs = stack
    capacity = min(lib.signature().max_seq_len for lib in libs if lib.signature().max_seq_len > 0)
    prefill = 6
    x = tokens(capacity, 3)
    slots_ref = next(lib for lib in libs if lib.signature().has_shared_slots).initial_slots()
    slots_chunk = next(lib for lib in libs if lib.signature().has_shared_slots).initial_slots()
    ref = [lib.sequence(l.weights) for lib, l in zip(libs, layers)]
    chunked = [lib.sequence(l.weights) for lib, l in zip(libs, layers)]
    # The plan: the golden's L2 reads L4's keys of the previous token; 9 tokens at 6 are cut (row 14 would see 7 of
    # L4's rows, layer-major only the 6 it had): 4 tokens (at most 5 rows), then 5 at 10 (at most 7 of 10); the
    # golden's decode12 + decode13 as one piece with plain threading.
    cut = dsa.runtime.plan_stack_chunk(chunked, prefill, prefill, 9)
    assert [(p.first, p.count) for p in cut] == [(0, 4), (4, 5)]
    one = dsa.runtime.plan_stack_chunk([s.signature for s in chunked], 12, 12, 2)
    assert [(p.first, p.count) for p in one] == [(0, 2)] and one[0].index_k_from == [-1, -1, -1, 2, 3, 4]
    y_ref = dsa.runtime.step_stack(ref, x[:prefill], 0, slots_ref, prefill, between)
    y_chunk = dsa.runtime.step_stack(chunked, x[:prefill], 0, slots_chunk, prefill, between)
    assert np.array_equal(bits(y_ref), bits(y_chunk))
    pos = prefill
    for n in (9, 2, 3):
        if pos + n > capacity:
            break
        want = np.concatenate([dsa.runtime.step_stack(ref, x[t:t + 1], t, slots_ref, prefill, between)
                               for t in range(pos, pos + n)])
        got = dsa.runtime.step_stack(chunked, x[pos:pos + n], pos, slots_chunk, prefill, between)
        assert got.shape == (n, DIM) and np.array_equal(bits(got), bits(want)), f"{n} tokens at {pos}"
        for a, b in zip(ref, chunked):
            assert a.position == b.position == pos + n
            for (ka, va), (kb, vb) in zip(sorted(a.state().items()), sorted(b.state().items())):
                assert ka == kb and va.tobytes() == vb.tobytes(), f"state {ka} after {n} tokens at {pos}"
        for i in (0, 1):  # the caches published as compress_kv and index_k
            assert slots_ref.tensors()[i].tobytes() == slots_chunk.tensors()[i].tobytes()
        pos += n


def test_errors_name_the_argument(stack):
    layers, libs = stack
    seqs = [lib.sequence(l.weights) for lib, l in zip(libs, layers)]
    with pytest.raises(dsa.Error, match="0 tokens, expected at least 1"):
        dsa.runtime.plan_stack_chunk(seqs, 4, 4, 0)
    with pytest.raises(dsa.Error, match="prefill of 5 tokens must be at least 1 and at most start_pos 4"):
        dsa.runtime.plan_stack_chunk(seqs, 5, 4, 2)
    with pytest.raises(dsa.Error, match="layer 0 reads topk_idxs that no earlier layer publishes"):
        dsa.runtime.plan_stack_chunk([seqs[3], seqs[2]], 4, 4, 2)
    with pytest.raises(dsa.Error, match="start_pos: must be an integer"):
        dsa.runtime.plan_stack_chunk(seqs, 4, "4", 2)
    # Without the plan, a chunk of a layer with shared slots is still refused per layer, nothing changed.
    slots = libs[2].initial_slots()
    seqs[2].step(tokens(4, 1), 0, slots=slots)
    with pytest.raises(dsa.Error, match="shared: "):
        seqs[2].step(tokens(2, 2), 4, slots=slots)
    assert seqs[2].position == 4
