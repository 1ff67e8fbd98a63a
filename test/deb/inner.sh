#!/bin/bash
# test/deb/inner.sh: test/deb/install.sh runs this inside a throwaway overlay
# of the bookworm chroot, as root, with the packages, quickstart.sh (made
# from the README by quickstart.py) and the README in /tmp/pg_coord-deb.
# One "ok ..." or "FAIL ..." line per check.
set -u
D=/tmp/pg_coord-deb
cd "$D" || exit 1
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; }
version=$(cat "$D/version")   # pg_coord.control's
[ -n "$version" ] || { bad "no version in $D/version"; exit 1; }
check() {   # DESCRIPTION CMD...
  local desc=$1; shift
  if "$@"; then ok "$desc"; else bad "$desc"; fi
}
eq() { [ "$1" = "$2" ] || { echo "       got '$1', want '$2'"; return 1; }; }
q() { runuser -u postgres -- psql -d app -XAtq -v ON_ERROR_STOP=1 -c "$1"; }

# the person: an ordinary user who may sudo, as on a fresh machine
useradd -m -s /bin/bash alice
echo 'alice ALL=(ALL:ALL) NOPASSWD: ALL' >/etc/sudoers.d/alice
chmod 0440 /etc/sudoers.d/alice

echo "== the README's quick start, as alice"
runuser -u alice -- env -i HOME=/home/alice USER=alice LOGNAME=alice LANG=C.UTF-8 \
    PATH=/usr/local/bin:/usr/bin:/bin bash -x "$D/quickstart.sh" >"$D/quickstart.out" 2>&1
rc=$?
sed 's/^/  | /' "$D/quickstart.out"
check "the quick start ran to its end (exit $rc)" eq "$rc" 0
check "apt installed postgresql-15 with the package (automatically)" \
  eq "$(apt-mark showauto postgresql-15) $(dpkg-query -W -f '${db:Status-Abbrev}' postgresql-15-pg-coord)" "postgresql-15 ii "
secs=$(sed -n 's/^quickstart: a job done \([0-9]*\) s after.*/\1/p' "$D/quickstart.out")
check "a job done ${secs:-?} s after apt install began (under 300 s)" test "${secs:-999}" -lt 300
check "step 4: the superuser reads the job done with its result" \
  grep -qE '^ +1 \| done +\| \{"sum": 6\} +\| *$' "$D/quickstart.out"
check "step 4: app_monitor (coord_monitor, password over TCP) reads its columns" \
  grep -qE '^ +1 \| sums +\| done +\| +1 \| 20' "$D/quickstart.out"
check "the package's README is the one the quick start was read from" \
  cmp -s <(zcat /usr/share/doc/postgresql-15-pg-coord/README.md.gz) "$D/README.md"
check "CREATE EXTENSION made pg_coord $version" \
  eq "$(q "SELECT extversion FROM pg_extension WHERE extname = 'pg_coord'")" "$version"

echo "== coord-agent"
apt-get install -y -q ./coord-agent_*.deb >"$D/agent-install.out" 2>&1 ||
  { cat "$D/agent-install.out"; bad "apt-get install ./coord-agent_*.deb"; }
check "coord-agent on PATH: $(command -v coord-agent)" eq "$(command -v coord-agent)" /usr/bin/coord-agent
check "coord-agent --version says $version" grep -qw "$version" <(coord-agent --version 2>&1)
check "coord-agent --help" grep -q 'check' <(coord-agent --help 2>&1)
check "its man page (man -w)" eq "$(man -w coord-agent 2>/dev/null)" /usr/share/man/man1/coord-agent.1.gz
check "the man page carries the version" grep -qF "\"pg_coord $version\"" <(zcat /usr/share/man/man1/coord-agent.1.gz)
check "coordctl in the same package, and its man page" \
  eq "$(command -v coordctl) $(coordctl --version 2>&1 | grep -cw "$version") $(man -w coordctl 2>/dev/null)" \
  "/usr/bin/coordctl 1 /usr/share/man/man1/coordctl.1.gz"
check "coordctl --help" grep -q '^Usage:' <(coordctl --help 2>&1)
check "system user coord-agent: nologin, home /var/lib/coord-agent" \
  eq "$(getent passwd coord-agent | awk -F: '{print ($3 < 1000 ? "system" : "uid " $3), $6, $7}')" \
     "system /var/lib/coord-agent /usr/sbin/nologin"
check "/var/lib/coord-agent: coord-agent's, 0700" eq "$(stat -c '%U:%G %a' /var/lib/coord-agent)" "coord-agent:coord-agent 700"
check "/etc/coord-agent.conf: root:coord-agent 0640" eq "$(stat -c '%U:%G %a' /etc/coord-agent.conf)" "root:coord-agent 640"
check "/etc/coord-agent.conf is a conffile" grep -qx ' */etc/coord-agent.conf [0-9a-f]*' <(dpkg-query -W -f '${Conffiles}\n' coord-agent)
# (the redirection inside: on the check it would swallow its ok/FAIL line)
check "coord-agent check, as coord-agent, accepts the sample" \
  sh -c 'runuser -u coord-agent -- coord-agent check >"$1" 2>&1 || { sed "s/^/  | /" "$1"; exit 1; }' sh "$D/check.out"
