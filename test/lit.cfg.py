# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "DSA"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dsa_obj_root, "test")

config.substitutions.append(("%golden_dir", os.path.join(config.dsa_src_root, "test", "Golden")))
# The debug golden with every capture in full (../shared/golden, outside the repository; README.md): tests that need
# it say REQUIRES: full-golden and are UNSUPPORTED without it.
_full_golden = os.path.normpath(os.path.join(config.dsa_src_root, "..", "shared", "golden",
                                             "ds41_tiny_golden_full.json"))
if os.path.exists(_full_golden):
    config.available_features.add("full-golden")
    config.substitutions.append(("%full_golden", _full_golden))
config.substitutions.append(("%PATH%", config.environment["PATH"]))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.dsa_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["dsa-opt", "dsa-run", "dsa-compile"], tool_dirs)
# Upstream mlir-opt (the LLVM installation's, never dsa-opt) and the dsa plugin it loads (test/Plugin).
config.substitutions.append(("%mlir_opt", os.path.join(config.llvm_tools_dir, "mlir-opt")))
config.substitutions.append(("%dsa_plugin", os.path.join(config.dsa_obj_root, "lib",
                                                         "libDSAPlugin" + (config.llvm_shlib_ext or ".so"))))
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.dsa_tools_dir, append_path=True)

# GPU backend tests (test/Conversion/DSAToGPU): the PTX of a gpu.binary (%extract_ptx) and the CUDA toolkit's
# assembler (%ptxas, feature "ptxas"; tests that need it are UNSUPPORTED without it).
import shutil
import sys

config.substitutions.append(
    ("%extract_ptx", '"%s" "%s"' % (sys.executable, os.path.join(config.dsa_src_root, "scripts", "extract-ptx.py"))))
_cuda_bin = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin")
_ptxas = shutil.which("ptxas", path=os.pathsep.join([_cuda_bin, os.environ.get("PATH", "")]))
if _ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", _ptxas))

# The barrier-free GPU kernels also run on the CPU through mlir-runner (test/Conversion/DSAToGPU/kernels-cpu.mlir).
_llvm_lib_dir = os.path.join(os.path.dirname(config.llvm_tools_dir.rstrip("/")), "lib")
_shlib_ext = config.llvm_shlib_ext or (".dylib" if sys.platform == "darwin" else ".so")
_runner_libs = [os.path.join(_llvm_lib_dir, "lib%s%s" % (n, _shlib_ext))
                for n in ("mlir_runner_utils", "mlir_c_runner_utils")]
if shutil.which("mlir-runner", path=config.llvm_tools_dir) and all(os.path.exists(l) for l in _runner_libs):
    config.available_features.add("mlir-runner")
    config.substitutions.append(("%mlir_runner_utils", _runner_libs[0]))
    config.substitutions.append(("%mlir_c_runner_utils", _runner_libs[1]))

# A python3 with numpy and ml_dtypes (test/Tools: .npy inputs and outputs of dsa-run; bf16 as ml_dtypes stores it):
# %numpy_python, feature "numpy". lit's own interpreter may lack them; CMake's python3 (DSA_PYTHON3, where
# scripts/install-deps.sh installs them) is tried first. The real executable is substituted (not a pyenv shim).
import subprocess

for _candidate in [getattr(config, "dsa_python3", ""), sys.executable, shutil.which("python3") or ""]:
    if not _candidate or _candidate.endswith("NOTFOUND"):
        continue
    try:
        _probe = subprocess.run([_candidate, "-c", "import sys, numpy, ml_dtypes; print(sys.executable)"],
                                capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        continue
    if _probe.returncode == 0 and _probe.stdout.strip():
        config.available_features.add("numpy")
        config.substitutions.append(("%numpy_python", _probe.stdout.strip()))
        break
else:
    lit_config.note("no python3 with numpy and ml_dtypes: test/Tools tests that need them are UNSUPPORTED "
                    "(scripts/install-deps.sh installs them)")
