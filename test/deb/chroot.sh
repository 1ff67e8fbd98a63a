# test/deb/chroot.sh, sourced by test/deb/install.sh: the cached bookworm
# chroot the Debian packages are installed into, and throwaway overlays of it.
#
# The base ($DEB_BASE, default /var/cache/pg_coord-matrix/bookworm-deb) is
# what a person's fresh bookworm has: debootstrap --variant=minbase, the
# security and updates suites in its sources, plus sudo, procps, man-db and
# systemd (for systemd-analyze).  postgresql-15, libmicrohttpd12 (coordctl
# serve) and python3-psycopg (the quick start's driver), and what they need,
# are downloaded into its apt cache but not installed, so that `apt install
# ./postgresql-15-pg-coord_*.deb` installs them as on a real machine, with no
# network.  A stamp file lists
# the recipe and the installed packages; a base that does not match is built
# again (COORD_DEB_REBUILD=1: always).  A package built against a newer
# PostgreSQL minor than the base's cache has (it depends on that minor)
# makes the base update its lists, packages and cache (deb_refresh_base).
# Each test run mounts an overlay of the base (writes go to a temporary
# upper directory), so the base stays clean.

DEB_CACHE=${COORD_MATRIX_CACHE:-/var/cache/pg_coord-matrix}
DEB_BASE=${COORD_DEB_CHROOT:-$DEB_CACHE/bookworm-deb}
DEB_MIRROR=${COORD_MATRIX_MIRROR:-http://deb.debian.org/debian}
DEB_RECIPE=4
DEB_INSTALL=(sudo procps man-db systemd)
DEB_DOWNLOAD=(postgresql-15 libpq5 libmicrohttpd12 adduser python3-psycopg)

deb_log() { printf 'deb: %s\n' "$*" >&2; }

DEB_MOUNTED=()
deb_mount_in() {   # ROOTDIR: /proc, a devpts and a tmpfs /dev/shm
  local r=$1
  mountpoint -q "$r/proc" || { mount -t proc proc "$r/proc" && DEB_MOUNTED+=("$r/proc"); } || return 1
  mkdir -p "$r/dev/shm" "$r/dev/pts"
  mountpoint -q "$r/dev/shm" ||
    { mount -t tmpfs -o mode=1777,size=512m shm "$r/dev/shm" && DEB_MOUNTED+=("$r/dev/shm"); } || return 1
  mountpoint -q "$r/dev/pts" ||
    { mount -t devpts -o newinstance,ptmxmode=0666,gid=5,mode=620 devpts "$r/dev/pts" && DEB_MOUNTED+=("$r/dev/pts"); } || return 1
}
deb_unmount_all() {
  local i
  for ((i = ${#DEB_MOUNTED[@]} - 1; i >= 0; i--)); do
    umount "${DEB_MOUNTED[$i]}" 2>/dev/null || umount -l "${DEB_MOUNTED[$i]}" 2>/dev/null || true
  done
  DEB_MOUNTED=()
}
# true when nothing is mounted under DIR any more
deb_unmount_under() {   # DIR
  local d=$1 mp
  while read -r mp; do
    umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || true
  done < <(awk -v d="$d/" 'index($2 "/", d) == 1 {print $2}' /proc/mounts | sort -r)
  ! awk -v d="$d/" 'index($2 "/", d) == 1 {found = 1} END {exit !found}' /proc/mounts
}
deb_remove_tree() {   # DIR
  [ -e "$1" ] || return 0
  deb_unmount_under "$1" || { deb_log "something is still mounted under $1; not removing it"; return 1; }
  rm -rf --one-file-system "$1"
}
# Processes whose root is ROOTDIR (a cluster or worker the test left): by pid.
deb_kill_in() {   # ROOTDIR
  local r=$1 d pids=()
  for d in /proc/[0-9]*; do
    [ "$(readlink "$d/root" 2>/dev/null)" = "$r" ] && pids+=("${d#/proc/}")
  done
  [ ${#pids[@]} -eq 0 ] && return 0
  deb_log "stopping ${#pids[@]} processes left in $r: ${pids[*]}"
  kill -TERM "${pids[@]}" 2>/dev/null; sleep 2; kill -KILL "${pids[@]}" 2>/dev/null || true
}

deb_in_chroot() {   # ROOTDIR CMD...: a clean environment inside
  local r=$1; shift
  chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive "$@"
}

deb_stamp() {   # ROOTDIR
  echo "recipe $DEB_RECIPE"
  deb_in_chroot "$1" dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\n' "${DEB_INSTALL[@]}" 2>/dev/null
}

deb_base_ok() {
  [ -f "$DEB_BASE/.pg_coord-deb.stamp" ] && [ "$(deb_stamp "$DEB_BASE")" = "$(cat "$DEB_BASE/.pg_coord-deb.stamp")" ] &&
    ! deb_in_chroot "$DEB_BASE" dpkg -s postgresql-15 >/dev/null 2>&1 &&
    ! deb_in_chroot "$DEB_BASE" dpkg -s python3-psycopg >/dev/null 2>&1 &&
    ls "$DEB_BASE"/var/cache/apt/archives/postgresql-15_*.deb >/dev/null 2>&1
}

deb_build_base() {
  local new=$DEB_BASE.new t0=$SECONDS log=$DEB_CACHE/bookworm-deb.log
  deb_remove_tree "$new" || return 1
  deb_remove_tree "$DEB_BASE" || return 1
  if ! command -v debootstrap >/dev/null; then
    deb_log "installing debootstrap"
    { env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap ||
      { env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; }; } >/dev/null ||
      { deb_log "could not install debootstrap"; return 1; }
  fi
  deb_log "building the bookworm chroot in $DEB_BASE (once; log in $log)"
  debootstrap --variant=minbase --include=ca-certificates bookworm "$new" "$DEB_MIRROR" >"$log" 2>&1 ||
    { deb_log "debootstrap failed:"; tail -5 "$log" >&2; return 1; }
  echo 'Acquire::Check-Valid-Until "false";' >"$new/etc/apt/apt.conf.d/99pg-coord-deb"
  # as the installer writes them: point releases and security updates too
  local sec=${DEB_MIRROR%/debian}/debian-security
  [ "$sec" = "$DEB_MIRROR/debian-security" ] && sec=http://deb.debian.org/debian-security
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
    "$DEB_MIRROR" "$DEB_MIRROR" "$sec" >"$new/etc/apt/sources.list"
  # packages start no services in a chroot (the test starts the cluster itself)
  printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
  chmod 755 "$new/usr/sbin/policy-rc.d"
  cp -L /etc/resolv.conf "$new/etc/resolv.conf" 2>/dev/null || true
  deb_mount_in "$new" || { deb_unmount_all; return 1; }
  { deb_in_chroot "$new" apt-get update -qq &&
    deb_in_chroot "$new" apt-get upgrade -y -qq &&
    deb_in_chroot "$new" apt-get install -y -qq --no-install-recommends "${DEB_INSTALL[@]}" &&
    deb_in_chroot "$new" apt-get install -y -qq --download-only "${DEB_DOWNLOAD[@]}"; } >>"$log" 2>&1 ||
    { deb_log "apt-get failed in the chroot:"; tail -5 "$log" >&2; deb_unmount_all; return 1; }
  deb_stamp "$new" >"$new/.pg_coord-deb.stamp"
  deb_unmount_all
  mv "$new" "$DEB_BASE"
  deb_log "bookworm chroot ready ($((SECONDS - t0)) s)"
}

# Brings the base's lists, packages and download cache up to date (network).
deb_refresh_base() {
  local log=$DEB_CACHE/bookworm-deb.log
  deb_log "updating the bookworm chroot's packages and cache"
  cp -L /etc/resolv.conf "$DEB_BASE/etc/resolv.conf" 2>/dev/null || true
  deb_mount_in "$DEB_BASE" || { deb_unmount_all; return 1; }
  { deb_in_chroot "$DEB_BASE" apt-get update -qq &&
    deb_in_chroot "$DEB_BASE" apt-get upgrade -y -qq &&
    deb_in_chroot "$DEB_BASE" apt-get install -y -qq --download-only "${DEB_DOWNLOAD[@]}"; } >>"$log" 2>&1 ||
    { deb_log "apt-get failed in the chroot:"; tail -5 "$log" >&2; deb_unmount_all; return 1; }
  deb_stamp "$DEB_BASE" >"$DEB_BASE/.pg_coord-deb.stamp"
  deb_unmount_all
}

# Whether the base's candidate postgresql-15 satisfies what DEB depends on.
deb_base_satisfies() {   # DEB
  local want cand
  want=$(dpkg-deb -f "$1" Depends | grep -o 'postgresql-15 ([^)]*)' | sed 's/postgresql-15 (\(.*\))/\1/')
  [ -z "$want" ] && return 0
  cand=$(deb_in_chroot "$DEB_BASE" apt-cache policy postgresql-15 | sed -n 's/^ *Candidate: //p')
  [ -n "$cand" ] && dpkg --compare-versions "$cand" ${want% *} "${want#* }"
}

deb_ensure_base() {
  mkdir -p "$DEB_CACHE"
  deb_remove_tree "$DEB_BASE.new" || return 1
  if [ "${COORD_DEB_REBUILD:-0}" != 1 ] && [ -d "$DEB_BASE" ] && deb_base_ok; then
    return 0
  fi
  deb_build_base
}

# An overlay of the base, in a fresh directory: sets DEB_RUN (the directory)
# and DEB_ROOT (the merged root).  A kernel without overlayfs: a copy.
deb_overlay() {
  DEB_RUN=$(mktemp -d "$DEB_CACHE/deb-run.XXXXXX") || return 1
  DEB_ROOT=$DEB_RUN/root
  chmod 755 "$DEB_RUN"
  mkdir -p "$DEB_RUN/upper" "$DEB_RUN/work" "$DEB_ROOT"
  if mount -t overlay overlay -o "lowerdir=$DEB_BASE,upperdir=$DEB_RUN/upper,workdir=$DEB_RUN/work" "$DEB_ROOT" 2>/dev/null; then
    DEB_MOUNTED+=("$DEB_ROOT")
  else
    deb_log "no overlayfs here: copying the chroot"
    cp -a "$DEB_BASE/." "$DEB_ROOT/" || return 1
  fi
  deb_mount_in "$DEB_ROOT"
}
deb_overlay_remove() {
  [ -n "${DEB_ROOT:-}" ] && deb_kill_in "$DEB_ROOT"
  deb_unmount_all
  [ -n "${DEB_RUN:-}" ] && deb_remove_tree "$DEB_RUN"
  DEB_RUN= DEB_ROOT=
}
