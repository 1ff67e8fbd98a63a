#!/usr/bin/env bash
# SIGTERM drains.
#   1. An agent (concurrency 2, grace 30s) runs 2 gated jobs (they finish
#      when the test lets them); 3 more jobs wait in the queue.  SIGTERM: it
#      claims nothing more and keeps running; when the gate opens, it lets
#      both jobs finish, completes them and exits 0 -- measured: its exit
#      time after the gate opened.  The 3 waiting jobs were never claimed.
#   2. An agent with grace 1s runs a 30 s job.  SIGTERM: after the grace
#      period it stops the job's process group, hands the job back at once
#      (coord.fail with retry_after 0: ready again, no attempt used) and
#      exits -- measured: its exit time, about 1 s.
set -euo pipefail
export COORD_PGPORT=54346
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

cat >"$W/agent.conf" <<EOF
# the test tasks reach the database with the agent's PG* variables
pass_env = PG*
concurrency = 2
poll = 200ms
kill_after = 1s

[task slow]
command = $W/child.sh
env = GATE=$W/gate

[task long]
command = $W/child.sh
env = SLEEP=30
EOF

echo "== 1. SIGTERM with 2 running jobs and 3 waiting: finish the 2, claim nothing more"
running=$(sql "SELECT string_agg(coord.enqueue('q1', '{\"task\": \"slow\"}')::text, ',') FROM generate_series(1, 2)")
start_agent D1 "$W/agent.conf" -q q1 --grace 30s
wait_sql "(SELECT count(*) FROM t.starts) = 2" 30 || true
waiting=$(sql "SELECT string_agg(coord.enqueue('q1', '{\"task\": \"slow\"}')::text, ',') FROM generate_series(1, 3)")
kill -TERM "${AGENT_PID[D1]}"
wait_log D1 'SIGTERM: no more claims' 30 || true
sleep 0.5
alive=no; kill -0 "${AGENT_PID[D1]}" 2>/dev/null && alive=yes
check "0.5 s after SIGTERM the agent is still waiting for its 2 jobs" eq "$alive" yes
t0=$(now_ms)
open_gate
rc=0; wait "${AGENT_PID[D1]}" || rc=$?
exit1_ms=$(( $(now_ms) - t0 ))
check "the agent exited 0" eq "$rc" 0
check "it exited ${exit1_ms} ms after its jobs could finish (< 10000)" between "$exit1_ms" 0 9999
check "both running jobs done" eq "$(sql "SELECT string_agg(state, ' ') FROM coord.jobs WHERE id IN ($running)")" "done done"
check "the 3 waiting jobs were never claimed (ready, attempt 0)" \
  eq "$(sql "SELECT count(*) FROM coord.jobs WHERE id IN ($waiting) AND state = 'ready' AND attempt = 0")" 3
check "the log says it stopped claiming" grep -q 'SIGTERM: no more claims; waiting up to 30.0s for 2 running job(s)' "$W/D1.log"

echo "== 2. SIGTERM with a 30 s job and grace 1s: stop it, hand it back, exit"
long=$(sql "SELECT coord.enqueue('q2', '{\"task\": \"long\"}')")
start_agent D2 "$W/agent.conf" -q q2 --grace 1s
wait_sql "(SELECT count(*) FROM t.starts WHERE job_id = $long) = 1" 30 || true
pids=$(sql "SELECT pid || ' ' || sleep_pid FROM t.starts WHERE job_id = $long")
t0=$(now_ms)
kill -TERM "${AGENT_PID[D2]}"
rc=0; wait "${AGENT_PID[D2]}" || rc=$?
exit2_ms=$(( $(now_ms) - t0 ))
check "the agent exited 0" eq "$rc" 0
check "it exited ${exit2_ms} ms after SIGTERM (grace 1s; 1000 .. 3000)" between "$exit2_ms" 1000 2999
# shellcheck disable=SC2086
check "the job's process group is gone (shell and its sleep)" eq "$(pids_alive $pids)" 0
check "the job is ready again at once, with no attempt used" \
  eq "$(sql "SELECT state || ' ' || attempt || ' ' || coord.job_claimed(id) FROM coord.jobs WHERE id = $long")" "ready 0 false"
check "its last_error says why" \
  eq "$(sql "SELECT last_error LIKE 'coord-agent on host % shut down before the job finished%' FROM coord.jobs WHERE id = $long")" t
check "the log says outcome=shutdown" grep -q "job $long end task=long .*outcome=shutdown state=scheduled" "$W/D2.log"

finish "drain: SIGTERM with 2 running and 3 waiting jobs: waited, exited 0 ${exit1_ms} ms after the jobs could finish, both done and none claimed; with grace 1s and a 30 s job: exited after ${exit2_ms} ms, the job handed back ready at attempt 0; $CHECKS checks passed"
