#!/usr/bin/env bash
# `make test-matrix`: the whole `make test` on every PostgreSQL major the host
# does not have, each in a minimal Debian chroot that has that major's
# packages (PostgreSQL 17 from trixie, 18 from sid).
#
#   test/matrix.sh            17 and 18
#   test/matrix.sh 18         one major
#
# Needs root (debootstrap, chroot, mount); installs debootstrap when missing.
# The chroots are cached outside the repository, in $COORD_MATRIX_CACHE
# (default /var/cache/pg_coord-matrix/<suite>), each with a stamp file
# listing its installed packages; a chroot that is missing, half built or
# whose packages do not match the stamp is built again (an interrupted build
# leaves only <suite>.new, removed by the next run).  COORD_MATRIX_REBUILD=1
# rebuilds from scratch.
#
# What is tested is the working tree as git sees it: tracked files and
# untracked files that are not ignored, as they are on disk (uncommitted
# changes included; build products and other ignored files left out),
# copied into /build/pg_coord inside the chroot afresh for every run.
#
# Prints one line per major, "matrix: PostgreSQL 17: N passed, M failed
# (6m12s)", then "N passed, M failed" over all majors; exits non-zero when
# anything failed.  Each major's full output is in test/results/matrix-<major>.log.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${COORD_MATRIX_CACHE:-/var/cache/pg_coord-matrix}
MIRROR=${COORD_MATRIX_MIRROR:-http://deb.debian.org/debian}
# per major: wall-clock limit of its `make test`
TEST_TIMEOUT=${COORD_MATRIX_TIMEOUT:-1800}
# bump when the way a chroot is set up changes: older chroots are rebuilt
RECIPE=1

log() { printf '%s\n' "$*" >&2; }

suite_of() {
  case "$1" in
    17) echo trixie ;;
    18) echo sid ;;
    *) return 1 ;;
  esac
}

if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then
    exec sudo -E "$0" "$@"
  fi
  log "test/matrix.sh needs root (debootstrap, chroot, mount)"
  exit 2
fi

