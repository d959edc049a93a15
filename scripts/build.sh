#!/usr/bin/env bash
# Configures (once) and builds dsa into ${DSA_BUILD_DIR:-build}.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DSA_BUILD_DIR:-$root/build}
bash "$root/scripts/install-deps.sh"
if [ ! -f "$build/build.ninja" ]; then
  echo "build: configuring $build (a first build takes about 10-20 minutes on 2 cores)" >&2
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
fi
cmake --build "$build" -j "${DSA_JOBS:-$(nproc)}"
