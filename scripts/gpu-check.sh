#!/usr/bin/env bash
# The GPU backend's device check (docs/gpu-backend.md).
#
#   scripts/gpu-check.sh --ptx [BUILD]   HERE (LLVM/MLIR machine): regenerate the kernel PTX that the GPU machine runs,
#                                        test/Runtime/Cuda/Inputs/dsa_kernels.sm_90.ptx, with BUILD/bin/dsa-opt
#                                        (BUILD defaults to $DSA_BUILD_DIR or build). Commit the result;
#                                        test/Conversion/DSAToGPU/ptx-artifact.test fails while it is stale.
#   scripts/gpu-check.sh --deps          HERE: copy GoogleTest's sources, nlohmann_json and OpenSSL's headers and
#                                        libcrypto link library into .gpu-deps/ (ignored
#                                        through .git/info/exclude) for a GPU machine that lacks them; then name
#                                        .gpu-deps in the device tool's `carry`.
#   scripts/gpu-check.sh --libs [BUILD]  HERE: compile GPU step libraries (sm_90 cubins in x86-64 host code; docs/
#                                        gpu-backend.md "Step libraries") into .gpu-libs/ (ignored through
#                                        .git/info/exclude) with BUILD/bin/dsa-compile and dsa-run: the window-only
#                                        layer of test/Conversion/DSAToGPU/Inputs/window-layer.mlir, the benchmark's
#                                        V4.1-Flash window-only layer (bench/gpu/flash-window-layer.mlir; no
#                                        weights in it: ~0.1 MB), and one library per layer of the tiny golden
#                                        (.gpu-libs/golden, for dsa-golden). Then name .gpu-libs in the device
#                                        tool's `carry`. Redo after any compiler change.
#   scripts/gpu-check.sh                 ON THE GPU MACHINE (CUDA, CMake, a C++ compiler; no MLIR, no network):
#                                        builds the MLIR-free part (-DDSA_ENABLE_MLIR=OFF) and runs the CUDA runtime's
#                                        tests: the driver loader (CudaLoaderTest) and every kernel family of the
#                                        committed PTX against the reference kernels (CudaKernelsTest), then the
#                                        kernel tests again under compute-sanitizer memcheck when it is installed;
#                                        with .gpu-libs: the step library runtime (GpuStepRuntimeTest: the window
#                                        layer's prefill + decodes with the ring resident vs the reference kernels)
#                                        and the whole tiny golden replayed on the GPU step libraries (dsa-golden,
#                                        section 12 tolerance: expects "golden: 441 passed, 0 failed") and layer
#                                        0 through the C API (CApiGoldenTest: "c api golden: N passed, 0 failed"); last, the
#                                        decode benchmark (bin/dsa-gpu-bench, bench/gpu: a V4.1-Flash window-only
#                                        layer's decode step at start_pos 1000 vs the HBM floor, ~30 s at most;
#                                        docs/gpu-backend.md "GPU benchmark").
#
# Device mode environment: DSA_REQUIRE_CUDA_DEVICE (default 1: a missing device fails the tests instead of
# skipping them; set 0 to dry-run the script on a machine without a GPU), DSA_GPU_BUILD_DIR (default
# build-gpucheck), DSA_GPU_SANITIZE (default 1), OUT (if set, logs are copied there). It prints one closing
# "N passed, M failed" line and exits non-zero on any failure. Budget: about 1-3 minutes on a 16-core machine, plus
# at most ~30 s for the benchmark (it stops timing after 20 s of steps; 120 s hard timeout).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ptx_rel=test/Runtime/Cuda/Inputs/dsa_kernels.sm_90.ptx
# Together the window-only layer and the compressed roles use every kernel of the library.
ptx_inputs="test/Conversion/DSAToGPU/Inputs/window-layer.mlir test/Conversion/DSAToGPU/Inputs/compressed-layers.mlir"
# .git/info/exclude, also from a git worktree (where .git is a file and info/ is the main repository's).
exclude=$(git -C "$root" rev-parse --path-format=absolute --git-path info/exclude 2>/dev/null ||
  echo "$root/.git/info/exclude")

