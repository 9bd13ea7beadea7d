#!/usr/bin/env bash
# README command 1: installs every dependency, builds, and starts the main job
# on its built-in default — no network, no user files.
#   without a display: `flamingo-train demo --long`, the demo model for a few
#                      minutes on generated shards, 2 ranks under FSDP
#                      full_shard (Ctrl-C stops it)
#   with a display:    the desktop app on the same run (`flamingo-studio --demo --long`)
# (see scripts/run-default.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
exec bash scripts/run-default.sh
