#!/usr/bin/python3
"""S3 crawler, Python/psycopg2 flavour (crawler.sh is the same in bash).

    crawler.py -n NAME -f URLFILE [-r ROUND] [-s STALE_AFTER] [-S START_MS]

URLFILE has one URL a line, the same file for every crawler.  The first URL
is the start page: every crawler asks for it first.  The others are asked
for in an order shuffled per process.  For each URL:

  coord.request(url, stale_after)  blocks while another live crawler owns it
    true:  a page:  fetch it (simulated: 50-200 ms, START_MS for the start
                    page), then record the fetch and coord.mark_done(url) in
                    one transaction
           a .pdf:  too big to fetch inline: queue it for a downloader
                    (downloader.py) and coord.mark_queued(url) in one
                    transaction
    false: queued or done by someone else (and not stale): skip it

A crawler that dies while it owns a URL (SIGKILL, lost connection) loses it
with its session: the first crawler waiting for that URL gets true instead.
Recording the fetch and marking it done commit together, so a fetch is
either recorded and done, or neither and redone by whoever takes over.
Connects with the usual PG* environment variables.
"""
import argparse
import datetime
import random
import sys
import time

import psycopg2


class Crawler:
    def __init__(self, args):
        self.name = args.name
        self.round = args.round
        self.stale_after = args.stale_after
        self.start_ms = args.start_ms
        # autocommit: coord.request runs in a transaction of its own, so that
        # the "requested" state is committed at once and the session holds
        # nothing but the key's lock while it fetches.  Ownership belongs to
        # the session, not to a transaction.
        self.conn = psycopg2.connect(application_name="s3:crawler:" + self.name)
        self.conn.autocommit = True
        self.cur = self.conn.cursor()
        self.counts = {"fetched": 0, "queued": 0, "false": 0}

    def log(self, msg):
        now = datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]
        print(f"{now} {self.name} [python] {msg}", flush=True)

    def request(self, url):
        """coord.request, blocking; (answer, server time of the answer, ms waited)."""
        t0 = time.monotonic()
        self.cur.execute("SELECT coord.request(%s, stale_after => %s::interval), clock_timestamp()",
                         (url, self.stale_after))
        ok, at = self.cur.fetchone()
        return ok, at, (time.monotonic() - t0) * 1000

    def fetch(self, url, ms, owned_at, waited_ms):
        time.sleep(ms / 1000)   # the "download"
        self.cur.execute("BEGIN")
        self.cur.execute("INSERT INTO s3.fetches (url, round, crawler, via, owned_at, waited_ms, fetch_ms)"
                         " VALUES (%s, %s, %s, 'crawler', %s, %s, %s)",
                         (url, self.round, self.name, owned_at, round(waited_ms, 1), ms))
        self.cur.execute("SELECT coord.mark_done(%s)", (url,))
        self.cur.execute("COMMIT")   # waiters for url answer false from here on

    def queue(self, url, owned_at, waited_ms):
        self.cur.execute("BEGIN")
        self.cur.execute("INSERT INTO s3.downloads (url, round, queued_by, owned_at, waited_ms)"
                         " VALUES (%s, %s, %s, %s, %s)",
                         (url, self.round, self.name, owned_at, round(waited_ms, 1)))
        self.cur.execute("SELECT coord.mark_queued(%s)", (url,))
        self.cur.execute("COMMIT")

    def crawl(self, url, ms):
        ok, at, waited = self.request(url)
        self.log(f"request {url} -> {str(ok).lower()} after {waited:.0f} ms")
        if not ok:
            self.counts["false"] += 1
        elif url.endswith(".pdf"):
            self.queue(url, at, waited)
            self.counts["queued"] += 1
            self.log(f"queued {url} for download")
        else:
            self.fetch(url, ms, at, waited)
            self.counts["fetched"] += 1
            self.log(f"fetched {url} in {ms} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", dest="name", required=True, help="crawler name (logs, application_name)")
    ap.add_argument("-f", dest="urlfile", required=True, help="file with one URL a line; the first is the start page")
    ap.add_argument("-r", dest="round", type=int, default=1, help="round number recorded with each fetch")
    ap.add_argument("-s", dest="stale_after", default=None,
                    help="interval after which done URLs are fetched again (default: never)")
    ap.add_argument("-S", dest="start_ms", type=int, default=None,
                    help="how long fetching the start page takes, in ms (default: like any page)")
    args = ap.parse_args()

    with open(args.urlfile) as f:
        urls = [line.strip() for line in f if line.strip()]
    start, rest = urls[0], urls[1:]
    random.shuffle(rest)

    c = Crawler(args)
    c.log(f"round {args.round}, {len(urls)} URLs, stale_after {args.stale_after or 'never'}")
    c.crawl(start, args.start_ms if args.start_ms is not None else random.randint(50, 200))
    for url in rest:
        c.crawl(url, random.randint(50, 200))
    n = c.counts
    c.log(f"finished: {len(urls)} requests, {n['fetched']} fetched, {n['queued']} queued, {n['false']} false")
    c.conn.close()


if __name__ == "__main__":
    try:
        main()
    except psycopg2.Error as e:
        # like a crashed crawler: PostgreSQL lets go of whatever the session owned
        print(f"ERROR: {e}".rstrip(), file=sys.stderr, flush=True)
        sys.exit(1)