case "${1:-}" in
--ptx)
  build=${2:-${DSA_BUILD_DIR:-$root/build}}
  opt=$build/bin/dsa-opt
  [ -x "$opt" ] || { echo "gpu-check --ptx: $opt not found (build dsa-opt first)" >&2; exit 2; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # One module of both inputs, so that its gpu.binary holds every kernel (ptx-artifact.test does the same).
  (cd "$root" && cat $ptx_inputs) | "$opt" - --dsa-gpu-pipeline="chip=sm_90" -o "$tmp/out.mlir" || exit 1
  python3 "$root/scripts/extract-ptx.py" "$tmp/out.mlir" --chip sm_90 -o "$tmp/kernels.ptx" || exit 1
  mkdir -p "$(dirname "$root/$ptx_rel")"
  cp "$tmp/kernels.ptx" "$root/$ptx_rel"
  echo "wrote $ptx_rel ($(wc -l <"$root/$ptx_rel") lines)"
  exit 0
  ;;
--deps)
  deps=$root/.gpu-deps
  mkdir -p "$deps/nlohmann/include" "$deps/nlohmann/share/cmake"
  cp -r /usr/src/googletest "$deps/googletest"
  cp -r /usr/include/nlohmann "$deps/nlohmann/include/"
  cp -r /usr/share/cmake/nlohmann_json "$deps/nlohmann/share/cmake/"
  # OpenSSL's headers and link library (the step libraries' SHA-256, runtime/host FileDigest.h): the GPU machine has
  # libcrypto.so.3 (every Debian/Ubuntu), maybe not libssl-dev.
  mkdir -p "$deps/openssl/include" "$deps/openssl/lib"
  cp -r /usr/include/openssl "$deps/openssl/include/"
  cp /usr/include/x86_64-linux-gnu/openssl/*.h "$deps/openssl/include/openssl/"
  cp -L /usr/lib/x86_64-linux-gnu/libcrypto.so "$deps/openssl/lib/libcrypto.so"
  grep -qx '/.gpu-deps/' "$exclude" 2>/dev/null || echo '/.gpu-deps/' >>"$exclude"
  du -sh "$deps"
  exit 0
  ;;
--libs)
  build=${2:-${DSA_BUILD_DIR:-$root/build}}
  for tool in dsa-compile dsa-run; do
    [ -x "$build/bin/$tool" ] || { echo "gpu-check --libs: $build/bin/$tool not found (build it first)" >&2; exit 2; }
  done
  libs=$root/.gpu-libs
  rm -rf "$libs"
  mkdir -p "$libs"
  "$build/bin/dsa-compile" "$root/test/Conversion/DSAToGPU/Inputs/window-layer.mlir" --target=gpu -o "$libs" \
    --chip=sm_90 --format=bin >/dev/null || exit 1
  "$build/bin/dsa-compile" "$root/bench/gpu/flash-window-layer.mlir" --target=gpu -o "$libs" --chip=sm_90 \
    --format=bin >/dev/null || exit 1
  "$build/bin/dsa-run" --golden "$root/test/Golden/ds41_tiny_golden.json" --emit-libraries="$libs/golden" \
    --backend=gpu || exit 1
  rm -f "$libs"/*.o "$libs"/golden/*.o # only the .so and .json travel
  grep -qx '/.gpu-libs/' "$exclude" 2>/dev/null || echo '/.gpu-libs/' >>"$exclude"
  du -sh "$libs"
  echo "carry .gpu-libs to the GPU machine (run(carry=[\".gpu-libs\", ...]))"
  exit 0
  ;;
"") ;;
*)
  echo "usage: $0 [--ptx [BUILD] | --libs [BUILD] | --deps]" >&2
  exit 2
  ;;
esac

# ---- device mode ---------------------------------------------------------------------------------------------
export DSA_REQUIRE_CUDA_DEVICE=${DSA_REQUIRE_CUDA_DEVICE:-1}
build=${DSA_GPU_BUILD_DIR:-$root/build-gpucheck}
logs=$(mktemp -d)
passed=0
failed=0
step() { echo; echo "== $*"; }
verdict() {
  # $1: name, $2: exit status
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "-- $1: ok"; else failed=$((failed + 1)); echo "-- $1: FAILED"; fi
}
finish() {
  [ -n "${OUT:-}" ] && cp "$logs"/*.log "$OUT"/ 2>/dev/null
  echo
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

step machine
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 || echo "(no nvidia-smi)"
command -v nvcc >/dev/null && nvcc --version | tail -2
cmake --version | head -1
"${CXX:-c++}" --version | head -1

step "kernel PTX ($ptx_rel)"
if [ ! -f "$root/$ptx_rel" ]; then
  echo "missing: run scripts/gpu-check.sh --ptx on the MLIR machine and commit it"
  failed=$((failed + 1))
  finish
fi
head -12 "$root/$ptx_rel" | grep -E '^\.(version|target)'
ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$ptxas" ]; then
  "$ptxas" -arch=sm_90 "$root/$ptx_rel" -o "$logs/kernels.cubin" >"$logs/ptxas.log" 2>&1
  verdict "ptxas -arch=sm_90" $?
fi

step "dependencies"
prefix=()
if [ -d "$root/.gpu-deps" ]; then
  inst=$root/.gpu-deps/install
  if [ ! -f "$inst/lib/cmake/GTest/GTestConfig.cmake" ] && [ ! -f "$inst/lib64/cmake/GTest/GTestConfig.cmake" ]; then
    echo "building GoogleTest from .gpu-deps/googletest"
    (cmake -S "$root/.gpu-deps/googletest" -B "$logs/gtest-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DBUILD_GMOCK=OFF -DCMAKE_INSTALL_PREFIX="$inst" &&
      cmake --build "$logs/gtest-build" -j "$(nproc)" && cmake --install "$logs/gtest-build") >"$logs/gtest.log" 2>&1 ||
      { tail -20 "$logs/gtest.log"; verdict "GoogleTest build" 1; finish; }
  fi
  prefix=(-DCMAKE_PREFIX_PATH="$inst;$root/.gpu-deps/nlohmann")
  [ -d "$root/.gpu-deps/openssl" ] && prefix+=(-DOPENSSL_ROOT_DIR="$root/.gpu-deps/openssl")
else
  echo "(no .gpu-deps: using the system's GoogleTest and nlohmann_json)"
fi

step "build (-DDSA_ENABLE_MLIR=OFF) in $build"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if ! cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DDSA_ENABLE_MLIR=OFF "${prefix[@]}" \
  >"$logs/configure.log" 2>&1; then
  tail -30 "$logs/configure.log"
  verdict configure 1
  finish
fi
if ! cmake --build "$build" --target CudaLoaderTest CudaKernelsTest GpuStepRuntimeTest dsa-golden \
  dsa-gpu-bench CApiGoldenTest -j "$(nproc)" \
  >"$logs/build.log" 2>&1; then
  grep -E "error|Error" "$logs/build.log" | head -30
  verdict build 1
  finish
fi
verdict build 0

run_test() {
  # $1: executable, relative to test/Runtime/Cuda/ or to the build dir; remaining: extra arguments. A skipped test counts as a
  # failure when a device is required.
  local exe=$build/test/Runtime/Cuda/$1
  [ -x "$exe" ] || exe=$build/$1
  shift
  "$exe" --gtest_color=no "$@" 2>&1 | tee "$logs/$(basename "$exe").log" | grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED|info) *\]|device [0-9]'
  local status=${PIPESTATUS[0]}
  if [ "$DSA_REQUIRE_CUDA_DEVICE" = 1 ] && grep -q '^\[  SKIPPED \]' "$logs/$(basename "$exe").log"; then
    # The only tests meant to skip with a device present are the no-driver checks (and the toolkit stub's, where the
    # toolkit has none).
    if grep '^\[  SKIPPED \]' "$logs/$(basename "$exe").log" |
      grep -Evq 'NoDriverGivesAClearError|NoDriverIsAClearError|WithoutADriverOpeningFailsClearly|ToolkitStubIsNotADriver'; then
      echo "unexpected skips with DSA_REQUIRE_CUDA_DEVICE=1"
      status=1
    fi
  fi
  return "$status"
}

step CudaLoaderTest
run_test CudaLoaderTest
verdict CudaLoaderTest $?

step CudaKernelsTest
run_test CudaKernelsTest
verdict CudaKernelsTest $?

if [ "${DSA_GPU_SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  step "CudaKernelsTest under compute-sanitizer memcheck"
  timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 "$build/test/Runtime/Cuda/CudaKernelsTest" --gtest_color=no \
    >"$logs/memcheck.log" 2>&1
  status=$?
  grep -E '^========= (ERROR SUMMARY|Invalid|Program hit)' "$logs/memcheck.log" | head -20
  verdict "compute-sanitizer memcheck" $status
fi

step "GPU step libraries (.gpu-libs, compiled on the MLIR machine by --libs)"
if [ -f "$root/.gpu-libs/window-layer.json" ]; then
  DSA_GPU_STEP_LIBS=$root/.gpu-libs run_test test/Backend/GPU/GpuStepRuntimeTest
  verdict GpuStepRuntimeTest $?
  if [ "${DSA_GPU_SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
    DSA_GPU_STEP_LIBS=$root/.gpu-libs timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 \
      "$build/test/Backend/GPU/GpuStepRuntimeTest" --gtest_color=no --gtest_filter='GpuStepLibraryOnDevice.*' \
      >"$logs/memcheck-steplib.log" 2>&1
    status=$?
    grep -E '^========= (ERROR SUMMARY|Invalid|Program hit)' "$logs/memcheck-steplib.log" | head -20
    verdict "step library under compute-sanitizer memcheck" $status
  fi
else
  echo "missing .gpu-libs/window-layer.json: run scripts/gpu-check.sh --libs on the MLIR machine and carry .gpu-libs"
  verdict "GPU step libraries present" 1
fi

step "the tiny golden on the GPU step libraries (dsa-golden)"
if [ -f "$root/.gpu-libs/golden/golden_layers.json" ]; then
  timeout 300 "$build/bin/dsa-golden" --golden "$root/test/Golden/ds41_tiny_golden.json" \
    --libraries "$root/.gpu-libs/golden" >"$logs/golden-gpu.log" 2>&1
  status=$?
  grep -E '^(FAIL|dsa-golden: error)' "$logs/golden-gpu.log" | head -20
  grep -E '^golden: ' "$logs/golden-gpu.log"
  if [ "$status" -eq 2 ] && [ "$DSA_REQUIRE_CUDA_DEVICE" != 1 ] &&
    grep -q 'CUDA driver not available' "$logs/golden-gpu.log"; then
    # Dry run without a driver: the libraries were found and parsed; nothing can run.
    echo "skipped: no CUDA driver (DSA_REQUIRE_CUDA_DEVICE=0)"
    status=0
  else
    grep -qE '^golden: 441 passed, 0 failed' "$logs/golden-gpu.log" || status=1
  fi
  verdict "golden replay on the GPU" $status
else
  echo "missing .gpu-libs/golden: run scripts/gpu-check.sh --libs on the MLIR machine and carry .gpu-libs"
  verdict "golden step libraries present" 1
fi

step "the C API on the GPU (CApiGoldenTest: layer 0's prefill and decodes vs the golden through dsa-c/runtime.h)"
if [ -f "$root/.gpu-libs/golden/golden_layers.json" ]; then
  timeout 120 "$build/test/Runtime/CAPI/CApiGoldenTest" "$root/test/Golden/ds41_tiny_golden.json" \
    "$root/.gpu-libs/golden" >"$logs/capi-gpu.log" 2>&1
  status=$?
  grep -E '^(FAIL|CApiGoldenTest: )' "$logs/capi-gpu.log" | head -20
  grep -E '^c api golden: ' "$logs/capi-gpu.log"
  grep -qE '^c api golden: [0-9]+ passed, 0 failed' "$logs/capi-gpu.log" || status=1
  verdict "C API on the GPU" $status
else
  verdict "golden step libraries present (C API)" 1
fi

step "decode benchmark (dsa-gpu-bench: V4.1-Flash window-only layer, start_pos 1000, vs the HBM floor)"
# Without a device it prints its SKIP line (exit 0, or 1 when DSA_REQUIRE_CUDA_DEVICE=1); with one it needs
# .gpu-libs/flash-window-layer.* (--libs) and names the file when it is missing.
timeout 120 "$build/bin/dsa-gpu-bench" --libs "$root/.gpu-libs" --steps 20 --max-seconds 20 \
  >"$logs/gpu-bench.log" 2>&1
status=$?
grep -E '^dsa-gpu-bench: ' "$logs/gpu-bench.log"
[ "$status" -eq 124 ] && echo "dsa-gpu-bench: timed out after 120 s"
verdict "decode benchmark" $status

finish
