#!/usr/bin/env bash
# Lease mode (--lease 1500ms: heartbeats every 500 ms), and noticing a claim
# that is gone.  Agent L (lease) runs 3 jobs: "slow" and "mid" (gated: they
# finish when the test lets them, after at least 5 heartbeats, i.e. well
# past their 1.5 s lease) and "long" (30 s).  Agent S (session-bound, check
# 500ms) runs "long" in another queue.
#   - the claims of L are leases (lease_until set, no session lock);
#   - L's backend is terminated while its 3 jobs run: lease claims outlive
#     the session, so the children go on, the agent reconnects and completes
#     "slow" and "mid" with the same claim (one run each, token unchanged);
#   - "long" of both agents is cancelled: the next heartbeat returns NULL and
#     the agent kills the child (measured: cancel to process gone);
#   - "slow" outlived its lease thanks to the heartbeats.
set -euo pipefail
export COORD_PGPORT=54348
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

cat >"$W/agent.conf" <<EOF
# the test tasks reach the database with the agent's PG* variables
pass_env = PG*
concurrency = 3
poll = 200ms
check = 500ms

[task slow]
command = $W/child.sh
env = GATE=$W/gate

[task mid]
command = $W/child.sh
env = GATE=$W/gate

[task long]
command = $W/child.sh
env = SLEEP=30
EOF

slow=$(sql "SELECT coord.enqueue('lq', '{\"task\": \"slow\"}')")
mid=$(sql "SELECT coord.enqueue('lq', '{\"task\": \"mid\"}')")
long=$(sql "SELECT coord.enqueue('lq', '{\"task\": \"long\"}')")
long_s=$(sql "SELECT coord.enqueue('sq', '{\"task\": \"long\"}')")
start_agent L "$W/agent.conf" -q lq --lease 1500ms --verbose
start_agent S "$W/agent.conf" -q sq
wait_sql "(SELECT count(*) FROM t.starts) = 4" 30 || true

# One statement, as soon as all 4 run: L's claims are leases (lease_until
# set, no session lock), S's is session-bound; and L's backend terminated.
read -r lease_claims session_claim killed_at < <(sql "
  SELECT (SELECT count(*) FROM coord.jobs WHERE id IN ($slow, $mid, $long) AND state = 'running'
            AND lease_until IS NOT NULL AND NOT coord.job_claimed(id)),
         coord.job_claimed($long_s),
         replace(clock_timestamp()::text, ' ', 'T')
    FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'L') s" | tr '|' ' ')
check "L's claims are leases: lease_until set, no session lock" eq "$lease_claims" 3
check "S's claim is session-bound" eq "$session_claim" t

echo "== cancel: the next heartbeat returns NULL, the child is killed"
pids=$(sql "SELECT string_agg(pid || ' ' || sleep_pid, ' ') FROM t.starts WHERE job_id IN ($long, $long_s)")
t0=$(sql "SELECT round(extract(epoch FROM clock_timestamp()) * 1000) FROM (SELECT coord.cancel($long), coord.cancel($long_s)) c")
# shellcheck disable=SC2086
while [ "$(pids_alive $pids)" != 0 ] && [ $(( $(now_ms) - t0 )) -lt 5000 ]; do sleep 0.005; done
cancel_ms=$(( $(now_ms) - t0 ))
check "both cancelled jobs' process groups gone ${cancel_ms} ms after the cancel (< 2000; heartbeat or check every 500 ms)" \
  between "$cancel_ms" 0 1999
# killed on NOTIFY cancel (or, had it come first, at a heartbeat)
check "both agents logged the lost claim" \
  eq "$(grep -cE "job $long: (the claim is no longer ours|cancelled \(NOTIFY cancel\))" "$W/L.log") $(grep -cE "job $long_s: (the claim is no longer ours|cancelled \(NOTIFY cancel\))" "$W/S.log")" "1 1"

echo "== L's backend was terminated: lease claims survive, results reported after the reconnect"
# let the gated jobs finish once their claims have been renewed 5 times
limit=$(( $(now_ms) + 30000 ))
while [ "$(grep -c "job $slow: heartbeat" "$W/L.log")" -lt 5 ] && [ "$(now_ms)" -lt "$limit" ]; do sleep 0.05; done
open_gate
wait_sql "coord.job_state($slow) = 'done' AND coord.job_state($mid) = 'done'" 30 || true
check "L reconnected" eq "$(grep -c 'connected to database' "$W/L.log")" 2
check "slow and mid (past their 1.5 s lease) done" eq "$(sql "SELECT coord.job_state($slow) || ' ' || coord.job_state($mid)")" "done done"
check "one run each, completed with the token of their only claim" \
  eq "$(sql "SELECT count(*) FROM t.starts s JOIN coord.jobs j ON j.id = s.job_id AND j.token = s.token AND j.attempt = 1 WHERE s.job_id IN ($slow, $mid)")" 2
check "their ends came after the terminate, under a valid claim" \
  eq "$(sql "SELECT count(*) FROM t.results WHERE job_id IN ($slow, $mid) AND claim_valid AND at > '${killed_at/T/ }'")" 2
check "L heartbeated slow at least 5 times" between "$(grep -c "job $slow: heartbeat" "$W/L.log")" 5 1000
check "only the cancelled job ended as lost in L's log" eq "$(grep -c 'outcome=lost' "$W/L.log")" 1

finish "lease: lease jobs ran on through a terminated backend and were completed after the reconnect (kept past their 1.5 s lease by heartbeats); cancelled jobs killed ${cancel_ms} ms after coord.cancel (lease heartbeat and session check); $CHECKS checks passed"
