"""Liz's Memory log on SQLite and PostgreSQL: what goes in comes back, newest first."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.db.memories import count_memories, insert_memory, recent_memories
from liz.db.models import MemoryRecord
from liz.errors import UsageError
from liz.types import Memory

pytestmark = pytest.mark.anyio

START = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def memory(
    text: str, *, minute: int, user: str = "ada", agent: str = "liz", **extra: str
) -> Memory:
    return Memory(
        user_id=user,
        agent_id=agent,
        room_id=f"{agent}:{user}",
        content={"text": text},
        type="text",
        generator="external",
        created_at=START + timedelta(minutes=minute),
        **extra,
    )


async def test_recent_memories_are_newest_first_and_limited(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions() as session:
        for minute in (3, 1, 4, 0, 2):
            await insert_memory(session, memory(f"message {minute}", minute=minute))
        await insert_memory(session, memory("to someone else", minute=9, user="bob"))
        await insert_memory(session, memory("to another agent", minute=9, agent="eliza"))
        await session.commit()
    async with sessions() as session:
        found = await recent_memories(session, user_id="ada", agent_id="liz", limit=3)
    assert [m.text for m in found] == ["message 4", "message 3", "message 2"]


async def test_memories_written_at_the_same_instant_order_by_id(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions() as session:
        for identifier in ("b", "c", "a"):
            await insert_memory(session, memory(identifier, minute=0, id=identifier))
        await session.commit()
    async with sessions() as session:
        found = await recent_memories(session, user_id="ada", agent_id="liz", limit=10)
    assert [m.id for m in found] == ["c", "b", "a"]


async def test_a_memory_reads_back_as_written(sessions: async_sessionmaker[AsyncSession]) -> None:
    paris = timezone(timedelta(hours=1))
    written = Memory(
        user_id="ada",
        agent_id="liz",
        room_id="room-1",
        content={"text": 'café ☕ and "quotes"', "imageUrls": ["https://x/y.png"], "n": 3},
        type="text_and_image",
        generator="llm",
        created_at=datetime(2025, 3, 1, 13, 30, 15, 123000, tzinfo=paris),
    )
    async with sessions() as session:
        await insert_memory(session, written)
        await session.commit()
    async with sessions() as session:
        (found,) = await recent_memories(session, user_id="ada", agent_id="liz", limit=5)
    assert found == written
    assert found.created_at.tzinfo is not None
    assert found.created_at.utcoffset() == timedelta(0)


async def test_a_row_with_broken_content_is_skipped_with_a_warning(
    sessions: async_sessionmaker[AsyncSession], caplog: pytest.LogCaptureFixture
) -> None:
    async with sessions() as session:
        await insert_memory(session, memory("fine", minute=0))
        session.add_all(
            [
                MemoryRecord(
                    id="broken-json", user_id="ada", agent_id="liz", room_id="r",
                    content="{not json", type="text", generator="llm",
                    created_at=START + timedelta(minutes=1),
                ),
                MemoryRecord(
                    id="json-list", user_id="ada", agent_id="liz", room_id="r",
                    content="[1, 2]", type="text", generator="llm",
                    created_at=START + timedelta(minutes=2),
                ),
                MemoryRecord(
                    id="bad-generator", user_id="ada", agent_id="liz", room_id="r",
                    content='{"text": "x"}', type="text", generator="robot",
                    created_at=START + timedelta(minutes=3),
                ),
            ]
        )  # fmt: skip
        await session.commit()
    with caplog.at_level(logging.WARNING, logger="liz.db.memories"):
        async with sessions() as session:
            found = await recent_memories(session, user_id="ada", agent_id="liz", limit=10)
    assert [m.text for m in found] == ["fine"]
    warned = " ".join(record.getMessage() for record in caplog.records)
    for identifier in ("broken-json", "json-list", "bad-generator"):
        assert f"memory {identifier}" in warned


async def test_count_memories_by_filters(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions() as session:
        for minute in range(3):
            await insert_memory(session, memory("hi", minute=minute))
        await insert_memory(session, memory("hi", minute=5, user="bob"))
        await session.commit()
        assert await count_memories(session) == 4
        assert await count_memories(session, user_id="ada", agent_id="liz") == 3
        assert await count_memories(session, room_id="liz:bob", generator="external") == 1
        assert await count_memories(session, type="image") == 0
        with pytest.raises(UsageError, match="unknown filter"):
            await count_memories(session, colour="red")


async def test_zero_limit_returns_nothing(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions() as session:
        await insert_memory(session, memory("hi", minute=0))
        await session.commit()
        assert await recent_memories(session, user_id="ada", agent_id="liz", limit=0) == []
