#!/usr/bin/env bash
# The golden replay path on GPU step libraries, without a GPU (CTest GoldenGpuLibraries):
#   dsa-run --golden FILE --emit-libraries=DIR --backend=gpu   compiles every layer of the tiny golden;
#   dsa-golden on them without a driver                      fails with the no-driver error (exit status 2);
#   dsa-golden on them with the test double driver           runs every layer and step to the end (exit status 1:
#                                                            the double computes nothing, so captures fail, but no
#                                                            step errors out);
#   dsa-run --backend=gpu without --emit-libraries            is an error naming what to do.
# Usage: golden-gpu-libraries.sh BIN_DIR FAKE_DRIVER GOLDEN_JSON. Prints "N passed, M failed".
set -uo pipefail
bin=$(realpath "$1") fake=$(realpath "$2") golden=$(realpath "$3")
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda/bin/ptxas" ] || [ ! -f "$cuda/nvvm/libdevice/libdevice.10.bc" ]; then
  echo "SKIPPED: no CUDA toolkit at $cuda"
  echo "0 passed, 0 failed"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
check() { # $1: name, $2: 0 if ok
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "ok: $1"; else failed=$((failed + 1)); echo "FAILED: $1"; fi
}

"$bin/dsa-run" --golden "$golden" --emit-libraries="$tmp/libs" --backend=gpu >"$tmp/emit.log" 2>&1
check "emit six GPU step libraries" $(( $? != 0 || $(grep -c '^wrote .*attention_L[0-5].json' "$tmp/emit.log") != 6 ))
grep -q '"format": "dsa-gpu-step-library"' "$tmp/libs/attention_L2.json"
check "the descriptions are GPU step descriptions" $?

mkdir -p "$tmp/nodriver"
LD_LIBRARY_PATH="$tmp/nodriver" "$bin/dsa-golden" --golden "$golden" --libraries "$tmp/libs" >"$tmp/nodrv.log" 2>&1
status=$?
if dlerr=$(LD_LIBRARY_PATH="$tmp/nodriver" ldconfig -p 2>/dev/null | grep -c 'libcuda.so.1'); [ "$dlerr" -gt 0 ]; then
  echo "(a libcuda.so.1 is installed: the no-driver case is not checked here)"
else
  grep -q 'dsa-golden: error: layer 0 (a GPU step library): CUDA driver not available' "$tmp/nodrv.log"
  check "no driver: a clear error, exit status 2" $(( $? != 0 || status != 2 ))
fi

mkdir -p "$tmp/fake"
ln -s "$fake" "$tmp/fake/libcuda.so.1"
LD_LIBRARY_PATH="$tmp/fake" "$bin/dsa-golden" --golden "$golden" --libraries "$tmp/libs" >"$tmp/fake.log" 2>&1
status=$?
grep -qE '^golden: [0-9]+ passed, [0-9]+ failed' "$tmp/fake.log"
check "test double driver: every layer and step runs to the verdict line (exit status 1)" $(( $? != 0 || status != 1 ))
grep -E '^golden: ' "$tmp/fake.log"

"$bin/dsa-run" --golden "$golden" --backend=gpu >"$tmp/noemit.log" 2>&1
status=$?
grep -q 'dsa-run: error: --backend=gpu needs --emit-libraries=DIR' "$tmp/noemit.log"
check "--backend=gpu without --emit-libraries is an error" $(( $? != 0 || status != 2 ))

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
