#!/usr/bin/env bash
# Configures (once) the fuzz build ${DSA_FUZZ_BUILD_DIR:-build-fuzz}: the whole project (MLIR side included) with
# Debian's clang-22, -fsanitize=fuzzer-no-link,address,undefined (UBSan not recoverable: any report aborts), Release,
# the fuzz targets linked with libFuzzer (DSA_ENABLE_FUZZERS=ON) and the tests configured (DSA_ENABLE_TESTS=ON: nothing
# is built unless named, scripts/sanitize-compiler.sh builds and runs the compiler backends' tests from it).
# Used by scripts/fuzz.sh and scripts/sanitize-compiler.sh; builds nothing. A build dir configured before the tests
# were (DSA_ENABLE_TESTS=OFF) is reconfigured with them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fz=${DSA_FUZZ_BUILD_DIR:-$root/build-fuzz}
bash "$root/scripts/install-deps.sh"
if ! command -v clang++-22 >/dev/null; then
  echo "fuzz: clang++-22 not found (scripts/install-deps.sh installs clang-22 and libfuzzer-22-dev)" >&2
  exit 1
fi
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -gline-tables-only"
if [ ! -f "$fz/build.ninja" ] || grep -q '^DSA_ENABLE_TESTS:BOOL=OFF' "$fz/CMakeCache.txt" 2>/dev/null; then
  echo "fuzz: configuring $fz (clang-22, libFuzzer, ASan + UBSan)" >&2
  mkdir -p "$fz"
  cmake -S "$root" -B "$fz" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 -DDSA_ENABLE_FUZZERS=ON -DDSA_ENABLE_TESTS=ON \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >"$fz/configure.log" 2>&1 ||
    { cat "$fz/configure.log"; exit 1; }
fi
