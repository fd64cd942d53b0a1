"""Recall over HTTP costs no embeddings request for a user who has no facts, and still
finds the facts another process learned for that user since."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.agent import BaseAgent
from liz.character import Character
from liz.db.engine import create_engine, make_sessionmaker
from liz.facts.store import FactStore
from liz.http import create_app
from liz.llm import LLMClient
from liz.routes import conversation
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.fixtures.facts import AGENT, USER, extraction, fact, fact_settings, seed

pytestmark = pytest.mark.anyio
QUESTION = "What should I drink this afternoon?"


def no_facts_said(request: RecordedRequest) -> Any:
    return extraction() if request.schema_name else "Water is always good."


def asked_to_embed(scripted: ScriptedOpenAI, text: str) -> int:
    return sum(text in request.inputs for request in scripted.embedding_requests)


@pytest.fixture
async def http(runtime: Runtime, store: FactStore) -> AsyncIterator[httpx.AsyncClient]:
    runtime.facts = store
    agent = BaseAgent(Character(agent_id=AGENT, name="Ada-bot", system="You are helpful."))
    agent.add_route(conversation)
    app = create_app(build_framework(runtime), {AGENT: agent})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        yield client


async def say(http: httpx.AsyncClient, runtime: Runtime, text: str) -> None:
    body = {"input": {"agentId": AGENT, "userId": USER, "text": text}}
    response = await http.post("/agent/input", json=body)
    assert response.status_code == 200, response.text
    await runtime.background.drain()  # learning, after the reply


async def test_a_user_without_facts_costs_no_embeddings_request(
    http: httpx.AsyncClient, runtime: Runtime, scripted: ScriptedOpenAI
) -> None:
    scripted.respond_with(no_facts_said)
    await say(http, runtime, "Hello there")
    await say(http, runtime, QUESTION)
    assert scripted.embedding_requests == []
    assert sum(r.schema_name is None for r in scripted.chat_requests) == 2  # both replied


async def test_facts_another_process_learned_are_recalled(
    http: httpx.AsyncClient,
    runtime: Runtime,
    scripted: ScriptedOpenAI,
    database_url: str,
    llm: LLMClient,
) -> None:
    scripted.respond_with(no_facts_said)
    await say(http, runtime, QUESTION)
    assert asked_to_embed(scripted, QUESTION) == 0

    other: AsyncEngine = create_engine(database_url)  # another process's engine and store
    try:
        elsewhere = FactStore(make_sessionmaker(other), llm, engine=other, settings=fact_settings())
        await seed(elsewhere, scripted, fact("User likes to drink green tea"))
        await elsewhere.close()
    finally:
        await other.dispose()

    scripted.respond_with(no_facts_said)
    await say(http, runtime, QUESTION)
    assert asked_to_embed(scripted, QUESTION) == 1
    reply_prompt = [r.prompt for r in scripted.chat_requests if r.schema_name is None][-1]
    assert "User likes to drink green tea" in reply_prompt.split("<USER_FACTS>")[1]
