#!/usr/bin/env python3
"""Checks core's GPU kernel table (core/include/dsa/ABI/GpuKernels.def) against the kernel library
(compiler/lib/Conversion/DSAToGPU/Kernels.mlir): the same kernels in the same order, and each kernel's parameter
layout ("m" memref<?xT>, "q" index/i64, "w" i32/f32) equal to its gpu.func signature. Exit 1 naming each
difference, 0 with a summary line."""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
kernels_mlir = os.path.join(root, "compiler", "lib", "Conversion", "DSAToGPU", "Kernels.mlir")
table_def = os.path.join(root, "core", "include", "dsa", "ABI", "GpuKernels.def")


def layout_of(arg_type):
    t = arg_type.strip()
    if t.startswith("memref<"):
        return "m"
    if t in ("index", "i64"):
        return "q"
    if t in ("i32", "f32"):
        return "w"
    return "?(%s)" % t


def mlir_kernels(text):
    """(name, layout) of every `gpu.func @name(args) [workgroup(...)] kernel`, in order."""
    text = re.sub(r"//[^\n]*", "", text)
    out = []
    for m in re.finditer(r"gpu\.func\s+@(\w+)\s*\(", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        rest = text[i:i + 400]
        if not re.match(r"\s*(workgroup\([^)]*\)\s*)?(private\([^)]*\)\s*)?kernel\b", rest):
            continue  # a device function, not a kernel
        params = text[m.end():i - 1]
        args = [a for a in re.split(r",\s*(?=%)", params.strip()) if a.strip()]
        out.append((m.group(1), " ".join(layout_of(a.split(":", 1)[1]) for a in args)))
    return out


def table_kernels(text):
    return [(m.group(2), m.group(3)) for m in
            re.finditer(r'^DSA_GPU_KERNEL\((\w+),\s*"(\w+)",\s*"([mqw ]*)"[,)]', text, re.M)]


have = mlir_kernels(open(kernels_mlir).read())
want = table_kernels(open(table_def).read())
problems = []
if [n for n, _ in have] != [n for n, _ in want]:
    problems.append("kernel order or set differs:\n  Kernels.mlir:    %s\n  GpuKernels.def:  %s" %
                    (" ".join(n for n, _ in have), " ".join(n for n, _ in want)))
table = dict(want)
for name, layout in have:
    if name in table and table[name] != layout:
        problems.append("%s: Kernels.mlir has parameters \"%s\", GpuKernels.def says \"%s\"" % (name, layout, table[name]))
for p in problems:
    print(p)
if problems or not have:
    print("check-gpu-kernels: %d differences (%d kernels in Kernels.mlir)" % (len(problems), len(have)))
    sys.exit(1)
print("check-gpu-kernels: %d kernels, table and library agree" % len(have))
