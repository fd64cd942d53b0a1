"""Every use of another library's private names, in one place.

Each use below reaches past a library's public API because no public call does the
job, and says which versions it was checked against. ``tests/test_compat.py`` fails,
naming the use, when a library changes the shape relied on here, and ``pyproject.toml``
bounds each of these libraries below its next release series (``constraints.txt``
pins the exact versions CI runs).

1. aiosqlite (checked against 0.22.1): :func:`run_on_sqlite_thread`, a function run on
   a connection's own thread in one call (``Connection._execute``, ``._conn``).
2. SQLAlchemy's aiosqlite adapter (checked against 2.1.9): :func:`one_hop_dbapi`, its
   DBAPI module with one hop to SQLite's thread per statement, not four.
3. uvicorn's h11 protocol (checked against 0.55.0): :class:`H11Protocol`,
   :func:`awaiting_request_headers` and :func:`h11_protocol_with_header_deadline`, for
   the header timeout uvicorn has no option for.
4. twikit (checked against 2.3.3): :func:`twikit_conversation_id`, which its ``Tweet``
   keeps only in the raw data.
5. opentelemetry-sdk (checked against 1.45.2): :data:`OTEL_BATCH_QUEUE_LOGGER`, the
   logger its batch processor says "Queue full" on, once for every span it drops.
"""

from __future__ import annotations

import asyncio
import collections
import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import h11
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util import await_

if TYPE_CHECKING:
    from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "OTEL_BATCH_QUEUE_LOGGER",
    "H11Protocol",
    "OneHopCursor",
    "awaiting_request_headers",
    "h11_protocol_with_header_deadline",
    "one_hop_dbapi",
    "run_on_sqlite_thread",
    "twikit_conversation_id",
]

T = TypeVar("T")


# 1. aiosqlite ---------------------------------------------------------------------------


async def run_on_sqlite_thread(
    connection: Any, function: Callable[..., T], *args: Any, **kwargs: Any
) -> T:
    """``function(db, *args, **kwargs)`` on the thread of ``connection`` (an
    ``aiosqlite.Connection``), ``db`` being its ``sqlite3.Connection``.

    aiosqlite runs each of its own methods so, one queue entry each; a whole
    transaction passed as one function costs one hop instead of one per statement.
    """
    result: T = await connection._execute(function, connection._conn, *args, **kwargs)
    return result


# 2. SQLAlchemy's aiosqlite adapter ------------------------------------------------------

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
    """A cursor whose statements each make, use and close a cursor on SQLite's thread.

    SQLAlchemy's own makes four hops a statement (open a cursor, execute, fetch, close),
    each an asyncio future settled from the connection's thread.
    """

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
        try:
            self._outcome = await_(
                run_on_sqlite_thread(self._connection, _run, operation, parameters, many=many)
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


class _OneHopDBAPI(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> _OneHopConnection:
        adapted = super().connect(*arg, **kw)
        return _OneHopConnection(self, adapted._connection)


def one_hop_dbapi() -> AsyncAdapt_aiosqlite_dbapi:
    """The DBAPI module for ``create_async_engine(..., module=...)`` on aiosqlite, making
    :class:`OneHopCursor` s."""
    import aiosqlite

    return _OneHopDBAPI(aiosqlite, sqlite3)


# 3. uvicorn's h11 protocol --------------------------------------------------------------
# H11Protocol is what ``uvicorn.run(http="h11")`` serves with; a subclass passed as
# ``http=`` may watch each connection. Its ``conn`` (the h11.Connection), ``transport``
# and ``loop`` are set by uvicorn and read here.


def __getattr__(name: str) -> Any:
    # Imported on first use: the database's users need not load uvicorn.
    if name == "H11Protocol":
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def awaiting_request_headers(protocol: H11Protocol) -> bool:
    """Whether the connection is open and its next request's headers are not all in."""
    return protocol.conn.their_state is h11.IDLE and not protocol.transport.is_closing()


# How long a connection answered 408 for slow headers is still read (and dropped) before
# it is closed.
LINGER_AFTER_TOO_SLOW = 2.0


def h11_protocol_with_header_deadline(header_timeout: float, too_slow: bytes) -> type[Any]:
    """uvicorn's h11 protocol, writing ``too_slow`` and closing a connection whose next
    request's headers are not all in ``header_timeout`` seconds after it opened or after
    its last request (liz.http.slow_clients)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadlineProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _answered_too_slow = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._answered_too_slow:
                return  # the 408 is written; what the client still sends is dropped
            super().data_received(data)
            if awaiting_request_headers(self):
                self._arm()  # part of a request's headers, or none yet: the clock runs
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(header_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _too_slow(self) -> None:
            self._header_timer = None
            if awaiting_request_headers(self):
                # Half-close, then read on for a moment: a socket closed with the client's
                # bytes unread sends a reset, which can discard the 408 before it is read.
                self._answered_too_slow = True
                self.transport.write(too_slow)
                if self.transport.can_write_eof():
                    self.transport.write_eof()
                self.loop.call_later(LINGER_AFTER_TOO_SLOW, self.transport.close)

    return HeaderDeadlineProtocol


# 4. twikit ------------------------------------------------------------------------------


def twikit_conversation_id(tweet: Any) -> str | None:
    """The id of the thread a twikit ``Tweet`` belongs to, which it offers no property for."""
    data = getattr(tweet, "_data", None) or {}
    conversation = data.get("legacy", {}).get("conversation_id_str")
    return str(conversation) if conversation else None


# 5. opentelemetry-sdk -------------------------------------------------------------------

# The batch processor lives in a private module and logs there; liz.observe.span_export
# filters that logger's "Queue full" lines down to one.
OTEL_BATCH_QUEUE_LOGGER = "opentelemetry.sdk._shared_internal"
