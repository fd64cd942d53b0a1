"""Reading facts and their history; every query is bound to one (agent, user) scope."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Dialect, bindparam, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from liz.db.types import UTCDateTime
from liz.facts.domain import Event, Fact, HistoryEntry, Scope
from liz.facts.sqlite_thread import run_on_thread, supports
from liz.facts.tables import FactHistoryRecord, FactRecord


def to_fact(record: FactRecord, *, score: float | None = None) -> Fact:
    return Fact(
        id=record.id,
        agent_id=record.agent_id,
        user_id=record.user_id,
        text=record.text,
        subject=record.subject,
        categories=tuple(json.loads(record.categories or "[]")),
        created_at=record.created_at,
        updated_at=record.updated_at,
        valid_from=record.valid_from,
        invalid_from=record.invalid_from,
        retired_at=record.retired_at,
        source_memory_id=record.source_memory_id,
        score=score,
    )


def _in_scope(scope: Scope) -> list[ColumnElement[bool]]:
    return [FactRecord.agent_id == scope[0], FactRecord.user_id == scope[1]]


async def records_by_id(
    session: AsyncSession, scope: Scope, ids: Sequence[str], *, for_update: bool = False
) -> dict[str, FactRecord]:
    """The scope's facts with these ids (active or not); ids of other scopes are absent."""
    if not ids:
        return {}
    # Looked up by primary key only, the scope checked on the rows: with the scope in the
    # WHERE clause SQLite's planner walks the whole scope index instead (8 ms at 10k facts).
    statement = select(FactRecord).where(FactRecord.id.in_(list(ids)))
    if for_update:
        statement = statement.with_for_update()
    result = await session.scalars(statement)
    return {
        record.id: record
        for record in result
        if (record.agent_id, record.user_id) == (scope[0], scope[1])
    }


# The columns of a Fact, in the order fact_from_row reads them (FACT_COLUMN_NAMES in SQL).
_FACT_COLUMNS = (
    FactRecord.id,
    FactRecord.agent_id,
    FactRecord.user_id,
    FactRecord.text,
    FactRecord.subject,
    FactRecord.categories,
    FactRecord.created_at,
    FactRecord.updated_at,
    FactRecord.valid_from,
    FactRecord.invalid_from,
    FactRecord.retired_at,
    FactRecord.source_memory_id,
)
_FACTS_BY_ID = select(*_FACT_COLUMNS).where(FactRecord.id.in_(bindparam("ids", expanding=True)))
FACT_COLUMN_NAMES = ", ".join('"' + column.name + '"' for column in _FACT_COLUMNS)
_SQLITE_FACTS_BY_ID = (
    f'SELECT {FACT_COLUMN_NAMES} FROM "Fact" WHERE id IN (SELECT value FROM json_each(?))'
)
_TIMES = UTCDateTime()
_TIME_FIELDS = (6, 7, 8, 9, 10)


async def facts_by_id(session: AsyncSession, scope: Scope, ids: Sequence[str]) -> dict[str, Fact]:
    """:func:`records_by_id` as facts, without the ORM's work per row; on SQLite in one
    call on the connection's thread (liz.facts.sqlite_thread)."""
    if not ids:
        return {}
    engine = session.bind
    if isinstance(engine, AsyncEngine) and supports(engine):
        connection = await session.connection()
        found = await run_on_thread(connection, lambda db: read_facts_on_sqlite(db, ids))
        return facts_from_sqlite_rows(found, engine.dialect, scope)
    rows = await session.execute(_FACTS_BY_ID, {"ids": list(ids)})
    return {row[0]: fact_from_row(row) for row in rows if (row[1], row[2]) == scope}


def read_facts_on_sqlite(db: sqlite3.Connection, ids: Sequence[str]) -> list[Any]:
    """The rows :func:`facts_from_sqlite_rows` takes, on a bare ``sqlite3`` connection."""
    return db.execute(_SQLITE_FACTS_BY_ID, (json.dumps(list(ids)),)).fetchall()


def facts_from_sqlite_rows(
    rows: Iterable[Sequence[Any]], dialect: Dialect, scope: Scope
) -> dict[str, Fact]:
    """The facts of ``scope`` among rows read by :func:`read_facts_on_sqlite`, by id."""
    converted: list[list[Any]] = [
        [
            _TIMES.process_result_value(value, dialect) if number in _TIME_FIELDS else value
            for number, value in enumerate(row)
        ]
        for row in rows
    ]
    return {row[0]: fact_from_row(row) for row in converted if (row[1], row[2]) == scope}


