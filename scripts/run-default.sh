#!/usr/bin/env bash
# The main job on its built-in default (see scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${FS_BUILD_DIR:-build}/bin"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$BIN/flamingo-studio" ] && "$BIN/flamingo-studio" --help 2>/dev/null | grep -q -- "--demo"; then
  exec "$BIN/flamingo-studio" --demo
fi
if "$BIN/flamingo-train" --help | grep -q "^  demo "; then
  exec "$BIN/flamingo-train" demo
fi
"$BIN/flamingo-train" version
exec "$BIN/flamingo-train" validate resources/presets/tiny.yaml
