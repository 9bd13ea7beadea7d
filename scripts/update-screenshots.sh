#!/usr/bin/env bash
# Refresh the README's pictures of a live run. Builds and runs live_run_test
# (the whole app on real flamingo-train runs, under Xvfb when xvfb-run is
# installed), which writes every monitor view of the built-in default run
# (presets/demo-long.yaml: 2 ranks under FSDP full_shard) to
# <build>/tests/screenshots/default_<tab>.png, and copies the README's into
# docs/images/. The test never compares pixels; people look at them.
#
# Usage: scripts/update-screenshots.sh [BUILD_DIR=build]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$repo/build}"
ninja -C "$build" live_run_test flamingo_train
ctest --test-dir "$build" -R '^live_run_test$' --output-on-failure
shots="$build/tests/screenshots"
copy() {
  [[ -s "$shots/$1" ]] || { echo "update-screenshots: $shots/$1 was not written" >&2; exit 1; }
  cp "$shots/$1" "$repo/docs/images/$2"
  echo "docs/images/$2 <- $shots/$1"
}
copy default_training.png monitor.png
copy default_memory.png monitor-memory.png
copy default_layout-map.png monitor-layout-map.png
