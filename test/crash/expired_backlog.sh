#!/usr/bin/env bash
# A backlog of dead-on-arrival jobs (issue 23, section 1), on a cluster of its
# own: a coord_worker role enqueues 100,000 jobs already past their
# expires_at (ten enqueue_many calls, the most one call takes), then a few
# live ones behind them, and leaves 5,000 jobs with every attempt spent (a
# lease claim of max_attempts 1 whose lease lapsed) in another queue.
#   1. one coord.claim(q, 1) returns promptly (statement_timeout 10 s) holding
#      a bounded number of lock-table entries: it kills 32 expired jobs and
#      stops (it used to set aside, and lock, every expired job before the
#      live one, 10,001 entries for 10,000 jobs, and to walk them again for
#      each: 357 s for 100,000); the next claim goes on from there;
#   2. the same for the spent jobs (they were set aside in one statement);
#   3. another database's session still works;
#   4. coord.tick() under statement_timeout = 2 s succeeds every time (it
#      used to kill the whole backlog in one transaction: 5-26 s, cancelled
#      every time), drains the backlog over several ticks, and does the rest
#      of its work each time: a schedule instance deleted before each tick
#      is back after it, and coord.tick_state counts every tick;
#   5. the dead jobs' history rows say why they died, as before, and the live
#      jobs are claimed.
# Exit 0 = pass; the last line says what was checked.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
export COORD_PGPORT=${COORD_EXPIRED_PGPORT:-54473}
coord_cluster_start
fail() { echo "FAIL: $*"; [ -n "${COORD_TMP:-}" ] && tail -5 "$COORD_TMP/server.log"; exit 1; }
db=coord_expired
q() { psql -qXAt -v ON_ERROR_STOP=1 -d $db "$@"; }
w() { psql -qXAt -v ON_ERROR_STOP=1 -d $db -U exp_worker "$@"; }
now_ms() { echo $(( ${EPOCHREALTIME/./} / 1000 )); }
EXPIRED=100000
SPENT=5000
LOCKS_MAX=64      # a claim of 1 job: CLAIM_DEAD_MAX (32) set aside, and a few more

coord_createdb $db
coord_createdb coord_expired_other
q >/dev/null <<'SQL' || fail "setup"
SET client_min_messages = warning;
CREATE ROLE exp_worker LOGIN IN ROLE coord_worker;
SELECT coord.schedule('exp-sched', 'exp-sq', every => '1 hour');
SQL

t0=$(now_ms)
w >/dev/null <<SQL || fail "enqueueing the backlog"
DO \$\$ BEGIN
  FOR i IN 1 .. $EXPIRED / 10000 LOOP
    PERFORM coord.enqueue_many('exp', array_fill('{"x":1}'::jsonb, ARRAY[10000]),
                               expires_at => now() - interval '1 second');
  END LOOP;
END \$\$;
SQL
w -c "SELECT count(*) FROM coord.enqueue_many('exp', array_fill('{\"live\":1}'::jsonb, ARRAY[3]))" >/dev/null ||
  fail "enqueueing live jobs"
# spent: claimed once with a lease that lapses at once, max_attempts 1
w >/dev/null <<SQL || fail "making spent jobs"
SELECT count(*) FROM coord.enqueue_many('exp-spent', array_fill('{}'::jsonb, ARRAY[$SPENT]), max_attempts => 1);
SELECT count(*) FROM coord.claim('exp-spent', $SPENT, lease => '1 microsecond');
SQL
w -c "SELECT count(*) FROM coord.enqueue_many('exp-spent', array_fill('{\"live\":1}'::jsonb, ARRAY[3]))" >/dev/null ||
  fail "enqueueing live jobs"
echo "backlog: $EXPIRED expired and $SPENT spent jobs, and 3 live ones behind each, in $(( $(now_ms) - t0 )) ms"

