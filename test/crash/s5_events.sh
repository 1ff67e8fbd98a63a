#!/usr/bin/env bash
# S5 under a crash: three recurring events (heartbeat every 2 s, fixed
# delay; report every 3 s, fixed rate; cleanup by cron) and three real worker
# processes (examples/s5/worker.py) that claim their instances session-bound.
# One worker is SIGKILLed right after claiming an event.  Passes when that
# event runs again on another worker within 1.5 s of the kill, no two runs
# of one event ever overlapped, every schedule had exactly one live instance
# at every sample of coord.jobs (every 20 ms), heartbeat and report ran at
# least 4 times each, heartbeat started each run at least 2 s (less 10 ms)
# after the previous one finished, each run put the next instance on, and no
# run was lost or doubled (each done instance has exactly one finished run).
# Does not wait for the cron minute boundary; checks only that the cron
# event's instance is on one.
#
# Starts its own private cluster (port 54338, in a temporary directory,
# stopped on exit) through test/lib.sh, whatever cluster the PG* environment
# names; the scenario creates its database.  25-40 s, as the machine's load
# decides.  The last line of output is a one-line summary.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$ROOT/test/lib.sh"
COORD_PGPORT=54338 coord_cluster_start   # its EXIT trap stops the cluster
export S5_DB=coord_s5_test S5_KEEP=1

. "$ROOT/examples/s5/demo_section.sh"
report=$(mktemp)
set +e
s5_demo quick | tee "$report"
rc=${PIPESTATUS[0]}
set -e

# A second opinion, straight from the tables: the re-run of the killed run's
# job (ms after the kill), overlapping runs of one event, the most live
# instances of one schedule in any sample, the fewest runs of heartbeat and
# report, heartbeat's shortest finish-to-next-start gap, done instances with
# no finished run (lost), and finished runs beyond one per job (doubled).
check=$(psql -qtAX -v ON_ERROR_STOP=1 -d "$S5_DB" -c "
  WITH k AS (SELECT job_id, killed_at FROM s5.runs WHERE killed_at IS NOT NULL),
  rerun AS (SELECT min(r.started_at - k.killed_at) AS after
              FROM k JOIN s5.runs AS r ON r.job_id = k.job_id AND r.finished_at IS NOT NULL),
  gaps AS (SELECT started_at - lag(finished_at) OVER (ORDER BY started_at) AS gap
             FROM s5.runs WHERE event = 'heartbeat')
  SELECT 'killed:' || (SELECT count(*) FROM k)
         || ' rerun_1.5s:' || COALESCE((SELECT after > interval '0' AND after <= interval '1.5 seconds' FROM rerun), false)
         || ' overlaps:' || (SELECT count(*) FROM s5.runs AS a JOIN s5.runs AS b
                               ON a.event = b.event AND a.id < b.id
                              AND a.started_at < COALESCE(b.finished_at, b.killed_at, 'infinity')
                              AND b.started_at < COALESCE(a.finished_at, a.killed_at, 'infinity'))
         || ' max_live:' || (SELECT max(live) FROM s5.samples)
         || ' min_live:' || (SELECT min(live) FROM s5.samples)
         || ' runs>=4:' || (SELECT count(*) = 2 AND min(n) >= 4
                              FROM (SELECT count(*) AS n FROM s5.runs
                                     WHERE event IN ('heartbeat', 'report') AND finished_at IS NOT NULL
                                     GROUP BY event) AS c)
         || ' delay>=2s:' || (SELECT min(gap) >= interval '1.99 seconds' FROM gaps)
         || ' put_back:' || (SELECT bool_and(next_job_id IS NOT NULL AND next_job_id <> job_id)
                               FROM s5.runs WHERE finished_at IS NOT NULL)
         || ' lost:' || (SELECT count(*) FROM coord.jobs AS j
                          WHERE j.origin LIKE 's:%' AND j.state = 'done'
                            AND NOT EXISTS (SELECT FROM s5.runs AS r WHERE r.job_id = j.id AND r.finished_at IS NOT NULL))
         || ' doubled:' || (SELECT count(*) - count(DISTINCT job_id) FROM s5.runs WHERE finished_at IS NOT NULL)
         || ' live_left:' || (SELECT count(*) FROM coord.jobs WHERE origin LIKE 's:%'
                                                                 AND state IN ('scheduled', 'ready', 'running'))" 2>&1) ||
  check="query failed: $check"
expect="killed:1 rerun_1.5s:true overlaps:0 max_live:1 min_live:1 runs>=4:true delay>=2s:true put_back:true lost:0 doubled:0 live_left:0"
reclaim=$(sed -n 's/.*ran again on another worker .* (\([0-9]*\) ms)$/\1/p' "$report")

ok=$(grep -c '^  ok ' "$report" || true)
failed=$(grep -c '^  FAIL ' "$report" || true)
rm -f "$report"
if [ "$rc" = 0 ] && [ "$failed" = 0 ] && [ "$ok" -gt 0 ] && [ "$check" = "$expect" ]; then
  echo "s5_events: $ok checks passed; 3 recurring events on 3 worker processes, a SIGKILL right after a claim" \
       "(event re-run elsewhere after ${reclaim:-?} ms), no overlapping runs, one live instance per schedule at every sample, none lost"
else
  echo "s5_events: FAILED ($failed of $((ok + failed)) checks failed, scenario exit $rc, tables say '$check', want '$expect')"
  exit 1
fi
