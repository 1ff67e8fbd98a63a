#!/usr/bin/env bash
# make test-deb: the Debian packages as a person gets them.  Builds them
# (make deb, lintian included), then, in a throwaway overlay of a clean
# bookworm chroot (test/deb/chroot.sh: cached, built once with debootstrap),
# with no network (a network namespace of its own, loopback only):
#   - as an ordinary user with sudo, the README's quick start as written:
#     step 1 with the package (`sudo apt install ./postgresql-15-pg-coord_*.deb`,
#     which brings postgresql-15 from the chroot's apt cache), the Debian
#     cluster started by hand (a chroot runs no services), steps 2 and 4
#     verbatim (app_user with a password over TCP), step 3's psycopg 3 worker
#     from the package's examples, until its job is done;
#   - coord-agent's package: binary on PATH, --version, --help, man page, the
#     system user, /etc/coord-agent.conf root:coord-agent 0640 (accepted by
#     `coord-agent check` as that user), the unit (systemd-analyze verify),
#     a job run by the packaged agent against the packaged extension;
#   - coordctl from the same package: --version, --help, man page,
#     `coordctl metrics` on the quick start's database (Prometheus text,
#     both queues' done jobs counted) and `coordctl serve`'s GET /metrics
#     (libmicrohttpd); and a purge that leaves nothing of its own behind.
# Needs root (chroot, mount, unshare).  DEB_BUILD_OPTIONS defaults to
# nocheck here (the regress and isolation suites, which `make test` runs, are
# skipped in the package build; COORD_DEB_CHECK=1 runs them).  Output of each
# part in test/results/deb-*.log; ends with "N passed, M failed" (one per check).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null && exec sudo -E "$0" "$@"
  echo "test/deb/install.sh needs root (chroot, mount, unshare)" >&2
  exit 2
fi
# shellcheck source=chroot.sh
. "$ROOT/test/deb/chroot.sh"
RESULTS=$ROOT/test/results
mkdir -p "$RESULTS" "$DEB_CACHE"
t_start=$SECONDS
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
finish() {
  echo "deb: $(( (SECONDS - t_start) / 60 ))m$(( (SECONDS - t_start) % 60 ))s in all"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit
}
trap 'deb_overlay_remove' EXIT
trap 'echo "deb: interrupted" >&2; exit 130' INT TERM HUP

# one run at a time per cache (the base chroot is shared)
exec 9>"$DEB_CACHE/.lock-deb"
flock -n 9 || { deb_log "another test-deb is running; waiting"; flock 9; }

# ---- the packages
# the README the packages are built from (the tree may change during the run)
README_SNAP=$(mktemp /tmp/pg_coord-deb-readme.XXXXXX)
cp "$ROOT/README.md" "$README_SNAP"
trap 'deb_overlay_remove; rm -f "$README_SNAP"' EXIT
t0=$SECONDS
if [ "${COORD_DEB_CHECK:-0}" = 1 ]; then dbo=${DEB_BUILD_OPTIONS:-}; else dbo="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }nocheck"; fi
if DEB_BUILD_OPTIONS=$dbo make -s -C "$ROOT" deb >"$RESULTS/deb-build.log" 2>&1; then
  pass "make deb ($((SECONDS - t0)) s): $(grep -E '^deb: lintian' "$RESULTS/deb-build.log")"
else
  tail -20 "$RESULTS/deb-build.log"
  fail "make deb (test/results/deb-build.log, deb/build.log, deb/lintian.log)"
  finish
fi
DEBS=$ROOT/deb
shopt -s nullglob
ext=("$DEBS"/postgresql-15-pg-coord_*.deb)
agent=("$DEBS"/coord-agent_*.deb)
shopt -u nullglob
if [ ${#ext[@]} -eq 1 ] && [ ${#agent[@]} -eq 1 ]; then
  pass "deb/: $(basename "${ext[0]}") ($(stat -c %s "${ext[0]}") bytes), $(basename "${agent[0]}") ($(stat -c %s "${agent[0]}") bytes)"
else
  fail "deb/ has no single postgresql-15-pg-coord and coord-agent package"
  finish
fi

# ---- the clean chroot
t0=$SECONDS
if ! deb_ensure_base; then
  fail "the bookworm chroot ($DEB_BASE)"
  finish
fi
if ! deb_base_satisfies "${ext[0]}" && ! { deb_refresh_base && deb_base_satisfies "${ext[0]}"; }; then
  fail "the chroot has no $(dpkg-deb -f "${ext[0]}" Depends | grep -o 'postgresql-15 ([^)]*)') (built against this machine's PostgreSQL)"
  finish
fi
if ! deb_overlay; then
  fail "an overlay of $DEB_BASE"
  finish
fi
setup=$((SECONDS - t0))
R=$DEB_ROOT
W=$R/tmp/pg_coord-deb
mkdir -p "$W"
cp "${ext[0]}" "${agent[0]}" "$ROOT/test/deb/inner.sh" "$W/"
python3 "$ROOT/test/deb/quickstart.py" "$README_SNAP" >"$W/quickstart.sh" ||
  { fail "the quick start's commands could not be read from README.md"; finish; }
cp "$README_SNAP" "$W/README.md"
sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$ROOT/pg_coord.control" >"$W/version"
chmod 755 "$W" && chmod 644 "$W"/*
# what a machine has and debootstrap does not write
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$(hostname)" >"$R/etc/hosts"

# ---- inside: no network but loopback, a clean environment, bounded
t0=$SECONDS
unshare --net -- /bin/sh -c 'ip link set lo up && exec "$@"' sh \
  timeout -k 10 "${COORD_DEB_TIMEOUT:-600}" \
  chroot "$R" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive \
    bash /tmp/pg_coord-deb/inner.sh >"$RESULTS/deb-install.log" 2>&1
rc=$?
deb_kill_in "$R"
grep -E '^(ok|FAIL) ' "$RESULTS/deb-install.log"
p=$(grep -c '^ok ' "$RESULTS/deb-install.log")
f=$(grep -c '^FAIL ' "$RESULTS/deb-install.log")
passed=$((passed + p)); failed=$((failed + f))
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
  tail -20 "$RESULTS/deb-install.log"
  fail "inside the chroot: exit status $rc$([ "$rc" -eq 124 ] && echo ' (timed out)') (test/results/deb-install.log)"
elif [ "$f" -ne 0 ]; then
  echo "deb: see test/results/deb-install.log"
fi
echo "deb: chroot $setup s, install and quick start $((SECONDS - t0)) s"
deb_overlay_remove
finish
