#!/usr/bin/python3
"""S5 worker (Python, psycopg2): runs the recurring events of an application server.

    worker.py -n NAME [-q QUEUE] [-p POLL_S] [-k K]

The events are pg_coord schedules (coord.schedule); each has at most one
live instance, a job on QUEUE whose run_at is the slot it is for.  Any number
of workers share the queue; none knows the others.  Each loops:

  claim      coord.claim(QUEUE, 1, session_bound => true): the instance is
             this worker's as long as its database session lives; if the
             worker dies (SIGKILL, crash, lost connection) the instance is
             claimable again at once, by another worker, and it is the same
             job, so the event never runs twice at once.  The same statement
             records the run in s5.runs (started_at) and commits it.
  run        the event: sleeps payload.ms milliseconds
  complete   in ONE transaction: set s5.runs.finished_at, coord.complete(id,
             token) -- which puts the schedule's next instance on, in this
             transaction -- and record that next instance in s5.runs; COMMIT
             if complete answered true, else ROLLBACK.

Idle workers LISTEN on "coord:<queue>" (an enqueue, such as the next instance
put on by a complete, wakes idle claimers) and sleep until the earliest
scheduled instance is due, at most POLL_S seconds (the poll also finds an
instance whose worker died).

With -k K the worker "crashes right after claiming" its K-th event: it prints
a line containing "CLAIMED <event> <job id>" and "hanging", and sleeps until
it is killed (the demo SIGKILLs it).  SIGTERM: finish the current event,
then exit 0.  Connects with the usual PG* environment variables.
"""
import argparse
import datetime
import select
import signal
import sys
import time

import psycopg2

stopping = False


def on_term(signum, frame):
    global stopping
    stopping = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", dest="name", required=True, help="worker name (logs, s5.runs, application_name)")
    ap.add_argument("-q", dest="queue", default="events")
    ap.add_argument("-p", dest="poll_s", type=float, default=0.5, help="longest idle wait before claiming again")
    ap.add_argument("-k", dest="hang_at", type=int, default=0,
                    help="hang (until killed) right after the K-th claim; 0: never")
    args = ap.parse_args()

    def log(msg):
        now = datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]
        print(f"{now} {args.name} {msg}", flush=True)

    def hms(ts):
        return ts.strftime("%H:%M:%S.%f")[:-3] if ts is not None else "-"

    signal.signal(signal.SIGTERM, on_term)
    conn = psycopg2.connect(application_name="s5:worker:" + args.name)
    conn.autocommit = True
    cur = conn.cursor()
    # LISTEN before the first claim, so that no wake-up is missed in between
    cur.execute('LISTEN "coord:%s"' % args.queue.replace('"', '""'))
    log(f"started (pid {conn.get_backend_pid()})")
    claims = runs = 0
    while not stopping:
        # one statement, committed at once: the claim and the record of the run
        cur.execute(
            "WITH c AS (SELECT * FROM coord.claim(%s, 1, session_bound => true))"
            " INSERT INTO s5.runs (event, job_id, worker, token, attempt, slot, payload)"
            " SELECT payload->>'event', id, %s, token, attempt, run_at, payload FROM c"
            " RETURNING id, event, job_id, token, attempt, slot, started_at, payload",
            (args.queue, args.name))
        row = cur.fetchone()
        if row is None:
            # idle: sleep until the earliest scheduled instance is due (at most
            # poll_s), or until a NOTIFY says an instance was put on
            cur.execute("SELECT extract(epoch FROM min(run_at) - clock_timestamp())::float8"
                        " FROM coord.jobs WHERE queue = %s AND state = 'scheduled'", (args.queue,))
            due = cur.fetchone()[0]
            wait = args.poll_s if due is None else min(args.poll_s, max(0.0, due + 0.002))
            if wait > 0 and select.select([conn], [], [], wait)[0]:
                conn.poll()
                conn.notifies.clear()
            continue
        run_id, event, job_id, token, attempt, slot, started_at, payload = row
        claims += 1
        late_ms = (started_at - slot).total_seconds() * 1000
        if claims == args.hang_at:
            log(f"CLAIMED {event} {job_id} (token {token}, attempt {attempt}, slot {hms(slot)}, {late_ms:.0f} ms late)"
                " -- now hanging, as if crashed, until killed")
            while True:
                time.sleep(3600)
        log(f"CLAIMED {event} {job_id} (token {token}, attempt {attempt}, slot {hms(slot)}, {late_ms:.0f} ms late)")
        time.sleep(int(payload.get("ms", 100)) / 1000.0)   # the event's work
        cur.execute("BEGIN")
        cur.execute("UPDATE s5.runs SET finished_at = clock_timestamp() WHERE id = %s", (run_id,))
        cur.execute("SELECT coord.complete(%s::bigint, %s::bigint)", (job_id, token))
        ok = cur.fetchone()[0]
        if ok:
            # the next instance, put on by this very transaction's complete
            cur.execute("UPDATE s5.runs AS r SET next_job_id = s.job_id, next_run_at = s.next_run_at"
                        "  FROM coord.schedules AS s WHERE r.id = %s AND s.name = r.event"
                        " RETURNING r.next_job_id, r.next_run_at, r.finished_at", (run_id,))
            nxt = cur.fetchone()
            cur.execute("COMMIT")
            runs += 1
            if nxt is None:
                log(f"DONE {event} {job_id}: complete -> true; the schedule is gone, no next instance")
            else:
                log(f"DONE {event} {job_id}: complete -> true; next instance job {nxt[0]} at {hms(nxt[1])}"
                    f" (+{(nxt[1] - nxt[2]).total_seconds():.3f} s)")
        else:
            cur.execute("ROLLBACK")
            log(f"LOST {event} {job_id}: complete -> false, the claim is no longer ours: rolled back")
    log(f"stopped: {runs} runs completed")
    conn.close()


if __name__ == "__main__":
    try:
        main()
    except psycopg2.Error as e:
        print(f"ERROR: {e}".rstrip(), file=sys.stderr, flush=True)
        sys.exit(1)
