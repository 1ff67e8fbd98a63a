#!/usr/bin/env bash
# pg_terminate_backend on the agent's connection, twice, while children run.
# One agent (concurrency 4, session-bound claims) and 4 gated jobs (they wait
# until the test lets them finish).  Once the 4 have started, the agent's
# backend is terminated; again once it has started them anew after
# reconnecting; then the gate opens.  Each time:
#   - the agent kills the running children at once (their claims died with
#     the session, so another claimer could already be running those jobs),
#     measured from the terminate (server clock) to the last one gone;
#   - it reconnects (measured: from the terminate to the new backend) and
#     claims the jobs again.
# Accounting, honestly: every child records its start (t.starts) and, if it
# gets to the end of its job, its end (t.results) together with whether its
# claim was still valid at that moment.  Passes when every job is done
# exactly once in coord's history, every job has exactly one end, every end
# had a valid claim and carries the job's final token, and the 8 runs that
# were cut off never reached their end.  (A terminate in the moment between
# a child's last write and the agent's coord.complete would make a job run
# twice: at-least-once is the contract.  The gate keeps this test away from
# that moment, on a fast machine or a slow one.)
set -euo pipefail
export COORD_PGPORT=54345
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

cat >"$W/agent.conf" <<EOF
# the test tasks reach the database with the agent's PG* variables
pass_env = PG*
queues = work
concurrency = 4
poll = 200ms

[task slow]
command = $W/child.sh
env = GATE=$W/gate
env = AGENT=T
EOF

ids=$(sql "SELECT string_agg(coord.enqueue('work', '{\"task\": \"slow\"}')::text, ',') FROM generate_series(1, 4)")
start_agent T "$W/agent.conf"

reconnect_ms=()
killed_ms=()
for round in 1 2; do
  wait_sql "(SELECT count(*) FROM t.starts) = $((round * 4))" 30 || true
  victims=$(sql "SELECT string_agg(pid::text, ' ') FROM t.starts WHERE job_id IN (SELECT id FROM coord.jobs WHERE state = 'running')")
  read -r killed_at killed_ms_epoch < <(sql "
    SELECT replace(clock_timestamp()::text, ' ', 'T'), round(extract(epoch FROM clock_timestamp()) * 1000)
      FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'T') s" | tr '|' ' ')
  # shellcheck disable=SC2086
  while [ "$(pids_alive $victims)" != 0 ] && [ $(( $(now_ms) - killed_ms_epoch )) -lt 5000 ]; do sleep 0.005; done
  killed_ms+=("$(( $(now_ms) - killed_ms_epoch ))")
  wait_sql "EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'T' AND backend_start > '${killed_at/T/ }')" 30 || true
  reconnect_ms+=("$(sql "SELECT round(extract(epoch FROM backend_start - '${killed_at/T/ }') * 1000) FROM pg_stat_activity WHERE application_name = 'T'")")
done
wait_sql "(SELECT count(*) FROM t.starts) = 12" 30 || true
open_gate
wait_sql "(SELECT count(*) FROM coord.jobs WHERE id IN ($ids) AND state = 'done') = 4" 30 || true

check "the agent lost its connection twice and connected three times" \
  eq "$(grep -c 'lost the database connection' "$W/T.log") $(grep -c 'connected to database' "$W/T.log")" "2 3"
check "the 4 running children were killed each time, within ${killed_ms[0]} and ${killed_ms[1]} ms (< 2000)" \
  between "$(( killed_ms[0] > killed_ms[1] ? killed_ms[0] : killed_ms[1] ))" 0 1999
check "reconnected ${reconnect_ms[0]} and ${reconnect_ms[1]} ms after each terminate (< 2000)" \
  between "$(( reconnect_ms[0] > reconnect_ms[1] ? reconnect_ms[0] : reconnect_ms[1] ))" 0 1999
check "the agent logged the killed runs as lost" eq "$(grep -c 'outcome=lost' "$W/T.log")" 8
check "history: all 4 jobs done, each exactly once" \
  eq "$(sql "SELECT count(*) || '/' || count(DISTINCT id) FROM coord.jobs WHERE id IN ($ids) AND state = 'done'")" "4/4"
check "12 runs started: 4 + the 8 cut off" eq "$(sql "SELECT count(*) FROM t.starts")" 12
check "ends: exactly one per job (no job done twice)" \
  eq "$(sql "SELECT count(*) || '/' || count(DISTINCT job_id) FROM t.results")" "4/4"
check "every end happened while its claim was valid" eq "$(sql "SELECT count(*) FROM t.results WHERE NOT claim_valid")" 0
check "every end carries the job's final token (the claim that completed it)" \
  eq "$(sql "SELECT count(*) FROM t.results r JOIN coord.jobs j ON j.id = r.job_id AND j.token = r.token AND j.state = 'done'")" 4
check "none of the 8 cut-off runs reached its end" \
  eq "$(sql "SELECT count(*) FROM t.starts s WHERE NOT EXISTS (SELECT FROM t.results r WHERE r.job_id = s.job_id AND r.token = s.token)")" 8
check "attempts used add up to the runs (each cut-off run cost its job an attempt)" \
  eq "$(sql "SELECT sum(attempt) FROM coord.jobs WHERE id IN ($ids)")" 12

finish "terminate: backend terminated twice under 4 running jobs: children killed in ${killed_ms[0]}/${killed_ms[1]} ms, reconnected in ${reconnect_ms[0]}/${reconnect_ms[1]} ms; 12 runs, 8 cut off, 4 jobs done exactly once (history and child accounting agree, every end under a valid claim); $CHECKS checks passed"
