#!/usr/bin/env bash
# The one script the GPU machine runs (docs/gpu.md), from the repository root,
# with .gpu-carry/ made here by scripts/gpu-carry.sh. Phases, each logged
# under $OUT:
#   probe      the machine (nvidia-smi, compilers, PyTorch)                    env.log
#   carry      unpacks the carried .debs into a prefix, compiles the GDAL stub,
#              writes the OpenCV, pkg-config and protoc glue                     env.log
#   configure  CI's engine build (FS_BUILD_GUI=OFF, everything else as CI: data
#              codecs, tests, bench) against FS_PYTHON's torch and the carried
#              prefix only (NOTE [Only the carried prefix]), linked to find the
#              carried libraries by RPATH (NOTE [No LD_LIBRARY_PATH])         configure.log
#   found      where each package was found: the carried prefix, PyTorch, CUDA,
#              or a tool; anything else fails                                  configure.log
#   build      ninja -k 0: flamingo-train, the executables the gpu-labelled CTest
#              entries run, the benchmark targets (+ --no-device: the CPU cases') build.log
#   audit      every built program loads only carried, PyTorch's, CUDA's or base
#              libraries (ldd); --no-device: no header came from /usr/include
#              but the C library's and the compiler's                         build.log
#   smoke      flamingo-train version --json, then flamingo-train demo: real
#              LAION and MMC4 shards through the data codecs (cuda: on the GPU) test.log
#   test       cuda: ctest -L gpu; --no-device: the CPU cases                  test.log
#   bench      a venv over FS_PYTHON with the carried wheels, then
#              bench/run_gpu.sh (--no-device: its CPU smoke run)               bench.log
#   fit        the fit's step-time model against measured steps: bench/fsdp/
#              fit_rank_order.sh on tiny, one GPU, 4 choices (--no-device: a
#              2-choice CPU smoke run of the script)                        bench.log
# and summary.txt: one line per phase (status, seconds), the targets, the total,
# the end of a failed phase's log; printed last. A failed carry, configure or
# build stops the run; failed tests do not stop the benchmark. Every phase runs
# under what is left of FS_GPU_DEADLINE_S, so the logs are written before the
# device call's 10-minute limit. A second run in the same tree reuses the
# build folder. At most 8 files come back from $OUT: this script writes 6.
#
# Usage: scripts/gpu-check.sh [--no-device]
#   (none)       on the GPU machine: FS_PYTHON = python3 (its torch 2.11), build-gpu/;
#                smoke needs a usable CUDA device
#   --no-device  here and in CI: the same configure and build with only what the
#                GPU machine has (FS_PYTHON's torch, nvcc, cmake, ninja, the
#                compiler) plus the carry (it runs scripts/gpu-carry.sh
#                first), into build-gpu-nodev/; smoke and test run
#                the CPU cases, bench a one-step CPU run of both sides
# Environment: OUT (default build-gpu-out/), FS_GPU_BUILD_DIR, FS_GPU_JOBS
# (default nproc), FS_GPU_PYTHON (default python3; --no-device: scripts/python-env.sh
# --python), FS_GPU_DEADLINE_S (default 560; --no-device 2700), FS_GPU_CMAKE_ARGS
# (more configure arguments, split on spaces), FS_GPU_LOCK (a file: the build
# runs under flock on it, as on a shared developer machine), FS_GPU_BENCH_TARGETS
# (else bench/run_gpu.sh's "# targets:" line), FS_GPU_CPU_TESTS (--no-device: a
# ctest -R regex of the CPU cases, or "unit" for every unit-labelled test of the
# engine build; default: the CPU cases of the GPU tests' own binaries).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD

MODE=cuda
case "${1:-}" in
  --no-device) MODE=nodev ;;
  "") ;;
  -h | --help)
    sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "gpu-check: unknown argument '$1' (--no-device or nothing)" >&2
    exit 2
    ;;
esac

