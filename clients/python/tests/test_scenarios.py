"""clients/scenarios.md, each test named after its scenario id."""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List

import psycopg
import pytest

import pg_coord
from conftest import HERE, job_row, wait_for

WORKER_PROC = str(HERE / "worker_proc.py")


def states(db: psycopg.Connection[Any], ids: List[int]) -> Dict[int, str]:
    return dict(db.execute("SELECT id, state FROM coord.jobs WHERE id = ANY(%s)", (ids,)).fetchall())


def all_done(db: psycopg.Connection[Any], ids: List[int]) -> bool:
    s = states(db, ids)
    return len(s) == len(ids) and set(s.values()) == {"done"}


def test_S_results(dsn: str, db: psycopg.Connection[Any], queue: str, start_worker: Any) -> None:
    with pg_coord.Client(dsn) as c:
        ids = [c.enqueue(queue, {"n": i}) for i in range(20)]
        r = start_worker(dsn, queue, lambda job: {"sq": job.payload["n"] ** 2}, concurrency=3,
                         poll_interval=30)
        wait_for(lambda: all_done(db, ids), 15, "all jobs done")
        for i, id in enumerate(ids):
            assert job_row(db, id) == ("done", {"sq": i * i})
        # idle now, with a poll of 30 s: a new job is claimed on its NOTIFY
        t0 = time.monotonic()
        late = c.enqueue(queue, {"n": 7})
        wait_for(lambda: job_row(db, late)[0] == "done", 2, "the NOTIFY to wake the worker")
        assert time.monotonic() - t0 < 2
        r.stop()
        assert r.worker.completed == 21


STAND_IN = """
CREATE FUNCTION coord.complete_and_claim(id bigint, token bigint, result jsonb DEFAULT NULL,
    n integer DEFAULT 1, lease interval DEFAULT '5 minutes', session_bound boolean DEFAULT false,
    host text DEFAULT NULL, partition_group text DEFAULT NULL)
RETURNS TABLE (completed boolean, id bigint, queue text, payload jsonb, attempt integer, token bigint,
               lease_until timestamptz, key text, group_key text, host text, run_at timestamptz, trace text)
LANGUAGE sql AS $$
SELECT set_config('coord_test.ok', coord.complete($1, $2, $3)::text, true);
SELECT current_setting('coord_test.ok')::boolean, c.id, c.queue, c.payload, c.attempt, c.token,
       c.lease_until, c.key, c.group_key, c.host, c.run_at, c.trace
  FROM coord.claim((SELECT j.queue FROM coord.jobs j WHERE j.id = $1), $4, $5, $7, $6,
                   partition_group => $8) c;
$$;
"""


UNKNOWN_SHAPE = """
CREATE FUNCTION coord.complete_and_claim(id bigint, token bigint, result jsonb DEFAULT NULL,
    n integer DEFAULT 1, lease interval DEFAULT '5 minutes', session_bound boolean DEFAULT false,
    host text DEFAULT NULL, partition_group text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql AS $$ SELECT NULL::jsonb $$;
"""


@pytest.mark.parametrize("path", ["complete_and_claim", "claim_then_complete", "unknown_shape"])
def test_S_one_commit(dsn: str, db: psycopg.Connection[Any], queue: str, start_worker: Any, path: str) -> None:
    """Both paths of the single-job loop; a complete_and_claim whose result
    the library does not know is left alone."""
    has = db.execute("SELECT count(*) FROM pg_proc WHERE proname = 'complete_and_claim'").fetchone()[0]
    if has and path == "unknown_shape":
        pytest.skip("the extension has its own coord.complete_and_claim")
    stand_in = path != "claim_then_complete" and not has
    if stand_in:
        db.execute(STAND_IN if path == "complete_and_claim" else UNKNOWN_SHAPE)
    try:
        with pg_coord.Client(dsn) as c:
            ids = [c.enqueue(queue, {"n": i}) for i in range(10)]
        r = start_worker(dsn, queue, lambda job: {"n": job.payload["n"]}, concurrency=1,
                         use_complete_and_claim=(False if path == "claim_then_complete" else None))
        wait_for(lambda: all_done(db, ids), 15, "all jobs done")
        r.stop()
        assert r.worker._has_cac == (path == "complete_and_claim")
        for i, id in enumerate(ids):
            assert job_row(db, id) == ("done", {"n": i})
    finally:
        if stand_in:
            db.execute("DROP FUNCTION coord.complete_and_claim(bigint, bigint, jsonb, integer, interval,"
                       " boolean, text, text)")


