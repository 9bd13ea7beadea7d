#!/usr/bin/env bash
# Builds the two .deb packages (flamingo-train, flamingo-studio), installs them
# with apt into a fresh Debian bookworm root made by debootstrap, uses them there
# and removes them again (docs/packaging.md).
#
# Usage: scripts/package-test.sh [OUT_DIR]      (as root: debootstrap, mount, chroot)
#   FS_BUILD_DIR   build directory to reuse (default: build/ of this checkout;
#                  configured when it has no CMakeCache.txt)
#   OUT_DIR        where the screenshots and logs go (default: $FS_PACKAGE_TEST_OUT,
#                  else FS_BUILD_DIR/package-test)
#   FS_BUILD_LOCK  a lock file the build phase holds (flock) on a shared machine
#   FS_KEEP_ROOT=1 keep the Debian root for inspection (its mounts are still removed)
#
# Phases, each printed with its time, then the total: build, cpack, inspect (the
# packages' fields and files), debootstrap, tools (xvfb, man-db, a user), install
# (apt-get install ./*.deb), train-demo, studio-demo, man, purge (nothing of the
# packages left). Exits non-zero naming the failing phase; its log is in OUT_DIR.
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
build="${FS_BUILD_DIR:-$repo/build}"
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

do_build() {
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo || return 1
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
  ls -l "$build"/flamingo-train_*.deb "$build"/flamingo-studio_*.deb
}

# The packages' control fields and files, before any installing.
do_inspect() {
  local fail=0 train studio
  train="$(ls "$build"/flamingo-train_*.deb)"
  studio="$(ls "$build"/flamingo-studio_*.deb)"
  dpkg-deb -I "$train"
  dpkg-deb -I "$studio"
  dpkg-deb -c "$train" | awk '{print $6}' | sed 's|^\./|/|' | sort >"$out/flamingo-train.contents"
  dpkg-deb -c "$studio" | awk '{print $6}' | sed 's|^\./|/|' | sort >"$out/flamingo-studio.contents"
  local depends
  depends="$(dpkg-deb -f "$studio" Depends)"
  echo "flamingo-studio Depends: $depends"
  if grep -Eiq 'torch|libc10|gloo|flamingo-train' <<<"$depends"; then
    echo "flamingo-studio depends on LibTorch or the engine: $depends"
    fail=1
  fi
  for want in qt6-qpa-plugins libqt6sql6-sqlite libqt6svg6; do
    grep -q "$want" <<<"$depends" || { echo "flamingo-studio does not depend on $want"; fail=1; }
  done
  depends="$(dpkg-deb -f "$train" Depends)"
  echo "flamingo-train Depends: $depends"
  for want in libtorch libopenblas0-pthread; do
    grep -q "$want" <<<"$depends" || { echo "flamingo-train does not depend on $want"; fail=1; }
  done
  for f in /usr/bin/flamingo-train /usr/share/man/man1/flamingo-train.1.gz /usr/share/flamingo-train/presets/tiny.yaml; do
    grep -qxF "$f" "$out/flamingo-train.contents" || { echo "flamingo-train lacks $f"; fail=1; }
  done
  for f in /usr/bin/flamingo-studio /usr/share/man/man1/flamingo-studio.1.gz \
    /usr/share/flamingo-studio/presets/tiny.yaml /usr/share/icons/hicolor/scalable/apps/flamingo-studio.svg \
    /usr/share/icons/hicolor/48x48/apps/flamingo-studio.png /usr/share/icons/hicolor/256x256/apps/flamingo-studio.png; do
    grep -qxF "$f" "$out/flamingo-studio.contents" || { echo "flamingo-studio lacks $f"; fail=1; }
  done
  grep -q '^/usr/share/applications/.*\.desktop$' "$out/flamingo-studio.contents" || { echo "flamingo-studio has no desktop entry"; fail=1; }
  grep -q '^/usr/share/metainfo/.*\.metainfo\.xml$' "$out/flamingo-studio.contents" || { echo "flamingo-studio has no metainfo"; fail=1; }
  local common
  common="$(comm -12 <(grep -v '/$' "$out/flamingo-train.contents") <(grep -v '/$' "$out/flamingo-studio.contents"))"
  [ -z "$common" ] || { echo "both packages ship: $common"; fail=1; }
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
  cp "$build"/flamingo-train_*.deb "$build"/flamingo-studio_*.deb "$root/tmp/debs/" || return 1
  DEBIAN_FRONTEND=noninteractive in_root sh -c 'cd /tmp/debs && apt-get install -y ./flamingo-train_*.deb ./flamingo-studio_*.deb' \
    </dev/null || return 1
  in_root dpkg -L flamingo-train flamingo-studio | sort -u >"$work/installed.paths"
  in_root dpkg -s flamingo-train flamingo-studio | grep -E '^(Package|Version|Depends|Installed-Size):'
  # LibTorch is there because of flamingo-train alone (flamingo-studio Depends checked in inspect).
  in_root dpkg -s libtorch1.13 | grep -E '^(Package|Status)'
  # The SentencePiece module resolves all its libraries.
  if in_root ldd /usr/lib/flamingo-train/fs_spm_shim.so | grep 'not found'; then return 1; fi
  in_root flamingo-train version
}

