#!/bin/bash
# Writes (once) a ~1 GiB OpenFlamingo-layout torch.save checkpoint and opens it
# with bench_checkpoint_open (our index) and with Python's torch.load, one
# thread each; prints time and resident-memory growth of both and the ratio.
# Warm: the page cache holds the file (each side runs RUNS times). Cold: where
# /proc/sys/vm/drop_caches is writable (root), each side runs once more after
# the cache is dropped, with its program and libraries read in first.
# Usage: bench/inspect/run_checkpoint_open.sh [BUILD_DIR=build] [RUNS=5] [FILE=/tmp/fs_open_1g.pt] [GIB=1]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
runs=${2:-5}
file=${3:-/tmp/fs_open_1g.pt}
gib=${4:-1}
py="${PYTHON:-$(bash "$(dirname "$0")/../../scripts/python-env.sh" --python)}"  # the environment's torch
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
[ -f "$file" ] || "$py" "$here/checkpoint_open_baseline.py" --write "$file" "$gib"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc --all) cores; file $(du -h "$file" | cut -f1)"
ours=$("$build/bin/bench_checkpoint_open" "$file" "$runs")
echo "$ours" | grep -v _median_s=
theirs=$("$py" "$here/checkpoint_open_baseline.py" "$file" "$runs")
echo "$theirs" | grep -v _median_s=
a=$(grep -o 'ours_median_s=.*' <<<"$ours" | cut -d= -f2)
b=$(grep -o 'torch_median_s=.*' <<<"$theirs" | cut -d= -f2)
awk -v a="$a" -v b="$b" 'BEGIN { printf "ratio: torch.load / ours = %.0fx\n", b / a }'
if [ -w /proc/sys/vm/drop_caches ]; then
  small=$(mktemp --suffix=.pt)
  "$py" -c "import torch, sys; torch.save({'x': torch.zeros(4)}, sys.argv[1])" "$small"
  cold() { sync; echo 1 >/proc/sys/vm/drop_caches; "$@" "$small" 1 >/dev/null; "$@" "$file" 1 | head -1; }
  echo "cold $(cold "$build/bin/bench_checkpoint_open")"
  echo "cold $(cold "$py" "$here/checkpoint_open_baseline.py")"
  rm -f "$small"
else
  echo "cold: not measured (/proc/sys/vm/drop_caches is not writable)"
fi
