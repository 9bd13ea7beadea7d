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
# its peak resident set when start-up is over (sharding included). Two
# figures per run, divided by one model copy (the planner's parameter count x
# 4 bytes):
#   node peak       the most resident memory the node's ranks held at one
#                   moment during start-up (the sum of their VmRSS, sampled
#                   every ~10 ms until every rank has logged its start-up
#                   peak) minus their resident sets before the model: what
#                   the node must have. The issue's target applies to it.
#   sum of peaks    the sum over ranks of (peak - before): an upper bound, as
#                   the ranks peak at different moments (the first rank at
#                   the start, holding the model; the others at the end,
#                   holding their shards).
# Resident memory includes what the allocator freed but kept.
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

# before DIR WORLD: the sum over ranks of the resident set before the model; peaks DIR WORLD: of (peak - before).
logged() { sed -n "s/.*$1: \([0-9]*\) bytes.*/\1/p" "$2" | tail -1; }
before() {
  local total=0 r
  for ((r = 0; r < $2; ++r)); do total=$((total + $(logged "resident set before the model" "$1/logs/rank-$r.log"))); done
  echo "$total"
}
peaks() {
  local total=0 r log
  for ((r = 0; r < $2; ++r)); do
    log="$1/logs/rank-$r.log"
    total=$((total + $(logged "start-up peak resident set" "$log") - $(logged "resident set before the model" "$log")))
  done
  echo "$total"
}

# sampled_run WORLD DIR [--set K=V ...]: one launch of WORLD local ranks; prints the largest sum of the
# ranks' VmRSS (bytes) seen until every rank logged its start-up peak (the ranks are the launch's children).
sampled_run() {
  local world="$1" dir="$2" bl bm n launch max=0 sum kid kb started
  shift 2
  read -r bl bm <<<"$(batches tiny)"
  n=$((warmup + steps))
  port=$((port + 1))
  rm -rf "$dir"
  "$bin" launch --nproc-per-node "$world" --master-port "$port" --run-dir "$dir" -- \
    train --config "$root/resources/presets/tiny.yaml" --set data.source=synthetic --set launch.threads_per_rank=1 \
    --set "data.datasets[0].batch_size=$bl" --set "data.datasets[1].batch_size=$bm" \
    --set "data.datasets[0].samples_per_epoch=$((bl * world * n))" \
    --set "data.datasets[1].samples_per_epoch=$((bm * world * n))" \
    --set optim.epochs=1 --set checkpoint.every_steps=0 "$@" >"$dir.out" 2>&1 &
  launch=$!
  while kill -0 "$launch" 2>/dev/null; do
    started=$(grep -l "start-up peak resident set" "$dir"/logs/rank-*.log 2>/dev/null | wc -l)
    ((started >= world)) && break
    sum=0
    for kid in $(pgrep -P "$launch"); do
      kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$kid/status" 2>/dev/null || true)
      sum=$((sum + ${kb:-0} * 1024))
    done
    ((sum > max)) && max=$sum
    sleep 0.01
  done
  wait "$launch" || { echo "x$world failed:" >&2; tail -20 "$dir.out" >&2; return 1; }
  echo "$max"
}

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(uname -m), $(getconf _NPROCESSORS_ONLN) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "reps=$reps  one model copy: $model_bytes bytes (float32)  bin=$bin"
printf '%-6s | %-12s | %14s | %14s | %s\n' world delayed_init "node peak" "sum of peaks" \
  "x one model copy, node peak / sum of peaks (median of $reps; target < 1.5 for the node peak)"
for world in 2 4; do
  for delayed in true false; do
    nodes=() sums=()
    for ((k = 0; k < reps; ++k)); do
      dir="$tmp/w$world-$delayed-$k"
      top=$(sampled_run "$world" "$dir" "${wide[@]}" --set "parallel.delayed_init=$delayed")
      nodes+=("$((top - $(before "$dir" "$world")))")
      sums+=("$(peaks "$dir" "$world")")
    done
    a=$(printf '%s\n' "${nodes[@]}" | med)
    b=$(printf '%s\n' "${sums[@]}" | med)
    printf '%-6s | %-12s | %14.0f | %14.0f | %.2fx / %.2fx\n' "$world" "$delayed" "$a" "$b" \
      "$(echo "$a / $model_bytes" | bc -l)" "$(echo "$b / $model_bytes" | bc -l)"
  done
done
