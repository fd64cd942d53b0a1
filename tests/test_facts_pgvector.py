"""PostgreSQL without pgvector: migrations still run; the facts store says how to fix it."""

from __future__ import annotations

import pytest

from liz.config import Settings
from liz.db.engine import create_engine, make_sessionmaker
from liz.db.migrate import upgrade_async
from liz.errors import StorageError
from liz.facts.store import FactStore
from liz.testing.openai_server import ScriptedOpenAI
from tests.fixtures.facts import AGENT, USER, fact_settings

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


async def test_without_pgvector_the_schema_migrates_and_the_store_explains_the_fix(
    plain_postgres_url: str, scripted: ScriptedOpenAI
) -> None:
    await upgrade_async(plain_postgres_url)
    engine = create_engine(plain_postgres_url)
    try:
        async with scripted.llm_client() as llm:
            store = FactStore(
                make_sessionmaker(engine), llm, engine=engine, settings=fact_settings()
            )
            with pytest.raises(StorageError, match="pgvector"):
                await store.check()
            with pytest.raises(StorageError, match="pgvector"):
                await store.add("I'm Ada", AGENT, USER)
            assert await store.list(AGENT, USER) == []
        assert scripted.chat_requests == []  # refused before any LLM call
    finally:
        await engine.dispose()


async def test_the_first_search_on_a_pool_of_one_connection_does_not_wait_for_a_second(
    database_url: str, scripted: ScriptedOpenAI
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("only PostgreSQL builds an index on its own connection")
    one = Settings(_env_file=None, db_pool_size=1, db_max_overflow=0, db_pool_timeout=2)  # type: ignore[call-arg]
    engine = create_engine(database_url, one)
    try:
        async with scripted.llm_client() as llm:
            store = FactStore(
                make_sessionmaker(engine), llm, engine=engine, settings=fact_settings()
            )
            assert await store.search("tea", AGENT, USER) == []
    finally:
        await engine.dispose()
