"""SQLAlchemy's aiosqlite adapter with one hop to SQLite's thread per statement.

The adapter's cursor makes four (open a cursor, execute, fetch the rows, close it),
each an asyncio future settled from the connection's thread. This one runs the four
in one function on that thread, so every session on SQLite pays one hop a statement.
It is given to the engine as its DBAPI module (``create_async_engine(module=...)``).
"""

from __future__ import annotations

import collections
import sqlite3
from collections.abc import Sequence
from typing import Any

from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util import await_

# What one statement left: its description, rows, rowcount and lastrowid.
_Outcome = tuple[Any, list[Any], int, int]


def _run(
    db: sqlite3.Connection, operation: str, parameters: Any, *, many: bool = False
) -> _Outcome:
    cursor = db.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        else:
            cursor.execute(operation, () if parameters is None else parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else []
        return description, rows, cursor.rowcount, cursor.lastrowid or 0
    finally:
        cursor.close()


class OneHopCursor(AsyncAdapt_aiosqlite_cursor):
    """A cursor whose statements each make, use and close a cursor on SQLite's thread."""

    __slots__ = ("_outcome",)

    def __init__(self, adapt_connection: AsyncAdapt_aiosqlite_connection) -> None:
        # No cursor is opened here: each statement opens its own on the thread.
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._rows = collections.deque()
        self._outcome: _Outcome = (None, [], -1, 0)

    @property
    def description(self) -> Any:
        return self._outcome[0]

    @property
    def rowcount(self) -> int:
        return self._outcome[2]

    @property
    def lastrowid(self) -> int:
        return self._outcome[3]

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        self._send(operation, parameters, many=False)

    def executemany(self, operation: Any, seq_of_parameters: Sequence[Any]) -> Any:
        self._send(operation, seq_of_parameters, many=True)

    def _send(self, operation: Any, parameters: Any, *, many: bool) -> None:
        connection = self._connection
        try:
            self._outcome = await_(
                connection._execute(_run, connection._conn, operation, parameters, many=many)
            )
        except Exception as error:
            self._adapt_connection._handle_exception(error)
        self._rows = collections.deque(self._outcome[1])

    async def _async_soft_close(self) -> None:
        return None  # nothing is open on the thread between statements

    def close(self) -> None:
        self._rows.clear()


class _OneHopConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ()
    _cursor_cls: type[AsyncAdapt_aiosqlite_cursor] = OneHopCursor


class OneHopDBAPI(AsyncAdapt_aiosqlite_dbapi):
    """The aiosqlite DBAPI module SQLAlchemy adapts, making :class:`OneHopCursor` s."""

    def connect(self, *arg: Any, **kw: Any) -> _OneHopConnection:
        adapted = super().connect(*arg, **kw)
        return _OneHopConnection(self, adapted._connection)


def one_hop_dbapi() -> OneHopDBAPI:
    import aiosqlite

    return OneHopDBAPI(aiosqlite, sqlite3)
