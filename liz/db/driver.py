"""The few statements every turn runs, sent straight to the driver (aiosqlite or asyncpg).

Through a SQLAlchemy session a statement costs the session's and the result's
bookkeeping on top of its hop to SQLite's thread (liz._compat), and a
transaction two hops more (``BEGIN``, ``COMMIT``). Here a statement costs one hop, or
one round trip to PostgreSQL, and statements committed together
(:meth:`Driver.commit`) one hop in all on SQLite.

The connection still comes from the engine's pool, so a SQLite write still waits its
turn for the process's one writing connection; a transaction begins with ``BEGIN
IMMEDIATE`` on SQLite, as every writing session's does (see liz.db.engine); and the
driver's errors become SQLAlchemy's, so an outage is still told as one (liz.db.errors).
Everything else goes through SQLAlchemy.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ClauseElement, TextClause, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import greenlet_spawn

from liz._compat import run_on_sqlite_thread
from liz.db.conflicts import retry_conflicts
from liz.db.types import as_utc, sqlite_milliseconds


@dataclass(frozen=True)
class Statement:
    """One SQL statement, in each driver's parameter style."""

    sqlite: str
    postgres: str
    named: str  # for a SQLAlchemy session (Bound.executable)

    @classmethod
    def of(cls, template: str) -> Statement:
        """``template`` with ``{}`` where each parameter goes, in order."""
        count = template.count("{}")
        return cls(
            sqlite=template.format(*["?"] * count),
            postgres=template.format(*(f"${number}" for number in range(1, count + 1))),
            named=template.format(*(f":p{number}" for number in range(1, count + 1))),
        )

    @classmethod
    def of_core(cls, statement: ClauseElement) -> Statement:
        """A SQLAlchemy Core ``statement``, compiled once for each driver; its parameters
        are ``bindparam("p1")`` to ``bindparam("pN")``, bound in that order."""
        from sqlalchemy.dialects.postgresql.asyncpg import dialect as asyncpg_dialect
        from sqlalchemy.dialects.sqlite import dialect as sqlite_dialect

        sqlite: Any = statement.compile(dialect=sqlite_dialect(paramstyle="qmark"))
        postgres: Any = statement.compile(dialect=asyncpg_dialect())  # type: ignore[no-untyped-call]
        named = statement.compile(dialect=sqlite_dialect(paramstyle="named"))
        order = [f"p{number}" for number in range(1, len(named.params) + 1)]
        if sqlite.positiontup != order or postgres.positiontup != order:
            raise TypeError(f"name the parameters of {statement} p1 to pN, in order")
        return cls(sqlite=str(sqlite), postgres=str(postgres), named=str(named))

    def bind(self, *parameters: Any) -> Bound:
        """This statement with its parameters, to run later (:meth:`Driver.commit`)."""
        return Bound(self, parameters)


@dataclass(frozen=True)
class Bound:
    """A statement and its parameters."""

    statement: Statement
    parameters: tuple[Any, ...]

    def executable(self) -> TextClause:
        """The statement for a SQLAlchemy session's transaction, when it must ride in
        one (the facts' write); for plain values (text, numbers), which need no
        conversion."""
        values = {f"p{number}": value for number, value in enumerate(self.parameters, 1)}
        return text(self.statement.named).bindparams(**values)


