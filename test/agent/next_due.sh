#!/usr/bin/env bash
# An idle coord-agent sleeps until coord.next_due of its queues, not its
# poll, when a job becomes claimable with no commit and so no NOTIFY: a
# bucket that refills, a pause that ends by its time.  One agent (poll 30 s,
# concurrency 2, verbose) on queues rated, held and other, connected as a
# role that is only a member of coord_worker (so the grant of next_due is
# what lets it ask):
#   - rated: set_limit(rate => 2, per => 1 s, burst => 1) and 6 quick jobs:
#     all done in about 2.5 s (asserted < 10 s, a third of the poll), and the
#     limit held them back (first to last start >= 2 s);
#   - held: paused until now() + 3 s, then a job enqueued (its NOTIFY finds
#     the queue paused): it starts at or after the pause's end and < 10 s
#     later, with no notification logged in between;
#   - other: a job for another host, which next_due counts but the agent
#     never claims ("due already"): the agent backs off (10 ms doubling up
#     to the poll) instead of claiming every 10 ms: a handful of claims in
#     3 s, not hundreds.
# Port 54362 (54340-54349 are all taken).
set -euo pipefail
export COORD_PGPORT=54362
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

sql "CREATE ROLE nd_worker LOGIN; GRANT coord_worker TO nd_worker;
     CREATE TABLE t.runs (job_id bigint, queue text, at timestamptz DEFAULT clock_timestamp())" >/dev/null
cat >"$W/quick.sh" <<'EOF'
#!/bin/bash
# Records its start (as the test's superuser, not as the agent's role).
psql -qAtX -v ON_ERROR_STOP=1 -v id="$COORD_JOB_ID" -v q="$COORD_QUEUE" <<'SQL'
INSERT INTO t.runs (job_id, queue) VALUES (:id, :'q');
SQL
echo '{"ok": true}'
EOF
chmod +x "$W/quick.sh"
cat >"$W/agent.conf" <<EOF
# next_due.sh
queues = rated, held, other
host = nd-host
concurrency = 2
poll = 30s

[task quick]
command = $W/quick.sh
pass_env = PGHOST, PGPORT, PGDATABASE
env = PGUSER=postgres
EOF

# --- rated: 6 jobs at 2/s, burst 1
sql "SELECT coord.set_limit('rated', rate => 2, per => '1 second', burst => 1)" >/dev/null
ids=$(sql "SELECT string_agg(coord.enqueue('rated', '{\"task\": \"quick\"}')::text, ',') FROM generate_series(1, 6)")
t0=$(now_ms)
PGUSER=nd_worker start_agent nd "$W/agent.conf" -v
wait_sql "(SELECT count(*) FROM coord.jobs WHERE id IN ($ids) AND state = 'done') = 6" 20 || true
took=$(awk -v ms=$(( $(now_ms) - t0 )) 'BEGIN { printf "%.2f", ms / 1000 }')
span=$(sql "SELECT round(extract(epoch FROM max(at) - min(at))::numeric, 2) FROM t.runs WHERE queue = 'rated'")
check "the agent connected as nd_worker (only coord_worker)" \
  eq "$(sql "SELECT string_agg(DISTINCT usename, ',') FROM pg_stat_activity WHERE application_name = 'nd'")" nd_worker
check "rated: all 6 jobs done" eq "$(sql "SELECT count(*) FROM coord.jobs WHERE id IN ($ids) AND state = 'done'")" 6
check "rated: done ${took}s after the agent started (< 10 s; the poll is 30 s)" between "$took" 0 10
check "rated: the limit held them back: first to last start ${span}s (>= 2.0)" between "$span" 2.0 10
check "rated: the agent slept until coord.next_due (verbose log)" \
  test "$(grep -c 'next claim in 0\.[0-9]*s (coord.next_due)' "$W/nd.log")" -ge 3
check "rated: no next_due error" eq "$(grep -c 'coord.next_due failed' "$W/nd.log")" 0

# --- held: a pause that ends by its time
until_ts=$(sql "SELECT clock_timestamp() + interval '3 seconds'")
sql "SELECT coord.pause('held', until => '$until_ts')" >/dev/null
h=$(sql "SELECT coord.enqueue('held', '{\"task\": \"quick\"}')")
# the notifications logged until half a second (server's clock) before the
# pause ends: the enqueue's, which found the queue paused
sql "SELECT pg_sleep(extract(epoch FROM '$until_ts'::timestamptz - clock_timestamp()) - 0.5)" >/dev/null
notes_before=$(grep -c 'notification on' "$W/nd.log" || true)
# still ready, or (a loaded machine ran this query late) claimed only after the pause's end
check "held: not claimed while paused" eq "$(sql "SELECT state = 'ready' OR claimed_at >= '$until_ts'::timestamptz
                                                    FROM coord.jobs WHERE id = $h")" t
wait_sql "coord.job_state($h) = 'done'" 15 || true
after=$(sql "SELECT round(extract(epoch FROM min(at) - '$until_ts'::timestamptz)::numeric, 2) FROM t.runs WHERE job_id = $h")
notes_to_start=$(awk -v re="job $h start" '$0 ~ re { exit } /notification on/ { n++ } END { print n + 0 }' "$W/nd.log")
check "held: the job is done" eq "$(sql "SELECT coord.job_state($h)")" done
check "held: it started ${after:-never}s after the pause's end (0 .. 10; the poll is 30 s)" between "${after:-99}" 0 10
check "held: no notification between the pause's last second and the start" eq "$notes_to_start" "$notes_before"

# --- other: a job next_due counts but this agent may not claim
sql "SELECT coord.enqueue('other', '{\"task\": \"quick\"}', host => 'elsewhere')" >/dev/null
sleep 3
backoffs=$(grep -c 'due already: backing off' "$W/nd.log" || true)
check "other: backed off, not a claim every 10 ms: $backoffs rounds in 3 s (3 .. 15)" between "$backoffs" 3 15
check "other: never claimed" eq "$(sql "SELECT count(*) FROM t.runs WHERE queue = 'other'")" 0

finish "next_due: rate 2/s burst 1, 6 jobs in ${took}s (span ${span}s); a pause's job ${after}s after its end; $backoffs back-off rounds in 3 s for a job due but not ours; poll 30 s; $CHECKS checks passed"
