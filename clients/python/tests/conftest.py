"""Fixtures: a database with pg_coord on the cluster the PG* environment
names (make test's private cluster), made once per run and dropped after."""
from __future__ import annotations

import os
import pathlib
import sys
import threading
import time
from typing import Any, Callable, Iterator, List, Optional

import psycopg
import pytest

HERE = pathlib.Path(__file__).resolve().parent
SRC = HERE.parent / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

import pg_coord  # noqa: E402

DB = os.environ.get("COORD_PY_TEST_DB", "coord_py_tests")


def admin(dbname: str = "postgres") -> psycopg.Connection[Any]:
    return psycopg.connect(dbname=dbname, autocommit=True)


@pytest.fixture(scope="session")
def dbname() -> Iterator[str]:
    with admin() as c:
        c.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        c.execute(f"CREATE DATABASE {DB}")
    with admin(DB) as c:
        c.execute("SET client_min_messages = warning")
        c.execute("CREATE EXTENSION pg_coord CASCADE")
        c.execute("CREATE TABLE side (job_id bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())")
    yield DB
    with admin() as c:
        c.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")


@pytest.fixture
def dsn(dbname: str) -> str:
    return f"dbname={dbname}"


@pytest.fixture
def db(dbname: str) -> Iterator[psycopg.Connection[Any]]:
    """An admin connection to the test database."""
    with admin(dbname) as c:
        yield c


@pytest.fixture
def queue(request: pytest.FixtureRequest) -> str:
    return "q_" + request.node.name.replace("[", "_").replace("]", "")[:40]


def wait_for(cond: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """Polls cond until it is truthy; fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


class Running:
    """A Worker in a thread; stop() drains it and joins."""

    def __init__(self, worker: pg_coord.Worker) -> None:
        self.worker = worker
        self.error: Optional[BaseException] = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.worker.run()
        except BaseException as e:  # noqa: B902
            self.error = e

    def stop(self, timeout: float = 15.0) -> None:
        self.worker.stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "worker did not stop"
        if self.error:
            raise self.error


@pytest.fixture
def start_worker() -> Iterator[Callable[..., Running]]:
    started: List[Running] = []

    def start(*args: Any, **kwargs: Any) -> Running:
        kwargs.setdefault("poll_interval", 0.5)
        r = Running(pg_coord.Worker(*args, **kwargs))
        started.append(r)
        return r
    yield start
    for r in started:
        if r.thread.is_alive():
            r.worker.stop()
            r.thread.join(15)


def job_row(db: psycopg.Connection[Any], id: int, cols: str = "state, result") -> Any:
    return db.execute(f"SELECT {cols} FROM coord.jobs WHERE id = %s", (id,)).fetchone()
