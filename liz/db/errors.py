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


# SQLite reports outages and mistakes alike as OperationalError; these messages are outages.
_SQLITE_CANNOT_WRITE = ("readonly", "database or disk is full", "disk i/o error")
_SQLITE_UNAVAILABLE = ("database is locked", "unable to open database file", "table is locked")
# PostgreSQL's SQLSTATE classes for outages: connection (08), resources (53),
# operator intervention (57: shutdown, starting up); and what a read-only database says.
_PG_UNAVAILABLE_CLASSES = ("08", "53", "57")
_PG_CANNOT_WRITE = ("25006", "53100")  # read-only transaction, disk full


def _outage_kind(exc: sa_exc.DBAPIError) -> str | None:
    """``"cannot write"``, ``"unavailable"`` or None (not an outage: a bug or bad data)."""
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate:
        if sqlstate in _PG_CANNOT_WRITE:
            return "cannot write"
        if sqlstate[:2] in _PG_UNAVAILABLE_CLASSES:
            return "unavailable"
    if exc.connection_invalidated:
        return "unavailable"
    text = str(exc.orig).lower()
    if type(exc.orig).__module__.partition(".")[0] == "sqlite3":
        if any(words in text for words in _SQLITE_CANNOT_WRITE):
            return "cannot write"
        if any(words in text for words in _SQLITE_UNAVAILABLE):
            return "unavailable"
        return None
    if isinstance(exc, sa_exc.InterfaceError) and "closed" in text:
        return "unavailable"
    return None


def storage_error_for(exc: BaseException) -> StorageError | None:
    """The :class:`StorageError` an outage means, or None when ``exc`` is not one.

    Outages: no connection, a dropped connection, an exhausted pool, a server shutting
    down, a locked, full or read-only database. Bad SQL or data that breaks a
    constraint are bugs, not outages.
    """
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, sa_exc.DBAPIError):
        kind = _outage_kind(exc)
        if kind == "cannot write":
            return StorageError(
                "the database cannot store anything right now (its disk is full or it is "
                "read-only); try again later",
                retry_after=RETRY_AFTER_SECONDS,
            )
        return _unavailable() if kind == "unavailable" else None
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
