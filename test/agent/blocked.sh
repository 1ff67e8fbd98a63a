#!/usr/bin/env bash
# The loop goes on when statements block or fail.  Three agents, one after
# the other:
#   A (statement_timeout 1500ms, lock_timeout 500ms, check 300ms) runs a
#     gated job with a 2 s task timeout; another session then holds an
#     ACCESS EXCLUSIVE lock on coord.job for 10 s.  Every heartbeat and claim
#     of A now waits for that lock: each gives up after 500 ms (logged), so
#     the task timeout still kills the child on time and a SIGTERM is still
#     seen, both while the lock is held; once it is released the job is
#     reported (dead: timed out) and A exits 0.
#   B (statement_timeout 1s) runs a gated job; its server process is then
#     stopped (SIGSTOP), so no statement_timeout can fire.  When the job
#     ends, coord.complete gets no answer: after 1 s + 2 s B gives the
#     connection up, reconnects, and runs a new job while the old server
#     process is still stopped.
#   C (--lease 1500ms) runs a gated job; coord.heartbeat is then renamed, so
#     every heartbeat fails while C stays connected.  By C's clock the lease
#     runs out 1.5 s after the last heartbeat: C kills the child (anyone may
#     claim the job from then on).
# On the old code A and B froze in a statement, and C let the child run on.
set -euo pipefail
export COORD_PGPORT=54340
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup
stopped_pid=
blocked_teardown() {
  [ -n "$stopped_pid" ] && kill -CONT "$stopped_pid" 2>/dev/null
  agent_teardown
}
trap blocked_teardown EXIT

cat >"$W/agent.conf" <<EOF
# the test tasks reach the database with the agent's PG* variables
pass_env = PG*
concurrency = 2
poll = 200ms
check = 300ms
kill_after = 500ms
statement_timeout = 1500ms
lock_timeout = 500ms

[task hang]
command = $W/child.sh
env = GATE=$W/gate
timeout = 2s

[task gated]
command = $W/child.sh
env = GATE=$W/gate

[task quick]
command = $W/child.sh
EOF

echo "== A: a lock held elsewhere for 10 s"
hang=$(sql "SELECT coord.enqueue('aq', '{\"task\": \"hang\"}', max_attempts => 1)")
start_agent A "$W/agent.conf" -q aq --verbose
wait_sql "EXISTS (SELECT FROM t.starts WHERE job_id = $hang)" 20 || true
started_ms=$(sql "SELECT round(extract(epoch FROM at) * 1000) FROM t.starts WHERE job_id = $hang")
psql -qAtX -c "BEGIN; LOCK TABLE coord.job IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(10); COMMIT;" \
  >/dev/null 2>&1 &
blocker=$!
wait_sql "EXISTS (SELECT FROM pg_locks WHERE relation = 'coord.job'::regclass AND mode = 'AccessExclusiveLock' AND granted)" 10 || true
pids=$(sql "SELECT pid || ' ' || sleep_pid FROM t.starts WHERE job_id = $hang")
# shellcheck disable=SC2086
while [ "$(pids_alive $pids)" != 0 ] && [ $(( $(now_ms) - started_ms )) -lt 9000 ]; do sleep 0.02; done
killed_after=$(( $(now_ms) - started_ms ))
# shellcheck disable=SC2086
check "the task timeout (2 s) killed the child ${killed_after} ms after its start, lock still held (< 4000)" \
  eq "$(pids_alive $pids) $([ "$killed_after" -lt 4000 ] && echo in_time) $(pids_alive "$blocker")" "0 in_time 1"
kill -TERM "${AGENT_PID[A]}"
check "SIGTERM seen within 2 s while the lock is held" wait_log A 'SIGTERM: no more claims' 2
check "the lock is still held" eq "$(pids_alive "$blocker")" 1
check "statements that waited for the lock gave up, logged (lock timeout)" \
  between "$(grep -c 'canceling statement due to lock timeout' "$W/A.log")" 1 10000
