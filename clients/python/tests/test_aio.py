"""The asyncio flavour, pg_coord.aio: the same names, the main scenarios."""
from __future__ import annotations

import asyncio
import time
from typing import Any, List

import psycopg
import pytest

import pg_coord
from pg_coord import aio
from conftest import job_row


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_aio_S_results(dsn: str, db: psycopg.Connection[Any], queue: str) -> None:
    async def main() -> None:
        async def handler(job: aio.Job) -> Any:
            await job.progress({"n": job.payload["n"]})
            return {"sq": job.payload["n"] ** 2}

        async with aio.Client(dsn) as c:
            ids = [await c.enqueue(queue, {"n": i}) for i in range(10)]
            w = aio.Worker(dsn, queue, handler, concurrency=3, poll_interval=30)
            task = asyncio.create_task(w.run())
            results = [await c.await_result(i, 10) for i in ids]
            t0 = time.monotonic()
            late = await c.enqueue(queue, {"n": 5})        # wakes the idle worker by NOTIFY
            assert (await c.await_result(late, 3)).state == "done"
            assert time.monotonic() - t0 < 3
            w.stop()
            await task
        assert results == [pg_coord.Result("done", {"sq": i * i}, None) for i in range(10)]
        assert w.completed == 11
    run(main())


def test_aio_S_cancel_and_flow(dsn: str, db: psycopg.Connection[Any], queue: str) -> None:
    async def main() -> None:
        saw: List[int] = []

        async def handler(job: aio.Job) -> Any:
            if job.payload.get("wait"):
                await asyncio.wait_for(job.cancelled.wait(), 10)
                saw.append(job.id)
                return None
            if job.payload.get("child"):
                return {"sum": sum(p.result["v"] for p in await job.parent_results())}
            return {"v": job.payload["v"]}

        async with aio.Client(dsn) as c:
            w = aio.Worker(dsn, queue, handler, concurrency=2)
            task = asyncio.create_task(w.run())
            long = await c.enqueue(queue, {"wait": True})
            while (await c.job_state(long)) != "running":
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.1)
            assert await c.cancel(long)
            ids = await c.enqueue_flow([{"name": "a", "queue": queue, "payload": {"v": 1}},
                                        {"name": "b", "queue": queue, "payload": {"v": 2}},
                                        {"name": "c", "queue": queue, "payload": {"child": True},
                                         "after": ["a", "b"]}])
            assert await c.await_result(ids["c"], 10) == pg_coord.Result("done", {"sum": 3}, None)
            for _ in range(150):
                if saw:
                    break
                await asyncio.sleep(0.02)
            assert saw == [long]
            w.stop()
            await task
    run(main())


def test_aio_context_managers(dsn: str, db: psycopg.Connection[Any]) -> None:
    async def main() -> None:
        async with aio.Client(dsn) as a, aio.Client(dsn) as b:
            with pytest.raises(RuntimeError):
                async with a.lock("/aio/l"):
                    raise RuntimeError("x")
            async with b.lock("/aio/l", timeout=1):
                pass
            async with a.campaign("aio-e") as term:
                assert term > 0
            async with a.semaphore("/aio/s", 1) as permit:
                assert permit == 0
            pid = (await a.connection()).info.backend_pid
            with pytest.raises(pg_coord.ConnectionLost):
                async with a.lock("/aio/l2"):
                    db.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
            async with b.lock("/aio/l2", timeout=1):
                pass
            with pytest.raises(pg_coord.CoordError):
                await a.enqueue("", {})
    run(main())


def test_aio_steps_retry(dsn: str, db: psycopg.Connection[Any], queue: str) -> None:
    async def main() -> None:
        calls: List[str] = []

        async def handler(job: aio.Job) -> Any:
            await job.step("one", lambda: calls.append("one") or {"ok": 1})
            if job.attempt == 1 and not calls.count("retried"):
                calls.append("retried")
                raise pg_coord.RetryAfter(0.2)
            return {"attempt": job.attempt}

        async with aio.Client(dsn) as c:
            id = await c.enqueue(queue, {})
            w = aio.Worker(dsn, queue, handler, session_bound=False, lease=10, poll_interval=0.2)
            task = asyncio.create_task(w.run())
            assert await c.await_result(id, 10) == pg_coord.Result("done", {"attempt": 1}, None)
            w.stop()
            await task
        assert calls == ["one", "retried"]
    run(main())