class Driver:
    """A pooled connection's driver connection; see :func:`connect`.

    Parameters are passed as the driver takes them, except datetimes, which are
    stored the way :class:`liz.db.types.UTCDateTime` stores them (milliseconds since
    the epoch on SQLite, as Prisma does; ``timestamptz`` on PostgreSQL).
    """

    def __init__(self, connection: Any, *, sqlite: bool) -> None:
        self._connection = connection  # aiosqlite.Connection or asyncpg.Connection
        self.sqlite = sqlite

    @property
    def connection(self) -> Any:
        """The driver's own connection, for what only it offers (type codecs)."""
        return self._connection

    async def execute(self, statement: Statement, *parameters: Any) -> None:
        if self.sqlite:
            await self._connection.execute(statement.sqlite, self._bound(parameters))
        else:
            await self._connection.execute(statement.postgres, *self._bound(parameters))

    async def fetch(self, statement: Statement, *parameters: Any) -> Sequence[Sequence[Any]]:
        if self.sqlite:
            rows: Sequence[Sequence[Any]] = await self._connection.execute_fetchall(
                statement.sqlite, self._bound(parameters)
            )
            return rows
        return await self._connection.fetch(statement.postgres, *self._bound(parameters))  # type: ignore[no-any-return]

    async def commit(self, *statements: Bound) -> None:
        """Execute ``statements`` in one transaction: all are committed, or none.

        They cost one hop or round trip in all: on SQLite the whole transaction
        (``BEGIN IMMEDIATE`` to ``COMMIT``) is one call on the connection's thread, and
        cancelled while that call runs it still ends whole; on PostgreSQL they are sent
        as one statement (each a data-modifying ``WITH`` part of it), so every one of
        them sees the database as it was before any of them: give it statements that
        do not read each other's rows. They take their rows in the order given (see
        liz.db.conflicts for the order every transaction keeps); a deadlock or
        serialization failure runs them again, a few times at most.
        """
        if not self.sqlite:
            parameters = self._bound([value for bound in statements for value in bound.parameters])
            sql = _one_statement(tuple(bound.statement.postgres for bound in statements))
            # One statement is its own transaction: a deadlock rolls back all of it, and
            # it runs again whole (liz.db.conflicts).
            await retry_conflicts(
                lambda: self._connection.execute(sql, *parameters), what="a turn's write"
            )
            return
        work = [(bound.statement.sqlite, self._bound(bound.parameters)) for bound in statements]
        await run_on_sqlite_thread(self._connection, _commit, work)

    def _bound(self, parameters: Sequence[Any]) -> list[Any]:
        return [self._bind(value) for value in parameters]

    def _bind(self, value: Any) -> Any:
        if isinstance(value, datetime):
            return sqlite_milliseconds(value) if self.sqlite else as_utc(value)
        return value


@functools.lru_cache(maxsize=64)
def _one_statement(statements: tuple[str, ...]) -> str:
    """PostgreSQL statements as one: ``WITH s0 AS (...), s1 AS (...) SELECT 1``, each
    statement's ``$n`` parameters numbered on from the previous statement's."""
    if len(statements) == 1:
        return statements[0]
    parts, offset = [], 0
    for number, sql in enumerate(statements):
        renumbered = _PARAMETER.sub(functools.partial(_shifted, by=offset), sql)
        parts.append(f"s{number} AS ({renumbered})")
        offset += len(set(_PARAMETER.findall(sql)))
    # PostgreSQL runs data-modifying WITH parts that nothing reads last one first: written
    # in reverse, they take their rows in the order given, the order that keeps a reply
    # from deadlocking against a learning job (liz.db.conflicts).
    return f"WITH {', '.join(reversed(parts))} SELECT 1"


def _shifted(match: re.Match[str], *, by: int) -> str:
    return f"${int(match[1]) + by}"


_PARAMETER = re.compile(r"\$(\d+)")


def _commit(db: sqlite3.Connection, work: Sequence[tuple[str, list[Any]]]) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        for sql, parameters in work:
            db.execute(sql, parameters)
    except BaseException:
        db.rollback()
        raise
    db.commit()


@asynccontextmanager
async def connect(engine: AsyncEngine) -> AsyncIterator[Driver]:
    """A connection of ``engine``'s pool, as the driver's own, given back on exit.

    Taken without a SQLAlchemy ``Connection`` around it (whose bookkeeping would cost
    more than a short read), and given back in a greenlet, where the pool's reset can
    reach the driver.
    """
    sqlite = engine.dialect.name == "sqlite"
    try:
        raw = await engine.raw_connection()  # connecting can fail too: a missing file
        connection: Any = raw.driver_connection
        try:
            yield Driver(connection, sqlite=sqlite)
        finally:
            if sqlite and connection.in_transaction:
                # A transaction cut short (cancelled during its ROLLBACK): SQLite's
                # pools do not reset what they are given back (liz.db.engine).
                await connection.rollback()
            await greenlet_spawn(raw.close)
    except _driver_errors(engine) as exc:
        raise sa_exc.DBAPIError.instance(None, None, exc, Exception) from exc


def _driver_errors(engine: AsyncEngine) -> tuple[type[Exception], ...]:
    """What the driver raises, and what SQLAlchemy's adapter of it raises while connecting.

    On PostgreSQL that is the server's errors, a dropped connection's among them, and
    asyncpg's ``InterfaceError``, which a connection already closed raises.
    """
    adapter: type[Exception] = engine.dialect.loaded_dbapi.Error
    if engine.dialect.name == "sqlite":
        return (sqlite3.Error, adapter)
    import asyncpg  # only installed with PostgreSQL support

    return (asyncpg.PostgresError, asyncpg.InterfaceError, adapter)
