#!/usr/bin/env bash
# bench/fsdp: our FSDP against our DDP, and FSDP memory per rank by world size.
#  1. Step time on 2 ranks x 1 thread (`flamingo-train launch --nproc-per-node 2`):
#     parallel.mode=ddp vs parallel.mode=fsdp (full_shard, the openflamingo wrap
#     policy, prefetch on: the config defaults forward_prefetch, backward_prefetch
#     pre, limit_all_gathers 2) and FSDP with prefetch off (limit_all_gathers 1),
#     in a rotating order within each repetition; the ratios FSDP / DDP are
#     paired per repetition, then the median (target <= 1.15x).
#  2. Memory on 1, 2 and 4 ranks (full_shard): rank 0's memory event of the
#     last step - shard bytes (params), gathered peak, gradients, optimizer
#     state, peak RSS - beside the planner's estimate for the same config
#     (`flamingo-train plan --json`), and the most units gathered at once; on 2
#     ranks also with prefetch off.
# Figures come from rank 0's events.jsonl: the first WARMUP step events are
# skipped, then medians over steps, then over REPS repetitions.
# Data: data.source=synthetic; batches per rank as bench/train_step_baseline.py's
# PRESETS (tiny 4 LAION + 2 MMC4, small 8 + 4); OPT family as the preset.
#
# Usage: bench/fsdp/run_fsdp.sh [BUILD_DIR=build] [REPS=3] [STEPS=30] [PRESET...=tiny small]
# Env:   WARMUP=5  PORT=29750  RUN_TIMEOUT=900 (s per run)  PYTHON (default scripts/python-env.sh --python)
#        TRANSPORT=gloo: our ranks without the shared-memory transport (parallel.intra_node_transport)
#        SHARED_SHARDS=false: FSDP shards private to each rank (parallel.shared_shards)
# Needs: jq, BUILD_DIR/bin/flamingo-train, Debian's python3-torch (for the batch sizes).
set -euo pipefail
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=../rank_bench_lib.sh
source "$root/bench/rank_bench_lib.sh"
rank_bench_init fsdp 29750 "$@"

serial=(--set parallel.forward_prefetch=false --set parallel.backward_prefetch=none
  --set parallel.limit_all_gathers=1)
run() {  # run PRESET WORLD MODE DIR [--set ...]: one run, memory event at the last step; MODE fsdp_serial =
  local preset="$1" world="$2" mode="$3" dir="$4" extra=()  # fsdp without prefetch
  shift 4
  [[ $mode == fsdp_serial ]] && mode=fsdp extra=("${serial[@]}")
  run_ours "$preset" "$world" "$dir" --set "parallel.mode=$mode" \
    --set "telemetry.memory_every_steps=$((warmup + steps))" "${extra[@]}" "$@"
}

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(uname -m), $(getconf _NPROCESSORS_ONLN) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "reps=$reps warmup=$warmup steps=$steps  bin=$bin"
declare -A R
for preset in "${presets[@]}"; do
  for ((r = 0; r < reps; ++r)); do
    all=(ddp fsdp fsdp_serial)
    modes=("${all[@]:r%3}" "${all[@]:0:r%3}")
    for mode in "${modes[@]}"; do
      run "$preset" 2 "$mode" "$tmp/$preset-$mode-$r"
      read -r ms sps comm wall <<<"$(summarise "$tmp/$preset-$mode-$r/events.jsonl")"
      echo "  # $preset rep $r $mode x2: step_ms=$ms samples_per_s=$sps comm_ms=$comm" >&2
      R[$preset,$mode]+="$ms"$'\n'
    done
  done
done
echo
ratio() {  # paired median of R[preset,$2] / R[preset,ddp]
  paste <(printf '%s' "${R[$1,$2]}" | grep -v '^$') <(printf '%s' "${R[$1,ddp]}" | grep -v '^$') |
    awk '$2 > 0 {print $1 / $2}' | med
}
printf '%-6s | %-12s | %-12s | %-12s | %s\n' preset "DDP x2 step" "FSDP x2 step" "no prefetch" \
  "FSDP / DDP, no prefetch / DDP (paired medians; target <= 1.15x)"
for preset in "${presets[@]}"; do
  d=$(printf '%s' "${R[$preset,ddp]}" | grep -v '^$' | med)
  f=$(printf '%s' "${R[$preset,fsdp]}" | grep -v '^$' | med)
  n=$(printf '%s' "${R[$preset,fsdp_serial]}" | grep -v '^$' | med)
  printf '%-6s | %9.2f ms | %9.2f ms | %9.2f ms | %.3fx, %.3fx\n' "$preset" "$d" "$f" "$n" "$(ratio "$preset" fsdp)" \
    "$(ratio "$preset" fsdp_serial)"
done

echo
echo "memory, rank 0, full_shard (bytes; the memory event at the last step):"
printf '%-6s | %-8s | %12s | %12s | %5s | %12s | %12s | %12s | %s\n' preset world params gathered units grads optimizer \
  peak_rss "planner: params, gathered peak"
for preset in "${presets[@]}"; do
  for world in 1 2 2/serial 4; do
    mode=fsdp w=$world
    [[ $world == */serial ]] && mode=fsdp_serial w=${world%/serial}
    dir="$tmp/$preset-mem-${world/\//-}"
    run "$preset" "$w" "$mode" "$dir"
    mem=$(jq -r 'select(.type == "memory") | .ranks[0] |
      "\(.params) \(.gathered) \(.gathered_units // "-") \(.grads) \(.optimizer) \(.peak_bytes)"' \
      "$dir/events.jsonl" | tail -1)
    plan=$("$bin" plan --config "$dir/config.yaml" --world "$w" --nodes 1 --strategies full_shard \
      --policies openflamingo --no-reference --json |
      jq -r '.estimates[0].per_rank | "\(.parameters), \(.gathered_peak)"')
    read -r p g u gr o rss <<<"$mem"
    printf '%-6s | %-8s | %12s | %12s | %5s | %12s | %12s | %12s | %s\n' "$preset" "$world" "$p" "$g" "$u" "$gr" "$o" \
      "$rss" "$plan"
  done
done
