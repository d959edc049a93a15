#!/usr/bin/env python3
"""Fails on a dependency that points upward in dsa's layers (docs/architecture.md "Layers").

The layers, lowest first, and what each may use (its own headers included):

    core      core/       Result, Numerics, Tensor, RoPE table, the ABI (error codes, runtime functions, GPU kernels)
    kernels   kernels/    the reference kernels                        -> core
    golden    golden/     golden files and the tiny-model harness     -> core, kernels
    runtime   runtime/    host/ (backend-neutral), cpu/, cuda/         -> core (cpu/ and cuda/ also -> runtime/host)
              capi/ (the C API over the runtime)          -> core, runtime/host, runtime/cpu, runtime/cuda
    compiler  compiler/   dialect, transforms, conversions, backends  -> core, kernels, runtime
    tools, bench, test, examples, python: anything

Two checks, each over the tree given by --root (default: the repository):
  1. every `#include "..."` of a C/C++ source or header under a layer's folder that names a file of this project
     (relative to the file, or "dsa/..." under a layer's include/ folder) resolves to a header of an allowed layer;
     a "dsa/..." include that resolves nowhere is an error unless it is a TableGen output (*.inc) of the compiler;
  2. every DSA* library a layer's CMakeLists.txt links (target_link_libraries) is defined in an allowed layer.
Exit status 1 and one line per violation ("FILE:LINE: <layer> includes <header> of <layer>"); 0 and a summary line
otherwise.
"""
import argparse
import os
import re
import sys

LAYER_DIRS = {  # folder (relative to the root) -> layer name; runtime's sub-layers are their own
    "core": "core",
    "kernels": "kernels",
    "golden": "golden",
    "runtime/host": "runtime/host",
    "runtime/cpu": "runtime/cpu",
    "runtime/cuda": "runtime/cuda",
    "runtime/capi": "runtime/capi",
    "runtime": "runtime/host",  # runtime/CMakeLists.txt and anything directly under runtime/
    "compiler": "compiler",
}
ALLOWED = {
    "core": {"core"},
    "kernels": {"core", "kernels"},
    "golden": {"core", "kernels", "golden"},
    "runtime/host": {"core", "runtime/host"},
    "runtime/cpu": {"core", "runtime/host", "runtime/cpu"},
    "runtime/cuda": {"core", "runtime/host", "runtime/cuda"},
    "runtime/capi": {"core", "runtime/host", "runtime/cpu", "runtime/cuda", "runtime/capi"},
    "compiler": {"core", "kernels", "runtime/host", "runtime/cpu", "runtime/cuda", "compiler"},
}
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cc", ".c", ".def", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(root, path):
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    best = None
    for d, layer in LAYER_DIRS.items():
        if rel == d or rel.startswith(d + "/"):
            if best is None or len(d) > len(best[0]):
                best = (d, layer)
    return best[1] if best else None  # None: tools, bench, test, ... (may use anything)


def include_roots(root):
    roots = []
    for d in LAYER_DIRS:
        inc = os.path.join(root, d, "include")
        if os.path.isdir(inc) and inc not in roots:
            roots.append(inc)
    return roots


def sources(root, top):
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
        dirnames[:] = [d for d in dirnames if d not in ("build", ".git")]
        for f in filenames:
            if f.endswith(SOURCE_EXT):
                yield os.path.join(dirpath, f)


def check_includes(root, violations):
    roots = include_roots(root)
    checked = 0
    for top in sorted(set(d.split("/")[0] for d in LAYER_DIRS)):
        for path in sources(root, top):
            layer = layer_of(root, path)
            if layer is None:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE_RE.match(line)
                    if not m:
                        continue
                    checked += 1
                    name = m.group(1)
                    target = None
                    local = os.path.join(os.path.dirname(path), name)
                    if os.path.isfile(local):
                        target = local
                    else:
                        for r in roots:
                            if os.path.isfile(os.path.join(r, name)):
                                target = os.path.join(r, name)
                                break
                    rel = os.path.relpath(path, root)
                    if target is None:
                        if not name.startswith("dsa/"):
                            continue  # a header of another project (mlir/, llvm/, nlohmann/, ...)
                        if name.endswith(".inc") and layer == "compiler":
                            continue  # TableGen output of compiler/include (in the build tree)
                        violations.append("%s:%d: %s includes \"%s\", which is no header of any layer" %
                                          (rel, lineno, layer, name))
                        continue
                    target_layer = layer_of(root, target)
                    if target_layer not in ALLOWED[layer]:
                        violations.append("%s:%d: %s includes \"%s\" of %s (%s may use: %s)" %
                                          (rel, lineno, layer, name, target_layer, layer,
                                           ", ".join(sorted(ALLOWED[layer]))))
    return checked


CMAKE_CALL_RE = re.compile(r"\b(add_library|target_link_libraries)\s*\(([^)]*)\)", re.S)


def check_links(root, violations):
    defined = {}  # library -> layer
    links = []  # (file, line, layer, library, dependency)
    for top in sorted(set(d.split("/")[0] for d in LAYER_DIRS)):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if d not in ("build", ".git")]
            if "CMakeLists.txt" not in filenames:
                continue
            path = os.path.join(dirpath, "CMakeLists.txt")
            layer = layer_of(root, path)
            text = open(path, encoding="utf-8").read()
            text = re.sub(r"#[^\n]*", "", text)
            for m in CMAKE_CALL_RE.finditer(text):
                words = m.group(2).split()
                if not words:
                    continue
                line = text.count("\n", 0, m.start()) + 1
                if m.group(1) == "add_library":
                    defined[words[0]] = layer
                else:
                    for dep in words[1:]:
                        if dep.startswith("DSA"):
                            links.append((os.path.relpath(path, root), line, layer, words[0], dep))
    for rel, line, layer, lib, dep in links:
        dep_layer = defined.get(dep)
        if dep_layer is not None and layer is not None and dep_layer not in ALLOWED[layer]:
            violations.append("%s:%d: %s library %s links %s of %s (%s may use: %s)" %
                              (rel, line, layer, lib, dep, dep_layer, layer, ", ".join(sorted(ALLOWED[layer]))))
    return len(links)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = parser.parse_args()
    violations = []
    includes = check_includes(args.root, violations)
    links = check_links(args.root, violations)
    for v in violations:
        print(v)
    if violations:
        print("check-layers: %d upward or unresolved dependencies" % len(violations))
        return 1
    print("check-layers: %d includes and %d library links, none upward" % (includes, links))
    return 0


if __name__ == "__main__":
    sys.exit(main())
