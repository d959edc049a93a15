"""dsa.golden.replay: the same verdicts, in the same order, as dsa-run --golden prints (the whole golden on the
interpreter: 441 passed; layer 0 on the CPU JIT), and errors that stop a replay as dsa.Error."""
import subprocess

import pytest

import dsa
from conftest import GOLDEN, tool


def dsa_run_lines(*args):
    r = subprocess.run([tool("dsa-run"), "--golden", GOLDEN, *args], capture_output=True, text=True)
    return r.returncode, r.stdout.splitlines()


def verdict_lines(lines):
    return [l for l in lines if l.split(" ", 1)[0] in ("PASS", "FAIL", "SKIP")]


def test_whole_golden_on_the_interpreter_is_dsa_runs_report():
    report = dsa.golden.replay(GOLDEN)
    assert (report.passed, report.failed, report.not_compared) == (441, 0, 2)
    assert report.all_passed and report.exit_status == 0
    assert report.summary == "golden: 441 passed, 0 failed (2 not compared)"
    assert len(report.verdicts) == 443
    skipped = [v for v in report.verdicts if v.status == "SKIP"]
    assert [(v.regime, v.name) for v in skipped] == [("decode12", "shared.L2.candidates"),
                                                      ("decode13", "shared.L2.candidates")]
    assert all(v.passed == (v.status == "PASS") for v in report.verdicts)
    rc, lines = dsa_run_lines()
    assert rc == 0
    assert [v.line for v in report.verdicts] + [report.summary] == lines


def test_layer_on_the_cpu_backend_is_dsa_runs_report():
    report = dsa.golden.replay(GOLDEN, backend="cpu", layers=[0])
    rc, lines = dsa_run_lines("--backend=cpu", "--layers", "0")
    assert rc == 0 and report.exit_status == 0
    assert [v.line for v in report.verdicts] == verdict_lines(lines)
    assert lines[-1] == report.summary == "golden: 15 passed, 0 failed"
    v = report.verdicts[0]
    assert (v.regime, v.name, v.status, v.passed) == ("prefill12", "L0.sa_q", "PASS", True)
    assert v.compared > 0 and v.mismatches == 0 and v.max_abs == 0 and v.ck_got == pytest.approx(v.ck_want)


@pytest.mark.parametrize("kwargs,match", [
    (dict(path="/nonexistent/golden.json"), "golden.json"),
    (dict(layers=[99]), r"--layers: layer 99 does not exist \(the fixture has 6 layers\)"),
    (dict(layers=[2]), "--layers: layer 2 has compress_ratio 2"),
    (dict(backend="tpu"), "--backend must be 'interpret', 'cpu' or 'gpu', got 'tpu'"),
    (dict(backend="gpu"), "backend: 'gpu' replays run MLIR-free"),
    (dict(index_k_source="nope"), "--index-k-source must be"),
])
def test_errors(kwargs, match):
    path = kwargs.pop("path", GOLDEN)
    with pytest.raises(dsa.Error, match=match):
        dsa.golden.replay(path, **kwargs)


def test_golden_layer():
    layer = dsa.golden.layer(GOLDEN, 3)
    assert layer.function == "attention_L3" and layer.dim == 64 and layer.has_shared_slots
    assert layer.module.functions == ["attention_L3"]
    assert layer.weight_names[0] == "layers.3.attn.attn_sink"
    assert len(layer.weights) == len(layer.weight_names)
    assert layer.ring.dtype == dsa.bfloat16 and not layer.ring.astype(float).any()
    with pytest.raises(dsa.Error, match=r"layer: 6 does not exist"):
        dsa.golden.layer(GOLDEN, 6)
