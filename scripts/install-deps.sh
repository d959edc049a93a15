#!/usr/bin/env bash
# Installs what building and testing dsa needs on Debian 12, only when something is missing.
set -euo pipefail
pkgs=(cmake ninja-build g++ ccache lld llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
      nlohmann-json3-dev libgtest-dev libbenchmark-dev libomp-dev libssl-dev clang-22 libfuzzer-22-dev libclang-rt-22-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The Python package (python/, docs/embedding.md): nanobind and scikit-build-core to build it, numpy, ml_dtypes and
# pytest to use and test it, for python3 (the CMake option DSA_ENABLE_PYTHON is ON when python3 has nanobind);
# numpy and ml_dtypes also write the .npy inputs of test/Core/NpyTest.cpp and test/Tools.
if command -v python3 >/dev/null; then
  pips=(nanobind scikit-build-core numpy ml_dtypes pytest)
  if ! python3 -c 'import nanobind, scikit_build_core, numpy, ml_dtypes, pytest' 2>/dev/null; then
    echo "install-deps: pip-installing ${pips[*]} for $(command -v python3)"
    python3 -m pip install -q "${pips[@]}" || echo "install-deps: pip failed: the Python package is not built" >&2
  fi
fi