def fact_from_row(row: Sequence[Any]) -> Fact:
    return Fact(
        id=row[0],
        agent_id=row[1],
        user_id=row[2],
        text=row[3],
        subject=row[4],
        categories=tuple(json.loads(row[5] or "[]")),
        created_at=row[6],
        updated_at=row[7],
        valid_from=row[8],
        invalid_from=row[9],
        retired_at=row[10],
        source_memory_id=row[11],
    )


async def active_by_hash(
    session: AsyncSession, scope: Scope, hashes: Sequence[str]
) -> dict[str, FactRecord]:
    """Active facts of the scope whose normalised text has one of these hashes, by hash."""
    if not hashes:
        return {}
    result = await session.scalars(
        select(FactRecord)
        .where(
            FactRecord.hash.in_(list(hashes)),
            FactRecord.retired_at.is_(None),
            *_in_scope(scope),
        )
        .order_by(FactRecord.created_at, FactRecord.id)
    )
    found: dict[str, FactRecord] = {}
    for record in result:
        found.setdefault(record.hash, record)
    return found


async def list_facts(
    session: AsyncSession,
    scope: Scope,
    *,
    include_retired: bool = False,
    limit: int = 100,
    offset: int = 0,
) -> list[Fact]:
    """The scope's facts, newest first."""
    statement = select(FactRecord).where(*_in_scope(scope))
    if not include_retired:
        statement = statement.where(FactRecord.retired_at.is_(None))
    statement = statement.order_by(FactRecord.created_at.desc(), FactRecord.id)
    result = await session.scalars(statement.limit(limit).offset(offset))
    return [to_fact(record) for record in result]


async def fact_history(session: AsyncSession, scope: Scope, fact_id: str) -> list[HistoryEntry]:
    """Every change to one fact of the scope, oldest first; empty for an unknown fact."""
    result = await session.scalars(
        select(FactHistoryRecord)
        .where(
            FactHistoryRecord.fact_id == fact_id,
            FactHistoryRecord.agent_id == scope[0],
            FactHistoryRecord.user_id == scope[1],
        )
        .order_by(FactHistoryRecord.id)
    )
    return [
        HistoryEntry(
            fact_id=row.fact_id,
            event=Event(row.event),
            old_text=row.old_text,
            new_text=row.new_text,
            at=row.created_at,
            actor=row.actor,
            reason=row.reason,
        )
        for row in result
    ]


async def facts_as_of(session: AsyncSession, scope: Scope, moment: datetime) -> list[Fact]:
    """What the system believed at ``moment``: facts learned by then and not yet retired,
    each as it was then: its text and last change replayed from the history, and active
    (a retirement after ``moment`` had not happened yet)."""
    records = await session.scalars(
        select(FactRecord)
        .where(
            *_in_scope(scope),
            FactRecord.created_at <= moment,
            (FactRecord.retired_at.is_(None)) | (FactRecord.retired_at > moment),
        )
        .order_by(FactRecord.created_at, FactRecord.id)
    )
    facts = list(records)
    if not facts:
        return []
    changes = await session.scalars(
        select(FactHistoryRecord)
        .where(
            FactHistoryRecord.agent_id == scope[0],
            FactHistoryRecord.user_id == scope[1],
            FactHistoryRecord.fact_id.in_([record.id for record in facts]),
            FactHistoryRecord.created_at <= moment,
            FactHistoryRecord.new_text.is_not(None),
        )
        .order_by(FactHistoryRecord.id)
    )
    then = {change.fact_id: change for change in changes}  # the last change by then
    return [_as_it_was(to_fact(record), then.get(record.id)) for record in facts]


def _as_it_was(fact: Fact, change: FactHistoryRecord | None) -> Fact:
    if change is None:  # no history row (written by hand): the stored text is all there is
        return replace(fact, retired_at=None, invalid_from=None)
    return replace(
        fact,
        text=change.new_text or fact.text,
        updated_at=change.created_at,
        retired_at=None,
        invalid_from=None,
    )
