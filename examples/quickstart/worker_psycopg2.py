# pg_coord quick start: a worker in Python with psycopg2.  PG* environment
# variables say where to connect; argv: the queue, and how many jobs to take
# before exiting (0: run forever).
import json, select, sys
import psycopg2

queue, stop_after = sys.argv[1], int(sys.argv[2])
conn = psycopg2.connect("")
conn.autocommit = True
cur = conn.cursor()
cur.execute(f'LISTEN "coord:{queue}"')                   # LISTEN before the first claim
job, done = None, 0
while stop_after == 0 or done < stop_after:
    if job is None or job[0] is None:                    # nothing in hand: claim, or wait
        cur.execute("SELECT id, token, payload FROM coord.claim(%s)", (queue,))
        job = cur.fetchone()
        if job is None and select.select([conn], [], [], 1.0)[0]:   # a NOTIFY, or poll after 1 s
            conn.poll()
            conn.notifies.clear()
        continue
    job_id, token, payload = job
    done += 1
    more = 0 if done == stop_after else 1                # claim no job it will not do
    try:
        result = {"sum": sum(payload["numbers"])}        # the work
    except Exception as e:                               # scheduled again later, or dead
        cur.execute("SELECT id, token, payload FROM coord.fail_and_claim(%s, %s, %s, n => %s)",
                    (job_id, token, repr(e), more))
        job = cur.fetchone()
        continue
    # done, and the next job claimed, in one statement and one commit
    cur.execute("SELECT id, token, payload FROM coord.complete_and_claim(%s, %s, %s, n => %s)",
                (job_id, token, json.dumps(result), more))
    job = cur.fetchone()
