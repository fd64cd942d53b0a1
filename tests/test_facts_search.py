"""Hybrid search, isolation between users and agents, embedding models, reindex, as_of."""

from __future__ import annotations

import random
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.db.engine import create_engine, make_sessionmaker
from liz.errors import InputError, NotFound
from liz.facts.domain import EmbeddingMismatchError, ItemStatus
from liz.facts.storage import Nearest
from liz.facts.store import FactStore
from liz.llm import LLMClient
from liz.testing.clock import ManualClock
from liz.testing.openai_server import ScriptedOpenAI
from tests.fixtures.db import _fresh_postgres
from tests.fixtures.facts import (
    AGENT,
    USER,
    decision,
    extraction,
    fact,
    fact_settings,
    plan,
    seed,
)

pytestmark = pytest.mark.anyio


async def test_meaning_finds_related_facts_above_the_threshold(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    await seed(
        store,
        scripted,
        fact("User likes hiking in the mountains"),
        fact("User works as a nurse"),
        fact("User owns a red bicycle"),
    )
    found = await store.search("mountains hiking trip", AGENT, USER, limit=2, threshold=0.3)
    assert [f.text for f in found] == ["User likes hiking in the mountains"]
    assert found[0].score is not None and found[0].score > 0.3


async def test_an_exact_number_is_found_even_when_the_vectors_miss_it(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    await seed(store, scripted, fact("User's locker code is 4711"), fact("User likes jazz"))
    # A similarity floor no vector reaches: only the keyword list can find the fact.
    found = await store.search("4711", AGENT, USER, threshold=0.99)
    assert [f.text for f in found] == ["User's locker code is 4711"]
    assert await store.search("4712", AGENT, USER, threshold=0.99) == []


async def test_what_a_contraction_leaves_of_a_word_finds_nothing(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    # Nearly every fact says "User's": the "s" of "Tom's" (or the "t" of "don't") must not
    # make every fact a keyword hit, nor make a search read them all.
    await seed(store, scripted, fact("User's locker code is 4711"), fact("User's sister is Mia"))
    assert await store.search("what's Tom's job? don't guess", AGENT, USER, threshold=0.99) == []
    found = await store.search("Mia's birthday", AGENT, USER, threshold=0.99)
    assert [f.text for f in found] == ["User's sister is Mia"]


async def test_an_empty_query_is_refused(store: FactStore) -> None:
    with pytest.raises(InputError, match="empty"):
        await store.search("  ", AGENT, USER)


async def test_no_query_returns_another_users_or_another_agents_facts(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    (mine,) = await seed(store, scripted, fact("User's name is Ada"))
    (other_user,) = await seed(store, scripted, fact("User's name is Bob"), user="user-2")
    (other_agent,) = await seed(store, scripted, fact("User's name is Cy"), agent="other-bot")
    assert [f.text for f in await store.search("name Ada Bob Cy", AGENT, USER)] == [
        "User's name is Ada"
    ]
    assert [f.id for f in await store.list(AGENT, USER, include_retired=True)] == [mine]
    for foreign in (other_user, other_agent):
        assert await store.get(foreign, AGENT, USER) is None
        with pytest.raises(NotFound):
            await store.history(foreign, AGENT, USER)
        with pytest.raises(NotFound):
            await store.delete(foreign, AGENT, USER)
        (result,) = await store.apply(
            [{"op": "update", "id": foreign, "text": "hacked"}], AGENT, USER
        )
        assert result.status is ItemStatus.REFUSED
    assert [f.text for f in await store.list(AGENT, "user-2")] == ["User's name is Bob"]
    assert [f.text for f in await store.list("other-bot", USER)] == ["User's name is Cy"]


async def test_a_query_with_another_embedding_model_is_refused_until_reindexed(
    store: FactStore,
    scripted: ScriptedOpenAI,
    sessions: async_sessionmaker[AsyncSession],
    engine: AsyncEngine,
) -> None:
    await seed(store, scripted, fact("User likes tea"), fact("User likes chess"))
    async with scripted.llm_client(embedding_model="embedding-v2") as newer:
        upgraded = FactStore(sessions, newer, engine=engine, settings=fact_settings())
        with pytest.raises(EmbeddingMismatchError, match="liz facts reindex") as refused:
            await upgraded.search("tea", AGENT, USER)
        assert "scripted-embedding" in refused.value.message
        progress: list[tuple[int, int]] = []
        assert await upgraded.reindex(AGENT, USER, progress=lambda *p: progress.append(p)) == 2
        assert progress[0] == (0, 2) and progress[-1] == (2, 2)
        assert [f.text for f in await upgraded.search("tea", AGENT, USER)] == ["User likes tea"]
        assert await upgraded.reindex(AGENT, USER) == 0  # nothing left to re-embed
    with pytest.raises(EmbeddingMismatchError):
        await store.search("tea", AGENT, USER)


async def test_a_query_with_another_dimension_is_refused(
    store: FactStore,
    scripted: ScriptedOpenAI,
    sessions: async_sessionmaker[AsyncSession],
    engine: AsyncEngine,
) -> None:
    await seed(store, scripted, fact("User likes tea"))
    wider = ScriptedOpenAI(embedding_dim=96)
    async with wider.llm_client() as same_name:
        other = FactStore(sessions, same_name, engine=engine, settings=fact_settings())
        with pytest.raises(EmbeddingMismatchError, match="dimension 64"):
            await other.search("tea", AGENT, USER)


async def test_as_of_answers_with_the_text_known_at_that_time(
    store: FactStore, scripted: ScriptedOpenAI, clock: ManualClock
) -> None:
    (_job,) = await seed(store, scripted, fact("User works as a junior nurse"))
    first = await clock.advance(minutes=1)
    await clock.advance(minutes=1)
    scripted.reply(
        extraction(fact("User works as a senior nurse")),
        plan(decision(1, "UPDATE", 1, "User works as a senior nurse")),
    )
    await store.add("I got promoted to senior nurse", AGENT, USER)
    assert [f.text for f in await store.as_of(first, AGENT, USER)] == [
        "User works as a junior nurse"
    ]
    (junior,) = await store.as_of(first, AGENT, USER)
    assert junior.updated_at < first  # the later promotion is not part of it
    assert [f.text for f in await store.as_of(await clock.advance(minutes=1), AGENT, USER)] == [
        "User works as a senior nurse"
    ]


# --- the same top-k on SQLite and PostgreSQL -------------------------------------------

_VOCABULARY = """tea coffee chess piano berlin paris nurse teacher cat dog garden bicycle jazz
rock hiking sailing pasta sushi python rust 4711 ada bob marathon winter"""
WORDS = _VOCABULARY.split()


@pytest.fixture
def both_urls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    path = tmp_path / "liz.db"
    shutil.copyfile(request.getfixturevalue("_sqlite_template"), path)
    server = request.getfixturevalue("pgvector_server")
    postgres = _fresh_postgres(server, request.getfixturevalue("_postgres_template"))
    yield [f"sqlite+aiosqlite:///{path}", next(postgres)]
    postgres.close()


@pytest.fixture
async def both_stores(both_urls: list[str], llm: LLMClient) -> AsyncIterator[list[FactStore]]:
    engines = [create_engine(url) for url in both_urls]
    yield [
        FactStore(make_sessionmaker(e), llm, engine=e, settings=fact_settings()) for e in engines
    ]
    for e in engines:
        await e.dispose()


@pytest.mark.postgres
async def test_sqlite_and_postgres_give_the_same_top_k(
    both_stores: list[FactStore], scripted: ScriptedOpenAI
) -> None:
    rng = random.Random(7)
    facts: list[dict[str, Any]] = [
        fact("User mentions " + " ".join(rng.sample(WORDS, 3))) for _ in range(60)
    ]
    queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(15)]
    answers = []
    for store in both_stores:
        await seed(store, scripted, *facts)
        answers.append(
            [
                [f.text for f in await store.search(q, AGENT, USER, limit=5, threshold=0.2)]
                for q in queries
            ]
        )
    assert answers[0] == answers[1]
    assert sum(len(found) for found in answers[0]) > 40  # the queries do find things


async def test_writes_by_another_process_reach_the_next_search(
    store: FactStore,
    scripted: ScriptedOpenAI,
    sessions: async_sessionmaker[AsyncSession],
    engine: AsyncEngine,
    llm: LLMClient,
) -> None:
    (tea,) = await seed(store, scripted, fact("User likes tea"))
    assert [f.text for f in await store.search("tea", AGENT, USER)] == ["User likes tea"]
    elsewhere = FactStore(sessions, llm, engine=engine, settings=fact_settings())
    await elsewhere.apply(
        [
            {"op": "add", "text": "User likes green tea", "categories": ["drinks", "tea"]},
            {"op": "delete", "id": tea},
        ],
        AGENT,
        USER,
    )
    assert [f.text for f in await store.search("tea", AGENT, USER)] == ["User likes green tea"]


async def test_a_word_with_sharp_s_is_found_by_its_exact_spelling(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    await seed(store, scripted, fact("User lives on Hauptstraße 5"), fact("User likes tea"))
    found = await store.search("Hauptstraße", AGENT, USER, threshold=0.99)  # keywords only
    assert [f.text for f in found] == ["User lives on Hauptstraße 5"]


async def test_a_search_on_a_snapshot_older_than_a_write_does_not_hide_that_write_later(
    store: FactStore,
    sessions: async_sessionmaker[AsyncSession],
    engine: AsyncEngine,
    llm: LLMClient,
) -> None:
    # Searches read beside the writer, each on its own snapshot (SQLite): one that
    # began before this store's write and read the scope's vectors after it must not
    # leave the store's memory of them without that write.
    elsewhere = FactStore(sessions, llm, engine=engine, settings=fact_settings())
    await elsewhere.apply([{"op": "add", "text": "User likes tea"}], AGENT, USER)
    [query] = await llm.embed_float32(["tea"])
    async with store.reads() as older, older.begin():
        await older.execute(text('SELECT count(*) FROM "Fact"'))  # its snapshot begins
        await store.apply([{"op": "add", "text": "User likes green tea"}], AGENT, USER)
        wanted = Nearest((AGENT, USER), query / np.linalg.norm(query), llm.embedding_model, 10, 0.0)
        await store.storage.vector_candidates(older, wanted)
    # No word in common: only the vectors can find them (any similarity counts).
    found = await store.search("coffee", AGENT, USER, threshold=-1.0)
    assert sorted(f.text for f in found) == ["User likes green tea", "User likes tea"]