majors=("$@")
[ ${#majors[@]} -eq 0 ] && majors=(17 18)
for m in "${majors[@]}"; do
  suite_of "$m" >/dev/null || { log "test/matrix.sh: no Debian suite known for PostgreSQL $m"; exit 2; }
done

# the package list of test/lib.sh, which the `make test` inside uses too
# shellcheck source=lib.sh
. "$ROOT/test/lib.sh"

mkdir -p "$CACHE" "$ROOT/test/results"
# one matrix run at a time per cache: the chroots and their clusters' ports are shared
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
  log "matrix: another test-matrix is using $CACHE; waiting for it"
  flock 9
fi

# ---- mounts: /proc, a tmpfs /dev/shm and a devpts per chroot, always unmounted
MOUNTED=()
mount_in() {   # ROOTDIR
  local r=$1
  mountpoint -q "$r/proc" || { mount -t proc proc "$r/proc" && MOUNTED+=("$r/proc"); }
  mkdir -p "$r/dev/shm"
  mountpoint -q "$r/dev/shm" || { mount -t tmpfs -o mode=1777,size=1g shm "$r/dev/shm" && MOUNTED+=("$r/dev/shm"); }
  # pseudo-terminals of its own (coord-agent status is tested on one)
  mkdir -p "$r/dev/pts"
  mountpoint -q "$r/dev/pts" ||
    { mount -t devpts -o newinstance,ptmxmode=0666,gid=5,mode=620 devpts "$r/dev/pts" && MOUNTED+=("$r/dev/pts"); }
}
unmount_all() {
  local i
  for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do
    umount "${MOUNTED[$i]}" 2>/dev/null || umount -l "${MOUNTED[$i]}" 2>/dev/null || true
  done
  MOUNTED=()
}
# Whatever is still mounted under a directory (so that rm -rf never crosses into it).
unmount_under() {   # DIR
  local d=$1 mp
  while read -r mp; do
    umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || true
  done < <(awk -v d="$d/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r)
  ! awk -v d="$d/" 'index($2, d) == 1 {found = 1} END {exit !found}' /proc/mounts
}
remove_tree() {   # DIR
  [ -e "$1" ] || return 0
  unmount_under "$1" || { log "matrix: something is still mounted under $1; not removing it"; return 1; }
  rm -rf --one-file-system "$1"
}
# the chroot whose `make test` is running (stopped with us when interrupted)
CUR_CHROOT=
on_exit() { [ -n "$CUR_CHROOT" ] && kill_leftovers "$CUR_CHROOT"; unmount_all; }
trap on_exit EXIT
trap 'log "matrix: interrupted"; exit 130' INT TERM HUP

in_chroot() {   # ROOTDIR CMD...: a clean environment inside
  local r=$1; shift
  local extra=()
  # A machine that reaches the registries through a TLS proxy of its own
  # names the proxy's CA for Node in NODE_EXTRA_CA_CERTS (npm install in the
  # quick start's test): the chroot gets a copy of that file.
  [ -f "$r/etc/pg_coord-matrix-extra-ca.crt" ] && extra+=(NODE_EXTRA_CA_CERTS=/etc/pg_coord-matrix-extra-ca.crt)
  chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive "${extra[@]}" "$@"
}

# ---- the cached chroot of a major
stamp_of() {   # ROOTDIR PACKAGES...: the stamp the chroot should have
  local r=$1; shift
  echo "recipe $RECIPE"
  in_chroot "$r" dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\n' "$@" 2>/dev/null
}

chroot_ok() {   # ROOTDIR MAJOR PACKAGES...
  local r=$1 m=$2; shift 2
  [ -f "$r/.pg_coord-matrix.stamp" ] && [ -x "$r/usr/lib/postgresql/$m/bin/postgres" ] || return 1
  local now
  now=$(stamp_of "$r" "$@") || return 1
  # every wanted package installed ("ii"), and what the stamp says
  [ "$(grep -c ' ii $' <<<"$now")" -eq $# ] && [ "$now" = "$(cat "$r/.pg_coord-matrix.stamp")" ] &&
    in_chroot "$r" "/usr/lib/postgresql/$m/bin/postgres" --version >/dev/null 2>&1
}

build_chroot() {   # ROOTDIR SUITE MAJOR PACKAGES...
  local r=$1 suite=$2 m=$3; shift 3
  local new=$r.new t0=$SECONDS
  remove_tree "$new" || return 1
  remove_tree "$r" || return 1
  if ! command -v debootstrap >/dev/null; then
    log "matrix: installing debootstrap"
    env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null ||
      { env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
        env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; } ||
      { log "matrix: could not install debootstrap"; return 1; }
  fi
  log "matrix: building the $suite chroot for PostgreSQL $m in $r"
  debootstrap --variant=minbase --include=ca-certificates "$suite" "$new" "$MIRROR" \
      >"$CACHE/$suite.debootstrap.log" 2>&1 ||
    { log "matrix: debootstrap $suite failed (last lines of $CACHE/$suite.debootstrap.log):"; tail -5 "$CACHE/$suite.debootstrap.log" >&2; return 1; }
  # the archive reached here may be a snapshot whose Release file is past Valid-Until
  echo 'Acquire::Check-Valid-Until "false";' >"$new/etc/apt/apt.conf.d/99pg-coord-matrix"
  # packages start no services in the chroot
  printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
  chmod 755 "$new/usr/sbin/policy-rc.d"
  cp -L /etc/resolv.conf "$new/etc/resolv.conf" 2>/dev/null || true
  mount_in "$new" || return 1
  local missing=() p
  in_chroot "$new" apt-get update -qq >"$CACHE/$suite.apt.log" 2>&1 || { log "matrix: apt-get update failed in $suite"; tail -5 "$CACHE/$suite.apt.log" >&2; return 1; }
  for p in "$@"; do
    in_chroot "$new" apt-cache show "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "matrix: $suite has no package ${missing[*]}: cannot test PostgreSQL $m there"
    return 1
  fi
  in_chroot "$new" apt-get install -y -qq --no-install-recommends "$@" >>"$CACHE/$suite.apt.log" 2>&1 ||
    { log "matrix: apt-get install failed in $suite (last lines of $CACHE/$suite.apt.log):"; tail -5 "$CACHE/$suite.apt.log" >&2; return 1; }
  stamp_of "$new" "$@" >"$new/.pg_coord-matrix.stamp"
  unmount_all
  mv "$new" "$r"
  log "matrix: $suite chroot ready ($((SECONDS - t0)) s)"
}

ensure_chroot() {   # MAJOR: sets CHROOT to the chroot's path
  local m=$1 suite r pkgs
  suite=$(suite_of "$m")
  r=$CACHE/$suite
  CHROOT=$r
  read -ra pkgs <<<"$(coord_packages "$m")"
  remove_tree "$r.new" || return 1     # an interrupted build's
  if [ "${COORD_MATRIX_REBUILD:-0}" != 1 ] && [ -d "$r" ]; then
    chroot_ok "$r" "$m" "${pkgs[@]}" && return 0
    # packages added to the list since: install them in place
    if [ -f "$r/.pg_coord-matrix.stamp" ] && [ "$(head -1 "$r/.pg_coord-matrix.stamp")" = "recipe $RECIPE" ] &&
       mount_in "$r" && in_chroot "$r" apt-get update -qq >>"$CACHE/$suite.apt.log" 2>&1 &&
       in_chroot "$r" apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >>"$CACHE/$suite.apt.log" 2>&1; then
      stamp_of "$r" "${pkgs[@]}" >"$r/.pg_coord-matrix.stamp"
      unmount_all
      if chroot_ok "$r" "$m" "${pkgs[@]}"; then
        log "matrix: $suite chroot brought up to date"; return 0
      fi
    fi
    unmount_all
    log "matrix: the cached $suite chroot is incomplete or broken: building it again"
  fi
  build_chroot "$r" "$suite" "$m" "${pkgs[@]}" || { unmount_all; return 1; }
}

# Servers a test left running inside a chroot (a timeout, a crash): by pid,
# only processes whose root is that chroot.
kill_leftovers() {   # ROOTDIR
  local r=$1 d pids=()
  for d in /proc/[0-9]*; do
    [ "$(readlink "$d/root" 2>/dev/null)" = "$r" ] && pids+=("${d#/proc/}")
  done
  [ ${#pids[@]} -eq 0 ] && return 0
  log "matrix: stopping ${#pids[@]} processes left in $r: ${pids[*]}"
  kill -TERM "${pids[@]}" 2>/dev/null; sleep 2; kill -KILL "${pids[@]}" 2>/dev/null || true
}

# ---- copy the working tree in
copy_tree() {   # ROOTDIR
  local dst=$1/build/pg_coord
  cp -L /etc/resolv.conf "$1/etc/resolv.conf" 2>/dev/null || true
  if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r "$NODE_EXTRA_CA_CERTS" ]; then
    cp -L "$NODE_EXTRA_CA_CERTS" "$1/etc/pg_coord-matrix-extra-ca.crt"
  else
    rm -f "$1/etc/pg_coord-matrix-extra-ca.crt"
  fi
  remove_tree "$1/build" || return 1
  mkdir -p "$dst"
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
     while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done |
     tar --null -T - -cf -) | tar -C "$dst" -xf -
}

fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

total_pass=0
total_fail=0
lines=()
for m in "${majors[@]}"; do
  t0=$SECONDS
  out=$ROOT/test/results/matrix-$m.log
  : >"$out"
  if ! ensure_chroot "$m"; then
    lines+=("matrix: PostgreSQL $m: 0 passed, 1 failed (no chroot: see above) ($(fmt_time $((SECONDS - t0))))")
    total_fail=$((total_fail + 1))
    continue
  fi
  r=$CHROOT
  setup=$((SECONDS - t0))
  if ! copy_tree "$r" || ! mount_in "$r"; then
    unmount_all
    lines+=("matrix: PostgreSQL $m: 0 passed, 1 failed (could not copy the tree in or mount /proc, /dev/shm, /dev/pts)")
    total_fail=$((total_fail + 1))
    continue
  fi
  log "matrix: PostgreSQL $m: make test in $r (output in $out)"
  CUR_CHROOT=$r
  in_chroot "$r" COORD_PG_MAJOR="$m" timeout -k 30 "$TEST_TIMEOUT" \
      bash -c 'cd /build/pg_coord && make -s test' 2>&1 | tee "$out" | sed -u "s/^/[pg$m] /" >&2
  rc=${PIPESTATUS[0]}
  kill_leftovers "$r"
  CUR_CHROOT=
  unmount_all
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -1)
  if [ -n "$summary" ]; then
    p=${summary%% passed*}; f=${summary#*, }; f=${f%% failed}
  else
    p=0; f=0
  fi
  # a run that ended without its summary, or with a status its counts do not explain, is a failure
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1
    [ "$rc" -eq 124 ] && log "matrix: PostgreSQL $m: make test timed out after ${TEST_TIMEOUT}s" ||
      log "matrix: PostgreSQL $m: make test exited with status $rc"
  fi
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
  lines+=("matrix: PostgreSQL $m: $p passed, $f failed ($(fmt_time $((SECONDS - t0))); chroot $(fmt_time "$setup"))")
done

printf '%s\n' "${lines[@]}"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ] && [ "$total_pass" -gt 0 ]
