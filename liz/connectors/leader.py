"""One process per bot: whoever holds the bot's lock reads and answers, the others wait.

Two processes started for the same bot would both read its updates (Telegram
answers a second ``getUpdates`` with 409) and both answer or post. The Twitter
bot's lock is keyed by its agent, a chat bot's by ``<platform>:<bot id>``.

PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``) held on a
dedicated connection for as long as the process leads; if that process dies,
its connection closes and the server releases the lock. SQLite: an exclusive
``flock`` on a file beside the database file, released by the OS when the
process exits. A standby process tries again every few seconds.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Protocol

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from liz.errors import LizError, StorageError
from liz.types import Clock

logger = logging.getLogger(__name__)

# The first of the two int4 advisory-lock keys: "LIZT". The two-key space never
# overlaps the one-bigint space that liz's migrations lock in.
_LOCK_SPACE = 0x4C495A54


class LeaderLock(Protocol):
    """A lock that at most one bot process holds at a time."""

    async def try_acquire(self) -> bool:
        """Take the lock if it is free; True when this process holds it (again).

        Raises :class:`liz.errors.StorageError` when the database (or lock file) is unreachable.
        """
        ...

    async def still_held(self) -> bool:
        """False once the lock was lost (e.g. the database connection dropped)."""
        ...

    async def release(self) -> None:
        """Let another process take over; safe to call when not held."""
        ...


def _lock_key(key: str) -> int:
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresLeaderLock:
    """An advisory lock keyed by ``key``, on a connection kept open while leading."""

    def __init__(self, engine: AsyncEngine, key: str) -> None:
        self.engine = engine
        self.key = _lock_key(key)
        self._connection: AsyncConnection | None = None

    async def try_acquire(self) -> bool:
        if self._connection is not None:
            return await self.still_held()
        try:
            connection = await self.engine.connect()
        except (SQLAlchemyError, OSError) as exc:
            raise _unreachable(exc) from exc
        try:
            # Autocommit: the lock belongs to the session, and no transaction stays open for hours.
            await connection.execution_options(isolation_level="AUTOCOMMIT")
            acquired = await connection.scalar(
                text("SELECT pg_try_advisory_lock(:space, :key)"),
                {"space": _LOCK_SPACE, "key": self.key},
            )
        except BaseException as exc:
            await connection.close()
            if isinstance(exc, SQLAlchemyError | OSError):
                raise _unreachable(exc) from exc
            raise
        if not acquired:
            await connection.close()
            return False
        self._connection = connection
        return True

    async def still_held(self) -> bool:
        if self._connection is None:
            return False
        try:
            await self._connection.scalar(text("SELECT 1"))
        except (SQLAlchemyError, OSError) as exc:
            logger.warning("lost the leader lock's database connection: %s", exc)
            await self._drop()
            return False
        return True

    async def release(self) -> None:
        await self._drop()

    async def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        # Closing the server session is what surely frees the lock; a pooled
        # connection returned as is would keep holding it.
        try:
            await connection.invalidate()
        finally:
            await connection.close()


class FileLeaderLock:
    """An exclusive ``flock`` on a file. It is held per open file, so two bots in one
    process exclude each other too."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    async def try_acquire(self) -> bool:
        import fcntl  # POSIX only; imported here so the module loads everywhere

        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StorageError(
                f"cannot open the leader lock file {self.path}: {exc.strerror} "
                "(the directory of the SQLite database must exist and be writable)"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    async def still_held(self) -> bool:
        return self._fd is not None

    async def release(self) -> None:
        import fcntl

        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


def _unreachable(exc: BaseException) -> StorageError:
    return StorageError(f"cannot reach PostgreSQL for the leader lock: {exc}")


def leader_lock_for(engine: AsyncEngine, agent_id: str) -> LeaderLock:
    """The Twitter bot's lock for ``agent_id``: advisory on PostgreSQL, a file beside SQLite's."""
    return _lock(engine, agent_id, "twitter")


def bot_leader_lock(engine: AsyncEngine, bot_key: str) -> LeaderLock:
    """A chat bot's lock, for the bot ``bot_key`` (``telegram:123``)."""
    return _lock(engine, f"connector:{bot_key}", "bot")  # never the same key as an agent's


def _lock(engine: AsyncEngine, key: str, kind: str) -> LeaderLock:
    if engine.dialect.name == "postgresql":
        return PostgresLeaderLock(engine, key)
    safe = hashlib.blake2b(key.encode("utf-8"), digest_size=8).hexdigest()
    database = engine.url.database
    if database and database != ":memory:" and not database.startswith("file::memory:"):
        return FileLeaderLock(Path(database).with_name(f"{Path(database).name}.{kind}-{safe}.lock"))
    return FileLeaderLock(Path(tempfile.gettempdir()) / f"liz-{kind}-{safe}.lock")


async def wait_for_leadership(
    leader: LeaderLock, clock: Clock, retry_seconds: float, *, who: str, standby: str
) -> None:
    """Return once this process holds ``leader``, trying every ``retry_seconds``.

    An unreachable database is waited out too: it may come back, and a standby that
    died here never would. ``standby`` is logged once, as ``<who>: <standby>; standing by``.
    """
    announced = False
    while True:
        try:
            if await leader.try_acquire():
                return
        except LizError as exc:
            logger.warning("%s: cannot take the leader lock: %s", who, exc.message)
        else:
            if not announced:
                logger.info("%s: %s; standing by", who, standby)
                announced = True
        await clock.sleep(retry_seconds)
