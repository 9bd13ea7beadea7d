#!/usr/bin/env bash
# bench/fsdp: host memory of one node while an FSDP run starts, with and
# without delayed init (parallel.delayed_init; NOTE [Shapes-only construction]
# in backend/model/shapes_only.h). The issue's target: under 1.5x one model
# copy per node (the reference builds the whole model on every rank).
#
# Model: the tiny preset with a wide OPT (width 1024, ffn 8192, 6 layers:
# about 100 M float32 parameters, 0.4 GB) so the model dominates what a rank
# holds; one step on synthetic data, 1 thread per rank, 2 and 4 ranks.
# Per rank the trainer logs its resident set before building the model and
# its peak resident set when start-up is over (sharding included); the node's
# start-up cost is the sum over ranks of (peak - before), divided by one
# model copy (the planner's parameter count x 4 bytes).
#
# Usage: bench/fsdp/startup_memory.sh [BUILD_DIR=build] [REPS=3]
# Env:   PORT=29850  RUN_TIMEOUT=900 (s per run)
# Needs: jq, BUILD_DIR/bin/flamingo-train.
set -euo pipefail
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=../rank_bench_lib.sh
source "$root/bench/rank_bench_lib.sh"
rank_bench_init fsdp-startup 29850 "${1:-build}" "${2:-3}" 1 tiny

wide=(--set model.lm.width=1024 --set model.lm.ffn_dim=8192 --set model.lm.layers=6 --set model.lm.heads=8
  --set parallel.mode=fsdp --set telemetry.logging_steps=1)
model_bytes=$("$bin" plan --config "$root/resources/presets/tiny.yaml" "${wide[@]}" --world 2 --json --no-reference |
  jq '[.layouts[0].units[].param_count] | add * 4')

# startup DIR WORLD: "sum of (peak - before) over ranks" from the rank logs.
startup() {
  local total=0 before peak log
  for ((r = 0; r < $2; ++r)); do
    log="$1/logs/rank-$r.log"
    [[ -f $log ]] || { echo "no $log" >&2; return 1; }
    before=$(sed -n 's/.*resident set before the model: \([0-9]*\) bytes.*/\1/p' "$log" | tail -1)
    peak=$(sed -n 's/.*start-up peak resident set: \([0-9]*\) bytes.*/\1/p' "$log" | tail -1)
    total=$((total + peak - before))
  done
  echo "$total"
}

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(uname -m), $(getconf _NPROCESSORS_ONLN) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "reps=$reps  one model copy: $model_bytes bytes (float32)  bin=$bin"
printf '%-6s | %-12s | %16s | %s\n' world delayed_init "node start-up" "x one model copy (median of $reps; target < 1.5)"
for world in 2 4; do
  for delayed in true false; do
    vals=()
    for ((k = 0; k < reps; ++k)); do
      dir="$tmp/w$world-$delayed-$k"
      run_ours tiny "$world" "$dir" "${wide[@]}" --set "parallel.delayed_init=$delayed"
      vals+=("$(startup "$dir" "$world")")
    done
    m=$(printf '%s\n' "${vals[@]}" | med)
    printf '%-6s | %-12s | %16.0f | %.2fx\n' "$world" "$delayed" "$m" "$(echo "$m / $model_bytes" | bc -l)"
  done
done