def _proc(dsn: str, queue: str, mode: str, lease: float = 300) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, WORKER_PROC, dsn, queue, mode, str(lease)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _kill_scenario(dsn: str, db: psycopg.Connection[Any], queue: str, mode: str, lease: float) -> None:
    with pg_coord.Client(dsn) as c:
        hang = c.enqueue(queue, {"hang": True}, priority=10)
        ids = [hang] + [c.enqueue(queue, {"n": i}) for i in range(9)]
    p1 = _proc(dsn, queue, mode, lease)
    try:
        wait_for(lambda: db.execute("SELECT progress FROM coord.jobs WHERE id = %s", (hang,)).fetchone()[0],
                 15, "the first worker to start the hanging job")
        lease_until = db.execute("SELECT lease_until FROM coord.jobs WHERE id = %s", (hang,)).fetchone()[0]
        p1.kill()
        p1.wait(10)
        killed_at = db.execute("SELECT clock_timestamp()").fetchone()[0]
        p2 = _proc(dsn, queue, mode, lease)
        try:
            wait_for(lambda: all_done(db, ids), 20, "every job done by the second worker")
        finally:
            p2.send_signal(signal.SIGTERM)
            out, _ = p2.communicate(timeout=15)
            assert p2.returncode == 0, out
    finally:
        if p1.poll() is None:
            p1.kill()
    counts = dict(db.execute("SELECT job_id, count(*) FROM side WHERE job_id = ANY(%s) GROUP BY 1",
                             (ids,)).fetchall())
    assert counts == {id: 1 for id in ids}, "every job exactly once in the side table"
    redone_at = db.execute("SELECT at FROM side WHERE job_id = %s", (hang,)).fetchone()[0]
    if mode == "session":
        assert (redone_at - killed_at).total_seconds() < 5, "re-run at once"
    else:
        assert redone_at >= lease_until, "re-run only after the lease"
    assert job_row(db, hang, "attempt")[0] == 2


def test_S_exactly_once_kill_session(dsn: str, db: psycopg.Connection[Any], queue: str) -> None:
    _kill_scenario(dsn, db, queue, "session", 300)


def test_S_exactly_once_kill_lease(dsn: str, db: psycopg.Connection[Any], queue: str) -> None:
    _kill_scenario(dsn, db, queue, "lease", 2)


def test_S_drain(dsn: str, db: psycopg.Connection[Any], queue: str, tmp_path: pathlib.Path) -> None:
    release = tmp_path / "release"
    with pg_coord.Client(dsn) as c:
        held = c.enqueue(queue, {"hang": True, "until": str(release)}, priority=10)
        rest = [c.enqueue(queue, {"n": i}) for i in range(3)]
    p = _proc(dsn, queue, "session")
    try:
        wait_for(lambda: db.execute("SELECT progress FROM coord.jobs WHERE id = %s", (held,)).fetchone()[0],
                 15, "the worker to start the held job")
        p.send_signal(signal.SIGTERM)
        time.sleep(0.3)          # a window for a wrong claim to happen (nothing waits on it)
        release.touch()
        out, _ = p.communicate(timeout=15)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, out
    assert "drained 1" in out
    assert job_row(db, held)[0] == "done"
    assert set(states(db, rest).values()) == {"ready"}, "no claim after SIGTERM"


def test_S_retry_after(dsn: str, db: psycopg.Connection[Any], queue: str, start_worker: Any) -> None:
    seen: List[int] = []

    def handler(job: pg_coord.Job) -> Any:
        seen.append(job.attempt)
        if len(seen) == 1:
            raise pg_coord.RetryAfter(1, pause_key=True)
        return {"ok": True}

    with pg_coord.Client(dsn) as c:
        id = c.enqueue(queue, {"url": "https://example.com/"}, limit_key="example.com")
    r = start_worker(dsn, queue, handler)
    wait_for(lambda: seen, 10, "the first run")
    wait_for(lambda: job_row(db, id, "state")[0] == "scheduled", 5, "the snooze")
    snoozes, attempt = job_row(db, id, "snoozes, attempt")
    assert snoozes == 1
    paused = db.execute("SELECT paused_until > now() FROM coord.limits WHERE queue = %s AND limit_key = %s",
                        (queue, "example.com")).fetchone()
    assert paused == (True,), "the key is paused for every claimer"
    wait_for(lambda: job_row(db, id)[0] == "done", 10, "the run after the pause")
    r.stop()
    assert seen == [1, 1], "a retry_after uses up no attempt"


