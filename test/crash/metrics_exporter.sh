#!/usr/bin/env bash
# contrib/postgres_exporter.yml and contrib/prometheus-rules.yml (issue 29):
# Debian's prometheus-postgres-exporter, started on a free loopback port
# against this script's cluster (unix socket) as a member of coord_monitor
# with contrib/postgres_exporter.yml, serves the series of coord.metrics with
# the same values for the jobs, limits, pauses, elections and groups made
# here (every metric of the view but coord_limit_tokens, which the file says
# it does not serve); its scrape reports no error; `promtool check metrics`
# passes on its coord_* families and `promtool check rules` on the rules.
# Exit 0 = pass; the last line says what was checked.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
EXPORTER=${COORD_PG_EXPORTER:-/usr/bin/prometheus-postgres-exporter}
PROMTOOL=${COORD_PROMTOOL:-/usr/bin/promtool}
[ -x "$EXPORTER" ] || { echo "FAIL: $EXPORTER not found (Debian: prometheus-postgres-exporter)"; exit 1; }
[ -x "$PROMTOOL" ] || { echo "FAIL: $PROMTOOL not found (Debian: prometheus)"; exit 1; }
coord_cluster_start

exp_pid=
EXP_DIR=$(mktemp -d /tmp/pg_coord_exp.XXXXXX)
cleanup() {
  if [ -n "$exp_pid" ]; then
    kill "$exp_pid" 2>/dev/null
    # bounded: TERM, then KILL after 5 s
    for _ in $(seq 50); do kill -0 "$exp_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$exp_pid" 2>/dev/null
    wait "$exp_pid" 2>/dev/null
  fi
  rm -rf "$EXP_DIR"
  coord_cluster_stop
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$EXP_DIR/exporter.log" ] && tail -20 "$EXP_DIR/exporter.log"; exit 1; }

# the rules first: they need no cluster
"$PROMTOOL" check rules "$COORD_ROOT/contrib/prometheus-rules.yml" >"$EXP_DIR/rules.out" 2>&1 ||
  { cat "$EXP_DIR/rules.out"; fail "promtool check rules contrib/prometheus-rules.yml"; }
grep -q 'SUCCESS' "$EXP_DIR/rules.out" || { cat "$EXP_DIR/rules.out"; fail "promtool check rules said no SUCCESS"; }

coord_createdb coord_exp
psql -qX -d coord_exp -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || fail "setup"
SET client_min_messages = warning;
CREATE ROLE exp_monitor LOGIN IN ROLE coord_monitor;
-- exp-a: 3 ready, 1 scheduled, 1 running, 2 completed, 1 cancelled
SELECT coord.enqueue('exp-a', jsonb_build_object('i', i)) FROM generate_series(1, 7) AS i;
SELECT coord.enqueue('exp-a', run_at => now() + interval '1 hour');
SELECT coord.complete(id, token) FROM coord.claim('exp-a', 2);
SELECT coord.cancel(id) FROM coord.jobs WHERE queue = 'exp-a' AND state = 'ready' ORDER BY id DESC LIMIT 1;
SELECT count(*) FROM coord.claim('exp-a', 1, '1 hour');
-- exp-dead: one dead job (one attempt)
SELECT coord.enqueue('exp-dead', max_attempts => 1);
SELECT coord.fail(id, token, 'boom') FROM coord.claim('exp-dead');
-- a limit and a pause of the whole queue and of one key
SELECT coord.set_limit('exp-a', concurrency => 4);
SELECT coord.set_limit('exp-rate', concurrency => 2, rate => 10);
SELECT coord.pause('exp-p');
SELECT coord.pause('exp-a', limit_key => 'k1');
-- an election (term 1, its leader gone with this session) and a group
SELECT coord.campaign('exp-election');
SELECT coord.join('exp-group', 'm1', segments => 8);
SQL

# the exporter: a free loopback port (another run may take it between the
# choice and the bind: then another port, up to five times)
port=
# only the queries file's series: every built-in collector this version of
# the exporter has off (their names changed: bgwriter in 0.11, bookworm;
# stat_bgwriter in 0.17, trixie and sid)
mapfile -t no_collectors < <("$EXPORTER" --help 2>&1 |
  sed -n 's/^ *--\(\[no-\]\)\{0,1\}collector\.\([a-z_]*\).*/--no-collector.\2/p' | sort -u)
for try in 1 2 3 4 5; do
  port=$(coord_free_tcp_port 0)
  DATA_SOURCE_NAME="host=$PGHOST port=$PGPORT user=exp_monitor dbname=coord_exp sslmode=disable" \
    "$EXPORTER" --web.listen-address="127.0.0.1:$port" \
    --extend.query-path="$COORD_ROOT/contrib/postgres_exporter.yml" \
    --disable-default-metrics --disable-settings-metrics \
    "${no_collectors[@]}" --log.level=info \
    >"$EXP_DIR/exporter.log" 2>&1 &
  exp_pid=$!
  # up when /metrics answers; gone when the bind failed (deadline 20 s)
  up=$("$PYTHON" - "$port" "$exp_pid" <<'PY'
import os, sys, time, urllib.request
port, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        print("gone"); sys.exit()
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
        print("up"); sys.exit()
    except OSError:
        time.sleep(0.1)
print("timeout")
PY
)
  [ "$up" = up ] && break
  [ "$up" = timeout ] && fail "the exporter did not answer on 127.0.0.1:$port within 20 s"
  wait "$exp_pid" 2>/dev/null; exp_pid=
  grep -q 'address already in use' "$EXP_DIR/exporter.log" || fail "the exporter exited"
done
[ -n "$exp_pid" ] || fail "the exporter found no free port in 5 tries"

# one scrape, compared with coord.metrics read right after (the gauges of
# seconds move between the two: presence only)
"$PYTHON" - "$port" "$EXP_DIR" "$PROMTOOL" <<'PY' || fail "the exporter's series"
import json, math, re, subprocess, sys, urllib.request
port, d, promtool = sys.argv[1], sys.argv[2], sys.argv[3]

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
open(f"{d}/metrics.txt", "w").write(text)
line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
served = {}
others = {}
for line in text.splitlines():
    if not line or line.startswith("#"):
        continue
    m = line_re.match(line)
    if not m:
        fail(f"unparsable line: {line}")
    name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
    # an empty label is no label (Prometheus); the exporter adds server="..."
    lab = {k: v for k, v in label_re.findall(labels) if v != "" and k != "server"}
    key = (name, json.dumps(lab, sort_keys=True))
    (served if name.startswith("coord_") else others)[key] = value

# the exporter's own verdict on the scrape
errs = [k for k, v in others.items() if k[0] in ("pg_exporter_last_scrape_error",
        "pg_exporter_user_queries_load_error") and v != 0]
if errs:
    fail(f"the exporter reports errors: {errs}")
if not any(k[0] == "pg_exporter_user_queries_load_error" for k in others):
    fail("no pg_exporter_user_queries_load_error series: was the queries file read?")

rows = subprocess.run(["psql", "-qXAt", "-d", "coord_exp", "-c",
    "SELECT json_agg(json_build_object('m', metric, 'l', labels, 'v', value)) FROM coord.metrics"],
    check=True, capture_output=True, text=True).stdout
db = {}
for r in json.loads(rows):
    lab = {k: v for k, v in r["l"].items() if v != ""}
    db[(r["m"], json.dumps(lab, sort_keys=True))] = r["v"]

not_served = {"coord_limit_tokens"}
want = {k: v for k, v in db.items() if k[0] not in not_served}
missing = sorted(set(want) - set(served))
extra = sorted(set(served) - set(want))
if missing:
    fail(f"series of coord.metrics the exporter does not serve: {missing}")
if extra:
    fail(f"series the exporter serves that coord.metrics has not: {extra}")
differ = [(k, want[k], served[k]) for k in want
          if not k[0].endswith("_seconds")
          and not (want[k] == served[k] or (math.isnan(served[k]) and want[k] is None))]
if differ:
    fail(f"values differ (series, coord.metrics, exporter): {differ}")

# what this script made, by name (so that an empty view cannot pass)
def val(name, **lab):
    return served.get((name, json.dumps(lab, sort_keys=True)))
expect = [
    (("coord_queue_ready", {"queue": "exp-a"}), 3),
    (("coord_queue_scheduled", {"queue": "exp-a"}), 1),
    (("coord_queue_running", {"queue": "exp-a"}), 1),
    (("coord_jobs_enqueued_total", {"queue": "exp-a"}), 8),
    (("coord_jobs_completed_total", {"queue": "exp-a"}), 2),
    (("coord_jobs_cancelled_total", {"queue": "exp-a"}), 1),
    (("coord_queue_dead", {"queue": "exp-dead"}), 1),
    (("coord_jobs_failed_total", {"queue": "exp-dead"}), 1),
    (("coord_limit_concurrency", {"queue": "exp-a"}), 4),
    (("coord_limit_running", {"queue": "exp-a"}), 1),
    (("coord_queue_paused", {"queue": "exp-p"}), 1),
    (("coord_queue_paused", {"queue": "exp-a", "limit_key": "k1"}), 1),
    (("coord_election_term", {"election": "exp-election"}), 1),
    (("coord_group_segments", {"partition_group": "exp-group"}), 8),
]
for (name, lab), v in expect:
    got = val(name, **lab)
    if got != v:
        fail(f"{name}{lab}: the exporter serves {got}, want {v}")
print(f"{len(want)} series of coord.metrics served with the same values ({len(expect)} checked by name)")

# promtool's lint of the coord_* families (HELP, TYPE, counters' _total)
fams, keep = [], False
for line in text.splitlines():
    if line.startswith("# HELP ") or line.startswith("# TYPE "):
        keep = line.split()[2].startswith("coord_")
    elif not line.startswith("#"):
        keep = line.startswith("coord_")
    if keep:
        fams.append(line)
p = subprocess.run([promtool, "check", "metrics"], input="\n".join(fams) + "\n",
                   capture_output=True, text=True)
if p.returncode != 0:
    fail(f"promtool check metrics: {p.stdout}{p.stderr}")
PY

echo "ok: promtool check rules, the exporter on 127.0.0.1:$port serves coord.metrics' series and values, promtool check metrics"
