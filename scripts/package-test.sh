#!/usr/bin/env bash
# Builds the flamingo-studio .deb (the app and the tools-only flamingo-train) from an
# engine-less configure of its own, installs it with apt into a fresh Debian bookworm
# root made by debootstrap, uses it there and removes it again (docs/packaging.md).
#
# Usage: scripts/package-test.sh [OUT_DIR]      (as root: debootstrap, mount, chroot)
#   FS_BUILD_DIR   build directory to reuse (default: build-package/ of this checkout;
#                  configured with FS_BUILD_ENGINE=OFF, no tests, no benchmarks when it
#                  has no CMakeCache.txt; one with the engine is refused)
#   OUT_DIR        where the screenshots and logs go (default: $FS_PACKAGE_TEST_OUT,
#                  else FS_BUILD_DIR/package-test)
#   FS_BUILD_LOCK  a lock file the build phase holds (flock) on a shared machine
#   FS_KEEP_ROOT=1 keep the Debian root for inspection (its mounts are still removed)
#
# Phases, each printed with its time, then the total: build, cpack, inspect (the
# package's fields and files), debootstrap, tools (xvfb, man-db, a user), install
# (apt-get install ./flamingo-studio_*.deb), train-tools (flamingo-train version,
# export of a run directory, the bash completion), studio-screenshot, man, purge
# (nothing of the package left). No phase trains: the package has no engine. Exits non-zero naming the failing phase; its log is in OUT_DIR.
#
# NOTE [Package test mounts]
# The root is made under /tmp and removed on exit. Inside it only proc, sysfs and
# a tmpfs on /dev/shm are mounted (debootstrap makes the device nodes), never a
# bind of the host's /dev. Removal first ends the processes still running in the
# root, unmounts, checks with findmnt that nothing below the root is mounted, and
# only then deletes it with rm --one-file-system; if a mount is left it refuses
# and says where.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FS_BUILD_DIR:-$repo/build-package}"
out="${1:-${FS_PACKAGE_TEST_OUT:-$build/package-test}}"
suite=bookworm
user=fsuser

if [ "$(id -u)" -ne 0 ]; then
  echo "package-test: run as root (debootstrap, mount and chroot need it)" >&2
  exit 2
fi
for tool in cmake cpack debootstrap dpkg-deb findmnt; do
  command -v "$tool" >/dev/null || { echo "package-test: $tool not found (bash scripts/install-deps.sh)" >&2; exit 2; }
done
mkdir -p "$out" && out="$(cd "$out" && pwd)" || { echo "package-test: cannot make $out" >&2; exit 2; }

# The mirror the host's apt uses (deb822 sources, else sources.list).
mirror="$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)"
[ -n "$mirror" ] || mirror="$(sed -n 's/^deb[[:space:]]\+\(http[^[:space:]]*\).*/\1/p' /etc/apt/sources.list 2>/dev/null | head -n1)"
mirror="${mirror:-http://deb.debian.org/debian}"

work="$(mktemp -d /tmp/fs-package-test.XXXXXX)"
root="$work/root"
mounted=()

# Processes whose root directory is inside $root (left by a failed phase).
root_pids() {
  local link pid
  for link in /proc/[0-9]*/root; do
    pid="${link#/proc/}"
    pid="${pid%/root}"
    [ "$(readlink "$link" 2>/dev/null)" = "$root" ] && echo "$pid"
  done
}

cleanup() {
  local rc=$?
  local pids
  pids="$(root_pids)"
  if [ -n "$pids" ]; then
    kill $pids 2>/dev/null
    sleep 1
    pids="$(root_pids)"
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  fi
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null
  done
  if findmnt -rn -o TARGET | grep -q "^$work/"; then
    echo "package-test: still mounted below $work, not removing it:" >&2
    findmnt -rn -o TARGET | grep "^$work/" >&2
    exit 1
  fi
  if [ "${FS_KEEP_ROOT:-}" = "1" ]; then
    echo "package-test: kept $root (FS_KEEP_ROOT=1); remove it with rm -rf --one-file-system $work"
  else
    rm -rf --one-file-system "$work"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
t_start="$(now)"
timings=()

# phase NAME FUNCTION: runs FUNCTION with its output in OUT_DIR/NAME.log, prints
# the time it took; on failure prints the log's tail and exits naming the phase.
phase() {
  local name="$1" fn="$2" t0 t1 secs
  t0="$(now)"
  echo "package-test: [$name] ..."
  if ! "$fn" >"$out/$name.log" 2>&1; then
    t1="$(now)"
    secs="$(elapsed "$t0" "$t1")"
    tail -n 40 "$out/$name.log" >&2
    echo "package-test: FAILED in phase '$name' after $secs s (log: $out/$name.log)" >&2
    exit 1
  fi
  t1="$(now)"
  secs="$(elapsed "$t0" "$t1")"
  timings+=("$name $secs")
  echo "package-test: [$name] ok, $secs s"
}

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root "$@"; }
as_user() { chroot --userspec="$user:$user" "$root" /usr/bin/env -i PATH=/usr/bin:/bin LANG=C.UTF-8 HOME="/home/$user" "$@"; }

