#!/usr/bin/env bash
# bench/train_step: our engine (bench_train_step) against the PyTorch-eager
# baseline (bench/train_step_baseline.py) and the faithful OpenFlamingo baseline
# (bench/train_step_openflamingo.py: OpenFlamingo's and open_clip's own modules
# from the packages pinned in the project's Python environment), all on the same
# torch. Shapes: bench/configs/compare.yaml ("compare") and the tiny and small
# presets, at 1 and 2 threads, REPS repetitions each, the sides alternating
# within each repetition; prints the median over repetitions of each side's
# median step time, ours / own baseline and ours / OpenFlamingo in samples/s
# (target >= 1.5 against OpenFlamingo), plus the telemetry overhead.
#
# Usage: bench/run_train_step.sh [BUILD_DIR=build] [REPS=5] [WARMUP=5] [ITERS=30]
# Env:   PRESETS="compare tiny small"  THREADS="1 2"
#        PYTHON (default: the environment's, scripts/python-env.sh --python)
#        OMP_WAIT_POLICY: the caller's for every side, default unset (libgomp's
#        default). Every side's BLAS is the MKL in PyTorch's wheel on that one
#        libgomp pool (NOTE [One BLAS]); PASSIVE made 2-thread steps 2-3x slower
#        on both sides (docs/benchmarks.md).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
reps="${2:-5}"
warmup="${3:-5}"
iters="${4:-30}"
presets="${PRESETS:-compare tiny small}"
threads_list="${THREADS:-1 2}"
python="${PYTHON:-$(bash "$here/../scripts/python-env.sh" --python)}"
bin="$build/bin/bench_train_step"
[[ -x "$bin" ]] || { echo "no $bin: build the bench_train_step target first" >&2; exit 1; }

# Our engine takes a preset name (resources/presets/NAME.yaml) or a config path.
ours_config() { if [[ "$1" == compare ]]; then echo "$here/configs/compare.yaml"; else echo "$1"; fi; }
field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" | tail -1; }
med() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# One side's run with exactly T threads for OpenMP, OpenBLAS and MKL (no oversubscription).
run_side() {
  local t="$1"
  shift
  OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t MKL_NUM_THREADS=$t "$@"
}

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}; OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=threads per run; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "reps=$reps warmup=$warmup iters=$iters  ours=$bin  python=$python ($("$python" -c 'import torch; print(torch.__version__)'))"
echo "reference packages: $("$python" -c 'import importlib.metadata as m; print(", ".join(d + " " + m.version(d) for d in ("open-flamingo", "open-clip-torch", "einops", "einops-exts")))')"
printf '\n%-7s %3s | %9s %8s | %9s %8s | %9s %8s | %7s %7s | %17s | %9s %8s\n' \
  preset thr ours_ms ours_sps py_ms py_sps of_ms of_sps ours/py ours/of "paired of (range)" telem_us telem_%
for preset in $presets; do
  for t in $threads_list; do
    o_ms=(); o_sps=(); p_ms=(); p_sps=(); f_ms=(); f_sps=(); tel=(); pct=(); pair=()
    for ((r = 0; r < reps; ++r)); do
      out=$(run_side "$t" "$bin" "$(ours_config "$preset")" "$t" "$warmup" "$iters")
      echo "$out" | sed 's/^/  # /' >&2
      o_ms+=("$(echo "$out" | field median_step_ms)"); o_sps+=("$(echo "$out" | field samples_per_s)")
      tel+=("$(echo "$out" | field telemetry_us)"); pct+=("$(echo "$out" | field telemetry_pct)")
      out=$(run_side "$t" "$python" "$here/train_step_baseline.py" "$preset" "$t" "$warmup" "$iters")
      echo "$out" | sed 's/^/  # /' >&2
      p_ms+=("$(echo "$out" | field median_step_ms)"); p_sps+=("$(echo "$out" | field samples_per_s)")
      out=$(run_side "$t" "$python" "$here/train_step_openflamingo.py" "$preset" "$t" "$warmup" "$iters")
      echo "$out" | sed 's/^/  # /' >&2
      f_ms+=("$(echo "$out" | field median_step_ms)"); f_sps+=("$(echo "$out" | field samples_per_s)")
      # This repetition's own ratio: both sides ran within half a minute of each other, so a slow spell
      # of the machine that lasts minutes moves both (docs/benchmarks.md, "Paired ratios, and where a 2-thread step goes").
      pair+=("$(awk -v a="${o_sps[-1]}" -v b="${f_sps[-1]}" 'BEGIN {printf "%.3f", a / b}')")
    done
    pm_of=$(printf '%s\n' "${pair[@]}" | med)
    pr_lo=$(printf '%s\n' "${pair[@]}" | sort -g | head -1); pr_hi=$(printf '%s\n' "${pair[@]}" | sort -g | tail -1)
    paired=$(awk -v m="$pm_of" -v l="$pr_lo" -v h="$pr_hi" 'BEGIN {printf "%.2fx (%.2f-%.2f)", m, l, h}')
    om=$(printf '%s\n' "${o_ms[@]}" | med); os=$(printf '%s\n' "${o_sps[@]}" | med)
    pm=$(printf '%s\n' "${p_ms[@]}" | med); ps=$(printf '%s\n' "${p_sps[@]}" | med)
    tu=$(printf '%s\n' "${tel[@]}" | med); tp=$(printf '%s\n' "${pct[@]}" | med)
    ratio_py=$(awk -v a="$os" -v b="$ps" 'BEGIN {printf "%.2fx", a / b}')
    fm=$(printf '%s\n' "${f_ms[@]}" | med); fs=$(printf '%s\n' "${f_sps[@]}" | med)
    ratio_of=$(awk -v a="$os" -v b="$fs" 'BEGIN {printf "%.2fx", a / b}')
    fm=$(printf '%.2f' "$fm"); fs=$(printf '%.1f' "$fs")
    printf '%-7s %3s | %9.2f %8.1f | %9.2f %8.1f | %9s %8s | %7s %7s | %17s | %9.1f %7.3f%%\n' \
      "$preset" "$t" "$om" "$os" "$pm" "$ps" "$fm" "$fs" "$ratio_py" "$ratio_of" "$paired" "$tu" "$tp"
  done
done
echo
echo "py = bench/train_step_baseline.py (ours in PyTorch eager); of = bench/train_step_openflamingo.py (OpenFlamingo's modules)."
echo "ratios = ours samples/s / theirs (medians over $reps repetitions); target ours/of >= 1.5. telem = StepEvent build + emit() per step."
echo "paired of = the median over repetitions of each repetition's ours/of, with the lowest and highest."
