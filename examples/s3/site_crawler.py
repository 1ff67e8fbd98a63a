#!/usr/bin/python3
"""S3 round 4: a crawler working off the crawl frontier kept as a pg_coord queue.

    site_crawler.py -n NAME [-q QUEUE] [-l LEASE] [-F FETCH_MS]

Each URL is a job of QUEUE (default s3-crawl) with payload {"url", "site"},
enqueued with key => url (one live job per URL) and limit_key => site, and
the queue has a per-site limit (coord.set_limit(queue, concurrency => 2,
per_key => true)): a claim never returns a URL of a site that has its
fetches in flight already, it skips to a site with room.  For each claimed
job the crawler "fetches" the URL (FETCH_MS, default 100 ms) from the
simulated site (s3.sites: a site with answers_429 > 0 answers its first
answers_429 requests with HTTP 429 and a Retry-After of its retry_after):

  200: records the fetch in s3.site_fetches and coord.complete(id, token),
       in one transaction (a crawler that dies before that commit recorded
       nothing, and the job is claimed again)
  429: records the answer, then coord.fail(id, token, '429 ...',
       retry_after, pause_key => true): the whole site is paused for
       retry_after for every crawler, the job is due again after it, and no
       attempt is used (it counts as a snooze); s3.pauses gets the server's
       time just before the fail and just after its commit

With no job to claim, the crawler LISTENs on "coord:QUEUE" and sleeps until
coord.next_due(QUEUE) (at most 100 ms); it exits once the queue has no
scheduled, ready or running job left.  Claims are session-bound, or lease
claims with -l LEASE (e.g. '30 seconds').  Connects with the usual PG*
environment variables; application_name s3:site-crawler:NAME.
"""
import argparse
import datetime
import json
import random
import select
import sys
import time

import psycopg2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", dest="name", required=True)
    ap.add_argument("-q", dest="queue", default="s3-crawl")
    ap.add_argument("-l", dest="lease", default=None, help="lease claims of this length (default: session-bound)")
    ap.add_argument("-F", dest="fetch_ms", type=int, default=100, help="how long a fetch takes, in ms")
    ap.add_argument("-t", dest="timeout", type=float, default=60.0, help="give up after this many seconds")
    args = ap.parse_args()

    conn = psycopg2.connect(application_name="s3:site-crawler:" + args.name)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute(f'LISTEN "coord:{args.queue}"')     # before the first claim

    def log(msg):
        now = datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]
        print(f"{now} {args.name} {msg}", flush=True)

    how = "session-bound" if args.lease is None else f"lease {args.lease}"
    log(f"crawling queue {args.queue}, {how} claims, fetches take {args.fetch_ms} ms")
    counts = {"200": 0, "429": 0, "lost": 0, "idle": 0}
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if args.lease is None:
            cur.execute("SELECT c.id, c.token, c.payload, pg_catalog.statement_timestamp(), pg_catalog.clock_timestamp()"
                        "  FROM coord.claim(%s, 1, session_bound => true) AS c", (args.queue,))
        else:
            cur.execute("SELECT c.id, c.token, c.payload, pg_catalog.statement_timestamp(), pg_catalog.clock_timestamp()"
                        "  FROM coord.claim(%s, 1, lease => %s::interval) AS c", (args.queue, args.lease))
        row = cur.fetchone()
        if row is None:
            counts["idle"] += 1
            cur.execute("SELECT EXISTS (SELECT FROM coord.jobs WHERE queue = %s"
                        "                  AND state IN ('scheduled', 'ready', 'running')),"
                        "       extract(epoch FROM coord.next_due(%s) - pg_catalog.clock_timestamp())",
                        (args.queue, args.queue))
            live, due = cur.fetchone()
            if not live:
                break
            wait = 0.1 if due is None else min(max(float(due), 0.0), 0.1)
            if wait > 0 and select.select([conn], [], [], wait)[0]:
                conn.poll()
                conn.notifies.clear()
            continue
        job, token, payload, claim_started, claimed_at = row
        url, site = payload["url"], payload["site"]
        # the simulated site: its first answers_429 requests get 429
        cur.execute("UPDATE s3.sites SET hits = hits + 1 WHERE site = %s"
                    " RETURNING hits <= answers_429, retry_after", (site,))
        too_many, retry_after = cur.fetchone()
        time.sleep(args.fetch_ms * random.uniform(0.8, 1.2) / 1000)
        if too_many:
            cur.execute("INSERT INTO s3.site_fetches (url, site, crawler, status, job_id, token, claim_started, claimed_at)"
                        " VALUES (%s, %s, %s, 429, %s, %s, %s, %s)",
                        (url, site, args.name, job, token, claim_started, claimed_at))
            cur.execute("SELECT pg_catalog.clock_timestamp()")
            before = cur.fetchone()[0]
            cur.execute("SELECT coord.fail(%s, %s, '429 Too Many Requests', retry_after => %s,"
                        "                  pause_key => true)", (job, token, retry_after))
            state = cur.fetchone()[0]
            cur.execute("INSERT INTO s3.pauses (site, crawler, job_id, before_fail, after_commit, retry_after, state)"
                        " VALUES (%s, %s, %s, %s, pg_catalog.clock_timestamp(), %s, %s)",
                        (site, args.name, job, before, retry_after, state))
            counts["429"] += 1
            log(f"{url}: 429, site {site} paused for {retry_after}, job {job} {state}")
            continue
        cur.execute("BEGIN")
        cur.execute("INSERT INTO s3.site_fetches (url, site, crawler, status, job_id, token, claim_started, claimed_at)"
                    " VALUES (%s, %s, %s, 200, %s, %s, %s, %s)",
                    (url, site, args.name, job, token, claim_started, claimed_at))
        cur.execute("SELECT coord.complete(%s, %s, %s)", (job, token, json.dumps({"status": 200})))
        if cur.fetchone()[0]:
            cur.execute("COMMIT")
            counts["200"] += 1
        else:
            cur.execute("ROLLBACK")   # the claim is someone else's now: they record it
            counts["lost"] += 1
            log(f"{url}: claim lost, not recorded")
    log(f"finished: {counts['200']} fetched, {counts['429']} answered 429, {counts['lost']} lost,"
        f" {counts['idle']} empty claims")
    conn.close()


if __name__ == "__main__":
    try:
        main()
    except psycopg2.Error as e:
        print(f"ERROR: {e}".rstrip(), file=sys.stderr, flush=True)
        sys.exit(1)
