#!/usr/bin/env python3
"""Runs every public function of the given .mlir files on both dsa-run backends and compares the .npy outputs.

    run_backends.py --dsa-run BIN --work DIR [--rows N] [--undefined FILE:F:I,J ...] FILE.mlir...

For each public func.func (in file order): inputs for its arguments from npy_inputs.py (seeded; a dynamic dimension
takes --rows), then `dsa-run FILE --entry=F --input=@... --output=DIR/interpret/...` and the same with
--backend=cpu, and the result files compared byte for byte. One line per function:
    IDENTICAL FILE:F (N results)              both ran, every result file the same bytes
    NO-CPU-LOWERING FILE:F: <error>           the interpreter ran it, the CPU backend cannot compile it
    INTERPRETER-ERROR FILE:F: <error>         the interpreter rejects it (an error test); not run on the CPU
    DIFFERENT FILE:F: <what>                  result files differ (count or bytes)
    CPU-ERROR FILE:F: <error>                 compiled, but the run failed where the interpreter's did not
--undefined FILE:F:I,J names results of F whose values are undefined (a returned tensor.empty: the interpreter
fills it with zeros, compiled code leaves whatever the allocation held): for those only the header (dtype, shape)
is compared, and the IDENTICAL line says so.
Then "run-backends: N functions: A identical, B without a CPU lowering, C interpreter errors, D different, E cpu
errors". Exit status 1 when D or E is not 0.
"""
import argparse
import filecmp
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npy_inputs  # noqa: E402

import numpy as np  # noqa: E402


def first_error(text):
    lines = [l for l in text.splitlines() if l.strip()]
    for i, line in enumerate(lines):
        if "error" in line:
            message = re.sub(r"^.*?error: ", "", line).strip()
            if message.endswith(":") and i + 1 < len(lines):  # a pipeline failure: its first diagnostic follows
                message += " " + lines[i + 1].strip()
            return message
    return text.strip().splitlines()[-1] if text.strip() else "(no message)"


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dsa-run", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--rows", type=int, default=3)
    parser.add_argument("--undefined", action="append", default=[], metavar="FILE:F:I,J")
    parser.add_argument("files", nargs="+")
    a = parser.parse_args()
    undefined = {}
    for item in a.undefined:
        file, func, indices = item.split(":")
        undefined[(file, func)] = {"%s.%s.npy" % (func, i) for i in indices.split(",")}

    counts = dict(identical=0, lowering=0, interp=0, different=0, cpu=0)
    total = 0
    for path in sorted(a.files, key=os.path.basename):
        text = open(path).read()
        base = os.path.basename(path)
        for m in re.finditer(r"^\s*func\.func\s+(?:public\s+)?@([\w$.]+)\s*\(", text, re.M):
            func = m.group(1)
            total += 1
            label = "%s:%s" % (base, func)
            work = os.path.join(a.work, base, func)
            os.makedirs(work, exist_ok=True)
            rng = np.random.default_rng(total)
            inputs = []
            for i, typ in enumerate(npy_inputs.argument_types(text, func)):
                arg = os.path.join(work, "arg%d.npy" % i)
                np.save(arg, npy_inputs.make_value(typ, a.rows, rng))
                inputs.append("--input=@" + arg)
            common = [a.dsa_run, path, "--entry=" + func] + inputs
            status, _, err = run(common + ["--output=" + os.path.join(work, "interpret")])
            if status != 0:
                counts["interp"] += 1
                print("INTERPRETER-ERROR %s: %s" % (label, first_error(err)))
                continue
            status, _, err = run(common + ["--backend=cpu", "--output=" + os.path.join(work, "cpu")])
            if status != 0:
                if "cannot compile" in err:
                    counts["lowering"] += 1
                    print("NO-CPU-LOWERING %s: %s" % (label, first_error(err)))
                else:
                    counts["cpu"] += 1
                    print("CPU-ERROR %s: %s" % (label, first_error(err)))
                continue
            results = re.compile(re.escape(func) + r"\.\d+\.npy$")  # not the interpreter's probe files
            interp = sorted(f for f in os.listdir(os.path.join(work, "interpret")) if results.match(f))
            cpu = sorted(f for f in os.listdir(os.path.join(work, "cpu")) if results.match(f))
            if interp != cpu:
                counts["different"] += 1
                print("DIFFERENT %s: result files %s vs %s" % (label, interp, cpu))
                continue
            skipped = undefined.pop((base, func), set())

            def same(f):
                left, right = os.path.join(work, "interpret", f), os.path.join(work, "cpu", f)
                if f in skipped:  # header only: dtype and shape
                    l, r = np.load(left), np.load(right)
                    return l.dtype == r.dtype and l.shape == r.shape
                return filecmp.cmp(left, right, shallow=False)

            differing = [f for f in interp if not same(f)]
            if differing:
                counts["different"] += 1
                print("DIFFERENT %s: %s" % (label, ", ".join(differing)))
                continue
            counts["identical"] += 1
            note = ""
            if skipped:
                note = "; %s undefined (tensor.empty): dtype and shape only" % ", ".join(
                    "#" + f.split(".")[-2] for f in sorted(skipped))
            print("IDENTICAL %s (%d results%s)" % (label, len(interp), note))
    print("run-backends: %d functions: %d identical, %d without a CPU lowering, %d interpreter errors, "
          "%d different, %d cpu errors" % (total, counts["identical"], counts["lowering"], counts["interp"],
                                            counts["different"], counts["cpu"]))
    for file, func in undefined:
        print("run-backends: error: --undefined %s:%s names no function that ran on both backends" % (file, func))
    return 1 if counts["different"] or counts["cpu"] or undefined else 0


if __name__ == "__main__":
    sys.exit(main())
