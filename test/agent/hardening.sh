#!/usr/bin/env bash
# What the agent trusts and what it hands on:
#   - a config file writable by group or others, or owned by another user,
#     is refused (check, run, and a SIGHUP keeps the old configuration);
#   - a password in the connection string is never printed: check shows
#     password=******** (and warns when the file holding it is readable by
#     others), and libpq's error quoting a bad URI is masked in the agent's
#     log and in status;
#   - children get no PG* variable of the agent's (PGPASSWORD, PGHOST, ...)
#     unless the task's pass_env names it;
#   - COORD_APP / COORD_PERIOD_* from a payload are capped: 200 KB values
#     are not set (on the old code the exec failed, E2BIG) and the job runs;
#   - control characters from the database (a task name with ESC and BEL)
#     are escaped in the log and in status;
#   - a claim result the agent cannot read (a row without a token, from a
#     wrapped coord.claim) makes it reconnect, which releases the
#     session-bound claim: the job is done once claims are readable again
#     (on the old code the job stayed claimed by the agent's session).
set -euo pipefail
export COORD_PGPORT=54349
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

cat >"$W/envdump.sh" <<'EOF'
#!/bin/bash
env >"$OUT/env.$COORD_JOB_ID"
echo '{"ok": true}'
EOF
chmod +x "$W/envdump.sh"
cat >"$W/agent.conf" <<EOF
queues = hq
concurrency = 2
poll = 200ms

[task envdump]
command = $W/envdump.sh
env = OUT=$W

[task envdump-pg]
command = $W/envdump.sh
env = OUT=$W
pass_env = PGPASSWORD

[task gated]
command = $W/child.sh
env = GATE=$W/gate
pass_env = PG*
EOF
chmod 600 "$W/agent.conf"

echo "== the config file's owner and mode"
rc=0; out=$("$AGENT_BIN" -f "$W/agent.conf" check 2>&1) || rc=$?
check "mode 0600, owned by us: accepted" eq "$rc" 0
chmod 620 "$W/agent.conf"
rc=0; out=$("$AGENT_BIN" -f "$W/agent.conf" check 2>&1) || rc=$?
check "group-writable: check refuses it" eq "$rc $(grep -c 'is writable by its group' <<<"$out")" "1 1"
chmod 602 "$W/agent.conf"
rc=0; out=$(timeout 10 "$AGENT_BIN" -f "$W/agent.conf" 2>&1) || rc=$?
check "world-writable: the agent does not start" eq "$rc $(grep -c 'is writable by others' <<<"$out")" "1 1"
chmod 600 "$W/agent.conf"
if [ "$(id -u)" -eq 0 ]; then
  chown nobody "$W/agent.conf"
  rc=0; out=$("$AGENT_BIN" -f "$W/agent.conf" check 2>&1) || rc=$?
  check "owned by another user: refused" eq "$rc $(grep -c 'is owned by uid' <<<"$out")" "1 1"
  chown root "$W/agent.conf"
else
  echo "  (not root: the owner check is not tried)"
fi

echo "== passwords"
out=$("$AGENT_BIN" -f "$W/agent.conf" -d "host=$PGHOST port=$PGPORT dbname=agent_test password='s3cr3t pw'" check 2>&1)
check "check masks a key=value password" \
  eq "$(grep -c 's3cr3t' <<<"$out") $(grep -c "password=\*\*\*\*\*\*\*\*" <<<"$out")" "0 1"
out=$("$AGENT_BIN" -f "$W/agent.conf" -d "postgresql://postgres:s3cr3tpw@/agent_test?host=$PGHOST" check 2>&1)
check "check masks a URI password" \
  eq "$(grep -c 's3cr3t' <<<"$out") $(grep -c 'postgres:\*\*\*\*\*\*\*\*@' <<<"$out")" "0 1"
{ echo "dbname = host=$PGHOST port=$PGPORT dbname=agent_test password=s3cr3tpw"; cat "$W/agent.conf"; } >"$W/pw.conf"
chmod 644 "$W/pw.conf"
out=$("$AGENT_BIN" -f "$W/pw.conf" check 2>&1)
check "check warns about a password in a file others can read, and masks it" \
  eq "$(grep -c 'has a password in dbname and is readable by others (mode 0644)' <<<"$out") $(grep -c 's3cr3t' <<<"$out")" "1 0"
bad_uri="postgresql://postgres:s3cr%zzpw@/agent_test"
start_agent badpw "$W/agent.conf" -d "$bad_uri"
wait_log badpw 'could not connect' 10 || true
kill "${AGENT_PID[badpw]}"; wait "${AGENT_PID[badpw]}" || true; unset 'AGENT_PID[badpw]'
check "the agent's log says why it cannot connect, without the password" \
  eq "$(grep -c 'invalid percent-encoded token' "$W/badpw.log") $(grep -c 's3cr' "$W/badpw.log")" "1 0"
out=$("$AGENT_BIN" -f "$W/agent.conf" -d "$bad_uri" status 2>&1 || true)
check "status too" eq "$(grep -c 'invalid percent-encoded token' <<<"$out") $(grep -c 's3cr' <<<"$out")" "1 0"

echo "== the environment of children"
plain=$(sql "SELECT coord.enqueue('hq', '{\"task\": \"envdump\"}')")
pg=$(sql "SELECT coord.enqueue('hq', '{\"task\": \"envdump-pg\"}')")
big=$(sql "SELECT coord.enqueue('hq', jsonb_build_object('task', 'envdump', 'app', repeat('a', 200000),
                                   'period_start', repeat('p', 200000), 'period_end', '2026-12-01T00:00:00Z'))")
