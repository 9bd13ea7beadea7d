#!/usr/bin/env bash
# Installs every Debian bookworm package Flamingo Studio needs to build, run
# and test, then the project's pinned Python environment (scripts/requirements.txt:
# PyTorch and the Python oracles, from the Python package index) at the path
# scripts/python-env.sh prints. Idempotent; needs root (or sudo). No other
# network access.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache mold pkg-config git clang-format
  # fuzzing and the sanitizer tree (scripts/fuzz.sh): clang with libFuzzer; llvm-symbolizer for stacks
  clang-14 libclang-rt-14-dev libfuzzer-14-dev llvm-14
  # engine: LibTorch is PyTorch's, from the Python environment below (torch 2.11 with CUDA 13 and
  # NCCL; nvcc and the CUDA toolkit come with the machine); libgloo-dev: only the headers c10d's
  # ProcessGroupGloo.hpp includes (NOTE [Gloo] in cmake/FsHelpers.cmake); OpenBLAS: the
  # libblas.so.3 OpenCV's core needs (every matmul of ours and LibTorch's runs on the MKL inside
  # PyTorch's wheel: NOTE [One BLAS] in cmake/FsHelpers.cmake)
  libgloo-dev libopenblas0-pthread
  # protocol and tools
  libyaml-cpp-dev libsimdjson-dev nlohmann-json3-dev libspdlog-dev libarchive-dev libsentencepiece-dev libpcre2-dev libsqlite3-dev
  libopencv-dev libjpeg62-turbo-dev libssh-dev
  # run export to TensorBoard (backend/export): protoc generates the Event messages, libprotobuf encodes them
  protobuf-compiler libprotobuf-dev
  # desktop app
  qt6-base-dev qt6-base-dev-tools libqt6sql6-sqlite qt6-svg-dev libqcustomplot-dev
  # tests: GoogleTest, oracles (Debian's python3-pil etc., seen from the Python environment; xxhsum),
  # a real sshd, network namespaces, a virtual display for screenshots
  # (python3-skimage ships real photographs; the BPE oracle is Hugging Face tokenizers in the venv below)
  # (python3-pandas: the export oracle reads the CSV back; its protobuf is the Python environment's)
  python3-pandas
  # python3-venv: the pinned environment below (it sees these Debian modules too)
  libgtest-dev python3 python3-venv python3-pil python3-scipy python3-sentencepiece python3-yaml python3-skimage
  # a private SLURM cluster on this machine (tests/fixtures/slurm_cluster.*): slurmctld, slurmd, munged
  slurm-wlm munge
  xxhash openssh-server openssh-client iproute2 xvfb xauth binutils
  # login shells the SSH tests run remote commands under (NOTE [Remote command lines])
  zsh fish tcsh
  # packaging (packaging/, tests/packaging, scripts/package-test.sh): man pages from --help, PNG icons
  # from the SVG, the desktop-entry and AppStream validators, man and col to render pages, a fresh Debian
  # root; file: CPack finds the ELF files for dpkg-shlibdeps
  help2man librsvg2-bin desktop-file-utils appstream man-db bsdextrautils debootstrap file
  # benchmarks (bench/ddp reads events.jsonl with jq)
  jq
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "install-deps: run as root (or install sudo)" >&2; exit 1
  fi
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
else
  echo "install-deps: installing ${#missing[@]} package(s): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
fi

bash scripts/python-env.sh --install
