"""User tokens must expire as numbers and within a year; every answer forbids content sniffing."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jwt
import pytest

from liz.agent import BaseAgent
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from tests.test_edge_auth import SECRET, bearer, memory_count, message, token
from tests.test_edge_traces import guarded_client

pytestmark = pytest.mark.anyio


@pytest.fixture
async def guarded(runtime: Runtime, agent: BaseAgent) -> AsyncIterator[httpx.AsyncClient]:
    async for client in guarded_client(runtime, agent):
        yield client


@pytest.mark.parametrize(
    ("exp", "error"),
    [
        (str(int(time.time()) + 600), "exp must be a number"),
        (253402300799, "more than a year away"),  # 9999-12-31
        (int(time.time()) + 400 * 24 * 3600, "more than a year away"),
    ],
)
async def test_a_token_whose_expiry_is_a_string_or_far_away_is_refused(
    guarded: httpx.AsyncClient, runtime: Runtime, exp: Any, error: str
) -> None:
    forged = jwt.encode({"sub": "ann", "exp": exp}, SECRET, algorithm="HS256")
    response = await guarded.post("/agent/input", json=message(), headers=bearer(forged))
    assert response.status_code == 401
    assert error in response.json()["error"]
    assert await memory_count(runtime) == 0


async def test_a_token_for_some_months_is_fine(
    guarded: httpx.AsyncClient, scripted: ScriptedOpenAI
) -> None:
    scripted.reply("Hi.")
    months = token(exp=int(time.time()) + 200 * 24 * 3600)
    response = await guarded.post("/agent/input", json=message(), headers=bearer(months))
    assert response.status_code == 200


async def test_every_answer_forbids_sniffing(client: httpx.AsyncClient) -> None:
    for response in (
        await client.get("/agents"),
        await client.get("/health"),
        await client.get("/nowhere"),
        await client.post("/agent/input", json={"input": {}}),
        await client.get("/openapi.json"),
    ):
        assert response.headers["x-content-type-options"] == "nosniff", response.url
