#!/usr/bin/env bash
# bench/reference_sources.sh: clones the public sources that
# bench/train_step_openflamingo.py runs (OpenFlamingo's modules, open_clip's
# ViT, einops, einops-exts) at pinned commits into DEST, and verifies each
# checkout's commit. Nothing of theirs is copied into this repository: the
# faithful baseline imports them from DEST.
#
# Usage: bench/reference_sources.sh DEST
# Env:   REF_GIT_BASE  where the repositories come from (default https://github.com):
#                      an URL base maps owner/name to $REF_GIT_BASE/owner/name.git;
#                      a local directory maps it to $REF_GIT_BASE/owner+name/repo
#                      (the layout of a bare-mirror folder such as /work/.mirror).
#
# Only the folders the baseline needs are checked out (a sparse checkout): the
# repositories carry large data and notebooks the baseline never reads.
set -euo pipefail

dest="${1:-}"
[[ -n "$dest" ]] || { echo "usage: $0 DEST (env REF_GIT_BASE, default https://github.com)" >&2; exit 2; }
base="${REF_GIT_BASE:-https://github.com}"

# name in DEST | owner/name | pinned commit (what it is) | sparse folders
refs=(
  "open_flamingo|mlfoundations/open_flamingo|655f693fbfa04cd6e9a987d960654624d48917cf|open_flamingo/src open_flamingo/train"
  "open_clip|mlfoundations/open_clip|a09d519f91358187d73debacfc2db5f154291d40|src/open_clip"
  "einops|arogozhnikov/einops|18758e8a710f05133cbe3e58260d86e3fd4f0b5f|einops"
  "einops-exts|lucidrains/einops-exts|a61d8d5c0ba10b6d9386b924177f528799627924|einops_exts"
)
# open_flamingo: main at 655f693 (v2 era); open_clip: tag v2.20.0; einops: tag v0.6.1
# (works with Debian's torch 1.13 and Python 3.11); einops-exts: a61d8d5 = 0.0.4.

url_of() {
  local repo="$1"
  if [[ -d "$base" ]]; then
    echo "$base/${repo/\//+}/repo"
  else
    echo "$base/$repo.git"
  fi
}

mkdir -p "$dest"
for entry in "${refs[@]}"; do
  IFS='|' read -r name repo commit folders <<<"$entry"
  dir="$dest/$name"
  url="$(url_of "$repo")"
  if [[ -e "$dir" && ! -d "$dir/.git" ]]; then
    echo "reference_sources: $dir exists and is not a git checkout; remove it or pick another DEST" >&2
    exit 1
  fi
  if [[ ! -d "$dir/.git" ]]; then
    echo "reference_sources: cloning $repo from $url into $dir" >&2
    git clone --quiet --no-checkout "$url" "$dir" || {
      echo "reference_sources: git clone $url failed (set REF_GIT_BASE to a reachable base)" >&2
      exit 1
    }
  fi
  git -C "$dir" cat-file -e "$commit^{commit}" 2>/dev/null || git -C "$dir" fetch --quiet origin "$commit" || {
    echo "reference_sources: $repo has no commit $commit at $url" >&2
    exit 1
  }
  # The sparse patterns are written directly (not with `git sparse-checkout set`,
  # which walks the whole index and complains about blobs a partial mirror lacks).
  git -C "$dir" config core.sparseCheckout true
  git -C "$dir" config core.sparseCheckoutCone false
  { echo "/LICENSE"; echo "/README.md"; for f in $folders; do echo "/$f/"; done; } >"$dir/.git/info/sparse-checkout"
  git -C "$dir" -c advice.detachedHead=false checkout --quiet --detach "$commit"
  head="$(git -C "$dir" rev-parse HEAD)"
  if [[ "$head" != "$commit" ]]; then
    echo "reference_sources: $dir is at $head, expected $commit" >&2
    exit 1
  fi
  for f in $folders; do
    [[ -d "$dir/$f" ]] || { echo "reference_sources: $dir/$f missing after checkout of $commit" >&2; exit 1; }
  done
  echo "$name $repo $head"
done