wait "$blocker" || true
rc=0
wait "${AGENT_PID[A]}" || rc=$?
check "after the lock: A reported the job and exited 0" eq "$rc" 0
check "the job is dead, timed out" \
  eq "$(sql "SELECT state || ' ' || (last_error LIKE 'timed out after%') FROM coord.jobs WHERE id = $hang")" "dead true"
unset 'AGENT_PID[A]'

echo "== B: its server process stopped"
rm -f "$W/gate"
# no heartbeat (check 60s): B's server process is idle until the job ends
sed -i 's/^statement_timeout = .*/statement_timeout = 1s/; s/^check = .*/check = 60s/' "$W/agent.conf"
gated=$(sql "SELECT coord.enqueue('bq', '{\"task\": \"gated\"}')")
start_agent B "$W/agent.conf" -q bq -p 60s --verbose
wait_sql "EXISTS (SELECT FROM t.starts WHERE job_id = $gated)" 20 || true
stopped_pid=$(sql "SELECT pid FROM pg_stat_activity WHERE application_name = 'B'")
# stop it while it is idle (between statements: it holds no lightweight lock)
wait_sql "(SELECT state = 'idle' FROM pg_stat_activity WHERE pid = $stopped_pid)" 10 || true
kill -STOP "$stopped_pid"
t0=$(now_ms)
open_gate
quick=$(sql "SELECT coord.enqueue('bq', '{\"task\": \"quick\"}')")
wait_sql "coord.job_state($quick) = 'done'" 15 || true
check "B gave the connection up (no answer within 1.0s + 2 s)" wait_log B 'no answer within 1.0s' 1
check "B reconnected and ran a new job $(( $(now_ms) - t0 )) ms after the stop, the old server process still stopped" \
  eq "$(sql "SELECT coord.job_state($quick)") $(awk '{print $3}' "/proc/$stopped_pid/stat")" "done T"
kill -CONT "$stopped_pid"
sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $stopped_pid" >/dev/null
stopped_pid=
kill -TERM "${AGENT_PID[B]}"
wait "${AGENT_PID[B]}" || true
unset 'AGENT_PID[B]'

echo "== C: lease heartbeats fail while connected"
rm -f "$W/gate"
leased=$(sql "SELECT coord.enqueue('cq', '{\"task\": \"gated\"}')")
start_agent C "$W/agent.conf" -q cq -c 1 --lease 1500ms --verbose
wait_sql "EXISTS (SELECT FROM t.starts WHERE job_id = $leased)" 20 || true
wait_log C "job $leased: heartbeat" 5 || true
pids=$(sql "SELECT pid || ' ' || sleep_pid FROM t.starts WHERE job_id = $leased")
sql "ALTER FUNCTION coord.heartbeat(bigint, bigint, interval) RENAME TO heartbeat_away"
t0=$(now_ms)
# shellcheck disable=SC2086
while [ "$(pids_alive $pids)" != 0 ] && [ $(( $(now_ms) - t0 )) -lt 6000 ]; do sleep 0.02; done
gone_ms=$(( $(now_ms) - t0 ))
# shellcheck disable=SC2086
check "the child was killed ${gone_ms} ms after heartbeats began to fail (lease 1.5 s; < 3000)" \
  eq "$(pids_alive $pids) $([ "$gone_ms" -lt 3000 ] && echo in_time)" "0 in_time"
check "C logged why" wait_log C "job $leased: lease ran out (by the agent's clock) while its heartbeats failed" 1
check "C was connected all along" eq "$(grep -c 'connected to database' "$W/C.log")" 1
sql "ALTER FUNCTION coord.heartbeat_away(bigint, bigint, interval) RENAME TO heartbeat"
open_gate
wait_sql "coord.job_state($leased) = 'done'" 20 || true
check "the job was claimed again and done; one run ended under a valid claim" \
  eq "$(sql "SELECT coord.job_state($leased) || ' ' || count(*) FILTER (WHERE claim_valid) FROM t.results WHERE job_id = $leased")" "done 1"

finish "blocked: under a 10 s table lock the task timeout killed after ${killed_after} ms and SIGTERM was seen (lock_timeout 500ms); a stopped server process was given up after statement_timeout + 2 s; a lease child killed ${gone_ms} ms after its heartbeats began to fail while connected; $CHECKS checks passed"
