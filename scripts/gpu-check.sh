#!/usr/bin/env bash
# The one script the GPU machine runs (docs/gpu.md): from the repository root,
# with the Debian packages of scripts/gpu-carry.sh in .gpu-carry/, it
#   probe      records the machine (nvidia-smi, compilers, PyTorch);
#   carry      unpacks the carried packages into a prefix in the build folder;
#   configure  the engine-only build: PyTorch's LibTorch, FS_BUILD_GUI=OFF,
#              FS_BUILD_DATA_CODECS=OFF, FS_WITH_CUDA=ON, Ninja, no ccache;
#   build      flamingo-train, the tests labelled gpu and the GPU benchmarks;
#   smoke      flamingo-train version --json (with CUDA: a usable device);
#   test       ctest -L gpu --output-on-failure;
#   bench      bench/run_gpu.sh, when there is one;
# and writes each phase's log and a summary with the phases' timings under
# $OUT (at most 8 files come back: summary.txt, env.log, configure.log,
# build.log, test.log, bench.log, and 2 for the benchmark). A failed carry,
# configure or build phase stops the run; failed tests do not stop the
# benchmark. Every phase runs under what is left of FS_GPU_DEADLINE_S, so the
# logs are written before the device call's 10-minute limit. Run it again in
# the same tree and it reuses the build folder.
#
# Usage: scripts/gpu-check.sh [--cpu-dry-run]
#   --cpu-dry-run  the same phases on a machine without CUDA: Debian's LibTorch
#                  (/usr/bin/python3), FS_WITH_CUDA=OFF, build-gpu-cpu/; tests
#                  labelled gpu run if there are any (they skip without CUDA).
# Environment: OUT (default build-gpu-out/), FS_GPU_BUILD_DIR, FS_GPU_JOBS
# (default nproc), FS_GPU_PYTHON (default python3), FS_GPU_DEADLINE_S (default
# 560), FS_GPU_FMT (NOTE [fmt beside LibTorch]), FS_GPU_CMAKE_ARGS (more
# configure arguments, split on spaces), FS_GPU_LOCK (a file: the
# build runs under flock on it, as on a shared developer machine),
# FS_GPU_BENCH_TARGETS (else bench/run_gpu.sh's "# targets:" line, else every
# bench target with gpu in its name).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD

MODE=cuda
case "${1:-}" in
  --cpu-dry-run) MODE=cpu ;;
  "") ;;
  -h | --help)
    sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "gpu-check: unknown argument '$1' (--cpu-dry-run or nothing)" >&2
    exit 2
    ;;
esac

