"""Running a piece of database work on a SQLite connection's own thread, in one call.

aiosqlite keeps each ``sqlite3`` connection on a thread of its own and hands it one
call at a time; through SQLAlchemy a statement takes four such calls (cursor,
execute, fetch, close), each a wake-up of that thread and of the event loop, and
SQLAlchemy's own work around them. A facts write or search is a handful of short
statements, so those hand-overs were most of its time: a store's five statements
cost about 2 ms where SQLite itself needs 0.1. Here the whole unit of work is one
function run on the connection's thread: one hand-over however many statements.

aiosqlite has no public call for this; SQLAlchemy's own aiosqlite dialect reaches
the same queue (``_tx``, ``_conn``) to set the isolation level. :func:`supports`
checks those names are there, so a future aiosqlite without them makes callers
take their SQLAlchemy path instead of failing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.util import greenlet_spawn

from liz.db.driver import AIOSQLITE_RUNS_FUNCTIONS

T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]


def supports(engine: AsyncEngine) -> bool:
    """True when ``engine`` is SQLite through aiosqlite with the calls used here."""
    return engine.dialect.driver == "aiosqlite" and AIOSQLITE_RUNS_FUNCTIONS


async def run_on_thread(connection: AsyncConnection, work: Work[T]) -> T:
    """Run ``work(sqlite3_connection)`` on the thread that owns ``connection``'s driver
    connection and return its result (or raise what it raised).

    ``work`` runs while the event loop goes on; it must not touch asyncio, and it
    should be short: the connection serves nothing else meanwhile.
    """
    raw = await connection.get_raw_connection()
    driver: Any = raw.driver_connection
    result: T = await driver._execute(work, driver._conn)
    return result


class ThreadConnection:
    """A pooled SQLite connection taken without SQLAlchemy around it (see :func:`connected`):
    each :meth:`run` is one hop to its thread, and nothing else is (no ``BEGIN`` or
    ``ROLLBACK`` of a session's)."""

    def __init__(self, driver: Any) -> None:
        self._driver = driver  # aiosqlite.Connection

    async def run(self, work: Work[T]) -> T:
        """``work(sqlite3_connection)`` on the connection's thread; see :func:`run_on_thread`."""
        result: T = await self._driver._execute(work, self._driver._conn)
        return result


@asynccontextmanager
async def connected(engine: AsyncEngine) -> AsyncIterator[ThreadConnection]:
    """A connection of ``engine``'s pool (check :func:`supports` first), given back on exit.

    Each ``run`` should leave no transaction open; if one is left (a ``run`` cut short
    by cancellation), it is rolled back before the connection goes back: SQLite's pools
    here do not reset what they are given (liz.db.engine).
    """
    raw = await engine.raw_connection()
    driver: Any = raw.driver_connection
    try:
        yield ThreadConnection(driver)
    finally:
        try:
            if driver.in_transaction:
                await driver.rollback()
        finally:
            await greenlet_spawn(raw.close)
