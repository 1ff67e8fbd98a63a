#!/usr/bin/env bash
# coord-agent --partition-group/--weight: two agents, A (weight 3) and B
# (weight 1), in group pg over queue work, whose jobs have keys.  Each job
# records at its start whether its key's segment (coord.segment_of) was
# owned at that moment by the session of the agent that ran it
# (coord.partition_segments).  Phase 1: 80 quick jobs, all done exactly
# once, each by its segment's owner, A's share near 3/4.  Phase 2: 40 gated
# jobs; A is SIGKILLed while it runs some; B takes A's segments and runs the
# rest: every job done exactly once, B owns all 1024 segments.  Also: the
# options' errors, a reconnect joins again, a SIGHUP's new weight is joined
# with.  Phase 3 (issue 23): agent C joins group pgc under a name no one can
# guess; its session is terminated while a transaction holds pgc's row, so
# every join waits for it and fails (lock_timeout): C keeps its new session,
# reports its lease job, claims nothing until the join succeeds, then does.
set -euo pipefail
export COORD_PGPORT=54460
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

sql "CREATE TABLE t.runs (job_id bigint, agent text, owned boolean, at timestamptz DEFAULT clock_timestamp())"
cat >"$W/pjob.sh" <<'EOF'
#!/bin/bash
# Records whether this agent's session owns the job's segment now, then
# waits for the gate (if any).
set -u
exec 0</dev/null
psql -qAtX -v ON_ERROR_STOP=1 -v id="$COORD_JOB_ID" -v agent="$AGENT" <<'SQL'
INSERT INTO t.runs (job_id, agent, owned)
SELECT :id, :'agent',
       EXISTS (SELECT FROM coord.partition_segments s JOIN pg_stat_activity a ON a.pid = s.owner_pid
                WHERE s.partition_group = 'pg' AND a.application_name = :'agent'
                  AND s.segment = coord.segment_of('pg', (SELECT key FROM coord.jobs WHERE id = :id)));
SQL
if [ -n "${GATE:-}" ]; then
  while [ ! -e "$GATE" ]; do sleep 0.05; done
fi
echo "{\"agent\": \"$AGENT\"}"
EOF
chmod +x "$W/pjob.sh"

for n in A B; do
  cat >"$W/$n.conf" <<EOF
pass_env = PG*
queues = work
concurrency = 3
poll = 200ms
partition_group = pg

[task quick]
command = $W/pjob.sh
env = AGENT=$n

[task gated]
command = $W/pjob.sh
env = AGENT=$n
env = GATE=$W/gate
EOF
done

# the options' errors: exit 2 for a malformed value, 1 for a bad configuration
rc=0; "$AGENT_BIN" -f "$W/A.conf" --weight 0 check >/dev/null 2>"$W/err" || rc=$?
check "--weight 0: exit 2 and says why" eq "$rc/$(grep -c 'invalid --weight' "$W/err")" "2/1"
rc=0; "$AGENT_BIN" -f "$W/A.conf" --weight inf check >/dev/null 2>"$W/err" || rc=$?
check "--weight inf: exit 2" eq "$rc" 2
rc=0; "$AGENT_BIN" -f "$W/A.conf" --partition-group '' check >/dev/null 2>"$W/err" || rc=$?
check "--partition-group '': exit 2" eq "$rc" 2
rc=0; "$AGENT_BIN" -f "$W/A.conf" --partition-group 'no spaces' check >/dev/null 2>"$W/err" || rc=$?
check "--partition-group 'no spaces': exit 1 (invalid name)" eq "$rc/$(grep -c 'invalid partition group name' "$W/err")" "1/1"
printf 'queues = work\nweight = -1\n' >"$W/bad.conf"; chmod 600 "$W/bad.conf"
rc=0; "$AGENT_BIN" -f "$W/bad.conf" check >/dev/null 2>"$W/err" || rc=$?
check "weight = -1 in the file: exit 1, file:line" eq "$rc/$(grep -c 'bad.conf:2: weight must be' "$W/err")" "1/1"

start_agent A "$W/A.conf" --weight 3
# B's weight from its file (the key), A's from the command line
sed -i 's/^partition_group = pg$/partition_group = pg\nweight = 1/' "$W/B.conf"
start_agent B "$W/B.conf"
wait_sql "(SELECT count(*) FROM coord.members WHERE partition_group = 'pg' AND alive) = 2
          AND (SELECT sum(owned) = 1024 AND min(owned) > 150 FROM coord.members WHERE partition_group = 'pg' AND alive)" 30 || true
