"""pg_coord: the Python client of the pg_coord PostgreSQL extension.

    from pg_coord import Client, Worker, RetryAfter

Sync API here, the same names for asyncio in ``pg_coord.aio``. The manual:
docs/clients/python.md.
"""
from ._common import MIN_VERSION, ParentResult, Result
from .client import Client
from .errors import (ClaimLost, ConnectionLost, CoordError, CoordTimeout, ExtensionMissing,
                     PermissionDenied, RetryAfter, VersionMismatch)
from .worker import Job, Worker

__version__ = "0.4.0"

__all__ = [
    "Client", "Worker", "Job", "Result", "ParentResult", "RetryAfter",
    "CoordError", "PermissionDenied", "ExtensionMissing", "VersionMismatch", "ConnectionLost",
    "CoordTimeout", "ClaimLost", "MIN_VERSION", "__version__",
]
