"""One async engine per process, tuned for SQLite or PostgreSQL."""

from __future__ import annotations

import logging
import sqlite3
import time
import weakref
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.ext.asyncio import create_async_engine as _create_async_engine
from sqlalchemy.pool import NullPool
from sqlalchemy.util import await_

from liz._compat import one_hop_dbapi, run_on_sqlite_thread
from liz.config import Settings
from liz.db.health import reopen_after_read_only
from liz.db.url import asyncpg_connect_args, describe, normalize_database_url
from liz.errors import UsageError

logger = logging.getLogger(__name__)

# How long a SQLite connection waits for another writer (this process or another)
# before giving up with "database is locked".
SQLITE_BUSY_TIMEOUT_MS = 30_000


def create_engine(
    url: str, settings: Settings | None = None, *, pooled: bool = True
) -> AsyncEngine:
    """Create the process's engine for `url` (any form `normalize_database_url` accepts).

    SQLite: WAL journal (readers never wait for the writer), ``busy_timeout``,
    ``foreign_keys=ON``, ``synchronous=NORMAL``. A file gets one connection for the
    sessions that may write, each transaction opened with ``BEGIN IMMEDIATE``: the
    process's writers queue for it in the process (first come, first served, for up
    to ``db_pool_timeout``), and only writers in other processes wait in SQLite's
    busy handler. Sessions that only read use :func:`read_engine`'s connections and
    never wait for a writer.

    PostgreSQL (asyncpg): a pool sized by ``db_pool_size``, ``db_max_overflow`` and
    ``db_pool_timeout`` from `settings`; connections the server dropped are replaced
    rather than failing a request (see :func:`_replace_dropped_connections`).

    ``pooled=False`` opens a connection per use (migrations, one-off commands).
    """
    settings = settings or Settings()
    normalized = make_url(normalize_database_url(url))
    kwargs: dict[str, Any] = {"echo": settings.db_echo}
    if not pooled:
        kwargs["poolclass"] = NullPool
    if normalized.get_backend_name() == "sqlite":
        file = _is_sqlite_file(normalized)
        if file:
            # As Prisma does: a new SQLite file may live in a folder that does not exist yet.
            Path(str(normalized.database)).parent.mkdir(parents=True, exist_ok=True)
        if pooled and file:
            kwargs.update(pool_size=1, max_overflow=0, pool_timeout=settings.db_pool_timeout)
            kwargs.update(_NO_RESET_ON_RETURN)
        engine = _create_async_engine(normalized, **kwargs, **_one_hop(normalized))
        _tune_sqlite(engine, begin="BEGIN IMMEDIATE")
        if pooled and file:
            _add_reader(engine, normalized, settings)
            reopen_after_read_only(engine)
    else:
        _require_postgres_driver()
        normalized, connect_args = asyncpg_connect_args(normalized)
        if pooled:
            kwargs.update(
                pool_size=settings.db_pool_size,
                max_overflow=settings.db_max_overflow,
                pool_timeout=settings.db_pool_timeout,
            )
        engine = _create_async_engine(normalized, connect_args=connect_args, **kwargs)
        if pooled:
            _replace_dropped_connections(engine)
    logger.debug("database engine for %s", describe(normalized))
    return engine


def _require_postgres_driver() -> None:
    if find_spec("asyncpg") is None:
        raise UsageError(
            "a PostgreSQL DATABASE_URL needs its driver: pip install 'liz-agents[postgres]'"
        )


# A pooled connection idle this long is pinged before use: a NAT or firewall may have
# dropped it silently, which the connection itself cannot see.
PING_AFTER_IDLE_S = 30.0


