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
done = 0
while stop_after == 0 or done < stop_after:
    cur.execute("SELECT id, token, payload FROM coord.claim(%s, 10)", (queue,))
    jobs = cur.fetchall()
    for job_id, token, payload in jobs:
        try:
            result = {"sum": sum(payload["numbers"])}    # the work
            cur.execute("SELECT coord.complete(%s, %s, %s)", (job_id, token, json.dumps(result)))
        except Exception as e:                           # scheduled again later, or dead
            cur.execute("SELECT coord.fail(%s, %s, %s)", (job_id, token, repr(e)))
        done += 1
    if not jobs:                                         # wait for a NOTIFY, or poll after 1 s
        if select.select([conn], [], [], 1.0)[0]:
            conn.poll()
            conn.notifies.clear()
