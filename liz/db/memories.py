"""Reading and writing Liz's `Memory` log (the recent conversation)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import from_json
from sqlalchemy import Table, bindparam, func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

from liz.db.driver import Bound, Statement, connect
from liz.db.engine import read_engine
from liz.db.tables import MemoryRecord
from liz.errors import UsageError
from liz.types import Memory

logger = logging.getLogger(__name__)

_FILTER_COLUMNS = {
    "user_id": MemoryRecord.user_id,
    "agent_id": MemoryRecord.agent_id,
    "room_id": MemoryRecord.room_id,
    "type": MemoryRecord.type,
    "generator": MemoryRecord.generator,
}


# Every turn reads up to 100 memories and writes two: these statements are compiled once
# for each driver (liz.db.driver), on the table rather than the ORM class, and rows are
# read as plain tuples. A SQLAlchemy session runs the same statements.
_MEMORY: Table = MemoryRecord.__table__  # type: ignore[assignment]
_INSERT = Statement(insert(_MEMORY).values({column: bindparam(column.key) for column in _MEMORY.c}))
_RECENT = Statement(
    select(
        _MEMORY.c.id,
        _MEMORY.c.userId,
        _MEMORY.c.agentId,
        _MEMORY.c.roomId,
        _MEMORY.c.content,
        _MEMORY.c.type,
        _MEMORY.c.generator,
        _MEMORY.c.createdAt,
    )
    .where(_MEMORY.c.userId == bindparam("user_id"), _MEMORY.c.agentId == bindparam("agent_id"))
    .order_by(_MEMORY.c.createdAt.desc(), _MEMORY.c.id.desc())
    .limit(bindparam("limit"))
)
_STORED = Statement(select(_MEMORY.c.id).where(_MEMORY.c.id == bindparam("id")))


async def insert_memory(session: AsyncSession | AsyncConnection, memory: Memory) -> None:
    """Insert `memory` in the session's transaction; the caller commits."""
    await session.execute(_INSERT.core, _insert_values(memory))


def _insert_values(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.id,
        "userId": memory.user_id,
        "agentId": memory.agent_id,
        "roomId": memory.room_id,
        "content": json.dumps(memory.content, ensure_ascii=False),
        "type": memory.type,
        "generator": memory.generator,
        "createdAt": memory.created_at,
    }


async def store_memory(engine: AsyncEngine, memory: Memory) -> None:
    """Store `memory` on its own: one statement, committed when this returns.

    What every turn does twice, so it goes straight to the driver (liz.db.driver),
    outside any transaction: a single INSERT is its own.
    """
    async with connect(engine) as db:
        await db.execute(_INSERT, **_insert_values(memory))


def insert_statement(memory: Memory) -> Bound:
    """The statement that inserts `memory`, to commit with others (``Driver.commit``)."""
    return _INSERT.bind(**_insert_values(memory))


async def memory_stored(engine: AsyncEngine, memory_id: str) -> bool:
    """Whether a memory with this id is stored (on the writing connections: a retry must
    see what the first try committed)."""
    async with connect(engine) as db:
        return bool(await db.fetch(_STORED, id=memory_id))


async def read_recent(
    engine: AsyncEngine, *, user_id: str, agent_id: str, limit: int
) -> list[Memory]:
    """:func:`recent_memories` on the engine's reading connections, in one round trip.

    What every turn reads, so it goes straight to the driver (liz.db.driver), outside
    any transaction: one statement reads one committed state.
    """
    if limit <= 0:
        return []
    async with connect(read_engine(engine)) as db:
        rows = await db.fetch(_RECENT, user_id=user_id, agent_id=agent_id, limit=limit)
    return _to_memories(rows)


async def recent_memories(
    session: AsyncSession, *, user_id: str, agent_id: str, limit: int
) -> list[Memory]:
    """The `limit` newest memories between `user_id` and `agent_id`, newest first.

    A row whose content is not a JSON object (written by hand, or by a bug) is
    skipped with a warning naming its id, so one bad row never breaks a chat.
    """
    if limit <= 0:
        return []
    rows = await session.execute(
        _RECENT.core, {"user_id": user_id, "agent_id": agent_id, "limit": limit}
    )
    return _to_memories(rows.all())


_MEMORIES = TypeAdapter(list[Memory])


def _to_memories(rows: Sequence[Sequence[Any]]) -> list[Memory]:
    """The rows as memories, validated together (one call into pydantic for them all);
    if one is bad, row by row, skipping the bad ones."""
    try:
        return _MEMORIES.validate_python([_fields(row) for row in rows])
    except (TypeError, ValueError):  # a bad row: pydantic's ValidationError, bad JSON, ...
        pass  # told row by row below
    memories = []
    for row in rows:
        memory = _to_memory(row)
        if memory is not None:
            memories.append(memory)
    return memories


def _fields(row: Sequence[Any]) -> dict[str, Any]:
    id, user_id, agent_id, room_id, text, type, generator, created_at = row
    return {
        "id": id,
        "user_id": user_id,
        "agent_id": agent_id,
        "room_id": room_id,
        "content": from_json(text),  # pydantic's parser: every turn reads a hundred of these
        "type": type,
        "generator": generator,
        "created_at": created_at,  # read by its column type (liz.db.types)
    }


def _to_memory(row: Sequence[Any]) -> Memory | None:
    id, text = row[0], row[4]
    try:
        content = from_json(text)
    except (TypeError, ValueError):
        logger.warning("skipping memory %s: its content is not valid JSON", id)
        return None
    if not isinstance(content, dict):
        logger.warning("skipping memory %s: its content is JSON but not an object", id)
        return None
    try:
        return Memory.model_validate(_fields(row))  # pydantic checks the generator
    except ValueError as exc:  # pydantic's ValidationError, or a date no one can read
        logger.warning("skipping memory %s: %s", id, exc)
        return None


async def count_memories(session: AsyncSession, **filters: Any) -> int:
    """How many memories match equality `filters` (user_id, agent_id, room_id, type, generator),
    as ``count_memories(session, agent_id="liz", user_id="ada")``."""
    unknown = filters.keys() - _FILTER_COLUMNS.keys()
    if unknown:
        raise UsageError(
            f"count_memories: unknown filter(s) {sorted(unknown)}; use {sorted(_FILTER_COLUMNS)}"
        )
    query = select(func.count()).select_from(MemoryRecord)
    for name, value in filters.items():
        query = query.where(_FILTER_COLUMNS[name] == value)
    return int(await session.scalar(query) or 0)
