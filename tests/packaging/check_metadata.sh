#!/usr/bin/env bash
# Validates the flamingo-studio package's desktop entry (desktop-file-validate)
# and AppStream metadata (appstreamcli validate --no-net), and checks that they
# agree: the metainfo id is the desktop file's name, both name the icon, and the
# icon's SVG is there. Usage: check_metadata.sh PACKAGING_DIR.
# Exit 77 (CTest: skipped) when a validator is missing outside CI; under CI=true that fails.
set -uo pipefail
dir="${1:?usage: check_metadata.sh PACKAGING_DIR}"
unavailable() {
  echo "metadata check: $1" >&2
  if [ "${CI:-}" = "true" ]; then exit 1; fi
  exit 77
}
command -v desktop-file-validate >/dev/null || unavailable "desktop-file-validate not found (apt-get install desktop-file-utils)"
command -v appstreamcli >/dev/null || unavailable "appstreamcli not found (apt-get install appstream)"

mapfile -t desktops < <(find "$dir/desktop" -name '*.desktop' | sort)
mapfile -t metainfos < <(find "$dir/desktop" -name '*.metainfo.xml' | sort)
[ "${#desktops[@]}" -eq 1 ] || { echo "metadata check: want one .desktop in $dir/desktop, found ${#desktops[@]}" >&2; exit 1; }
[ "${#metainfos[@]}" -eq 1 ] || { echo "metadata check: want one .metainfo.xml in $dir/desktop, found ${#metainfos[@]}" >&2; exit 1; }
desktop="${desktops[0]}"
metainfo="${metainfos[0]}"
fail=0

# desktop-file-validate exits 0 on hints; any error or warning line fails here.
out="$(desktop-file-validate "$desktop" 2>&1)"
rc=$?
if [ $rc -ne 0 ] || printf '%s\n' "$out" | grep -Eq ': (error|warning):'; then
  echo "metadata check: desktop-file-validate $desktop (exit $rc):" >&2
  printf '%s\n' "$out" >&2
  fail=1
fi
if ! out="$(appstreamcli validate --no-net "$metainfo" 2>&1)"; then
  echo "metadata check: appstreamcli validate --no-net $metainfo:" >&2
  printf '%s\n' "$out" >&2
  fail=1
fi

id="$(sed -n 's|.*<id>\(.*\)</id>.*|\1|p' "$metainfo" | head -n1)"
[ "$id.desktop" = "$(basename "$desktop")" ] || { echo "metadata check: metainfo id '$id' is not the desktop file's name $(basename "$desktop")" >&2; fail=1; }
grep -q "<launchable type=\"desktop-id\">$id.desktop</launchable>" "$metainfo" || { echo "metadata check: $metainfo does not launch $id.desktop" >&2; fail=1; }
icon="$(sed -n 's/^Icon=//p' "$desktop")"
[ -n "$icon" ] || { echo "metadata check: $desktop has no Icon=" >&2; fail=1; }
grep -q "<icon type=\"stock\">$icon</icon>" "$metainfo" || { echo "metadata check: $metainfo does not name the icon '$icon'" >&2; fail=1; }
[ -s "$dir/icons/$icon.svg" ] || { echo "metadata check: no $dir/icons/$icon.svg for Icon=$icon" >&2; fail=1; }
[ $fail -eq 0 ] && echo "metadata check: $(basename "$desktop") and $(basename "$metainfo") valid, icon $icon"
exit $fail