# The package comes from an engine-less configure (NOTE [One package] in packaging/CMakeLists.txt).
do_build() {
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFS_BUILD_ENGINE=OFF \
      -DFS_BUILD_DATA_CODECS=OFF -DFS_BUILD_TESTS=OFF -DFS_BUILD_BENCH=OFF || return 1
  fi
  if grep -q '^FS_BUILD_ENGINE:BOOL=ON' "$build/CMakeCache.txt"; then
    echo "$build is configured with the engine; the package is made without it (FS_BUILD_ENGINE=OFF)"
    return 1
  fi
  if [ -n "${FS_BUILD_LOCK:-}" ]; then
    flock "$FS_BUILD_LOCK" cmake --build "$build" --target fs_package_files
  else
    cmake --build "$build" --target fs_package_files
  fi
}

do_cpack() {
  rm -f "$build"/flamingo-train_*.deb "$build"/flamingo-studio_*.deb
  (cd "$build" && cpack -G DEB) || return 1
  ls -l "$build"/*.deb
  if ls "$build"/flamingo-train_*.deb 2>/dev/null; then echo "cpack made a flamingo-train package"; return 1; fi
  ls "$build"/flamingo-studio_*.deb >/dev/null
}

# The package's control fields and files, before any installing.
do_inspect() {
  local fail=0 studio
  studio="$(ls "$build"/flamingo-studio_*.deb)"
  dpkg-deb -I "$studio"
  dpkg-deb -c "$studio" | awk '{print $6}' | sed 's|^\./|/|' | sort >"$out/flamingo-studio.contents"
  local depends
  depends="$(dpkg-deb -f "$studio" Depends)"
  echo "flamingo-studio Depends: $depends"
  if grep -Eiq 'torch|libc10|gloo|cuda|nccl|flamingo-train' <<<"$depends"; then
    echo "flamingo-studio depends on LibTorch or the engine: $depends"
    fail=1
  fi
  for want in qt6-qpa-plugins libqt6sql6-sqlite libqt6svg6; do
    grep -q "$want" <<<"$depends" || { echo "flamingo-studio does not depend on $want"; fail=1; }
  done
  for field in Replaces Breaks; do
    grep -qx 'flamingo-train' <<<"$(dpkg-deb -f "$studio" "$field")" || { echo "flamingo-studio: $field is not flamingo-train"; fail=1; }
  done
  for f in /usr/bin/flamingo-studio /usr/share/man/man1/flamingo-studio.1.gz \
    /usr/bin/flamingo-train /usr/share/man/man1/flamingo-train.1.gz \
    /usr/share/bash-completion/completions/flamingo-train \
    /usr/share/flamingo-studio/presets/tiny.yaml /usr/share/icons/hicolor/scalable/apps/flamingo-studio.svg \
    /usr/share/icons/hicolor/48x48/apps/flamingo-studio.png /usr/share/icons/hicolor/256x256/apps/flamingo-studio.png; do
    grep -qxF "$f" "$out/flamingo-studio.contents" || { echo "flamingo-studio lacks $f"; fail=1; }
  done
  grep -q '^/usr/share/applications/.*\.desktop$' "$out/flamingo-studio.contents" || { echo "flamingo-studio has no desktop entry"; fail=1; }
  grep -q '^/usr/share/metainfo/.*\.metainfo\.xml$' "$out/flamingo-studio.contents" || { echo "flamingo-studio has no metainfo"; fail=1; }
  # The engine's files stay out: its presets, its SentencePiece module.
  if grep -E '^/usr/(lib|share)/flamingo-train' "$out/flamingo-studio.contents"; then
    echo "flamingo-studio ships the engine's files"; fail=1
  fi
  # Neither program needs a LibTorch, CUDA or Gloo library.
  local tmp prog needed
  tmp="$(mktemp -d)"
  dpkg-deb -x "$studio" "$tmp"
  for prog in flamingo-studio flamingo-train; do
    needed="$(readelf -d "$tmp/usr/bin/$prog" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
    echo "$prog NEEDED: $(tr '\n' ' ' <<<"$needed")"
    if grep -Eq '^lib(torch|c10|gloo|cuda|cudart|nccl)' <<<"$needed"; then
      echo "$prog needs LibTorch: $(grep -E '^lib(torch|c10|gloo|cuda|cudart|nccl)' <<<"$needed" | tr '\n' ' ')"
      fail=1
    fi
  done
  rm -rf "$tmp"
  return $fail
}

do_debootstrap() {
  echo "mirror: $mirror"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" || return 1
  # The host's sources (updates and security included), so the root resolves the
  # same versions the packages were built against.
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/debian.sources"
    rm -f "$root/etc/apt/sources.list"
  fi
}

mount_in_root() {
  local type="$1" target="$root/$2"
  mkdir -p "$target"
  mount -t "$type" "$type" "$target" || return 1
  mounted+=("$target")
}

# Test tools, installed before the "before" file list so they are not counted.
do_tools() {
  mount_in_root proc proc || return 1
  mount_in_root sysfs sys || return 1
  mount_in_root tmpfs dev/shm || return 1
  in_root apt-get update || return 1
  DEBIAN_FRONTEND=noninteractive in_root apt-get install -y --no-install-recommends \
    xvfb xauth x11-apps netpbm man-db </dev/null || return 1
  in_root useradd --create-home --shell /bin/bash "$user" || return 1
  installed_packages >"$work/before.packages"
  # Every path in the root except the kernel's, scratch, apt's and dpkg's own state.
  list_files >"$work/before.files"
  wc -l "$work/before.files"
}

# Paths that dependencies' maintainer scripts create and their purge leaves
# (Debian's systemd and dbus do so on any system): systemd's postinst makes the
# /etc/mtab link and, through systemd-tmpfiles, /var/lib/private and
# /var/lib/systemd/{coredump,pstore}; dbus's (systemd-machine-id-setup) /etc/machine-id.
# systemd comes as a Recommends of Qt's dependencies (dbus-user-session, libpam-systemd).
kLeftByDependencies=(/etc/machine-id /etc/mtab /var/lib/private /var/lib/systemd/coredump /var/lib/systemd/pstore)

# Packages installed (not only known) in the root, one a line, sorted.
installed_packages() { in_root dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | sed -n 's/^ii *//p' | sort; }

list_files() {
  (cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./tmp -o -path ./run \
    -o -path ./var/cache -o -path ./var/lib/apt -o -path ./var/log -o -path ./var/lib/dpkg -o -path ./root \
    -o -path "./home/$user" \) -prune -o -print | sed 's|^\.||' | sort)
}