# 1, 2: one claim each, bounded in time (statement_timeout) and in lock entries (same transaction)
claim_check() {  # claim_check QUEUE WHAT
  local t out got locks ms
  t=$(now_ms)
  out=$(w 2>&1 <<SQL
BEGIN;
SET LOCAL statement_timeout = '10s';
SELECT count(*) FILTER (WHERE payload ? 'live'),
       (extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000)::int FROM coord.claim('$1', 1);
SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory';
COMMIT;
SQL
)
  [ $? -eq 0 ] || fail "$2: coord.claim('$1', 1) failed after $(( $(now_ms) - t )) ms: $out"
  got=$(sed -n 1p <<<"$out"); locks=$(sed -n 2p <<<"$out"); ms=${got#*|}; got=${got%|*}
  # no job (it stopped after killing 32 expired ones), or a live one
  [ "$got" = 0 ] || [ "$got" = 1 ] || fail "$2: coord.claim('$1', 1) returned '$got' live jobs"
  [ "${locks:-x}" -le $LOCKS_MAX ] 2>/dev/null ||
    fail "$2: the claim's transaction holds '$locks' advisory lock entries (at most $LOCKS_MAX)"
  echo "$2: one claim returned $got live jobs in $ms ms (server; $(( $(now_ms) - t )) ms with psql), holding $locks lock entries"
}
claim_check exp "expired backlog"
claim_check exp-spent "spent backlog"
killed=$(q -c "SELECT count(*) FROM coord.job_history WHERE queue = 'exp'") || fail "counting the history"
claim_check exp "expired backlog, again"
[ "$(q -c "SELECT count(*) FROM coord.job_history WHERE queue = 'exp'")" -gt "$killed" ] ||
  fail "the second claim killed no expired job"

# 3: another database's sessions work
other=$(psql -qXAt -v ON_ERROR_STOP=1 -d coord_expired_other \
  -c "SELECT coord.lock('/exp/other') AND coord.unlock('/exp/other')" 2>&1) || fail "another database: $other"
[ "$other" = t ] || fail "another database: $other"

# 4: ticks under a 2 s statement_timeout until the backlog is gone (deadline 300 s: a loaded machine gives a tick less time; 10-20 ticks in 30 s alone)
left() { q -c "SELECT count(*) FROM coord.job WHERE expires_at < now() OR (attempt >= max_attempts AND lease_until < now())"; }
ticks=0 slowest=0 per_tick=
deadline=$(( $(now_ms) + 300000 ))
while :; do
  n=$(left) || fail "counting the backlog"
  [ "$n" -eq 0 ] && break
  [ "$(now_ms)" -lt "$deadline" ] || fail "$n jobs still past their expires_at or spent after $ticks ticks"
  before=$(q -c "SELECT ticks FROM coord.tick_state")
  q -c "DELETE FROM coord.job WHERE origin = 's:exp-sched'" >/dev/null || fail "deleting the schedule's instance"
  t=$(now_ms)
  out=$(q -c "SET statement_timeout = '2s'" \
          -c "SELECT coord.tick(), (extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000)::int" 2>&1) ||
    fail "tick $((ticks + 1)) failed after $(( $(now_ms) - t )) ms with $n jobs to kill: $out"
  d=${out#*|}; [ "$d" -gt "$slowest" ] && slowest=$d
  per_tick+="${out%|*}/${d}ms "
  ticks=$((ticks + 1))
  [ "$(q -c "SELECT ticks FROM coord.tick_state")" = $((before + 1)) ] || fail "tick $ticks: coord.tick_state did not count it"
  [ "$(q -c "SELECT count(*) FROM coord.job WHERE origin = 's:exp-sched'")" = 1 ] ||
    fail "tick $ticks: the schedule's instance was not put back"
done
echo "ticks (done/server time): $per_tick"
[ "$ticks" -ge 2 ] || fail "the backlog drained in $ticks tick(s): a tick is not bounded"

# 5: history, as before
hist=$(q -c "SELECT count(*) FILTER (WHERE queue = 'exp' AND last_error = 'expired: past its expires_at'),
                    count(*) FILTER (WHERE queue = 'exp-spent' AND last_error LIKE 'claim lost after the last attempt%')
               FROM coord.job_history WHERE state = 'dead'")
[ "$hist" = "$EXPIRED|$SPENT" ] || fail "history: dead expired|spent = $hist, want $EXPIRED|$SPENT"
live=$(q -c "SELECT count(*) FROM coord.job WHERE queue IN ('exp', 'exp-spent')")
[ "$live" = 6 ] || fail "jobs left: $live, want the 6 live ones"
got=$(w -c "SELECT count(*) FILTER (WHERE payload ? 'live') FROM coord.claim('exp', 3)
            UNION ALL SELECT count(*) FILTER (WHERE payload ? 'live') FROM coord.claim('exp-spent', 3)" | tr '\n' ' ')
[ "$got" = "3 3 " ] || fail "claims of the live jobs got '$got', want '3 3'"
echo "expired backlog: claims bounded (expired and spent), another database works, $ticks ticks under statement_timeout 2 s drained $EXPIRED + $SPENT jobs (slowest ${slowest} ms), each repairing a schedule; history rows say why"
