#!/usr/bin/env bash
# bench/data: shard pipeline throughput. Writes LAION and MMC4 shards of
# generated pictures (448x336 JPEGs, about LAION's median size) once, then per
# repetition, alternating: our pipeline with 1 and 2 workers, the Python
# baseline (bench/data/data_pipeline_baseline.py: tarfile + PIL + numpy, no
# tokenisation), and the raw JPEG decode rate of the same images (one thread).
# Prints medians and the ratios the issue asks for: ours per worker / Python
# (target >= 3) and ours (1 worker) / raw decode (target >= 0.5).
#
# Usage: bench/run_data_pipeline.sh [BUILD_DIR=build] [REPS=3] [LAION_SAMPLES=1536] [MMC4_DOCS=576]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
reps="${2:-3}"
laion_n="${3:-1536}"
mmc4_n="${4:-576}"
python="${PYTHON:-$(bash "$(dirname "${BASH_SOURCE[0]}")/../scripts/python-env.sh" --python)}"
bin="$build/bin/bench_data_pipeline"
cli="$build/bin/flamingo-train"
[[ -x "$bin" && -x "$cli" ]] || { echo "build bench_data_pipeline and flamingo_train first" >&2; exit 1; }
data="${BENCH_DATA_DIR:-$build/bench-data}"
if [[ ! -f "$data/tokenizer/vocab.json" ]]; then
  "$cli" shards make-synthetic --out "$data" --laion-shards 4 --laion-samples 512 --mmc4-shards 4 \
    --mmc4-docs 64 --width 448 --height 336 --max-images 4 --seed 1 >/dev/null
fi
field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" | tail -1; }
med() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); reps=$reps; shards: $data"
printf '\n%-6s | %9s %9s %9s | %9s | %12s | %8s %8s | %9s\n' kind ours_w1 ours_w2 python decode decode_img/s w1/py w2/py/2 w1/decode
for kind in laion mmc4; do
  n=$laion_n; [[ $kind == mmc4 ]] && n=$mmc4_n
  batch=64; [[ $kind == mmc4 ]] && batch=16
  w1=(); w2=(); py=(); dec=(); deci=()
  for ((r = 0; r < reps; ++r)); do
    o=$(OMP_NUM_THREADS=1 "$bin" pipeline "$data" $kind 1 "$n" $batch); echo "  # $o" >&2; w1+=("$(echo "$o" | field samples_per_s)")
    o=$(OMP_NUM_THREADS=1 "$bin" pipeline "$data" $kind 2 "$n" $batch); echo "  # $o" >&2; w2+=("$(echo "$o" | field samples_per_s)")
    o=$("$python" "$here/data/data_pipeline_baseline.py" "$data" $kind "$n" $batch); echo "  # $o" >&2; py+=("$(echo "$o" | field samples_per_s)")
    o=$("$bin" decode "$data" $kind "$n"); echo "  # $o" >&2
    dec+=("$(echo "$o" | field samples_per_s)"); deci+=("$(echo "$o" | field images_per_s)")
  done
  m1=$(printf '%s\n' "${w1[@]}" | med); m2=$(printf '%s\n' "${w2[@]}" | med)
  mp=$(printf '%s\n' "${py[@]}" | med); md=$(printf '%s\n' "${dec[@]}" | med); mi=$(printf '%s\n' "${deci[@]}" | med)
  printf '%-6s | %9.1f %9.1f %9.1f | %9.1f | %12.1f | %8.2f %8.2f | %9.2f\n' $kind "$m1" "$m2" "$mp" "$md" "$mi" \
    "$(awk "BEGIN{print $m1 / $mp}")" "$(awk "BEGIN{print $m2 / $mp / 2}")" "$(awk "BEGIN{print $m1 / $md}")"
done
echo "(samples/s; MMC4 samples are documents. decode = raw JPEG decode of the same images, one thread.)"
