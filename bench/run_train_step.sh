#!/usr/bin/env bash
# bench/train_step: our engine (bench_train_step) against the PyTorch-eager
# baseline (bench/train_step_baseline.py, Debian python3-torch) on the tiny and
# small presets at 1 and 2 threads, REPS alternating repetitions each; prints
# the median over repetitions of each side's median step time and the ratio
# ours / python in samples/s (target >= 1.3), plus the telemetry overhead.
#
# Usage: bench/run_train_step.sh [BUILD_DIR=build] [REPS=3] [WARMUP=5] [ITERS=30]
# Env:   PRESETS="tiny small"  THREADS="1 2"  PYTHON=/usr/bin/python3
#        OMP_WAIT_POLICY (default PASSIVE for both sides: with libgomp's default
#        spin-waiting, 2 threads on a loaded 2-core VM ran 10-100x slower)
set -euo pipefail
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
reps="${2:-3}"
warmup="${3:-5}"
iters="${4:-30}"
presets="${PRESETS:-tiny small}"
threads_list="${THREADS:-1 2}"
python="${PYTHON:-/usr/bin/python3}"
bin="$build/bin/bench_train_step"
[[ -x "$bin" ]] || { echo "no $bin: build the bench_train_step target first" >&2; exit 1; }

field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" | tail -1; }
med() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "OMP_WAIT_POLICY=$OMP_WAIT_POLICY; OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=threads per run; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "reps=$reps warmup=$warmup iters=$iters  ours=$bin  python=$python ($("$python" -c 'import torch; print(torch.__version__)'))"
printf '\n%-6s %3s | %10s %10s | %10s %10s | %6s | %9s %8s\n' preset thr ours_ms ours_sps py_ms py_sps ratio telem_us telem_%
for preset in $presets; do
  for t in $threads_list; do
    o_ms=(); o_sps=(); p_ms=(); p_sps=(); tel=(); pct=()
    for ((r = 0; r < reps; ++r)); do
      # No oversubscription: OpenMP and OpenBLAS get exactly the intra-op thread count.
      out=$(OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t MKL_NUM_THREADS=$t "$bin" "$preset" "$t" "$warmup" "$iters")
      echo "$out" | sed 's/^/  # /' >&2
      o_ms+=("$(echo "$out" | field median_step_ms)"); o_sps+=("$(echo "$out" | field samples_per_s)")
      tel+=("$(echo "$out" | field telemetry_us)"); pct+=("$(echo "$out" | field telemetry_pct)")
      out=$(OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t MKL_NUM_THREADS=$t "$python" "$here/train_step_baseline.py" "$preset" "$t" "$warmup" "$iters")
      echo "$out" | sed 's/^/  # /' >&2
      p_ms+=("$(echo "$out" | field median_step_ms)"); p_sps+=("$(echo "$out" | field samples_per_s)")
    done
    om=$(printf '%s\n' "${o_ms[@]}" | med); os=$(printf '%s\n' "${o_sps[@]}" | med)
    pm=$(printf '%s\n' "${p_ms[@]}" | med); ps=$(printf '%s\n' "${p_sps[@]}" | med)
    tu=$(printf '%s\n' "${tel[@]}" | med); tp=$(printf '%s\n' "${pct[@]}" | med)
    ratio=$(awk -v a="$os" -v b="$ps" 'BEGIN {printf "%.2f", a / b}')
    printf '%-6s %3s | %10.2f %10.1f | %10.2f %10.1f | %5sx | %9.1f %7.3f%%\n' "$preset" "$t" "$om" "$os" "$pm" "$ps" "$ratio" "$tu" "$tp"
  done
done
echo
echo "ratio = ours samples/s / python samples/s (medians over $reps repetitions); target >= 1.3. telem = StepEvent build + emit() per step."
