"""Can the database do its job right now: answer, and take a write?

A database can answer reads and still refuse every write (a read-only file or
mount, a PostgreSQL standby or read-only transaction, a full disk). So the probe
writes a row into ``Memory``: on PostgreSQL it is rolled back (a read-only server
refuses the insert itself); on SQLite it is deleted again and committed, since only
a commit touches the file. :class:`WriteProbe` keeps an answer for a few seconds,
unless an outage began or ended since (:class:`OutageLog`).
A SQLite connection opened while its file could not be written stays read-only for
good, so :func:`reopen_after_read_only` replaces those connections once it can.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
import uuid
import weakref
from pathlib import Path
from typing import Any

from sqlalchemy import delete, event, insert
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.db.errors import storage_error_for
from liz.db.tables import MemoryRecord
from liz.types import Clock

logger = logging.getLogger(__name__)

# Below this much free space a SQLite database is reported as unable to write: its
# write-ahead log and any new page need room on the disk.
MIN_FREE_BYTES = 1 << 20
# How long one probe's answer is given to every /health request that follows.
PROBE_CACHE_SECONDS = 2.0
_PROBE_USER = "liz-health-probe"


async def _write_and_undo(
    sessions: async_sessionmaker[AsyncSession], engine: AsyncEngine, clock: Clock
) -> None:
    probe_id = f"{_PROBE_USER}-{uuid.uuid4()}"
    row = insert(MemoryRecord).values(
        id=probe_id,
        user_id=_PROBE_USER,
        agent_id=_PROBE_USER,
        room_id=_PROBE_USER,
        content="{}",
        type="health-probe",
        generator="external",
        created_at=clock.now(),
    )
    async with sessions() as session:
        transaction = await session.begin()
        try:
            await session.execute(row)
            if engine.dialect.name == "sqlite":
                await session.execute(delete(MemoryRecord).where(MemoryRecord.id == probe_id))
                await transaction.commit()
        finally:
            if transaction.is_active:
                await transaction.rollback()


async def database_problem(
    sessions: async_sessionmaker[AsyncSession], engine: AsyncEngine, clock: Clock
) -> str | None:
    """None when the database answers and can write; otherwise what is wrong, briefly."""
    try:
        await _write_and_undo(sessions, engine, clock)
    except Exception as exc:  # the probe reports, it never fails itself
        storage = storage_error_for(exc)
        if storage is None:
            logger.warning("health check: the database failed a write: %r", exc)
        else:
            outage_log(engine).failed(exc, f"health check: {storage.message}")
        if storage is not None and "cannot store" in storage.message:
            return "cannot write (read-only or disk full)"
        if storage is not None:
            return f"unreachable: {type(exc).__name__}"
        return f"cannot write: {type(exc).__name__}"
    outage_log(engine).succeeded()
    return _sqlite_disk_problem(engine)


class WriteProbe:
    """:func:`database_problem`, run at most once per ``seconds`` however often it is asked."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        engine: AsyncEngine,
        clock: Clock,
        seconds: float = PROBE_CACHE_SECONDS,
    ) -> None:
        self.sessions, self.engine, self.clock, self.seconds = sessions, engine, clock, seconds
        self._lock = asyncio.Lock()
        self._answer: str | None = None
        self._until = float("-inf")
        self._changes = -1

    async def problem(self) -> str | None:
        async with self._lock:  # requests arriving together share one probe
            outages = outage_log(self.engine)
            # An outage that began or ended since (seen by any request) voids the answer.
            if time.monotonic() >= self._until or outages.changes != self._changes:
                self._answer = await database_problem(self.sessions, self.engine, self.clock)
                self._until = time.monotonic() + self.seconds
                self._changes = outages.changes
            return self._answer


def _sqlite_disk_problem(engine: AsyncEngine) -> str | None:
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return None
    try:
        free = shutil.disk_usage(Path(database).resolve().parent).free
    except OSError:
        return None
    if free < MIN_FREE_BYTES:
        return f"cannot write: the disk holding the database has {free} bytes free"
    return None


_READ_ONLY_WORDS = ("readonly", "read-only", "disk i/o error")


def _writable_file(engine: AsyncEngine) -> Path | None:
    """The SQLite file behind ``engine`` when it is meant to be written, else None."""
    database = engine.url.database or ""
    if database.startswith("file:"):
        if engine.url.query.get("mode") == "ro" or "mode=ro" in database:
            return None
        database = database.removeprefix("file:").partition("?")[0]
    return Path(database) if database and database != ":memory:" else None


def _can_write(path: Path) -> bool:
    wal = Path(f"{path}-wal")
    return os.access(path, os.W_OK) and (not wal.exists() or os.access(wal, os.W_OK))


def reopen_after_read_only(engine: AsyncEngine) -> None:
    """Replace SQLite connections that cannot write once their file can be written.

    SQLite opens a file it cannot write read-only, silently, and such a connection never
    writes again, even once the file can be; a new one can. So a connection opened while
    the file refused writes, or one that met a read-only refusal since, is replaced at
    its next use after the file can be written again (one ``access`` call a use).
    """
    path = _writable_file(engine)
    if path is None:
        return

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(_dbapi_connection: Any, record: Any) -> None:
        record.info["read_only"] = not _can_write(path)

    @event.listens_for(engine.sync_engine, "handle_error")
    def _on_error(context: Any) -> None:
        refused = str(context.original_exception).lower()
        record = getattr(context.connection, "connection", None)
        if record is not None and any(words in refused for words in _READ_ONLY_WORDS):
            record.info["read_only"] = True

    @event.listens_for(engine.sync_engine, "checkout")
    def _on_checkout(_dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        if record.info.get("read_only") and _can_write(path):
            raise DisconnectionError("opened while the file refused writes")  # the pool reopens


# How often an outage under way is summed up in the log (one line per interval at most).
OUTAGE_REPORT_SECONDS = 10.0


class OutageLog:
    """One database outage, logged in a few lines instead of one traceback per request.

    The first failure is logged with its traceback; while it lasts, the refusals are
    counted and logged as one line per :data:`OUTAGE_REPORT_SECONDS`; the first success
    after it logs one line saying it is over.
    """

    def __init__(self, report_seconds: float = OUTAGE_REPORT_SECONDS) -> None:
        self.report_seconds = report_seconds
        self.started: float | None = None
        self.changes = 0  # outages begun and ended so far
        self._count = 0  # refusals since the last line
        self._total = 0
        self._reported = 0.0

    def failed(self, exc: BaseException, message: str) -> None:
        now = time.monotonic()
        if self.started is None:
            self.started, self._reported, self._count, self._total = now, now, 0, 1
            self.changes += 1
            logger.error("database outage: %s", message, exc_info=exc)
            return
        self._count += 1
        self._total += 1
        if now - self._reported >= self.report_seconds:
            logger.error(
                "database outage goes on: %d more requests refused in the last %.0f s (%s)",
                self._count,
                now - self._reported,
                message,
            )
            self._count, self._reported = 0, now

    def succeeded(self) -> None:
        if self.started is None:
            return
        lasted = time.monotonic() - self.started
        logger.warning(
            "database outage over after %.1f s: %d requests refused in all",
            lasted,
            self._total,
        )
        self.started = None
        self.changes += 1


_outages: weakref.WeakKeyDictionary[Any, OutageLog] = weakref.WeakKeyDictionary()


def outage_log(engine: AsyncEngine) -> OutageLog:
    """The outage log of ``engine``'s database (one per engine, so per process)."""
    log = _outages.get(engine.sync_engine)
    if log is None:
        log = _outages[engine.sync_engine] = OutageLog()
    return log
