#!/usr/bin/env bash
# Every test: build if needed, then CTest runs the GoogleTest unit tests and the lit suite. CTest's closing line
# ("100% tests passed, 0 tests failed out of N") is the verdict.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DSA_BUILD_DIR:-$root/build}
bash "$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j "${DSA_JOBS:-$(nproc)}"
