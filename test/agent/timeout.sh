#!/usr/bin/env bash
# A child that hangs is killed at its task timeout, with its whole process
# group.  Two jobs (max_attempts 1, so a timeout makes them dead):
#   - task "hang" (timeout 1s): a shell waiting on a 30 s sleep; SIGTERM to
#     the group at 1 s ends both;
#   - task "stubborn" (timeout 1s, kill_after 1s): ignores SIGTERM (so do the
#     sleeps it starts); SIGKILL 1 s later ends it.
# Measured: each job's duration in the agent's log (about 1 s and 2 s), its
# state and error, and that no process of either group is left.
set -euo pipefail
export COORD_PGPORT=54343
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

cat >"$W/stubborn.sh" <<'EOF'
#!/bin/bash
trap '' TERM
psql -qAtX -v ON_ERROR_STOP=1 -v id="$COORD_JOB_ID" -v pid=$$ \
  <<<"INSERT INTO t.starts (job_id, pid) VALUES (:id, :pid);"
echo "ignoring SIGTERM" >&2
while :; do
  sleep 0.1
  echo $! >>"$PIDFILE"
done
EOF
chmod +x "$W/stubborn.sh"
cat >"$W/agent.conf" <<EOF
# the test tasks reach the database with the agent's PG* variables
pass_env = PG*
queues = slow
concurrency = 2
poll = 200ms
kill_after = 1s

[task hang]
command = $W/child.sh
env = SLEEP=30
timeout = 1s

[task stubborn]
command = $W/stubborn.sh
env = PIDFILE=$W/stubborn.pids
timeout = 1s
EOF

hang=$(sql "SELECT coord.enqueue('slow', '{\"task\": \"hang\"}', max_attempts => 1)")
stub=$(sql "SELECT coord.enqueue('slow', '{\"task\": \"stubborn\"}', max_attempts => 1)")
start_agent timeout "$W/agent.conf" --verbose
wait_sql "coord.job_state($hang) = 'dead' AND coord.job_state($stub) = 'dead'" 30 || true
sleep 0.2

d_hang=$(end_duration timeout "$hang")
d_stub=$(end_duration timeout "$stub")
pids=$(sql "SELECT string_agg(pid || ' ' || COALESCE(sleep_pid, 0), ' ') FROM t.starts")
# shellcheck disable=SC2086,SC2046
alive=$(pids_alive $pids $(cat "$W/stubborn.pids" 2>/dev/null))
check "both jobs dead after one timed-out attempt" eq "$(sql "SELECT coord.job_state($hang) || ' ' || coord.job_state($stub)")" "dead dead"
check "hang: SIGTERM at the timeout, after ${d_hang}s (1.0 .. 1.8)" between "${d_hang:-0}" 1.0 1.8
check "stubborn: SIGKILL kill_after later, after ${d_stub}s (2.0 .. 2.8)" between "${d_stub:-0}" 2.0 2.8
check "the agent logged SIGTERM and SIGKILL" \
  eq "$(grep -c 'timeout (1000 ms): SIGTERM' "$W/timeout.log") $(grep -c 'after SIGTERM: SIGKILL' "$W/timeout.log")" "2 1"
check "last_error says it timed out (with the stderr tail)" \
  eq "$(sql "SELECT count(*) FROM coord.jobs WHERE id IN ($hang, $stub) AND last_error LIKE 'timed out after %(task timeout 1.0s)%'")" 2
check "stubborn's stderr tail is in its error" \
  eq "$(sql "SELECT last_error LIKE '%ignoring SIGTERM' FROM coord.jobs WHERE id = $stub")" t
check "no process of either group is left (children and their sleeps)" eq "$alive" 0
check "the outcome in the log is timeout" eq "$(grep -c 'outcome=timeout state=dead' "$W/timeout.log")" 2

finish "timeout: a hanging job killed by SIGTERM after ${d_hang}s (timeout 1s), one ignoring SIGTERM killed by SIGKILL after ${d_stub}s (kill_after 1s), $alive processes left; $CHECKS checks passed"
