#!/usr/bin/env bash
# S1 under a crash: three concurrent components per procedure (bash and
# Python workers from examples/s1), one of each SIGKILLed in the middle of a
# batch.  Passes when every batch is processed exactly once, the killed
# worker's batch is freed at once and finished by another worker, and the
# result store rejects a stale fencing token.  Needs the cluster in the PG*
# environment (test/run.sh sets it); creates and drops its own database.
# The last line of output is a one-line summary.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DB=coord_s1_test
export PYTHON=${PYTHON:-/usr/bin/python3}

drop_db() {
  psql -qX -d postgres -c 'SET client_min_messages = warning' \
       -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
}
trap drop_db EXIT
drop_db
psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $DB" >/dev/null
psql -qX -v ON_ERROR_STOP=1 -d "$DB" -c 'CREATE EXTENSION pg_coord' >/dev/null

# Smaller than the demo: 12 batch deliveries per component.
export S1_BATCHES=10 S1_WORK_MS_P1=150 S1_WORK_MS_P2=80 S1_DEADLINE=30
report=$(mktemp)
set +e
( . "$ROOT/examples/s1/scenario.sh"; s1_scenario "$DB" ) | tee "$report"
rc=${PIPESTATUS[0]}
set -e

# A second opinion, straight from the tables: no batch delivery has two
# stored attempts or lacks a result, and no attempt was rejected except the
# staged stale write.
check=$(psql -qtAX -v ON_ERROR_STOP=1 -d "$DB" -c "
  SELECT (SELECT count(*) FROM s1.batches AS b CROSS JOIN (VALUES ('histogram'), ('checksum')) AS c(component)
           WHERE NOT EXISTS (SELECT FROM s1.results AS r
                              WHERE r.component = c.component AND r.batch = b.batch
                                AND r.roundtrip = b.roundtrip)
             AND NOT (c.component = 'histogram' AND b.batch = (SELECT max(batch) FROM s1.batches)))
      || ' ' || (SELECT count(*) FROM (SELECT FROM s1.attempts WHERE outcome = 'stored'
                                         GROUP BY component, batch, roundtrip HAVING count(*) > 1) AS d)
      || ' ' || (SELECT count(*) FROM s1.attempts WHERE outcome = 'rejected' AND worker <> 'checksum-old')
      || ' ' || (SELECT count(*) FROM s1.attempts WHERE outcome IS NULL)" 2>&1) || check="query failed: $check"

ok=$(grep -c '^  ok ' "$report" || true)
failed=$(grep -c '^  FAIL ' "$report" || true)
rm -f "$report"
if [ "$rc" = 0 ] && [ "$failed" = 0 ] && [ "$ok" -gt 0 ] && [ "$check" = "0 0 0 2" ]; then
  echo "s1_exactly_once: $ok checks passed; every batch processed exactly once across 2 SIGKILLs, stale token rejected"
else
  echo "s1_exactly_once: FAILED ($failed of $((ok + failed)) checks failed, scenario exit $rc, table check '$check', want '0 0 0 2')"
  exit 1
fi
