#!/usr/bin/env bash
# ASan + UBSan check of the MLIR-free part (numerics, reference kernels, golden harness, runtime, dsa-golden): builds
# it with -fsanitize=address,undefined (-fno-sanitize-recover: any report fails) into
# ${DSA_SANITIZE_BUILD_DIR:-build-sanitize}, runs its CTest suite (unit tests of the kernels, golden reader/filler/
# comparator/tiny model, CPU and GPU runtime on the test double driver), then the sanitized dsa-golden replays the
# whole golden on the CPU step libraries and on the GPU step libraries (test double driver) that the main build
# (${DSA_BUILD_DIR:-build}, built first) emits, and the C API's tests (test/Runtime/CAPI) on the CPU ones. Called by
# scripts/test.sh; a few minutes on 2 cores (ccache).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
main=${DSA_BUILD_DIR:-$root/build}
san=${DSA_SANITIZE_BUILD_DIR:-$root/build-sanitize}
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
if [ ! -f "$san/build.ninja" ]; then
  echo "sanitize: configuring $san (ASan + UBSan, MLIR-free)" >&2
  mkdir -p "$san"
  cmake -S "$root" -B "$san" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSA_ENABLE_MLIR=OFF \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_MODULE_LINKER_FLAGS="-fsanitize=address,undefined" \
    >"$san/configure.log" 2>&1 || { cat "$san/configure.log"; exit 1; }
fi
cmake --build "$san" -j "${DSA_JOBS:-$(nproc)}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "sanitize: the MLIR-free test suite under ASan + UBSan" >&2
ctest --test-dir "$san" -j "${DSA_JOBS:-$(nproc)}" --output-on-failure >"$san/ctest.log" 2>&1 ||
  { cat "$san/ctest.log"; echo "sanitize: FAILED (the MLIR-free suite, log above)" >&2; exit 1; }
grep -E 'tests passed' "$san/ctest.log" | sed 's/^/sanitize: /' >&2

golden=$root/test/Golden/ds41_tiny_golden.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$main/bin/dsa-run" --golden "$golden" --emit-libraries="$tmp/cpu" >"$tmp/emit-cpu.log" 2>&1 ||
  { cat "$tmp/emit-cpu.log"; exit 1; }
echo "sanitize: dsa-golden (ASan + UBSan) on the CPU step libraries" >&2
"$san/bin/dsa-golden" --golden "$golden" --libraries "$tmp/cpu" >"$tmp/cpu.log" 2>&1 ||
  { cat "$tmp/cpu.log"; echo "sanitize: FAILED (dsa-golden on the CPU step libraries)" >&2; exit 1; }
grep -E '^golden: ' "$tmp/cpu.log" | sed 's/^/sanitize: /' >&2
# The batch libraries of the CTest fixture CApiLibraries (test/Runtime/CAPI/CMakeLists.txt), which CApiErrorsTest reads.
for layer in "$root/test/Tools/Inputs/batched-window-layer.mlir" "$root/test/Conversion/DSAToGPU/Inputs/window-layer.mlir" \
  "$root/test/Tools/Inputs/batched-compressed-layer.mlir"; do
  "$main/bin/dsa-compile" "$layer" --target=cpu -o "$tmp/batch" >>"$tmp/emit-batch.log" 2>&1 ||
    { cat "$tmp/emit-batch.log"; exit 1; }
done
echo "sanitize: the C API (ASan + UBSan) on the CPU step libraries: CApiGoldenTest, CApiErrorsTest, CApiBatchTest" >&2
"$san/test/Runtime/CAPI/CApiGoldenTest" "$golden" "$tmp/cpu" >"$tmp/capi.log" 2>&1 &&
  DSA_CAPI_LIBRARIES="$tmp/cpu" DSA_CAPI_BATCH_LIBRARIES="$tmp/batch" "$san/test/Runtime/CAPI/CApiErrorsTest" \
    >>"$tmp/capi.log" 2>&1 &&
  "$san/test/Runtime/CAPI/CApiBatchTest" "$tmp/batch/batched-window-layer.json" "$tmp/batch/window-layer.json" \
    >>"$tmp/capi.log" 2>&1 ||
  { cat "$tmp/capi.log"; echo "sanitize: FAILED (the C API tests)" >&2; exit 1; }
grep -E '^c api golden: |^c api batch: |^\[  PASSED  \]' "$tmp/capi.log" | sed 's/^/sanitize: /' >&2
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ -x "$cuda/bin/ptxas" ] && [ -f "$cuda/nvvm/libdevice/libdevice.10.bc" ]; then
  "$main/bin/dsa-run" --golden "$golden" --emit-libraries="$tmp/gpu" --backend=gpu >"$tmp/emit-gpu.log" 2>&1 ||
    { cat "$tmp/emit-gpu.log"; exit 1; }
  mkdir -p "$tmp/fake"
  ln -s "$san/test/Backend/GPU/libdsa-fake-cuda.so" "$tmp/fake/libcuda.so.1"
  echo "sanitize: dsa-golden (ASan + UBSan) on the GPU step libraries, test double driver (the flow, not the numbers)" >&2
  status=0
  LD_LIBRARY_PATH="$tmp/fake" "$san/bin/dsa-golden" --golden "$golden" --libraries "$tmp/gpu" >"$tmp/gpu.log" 2>&1 ||
    status=$?
  # The double computes nothing, so verdicts fail (status 1); a sanitizer report or a step error is anything else.
  if [ "$status" -gt 1 ] || grep -qE 'Sanitizer|runtime error' "$tmp/gpu.log"; then
    cat "$tmp/gpu.log"
    echo "sanitize: FAILED (dsa-golden on the GPU step libraries, status $status)" >&2
    exit 1
  fi
else
  echo "sanitize: no CUDA toolkit at $cuda: the GPU step libraries are not replayed" >&2
fi
echo "sanitize: clean" >&2
