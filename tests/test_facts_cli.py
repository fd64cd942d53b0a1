"""`liz facts list|search|history|reindex` against a real database and the scripted LLM."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from liz.cli.facts import facts_app
from liz.db.engine import create_engine, make_sessionmaker
from liz.facts.store import FactStore
from liz.testing.openai_server import ScriptedOpenAI
from tests.fixtures.facts import AGENT, USER, extraction, fact, fact_settings

runner = CliRunner()


@pytest.fixture
def served(scripted: ScriptedOpenAI) -> Iterator[str]:
    with scripted.serve() as base_url:
        yield base_url


def seed_facts(database_url: str, scripted: ScriptedOpenAI) -> list[str]:
    async def main() -> list[str]:
        engine = create_engine(database_url)
        try:
            async with scripted.llm_client(embedding_model="text-embedding-3-small") as llm:
                store = FactStore(
                    make_sessionmaker(engine), llm, engine=engine, settings=fact_settings()
                )
                scripted.reply(
                    extraction(fact("User's locker code is 4711"), fact("User likes sailing"))
                )
                return [e.fact_id for e in await store.add("seed", AGENT, USER)]
        finally:
            await engine.dispose()

    return asyncio.run(main())


def env(database_url: str, base_url: str, model: str = "text-embedding-3-small") -> dict[str, str]:
    return {
        "DATABASE_URL": database_url,
        "OPENAI_BASE_URL": base_url,
        "LIZ_EMBEDDING_MODEL": model,
        "OPENAI_API_KEY": "unused",
    }


def test_list_search_and_history(database_url: str, scripted: ScriptedOpenAI, served: str) -> None:
    code, _ = seed_facts(database_url, scripted)
    scope = ["--agent", AGENT, "--user", USER]
    listed = runner.invoke(facts_app, ["list", *scope], env=env(database_url, served))
    assert listed.exit_code == 0, listed.output
    assert "User's locker code is 4711" in listed.output and "User likes sailing" in listed.output
    found = runner.invoke(
        facts_app, ["search", "4711", *scope, "--limit", "1"], env=env(database_url, served)
    )
    assert found.exit_code == 0 and "4711" in found.output and "sailing" not in found.output
    history = runner.invoke(facts_app, ["history", code, *scope], env=env(database_url, served))
    assert (
        history.exit_code == 0 and "ADD" in history.output and "+ User's locker" in history.output
    )
    unknown = runner.invoke(facts_app, ["history", "nope", *scope], env=env(database_url, served))
    assert unknown.exit_code == 2 and "no fact 'nope'" in unknown.output


def test_reindex_after_changing_the_embedding_model(
    database_url: str, scripted: ScriptedOpenAI, served: str
) -> None:
    seed_facts(database_url, scripted)
    scope = ["--agent", AGENT, "--user", USER]
    newer = env(database_url, served, model="text-embedding-3-large")
    refused = runner.invoke(facts_app, ["search", "sailing", *scope], env=newer)
    assert refused.exit_code == 2 and "liz facts reindex" in refused.output
    reindexed = runner.invoke(facts_app, ["reindex", "--agent", AGENT], env=newer)
    assert reindexed.exit_code == 0 and "re-embedded 2 facts" in reindexed.output
    found = runner.invoke(facts_app, ["search", "sailing", *scope], env=newer)
    assert found.exit_code == 0 and "User likes sailing" in found.output
