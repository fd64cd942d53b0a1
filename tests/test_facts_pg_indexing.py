"""PostgreSQL puts a small write's new vectors into the HNSW graph after the write:
meanwhile searches still find them, a failed step loses nothing, and migrating down
and up again keeps every fact findable."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.config import Settings
from liz.db.engine import create_engine
from liz.db.migrate import alembic_config, run_blocking, upgrade
from liz.facts.domain import ItemStatus
from liz.facts.postgres import PostgresFacts
from liz.facts.postgres.indexing import INDEXING_LOCK, BackgroundIndexing, index_pending
from liz.facts.store import FactStore
from liz.facts.vectors import embed
from liz.llm import LLMClient
from liz.runtime.bootstrap import open_runtime
from tests.fixtures.db import _asyncpg_dsn, postgres_database_url
from tests.fixtures.facts import AGENT, USER
from tests.test_facts_pgvector_search import (
    ALWAYS_EXACT,
    assert_a_walk_that_gives_up_finds_what_comparing_all_finds,
    candidates,
    fill,
    texts,
)

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

BEFORE = "0009_fact_embedding_inline"
# Five of the filling's words, where its facts have four: each new fact is near many
# of them, as real facts are. (A fact near none, all others equally far from it, can
# be left without a way in by any HNSW graph; that is the graph's nature, not ours.)
BEES = "User mentions tea chess piano garden jazz"
TRACTOR = "User mentions rock hiking sailing pasta sushi"
CATAMARAN = "User mentions python rust ada bob marathon"
CARROTS = "User mentions winter lisbon oslo kyoto violin"
RADIOS = "User mentions tennis climbing bread cheese figs"
LAKES = "User mentions ramen pilot baker chef lawyer"
MAPS = "User mentions farmer dentist berlin paris nurse"


database_url = pytest.fixture(postgres_database_url, name="database_url")


@pytest.fixture
async def indexing_held(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """Another connection holding the indexing lock, as a process whose indexing step
    is slow would: no step of this process moves anything until it lets go."""
    connection = await asyncpg.connect(_asyncpg_dsn(database_url))
    try:
        await connection.execute(f"SELECT pg_advisory_lock({INDEXING_LOCK})")
        yield connection
    finally:
        await connection.close()


async def graph_index(engine: AsyncEngine, llm: LLMClient) -> PostgresFacts:
    """An index that searches a scope of more than 50 facts through the HNSW graph."""
    dimension = len((await embed(llm, ["x"]))[0])
    return PostgresFacts(engine, exact_components=dimension * 50)


async def steps_done(*indexes: object) -> None:
    """Until the indexing steps these indexes started have ended."""
    for index in indexes:
        assert isinstance(index, PostgresFacts)
        await index.indexing.wait()


async def pending_texts(engine: AsyncEngine) -> list[str]:
    async with engine.connect() as connection:
        result = await connection.execute(
            text('SELECT text FROM "Fact" WHERE "vectorPending" ORDER BY text')
        )
        return list(result.scalars())


async def add_one(store: FactStore, fact_text: str) -> str:
    (result,) = await store.apply([{"op": "add", "text": fact_text, "categories": ["a", "b"]}],
                                  AGENT, USER)  # fmt: skip
    assert result.status is ItemStatus.APPLIED and result.fact_id is not None
    return result.fact_id


async def test_a_fact_just_stored_is_found_before_it_enters_the_graph_and_after(
    engine: AsyncEngine, llm: LLMClient, store: FactStore, indexing_held: asyncpg.Connection
) -> None:
    await fill(engine, llm, USER, 400, seed=5)
    through_graph = await graph_index(engine, llm)
    exact = PostgresFacts(engine, exact_components=ALWAYS_EXACT)
    new = await add_one(store, BEES)
    assert await pending_texts(engine) == [BEES]

    for index in (through_graph, exact):
        found = await candidates(engine, index, llm, BEES)
        assert found[0][0] == new
    assert [fact.id for fact in await store.search(BEES, AGENT, USER)][:1] == [new]

    await steps_done(store.storage, through_graph)  # they gave up: the lock is held
    await indexing_held.execute(f"SELECT pg_advisory_unlock({INDEXING_LOCK})")
    assert await index_pending(engine) == 1
    assert await pending_texts(engine) == []
    found = await candidates(engine, through_graph, llm, BEES)
    assert found[0][0] == new
    assert found == await candidates(engine, exact, llm, BEES)


async def test_a_user_with_few_facts_some_waiting_for_the_graph_gets_their_best_ones(
    engine: AsyncEngine, llm: LLMClient, store: FactStore, indexing_held: asyncpg.Connection
) -> None:
    # As test_facts_pgvector_search's test of a user among many others, with 10 of the
    # user's 30 facts waiting for the graph: the walk gives up at once, and the scope
    # must still be compared in full.
    await fill(engine, llm, "someone-else", 6000, seed=2)
    await fill(engine, llm, USER, 20, seed=3)
    await indexing_held.execute(f"SELECT pg_advisory_unlock({INDEXING_LOCK})")
    while await index_pending(engine):
        pass
    await indexing_held.execute(f"SELECT pg_advisory_lock({INDEXING_LOCK})")
    for fact_text in texts(10, seed=4):
        await add_one(store, fact_text)
    assert len(await pending_texts(engine)) == 10
    await assert_a_walk_that_gives_up_finds_what_comparing_all_finds(engine, llm)


async def test_an_updated_fact_is_found_by_its_new_text_before_and_after_indexing(
    engine: AsyncEngine, llm: LLMClient, store: FactStore, indexing_held: asyncpg.Connection
) -> None:
    await fill(engine, llm, USER, 400, seed=6)
    through_graph = await graph_index(engine, llm)
    fact_id = await add_one(store, TRACTOR)
    await store.update(fact_id, CATAMARAN, AGENT, USER)

    found = await candidates(engine, through_graph, llm, CATAMARAN)
    assert found[0][0] == fact_id
    await steps_done(store.storage, through_graph)
    await indexing_held.execute(f"SELECT pg_advisory_unlock({INDEXING_LOCK})")
    through_graph.indexing.wake()  # as the next write or search in this process does
    await steps_done(through_graph)
    assert await pending_texts(engine) == []
    found = await candidates(engine, through_graph, llm, CATAMARAN)
    assert found[0][0] == fact_id
    by_old_text = await candidates(engine, through_graph, llm, TRACTOR)
    assert (fact_id, 1.0) not in [(found[0], found[1]) for found in by_old_text]


async def test_a_step_that_fails_midway_leaves_every_fact_pending_and_found(
    engine: AsyncEngine, llm: LLMClient, store: FactStore, indexing_held: asyncpg.Connection
) -> None:
    await fill(engine, llm, USER, 400, seed=7)
    through_graph = await graph_index(engine, llm)
    texts = [CARROTS, RADIOS, LAKES]
    ids = [await add_one(store, fact_text) for fact_text in texts]
    async with engine.begin() as connection:
        # The second fact's move fails, after the first one's: the step stops midway.
        await connection.execute(
            text(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$"
            )
        )
        await connection.execute(
            text(
                'CREATE TRIGGER refuse_radios BEFORE UPDATE ON "Fact" FOR EACH ROW '
                f"WHEN (NEW.text = '{RADIOS}' AND NOT NEW.\"vectorPending\") "
                "EXECUTE FUNCTION refuse()"
            )
        )
    await steps_done(store.storage)
    await indexing_held.execute(f"SELECT pg_advisory_unlock({INDEXING_LOCK})")

    with pytest.raises(DBAPIError, match="disk on fire"):
        await index_pending(engine)
    assert await pending_texts(engine) == sorted(texts)
    for fact_id, fact_text in zip(ids, texts, strict=True):
        assert (await candidates(engine, through_graph, llm, fact_text))[0][0] == fact_id
    await steps_done(through_graph)  # the search started one: it failed the same way
    assert await pending_texts(engine) == sorted(texts)

    async with engine.begin() as connection:
        await connection.execute(text('DROP TRIGGER refuse_radios ON "Fact"'))
    assert await index_pending(engine) == 3
    assert await pending_texts(engine) == []
    for fact_id, fact_text in zip(ids, texts, strict=True):
        assert (await candidates(engine, through_graph, llm, fact_text))[0][0] == fact_id


async def test_writes_that_never_pause_leave_no_backlog_of_pending_facts(
    engine: AsyncEngine, store: FactStore
) -> None:
    batch = [
        {"op": "add", "text": fact_text, "categories": ["a", "b"]} for fact_text in texts(100, 9)
    ]
    await store.apply(batch, AGENT, USER)
    await steps_done(store.storage)
    async with engine.begin() as connection:  # a backlog, as a burst of small writes leaves
        await connection.execute(text('UPDATE "Fact" SET "vectorPending" = true'))
    # Batches of 5, woken again and again, as writes that never pause wake it.
    indexing = BackgroundIndexing(engine, batch=5)

    async def writes_that_never_pause() -> None:
        while True:
            indexing.wake()  # what each small write does
            await asyncio.sleep(0.02)

    writer = asyncio.create_task(writes_that_never_pause())
    try:
        while len(await pending_texts(engine)) == 100:  # until the first step has begun
            await asyncio.sleep(0.02)
        # Far more than the 20 batches take; a batch per step would have moved 15 or so.
        await asyncio.sleep(1.0)
        assert await pending_texts(engine) == []
    finally:
        writer.cancel()
        await indexing.wait()


async def test_a_one_off_process_indexes_its_last_writes_before_it_ends(
    database_url: str, llm: LLMClient
) -> None:
    settings = Settings(_env_file=None, database_url=database_url)  # type: ignore[call-arg]
    async with open_runtime(settings, llm_client=llm, learn=False) as runtime:
        assert runtime.facts is not None
        await add_one(runtime.facts, BEES)
    # Read at once, before the step the write started would have begun on its own.
    engine = create_engine(database_url)
    try:
        async with engine.connect() as connection:
            stored = (await connection.execute(text('SELECT text FROM "Fact"'))).scalars().all()
        assert stored == [BEES]
        assert await pending_texts(engine) == []
    finally:
        await engine.dispose()


def _downgrade(url: str, revision: str) -> None:
    async def work() -> None:
        engine = create_engine(url, pooled=False)
        try:
            async with engine.connect() as connection:
                await connection.run_sync(
                    lambda sync: command.downgrade(alembic_config(sync), revision)
                )
                await connection.commit()
        finally:
            await engine.dispose()

    run_blocking(work)


async def _graph_order(engine: AsyncEngine, llm: LLMClient, query: str) -> list[str]:
    """Texts of the user's facts in the order the HNSW graph walks them (no table scan)."""
    (vector,) = await embed(llm, [query])
    dimension = vector.size
    async with engine.begin() as connection:
        await connection.execute(text("SET LOCAL enable_seqscan = off"))
        await connection.execute(text("SET LOCAL enable_bitmapscan = off"))
        await connection.execute(text("SET LOCAL enable_indexscan = on"))
        await connection.execute(text("SET LOCAL enable_sort = off"))
        result = await connection.execute(
            text(
                f'SELECT text FROM "Fact" WHERE "embeddingDim" = {dimension} '
                f"ORDER BY (embedding::vector({dimension})) <=> "
                f"CAST(CAST(:query AS real[]) AS vector({dimension})) LIMIT 5"
            ),
            {"query": vector.tolist()},
        )
        return list(result.scalars())


