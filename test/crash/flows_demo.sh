#!/usr/bin/env bash
# Workflows under a crash, with real processes (examples/flows, the demo's
# scenario "flows"): an import flow enqueued by one coord.enqueue_flow
# (fetch, three parallel transforms, aggregate) run by three session-bound
# Python workers, the one holding geocode SIGKILLed; the aggregate's batch of
# 1,000 notifications and its callback; a producer awaiting the aggregate and
# the callback; an export cancelled while it runs under coord-agent.  Passes
# when the scenario's checks pass (every node done exactly once and claimed
# after its parents ended, one callback with the counts, the export's process
# group gone within 200 ms of the cancel's commit, ...) and, a second
# opinion from the tables, no job was done twice and nothing is left in
# coord.job, coord.job_wait or coord.job_dep.  Needs the cluster in the PG*
# environment (test/run.sh sets it); creates and drops its own database.
# The last line of output is a one-line summary.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export FLOWS_DB=coord_flows_test FLOWS_KEEP=1
export PYTHON=${PYTHON:-/usr/bin/python3}

drop_db() {
  psql -qX -d postgres -c 'SET client_min_messages = warning' \
       -c "DROP DATABASE IF EXISTS $FLOWS_DB WITH (FORCE)" >/dev/null 2>&1 || true
}

. "$ROOT/examples/flows/demo_section.sh"
report=$(mktemp)
set +e
flows_demo "$@" | tee "$report"
rc=${PIPESTATUS[0]}
set -e

# jobs with more than one results row; jobs left live, waiting, or with
# edges; finished jobs by state
check=$(psql -qtAX -v ON_ERROR_STOP=1 -d "$FLOWS_DB" -c "
  SELECT 'twice:' || (SELECT count(*) FROM (SELECT job_id FROM flows.results GROUP BY job_id HAVING count(*) > 1) AS d)
         || ' left:' || (SELECT count(*) FROM coord.job) || '/' || (SELECT count(*) FROM coord.job_wait)
         || '/' || (SELECT count(*) FROM coord.job_dep)
         || ' ended:' || (SELECT string_agg(state || ' ' || n, ', ' ORDER BY state)
                            FROM (SELECT state, count(*) AS n FROM coord.jobs GROUP BY state) AS s)" 2>&1) ||
  check="query failed: $check"
expect="twice:0 left:0/0/0 ended:cancelled 1, done 1006"
summary=$(tail -1 "$report")
rm -f "$report"
if [ "$rc" = 0 ] && [ "$check" = "$expect" ]; then
  drop_db
  echo "flows_demo: ${summary#flows: }"
else
  echo "flows_demo: FAILED (scenario exit $rc, tables say '$check', want '$expect'; database $FLOWS_DB kept)"
  exit 1
fi
