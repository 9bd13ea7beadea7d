#!/usr/bin/env bash
# bench/fsdp: the planner's peak per rank against the measured peak (issue 8, item 8: within 10 %,
# median error <= 5 %, never more than 5 % under).
# For each preset x world x strategy x wrap policy x gradient checkpointing, STEPS optimizer steps of
# parallel.mode=fsdp, one build/bin/fsdp_peak_probe process per rank (torchrun's variables, 1 thread),
# synthetic data, batches per rank as bench/train_step_baseline.py's PRESETS, by default made the
# planner's worst case (--full-batches: every position a token but the fewest that make the model skip
# padding, NOTE [Full batches] in bench/fsdp/full_batches.h; BATCHES=synthetic keeps the generator's
# padded batches, on which the planner is an upper bound). Measured: per rank, the
# largest per-step peak of live tracked tensor bytes over steps 2..STEPS (NOTE [Measured peak per rank]
# in bench/fsdp/peak_probe.cpp; step 1 holds the set-up). Planned: `flamingo-train plan --json`'s
# per_rank.peak for the same config.yaml, world and nodes. Error = planned / measured - 1.
# World 1 runs full_shard only: with one rank every strategy shards nothing and runs the same code.
# MODES="ddp" (or "fsdp ddp") also runs parallel.mode=ddp, planned as what it runs (NOTE [Replicated
# modes] in backend/fsdp_plan/memory_estimate.h): strategy single at world 1, ddp on several ranks.
# Hybrid runs as 2 nodes x 2 ranks on this machine (LOCAL_WORLD_SIZE=2).
# Per run it prints one line per rank: planned, measured, error, and where the measured peak's bytes
# were (the tracker's phases at the peak: params+other = shards, batches and bookkeeping; act; grad =
# backward's allocations; gath; opt); then the median |error|, the largest |error| and the worst under.
#
# Usage: bench/fsdp/peak_accuracy.sh [BUILD_DIR=build] [STEPS=3] [PRESET...=tiny small]
# Env:   WORLDS="1 2 4"  STRATEGIES="full_shard shard_grad_op no_shard"  POLICIES="openflamingo transformer_layer"
#        MODES="fsdp" (fsdp, ddp or both)
#        CKPT="false true"  HYBRID=1  PORT=29800  RUN_TIMEOUT=600 (s per run)  PYTHON (default scripts/python-env.sh --python)
#        BATCHES=worst|synthetic  KEEP=DIR (keep the runs' probe lines there)
# Needs: jq, BUILD_DIR/bin/{flamingo-train,fsdp_peak_probe}, Debian's python3-torch (for the batch sizes).
set -euo pipefail
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=../rank_bench_lib.sh
source "$root/bench/rank_bench_lib.sh"
build="${1:-build}"
steps="${2:-3}"
shift $(($# < 2 ? $# : 2))
rank_bench_init fsdp-peak 29800 "$build" 1 "$steps" "$@"
probe="$(dirname "$bin")/fsdp_peak_probe"
[[ -x "$probe" ]] || { echo "no $probe: build the fsdp_peak_probe target first" >&2; exit 1; }
((steps >= 2)) || { echo "STEPS must be >= 2 (step 1 holds the set-up)" >&2; exit 1; }
read -r -a worlds <<<"${WORLDS:-1 2 4}"
read -r -a strategies <<<"${STRATEGIES:-full_shard shard_grad_op no_shard}"
read -r -a policies <<<"${POLICIES:-openflamingo transformer_layer}"
read -r -a ckpts <<<"${CKPT:-false true}"
hybrid="${HYBRID:-1}"
batch_flag=(--full-batches)
[[ "${BATCHES:-worst}" == synthetic ]] && batch_flag=()

# probe PRESET WORLD NODES DIR [--set K=V ...]: STEPS steps, one probe per rank; DIR/peak.R.jsonl per rank.
probe_run() {
  local preset="$1" world="$2" nodes="$3" dir="$4" bl bm r pids=() failed=0
  shift 4
  read -r bl bm <<<"$(batches "$preset")"
  local per=$((world / nodes))
  port=$((port + 1))
  rm -rf "$dir" && mkdir -p "$dir"
  local sets=(--set data.source=synthetic --set launch.threads_per_rank=1 --set parallel.mode=fsdp
    --set "launch.nproc_per_node=$per" --set "launch.nnodes=$nodes"
    --set "data.datasets[0].batch_size=$bl" --set "data.datasets[1].batch_size=$bm"
    --set "data.datasets[0].samples_per_epoch=$((bl * world * steps))"
    --set "data.datasets[1].samples_per_epoch=$((bm * world * steps))"
    --set optim.epochs=1 --set checkpoint.every_steps=0 --set telemetry.interval_steps=1000000
    --set telemetry.memory_every_steps=1000000 --set telemetry.logging_steps=1000000 "$@")
  ((nodes > 1)) && sets+=(--set launch.kind=external)  # several nodes: the ranks are started here, not by the app
  for ((r = 0; r < world; ++r)); do
    RANK=$r WORLD_SIZE=$world LOCAL_RANK=$((r % per)) LOCAL_WORLD_SIZE=$per MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port timeout "$run_timeout" "$probe" --config "$root/resources/presets/$preset.yaml" \
      --run-dir "$dir/run" --out "$dir/peak.$r.jsonl" "${batch_flag[@]}" "${sets[@]}" >"$dir/rank$r.out" 2>&1 &
    pids+=($!)
  done
  for r in "${!pids[@]}"; do wait "${pids[$r]}" || { failed=1; echo "rank $r failed:" >&2; tail -5 "$dir/rank$r.out" >&2; }; done
  return $failed
}

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(uname -m), $(getconf _NPROCESSORS_ONLN) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "steps=$steps (measured over steps 2..$steps)  batches=${BATCHES:-worst}  presets: ${presets[*]}  bin=$bin"
printf '%-5s %-5s %-13s %-17s %-4s %4s | %11s %11s %7s | %s\n' preset world strategy policy ckpt rank planned \
  measured error "at the measured peak: params+other act grad gath opt (bytes)"
errors="$tmp/errors"
: >"$errors"
one() {  # one PRESET WORLD NODES STRATEGY POLICY CKPT
  local preset="$1" world="$2" nodes="$3" strategy="$4" policy="$5" ckpt="$6" label="$4"
  local dir="$tmp/$preset-$world-$nodes-$strategy-$policy-$ckpt"
  ((nodes > 1)) && label="$strategy/${nodes}x$((world / nodes))"
  local mode=(--set "parallel.sharding_strategy=$strategy")
  [[ "$strategy" == single || "$strategy" == ddp ]] && mode=(--set parallel.mode=ddp)
  probe_run "$preset" "$world" "$nodes" "$dir" "${mode[@]}" \
    --set "parallel.wrap_policy=$policy" --set "model.gradient_checkpointing=$ckpt" || return 1
  local planned
  planned=$("$bin" plan --config "$dir/run/config.yaml" --world "$world" --nodes "$nodes" --strategies "$strategy" \
    --policies "$policy" --no-reference --json | jq -r '.estimates[0].per_rank.peak')
  for ((r = 0; r < world; ++r)); do
    jq -s -r --argjson p "$planned" '
      [.[] | select(.step >= 2)] | max_by(.peak) as $m | $m.phases as $f
      | "\($p) \($m.peak) \(($p / $m.peak - 1) * 100)"
        + " \($f.parameters[2] + $f.other[2]) \($f.activations[2]) \($f.gradients[2]) \($f.gathered[2]) \($f.optimizer[2])"' \
      "$dir/peak.$r.jsonl" | {
      read -r p m e po a g ga o
      printf '%-5s %-5s %-13s %-17s %-4s %4s | %11s %11s %+6.1f%% | %s %s %s %s %s\n' "$preset" "$world" "$label" \
        "$policy" "${ckpt:0:3}" "$r" "$p" "$m" "$e" "$po" "$a" "$g" "$ga" "$o"
      echo "$e" >>"$errors"
    }
  done
  [[ -n "${KEEP:-}" ]] && mkdir -p "$KEEP" && cp -r "$dir" "$KEEP/" || true
}
for preset in "${presets[@]}"; do
  for ckpt in "${ckpts[@]}"; do
    for policy in "${policies[@]}"; do
      for world in "${worlds[@]}"; do
        if [[ " ${MODES:-fsdp} " == *" ddp "* ]]; then
          if ((world == 1)); then one "$preset" 1 1 single "$policy" "$ckpt"; else one "$preset" "$world" 1 ddp "$policy" "$ckpt"; fi
        fi
        [[ " ${MODES:-fsdp} " == *" fsdp "* ]] || continue
        if ((world == 1)); then
          one "$preset" 1 1 full_shard "$policy" "$ckpt"
          continue
        fi
        for strategy in "${strategies[@]}"; do one "$preset" "$world" 1 "$strategy" "$policy" "$ckpt"; done
        ((world == 4 && hybrid)) && one "$preset" 4 2 hybrid_shard "$policy" "$ckpt"
      done
    done
  done
done
echo
awk '{a = $1 < 0 ? -$1 : $1; print a}' "$errors" | med | {
  read -r median
  sort -g "$errors" | awk -v median="$median" '
    {e[NR] = $1; a = $1 < 0 ? -$1 : $1; if (a > max) max = a; if ($1 > 10 || $1 < -5) bad++}
    END {printf "%d rank figures: median |error| %.1f%% (target <= 5%%), max |error| %.1f%% (target <= 10%%), " \
                "worst %+.1f%% (target >= -5%%); %d outside [-5%%, +10%%]\n", NR, median, max, e[1], bad}'
}
