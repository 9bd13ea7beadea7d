#!/usr/bin/env bash
# bench/guard: what one rollback of the loss-spike guard costs (NOTE [Loss-spike guard] in
# backend/trainer/loss_spike_guard.h) on the demo config (resources/presets/demo.yaml, one process,
# generated shards): a spike planted at iteration 12 (FS_FAULT_SPIKE, x 20 on laion), the guard on
# (window 4, ema, ratio 3), step checkpoints every 2 steps. Prints, per repetition, the rollback
# itself (reload, data stream restarted at the checkpoint, batches skipped: the engine's log line)
# and the time from the spike's step event to the first step event after the rollback (the rollback
# plus one step), from events.jsonl's `t`, and a step's median time for comparison.
#
# Usage: bench/guard/rollback_cost.sh [BUILD_DIR=build] [REPS=3]
# Needs: BUILD_DIR/bin/flamingo-train, python3.
set -euo pipefail
export OMP_NUM_THREADS=1
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-build}"
reps="${2:-3}"
bin="$root/$build/bin/flamingo-train"
[[ -x "$bin" ]] || bin="$build/bin/flamingo-train"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for rep in $(seq 1 "$reps"); do
  dir="$work/run$rep"
  FS_FAULT_SPIKE=0:12:20 "$bin" train --config "$root/resources/presets/demo.yaml" --run-dir "$dir" \
    --set guard.enabled=true --set guard.window=4 --set guard.rule=ema --set guard.threshold=3 \
    --set checkpoint.every_steps=2 >"$work/out$rep" 2>&1 || { cat "$work/out$rep"; exit 1; }
  python3 - "$dir/events.jsonl" "$work/out$rep" <<'PY'
import json, re, statistics, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rb = next(i for i, e in enumerate(events) if e["type"] == "rollback")
spike = max(i for i in range(rb) if events[i]["type"] == "step")
after = next(i for i in range(rb + 1, len(events)) if events[i]["type"] == "step")
steps = [e["step_time_s"] for e in events if e["type"] == "step"]
line = next(l for l in open(sys.argv[2]) if "loss-spike guard: rollback" in l)
own = float(re.search(r"\(([0-9.e+-]+) s\)\s*$", line).group(1))
print(f"rollback {own:.3f} s; spike's step event to the next step event "
      f"{(events[after]['t'] - events[spike]['t']) / 1000:.3f} s; median step {statistics.median(steps):.3f} s; "
      f"went back from step {events[rb]['step']} to {events[rb]['to_step']}, {events[rb]['batches_skipped']} batches skipped")
PY
done
