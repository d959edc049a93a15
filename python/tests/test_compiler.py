"""dsa.compiler: parse / verify / print, pass pipelines (the same output as dsa-opt), errors with diagnostics."""
import subprocess

import pytest

import dsa
from conftest import ROOT, tool

DECOMPOSE = ROOT / "test" / "Transforms" / "decompose-attention.mlir"


def test_parse_print_round_trip():
    m = dsa.compiler.parse_file(DECOMPOSE)
    m.verify()
    text = str(m)
    assert "dsa.attention" in text
    again = dsa.compiler.parse(text)
    assert str(again) == text
    assert "dsa.attention" in m.print(generic=True)  # the generic form names the op in quotes
    assert '"dsa.attention"' in m.print(generic=True)


def test_pipeline_matches_dsa_opt():
    m = dsa.compiler.parse_file(DECOMPOSE)
    m.run_pipeline("dsa-decompose-attention")
    assert "dsa.attention" not in str(m) and "dsa.sparse_attn" in str(m)
    want = subprocess.run([tool("dsa-opt"), "--dsa-decompose-attention", DECOMPOSE], check=True,
                          capture_output=True, text=True).stdout
    assert str(m).strip() == want.strip()


def test_anchored_pipeline_and_clone():
    m = dsa.compiler.parse_file(DECOMPOSE)
    c = m.clone()
    c.run_pipeline("builtin.module(dsa-decompose-attention, canonicalize)")
    assert "dsa.attention" in str(m) and "dsa.attention" not in str(c)


def test_parse_error_has_the_diagnostic():
    with pytest.raises(dsa.Error, match=r"text: bad\.mlir is not a valid module:\nbad\.mlir:1:14: error: expected"):
        dsa.compiler.parse("func.func @f( {", "bad.mlir")


def test_unknown_pass_names_the_pipeline():
    m = dsa.compiler.parse_file(DECOMPOSE)
    before = str(m)
    with pytest.raises(dsa.Error, match="pipeline: cannot parse 'no-such-pass'"):
        m.run_pipeline("no-such-pass")
    assert str(m) == before


def test_failing_pipeline_reports_the_diagnostic():
    # A dynamic feature dimension: the CPU lowering names the op and operand (README "Using the tools").
    m = dsa.compiler.parse("""
func.func @f(%x: tensor<?x?xbf16>, %w: tensor<?xbf16>) -> tensor<?x?xbf16> {
  %y = dsa.rms_norm %x, %w {eps = 1.0e-6 : f32} : (tensor<?x?xbf16>, tensor<?xbf16>) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}""")
    with pytest.raises(dsa.Error, match="pipeline 'dsa-cpu-pipeline' failed:\n.*error"):
        m.run_pipeline("dsa-cpu-pipeline")


def test_compile_cpu_needs_a_name_for_two_functions(tmp_path):
    m = dsa.compiler.parse("func.func @a() { return }\nfunc.func @b() { return }")
    with pytest.raises(dsa.Error, match="base_name: the module has 2 functions"):
        dsa.compiler.compile_cpu(m, tmp_path)


def cuda_toolkit():
    import os
    import shutil
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "bin", "ptxas")):
            return True
    return shutil.which("ptxas") is not None


def test_compile_gpu_writes_a_gpu_step_library(layer0, tmp_path):
    if not cuda_toolkit():
        pytest.skip("no CUDA toolkit (ptxas): GPU step libraries embed a cubin")
    import json
    path = dsa.compiler.compile_gpu(layer0.module, tmp_path, chip="sm_90")
    desc = json.loads(open(path).read())
    assert path.endswith("attention_L0.json") and (tmp_path / "attention_L0.so").exists()
    assert [f["name"] for f in desc["functions"]] == ["attention_L0"]
    with pytest.raises(dsa.Error, match="sm_1"):
        dsa.compiler.compile_gpu(layer0.module, tmp_path / "bad", chip="sm_1")
