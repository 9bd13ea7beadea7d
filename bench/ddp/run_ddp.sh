#!/usr/bin/env bash
# bench/ddp: our DDP (2 ranks x 1 thread, `flamingo-train launch --nproc-per-node 2`)
# against our 1-rank step on the same per-rank batch (scaling efficiency) and
# against Python torch.nn.parallel.DistributedDataParallel on Gloo running the
# model and step of bench/train_step_baseline.py (bench/ddp/ddp_baseline.py).
# Per preset and repetition, in one run (order rotated each repetition):
#   ours-1   flamingo-train train, one process, 1 thread
#   ours-2   flamingo-train launch --nproc-per-node 2 -- train, 1 thread per rank
#   py-2     bench/ddp/ddp_baseline.py: 2 Gloo ranks, 1 thread each
#   py-1     bench/train_step_baseline.py, 1 thread (Python's own scaling efficiency)
# Our figures come from rank 0's events.jsonl: the first WARMUP step events are
# skipped, then the median over steps of step_time_s, comm_time_s and the summed
# per-dataset samples_per_s; printed are the medians over REPS repetitions.
# Data: data.source=synthetic (generated in memory, so no loading is measured);
# batches as train_step_baseline.py's PRESETS (tiny 4 LAION + 2 MMC4, small 8 + 4
# per rank); OPT family as the Python model (dropout 0.1); no checkpoint in the
# timed steps, memory events and log lines off, one step event per step.
#
# Usage: bench/ddp/run_ddp.sh [BUILD_DIR=build] [REPS=3] [STEPS=30] [PRESET...=tiny small]
# Env:   WARMUP=5  PYTHON (default scripts/python-env.sh --python)  PORT=29650 (first rendezvous port; each run takes the next)
#        TRANSPORT=gloo: our ranks without the shared-memory transport (parallel.intra_node_transport)
#        OMP_WAIT_POLICY (default PASSIVE: one thread per rank here)  RUN_TIMEOUT=900 (s per run)
# Needs: jq, Debian's python3-torch (PYTHON), BUILD_DIR/bin/flamingo-train.
set -euo pipefail
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=../rank_bench_lib.sh
source "$root/bench/rank_bench_lib.sh"
rank_bench_init ddp 29650 "$@"

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(uname -m), $(getconf _NPROCESSORS_ONLN) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "OMP_WAIT_POLICY=$OMP_WAIT_POLICY OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "reps=$reps warmup=$warmup steps=$steps  ours=$bin  python=$python ($("$python" -c 'import torch; print(torch.__version__)'))"
grep -q comm_time_s "$bin" || echo "note: $bin does not write comm_time_s (built before it existed): our comm column is n/a"

declare -A R  # R[preset,kind] = per-rep values, one a line
for preset in "${presets[@]}"; do
  for ((r = 0; r < reps; ++r)); do
    kinds=(ours1 ours2 py2 py1)
    for ((k = 0; k < 4; ++k)); do
      kind="${kinds[$(((k + r) % 4))]}"
      case "$kind" in
        ours1 | ours2)
          w=${kind#ours}
          run_ours "$preset" "$w" "$tmp/$preset-$kind-$r"  # not in $(...): it takes the next port
          read -r ms sps comm wall <<<"$(summarise "$tmp/$preset-$kind-$r/events.jsonl")"
          echo "  # $preset rep $r $kind: step_ms=$ms samples_per_s=$sps comm_ms=$comm wall_samples_per_s=$wall" >&2
          R[$preset,$kind.ms]+="$ms"$'\n'; R[$preset,$kind.sps]+="$sps"$'\n'
          R[$preset,$kind.comm]+="$comm"$'\n'; R[$preset,$kind.wall]+="$wall"$'\n'
          ;;
        py2)
          port=$((port + 1))
          out=$(timeout "$run_timeout" "$python" "$here/ddp_baseline.py" "$preset" "$warmup" "$steps" --nproc 2 --port "$port")
          echo "$out" | sed "s/^/  # $preset rep $r py2: /" >&2
          R[$preset,py2.ms]+="$(echo "$out" | field median_step_ms)"$'\n'
          R[$preset,py2.sps]+="$(echo "$out" | field samples_per_s)"$'\n'
          R[$preset,py2.ns]+="$(echo "$out" | field nosync_median_step_ms)"$'\n'
          R[$preset,py2.ar]+="$(echo "$out" | field allreduce_overhead_ms)"$'\n'
          ;;
        py1)
          out=$(timeout "$run_timeout" "$python" "$root/bench/train_step_baseline.py" "$preset" 1 "$warmup" "$steps")
          echo "$out" | sed "s/^/  # $preset rep $r py1: /" >&2
          R[$preset,py1.ms]+="$(echo "$out" | field median_step_ms)"$'\n'
          R[$preset,py1.sps]+="$(echo "$out" | field samples_per_s)"$'\n'
          ;;
      esac
    done
  done
