"""Committing a small write plan on PostgreSQL on the pooled connection's own driver
(asyncpg, through liz.db.driver), not through a SQLAlchemy session.

The same transaction as liz.facts.commit's session path, but for one thing: the facts
it adds or re-embeds are marked ``"vectorPending"``, left out of the HNSW graph until
liz.facts.pg_indexing puts them in (searches compare them exactly meanwhile). It costs
four round trips: ``BEGIN`` with the scope's advisory lock (one simple query), the
snapshot the plan reads, the writes (new facts and their history rows in one
statement; an update per changed fact), ``COMMIT``. Through the session the same
statements cost six round trips and about 1.9 ms of Python for SQLAlchemy's
bookkeeping. Larger writes, and writes that run a caller's ``on_commit`` in their
transaction, keep the session. Embeddings go in pgvector's binary form
(liz.facts.pg_vectors).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncEngine

from liz.db.driver import Driver, Statement, connect
from liz.facts.domain import Change, FactEvent, Scope
from liz.facts.index.protocol import ChangeLog
from liz.facts.pg_vectors import send_vectors_binary
from liz.facts.snapshot import Snapshot, Stored, scope_lock_key
from liz.facts.tables import FactHistoryRecord, FactRecord

if TYPE_CHECKING:
    from liz.facts.commit import Rows

Decide = Callable[[Snapshot], tuple[list[Change], "Rows", list[FactEvent]]]

# Attribute name -> column name, from the models, so the SQL follows the tables.
_FACT_COLUMNS = {attr.key: attr.columns[0].name for attr in FactRecord.__mapper__.column_attrs}
_HISTORY_COLUMNS = {
    attr.key: attr.columns[0].name for attr in FactHistoryRecord.__mapper__.column_attrs
}
_SNAPSHOT_COLUMNS = 'id, "agentId", "userId", text, hash, subject, "retiredAt", "updatedAt"'
# The same reads as liz.facts.snapshot's: by primary key, locked, the scope checked on
# the rows; by text hash among the scope's active facts, oldest first.
_BY_ID = Statement.of(
    f'SELECT {_SNAPSHOT_COLUMNS} FROM "Fact" WHERE id = ANY({{}}::text[]) FOR UPDATE'
)
_BY_HASH = Statement.of(
    f'SELECT {_SNAPSHOT_COLUMNS} FROM "Fact" WHERE "agentId" = {{}} AND "userId" = {{}} '
    'AND hash = ANY({}::text[]) AND "retiredAt" IS NULL ORDER BY "createdAt", id'
)
# New and re-embedded facts wait outside the HNSW graph: liz.facts.pg_indexing moves
# them in after the commit, which takes the graph's insert out of the write's time.
_PENDING = '"vectorPending"'
_COMMIT = Statement.of("COMMIT")
_ROLLBACK = Statement.of("ROLLBACK")


async def commit_on_postgres(
    engine: AsyncEngine,
    scope: Scope,
    ids: Iterable[str],
    hashes: Iterable[str],
    decide: Decide,
    log: ChangeLog,
) -> tuple[list[Change], list[FactEvent]]:
    """Lock, read the snapshot of ``ids`` and ``hashes``, ``decide`` the changes and
    their rows, write them and commit; ``log`` takes the history ids."""
    wanted_ids, wanted_hashes = sorted(set(ids)), sorted(set(hashes))
    # One simple query, one round trip; the key is a number computed here.
    begin = Statement.of(f"BEGIN; SELECT pg_advisory_xact_lock({scope_lock_key(scope)})")
    async with connect(engine) as db:
        await send_vectors_binary(db.connection)
        try:
            await db.execute(begin)
            snapshot = await _read_snapshot(db, scope, wanted_ids, wanted_hashes)
            changes, rows, events = decide(snapshot)
            await _write(db, rows, log)
            await db.execute(_COMMIT)
        except BaseException:
            # Ended here, whatever stopped it: the pool's reset rolls back only what
            # SQLAlchemy began, and the connection must not go back holding the lock.
            # A connection the server dropped has nothing to end (and the error that
            # says why it failed must not become "connection is closed").
            if not db.connection.is_closed():
                await db.execute(_ROLLBACK)
            raise
    return changes, events


async def _read_snapshot(db: Driver, scope: Scope, ids: list[str], hashes: list[str]) -> Snapshot:
    targets: dict[str, Stored] = {}
    if ids:
        for row in await db.fetch(_BY_ID, ids):
            if (row[1], row[2]) == scope:
                targets[row[0]] = _stored(row)
    by_hash: dict[str, Stored] = {}
    if hashes:
        for row in await db.fetch(_BY_HASH, scope[0], scope[1], hashes):
            by_hash.setdefault(row[4], _stored(row))
    return Snapshot(targets, by_hash)


def _stored(row: Sequence[Any]) -> Stored:
    return Stored(row[0], row[3], row[4], row[5], row[6] is not None, row[7])


async def _write(db: Driver, rows: Rows, log: ChangeLog) -> None:
    for row in rows.updates:
        changed = tuple(key for key in row if key != "id")
        await db.execute(_update_statement(changed), *_values(row, changed), row["id"])
    if not rows.history:
        return
    history_keys = tuple(rows.history[0])
    fact_keys = tuple(rows.facts[0]) if rows.facts else ()
    statement = _insert_statement(fact_keys, len(rows.facts), history_keys, len(rows.history))
    values = [value for row in rows.facts for value in _values(row, fact_keys)]
    values += [value for row in rows.history for value in _values(row, history_keys)]
    log.history_ids.extend(int(found[0]) for found in await db.fetch(statement, *values))


def _values(row: dict[str, Any], keys: Sequence[str]) -> list[Any]:
    return [row[key] for key in keys]


def _placeholder(key: str) -> str:
    return "{}::vector" if key == "embedding" else "{}"


@functools.cache
def _update_statement(keys: tuple[str, ...]) -> Statement:
    assignments = ", ".join(f'"{_FACT_COLUMNS[key]}" = {_placeholder(key)}' for key in keys)
    if "embedding" in keys:
        assignments += f", {_PENDING} = true"
    return Statement.of(f'UPDATE "Fact" SET {assignments} WHERE id = {{}}')


@functools.lru_cache(maxsize=64)
def _insert_statement(
    fact_keys: tuple[str, ...], facts: int, history_keys: tuple[str, ...], history: int
) -> Statement:
    """New facts and their history rows in one statement: the facts' insert as a
    data-modifying CTE; the history rows' foreign key is checked at the statement's end."""
    history_sql = _insert_sql("FactHistory", _HISTORY_COLUMNS, history_keys, history)
    if not facts:
        return Statement.of(f"{history_sql} RETURNING id")
    facts_sql = _insert_sql("Fact", _FACT_COLUMNS, fact_keys, facts, pending=True)
    return Statement.of(f"WITH added AS ({facts_sql}) {history_sql} RETURNING id")


def _insert_sql(
    table: str, columns: dict[str, str], keys: Sequence[str], count: int, *, pending: bool = False
) -> str:
    names = ", ".join([f'"{columns[key]}"' for key in keys] + ([_PENDING] if pending else []))
    values = [_placeholder(key) for key in keys] + (["true"] if pending else [])
    one_row = "(" + ", ".join(values) + ")"
    return f'INSERT INTO "{table}" ({names}) VALUES ' + ", ".join([one_row] * count)
