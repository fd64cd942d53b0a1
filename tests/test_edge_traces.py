"""Traces go to the server key only, unless LIZ_TRACES_FOR_USERS lets user tokens have them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from liz.agent import BaseAgent
from liz.http import create_app
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from tests.test_edge_auth import API_KEY, SECRET, bearer, memory_count, message, token

pytestmark = pytest.mark.anyio


async def guarded_client(
    runtime: Runtime, agent: BaseAgent, **settings: Any
) -> AsyncIterator[httpx.AsyncClient]:
    update = {"liz_api_key": SecretStr(API_KEY), "liz_jwt_secret": SecretStr(SECRET), **settings}
    guarded = Runtime(
        settings=runtime.settings.model_copy(update=update),
        engine=runtime.engine,
        llm_client=runtime.llm_client,
    )
    app = create_app(build_framework(guarded), {agent.agent_id: agent})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        yield client


@pytest.fixture
async def guarded(runtime: Runtime, agent: BaseAgent) -> AsyncIterator[httpx.AsyncClient]:
    async for client in guarded_client(runtime, agent):
        yield client


@pytest.mark.parametrize("accept", ["application/json", "text/event-stream"])
async def test_a_user_token_gets_no_trace_and_nothing_is_stored(
    guarded: httpx.AsyncClient, runtime: Runtime, scripted: ScriptedOpenAI, accept: str
) -> None:
    scripted.reply("Hi.")
    response = await guarded.post(
        "/agent/input?trace=1",
        json=message(),
        headers={**bearer(token()), "Accept": accept},
    )
    assert response.status_code == 403
    assert "LIZ_TRACES_FOR_USERS" in response.json()["error"]
    assert "You are" not in response.text
    assert await memory_count(runtime) == 0


async def test_the_server_key_gets_the_trace(
    guarded: httpx.AsyncClient, scripted: ScriptedOpenAI
) -> None:
    scripted.reply("Hi.")
    response = await guarded.post("/agent/input?trace=1", json=message(), headers=bearer(API_KEY))
    assert response.status_code == 200
    assert response.json()["trace"]["llmCalls"]


async def test_a_user_token_without_trace_is_served(
    guarded: httpx.AsyncClient, scripted: ScriptedOpenAI
) -> None:
    scripted.reply("Hi.")
    response = await guarded.post("/agent/input", json=message(), headers=bearer(token()))
    assert response.status_code == 200
    assert "trace" not in response.json()


async def test_a_setting_lets_user_tokens_have_traces(
    runtime: Runtime, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    scripted.reply("Hi.")
    async for client in guarded_client(runtime, agent, liz_traces_for_users=True):
        response = await client.post(
            "/agent/input?trace=1", json=message(), headers=bearer(token())
        )
        assert response.status_code == 200
        assert response.json()["trace"]["llmCalls"]
