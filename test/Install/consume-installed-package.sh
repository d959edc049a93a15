#!/usr/bin/env bash
# The installed CMake package from a consumer's side (cmake/DSAInstall.cmake, examples/): installs BUILD into a fresh
# prefix, then builds and runs the three example consumers against it:
#   examples/runtime-step   links only DSA::CPURuntime, configured with MLIR made unfindable, links no MLIR/LLVM, runs a
#                           layer's CPU step library (emitted by the build's dsa-run) through a prefill and two decodes;
#   examples/c-api          two C99 programs linking only DSA::RuntimeC (libdsa_runtime_c.so; configured with MLIR made
#                           unfindable, project language C: no C++ runtime of its own): dsa-c-api-example runs layers 0
#                           and 2 (shared slots) through the C API, dsa-c-api-stack a chunk through the golden's six
#                           layers by a stack plan (dsa_stack_*), identical to token-by-token decode;
#   examples/pass-pipeline  links DSA::ConversionCPU, runs the CPU pipeline in its own PassManager and a textual
#                           pipeline naming dsa passes: output identical to dsa-opt's; no GPU conversion in its binary.
# Usage: consume-installed-package.sh BUILD_DIR SOURCE_DIR. Exit 0 and "installed package: OK" on success.
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/dsa-install-XXXXXX)
trap 'rm -rf "$work"' EXIT
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
test -f "$work/prefix/lib/cmake/DSA/DSAConfig.cmake"
test -f "$work/prefix/include/dsa/Dialect/DSA/IR/DSAOps.h.inc" # generated headers are installed too
test -f "$work/prefix/include/dsa-c/runtime.h"
# The C API library exports its API (and the mgpu* entry points GPU step libraries resolve), nothing of C++.
if nm -D --defined-only "$work/prefix/lib/libdsa_runtime_c.so" | awk '{print $3}' | grep -Ev '^(dsa_|mgpu)'; then
  echo "libdsa_runtime_c.so exports symbols outside its C API" >&2
  exit 1
fi

cmake -S "$src/examples/runtime-step" -B "$work/runtime-step" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON "${launcher[@]}" >"$work/cfg1.log"
cmake --build "$work/runtime-step" >"$work/build1.log"
if ldd "$work/runtime-step/dsa-runtime-step-example" | grep -Ei 'libMLIR|libLLVM'; then
  echo "the runtime-only consumer links MLIR/LLVM" >&2
  exit 1
fi
"$build/bin/dsa-run" --golden "$src/test/Golden/ds41_tiny_golden.json" --emit-libraries="$work/libs" >"$work/emit.log" 2>&1
"$work/runtime-step/dsa-runtime-step-example" "$work/libs/attention_L0.json" | tee "$work/run1.log"
grep -q "step at start_pos 4: 1 tokens -> output 1x" "$work/run1.log"

cmake -S "$src/examples/c-api" -B "$work/c-api" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON "${launcher[@]}" >"$work/cfg3.log"
cmake --build "$work/c-api" >"$work/build3.log"
for program in dsa-c-api-example dsa-c-api-stack; do
  needed=$(readelf -d "$work/c-api/$program" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  if echo "$needed" | grep -Ei 'libMLIR|libLLVM|libstdc\+\+'; then
    echo "the C API consumer $program links more than libdsa_runtime_c: $needed" >&2
    exit 1
  fi
done
"$work/c-api/dsa-c-api-example" "$work/libs/attention_L0.json" | tee "$work/run3.log"
grep -q "step at start_pos 4: 1 tokens -> output 1x64 bf16, 64 of 64 values finite" "$work/run3.log"
grep -q "0 shared slots, max_seq_len -1, chunks in one call" "$work/run3.log"
"$work/c-api/dsa-c-api-example" "$work/libs/attention_L2.json" | tee "$work/run4.log"
grep -q "4 shared slots, max_seq_len 64, chunks refused" "$work/run4.log"
grep -q "step at start_pos 4: 1 tokens -> output 1x64 bf16, 64 of 64 values finite" "$work/run4.log"
"$work/c-api/dsa-c-api-stack" "$work"/libs/attention_L{0,1,2,3,4,5}.json | tee "$work/run5.log"
grep -q "chunk of 16 tokens at start_pos 12: a plan of 2 piece(s): \[0, 8), \[8, 16)" "$work/run5.log"
grep -q "chunk through the stack: identical to token-by-token decode" "$work/run5.log"

cmake -S "$src/examples/pass-pipeline" -B "$work/pass-pipeline" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir "${launcher[@]}" >"$work/cfg2.log"
cmake --build "$work/pass-pipeline" >"$work/build2.log"
input=$src/test/Conversion/DSAToCPU/pipeline.mlir
"$work/pass-pipeline/dsa-pass-pipeline-example" "$input" | grep -v '^$' >"$work/example.mlir"
"$build/bin/dsa-opt" "$input" --dsa-cpu-pipeline | grep -v '^$' >"$work/dsa-opt.mlir"
diff "$work/example.mlir" "$work/dsa-opt.mlir"
grep -q "llvm.func" "$work/example.mlir"
# dsa passes by name in the consumer's textual pipeline (the CPU conversion's registration), same IR as dsa-opt's.
pipeline='builtin.module(dsa-decompose-attention,dsa-strip-probes,dsa-to-cpu)'
"$work/pass-pipeline/dsa-pass-pipeline-example" "$input" --pass-pipeline="$pipeline" | grep -v '^$' >"$work/example2.mlir"
"$build/bin/dsa-opt" "$input" --pass-pipeline="$pipeline" | grep -v '^$' >"$work/dsa-opt2.mlir"
diff "$work/example2.mlir" "$work/dsa-opt2.mlir"
# Linking the CPU path did not pull in the GPU one (registration split: DSAToCPU/Passes.td apart from DSAToGPU's).
if nm -C "$work/pass-pipeline/dsa-pass-pipeline-example" | grep -E 'DSAToGPU|dsa-to-gpu|DSAGPU'; then
  echo "the CPU-only consumer contains the GPU conversion" >&2
  exit 1
fi
echo "installed package: OK"