check "both agents joined as HOST:PID:<64 random bits> with their weights" \
  eq "$(sql "SELECT string_agg(weight::text, ',' ORDER BY weight) FROM coord.members WHERE partition_group = 'pg' AND alive AND member ~ ':[0-9]+:[0-9a-f]{16}\$'")" "1,3"
a_owned=$(sql "SELECT owned FROM coord.members m JOIN pg_stat_activity a ON a.pid = m.pid WHERE m.partition_group = 'pg' AND a.application_name = 'A'")
check "A owns about 3/4 of the 1024 segments (${a_owned:-?})" between "${a_owned:-0}" 700 840

sql "SELECT count(coord.enqueue('work', '{\"task\": \"quick\"}', key => 'k' || g)) FROM generate_series(1, 80) g" >/dev/null
wait_sql "(SELECT count(*) FROM coord.jobs WHERE queue = 'work' AND state = 'done') = 80" 90 || true
check "phase 1: all 80 jobs done, each run once" \
  eq "$(sql "SELECT count(*) FILTER (WHERE state = 'done') || '/' || (SELECT count(*) || '/' || count(DISTINCT job_id) FROM t.runs) FROM coord.jobs WHERE queue = 'work'")" "80/80/80"
check "phase 1: each job ran on the agent owning its segment" \
  eq "$(sql "SELECT count(*) FILTER (WHERE owned) FROM t.runs")" 80
check "phase 1: each result names the agent that ran it" \
  eq "$(sql "SELECT count(*) FROM coord.jobs j JOIN t.runs r ON r.job_id = j.id WHERE j.result->>'agent' = r.agent")" 80
a_jobs=$(sql "SELECT count(*) FROM t.runs WHERE agent = 'A'")
check "phase 1: A (weight 3) ran about 3/4 of the jobs (${a_jobs})" between "$a_jobs" 45 75

# phase 2: A is killed while it runs gated jobs; B runs the rest
sql "SELECT count(coord.enqueue('work', '{\"task\": \"gated\"}', key => 'g' || g)) FROM generate_series(1, 40) g" >/dev/null
wait_sql "(SELECT count(*) FROM t.runs r JOIN coord.jobs j ON j.id = r.job_id WHERE r.agent = 'A' AND j.key LIKE 'g%') = 3" 30 || true
{ kill -9 "${AGENT_PID[A]}"; wait "${AGENT_PID[A]}"; } 2>/dev/null || true
open_gate
wait_sql "(SELECT count(*) FROM coord.jobs WHERE queue = 'work' AND state = 'done') = 120" 90 || true
# B takes A's segments at its next claim (one comes as soon as a slot is free)
wait_sql "(SELECT owned FROM coord.members WHERE partition_group = 'pg' AND alive) = 1024" 30 || true
check "B owns all 1024 segments after A's SIGKILL" \
  eq "$(sql "SELECT count(*) || '/' || sum(owned) FROM coord.members WHERE partition_group = 'pg' AND alive")" "1/1024"
check "phase 2: all 120 jobs done, each exactly once" \
  eq "$(sql "SELECT count(*) FILTER (WHERE state = 'done') || '/' || count(DISTINCT id) FROM coord.jobs WHERE queue = 'work'")" "120/120"
check "phase 2: every job's result from one agent, B's for A's unfinished ones" \
  eq "$(sql "SELECT count(*) FROM coord.jobs WHERE key LIKE 'g%' AND result->>'agent' = 'B'")" 40
check "every run (A's 3 cut short included) was on the owner of its segment" \
  eq "$(sql "SELECT count(*) FILTER (WHERE NOT owned) FROM t.runs")" 0

# a reconnect joins again: B's backend is terminated
bpid=$(sql "SELECT pid FROM pg_stat_activity WHERE application_name = 'B'")
sql "SELECT pg_terminate_backend($bpid)" >/dev/null
wait_sql "EXISTS (SELECT FROM coord.members m JOIN pg_stat_activity a ON a.pid = m.pid
                   WHERE m.partition_group = 'pg' AND m.alive AND a.application_name = 'B' AND m.pid <> $bpid)" 30 || true
check "B joined again after its session was terminated" \
  eq "$(sql "SELECT count(*) FROM coord.members WHERE partition_group = 'pg' AND alive AND pid <> $bpid")" 1
