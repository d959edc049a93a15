#!/usr/bin/env bash
# Installs what building and testing dsa needs on Debian 12, only when something is missing.
set -euo pipefail
pkgs=(cmake ninja-build g++ ccache lld llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
      nlohmann-json3-dev libgtest-dev libbenchmark-dev libomp-dev clang-22 libfuzzer-22-dev libclang-rt-22-dev)
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
# numpy and ml_dtypes for python3: .npy files in the tests (test/Core/NpyTest.cpp writes bf16 files with them;
# test/Tools generates dsa-run's inputs). Installed only when missing.
if command -v python3 >/dev/null && ! python3 -c "import numpy, ml_dtypes" 2>/dev/null; then
  echo "install-deps: installing numpy ml_dtypes (pip, for python3)"
  python3 -m pip install -q numpy ml_dtypes
fi
