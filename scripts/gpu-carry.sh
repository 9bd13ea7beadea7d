#!/usr/bin/env bash
# Downloads, here, the Debian packages that the GPU machine lacks for the
# engine-only build (docs/gpu.md) into .gpu-carry/debs (.gitignore'd), for
# scripts/gpu-check.sh to unpack there. That machine has nvcc, CMake, ninja and
# PyTorch's LibTorch, and can fetch nothing. Prints the folder's size.
#
# The set, from the CMake files of an FS_BUILD_GUI=OFF FS_BUILD_DATA_CODECS=OFF
# build with tests: yaml-cpp, nlohmann-json (CMakeLists.txt), spdlog + fmt
# (backend/telemetry), GoogleTest (tests), BLAS with its cblas.h
# (backend/model calls cblas_sgemm); Gloo's headers (libgloo-dev, used only
# when PyTorch ships none: NOTE [Gloo] in cmake/FsHelpers.cmake). OpenMP comes
# with the compiler.
#
# Usage: scripts/gpu-carry.sh   (again: downloads only what is missing)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  libyaml-cpp-dev libyaml-cpp0.7
  nlohmann-json3-dev
  libspdlog-dev libspdlog1.10 libfmt-dev libfmt9
  libgtest-dev
  libblas-dev libblas3
  libgloo-dev
)
CARRY=.gpu-carry
mkdir -p "$CARRY/debs"
missing=()
for p in "${PACKAGES[@]}"; do
  compgen -G "$CARRY/debs/${p}_*.deb" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  # apt-get download writes into the current folder; as root it warns that _apt cannot write there.
  (cd "$CARRY/debs" && apt-get download "${missing[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed')
  # Plain names (an epoch's ':' is saved as '%3a', versions hold '+'): they travel everywhere.
  for f in "$CARRY"/debs/*.deb; do
    name=${f##*/}
    plain=${name//%3a/_}
    plain=${plain//[^A-Za-z0-9._-]/_}
    [ "$name" = "$plain" ] || mv "$f" "$CARRY/debs/$plain"
  done
fi
for p in "${PACKAGES[@]}"; do
  compgen -G "$CARRY/debs/${p}_*.deb" >/dev/null || { echo "gpu-carry: $p was not downloaded" >&2; exit 1; }
done
printf '%s\n' "${PACKAGES[@]}" >"$CARRY/packages.txt"
echo "gpu-carry: ${#PACKAGES[@]} packages in $CARRY/debs, $(du -sh "$CARRY" | cut -f1) in all"
