"""The compiler: parse, verify and print modules, run pass pipelines, write CPU and GPU step libraries.

    m = dsa.compiler.parse_file("test/Conversion/DSAToCPU/pipeline.mlir")
    m.verify(); print(m)
    m.run_pipeline("dsa-decompose-attention, canonicalize")      # or "builtin.module(...)"; in place
    path = dsa.compiler.compile_cpu(m, out_dir, "layer")         # out_dir/layer.{o,so,json}: the description's path

Modules are dsa._dsa.Module objects: print(generic=False), str(m), verify(), clone(), run_pipeline(pipeline),
functions (names). Every dsa pass and pipeline (dsa-decompose-attention, dsa-cpu-pipeline, dsa-gpu-pipeline, ...)
and upstream's are registered. Errors raise dsa.Error with the MLIR diagnostics.
"""
import os

from . import _dsa

Module = _dsa.Module


def parse(text, source_name="<string>"):
    """Parses a module in MLIR's textual form (any registered dialect, dsa included)."""
    return _dsa.parse(text, source_name)


def parse_file(path):
    with open(path) as f:
        return _dsa.parse(f.read(), str(path))


def _base_name(module, base_name):
    if base_name is not None:
        return base_name
    names = module.functions
    if len(names) != 1:
        raise _dsa.Error(f"base_name: the module has {len(names)} functions ({', '.join(names)}): name the library")
    return names[0]


def compile_cpu(module, directory, base_name=None, cpu="", parallel=False, probes=False, opt_level=2):
    """Writes a CPU step library of `module` (dsa::cpu::emitCPUStepLibrary): DIR/BASE.{o,so,json}; returns the JSON
    description's path, which dsa.runtime.StepLibrary loads. `cpu`: "host", an LLVM CPU name ("x86-64-v3"), or ""
    ($DSA_CPU, else the host). `probes`: keep dsa.probe values as results. base_name: default the function's name
    when the module has one. Needs the system C compiler `cc` (the link)."""
    os.makedirs(directory, exist_ok=True)
    return _dsa.compile_cpu(module, str(directory), _base_name(module, base_name), cpu, parallel, probes, opt_level)


def compile_gpu(module, directory, base_name=None, chip="sm_90", format="bin", probes=False):
    """Writes a GPU step library (dsa::gpu::emitGPUStepLibrary, docs/gpu-backend.md): DIR/BASE.{o,so,json} for
    `chip`; `format` "bin" (cubin, needs ptxas), "isa" (PTX) or "fatbin". Returns the description's path; the
    MLIR-free dsa-golden / CUDA runtime runs it on a GPU machine."""
    os.makedirs(directory, exist_ok=True)
    return _dsa.compile_gpu(module, str(directory), _base_name(module, base_name), chip, format, probes)
