#!/usr/bin/env bash
# How coord-agent is installed (no cluster: everything goes to a DESTDIR):
#   - make install puts the binary into pg_config --bindir, a symlink to it
#     (absolute, without DESTDIR) into /usr/local/bin and the man page, with
#     the version filled in, into /usr/local/share/man/man1, where man finds
#     it; the top-level make install does the same;
#   - LINKDIR= and MAN1DIR= (empty) skip them; a Debian layout
#     (LINKDIR=/usr/bin MAN1DIR=/usr/share/man/man1); bindir=/usr/local/bin
#     puts the binary itself there and makes no link;
#   - uninstall removes the link only while it points at our binary;
#   - without DESTDIR a LINKDIR that cannot be written is a warning (the
#     agent is still installed), with DESTDIR an error;
#   - the example systemd unit: User=/Group= is the user the useradd line of
#     docs/coord-agent.md creates, it has the hardening lines, systemd-analyze
#     verify accepts it, and systemd-analyze security rates it as
#     docs/coord-agent.md says (when systemd-analyze is installed);
#   - as docs/coord-agent.md installs it (root-owned, group-readable, mode
#     0640), the config file is accepted by the agent running as another
#     user (a copy of the binary that user can reach, wherever the checkout
#     is), and refused, for that reason, once group-writable.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$COORD_ROOT"
FAILS=0
CHECKS=0
check() {
  local desc=$1; shift
  CHECKS=$((CHECKS + 1))
  if "$@"; then echo "  ok   $desc"; else echo "  FAIL $desc"; FAILS=$((FAILS + 1)); fi
}
eq() { [ "$1" = "$2" ] || { echo "       got '$1', want '$2'"; return 1; }; }

T=$(mktemp -d /tmp/coord-agent-pkg.XXXXXX)
trap 'rm -rf "$T"' EXIT
BINDIR=$(pg_config --bindir)
VERSION=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" pg_coord.control)
make -s -C agent >/dev/null

echo "== make -C agent install (defaults)"
d=$T/default
make -s -C agent install DESTDIR="$d" >/dev/null
check "the binary in pg_config --bindir" test -x "$d$BINDIR/coord-agent"
check "coordctl beside it, its link and man page" \
  eq "$(test -x "$d$BINDIR/coordctl" && readlink "$d/usr/local/bin/coordctl") $(test -f "$d/usr/local/share/man/man1/coordctl.1" && echo page)" \
  "$BINDIR/coordctl page"
check "a symlink in /usr/local/bin to the installed path (no DESTDIR in it)" \
  eq "$(readlink "$d/usr/local/bin/coord-agent")" "$BINDIR/coord-agent"
check "the man page in /usr/local/share/man/man1" test -f "$d/usr/local/share/man/man1/coord-agent.1"
check "with the version filled in" \
  grep -qxF ".TH COORD-AGENT 1 \"\" \"pg_coord $VERSION\" \"pg_coord\"" "$d/usr/local/share/man/man1/coord-agent.1"
if command -v man >/dev/null; then
  check "man finds it there" eq "$(MANPATH=$d/usr/local/share/man man -w coord-agent 2>/dev/null)" \
    "$d/usr/local/share/man/man1/coord-agent.1"
  check "and shows its NAME line" \
    grep -q 'coord-agent — run pg_coord jobs on this host' < <(MANWIDTH=200 man -l "$d/usr/local/share/man/man1/coord-agent.1" 2>/dev/null)
fi
make -s -C agent uninstall DESTDIR="$d" >/dev/null
check "uninstall removes binary, link and man page" \
  eq "$(find "$d" \( -type f -o -type l \) | wc -l)" 0

echo "== other layouts"
d=$T/none
make -s -C agent install DESTDIR="$d" LINKDIR= MAN1DIR= >/dev/null
check "LINKDIR= MAN1DIR=: the binaries only" eq "$(cd "$d" && find . \( -type f -o -type l \) | sort | tr '\n' ' ')" ".$BINDIR/coord-agent .$BINDIR/coordctl "
d=$T/debian
make -s -C agent install DESTDIR="$d" LINKDIR=/usr/bin MAN1DIR=/usr/share/man/man1 >/dev/null
check "Debian layout: /usr/bin link and /usr/share/man/man1 page" \
  eq "$(readlink "$d/usr/bin/coord-agent") $(test -f "$d/usr/share/man/man1/coord-agent.1" && echo page)" \
  "$BINDIR/coord-agent page"
check "  and coordctl's" \
  eq "$(readlink "$d/usr/bin/coordctl") $(test -f "$d/usr/share/man/man1/coordctl.1" && echo page)" "$BINDIR/coordctl page"
d=$T/local
make -s -C agent install DESTDIR="$d" bindir=/usr/local/bin >/dev/null
check "bindir=/usr/local/bin: the binary itself there, no link" \
  eq "$(test -f "$d/usr/local/bin/coord-agent" && ! test -L "$d/usr/local/bin/coord-agent" && echo file)" file
d=$T/foreign
mkdir -p "$d/usr/local/bin"
ln -s /opt/other/coord-agent "$d/usr/local/bin/coord-agent"
make -s -C agent uninstall DESTDIR="$d" >/dev/null
check "uninstall leaves a link that is not ours" eq "$(readlink "$d/usr/local/bin/coord-agent")" /opt/other/coord-agent
d=$T/soft
make -s -C agent install bindir="$d/bin" LINKDIR=/proc/coord-agent-test MAN1DIR="$d/man1" >"$d.out" 2>&1 && rc=0 || rc=$?
check "no DESTDIR, LINKDIR not writable: a warning, and the rest installed (exit 0)" \
  eq "$rc $(grep -c 'could not install into LINKDIR=/proc/coord-agent-test' "$d.out") $(test -x "$d/bin/coord-agent" && test -f "$d/man1/coord-agent.1" && echo both)" "0 1 both"
