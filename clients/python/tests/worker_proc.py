"""A worker process for the kill and drain scenarios:
    worker_proc.py DSN QUEUE session|lease [LEASE_SECONDS]
A job whose payload has "hang" (on its first attempt) signals that it runs
(coord.progress) and sleeps until the file named by "until" exists (or for
ever); every job writes its id into table side in its completing transaction."""
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "src"))
import pg_coord  # noqa: E402

dsn, queue, mode = sys.argv[1:4]
lease = float(sys.argv[4]) if len(sys.argv) > 4 else 300


def handler(job: pg_coord.Job) -> dict:
    if job.payload.get("hang") and job.attempt == 1:
        job.progress({"started": True})
        until = job.payload.get("until")
        while not (until and os.path.exists(until)):
            time.sleep(0.02)
    job.in_commit("INSERT INTO side (job_id) VALUES (%s)", (job.id,))
    return {"id": job.id, "pid": os.getpid()}


w = pg_coord.Worker(dsn, queue, handler, session_bound=(mode == "session"), lease=lease,
                    poll_interval=0.3)
w.run()
print("drained", w.completed, flush=True)
