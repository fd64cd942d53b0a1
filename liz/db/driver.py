"""The few statements every turn runs, sent straight to the driver (aiosqlite or asyncpg).

Each is written once, as SQLAlchemy Core on the mapped tables, and compiled once for
each driver (:class:`Statement`); its values and result columns are converted by the
columns' own types, as a session converts them (liz.db.types).

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
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BindParameter, Delete, Executable, Insert, Select, Update, bindparam
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql.asyncpg import dialect as asyncpg_dialect
from sqlalchemy.dialects.sqlite import dialect as sqlite_dialect
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql.visitors import replacement_traverse
from sqlalchemy.util import greenlet_spawn

from liz._compat import run_on_sqlite_thread
from liz.db.conflicts import retry_conflicts

Processor = Callable[[Any], Any]
Core = Insert | Update | Delete | Select[Any]


@dataclass(frozen=True)
class Compiled:
    """A statement compiled for one driver: its SQL, its parameters' names in the
    driver's order, and the conversions of their column types (liz.db.types), of the
    parameters and of a result's columns."""

    sql: str
    slots: tuple[tuple[str, Processor | None], ...]
    constants: Mapping[str, Any]  # the values written in the statement itself
    columns: tuple[Processor | None, ...]

    @classmethod
    def of(cls, statement: Core, dialect: Dialect) -> Compiled:
        compiled: Any = statement.compile(dialect=dialect)
        # SQLite's order names a parameter used twice twice; PostgreSQL's ($n), once.
        binds = [(name, compiled.binds[name]) for name in compiled.positiontup]
        selected = getattr(statement, "selected_columns", ())
        return cls(
            sql=str(compiled),
            slots=tuple((name, _processor(bind.type, dialect, bind=True)) for name, bind in binds),
            constants={name: bind.effective_value for name, bind in binds if not bind.required},
            columns=tuple(_processor(column.type, dialect) for column in selected),
        )

    def parameters(self, values: Mapping[str, Any]) -> list[Any]:
        if self.constants:
            values = {**self.constants, **values}
        return [
            values[name] if convert is None else convert(values[name])
            for name, convert in self.slots
        ]

    def rows(self, rows: Sequence[Sequence[Any]]) -> Sequence[Sequence[Any]]:
        if not any(self.columns):
            return rows
        converted = [(index, convert) for index, convert in enumerate(self.columns) if convert]
        found = []
        for row in rows:
            values = list(row)
            for index, convert in converted:
                values[index] = convert(values[index])
            found.append(values)
        return found


def _processor(type_: Any, dialect: Dialect, *, bind: bool = False) -> Processor | None:
    typed = type_.dialect_impl(dialect)
    return typed.bind_processor(dialect) if bind else typed.result_processor(dialect, None)  # type: ignore[no-any-return]


_SQLITE = sqlite_dialect(paramstyle="qmark")
_POSTGRES = asyncpg_dialect()  # type: ignore[no-untyped-call]


class Statement:
    """A SQLAlchemy Core statement, compiled once for each driver. Its parameters are
    named with ``bindparam``, and given by name when it runs."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.sqlite = Compiled.of(core, _SQLITE)
        self.postgres = Compiled.of(core, _POSTGRES)
        # What is given when it runs: every parameter but the statement's own values.
        self.names = {name for name, _ in self.sqlite.slots} - self.sqlite.constants.keys()

    def bind(self, **values: Any) -> Bound:
        """This statement with its parameters, to run later (:meth:`Driver.commit`)."""
        if values.keys() != self.names:
            missing, extra = sorted(self.names - values.keys()), sorted(values.keys() - self.names)
            raise TypeError(f"{self.core}: parameters missing {missing}, unknown {extra}")
        return Bound(self, values)


@dataclass(frozen=True)
class Bound:
    """A statement and its parameters."""

    statement: Statement
    values: Mapping[str, Any]

    def executable(self) -> Executable:
        """The statement with its values, for a SQLAlchemy session's transaction, when it
        must ride in one (the facts' write, an approval's reply)."""

        def with_value(element: Any, **kw: Any) -> Any:
            if isinstance(element, BindParameter) and element.key in self.values:
                return bindparam(element.key, self.values[element.key], type_=element.type)
            return None

        core: Any = self.statement.core
        executable: Executable = replacement_traverse(core, {}, with_value)
        return executable


class Driver:
    """A pooled connection's driver connection; see :func:`connect`.

    Values are converted as the statement's column types convert them (a datetime as
    :class:`liz.db.types.UTCDateTime` stores it), and so are the columns read.
    """

    def __init__(self, connection: Any, *, sqlite: bool) -> None:
        self._connection = connection  # aiosqlite.Connection or asyncpg.Connection
        self.sqlite = sqlite

    @property
    def connection(self) -> Any:
        """The driver's own connection, for what only it offers (type codecs)."""
        return self._connection

    async def execute(self, statement: Statement, **values: Any) -> None:
        if self.sqlite:
            compiled = statement.sqlite
            await self._connection.execute(compiled.sql, compiled.parameters(values))
        else:
            compiled = statement.postgres
            await self._connection.execute(compiled.sql, *compiled.parameters(values))

    async def fetch(self, statement: Statement, **values: Any) -> Sequence[Sequence[Any]]:
        if self.sqlite:
            compiled = statement.sqlite
            rows = await self._connection.execute_fetchall(
                compiled.sql, compiled.parameters(values)
            )
        else:
            compiled = statement.postgres
            rows = await self._connection.fetch(compiled.sql, *compiled.parameters(values))
        return compiled.rows(rows)

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
            parameters = [
                value
                for bound in statements
                for value in bound.statement.postgres.parameters(bound.values)
            ]
            sql = _one_statement(tuple(bound.statement.postgres.sql for bound in statements))
            # One statement is its own transaction: a deadlock rolls back all of it, and
            # it runs again whole (liz.db.conflicts).
            await retry_conflicts(
                lambda: self._connection.execute(sql, *parameters), what="a turn's write"
            )
            return
        work = [
            (bound.statement.sqlite.sql, bound.statement.sqlite.parameters(bound.values))
            for bound in statements
        ]
        await run_on_sqlite_thread(self._connection, _commit, work)


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
