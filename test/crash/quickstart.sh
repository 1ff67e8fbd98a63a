#!/usr/bin/env bash
# The README's quick start, as a newcomer would run it: each worker of
# examples/quickstart (psycopg 3, psycopg2, Node's pg, JDBC) runs as a role
# that has only coord_worker, idles on LISTEN, is sent six jobs (one that its
# work fails on), completes five with their results and fails the sixth
# (dead: max_attempts 1).  Then what each driver reads: a session-bound
# claim's heartbeat is a timestamp in the zones furthest from UTC, Node's
# untyped coord.complete($1, $2) is not ambiguous, and the JDBC casts the
# README documents (test/crash/JdbcChecks.java).
#
# Its own cluster (port 54351), which also listens on 127.0.0.1 for JDBC
# (pgjdbc cannot use a unix socket without junixsocket).  Exit 0 = pass;
# the last line says what was checked.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
COORD_PGPORT=54351 coord_cluster_start
echo "listen_addresses = '127.0.0.1'" >>"$PGDATA/postgresql.conf"
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$COORD_TMP/server.log" -w -t 60 restart >/dev/null
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

out=$(java -cp "$JDBC_JAR" "$COORD_ROOT/test/crash/JdbcChecks.java" "$URL" 2>&1) || { echo "$out"; fail "JDBC checks"; }
echo "$out"
checks=$((checks + $(grep -c '^ok ' <<<"$out")))

echo "quickstart: $checks checks passed; the psycopg 3, psycopg2, Node and JDBC workers of examples/quickstart each did their jobs; drivers read heartbeats; JDBC casts as documented"