START=$(date +%s)
DEADLINE_S=${FS_GPU_DEADLINE_S:-560}
OUT=${OUT:-$ROOT/build-gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export OUT
if [ "$MODE" = cuda ]; then
  BUILD=${FS_GPU_BUILD_DIR:-build-gpu}
  PY=${FS_GPU_PYTHON:-python3}
else
  BUILD=${FS_GPU_BUILD_DIR:-build-gpu-cpu}
  PY=${FS_GPU_PYTHON:-/usr/bin/python3}
fi
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
PREFIX=$BUILD/carry-prefix
JOBS=${FS_GPU_JOBS:-$(nproc)}
SUMMARY=$OUT/summary.txt
FAILED=""
# This run's logs only (the device tool empties $OUT; a local $OUT is reused).
rm -f "$OUT"/summary.txt "$OUT"/env.log "$OUT"/configure.log "$OUT"/build.log "$OUT"/test.log "$OUT"/bench.log

{
  echo "gpu-check ($MODE) $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "build folder $BUILD, $JOBS jobs, deadline ${DEADLINE_S}s"
} >"$SUMMARY"

elapsed() { echo $(($(date +%s) - START)); }

# summary: one line per phase, and the end of a failed phase's log.
note() { echo "$*" >>"$SUMMARY"; }

# run_phase NAME LOG COMMAND...: runs COMMAND with what is left of the
# deadline, appending its output to LOG; records status and seconds.
run_phase() {
  local name=$1 log=$2
  shift 2
  local left=$((DEADLINE_S - $(elapsed)))
  if [ "$left" -le 5 ]; then
    note "$(printf '%-10s SKIPPED  no time left (%ss of %ss used)' "$name" "$(elapsed)" "$DEADLINE_S")"
    FAILED="$FAILED $name"
    return 124
  fi
  local t0 rc
  t0=$(date +%s)
  echo "=== $name: $* ($(date -u +%H:%M:%S), ${left}s left)" >>"$log"
  if declare -F "$1" >/dev/null; then
    "$@" >>"$log" 2>&1  # a function of this script: short, no timeout needed
  else
    timeout --kill-after=5 "$left" "$@" >>"$log" 2>&1
  fi
  rc=$?
  local secs=$(($(date +%s) - t0))
  if [ "$rc" -eq 0 ]; then
    note "$(printf '%-10s ok       %4ss' "$name" "$secs")"
  else
    local why="exit $rc"
    [ "$rc" -eq 124 ] && why="timed out at the deadline"
    note "$(printf '%-10s FAILED   %4ss  (%s; %s)' "$name" "$secs" "$why" "$(basename "$log")")"
    {
      echo "--- last lines of $(basename "$log"):"
      grep -v '^\[[0-9]*/[0-9]*\] ' "$log" | tail -n 40
      echo "---"
    } >>"$SUMMARY"
    FAILED="$FAILED $name"
  fi
  return "$rc"
}

finish() {
  note "total      $(elapsed)s"
  if [ -n "$FAILED" ]; then
    note "result     FAILED:$FAILED"
  else
    note "result     ok"
  fi
  # The device tool returns files up to 16 MiB: keep a huge log's start and end.
  local f
  for f in "$OUT"/*.log; do
    [ -f "$f" ] || continue
    if [ "$(stat -c %s "$f")" -gt $((15 * 1024 * 1024)) ]; then
      { head -c $((2 * 1024 * 1024)) "$f"; echo; echo "[... cut ...]"; tail -c $((12 * 1024 * 1024)) "$f"; } >"$f.cut"
      mv "$f.cut" "$f"
    fi
  done
  echo
  cat "$SUMMARY"
  [ -z "$FAILED" ]
  exit $?
}

# --- env: the machine, LibTorch, and the carried packages ----------------------
# shellcheck disable=SC2317  # run through run_phase
probe_env() {
  echo "# machine"
  uname -a
  echo "cores $(nproc)"
  free -g 2>/dev/null | head -2
  [ -f /etc/os-release ] && grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release
  echo "# GPU"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi
    nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv
  else
    echo "nvidia-smi: not found"
  fi
  echo "# tools"
  local t
  for t in c++ g++ nvcc cmake ninja mold ccache; do
    if command -v "$t" >/dev/null; then
      echo "$t: $(command -v "$t"): $("$t" --version 2>&1 | head -n 1)"
    else
      echo "$t: not found"
    fi
  done
  [ -x /usr/local/cuda/bin/nvcc ] && echo "/usr/local/cuda/bin/nvcc: $(/usr/local/cuda/bin/nvcc --version | tail -n 1)"
  echo "# PyTorch ($PY)"
  "$PY" - <<'PYEOF'
import os, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
print("cmake_prefix_path", torch.utils.cmake_prefix_path)
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
import torch.distributed as dist
print("gloo", dist.is_gloo_available(), "nccl", dist.is_nccl_available())
print("cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI)
inc = os.path.join(os.path.dirname(torch.__file__), "include")
print("include", inc, ":", " ".join(sorted(os.listdir(inc))) if os.path.isdir(inc) else "none")
for sub in ("gloo/algorithm.h", "fmt/core.h", "spdlog/spdlog.h", "nlohmann/json.hpp"):
    print("  has", sub, os.path.exists(os.path.join(inc, sub)))
site = os.path.dirname(os.path.dirname(torch.__file__))
for root in (os.path.join(site, "nvidia"),):
    if os.path.isdir(root):
        hits = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f == "nccl.h"]
        print("nccl.h under", root, ":", hits or "none")
PYEOF
  return 0  # what it could not read is in the log; the phases after it say what fails
}

# extract_deb DEB DIR: dpkg-deb -x, or where there is no dpkg-deb the same in
# Python (a .deb is an ar archive holding data.tar.xz).
# shellcheck disable=SC2317  # called from unpack_carry
extract_deb() {
  if command -v dpkg-deb >/dev/null && [ -z "${FS_GPU_NO_DPKG:-}" ]; then
    dpkg-deb -x "$1" "$2"
    return
  fi
  mkdir -p "$2"
  "$PY" - "$1" "$2" <<'PYEOF'
import io, sys, tarfile
deb, dest = sys.argv[1], sys.argv[2]
with open(deb, "rb") as f:
    blob = f.read()
if not blob.startswith(b"!<arch>\n"):
    sys.exit(f"{deb}: not an ar archive")
pos = 8
while pos + 60 <= len(blob):
    name = blob[pos:pos + 16].decode().strip().rstrip("/")
    size = int(blob[pos + 48:pos + 58].decode().strip())
    data = blob[pos + 60:pos + 60 + size]
    pos += 60 + size + (size & 1)
    if name.startswith("data.tar"):
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            if hasattr(tarfile, "tar_filter"):
                tar.extractall(dest, filter="tar")
            else:
                tar.extractall(dest)
        sys.exit(0)
sys.exit(f"{deb}: no data.tar member")
PYEOF
}

# shellcheck disable=SC2317  # run through run_phase
unpack_carry() {
  local debs=("$ROOT"/.gpu-carry/debs/*.deb)
  if [ ! -f "${debs[0]}" ]; then
    echo "no .gpu-carry/debs/*.deb: run scripts/gpu-carry.sh here first and carry .gpu-carry"
    return 1
  fi
  # Unpacked once per set of packages: a new unpack would touch every header's
  # time and rebuild the tree on a second try.
  local stamp
  stamp=$(printf '%s\n' "${debs[@]##*/}" | sort | md5sum | cut -d' ' -f1)
  if [ -f "$PREFIX/.stamp" ] && [ "$(cat "$PREFIX/.stamp")" = "$stamp" ]; then
    echo "carried packages already unpacked in $PREFIX"
    return 0
  fi
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  local d
  for d in "${debs[@]}"; do
    echo "unpack $(basename "$d")"
    case "${d##*/}" in
      # Headers only, outside the prefix CMake searches: its Gloo package names a
      # libgloo.so that is not carried (NOTE [Gloo] in cmake/FsHelpers.cmake).
      libgloo-dev_*) extract_deb "$d" "$PREFIX/gloo" || return 1 ;;
      *) extract_deb "$d" "$PREFIX" || return 1 ;;
    esac
  done
  # What Debian's update-alternatives would add for the reference BLAS.
  local lib=$PREFIX/usr/lib/x86_64-linux-gnu inc=$PREFIX/usr/include/x86_64-linux-gnu
  ln -sf blas/libblas.so "$lib/libblas.so"
  ln -sf blas/libblas.so.3 "$lib/libblas.so.3"
  ln -sf cblas-netlib.h "$inc/cblas.h"
  echo "$stamp" >"$PREFIX/.stamp"
  du -sh "$PREFIX"
}