done

m() { printf '%s' "${R[$1]}" | grep -v '^$' | grep -v nan | med; }
echo
# Paired ratio: ours DDP / Python DDP within each repetition, then the median (robust to drift between repetitions).
paired() { paste <(printf '%s' "${R[$1,ours2.sps]}" | grep -v '^$') <(printf '%s' "${R[$1,py2.sps]}" | grep -v '^$') |
  awk '$1 != "nan" && $2 != "nan" && $2 > 0 {print $1 / $2}' | med; }
printf '%-6s | %-28s | %-28s | %-28s | %-22s | %s\n' preset "ours 1 rank: ms, samples/s" "ours DDP x2: ms, samples/s" \
  "Python DDP x2: ms, samples/s" "ours/Python (paired)" "scaling eff. ours (Python)"
for preset in "${presets[@]}"; do
  o1ms=$(m "$preset,ours1.ms"); o1=$(m "$preset,ours1.sps"); o2ms=$(m "$preset,ours2.ms"); o2=$(m "$preset,ours2.sps")
  p2ms=$(m "$preset,py2.ms"); p2=$(m "$preset,py2.sps"); p1ms=$(m "$preset,py1.ms"); p1=$(m "$preset,py1.sps")
  awk -v pr="$preset" -v a="$o1ms" -v b="$o1" -v c="$o2ms" -v d="$o2" -v e="$p2ms" -v f="$p2" -v g="$p1" \
    -v q="$(paired "$preset")" 'BEGIN {
    printf "%-6s | %10.2f ms %10.1f/s    | %10.2f ms %10.1f/s    | %10.2f ms %10.1f/s    | %6.2fx (%5.2fx)     | %5.1f %% (%5.1f %%)\n",
      pr, a, b, c, d, e, f, d / f, q, 100 * d / (2 * b), 100 * f / (2 * g) }'
done
echo
printf '%-6s | %-16s | %-24s | %-22s | %-24s | %-22s | %s\n' preset "ours comm_time" "ours DDP - 1-rank step" \
  "ours comm / DDP step" "Python DDP - no_sync" "Python DDP - 1-rank" "ours wall samples/s: 1 rank, DDP (ours/Python)"
for preset in "${presets[@]}"; do
  awk -v pr="$preset" -v comm="$(m "$preset,ours2.comm")" -v o1="$(m "$preset,ours1.ms")" -v o2="$(m "$preset,ours2.ms")" \
    -v ar="$(m "$preset,py2.ar")" -v p2="$(m "$preset,py2.ms")" -v p1="$(m "$preset,py1.ms")" \
    -v w1="$(m "$preset,ours1.wall")" -v w2="$(m "$preset,ours2.wall")" -v ps="$(m "$preset,py2.sps")" 'BEGIN {
    cs = (comm == "nan") ? "n/a" : sprintf("%.2f ms", comm)
    cp = (comm == "nan") ? "n/a" : sprintf("%.1f %%", 100 * comm / o2)
    printf "%-6s | %-16s | %18.2f ms   | %-22s | %18.2f ms   | %16.2f ms   | %.1f, %.1f (%.2fx)\n", pr, cs, o2 - o1, cp, ar, p2 - p1, w1, w2, w2 / ps }'
done
echo
echo "samples/s: all ranks; medians over steps after $warmup warmup steps, then over $reps repetitions."
echo "ours/Python: ratio of the medians; (paired): median over repetitions of that repetition's ratio."
echo "scaling efficiency = DDP samples/s / (2 x 1-rank samples/s); target ours/Python >= 1.2x."
echo "wall samples/s: from the step events' timestamps, so also what happens between steps (per-rank figures gather, event writing)."
echo "ours comm_time = median comm_time_s (rank 0 waiting on rank 1: what the two iteration agreements and the gradient all-reduce did not hide)."
echo "Python DDP - no_sync = the same DDP step with both backwards under no_sync() (no all-reduce), same processes."
