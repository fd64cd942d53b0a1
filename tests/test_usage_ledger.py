"""The usage table as a ledger: rows appended per unit of work, summed when read; cached
input tokens counted, priced lower, and shown in GET /usage, `liz usage`, /metrics and
the chat span; prices from genai-prices; existing totals kept by the migration."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from alembic import command
from sqlalchemy import column, func, insert, select, table, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from typer.testing import CliRunner

from liz.agent import BaseAgent
from liz.cli import app as cli
from liz.config import Settings
from liz.db.engine import create_engine
from liz.db.migrate import alembic_config, run_blocking, upgrade
from liz.db.usage import UsageRecord, usage_statements
from liz.http import create_app
from liz.observe.prices import PriceTable
from liz.observe.usage import CallUsage
from liz.runtime.bootstrap import build_framework, open_runtime
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from liz.testing.scripted_model import answer, scripted_model
from tests.fixtures.db import postgres_database_url
from tests.otlp_receiver import Receiver
from tests.test_observe_metrics import samples, value
from tests.test_observe_traces import receiver

__all__ = ["receiver"]

pytestmark = pytest.mark.anyio

AGENT = "business-advisor"
CACHED = 7  # what the scripted model says its prompt cache served, per chat answer
PRICES = {"input": 1.0, "cached_input": 0.1, "output": 2.0}


@pytest.fixture
def price_file(tmp_path: Path) -> Path:
    path = tmp_path / "prices.json"
    models = {name: PRICES for name in ("scripted-large", "scripted-small")}
    path.write_text(json.dumps({"models": {**models, "scripted-embedding": {"input": 0.5}}}))
    return path


@pytest.fixture
async def client(
    runtime: Runtime, agent: BaseAgent, scripted: ScriptedOpenAI, price_file: Path
) -> AsyncIterator[httpx.AsyncClient]:
    scripted.respond_with(answer)
    priced = Runtime(
        settings=runtime.settings.model_copy(update={"liz_price_table": str(price_file)}),
        engine=runtime.engine,
        llm_client=runtime.llm_client,
    )
    app = create_app(build_framework(priced), {agent.agent_id: agent})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        yield client


def say(user: str, text: str = "hello") -> dict[str, Any]:
    return {"input": {"agentId": AGENT, "userId": user, "text": text}}


async def usage_rows(engine: AsyncEngine) -> list[Any]:
    async with engine.connect() as connection:
        rows = UsageRecord.__table__
        return list(await connection.execute(select(rows).order_by(rows.c.id)))


async def test_each_turn_appends_its_rows_and_reading_sums_them(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    for _ in range(3):
        assert (await client.post("/agent/input", json=say("ann"))).status_code == 200
    rows = await usage_rows(runtime.engine)
    replies = [row for row in rows if row.purpose == "reply"]
    assert len(replies) == 3  # one row per turn: never one row updated three times
    assert {(row.day, row.agentId, row.userId, row.calls) for row in replies} == {
        (runtime.clock.now().date().isoformat(), AGENT, "ann", 1)
    }
    response = await client.get("/usage", params={"by": "user"})
    (line,) = response.json()["usage"]
    assert line["calls"] == sum(row.calls for row in rows)
    assert line["inputTokens"] == sum(row.inputTokens for row in rows)
    assert line["outputTokens"] == sum(row.outputTokens for row in rows)


async def test_cached_tokens_reach_the_usage_table_and_lower_the_cost(
    client: httpx.AsyncClient, runtime: Runtime, scripted: ScriptedOpenAI
) -> None:
    before = await samples(client)
    assert (await client.post("/agent/input", json=say("bob"))).status_code == 200
    scripted.report_cached_tokens(CACHED)
    assert (await client.post("/agent/input", json=say("ann"))).status_code == 200

    rows = await usage_rows(runtime.engine)
    (ann,) = [row for row in rows if row.userId == "ann"]
    (bob,) = [row for row in rows if row.userId == "bob"]
    assert (ann.cachedInputTokens, bob.cachedInputTokens) == (CACHED, 0)
    lines = {
        line["key"]: line
        for line in (await client.get("/usage", params={"by": "user"})).json()["usage"]
    }
    assert lines["ann"]["cachedInputTokens"] == CACHED
    assert lines["ann"]["cacheShare"] == pytest.approx(CACHED / ann.inputTokens, abs=1e-4)
    assert lines["bob"]["cacheShare"] == 0
    uncached = ann.inputTokens * PRICES["input"] + ann.outputTokens * PRICES["output"]
    saved = CACHED * (PRICES["input"] - PRICES["cached_input"])
    assert lines["ann"]["costUsd"] == pytest.approx((uncached - saved) / 1_000_000, abs=1e-6)
    assert lines["ann"]["costUsd"] < uncached / 1_000_000

    found = await samples(client)
    counted = {
        direction: value(found, "liz_agent_llm_tokens_total", agent=AGENT, direction=direction)
        - value(before, "liz_agent_llm_tokens_total", agent=AGENT, direction=direction)
        for direction in ("input", "cached_input", "output")
    }
    assert counted == {
        "input": ann.inputTokens + bob.inputTokens,
        "cached_input": CACHED,
        "output": ann.outputTokens + bob.outputTokens,
    }
    share = value(found, "liz_agent_llm_cache_share", agent=AGENT)
    total = {
        direction: value(found, "liz_agent_llm_tokens_total", agent=AGENT, direction=direction)
        for direction in ("input", "cached_input")
    }
    assert 0 < share == pytest.approx(total["cached_input"] / total["input"])


async def test_a_streamed_replys_cached_tokens_are_counted_too(
    client: httpx.AsyncClient, runtime: Runtime, scripted: ScriptedOpenAI
) -> None:
    scripted.report_cached_tokens(CACHED)
    streamed = await client.post(
        "/agent/input", json=say("ann"), headers={"Accept": "text/event-stream"}
    )
    assert "event: reply" in streamed.text
    (row,) = await usage_rows(runtime.engine)
    assert (row.purpose, row.cachedInputTokens) == ("reply", CACHED)
    assert row.inputTokens > CACHED


async def test_liz_usage_prints_the_cached_tokens_and_their_share(
    client: httpx.AsyncClient,
    runtime: Runtime,
    scripted: ScriptedOpenAI,
    price_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scripted.report_cached_tokens(CACHED)
    assert (await client.post("/agent/input", json=say("ann"))).status_code == 200
    (row,) = await usage_rows(runtime.engine)
    monkeypatch.setenv("DATABASE_URL", runtime.settings.database_url)
    monkeypatch.setenv("LIZ_PRICE_TABLE", str(price_file))
    result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli, ["usage"]))
    assert result.exit_code == 0, result.output
    header, line = result.output.splitlines()
    assert header.split()[:7] == ["agent", "calls", "input", "cached", "cache", "%", "output"]
    share = f"{CACHED / row.inputTokens * 100:.1f}"
    assert line.split()[:6] == [
        AGENT,
        "1",
        str(row.inputTokens),
        str(CACHED),
        share,
        str(row.outputTokens),
    ]


async def test_the_chat_span_counts_cached_tokens_within_the_input_tokens(
    receiver: Receiver, settings: Settings, agent: BaseAgent
) -> None:
    model = scripted_model()
    model.report_cached_tokens(CACHED)
    llm = model.llm_client()
    async with open_runtime(settings, llm_client=llm) as runtime:
        app = create_app(build_framework(runtime), {agent.agent_id: agent})
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            response = await client.post("/agent/input", json=say("ann"))
        assert response.status_code == 200
        await runtime.background.drain()
    await llm.close()
    chats = receiver.named("chat ")
    (reply,) = [s for s in chats if s.attributes["liz.llm.purpose"] == "reply"]
    assert reply.attributes["gen_ai.usage.cache_read.input_tokens"] == CACHED
    assert reply.attributes["gen_ai.usage.input_tokens"] > CACHED


def test_prices_come_from_genai_prices_with_the_price_table_over_them(tmp_path: Path) -> None:
    table = PriceTable.load()
    gpt_4o, o3, o3_mini = (table.price(name) for name in ("gpt-4o", "o3", "o3-mini"))
    assert gpt_4o is not None and o3 is not None and o3_mini is not None
    assert o3_mini.input < o3.input  # no longer priced as o3 by a prefix match
    assert table.price("gpt-4o-2024-08-06") == gpt_4o  # a dated name is its model
    assert table.price("openai/gpt-4o") == gpt_4o  # OpenRouter's name
    assert gpt_4o.cached_input is not None and gpt_4o.cached_input < gpt_4o.input
    assert table.price("text-embedding-3-small") is not None
    assert table.cost("scripted", 1000, 1000) == 0.0  # the keyless scripted model
    assert table.price("my-own-model") is None
    cost = table.cost("gpt-4o", 1_000_000, 0, cached_input_tokens=1_000_000)
    assert cost == pytest.approx(gpt_4o.cached_input)

    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"gpt-4o": {"input": 9, "output": 9}}}))
    overridden = PriceTable.load(path)
    assert overridden.cost("gpt-4o", 1_000_000, 0) == pytest.approx(9.0)
    assert overridden.cost("openai/gpt-4o", 0, 1_000_000) == pytest.approx(9.0)
    assert overridden.cost("gpt-4o", 1_000_000, 0, cached_input_tokens=1_000_000) == 9.0


def test_a_price_table_with_a_bad_cached_price_says_what_it_needs(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"m": {"input": 1, "cached_input": "cheap"}}}))
    with pytest.raises(Exception, match="'cached_input'"):
        PriceTable.load(path)


def migrate(url: str, revision: str, *, down: bool = False) -> None:
    async def work() -> None:
        engine = create_engine(url, pooled=False)
        try:
            async with engine.begin() as connection:
                step = command.downgrade if down else command.upgrade
                await connection.run_sync(lambda sync: step(alembic_config(sync), revision))
        finally:
            await engine.dispose()

    run_blocking(work)


@pytest.fixture
def migrated_to_0015(empty_database_url: str) -> Iterator[str]:
    migrate(empty_database_url, "0015_tool_approval_outcome")
    yield empty_database_url


def test_the_migration_keeps_every_days_totals_as_rows(migrated_to_0015: str) -> None:
    url = migrated_to_0015
    old = [
        ("2026-12-01", AGENT, "ann", "gpt-4o", "reply", 3, 300, 30),
        ("2026-12-01", AGENT, "ann", "gpt-4o", "embed", 2, 20, 0),
        ("2026-12-02", AGENT, "bob", "gpt-4o-mini", "extract", 1, 100, 10),
    ]
    columns = ("day", "agentId", "userId", "model", "purpose", "calls")

    async def fill() -> None:
        engine = create_engine(url, pooled=False)
        try:
            names = (*columns, "inputTokens", "outputTokens")
            daily = table("Usage", *(column(name) for name in names))
            async with engine.begin() as connection:
                await connection.execute(
                    insert(daily), [dict(zip(names, row, strict=True)) for row in old]
                )
        finally:
            await engine.dispose()

    async def read() -> list[tuple[Any, ...]]:
        engine = create_engine(url, pooled=False)
        try:
            async with engine.connect() as connection:
                rows = UsageRecord.__table__
                query = select(
                    *(rows.c[name] for name in columns),
                    rows.c.inputTokens,
                    rows.c.outputTokens,
                    rows.c.cachedInputTokens,
                ).order_by(rows.c.day, rows.c.purpose)
                return [tuple(row) for row in await connection.execute(query)]
        finally:
            await engine.dispose()

    async def append_a_turn_and_read_the_old_shape() -> list[tuple[Any, ...]]:
        engine = create_engine(url, pooled=False)
        try:
            async with engine.begin() as connection:
                reply = CallUsage("chat", "gpt-4o", "reply", 100, 10, cached_input_tokens=50)
                at = datetime(2026, 12, 1, 18, tzinfo=UTC)
                for bound in usage_statements([reply], agent_id=AGENT, user_id="ann", at=at):
                    await connection.execute(bound.executable())
            migrate(url, "0015_tool_approval_outcome", down=True)
            names = (*columns, "inputTokens", "outputTokens")
            daily = table("Usage", *(column(name) for name in names))
            async with engine.connect() as connection:
                query = select(daily).order_by(daily.c.day, daily.c.purpose)
                return [tuple(row) for row in await connection.execute(query)]
        finally:
            await engine.dispose()

    anyio.run(fill)
    upgrade(url)
    moved = anyio.run(read)
    expected = sorted(old, key=lambda row: (row[0], row[4]))
    assert moved == [(*row, 0) for row in expected]
    # Back down: a day's rows summed into its total again (cached tokens are dropped).
    summed = anyio.run(append_a_turn_and_read_the_old_shape)
    assert summed[1] == ("2026-12-01", AGENT, "ann", "gpt-4o", "reply", 4, 400, 40)
    assert [*summed[:1], *summed[2:]] == [expected[0], expected[2]]


async def _append(session: AsyncSession, calls: list[CallUsage], at: Any) -> None:
    for bound in usage_statements(calls, agent_id=AGENT, user_id="ann", at=at):
        await session.execute(bound.executable())


postgres_url = pytest.fixture(postgres_database_url, name="postgres_url")


@pytest.mark.postgres
async def test_a_reply_and_a_learning_job_never_wait_on_one_usage_row(
    postgres_url: str,
) -> None:
    """The day's embed row, which recall and learning both wrote, was the shared row of
    the deadlock: the reply's transaction waited on it while the learning job's held it."""
    engine = create_engine(postgres_url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    embed = [CallUsage("embeddings", "scripted-embedding", "embed", 5, 0)]
    now = datetime(2026, 12, 5, 12, tzinfo=UTC)
    try:
        async with sessions() as learning, sessions() as reply:
            await _append(learning, embed, now)  # not committed yet: its rows are held
            await reply.execute(text("SET LOCAL lock_timeout = '2s'"))
            await _append(reply, embed, now)  # waits for no one
            await reply.commit()
            await learning.commit()
        async with sessions() as session:
            rows = UsageRecord.__table__
            total = await session.execute(
                select(func.count(), func.sum(rows.c.calls), func.sum(rows.c.inputTokens))
            )
            assert tuple(total.one()) == (2, 2, 10)
    finally:
        await engine.dispose()


async def test_usage_rows_go_in_with_sqlalchemy_core_on_both_databases(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    now = datetime(2026, 12, 5, 12, tzinfo=UTC)
    calls = [
        CallUsage("chat", "gpt-4o", "reply", 10, 2, cached_input_tokens=4),
        CallUsage("chat", "gpt-4o", "reply", 10, 3, cached_input_tokens=6, cache_write_tokens=1),
        CallUsage("embeddings", "emb", "embed", 5, 0),
    ]
    async with sessions() as session, session.begin():
        await _append(session, calls, now)
    async with sessions() as session:
        rows = (await session.execute(select(UsageRecord).order_by(UsageRecord.purpose))).scalars()
        found = [
            (
                r.model,
                r.purpose,
                r.calls,
                r.input_tokens,
                r.cached_input_tokens,
                r.cache_write_tokens,
                r.output_tokens,
            )
            for r in rows
        ]
    assert found == [("emb", "embed", 1, 5, 0, 0, 0), ("gpt-4o", "reply", 2, 20, 10, 1, 5)]
