#!/usr/bin/env bash
# The fuzzers (fuzz/, docs/robustness.md "Fuzzers"): builds the fuzz targets with clang-22 + libFuzzer, ASan and UBSan
# into ${DSA_FUZZ_BUILD_DIR:-build-fuzz} (configured by scripts/fuzz-configure.sh), then fuzzes each target for N
# seconds from its seed corpus:
#   fuzz/corpus/<target>/ (in the tree) plus what the tree already holds: every split input (`// -----`) of
#   test/**/*.mlir (compiler, interpreter), test/Golden's goldens (golden), and the step descriptions the main build's
#   dsa-run emits for the golden's layers (step-description; main build ${DSA_BUILD_DIR:-build} needed, else skipped).
# A crash, leak, sanitizer report or timeout stops that target and fails the script, naming the reproducer: fix the
# bug, then add the reproducer to fuzz/regressions/<target>/ (CTest FuzzRegression.<target> replays it on every build).
# Usage: scripts/fuzz.sh [--seconds N] [TARGET...]   (default: 60 s each, every target: compiler interpreter golden
# step-description). The corpus grown by a run is kept in ${DSA_FUZZ_BUILD_DIR}/corpus/<target> for the next run.
# A longer run (docs/robustness.md): scripts/fuzz.sh --seconds 3600 compiler
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
main=${DSA_BUILD_DIR:-$root/build}
fz=${DSA_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=60
targets=()
while (($#)); do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --seconds=*) seconds=${1#--seconds=}; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    compiler|interpreter|golden|step-description) targets+=("$1"); shift ;;
    *) echo "fuzz: unknown argument '$1' (targets: compiler interpreter golden step-description)" >&2; exit 2 ;;
  esac
done
((${#targets[@]})) || targets=(compiler interpreter golden step-description)

bash "$root/scripts/fuzz-configure.sh" # clang-22, ASan + UBSan, libFuzzer
cmake --build "$fz" --target dsa-fuzzers -j "${DSA_JOBS:-$(nproc)}"

# Seeds: the tree's corpus plus the tree's own inputs, regenerated each run (not committed twice).
seeds=$fz/seeds
rm -rf "$seeds"
mkdir -p "$seeds"
for t in "${targets[@]}"; do
  mkdir -p "$seeds/$t" "$fz/corpus/$t" "$fz/artifacts/$t"
  if [ -d "$root/fuzz/corpus/$t" ]; then cp "$root/fuzz/corpus/$t"/* "$seeds/$t"/ 2>/dev/null || true; fi
done
split_mlir() { # split_mlir OUT_DIR FILE...: one seed per `// -----` split input
  python3 - "$@" <<'PY'
import os, sys, hashlib
out = sys.argv[1]
for path in sys.argv[2:]:
    for part in open(path, encoding="utf-8", errors="replace").read().split("// -----"):
        if part.strip():
            name = hashlib.sha1(part.encode()).hexdigest()[:16] + ".mlir"
            open(os.path.join(out, name), "w").write(part)
PY
}
for t in "${targets[@]}"; do
  case $t in
    compiler) split_mlir "$seeds/$t" $(find "$root/test" -name '*.mlir' -not -path '*/Layers/*') ;;
    interpreter) split_mlir "$seeds/$t" "$root"/test/Interpreter/*.mlir "$root"/test/Transforms/*.mlir ;;
    golden) cp "$root"/test/Golden/ds41_tiny_golden.json "$seeds/$t/" ;;
    step-description)
      if [ -x "$main/bin/dsa-run" ]; then
        "$main/bin/dsa-run" --golden "$root/test/Golden/ds41_tiny_golden.json" --emit-libraries="$fz/libs" >/dev/null 2>&1
        for d in "$fz"/libs/attention_L*.json; do
          # the description, a NUL, then step requests (rows, start_pos as u32/i32 little-endian): prefill 3, decode 3
          { cat "$d"; printf '\0\003\0\0\0\0\0\0\0\001\0\0\0\003\0\0\0'; } >"$seeds/$t/$(basename "$d")"
        done
      else
        echo "fuzz: no $main/bin/dsa-run, step-description seeds are the tree's corpus only" >&2
      fi ;;
  esac
done

status=0
for t in "${targets[@]}"; do
  bin=$fz/bin/dsa-fuzz-$t
  n=$(find "$seeds/$t" -type f | wc -l)
  echo "fuzz: $t for ${seconds}s from $n seeds" >&2
  log=$fz/fuzz-$t.log
  if "$bin" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -max_len=400000 -print_final_stats=1 \
      -artifact_prefix="$fz/artifacts/$t/" "$fz/corpus/$t" "$seeds/$t" >"$log" 2>&1; then
    echo "fuzz: $t: $(grep -E 'stat::number_of_executed_units' "$log" | awk '{print $2}') runs, no crash" \
         "($(find "$fz/corpus/$t" -type f | wc -l) inputs in the corpus)" >&2
  else
    status=1
    tail -60 "$log" >&2
    echo "fuzz: $t FAILED; reproducer(s): $(ls "$fz/artifacts/$t"/ 2>/dev/null | sed "s|^|$fz/artifacts/$t/|" | tr '\n' ' ')" >&2
    echo "fuzz: fix the bug, then add the reproducer to fuzz/regressions/$t/ (CTest FuzzRegression.$t)" >&2
  fi
done
exit $status