sql "SELECT count(coord.enqueue('work', '{\"task\": \"quick\"}', key => 'r' || g)) FROM generate_series(1, 5) g" >/dev/null
wait_sql "(SELECT count(*) FROM coord.jobs WHERE queue = 'work' AND state = 'done') = 125" 60 || true
check "B claims from the group again after the reconnect" \
  eq "$(sql "SELECT count(*) FROM coord.jobs WHERE key LIKE 'r%' AND state = 'done' AND result->>'agent' = 'B'")" 5

# SIGHUP with a new weight: the same session joins again with it
bpid=$(sql "SELECT pid FROM pg_stat_activity WHERE application_name = 'B'")
sed -i 's/^weight = 1$/weight = 2.5/' "$W/B.conf"
kill -HUP "${AGENT_PID[B]}"
wait_sql "EXISTS (SELECT FROM coord.members WHERE partition_group = 'pg' AND alive AND weight = 2.5)" 30 || true
check "SIGHUP with weight = 2.5: B's member has the new weight, same session" \
  eq "$(sql "SELECT weight || '/' || (pid = $bpid) FROM coord.members WHERE partition_group = 'pg' AND alive")" "2.5/true"

# phase 3: a failed join keeps the session (issue 23)
cat >"$W/C.conf" <<EOF
pass_env = PG*
queues = cwork
concurrency = 2
poll = 200ms
partition_group = pgc
lease = 30s

[task quick]
command = $W/pjob.sh
env = AGENT=C

[task gated]
command = $W/pjob.sh
env = AGENT=C
env = GATE=$W/gateC
EOF
start_agent C "$W/C.conf"
wait_sql "EXISTS (SELECT FROM coord.members WHERE partition_group = 'pgc' AND alive)" 30 || true
name1=$(sql "SELECT member FROM coord.members WHERE partition_group = 'pgc' AND alive")
check "C joined as HOST:PID:<64 random bits> ($name1)" \
  eq "$(sql "SELECT '$name1' ~ ':[0-9]+:[0-9a-f]{16}\$'")" t
j1=$(sql "SELECT coord.enqueue('cwork', '{\"task\": \"gated\"}')")
wait_sql "EXISTS (SELECT FROM t.runs WHERE job_id = $j1)" 30 || true
# a transaction holds pgc's row: a new member's join waits for it (lock_timeout 2 s)
mkfifo "$W/hold"
psql -qAtX -v ON_ERROR_STOP=1 <"$W/hold" >/dev/null 2>&1 &
holder=$!
exec 7>"$W/hold"
echo "BEGIN; SELECT FROM coord.partition_groups WHERE partition_group = 'pgc' FOR UPDATE; SELECT pg_backend_pid();" >&7
wait_sql "EXISTS (SELECT FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE '%pg_backend_pid%')" 10 || true
cpid=$(sql "SELECT pid FROM pg_stat_activity WHERE application_name = 'C'")
sql "SELECT pg_terminate_backend($cpid)" >/dev/null
j2=$(sql "SELECT coord.enqueue('cwork', '{\"task\": \"quick\"}')")
check "C's join in its new session fails (the row is held)" wait_log C 'could not join partition group "pgc"' 20
touch "$W/gateC"
wait_sql "coord.job_state($j1) = 'done'" 15 || true
check "C kept its new session and reported its lease job while the join failed" \
  eq "$(sql "SELECT coord.job_state($j1) || ' ' || coalesce((SELECT result->>'agent' FROM coord.jobs WHERE id = $j1), '-')
             || ' ' || (SELECT count(*) FROM pg_stat_activity WHERE application_name = 'C' AND pid <> $cpid)")" "done C 1"
check "and claimed nothing meanwhile (the group's claims wait for its join)" \
  eq "$(sql "SELECT coord.job_state($j2)")" ready
echo "COMMIT;" >&7
exec 7>&-
wait "$holder" || true
wait_sql "coord.job_state($j2) = 'done'" 30 || true
check "once the row is free C joins (under a new name) and claims again" \
  eq "$(sql "SELECT coord.job_state($j2) || ' ' || (SELECT count(*) FROM coord.members WHERE partition_group = 'pgc' AND alive
             AND member <> '$name1' AND member ~ ':[0-9]+:[0-9a-f]{16}\$')")" "done 1"
check "C connected twice (no reconnects while its join failed)" eq "$(grep -c 'connected to database' "$W/C.log")" 2

finish "partitions: agents with weights 3:1 in one group ran ${a_jobs}/80 and $((80 - a_jobs))/80 jobs, each on its segment's owner; after A's SIGKILL B owned all segments and ran the rest; every job done once; $CHECKS checks passed"
