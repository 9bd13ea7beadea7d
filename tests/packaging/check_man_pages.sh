#!/usr/bin/env bash
# Renders the generated man pages (build/packaging/man/*.1.gz, made by help2man
# from --help) with man -l and checks what they must hold: every command that
# `flamingo-train --help` lists, and each of flamingo-studio's options.
# Usage: check_man_pages.sh MAN_DIR FLAMINGO_TRAIN [FLAMINGO_STUDIO]
# Exit 77 (CTest: skipped) when man or the generated pages are missing outside
# CI (a build without help2man makes none); under CI=true that fails.
set -uo pipefail
dir="${1:?usage: check_man_pages.sh MAN_DIR FLAMINGO_TRAIN [FLAMINGO_STUDIO]}"
train="${2:?usage: check_man_pages.sh MAN_DIR FLAMINGO_TRAIN [FLAMINGO_STUDIO]}"
studio="${3:-}"
unavailable() {
  echo "man page check: $1" >&2
  if [ "${CI:-}" = "true" ]; then exit 1; fi
  exit 77
}
command -v man >/dev/null || unavailable "man not found (apt-get install man-db)"
for page in flamingo-train ${studio:+flamingo-studio}; do
  [ -s "$dir/$page.1.gz" ] || unavailable "$dir/$page.1.gz not generated (apt-get install help2man, then build fs_package_files)"
done

fail=0
err="$(mktemp)"
trap 'rm -f "$err"' EXIT
# render PAGE: the page as text, or fail naming the page and man's complaint.
render() {
  local text
  if ! text="$(MANWIDTH=100 MANPAGER=cat man --warnings -l "$dir/$1.1.gz" 2>"$err" | col -b)"; then
    echo "man page check: man -l $dir/$1.1.gz failed: $(cat "$err")" >&2
    return 1
  fi
  if [ -s "$err" ]; then
    echo "man page check: groff warnings in $1.1.gz: $(cat "$err")" >&2
    return 1
  fi
  printf '%s\n' "$text"
}
# expect PAGE TEXT WORD...: every WORD appears in TEXT.
expect() {
  local page="$1" text="$2"
  shift 2
  for word in "$@"; do
    grep -qF -- "$word" <<<"$text" || { echo "man page check: $page(1) lacks '$word'" >&2; fail=1; }
  done
}

text="$(render flamingo-train)" || exit 1
mapfile -t commands < <("$train" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
[ "${#commands[@]}" -gt 5 ] || { echo "man page check: found only ${#commands[@]} commands in $train --help" >&2; exit 1; }
expect flamingo-train "$text" NAME SYNOPSIS DESCRIPTION FILES "SEE ALSO" flamingo-studio "${commands[@]}"
[ $fail -eq 0 ] && echo "man page check: flamingo-train(1) renders and names all ${#commands[@]} commands: ${commands[*]}"

if [ -n "$studio" ]; then
  text="$(render flamingo-studio)" || exit 1
  expect flamingo-studio "$text" NAME SYNOPSIS DESCRIPTION FILES "SEE ALSO" flamingo-train \
    --demo --screenshot --follow remote
  [ $fail -eq 0 ] && echo "man page check: flamingo-studio(1) renders with every option"
fi
exit $fail
