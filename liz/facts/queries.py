"""Reading facts and their history with SQLAlchemy Core; every read is bound to one scope.

These statements run unchanged on SQLite and PostgreSQL; what only one database
understands lives in liz.facts.sqlite or liz.facts.postgres.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from liz.facts.domain import EmbeddingMismatchError, Event, Fact, HistoryEntry, ModelPair, Scope
from liz.facts.tables import FactHistoryRecord, FactRecord

FACTS = cast(Table, FactRecord.__table__)
HISTORIES = cast(Table, FactHistoryRecord.__table__)
FACT = FACTS.c
HISTORY = HISTORIES.c
# The columns of a Fact, in the order fact_from_row reads them.
FACT_COLUMNS = (
    FACT.id,
    FACT.agentId,
    FACT.userId,
    FACT.text,
    FACT.subject,
    FACT.categories,
    FACT.createdAt,
    FACT.updatedAt,
    FACT.validFrom,
    FACT.invalidFrom,
    FACT.retiredAt,
    FACT.sourceMemoryId,
)
# By primary key only, the scope checked on the rows: with the scope in the WHERE
# clause SQLite's planner walks the whole scope index instead.
_BY_ID = select(*FACT_COLUMNS).where(FACT.id.in_(bindparam("ids", expanding=True)))
_IN_SCOPE = (FACT.agentId == bindparam("agent"), FACT.userId == bindparam("user"))
_BY_HASH = (
    select(*FACT_COLUMNS, FACT.hash)
    .where(*_IN_SCOPE, FACT.hash.in_(bindparam("hashes", expanding=True)))
    .where(FACT.retiredAt.is_(None))
    .order_by(FACT.createdAt, FACT.id)
)
# Over all the scope's facts, retired ones too (reindex re-embeds those as well), so
# the index on (agentId, userId, embeddingModel, embeddingDim) answers each directly.
_MODEL = (FACT.embeddingModel, FACT.embeddingDim)
_LOWEST = select(*_MODEL).where(*_IN_SCOPE).order_by(*_MODEL).limit(1)
_HIGHEST = select(*_MODEL).where(*_IN_SCOPE).order_by(*(c.desc() for c in _MODEL)).limit(1)
MODEL_BOUNDS = (select(_LOWEST.subquery()), select(_HIGHEST.subquery()))
_BOUNDS = union_all(*MODEL_BOUNDS)
_DISTINCT_MODELS = select(*_MODEL).where(*_IN_SCOPE).distinct()


def fact_from_row(row: Sequence[Any]) -> Fact:
    """A fact from the values of :data:`FACT_COLUMNS`, in that order."""
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


def scope_values(scope: Scope) -> dict[str, Any]:
    """The values of the ``agent`` and ``user`` parameters that bind a statement to ``scope``."""
    return {"agent": scope[0], "user": scope[1]}


async def facts_by_id(session: AsyncSession, scope: Scope, ids: Sequence[str]) -> dict[str, Fact]:
    """The scope's facts with these ids (active or not); ids of other scopes are absent."""
    if not ids:
        return {}
    rows = await session.execute(_BY_ID, {"ids": list(ids)})
    return {row[0]: fact_from_row(row) for row in rows if (row[1], row[2]) == scope}


async def active_by_hash(
    session: AsyncSession, scope: Scope, hashes: Sequence[str]
) -> dict[str, Fact]:
    """Active facts of the scope whose normalised text has one of these hashes, by hash."""
    if not hashes:
        return {}
    found: dict[str, Fact] = {}
    for row in await session.execute(_BY_HASH, {**scope_values(scope), "hashes": list(hashes)}):
        found.setdefault(row[-1], fact_from_row(row))
    return found


async def model_bounds(session: AsyncSession, scope: Scope) -> tuple[ModelPair, ...]:
    """The smallest and largest (model, dimension) among the scope's facts: equal bounds
    mean every fact shares one model; a re-embedding elsewhere changes them."""
    result = await session.execute(_BOUNDS, scope_values(scope))
    return tuple((row[0], int(row[1])) for row in result)


