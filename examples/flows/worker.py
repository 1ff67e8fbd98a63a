#!/usr/bin/python3
"""Import-flow worker (Python, psycopg2): runs the flow's nodes, the batch's notifications and its callback.

    worker.py -n NAME [-p POLL_S]

Any number of workers share three queues; none knows the others:

  import         the nodes of an import flow (producer.py enqueues them with
                 one coord.enqueue_flow); the payload says the step:
                   fetch      reads the file                    -> {"rows": n}
                   transform  one of clean, geocode, dedupe: reads fetch's
                              result with coord.parent_results    -> {"rows": n, ...}
                   aggregate  reads the three transforms' results, and opens
                              a batch of one notification per customer:
                              coord.open_batch, coord.enqueue_many(...,
                              batch => id), coord.seal_batch
  notify         the batch's notifications (one per customer)
  import_report  the batch's callback: enqueued by pg_coord, once, when the
                 last notification has finished, with the counts

Each claim is session-bound (coord.claim(queue, n, session_bound => true)):
the job is this worker's as long as its database session lives, and
claimable again at once if the worker dies.  The claim is recorded in
flows.claims in the claim's transaction.  A job ends in ONE transaction:
whatever the step writes (the aggregate: its whole batch), its row in
flows.results, and coord.complete(id, token, result) -- COMMIT if complete
answered true, else ROLLBACK: a job is done exactly once, or not at all.

Idle workers LISTEN on "coord:<queue>" (an enqueue wakes idle claimers, a
finished parent wakes its children's) and claim again at least every POLL_S
seconds (the poll finds a job whose worker died: a session that ends sends
no notification).  SIGTERM: finish the current job, then exit 0.  Connects
with the usual PG* environment variables.
"""
import argparse
import datetime
import json
import select
import signal
import sys
import time

import psycopg2

QUEUES = ("import", "import_report", "notify")    # the order claims try them in
NOTIFY_CLAIM = 25                                   # notifications claimed at once
stopping = False


def on_term(signum, frame):
    global stopping
    stopping = True


def parents(cur, job_id, token):
    """What the job's parents returned: {parent's node: result}."""
    cur.execute("SELECT r.result FROM coord.parent_results(%s, %s) AS r WHERE r.state = 'done'", (job_id, token))
    return {r["node"]: r for (r,) in cur.fetchall()}


def run_import(cur, job_id, token, p):
    """A node of the import flow; returns its result.  Runs in the completing transaction."""
    time.sleep(p.get("ms", 0) / 1000.0)             # the work
    if p["step"] == "fetch":
        return {"node": "fetch", "file": p["file"], "rows": p["rows"]}
    if p["step"] == "transform":
        rows = parents(cur, job_id, token)["fetch"]["rows"]
        return {"node": p["node"], "rows": rows - p.get("drops", 0)}
    # aggregate: the three transforms, then a batch of notifications whose
    # callback (queue import_report) gets the counts; all of it commits with
    # this job's complete, or none of it
    got = parents(cur, job_id, token)
    rows = min(r["rows"] for r in got.values())
    cur.execute("SELECT coord.open_batch('import_report', %s)",
                (json.dumps({"report": p["report"], "rows": rows}),))
    batch = cur.fetchone()[0]
    cur.execute("SELECT count(*) FROM coord.enqueue_many('notify',"
                " ARRAY(SELECT jsonb_build_object('to', 'customer-' || i || '@example.org', 'report', %s)"
                "         FROM generate_series(1, %s) AS i), batch => %s)",
                (p["report"], p["customers"], batch))
    notifications = cur.fetchone()[0]
    cur.execute("SELECT coord.seal_batch(%s)", (batch,))
    return {"node": "aggregate", "rows": rows, "from": {n: r["rows"] for n, r in sorted(got.items())},
            "batch": batch, "notifications": notifications}


def run_job(cur, queue, job_id, token, payload):
    if queue == "import":
        return run_import(cur, job_id, token, payload)
    if queue == "notify":
        return {"sent": payload["to"]}              # the work: a mail, a push message
    # import_report: the batch's callback; its payload carries the counts
    time.sleep(0.3)                                 # the work: writes the report
    return {"report": payload["report"], "rows": payload["rows"], "batch": payload["batch"],
            "notified": payload["done"], "failed": payload["dead"] + payload["cancelled"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", dest="name", required=True, help="worker name (logs, flows.claims, application_name)")
    ap.add_argument("-p", dest="poll_s", type=float, default=0.1, help="longest idle wait before claiming again")
    args = ap.parse_args()

    def log(msg):
        now = datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]
        print(f"{now} {args.name} {msg}", flush=True)

    signal.signal(signal.SIGTERM, on_term)
    conn = psycopg2.connect(application_name="flows:worker:" + args.name)
    cur = conn.cursor()
    # LISTEN before the first claim, so that no wake-up is missed in between
    for q in QUEUES:
        cur.execute('LISTEN "coord:%s"' % q)
    conn.commit()
    log(f"started (pid {conn.get_backend_pid()})")
    done = {q: 0 for q in QUEUES}
    while not stopping:
        for queue in QUEUES:
            # the claim and its record, one transaction
            cur.execute("SELECT id, token, attempt, payload FROM coord.claim(%s, %s, session_bound => true)",
                        (queue, NOTIFY_CLAIM if queue == "notify" else 1))
            jobs = cur.fetchall()
            for job_id, token, attempt, payload in jobs:
                cur.execute("INSERT INTO flows.claims (job_id, queue, node, token, attempt, worker)"
                            " VALUES (%s, %s, %s, %s, %s, %s)",
                            (job_id, queue, payload.get("node"), token, attempt, args.name))
            conn.commit()
            if jobs:
                break
        if not jobs:
            # idle: until a NOTIFY, or poll_s
            if select.select([conn], [], [], args.poll_s)[0]:
                conn.poll()
                conn.notifies.clear()
            continue
        for job_id, token, attempt, payload in jobs:
            if queue != "notify":
                log(f"CLAIMED {queue} {payload.get('node', '')} job {job_id} (attempt {attempt})")
            result = run_job(cur, queue, job_id, token, payload)
            cur.execute("INSERT INTO flows.results (job_id, queue, node, token, worker, result)"
                        " VALUES (%s, %s, %s, %s, %s, %s)",
                        (job_id, queue, payload.get("node"), token, args.name, json.dumps(result)))
            cur.execute("SELECT coord.complete(%s, %s, %s)", (job_id, token, json.dumps(result)))
            if cur.fetchone()[0]:
                conn.commit()
                done[queue] += 1
                if queue != "notify":
                    log(f"DONE {queue} {payload.get('node', '')} job {job_id}: {json.dumps(result)}")
            else:
                conn.rollback()
                log(f"LOST {queue} job {job_id}: complete -> false, the claim is no longer ours: rolled back")
    log("stopped: " + ", ".join(f"{q} {n}" for q, n in done.items()) + " jobs done")
    conn.close()


if __name__ == "__main__":
    try:
        main()
    except psycopg2.Error as e:
        print(f"ERROR: {e}".rstrip(), file=sys.stderr, flush=True)
        sys.exit(1)
