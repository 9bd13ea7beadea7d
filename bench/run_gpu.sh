#!/usr/bin/env bash
# bench/run_gpu.sh: one training iteration on one CUDA device, our engine
# (bench_train_step --device=cuda) against OpenFlamingo's own modules in PyTorch
# eager (bench/train_step_openflamingo_gpu.py: the open-flamingo 2.0.1 package,
# open_clip's ViT, a transformers LM, random weights from configs), both at
# amp_bf16 on the same shapes and synthetic batches of the same layout:
#   small  resources/presets/small.yaml
#   3b     resources/presets/openflamingo-3b-vitl-mpt1b.yaml: ViT-L/14 + MPT-1B,
#          cross-attention every layer, 64 LAION + 32 MMC4 per step
# Prints per case and side the median step time, samples/s and MFU, and ours /
# OpenFlamingo. MFU = model FLOPs per step x steps/s / the GPU's peak: the
# FLOPs are counted once on the baseline's step (torch.utils.flop_counter:
# matrix products, convolutions, attention; forward and backward) and used for
# both sides (same model, same batch shapes); the peak is the dense bf16
# datasheet figure of an H100/H200 (989.4 TFLOP/s) unless PEAK_TFLOPS is set.
# Our engine skips padded tokens (NOTE [Skipped padding]), so it does less
# arithmetic for the same model FLOPs. gpu-check.sh runs this (docs/gpu.md).
# targets: bench_train_step
#
# Usage: bench/run_gpu.sh [BUILD_DIR=build] [--smoke]
#   --smoke  one step of each side of the tiny preset on the CPU (fp32): the
#            script, both programs and the baseline's packages work
#            (gpu-check.sh --no-device, CI)
# Env:   PYTHON (default python3: gpu-check.sh passes its venv's), CASES
#        ("small 3b"), REPS (1), WARMUP (3), ITERS (10), THREADS (host threads
#        for ours, default min(nproc, 8)), PEAK_TFLOPS, OUT (the table is also
#        written to $OUT/bench_gpu.txt).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="build"
smoke=0
for a in "$@"; do
  case "$a" in
    --smoke) smoke=1 ;;
    *) build="$a" ;;
  esac
done
python="${PYTHON:-python3}"
bin="$build/bin/bench_train_step"
[[ -x "$bin" ]] || { echo "no $bin: build the bench_train_step target first" >&2; exit 1; }
reps="${REPS:-1}"
threads="${THREADS:-$(($(nproc) < 8 ? $(nproc) : 8))}"
if ((smoke)); then
  cases="${CASES:-tiny}"
  device=cpu precision=fp32 warmup=1 iters=1 threads=1
else
  cases="${CASES:-small 3b}"
  device=cuda precision=amp_bf16 warmup="${WARMUP:-3}" iters="${ITERS:-10}"
fi

# Our side's config: a preset name, with its synthetic batches.
ours_args() {
  case "$1" in
    tiny | small) echo "$1" ;;
    3b) echo "openflamingo-3b-vitl-mpt1b" ;;
    *) echo "run_gpu: unknown case $1" >&2; return 1 ;;
  esac
}
pool() { case "$1" in 3b) echo 4 ;; *) echo 8 ;; esac; }
field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" | tail -1; }
med() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

gpu_name="cpu"
if [[ "$device" == cuda ]]; then
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
fi
peak="${PEAK_TFLOPS:-}"
if [[ -z "$peak" && "$device" == cuda ]]; then
  case "$gpu_name" in
    *H100* | *H200* | *H800* | *H20*) peak=989.4 ;;  # dense bf16, SXM datasheet
  esac
fi

