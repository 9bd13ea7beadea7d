# Shared by the rank benchmarks (bench/ddp/run_ddp.sh, bench/fsdp/run_fsdp.sh):
# arguments, our runs of flamingo-train, and reading their events.jsonl.
# Source it after setting `root` (the repository).

# rank_bench_init NAME DEFAULT_PORT [BUILD_DIR=build] [REPS=3] [STEPS=30] [PRESET...=tiny small]
# Sets build reps steps presets warmup python port run_timeout bin tmp (removed on exit).
rank_bench_init() {
  local name="$1"
  port="${PORT:-$2}"
  shift 2
  build="${1:-build}"
  reps="${2:-3}"
  steps="${3:-30}"
  shift $(($# < 3 ? $# : 3))
  presets=("$@")
  ((${#presets[@]})) || presets=(tiny small)
  warmup="${WARMUP:-5}"
  python="${PYTHON:-$(bash "$(dirname "${BASH_SOURCE[0]}")/../scripts/python-env.sh" --python)}"
  run_timeout="${RUN_TIMEOUT:-900}"
  bin="$build/bin/flamingo-train"
  [[ -x "$bin" ]] || { echo "no $bin: build the flamingo-train target first" >&2; exit 1; }
  bin="$(cd "$(dirname "$bin")" && pwd)/flamingo-train"
  tmp="$(mktemp -d "/tmp/fs-bench-$name.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
}

batches() {  # per-rank batch sizes "laion mmc4" of the Python baseline's preset: the one source of them
  "$python" -c "import sys; sys.path.insert(0, '$root/bench'); import train_step_baseline as b; \
p = b.PRESETS['$1']; print(p['laion']['batch'], p['mmc4']['batch'])"
}

# run_ours PRESET WORLD DIR [--set K=V ...]: WARMUP + STEPS steps on synthetic data, 1 thread per rank,
# one step event per step, no checkpoint, log lines off (memory events too unless the extra sets ask);
# one process for WORLD 1, else `flamingo-train launch` on the next free PORT.
# TRANSPORT=gloo (env) sets parallel.intra_node_transport for every run: the same benchmark without the
# shared-memory transport.
# SHARED_SHARDS=false (env) sets parallel.shared_shards for every run: FSDP gathers through collectives
# even over shared memory (NOTE [Node-shared shards]).
run_ours() {
  local preset="$1" world="$2" dir="$3" bl bm n
  shift 3
  read -r bl bm <<<"$(batches "$preset")"
  n=$((warmup + steps))
  port=$((port + 1))
  local sets=(--set data.source=synthetic --set launch.threads_per_rank=1
    --set "data.datasets[0].batch_size=$bl" --set "data.datasets[1].batch_size=$bm"
    --set "data.datasets[0].samples_per_epoch=$((bl * world * n))"
    --set "data.datasets[1].samples_per_epoch=$((bm * world * n))"
    --set optim.epochs=1 --set checkpoint.every_steps=0 --set telemetry.interval_steps=1
    --set telemetry.memory_every_steps=1000000 --set telemetry.logging_steps=1000000
    --set "parallel.intra_node_transport=${TRANSPORT:-shm}" --set "parallel.shared_shards=${SHARED_SHARDS:-true}" "$@")
  rm -rf "$dir"
  if ((world == 1)); then
    timeout "$run_timeout" "$bin" train --config "$root/resources/presets/$preset.yaml" --run-dir "$dir" "${sets[@]}" \
      >"$dir.out" 2>&1 || { echo "$preset x$world failed:" >&2; tail -20 "$dir.out" >&2; return 1; }
  else
    timeout "$run_timeout" "$bin" launch --nproc-per-node "$world" --master-port "$port" --run-dir "$dir" -- \
      train --config "$root/resources/presets/$preset.yaml" "${sets[@]}" \
      >"$dir.out" 2>&1 || { echo "$preset x$world failed:" >&2; tail -20 "$dir.out" >&2; return 1; }
  fi
}

# `summarise` reads the global `warmup` (step events to skip).

med() { sort -g | awk '{a[NR]=$1} END {if (!NR) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" | tail -1; }

# Step events of an events.jsonl after the warmup: "step_ms sps comm_ms wall_sps" medians (comm "nan" when
# the binary does not write comm_time_s). wall_sps: samples over the span of the event timestamps
# (t, ms), i.e. everything between steps included (per-rank gather, event writing, control agreement).
summarise() {
  jq -s -r --argjson w "$warmup" '
    def median: sort | if length == 0 then null elif length % 2 == 1 then .[(length - 1) / 2]
                       else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    [.[] | select(.type == "step")] | sort_by(.step) | .[$w:] as $s
    | ($s | map(.step_time_s) | median) as $st
    | ($s | map([.samples_per_s[]] | add) | median) as $sps
    | ($s | map(.comm_time_s // empty) | median) as $comm
    | ($s | map([.samples | .[]] | add)) as $cum
    | (if ($s | length) > 1 then ($cum[-1] - $cum[0]) / (($s[-1].t - $s[0].t) / 1000) else null end) as $wall
    | "\($st * 1000) \($sps) \(if $comm == null then "nan" else $comm * 1000 end) \($wall // "nan")"' "$1"
}
