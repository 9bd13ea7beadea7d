#!/usr/bin/env bash
# Downloads, here, everything the GPU machine lacks for scripts/gpu-check.sh
# (docs/gpu.md): that machine has a compiler, nvcc, CMake, ninja and PyTorch
# (python3 with torch 2.11), none of our Debian packages, and can fetch nothing.
# Into .gpu-carry/ (ignored by git):
#   debs/      the Debian packages the engine build's CMake files find, and
#              every library those need at link and run time (the closure
#              below), less the base every such machine has;
#   stubs/     gdal_stub.c (NOTE [GDAL stub]);
#   wheels/    the Python packages of bench/run_gpu.sh's OpenFlamingo baseline;
#   packages.txt, wheels.txt  what was carried and why.
# Prints the size of what travels.
#
# The build is CI's engine build: FS_BUILD_GUI=OFF, everything else as CI
# (data codecs, tests, benchmarks). Its find_package / pkg_check_modules calls
# and what each needs from Debian (bookworm):
#   CMakeLists.txt         yaml-cpp, nlohmann_json, Protobuf (+ protoc for
#                          backend/export), GTest (tests)
#   cmake/FsHelpers.cmake  Gloo's headers (NOTE [Gloo]); NCCL's come with torch
#   backend/telemetry      spdlog (+ fmt)
#   backend/model          OpenMP, the compiler's (BLAS is libtorch_cpu's: NOTE [One BLAS])
#   backend/data/image     OpenCV core + imgcodecs (+ imgproc, which they link), JPEG
#   backend/data/shards, shardgen   LibArchive
#   backend/data/documents simdjson
#   backend/data/tokenizer pkg-config: libpcre2-8, sentencepiece
# The runtime closure is not listed by hand: the target of every carried
# libfoo.so link and every NEEDED entry of every carried ELF file must be carried too or be in BASE_SONAMES, else the package that
# provides it here (dpkg -S) is added, until nothing is missing. So a package
# upgrade that adds a dependency is carried without editing this file.
#
# Usage: scripts/gpu-carry.sh   (again: downloads only what is missing)
# Environment: FS_GPU_PIP (default: FS_PYTHON's pip, scripts/python-env.sh) downloads the wheels.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -eq 0 ] || { echo "gpu-carry: no arguments expected, got '$1'" >&2; exit 2; }

# The -dev packages (and tools) the configure finds; their libraries come with the closure.
DEV_PACKAGES=(
  libyaml-cpp-dev nlohmann-json3-dev
  libprotobuf-dev protobuf-compiler
  libgtest-dev
  libgloo-dev
  libspdlog-dev libfmt-dev
  # the reference BLAS and LAPACK (OpenCV's core needs libblas.so.3 and liblapack.so.3;
  # OpenBLAS provides them too, 7 MB more)
  libblas3 liblapack3
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
  libjpeg62-turbo-dev
  libarchive-dev
  libsimdjson-dev
  libpcre2-dev libsentencepiece-dev
  # pkg_check_modules needs a pkg-config; no GPU image promises one
  pkgconf pkgconf-bin libpkgconf3
  # the rank benchmarks read events.jsonl with jq (gpu-check.sh's fit phase)
  jq
)
# What any machine with g++ has (glibc, the GCC runtime, zlib, which dpkg and
# Python need): never carried, and the only libraries gpu-check.sh --no-device
# lets a built program load from outside the carried prefix and PyTorch.
BASE_SONAMES=(
  ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 libutil.so.1
  libstdc++.so.6 libgcc_s.so.1 libgomp.so.1 libz.so.1
)
# Used for their headers only (gpu-check.sh unpacks them apart): Gloo's
# (NOTE [Gloo] in cmake/FsHelpers.cmake); its libgloo.so is never linked.
HEADERS_ONLY=(libgloo-dev)
# NOTE [GDAL stub]: libopencv_imgcodecs.so.406 NEEDs libgdal.so.32, whose own
# closure (poppler, HDF5, NetCDF, PROJ, SpatiaLite, MariaDB, PostgreSQL, curl,
# NSS, ICU, ...) is about 120 packages and 60 MiB of .debs: more than a device
# call carries (64 MiB with the repository). OpenCV reaches GDAL only from
# cv::imread(path, IMREAD_LOAD_GDAL); the engine calls cv::imdecode and
# cv::imencode. So libgdal is not carried: stubs/gdal_stub.c defines the 14
# symbols imgcodecs imports from it (taken from the carried library with nm).
# imgcodecs registers a GDAL decoder among its built-in ones, whose constructor
# calls GDALAllRegister (a no-op here); that decoder claims only NITF and DTED
# signatures, after every other decoder, and then calls GDALOpen, which returns
# NULL here (the image does not decode); GDALClose does nothing; every other
# symbol prints its name and aborts. gpu-check.sh compiles it as libgdal.so.32
# in the carried prefix.
STUBBED_SONAMES=(libgdal.so.32)

