#!/usr/bin/env bash
# Installs each install component of an engine build (engine: flamingo-train and
# its files, not packaged; studio: the flamingo-studio package's app files) into its
# own folder and checks the layout: every file each must hold is there, the two
# share no path, no installed file belongs to neither, and the GUI's binary needs
# no LibTorch library (NOTE [One package] in packaging/CMakeLists.txt). The package
# itself (with the tools-only flamingo-train) is checked by scripts/package-test.sh.
# Usage: check_install_layout.sh BUILD_DIR
# Exit 77 (CTest: skipped) when the build made no man pages or PNG icons (help2man
# or rsvg-convert missing) outside CI; under CI=true that fails.
set -uo pipefail
build="${1:?usage: check_install_layout.sh BUILD_DIR}"
for f in man/flamingo-train.1.gz man/flamingo-studio.1.gz icons/48x48/flamingo-studio.png; do
  if [ ! -s "$build/packaging/$f" ]; then
    echo "layout check: $build/packaging/$f not generated (apt-get install help2man librsvg2-bin, then build fs_package_files)" >&2
    if [ "${CI:-}" = "true" ]; then exit 1; fi
    exit 77
  fi
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0

for comp in engine studio; do
  if ! cmake --install "$build" --component "$comp" --prefix "$work/$comp" >"$work/$comp.log" 2>&1; then
    echo "layout check: cmake --install --component $comp failed:" >&2
    cat "$work/$comp.log" >&2
    exit 1
  fi
  (cd "$work/$comp" && find . -type f -o -type l | sed 's|^\./||' | sort) >"$work/$comp.files"
done

# want COMP PATH...: the component installs each PATH.
want() {
  local comp="$1"
  shift
  for f in "$@"; do
    grep -qxF -- "$f" "$work/$comp.files" || { echo "layout check: component $comp lacks $f" >&2; fail=1; }
  done
}
want engine bin/flamingo-train share/flamingo-train/presets/demo.yaml share/flamingo-train/presets/tiny.yaml \
  share/man/man1/flamingo-train.1.gz share/bash-completion/completions/flamingo-train
want studio bin/flamingo-studio share/flamingo-studio/presets/tiny.yaml share/man/man1/flamingo-studio.1.gz \
  share/icons/hicolor/scalable/apps/flamingo-studio.svg share/icons/hicolor/48x48/apps/flamingo-studio.png \
  share/icons/hicolor/128x128/apps/flamingo-studio.png share/icons/hicolor/256x256/apps/flamingo-studio.png
grep -q '^share/applications/.*\.desktop$' "$work/studio.files" || { echo "layout check: studio has no desktop entry" >&2; fail=1; }
grep -q '^share/metainfo/.*\.metainfo\.xml$' "$work/studio.files" || { echo "layout check: studio has no AppStream metainfo" >&2; fail=1; }

common="$(comm -12 "$work/engine.files" "$work/studio.files")"
if [ -n "$common" ]; then
  echo "layout check: both components install:" >&2
  printf '  %s\n' $common >&2
  fail=1
fi
# Every install() rule names a component: an install without one lands in neither list.
if ! cmake --install "$build" --prefix "$work/all" >"$work/all.log" 2>&1; then
  echo "layout check: cmake --install failed:" >&2
  cat "$work/all.log" >&2
  exit 1
fi
(cd "$work/all" && find . -type f -o -type l | sed 's|^\./||' | sort) >"$work/all.files"
orphans="$(sort -u "$work/engine.files" "$work/studio.files" | comm -23 "$work/all.files" -)"
if [ -n "$orphans" ]; then
  echo "layout check: installed by no component (add COMPONENT engine or studio):" >&2
  printf '  %s\n' $orphans >&2
  fail=1
fi

needed="$(readelf -d "$work/studio/bin/flamingo-studio" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
if grep -Eq '^lib(torch|c10|gloo)' <<<"$needed"; then
  echo "layout check: flamingo-studio needs LibTorch: $(grep -E '^lib(torch|c10|gloo)' <<<"$needed" | tr '\n' ' ')" >&2
  fail=1
fi
[ $fail -eq 0 ] && echo "layout check: engine $(wc -l <"$work/engine.files") files, studio $(wc -l <"$work/studio.files") files, none shared; flamingo-studio needs no LibTorch"
exit $fail