unit=/lib/systemd/system/coord-agent.service
check "the unit runs /usr/bin/coord-agent as coord-agent" \
  eq "$(sed -n 's/^ExecStart=//p; s/^User=//p' "$unit" | tr '\n' ' ')" "/usr/bin/coord-agent --config /etc/coord-agent.conf coord-agent "
check "systemd-analyze verify accepts the unit" systemd-analyze verify "$unit"
check "the unit is not enabled (the sample names no real database)" \
  test ! -e /etc/systemd/system/multi-user.target.wants/coord-agent.service

# the packaged agent runs a job against the packaged extension, as its unit
# would: user coord-agent, password in its .pgpass
q "CREATE ROLE app_agent LOGIN PASSWORD 'agent-secret'; GRANT coord_worker TO app_agent" >/dev/null
install -m 0600 -o coord-agent -g coord-agent /dev/null /var/lib/coord-agent/.pgpass
echo 'localhost:5432:app:app_agent:agent-secret' >/var/lib/coord-agent/.pgpass
cat >/etc/coord-agent.conf <<'CONF'
dbname = host=localhost dbname=app user=app_agent
queues = hosts
poll = 200ms
[task echo]
command = /bin/cat
CONF
check "the config file keeps root:coord-agent 0640 when edited" eq "$(stat -c '%U:%G %a' /etc/coord-agent.conf)" "root:coord-agent 640"
(cd /var/lib/coord-agent && exec runuser -u coord-agent -- env -i HOME=/var/lib/coord-agent PATH=/usr/bin:/bin \
   coord-agent --config /etc/coord-agent.conf) >"$D/agent.out" 2>&1 &
agent=$!
job=$(q "SELECT coord.enqueue('hosts', '{\"task\": \"echo\", \"n\": 42}')")
state=
for i in $(seq 1 300); do
  state=$(q "SELECT state || ' ' || coalesce(result->>'n', '-') FROM coord.jobs WHERE id = $job")
  [ "$state" = "done 42" ] && break
  sleep 0.1
done
kill -TERM "$agent" 2>/dev/null; wait "$agent"
check "the packaged agent ran a job (state, result: $state)" eq "$state" "done 42" || sed 's/^/  | /' "$D/agent.out"

echo "== coordctl against the quick start's database"
# the Prometheus text: HELP and TYPE lines, then samples NAME{LABELS} VALUE
runuser -u postgres -- coordctl -d dbname=app metrics >"$D/metrics.out" 2>&1
rc=$?
check "coordctl metrics (exit $rc): the counters of both queues' done jobs" \
  eq "$rc $(grep -c '^# TYPE coord_jobs_completed_total counter$' "$D/metrics.out") $(grep -cE '^coord_jobs_completed_total\{queue="(hosts|sums)"\} 1$' "$D/metrics.out")" "0 1 2"
prom_text() {   # FILE: no line but "# HELP/TYPE NAME ..." and "NAME{LABEL="VALUE",...} NUMBER"
  local name='[a-zA-Z_:][a-zA-Z0-9_:]*' label='[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"'
  ! grep -vE "^(# (HELP|TYPE) $name .+|$name(\{$label(,$label)*\})? ([-+]?[0-9.]+([eE][-+]?[0-9]+)?|NaN|[-+]Inf))\$" "$1"
}
check "coordctl metrics: every line a comment or a sample ($(grep -vc '^#' "$D/metrics.out") samples)" \
  prom_text "$D/metrics.out" ||
  sed 's/^/  | /' "$D/metrics.out" | head -20
# coordctl serve (libmicrohttpd): GET /metrics answers the same metrics
(exec runuser -u postgres -- coordctl -d dbname=app serve --listen 127.0.0.1:8089 --read-only) >"$D/serve.out" 2>&1 &
serve=$!
python3 - >"$D/serve-metrics.out" 2>&1 <<'PY'
import time, urllib.request
deadline = time.monotonic() + 15
while True:
    try:
        r = urllib.request.urlopen("http://127.0.0.1:8089/metrics", timeout=5)
        print(r.status, r.headers.get("Content-Type"))
        print(r.read().decode(), end="")
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.1)
PY
kill -TERM "$serve" 2>/dev/null; wait "$serve"
check "coordctl serve: GET /metrics is 200, text/plain, with the same counters" \
  eq "$(head -1 "$D/serve-metrics.out" | cut -d';' -f1) $(grep -cE '^coord_jobs_completed_total\{queue="(hosts|sums)"\} 1$' "$D/serve-metrics.out")" "200 text/plain 2" ||
  sed 's/^/  | /' "$D/serve.out" "$D/serve-metrics.out" | head -20

echo "== removal"
apt-get purge -y -q coord-agent >"$D/purge.out" 2>&1 || cat "$D/purge.out"
check "purge: no binary, config, home or ownership override left" \
  eq "$(ls -d /usr/bin/coord-agent /usr/bin/coordctl /etc/coord-agent.conf /var/lib/coord-agent 2>/dev/null; dpkg-statoverride --list /etc/coord-agent.conf)" ""
pg_ctlcluster 15 main stop
apt-get purge -y -q postgresql-15-pg-coord >"$D/purge.out" 2>&1 || cat "$D/purge.out"
check "purge of postgresql-15-pg-coord removes the extension's files" \
  eq "$(ls /usr/share/postgresql/15/extension/pg_coord* /usr/lib/postgresql/15/lib/pg_coord.so 2>/dev/null)" ""
