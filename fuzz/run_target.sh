#!/usr/bin/env bash
# Runs one libFuzzer target over its committed seeds and regression inputs.
# Usage: run_target.sh BINARY NAME FUZZ_SOURCE_DIR WORK_DIR [libFuzzer flags...]
# New inputs go to WORK_DIR/<name>/corpus (cleared first, so a run does not
# depend on the last one and the committed corpus is never written); a crash is
# saved as WORK_DIR/<name>/crash-<sha1> and the exit status is non-zero.
set -euo pipefail
binary=$1 name=$2 src=$3 work=$4
shift 4
dir="$work/$name"
rm -rf "$dir/corpus"
mkdir -p "$dir/corpus"
inputs=("$dir/corpus" "$src/corpus/$name")
if [[ -d "$src/regressions/$name" ]]; then inputs+=("$src/regressions/$name"); fi
dict=()
if [[ -f "$src/dict/$name.dict" ]]; then dict=("-dict=$src/dict/$name.dict"); fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
exec "$binary" -artifact_prefix="$dir/" -print_final_stats=1 "${dict[@]}" "$@" "${inputs[@]}"
