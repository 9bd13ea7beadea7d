#!/usr/bin/env bash
# README command 2: builds if needed, runs every test through CTest, then the
# fuzz targets for a fixed number of inputs each (scripts/fuzz.sh --quick,
# docs/fuzzing.md), and prints how long each part took. Extra arguments go to
# ctest, e.g. -L unit or -R config (the fuzz targets are then skipped; FS_FUZZ=0
# skips them too), and the parsing libraries' tests (protocol, tensorfile, data)
# again under ASan + UBSan in the fuzz tree (scripts/fuzz.sh --tests;
# FS_SANITIZED_TESTS=0 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${FS_BUILD_DIR:-build}"
build_start=$(date +%s)
bash scripts/build.sh
build_end=$(date +%s)
# The LibTorch the engine was built against (cmake/FsPython.cmake), as the binary reports it.
if [ -x "$BUILD_DIR/bin/flamingo-train" ]; then
  echo "test.sh: $("$BUILD_DIR/bin/flamingo-train" version | sed -n 3p)"
fi
status=0
# NOTE [One test more than cores]: several suites mostly wait (sshd hosts, slurmctld, timeouts they
# provoke), so one more test than there are cores keeps both cores busy.
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${FS_TEST_JOBS:-$(($(nproc) + 1))}" "$@" || status=$?
test_end=$(date +%s)
minutes() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
summary="test.sh: build $(minutes $((build_end - build_start))), tests $(minutes $((test_end - build_end)))"
if [ $# -eq 0 ] && [ "${FS_FUZZ:-1}" != 0 ]; then
  bash scripts/fuzz.sh --quick || status=1
  fuzz_end=$(date +%s)
  summary+=", fuzz $(minutes $((fuzz_end - test_end)))"
  if [ "${FS_SANITIZED_TESTS:-1}" != 0 ]; then
    bash scripts/fuzz.sh --tests || status=1
    summary+=", sanitized tests $(minutes $(($(date +%s) - fuzz_end)))"
  fi
fi
echo "$summary ($(nproc) cores)"
exit "$status"
