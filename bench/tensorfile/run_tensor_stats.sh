#!/bin/bash
# Writes (once) a ~1 GiB fp32 torch.save file and runs bench_tensor_stats and
# the torch.load baseline on it, one thread each; prints both and the ratio.
# Usage: bench/tensorfile/run_tensor_stats.sh [BUILD_DIR=build] [RUNS=5] [FILE=/tmp/fs_stats_1g.pt] [GIB=1]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
runs=${2:-5}
file=${3:-/tmp/fs_stats_1g.pt}
gib=${4:-1}
py="${PYTHON:-$(bash "$(dirname "$0")/../../scripts/python-env.sh" --python)}"  # the environment's torch
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
[ -f "$file" ] || "$py" "$here/tensor_stats_baseline.py" --write "$file" "$gib"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc --all) cores; file $(du -h "$file" | cut -f1)"
ours=$("$build/bin/bench_tensor_stats" "$file" "$runs" 100)
echo "$ours" | grep -v _median_s=
ranged=$("$build/bin/bench_tensor_stats" "$file" "$runs" 100 --range -6 6 | head -1)
echo "$ranged"
theirs=$("$py" "$here/tensor_stats_baseline.py" "$file" "$runs" 100)
echo "$theirs" | grep -v _median_s=
a=$(grep -o 'ours_median_s=.*' <<<"$ours" | cut -d= -f2)
b=$(grep -o 'torch_median_s=.*' <<<"$theirs" | cut -d= -f2)
awk -v a="$a" -v b="$b" 'BEGIN { printf "ratio: torch.load+stats / ours = %.2fx\n", b / a }'
