#!/usr/bin/env bash
# pg_cron really runs coord.tick() on the test cluster: coord.cron_install
# registers it, and within about two minutes (pg_cron fires on the minute)
# coord.tick_state counts a tick and cron.job_run_details shows it succeeded.
# It starts a private cluster of its own (port COORD_SLOW_PGPORT, 54339), so
# that test/run.sh can run it beside the other suites; database postgres is
# cron.database_name there.  Exit 0 = pass.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
COORD_PGPORT=${COORD_SLOW_PGPORT:-54339} coord_cluster_start
q() { psql -qXAt -v ON_ERROR_STOP=1 -d postgres -c "$1"; }

q "CREATE EXTENSION IF NOT EXISTS pg_cron"
q "DROP EXTENSION IF EXISTS pg_coord"
q "CREATE EXTENSION pg_coord"
cleanup() {
  q "SELECT cron.unschedule('coord-tick')" >/dev/null 2>&1 || true
  q "DROP EXTENSION IF EXISTS pg_coord" >/dev/null 2>&1 || true
  coord_cluster_stop
}
trap cleanup EXIT

jobid=$(q "SELECT coord.cron_install('* * * * *')")
again=$(q "SELECT coord.cron_install('* * * * *')")
[ "$jobid" = "$again" ] || { echo "cron_install is not idempotent: $jobid then $again"; exit 1; }
[ "$(q "SELECT count(*) FROM cron.job WHERE jobname = 'coord-tick'")" = 1 ] || { echo "expected one coord-tick job"; exit 1; }

start=$(date +%s)
while :; do
  ticks=$(q "SELECT ticks FROM coord.tick_state")
  [ "$ticks" -gt 0 ] && break
  if [ $(( $(date +%s) - start )) -gt 130 ]; then
    echo "no tick from pg_cron within 130 s; job_run_details:"
    q "SELECT status, return_message FROM cron.job_run_details WHERE jobid = $jobid" || true
    exit 1
  fi
  sleep 2
done
waited=$(( $(date +%s) - start ))
status=$(q "SELECT status FROM cron.job_run_details WHERE jobid = $jobid ORDER BY runid DESC LIMIT 1")
[ "$status" = succeeded ] || { echo "pg_cron run status: $status"; exit 1; }
echo "cron_tick: pg_cron job $jobid ran coord.tick() after ${waited} s (status $status)"
