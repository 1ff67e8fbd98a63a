#!/usr/bin/env bash
# The README's quick start, as a newcomer would run it: each worker of
# examples/quickstart (psycopg 3, psycopg2, Node's pg, JDBC) runs as a role
# that has only coord_worker, idles on LISTEN, is sent six jobs (one that its
# work fails on), completes five with their results and fails the sixth
# (dead: max_attempts 1).  Then what each driver reads: a session-bound
# claim's heartbeat is a timestamp in the zones furthest from UTC, Node's
# untyped coord.complete($1, $2) is not ambiguous, and the JDBC casts
# docs/jobs.md documents (test/crash/JdbcChecks.java).  Step 4 as the README
# writes it (results as the superuser, the other columns as a coord_monitor
# member).  Partition groups with drivers' types: coord.join's weight from
# a Python float or int and JDBC's setDouble/setInt, coord.segment_of with
# a bigint column, a Python int, a uuid, JDBC's setLong and UUID.
#
# Its own cluster (port 54351, or a free one when another run has it), which also listens on 127.0.0.1 for JDBC
# (pgjdbc cannot use a unix socket without junixsocket).  Exit 0 = pass;
# the last line says what was checked.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
COORD_PGPORT=$(coord_free_tcp_port 54351) coord_cluster_start
coord_cluster_listen_tcp || exit 1
QS=$COORD_ROOT/examples/quickstart
JDBC_JAR=${COORD_JDBC_JAR:-/usr/share/java/postgresql.jar}
checks=0
fail() { echo "FAIL: $*"; exit 1; }
ok() { checks=$((checks + 1)); echo "ok $*"; }
q() { psql -qXAt -v ON_ERROR_STOP=1 -d quickstart -c "$1"; }

