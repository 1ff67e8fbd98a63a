#!/usr/bin/env bash
# S4 under a crash, Python only (CI has no Node): 4 session-bound mail
# runners (examples/s4/runner.py) send 150 mails from one queue; one is
# SIGKILLed while it holds claimed, unsent mails, which another runner must
# claim within a second.  Then a lease-mode runner stalls past its 1 s lease:
# another runner sends that mail, and the stalled runner's coord.complete
# returns false.  Then three runners of a partition group (weights 3:2:1)
# send 150 mails of a table of their own, one SIGKILLed mid-run.  Passes
# when every mail was sent exactly once (0 duplicates, 0 lost).  Needs the cluster in the PG* environment (test/run.sh
# sets it); creates and drops its own database.  The last line of output is
# a one-line summary.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export S4_DB=coord_s4_test
export PYTHON=${PYTHON:-/usr/bin/python3}

drop_db() {
  psql -qX -d postgres -c 'SET client_min_messages = warning' \
       -c "DROP DATABASE IF EXISTS $S4_DB WITH (FORCE)" >/dev/null 2>&1 || true
}
trap drop_db EXIT

. "$ROOT/examples/s4/demo_section.sh"
report=$(mktemp)
set +e
s4_demo quick | tee "$report"
rc=${PIPESTATUS[0]}
set -e

# A second opinion, straight from the tables: mails sent, duplicate sends,
# mails never sent, sends whose token is not the job's last claim, and the
# queue's live and done jobs.
check=$(psql -qtAX -v ON_ERROR_STOP=1 -d "$S4_DB" -c "
  SELECT 'sent:' || count(DISTINCT s.mail_no) || ' dups:' || (count(*) - count(DISTINCT s.job_id))
         || ' lost:' || (SELECT count(*) FROM generate_series(1, 170) AS g(n)
                          WHERE NOT EXISTS (SELECT FROM s4.sent WHERE mail_no = g.n))
         || ' stale:' || count(*) FILTER (WHERE s.token <> (SELECT max(c.token) FROM s4.claims AS c WHERE c.job_id = s.job_id))
         || ' live:' || (SELECT COALESCE(sum(ready + scheduled + running), 0) FROM coord.queue_stats WHERE queue = 'mail')
         || ' done:' || (SELECT count(*) FROM coord.jobs WHERE queue = 'mail' AND state = 'done')
    FROM s4.sent AS s" 2>&1) || check="query failed: $check"
want="sent:170 dups:0 lost:0 stale:0 live:0 done:170"

ok=$(grep -c '^  ok ' "$report" || true)
failed=$(grep -c '^  FAIL ' "$report" || true)
rm -f "$report"
if [ "$rc" = 0 ] && [ "$failed" = 0 ] && [ "$ok" -gt 0 ] && [ "$check" = "$want" ]; then
  echo "s4_runners: $ok checks passed; 170 mails sent exactly once by Python runners across a SIGKILL (session claims back at once) and a stalled lease (its complete returned false)"
else
  echo "s4_runners: FAILED ($failed of $((ok + failed)) checks failed, scenario exit $rc, tables say '$check', want '$want')"
  exit 1
fi