def test_S_flow(dsn: str, db: psycopg.Connection[Any], queue: str, start_worker: Any) -> None:
    got: Dict[str, Any] = {}

    def handler(job: pg_coord.Job) -> Any:
        if job.payload.get("child"):
            parents = job.parent_results()
            got["parents"] = parents
            return {"sum": sum(p.result["v"] for p in parents if p.state == "done")}
        return {"v": job.payload["v"]}

    with pg_coord.Client(dsn) as c:
        ids = c.enqueue_flow([
            {"name": "a", "queue": queue, "payload": {"v": 2}},
            {"name": "b", "queue": queue, "payload": {"v": 40}},
            {"name": "sum", "queue": queue, "payload": {"child": True}, "after": ["a", "b"]},
        ])
        assert set(ids) == {"a", "b", "sum"}
        r = start_worker(dsn, queue, handler, concurrency=2)
        res = c.await_result(ids["sum"], 15)
        r.stop()
    assert res == pg_coord.Result("done", {"sum": 42}, None)
    assert sorted((p.parent_id, p.state) for p in got["parents"]) == [(ids["a"], "done"), (ids["b"], "done")]


def test_S_cancel(dsn: str, db: psycopg.Connection[Any], queue: str, start_worker: Any) -> None:
    started = threading.Event()
    saw: List[float] = []

    def handler(job: pg_coord.Job) -> Any:
        started.set()
        if job.cancelled.wait(10):
            saw.append(time.monotonic())
        return {"late": True}

    with pg_coord.Client(dsn) as c:
        id = c.enqueue(queue, {})
        r = start_worker(dsn, queue, handler)
        assert started.wait(10)
        time.sleep(0.1)          # past watch_after: the worker LISTENs on the job's channel
        t0 = time.monotonic()
        assert c.cancel(id) is True
        wait_for(lambda: saw, 3, "the handler to see the cancel")
        assert saw[0] - t0 < 2
        r.stop()
        assert c.await_result(id, 5).state == "cancelled"
    assert job_row(db, id, "state, result") == ("cancelled", None)
    assert r.worker.completed == 0


def test_S_await(dsn: str, db: psycopg.Connection[Any], queue: str, start_worker: Any) -> None:
    def handler(job: pg_coord.Job) -> Any:
        if job.payload.get("die"):
            raise ValueError("bad input")
        return {"echo": job.payload["x"]}

    with pg_coord.Client(dsn) as c:
        ok = c.enqueue(queue, {"x": 1})
        bad = c.enqueue(queue, {"die": True}, max_attempts=1)
        r = start_worker(dsn, queue, handler)
        assert c.await_result(ok, 10) == pg_coord.Result("done", {"echo": 1}, None)
        res = c.await_result(bad, 10)
        r.stop()
        assert res.state == "dead" and res.result is None and "ValueError: bad input" in (res.error or "")
        nobody = c.enqueue(queue + "_nobody", {})
        t0 = time.monotonic()
        res = c.await_result(nobody, 0.3)
        assert res.state is None and res.timed_out
        assert 0.25 < time.monotonic() - t0 < 5


def test_S_steps(dsn: str, db: psycopg.Connection[Any], queue: str, start_worker: Any) -> None:
    calls = {"one": 0, "two": 0}

    def one() -> Any:
        calls["one"] += 1
        return {"charged": 1}

    def two() -> Any:
        calls["two"] += 1
        return {"mailed": 1}

    def handler(job: pg_coord.Job) -> Any:
        a = job.step("one", one)
        if job.attempt == 1:
            raise RuntimeError("crash after step one")
        b = job.step("two", two)
        return {"a": a, "b": b}

    with pg_coord.Client(dsn) as c:
        id = c.enqueue(queue, {})
        r = start_worker(dsn, queue, handler)
        res = c.await_result(id, 15)
        r.stop()
    assert res.state == "done" and res.result == {"a": {"charged": 1}, "b": {"mailed": 1}}
    assert calls == {"one": 1, "two": 1}
    assert db.execute("SELECT name, attempt FROM coord.job_steps WHERE job_id = %s ORDER BY step_no",
                      (id,)).fetchall() == [("one", 1), ("two", 2)]


