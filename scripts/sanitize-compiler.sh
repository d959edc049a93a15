#!/usr/bin/env bash
# ASan + UBSan check of the compiler's backends (docs/robustness.md "Sanitizers"), in the fuzz build
# ${DSA_FUZZ_BUILD_DIR:-build-fuzz} (scripts/fuzz-configure.sh: the whole project under clang-22 with
# -fsanitize=address,undefined; no third build): builds from it the CPU backend's tests, the GPU step library tests,
# the test double driver, dsa-run and dsa-golden, then runs
#   1. CPUBackendTest.* and CPUTargetAndBf16Test.* (the JIT and AOT CPU backend: dsa -> LLVM IR, ORC JIT, step
#      libraries through the runtime; host target only, their x86-64-v3 reruns compile the same host code), and
#      CPUBatchedDecodeTest's small geometries (the batched decode step, runtime::Batch and its error paths);
#   2. GPUStepLibraryTest.* (the dsa-to-gpu pipeline to NVVM/PTX, the GPU step library emitter, its libraries on the
#      test double driver) and GoldenGpuLibrariesFlowOnFakeDriver (the sanitized dsa-run emits the golden's six GPU
#      step libraries, the sanitized dsa-golden runs them on the test double driver);
#   3. the whole golden on the CPU backend: dsa-run --golden test/Golden/ds41_tiny_golden.json --backend=cpu;
#   4. the compiler fuzz target on the GPU pipeline's lit inputs, which must get through the GPU pipeline ("gpu ok").
# Parts 2 and 4 need the CUDA toolkit (ptxas, libdevice at ${CUDA_HOME:-/usr/local/cuda}); without it they are skipped
# and say so. Any sanitizer report fails the run (exit status 86, and the logs are searched for reports).
# What is not instrumented: Debian's libMLIR/libLLVM (the passes' upstream part, ORC, the LLVM backends), and the
# code ORC JIT compiles or a step library holds (machine code from LLVM, no sanitizer passes): their calls into dsa's
# runtime and into malloc/free are checked, their own loads and stores are not. Called by scripts/test.sh
# (DSA_SKIP_SANITIZE=1 skips it); about 5 minutes on 2 cores once the fuzz build is there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fz=${DSA_FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${DSA_JOBS:-$(nproc)}
start=$SECONDS
bash "$root/scripts/fuzz-configure.sh"
cmake --build "$fz" -j "$jobs" --target CPUBackendTest CPUTargetAndBf16Test CPUBatchedDecodeTest GPUStepLibraryTest \
  DSAFakeCudaDriver dsa-run dsa-golden dsa-fuzz-compiler
built=$SECONDS
# allow_user_poisoning=0: the false positive fuzz/MlirSupport.cpp explains (LLVM's BumpPtrAllocator poisons in
# instrumented inline code and allocates in uninstrumented libMLIR); the tests and tools here do not link that file.
# exitcode=86: a report is not mistaken for a failed verdict (status 1).
export ASAN_OPTIONS=${ASAN_OPTIONS:-allow_user_poisoning=0:detect_leaks=1:halt_on_error=1:exitcode=86}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=86}
tmp=$fz/sanitize-compiler # the logs, kept for a look after a failure
rm -rf "$tmp"
mkdir -p "$tmp"
reports() { grep -lE 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: (Address|Undefined|Leak)' "$@" 2>/dev/null; }
fail() { echo "sanitize-compiler: FAILED ($1)" >&2; exit 1; }

cuda=${CUDA_HOME:-/usr/local/cuda}
have_cuda=0
if [ -x "$cuda/bin/ptxas" ] && [ -f "$cuda/nvvm/libdevice/libdevice.10.bc" ]; then have_cuda=1; fi
tests='^(CPUBackendTest|SerialAndOpenMP/CPUBackendGoldenTest|CPUBackendCompressedTest|TargetAndBf16Test|BatchRuntimeTest)\.'
# The batched decode step and runtime::Batch (not the Flash-geometry case: minutes under ASan).
tests="$tests|^BatchedDecodeTest\.(Tiny|Tails|Single)"
what="the CPU backend's tests"
if [ "$have_cuda" = 1 ]; then
  tests="$tests|^GPUStepLibraryTest\.|^GoldenGpuLibrariesFlowOnFakeDriver\$"
  what="$what, the GPU step library tests"
else
  echo "sanitize-compiler: no CUDA toolkit at $cuda: the GPU step library tests and the GPU pipeline are skipped" >&2
fi
echo "sanitize-compiler: $what (ASan + UBSan)" >&2
ctest --test-dir "$fz" -R "$tests" -E '\.x86-64-v3$' -j "$jobs" --output-on-failure >"$tmp/ctest.log" 2>&1 ||
  { cat "$tmp/ctest.log"; fail "the backends' tests, log above"; }
if reports "$tmp/ctest.log" >/dev/null; then cat "$tmp/ctest.log"; fail "a sanitizer report in the tests' log"; fi
# A test that skipped (no toolkit, no CPU feature) is counted by CTest as passed: name them.
grep -E 'tests passed|\*\*\*Skipped|Not Run' "$tmp/ctest.log" | sed 's/^/sanitize-compiler: /' >&2 || true
tested=$SECONDS

golden=$root/test/Golden/ds41_tiny_golden.json
echo "sanitize-compiler: dsa-run --golden $(basename "$golden") --backend=cpu (ASan + UBSan, JIT)" >&2
"$fz/bin/dsa-run" --golden "$golden" --backend=cpu >"$tmp/golden-cpu.log" 2>&1 ||
  { tail -40 "$tmp/golden-cpu.log"; fail "the CPU golden replay"; }
if reports "$tmp/golden-cpu.log" >/dev/null; then cat "$tmp/golden-cpu.log"; fail "a sanitizer report in the replay"; fi
grep -E '^golden: ' "$tmp/golden-cpu.log" | sed 's/^/sanitize-compiler: /' >&2
replayed=$SECONDS

if [ "$have_cuda" = 1 ]; then
  echo "sanitize-compiler: the compiler fuzz target on test/Conversion/DSAToGPU/Inputs (each must pass the GPU pipeline)" >&2
  inputs=("$root"/test/Conversion/DSAToGPU/Inputs/*.mlir)
  ok=0
  for f in "${inputs[@]}"; do
    log=$tmp/fuzz-gpu-$(basename "$f" .mlir).log
    DSA_FUZZ_VERBOSE=1 "$fz/bin/dsa-fuzz-compiler" "$f" >"$log" 2>&1 ||
      { cat "$log"; fail "the compiler fuzz target on $f"; }
    if reports "$log" >/dev/null; then cat "$log"; fail "a sanitizer report on $f"; fi
    if grep -q '^compiler: .*gpu ok' "$log"; then ok=$((ok + 1)); else cat "$log"; fail "$f did not pass the GPU pipeline"; fi
  done
  echo "sanitize-compiler: $ok of ${#inputs[@]} inputs through the GPU pipeline" >&2
fi
echo "sanitize-compiler: build $((built - start)) s, tests $((tested - built)) s, CPU golden replay" \
     "$((replayed - tested)) s, total $((SECONDS - start)) s" >&2
echo "sanitize-compiler: clean" >&2