do_install() {
  mkdir -p "$root/tmp/debs"
  cp "$build"/flamingo-studio_*.deb "$root/tmp/debs/" || return 1
  DEBIAN_FRONTEND=noninteractive in_root sh -c 'cd /tmp/debs && apt-get install -y ./flamingo-studio_*.deb' \
    </dev/null || return 1
  in_root dpkg -L flamingo-studio | sort -u >"$work/installed.paths"
  in_root dpkg -s flamingo-studio | grep -E '^(Package|Version|Depends|Replaces|Breaks|Installed-Size):'
  # No LibTorch came with it.
  if installed_packages | grep -Ei 'torch|libc10|gloo'; then echo "LibTorch was installed"; return 1; fi
  # Both programs resolve all their libraries.
  if in_root ldd /usr/bin/flamingo-studio /usr/bin/flamingo-train | grep 'not found'; then return 1; fi
}

# The tools-only flamingo-train on real data: no engine, so no demo run (docs/packaging.md).
do_train_tools() {
  local json
  json="$(as_user flamingo-train version --json)" || return 1
  echo "flamingo-train version --json: $json"
  grep -Eq '"engine": *false' <<<"$json" || { echo "version --json does not say engine false"; return 1; }
  as_user flamingo-train --help || return 1
  # The engine's commands are absent and say so.
  if as_user flamingo-train train --help >/dev/null 2>&1; then echo "flamingo-train train exists without the engine"; return 1; fi
  # A config from the installed presets, checked.
  as_user flamingo-train validate /usr/share/flamingo-studio/presets/tiny.yaml || return 1
  # Export of a run directory (a recorded run's telemetry from tests/assets) to CSV.
  local rundir="/home/$user/recorded-run"
  mkdir -p "$root$rundir" || return 1
  cp "$repo/tests/assets/telemetry/events-1.4.jsonl" "$root$rundir/events.jsonl" || return 1
  chroot "$root" chown -R "$user:$user" "$rundir" || return 1
  as_user flamingo-train export csv "$rundir" "/home/$user/recorded-run.csv" || return 1
  local csv="$root/home/$user/recorded-run.csv" rows
  head -n 5 "$csv"
  rows="$(grep -c . "$csv")"
  echo "export csv: $rows lines"
  [ "$rows" -gt 1 ] || { echo "the CSV has no series"; return 1; }
  grep -q '^run,series,step' "$csv" || { echo "the CSV lacks its header"; return 1; }
  # The installed bash completion loads and completes the command names.
  local words
  words="$(as_user bash --norc -c 'source /usr/share/bash-completion/completions/flamingo-train &&
    COMP_WORDS=(flamingo-train ex) COMP_CWORD=1 && _flamingo_train flamingo-train ex flamingo-train &&
    printf "%s " "${COMPREPLY[@]}"')" || return 1
  echo "completion of 'flamingo-train ex': $words"
  [[ " $words " == *" export "* ]] || { echo "the installed completion does not complete 'export'"; return 1; }
}