do_train_demo() {
  as_user flamingo-train demo --help || return 1
  # The 32-step demo (presets/demo.yaml), as a newcomer runs it.
  as_user flamingo-train demo --run-dir "/home/$user/package-test-demo" || return 1
  local events="$root/home/$user/package-test-demo/events.jsonl"
  [ -s "$events" ] || { echo "no $events"; return 1; }
  local steps
  steps="$(grep -c '"type":"step"' "$events")"
  echo "flamingo-train demo: $steps step events in events.jsonl"
  [ "$steps" -eq 32 ] || { echo "expected 32 step events"; return 1; }
  # The installed bash completion loads and completes the command names.
  local words
  words="$(as_user bash --norc -c 'source /usr/share/bash-completion/completions/flamingo-train &&
    COMP_WORDS=(flamingo-train ex) COMP_CWORD=1 && _flamingo_train flamingo-train ex flamingo-train &&
    printf "%s " "${COMPREPLY[@]}"')" || return 1
  echo "completion of 'flamingo-train ex': $words"
  [[ " $words " == *" export "* ]] || { echo "the installed completion does not complete 'export'"; return 1; }
}

do_studio_demo() {
  mkdir -p "$root/tmp/shots" && chmod 777 "$root/tmp/shots"
  # 1. --demo --screenshot: the window with the demo preset loaded, saved by the app.
  as_user xvfb-run -a -s '-screen 0 1400x900x24' \
    flamingo-studio --demo --screenshot /tmp/shots/studio-demo-window.png || return 1
  # 2. --demo: the app launches the demo preset as a local run (flamingo-train from
  #    the other package); once the run has logged steps, the screen is grabbed.
  cat >"$root/tmp/shots/live.sh" <<'EOS'
set -u
flamingo-studio --demo &
app=$!
runs="$HOME/.local/share/flamingo-studio/runs"
for _ in $(seq 1 240); do
  if ! kill -0 "$app" 2>/dev/null; then echo "flamingo-studio --demo exited early"; exit 1; fi
  events="$(ls -t "$runs"/*/events.jsonl 2>/dev/null | head -n1)"
  if [ -n "$events" ] && [ "$(grep -c '"type":"step"' "$events")" -ge 8 ]; then break; fi
  sleep 0.5
done
[ -n "${events:-}" ] || { echo "no run under $runs after 120 s"; kill "$app"; exit 1; }
echo "live run: $events, $(grep -c '"type":"step"' "$events") step events"
sleep 2
xwd -root -silent | xwdtopnm 2>/dev/null | pnmtopng >/tmp/shots/studio-demo-live.png
# Let the run end by itself before closing the window.
for _ in $(seq 1 240); do
  grep -q '"type":"run_finished"' "$events" && break
  sleep 0.5
done
grep -q '"type":"run_finished"' "$events" || echo "the live run did not finish within 120 s"
kill "$app"
wait "$app" 2>/dev/null
for p in /proc/[0-9]*; do
  [ "$(cat "$p/comm" 2>/dev/null)" = flamingo-train ] && kill "${p#/proc/}" 2>/dev/null
done
grep -q '"type":"run_finished"' "$events"
EOS
  as_user xvfb-run -a -s '-screen 0 1400x900x24' bash /tmp/shots/live.sh || return 1
  local shot
  for shot in studio-demo-window.png studio-demo-live.png; do
    file_is_png "$root/tmp/shots/$shot" || { echo "$shot is not a PNG"; return 1; }
    cp "$root/tmp/shots/$shot" "$out/$shot" || return 1
    echo "screenshot: $out/$shot ($(stat -c %s "$out/$shot") bytes)"
  done
}

file_is_png() { [ "$(head -c 8 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }

do_man() {
  local text
  text="$(in_root env MANPAGER=cat MANWIDTH=100 man flamingo-train | col -b)" || return 1
  printf '%s\n' "$text" | head -n 40
  for word in demo train validate show-defaults FILES "SEE ALSO"; do
    grep -qF -- "$word" <<<"$text" || { echo "man flamingo-train lacks '$word'"; return 1; }
  done
  text="$(in_root env MANPAGER=cat MANWIDTH=100 man flamingo-studio | col -b)" || return 1
  grep -qF -- "--demo" <<<"$text" || { echo "man flamingo-studio lacks --demo"; return 1; }
}

do_purge() {
  DEBIAN_FRONTEND=noninteractive in_root apt-get purge -y flamingo-studio flamingo-train </dev/null || return 1
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
phase train-demo do_train_demo
phase studio-demo do_studio_demo
phase man do_man
phase purge do_purge

total="$(elapsed "$t_start" "$(now)")"
echo "package-test: all phases passed"
printf '  %-12s %8s s\n' $(printf '%s\n' "${timings[@]}")
printf '  %-12s %8s s\n' total "$total"
