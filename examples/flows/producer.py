#!/usr/bin/python3
"""Import-flow producer (Python, psycopg2): enqueues the flow with one call, then awaits its results.

    producer.py FILE CUSTOMERS

1. One coord.enqueue_flow call enqueues the whole import, all or nothing:

       fetch --> clean   --\
             --> geocode ---> aggregate
             --> dedupe  --/

   fetch is ready at once; the others wait (state waiting) until their
   parents are done.  The same transaction records the nodes' job ids in
   flows.nodes.
2. coord.await(aggregate): sleeps (no polling) until the aggregate has
   finished; its result names the batch of CUSTOMERS notifications it opened.
3. The batch's callback job exists only once the batch has ended: the
   producer looks for it in coord.batches every 20 ms (at most 60 s), then
   coord.await(callback) gives the final report.

Each await is recorded in flows.awaits (the server's clock before and after).
Prints what it does; exits 1 if a job did not end done.  Connects with the
usual PG* environment variables.
"""
import json
import sys
import time

import psycopg2

WAIT = "60 seconds"                  # the longest a coord.await waits


def main():
    file, customers = sys.argv[1], int(sys.argv[2])
    conn = psycopg2.connect(application_name="flows:producer")
    conn.autocommit = True
    cur = conn.cursor()

    def say(msg):
        print(msg, flush=True)

    def node(name, step, after=(), **payload):
        return {"name": name, "queue": "import", "after": list(after),
                "payload": {"node": name, "step": step, **payload}}

    flow = [
        node("fetch", "fetch", file=file, rows=48210, ms=300),
        node("clean", "transform", ["fetch"], drops=312, ms=800),
        node("geocode", "transform", ["fetch"], ms=1500),
        node("dedupe", "transform", ["fetch"], drops=95, ms=600),
        node("aggregate", "aggregate", ["clean", "geocode", "dedupe"],
             report="import " + file, customers=customers, ms=200),
    ]
    # 1. the flow, and our record of it, in one transaction
    cur.execute("BEGIN")
    cur.execute("SELECT coord.enqueue_flow(%s)", (json.dumps(flow),))
    ids = cur.fetchone()[0]
    for n in flow:
        cur.execute("INSERT INTO flows.nodes (name, job_id, after) VALUES (%s, %s, %s)",
                    (n["name"], ids[n["name"]], n["after"]))
    cur.execute("SELECT string_agg(n.name || ' ' || j.id || ' ' || j.state, ', ' ORDER BY j.id)"
                "  FROM flows.nodes AS n JOIN coord.jobs AS j ON j.id = n.job_id")
    states = cur.fetchone()[0]
    cur.execute("COMMIT")
    say(f"enqueue_flow -> {json.dumps(ids)}")
    say(f"  in its transaction: {states}")

    def wait_for(what, job_id):
        cur.execute("SELECT clock_timestamp()")
        asked = cur.fetchone()[0]
        t0 = time.monotonic()
        cur.execute("SELECT state, result, error FROM coord.await(%s, %s)", (job_id, WAIT))
        state, result, error = cur.fetchone()
        waited = time.monotonic() - t0
        cur.execute("INSERT INTO flows.awaits (what, job_id, asked_at, returned_at, state, result)"
                    " VALUES (%s, %s, %s, clock_timestamp(), %s, %s)",
                    (what, job_id, asked, state, json.dumps(result) if result is not None else None))
        say(f"coord.await({what}, job {job_id}) -> {state} after {waited:.3f} s: "
            f"{json.dumps(result) if result is not None else error}")
        return state, result

    # 2. the aggregate
    t_start = time.monotonic()
    state, result = wait_for("aggregate", ids["aggregate"])
    if state != "done":
        return 1
    # 3. the batch's callback: its job exists once the batch has ended
    batch, deadline, callback = result["batch"], time.monotonic() + 60, None
    while callback is None and time.monotonic() < deadline:
        cur.execute("SELECT callback_job FROM coord.batches WHERE batch = %s", (batch,))
        callback = cur.fetchone()[0]
        if callback is None:
            time.sleep(0.02)
    if callback is None:
        say(f"batch {batch}: no callback job after 60 s")
        return 1
    say(f"batch {batch} ended: callback job {callback}")
    state, result = wait_for("callback", callback)
    say(f"the import's final report after {time.monotonic() - t_start:.3f} s in all: {json.dumps(result)}")
    return 0 if state == "done" else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except psycopg2.Error as e:
        print(f"ERROR: {e}".rstrip(), file=sys.stderr, flush=True)
        sys.exit(1)