# The app's own picture of its window with the demo preset loaded (--screenshot
# does not launch the run; launching needs the engine, which the package lacks).
do_studio_screenshot() {
  mkdir -p "$root/tmp/shots" && chmod 777 "$root/tmp/shots"
  as_user xvfb-run -a -s '-screen 0 1400x900x24' \
    flamingo-studio --demo --screenshot /tmp/shots/studio-demo-window.png || return 1
  local shot=studio-demo-window.png
  file_is_png "$root/tmp/shots/$shot" || { echo "$shot is not a PNG"; return 1; }
  cp "$root/tmp/shots/$shot" "$out/$shot" || return 1
  echo "screenshot: $out/$shot ($(stat -c %s "$out/$shot") bytes)"
}

file_is_png() { [ "$(head -c 8 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }

do_man() {
  local text
  text="$(in_root env MANPAGER=cat MANWIDTH=100 man flamingo-train | col -b)" || return 1
  printf '%s\n' "$text" | head -n 40
  for word in validate show-defaults export checkpoint FS_PYTHON FILES "SEE ALSO"; do
    grep -qF -- "$word" <<<"$text" || { echo "man flamingo-train lacks '$word'"; return 1; }
  done
  text="$(in_root env MANPAGER=cat MANWIDTH=100 man flamingo-studio | col -b)" || return 1
  grep -qF -- "--demo" <<<"$text" || { echo "man flamingo-studio lacks --demo"; return 1; }
}

do_purge() {
  DEBIAN_FRONTEND=noninteractive in_root apt-get purge -y flamingo-studio </dev/null || return 1
  DEBIAN_FRONTEND=noninteractive in_root apt-get autoremove --purge -y </dev/null || return 1
  # What autoremove keeps because the base system recommends it (apt recommends
  # ca-certificates, which pulls openssl) came with our packages too: purge it.
  local extra
  extra="$(installed_packages | comm -13 "$work/before.packages" -)"
  if [ -n "$extra" ]; then
    echo "installed with the packages and kept by autoremove, purged now:" $extra
    DEBIAN_FRONTEND=noninteractive in_root apt-get purge -y $extra </dev/null || return 1
  fi
  local fail=0 path
  # 1. Nothing dpkg listed as the packages' (directories shared with others may stay).
  while read -r path; do
    [ -e "$root$path" ] && [ ! -d "$root$path" ] && { echo "left behind: $path"; fail=1; }
  done <"$work/installed.paths"
  # 2. The same packages as before.
  if ! installed_packages | diff "$work/before.packages" - >"$out/purge.packages.diff"; then
    echo "installed packages differ from before the install (< before, > after):"
    cat "$out/purge.packages.diff"
    fail=1
  fi
  # 3. The whole tree as before the install (user data in /home/$user excluded:
  #    the demos' runs are the user's, not the packages'), but for what the
  #    dependencies' maintainer scripts make and their purge leaves (kLeftByDependencies).
  list_files >"$work/after.files"
  diff "$work/before.files" "$work/after.files" >"$out/purge.diff"
  local line
  while read -r line; do
    case "$line" in
      "> "*)
        path="${line#> }"
        if printf '%s\n' "${kLeftByDependencies[@]}" | grep -qxF -- "$path"; then
          echo "left by a dependency (allowed): $path"
        else
          echo "new after purge: $path"
          fail=1
        fi
        ;;
      "< "*)
        echo "gone after purge: ${line#< }"
        fail=1
        ;;
    esac
  done <"$out/purge.diff"
  echo "user data left in /home/$user (not the packages'):"
  (cd "$root/home/$user" && find . -maxdepth 4 -type d | sort | head -n 20)
  return $fail
}

echo "package-test: build $build, output $out, root $root, mirror $mirror"
phase build do_build
phase cpack do_cpack
phase inspect do_inspect
phase debootstrap do_debootstrap
phase tools do_tools
phase install do_install
phase train-tools do_train_tools
phase studio-screenshot do_studio_screenshot
phase man do_man
phase purge do_purge

total="$(elapsed "$t_start" "$(now)")"
echo "package-test: all phases passed"
printf '  %-12s %8s s\n' $(printf '%s\n' "${timings[@]}")
printf '  %-12s %8s s\n' total "$total"
