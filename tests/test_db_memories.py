"""Liz's Memory log on SQLite and PostgreSQL: what goes in comes back, newest first."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.db.engine import create_engine, read_engine
from liz.db.errors import storage_error_for
from liz.db.memories import (
    count_memories,
    insert_memory,
    read_recent,
    recent_memories,
    store_memory,
)
from liz.db.tables import MemoryRecord
from liz.errors import UsageError
from liz.types import Memory

pytestmark = pytest.mark.anyio

START = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)

Reader = Callable[..., Awaitable[list[Memory]]]


@pytest.fixture(params=["in a session", "in one round trip"])
def read(
    request: pytest.FixtureRequest,
    engine: AsyncEngine,
    sessions: async_sessionmaker[AsyncSession],
) -> Reader:
    """Both ways to read the recent conversation: recent_memories and read_recent."""

    async def in_a_session(**where: object) -> list[Memory]:
        async with sessions() as session:
            return await recent_memories(session, **where)  # type: ignore[arg-type]

    async def in_one_round_trip(**where: object) -> list[Memory]:
        return await read_recent(engine, **where)  # type: ignore[arg-type]

    return in_a_session if request.param == "in a session" else in_one_round_trip


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
    sessions: async_sessionmaker[AsyncSession], read: Reader
) -> None:
    async with sessions() as session:
        for minute in (3, 1, 4, 0, 2):
            await insert_memory(session, memory(f"message {minute}", minute=minute))
        await insert_memory(session, memory("to someone else", minute=9, user="bob"))
        await insert_memory(session, memory("to another agent", minute=9, agent="eliza"))
        await session.commit()
    found = await read(user_id="ada", agent_id="liz", limit=3)
    assert [m.text for m in found] == ["message 4", "message 3", "message 2"]


async def test_memories_written_at_the_same_instant_order_by_id(
    sessions: async_sessionmaker[AsyncSession], read: Reader
) -> None:
    async with sessions() as session:
        for identifier in ("b", "c", "a"):
            await insert_memory(session, memory(identifier, minute=0, id=identifier))
        await session.commit()
    found = await read(user_id="ada", agent_id="liz", limit=10)
    assert [m.id for m in found] == ["c", "b", "a"]


async def test_a_memory_reads_back_as_written(
    sessions: async_sessionmaker[AsyncSession], read: Reader
) -> None:
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
    (found,) = await read(user_id="ada", agent_id="liz", limit=5)
    assert found == written
    assert found.created_at.tzinfo is not None
    assert found.created_at.utcoffset() == timedelta(0)


async def test_a_row_with_broken_content_is_skipped_with_a_warning(
    sessions: async_sessionmaker[AsyncSession], read: Reader, caplog: pytest.LogCaptureFixture
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
        found = await read(user_id="ada", agent_id="liz", limit=10)
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


async def test_a_stored_memory_is_committed_and_reads_back_as_written(
    engine: AsyncEngine, sessions: async_sessionmaker[AsyncSession], read: Reader
) -> None:
    written = memory('café ☕ and "quotes"', minute=7).model_copy(
        update={"content": {"text": "café ☕", "imageUrls": ["https://x/y.png"]}}
    )
    await store_memory(engine, written)
    await store_memory(engine, memory("earlier", minute=1))
    found = await read(user_id="ada", agent_id="liz", limit=5)
    assert found == [written, memory("earlier", minute=1).model_copy(update={"id": found[1].id})]
    async with sessions() as session:  # committed: a new session sees both
        assert await count_memories(session, user_id="ada") == 2


async def test_a_row_written_by_hand_with_a_text_date_reads_as_utc(
    engine: AsyncEngine, read: Reader
) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("only SQLite keeps dates as text when a hand-written row says so")
    async with engine.begin() as connection:
        await connection.execute(
            text(
                'INSERT INTO "Memory" ("id", "userId", "agentId", "roomId", "content", "type", '
                "\"generator\", \"createdAt\") VALUES ('by-hand', 'ada', 'liz', 'r', "
                "'{\"text\": \"hi\"}', 'text', 'external', '2025-03-01 12:30:00')"
            )
        )
    (found,) = await read(user_id="ada", agent_id="liz", limit=5)
    assert found.created_at == datetime(2025, 3, 1, 12, 30, tzinfo=UTC)


async def test_a_memory_the_database_refuses_is_reported_as_an_outage(
    engine: AsyncEngine, database_url: str
) -> None:
    """The statement sent straight to the driver fails as any other would: an outage."""
    refusing = read_engine(engine)  # SQLite: a read-only connection (PRAGMA query_only)
    if engine.dialect.name != "sqlite":
        async with engine.connect() as connection:
            name = (await connection.execute(text("SELECT current_database()"))).scalar()
            await connection.execute(
                text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
            )
            await connection.commit()
        refusing = create_engine(database_url)  # its connections start read-only
    try:
        with pytest.raises(Exception) as raised:
            await store_memory(refusing, memory("hi", minute=0))
    finally:
        if refusing is not read_engine(engine):
            await refusing.dispose()
    error = storage_error_for(raised.value)
    assert error is not None and "cannot store anything" in str(error)
    assert await read_recent(engine, user_id="ada", agent_id="liz", limit=5) == []
