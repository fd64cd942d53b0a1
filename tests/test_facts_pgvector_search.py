"""PostgreSQL's vector search: small scopes compared in full, large ones through HNSW,
and both find the facts an exact comparison finds, whatever the planner's statistics say."""

from __future__ import annotations

import random
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.db.engine import make_sessionmaker
from liz.facts.domain import Candidate, EmbeddingMismatchError
from liz.facts.postgres import PostgresFacts, nearest
from liz.facts.storage import Nearest
from liz.facts.store import FactStore
from liz.facts.vectors import embed
from liz.llm import LLMClient
from liz.testing.openai_server import ScriptedOpenAI
from tests.fixtures.db import postgres_database_url
from tests.fixtures.facts import AGENT, USER, fact, fact_settings, seed

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

_VOCABULARY = """tea coffee chess piano berlin paris nurse teacher cat dog garden bicycle jazz
rock hiking sailing pasta sushi python rust ada bob marathon winter lisbon oslo kyoto violin
tennis climbing bread cheese figs ramen pilot baker chef lawyer farmer dentist"""
WORDS = _VOCABULARY.split()
ALWAYS_EXACT = 10**12  # components: every scope is compared in full


database_url = pytest.fixture(postgres_database_url, name="database_url")


def texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    found: set[str] = set()
    while len(found) < count:
        found.add("User mentions " + " ".join(rng.sample(WORDS, 4)))
    return sorted(found)


async def fill(engine: AsyncEngine, llm: LLMClient, user: str, count: int, seed: int) -> None:
    store = FactStore(make_sessionmaker(engine), llm, engine=engine, settings=fact_settings())
    batch: list[dict[str, Any]] = [
        {"op": "add", "text": fact_text, "categories": ["test", "bulk"]}
        for fact_text in texts(count, seed)
    ]
    await store.apply(batch, AGENT, user)
    await store.close()  # its indexing step, if any, ends here


async def candidates(
    engine: AsyncEngine,
    index: PostgresFacts,
    llm: LLMClient,
    query: str,
    *,
    settings: str = "",
    user: str = USER,
) -> list[Candidate]:
    (vector,) = await embed(llm, [query])
    await index.prepare_dimension(int(vector.size))
    async with make_sessionmaker(engine)() as session, session.begin():
        if settings:
            await session.execute(text(settings))
        wanted = Nearest((AGENT, user), vector, llm.embedding_model, 10, 0.0)
        return await index.vector_candidates(session, wanted)


QUERIES = ["tea and chess", "a nurse in lisbon", "jazz piano", "sushi ramen", "rust python"]


async def test_a_scope_past_the_exact_size_finds_what_comparing_every_fact_finds(
    engine: AsyncEngine, llm: LLMClient
) -> None:
    await fill(engine, llm, USER, 400, seed=1)
    dimension = len((await embed(llm, ["x"]))[0])
    through_graph = PostgresFacts(engine, exact_components=dimension * 50)
    exact = PostgresFacts(engine, exact_components=ALWAYS_EXACT)
    for query in QUERIES:
        found = await candidates(engine, through_graph, llm, query)
        assert found == await candidates(engine, exact, llm, query)
        assert found, query


async def test_a_user_with_few_facts_among_many_others_gets_their_best_ones(
    engine: AsyncEngine, llm: LLMClient
) -> None:
    # Past the exact size (made tiny here), in a table that is nearly all someone else's
    # facts: the graph's first candidates hold few of this user's, and the walk gives up
    # at once (max_scan_tuples, made tiny too). The search then compares all of theirs.
    await fill(engine, llm, "someone-else", 6000, seed=2)
    await fill(engine, llm, USER, 30, seed=3)
    await assert_a_walk_that_gives_up_finds_what_comparing_all_finds(engine, llm)


async def assert_a_walk_that_gives_up_finds_what_comparing_all_finds(
    engine: AsyncEngine, llm: LLMClient
) -> None:
    """USER's scope, past a tiny exact size, searched through a graph whose walk gives
    up at once (max_scan_tuples, made tiny too), finds what comparing all of it finds."""
    async with engine.connect() as connection:
        await connection.execute(text('ANALYZE "Fact"'))
    dimension = len((await embed(llm, ["x"]))[0])
    through_graph = PostgresFacts(engine, exact_components=dimension * 5)
    exact = PostgresFacts(engine, exact_components=ALWAYS_EXACT)
    for query in QUERIES:
        found = await candidates(
            engine, through_graph, llm, query, settings="SET LOCAL hnsw.max_scan_tuples = 1"
        )
        assert found == await candidates(engine, exact, llm, query)
        assert found, query


async def test_the_graph_and_the_facts_waiting_for_it_cut_ties_as_one_exact_list() -> None:
    # A fact at 0.9 and twenty tied at 0.5; the search asks for 10 of them, reading 18.
    # One exact list holds 0.9 and 17 of the tie, which may go on past it: the tie is
    # left out. So must it be when the graph holds 0.9 and 9 of the tie and the facts
    # waiting for it (pending) 11 more, or a search would change when indexing ran.
    tied = [(f"tied-{number:02}", 0.5, f"hash-{number:02}") for number in range(20)]
    best = ("best", 0.9, "hash-best")
    one_list = nearest([[best, *tied[:17]]], 18, limit=10, threshold=0.0)
    graph_and_pending = nearest([[best, *tied[:9]], tied[9:]], 18, limit=10, threshold=0.0)
    assert one_list == graph_and_pending == [best]


async def test_a_model_whose_dimension_changes_between_searches_is_refused(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    # The second search plans with the dimension the first one saw, before its own
    # embedding arrives; the embedding's other dimension is still noticed and refused.
    await seed(store, scripted, fact("User likes tea"))
    assert [found.text for found in await store.search("tea", AGENT, USER)] == ["User likes tea"]
    scripted.embedding_dim = 96
    with pytest.raises(EmbeddingMismatchError, match="dimension 64"):
        await store.search("tea", AGENT, USER)
