#!/usr/bin/python3
"""S4 mail runner (Python, psycopg2): sends the mails of a pg_coord job queue.

    runner.py -n NAME [-m session|lease] [-l LEASE] [-b BATCH] [-s SEND_MS]
              [-S STALL_S] [-c COUNT] [-e] [-p POLL_S] [-q QUEUE]

Any number of runners, on any number of machines, in Python or Node
(runner.js does the same), share one queue; none needs to know the others.
Each loops:

  claim      coord.claim(queue, BATCH, LEASE, session_bound => mode = session)
             hands every job to exactly one claimer (FOR UPDATE SKIP LOCKED):
             no hash-space split among the runners is needed for safety.  The
             claim is recorded in s4.claims by the same statement.
  send       "sends" the mail (sleeps SEND_MS, +-50%), then STALL_S more with -S
  complete   in ONE transaction: INSERT INTO s4.sent + coord.complete(id,
             token); COMMIT if complete answered true, else ROLLBACK: the
             claim is no longer ours (a lease that expired and was claimed
             again by someone else), so this send must not count.

Modes.  session: the claim lasts as long as this runner's database session;
if the runner dies (SIGKILL, crash, lost connection) its jobs are claimable
again at once, with no lease to wait out.  lease: the claim lasts LEASE; a
runner that overruns it (see -S) may find the job taken over, and its
complete returns false.

Idle runners wait on LISTEN "coord:<queue>" (enqueue notifies idle claimers
when it commits) and poll every POLL_S seconds as a fallback.  With -e the
runner exits once the queue has no ready, scheduled or running job; with -c
after COUNT jobs.  Connects with the usual PG* environment variables.
"""
import argparse
import datetime
import random
import select
import sys
import time

import psycopg2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", dest="name", required=True, help="runner name (logs, application_name)")
    ap.add_argument("-m", dest="mode", choices=("session", "lease"), default="session")
    ap.add_argument("-l", dest="lease", default="30 seconds", help="lease length (lease mode), an interval")
    ap.add_argument("-b", dest="batch", type=int, default=1, help="jobs per claim")
    ap.add_argument("-s", dest="send_ms", type=int, default=20, help="time to send one mail")
    ap.add_argument("-S", dest="stall_s", type=float, default=0, help="stall this long before completing")
    ap.add_argument("-c", dest="count", type=int, default=0, help="exit after this many jobs (0: no limit)")
    ap.add_argument("-e", dest="exit_empty", action="store_true", help="exit when the queue is empty")
    ap.add_argument("-p", dest="poll_s", type=float, default=1.0, help="poll interval while idle")
    ap.add_argument("-q", dest="queue", default="mail")
    args = ap.parse_args()

    def log(msg):
        now = datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]
        print(f"{now} {args.name} [python/{args.mode}] {msg}", flush=True)

    conn = psycopg2.connect(application_name="s4:runner:" + args.name)
    conn.autocommit = True
    cur = conn.cursor()
    # LISTEN before the first claim: an enqueue that commits after a claim
    # found nothing is then never missed (it notifies idle claimers).
    cur.execute('LISTEN "coord:%s"' % args.queue.replace('"', '""'))
    session_bound = args.mode == "session"
    sent = lost = 0
    log(f"started (pid {conn.get_backend_pid()})")
    while not args.count or sent + lost < args.count:
        n = args.batch if not args.count else min(args.batch, args.count - sent - lost)
        # one statement: the claim and its record in s4.claims
        cur.execute(
            "WITH c AS (SELECT * FROM coord.claim(%s, %s, %s::interval, session_bound => %s))"
            " INSERT INTO s4.claims (job_id, mail_no, runner, mode, token, lease_until)"
            " SELECT id, (payload->>'n')::integer, %s, %s, token, lease_until FROM c"
            " RETURNING job_id, mail_no, token, lease_until",
            (args.queue, n, args.lease, session_bound, args.name, args.mode))
        jobs = sorted(cur.fetchall())
        if not jobs:
            if args.exit_empty:
                cur.execute("SELECT COALESCE(sum(ready + scheduled + running), 0) FROM coord.queue_stats"
                            " WHERE queue = %s", (args.queue,))
                if cur.fetchone()[0] == 0:
                    break
            # idle: wait for a NOTIFY, or poll
            if select.select([conn], [], [], args.poll_s)[0]:
                conn.poll()
                conn.notifies.clear()
            continue
        log("claimed " + ", ".join(f"job {j} (mail {m}, token {t})" for j, m, t, _ in jobs)
            + (f", lease until {jobs[0][3].strftime('%H:%M:%S.%f')[:-3]}" if not session_bound else ""))
        for job_id, mail_no, token, _ in jobs:
            time.sleep(args.send_ms * random.uniform(0.5, 1.5) / 1000)   # the SMTP conversation
            if args.stall_s:
                log(f"job {job_id}: stalling {args.stall_s} s before completing")
                time.sleep(args.stall_s)
            cur.execute("BEGIN")
            cur.execute("INSERT INTO s4.sent (job_id, mail_no, runner, token) VALUES (%s, %s, %s, %s)",
                        (job_id, mail_no, args.name, token))
            cur.execute("SELECT coord.complete(%s::bigint, %s::bigint)", (job_id, token))
            ok = cur.fetchone()[0]
            cur.execute("COMMIT" if ok else "ROLLBACK")
            if ok:
                sent += 1
                log(f"sent mail {mail_no} (job {job_id}, token {token}): complete -> true, committed")
            else:
                lost += 1
                log(f"job {job_id} (mail {mail_no}, token {token}): complete -> false,"
                    " the claim is no longer ours: rolled back")
    log(f"finished: {sent} sent, {lost} lost claims")
    conn.close()


if __name__ == "__main__":
    try:
        main()
    except psycopg2.Error as e:
        print(f"ERROR: {e}".rstrip(), file=sys.stderr, flush=True)
        sys.exit(1)