async def check_models(
    session: AsyncSession, scope: Scope, bounds: Sequence[ModelPair], model: str, dimension: int
) -> None:
    """:class:`EmbeddingMismatchError` unless every stored fact (as the scope's model
    ``bounds`` say) was embedded with ``model`` at ``dimension``, as the query was."""
    if all(pair == (model, dimension) for pair in bounds):
        return
    result = await session.execute(_DISTINCT_MODELS, scope_values(scope))
    others = sorted({(row[0], int(row[1])) for row in result} - {(model, dimension)})
    found = ", ".join(f"{name} (dimension {dim})" for name, dim in others)
    agent_id, user_id = scope
    raise EmbeddingMismatchError(
        f"facts of agent {agent_id!r} and user {user_id!r} were embedded with {found}, but "
        f"this query uses {model} (dimension {dimension}); vectors from different models "
        f"cannot be compared: run `liz facts reindex --agent {agent_id} --user {user_id}` "
        "to re-embed them with the current LIZ_EMBEDDING_MODEL"
    )


async def list_facts(
    session: AsyncSession,
    scope: Scope,
    *,
    include_retired: bool = False,
    limit: int = 100,
    offset: int = 0,
) -> list[Fact]:
    """The scope's facts, newest first."""
    statement = select(*FACT_COLUMNS).where(FACT.agentId == scope[0], FACT.userId == scope[1])
    if not include_retired:
        statement = statement.where(FACT.retiredAt.is_(None))
    statement = statement.order_by(FACT.createdAt.desc(), FACT.id).limit(limit).offset(offset)
    return [fact_from_row(row) for row in await session.execute(statement)]


async def fact_history(session: AsyncSession, scope: Scope, fact_id: str) -> list[HistoryEntry]:
    """Every change to one fact of the scope, oldest first; empty for an unknown fact."""
    result = await session.execute(
        select(HISTORY.factId, HISTORY.event, HISTORY.oldText, HISTORY.newText)
        .add_columns(HISTORY.createdAt, HISTORY.actor, HISTORY.reason)
        .where(HISTORY.factId == fact_id, HISTORY.agentId == scope[0])
        .where(HISTORY.userId == scope[1])
        .order_by(HISTORY.id)
    )
    return [
        HistoryEntry(row[0], Event(row[1]), row[2], row[3], row[4], row[5], row[6])
        for row in result
    ]


async def facts_as_of(session: AsyncSession, scope: Scope, moment: datetime) -> list[Fact]:
    """What the system believed at ``moment``: facts learned by then and not yet retired,
    each with its text and last change as of then, and active."""
    rows = await session.execute(
        select(*FACT_COLUMNS)
        .where(FACT.agentId == scope[0], FACT.userId == scope[1], FACT.createdAt <= moment)
        .where(FACT.retiredAt.is_(None) | (FACT.retiredAt > moment))
        .order_by(FACT.createdAt, FACT.id)
    )
    facts = [fact_from_row(row) for row in rows]
    if not facts:
        return []
    changes = await session.execute(
        select(HISTORY.factId, HISTORY.newText, HISTORY.createdAt)
        .where(HISTORY.agentId == scope[0], HISTORY.userId == scope[1])
        .where(HISTORY.factId.in_([fact.id for fact in facts]), HISTORY.createdAt <= moment)
        .where(HISTORY.newText.is_not(None))
        .order_by(HISTORY.id)
    )
    then = {row[0]: (row[1], row[2]) for row in changes}  # the last change by then
    as_it_was = []
    for fact in facts:
        fact = replace(fact, retired_at=None, invalid_from=None)
        if fact.id in then:  # no history row (written by hand): the stored text is all
            text, at = then[fact.id]
            fact = replace(fact, text=text or fact.text, updated_at=at)
        as_it_was.append(fact)
    return as_it_was
