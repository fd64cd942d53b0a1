"""The facts routes under /agents/{agentId}/users/{userId}/facts, through the real app."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from liz.agent import BaseAgent
from liz.db.engine import create_engine, make_sessionmaker
from liz.facts.store import FactStore
from liz.http import create_app
from liz.llm import LLMClient
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from tests.fixtures.facts import AGENT, USER, fact, seed

pytestmark = pytest.mark.anyio
FACTS = f"/agents/{AGENT}/users/{USER}/facts"


@pytest.fixture
async def client(runtime: Runtime, store: FactStore) -> AsyncIterator[httpx.AsyncClient]:
    from liz.character import Character

    runtime.facts = store
    agents = {AGENT: BaseAgent(Character(agent_id=AGENT, name="Ada"))}
    app = create_app(build_framework(runtime), agents)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        yield http


async def test_list_search_get_history_and_delete(
    client: httpx.AsyncClient, store: FactStore, scripted: ScriptedOpenAI
) -> None:
    tea, _ = await seed(store, scripted, fact("User likes tea"), fact("User's code is 4711"))
    listed = await client.get(FACTS)
    assert listed.status_code == 200
    assert sorted(f["text"] for f in listed.json()["facts"]) == [
        "User likes tea",
        "User's code is 4711",
    ]
    found = await client.get(FACTS, params={"q": "4711", "limit": "1"})
    assert [f["text"] for f in found.json()["facts"]] == ["User's code is 4711"]
    one = await client.get(f"{FACTS}/{tea}")
    assert one.json()["text"] == "User likes tea" and one.json()["retiredAt"] is None
    deleted = await client.delete(f"{FACTS}/{tea}")
    assert deleted.status_code == 200 and deleted.json()["retiredAt"] is not None
    history = (await client.get(f"{FACTS}/{tea}/history")).json()["history"]
    assert [h["event"] for h in history] == ["ADD", "DELETE"]
    assert [f["text"] for f in (await client.get(FACTS)).json()["facts"]] == ["User's code is 4711"]
    with_retired = await client.get(FACTS, params={"includeRetired": "true"})
    assert len(with_retired.json()["facts"]) == 2


async def test_unknown_agent_fact_or_other_users_fact_is_404(
    client: httpx.AsyncClient, store: FactStore, scripted: ScriptedOpenAI
) -> None:
    (theirs,) = await seed(store, scripted, fact("User likes tea"), user="user-2")
    assert (await client.get(f"/agents/nobody/users/{USER}/facts")).status_code == 404
    for response in (
        await client.get(f"{FACTS}/{theirs}"),
        await client.get(f"{FACTS}/{theirs}/history"),
        await client.delete(f"{FACTS}/{theirs}"),
    ):
        assert response.status_code == 404
        assert "error" in response.json()
    assert (await store.get(theirs, AGENT, "user-2")) is not None
    assert (await store.get(theirs, AGENT, "user-2")).active  # type: ignore[union-attr]


async def test_bad_parameters_are_400_with_the_reason(client: httpx.AsyncClient) -> None:
    empty = await client.get(FACTS, params={"q": " "})
    assert empty.status_code == 400 and "q is empty" in empty.json()["error"]
    bad_limit = await client.get(FACTS, params={"limit": "lots"})
    assert bad_limit.status_code == 400 and "limit" in bad_limit.json()["error"]
    superscript = await client.get(FACTS, params={"limit": "\u00b2"})
    assert superscript.status_code == 400 and "limit" in superscript.json()["error"]


async def test_a_database_failure_is_json_with_the_reason(
    client: httpx.AsyncClient, runtime: Runtime, llm: LLMClient, empty_database_url: str
) -> None:
    engine = create_engine(empty_database_url)
    try:
        runtime.facts = FactStore(make_sessionmaker(engine), llm, engine=engine)
        for response in (
            await client.get(FACTS),
            await client.get(f"{FACTS}/some-id"),
            await client.get(f"{FACTS}/some-id/history"),
        ):
            assert response.status_code == 503
            assert "database" in response.json()["error"]
    finally:
        await engine.dispose()
