#!/usr/bin/env bash
# The project's pinned Python environment: one virtual environment outside the
# repository, made from scripts/requirements.txt (then requirements-nodeps.txt,
# installed without their dependencies: see that file). The one place its path is
# decided: CMake (cmake/FsPython.cmake), install-deps.sh and the tests ask this
# script.
#   python-env.sh            print the environment's folder
#   python-env.sh --python   print its interpreter
#   python-env.sh --install  make or update it (needs the package index), check torch, print the folder
#   python-env.sh --check    exit 1, saying why, when it is missing or not the pinned set
# FS_PYTHON_ENV overrides the folder (default /opt/flamingo-studio/python).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ENV_DIR="${FS_PYTHON_ENV:-/opt/flamingo-studio/python}"
REQS="$ROOT/scripts/requirements.txt"
REQS_NODEPS="$ROOT/scripts/requirements-nodeps.txt"
STAMP="$ENV_DIR/.fs-requirements.sha256"
want_hash() { cat "$REQS" "$REQS_NODEPS" | sha256sum | cut -d' ' -f1; }

check() {
  if [ ! -x "$ENV_DIR/bin/python" ]; then
    echo "python-env: no environment at $ENV_DIR; run scripts/install-deps.sh" >&2; return 1
  fi
  if [ "$(cat "$STAMP" 2>/dev/null)" != "$(want_hash)" ]; then
    echo "python-env: $ENV_DIR was not made from the current scripts/requirements*.txt; run scripts/install-deps.sh" >&2
    return 1
  fi
}

# NOTE [Which torch]: the index's torch 2.11.0 for Linux is the CUDA 13.0 build; a
# CPU-only or other-CUDA wheel (another index, a local wheel) would build an engine
# without NCCL, so the installed package's own version file must say so.
check_torch() {
  local got
  got="$("$ENV_DIR/bin/python" - <<'EOF'
import importlib.util, pathlib, re
spec = importlib.util.find_spec("torch")
text = (pathlib.Path(spec.origin).parent / "version.py").read_text()
version = re.search(r"__version__ = '([^']*)'", text).group(1)
cuda = re.search(r"cuda: Optional\[str\] = '?([^'\n]*)'?", text).group(1)
print(version, cuda)
EOF
)"
  if [ "$got" != "2.11.0+cu130 13.0" ]; then
    echo "python-env: torch in $ENV_DIR is '$got', expected '2.11.0+cu130 13.0' (the CUDA 13.0 build)" >&2
    return 1
  fi
}

case "${1:-}" in
  "") echo "$ENV_DIR" ;;
  --python) echo "$ENV_DIR/bin/python" ;;
  --check) check && check_torch ;;
  --install)
    if check 2>/dev/null && check_torch; then
      echo "python-env: $ENV_DIR is current" >&2
    else
      start=$(date +%s)
      if [ ! -x "$ENV_DIR/bin/python" ]; then
        mkdir -p "$(dirname "$ENV_DIR")"
        /usr/bin/python3 -m venv --system-site-packages "$ENV_DIR"
      fi
      echo "python-env: installing scripts/requirements.txt into $ENV_DIR" >&2
      "$ENV_DIR/bin/python" -m pip install --no-input --disable-pip-version-check -q \
        --require-virtualenv -r "$REQS" </dev/null
      "$ENV_DIR/bin/python" -m pip install --no-input --disable-pip-version-check -q \
        --require-virtualenv --no-deps -r "$REQS_NODEPS" </dev/null
      check_torch
      want_hash >"$STAMP"
      echo "python-env: done in $(($(date +%s) - start)) s, $(du -sh "$ENV_DIR" | cut -f1)" >&2
    fi
    echo "$ENV_DIR" ;;
  *) echo "usage: python-env.sh [--python|--install|--check]" >&2; exit 2 ;;
esac