def test_S_progress(dsn: str, db: psycopg.Connection[Any], queue: str, start_worker: Any) -> None:
    go = threading.Event()

    def handler(job: pg_coord.Job) -> Any:
        assert job.progress({"done": 40, "of": 100}) is True
        go.wait(10)
        return None

    with pg_coord.Client(dsn) as c:
        id = c.enqueue(queue, {})
        r = start_worker(dsn, queue, handler)
        wait_for(lambda: job_row(db, id, "progress")[0] == {"done": 40, "of": 100}, 10, "progress")
        go.set()
        assert c.await_result(id, 10).state == "done"
        r.stop()


TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TP2 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class FakeOtel:
    """The two modules of the opentelemetry API the library uses
    (propagate.inject / extract, context.attach / detach), with one
    contextvar as the current context: OpenTelemetry is not in Debian, so
    the test stands in for it with its API's shape."""

    def __init__(self) -> None:
        import contextvars
        import types
        self.current: contextvars.ContextVar[Any] = contextvars.ContextVar("fake_otel", default=None)
        current = self.current
        self.propagate = types.ModuleType("opentelemetry.propagate")
        self.context = types.ModuleType("opentelemetry.context")

        def inject(carrier: Dict[str, str], context: Any = None) -> None:
            if current.get() is not None:
                carrier["traceparent"] = current.get()

        def extract(carrier: Dict[str, str], context: Any = None) -> Any:
            return carrier.get("traceparent")

        self.propagate.inject = inject  # type: ignore[attr-defined]
        self.propagate.extract = extract  # type: ignore[attr-defined]
        self.context.attach = lambda ctx: current.set(ctx)  # type: ignore[attr-defined]
        self.context.detach = lambda token: current.reset(token)  # type: ignore[attr-defined]
        self.package = types.ModuleType("opentelemetry")
        self.package.propagate = self.propagate  # type: ignore[attr-defined]
        self.package.context = self.context  # type: ignore[attr-defined]


@pytest.fixture
def fake_otel(monkeypatch: pytest.MonkeyPatch) -> Any:
    from pg_coord import _common
    f = FakeOtel()
    monkeypatch.setitem(sys.modules, "opentelemetry", f.package)
    monkeypatch.setitem(sys.modules, "opentelemetry.propagate", f.propagate)
    monkeypatch.setitem(sys.modules, "opentelemetry.context", f.context)
    monkeypatch.setattr(_common, "_OTEL", None)
    yield f
    _common._OTEL = None


def test_S_trace(dsn: str, db: psycopg.Connection[Any], queue: str, start_worker: Any) -> None:
    """A traceparent given to enqueue is stored (coord.jobs.trace) and is the job's job.trace."""
    seen: Dict[int, Any] = {}

    def handler(job: pg_coord.Job) -> Any:
        seen[job.id] = job.trace
        return None

    with pg_coord.Client(dsn) as c:
        traced = c.enqueue(queue, {}, trace=TP)
        plain = c.enqueue(queue, {})
        with pytest.raises(pg_coord.CoordError) as ei:
            c.enqueue(queue, {}, trace="00-nope")
        assert ei.value.sqlstate == "22023"
        assert job_row(db, traced, "trace") == (TP,)
        r = start_worker(dsn, queue, handler)
        wait_for(lambda: all_done(db, [traced, plain]), 10, "both jobs done")
        r.stop()
    assert seen == {traced: TP, plain: None}


def test_S_trace_otel(dsn: str, db: psycopg.Connection[Any], queue: str, start_worker: Any,
                      fake_otel: Any) -> None:
    """With OpenTelemetry importable: enqueue sends the current context's
    traceparent, and the handler runs in the context extracted from the job's."""
    seen: Dict[int, Any] = {}

    def handler(job: pg_coord.Job) -> Any:
        seen[job.id] = fake_otel.current.get()
        return None

    with pg_coord.Client(dsn) as c:
        token = fake_otel.current.set(TP)
        try:
            injected = c.enqueue(queue, {})
            explicit = c.enqueue(queue, {}, trace=TP2)
            untraced = c.enqueue(queue, {}, trace=None)
        finally:
            fake_otel.current.reset(token)
        outside = c.enqueue(queue, {})
        assert [job_row(db, i, "trace")[0] for i in (injected, explicit, untraced, outside)] == [TP, TP2, None, None]
        r = start_worker(dsn, queue, handler, concurrency=2)
        wait_for(lambda: all_done(db, [injected, explicit, untraced, outside]), 10, "the jobs done")
        r.stop()
    assert seen == {injected: TP, explicit: TP2, untraced: None, outside: None}


