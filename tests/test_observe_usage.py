"""The Usage table against the scripted model's reported usage: GET /usage and `liz usage`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest
from typer.testing import CliRunner

from liz.agent import BaseAgent
from liz.cli import app as cli
from liz.prompts.tokens import estimate_tokens
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from liz.testing.openai_wire import as_content
from liz.testing.prompt_cache import prompt_tokens
from liz.testing.scripted_model import answer
from tests.test_edge_auth import API_KEY, bearer, message
from tests.test_edge_traces import guarded_client

pytestmark = pytest.mark.anyio
KEY = bearer(API_KEY)


@pytest.fixture
def prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"scripted-large": {"input": 1.0, "output": 2.0}}}))
    return path


@pytest.fixture
async def guarded(
    runtime: Runtime, agent: BaseAgent, scripted: ScriptedOpenAI, prices: Path
) -> AsyncIterator[httpx.AsyncClient]:
    scripted.respond_with(answer)
    async for client in guarded_client(runtime, agent, liz_price_table=str(prices)):
        yield client


def reported(scripted: ScriptedOpenAI) -> tuple[int, int]:
    """The tokens the scripted model reported for its chat answers: in and out."""
    chats = scripted.chat_requests
    return (
        sum(prompt_tokens(r.body) for r in chats),
        sum(estimate_tokens(as_content(answer(r))) for r in chats),
    )


async def test_usage_totals_are_the_models_reported_usage_streamed_or_not(
    guarded: httpx.AsyncClient, scripted: ScriptedOpenAI
) -> None:
    await guarded.post("/agent/input", json=message("ann"), headers=KEY)
    streamed = await guarded.post(
        "/agent/input", json=message("ann"), headers={**KEY, "Accept": "text/event-stream"}
    )
    assert streamed.status_code == 200
    await guarded.post("/agent/input", json=message("bob"), headers=KEY)
    tokens_in, tokens_out = reported(scripted)

    response = await guarded.get("/usage", params={"by": "user"}, headers=KEY)
    assert response.status_code == 200
    lines = {line["key"]: line for line in response.json()["usage"]}
    assert set(lines) == {"ann", "bob"}
    assert lines["ann"]["calls"] == 2 and lines["bob"]["calls"] == 1
    assert sum(line["inputTokens"] for line in lines.values()) == tokens_in
    assert sum(line["outputTokens"] for line in lines.values()) == tokens_out
    ann = lines["ann"]
    assert ann["costUsd"] == pytest.approx(
        (ann["inputTokens"] * 1.0 + ann["outputTokens"] * 2.0) / 1_000_000
    )
    assert ann["unpricedModels"] == []


async def test_usage_refuses_an_unknown_grouping_and_needs_the_key(
    guarded: httpx.AsyncClient,
) -> None:
    response = await guarded.get("/usage", params={"by": "room"}, headers=KEY)
    assert response.status_code == 400
    assert "agent, user, day, model" in response.json()["error"]
    bad_day = await guarded.get("/usage", params={"since": "yesterday"}, headers=KEY)
    assert bad_day.status_code == 400 and "YYYY-MM-DD" in bad_day.json()["error"]
    assert (await guarded.get("/usage")).status_code == 401


async def test_liz_usage_prints_tokens_and_cost_per_agent(
    guarded: httpx.AsyncClient,
    scripted: ScriptedOpenAI,
    runtime: Runtime,
    prices: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await guarded.post("/agent/input", json=message("ann"), headers=KEY)
    tokens_in, tokens_out = reported(scripted)
    monkeypatch.setenv("DATABASE_URL", runtime.settings.database_url)
    monkeypatch.setenv("LIZ_PRICE_TABLE", str(prices))
    result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli, ["usage"]))
    assert result.exit_code == 0, result.output
    (row,) = [line for line in result.output.splitlines() if line.startswith("business-advisor")]
    cost = (tokens_in * 1.0 + tokens_out * 2.0) / 1_000_000
    expected = ["business-advisor", "1", str(tokens_in), "0", "0.0", str(tokens_out), f"{cost:.4f}"]
    assert row.split() == expected
    by_nothing = await anyio.to_thread.run_sync(
        lambda: CliRunner().invoke(cli, ["usage", "--by", "room"])
    )
    assert by_nothing.exit_code != 0 and "agent, user, day, model" in by_nothing.output
