#!/usr/bin/env bash
# coord-agent runs jobs and completes them.  One agent (concurrency 3, poll
# 5 s) on queues work, plain and apps:
#   - 10 jobs {"task": "record"}: each child sees COORD_JOB_ID, COORD_TOKEN,
#     COORD_QUEUE, COORD_ATTEMPT, COORD_TASK, COORD_PAYLOAD = its stdin, and
#     the configured argv; the last stdout line (JSON) becomes the result;
#   - an app run {"app": "record", "period_start": ..., ...}: COORD_APP and
#     COORD_PERIOD_START/END;
#   - a job with no task in queue "plain": the queue's name is the task; its
#     last line is not JSON, so its result is NULL;
#   - {"task": "boom"} (exit 3, max_attempts 1): dead, the stderr tail in
#     last_error;
#   - a job for this host runs, one for another host is left alone;
#   - a job enqueued while the agent is idle starts well within a second,
#     although the agent polls only every 5 s: LISTEN/NOTIFY woke it;
#   - coord-agent status, --help.
set -euo pipefail
export COORD_PGPORT=54341
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

sql "CREATE TABLE t.seen (job_id bigint, env jsonb, stdin text, args text)" >/dev/null
cat >"$W/record.sh" <<'EOF'
#!/bin/bash
# Records what the agent handed over: environment, stdin, argv.
stdin=$(cat)
psql -qAtX -v ON_ERROR_STOP=1 -v id="$COORD_JOB_ID" -v stdin="$stdin" -v args="$1|$2|$#" \
     -v e_id="$COORD_JOB_ID" -v e_tok="$COORD_TOKEN" -v e_q="$COORD_QUEUE" -v e_att="$COORD_ATTEMPT" \
     -v e_task="$COORD_TASK" -v e_host="$COORD_HOST" -v e_pl="$COORD_PAYLOAD" \
     -v e_app="${COORD_APP-<unset>}" -v e_ps="${COORD_PERIOD_START-<unset>}" \
     -v e_pe="${COORD_PERIOD_END-<unset>}" -v e_extra="${EXTRA-<unset>}" <<'SQL'
INSERT INTO t.seen VALUES (:id, jsonb_build_object(
  'COORD_JOB_ID', :'e_id', 'COORD_TOKEN', :'e_tok', 'COORD_QUEUE', :'e_q', 'COORD_ATTEMPT', :'e_att',
  'COORD_TASK', :'e_task', 'COORD_HOST', :'e_host', 'COORD_PAYLOAD', :'e_pl', 'COORD_APP', :'e_app',
  'COORD_PERIOD_START', :'e_ps', 'COORD_PERIOD_END', :'e_pe', 'EXTRA', :'e_extra'), :'stdin', :'args');
