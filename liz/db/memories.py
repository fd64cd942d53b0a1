"""Reading and writing Liz's `Memory` log (the recent conversation)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Table, bindparam, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from liz.db.models import MemoryRecord
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


# Every turn reads up to 100 memories and writes two: these statements are built once,
# on the table rather than the ORM class (the ORM's per-statement work cost more than
# SQLite's), and rows are read as plain tuples.
_MEMORY: Table = MemoryRecord.__table__  # type: ignore[assignment]
_INSERT = insert(_MEMORY)
_RECENT = (
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


async def insert_memory(session: AsyncSession, memory: Memory) -> None:
    """Insert `memory` in the session's transaction; the caller commits."""
    await session.execute(
        _INSERT,
        {
            "id": memory.id,
            "userId": memory.user_id,
            "agentId": memory.agent_id,
            "roomId": memory.room_id,
            "content": json.dumps(memory.content, ensure_ascii=False),
            "type": memory.type,
            "generator": memory.generator,
            "createdAt": memory.created_at,
        },
    )


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
        _RECENT, {"user_id": user_id, "agent_id": agent_id, "limit": limit}
    )
    memories = []
    for row in rows:
        memory = _to_memory(row)
        if memory is not None:
            memories.append(memory)
    return memories


def _to_memory(row: Sequence[Any]) -> Memory | None:
    id, user_id, agent_id, room_id, text, type, generator, created_at = row
    try:
        content = json.loads(text)
    except (TypeError, ValueError):
        logger.warning("skipping memory %s: its content is not valid JSON", id)
        return None
    if not isinstance(content, dict):
        logger.warning("skipping memory %s: its content is JSON but not an object", id)
        return None
    try:
        return Memory(
            id=id,
            user_id=user_id,
            agent_id=agent_id,
            room_id=room_id,
            content=content,
            type=type,
            generator=generator,  # pydantic checks it is "llm" or "external"
            created_at=created_at,
        )
    except ValidationError as exc:
        logger.warning("skipping memory %s: %s", id, exc)
        return None


async def count_memories(session: AsyncSession, **filters: Any) -> int:
    """How many memories match equality `filters` (user_id, agent_id, room_id, type, generator).

    >>> await count_memories(session, agent_id="liz", user_id="ada")
    """
    unknown = filters.keys() - _FILTER_COLUMNS.keys()
    if unknown:
        raise UsageError(
            f"count_memories: unknown filter(s) {sorted(unknown)}; use {sorted(_FILTER_COLUMNS)}"
        )
    query = select(func.count()).select_from(MemoryRecord)
    for name, value in filters.items():
        query = query.where(_FILTER_COLUMNS[name] == value)
    return int(await session.scalar(query) or 0)
