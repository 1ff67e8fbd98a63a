#!/usr/bin/env bash
# make deb: the Debian packages, from the working tree, into deb/:
#
#   deb/postgresql-NN-pg-coord_<version>_<arch>.deb   the extension, one per
#       major in debian/pgversions (15 and later) whose server headers
#       (postgresql-server-dev-NN) are installed
#   deb/coord-agent_<version>_<arch>.deb              the agent
#   and their -dbgsym .ddeb, .buildinfo and .changes
#
# What is built is the working tree as git sees it (tracked files and
# untracked ones that are not ignored, uncommitted changes included), copied
# to a temporary directory; outside a git checkout, the whole directory.
# The build itself needs no network (dpkg-buildpackage -b: binary packages
# only, unsigned).  Build dependencies missing from the machine are
# installed with apt-get first (as root, or through sudo).  Then lintian
# checks the packages and fails the build on an error (warnings are listed).
#
#   COORD_DEB_OUT=dir              another output directory
#   PG_SUPPORTED_VERSIONS="15 17"  other majors (default: installed)
#   DEB_BUILD_OPTIONS=nocheck      skip the packages' installcheck
#                                  (pg_buildext: regress suite per major)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${COORD_DEB_OUT:-$ROOT/deb}
log() { printf 'deb: %s\n' "$*" >&2; }

# Build-Depends, read from debian/control.in (debhelper-compat is debhelper's),
# what dpkg-buildpackage itself runs, and lintian
mapfile -t deps < <(sed -n '/^Build-Depends:/,/^[^ ]/s/^ \([a-z0-9][a-z0-9.+-]*\).*/\1/p' "$ROOT/debian/control.in" |
  sed 's/^debhelper-compat$/debhelper/')
deps+=(dpkg-dev fakeroot make gcc lintian)
missing=()
for p in "${deps[@]}"; do
  dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  log "installing the build dependencies: ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
    { log "could not install ${missing[*]}"; exit 1; }
fi

version=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$ROOT/pg_coord.control")
T=$(mktemp -d /tmp/pg_coord-deb.XXXXXX)
# readable by all: the installcheck's server (user postgres) loads the extension from here
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT
src=$T/pg-coord-$version
mkdir -p "$src"
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
     while IFS= read -r -d '' f; do { [ -e "$f" ] || [ -L "$f" ]; } && printf '%s\0' "$f"; done |
     tar --null -T - -cf -) | tar -C "$src" -xf -
else
  tar -C "$ROOT" --exclude=./deb -cf - . | tar -C "$src" -xf -
fi

cd "$src"
export PG_SUPPORTED_VERSIONS=${PG_SUPPORTED_VERSIONS:-installed}
# debian/control for the majors at hand (the committed one lists 15)
pg_buildext updatecontrol
majors=$(pg_buildext supported-versions | tr '\n' ' ')
[ -n "$majors" ] || { log "no PostgreSQL major of debian/pgversions has its server headers here"; exit 1; }
log "building pg-coord $version for PostgreSQL ${majors% } and coord-agent (log: $OUT/build.log)"
mkdir -p "$OUT"
t0=$SECONDS
# (not the calling make's flags: -s would hide the compiler lines from build.log)
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL dpkg-buildpackage -us -uc -b >"$OUT/build.log" 2>&1; then
  tail -30 "$OUT/build.log" >&2
  log "dpkg-buildpackage failed (whole log: $OUT/build.log)"
  exit 1
fi
shopt -s nullglob
cd "$T"
files=(./*.deb ./*.ddeb ./*.buildinfo ./*.changes)
changes=(pg-coord_*.changes)
[ ${#changes[@]} -eq 1 ] || { log "no .changes file made"; exit 1; }
# this build's files replace the last one's
(cd "$OUT" && rm -f postgresql-*-pg-coord*_*.deb postgresql-*-pg-coord*_*.ddeb coord-agent*_*.deb coord-agent*_*.ddeb pg-coord_*.buildinfo pg-coord_*.changes)
mv "${files[@]}" "$OUT/"
log "built in $((SECONDS - t0)) s:"
(cd "$OUT" && ls -l ./*.deb | awk '{printf "  %s  %s\n", $5, $NF}' >&2)

# lintian: errors fail make deb; warnings are printed
lintian_rc=0
(cd "$OUT" && lintian --fail-on error --tag-display-limit 0 "${changes[0]}") >"$OUT/lintian.log" 2>&1 || lintian_rc=$?
errors=$(grep -c '^E: ' "$OUT/lintian.log" || true)
warnings=$(grep -c '^W: ' "$OUT/lintian.log" || true)
grep -E '^[EW]: ' "$OUT/lintian.log" >&2 || true
log "lintian: $errors errors, $warnings warnings (deb/lintian.log)"
[ "$lintian_rc" -eq 0 ] && [ "$errors" -eq 0 ] || { log "lintian failed"; exit 1; }
