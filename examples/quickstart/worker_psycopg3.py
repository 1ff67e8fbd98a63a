# pg_coord quick start: a worker in Python with psycopg 3.  PG* environment
# variables say where to connect; argv: the queue, and how many jobs to take
# before exiting (0: run forever).
import json, select, sys
import psycopg

queue, stop_after = sys.argv[1], int(sys.argv[2])
conn = psycopg.connect(autocommit=True)
conn.execute(f'LISTEN "coord:{queue}"')                  # LISTEN before the first claim
job, done = None, 0
while stop_after == 0 or done < stop_after:
    if job is None or job[0] is None:                    # nothing in hand: claim, or wait
        job = conn.execute("SELECT id, token, payload FROM coord.claim(%s)", (queue,)).fetchone()
        if job is None:                                  # wait for a NOTIFY, or poll after 1 s
            select.select([conn], [], [], 1.0)
        continue
    job_id, token, payload = job
    done += 1
    more = 0 if done == stop_after else 1                # claim no job it will not do
    try:
        result = {"sum": sum(payload["numbers"])}        # the work
    except Exception as e:                               # scheduled again later, or dead
        job = conn.execute("SELECT id, token, payload FROM coord.fail_and_claim(%s, %s, %s, n => %s)",
                           (job_id, token, repr(e), more)).fetchone()
        continue
    # done, and the next job claimed, in one statement and one commit
    job = conn.execute("SELECT id, token, payload FROM coord.complete_and_claim(%s, %s, %s, n => %s)",
                       (job_id, token, json.dumps(result), more)).fetchone()
