"""Daily budgets per user and per agent: 429 before any LLM call with nothing stored,
other users served, the reset at midnight (on the app's clock), learning deferred and
never lost, every process on one database seeing the same total, and `liz serve`
refusing a budget it cannot price."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.agent import BaseAgent
from liz.config import Settings
from liz.db.engine import make_sessionmaker
from liz.db.tables import MemoryRecord
from liz.facts.settings import FactSettings
from liz.facts.store import FactStore
from liz.http import create_app
from liz.learning_queue.tables import LearningJobRecord
from liz.llm import LLMClient
from liz.middleware import (
    create_memory,
    extract_facts,
    load_memories,
    recall_facts,
    router,
    validate_input,
    wrap_context,
)
from liz.pipeline import AgentFramework
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.clock import ManualClock
from liz.testing.fake_twitter import FakeTwitter
from liz.testing.openai_server import ScriptedOpenAI
from liz.testing.scripted_model import answer
from liz.twitter.tables import HandledTweetRecord
from tests.fixtures.db import _fresh_postgres
from tests.learning_world import AGENT as LEARNING_AGENT
from tests.learning_world import Brain, fact_text, learning_settings, make_agent
from tests.serve_process import liz_serve, run_liz
from tests.test_tools_approval import START, app_at, refund_asked
from tests.test_tools_approval import bearer as refund_bearer
from tests.test_twitter_bot import Brain as TwitterBrain
from tests.test_twitter_bot import World as TwitterWorld
from tests.test_twitter_bot import ada
from tests.tools_world import served

pytestmark = pytest.mark.anyio

AGENT = "business-advisor"
LATE = datetime(2026, 12, 5, 23, 0, tzinfo=UTC)  # an hour before the budgets reset
# A token costs a cent: one turn spends more than any budget below.
COSTLY = {"input": 10_000.0, "output": 10_000.0}


def price_file(folder: Path) -> Path:
    path = folder / "prices.json"
    names = ("scripted-large", "scripted-small", "scripted-embedding")
    path.write_text(json.dumps({"models": {name: COSTLY for name in names}}))
    return path


def say(user: str, text: str = "hello", agent: str = AGENT) -> dict[str, Any]:
    return {"input": {"agentId": agent, "userId": user, "text": text}}


async def stored_messages(engine: AsyncEngine) -> int:
    async with make_sessionmaker(engine)() as session:
        return int(await session.scalar(select(func.count()).select_from(MemoryRecord)) or 0)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(LATE)


async def client_on(
    runtime: Runtime, agent: BaseAgent, clock: ManualClock, tmp_path: Path, **budgets: float
) -> AsyncIterator[httpx.AsyncClient]:
    settings = runtime.settings.model_copy(
        update={"liz_price_table": str(price_file(tmp_path)), **budgets}
    )
    budgeted = Runtime(
        settings=settings, engine=runtime.engine, llm_client=runtime.llm_client, clock=clock
    )
    app = create_app(build_framework(budgeted), {agent.agent_id: agent})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        yield client
    await budgeted.background.drain()


@pytest.fixture
async def user_budget(
    runtime: Runtime, agent: BaseAgent, scripted: ScriptedOpenAI, clock: ManualClock, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    scripted.respond_with(answer)
    async for client in client_on(runtime, agent, clock, tmp_path, liz_user_daily_budget_usd=1.0):
        yield client


async def test_a_user_over_budget_is_refused_before_any_llm_call_and_nothing_is_stored(
    user_budget: httpx.AsyncClient, runtime: Runtime, scripted: ScriptedOpenAI, clock: ManualClock
) -> None:
    assert (await user_budget.post("/agent/input", json=say("ann"))).status_code == 200
    messages, requests = await stored_messages(runtime.engine), len(scripted.requests)

    refused = await user_budget.post("/agent/input", json=say("ann", "and another thing"))
    assert refused.status_code == 429
    body = refused.json()
    assert body["code"] == "budget_exceeded"
    assert "user 'ann'" in body["error"] and "LIZ_USER_DAILY_BUDGET_USD" in body["error"]
    assert "resets at 2026-12-06 00:00 UTC, in 1 h 0 min" in body["error"]
    assert refused.headers["Retry-After"] == "3600"
    assert await stored_messages(runtime.engine) == messages  # neither input nor reply
    assert len(scripted.requests) == requests  # not even the query embedding

    streamed = await user_budget.post(
        "/agent/input", json=say("ann"), headers={"Accept": "text/event-stream"}
    )
    assert "event: error" in streamed.text and "budget_exceeded" in streamed.text

    other = await user_budget.post("/agent/input", json=say("bob"))
    assert other.status_code == 200  # another user is answered as before

    await clock.advance(hours=1)  # midnight UTC: a new day, a new budget
    assert (await user_budget.post("/agent/input", json=say("ann"))).status_code == 200
    assert await stored_messages(runtime.engine) == messages + 4


async def test_an_agent_over_budget_refuses_every_user_until_midnight(
    runtime: Runtime, agent: BaseAgent, scripted: ScriptedOpenAI, clock: ManualClock, tmp_path: Path
) -> None:
    scripted.respond_with(answer)
    async for client in client_on(runtime, agent, clock, tmp_path, liz_agent_daily_budget_usd=2.5):
        assert (await client.post("/agent/input", json=say("ann"))).status_code == 200
        refused = await client.post("/agent/input", json=say("bob"))
        assert refused.status_code == 429
        assert f"agent '{AGENT}'" in refused.json()["error"]
        assert "LIZ_AGENT_DAILY_BUDGET_USD" in refused.json()["error"]
        await clock.advance(minutes=59)
        assert (await client.post("/agent/input", json=say("bob"))).status_code == 429
        await clock.advance(minutes=1)
        assert (await client.post("/agent/input", json=say("bob"))).status_code == 200


async def test_learning_over_budget_waits_for_the_next_day_and_is_not_lost(
    engine: AsyncEngine,
    llm: LLMClient,
    scripted: ScriptedOpenAI,
    database_url: str,
    clock: ManualClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    brain = Brain()
    scripted.respond_with(brain)
    store = FactStore(
        make_sessionmaker(engine),
        llm,
        engine=engine,
        clock=clock,
        settings=FactSettings(_env_file=None, reconcile_threshold=0.99),  # type: ignore[call-arg]
    )
    runtime = Runtime(
        settings=Settings(
            _env_file=None,  # type: ignore[call-arg]
            database_url=database_url,
            learning=learning_settings(),
            liz_price_table=str(price_file(tmp_path)),
            liz_user_daily_budget_usd=0.1,
        ),
        engine=engine,
        llm_client=llm,
        clock=clock,
        facts=store,
    )
    framework = AgentFramework(runtime).use(
        validate_input,
        load_memories(),
        recall_facts(),
        wrap_context,
        create_memory,
        extract_facts(attempts=2, wait_seconds=0),
        router,
    )
    app = create_app(framework, {LEARNING_AGENT: make_agent()})
    transport = httpx.ASGITransport(app=app)
    caplog.set_level(logging.WARNING, logger="liz.observe.budgets")
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        said = say("ann", "I keep bees", agent=LEARNING_AGENT)
        assert (await client.post("/agent/input", json=said)).status_code == 200
        await runtime.background.drain()
        await runtime.learning.work_due()  # the poller, on this day: still over budget
        assert brain.learned_from == []
        assert await store.list(LEARNING_AGENT, "ann") == []
        async with make_sessionmaker(engine)() as session:
            (job,) = (await session.scalars(select(LearningJobRecord))).all()
        assert job.next_attempt_at == datetime(2026, 12, 6, tzinfo=UTC)
        assert job.attempts == 0  # waiting is not failing
        waits = [r for r in caplog.records if "waits until it resets" in r.getMessage()]
        assert len(waits) == 1  # once a day, however often it is looked at

        await clock.advance(hours=1, seconds=1)
        await runtime.learning.work_due()
        await runtime.background.drain()
    assert [fact.text for fact in await store.list(LEARNING_AGENT, "ann")] == [
        fact_text("I keep bees")
    ]
    await runtime.learning.stop()
    await store.close()


@pytest.fixture
def postgres_url(pgvector_server: Any, _postgres_template: str) -> Iterator[str]:
    yield from _fresh_postgres(pgvector_server, _postgres_template)


@pytest.mark.postgres
def test_two_processes_on_one_postgres_share_a_users_budget(
    postgres_url: str, tmp_path: Path
) -> None:
    server = ScriptedOpenAI()
    server.respond_with(answer)
    with server.serve() as base_url:
        env = {
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": "test",
            "DATABASE_URL": postgres_url,
            "LIZ_SMALL_MODEL": "scripted-small",
            "LIZ_LARGE_MODEL": "scripted-large",
            "LIZ_EMBEDDING_MODEL": "scripted-embedding",
            "LIZ_PRICE_TABLE": str(price_file(tmp_path)),
            "LIZ_USER_DAILY_BUDGET_USD": "1",
            "LIZ_FACTS_ENABLED": "false",
        }
        with (
            liz_serve(env, tmp_path, migrate=False) as first,
            liz_serve(env, tmp_path, migrate=False) as second,
        ):
            spent = httpx.post(f"{first}/agent/input", json=say("ann"), timeout=60)
            asked = len(server.requests)
            refused = httpx.post(f"{second}/agent/input", json=say("ann"), timeout=60)
            other = httpx.post(f"{second}/agent/input", json=say("bob"), timeout=60)
    assert spent.status_code == 200, spent.text
    assert refused.status_code == 429, refused.text
    assert refused.json()["code"] == "budget_exceeded"
    assert "LIZ_USER_DAILY_BUDGET_USD" in refused.json()["error"]
    assert 0 < int(refused.headers["Retry-After"]) <= 86_400
    assert other.status_code == 200, other.text
    assert len(server.requests) > asked  # bob's turn only: ann's second asked nothing
    texts = asyncio.run(_stored_users(postgres_url))
    assert sorted(texts) == ["ann", "ann", "bob", "bob"]  # message and reply each; no more


async def _stored_users(database_url: str) -> list[str]:
    from liz.db.engine import create_engine

    engine = create_engine(database_url)
    try:
        async with engine.connect() as connection:
            return [user for (user,) in await connection.execute(select(MemoryRecord.user_id))]
    finally:
        await engine.dispose()


def test_liz_serve_refuses_a_budget_it_cannot_price(tmp_path: Path) -> None:
    env = {
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'liz.db'}",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "LIZ_LARGE_MODEL": "house-model-7b",
        "LIZ_USER_DAILY_BUDGET_USD": "5",
    }
    result = run_liz("serve", "--port", "0", env=env, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "'house-model-7b' has no price" in output
    assert "LIZ_PRICE_TABLE" in output and "LIZ_USER_DAILY_BUDGET_USD" in output
    assert "running" not in output.lower()


async def test_the_twitter_bot_skips_a_user_over_budget_and_says_so_once_a_day(
    database_url: str,
    engine: AsyncEngine,
    scripted: ScriptedOpenAI,
    llm: LLMClient,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock(LATE)
    brain = TwitterBrain()
    scripted.respond_with(brain)
    runtime = Runtime(
        settings=Settings(
            _env_file=None,  # type: ignore[call-arg]
            database_url=database_url,
            liz_price_table=str(price_file(tmp_path)),
            liz_user_daily_budget_usd=0.1,
        ),
        engine=engine,
        llm_client=llm,
        clock=clock,
    )
    x = FakeTwitter(username="ada_bot", clock=clock)
    world = TwitterWorld(clock, x, scripted, brain, runtime, ada())
    caplog.set_level(logging.WARNING, logger="liz.observe.budgets")
    try:
        first = x.tweet_as("bob", "@ada_bot which tea today?")
        await world.start(world.bot())
        assert [t.in_reply_to_id for t in x.posts] == [first.id]  # bob's day has begun
        asked = len(scripted.requests)

        again = x.tweet_as("bob", "@ada_bot and tomorrow?")
        carol = x.tweet_as("carol", "@ada_bot green or black?")
        await clock.advance(minutes=5)
        more = x.tweet_as("bob", "@ada_bot hello?")
        await clock.advance(minutes=5)
        assert [t.in_reply_to_id for t in x.posts] == [first.id, carol.id]
        handled = {row.tweet_id: row.decision for row in await world.rows(HandledTweetRecord)}
        assert handled[str(again.id)] == handled[str(more.id)] == "skipped"
        # Only carol's turn asked the model: bob's were skipped before the should-respond call.
        assert all("carol" in r.prompt for r in scripted.requests[asked:])
        skips = [r for r in caplog.records if "Twitter: skipping tweets" in r.getMessage()]
        assert len(skips) == 1 and f"user '{again.author_id}'" in skips[0].getMessage()
    finally:
        for bot in world.bots:
            await bot.stop()
        await runtime.background.drain()


def test_an_approval_over_budget_waits_undecided(database_url: str) -> None:
    with refund_asked(database_url) as shop:
        pending = shop.asked["pendingApproval"]
        path = f"/agent/approvals/{pending['id']}"
        later = START + timedelta(seconds=60)
        broke = app_at(shop.agent, database_url, shop.url, later, liz_user_daily_budget_usd=1e-9)
        with served(broke) as client:
            refused = client.post(path, json={"approve": True}, headers=refund_bearer("ann"))
        assert refused.status_code == 429 and refused.json()["code"] == "budget_exceeded"
        assert shop.refunds == []  # the tool did not run, and the approval is still pending

        shop.scripted.reply("Done: 12.5 refunded on A1.")
        with served(app_at(shop.agent, database_url, shop.url, later)) as client:
            decided = client.post(path, json={"approve": True}, headers=refund_bearer("ann"))
        assert decided.status_code == 200, decided.text
        assert shop.refunds == [("A1", 12.5)]
