#!/usr/bin/env bash
# bench/fsdp: the fit's step-time model (NOTE [Step-time model] in backend/fsdp_plan/step_time.h) against
# measured CPU step times: does `flamingo-train plan --fit` rank the choices in the order they run?
# For each preset: `plan --fit --device cpu --json` on a "cluster" of this machine (1 node x WORLD ranks,
# figures from the env below), then up to CHOICES of its ranked choices, spread evenly from the fastest
# to the slowest, each trained WARMUP + STEPS steps (synthetic data, 1 thread per rank, bench/rank_bench_lib.sh's
# run_ours with the choice's `set` assignments) REPS times; measured = the median step_time_s after the
# warmup, median over reps. Prints per choice the model's and the measured step time and rank, then the
# Spearman rank correlation and the share of pairs the model orders as measured.
#
# Usage: bench/fsdp/fit_rank_order.sh [BUILD_DIR=build] [REPS=1] [STEPS=20] [PRESET...=tiny]
# Env:   WORLD=2  CHOICES=6  WARMUP=3  PORT=29900  RUN_TIMEOUT=600
#        PEAK_GFLOPS=10 (the model's FP32 FLOP/s per rank at 1 thread; 16-bit: PEAK16_GFLOPS=2.5)
#        GBS=2 (GB/s between the ranks)  PRECISIONS=fp32  POLICIES=transformer_layer
#        STRATEGIES=all (the fit's)
#        DEVICE=cpu; cuda: the fit plans for a catalog GPU (FIT_GPU, default H200-SXM-141GB, WORLD of
#        them on one node; the figures above are not used) and every run trains on the GPU
#        (parallel.device=cuda); scripts/gpu-check.sh runs it so on a lent device
# Needs: jq, BUILD_DIR/bin/flamingo-train, the repository's Python env (for the batch sizes).
set -euo pipefail
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=../rank_bench_lib.sh
source "$root/bench/rank_bench_lib.sh"
WARMUP="${WARMUP:-3}"
rank_bench_init fit-rank 29900 "${1:-build}" "${2:-1}" "${3:-20}" "${@:4}"
[[ $# -ge 4 ]] || presets=(tiny)
world="${WORLD:-2}"
choices="${CHOICES:-6}"
peak="$(awk -v g="${PEAK_GFLOPS:-10}" 'BEGIN {print g / 1000}')"
peak16="$(awk -v g="${PEAK16_GFLOPS:-2.5}" 'BEGIN {print g / 1000}')"
gbs="${GBS:-2}"
device="${DEVICE:-cpu}"
[[ "$device" == cpu || "$device" == cuda ]] || { echo "DEVICE=$device: cpu or cuda" >&2; exit 2; }

for preset in "${presets[@]}"; do
  read -r bl bm <<<"$(batches "$preset")"
  n=$((warmup + steps))
  base=(--set data.source=synthetic --set launch.threads_per_rank=1
    --set "data.datasets[0].batch_size=$bl" --set "data.datasets[1].batch_size=$bm"
    --set "data.datasets[0].samples_per_epoch=$((bl * world * n))"
    --set "data.datasets[1].samples_per_epoch=$((bm * world * n))"
    --set "launch.nproc_per_node=$world")
  strategies=()
  [[ "${STRATEGIES:-all}" == all ]] || strategies=(--strategies "$STRATEGIES")
  if [[ "$device" == cuda ]]; then
    cluster=(--gpu "${FIT_GPU:-H200-SXM-141GB}" --nodes 1 --gpus-per-node "$world")
  else
    cluster=(--device cpu --nodes 1 --gpus-per-node "$world" --memory-gib 64 --host-memory-gib 64
      --intra-node-gbs "$gbs" --host-gbs "$gbs" --peak-tflops-fp32 "$peak" --peak-tflops-16 "$peak16" --efficiency 1)
  fi
  "$bin" plan --config "$root/resources/presets/$preset.yaml" "${base[@]}" --fit --headroom 0 "${cluster[@]}" \
    --precisions "${PRECISIONS:-fp32}" --policies "${POLICIES:-transformer_layer}" "${strategies[@]}" \
    --json >"$tmp/fit.json"
  total="$(jq '.ranked | length' "$tmp/fit.json")"
  ((total >= 2)) || { echo "$preset: the fit ranked $total choices" >&2; exit 1; }
  picks=$((choices < total ? choices : total))
  echo "== $preset, $world ranks ($device): $total ranked choices, measuring $picks (reps $reps, $steps steps after $warmup)"
  : >"$tmp/pairs"
  for ((k = 0; k < picks; ++k)); do
    i=$((picks == 1 ? 0 : k * (total - 1) / (picks - 1)))
    label="$(jq -r ".ranked[$i] | \"\(.strategy)/\(.wrap_policy) mb \(.micro_batch | map(tostring) | join(\"+\"))x\(.grad_accum_steps) ckpt=\(.gradient_checkpointing) \(.precision)\"" "$tmp/fit.json")"
    model="$(jq -r ".ranked[$i].step_s" "$tmp/fit.json")"
    mapfile -t sets < <(jq -r ".ranked[$i].set[]" "$tmp/fit.json")
    extra=(--set "parallel.device=$device")
    for s in "${sets[@]}"; do extra+=(--set "$s"); done
    times=()
    for ((r = 0; r < reps; ++r)); do
      run_ours "$preset" "$world" "$tmp/run" "${extra[@]}"
      read -r st _ <<<"$(summarise "$tmp/run/events.jsonl")"
      times+=("$st")
    done
    measured="$(printf '%s\n' "${times[@]}" | med)"
    printf '%-60s model %10.4f s  measured %10.2f ms\n' "$label" "$model" "$measured"
    echo "$model $measured" >>"$tmp/pairs"
  done
  awk '
    { m[NR] = $1; t[NR] = $2 }
    function ranks(v, r,   i, j, less, eq) {
      for (i = 1; i <= NR; ++i) { less = 0; eq = 0
        for (j = 1; j <= NR; ++j) { if (v[j] < v[i]) ++less; else if (v[j] == v[i]) ++eq }
        r[i] = less + (eq + 1) / 2 }
    }
    END {
      ranks(m, rm); ranks(t, rt)
      for (i = 1; i <= NR; ++i) { d = rm[i] - rt[i]; s += d * d }
      rho = NR > 1 ? 1 - 6 * s / (NR * (NR * NR - 1)) : 1
      for (i = 1; i <= NR; ++i) for (j = i + 1; j <= NR; ++j) {
        ++pairs; if ((m[i] - m[j]) * (t[i] - t[j]) > 0) ++agree; else if (m[i] == m[j] || t[i] == t[j]) ++ties }
      printf "Spearman rho %.2f; pairs in the measured order %d of %d (%d tied)\n", rho, agree, pairs, ties
    }' "$tmp/pairs"
done
