"""PostgreSQL keeps a fact's embedding whole in its row, uncompressed, even one that
compresses well: comparing it then needs no decompression (migration 0011)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.db.engine import make_sessionmaker
from liz.db.migrate import upgrade
from liz.facts.domain import ItemStatus
from liz.facts.store import FactStore
from liz.llm import LLMClient
from liz.testing.openai_server import ScriptedOpenAI
from tests.fixtures.db import postgres_database_url
from tests.fixtures.facts import AGENT, USER, fact_settings
from tests.test_facts_pg_indexing import _downgrade, steps_done

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

DIMENSION = 1536  # 6 kB a vector: past the 2 kB at which PostgreSQL compresses a row
SISTER = "User's sister Mia lives in Oslo"
COUSIN = "User's cousin Ben bakes bread in Lisbon"


database_url = pytest.fixture(postgres_database_url, name="database_url")


@pytest.fixture
async def wide_llm() -> AsyncIterator[LLMClient]:
    """Bag-of-words embeddings of 1536 dimensions: a few words, the rest zeros."""
    client = ScriptedOpenAI(embedding_dim=DIMENSION).llm_client()
    try:
        yield client
    finally:
        await client.close()


async def add(engine: AsyncEngine, llm: LLMClient, fact_text: str) -> FactStore:
    store = FactStore(make_sessionmaker(engine), llm, engine=engine, settings=fact_settings())
    batch = [{"op": "add", "text": fact_text, "categories": ["family", "places"]}]
    (result,) = await store.apply(batch, AGENT, USER)
    assert result.status is ItemStatus.APPLIED, result
    await steps_done(store.storage)
    return store


async def stored_form(engine: AsyncEngine, fact_text: str) -> tuple[str | None, int]:
    """How PostgreSQL holds the fact's embedding: its compression method, if any, and
    its size as stored."""
    async with engine.connect() as connection:
        row = (
            await connection.execute(
                text(
                    "SELECT pg_column_compression(embedding), pg_column_size(embedding) "
                    'FROM "Fact" WHERE text = :text'
                ),
                {"text": fact_text},
            )
        ).one()
    return row[0], row[1]


async def test_an_embedding_that_compresses_well_is_stored_whole(
    database_url: str, engine: AsyncEngine, wide_llm: LLMClient
) -> None:
    store = await add(engine, wide_llm, SISTER)
    assert await stored_form(engine, SISTER) == (None, DIMENSION * 4 + 8)
    found = await store.search("where does my sister live?", AGENT, USER)
    assert [one.text for one in found] == [SISTER]

    # Migrated down, PostgreSQL compresses such a row again; back up, whole again.
    await engine.dispose()
    _downgrade(database_url, "0010_fact_vector_pending")
    await add(engine, wide_llm, COUSIN)
    compression, size = await stored_form(engine, COUSIN)
    assert compression is not None and size < DIMENSION
    await engine.dispose()
    upgrade(database_url)
    store = await add(engine, wide_llm, "User's brother Tom lives in Kyoto")
    assert (await stored_form(engine, "User's brother Tom lives in Kyoto"))[0] is None
    found = await store.search("my cousin's bread", AGENT, USER)
    assert found[0].text == COUSIN
