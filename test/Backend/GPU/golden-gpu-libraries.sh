#!/usr/bin/env bash
# The golden replay path on GPU step libraries, without a GPU (CTest GoldenGpuLibrariesFlowOnFakeDriver):
#   dsa-run --golden FILE --emit-libraries=DIR --backend=gpu   compiles every layer of the tiny golden;
#   dsa-golden on them without a driver                      fails with the no-driver error (exit status 2);
#   dsa-golden on them with the test double driver           runs every layer and step to the end. The double
#       (FakeCudaDriver.c) computes nothing, so the NUMBERS are not judged here (that needs a GPU: gpu-check.sh);
#       what it can show is: every capture the interpreter judges gets a verdict, in the same order, none of them a
#       shape or element-kind mismatch (the step results have the captures' shapes and types), no step errors out
#       (exit status 0 or 1, never 2), every launch has a non-empty grid and block, and at exit every device
#       allocation, stream and module is released (the double's DSA_FAKE_CUDA_LOG);
#   dsa-run --backend=gpu without --emit-libraries            is an error naming what to do.
# Usage: golden-gpu-libraries.sh BIN_DIR FAKE_DRIVER GOLDEN_JSON. Prints "N passed, M failed"; exits 77 (CTest's
# SKIP_RETURN_CODE) without a CUDA toolkit.
set -uo pipefail
bin=$(realpath "$1") fake=$(realpath "$2") golden=$(realpath "$3")
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda/bin/ptxas" ] || [ ! -f "$cuda/nvvm/libdevice/libdevice.10.bc" ]; then
  echo "SKIPPED: no CUDA toolkit (ptxas, libdevice) at $cuda"
  exit 77
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
DSA_FAKE_CUDA_LOG="$tmp/fake-driver.log" LD_LIBRARY_PATH="$tmp/fake" \
  "$bin/dsa-golden" --golden "$golden" --libraries "$tmp/libs" >"$tmp/fake.log" 2>&1
status=$?
grep -E '^golden: ' "$tmp/fake.log"
check "test double driver: every layer and step runs to the verdict line (exit status 0 or 1, not 2)" \
  $(( status > 1 || $(grep -cE '^golden: [0-9]+ passed, [0-9]+ failed' "$tmp/fake.log") != 1 ))
# The captures judged, in order (regime and name), as the interpreter's replay of the same golden judges them.
"$bin/dsa-run" --golden "$golden" >"$tmp/interp.log" 2>&1
names() { grep -E '^(PASS|FAIL|SKIP) ' "$1" | awk '{print $2, $3}'; }
names "$tmp/interp.log" >"$tmp/interp.names"
names "$tmp/fake.log" >"$tmp/fake.names"
cmp -s "$tmp/interp.names" "$tmp/fake.names" && [ -s "$tmp/interp.names" ]
check "test double driver: the same $(wc -l <"$tmp/interp.names") captures judged as by the interpreter, in order" $?
! grep -qE ' -- (shape mismatch|element kind mismatch|got .* holds )' "$tmp/fake.log"
check "test double driver: every step result has its capture's shape and element kind" $?
launches=$(grep -c '^launch ' "$tmp/fake-driver.log")
bad=$(grep '^launch ' "$tmp/fake-driver.log" | awk '$3 < 1 || $4 < 1 || $5 < 1 || $7 < 1 || $8 < 1 || $9 < 1' | wc -l)
check "test double driver: $launches launches, each with a non-empty grid and block" $(( launches == 0 || bad != 0 ))
grep -qx 'exit launches [0-9]* live_allocations 0 live_streams 0 loaded_modules 0' "$tmp/fake-driver.log"
check "test double driver: every allocation, stream and module released at exit ($(grep '^exit' "$tmp/fake-driver.log"))" $?

"$bin/dsa-run" --golden "$golden" --backend=gpu >"$tmp/noemit.log" 2>&1
status=$?
grep -q 'dsa-run: error: --backend=gpu needs --emit-libraries=DIR' "$tmp/noemit.log"
check "--backend=gpu without --emit-libraries is an error" $(( $? != 0 || status != 2 ))

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
