"""Committing a write plan on SQLite: the whole transaction in one call on the
connection's own thread (liz.facts.sqlite_thread), not a dozen hand-overs.

The same transaction as liz.facts.commit's SQLAlchemy path, statement for statement:
``BEGIN IMMEDIATE`` (the write lock, which also orders writers across processes),
the snapshot the plan reads, the plan, one insert per table and one update per
column set, the keyword rows, ``COMMIT``; anything raised rolls it all back.
The SQL is spelled out here because it runs on the bare ``sqlite3`` connection;
values are stored as SQLAlchemy stores them (times through the same column type).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncEngine

from liz.db.types import UTCDateTime
from liz.facts.domain import Change, FactEvent, Scope
from liz.facts.index.protocol import ChangeLog
from liz.facts.index.sqlite import write_search_rows
from liz.facts.snapshot import Snapshot, read_snapshot_on_sqlite
from liz.facts.sqlite_thread import run_on_thread
from liz.facts.tables import FactHistoryRecord, FactRecord

if TYPE_CHECKING:
    from liz.facts.commit import Rows

Decide = Callable[[Snapshot], tuple[list[Change], "Rows", list[FactEvent]]]

_TIMES = UTCDateTime()
# Attribute name -> column name, from the models, so the SQL follows the tables.
_FACT_COLUMNS = {attr.key: attr.columns[0].name for attr in FactRecord.__mapper__.column_attrs}
_HISTORY_COLUMNS = {
    attr.key: attr.columns[0].name for attr in FactHistoryRecord.__mapper__.column_attrs
}
_TIME_ATTRIBUTES = frozenset(
    attr.key
    for model in (FactRecord, FactHistoryRecord)
    for attr in model.__mapper__.column_attrs
    if isinstance(attr.columns[0].type, UTCDateTime)
)


async def commit_on_sqlite(
    engine: AsyncEngine,
    scope: Scope,
    ids: Iterable[str],
    hashes: Iterable[str],
    decide: Decide,
    log: ChangeLog,
) -> tuple[list[Change], list[FactEvent]]:
    """Lock, read the snapshot of ``ids`` and ``hashes``, ``decide`` the changes and
    their rows, write them and commit, in one call; ``log`` takes the history ids."""
    wanted_ids, wanted_hashes = sorted(set(ids)), sorted(set(hashes))
    dialect = engine.dialect

    def transaction(db: sqlite3.Connection) -> tuple[list[Change], list[FactEvent]]:
        db.execute("BEGIN IMMEDIATE")
        try:
            snapshot = read_snapshot_on_sqlite(db, dialect, scope, wanted_ids, wanted_hashes)
            changes, rows, events = decide(snapshot)
            _write(db, dialect, rows, log)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return changes, events

    async with engine.connect() as connection:
        return await run_on_thread(connection, transaction)


def _write(db: sqlite3.Connection, dialect: Any, rows: Rows, log: ChangeLog) -> None:
    if rows.facts:  # before their history rows (foreign key)
        columns = list(rows.facts[0])
        db.executemany(
            _insert_sql("Fact", tuple(_FACT_COLUMNS[key] for key in columns)),
            [_values(row, columns, dialect) for row in rows.facts],
        )
    for column_set in sorted({tuple(sorted(row)) for row in rows.updates}):
        changed = [key for key in column_set if key != "id"]
        assignments = ", ".join(f'"{_FACT_COLUMNS[key]}" = ?' for key in changed)
        db.executemany(
            f'UPDATE "Fact" SET {assignments} WHERE id = ?',
            [
                _values(row, [*changed, "id"], dialect)
                for row in rows.updates
                if tuple(sorted(row)) == column_set
            ],
        )
    inserted = {row["id"] for row in rows.facts}
    replaced = [fact.id for fact in log.added if fact.id not in inserted]
    write_search_rows(db, log.added, [*log.removed, *replaced])
    if rows.history:
        columns = list(rows.history[0])
        sql = _insert_sql("FactHistory", tuple(_HISTORY_COLUMNS[key] for key in columns))
        for row in rows.history:  # one by one: each insert's row id is its history id
            cursor = db.execute(sql, _values(row, columns, dialect))
            log.history_ids.append(int(cursor.lastrowid or 0))


@functools.cache
def _insert_sql(table: str, columns: tuple[str, ...]) -> str:
    names = ", ".join(f'"{name}"' for name in columns)
    return f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" * len(columns))})'


def _values(row: dict[str, Any], keys: Sequence[str], dialect: Any) -> list[Any]:
    return [
        _TIMES.process_bind_param(row[key], dialect) if key in _TIME_ATTRIBUTES else row[key]
        for key in keys
    ]
