#!/usr/bin/env bash
# Snoozes are bounded (issue 17): a task that always exits 75 (EX_TEMPFAIL,
# "429, try again in 300 ms") uses up no attempt, but each such retry is a
# snooze, and the job dies once it is past its limit.  Two jobs, both with
# max_attempts 1 (a retry that used an attempt would kill them at once):
#   - one enqueued with max_snoozes => 3: it must run exactly 4 times, see
#     COORD_SNOOZES=0,1,2,3 and COORD_ATTEMPT=1 each time, and be dead after
#     the 4th exit 75;
#   - one with the default max_snoozes and expires_at => 2 s from now: it runs
#     every 300 ms until then; no run starts after its deadline, and it is
#     dead by then, at the latest 1 s after it (a fail whose retry would come
#     after expires_at kills the job at once, up to one retry_after before).
# Measured: the runs, what each saw, the final states and snooze counts, and
# when the second job died relative to its expires_at.
set -euo pipefail
export COORD_PGPORT=54361
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

sql "CREATE TABLE t.runs (job_id bigint, attempt int, snoozes text, at timestamptz DEFAULT clock_timestamp())" >/dev/null
cat >"$W/always_429.sh" <<'EOF2'
#!/bin/bash
# Every run: a temporary failure, try again in 300 ms.
psql -qAtX -v ON_ERROR_STOP=1 -v id="$COORD_JOB_ID" -v att="$COORD_ATTEMPT" -v sn="${COORD_SNOOZES-unset}" <<'SQL'
INSERT INTO t.runs (job_id, attempt, snoozes) VALUES (:id, :att, :'sn');
SQL
echo "upstream said 429" >&2
echo "retry_after=300ms"
exit 75
EOF2
chmod +x "$W/always_429.sh"
cat >"$W/agent.conf" <<EOF2
pass_env = PG*
queues = snooze
concurrency = 2
poll = 100ms

[task always_429]
command = $W/always_429.sh
EOF2

a=$(sql "SELECT coord.enqueue('snooze', '{\"task\": \"always_429\"}', max_attempts => 1, max_snoozes => 3)")
b=$(sql "SELECT coord.enqueue('snooze', '{\"task\": \"always_429\"}', max_attempts => 1,
                              expires_at => clock_timestamp() + interval '2 seconds')")
start_agent snooze "$W/agent.conf"
wait_sql "coord.job_state($a) = 'dead' AND coord.job_state($b) = 'dead'" 30 || true

runs_a=$(sql "SELECT count(*) FROM t.runs WHERE job_id = $a")
seen_a=$(sql "SELECT string_agg(attempt || '/' || snoozes, ' ' ORDER BY at) FROM t.runs WHERE job_id = $a")
runs_b=$(sql "SELECT count(*) FROM t.runs WHERE job_id = $b")
seen_b=$(sql "SELECT string_agg(snoozes, ' ' ORDER BY at) FROM t.runs WHERE job_id = $b")
# the last run of b and its death, relative to expires_at (seconds; negative: before it)
last_b=$(sql "SELECT round(extract(epoch FROM max(r.at) - j.expires_at)::numeric, 2)
                FROM t.runs AS r, coord.jobs AS j WHERE r.job_id = $b AND j.id = $b GROUP BY j.expires_at")
died_b=$(sql "SELECT round(extract(epoch FROM j.finished_at - j.expires_at)::numeric, 2) FROM coord.jobs AS j WHERE j.id = $b")
states=$(sql "SELECT string_agg(state || ' ' || snoozes || ' ' || attempt, ', ' ORDER BY id) FROM coord.jobs WHERE id IN ($a, $b)")
echo "  max_snoozes 3: $runs_a runs, attempt/COORD_SNOOZES seen: $seen_a"
echo "  expires_at in 2 s: $runs_b runs, COORD_SNOOZES seen: $seen_b; last run ${last_b}s and death ${died_b}s from expires_at"
echo "  coord.jobs state, snoozes, attempt: $states"

check "max_snoozes => 3: dead after exactly 4 runs" eq "$runs_a $(sql "SELECT coord.job_state($a)")" "4 dead"
check "each run saw COORD_ATTEMPT=1 and COORD_SNOOZES counting up 0..3" eq "$seen_a" "1/0 1/1 1/2 1/3"
check "coord.jobs shows the snoozes and that no attempt was used" \
  eq "$(sql "SELECT snoozes || ' ' || attempt FROM coord.jobs WHERE id = $a")" "3 1"
check "the agent logged three retries that left it scheduled, then one that left it dead" \
  eq "$(grep "job $a end" "$W/snooze.log" | grep -o 'outcome=retry exit=75 retry_after=300ms state=[a-z]*' | sed 's/.*state=//' | tr '\n' ' ')" \
     "scheduled scheduled scheduled dead "
check "expires_at: dead" eq "$(sql "SELECT coord.job_state($b)")" dead
check "expires_at: it ran more than once, COORD_SNOOZES counting up from 0" \
  eq "$(awk -v s="$seen_b" 'BEGIN { n = split(s, a, " "); for (i = 1; i <= n; i++) if (a[i] != i - 1) { print "bad"; exit } print (n >= 2 ? "ok" : "few") }')" ok
# t.runs.at is the child's insert, some ms after the claim (fork, exec, psql): 0.5 s of slack
check "expires_at: no run claimed after it (last run started ${last_b}s from it)" between "${last_b:-99}" -2 0.5
check "expires_at: dead at most one retry_after (300 ms) before it and 1 s after it (${died_b}s)" between "${died_b:-99}" -0.5 1.0

finish "snoozes: an always-429 task died after 4 runs with max_snoozes 3 (COORD_SNOOZES $seen_a), and ${died_b}s from its expires_at ($runs_b runs); no attempt used; $CHECKS checks passed"
