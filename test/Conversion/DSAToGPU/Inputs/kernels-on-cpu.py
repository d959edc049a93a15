#!/usr/bin/env python3
"""Turns the barrier-free kernels of Kernels.mlir into CPU functions, for running them with mlir-runner.

  kernels-on-cpu.py KERNELS.mlir DRIVER.mlir > out.mlir

Every `gpu.func @k(ARGS) kernel` without workgroup memory or barriers becomes `func.func @k(%dsa_gid: index, ARGS)`
(`gpu.global_id x` is %dsa_gid, `gpu.return` is `return`), so a driver can call it once per global thread id; the
device helpers (func.func) are kept as they are. Kernels that synchronise (gpu.barrier) are left out: they need a
GPU (test/unit/CudaKernelsTest.cpp). The driver's text (its functions) is appended inside the same module.
"""
import re
import sys


def main():
    kernels = open(sys.argv[1]).read()
    driver = open(sys.argv[2]).read()
    start = kernels.index("gpu.module @dsa_kernels {")
    body = kernels[start + len("gpu.module @dsa_kernels {"):kernels.rindex("}")]
    out = []
    pos = 0
    pattern = re.compile(r"gpu\.func @(\w+)\((.*?)\)\s*((?:workgroup|private)\(.*?\)\s*)*kernel \{", re.S)
    while True:
        m = pattern.search(body, pos)
        if not m:
            out.append(body[pos:])
            break
        out.append(body[pos:m.start()])
        # The kernel's body ends at its `gpu.return` followed by the closing brace at the kernel's indentation.
        end = body.index("\n  }\n", m.end()) + len("\n  }\n")
        text = body[m.start():end]
        if m.group(3) or "gpu.barrier" in text:
            out.append("  // (%s synchronises: left out)\n" % m.group(1))
        else:
            inner = body[m.end():end - len("  }\n")]
            inner = re.sub(r"(%\w+) = gpu\.global_id x", r"\1 = arith.addi %dsa_gid, %dsa_c0 : index", inner)
            inner = inner.replace("gpu.return", "return")
            out.append("  func.func @%s(%%dsa_gid: index, %s) {\n    %%dsa_c0 = arith.constant 0 : index%s  }\n"
                       % (m.group(1), m.group(2), inner))
        pos = end
    text = "".join(out)
    # libdevice is not available on the CPU (and no barrier-free kernel calls it).
    text = re.sub(r"\n\s*llvm\.func @__nv_\w+\([^)]*\) -> \w+\n", "\n", text)
    print("module {")
    print(text)
    print(driver)
    print("}")


if __name__ == "__main__":
    main()
