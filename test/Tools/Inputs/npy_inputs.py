#!/usr/bin/env python3
"""Seeded .npy inputs for the arguments of a func.func in a .mlir file (dsa-run --input=@FILE).

    npy_inputs.py FILE.mlir FUNC OUTDIR [--rows N] [--int I=V ...] [--seed S] [--print-args]

reads FUNC's argument types from FILE (the text `func.func @FUNC(%a: T, ...)`), and writes OUTDIR/FUNC.arg<I>.npy
for each argument: a dynamic dimension takes N (--rows, default 3); bf16 values are normal(0, 1) / sqrt(last dim)
rounded to bf16 and stored as numpy.save stores an ml_dtypes.bfloat16 array; f32 likewise without the rounding;
i32 / i64 / index values are 0 (a row count, an index and a position are all valid at 0) unless --int I=V sets
argument I (a scalar) to V; i1 values are False. With --print-args it prints the dsa-run arguments, one per line
(`--input=@OUTDIR/FUNC.arg0.npy`, ...). Needs numpy and ml_dtypes.
"""
import argparse
import os
import re
import sys

import ml_dtypes
import numpy as np


def split_top_level(text, sep=","):
    """Splits on `sep` outside <>, () and []."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:])
    return [p.strip() for p in parts]


def argument_types(mlir_text, func):
    """The argument types of `func.func @func(...)` in mlir_text, as MLIR spellings."""
    m = re.search(r"func\.func\s+(?:public\s+|private\s+)?@" + re.escape(func) + r"\s*\(", mlir_text)
    if not m:
        raise SystemExit("npy_inputs: no func.func @%s" % func)
    depth, i = 1, m.end()
    while depth:
        c = mlir_text[i]
        depth += c == "("
        depth -= c == ")"
        i += 1
    args = mlir_text[m.end():i - 1]
    types = []
    for arg in split_top_level(args):
        if not arg:
            continue
        name, _, typ = arg.partition(":")
        typ = re.sub(r"\{.*\}$", "", typ).strip()  # argument attributes
        types.append(typ)
    return types


def parse_type(typ):
    """(shape or None for a scalar, element type) of an MLIR type spelling."""
    m = re.fullmatch(r"tensor<(.*)>", typ)
    if not m:
        return None, typ
    parts = m.group(1).split("x")
    return parts[:-1], parts[-1]


def make_value(typ, rows, rng, scalar=None):
    shape, element = parse_type(typ)
    dims = [] if shape is None else [rows if d == "?" else int(d) for d in shape]
    if element in ("bf16", "f32"):
        scale = 1.0 / np.sqrt(dims[-1]) if dims and dims[-1] > 0 else 1.0
        values = (rng.standard_normal(dims) * scale).astype(np.float32)
        if scalar is not None:
            values = np.array(float(scalar), dtype=np.float32).reshape(dims)
        return values.astype(ml_dtypes.bfloat16) if element == "bf16" else values
    if element in ("i32", "i64", "index"):
        dtype = np.int32 if element == "i32" else np.int64
        return np.full(dims, 0 if scalar is None else int(scalar), dtype=dtype)
    if element == "i1":
        return np.full(dims, bool(int(scalar)) if scalar is not None else False, dtype=np.bool_)
    raise SystemExit("npy_inputs: unsupported argument type %s" % typ)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mlir")
    parser.add_argument("func")
    parser.add_argument("outdir")
    parser.add_argument("--rows", type=int, default=3)
    parser.add_argument("--int", action="append", default=[], metavar="I=V")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--print-args", action="store_true")
    a = parser.parse_args()
    with open(a.mlir) as f:
        types = argument_types(f.read(), a.func)
    scalars = {}
    for item in a.int:
        index, _, value = item.partition("=")
        scalars[int(index)] = value
    os.makedirs(a.outdir, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    for i, typ in enumerate(types):
        path = os.path.join(a.outdir, "%s.arg%d.npy" % (a.func, i))
        np.save(path, make_value(typ, a.rows, rng, scalars.get(i)))
        if a.print_args:
            print("--input=@" + path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
