"""How liz opens SQLite transactions: writers queue in the process, marked readers never wait.

SQLite lets one connection write at a time; in WAL mode readers read alongside it.
A transaction that starts deferred, reads, and then writes fails at once with
"database is locked" when another writer got in between, so a transaction that may
write starts with ``BEGIN IMMEDIATE`` and takes the write lock up front. Waiting for
that lock inside SQLite means its busy handler, which sleeps (1, 2, 5 ... 100 ms)
and wakes late: under load, requests spend most of their time asleep there.

So, per engine:

- a transaction that may write first waits for the process's own write lock (an
  ``asyncio.Lock``: first come, first served, woken the moment it is free), then
  sends ``BEGIN IMMEDIATE`` (a writer in another process is still waited for by
  SQLite's busy handler); the lock is let go once ``COMMIT`` or ``ROLLBACK`` is done;
- a session opened with :func:`read_only_session` starts a deferred ``BEGIN``,
  takes no lock and so never waits for writers; a write in it is refused with a
  clear error, because SQLite could not promise it.

Nothing is sent until the first statement: a session that runs none costs nothing.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import weakref
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session, SessionTransaction
from sqlalchemy.pool import PoolResetState
from sqlalchemy.util import concurrency

from liz.errors import UsageError

READ_ONLY = "liz_read_only"  # a key in Session.info
_STATE = "liz_sqlite_transaction"  # a key in the DBAPI connection's info
_PENDING_WRITE, _PENDING_READ, _READING, _WRITING = "pending-write", "pending-read", "r", "w"
_WRITE_STATEMENT = re.compile(
    r"^\s*(INSERT|UPDATE|DELETE|REPLACE|UPSERT|CREATE|DROP|ALTER)\b", re.IGNORECASE
)


class LizSession(Session):
    """The sessions :func:`liz.db.engine.make_sessionmaker` makes; they honour READ_ONLY."""


def read_only_session(sessions: async_sessionmaker[AsyncSession]) -> AsyncSession:
    """A session for reading only: on SQLite it never waits for a writer.

    >>> async with read_only_session(runtime.sessions) as session:
    ...     memories = await recent_memories(session, user_id="ada", agent_id="liz", limit=100)

    On PostgreSQL it is an ordinary session.
    """
    return sessions(info={READ_ONLY: True})


@event.listens_for(LizSession, "after_begin")
def _note_read_only(session: Session, transaction: SessionTransaction, conn: Connection) -> None:
    # Runs after the connection's "begin" and before its first statement.
    info = conn.info
    if session.info.get(READ_ONLY) and info.get(_STATE) == _PENDING_WRITE:
        info[_STATE] = _PENDING_READ


def queue_sqlite_writers(engine: AsyncEngine, lock_timeout: float) -> None:
    """Install the rules above on a SQLite ``engine`` (whose connections are in autocommit).

    The engine must be made with ``pool_reset_on_return=None``: connections given back
    are rolled back here, and only when their transaction was left open.
    """
    locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
        weakref.WeakKeyDictionary()
    )
    # The write lock each DBAPI connection holds, by id (the adapters take no attributes).
    held: dict[int, asyncio.Lock] = {}

    def write_lock() -> asyncio.Lock:
        # One lock per event loop: an asyncio.Lock belongs to the loop it first waited in.
        loop = asyncio.get_running_loop()
        lock = locks.get(loop)
        if lock is None:
            lock = locks[loop] = asyncio.Lock()
        return lock

    def release(connection: Any) -> None:
        # The dialect gets the pool's proxy, the events the DBAPI connection under it.
        dbapi_connection = getattr(connection, "dbapi_connection", connection)
        lock = held.pop(id(dbapi_connection), None)
        if lock is not None and lock.locked():
            lock.release()

    async def acquire(lock: asyncio.Lock) -> None:
        try:
            await asyncio.wait_for(lock.acquire(), lock_timeout)
        except TimeoutError:
            raise OperationalError(
                "BEGIN IMMEDIATE",
                None,
                sqlite3.OperationalError(
                    f"database is locked: another transaction of this process kept the write "
                    f"lock for {lock_timeout:g} s"
                ),
            ) from None

    sync_engine = engine.sync_engine
    dialect = sync_engine.dialect
    commit, rollback = dialect.do_commit, dialect.do_rollback

    # The lock is let go once COMMIT or ROLLBACK is done, so the next writer in line finds
    # SQLite's own lock free. (SQLAlchemy has no event after a commit: wrap the dialect's.)
    def do_commit(dbapi_connection: Any) -> None:
        try:
            commit(dbapi_connection)
        finally:
            release(dbapi_connection)

    def do_rollback(dbapi_connection: Any) -> None:
        try:
            rollback(dbapi_connection)
        finally:
            release(dbapi_connection)

    dialect.do_commit = do_commit  # type: ignore[method-assign]
    dialect.do_rollback = do_rollback  # type: ignore[method-assign]

    @event.listens_for(sync_engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.info[_STATE] = _PENDING_WRITE

    @event.listens_for(sync_engine, "before_cursor_execute")
    def _start(
        conn: Connection, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        info = conn.info
        state = info.get(_STATE)
        if state is None or state == _WRITING:
            return
        writes = _WRITE_STATEMENT.match(statement) is not None
        if state == _READING:
            if writes:
                raise UsageError(
                    "a write in a read-only session: open it with runtime.sessions() and "
                    "`session.begin()` instead of read_only_session()"
                )
            return
        if state == _PENDING_READ and not writes:
            cursor.execute("BEGIN")
            info[_STATE] = _READING
            return
        dbapi_connection = conn.connection.dbapi_connection
        if concurrency.in_greenlet():  # driven by asyncio (always, for an AsyncEngine)
            lock = write_lock()
            concurrency.await_(acquire(lock))
            held[id(dbapi_connection)] = lock
        try:
            cursor.execute("BEGIN IMMEDIATE")
        except BaseException:
            release(dbapi_connection)
            raise
        info[_STATE] = _WRITING

    @event.listens_for(sync_engine, "commit")
    @event.listens_for(sync_engine, "rollback")
    def _end(conn: Connection) -> None:
        conn.info.pop(_STATE, None)

    @event.listens_for(sync_engine, "reset")
    def _reset(dbapi_connection: Any, record: Any, reset_state: PoolResetState) -> None:
        # SQLAlchemy would roll back every connection given back, even when the
        # transaction ended already (the usual case): a trip to SQLite's thread for
        # nothing. SQLite itself says whether one is open.
        if reset_state.terminate_only:
            return
        driver = getattr(dbapi_connection, "driver_connection", dbapi_connection)
        if getattr(driver, "in_transaction", True):
            dbapi_connection.rollback()

    @event.listens_for(sync_engine, "checkin")
    @event.listens_for(sync_engine, "close")
    def _forget(dbapi_connection: Any, record: Any) -> None:
        # Whatever happened, a connection back in (or out of) the pool holds no lock.
        if record is not None:
            record.info.pop(_STATE, None)
        release(dbapi_connection)
