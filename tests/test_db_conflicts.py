"""Transactions that collide on PostgreSQL: the reply's statement and a learning job's
transaction, interleaved as the server logs of a deadlock showed them, both commit; and a
deadlock that still happens is run again inside the request, never reaching the caller."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import bindparam, column, delete, func, select, table, update
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.db.driver import Driver, Statement, connect
from liz.db.memories import insert_statement
from liz.db.tables import MemoryRecord
from liz.db.usage import UsageRecord, usage_statements
from liz.learning_queue import jobs
from liz.learning_queue.tables import LearningJobRecord
from liz.observe.usage import CallUsage
from liz.types import Memory
from tests.fixtures.db import postgres_database_url

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]
database_url = pytest.fixture(postgres_database_url, name="database_url")
NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
AGENT, USER = "ada-bot", "ann"
EMBED = [CallUsage("embeddings", "scripted-embedding", "embed", 7, 0)]
_HEAD_ID = Statement(
    select(func.min(LearningJobRecord.id)).where(LearningJobRecord.user_id == bindparam("user"))
)
_LEARNED = Statement(delete(LearningJobRecord).where(LearningJobRecord.id == bindparam("id")))
_ACTIVITY = table("pg_stat_activity", column("datname"), column("wait_event_type"))
_WAITING_FOR_A_LOCK = Statement(
    select(func.count()).where(
        _ACTIVITY.c.datname == func.current_database(), _ACTIVITY.c.wait_event_type == "Lock"
    )
)
_SET = Statement(
    update(MemoryRecord)
    .where(MemoryRecord.id == bindparam("id"))
    .values(content=bindparam("content"))
)
_CONTENT = Statement(select(MemoryRecord.content).where(MemoryRecord.id == bindparam("id")))
_USAGE_CALLS = Statement(
    select(func.sum(UsageRecord.calls)).where(UsageRecord.user_id == bindparam("user"))
)


def said(text: str, at: datetime, generator: str = "external") -> Memory:
    return Memory(
        user_id=USER,
        agent_id=AGENT,
        room_id="room",
        content={"text": text},
        type="text",
        generator=generator,  # type: ignore[arg-type]
        created_at=at,
    )


async def wait_until_one_waits_for_a_lock(watcher: Driver) -> None:
    for _ in range(500):
        if (await watcher.fetch(_WAITING_FOR_A_LOCK))[0][0] >= 1:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("no transaction ever waited for a lock")


async def test_a_reply_and_a_learning_job_interleaved_as_in_the_deadlock_both_commit(
    engine: AsyncEngine,
) -> None:
    # ann's first message, replied to: its job heads her queue; her second, just said.
    first, second = said("I keep bees", NOW), said("I grow tomatoes", NOW + timedelta(1))
    async with connect(engine) as db:
        await db.commit(
            insert_statement(first),
            jobs.enqueue_statement(first, "Ada", due=NOW),
            *usage_statements(EMBED, agent_id=AGENT, user_id=USER, at=NOW),  # the day's row
        )
        first_reply = said("Noted.", NOW, "llm")
        await db.commit(
            insert_statement(first_reply),
            jobs.reply_came_statement(first, first_reply.id, NOW, idle_seconds=0, batch=16),
        )
        await db.commit(
            insert_statement(second),
            jobs.enqueue_statement(second, "Ada", due=NOW + timedelta(1)),
        )
        ((head,),) = await db.fetch(_HEAD_ID, user=USER)
    reply = said("Noted.", NOW + timedelta(1), "llm")
    async with connect(engine) as learning, connect(engine) as turn, connect(engine) as watcher:
        # The learning job deletes the head's row in its transaction (its facts are
        # written), and has yet to add the tokens it spent.
        await learning.connection.execute("BEGIN")
        await learning.execute(_LEARNED, id=head)
        # The turn stores its reply: the head's row waits for the learning job.
        replied = asyncio.create_task(
            turn.commit(
                insert_statement(reply),
                jobs.reply_came_statement(
                    second, reply.id, NOW + timedelta(1), idle_seconds=0, batch=16
                ),
                *usage_statements(EMBED, agent_id=AGENT, user_id=USER, at=NOW),
            )
        )
        await wait_until_one_waits_for_a_lock(watcher)
        # The learning job's own usage row: the reply must not hold it while it waits.
        for statement in usage_statements(EMBED, agent_id=AGENT, user_id=USER, at=NOW):
            await learning.execute(statement.statement, **statement.values)
        await learning.connection.execute("COMMIT")
        await replied  # no deadlock: the reply is stored
        ((calls,),) = await watcher.fetch(_USAGE_CALLS, user=USER)
        (stored,) = await watcher.fetch(_CONTENT, id=reply.id)
    assert int(calls) == 3  # the first turn's, the learning job's, the reply's
    assert json.loads(stored[0]) == {"text": "Noted."}


async def test_a_deadlock_that_still_happens_is_run_again_and_never_reaches_the_caller(
    engine: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="liz.db.conflicts")
    one, two = said("one", NOW), said("two", NOW)
    async with connect(engine) as db:
        await db.commit(insert_statement(one), insert_statement(two))
    async with connect(engine) as other, connect(engine) as turn, connect(engine) as watcher:
        await other.connection.execute("BEGIN")
        await other.execute(_SET, content='{"text": "other"}', id=one.id)
        # The turn's write takes two first, then waits for one...
        written = asyncio.create_task(
            turn.commit(
                _SET.bind(content='{"text": "turn"}', id=two.id),
                _SET.bind(content='{"text": "turn"}', id=one.id),
            )
        )
        await wait_until_one_waits_for_a_lock(watcher)
        # ...which the other holds while it asks for two: a real deadlock. PostgreSQL
        # ends the transaction that waited first, the turn's; it runs again.
        await other.execute(_SET, content='{"text": "other"}', id=two.id)
        await other.connection.execute("COMMIT")
        await written  # the caller never sees the deadlock
        contents = [(await watcher.fetch(_CONTENT, id=m.id))[0][0] for m in (one, two)]
    assert [json.loads(content) for content in contents] == [{"text": "turn"}] * 2
    (retried,) = [r.getMessage() for r in caplog.records if r.name == "liz.db.conflicts"]
    assert "collided with another" in retried and "deadlock detected" in retried