PGPASSWORD=envs3cret PGCONNECT_TIMEOUT=10 start_agent H "$W/agent.conf" --verbose
wait_sql "coord.job_state($plain) = 'done' AND coord.job_state($pg) = 'done'" 20 || true
wait_sql "coord.job_state($big) <> 'ready' AND coord.job_state($big) <> 'running'" 20 || true
check "a task without pass_env sees no PG* variable (the agent has PGHOST, PGPASSWORD, ...)" \
  eq "$(grep -c '^PG' "$W/env.$plain" 2>/dev/null) $(grep -c '^COORD_JOB_ID=' "$W/env.$plain" 2>/dev/null)" "0 1"
check "pass_env = PGPASSWORD passes that one only" \
  eq "$(grep '^PG' "$W/env.$pg" 2>/dev/null | tr '\n' ' ')" "PGPASSWORD=envs3cret "
check "200 KB app and period_start: the job ran (done)" eq "$(sql "SELECT coord.job_state($big)")" done
check "... without COORD_APP and COORD_PERIOD_START, with COORD_PERIOD_END" \
  eq "$(grep -c '^COORD_APP=\|^COORD_PERIOD_START=' "$W/env.$big" 2>/dev/null) $(grep -c '^COORD_PERIOD_END=2026-12-01T00:00:00Z$' "$W/env.$big" 2>/dev/null)" "0 1"
check "the agent said why" wait_log H "job $big: COORD_APP not set: the payload's value is 200000 bytes" 1

echo "== control characters from the database"
evil=$(sql "SELECT coord.enqueue('hq', jsonb_build_object('task', 'evil' || chr(27) || ']0;pwned' || chr(7) || chr(27) || '[31mred'))")
wait_log H "job $evil rejected" 10 || true
check "the log has the task name escaped, no ESC or BEL" \
  eq "$(grep -cF "job $evil rejected task="'evil\x1b]0;pwned\x07\x1b[31mred' "$W/H.log") $(grep -c $'[\x1b\x07]' "$W/H.log")" "1 0"
# a running job with that task name, claimed by hand from a queue no agent serves
sql "SELECT coord.enqueue('manual', jsonb_build_object('task', 'evil' || chr(27) || '[2J'))" >/dev/null
sql "SELECT count(*) FROM coord.claim('manual')" >/dev/null
out=$("$AGENT_BIN" -f "$W/agent.conf" status --no-color 2>&1)
check "status shows it escaped, no ESC" \
  eq "$(grep -cF 'evil\x1b[2J' <<<"$out") $(grep -c $'\x1b' <<<"$out")" "1 0"

echo "== a claim result the agent cannot read"
kill -TERM "${AGENT_PID[H]}"; wait "${AGENT_PID[H]}" || true; unset 'AGENT_PID[H]'
psql -qX -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
ALTER FUNCTION coord.claim(text, integer, interval, text, boolean, integer, integer, text) RENAME TO claim_real;
-- the rows of queue bq lose their token
CREATE FUNCTION coord.claim(queue text, n integer DEFAULT 1, lease interval DEFAULT '5 minutes',
                            host text DEFAULT NULL, session_bound boolean DEFAULT false,
                            "partition" integer DEFAULT NULL, partitions integer DEFAULT NULL,
                            partition_group text DEFAULT NULL)
RETURNS SETOF coord.claimed_job LANGUAGE sql AS $$
  SELECT c.id, c.queue, c.payload, c.attempt, CASE WHEN c.queue = 'bq' THEN NULL ELSE c.token END,
         c.lease_until, c.key, c.group_key, c.host, c.run_at, c.trace
    FROM coord.claim_real(queue, n, lease, host, session_bound, "partition", partitions, partition_group) c
$$;
SQL
job=$(sql "SELECT coord.enqueue('bq', '{\"task\": \"gated\"}')")
open_gate
start_agent B "$W/agent.conf" -q bq --verbose
wait_log B "could not read\|cannot read" 10 || true
sleep 1.5
unreadable=$(grep -c 'returned what the agent cannot read (a row with a NULL' "$W/B.log" || true)
connects=$(grep -c 'connected to database' "$W/B.log" || true)
check "B logged the unreadable claim ($unreadable times) and reconnected ($connects connections)" \
  eq "$((unreadable >= 1)) $((connects >= 2))" "1 1"
check "nothing was started for it" eq "$(grep -c "job $job start" "$W/B.log") $(sql "SELECT count(*) FROM t.starts WHERE job_id = $job")" "0 0"
psql -qX -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
DROP FUNCTION coord.claim(text, integer, interval, text, boolean, integer, integer, text);
ALTER FUNCTION coord.claim_real(text, integer, interval, text, boolean, integer, integer, text) RENAME TO claim;
SQL
wait_sql "coord.job_state($job) = 'done'" 20 || true
check "once claims are readable the job is done (its claim was released)" eq "$(sql "SELECT coord.job_state($job)")" done

echo "== SIGHUP with a group-writable file keeps the old configuration"
chmod 660 "$W/agent.conf"
kill -HUP "${AGENT_PID[B]}"
check "refused on SIGHUP" wait_log B 'SIGHUP: keeping the old configuration: config file .* is writable by its group' 5
chmod 600 "$W/agent.conf"

finish "hardening: config files writable by others or owned by another user refused, passwords masked (check, log, status), no PG* variable without pass_env, 200 KB COORD_APP/COORD_PERIOD_START not set (job done), ESC/BEL escaped in log and status, an unreadable claim released by a reconnect; $CHECKS checks passed"
