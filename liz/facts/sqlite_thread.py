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
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

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
