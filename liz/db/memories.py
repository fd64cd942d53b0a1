"""Reading and writing Liz's `Memory` log (the recent conversation)."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import Row, Table, func, select
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
    # A plain INSERT: the ORM's unit of work cost a tenth of a turn's CPU for two rows.
    await session.execute(
        _MEMORY_TABLE.insert().values(
            {
                MemoryRecord.id: memory.id,
                MemoryRecord.user_id: memory.user_id,
                MemoryRecord.agent_id: memory.agent_id,
                MemoryRecord.room_id: memory.room_id,
                MemoryRecord.content: json.dumps(memory.content, ensure_ascii=False),
                MemoryRecord.type: memory.type,
                MemoryRecord.generator: memory.generator,
                MemoryRecord.created_at: memory.created_at,
            }
        )
    )


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
_MEMORY_KEYS = tuple(column.key for column in _MEMORY_COLUMNS)
_MEMORY_LIST = TypeAdapter(list[Memory])
_MEMORY_TABLE = cast(Table, MemoryRecord.__table__)


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
    fields = [found for found in map(_fields, rows) if found is not None]
    try:
        # One call into pydantic's core for the whole list: the cheapest way to build them.
        return _MEMORY_LIST.validate_python(fields)
    except ValidationError:
        pass
    memories = []
    for one in fields:
        try:
            memories.append(Memory.model_validate(one))
        except ValidationError as exc:
            logger.warning("skipping memory %s: %s", one["id"], exc)
    return memories


def _fields(row: Row[str, str, str, str, str, str, str, datetime]) -> dict[str, Any] | None:
    try:
        content = json.loads(row.content)
    except (TypeError, ValueError):
        logger.warning("skipping memory %s: its content is not valid JSON", row.id)
        return None
    if not isinstance(content, dict):
        logger.warning("skipping memory %s: its content is JSON but not an object", row.id)
        return None
    fields = dict(zip(_MEMORY_KEYS, row, strict=True))
    fields["content"] = content
    return fields


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
