"""SQLite's vector search in a scope large enough for the sign-bit first pass
(liz.facts.sqlite.cache): it finds what an exact scan finds, before and after
writes patch the scope's cached vectors."""

from __future__ import annotations

import functools
import random
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from liz.db.engine import create_engine, make_sessionmaker
from liz.facts.storage import Nearest
from liz.facts.store import FactStore
from liz.testing.openai_server import ScriptedOpenAI, scripted_embedding
from tests.fixtures.facts import AGENT, USER, fact_settings

pytestmark = pytest.mark.anyio

DIMENSION = 1536  # long enough for the bit pass
FACTS = 3000  # 3000 x 1536 numbers: past the size scanned whole
WORDS = [f"w{number}" for number in range(400)]


@pytest.fixture
async def large_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[FactStore, list[str]]]:
    path = tmp_path / "liz.db"
    shutil.copyfile(request.getfixturevalue("_sqlite_template"), path)
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    server = ScriptedOpenAI(embedding_dim=DIMENSION)
    with server.serve():
        llm = server.llm_client()
        store = FactStore(make_sessionmaker(engine), llm, engine=engine, settings=fact_settings())
        rng = random.Random(11)
        texts = sorted({" ".join(rng.sample(WORDS, 4)) for _ in range(FACTS)})
        await store.apply([{"op": "add", "text": text} for text in texts], AGENT, USER)
        try:
            yield store, texts
        finally:
            await llm.close()
            await engine.dispose()


@functools.cache
def embedding(text: str) -> tuple[float, ...]:
    return tuple(scripted_embedding(text, DIMENSION))


def exact_similarities(texts: list[str], query: str) -> dict[str, float]:
    vectors = np.array([embedding(text) for text in texts], dtype=np.float32)
    target = np.array(embedding(query), dtype=np.float32)
    return {
        text: round(float(score), 6) for text, score in zip(texts, vectors @ target, strict=True)
    }


async def best_by_vector(store: FactStore, query: str, limit: int) -> list[tuple[str, float]]:
    (vector,) = await store.llm.embed_float32([query])
    async with store.reads() as session:
        unit = vector / np.linalg.norm(vector)
        wanted = Nearest((AGENT, USER), unit, store.llm.embedding_model, limit, -1.0)
        found = await store.storage.vector_candidates(session, wanted)
        texts = {fact.id: fact.text for fact in await store.list(AGENT, USER, limit=FACTS + 10)}
    return [(texts[fact_id], similarity) for fact_id, similarity, _ in found]


def assert_exact_prefix(found: list[tuple[str, float]], texts: list[str], query: str) -> None:
    """``found`` is the start of the exact ranking (ties at the cut are left out, see
    protocol.deterministic_top), each fact with its exact similarity."""
    exact = exact_similarities(texts, query)
    ranked = sorted(exact.values(), reverse=True)
    assert [similarity for _, similarity in found] == pytest.approx(ranked[: len(found)], abs=2e-6)
    assert all(exact[text] == pytest.approx(similarity, abs=2e-6) for text, similarity in found)


async def test_a_large_scope_finds_the_facts_an_exact_scan_finds(
    large_store: tuple[FactStore, list[str]],
) -> None:
    store, texts = large_store
    rng = random.Random(5)
    found_any = 0
    for _ in range(12):
        query = " ".join(rng.sample(WORDS, 3))
        found = await best_by_vector(store, query, limit=10)
        assert_exact_prefix(found, texts, query)
        found_any += len(found)
    assert found_any > 12


async def test_a_large_scope_finds_added_facts_and_forgets_deleted_ones(
    large_store: tuple[FactStore, list[str]],
) -> None:
    store, texts = large_store
    query = "w1 w2 w3 w4"
    await store.apply([{"op": "add", "text": query}], AGENT, USER)
    (best, similarity), *_ = await best_by_vector(store, query, limit=5)
    assert (best, similarity) == (query, pytest.approx(1.0))
    # Delete the closest facts: rows in the middle of the cached matrix, so later rows
    # move into their places.
    ids = {f.text: f.id for f in await store.list(AGENT, USER, limit=FACTS + 10)}
    similarities = exact_similarities(texts, query)
    deleted = [query, *sorted(texts, key=lambda text: -similarities[text])[:6]]
    for text in deleted:
        await store.delete(ids[text], AGENT, USER)
    remaining = [text for text in texts if text not in deleted]
    rng = random.Random(8)
    found_any = 0
    for other in [query, *(" ".join(rng.sample(WORDS, 3)) for _ in range(11))]:
        found = await best_by_vector(store, other, limit=10)
        assert not {text for text, _ in found} & set(deleted)
        assert_exact_prefix(found, remaining, other)
        found_any += len(found)
    assert found_any > 12


async def test_a_fact_moved_within_the_cached_scope_is_still_found(
    large_store: tuple[FactStore, list[str]],
) -> None:
    # The newest fact fills the row a deleted one leaves, and must be found there.
    store, texts = large_store
    query = "w7 w8 w9 w10"
    await store.apply([{"op": "add", "text": query}], AGENT, USER)
    similarities = exact_similarities(texts, query)
    unrelated = [text for text in texts if similarities[text] == 0.0]
    ids = {f.text: f.id for f in await store.list(AGENT, USER, limit=FACTS + 10)}
    for text in unrelated[-20:]:
        await store.delete(ids[text], AGENT, USER)
        (best, similarity), *_ = await best_by_vector(store, query, limit=5)
        assert (best, similarity) == (query, pytest.approx(1.0))
