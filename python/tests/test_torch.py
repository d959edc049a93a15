"""dsa.torch: the torch.library custom op and the nn.Module wrapper run golden layers through the runtime on torch
CPU tensors, checked against the plain-torch eager layer of bench/torch_compare.py (which itself reproduces the
golden) on the golden's own inputs and on random ones. Skipped without torch (install: docs/embedding.md "PyTorch")."""
import importlib.util
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (docs/embedding.md \"PyTorch\": "
                                            "pip install torch, then run this suite with that python)")

import dsa  # noqa: E402
import dsa.torch  # noqa: E402
from conftest import GOLDEN, ROOT  # noqa: E402


def eager():
    spec = importlib.util.spec_from_file_location("torch_compare", ROOT / "bench" / "torch_compare.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


EAGER_KEYS = {"attn.attn_sink": "attn_sink", "attn.wq_a.weight": "wq_a", "attn.q_norm.weight": "q_norm",
              "attn.wq_b.weight": "wq_b", "attn.wkv.weight": "wkv", "attn.kv_norm.weight": "kv_norm",
              "attn.wo_a.weight": "wo_a", "attn.wo_b.weight": "wo_b"}


def within_section12(got, want):
    """attention-semantics.md section 12: |got - want| <= |want| / 64 + max|want| / 256, elementwise."""
    got, want = got.double(), want.double()
    tol = want.abs() / 64 + want.abs().max() / 256
    return bool(((got - want).abs() <= tol).all())


@pytest.fixture(scope="module")
def golden_json():
    return json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("layer_id", [0, 1])
def test_layer_matches_eager_torch(layer_id, golden_json, tmp_path):
    tc = eager()
    fx = golden_json["fixture"]
    g = tc.Geometry(fx["dim"], fx["n_heads"], fx["head_dim"], fx["rope_head_dim"], fx["q_lora_rank"],
                    fx["o_lora_rank"], fx["o_groups"], fx["window_size"], fx["norm_eps"], fx["rope_theta"])
    layer = dsa.torch.Layer.from_golden(GOLDEN, layer_id, tmp_path)
    prefix = f"layers.{layer_id}."
    w = {EAGER_KEYS[n[len(prefix):]]: t for n, t in zip(layer.weight_names, layer.weights())}
    ring = torch.zeros(g.window, g.head_dim, dtype=torch.bfloat16)
    # Layer 0: the golden's own inputs (L0.attn_in, stored in full) for prefill12, decode12, decode13, and its
    # outputs; layer 1: random tokens (its attn_in is stored at a stride).
    rng = torch.Generator().manual_seed(layer_id)
    steps = []
    for regime in fx["regimes"]:
        start = int(regime[len("decode"):]) if regime.startswith("decode") else 0
        if layer_id == 0:
            cap = golden_json[regime]["L0.attn_in"]
            x = torch.tensor(cap["data"], dtype=torch.float32).view(cap["shape"][1:]).to(torch.bfloat16)
        else:
            x = torch.randn(12 if start == 0 else 1, g.dim, generator=rng).to(torch.bfloat16)
        steps.append((regime, start, x))
    for regime, start, x in steps:
        y = layer(x, start)
        want, ring = tc.attention(g, w, x, start, ring)
        assert y.dtype == torch.bfloat16 and y.shape == want.shape
        assert within_section12(y, want), regime
        if layer_id == 0:
            cap = golden_json[regime]["L0.attn_out"]
            got = y.float().flatten()[::cap["stride"]][: len(cap["data"])]
            assert within_section12(got, torch.tensor(cap["data"], dtype=torch.float64)), regime
    assert within_section12(layer.state()[2].float(), ring.float())


def test_custom_op_is_the_module_step_and_errors_keep_the_state(tmp_path):
    a = dsa.torch.Layer.from_golden(GOLDEN, 0, tmp_path / "a")
    b = dsa.torch.Layer(a.library, a.weights())
    x = torch.randn(3, 64, generator=torch.Generator().manual_seed(7)).to(torch.bfloat16)
    ya = a(x, 0)
    yb = torch.ops.dsa.layer_step(b.handle, x, 0)
    assert torch.equal(ya.view(torch.int16), yb.view(torch.int16))
    ring = a.state()[2].clone()
    with pytest.raises(dsa.Error, match="x: "):
        a(x.float(), 3)
    with pytest.raises(dsa.Error, match="start_pos: "):
        a(x[:1], 7)
    assert a.position == 3 and torch.equal(a.state()[2].view(torch.int16), ring.view(torch.int16))
    # The fake implementation: shapes without running (torch's meta device).
    assert torch.ops.dsa.layer_step(a.handle, torch.empty(2, 64, dtype=torch.bfloat16, device="meta"), 3).shape == (2, 64)
    with pytest.raises(dsa.Error, match="layer: 2 has compress_ratio > 0"):
        dsa.torch.Layer.from_golden(GOLDEN, 2, tmp_path / "c")
    # reload(): a new sequence from the buffers.
    a.reload()
    assert a.position == 0 and torch.equal(a(x, 0).view(torch.int16), ya.view(torch.int16))
