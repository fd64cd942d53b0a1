"""Two processes on one PostgreSQL database: a search finds what another process wrote
since this one last searched (added, changed, retired), even while the writes race the
searches, and gives what a fresh storage with nothing in memory gives."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.db.engine import create_engine, make_sessionmaker
from liz.facts.domain import Fact
from liz.facts.postgres import PostgresFacts
from liz.facts.storage import Query
from liz.facts.store import FactStore
from liz.facts.vectors import Vector, embed
from liz.llm import LLMClient
from tests.fixtures.db import postgres_database_url
from tests.fixtures.facts import AGENT, USER, fact_settings

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

database_url = pytest.fixture(postgres_database_url, name="database_url")


@pytest.fixture
async def other(database_url: str, llm: LLMClient) -> AsyncIterator[FactStore]:
    """A store of another process: its own engine (pool) on the same database."""
    engine = create_engine(database_url)
    try:
        yield FactStore(make_sessionmaker(engine), llm, engine=engine, settings=fact_settings())
    finally:
        await engine.dispose()


@pytest.fixture
def serving(engine: AsyncEngine, llm: LLMClient) -> FactStore:
    return FactStore(make_sessionmaker(engine), llm, engine=engine, settings=fact_settings())


def add(text: str) -> dict[str, object]:
    return {"op": "add", "text": text, "categories": ["drinks", "games"]}


async def in_the_database(engine: AsyncEngine, llm: LLMClient, query: str) -> list[Fact]:
    """The search of a storage fresh from the database, nothing of an earlier one kept."""
    (vector,) = await embed(llm, [query])
    storage = PostgresFacts(engine)
    await storage.prepare_dimension(int(vector.size))
    arrived: asyncio.Future[Vector] = asyncio.get_running_loop().create_future()
    arrived.set_result(vector)
    return await storage.search(
        Query(query, (AGENT, USER), lambda: arrived, llm.embedding_model, 10, 0.0)
    )


async def texts(store: FactStore, query: str) -> list[str]:
    return [fact.text for fact in await store.search(query, AGENT, USER, threshold=0.0)]


async def test_a_search_finds_what_another_process_added_changed_and_retired(
    serving: FactStore, other: FactStore
) -> None:
    tea, chess = (
        result.fact_id or ""
        for result in await other.apply(
            [add("User likes tea"), add("User plays chess on Sundays")], AGENT, USER
        )
    )
    assert sorted(await texts(serving, "tea and chess")) == [
        "User likes tea",
        "User plays chess on Sundays",
    ]
    await other.update(tea, "User likes green tea", AGENT, USER)
    await other.delete(chess, AGENT, USER)
    await other.apply([add("User drinks tea with honey")], AGENT, USER)
    assert sorted(await texts(serving, "tea and chess")) == [
        "User drinks tea with honey",
        "User likes green tea",
    ]


async def test_own_writes_are_found_by_the_next_search(serving: FactStore) -> None:
    await serving.apply([add("User likes tea")], AGENT, USER)
    assert await texts(serving, "tea") == ["User likes tea"]
    (result,) = await serving.apply([add("User collects teapots")], AGENT, USER)
    assert sorted(await texts(serving, "tea")) == ["User collects teapots", "User likes tea"]
    await serving.delete(result.fact_id or "", AGENT, USER)
    assert await texts(serving, "tea") == ["User likes tea"]


async def test_searches_racing_another_process_s_writes_end_where_the_database_is(
    serving: FactStore, other: FactStore, engine: AsyncEngine, llm: LLMClient
) -> None:
    query = "what tea should I brew for my chess club?"
    await other.apply([add("User likes tea number 0")], AGENT, USER)

    async def write() -> None:
        for number in range(1, 25):
            (result,) = await other.apply([add(f"User likes tea number {number}")], AGENT, USER)
            if number % 3 == 0:
                await other.update(
                    result.fact_id or "", f"User brews chess tea {number}", AGENT, USER
                )
            if number % 4 == 0:
                await other.delete(result.fact_id or "", AGENT, USER)

    async def search() -> None:
        for _ in range(40):
            await serving.search(query, AGENT, USER, threshold=0.0)

    await asyncio.gather(write(), search(), search())
    expected = await in_the_database(engine, llm, query)
    assert len(expected) == 10
    assert await serving.search(query, AGENT, USER, limit=10, threshold=0.0) == expected
