#!/usr/bin/env bash
# The main job on its built-in default (see scripts/setup.sh): the demo model
# for a few minutes on 2 ranks under FSDP full_shard (presets/demo-long.yaml),
# long enough to watch, pause and stop. With a display the desktop app runs it (Pause and Stop on the Monitor
# tab); without one `flamingo-train demo --long` does (Ctrl-C stops it after a
# checkpoint). The 32-step demo, seconds long, is `flamingo-train demo` /
# `flamingo-studio --demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${FS_BUILD_DIR:-build}/bin"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$BIN/flamingo-studio" ] && "$BIN/flamingo-studio" --help 2>/dev/null | grep -q -- "--long"; then
  exec "$BIN/flamingo-studio" --demo --long
fi
if "$BIN/flamingo-train" demo --help 2>/dev/null | grep -q -- "--long"; then
  exec "$BIN/flamingo-train" demo --long
fi
"$BIN/flamingo-train" version
exec "$BIN/flamingo-train" validate resources/presets/tiny.yaml
