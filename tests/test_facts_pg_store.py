"""Writes on PostgreSQL: new facts and their history rows go in one statement, up to a
size; past it in two. Either way every fact is kept with its history, and searchable."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.errors import StorageError
from liz.facts.domain import Event, ExtraStatement, ExtraStatementMismatch, ItemStatus
from liz.facts.postgres import PENDING_FACTS as ONE_STATEMENT_FACTS
from liz.facts.postgres import scope_lock_key
from liz.facts.store import FactStore
from liz.testing.openai_server import ScriptedOpenAI
from tests.fixtures.db import postgres_database_url
from tests.fixtures.facts import AGENT, USER, extraction, fact

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


database_url = pytest.fixture(postgres_database_url, name="database_url")


@pytest.mark.parametrize("count", [1, ONE_STATEMENT_FACTS, ONE_STATEMENT_FACTS + 1])
async def test_every_fact_added_in_one_batch_is_kept_with_its_history(
    store: FactStore, count: int
) -> None:
    texts = [f"User keeps beehive number {number}" for number in range(count)]
    results = await store.apply(
        [{"op": "add", "text": text, "categories": ["bees", "hobby"]} for text in texts],
        AGENT,
        USER,
    )
    assert [result.status for result in results] == [ItemStatus.APPLIED] * count
    listed = await store.list(AGENT, USER, limit=count + 10)
    assert sorted(fact.text for fact in listed) == sorted(texts)
    last = results[-1].fact_id
    assert last is not None
    history = await store.history(last, AGENT, USER)
    assert [(entry.event, entry.new_text) for entry in history] == [(Event.ADD, texts[-1])]
    found = await store.search(texts[-1], AGENT, USER, limit=1)
    assert [fact.id for fact in found] == [last]


async def test_adds_updates_and_deletes_in_one_batch_each_leave_their_history(
    store: FactStore,
) -> None:
    first = await store.apply(
        [
            {"op": "add", "text": "User likes tea", "categories": ["drinks", "taste"]},
            {"op": "add", "text": "User plays chess", "categories": ["games", "hobby"]},
        ],
        AGENT,
        USER,
    )
    tea, chess = (result.fact_id or "" for result in first)
    results = await store.apply(
        [
            {"op": "update", "id": tea, "text": "User likes oolong tea"},
            {"op": "delete", "id": chess},
            {"op": "add", "text": "User speaks Finnish", "categories": ["language", "skills"]},
        ],
        AGENT,
        USER,
    )
    assert [result.status for result in results] == [ItemStatus.APPLIED] * 3
    listed = sorted(fact.text for fact in await store.list(AGENT, USER))
    assert listed == ["User likes oolong tea", "User speaks Finnish"]
    assert [entry.event for entry in await store.history(tea, AGENT, USER)] == [
        Event.ADD,
        Event.UPDATE,
    ]
    assert [entry.event for entry in await store.history(chess, AGENT, USER)] == [
        Event.ADD,
        Event.DELETE,
    ]


async def test_a_write_whose_extra_statement_fails_keeps_neither_facts_nor_history(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    # The statement finds no row where it expects one: the facts go with it.
    missing = ExtraStatement(text('DELETE FROM "FactHistory" WHERE id = -1'), expected_rows=1)
    scripted.reply(extraction(fact("User keeps bees")))
    with pytest.raises(ExtraStatementMismatch, match="not 1"):
        await store.add("I keep bees", AGENT, USER, also=[missing])
    assert await store.list(AGENT, USER, include_retired=True) == []


async def test_a_write_the_database_refuses_keeps_nothing_and_the_next_write_goes_through(
    store: FactStore,
) -> None:
    # PostgreSQL's text holds no NUL character: the insert fails after the scope's lock
    # was taken, and the whole transaction (the lock with it) is rolled back.
    with pytest.raises(StorageError, match="facts database failed"):
        await store.apply(
            [{"op": "add", "text": "User likes tea\x00", "categories": ["drinks", "taste"]}],
            AGENT,
            USER,
        )
    (result,) = await store.apply(
        [{"op": "add", "text": "User likes coffee", "categories": ["drinks", "taste"]}],
        AGENT,
        USER,
    )
    assert result.status is ItemStatus.APPLIED
    listed = await store.list(AGENT, USER, include_retired=True)
    assert [fact.text for fact in listed] == ["User likes coffee"]


async def test_a_connection_dropped_mid_write_is_told_as_a_storage_error_and_writes_nothing(
    store: FactStore, engine: AsyncEngine
) -> None:
    async with engine.connect() as holder:
        # The scope's lock, held: the write's transaction begins and waits for it.
        await holder.execute(text(f"SELECT pg_advisory_lock({scope_lock_key((AGENT, USER))})"))
        write = asyncio.create_task(
            store.apply(
                [{"op": "add", "text": "User keeps bees", "categories": ["a", "b"]}], AGENT, USER
            )
        )
        for _ in range(500):  # until the write waits for the lock, then drop its connection
            async with engine.connect() as connection:  # pg_stat_activity is as of a
                dropped = await connection.scalar(  # transaction's start: a new one each time
                    text(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND wait_event = 'advisory'"
                    )
                )
            if dropped:
                break
            await asyncio.sleep(0.01)
        else:
            write.cancel()
            raise AssertionError("the write never waited for the scope's lock")
        with pytest.raises(StorageError, match="facts database failed"):
            await write
        await holder.execute(text(f"SELECT pg_advisory_unlock({scope_lock_key((AGENT, USER))})"))
    assert await store.list(AGENT, USER) == []
    (result,) = await store.apply(
        [{"op": "add", "text": "User keeps bees", "categories": ["a", "b"]}], AGENT, USER
    )
    assert result.status is ItemStatus.APPLIED
