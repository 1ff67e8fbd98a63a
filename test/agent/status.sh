#!/usr/bin/env bash
# coord-agent status as the roles people run it with:
#   - as a coord_worker role (the agent's own credentials): each section says
#     the role may not read it, stderr names the GRANT (role name quoted as
#     an identifier), no "permission denied", exit 3;
#   - a role granted one view sees that section only, still exit 3;
#   - as a coord_monitor member: every section, exit 0;
#   - no app defined: the Apps section is one line "no apps defined" (and
#     coord.grid() itself returns just that line; "no apps named" for an
#     empty list); with an app, the grid; a late run is ! in it;
#   - a database without pg_coord: exit 1.
set -euo pipefail
export COORD_PGPORT=54350
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

sql "CREATE ROLE agent LOGIN; GRANT coord_worker TO agent;
     CREATE ROLE \"Agent Smith\" LOGIN; GRANT coord_worker TO \"Agent Smith\";
     CREATE ROLE peek LOGIN; GRANT coord_worker TO peek; GRANT SELECT ON coord.queue_stats TO peek;
     CREATE ROLE watcher LOGIN; GRANT coord_monitor TO watcher"
sql "SELECT coord.enqueue('mail', '{}')" >/dev/null

# status_as ROLE: runs status as ROLE; sets out (stdout), err (stderr), rc
status_as() {
  rc=0
  "$AGENT_BIN" -d "dbname=${2:-agent_test} user='$1'" status >"$W/out" 2>"$W/err" || rc=$?
  out=$(cat "$W/out"); err=$(cat "$W/err")
}

echo "== a coord_worker role"
status_as agent
check "exit 3 (some sections not readable)" eq "$rc" 3
check "each of the four sections says what the role may not read" \
  eq "$(grep -c '^  (role agent may not read coord\.[a-z_]*\(()\)\?: needs coord_monitor)$' <<<"$out")" 4
check "stderr names the GRANT" \
  eq "$err" "coord-agent status: role agent may not read all of pg_coord's views; status needs the privileges of coord_monitor, which a superuser grants with: GRANT coord_monitor TO agent;"
check "no 'permission denied' anywhere" eq "$(grep -ci 'permission denied' "$W/out" "$W/err" | awk -F: '{s+=$2} END {print s}')" 0
check "the header still says which pg_coord and database" grep -q '^pg_coord [0-9.]*, database agent_test on ' <<<"$out"
status_as "Agent Smith"
check "a role name that needs quoting is quoted in the GRANT" grep -qF 'GRANT coord_monitor TO "Agent Smith";' <<<"$err"

echo "== a role granted one view"
status_as peek
check "exit 3" eq "$rc" 3
check "sees the queues" grep -qE '^  mail +1 +0 +0 +0 +0' <<<"$out"
check "and is told about the other three" eq "$(grep -c 'may not read' <<<"$out")" 3

echo "== a coord_monitor role, no app defined"
status_as watcher
check "exit 0" eq "$rc" 0
check "nothing on stderr" eq "$err" ""
check "no section is refused" eq "$(grep -c 'may not read' <<<"$out" || true)" 0
check "the Apps section is one line: no apps defined" \
  eq "$(sed -n '/^Apps/,$p' <<<"$out")" "Apps (last day)
  no apps defined"
check "coord.grid() with no app: that line only" eq "$(sql "SELECT string_agg(g, '|') FROM coord.grid() AS g")" "no apps defined"
check "coord.grid() of an empty list: no apps named" \
  eq "$(sql "SELECT string_agg(g, '|') FROM coord.grid(now() - interval '1 hour', now(), '{}') AS g")" "no apps named"

echo "== one app defined"
sql "SELECT coord.define_app('nightly', starts => 'daily')" >/dev/null
status_as watcher
check "exit 0" eq "$rc" 0
check "the grid: a header for one app" grep -q '^  runs of 1 app, .* one column per day.s period$' <<<"$out"
check "a row for the app" grep -q '^  nightly  ' <<<"$out"
check "and the legend" grep -q '^  legend: ' <<<"$out"

echo "== a running job, seen by a monitor: no payload"
sql "SELECT coord.enqueue('mail', '{\"task\": \"secret-task\"}'); SELECT count(*) FROM coord.claim('mail', 5)" >/dev/null
status_as watcher
check "exit 0" eq "$rc" 0
check "the running job is listed, its task not read" grep -qF '(payload not readable)' <<<"$out"
check "nothing of the payload shows" eq "$(grep -c 'secret-task' <<<"$out" || true)" 0

echo "== a late run (past its deadline, issue 18): ! in the grid"
sql "SELECT coord.define_app('late', starts => 'hourly', deadline => '1 minute', queue => 'late_q',
                             catchup_from => date_trunc('hour', now()) - interval '3 hours');
     SELECT coord.tick(now())" >/dev/null
status_as watcher
check "exit 0" eq "$rc" 0
# (the third ended period is late only once a minute of this hour has gone)
check "the late app's row: its ended periods late, the current one ready" \
  grep -qE '^  late +\.*!![!o]o$' <<<"$out"
check "the legend says what ! is" grep -qF '! late' <<<"$out"
check "coord.alerts: an open deadline alert per late run" \
  eq "$(sql "SELECT count(*) FILTER (WHERE cleared_at IS NULL) = count(*) AND count(*) IN (2, 3) FROM coord.alerts
            WHERE app = 'late' AND kind = 'deadline'")" t
sql "SELECT coord.drop_app('late')" >/dev/null

echo "== a database without pg_coord"
psql -qX -d postgres -c "CREATE DATABASE plain" >/dev/null
status_as watcher plain
check "exit 1" eq "$rc" 1
check "says pg_coord is not installed there" grep -q 'the pg_coord extension is not installed in database "plain"' <<<"$err"

finish "status: coord_worker role told to GRANT coord_monitor (exit 3), partial grants, monitor sees all (exit 0), 'no apps defined', no pg_coord (exit 1); $CHECKS checks passed"
