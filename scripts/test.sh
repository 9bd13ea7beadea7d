#!/usr/bin/env bash
# README command 2: builds if needed, then runs every test through CTest, and
# prints how long the build and the tests took. Extra arguments go to ctest,
# e.g. -L unit or -R config.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${FS_BUILD_DIR:-build}"
build_start=$(date +%s)
bash scripts/build.sh
build_end=$(date +%s)
status=0
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${FS_JOBS:-$(nproc)}" "$@" || status=$?
test_end=$(date +%s)
minutes() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
echo "test.sh: build $(minutes $((build_end - build_start))), tests $(minutes $((test_end - build_end))) ($(nproc) cores)"
exit "$status"
