"""Shared fixtures of the dsa Python tests (run: `python3 -m pytest python/tests`; the package must be importable:
PYTHONPATH=BUILD/python for the build tree, or an installed dsa). DSA_TOOLS_DIR (default build/bin) holds dsa-run
and dsa-opt, whose output some tests compare with; those tests skip, saying so, when the tools are missing."""
import os
import pathlib

import pytest

import dsa

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "test" / "Golden" / "ds41_tiny_golden.json"


def tool(name):
    path = pathlib.Path(os.environ.get("DSA_TOOLS_DIR", ROOT / "build" / "bin")) / name
    if not path.exists():
        pytest.skip(f"{path} not built (set DSA_TOOLS_DIR to the build's bin directory)")
    return path


@pytest.fixture(scope="session")
def golden_path():
    return GOLDEN


@pytest.fixture(scope="session")
def layer0():
    return dsa.golden.layer(GOLDEN, 0)


@pytest.fixture(scope="session")
def lib0(layer0, tmp_path_factory):
    path = dsa.compiler.compile_cpu(layer0.module, tmp_path_factory.mktemp("lib0"))
    return dsa.runtime.StepLibrary(path)