# bench/run_gpu.sh's baseline: OpenFlamingo 2.0.1 and open_clip (their
# modules), einops, einops-exts, and ftfy (open_clip's tokenizer imports it),
# at the versions pinned in scripts/requirements*.txt. Installed with --no-deps:
# open-flamingo pins torch==2.0.1 and sentencepiece==0.1.98, open-clip-torch
# 2.20 protobuf<4; the machine's torch, torchvision, transformers, regex, tqdm
# and huggingface_hub are used.
pin() {
  local line
  line=$(grep -h -i -E "^$1==" scripts/requirements.txt scripts/requirements-nodeps.txt | head -n 1)
  [ -n "$line" ] || { echo "gpu-carry: $1 is not pinned in scripts/requirements*.txt" >&2; exit 1; }
  echo "$line"
}
WHEELS=()
for name in open-flamingo open-clip-torch einops-exts einops ftfy wcwidth; do WHEELS+=("$(pin "$name")"); done
# The GPU machine's python3 (KINDS.md: Python 3.12, manylinux x86_64).
WHEEL_PLATFORM=(--python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)

CARRY=.gpu-carry
DEBS=$CARRY/debs
mkdir -p "$DEBS" "$CARRY/stubs" "$CARRY/wheels"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# download PKG...: apt-get download into debs/, under plain names (an epoch's ':'
# is saved as '%3a', versions hold '+'): they travel everywhere.
download() {
  local missing=() p f name plain
  for p in "$@"; do
    have_deb "$p" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  # A stale or missing package list: update once and try again.
  if ! (cd "$DEBS" && apt-get -q download "${missing[@]}") >"$TMP/apt.log" 2>&1; then
    apt-get update -qq && (cd "$DEBS" && apt-get -q download "${missing[@]}") >"$TMP/apt.log" 2>&1 ||
      { cat "$TMP/apt.log" >&2; exit 1; }
  fi
  # As root apt-get warns that _apt cannot write here.
  grep -v '^W: Download is performed unsandboxed' "$TMP/apt.log" || true
  for f in "$DEBS"/*.deb; do
    name=${f##*/}
    plain=${name//%3a/_}
    plain=${plain//[^A-Za-z0-9._-]/_}
    [ "$name" = "$plain" ] || mv "$f" "$DEBS/$plain"
  done
  for p in "${missing[@]}"; do
    have_deb "$p" || { echo "gpu-carry: $p was not downloaded" >&2; exit 1; }
  done
}
# have_deb PKG: its .deb is in debs/ (under its plain name).
have_deb() { compgen -G "$DEBS/${1//[^A-Za-z0-9._-]/_}_*.deb" >/dev/null; }
deb_of() { compgen -G "$DEBS/${1//[^A-Za-z0-9._-]/_}_*.deb" | head -n 1; }

in_list() {
  local x=$1
  shift
  local y
  for y in "$@"; do [ "$x" = "$y" ] && return 0; done
  return 1
}

# --- the Debian packages and their closure ---------------------------------------
download "${DEV_PACKAGES[@]}"
declare -A WHY=()
for p in "${DEV_PACKAGES[@]}"; do WHY[$p]="listed"; done
declare -A UNPACKED=()
ROOT=$TMP/root
mkdir -p "$ROOT"
for round in 1 2 3 4 5 6 7 8 9 10; do
  # Only the packages reached so far (debs/ may hold one an earlier set needed).
  for p in "${!WHY[@]}"; do
    [ -n "${UNPACKED[$p]:-}" ] && continue
    if in_list "$p" "${HEADERS_ONLY[@]}"; then
      dpkg-deb -x "$(deb_of "$p")" "$TMP/headers-only"  # its libraries are not followed
    else
      dpkg-deb -x "$(deb_of "$p")" "$ROOT"
    fi
    UNPACKED[$p]=1
  done
  # Sonames the carried files provide, and what every carried ELF file needs.
  declare -A HAVE=()
  while IFS= read -r so; do HAVE[$so]=1; done < <(find "$ROOT" \( -type f -o -type l \) -name 'lib*.so*' -printf '%f\n')
  declare -A NEED=()
  while IFS= read -r elf; do
    while IFS= read -r so; do NEED[$so]="${NEED[$so]:-$elf}"; done < <(readelf -d "$elf" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  done < <(find "$ROOT" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
  # A -dev package's libfoo.so links to the runtime package's libfoo.so.N.
  while IFS= read -r link; do
    so=$(basename "$(readlink "$link")")
    NEED[$so]="${NEED[$so]:-$link}"
  done < <(find "$ROOT" -xtype l -name 'lib*.so*')
  new=()
  for so in "${!NEED[@]}"; do
    [ -n "${HAVE[$so]:-}" ] && continue
    in_list "$so" "${BASE_SONAMES[@]}" && continue
    in_list "$so" "${STUBBED_SONAMES[@]}" && continue
    # The package that provides it here (install-deps.sh installed the whole set).
    pkg=$(dpkg -S "*/$so" 2>/dev/null | grep -v -- '-dev:' | head -n 1 | cut -d: -f1 || true)
    if [ -z "$pkg" ]; then
      echo "gpu-carry: ${NEED[$so]#"$ROOT"} needs $so, which no installed package provides here (run scripts/install-deps.sh)" >&2
      exit 1
    fi
    if [ -z "${WHY[$pkg]:-}" ]; then
      WHY[$pkg]="$so for ${NEED[$so]##*/}"
      new+=("$pkg")
    fi
  done
  unset HAVE NEED
  [ ${#new[@]} -eq 0 ] && break
  download "${new[@]}"
done
if [ ${#new[@]} -ne 0 ]; then
  echo "gpu-carry: the closure did not settle in 10 rounds (still adding: ${new[*]})" >&2
  exit 1
fi
# Packages left from an earlier set (a removed dependency) would travel for nothing.
for f in "$DEBS"/*.deb; do
  p=$(dpkg-deb -f "$f" Package)
  [ -n "${WHY[$p]:-}" ] || { echo "gpu-carry: removing $p (no longer needed)"; rm -f "$f"; }
done
{
  echo "# package  why (listed: found by the configure; else the soname it provides and who needs it)"
  for p in "${!WHY[@]}"; do printf '%s  %s\n' "$p" "${WHY[$p]}"; done | sort
} >"$CARRY/packages.txt"

# --- NOTE [GDAL stub] ----------------------------------------------------------------
imgcodecs=$(find "$ROOT" -name 'libopencv_imgcodecs.so.*' -type f | head -n 1)
{
  echo "/* NOTE [GDAL stub] in scripts/gpu-carry.sh: what $(basename "$imgcodecs") imports from libgdal.so.32. */"
  echo "#include <stdio.h>"
  echo "#include <stdlib.h>"
  echo "static void fs_gdal_stub(const char* name) {"
  echo "  fprintf(stderr, \"libgdal.so.32 is a stub (scripts/gpu-carry.sh, NOTE [GDAL stub]): %s called\\n\", name);"
  echo "  abort();"
  echo "}"
  nm -D --undefined-only "$imgcodecs" | awk '{print $2}' | sed 's/@.*//' | grep 'GDAL' | sort -u |
    while IFS= read -r sym; do
      case "$sym" in
        GDALAllRegister | GDALClose) echo "void $sym(void) {}" ;;
        GDALOpen) echo "void* $sym(void) { return 0; }" ;;
        *) echo "void $sym(void) { fs_gdal_stub(\"$sym\"); }" ;;
      esac
    done
} >"$CARRY/stubs/gdal_stub.c"
nsym=$(grep -c '^void' "$CARRY/stubs/gdal_stub.c")
[ "$nsym" -gt 0 ] || { echo "gpu-carry: no GDAL symbol in $imgcodecs" >&2; exit 1; }

# --- wheels ----------------------------------------------------------------------------
env_python=$(bash scripts/python-env.sh --python)
[ -x "$env_python" ] || env_python=python3
read -r -a PIP <<<"${FS_GPU_PIP:-$env_python -m pip}"
wheel_missing() {
  local dir=$1 spec name
  shift
  for spec in "$@"; do
    name=${spec%%==*}
    name=${name//-/_}
    compgen -G "$dir/${name}-${spec##*==}-*.whl" >/dev/null || return 0
  done
  return 1
}
if wheel_missing "$CARRY/wheels" "${WHEELS[@]}"; then
  "${PIP[@]}" download -q --disable-pip-version-check --no-deps --only-binary=:all: "${WHEEL_PLATFORM[@]}" \
    -d "$CARRY/wheels" "${WHEELS[@]}"
fi
printf '%s\n' "${WHEELS[@]}" >"$CARRY/wheels.txt"
printf '%s\n' "${BASE_SONAMES[@]}" >"$CARRY/base-sonames.txt"

n=$(find "$DEBS" -name '*.deb' | wc -l)
listed=$(grep -c '  listed$' "$CARRY/packages.txt")
kib=$(du -sk "$CARRY" | cut -f1)
repo_kib=$(($(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s+=$1} END {print int(s/1024)}')))
echo "gpu-carry: $n packages ($listed listed, $((n - listed)) for the closure), $nsym GDAL stubs, ${#WHEELS[@]} wheels;" \
  "$CARRY is $((kib / 1024)) MiB, with the repository's tracked files $(((kib + repo_kib) / 1024)) MiB of the device call's 64"
if [ $((kib + repo_kib)) -gt $((60 * 1024)) ]; then
  echo "gpu-carry: over 60 MiB with the repository: the device call may refuse it" >&2
  exit 1
fi
