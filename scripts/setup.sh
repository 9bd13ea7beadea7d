#!/usr/bin/env bash
# README command 1: installs every dependency, builds, and starts the main job
# on its built-in default — no network, no user files.
#   with a display: the desktop app with a local tiny run (once the app exists)
#   without one:    the engine's demo in the terminal (once the engine exists)
# Until those land it runs what exists: the tiny preset through the config
# validator, which prints the run it describes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
exec bash scripts/run-default.sh