async def test_migrating_down_and_up_keeps_pending_and_indexed_facts_findable(
    database_url: str, engine: AsyncEngine, llm: LLMClient, store: FactStore, indexing_held: Any
) -> None:
    await fill(engine, llm, USER, 150, seed=8)  # past a small write's size: in the graph at once
    await store.search("anything at all", AGENT, USER)  # makes the dimension's HNSW index
    await add_one(store, MAPS)
    assert await pending_texts(engine) == [MAPS]
    # The step the write started gives up while the lock is held; none starts after it.
    # (One still running when the blocking downgrade begins would hold the rows the
    # downgrade waits for, on the event loop the downgrade blocks.)
    await steps_done(store.storage)
    await engine.dispose()
    await indexing_held.close()

    _downgrade(database_url, BEFORE)
    async with engine.connect() as connection:
        definitions = (await connection.execute(text(
            "SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'Fact_embedding_hnsw%'"
        ))).scalars().all()  # fmt: skip
        count = (await connection.execute(text('SELECT count(*) FROM "Fact"'))).scalar()
    assert definitions and not any("vectorPending" in found for found in definitions)
    assert count == 151
    # The graph rebuilt on the way down holds the fact that was pending.
    graph = await _graph_order(engine, llm, MAPS)
    assert graph[0] == MAPS

    await engine.dispose()
    upgrade(database_url)
    assert await pending_texts(engine) == []
    graph = await _graph_order(engine, llm, MAPS)
    assert graph[0] == MAPS
    found = await store.search(MAPS, AGENT, USER)
    assert found[0].text == MAPS
