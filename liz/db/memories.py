"""Reading and writing Liz's `Memory` log (the recent conversation)."""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, select
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
    """Add `memory` to the session; the caller commits."""
    session.add(
        MemoryRecord(
            id=memory.id,
            user_id=memory.user_id,
            agent_id=memory.agent_id,
            room_id=memory.room_id,
            content=json.dumps(memory.content, ensure_ascii=False),
            type=memory.type,
            generator=memory.generator,
            created_at=memory.created_at,
        )
    )
    await session.flush()


async def recent_memories(
    session: AsyncSession, *, user_id: str, agent_id: str, limit: int
) -> list[Memory]:
    """The `limit` newest memories between `user_id` and `agent_id`, newest first.

    A row whose content is not a JSON object (written by hand, or by a bug) is
    skipped with a warning naming its id, so one bad row never breaks a chat.
    """
    if limit <= 0:
        return []
    rows = await session.scalars(
        select(MemoryRecord)
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


def _to_memory(row: MemoryRecord) -> Memory | None:
    try:
        content = json.loads(row.content)
    except (TypeError, ValueError):
        logger.warning("skipping memory %s: its content is not valid JSON", row.id)
        return None
    if not isinstance(content, dict):
        logger.warning("skipping memory %s: its content is JSON but not an object", row.id)
        return None
    try:
        return Memory(
            id=row.id,
            user_id=row.user_id,
            agent_id=row.agent_id,
            room_id=row.room_id,
            content=content,
            type=row.type,
            generator=row.generator,  # pydantic checks it is "llm" or "external"
            created_at=row.created_at,
        )
    except ValidationError as exc:
        logger.warning("skipping memory %s: %s", row.id, exc)
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
