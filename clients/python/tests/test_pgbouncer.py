"""S-pgbouncer-lease: a lease-claim worker through a real PgBouncer in
transaction mode (Debian's pgbouncer), with the library's pooler setting."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Any, Iterator

import psycopg
import pytest

import pg_coord
from conftest import job_row, wait_for

PORT = 6432


@pytest.fixture
def bouncer(dbname: str) -> Iterator[str]:
    exe = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    if not os.path.exists(exe):
        pytest.fail("pgbouncer not found (Debian: pgbouncer)")
    d = tempfile.mkdtemp(prefix="pg_coord_py_pgb.")
    os.chmod(d, 0o755)
    root = os.getuid() == 0
    if root:
        shutil.chown(d, "postgres")
    with open(f"{d}/pgbouncer.ini", "w") as f:
        f.write(f"""[databases]
{dbname} = host={os.environ.get('PGHOST', '/tmp')} port={os.environ.get('PGPORT', '5432')} dbname={dbname} user={os.environ.get('PGUSER', 'postgres')}
[pgbouncer]
listen_addr =
listen_port = {PORT}
unix_socket_dir = {d}
auth_type = any
pool_mode = transaction
default_pool_size = 1
max_client_conn = 50
logfile = {d}/pgbouncer.log
pidfile = {d}/pgbouncer.pid
""")
    cmd = [exe, "-d", "-q", f"{d}/pgbouncer.ini"]
    subprocess.run((["runuser", "-u", "postgres", "--"] if root else []) + cmd, check=True)
    try:
        wait_for(lambda: os.path.exists(f"{d}/.s.PGSQL.{PORT}"), 5, "pgbouncer's socket")
        yield f"host={d} port={PORT} dbname={dbname}"
    finally:
        try:
            with open(f"{d}/pgbouncer.pid") as f:
                os.kill(int(f.read().strip()), 15)
        except (OSError, ValueError):
            pass
        shutil.rmtree(d, ignore_errors=True)


def test_S_pgbouncer_lease(bouncer: str, db: psycopg.Connection[Any], queue: str, start_worker: Any) -> None:
    with pg_coord.Client(bouncer, prepare_threshold=None) as c:
        ids = [c.enqueue(queue, {"n": i}) for i in range(10)]
    r = start_worker(bouncer, queue, lambda job: {"n": job.payload["n"], "attempt": job.attempt},
                     session_bound=False, pooler=True, lease=30, concurrency=2, poll_interval=0.2)
    wait_for(lambda: all(job_row(db, i)[0] == "done" for i in ids), 20, "every job done through PgBouncer")
    r.stop()
    assert r.worker.completed == 10
    for i, id in enumerate(ids):
        assert job_row(db, id) == ("done", {"n": i, "attempt": 1})
    with pytest.raises(ValueError):
        pg_coord.Worker(bouncer, queue, lambda job: None, pooler=True)     # session-bound needs a session
