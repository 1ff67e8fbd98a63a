#!/usr/bin/env bash
# S3 under a crash: 4 Python and 2 bash crawlers (examples/s3) crawl the same
# URLs at once; the owner of the start page is SIGKILLed while the other five
# wait for it.  Passes when the first waiter takes over, the rest answer
# false, every URL is fetched exactly once, done URLs are not fetched again
# while fresh, and are fetched again once stale (never before the previous
# fetch of the URL went stale).  Round 4 (issue 17): 8 site crawlers work
# off a queue with a per-site concurrency limit of 2, and one site answers
# 429: nothing is fetched from it during its cool-down, the other sites go
# on at their limit, the limit is never exceeded, every URL is fetched
# exactly once.  Needs the
# cluster in the PG* environment (test/run.sh sets it); creates and drops its
# own database.  The last line of output is a one-line summary.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export S3_DB=coord_s3_test
export PYTHON=${PYTHON:-/usr/bin/python3}

drop_db() {
  psql -qX -d postgres -c 'SET client_min_messages = warning' \
       -c "DROP DATABASE IF EXISTS $S3_DB WITH (FORCE)" >/dev/null 2>&1 || true
}
trap drop_db EXIT

. "$ROOT/examples/s3/demo_section.sh"
report=$(mktemp)
set +e
s3_demo quick | tee "$report"
rc=${PIPESTATUS[0]}
set -e

# A second opinion, straight from the tables: URLs fetched and duplicate
# fetches per round (round 3 may refetch a URL that went stale again while a
# slow crawler got to it, so only its URL count is compared), and fetches
# that came before the previous fetch of their URL was 3 s old.
check=$(psql -qtAX -v ON_ERROR_STOP=1 -d "$S3_DB" -c "
  SELECT string_agg(r || ':' || COALESCE(f.urls, 0) || CASE WHEN r < 3 THEN '/' || COALESCE(f.dups, 0) ELSE '' END,
                    ' ' ORDER BY r)
         || ' early:' || (SELECT count(*)
                            FROM (SELECT owned_at - lag(done_at) OVER (PARTITION BY url ORDER BY owned_at) AS gap
                                    FROM s3.fetches) AS g
                           WHERE gap <= interval '3 seconds')
    FROM generate_series(1, 3) AS r
    LEFT JOIN (SELECT round, count(DISTINCT url) AS urls, count(*) - count(DISTINCT url) AS dups
                 FROM s3.fetches GROUP BY round) AS f ON f.round = r" 2>&1) || check="query failed: $check"
want="1:20/0 2:0/0 3:20 early:0"

# Round 4 from the tables: URLs answered 200 / distinct / answered 429, the
# busy site's requests during its pause, the largest overlap of fetch
# intervals of one site, and jobs not done.  A request during the pause is
# one whose claiming statement began after the pause committed (server
# clock) and returned before the pause's earliest end: a claim that began
# before the commit may return after it (it waited for a busy site's lock,
# or a loaded machine let it run late) and is not one.
check4=$(psql -qtAX -v ON_ERROR_STOP=1 -d "$S3_DB" -c "
  SELECT 'r4:' || count(*) FILTER (WHERE f.status = 200) || '/' || count(DISTINCT f.url) FILTER (WHERE f.status = 200)
         || '/' || count(*) FILTER (WHERE f.status = 429)
         || ' paused:' || (SELECT count(*) FROM s3.site_fetches AS g, s3.pauses AS p
                            WHERE g.site = p.site AND g.claim_started > p.after_commit
                              AND g.claimed_at < p.before_fail + p.retry_after)
         || ' overlap:' || (SELECT max(c) FROM (SELECT sum(d) OVER (PARTITION BY site ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS c
                                                  FROM (SELECT site, claimed_at AS t, 1 AS d FROM s3.site_fetches
                                                        UNION ALL SELECT site, done_at, -1 FROM s3.site_fetches) AS e) AS x)
         || ' live:' || (SELECT count(*) FROM coord.jobs WHERE queue = 's3-crawl' AND state <> 'done')
    FROM s3.site_fetches AS f" 2>&1) || check4="query failed: $check4"
want4="r4:160/160/1 paused:0 overlap:2 live:0"

ok=$(grep -c '^  ok ' "$report" || true)
failed=$(grep -c '^  FAIL ' "$report" || true)
rm -f "$report"
if [ "$rc" = 0 ] && [ "$failed" = 0 ] && [ "$ok" -gt 0 ] && [ "$check" = "$want" ] && [ "$check4" = "$want4" ]; then
  echo "s3_crawlers: $ok checks passed; 20 URLs fetched exactly once by 6 crawlers across a SIGKILL, first waiter took over, not redone until stale;" \
       "160 URLs over 4 sites with a per-site limit of 2 fetched exactly once, nothing from the 429 site during its cool-down ($check4)"
else
  echo "s3_crawlers: FAILED ($failed of $((ok + failed)) checks failed, scenario exit $rc, fetches per round '$check', want '$want'; round 4 '$check4', want '$want4')"
  exit 1
fi
