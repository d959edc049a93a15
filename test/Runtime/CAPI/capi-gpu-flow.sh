#!/usr/bin/env bash
# The C API on GPU step libraries without a GPU (CTest CApiGpuFlowOnFakeDriver): dsa-run writes the tiny golden's GPU
# step libraries (--backend=gpu), then CApiGoldenTest (a C program on dsa-c/runtime.h) opens layer 0's
#   - without a driver: dsa_library_open fails with DSA_STATUS_UNAVAILABLE naming the missing libcuda.so.1 (exit 2);
#   - on the test double driver (test/Backend/GPU/FakeCudaDriver.c, which computes nothing: --flow-only, the numbers
#     are judged on a GPU): every C API call of the prefill and two decodes succeeds, the refused step changes
#     nothing, kernels are launched, and at exit every device allocation, stream and module is released.
# Usage: capi-gpu-flow.sh DSA_RUN CAPI_GOLDEN_TEST FAKE_DRIVER GOLDEN_JSON. Prints "c api gpu flow: OK"; exits 77
# (CTest's SKIP_RETURN_CODE) without a CUDA toolkit to compile the libraries.
set -euo pipefail
dsarun=$(realpath "$1") prog=$(realpath "$2") fake=$(realpath "$3") golden=$(realpath "$4")
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda/bin/ptxas" ] || [ ! -f "$cuda/nvvm/libdevice/libdevice.10.bc" ]; then
  echo "SKIPPED: no CUDA toolkit (ptxas, libdevice) at $cuda"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$dsarun" --golden "$golden" --emit-libraries="$tmp/libs" --backend=gpu >"$tmp/emit.log" 2>&1
grep -q '"format": "dsa-gpu-step-library"' "$tmp/libs/attention_L0.json"

mkdir -p "$tmp/nodriver" "$tmp/fake"
if ! LD_LIBRARY_PATH="$tmp/nodriver" ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1'; then
  status=0
  LD_LIBRARY_PATH="$tmp/nodriver" "$prog" "$golden" "$tmp/libs" >"$tmp/nodrv.log" 2>&1 || status=$?
  cat "$tmp/nodrv.log"
  [ "$status" -eq 2 ]
  grep -q "dsa_library_open: UNAVAILABLE: .*attention_L0.json: CUDA driver not available: dlopen(libcuda.so.1)" \
    "$tmp/nodrv.log"
fi

ln -s "$fake" "$tmp/fake/libcuda.so.1"
DSA_FAKE_CUDA_LOG="$tmp/fake-driver.log" LD_LIBRARY_PATH="$tmp/fake" "$prog" "$golden" "$tmp/libs" --flow-only \
  | tee "$tmp/fake.log"
grep -q "^layer 0: cuda step library for sm_" "$tmp/fake.log"
grep -qE "^c api golden: [0-9]+ passed, 0 failed" "$tmp/fake.log"
[ "$(grep -c '^launch ' "$tmp/fake-driver.log")" -gt 0 ]
grep -qx 'exit launches [0-9]* live_allocations 0 live_streams 0 loaded_modules 0' "$tmp/fake-driver.log"
echo "c api gpu flow: OK"
