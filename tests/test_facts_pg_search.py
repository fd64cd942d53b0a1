"""Search on PostgreSQL (liz.facts.postgres): the same facts, scores and order whether
the plan is read while the embedding is on its way or after it, whatever way the
vectors are searched; retired facts left out, pending ones found; failures told as
storage errors, and a cancelled search leaves no transaction open on a pooled
connection."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import numpy as np
import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.config import Settings
from liz.db.engine import create_engine, make_sessionmaker
from liz.facts.domain import EmbeddingMismatchError, Fact
from liz.facts.normalize import fact_hash
from liz.facts.postgres import EXACT_COMPONENTS, PostgresFacts
from liz.facts.storage import Query
from liz.facts.store import FactStore
from liz.facts.vectors import Vector, embed
from liz.facts.writes import database_errors
from liz.llm import LLMClient
from tests.fixtures.db import postgres_database_url
from tests.fixtures.facts import AGENT, USER, fact_settings
from tests.test_facts_pgvector_search import ALWAYS_EXACT, QUERIES, fill

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

KEYWORD_FACTS = [
    "User's locker code is 4711",
    "User's cat is named Zanzibar",
    "User visited Zanzibar in 2019",
]
SEARCHES = [*QUERIES, "4711", "what about Zanzibar?", "tea chess 4711 zanzibar", "nothing"]


database_url = pytest.fixture(postgres_database_url, name="database_url")


def arrived(vector: Vector) -> asyncio.Future[Vector]:
    """A query embedding already there, awaitable any number of times."""
    future: asyncio.Future[Vector] = asyncio.get_running_loop().create_future()
    future.set_result(vector)
    return future


async def query_vector(storage: PostgresFacts, llm: LLMClient, query: str) -> Vector:
    (vector,) = await embed(llm, [query])
    await storage.prepare_dimension(int(vector.size))
    return vector


def searching(
    storage: PostgresFacts,
    llm: LLMClient,
    query: str,
    vector: asyncio.Future[Vector],
    **options: Any,
) -> Awaitable[list[Fact]]:
    values: dict[str, Any] = {"limit": 5, "threshold": 0.0, **options}
    return storage.search(
        Query(query, (AGENT, USER), lambda: vector, llm.embedding_model, **values)
    )


async def both_ways(
    engine: AsyncEngine,
    storage: PostgresFacts,
    llm: LLMClient,
    query: str,
    *,
    limit: int,
    threshold: float,
    components: int = EXACT_COMPONENTS,
) -> tuple[list[Fact], list[Fact]]:
    """The same search by ``storage``, which knows the model's dimension from its last
    search (it plans while the embedding is on its way), and by a fresh storage (which
    plans once the embedding is there)."""
    vector = await query_vector(storage, llm, query)
    options: dict[str, Any] = {"limit": limit, "threshold": threshold}
    known = await searching(storage, llm, query, arrived(vector), **options)
    fresh = PostgresFacts(engine, exact_components=components)
    await fresh.prepare_dimension(int(vector.size))
    return known, await searching(fresh, llm, query, arrived(vector), **options)


async def a_scope_with_keywords_retired_and_pending_facts(
    engine: AsyncEngine, llm: LLMClient
) -> FactStore:
    store = FactStore(make_sessionmaker(engine), llm, engine=engine, settings=fact_settings())
    await fill(engine, llm, USER, 300, seed=7)
    await fill(engine, llm, "someone-else", 100, seed=8)
    listed = await store.list(AGENT, USER, limit=20)
    for retired in listed[:10]:
        await store.delete(retired.id, AGENT, USER)
    # Small writes: their vectors are pending, outside the graph, until indexed.
    for keyword_fact in KEYWORD_FACTS:
        await store.apply(
            [{"op": "add", "text": keyword_fact, "categories": ["a", "b"]}], AGENT, USER
        )
    return store


@pytest.mark.parametrize("way", ["exact", "graph"])
async def test_a_search_planned_early_finds_what_one_planned_late_finds(
    engine: AsyncEngine, llm: LLMClient, way: str
) -> None:
    store = await a_scope_with_keywords_retired_and_pending_facts(engine, llm)
    retired = {found.id for found in await store.list(AGENT, USER, include_retired=True, limit=500)}
    retired -= {found.id for found in await store.list(AGENT, USER, limit=500)}
    dimension = int((await embed(llm, ["x"]))[0].size)
    components = ALWAYS_EXACT if way == "exact" else dimension * 50
    storage = PostgresFacts(engine, exact_components=components)
    keyword_hits = 0
    for query in SEARCHES:
        for limit, threshold in ((3, 0.0), (10, 0.0), (5, 0.3)):
            off, through = await both_ways(
                engine, storage, llm, query, limit=limit, threshold=threshold, components=components
            )
            assert off == through, (query, limit, threshold)
            assert not retired & {found.id for found in off}
            keyword_hits += sum(found.text in KEYWORD_FACTS for found in off)
    assert keyword_hits  # the pending facts, found by their rare words


async def test_the_store_searches_as_its_storage_does(engine: AsyncEngine, llm: LLMClient) -> None:
    store = await a_scope_with_keywords_retired_and_pending_facts(engine, llm)
    for query in SEARCHES:
        found = await store.search(query, AGENT, USER, limit=5)
        vector = arrived((await embed(llm, [query]))[0])
        floor = store.settings.search_threshold
        asked = Query(
            query, (AGENT, USER), lambda vector=vector: vector, llm.embedding_model, 5, floor
        )
        expected = await store.storage.search(asked)
        assert found == expected, query
    assert [found.text for found in await store.search("4711", AGENT, USER)] == [KEYWORD_FACTS[0]]


async def test_facts_of_another_embedding_model_are_refused(
    engine: AsyncEngine, llm: LLMClient
) -> None:
    store = FactStore(make_sessionmaker(engine), llm, engine=engine, settings=fact_settings())
    await store.apply(
        [{"op": "add", "text": "User likes tea", "categories": ["a", "b"]}], AGENT, USER
    )
    async with engine.begin() as connection:
        await connection.execute(text('UPDATE "Fact" SET "embeddingModel" = \'older-model\''))
    with pytest.raises(EmbeddingMismatchError, match="older-model"):
        await store.search("tea", AGENT, USER)


@pytest.mark.parametrize("way", ["exact", "graph"])
async def test_a_connection_dropped_while_the_embedding_is_out_costs_the_search_nothing(
    engine: AsyncEngine, llm: LLMClient, way: str
) -> None:
    store = FactStore(make_sessionmaker(engine), llm, engine=engine, settings=fact_settings())
    await fill(engine, llm, USER, 60, seed=9)
    dimension = int((await embed(llm, ["x"]))[0].size)
    storage = PostgresFacts(engine, exact_components=ALWAYS_EXACT if way == "exact" else dimension)
    vector = await query_vector(storage, llm, "tea and chess")

    def tea(query_vector: asyncio.Future[Vector]) -> Awaitable[list[Fact]]:
        return searching(storage, llm, "tea", query_vector)

    found = await tea(arrived(vector))
    returned = asyncio.Event()
    event.listen(engine.sync_engine, "checkin", lambda *_: returned.set())
    on_its_way: asyncio.Future[Vector] = asyncio.get_running_loop().create_future()
    search = asyncio.ensure_future(_translated(tea(on_its_way)))
    # The search gives its connection back before it waits for the embedding...
    async with asyncio.timeout(10):
        await returned.wait()
    # ...so the server dropping every connection meanwhile costs it nothing.
    async with engine.connect() as connection:
        await connection.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    on_its_way.set_result(vector)
    assert found
    assert await search == found
    assert await store.search("tea and chess", AGENT, USER)


async def _translated(search: Any) -> Any:
    with database_errors():  # as FactStore.search tells a failure
        return await search


@pytest.mark.parametrize("turns", [0, 1, 2, 3, 5, 8, 13])
async def test_a_cancelled_search_leaves_the_pool_usable_and_no_transaction_open(
    database_url: str, llm: LLMClient, turns: int
) -> None:
    # One pooled connection: the search's, used again after the cancellation.
    engine = create_engine(database_url, Settings(db_pool_size=1, db_max_overflow=0))
    watcher = create_engine(database_url, pooled=False)
    try:
        store = FactStore(make_sessionmaker(engine), llm, engine=engine, settings=fact_settings())
        await fill(engine, llm, USER, 60, seed=10)
        dimension = int((await embed(llm, ["x"]))[0].size)
        storage = PostgresFacts(engine, exact_components=dimension)  # through the graph
        vector = await query_vector(storage, llm, "tea")
        expected = await searching(storage, llm, "tea", arrived(vector))
        for late in (False, True):
            on_its_way: asyncio.Future[Vector] = asyncio.get_running_loop().create_future()
            if late:
                on_its_way.set_result(vector)  # cancelled during the reads, not the wait
            search = asyncio.ensure_future(searching(storage, llm, "tea", on_its_way))
            for _ in range(turns):
                await asyncio.sleep(0)
            search.cancel()
            try:
                found = await search
            except asyncio.CancelledError:
                pass
            else:
                assert found == expected  # finished before the cancellation came
            async with watcher.connect() as connection:
                open_transactions = await connection.scalar(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                        "current_database() AND state LIKE 'idle in transaction%'"
                    )
                )
                assert open_transactions == 0
            assert await searching(storage, llm, "tea", arrived(vector)) == expected
        assert await store.search("tea", AGENT, USER)
    finally:
        await engine.dispose()
        await watcher.dispose()


@pytest.mark.parametrize("limit", [1, 3, 5])
async def test_facts_equally_similar_to_six_decimals_come_in_the_same_order_both_ways(
    engine: AsyncEngine, llm: LLMClient, limit: int
) -> None:
    # One direction, each fact's nudged a little aside (by less than a millionth of
    # similarity): the database's raw similarities differ, the rounded ones are equal,
    # so only the text hash orders the facts, unlike the raw similarity.
    store = FactStore(make_sessionmaker(engine), llm, engine=engine, settings=fact_settings())
    texts = [f"User owns bicycle {number}" for number in range(25)]
    await store.apply(
        [{"op": "add", "text": t, "categories": ["a", "b"]} for t in texts], AGENT, USER
    )
    (direction,) = await embed(llm, ["quiet harbour"])  # no word of the facts: no keyword hits
    aside = int(np.argmin(np.abs(direction)))  # a component the direction barely has
    nudge = text('UPDATE "Fact" SET embedding = CAST(CAST(:e AS real[]) AS vector) WHERE id = :id')
    async with engine.begin() as connection:
        ids = (await connection.execute(text('SELECT id FROM "Fact" ORDER BY id'))).scalars().all()
        for number, fact_id in enumerate(ids):
            nudged = direction.astype(np.float32).copy()
            nudged[aside] += (number + 1) * 4e-5
            await connection.execute(nudge, {"e": nudged.tolist(), "id": fact_id})
    storage = PostgresFacts(engine)
    for query in ("quiet harbour", "quiet harbour 7"):
        off, through = await both_ways(engine, storage, llm, query, limit=limit, threshold=0.0)
        assert off == through
        assert len(off) == limit
    # Equal similarities come in their texts' hashes' order.
    _, in_process = await both_ways(
        engine, storage, llm, "quiet harbour", limit=limit, threshold=0.0
    )
    assert len(in_process) == limit
    by_rank = sorted(in_process, key=lambda fact: (-(fact.score or 0.0), fact_hash(fact.text)))
    assert in_process == by_rank
