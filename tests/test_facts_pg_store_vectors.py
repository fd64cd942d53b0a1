"""A small write on PostgreSQL sends each embedding in pgvector's binary form: the
vector stored is exactly the model's, searches find it, and the session's own reads
and writes of embeddings on the same pooled connections go on as before."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.facts.domain import ItemStatus
from liz.facts.store import FactStore
from liz.facts.tables import FactRecord
from liz.facts.vectors import embed
from liz.llm import LLMClient
from tests.fixtures.db import postgres_database_url
from tests.fixtures.facts import AGENT, USER

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


database_url = pytest.fixture(postgres_database_url, name="database_url")


async def stored_vectors(
    sessions: async_sessionmaker[AsyncSession],
) -> dict[str, np.ndarray]:
    """Every fact's embedding, read through the session (pgvector's SQLAlchemy type)."""
    async with sessions() as session:
        rows = (await session.execute(select(FactRecord.text, FactRecord.embedding))).all()
    return {text: np.asarray(vector, dtype=np.float32) for text, vector in rows}


async def test_a_fact_added_alone_keeps_the_models_vector_exactly(
    store: FactStore, sessions: async_sessionmaker[AsyncSession], llm: LLMClient
) -> None:
    text = "User repairs old radios on Sundays"
    (result,) = await store.apply(
        [{"op": "add", "text": text, "categories": ["radio", "x"]}], AGENT, USER
    )
    assert result.status is ItemStatus.APPLIED
    (expected,) = await embed(llm, [text])
    assert np.array_equal((await stored_vectors(sessions))[text], expected)
    (found,) = await store.search(text, AGENT, USER, limit=1)
    assert found.id == result.fact_id


async def test_an_updated_fact_keeps_its_new_vector_and_is_found_by_it(
    store: FactStore, sessions: async_sessionmaker[AsyncSession], llm: LLMClient
) -> None:
    (added,) = await store.apply(
        [{"op": "add", "text": "User keeps two goats", "categories": ["farm", "x"]}], AGENT, USER
    )
    assert added.fact_id is not None
    changed = "User keeps three goats and a donkey"
    updated = await store.update(added.fact_id, changed, AGENT, USER)
    assert updated.status is ItemStatus.APPLIED
    (expected,) = await embed(llm, [changed])
    assert np.array_equal((await stored_vectors(sessions))[changed], expected)
    (found,) = await store.search(changed, AGENT, USER, limit=1)
    assert (found.id, found.text) == (added.fact_id, changed)


async def test_bulk_writes_and_reads_through_the_session_work_after_small_writes(
    store: FactStore,
    sessions: async_sessionmaker[AsyncSession],
    llm: LLMClient,
) -> None:
    # Small writes first, on every connection the pool holds; then a bulk write (the
    # session's path) and reads of every vector, on those same connections.
    for number in range(3):
        await store.apply(
            [
                {
                    "op": "add",
                    "text": f"User sings in choir number {number}",
                    "categories": ["a", "b"],
                }
            ],
            AGENT,
            USER,
        )
    bulk = [f"User owns record number {number}" for number in range(150)]
    results = await store.apply(
        [{"op": "add", "text": text, "categories": ["music", "x"]} for text in bulk], AGENT, USER
    )
    assert {result.status for result in results} == {ItemStatus.APPLIED}
    vectors = await stored_vectors(sessions)
    assert len(vectors) == 153
    expected = await embed(llm, [bulk[0], "User sings in choir number 2"])
    assert np.array_equal(vectors[bulk[0]], expected[0])
    assert np.array_equal(vectors["User sings in choir number 2"], expected[1])
