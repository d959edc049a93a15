#!/usr/bin/env bash
# Every test: build if needed, the sanitizer check of the MLIR-free part (scripts/sanitize.sh), the bounded fuzzer
# runs (scripts/fuzz.sh), the sanitizer check of the compiler's CPU and GPU backends in the fuzz build
# (scripts/sanitize-compiler.sh), then CTest runs the GoogleTest unit tests and the lit suite. CTest's closing line
# ("100% tests passed, 0 tests failed out of N") is the verdict.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DSA_BUILD_DIR:-$root/build}
bash "$root/scripts/build.sh"
# The MLIR-free part again under ASan + UBSan (scripts/sanitize.sh; DSA_SKIP_SANITIZE=1 skips it). It runs first so
# that CTest's summary of the main suite stays the closing line.
if [ "${DSA_SKIP_SANITIZE:-0}" != 1 ]; then
  bash "$root/scripts/sanitize.sh"
fi
# The fuzzers, each for $DSA_FUZZ_SECONDS seconds (scripts/fuzz.sh; DSA_SKIP_FUZZ=1 skips them).
if [ "${DSA_SKIP_FUZZ:-0}" != 1 ]; then
  bash "$root/scripts/fuzz.sh" --seconds "${DSA_FUZZ_SECONDS:-60}"
fi
# The CPU JIT/AOT backend and the GPU lowering and step libraries under ASan + UBSan, in the fuzz build
# (scripts/sanitize-compiler.sh; DSA_SKIP_SANITIZE=1 skips it too).
if [ "${DSA_SKIP_SANITIZE:-0}" != 1 ]; then
  bash "$root/scripts/sanitize-compiler.sh"
fi
cd "$build"
ctest --output-on-failure -j "${DSA_JOBS:-$(nproc)}"