SQL
echo "a line that is not the result"
echo "{\"echo\": $COORD_JOB_ID}"
EOF
cat >"$W/plain.sh" <<'EOF'
#!/bin/bash
echo '{"not": "the last line"}'
echo "all done, no JSON here"
EOF
cat >"$W/boom.sh" <<'EOF'
#!/bin/bash
echo "some early noise" >&2
echo "boom: the disk is on fire" >&2
exit 3
EOF
chmod +x "$W"/*.sh
cat >"$W/agent.conf" <<EOF
# the test tasks reach the database with the agent's PG* variables
pass_env = PG*
# basic.sh
queues = work, plain, apps
host = testhost
concurrency = 3
poll = 5s

[task record]
command = $W/record.sh "an arg" 'two words'
env = EXTRA=from the config
timeout = 30s

[task plain]
command = $W/plain.sh

[task boom]
command = $W/boom.sh
EOF

sql "SELECT count(coord.enqueue('work', jsonb_build_object('task', 'record', 'n', g))) FROM generate_series(1, 10) g" >/dev/null
app_id=$(sql "SELECT coord.enqueue('apps', '{\"app\": \"record\", \"period_start\": \"2026-11-28T00:00:00Z\", \"period_end\": \"2026-11-29T00:00:00Z\", \"conf\": {\"k\": 1}, \"upstream\": {}}')")
plain_id=$(sql "SELECT coord.enqueue('plain', '{}')")
boom_id=$(sql "SELECT coord.enqueue('work', '{\"task\": \"boom\"}', max_attempts => 1)")
mine_id=$(sql "SELECT coord.enqueue('work', '{\"task\": \"record\", \"n\": 11}', host => 'testhost')")
other_id=$(sql "SELECT coord.enqueue('work', '{\"task\": \"record\", \"n\": 12}', host => 'otherhost')")

t0=$(now_ms)
start_agent basic "$W/agent.conf"
wait_sql "(SELECT count(*) FROM coord.jobs WHERE state IN ('done', 'dead')) = 14" 60 || true
batch_ms=$(( $(now_ms) - t0 ))

echo "== jobs run, complete, see their job"
check "13 jobs done, 1 dead" eq "$(sql "SELECT string_agg(state || ':' || n, ' ' ORDER BY state) FROM (SELECT state, count(*) n FROM coord.jobs WHERE id <> $other_id GROUP BY state) s")" "dead:1 done:13"
check "every record job saw its own id, token, queue, attempt, task and host" \
  eq "$(sql "SELECT count(*) FROM t.seen s JOIN coord.jobs j ON j.id = s.job_id
             WHERE s.env->>'COORD_JOB_ID' = j.id::text AND s.env->>'COORD_TOKEN' = j.token::text
               AND s.env->>'COORD_QUEUE' = j.queue AND s.env->>'COORD_ATTEMPT' = '1'
               AND s.env->>'COORD_TASK' = 'record' AND s.env->>'COORD_HOST' = 'testhost'")" 12
check "stdin and COORD_PAYLOAD both carry the payload JSON" \
  eq "$(sql "SELECT count(*) FROM t.seen s JOIN coord.jobs j ON j.id = s.job_id
             WHERE s.stdin::jsonb = j.payload AND (s.env->>'COORD_PAYLOAD')::jsonb = j.payload")" 12
check "argv from the config: quotes kept words together" eq "$(sql "SELECT DISTINCT args FROM t.seen")" "an arg|two words|2"
check "env lines of the task reach the child" eq "$(sql "SELECT DISTINCT env->>'EXTRA' FROM t.seen")" "from the config"
check "the last stdout line is the result" \
  eq "$(sql "SELECT count(*) FROM coord.jobs WHERE state = 'done' AND result = jsonb_build_object('echo', id)")" 12
check "app run: COORD_APP, COORD_PERIOD_START, COORD_PERIOD_END" \
  eq "$(sql "SELECT env->>'COORD_APP' || ' ' || (env->>'COORD_PERIOD_START') || ' ' || (env->>'COORD_PERIOD_END') FROM t.seen WHERE job_id = $app_id")" \
     "record 2026-11-28T00:00:00Z 2026-11-29T00:00:00Z"
check "non-app jobs get no COORD_APP" eq "$(sql "SELECT count(*) FROM t.seen WHERE env->>'COORD_APP' <> '<unset>'")" 1
check "no task field: the queue name (plain) is the task; non-JSON last line: result NULL" \
  eq "$(sql "SELECT state || ' ' || COALESCE(result::text, 'NULL') FROM coord.jobs WHERE id = $plain_id")" "done NULL"
check "exit 3 with max_attempts 1: dead, stderr tail in last_error" \
  eq "$(sql "SELECT state || ' | ' || last_error FROM coord.jobs WHERE id = $boom_id")" \
     "dead | exit status 3: some early noise
boom: the disk is on fire"
check "a job for this host ran; one for another host is still ready" \
  eq "$(sql "SELECT string_agg(state, ' ' ORDER BY id) FROM coord.jobs WHERE id IN ($mine_id, $other_id)")" "done ready"
check "one start and one end log line per job run (14 runs)" \
  eq "$(grep -c ' start task=' "$W/basic.log") $(grep -c ' end task=' "$W/basic.log")" "14 14"

echo "== an idle agent is woken by NOTIFY, not by its 5 s poll"
sleep 0.3
late_id=$(sql "SELECT coord.enqueue('work', '{\"task\": \"record\", \"n\": 13}')")
wait_sql "coord.job_state($late_id) = 'done'" 30 || true
# server-side: from the enqueue's commit time to the claim
wake_ms=$(sql "SELECT round(extract(epoch FROM claimed_at - enqueued_at) * 1000) FROM coord.jobs WHERE id = $late_id")
check "enqueued while idle: claimed after ${wake_ms} ms (< 1000, the poll is 5 s)" between "${wake_ms:--1}" 0 999

echo "== status and help"
status_out=$("$AGENT_BIN" -d dbname=agent_test status 2>&1) && status_rc=0 || status_rc=$?
check "status exits 0" eq "$status_rc" 0
check "status lists the queues" grep -qE '^  work +1 +0 +0 +1 +12( |$)' <<<"$status_out"
check "status shows the running-jobs and locks sections" grep -q '^Locks' <<<"$status_out"
check "status through a pipe is plain text (no ANSI escapes)" eq "$(grep -c $'\033' <<<"$status_out" || true)" 0
help_ok() { "$AGENT_BIN" --help | grep -q '^Usage:'; }
check "--help exits 0 and shows the usage" help_ok
if [ "$(sql "SELECT to_regprocedure('coord.grid(timestamptz,timestamptz,text[])') IS NULL")" = t ]; then
  check "without coord.grid(), status has no apps section" eq "$(grep -c '^Apps' <<<"$status_out" || true)" 0
  # a stand-in until apps land: status must print each row as a line
  sql "CREATE FUNCTION coord.grid(timestamptz, timestamptz, text[]) RETURNS SETOF text
       LANGUAGE sql AS \$\$ VALUES ('app      10 11 12'), ('nightly  ok ok ..') \$\$" >/dev/null
  grid_out=$("$AGENT_BIN" -d dbname=agent_test status 2>&1 || true)
  check "with coord.grid(), status prints its rows under Apps" \
    eq "$(sed -n '/^Apps/,$p' <<<"$grid_out")" "Apps (last day)
  app      10 11 12
  nightly  ok ok .."
else
  check "with pg_coord's coord.grid(), status prints an Apps section" grep -q '^Apps (last day)$' <<<"$status_out"
fi
tty_status() { script -qec "$AGENT_BIN -d dbname=agent_test status $1" /dev/null; }
check "on a terminal, status is in colour" grep -q $'\033\[1m' < <(tty_status "")
check "on a terminal with --no-color, plain text" eq "$(tty_status --no-color | grep -c $'\033' || true)" 0

finish "basic: 15 jobs run from environment and stdin ($batch_ms ms for the first 14), results from stdout, app and queue-name tasks, dead after exit 3, host targeting, NOTIFY wake-up in $wake_ms ms with a 5 s poll; $CHECKS checks passed"
