"""S-errors: typed exceptions with the SQLSTATE and the server's message."""
from __future__ import annotations

from typing import Any

import psycopg
import pytest

import pg_coord
from pg_coord import _common
from conftest import admin


def test_S_errors_permission_denied(dsn: str, db: psycopg.Connection[Any], queue: str) -> None:
    db.execute("DROP ROLE IF EXISTS coord_py_nobody")
    db.execute("CREATE ROLE coord_py_nobody LOGIN")
    try:
        with pg_coord.Client(dsn + " user=coord_py_nobody") as c:
            with pytest.raises(pg_coord.PermissionDenied) as ei:
                c.enqueue(queue, {})
            e = ei.value
            assert e.sqlstate == "42501" and "permission denied" in e.message
            assert isinstance(e, pg_coord.CoordError) and not isinstance(e, psycopg.Error)
        w = pg_coord.Worker(dsn + " user=coord_py_nobody", queue, lambda job: None, handle_signals=False)
        with pytest.raises(pg_coord.PermissionDenied):
            w.run()
    finally:
        db.execute("DROP ROLE coord_py_nobody")


def test_S_errors_extension_missing(dsn: str) -> None:
    with admin() as c:
        c.execute("DROP DATABASE IF EXISTS coord_py_noext")
        c.execute("CREATE DATABASE coord_py_noext")
    try:
        with pytest.raises(pg_coord.ExtensionMissing) as ei:
            pg_coord.Client("dbname=coord_py_noext")
        assert ei.value.sqlstate == "42704" and "not installed" in ei.value.message
        w = pg_coord.Worker("dbname=coord_py_noext", "q", lambda job: None, handle_signals=False)
        with pytest.raises(pg_coord.ExtensionMissing):
            w.run()
    finally:
        with admin() as c:
            c.execute("DROP DATABASE coord_py_noext WITH (FORCE)")


def test_S_errors_version_mismatch(dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common, "MIN_VERSION", "99.0.0")
    with pytest.raises(pg_coord.VersionMismatch) as ei:
        pg_coord.Client(dsn)
    assert ei.value.sqlstate == "0A000" and ei.value.minimum == "99.0.0"
    assert ei.value.installed is not None and ei.value.installed in ei.value.message
    # a later version than the library's minimum serves (its old calls keep working)
    assert _common.version_key("0.10.0") > _common.version_key("0.4.0")


def test_S_errors_connection_lost(dsn: str, db: psycopg.Connection[Any], queue: str) -> None:
    with pg_coord.Client(dsn) as c:
        pid = c.connection.info.backend_pid
        db.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
        with pytest.raises(pg_coord.ConnectionLost) as ei:
            c.enqueue(queue, {})
        assert ei.value.sqlstate == "57P01", ei.value
        assert ei.value.message == "terminating connection due to administrator command"
        assert c.enqueue(queue, {}) > 0      # the next call reconnects
    with pytest.raises(pg_coord.ConnectionLost):
        pg_coord.Client("host=/nonexistent-dir port=1")


def test_S_errors_server_error(dsn: str) -> None:
    with pg_coord.Client(dsn) as c:
        with pytest.raises(pg_coord.CoordError) as ei:
            c.await_result(-1, 0.1)
        assert ei.value.sqlstate == "P0002"