run_phase probe "$OUT/env.log" probe_env
run_phase carry "$OUT/env.log" unpack_carry || finish

export LD_LIBRARY_PATH="$PREFIX/usr/lib/x86_64-linux-gnu:$PREFIX/usr/lib/x86_64-linux-gnu/blas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# --- configure -----------------------------------------------------------------
TORCH_CMAKE=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
PREFIX_PATH="$PREFIX/usr"
if [ -n "$TORCH_CMAKE" ] && [ -f "$TORCH_CMAKE/Torch/TorchConfig.cmake" ]; then
  PREFIX_PATH="$TORCH_CMAKE;$PREFIX_PATH"
elif [ "$MODE" = cuda ]; then
  note "configure  FAILED   no TorchConfig.cmake under '$TORCH_CMAKE' ($PY's torch.utils.cmake_prefix_path)"
  FAILED="$FAILED configure"
  finish
else
  echo "=== $PY's torch has no CMake package ($TORCH_CMAKE): the system LibTorch" >>"$OUT/configure.log"
fi

CONFIGURE=(cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  -DFS_BUILD_GUI=OFF -DFS_BUILD_DATA_CODECS=OFF -DFS_BUILD_TESTS=ON -DFS_BUILD_BENCH=ON
  -DFS_USE_CCACHE=OFF -DFS_TEST_PYTHON="$(command -v "$PY")"
  "-DCMAKE_PREFIX_PATH=$PREFIX_PATH"
  # cblas.h sits in the multiarch folder, which the compiler searches only under /usr.
  "-DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES=$PREFIX/usr/include/x86_64-linux-gnu")
# NOTE [fmt beside LibTorch]: PyTorch's include folder may ship its own fmt
# (newer than 9); as -isystem beside LibTorch's it would shadow the carried
# fmt 9 that Debian's spdlog 1.10 (headers and libspdlog.so) is built on. The
# carried spdlog and fmt then go first (-I wins over -isystem), for LibTorch's
# few fmt users too; FS_GPU_FMT=torch leaves the order alone.
TORCH_INC=$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))' 2>/dev/null)
if [ -n "$TORCH_INC" ] && [ -d "$TORCH_INC/fmt" ] && [ "${FS_GPU_FMT:-carried}" = carried ]; then
  mkdir -p "$PREFIX/fmt-first"
  ln -sfn ../usr/include/fmt "$PREFIX/fmt-first/fmt"
  ln -sfn ../usr/include/spdlog "$PREFIX/fmt-first/spdlog"
  CONFIGURE+=("-DCMAKE_CXX_FLAGS=-I$PREFIX/fmt-first")
  fmt_version=$(grep -h -m 1 -o 'define FMT_VERSION [0-9]*' "$TORCH_INC"/fmt/base.h "$TORCH_INC"/fmt/core.h 2>/dev/null | head -n 1)
  note "fmt        $TORCH_INC/fmt (${fmt_version:-version unknown}): the carried spdlog + fmt 9 go first (NOTE [fmt beside LibTorch])"
