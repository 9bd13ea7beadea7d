#!/usr/bin/env bash
# README command 2: builds if needed, then runs every test through CTest.
# Extra arguments go to ctest, e.g. -L unit or -R config.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BUILD_DIR="${FS_BUILD_DIR:-build}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${FS_JOBS:-$(nproc)}" "$@"
