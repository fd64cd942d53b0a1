"""One async engine per process, tuned for SQLite or PostgreSQL."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.ext.asyncio import create_async_engine as _create_async_engine
from sqlalchemy.pool import NullPool

from liz.config import Settings
from liz.db.url import asyncpg_connect_args, describe, normalize_database_url

logger = logging.getLogger(__name__)

# How long a SQLite connection waits for another writer (this process or another)
# before giving up with "database is locked".
SQLITE_BUSY_TIMEOUT_MS = 30_000


def create_engine(
    url: str, settings: Settings | None = None, *, pooled: bool = True
) -> AsyncEngine:
    """Create the process's engine for `url` (any form `normalize_database_url` accepts).

    SQLite: WAL journal (readers never wait for the writer), ``busy_timeout``,
    ``foreign_keys=ON``, ``synchronous=NORMAL``, and every transaction opened with
    ``BEGIN IMMEDIATE`` so concurrent writers queue for the write lock instead of
    failing with "database is locked" when a read transaction tries to upgrade
    (the cost: sessions on one SQLite file run one at a time).

    PostgreSQL (asyncpg): a pool sized by ``db_pool_size``, ``db_max_overflow`` and
    ``db_pool_timeout`` from `settings`, with ``pool_pre_ping`` so connections the
    server dropped are replaced rather than failing a request.

    ``pooled=False`` opens a connection per use (migrations, one-off commands).
    """
    settings = settings or Settings()
    normalized = make_url(normalize_database_url(url))
    kwargs: dict[str, Any] = {"echo": settings.db_echo}
    if not pooled:
        kwargs["poolclass"] = NullPool
    if normalized.get_backend_name() == "sqlite":
        if normalized.database and normalized.database != ":memory:":
            # As Prisma does: a new SQLite file may live in a folder that does not exist yet.
            Path(normalized.database).parent.mkdir(parents=True, exist_ok=True)
        engine = _create_async_engine(normalized, **kwargs)
        _tune_sqlite(engine)
    else:
        normalized, connect_args = asyncpg_connect_args(normalized)
        if pooled:
            kwargs.update(
                pool_size=settings.db_pool_size,
                max_overflow=settings.db_max_overflow,
                pool_timeout=settings.db_pool_timeout,
                pool_pre_ping=True,
            )
        engine = _create_async_engine(normalized, connect_args=connect_args, **kwargs)
    logger.debug("database engine for %s", describe(normalized))
    return engine


def _tune_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control from Python's sqlite3 module, which would
        # otherwise open transactions late and with a plain (deferred) BEGIN.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        # A deferred transaction that reads and then writes fails at once with
        # SQLITE_BUSY when another writer got in between (busy_timeout does not
        # apply to that upgrade). IMMEDIATE takes the write lock up front and
        # waits for it. A session cannot say in advance whether it will write, so
        # read-only sessions queue too: short waits, never a failed write.
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """The process's session factory: one session per unit of work."""
    return async_sessionmaker(engine, expire_on_commit=False)


def dialect_name(engine: AsyncEngine) -> str:
    """``"sqlite"`` or ``"postgresql"``."""
    return engine.dialect.name
