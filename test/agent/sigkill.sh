#!/usr/bin/env bash
# The agent is SIGKILLed while its children run.  Agent A (concurrency 4)
# runs 4 gated jobs (they wait until the test lets them finish); agent B
# (polling every 200 ms) is started idle.  A is SIGKILLed.  Then:
#   - A's children die with it (PR_SET_PDEATHSIG), measured;
#   - A's session-bound claims end with its session: B claims the 4 jobs
#     again at once (no lease to wait out), measured by their claimed_at;
#   - the gate opens: B runs all 4 to completion; each job is done exactly
#     once, by B, and no child of A got to the end of its job.
set -euo pipefail
export COORD_PGPORT=54344
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

for n in A B; do
  cat >"$W/$n.conf" <<EOF
# the test tasks reach the database with the agent's PG* variables
pass_env = PG*
queues = work
concurrency = 4
poll = 200ms

[task slow]
command = $W/child.sh
env = GATE=$W/gate
env = AGENT=$n
EOF
done

ids=$(sql "SELECT string_agg(coord.enqueue('work', '{\"task\": \"slow\"}')::text, ',') FROM generate_series(1, 4)")
start_agent A "$W/A.conf"
wait_sql "(SELECT count(*) FROM t.starts WHERE agent = 'A') = 4" 30 || true
start_agent B "$W/B.conf"
wait_sql "EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'B')" 30 || true
a_children=$(sql "SELECT string_agg(pid::text, ' ') FROM t.starts WHERE agent = 'A'")
check "A was running 4 jobs, B none" eq "$(sql "SELECT count(*) FROM coord.jobs WHERE state = 'running'")/$(sql "SELECT count(*) FROM t.starts WHERE agent = 'B'")" "4/0"

t0=$(now_ms)
{ kill -9 "${AGENT_PID[A]}"; wait "${AGENT_PID[A]}"; } 2>/dev/null || true
# shellcheck disable=SC2086
while [ "$(pids_alive $a_children)" != 0 ] && [ $(( $(now_ms) - t0 )) -lt 5000 ]; do sleep 0.005; done
children_ms=$(( $(now_ms) - t0 ))
# A's session-bound claims end with its backend; B (polling every 200 ms)
# claims them again: when, by the server's clock.
wait_sql "(SELECT count(*) FROM t.starts WHERE agent = 'B') = 4" 30 || true
b_claim_ms=$(sql "SELECT round(extract(epoch FROM max(claimed_at)) * 1000 - $t0) FROM coord.jobs WHERE id IN ($ids)")
open_gate
wait_sql "(SELECT count(*) FROM coord.jobs WHERE id IN ($ids) AND state = 'done') = 4" 30 || true

check "A's children died with it, within ${children_ms} ms (< 2000; their jobs wait for the gate)" between "$children_ms" 0 1999
check "A's backend is gone" eq "$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'A'")" 0
check "B claimed all 4 jobs again ${b_claim_ms} ms after the kill (< 2000: claimable at once, no lease to wait out; B polls every 200 ms)" \
  between "${b_claim_ms:--1}" 0 1999
check "all 4 jobs done, each exactly once in the history" \
  eq "$(sql "SELECT count(*) || '/' || count(DISTINCT id) FROM coord.jobs WHERE id IN ($ids) AND state = 'done'")" "4/4"
check "results: one per job, all from B, all with a valid claim" \
  eq "$(sql "SELECT count(*) || '/' || count(DISTINCT job_id) || '/' || count(*) FILTER (WHERE agent = 'B' AND claim_valid) FROM t.results")" "4/4/4"
check "no child of A got to the end of its job" eq "$(sql "SELECT count(*) FROM t.results WHERE agent = 'A'")" 0
check "each result's token is the job's final token" \
  eq "$(sql "SELECT count(*) FROM t.results r JOIN coord.jobs j ON j.id = r.job_id AND j.token = r.token")" 4
check "the second claims were attempt 2" eq "$(sql "SELECT string_agg(DISTINCT attempt::text, ',') FROM t.starts WHERE agent = 'B'")" 2

finish "sigkill: agent SIGKILLed with 4 jobs running: its children gone in ${children_ms} ms, all 4 claimed by a second agent ${b_claim_ms} ms after the kill and done exactly once; $CHECKS checks passed"
