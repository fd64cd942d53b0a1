"""The HTTP endpoint on SQLite and PostgreSQL: replies, and clear 4xx for every bad body."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import func, select

from liz.agent import BaseAgent
from liz.db.tables import MemoryRecord
from liz.http import create_app
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI

pytestmark = pytest.mark.anyio


async def memory_count(runtime: Runtime) -> int:
    async with runtime.sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(MemoryRecord)) or 0)


async def test_a_message_gets_the_agents_reply(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    scripted.reply("Know your margins first.")
    body = {"input": {"agentId": "business-advisor", "userId": "u1", "text": "Where to start?"}}
    response = await client.post("/agent/input", json=body)
    assert response.status_code == 200
    assert response.json() == {
        "text": "Know your margins first.",
        "route": "conversation",
        "agentId": "business-advisor",
        "userId": "u1",
        "roomId": "business-advisor:u1",
    }
    assert await memory_count(runtime) == 2


BAD_BODIES: list[tuple[Any, int, str]] = [
    (b"{not json", 400, "request body is not valid JSON"),
    (b"[1, 2]", 400, 'must be a JSON object like {"input"'),
    ({"text": "no input wrapper"}, 400, 'must be a JSON object like {"input"'),
    ({"input": "a string"}, 400, 'must be a JSON object like {"input"'),
    ({"input": {"agentId": "business-advisor", "text": "hi"}}, 400, "input.userId: Field required"),
    ({"input": {"userId": "u1", "text": "hi"}}, 400, "input.agentId: Field required"),
    ({"input": {"agentId": "business-advisor", "userId": 7, "text": "hi"}}, 400, "input.userId"),
    (
        {"input": {"agentId": "business-advisor", "userId": "u1", "text": "hi", "type": "video"}},
        400,
        "input.type",
    ),
    (
        {"input": {"agentId": "business-advisor", "userId": "u1", "imageUrls": "x", "text": "hi"}},
        400,
        "input.imageUrls",
    ),
    ({"input": {"agentId": "business-advisor", "userId": "u1"}}, 400, "text is required"),
    (
        {
            "input": {
                "agentId": "business-advisor",
                "userId": "u1",
                "type": "text_and_image",
                "text": "a",
            }
        },
        400,
        "imageUrls must hold at least one URL",
    ),
    (
        {
            "input": {
                "agentId": "business-advisor",
                "userId": "u1",
                "text": "hi",
                "source": "INTERNAL",
            }
        },
        400,
        "input.source cannot be set over HTTP",
    ),
    (
        {
            "input": {
                "agentId": "business-advisor",
                "userId": "u1",
                "text": "t",
                "route": "create_new_tweet",
            }
        },
        400,
        "input.route cannot be set over HTTP",
    ),
    ({"input": {"agentId": "nobody", "userId": "u1", "text": "hi"}}, 404, "unknown agent 'nobody'"),
]


@pytest.mark.parametrize(("body", "status", "message"), BAD_BODIES)
async def test_a_bad_body_gets_a_clear_error_and_stores_nothing(
    client: httpx.AsyncClient,
    scripted: ScriptedOpenAI,
    runtime: Runtime,
    body: Any,
    status: int,
    message: str,
) -> None:
    if isinstance(body, bytes):
        response = await client.post(
            "/agent/input", content=body, headers={"content-type": "application/json"}
        )
    else:
        response = await client.post("/agent/input", json=body)
    assert response.status_code == status
    assert message in response.json()["error"]
    assert await memory_count(runtime) == 0
    assert scripted.requests == []


async def test_an_unknown_path_answers_json(client: httpx.AsyncClient) -> None:
    response = await client.get("/nowhere")
    assert response.status_code == 404
    assert "error" in response.json()


async def test_agents_are_listed_with_their_routes(client: httpx.AsyncClient) -> None:
    response = await client.get("/agents")
    agents = response.json()["agents"]
    assert [a["agentId"] for a in agents] == ["business-advisor"]
    routes = {r["name"]: r["internalOnly"] for r in agents[0]["routes"]}
    assert routes == {"conversation": False, "create_new_tweet": True}


async def test_health_reports_database_and_llm(client: httpx.AsyncClient) -> None:
    response = await client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "llm": "configured"}


@pytest.fixture
async def unconfigured_client(
    runtime: Runtime, agent: BaseAgent
) -> AsyncIterator[httpx.AsyncClient]:
    bare = Runtime(settings=runtime.settings, engine=runtime.engine, llm_client=None)
    app = create_app(build_framework(bare), {agent.agent_id: agent})
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://localhost"
    ) as c:
        yield c


async def test_without_an_llm_the_server_answers_503_naming_the_settings(
    unconfigured_client: httpx.AsyncClient, runtime: Runtime
) -> None:
    body = {"input": {"agentId": "business-advisor", "userId": "u1", "text": "hi"}}
    response = await unconfigured_client.post("/agent/input", json=body)
    assert response.status_code == 503
    error = response.json()["error"]
    assert "OPENAI_API_KEY" in error and "OPENAI_BASE_URL" in error
    assert await memory_count(runtime) == 0
    health = await unconfigured_client.get("/health")
    assert health.json()["llm"] == "not configured"
    assert (await unconfigured_client.get("/agents")).status_code == 200


async def test_an_api_key_guards_everything_but_health(
    runtime: Runtime, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    settings = runtime.settings.model_copy(update={"liz_api_key": SecretStr("s3cret")})
    guarded = Runtime(settings=settings, engine=runtime.engine, llm_client=runtime.llm_client)
    app = create_app(build_framework(guarded), {agent.agent_id: agent})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        body = {"input": {"agentId": "business-advisor", "userId": "u1", "text": "hi"}}
        refused = await client.post("/agent/input", json=body)
        assert refused.status_code == 401
        assert "Authorization: Bearer" in refused.json()["error"]
        assert (
            await client.get("/agents", headers={"authorization": "Bearer nope"})
        ).status_code == 401
        assert (await client.get("/health")).status_code == 200
        scripted.reply("Welcome.")
        ok = await client.post(
            "/agent/input", json=body, headers={"authorization": "Bearer s3cret"}
        )
        assert ok.status_code == 200 and ok.json()["text"] == "Welcome."
    assert await memory_count(runtime) == 2


def parse_events(body: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in body.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


async def test_a_reply_streams_as_server_sent_events(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    scripted.reply("Count the cash before you count the customers.")
    body = {"input": {"agentId": "business-advisor", "userId": "u1", "text": "Advice?"}}
    response = await client.post("/agent/input", json=body, headers={"accept": "text/event-stream"})
    assert response.headers["content-type"].startswith("text/event-stream")
    events = parse_events(response.text)
    tokens = [data["text"] for event, data in events if event == "token"]
    assert len(tokens) > 1
    assert "".join(tokens) == "Count the cash before you count the customers."
    assert events[-1] == (
        "reply",
        {
            "text": "Count the cash before you count the customers.",
            "route": "conversation",
            "agentId": "business-advisor",
            "userId": "u1",
            "roomId": "business-advisor:u1",
        },
    )
    assert await memory_count(runtime) == 2


async def test_a_failed_stream_ends_with_an_error_event(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    scripted.fail_next(500, times=10)
    body = {"input": {"agentId": "business-advisor", "userId": "u1", "text": "Advice?"}}
    response = await client.post("/agent/input", json=body, headers={"accept": "text/event-stream"})
    event, data = parse_events(response.text)[-1]
    assert event == "error" and data["status"] in (502, 503)
    assert await memory_count(runtime) == 1  # the user's message is kept