fi
if [ -z "$TORCH_INC" ] || [ ! -f "$TORCH_INC/gloo/algorithm.h" ]; then
  # PyTorch ships no gloo headers: Debian's (only where no Gloo package is found).
  CONFIGURE+=("-DFS_GLOO_INCLUDE_DIR=$PREFIX/gloo/usr/include")
  [ "$MODE" = cuda ] && note "gloo       no gloo/ in ${TORCH_INC:-torch/include}: the carried libgloo-dev headers (NOTE [Gloo])"
fi
if [ "$MODE" = cuda ]; then
  CONFIGURE+=(-DFS_WITH_CUDA=ON)
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
    CONFIGURE+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
  fi
  # LibTorch's CMake package asks for the architectures; the H200 is sm_90.
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
else
  CONFIGURE+=(-DFS_WITH_CUDA=OFF)
fi
# Extra configure arguments for a retry, e.g. -DFS_NCCL_INCLUDE_DIR=<dir>.
if [ -n "${FS_GPU_CMAKE_ARGS:-}" ]; then
  read -r -a extra <<<"$FS_GPU_CMAKE_ARGS"
  CONFIGURE+=("${extra[@]}")
fi
run_phase configure "$OUT/configure.log" "${CONFIGURE[@]}" || finish

# --- build: the engine, the gpu tests, the GPU benchmarks --------------------------
mapfile -t GPU_TESTS < <(ctest --test-dir "$BUILD" -N -L gpu 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: *\([^ ]*\).*/\1/p')
if [ -n "${FS_GPU_BENCH_TARGETS:-}" ]; then
  read -r -a BENCH_TARGETS <<<"$FS_GPU_BENCH_TARGETS"
elif [ -f bench/run_gpu.sh ] && grep -q '^# targets:' bench/run_gpu.sh; then
  read -r -a BENCH_TARGETS <<<"$(sed -n 's/^# targets://p' bench/run_gpu.sh | head -n 1)"
else
  mapfile -t BENCH_TARGETS < <(cmake --build "$BUILD" --target help 2>/dev/null |
    sed -n 's/^\(bench_[A-Za-z0-9_]*gpu[A-Za-z0-9_]*\): phony$/\1/p' | sort -u)
fi
TARGETS=(flamingo_train "${GPU_TESTS[@]}" "${BENCH_TARGETS[@]}")
note "targets    ${TARGETS[*]}"
BUILD_CMD=(cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}")
if [ -n "${FS_GPU_LOCK:-}" ]; then
  BUILD_CMD=(flock "$FS_GPU_LOCK" "${BUILD_CMD[@]}")
fi
run_phase build "$OUT/build.log" "${BUILD_CMD[@]}" || finish

# --- smoke: the built engine sees the device ----------------------------------------
# shellcheck disable=SC2317  # run through run_phase
smoke() {
  local json
  json=$("$BUILD/bin/flamingo-train" version --json) || return 1
  echo "$json"
  if [ "$MODE" = cuda ] && ! grep -Eq '"cuda_device": *true' <<<"$json"; then
    echo "flamingo-train version --json: no usable CUDA device (cuda_build and cuda_device above)"
    return 1
  fi
}
run_phase smoke "$OUT/test.log" smoke

# --- test: ctest -L gpu ------------------------------------------------------------
if [ ${#GPU_TESTS[@]} -eq 0 ]; then
  note "test       FAILED   no test is labelled gpu (ctest -N -L gpu lists none)"
  echo "no test is labelled gpu" >>"$OUT/test.log"
  FAILED="$FAILED test"
else
  run_phase test "$OUT/test.log" ctest --test-dir "$BUILD" -L gpu --output-on-failure --no-tests=error
fi

# --- bench: bench/run_gpu.sh ---------------------------------------------------------
if [ -f bench/run_gpu.sh ]; then
  export FS_BUILD_DIR=$BUILD
  run_phase bench "$OUT/bench.log" bash bench/run_gpu.sh "$BUILD"
else
  note "bench      skipped  (no bench/run_gpu.sh)"
fi

finish
