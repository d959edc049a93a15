#!/usr/bin/env python3
"""Turns the barrier-free kernels of Kernels.mlir into CPU functions, for running them with mlir-runner.

  kernels-on-cpu.py KERNELS.mlir DRIVER.mlir > out.mlir

Every `gpu.func @k(ARGS) kernel` without workgroup memory or barriers becomes `func.func @k(%dsa_gid: index, ARGS)`
(`gpu.global_id x` is %dsa_gid, `gpu.return` is `return`), so a driver can call it once per global thread id.
A kernel that synchronises but is written for any block size (it strides by `gpu.block_dim x`) becomes
`func.func @k(%dsa_bid: index, ARGS)` run as a ONE-thread block: thread id 0, block size 1, barriers dropped (with one
thread they order nothing), workgroup/private memory as allocas; a driver calls it once per block. Kernels tied to a
block shape (the 16x16 GEMM) are left out here; every kernel, the GEMM included, runs at its real block and grid
sizes on the host emulator (dsa-gpu-to-host-emulation, test/Runtime/Cuda/CudaKernelsOnCpuTest.cpp). libdevice's
__nv_fsqrt_rn becomes math.sqrt (both IEEE round-to-nearest). The device helpers (func.func) are kept; the driver's
text (its functions) is appended inside the same module.
"""
import re
import sys


def strip_space(text):
    """Drops the GPU memory spaces (the CPU has one)."""
    return re.sub(r", #gpu\.address_space<(workgroup|private)>", "", text)


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
        synchronises = bool(m.group(3)) or "gpu.barrier" in text
        if synchronises and "gpu.block_dim x" in text and "gpu.thread_id y" not in text:
            inner = body[m.end():end - len("  }\n")]
            allocas = ""
            for kind, attrs in re.findall(r"(workgroup|private)\((.*?)\)\s*(?=workgroup|private|kernel)", m.group(0),
                                          re.S):
                for name, ty in re.findall(r"(%\w+): (memref<[^>]*<[^>]*>>)", attrs):
                    allocas += "    %s = memref.alloca() : %s\n" % (name, strip_space(ty))
            inner = re.sub(r"(%\w+) = gpu\.block_id x", r"\1 = arith.addi %dsa_bid, %dsa_c0 : index", inner)
            inner = re.sub(r"(%\w+) = gpu\.thread_id x", r"\1 = arith.constant 0 : index", inner)
            inner = re.sub(r"(%\w+) = gpu\.block_dim x", r"\1 = arith.constant 1 : index", inner)
            inner = re.sub(r"\n\s*gpu\.barrier\n", "\n", inner)
            inner = re.sub(r"llvm\.call @__nv_fsqrt_rn\((%\w+)\) : \(f32\) -> f32", r"math.sqrt \1 : f32", inner)
            inner = strip_space(inner.replace("gpu.return", "return"))
            out.append("  func.func @%s(%%dsa_bid: index, %s) {\n    %%dsa_c0 = arith.constant 0 : index\n%s%s  }\n"
                       % (m.group(1), m.group(2), allocas, inner))
        elif synchronises:
            out.append("  // (%s is tied to its block shape: left out)\n" % m.group(1))
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