# -- context managers: released on an exception and on connection loss ------------------------------

def _terminate(db: psycopg.Connection[Any], c: pg_coord.Client) -> None:
    pid = c.connection.info.backend_pid
    db.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))


def _check_release(dsn: str, db: psycopg.Connection[Any], enter: Any, other_can: Any) -> None:
    class Boom(Exception):
        pass

    with pg_coord.Client(dsn) as c, pg_coord.Client(dsn) as other:
        with pytest.raises(Boom):
            with enter(c):
                assert not other_can(other)
                raise Boom()
        assert other_can(other), "released after the exception"
        with pytest.raises(pg_coord.ConnectionLost) as ei:
            with enter(c):
                _terminate(db, c)
        assert ei.value.sqlstate is not None
        wait_for(lambda: other_can(other), 5, "the hold to go with the session")
        with enter(c):       # the client reconnects for the next call
            pass


def test_S_lock_release(dsn: str, db: psycopg.Connection[Any], queue: str) -> None:
    def other_can(o: pg_coord.Client) -> bool:
        ok = o._value("SELECT coord.try_lock('/py/lock')")
        if ok:
            o._value("SELECT coord.unlock('/py/lock')")
        return bool(ok)
    _check_release(dsn, db, lambda c: c.lock("/py/lock", timeout=5), other_can)


def test_S_election_release(dsn: str, db: psycopg.Connection[Any], queue: str) -> None:
    def other_can(o: pg_coord.Client) -> bool:
        term = o._value("SELECT coord.campaign('py-election', 'other', '0')")
        if term:
            o._value("SELECT coord.resign('py-election')")
        return term is not None

    def enter(c: pg_coord.Client) -> Any:
        return c.campaign("py-election", "me", timeout=5)
    _check_release(dsn, db, enter, other_can)
    with pg_coord.Client(dsn) as c:
        with c.campaign("py-election-2") as t1:
            assert isinstance(t1, int)
        with c.campaign("py-election-2") as t2:
            assert t2 > t1


def test_S_semaphore_release(dsn: str, db: psycopg.Connection[Any], queue: str) -> None:
    def other_can(o: pg_coord.Client) -> bool:
        p = o._value("SELECT coord.acquire_permit('/py/sem', 1, '0')")
        if p is not None:
            o._value("SELECT coord.release_permit('/py/sem')")
        return p is not None
    _check_release(dsn, db, lambda c: c.semaphore("/py/sem", 1, timeout=5), other_can)


def test_lock_timeout(dsn: str) -> None:
    with pg_coord.Client(dsn) as a, pg_coord.Client(dsn) as b:
        with a.lock("/py/t"):
            with pytest.raises(pg_coord.CoordTimeout):
                with b.lock("/py/t", timeout=0.1):
                    pass
        with a.lease_lock("/py/lease", 5) as token:
            with pytest.raises(pg_coord.CoordTimeout):
                with b.lease_lock("/py/lease", 5):
                    pass
            assert a.renew("/py/lease", token, 5)
        with b.lease_lock("/py/lease", 5):
            pass
        segs = a.join("py-group", "a")
        assert len(segs) == 1024 and a.owned("py-group") == segs
        assert a.leave("py-group")


def test_enqueue_options(dsn: str, db: psycopg.Connection[Any], queue: str) -> None:
    with pg_coord.Client(dsn) as c:
        id = c.enqueue(queue, {"x": 1}, run_at=60, priority=3, key="k1", max_attempts=4,
                       group_key="g", limit_key="lk", max_snoozes=7, expires_at=3600)
        assert c.enqueue(queue, {"x": 2}, key="k1") == id
        row = job_row(db, id, "state, priority, key, max_attempts, group_key, limit_key, expires_at > now()")
        assert row == ("scheduled", 3, "k1", 4, "g", "lk", True)
        child = c.enqueue(queue, None, after=[id], on_parent_failure="run")
        assert c.job_state(child) == "waiting"
        assert c.cancel(child) and not c.cancel(child)
        with pytest.raises(TypeError):
            c.enqueue(queue, {}, colour="red")
        with pytest.raises(pg_coord.CoordError) as ei:
            c.enqueue("", {})
        assert ei.value.sqlstate == "22023"
        assert not isinstance(ei.value, psycopg.Error)