def _replace_dropped_connections(engine: AsyncEngine) -> None:
    """Check each PostgreSQL connection as it leaves the pool, at no cost when it is busy.

    ``pool_pre_ping`` would ping on every checkout, three round trips with asyncpg
    (BEGIN, ``;``, ROLLBACK). A connection the server closed (a restart,
    ``pg_terminate_backend``) already knows it is closed; only one idle for a while gets
    the real ping.
    """

    driver_error = engine.dialect.loaded_dbapi.Error

    @event.listens_for(engine.sync_engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        if record.driver_connection.is_closed():
            raise DisconnectionError("the server closed this connection")  # the pool replaces it
        idle_since = record.info.get("idle_since")
        if idle_since is not None and time.monotonic() - idle_since > PING_AFTER_IDLE_S:
            try:
                dbapi_connection.ping()
            except (driver_error, OSError) as exc:
                raise DisconnectionError(f"the connection did not answer a ping: {exc}") from exc


def _is_sqlite_file(url: URL) -> bool:
    """False for the in-memory databases (``:memory:``, ``file::memory:``, ``mode=memory``)."""
    database = url.database or ""
    in_memory = database in ("", ":memory:") or database.startswith("file::memory:")
    return not in_memory and url.query.get("mode") != "memory"


# SQLAlchemy ends every transaction it began before a connection goes back to the
# pool; the pool's own ROLLBACK on top costs a hop to the driver's thread per use,
# and the statements sent straight to the driver (liz.db.driver) open none.
_NO_RESET_ON_RETURN: dict[str, Any] = {"pool_reset_on_return": None}

# The read-only engine of each SQLite file engine (see read_engine), disposed with it.
_readers: weakref.WeakKeyDictionary[Engine, AsyncEngine] = weakref.WeakKeyDictionary()


def read_engine(engine: AsyncEngine) -> AsyncEngine:
    """The engine for sessions that only read.

    For a SQLite file: a pool of read-only connections of its own, whose
    transactions start deferred, so reads never queue behind the writer (WAL gives
    each one the last committed state). Anything else: ``engine`` itself.
    """
    return _readers.get(engine.sync_engine, engine)


def _one_hop(url: URL) -> dict[str, Any]:
    """aiosqlite's adapter with one hop to SQLite's thread a statement (liz._compat)."""
    if url.get_driver_name() == "aiosqlite":
        return {"module": one_hop_dbapi()}
    return {}


def _add_reader(engine: AsyncEngine, url: URL, settings: Settings) -> None:
    # Every connection is kept: opening one (a thread, the pragmas) costs more than a read.
    # The last returned is taken first, so a light load keeps to few threads, which would
    # otherwise all take turns for the GIL.
    reader = _create_async_engine(
        url,
        echo=settings.db_echo,
        pool_size=settings.db_pool_size + settings.db_max_overflow,
        pool_use_lifo=True,
        max_overflow=0,
        pool_timeout=settings.db_pool_timeout,
        **_NO_RESET_ON_RETURN,
        **_one_hop(url),
    )
    _tune_sqlite(reader, begin="BEGIN", read_only=True)
    _readers[engine.sync_engine] = reader

    @event.listens_for(engine.sync_engine, "engine_disposed")
    def _dispose_reader(_engine: Any) -> None:
        # AsyncEngine.dispose runs this in its greenlet, where the reader's async
        # connections can still be closed.
        reader.sync_engine.dispose()


def _tune_sqlite(engine: AsyncEngine, *, begin: str, read_only: bool = False) -> None:
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
            if read_only:
                cursor.execute("PRAGMA query_only=ON")
        finally:
            cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        # A deferred transaction that reads and then writes fails at once with
        # SQLITE_BUSY when another process's writer got in between (busy_timeout
        # does not apply to that upgrade). IMMEDIATE takes the write lock up front
        # and waits for it. Read-only connections begin deferred: they never write.
        if engine.dialect.driver == "aiosqlite":
            # One call on the connection's thread, not a statement's four.
            driver = connection.connection.driver_connection
            await_(run_on_sqlite_thread(driver, sqlite3.Connection.execute, begin))
        else:
            connection.exec_driver_sql(begin)


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """The process's session factory: one session per unit of work."""
    return async_sessionmaker(engine, expire_on_commit=False)


def make_read_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """Sessions that only read (see :func:`read_engine`); a write in one fails on SQLite."""
    return async_sessionmaker(read_engine(engine), expire_on_commit=False)


def dialect_name(engine: AsyncEngine) -> str:
    """``"sqlite"`` or ``"postgresql"``."""
    return engine.dialect.name
