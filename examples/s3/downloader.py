#!/usr/bin/python3
"""S3 downloader: works off the crawlers' download queue (s3.downloads).

    downloader.py -n NAME [-i IDLE_MS]

The crawlers queue big documents (.pdf) instead of fetching them, and mark
their URL queued (coord.mark_queued), so that other crawlers asking for it
answer false at once.  The downloader claims one queue entry at a time with
FOR UPDATE SKIP LOCKED (several downloaders never take the same entry),
"downloads" it, and in the same transaction records the fetch, deletes the
entry and calls coord.mark_done(url).  If it dies mid-download, its
transaction rolls back and the entry is there for the next downloader.

It runs until it gets SIGTERM or SIGINT, and then exits as soon as the queue
is empty (the demo sends SIGTERM once the crawlers have finished).
Connects with the usual PG* environment variables.
"""
import argparse
import datetime
import random
import signal
import sys
import time

import psycopg2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", dest="name", required=True)
    ap.add_argument("-i", dest="idle_ms", type=int, default=50, help="poll interval while the queue is empty")
    args = ap.parse_args()

    def log(msg):
        now = datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]
        print(f"{now} {args.name} [downloader] {msg}", flush=True)

    stop = []
    # only a flag: a download under way finishes, and so does the queue
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))

    conn = psycopg2.connect(application_name="s3:downloader:" + args.name)
    conn.autocommit = True
    cur = conn.cursor()
    done = 0
    log("started")
    while True:
        # read before the claim, so an entry queued before the signal is seen
        stopping = bool(stop)
        cur.execute("BEGIN")
        cur.execute("SELECT id, url, round, owned_at, waited_ms FROM s3.downloads"
                    " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED")
        row = cur.fetchone()
        if row is None:
            cur.execute("COMMIT")
            if stopping:
                break
            time.sleep(args.idle_ms / 1000)
            continue
        qid, url, rnd, owned_at, waited_ms = row
        ms = random.randint(100, 300)
        time.sleep(ms / 1000)   # the download
        cur.execute("INSERT INTO s3.fetches (url, round, crawler, via, owned_at, waited_ms, fetch_ms)"
                    " VALUES (%s, %s, %s, 'download queue', %s, %s, %s)",
                    (url, rnd, args.name, owned_at, waited_ms, ms))
        cur.execute("DELETE FROM s3.downloads WHERE id = %s", (qid,))
        cur.execute("SELECT coord.mark_done(%s)", (url,))   # any session may mark done
        cur.execute("COMMIT")
        done += 1
        log(f"downloaded {url} in {ms} ms")
    log(f"finished: {done} downloaded, queue empty, told to stop")
    conn.close()


if __name__ == "__main__":
    try:
        main()
    except psycopg2.Error as e:
        print(f"ERROR: {e}".rstrip(), file=sys.stderr, flush=True)
        sys.exit(1)
