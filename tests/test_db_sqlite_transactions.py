"""SQLite transactions: readers read while a writer works; writers in one process take turns."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.db.engine import read_only_session
from liz.db.memories import count_memories, insert_memory
from liz.errors import UsageError
from liz.types import Memory

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)]


def said(text: str) -> Memory:
    return Memory(
        user_id="ada",
        agent_id="liz",
        room_id="r",
        type="text",
        generator="external",
        content={"text": text},
        created_at=datetime.now(UTC),
    )


async def test_a_read_only_session_reads_while_a_write_is_open(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions() as session, session.begin():
        await insert_memory(session, said("kept"))
    async with sessions() as writer, writer.begin():
        await insert_memory(writer, said("not committed yet"))
        # The writer holds SQLite's write lock in this very task: a reader that queued
        # for it would never get it. A read-only session reads the last commit instead.
        async with read_only_session(sessions) as reader:
            assert await count_memories(reader, user_id="ada") == 1
    async with read_only_session(sessions) as reader:
        assert await count_memories(reader, user_id="ada") == 2


async def test_a_write_in_a_read_only_session_is_refused_and_says_what_to_use(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with read_only_session(sessions) as session:
        await count_memories(session, user_id="ada")
        with pytest.raises(UsageError, match=r"read-only session.*session\.begin\(\)"):
            await insert_memory(session, said("refused"))
    async with sessions() as session:
        assert await count_memories(session, user_id="ada") == 0


async def test_writers_that_read_first_take_turns_and_all_land(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # Each writer reads, waits for the others to get going, then writes: on SQLite a
    # deferred transaction would fail here with "database is locked".
    started = asyncio.Event()

    async def write(n: int) -> None:
        async with sessions() as session, session.begin():
            seen = await count_memories(session, user_id="ada")
            if n == 0:
                started.set()
            else:
                await started.wait()
            await insert_memory(session, said(f"#{n} after {seen}"))

    await asyncio.gather(*(write(n) for n in range(20)))
    async with read_only_session(sessions) as session:
        assert await count_memories(session, user_id="ada") == 20


async def test_a_write_that_fails_midway_leaves_nothing_and_the_next_write_lands(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    class Oops(Exception):
        pass

    with pytest.raises(Oops):
        async with sessions() as session, session.begin():
            await insert_memory(session, said("rolled back"))
            raise Oops
    async with sessions() as session, session.begin():
        await insert_memory(session, said("kept"))
    async with read_only_session(sessions) as session:
        assert await count_memories(session, user_id="ada") == 1