report=()
line() { report+=("$1"); echo "$1"; }
line "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  device: $device ($gpu_name)  peak: ${peak:-unknown} TFLOP/s  precision: $precision"
line "ours: $bin (threads $threads); baseline: $python ($("$python" -c 'import importlib.metadata as m, torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__, "open_flamingo", m.version("open_flamingo"), "open_clip", m.version("open_clip_torch"))' 2>/dev/null || echo 'import failed'))"
line "reps=$reps warmup=$warmup iters=$iters"
status=0
rows=()
for c in $cases; do
  o_sps=(); f_sps=(); o_ms=(); f_ms=(); flops=""; samples=""
  for ((r = 0; r < reps; ++r)); do
    cfg=$(ours_args "$c") || { status=1; continue; }
    out=$("$bin" "$cfg" "$threads" "$warmup" "$iters" --device="$device" --set=optim.precision="$precision" \
      --pool="$(pool "$c")" 2>&1)
    rc=$?
    echo "$out" | sed 's/^/  # /'
    if ((rc != 0)) || ! grep -q '^ours ' <<<"$out"; then
      echo "run_gpu: $c: ours failed (exit $rc)"
      status=1
    else
      o_ms+=("$(grep '^ours ' <<<"$out" | field median_step_ms)")
      o_sps+=("$(grep '^ours ' <<<"$out" | field samples_per_s)")
    fi
    fargs=("$c" "$warmup" "$iters" --device "$device" --precision "$precision" --pool "$(pool "$c")")
    ((r > 0)) && fargs+=(--no-flops)
    out=$(PYTHONUNBUFFERED=1 "$python" "$here/train_step_openflamingo_gpu.py" "${fargs[@]}" 2>&1)
    rc=$?
    echo "$out" | grep -v 'Warning\|warnings.warn\|output = func\|return super().forward' | sed 's/^/  # /'
    if ((rc != 0)) || ! grep -q '^openflamingo ' <<<"$out"; then
      echo "run_gpu: $c: OpenFlamingo baseline failed (exit $rc)"
      status=1
    else
      f_ms+=("$(grep '^openflamingo ' <<<"$out" | field median_step_ms)")
      f_sps+=("$(grep '^openflamingo ' <<<"$out" | field samples_per_s)")
      ((r == 0)) && flops=$(grep '^openflamingo ' <<<"$out" | field flops_per_step)
      samples=$(grep '^openflamingo ' <<<"$out" | field samples_per_step)
    fi
  done
  os=$(printf '%s\n' "${o_sps[@]}" | sed '/^$/d' | med)
  fs=$(printf '%s\n' "${f_sps[@]}" | sed '/^$/d' | med)
  om=$(printf '%s\n' "${o_ms[@]}" | sed '/^$/d' | med)
  fm=$(printf '%s\n' "${f_ms[@]}" | sed '/^$/d' | med)
  mfu() {  # samples/s -> MFU in %
    if [[ "$1" == - || -z "$flops" || "$flops" == 0 || -z "$samples" || -z "$peak" ]]; then echo -; return; fi
    awk -v s="$1" -v f="$flops" -v n="$samples" -v p="$peak" 'BEGIN {printf "%.1f%%", 100 * f * s / n / (p * 1e12)}'
  }
  ratio=$(awk -v a="$os" -v b="$fs" 'BEGIN {if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2fx", a / b}')
  tflop=$(awk -v f="${flops:-0}" 'BEGIN {if (f > 0) printf "%.2f", f / 1e12; else print "-"}')
  rows+=("$(printf '%-6s | %9s %9s %6s | %9s %9s %6s | %7s | %9s' "$c" "$om" "$os" "$(mfu "$os")" "$fm" "$fs" "$(mfu "$fs")" "$ratio" "$tflop")")
done
line ""
line "$(printf '%-6s | %9s %9s %6s | %9s %9s %6s | %7s | %9s' case ours_ms ours_sps mfu of_ms of_sps mfu ours/of TFLOP/step)"
for r in "${rows[@]}"; do line "$r"; done
line ""
line "ours = bench_train_step (LibTorch engine); of = train_step_openflamingo_gpu.py (open-flamingo 2.0.1 in PyTorch eager)."
line "ms = median step; sps = samples/s; mfu = model FLOPs (TFLOP/step, counted on the baseline's step) x steps/s / peak."
if [[ -n "${OUT:-}" && -d "${OUT:-}" ]]; then
  printf '%s\n' "${report[@]}" >"$OUT/bench_gpu.txt"
fi
exit "$status"
