"""Statements sent straight to the driver: committed together or not at all, dates as liz
stores them, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import bindparam, literal, select
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from liz.db.driver import Statement, connect
from liz.db.memories import count_memories, insert_statement, recent_memories, store_memory
from liz.db.tables import MemoryRecord
from liz.db.url import normalize_database_url
from liz.types import Memory

pytestmark = pytest.mark.anyio


def memory(text: str, at: datetime) -> Memory:
    return Memory(
        user_id="ada",
        agent_id="liz",
        room_id="liz:ada",
        content={"text": text},
        type="text",
        generator="external",
        created_at=at,
    )


def test_a_statement_is_compiled_in_each_drivers_parameter_style() -> None:
    statement = Statement(
        select(MemoryRecord.id)
        .where(MemoryRecord.user_id == bindparam("user"), MemoryRecord.agent_id != "")
        .limit(bindparam("most"))
    )
    assert '"userId" = ? AND' in statement.sqlite.sql
    assert '"userId" = $1::VARCHAR AND' in statement.postgres.sql
    assert statement.names == {"user", "most"}  # the empty string is the statement's own


def test_a_statement_given_the_wrong_parameters_says_which() -> None:
    statement = Statement(select(MemoryRecord.id).where(MemoryRecord.id == bindparam("id")))
    with pytest.raises(TypeError, match=r"missing \['id'\], unknown \['ids'\]"):
        statement.bind(ids="m1")


async def test_a_commit_whose_statement_fails_writes_nothing_and_the_connection_stays_usable(
    engine: AsyncEngine, sessions: async_sessionmaker[AsyncSession]
) -> None:
    start = datetime(2025, 3, 1, 12, tzinfo=UTC)
    first = memory("first", start)
    with pytest.raises(sa_exc.DBAPIError, match=r"(?i)unique"):
        async with connect(engine) as db:
            await db.commit(insert_statement(first), insert_statement(first))  # the same id
    async with connect(engine) as db:
        second, third = memory("second", start), memory("third", start + timedelta(minutes=1))
        await db.commit(insert_statement(second), insert_statement(third))
    async with sessions() as session:
        found = await recent_memories(session, user_id="ada", agent_id="liz", limit=10)
    assert [m.text for m in found] == ["third", "second"]


@pytest.mark.parametrize("turns_before_cancel", [0, 1, 2, 5])
async def test_a_commit_cancelled_while_it_runs_writes_all_or_nothing(
    engine: AsyncEngine, sessions: async_sessionmaker[AsyncSession], turns_before_cancel: int
) -> None:
    now = datetime.now(UTC)

    async def write_two() -> None:
        async with connect(engine) as db:
            await db.commit(
                insert_statement(memory("one", now)), insert_statement(memory("two", now))
            )

    task = asyncio.create_task(write_two())
    for _ in range(turns_before_cancel):
        await asyncio.sleep(0)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    async with connect(engine) as db:  # SQLite: the one writing connection, usable again
        await db.commit(insert_statement(memory("after", now + timedelta(seconds=1))))
    async with sessions() as session:
        assert await count_memories(session) in (1, 3)
        (latest, *_) = await recent_memories(session, user_id="ada", agent_id="liz", limit=1)
    assert latest.text == "after"


async def test_dates_are_stored_as_liz_stores_them(
    engine: AsyncEngine, sessions: async_sessionmaker[AsyncSession]
) -> None:
    paris = timezone(timedelta(hours=1))
    written = memory("hello", datetime(2025, 3, 1, 13, 30, 15, 123000, tzinfo=paris))
    await store_memory(engine, written)
    async with sessions() as session:
        (found,) = await recent_memories(session, user_id="ada", agent_id="liz", limit=1)
    assert found == written
    assert found.created_at.utcoffset() == timedelta(0)


async def test_a_connection_refused_at_connect_is_told_as_every_other_statement_failure(
    engine: AsyncEngine, database_url: str
) -> None:
    """SQLAlchemy's adapter raises its own errors while connecting; they are wrapped alike."""
    if engine.dialect.name == "sqlite":
        pytest.skip("SQLite raises sqlite3's own errors; test_edge_errors covers a bad path")
    broken = create_async_engine(
        normalize_database_url(database_url.rsplit("/", 1)[0] + "/no_such_database")
    )
    try:
        with pytest.raises(sa_exc.DBAPIError, match="no_such_database"):
            async with connect(broken) as db:
                await db.fetch(Statement(select(literal(1))))
    finally:
        await broken.dispose()
