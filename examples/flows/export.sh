#!/bin/bash
# coord-agent task "export": a long export of an import's report, an external
# command (examples/flows; the demo's agent runs it for jobs with payload
# {"task": "export", ...}).  The work runs in a child process of its own, as
# real commands do (a converter, a upload), so that stopping the task means
# stopping its whole process group: coord-agent kills the group when the job
# is cancelled.  Records its pids at the start in flows.exports (psql with
# the agent's PG* settings: pass_env), and its end if it gets there.
set -u
exec 0</dev/null
q() { psql -qAtX -v ON_ERROR_STOP=1 -v id="$COORD_JOB_ID" -v tok="$COORD_TOKEN" "$@"; }

sleep "${EXPORT_SECONDS:-60}" &   # the work
work=$!
q -v pid=$$ -v work="$work" <<'SQL'
INSERT INTO flows.exports (job_id, token, pid, work_pid) VALUES (:id, :tok, :pid, :work);
SQL
wait "$work"
q <<'SQL'
UPDATE flows.exports SET ended_at = clock_timestamp() WHERE job_id = :id AND token = :tok;
SQL
echo '{"pages": 12}'