# the README shows worker_psycopg3.py whole: it must be the file
readme_code=$(awk '/^   The psycopg 3 one, whole:/ {f=1; next} f && /^   ```python/ {c=1; next}
                   c && /^   ```/ {exit} c {sub(/^   /, ""); print}' "$COORD_ROOT/README.md")
file_code=$(grep -v '^#' "$QS/worker_psycopg3.py")
[ -n "$readme_code" ] && [ "$readme_code" = "$file_code" ] ||
  fail "README's quick start code differs from examples/quickstart/worker_psycopg3.py"
ok "README's quick start shows examples/quickstart/worker_psycopg3.py as it is"

coord_createdb quickstart
q "CREATE ROLE qs_worker LOGIN; GRANT coord_worker TO qs_worker"

# Debian's nodejs comes without npm (NodeSource's has it): install Debian's
# npm only when there is none, so as not to fight another nodejs.
if ! command -v npm >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null || fail "npm not found, and apt-get install npm failed"
fi
if [ ! -d "$QS/node_modules/pg" ]; then
  (cd "$QS" && npm install --no-audit --no-fund --silent --no-package-lock) >/dev/null 2>&1 ||
    fail "npm install of the pg package in examples/quickstart failed"
fi
command -v java >/dev/null || fail "java not found"
[ -r "$JDBC_JAR" ] || fail "no JDBC driver at $JDBC_JAR (Debian: libpostgresql-jdbc-java)"
URL="jdbc:postgresql://127.0.0.1:$PGPORT/quickstart?user=qs_worker"

run_worker() {  # run_worker NAME QUEUE COUNT
  case "$1" in
    psycopg3) PGUSER=qs_worker PGDATABASE=quickstart "$PYTHON" "$QS/worker_psycopg3.py" "$2" "$3" ;;
    psycopg2) PGUSER=qs_worker PGDATABASE=quickstart "$PYTHON" "$QS/worker_psycopg2.py" "$2" "$3" ;;
    node)     PGUSER=qs_worker PGDATABASE=quickstart node "$QS/worker.js" "$2" "$3" ;;
    jdbc)     java -cp "$JDBC_JAR" "$QS/Worker.java" "$2" "$3" "$URL" ;;
  esac
}

for w in psycopg3 psycopg2 node jdbc; do
  queue=qs_$w
  run_worker "$w" "$queue" 6 >"$COORD_TMP/$w.log" 2>&1 &
  pid=$!
  # idle: its claim found nothing and it waits on LISTEN
  for i in $(seq 1 300); do
    [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE usename = 'qs_worker' AND state = 'idle'
             AND query LIKE '%coord.claim%'")" = 1 ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$COORD_TMP/$w.log"; fail "$w: the worker exited before any job"; }
    sleep 0.1
  done
  start=$(date +%s%N)
  q "BEGIN;
     SELECT coord.enqueue('$queue', jsonb_build_object('numbers', jsonb_build_array(g, g, 1))) FROM generate_series(1, 5) AS g;
     SELECT coord.enqueue('$queue', '{\"oops\": 1}', max_attempts => 1);
     COMMIT" >/dev/null
  for i in $(seq 1 600); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && { kill "$pid"; cat "$COORD_TMP/$w.log"; fail "$w: the worker did not finish six jobs in 60 s"; }
  wait "$pid" || { cat "$COORD_TMP/$w.log"; fail "$w: the worker exited with an error"; }
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  got=$(q "SELECT count(*) FILTER (WHERE state = 'done' AND (result->>'sum')::int = 2 * (payload->'numbers'->>0)::int + 1)
                  || ' done, ' || count(*) FILTER (WHERE state = 'dead' AND last_error <> '') || ' dead'
           FROM coord.jobs WHERE queue = '$queue'")
  [ "$got" = "5 done, 1 dead" ] || { cat "$COORD_TMP/$w.log"; fail "$w: got $got, want 5 done (with their sums), 1 dead (with its error)"; }
  ok "$w worker: woken from LISTEN, 5 jobs done with their results, 1 failed and dead (${ms} ms)"
done

# Step 4 of the quick start, as written (sudo -u postgres: this cluster's
# superuser; database app: quickstart): every command runs, the superuser
# reads results and errors, the coord_monitor member the columns it may read.
step4_out=""
step4=$(awk '/^4\. Watch it/ {f=1; next} f && /^`make test` runs/ {exit} f && /^       [A-Za-z]/ {sub(/^       /, ""); print}' "$COORD_ROOT/README.md")
[ "$(grep -c . <<<"$step4")" -ge 3 ] || fail "quick start step 4: no commands found in the README"
while IFS= read -r cmd; do
  cmd=${cmd//sudo -u postgres /env PGUSER=postgres }
  cmd=${cmd//-d app /-d quickstart }
  out=$(bash -c "$cmd" 2>&1) || fail "quick start step 4: '$cmd' failed: $out"
  step4_out+=$out$'\n'
done <<<"$step4"
grep -q '"sum": 7' <<<"$step4_out" || fail "quick start step 4: no result shown: $step4_out"
grep -q 'dead' <<<"$step4_out" || fail "quick start step 4: no dead job shown: $step4_out"
err=$(psql -qXAt -U app_monitor -d quickstart -c 'SELECT id, state, result, last_error FROM coord.jobs' 2>&1) &&
  fail "a coord_monitor member read result and last_error: $err"
grep -q 'permission denied for view jobs' <<<"$err" || fail "coord_monitor, result and last_error: $err"
ok "quick start step 4 as written: the superuser reads results and errors, app_monitor (coord_monitor) the other columns, result and last_error are withheld from it"

# What each driver reads.  A session-bound claim's heartbeat, in UTC+14 and UTC-12.
for tz in Pacific/Kiritimati Etc/GMT+12; do
  got=$(PGUSER=qs_worker PGDATABASE=quickstart PGTZ=$tz "$PYTHON" - <<'PY' 2>&1
import psycopg
c = psycopg.connect(autocommit=True)
c.execute("SELECT coord.enqueue('hb3')")
(t,) = c.execute("SELECT coord.heartbeat(id, token) FROM coord.claim('hb3', session_bound => true)").fetchone()
print(t.year, t.utcoffset())
PY
)
  case "$got" in 999[89]\ *) ok "psycopg 3 reads a session-bound heartbeat in $tz: $got" ;;
                 *) fail "psycopg 3, session-bound heartbeat in $tz: $got" ;; esac
  got=$(PGUSER=qs_worker PGDATABASE=quickstart PGTZ=$tz "$PYTHON" - <<'PY' 2>&1
import psycopg2
c = psycopg2.connect("")
c.autocommit = True
cur = c.cursor()
cur.execute("SELECT coord.enqueue('hb2')")
cur.execute("SELECT coord.heartbeat(id, token) FROM coord.claim('hb2', session_bound => true)")
(t,) = cur.fetchone()
print(t.year, t.utcoffset())
PY
)
  case "$got" in 999[89]\ *) ok "psycopg2 reads a session-bound heartbeat in $tz: $got" ;;
                 *) fail "psycopg2, session-bound heartbeat in $tz: $got" ;; esac
done
got=$(cd "$QS" && PGUSER=qs_worker PGDATABASE=quickstart PGTZ=Pacific/Kiritimati node -e '
const { Client } = require("pg");
(async () => {
  const c = new Client(); await c.connect();
  await c.query("SELECT coord.enqueue($1)", ["hbn"]);
  const { rows: [j] } = await c.query("SELECT id, token, coord.heartbeat(id, token) AS hb FROM coord.claim($1, session_bound => true)", ["hbn"]);
  const { rows: [r] } = await c.query("SELECT coord.complete($1, $2) AS ok", [j.id, j.token]);
  console.log(j.hb instanceof Date ? j.hb.toISOString() : typeof j.hb, r.ok);
  await c.end();
})().catch((e) => { console.log("error", e.code, e.message); });' 2>&1)
[ "$got" = "9999-01-01T00:00:00.000Z true" ] || fail "node: heartbeat and untyped coord.complete(\$1, \$2): $got"
ok "node-postgres: a session-bound heartbeat is a Date (9999-01-01), untyped coord.complete(\$1, \$2) completes"

# Partition groups from psycopg 3, with Python's types: a float or int
# weight (float8, int2), and coord.segment_of('mail', msg_id) of
# docs/partition-groups.md with a bigint msg_id, a Python int and a uuid: the segment of the key's
# text, the segment its job (key => msg_id::text) is routed to.
q "CREATE TABLE mail (msg_id bigint PRIMARY KEY, sent boolean NOT NULL DEFAULT false);
   INSERT INTO mail SELECT g FROM generate_series(1, 100) AS g; GRANT SELECT ON mail TO qs_worker"
got=$(PGUSER=qs_worker PGDATABASE=quickstart "$PYTHON" - <<'PY' 2>&1
import uuid
import psycopg
c = psycopg.connect(autocommit=True)
out = []
for w in (2.5, 3, 10**12):
    (n,) = c.execute("SELECT cardinality(coord.join(%s, %s, weight => %s))", ("mail", "runner-1", w)).fetchone()
    out.append(n)
(n,) = c.execute("SELECT count(*) FROM mail WHERE coord.segment_of('mail', msg_id) = ANY (coord.owned('mail'))").fetchone()
out.append(n)
u = uuid.UUID("0b7e6c1a-4a4e-4f5e-9d2a-7c1c7a1e2f30")
(same,) = c.execute("SELECT coord.segment_of('mail', %s) = coord.segment_of('mail', '42')"
                    " AND coord.segment_of('mail', %s) = coord.segment_of('mail', '1099511627776')"
                    " AND coord.segment_of('mail', %s) = coord.segment_of('mail', %s::text)"
                    " AND coord.segment_of('mail', 42) = coord.segment_of('mail', 42::text)",
                    (42, 2**40, u, str(u))).fetchone()
out.append(same)
print(*out)
PY
)
[ "$got" = "1024 1024 1024 100 True" ] || fail "psycopg 3, coord.join with a Python float or int weight, coord.segment_of with an int or uuid key: $got"
[ "$(q "SELECT weight FROM coord.members WHERE partition_group = 'mail'")" = 1e+12 ] ||
  fail "psycopg 3: the last weight (10**12) was not stored"
ok "psycopg 3: coord.join(g, m, weight => %s) with a float and an int, coord.segment_of('mail', msg_id) with a bigint column, an int and a uuid (the segment of the key's text)"

out=$(java -cp "$JDBC_JAR" "$COORD_ROOT/test/crash/JdbcChecks.java" "$URL" 2>&1) || { echo "$out"; fail "JDBC checks"; }
echo "$out"
checks=$((checks + $(grep -c '^ok ' <<<"$out")))

echo "quickstart: $checks checks passed; the psycopg 3, psycopg2, Node and JDBC workers of examples/quickstart each did their jobs; drivers read heartbeats; JDBC casts as documented; step 4 as written; join weights and segment_of keys of drivers' types"
