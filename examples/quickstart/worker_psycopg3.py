# pg_coord quick start: a worker in Python with psycopg 3.  PG* environment
# variables say where to connect; argv: the queue, and how many jobs to take
# before exiting (0: run forever).
import json, select, sys
import psycopg

queue, stop_after = sys.argv[1], int(sys.argv[2])
conn = psycopg.connect(autocommit=True)
conn.execute(f'LISTEN "coord:{queue}"')                  # LISTEN before the first claim
done = 0
while stop_after == 0 or done < stop_after:
    jobs = conn.execute("SELECT id, token, payload FROM coord.claim(%s, 10)", (queue,)).fetchall()
    for job_id, token, payload in jobs:
        try:
            result = {"sum": sum(payload["numbers"])}    # the work
            conn.execute("SELECT coord.complete(%s, %s, %s)", (job_id, token, json.dumps(result)))
        except Exception as e:                           # scheduled again later, or dead
            conn.execute("SELECT coord.fail(%s, %s, %s)", (job_id, token, repr(e)))
        done += 1
    if not jobs:                                         # wait for a NOTIFY, or poll after 1 s
        select.select([conn], [], [], 1.0)
