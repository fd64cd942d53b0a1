"""Reading and writing Liz's `Memory` log (the recent conversation)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, insert, select
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


async def insert_memory(session: AsyncSession, memory: Memory) -> None:
    """Insert `memory` in the session's transaction; the caller commits."""
    # A plain INSERT, not the ORM's unit of work: two of these run in every turn.
    await session.execute(
        insert(MemoryRecord),
        [
            {
                "id": memory.id,
                "user_id": memory.user_id,
                "agent_id": memory.agent_id,
                "room_id": memory.room_id,
                "content": json.dumps(memory.content, ensure_ascii=False),
                "type": memory.type,
                "generator": memory.generator,
                "created_at": memory.created_at,
            }
        ],
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
    # Plain rows, not ORM objects: every turn reads up to 100 of them.
    rows = await session.execute(
        select(*_MEMORY_COLUMNS)
        .where(MemoryRecord.user_id == user_id, MemoryRecord.agent_id == agent_id)
        .order_by(MemoryRecord.created_at.desc(), MemoryRecord.id.desc())
        .limit(limit)
    )
    memories = []
    for row in rows:
        memory = _to_memory(row)
        if memory is not None:
            memories.append(memory)
    return memories


_MEMORY_COLUMNS = (
    MemoryRecord.id,
    MemoryRecord.user_id,
    MemoryRecord.agent_id,
    MemoryRecord.room_id,
    MemoryRecord.content,
    MemoryRecord.type,
    MemoryRecord.generator,
    MemoryRecord.created_at,
)


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
