#!/usr/bin/env bash
# coord.metrics' counters never go back (issue 29) across (1) a real server
# restart (pg_ctl -m immediate, then start: crash recovery) and (2) a crash of
# the backend running coord.tick's fold: stopped inside its INSERT into
# coord.queue_totals (another session holds that table in SHARE mode), then
# SIGKILLed, which makes the postmaster reset every backend.  The counters
# read before each event are compared, series by series, with those read
# after (and after a later tick that completes the fold): none is smaller,
# and each has its expected value.  Part of each counter lives only in
# coord.queue_totals (history rows folded, then purged), so a total that a
# restart lost (an unlogged table, a cache in memory) fails here.
# Exit 0 = pass; the last line says what was checked.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
coord_cluster_start

DB=coord_mrestart
bg_pids=()
cleanup() {
  local p
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  coord_cluster_stop
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; tail -5 "$COORD_TMP/server.log"; exit 1; }
q() { psql -qXAt -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }
checks=0

# counters FILE: every counter series of coord.metrics, "metric labels value"
counters() {
  q "SELECT metric || ' ' || labels::text || ' ' || value FROM coord.metrics WHERE kind = 'counter' ORDER BY 1" >"$1" ||
    fail "reading coord.metrics"
}

# not_back BEFORE AFTER WHAT: every series of BEFORE is in AFTER, not smaller
not_back() {
  "$PYTHON" - "$1" "$2" "$3" <<'PY' || fail "$3: a counter went back"
import sys
def read(p):
    out = {}
    for line in open(p):
        k, v = line.rstrip("\n").rsplit(" ", 1)
        out[k] = float(v)
    return out
before, after, what = read(sys.argv[1]), read(sys.argv[2]), sys.argv[3]
if not before:
    print(f"FAIL: {what}: no counters before"); sys.exit(1)
bad = [(k, v, after.get(k)) for k, v in before.items() if after.get(k) is None or after[k] < v]
for k, v, a in bad:
    print(f"FAIL: {what}: {k} was {v:g}, now {a}")
sys.exit(1 if bad else 0)
PY
  checks=$((checks + 1))
}

# expect METRIC QUEUE WANT WHAT
expect() {
  local got
  got=$(q "SELECT value FROM coord.metrics WHERE metric = '$1' AND labels = jsonb_build_object('queue', '$2')")
  [ "$got" = "$3" ] || fail "$4: $1{queue=$2} is '$got', want $3"
  checks=$((checks + 1))
}
expect_all() {  # the values the jobs below give, whatever the fold did
  expect coord_jobs_enqueued_total mr-a 12 "$1"
  expect coord_jobs_completed_total mr-a "$2" "$1"
  expect coord_jobs_cancelled_total mr-a 1 "$1"
  expect coord_jobs_failed_total mr-dead 2 "$1"
}

# waits (60 s at most) until the server accepts connections again
wait_server() {
  local deadline=$((SECONDS + 60))
  until psql -qXAt -d "$DB" -c "SELECT 1" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "the server did not come back within 60 s"
    sleep 0.1
  done
}

coord_createdb "$DB"
# mr-a: 12 enqueued, 8 completed (4 of them folded and purged), 1 cancelled;
# mr-dead: 2 dead (one folded and purged)
psql -qX -d "$DB" -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || fail "setup"
SET client_min_messages = warning;
SELECT coord.enqueue('mr-a', jsonb_build_object('i', i)) FROM generate_series(1, 12) AS i;
SELECT coord.complete(id, token) FROM coord.claim('mr-a', 4);
SELECT coord.enqueue('mr-dead', max_attempts => 1);
SELECT coord.fail(id, token, 'boom') FROM coord.claim('mr-dead');
-- made an hour old: the tick folds them into coord.queue_totals, the purge drops them
UPDATE coord.job_history SET finished_at = finished_at - interval '1 hour';
SELECT coord.tick();
SELECT coord.purge_jobs('30 minutes');
SELECT coord.complete(id, token) FROM coord.claim('mr-a', 4);
SELECT coord.cancel(id) FROM coord.jobs WHERE queue = 'mr-a' AND state = 'ready' ORDER BY id LIMIT 1;
SELECT coord.enqueue('mr-dead', max_attempts => 1);
SELECT coord.fail(id, token, 'boom') FROM coord.claim('mr-dead');
SQL
[ "$(q "SELECT done FROM coord.queue_totals WHERE queue = 'mr-a'")" = 4 ] || fail "setup: the tick did not fold the old completions"
[ "$(q "SELECT count(*) FROM coord.job_history WHERE queue = 'mr-a' AND state = 'done'")" = 4 ] ||
  fail "setup: the purge did not drop the folded completions"
