"""Reading facts and their history; every query is bound to one (agent, user) scope."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession

from liz.facts.domain import Event, Fact, HistoryEntry, Scope
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
