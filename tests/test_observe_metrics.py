"""GET /metrics after a known number of turns, parsed with prometheus-client's parser."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

from liz.agent import BaseAgent
from liz.learning_queue.tables import PENDING, LearningJobRecord
from liz.observe.metrics import exposition
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from liz.testing.prompt_cache import prompt_tokens
from liz.testing.scripted_model import answer
from tests.test_edge_auth import API_KEY, bearer, message
from tests.test_edge_traces import guarded_client
from tests.test_twitter_bot import World, world

__all__ = ["world"]

pytestmark = pytest.mark.anyio


@pytest.fixture
async def guarded(
    runtime: Runtime, agent: BaseAgent, scripted: ScriptedOpenAI
) -> AsyncIterator[httpx.AsyncClient]:
    scripted.respond_with(answer)
    async for client in guarded_client(runtime, agent):
        yield client


async def samples(client: httpx.AsyncClient, **headers: str) -> dict[tuple[str, Any], float]:
    response = await client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    found: dict[tuple[str, Any], float] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: dict[tuple[str, Any], float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_count_turns_llm_calls_and_tokens(
    guarded: httpx.AsyncClient, scripted: ScriptedOpenAI
) -> None:
    key = bearer(API_KEY)
    before = await samples(guarded, **key)
    for _ in range(3):
        response = await guarded.post("/agent/input", json=message("ann"), headers=key)
        assert response.status_code == 200
    after = await samples(guarded, **key)

    turn = {"agent": "business-advisor", "route": "conversation", "status": "ok"}
    assert value(after, "liz_turns_total", **turn) - value(before, "liz_turns_total", **turn) == 3
    count = "liz_turn_duration_seconds_count"
    agent = {"agent": "business-advisor"}
    assert value(after, count, **agent) - value(before, count, **agent) == 3
    call = {"model": "scripted-large", "purpose": "reply"}
    calls = value(after, "liz_llm_calls_total", **call) - value(
        before, "liz_llm_calls_total", **call
    )
    assert calls == 3
    # The tokens are the scripted model's reported usage (liz.testing.prompt_cache).
    replies = [r for r in scripted.chat_requests if r.body["model"] == "scripted-large"][-3:]
    prompt_words = sum(prompt_tokens(r.body) for r in replies)
    tokens_in = value(after, "liz_llm_tokens_total", **call, direction="input") - value(
        before, "liz_llm_tokens_total", **call, direction="input"
    )
    assert tokens_in == prompt_words


async def test_no_user_id_is_ever_a_label(guarded: httpx.AsyncClient) -> None:
    key = bearer(API_KEY)
    for user in ("user-aa1", "user-bb2"):
        await guarded.post("/agent/input", json=message(user), headers=key)
    text = (await guarded.get("/metrics", headers=key)).text
    assert "user-aa1" not in text and "user-bb2" not in text


async def test_metrics_need_the_key_unless_made_public(
    runtime: Runtime, agent: BaseAgent, guarded: httpx.AsyncClient
) -> None:
    assert (await guarded.get("/metrics")).status_code == 401
    async for public in guarded_client(runtime, agent, liz_metrics_public=True):
        response = await public.get("/metrics")
        assert response.status_code == 200
        assert "liz_learning_backlog_jobs" in response.text
        assert (await public.get("/usage")).status_code == 401


async def test_a_scrape_reads_the_learning_backlog_while_a_turn_holds_the_writer(
    runtime: Runtime, agent: BaseAgent
) -> None:
    now = runtime.clock.now()
    jobs = [
        LearningJobRecord(
            memory_id=f"said-{number}",
            agent_id=agent.agent_id,
            user_id="ann",
            agent_name="Morgan",
            status=PENDING,
            attempts=0,
            next_attempt_at=now,
            created_at=now,
            updated_at=now,
        )
        for number in range(3)
    ]
    async with runtime.sessions() as session, session.begin():
        session.add_all(jobs)
    async for public in guarded_client(runtime, agent, liz_metrics_public=True):
        # As a turn storing a message does: on SQLite it holds the one writing connection.
        async with runtime.sessions() as writing, writing.begin():
            await writing.execute(text('DELETE FROM "LearningJob" WHERE "userId" = \'nobody\''))
            found = await samples(public)
        assert value(found, "liz_learning_backlog_jobs") == 3


def tweets(action: str) -> float:
    found = text_string_to_metric_families(exposition()[0].decode())
    for family in found:
        for sample in family.samples:
            if sample.name == "liz_twitter_tweets_total" and sample.labels == {"action": action}:
                return sample.value
    return 0.0


async def test_the_bot_counts_the_tweets_it_reads_and_posts(world: World) -> None:
    read, posted = tweets("read"), tweets("post")
    world.x.tweet_as("bob", "@ada_bot which tea today?")
    await world.start(world.bot())
    assert [t.text for t in world.x.posts] == ["Thanks @bob, tea is good."]
    assert tweets("read") - read == 1
    assert tweets("post") - posted == 1


def test_several_worker_processes_expose_one_view(tmp_path: Path) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    work = "from liz.observe import metrics; metrics.turn('clerk', 'conversation', 'ok', 0.2)"
    for _ in range(2):  # two workers, each its own process
        subprocess.run([sys.executable, "-c", work], env=env, check=True)
    show = "from liz.observe import metrics; print(metrics.exposition()[0].decode())"
    text = subprocess.run(
        [sys.executable, "-c", show], env=env, check=True, capture_output=True, text=True
    ).stdout
    turns = {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "liz_turns_total"
    }
    assert turns == {(("agent", "clerk"), ("route", "conversation"), ("status", "ok")): 2.0}