expect_all "before the restart" 8

# (1) immediate stop, start
counters "$COORD_TMP/c1"
coord_cluster_crash_restart || fail "the immediate restart"
wait_server
counters "$COORD_TMP/c2"
not_back "$COORD_TMP/c1" "$COORD_TMP/c2" "an immediate restart"
expect_all "after the restart" 8

# (2) a backend killed during a fold: 3 more completions, then (once the
# server's clock is 1.5 s past them, so that the fold's horizon, a second
# before the oldest open transaction, the locker's, passes them) the tick's
# fold stopped on coord.queue_totals and its backend SIGKILLed
q "SELECT count(coord.complete(id, token)) FROM coord.claim('mr-a', 3)" >/dev/null || fail "setup of the fold"
deadline=$((SECONDS + 20))
until [ "$(q "SELECT clock_timestamp() > max(finished_at) + interval '1.5 seconds' FROM coord.job_history")" = t ]; do
  [ $SECONDS -lt $deadline ] || fail "the server's clock did not move past the completions"
  sleep 0.1
done
psql -qX -d "$DB" -v ON_ERROR_STOP=1 -c "SET application_name = 'mr_locker'" \
  -c "BEGIN" -c "LOCK TABLE coord.queue_totals IN SHARE MODE" -c "SELECT pg_sleep(120)" >/dev/null 2>&1 &
bg_pids+=($!)
deadline=$((SECONDS + 20))
until [ "$(q "SELECT count(*) FROM pg_locks AS l JOIN pg_stat_activity AS a USING (pid)
             WHERE a.application_name = 'mr_locker' AND l.relation = 'coord.queue_totals'::regclass AND l.granted")" = 1 ]; do
  [ $SECONDS -lt $deadline ] || fail "the locker did not lock coord.queue_totals within 20 s"
  sleep 0.1
done
PGAPPNAME=mr_tick psql -qX -d "$DB" -c "SELECT coord.tick()" >/dev/null 2>&1 &
bg_pids+=($!)
deadline=$((SECONDS + 20))
tick_pid=
until [ -n "$tick_pid" ]; do
  tick_pid=$(q "SELECT a.pid FROM pg_locks AS l JOIN pg_stat_activity AS a USING (pid)
                WHERE a.application_name = 'mr_tick' AND l.relation = 'coord.queue_totals'::regclass AND NOT l.granted")
  [ -n "$tick_pid" ] && break
  [ $SECONDS -lt $deadline ] || fail "the tick's fold did not wait for coord.queue_totals within 20 s"
  sleep 0.1
done
counters "$COORD_TMP/c3"
expect_all "during the fold" 11
kill -9 "$tick_pid" || fail "kill -9 $tick_pid"
# the postmaster resets every backend (the locker too) and recovers
deadline=$((SECONDS + 30))
while psql -qXAt -d "$DB" -c "SELECT pg_backend_pid()" >/dev/null 2>&1 &&
      [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'mr_locker'")" != 0 ]; do
  [ $SECONDS -lt $deadline ] || fail "no crash restart after the tick's backend was killed"
  sleep 0.1
done
wait_server
grep -q "terminated by signal 9" "$COORD_TMP/server.log" || fail "the server log does not show the killed backend"
counters "$COORD_TMP/c4"
not_back "$COORD_TMP/c3" "$COORD_TMP/c4" "a backend killed during the fold"
expect_all "after the crash during the fold" 11
[ "$(q "SELECT done FROM coord.queue_totals WHERE queue = 'mr-a'")" = 4 ] || fail "the killed fold left part of its work"
checks=$((checks + 1))

# the next tick does the fold; nothing goes back or counts twice
q "SELECT coord.tick()" >/dev/null || fail "the tick after the crash"
[ "$(q "SELECT done FROM coord.queue_totals WHERE queue = 'mr-a'")" = 11 ] || fail "the next tick did not fold"
checks=$((checks + 1))
counters "$COORD_TMP/c5"
not_back "$COORD_TMP/c4" "$COORD_TMP/c5" "the fold after the crash"
not_back "$COORD_TMP/c1" "$COORD_TMP/c5" "from the first read to the last"
expect_all "after the fold" 11
echo "ok: $checks checks: counters not back across an immediate restart and a backend killed in coord.tick's fold"
