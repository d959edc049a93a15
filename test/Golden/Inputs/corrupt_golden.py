#!/usr/bin/env python3
"""Writes a copy of a golden with exactly one integer and one float sample changed.

usage: corrupt_golden.py IN OUT
  prefill12 L0.sa_topk_idxs data[5] += 1   (an index)
  decode13  L0.sa_o         data[3] += 0.5 (a bf16 value, far beyond the section-12 tolerance)
The checksums are left as stored, so only the elementwise comparison can notice.
"""
import json
import sys

src, dst = sys.argv[1], sys.argv[2]
with open(src) as f:
    golden = json.load(f)
golden["prefill12"]["L0.sa_topk_idxs"]["data"][5] += 1
golden["decode13"]["L0.sa_o"]["data"][3] += 0.5
with open(dst, "w") as f:
    json.dump(golden, f)
