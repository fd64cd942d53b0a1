"""Database failures in liz's own terms: an outage is a :class:`StorageError` (503).

SQLAlchemy wraps what the drivers raise during a query, but a refused or dropped
connection can also surface as a bare ``OSError`` or an asyncpg exception (while the
pool connects). Those count as the database's only when they were raised inside the
database code, so an unrelated ``OSError`` is never blamed on the database.
"""

from __future__ import annotations

import logging
import traceback

from sqlalchemy import exc as sa_exc

from liz.errors import StorageError

logger = logging.getLogger(__name__)

# How long a caller should wait before trying again after an outage.
RETRY_AFTER_SECONDS = 5.0

_DATABASE_MODULES = ("sqlalchemy", "asyncpg", "aiosqlite", "sqlite3")


def _raised_in_database_code(exc: BaseException) -> bool:
    if type(exc).__module__.partition(".")[0] in _DATABASE_MODULES:
        return True
    for frame, _line in traceback.walk_tb(exc.__traceback__):
        module = str(frame.f_globals.get("__name__", ""))
        if module.partition(".")[0] in _DATABASE_MODULES:
            return True
    return False


def _cannot_write(exc: sa_exc.DBAPIError) -> bool:
    text = str(exc.orig).lower()
    return any(words in text for words in ("readonly", "read-only", "disk is full", "disk i/o"))


def storage_error_for(exc: BaseException) -> StorageError | None:
    """The :class:`StorageError` an outage means, or None when ``exc`` is not one.

    Outages: no connection, a dropped connection, an exhausted pool, a locked, full or
    read-only database. Bad SQL or data that breaks a constraint are bugs, not outages.
    """
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, sa_exc.DBAPIError):
        if isinstance(exc, sa_exc.OperationalError) and _cannot_write(exc):
            return StorageError(
                "the database cannot store anything right now (its disk is full or it is "
                "read-only); try again later",
                retry_after=RETRY_AFTER_SECONDS,
            )
        if exc.connection_invalidated or isinstance(
            exc, sa_exc.OperationalError | sa_exc.InterfaceError
        ):
            return _unavailable()
        return None
    if isinstance(exc, sa_exc.TimeoutError):  # every pooled connection is busy
        return _unavailable()
    is_driver_error = type(exc).__module__.startswith("asyncpg")
    if (isinstance(exc, OSError) or is_driver_error) and _raised_in_database_code(exc):
        return _unavailable()
    return None


def _unavailable() -> StorageError:
    return StorageError(
        "the database is unavailable right now; try again in a few seconds",
        retry_after=RETRY_AFTER_SECONDS,
    )
