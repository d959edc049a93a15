#!/usr/bin/env bash
# The main job: build if needed, then replay DeepSeek's golden through the dsa dialect and print one verdict per
# capture and a summary line. Exit status 0 iff every compared capture passes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DSA_BUILD_DIR:-$root/build}
# Build progress goes to stderr so that stdout holds only the verdicts.
bash "$root/scripts/build.sh" >&2
exec "$build/bin/dsa-run" --golden "$root/test/Golden/ds41_tiny_golden.json" "$@"
