#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, docs/fuzzing.md) in build-fuzz/ (clang-14,
# ASan + UBSan, FS_BUILD_FUZZ=ON) and runs them, printing per target the inputs
# executed, the coverage libFuzzer reached (cov: edges, ft: features), the
# corpus size and whether it crashed. Exit status 1 when any target crashed.
#
#   scripts/fuzz.sh                 long mode: 600 s per target (FS_FUZZ_SECONDS overrides)
#   scripts/fuzz.sh --quick         the CI mode: FS_FUZZ_RUNS (2000) inputs per target, seed 1
#   scripts/fuzz.sh --build-only    configure and build, run nothing
#   scripts/fuzz.sh [mode] zip tar_samples ...   only these targets
#   scripts/fuzz.sh --tests         no fuzzing: build and run the torch-free
#                                   libraries' tests (protocol, tensorfile, data,
#                                   and app when Qt is configured) in the same
#                                   ASan + UBSan tree; extra arguments go to ctest
#
# New inputs go to build-fuzz/fuzz/work/<target>/corpus (cleared each run; the
# committed fuzz/corpus is never written); a crash input is saved there as
# crash-<sha1> (or leak-, timeout-, oom-): copy it to fuzz/regressions/<target>/
# once fixed. Environment: FS_FUZZ_BUILD_DIR (build-fuzz), FS_JOBS (nproc),
# FS_BUILD_LOCK (a file to flock around the build, for shared machines).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${FS_FUZZ_BUILD_DIR:-build-fuzz}"
JOBS="${FS_JOBS:-$(nproc)}"
mode=long
targets=()
for arg in "$@"; do
  case "$arg" in
    --quick) mode=quick ;;
    --build-only) mode=build ;;
    --tests) mode=tests ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) if [ "$mode" = tests ]; then targets+=("$arg"); else echo "fuzz.sh: unknown option $arg" >&2; exit 2; fi ;;
    *) targets+=("$arg") ;;
  esac
done
if [ ${#targets[@]} -eq 0 ] && [ "$mode" != tests ]; then
  mapfile -t targets < <(sed -n 's/^fs_add_fuzzer(\([a-z0-9_]*\).*/\1/p' fuzz/CMakeLists.txt)
fi

lock=()
if [ -n "${FS_BUILD_LOCK:-}" ]; then lock=(flock "$FS_BUILD_LOCK"); fi
build_start=$(date +%s)
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  CC="${CC:-clang-14}" CXX="${CXX:-clang++-14}" cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFS_BUILD_ENGINE=OFF -DFS_BUILD_GUI="${FS_FUZZ_GUI:-OFF}" \
    -DFS_BUILD_BENCH=OFF -DFS_ENABLE_ASAN=ON -DFS_BUILD_FUZZ=ON >/dev/null
fi

# The torch-free libraries' tests under ASan + UBSan (leak checks off: Qt and
# fontconfig keep process-lifetime allocations).
if [ "$mode" = tests ]; then
  dirs=(tests/backend/protocol tests/backend/tensorfile tests/backend/data)
  if [ -d "$BUILD_DIR/tests/app" ]; then dirs+=(tests/app); fi
  build_start=$(date +%s)
  "${lock[@]}" cmake --build "$BUILD_DIR" -j "$JOBS" --target "${dirs[@]/%//all}"
  build_end=$(date +%s)
  status=0
  for d in "${dirs[@]}"; do
    ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
      ctest --test-dir "$BUILD_DIR/$d" --output-on-failure -j "$JOBS" "${targets[@]}" || status=1
  done
  echo "fuzz.sh --tests: build $((build_end - build_start)) s, tests $(($(date +%s) - build_end)) s (${dirs[*]})"
  exit "$status"
fi
"${lock[@]}" cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]/%/_fuzzer}"
build_end=$(date +%s)
echo "fuzz.sh: built ${#targets[@]} targets in $((build_end - build_start)) s"
[ "$mode" = build ] && exit 0

if [ "$mode" = quick ]; then
  flags=(-runs="${FS_FUZZ_RUNS:-2000}" -seed=1)
else
  flags=(-max_total_time="${FS_FUZZ_SECONDS:-600}")
fi
work="$BUILD_DIR/fuzz/work"
mkdir -p "$work"
crashed=0
printf '%-16s %10s %8s %8s %7s %6s  %s\n' target execs cov ft corpus secs result
for t in "${targets[@]}"; do
  log="$work/$t.log"
  start=$(date +%s)
  rc=0
  fuzz/run_target.sh "$BUILD_DIR/fuzz/${t}_fuzzer" "$t" fuzz "$work" "${flags[@]}" >"$log" 2>&1 || rc=$?
  secs=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  if [ "$rc" -eq 0 ]; then
    result=ok
  else
    crashed=1
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    result="CRASH (exit $rc) ${artifact:-see $log}"
  fi
  printf '%-16s %10s %8s %8s %7s %6s  %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$secs" "$result"
done
echo "fuzz.sh: $mode mode, $(($(date +%s) - build_end)) s of fuzzing; logs in $work/<target>.log"
exit "$crashed"
