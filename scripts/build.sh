#!/usr/bin/env bash
# Configures (once) and builds everything into build/. Extra arguments go to
# CMake's configure step, e.g. -DFS_BUILD_GUI=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${FS_BUILD_DIR:-build}"
JOBS="${FS_JOBS:-$(nproc)}"
if [ ! -f "$BUILD_DIR/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
fi
cmake --build "$BUILD_DIR" -j "$JOBS"
