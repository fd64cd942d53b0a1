"""``/health`` during a database outage logs the outage once, with the outage's own lines,
not one line per call."""

from __future__ import annotations

import logging

import httpx
import pytest

from liz.agent import BaseAgent
from liz.config import Settings
from liz.db.engine import create_engine, make_sessionmaker
from liz.facts.store import FactStore
from liz.http import create_app
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from tests.serve_process import free_port

pytestmark = pytest.mark.anyio
CALLS = 12


async def test_health_calls_during_an_outage_log_it_once(
    agent: BaseAgent, scripted: ScriptedOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    # Nothing listens on this port: every connection is refused, as when PostgreSQL is down.
    url = f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/liz"
    settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
    engine = create_engine(url, settings)
    llm = scripted.llm_client()
    facts = FactStore(make_sessionmaker(engine), llm, engine=engine)
    runtime = Runtime(settings=settings, engine=engine, llm_client=llm, facts=facts)
    app = create_app(build_framework(runtime), {agent.agent_id: agent})
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://localhost"
        ) as client:
            with caplog.at_level(logging.INFO, logger="liz"):
                answers = [await client.get("/health") for _ in range(CALLS)]
    finally:
        await facts.close()
        await llm.close()
        await engine.dispose()
    assert {answer.status_code for answer in answers} == {503}
    assert answers[-1].json()["learning"]["status"].startswith("unknown")
    loud = [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("liz") and r.levelno >= logging.WARNING
    ]
    assert len(loud) == 1, loud
    assert loud[0].startswith("database outage: ")