def test_refused_reports_fail_the_job(dsn: str, db: psycopg.Connection[Any], queue: str, start_worker: Any) -> None:
    """A report the server refuses (retry_after over coord.max_retry_after, an
    in_commit statement's error) fails that job; the worker goes on."""
    def handler(job: pg_coord.Job) -> Any:
        if job.payload["kind"] == "long-snooze":
            raise pg_coord.RetryAfter(7200)
        if job.payload["kind"] == "bad-sql":
            job.in_commit("INSERT INTO no_such_table VALUES (1)")
        return {"ok": job.payload["kind"]}

    with pg_coord.Client(dsn) as c:
        ids = {k: c.enqueue(queue, {"kind": k}, max_attempts=1) for k in ("long-snooze", "bad-sql", "fine")}
        r = start_worker(dsn, queue, handler, concurrency=2)
        res = {k: c.await_result(i, 10) for k, i in ids.items()}
        r.stop()
    assert res["fine"] == pg_coord.Result("done", {"ok": "fine"}, None)
    assert res["long-snooze"].state == "dead" and "22023" in (res["long-snooze"].error or "") or \
        "retry_after" in (res["long-snooze"].error or ""), res["long-snooze"]
    assert res["bad-sql"].state == "dead" and "no_such_table" in (res["bad-sql"].error or "")


@pytest.mark.parametrize("concurrency", [1, 2])
def test_S_heartbeat(dsn: str, db: psycopg.Connection[Any], queue: str, start_worker: Any,
                          concurrency: int) -> None:
    """A lease job running past its lease is kept by the heartbeats (a third of
    the lease): another worker does not take it, its completion counts."""
    with pg_coord.Client(dsn) as c:
        id = c.enqueue(queue, {})
        r = start_worker(dsn, queue, lambda job: (time.sleep(2.5), {"attempt": job.attempt})[1],
                         session_bound=False, lease=1.2, concurrency=concurrency)
        wait_for(lambda: c.job_state(id) == "running", 10, "the first worker to claim the job")
        other = start_worker(dsn, queue, lambda job: {"thief": True}, session_bound=False, poll_interval=0.2)
        assert c.await_result(id, 10) == pg_coord.Result("done", {"attempt": 1}, None)
        other.stop()
        r.stop()
    assert r.worker.completed == 1 and other.worker.completed == 0


def test_S_reconnect(dsn: str, db: psycopg.Connection[Any], queue: str, start_worker: Any) -> None:
    """The worker's backend terminated while it idles: it reconnects (logged)
    and goes on; LISTEN again, so a new job is claimed on its NOTIFY (the
    poll is 30 s: the job is enqueued only once the new connection has made
    its first claim, which found nothing, so only the NOTIFY can wake it)."""
    app = f"pg_coord worker {queue}"
    with pg_coord.Client(dsn) as c:
        r = start_worker(dsn, queue, lambda job: {"n": job.payload["n"]}, concurrency=2, poll_interval=30)
        assert c.await_result(c.enqueue(queue, {"n": 1}), 10).state == "done"
        pids = wait_for(lambda: [p for (p,) in db.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (app,))], 5)
        db.execute("SELECT pg_terminate_backend(%s, 5000)", (pids[0],))
        # the new connection idle after its first claim found nothing (its
        # last statement coord.next_due), not while it connects, checks the
        # extension or LISTENs
        wait_for(lambda: db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND pid <> %s"
            " AND state = 'idle' AND query LIKE '%%coord.next_due%%'", (app, pids[0])).fetchone()[0], 20,
            "the worker to reconnect and claim")
        id2 = c.enqueue(queue, {"n": 2})
        res = c.await_result(id2, 10)
        assert res == pg_coord.Result("done", {"n": 2}, None), (
            res, job_row(db, id2, "state, attempts, claimed_by"), r.thread.is_alive(),
            db.execute("SELECT pid, state, query FROM pg_stat_activity WHERE application_name = %s",
                       (app,)).fetchall())
        r.stop()