START=$(date +%s)
OUT=${OUT:-$ROOT/build-gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export OUT
if [ "$MODE" = cuda ]; then
  BUILD=${FS_GPU_BUILD_DIR:-build-gpu}
  PY=${FS_GPU_PYTHON:-python3}
  DEADLINE_S=${FS_GPU_DEADLINE_S:-560}
else
  BUILD=${FS_GPU_BUILD_DIR:-build-gpu-nodev}
  PY=${FS_GPU_PYTHON:-$(bash scripts/python-env.sh --python)}
  DEADLINE_S=${FS_GPU_DEADLINE_S:-2700}
fi
PY=$(command -v "$PY" || echo "$PY")
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
PREFIX=$BUILD/carry-prefix
LIB=$PREFIX/usr/lib/x86_64-linux-gnu
CARRY=$ROOT/.gpu-carry
JOBS=${FS_GPU_JOBS:-$(nproc)}
SUMMARY=$OUT/summary.txt
FAILED=""
# This run's logs only (the device tool empties $OUT; a local $OUT is reused).
rm -f "$OUT"/summary.txt "$OUT"/env.log "$OUT"/configure.log "$OUT"/build.log "$OUT"/test.log "$OUT"/bench.log

{
  echo "gpu-check ($MODE) $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "build folder $BUILD, $JOBS jobs, deadline ${DEADLINE_S}s, FS_PYTHON $PY"
} >"$SUMMARY"

elapsed() { echo $(($(date +%s) - START)); }

# summary: one line per phase, and the end of a failed phase's log.
note() { echo "$*" >>"$SUMMARY"; }

# run_phase NAME LOG COMMAND...: runs COMMAND with what is left of the
# deadline, appending its output to LOG; records status and seconds. A shell
# function runs in a subshell under the same timeout.
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
    export -f "$1"
    timeout --kill-after=5 "$left" bash -c '"$@"' _ "$@" >>"$log" 2>&1
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
export MODE ROOT BUILD PREFIX LIB CARRY PY JOBS OUT

# --- probe ---------------------------------------------------------------------------
probe_env() {
  echo "# machine"
  uname -a
  echo "cores $(nproc)"
  free -g 2>/dev/null | head -2
  [ -f /etc/os-release ] && grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release
  echo "# GPU"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi
    nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,clocks.max.sm --format=csv
  else
    echo "nvidia-smi: not found"
  fi
  echo "# tools"
  local t
  for t in c++ g++ nvcc cmake ninja mold ccache dpkg-deb pkg-config; do
    if command -v "$t" >/dev/null; then
      echo "$t: $(command -v "$t"): $("$t" --version 2>&1 | head -n 1)"
    else
      echo "$t: not found"
    fi
  done
  [ -x /usr/local/cuda/bin/nvcc ] && echo "/usr/local/cuda/bin/nvcc: $(/usr/local/cuda/bin/nvcc --version | tail -n 1)"
  echo "# PyTorch ($PY)"
  "$PY" - <<'PYEOF'
import os, sys, site, torch
print("python", sys.version.split()[0], sys.executable, "prefix", sys.prefix, "base", sys.base_prefix)
print("site-packages", site.getsitepackages())
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
print("cmake_prefix_path", torch.utils.cmake_prefix_path)
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
import torch.distributed as dist
print("gloo", dist.is_gloo_available(), "nccl", dist.is_nccl_available())
print("cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI)
inc = os.path.join(os.path.dirname(torch.__file__), "include")
for sub in ("gloo/algorithm.h", "fmt/core.h", "spdlog/spdlog.h", "nlohmann/json.hpp"):
    print("  has", sub, os.path.exists(os.path.join(inc, sub)))
for mod in ("torchvision", "transformers", "einops", "timm", "regex", "tqdm", "huggingface_hub", "open_clip", "open_flamingo"):
    try:
        m = __import__(mod)
        print("  python module", mod, getattr(m, "__version__", "?"))
    except Exception as e:
        print("  python module", mod, "missing:", type(e).__name__, e)
PYEOF
  return 0  # what it could not read is in the log; the phases after it say what fails
}

# --- carry: the prefix ------------------------------------------------------------------
# NOTE [OpenCV shim]: Debian's OpenCV CMake package (libopencv-dev) defines all 55
# modules and fails unless every module's library exists (VTK, Qt, FFmpeg, ...);
# the engine links core and imgcodecs (and imgproc, which imgcodecs links). The
# carried prefix gets a small OpenCVConfig.cmake with those three imported
# targets over Debian's libraries and headers, the link interface Debian's
# package gives them, and OpenCV_INCLUDE_DIRS; it refuses a component it lacks.
write_opencv_config() {
  local dir=$LIB/cmake/opencv4
  mkdir -p "$dir"
  cat >"$dir/OpenCVConfig.cmake" <<'CMAKE'
# Written by scripts/gpu-check.sh (NOTE [OpenCV shim]): Debian's core, imgproc
# and imgcodecs from the carried prefix, nothing else.
get_filename_component(_fs_cv_usr "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
set(OpenCV_INCLUDE_DIRS "${_fs_cv_usr}/include/opencv4")
set(OpenCV_LIBS "")
foreach(_fs_cv_m core imgproc imgcodecs)
  if(NOT TARGET opencv_${_fs_cv_m})
    add_library(opencv_${_fs_cv_m} SHARED IMPORTED)
    set_target_properties(opencv_${_fs_cv_m} PROPERTIES
      IMPORTED_LOCATION "${_fs_cv_usr}/lib/x86_64-linux-gnu/libopencv_${_fs_cv_m}.so"
      INTERFACE_INCLUDE_DIRECTORIES "${OpenCV_INCLUDE_DIRS}")
  endif()
  list(APPEND OpenCV_LIBS opencv_${_fs_cv_m})
endforeach()
set_property(TARGET opencv_imgproc PROPERTY INTERFACE_LINK_LIBRARIES opencv_core)
set_property(TARGET opencv_imgcodecs PROPERTY INTERFACE_LINK_LIBRARIES "opencv_core;opencv_imgproc")
file(GLOB _fs_cv_real "${_fs_cv_usr}/lib/x86_64-linux-gnu/libopencv_core.so.*.*.*")
string(REGEX REPLACE ".*\\.so\\." "" OpenCV_VERSION "${_fs_cv_real}")
set(OpenCV_FOUND TRUE)
foreach(_fs_cv_c IN LISTS OpenCV_FIND_COMPONENTS)
  if(NOT TARGET opencv_${_fs_cv_c})
    set(OpenCV_FOUND FALSE)
    set(OpenCV_NOT_FOUND_MESSAGE "the carried OpenCV (NOTE [OpenCV shim] in scripts/gpu-check.sh) has core, imgproc and imgcodecs only, not ${_fs_cv_c}")
  endif()
endforeach()
CMAKE
}

# Bump when unpack_carry lays the prefix out differently (a second run then unpacks again).
CARRY_LAYOUT=3
export CARRY_LAYOUT
unpack_carry() {
  local debs=("$CARRY"/debs/*.deb)
  if [ ! -f "${debs[0]}" ]; then
    echo "no .gpu-carry/debs/*.deb: run scripts/gpu-carry.sh here first and carry .gpu-carry"
    return 1
  fi
  # Unpacked once per set of packages: a new unpack would touch every header's
  # time and rebuild the tree on a second try.
  local stamp
  stamp=$( (echo "layout $CARRY_LAYOUT"; printf '%s\n' "${debs[@]##*/}"; cat "$CARRY/stubs/gdal_stub.c") | md5sum | cut -d' ' -f1)
  if [ -f "$PREFIX/.stamp" ] && [ "$(cat "$PREFIX/.stamp")" = "$stamp" ]; then
    echo "carried packages already unpacked in $PREFIX"
    return 0
  fi
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  local d n=0
  for d in "${debs[@]}"; do
    n=$((n + 1))
    case "${d##*/}" in
      # Headers only, outside the prefix CMake searches: its Gloo package names a
      # libgloo.so that is not carried (NOTE [Gloo] in cmake/FsHelpers.cmake).
      libgloo-dev_*) extract_deb "$d" "$PREFIX/gloo" || return 1 ;;
      *) extract_deb "$d" "$PREFIX" || return 1 ;;
    esac
  done
  echo "unpacked $n packages"
  # Bookworm still installs some libraries (liblzma, libbz2, libexpat, ...) under
  # /lib: one library folder, as on a merged-/usr system, so that the RPATH's
  # one folder holds them all (NOTE [No LD_LIBRARY_PATH]).
  if [ -d "$PREFIX/lib" ] && [ ! -L "$PREFIX/lib" ]; then
    cp -a "$PREFIX/lib/." "$PREFIX/usr/lib/" && rm -rf "$PREFIX/lib" && ln -s usr/lib "$PREFIX/lib" || return 1
  fi
  # What Debian's update-alternatives would add for the reference BLAS and LAPACK.
  ln -sf blas/libblas.so.3 "$LIB/libblas.so.3"
  ln -sf lapack/liblapack.so "$LIB/liblapack.so"
  ln -sf lapack/liblapack.so.3 "$LIB/liblapack.so.3"
  # NOTE [GDAL stub] in scripts/gpu-carry.sh.
  cc -shared -fPIC -O1 -Wl,-soname,libgdal.so.32 -o "$LIB/libgdal.so.32" "$CARRY/stubs/gdal_stub.c" || return 1
  write_opencv_config
  # NOTE [No LD_LIBRARY_PATH]: the carried tools that run during the build get
  # the carried libraries through a wrapper, for themselves only.
  mkdir -p "$PREFIX/wrap"
  local t
  for t in protoc pkgconf; do
    printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$LIB" "$PREFIX/usr/bin/$t" >"$PREFIX/wrap/$t"
    chmod +x "$PREFIX/wrap/$t"
  done
  # pkg-config files name prefix=/usr: the carried prefix instead.
  local pc
  for pc in "$LIB"/pkgconfig/*.pc "$PREFIX"/usr/share/pkgconfig/*.pc; do
    [ -f "$pc" ] && sed -i "s|^prefix=/usr\$|prefix=$PREFIX/usr|" "$pc"
  done
  echo "$stamp" >"$PREFIX/.stamp"
  du -sh "$PREFIX"
}

# extract_deb DEB DIR: dpkg-deb -x, or where there is no dpkg-deb the same in
# Python (a .deb is an ar archive holding data.tar.xz).
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
export -f extract_deb write_opencv_config

run_phase probe "$OUT/env.log" probe_env
if [ "$MODE" = nodev ]; then
  # Here the carry is made first (downloads only what is missing).
  run_phase carry-get "$OUT/env.log" bash scripts/gpu-carry.sh || finish
fi
run_phase carry "$OUT/env.log" unpack_carry || finish

# NOTE [No LD_LIBRARY_PATH]: the carried libraries are older builds of some the
# GPU machine has (libssl, libexpat, liblzma, libzstd, libxml2, libarchive):
# exported, they would shadow the machine's for its own python3, cmake and pip.
# So nothing is exported: the linker finds the carried libraries' own
# dependencies through -rpath-link, and the built programs find all of them
# through their RPATH (the carried folder, which CMake puts there for the
# libraries linked from it; DT_RPATH rather than DT_RUNPATH, with
# --disable-new-dtags, so that it serves their dependencies too); protoc and
# pkgconf run through wrappers (carry phase).
# pkg-config sees the carried .pc files only.
export PKG_CONFIG_LIBDIR="$LIB/pkgconfig:$PREFIX/usr/share/pkgconfig"
unset PKG_CONFIG_PATH

# ccache (where the machine has it) keyed on paths relative to the checkout, so
# that another checkout of the same tree (CI's clone) reuses this one's objects.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

# --- configure -----------------------------------------------------------------------------
TORCH_CMAKE=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
TORCH_INC=$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))' 2>/dev/null)
if [ -z "$TORCH_CMAKE" ] || [ ! -f "$TORCH_CMAKE/Torch/TorchConfig.cmake" ]; then
  note "configure  FAILED   no TorchConfig.cmake under '$TORCH_CMAKE' ($PY's torch.utils.cmake_prefix_path)"
  FAILED="$FAILED configure"
  finish
fi
tool() { command -v "$1" 2>/dev/null || true; }
CXX_COMPILER=$(tool c++)
[ -n "$CXX_COMPILER" ] || CXX_COMPILER=$(tool g++)
NVCC=$(tool nvcc)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc && export PATH=/usr/local/cuda/bin:$PATH
# The CUDA toolkit nvcc belongs to (/usr/local/cuda here; wherever it is on the GPU machine).
CUDA_ROOT=/usr/local/cuda
[ -n "$NVCC" ] && CUDA_ROOT=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
export CUDA_ROOT

# NOTE [Only the carried prefix]: the GPU machine has no Debian -dev package, so
# the configure must find every package in the carried prefix and nowhere else,
# here too. CMAKE_IGNORE_PREFIX_PATH=/usr;/ drops those install prefixes from
# every prefix-based search of find_package (config mode), find_library and
# find_path, however the prefix was reached (system defaults, PATH, the
# CMAKE_PREFIX_PATH of a config); CMAKE_IGNORE_PATH drops the include and CMake
# folders when a CMake file names them outright (find_path(... PATHS
# /usr/include)). find_program still finds what is on PATH: build and packaging
# tools, listed as such by the found phase.
# CMAKE_SYSTEM_IGNORE_PREFIX_PATH would do the same but is the platform files'
# to set. CMAKE_FIND_ROOT_PATH (re-rooting every search under a sysroot) is
# for cross-compiling: with ONLY modes it would also re-root PyTorch, nvcc and
# the CUDA toolkit, which are the machine's own. The tools CMake would look
# for under /usr are named outright (compiler, ninja, pkg-config, ccache,
# mold). What the compiler and linker find by themselves (their default
# /usr/include and library folders) is checked after the build (audit).
# The library folders stay: they hold the C library, which FindOpenMP and
# FindThreads look for there (base, like the compiler's own folders).
IGNORE_DIRS="/usr/include;/usr/include/x86_64-linux-gnu;/usr/share;/usr/share/cmake;/usr/lib/cmake;/usr/lib/x86_64-linux-gnu/cmake"
CONFIGURE=(cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  # CI's build (scripts/build.sh: Ninja, RelWithDebInfo, defaults) less the desktop app.
  -DFS_BUILD_GUI=OFF
  -DFS_PYTHON="$PY" -DPython3_EXECUTABLE="$PY"
  "-DCMAKE_PREFIX_PATH=$TORCH_CMAKE;$PREFIX/usr"
  "-DCMAKE_IGNORE_PREFIX_PATH=/usr;/"
  "-DCMAKE_IGNORE_PATH=$IGNORE_DIRS"
  -DCMAKE_CXX_COMPILER="$CXX_COMPILER" -DCMAKE_MAKE_PROGRAM="$(tool ninja)"
  -DPKG_CONFIG_EXECUTABLE="$PREFIX/wrap/pkgconf" -DProtobuf_PROTOC_EXECUTABLE="$PREFIX/wrap/protoc"
  # NOTE [No LD_LIBRARY_PATH].
  "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$LIB:$LIB/blas:$LIB/lapack -Wl,--disable-new-dtags"
  "-DCMAKE_SHARED_LINKER_FLAGS=-Wl,-rpath-link,$LIB:$LIB/blas:$LIB/lapack -Wl,--disable-new-dtags"
  # Multiarch headers (OpenCV's) sit in a folder the compiler searches only under /usr.
  "-DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES=$PREFIX/usr/include/x86_64-linux-gnu"
  # NOTE [fmt beside LibTorch] (cmake/FsHelpers.cmake): its fmt-first folder links the carried spdlog and fmt.
  -DFS_SYSTEM_FMT_INCLUDE="$PREFIX/usr/include" -DFS_SYSTEM_SPDLOG_INCLUDE="$PREFIX/usr/include")
[ -n "$NVCC" ] && CONFIGURE+=(-DCMAKE_CUDA_COMPILER="$NVCC")
# Build tools, where the machine has them (not packages the build links).
[ -n "$(tool ccache)" ] && CONFIGURE+=(-DFS_CCACHE_PROGRAM="$(tool ccache)")
[ -n "$(tool mold)" ] && CONFIGURE+=(-DFS_MOLD_PROGRAM="$(tool mold)")
if ! grep -q 'fs_fmt_first' cmake/FsHelpers.cmake && [ -d "$TORCH_INC/fmt" ]; then
  # A tree from before fs_fmt_first: the same order by hand.
  mkdir -p "$PREFIX/fmt-first"
  ln -sfn ../usr/include/fmt "$PREFIX/fmt-first/fmt"
  ln -sfn ../usr/include/spdlog "$PREFIX/fmt-first/spdlog"
  CONFIGURE+=("-DCMAKE_CXX_FLAGS=-I$PREFIX/fmt-first")
fi
if [ -z "$TORCH_INC" ] || [ ! -f "$TORCH_INC/gloo/algorithm.h" ]; then
  # PyTorch ships no gloo headers: the carried libgloo-dev's (NOTE [Gloo]).
  CONFIGURE+=("-DFS_GLOO_INCLUDE_DIR=$PREFIX/gloo/usr/include")
fi
# LibTorch's CMake package asks for the architectures (NOTE [Torch's CUDA probe]); the H200 is sm_90.
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
# Extra configure arguments for a retry, e.g. -DFS_NCCL_INCLUDE_DIR=<dir>.
if [ -n "${FS_GPU_CMAKE_ARGS:-}" ]; then
  read -r -a extra <<<"$FS_GPU_CMAKE_ARGS"
  CONFIGURE+=("${extra[@]}")
fi

# where_found: every path the configure cached, and whether it lies in the
# carried prefix, PyTorch's environment, the CUDA toolkit or the build folder;
# fails on a library or header path anywhere else (the tools are named above).
where_found() {
  local torch_root site
  torch_root=$(cd "$TORCH_CMAKE/../.." && pwd)
  site=$(dirname "$torch_root")
  echo "# where each package came from ($BUILD/CMakeCache.txt; carry = $PREFIX)"
  local bad=0 key type value where elsewhere=""
  while IFS= read -r line; do
    key=${line%%:*}
    type=${line#*:}
    type=${type%%=*}
    value=${line#*=}
    case "$type" in PATH | FILEPATH) ;; *) continue ;; esac
    case "$value" in "" | *-NOTFOUND) continue ;; esac
    case "$value" in
      "$PREFIX"/*) where="carry" ;;
      "$site"/* | "$torch_root"/*) where="torch" ;;
      # the toolkit's root itself too: CUDA_TOOLKIT_ROOT_DIR is /usr/local where the toolkit is laid out there
      "$CUDA_ROOT" | "$CUDA_ROOT"/* | /usr/local/cuda*) where="cuda" ;;
      "$BUILD"/* | "$ROOT"/*) where="tree" ;;
      */libcuda.so* | */libnvidia-ml.so*) where="driver" ;;
      *)
        case "$key" in
          # protoc must match the carried libprotobuf, pkg-config must read the carried .pc files
          Protobuf_PROTOC_EXECUTABLE | PKG_CONFIG_EXECUTABLE) where="ELSEWHERE"; bad=1 ;;
          # the compiler's OpenMP runtime and the C library
          OpenMP_*) where="base" ;;
          # FindCUDA / FindCUDAToolkit look these up and nothing of ours links them
          CUDA_OpenCL_LIBRARY | CUDA_npp* | CUDA_nvjpeg* | CUDA_cuFile* | CUDAToolkit_rt_LIBRARY) where="unused" ;;
          # programs: the toolchain and build tools, the test oracles' Python, packaging tools
          CMAKE_* | FS_PYTHON | FS_TEST_PYTHON | FS_ORACLE_PYTHON | Python3_EXECUTABLE | _Python3_EXECUTABLE) where="tool" ;;
          *) if [[ "$value" == */bin/* ]]; then where="tool"; else where="ELSEWHERE"; bad=1; fi ;;
        esac ;;
    esac
    printf '%-9s %-44s %s\n' "$where" "$key" "$value"
    [ "$where" = ELSEWHERE ] && elsewhere+="  $key = $value"$'\n'
  done < <(grep -E '^[A-Za-z_][A-Za-z0-9_+.-]*:(PATH|FILEPATH)=' "$BUILD/CMakeCache.txt" | LC_ALL=C sort)
  if [ "$bad" -ne 0 ]; then
    # Repeated last: the summary shows a log's last lines, and the listing is long.
    printf 'gpu-check: found outside the carried prefix, PyTorch and the CUDA toolkit (%s):\n%s' "$CUDA_ROOT" "$elsewhere"
    return 1
  fi
}
export TORCH_CMAKE
export -f where_found
run_phase configure "$OUT/configure.log" "${CONFIGURE[@]}" || finish
run_phase found "$OUT/configure.log" where_found || finish

# --- build: what the checks run, by output path ---------------------------------------------
# ctest_outputs SELECT: "NAME OUTPUT" for each CTest entry SELECT picks (label:L or
# regex:R) and each file of its command that the build makes (the test's
# executable; for a gpu-cases entry flamingo-train and the test binary). Names and
# labels from ctest's JSON; commands from the CTestTestfile.cmake files, since
# ctest leaves out the command of an executable not built yet.
ctest_outputs() {
  ctest --test-dir "$BUILD" --show-only=json-v1 2>/dev/null | "$PY" -c '
import json, os, re, sys
build, select = sys.argv[1], sys.argv[2]
kind, _, value = select.partition(":")
commands = {}
for folder, _, files in os.walk(build):
    if "CTestTestfile.cmake" in files:
        with open(os.path.join(folder, "CTestTestfile.cmake")) as f:
            for m in re.finditer(r"^add_test\(\[=\[(.+?)\]=\] (.*)\)$", f.read(), re.M):
                commands[m.group(1)] = re.findall(r"\"([^\"]*)\"", m.group(2))
for t in json.load(sys.stdin).get("tests", []):
    labels = next((p["value"] for p in t.get("properties", []) if p["name"] == "LABELS"), [])
    if kind == "label" and value not in labels:
        continue
    if kind == "regex" and not re.search(value, t["name"]):
        continue
    for arg in commands.get(t["name"], []):
        if os.path.isabs(arg) and arg.startswith(build + "/"):
            print(t["name"], os.path.relpath(arg, build))
' "$BUILD" "$1"
}
mapfile -t GPU_MAP < <(ctest_outputs label:gpu)
GPU_TESTS=()
OUTPUTS=(bin/flamingo-train)
for entry in "${GPU_MAP[@]}"; do
  GPU_TESTS+=("${entry%% *}")
  OUTPUTS+=("${entry#* }")
done
mapfile -t GPU_TESTS < <(printf '%s\n' "${GPU_TESTS[@]}" | sed '/^$/d' | sort -u)
if [ -n "${FS_GPU_BENCH_TARGETS:-}" ]; then
  read -r -a BENCH_TARGETS <<<"$FS_GPU_BENCH_TARGETS"
else
  read -r -a BENCH_TARGETS <<<"$(sed -n 's/^# targets://p' bench/run_gpu.sh 2>/dev/null | head -n 1)"
fi
OUTPUTS+=("${BENCH_TARGETS[@]/#/bin/}")
CPU_TESTS=()
if [ "$MODE" = nodev ]; then
  # The CPU cases: by default the non-gpu entries of the GPU tests' own binaries.
  cpu_select=${FS_GPU_CPU_TESTS:-}
  if [ -z "$cpu_select" ]; then
    bins=$(printf '%s\n' "${OUTPUTS[@]}" | grep '^tests/' | sed 's|^tests/||' | sort -u | paste -sd'|')
    cpu_select="regex:^(${bins})\$"
  elif [ "$cpu_select" = unit ]; then
    cpu_select=label:unit
  else
    cpu_select="regex:$cpu_select"
  fi
  while read -r name output; do
    [ -n "$name" ] || continue
    printf '%s\n' "${GPU_TESTS[@]}" | grep -qx "$name" && continue
    CPU_TESTS+=("$name")
    OUTPUTS+=("$output")
  done < <(ctest_outputs "$cpu_select")
fi
mapfile -t OUTPUTS < <(printf '%s\n' "${OUTPUTS[@]}" | sort -u)
mapfile -t CPU_TESTS < <(printf '%s\n' "${CPU_TESTS[@]}" | sed '/^$/d' | sort -u)
# Every one must be something ninja builds (a test's command may name a file it does not).
for o in "${OUTPUTS[@]}"; do
  if ! ninja -C "$BUILD" -t query "$o" >/dev/null 2>&1; then
    note "build      FAILED   '$o' is no output of the build (a CTest command or # targets: entry)"
    FAILED="$FAILED build"
    finish
  fi
done
note "gpu tests  ${GPU_TESTS[*]:-none}"
[ "$MODE" = nodev ] && note "cpu tests  ${CPU_TESTS[*]:-none}"
note "outputs    ${OUTPUTS[*]}"
BUILD_CMD=(ninja -C "$BUILD" -k 0 -j "$JOBS" "${OUTPUTS[@]}")
if [ -n "${FS_GPU_LOCK:-}" ]; then
  BUILD_CMD=(flock "$FS_GPU_LOCK" "${BUILD_CMD[@]}")
fi
run_phase build "$OUT/build.log" "${BUILD_CMD[@]}" || finish

# --- audit: what the built programs load and what the compiler read ----------------------------
audit() {
  local torch_root site bad=0
  torch_root=$(cd "$TORCH_CMAKE/../.." && pwd)
  site=$(dirname "$torch_root")
  local -A base=()
  local so
  while IFS= read -r so; do base[$so]=1; done <"$CARRY/base-sonames.txt"
  echo "# libraries each built program loads (ldd), by origin"
  local o lib path name origin badlibs=""
  local -A seen=()
  for o in "${OUTPUTS[@]}"; do
    while read -r lib path; do
      name=$lib
      case "$path" in
        "not found") origin="MISSING"; bad=1 ;;
        "$PREFIX"/*) origin="carry" ;;
        "$site"/* | "$torch_root"/*) origin="torch" ;;
        "$CUDA_ROOT"/* | /usr/local/cuda* | /usr/local/nvidia/*) origin="cuda" ;;
        "$BUILD"/*) origin="tree" ;;
        *)
          if [ -n "${base[$name]:-}" ] || [[ $name == libcuda.so* || $name == libnvidia-* ]]; then
            origin="base"
          elif [ "$MODE" = nodev ]; then
            origin="SYSTEM"; bad=1
          else
            origin="machine"
          fi ;;
      esac
      [ -n "${seen[$name:$origin]:-}" ] && continue
      seen[$name:$origin]=1
      printf '%-8s %-36s %s (%s)\n' "$origin" "$name" "$path" "$o"
      [[ $origin == MISSING || $origin == SYSTEM ]] && badlibs+="  $origin $name $path ($o)"$'\n'
    done < <(ldd "$BUILD/$o" 2>&1 | sed -n 's/^\t\([^ ]*\) => \(not found\|[^ ]*\).*/\1 \2/p')
  done
  if [ "$MODE" = nodev ]; then
    # Headers the compiler took from /usr/include by itself: only the C library's,
    # the kernel's and the C++ library's may come from there.
    echo "# headers read from /usr/include (ninja -t deps), by package"
    local pkgs
    pkgs=$(ninja -C "$BUILD" -t deps 2>/dev/null | sed -n 's|^ *\(/usr/include/[^ ]*\)$|\1|p' | sort -u |
      xargs -r dpkg -S 2>/dev/null | cut -d: -f1 | tr ',' '\n' | sed 's/^ *//' | sort | uniq -c)
    echo "$pkgs"
    local other
    other=$(echo "$pkgs" | awk '{print $2}' | grep -Ev '^(libc6-dev|linux-libc-dev|libstdc\+\+-[0-9]+-dev|libgcc-[0-9]+-dev|libcrypt-dev)$' || true)
    if [ -n "$other" ]; then
      echo "gpu-check: headers from packages the GPU machine lacks: $other"
      bad=1
    fi
  fi
  # Repeated last: the summary shows the log's last lines.
  [ -n "$badlibs" ] && printf 'gpu-check: libraries missing or from the system (CUDA toolkit %s):\n%s' "$CUDA_ROOT" "$badlibs"
  [ "$bad" -eq 0 ]
}
export TORCH_CMAKE
export -f audit
export OUTPUTS_LIST="${OUTPUTS[*]}"
run_phase audit "$OUT/build.log" bash -c 'read -r -a OUTPUTS <<<"$OUTPUTS_LIST"; audit'

# --- smoke: the engine runs; the data codecs read real shards -----------------------------------
smoke() {
  local json
  json=$("$BUILD/bin/flamingo-train" version --json) || return 1
  echo "$json"
  if ! grep -Eq '"cuda_build": *true' <<<"$json"; then
    echo "flamingo-train version --json: not a CUDA build"
    return 1
  fi
  local device=cpu
  if [ "$MODE" = cuda ]; then
    if ! grep -Eq '"cuda_device": *true' <<<"$json"; then
      echo "flamingo-train version --json: no usable CUDA device (cuda_device above)"
      return 1
    fi
    device=cuda
  fi
  # The demo preset: LAION and MMC4 shards generated into the run, then read back
  # through the shard pipeline (tar, JPEG, tokenizer, MMC4 documents).
  local run=$BUILD/smoke-demo
  rm -rf "$run"
  XDG_DATA_HOME=$BUILD/smoke-home/data XDG_CACHE_HOME=$BUILD/smoke-home/cache XDG_CONFIG_HOME=$BUILD/smoke-home/config \
    "$BUILD/bin/flamingo-train" demo --set parallel.device=$device --run-dir "$run" || return 1
  ls "$run"
}
export -f smoke
run_phase smoke "$OUT/test.log" smoke

# --- test ------------------------------------------------------------------------------------------
# ctest -L gpu; on the GPU machine a test Not Run (exit 77: no usable device) is a failure too.
gpu_tests() {
  local log rc
  log=$(mktemp)
  ctest --test-dir "$BUILD" -L gpu --output-on-failure --no-tests=error 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if grep -Eq 'Not Run|\*\*\*Skipped' "$log"; then
    echo "gpu-check: $(grep -Ec 'Not Run|\*\*\*Skipped' "$log") gpu test(s) not run: no usable CUDA device"
    rc=1
  fi
  rm -f "$log"
  return "$rc"
}
export -f gpu_tests
if [ "$MODE" = cuda ]; then
  if [ ${#GPU_TESTS[@]} -eq 0 ]; then
    note "test       FAILED   no test is labelled gpu (ctest -N -L gpu lists none)"
    echo "no test is labelled gpu" >>"$OUT/test.log"
    FAILED="$FAILED test"
  else
    run_phase test "$OUT/test.log" gpu_tests
  fi
else
  if [ ${#CPU_TESTS[@]} -eq 0 ]; then
    note "test       FAILED   no CPU case selected"
    FAILED="$FAILED test"
  else
    regex="^($(printf '%s\n' "${CPU_TESTS[@]}" | paste -sd'|'))\$"
    run_phase test "$OUT/test.log" ctest --test-dir "$BUILD" -R "$regex" --output-on-failure --no-tests=error \
      -j "${FS_TEST_JOBS:-$((JOBS + 1))}"
  fi
fi

# --- bench: a venv with the carried wheels, then bench/run_gpu.sh ---------------------------------
# NOTE [Bench venv]: the baseline's packages go into a venv made with
# --system-site-packages, so the machine's torch, torchvision and transformers
# stay. When FS_PYTHON is itself a venv (the GPU machine's /opt/torch/.venv, our
# python-env.sh), a venv made from it is based on the base interpreter, whose
# site-packages do not hold that torch: a .pth file adds FS_PYTHON's own
# site-packages folders after the venv's. Installed with --no-deps (gpu-carry.sh
# says why) from the carried wheels only.
bench_venv() {
  local venv=$BUILD/bench-venv
  if [ ! -x "$venv/bin/python" ]; then
    "$PY" -m venv --system-site-packages --without-pip "$venv" || return 1
  fi
  local vsite
  vsite=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || return 1
  "$PY" -c 'import site; print("\n".join(site.getsitepackages()))' >"$vsite/fs-python.pth" || return 1
  local wheels=("$CARRY"/wheels/*.whl)
  "$PY" -m pip --disable-pip-version-check install -q --no-index --no-deps --no-compile --upgrade \
    --target "$vsite" "${wheels[@]}" || return 1
  "$venv/bin/python" -c 'import torch, open_flamingo, open_clip, einops_exts; print("bench venv: torch", torch.__version__, "from", torch.__file__, "; open_flamingo from", open_flamingo.__file__)'
}
export -f bench_venv
if run_phase venv "$OUT/bench.log" bench_venv; then
  if [ "$MODE" = cuda ]; then
    run_phase bench "$OUT/bench.log" env PYTHON="$BUILD/bench-venv/bin/python" bash bench/run_gpu.sh "$BUILD"
  else
    run_phase bench "$OUT/bench.log" env PYTHON="$BUILD/bench-venv/bin/python" bash bench/run_gpu.sh "$BUILD" --smoke
  fi
fi

# --- fit: does plan --fit rank choices as they run on this device? ------------------------------
# jq (which the rank benchmarks read events with) comes with the carry.
fit_order() {
  local jqdir
  jqdir=$(mktemp -d)
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$LIB" "$PREFIX/usr/bin/jq" >"$jqdir/jq"
  chmod +x "$jqdir/jq"
  if [ "$MODE" = cuda ]; then
    PATH="$jqdir:$PATH" PYTHON="$PY" DEVICE=cuda WORLD=1 CHOICES=4 WARMUP=3 \
      bash bench/fsdp/fit_rank_order.sh "$BUILD" 1 20 tiny
  else
    PATH="$jqdir:$PATH" PYTHON="$PY" WORLD=1 CHOICES=2 WARMUP=1 bash bench/fsdp/fit_rank_order.sh "$BUILD" 1 2 tiny
  fi
}
export -f fit_order
run_phase fit "$OUT/bench.log" fit_order

finish
