"""docs/embedding.md's five-line Python script runs as written (from the repository root) and prints what the doc
says: the whole golden replayed on the interpreter (441 passed), then a prefill and one decode step of a compiled
layer bit-identical to the interpreter; and its batched-decode block (each row of a dsa.runtime.Batch step equal to
its sequence's own batch-1 step)."""
import os
import re
import subprocess
import sys

from conftest import ROOT


def blocks(heading="### Five lines"):
    text = (ROOT / "docs" / "embedding.md").read_text()
    section = text[text.index(heading):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    printed = re.search(r"It prints\n\n```\n(.*?)```", section, re.S).group(1)
    return code, printed


def test_five_line_script():
    code, printed = blocks()
    assert len(code.strip().splitlines()) == 5
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=os.environ)
    assert r.returncode == 0, r.stderr
    assert r.stdout == printed


def test_batched_decode_block():
    code, printed = blocks("### Batched decode")
    assert printed == "[True, True, True]\n"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=os.environ)
    assert r.returncode == 0, r.stderr
    assert r.stdout == printed
