#!/usr/bin/env python3
"""Enqueue-to-claim latency of one idle worker (bench/run.sh section latency).

usage: latency.py MODE N INTERVAL_MS QUEUE
  MODE listen: the worker LISTENs on "coord:QUEUE", claims in a loop and, when
               a claim returns nothing, waits on the socket (select, 50 ms cap)
  MODE poll:   the worker claims, and sleeps 10 ms when a claim returns nothing
A producer (a second connection, in a thread) enqueues N jobs INTERVAL_MS
apart, each with payload {"t": clock_timestamp() at enqueue}; latency =
clock_timestamp() at claim - t.  Prints one latency in ms per line.
"""
import select, sys, threading, time
import psycopg2

mode, n, interval, queue = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1000, sys.argv[4]
dsn = "dbname=coord_bench"

def producer(ready):
    c = psycopg2.connect(dsn)
    c.autocommit = True
    cur = c.cursor()
    ready.wait()
    for _ in range(n):
        cur.execute("SELECT coord.enqueue(%s, jsonb_build_object('t', extract(epoch FROM clock_timestamp())))", (queue,))
        time.sleep(interval)
    c.close()

w = psycopg2.connect(dsn)
w.autocommit = True
cur = w.cursor()
if mode == "listen":
    cur.execute('LISTEN "coord:%s"' % queue)
ready = threading.Event()
t = threading.Thread(target=producer, args=(ready,))
t.start()
lat = []
# the first claim finds nothing and marks the worker idle
cur.execute("SELECT id, token, (payload->>'t')::float8, extract(epoch FROM clock_timestamp()) FROM coord.claim(%s)", (queue,))
assert cur.fetchone() is None
ready.set()
deadline = time.time() + n * interval + 30
while len(lat) < n and time.time() < deadline:
    cur.execute("SELECT id, token, (payload->>'t')::float8, extract(epoch FROM clock_timestamp()) FROM coord.claim(%s)", (queue,))
    row = cur.fetchone()
    if row is None:
        if mode == "listen":
            if select.select([w], [], [], 0.05)[0]:
                w.poll()
                w.notifies.clear()
        else:
            time.sleep(0.010)
        continue
    jid, tok, t_enq, t_claim = row
    lat.append((float(t_claim) - t_enq) * 1000)
    cur.execute("SELECT coord.complete(%s::bigint, %s::bigint)", (jid, tok))
t.join()
for x in lat:
    print(f"{x:.3f}")
