#!/usr/bin/env bash
# Exit 75 (EX_TEMPFAIL) is retried after a delay without using up an
# attempt.  Two jobs, each with max_attempts 1 (a failure that used an
# attempt would make them dead at once):
#   - task "child_says": first run prints "retry_after=2" and exits 75;
#   - task "config_says": first run exits 75 saying nothing; the task's
#     config has retry_after = 1s.
#   - task "child_says_long": first run prints "retry_after=2h", past the
#     database's coord.max_retry_after of 3s: the agent asks for 3s (the
#     server refuses a longer one, 22023, which the agent would retry for ever).
# Each second run completes.  Measured: the gap between the two runs of each
# job (at least the delay, and not much more than delay + poll), the attempt
# both runs saw (1 and 1), COORD_SNOOZES (0, then 1: a snooze counted), and
# the final state (done).
set -euo pipefail
export COORD_PGPORT=54342
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

sql "CREATE TABLE t.runs (job_id bigint, attempt int, snoozes int, at timestamptz DEFAULT clock_timestamp())" >/dev/null
cat >"$W/flaky.sh" <<'EOF'
#!/bin/bash
# First run of a job: temporary failure (exit 75); later runs: success.
runs=$(psql -qAtX -v ON_ERROR_STOP=1 -v id="$COORD_JOB_ID" -v att="$COORD_ATTEMPT" -v sn="$COORD_SNOOZES" <<'SQL'
INSERT INTO t.runs (job_id, attempt, snoozes) VALUES (:id, :att, :sn);
SELECT count(*) FROM t.runs WHERE job_id = :id;
SQL
)
if [ "$runs" = 1 ]; then
  echo "upstream said 429" >&2
  [ -n "${SAY:-}" ] && echo "$SAY"
  exit 75
fi
echo "{\"runs\": $runs}"
EOF
chmod +x "$W/flaky.sh"
cat >"$W/agent.conf" <<EOF
# the test tasks reach the database with the agent's PG* variables
pass_env = PG*
queues = retry
concurrency = 2
poll = 200ms

[task child_says]
command = $W/flaky.sh
env = SAY=retry_after=2

[task child_says_long]
command = $W/flaky.sh
env = SAY=retry_after=2h

[task config_says]
command = $W/flaky.sh
retry_after = 1s
EOF

a=$(sql "SELECT coord.enqueue('retry', '{\"task\": \"child_says\"}', max_attempts => 1)")
b=$(sql "SELECT coord.enqueue('retry', '{\"task\": \"config_says\"}', max_attempts => 1)")
c=$(sql "SELECT coord.enqueue('retry', '{\"task\": \"child_says_long\"}', max_attempts => 1)")
sql "ALTER DATABASE agent_test SET coord.max_retry_after = '3s'" >/dev/null
start_agent retry "$W/agent.conf"
wait_sql "coord.job_state($a) = 'done' AND coord.job_state($b) = 'done' AND coord.job_state($c) = 'done'" 30 || true

gap() { sql "SELECT round(extract(epoch FROM max(at) - min(at))::numeric, 2) FROM t.runs WHERE job_id = $1"; }
gap_a=$(gap "$a")
gap_b=$(gap "$b")
gap_c=$(gap "$c")
check "both jobs done although max_attempts is 1" eq "$(sql "SELECT coord.job_state($a) || ' ' || coord.job_state($b)")" "done done"
check "two runs each, both with COORD_ATTEMPT=1" \
  eq "$(sql "SELECT string_agg(job_id || ':' || attempt, ' ' ORDER BY job_id, at) FROM t.runs WHERE job_id IN ($a, $b)")" "$a:1 $a:1 $b:1 $b:1"
check "COORD_SNOOZES: 0 on the first run, 1 after the snooze" \
  eq "$(sql "SELECT string_agg(job_id || ':' || snoozes, ' ' ORDER BY job_id, at) FROM t.runs WHERE job_id IN ($a, $b)")" "$a:0 $a:1 $b:0 $b:1"
check "coord.jobs counts one snooze each" eq "$(sql "SELECT string_agg(snoozes::text, ' ' ORDER BY id) FROM coord.jobs WHERE id IN ($a, $b)")" "1 1"
check "the history says attempt 1" eq "$(sql "SELECT string_agg(attempt::text, ' ' ORDER BY id) FROM coord.jobs WHERE id IN ($a, $b)")" "1 1"
check "retry_after=2 from the child: second run ${gap_a}s later (2.0 .. 4.0)" between "$gap_a" 2.0 4.0
check "retry_after = 1s from the config: second run ${gap_b}s later (1.0 .. 3.0)" between "$gap_b" 1.0 3.0
check "retry_after=2h from the child, past coord.max_retry_after 3s: done after two runs" \
  eq "$(sql "SELECT coord.job_state($c) || ' ' || count(*) FROM t.runs WHERE job_id = $c")" "done 2"
check "second run ${gap_c}s later (3.0 .. 6.0: the cap, not 2h)" between "${gap_c:-0}" 3.0 6.0
check "the agent logged outcome=retry with each delay" \
  eq "$(grep -o 'outcome=retry exit=75 retry_after=[0-9.]*s' "$W/retry.log" | sort | tr '\n' ' ')" \
     "outcome=retry exit=75 retry_after=1.0s outcome=retry exit=75 retry_after=2.0s "
check "the temporary failure was recorded with the child's stderr" \
  eq "$(sql "SELECT count(*) FROM coord.jobs WHERE id IN ($a, $b) AND last_error LIKE 'temporary failure (exit 75)%upstream said 429'")" 2

finish "retry: exit 75 retried after ${gap_a}s (child's retry_after=2) and ${gap_b}s (config's 1s), no attempt used (max_attempts 1, both done at attempt 1); $CHECKS checks passed"