d=$T/strict
mkdir -p "$d" && touch "$d/usr"    # a file where DESTDIR/usr/local/bin should go
make -s -C agent install DESTDIR="$d" >/dev/null 2>&1 && rc=0 || rc=$?
check "with DESTDIR (a package) the same is an error" test "$rc" -ne 0
d=$T/top
make -s install DESTDIR="$d" >/dev/null
check "top-level make install: the link and the man page too" \
  eq "$(readlink "$d/usr/local/bin/coord-agent") $(test -f "$d/usr/local/share/man/man1/coord-agent.1" && echo page)" \
  "$BINDIR/coord-agent page"
check "  and coordctl's" \
  eq "$(readlink "$d/usr/local/bin/coordctl") $(test -f "$d/usr/local/share/man/man1/coordctl.1" && echo page)" "$BINDIR/coordctl page"

echo "== the example systemd unit"
unit=examples/agent/coord-agent.service
check "User= and Group= are the user the useradd line of docs/coord-agent.md creates" \
  eq "$(sed -n 's/^User=//p' "$unit") $(sed -n 's/^Group=//p' "$unit")" \
  "$(grep -A1 'useradd --system' docs/coord-agent.md | tr -d '\\\n' | awk '{print $NF, $NF}')"
missing=""
for line in NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes PrivateDevices=yes \
    ProtectKernelTunables=yes ProtectKernelModules=yes ProtectControlGroups=yes \
    "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6" RestrictNamespaces=yes LockPersonality=yes \
    MemoryDenyWriteExecute=yes RestrictRealtime=yes SystemCallArchitectures=native CapabilityBoundingSet= \
    KillMode=mixed; do
  grep -qxF "$line" "$unit" || missing="$missing $line"
done
check "it has the hardening lines and KillMode=mixed" eq "${missing:-none}" none
if command -v systemd-analyze >/dev/null; then
  # as installed, but with this build's binary and man page (verify runs both)
  mkdir -p "$T/unit"
  sed "s|^ExecStart=/usr/local/bin/coord-agent|ExecStart=$T/default/usr/local/bin/coord-agent|" "$unit" \
    >"$T/unit/coord-agent.service"
  make -s -C agent install DESTDIR="$T/default" LINKDIR= >/dev/null
  ln -sfn "$T/default$BINDIR/coord-agent" "$T/default/usr/local/bin/coord-agent"
  # where man itself is missing (a test-matrix chroot) verify cannot look the page up
  manopt=()
  command -v man >/dev/null || manopt=(--man=no)
  check "systemd-analyze verify accepts it" \
    env MANPATH="$T/default/usr/local/share/man" systemd-analyze verify "${manopt[@]}" "$T/unit/coord-agent.service"
  rating=$(systemd-analyze security --offline=yes "$T/unit/coord-agent.service" 2>/dev/null |
           sed -n 's/.*Overall exposure level for coord-agent.service: \([0-9.]*\) \([A-Z]*\).*/\1 \2/p')
  check "systemd-analyze security rates it as docs/coord-agent.md says (${rating:-no rating})" \
    grep -qF "\`systemd-analyze security\` rates it ${rating% *} (\"${rating#* }\")" docs/coord-agent.md
  check "and that is OK or better" grep -qE ' (OK|SAFE)$' <<<"$rating"
  analyzed="systemd-analyze: verify ok, security ${rating:-?}"
else
  analyzed="systemd-analyze not installed: unit not verified"
fi

echo "== the config file as docs/coord-agent.md installs it"
if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
  # root:postgres 0640 for an agent running as postgres, like root:coord-agent for coord-agent.
  # postgres runs a copy in $T (0755): the checkout may sit where it cannot
  # enter (under a mktemp -d directory, mode 0700).
  mkdir -p "$T/etc" "$T/bin" && chmod 755 "$T" "$T/etc" "$T/bin"
  install -m 755 agent/coord-agent "$T/bin/coord-agent"
  printf 'queues = q\n\n[task t]\ncommand = /bin/true\n' >"$T/etc/coord-agent.conf"
  chown root:postgres "$T/etc/coord-agent.conf"
  chmod 0640 "$T/etc/coord-agent.conf"
  check_as_pg() { runuser -u postgres -- "$T/bin/coord-agent" -f "$T/etc/coord-agent.conf" check >"$T/check.out" 2>&1; echo $?; }
  check "root-owned, group-readable 0640: the agent's user accepts it" eq "$(check_as_pg)" 0
  chmod 0660 "$T/etc/coord-agent.conf"
  check "group-writable: refused" eq "$(check_as_pg) $(grep -c 'is writable by its group' "$T/check.out")" "1 1"
fi

if [ "$FAILS" -eq 0 ]; then
  echo "packaging: make install puts binary, PATH link and man page where documented (LINKDIR, MAN1DIR, DESTDIR, bindir), uninstall, unit checks; $analyzed; $CHECKS checks passed"
  exit 0
fi
echo "packaging: FAILED $FAILS of $CHECKS checks"
exit 1
