"""Two `liz serve` processes on one PostgreSQL take 200 concurrent requests; nothing is lost.

Bounded: 200 requests, at most 20 in flight, loopback only. It asserts counts, never times.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from liz.db.engine import create_engine
from liz.db.tables import MemoryRecord
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.fixtures.db import _fresh_postgres
from tests.serve_process import liz_serve

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

REQUESTS = 200
IN_FLIGHT = 20
USERS = 20
CURRENT_INPUT = re.compile(r"<CURRENT_USER_INPUT>\s*(.*?)\s*</CURRENT_USER_INPUT>", re.S)


@pytest.fixture
def postgres_url(pgvector_server: Any, _postgres_template: str) -> Iterator[str]:
    yield from _fresh_postgres(pgvector_server, _postgres_template)


def answer(request: RecordedRequest) -> str | dict[str, object]:
    """Replies name the message they answer; fact extraction finds nothing to keep."""
    if request.body.get("response_format"):
        return {"facts": []}
    match = CURRENT_INPUT.search(request.prompt)
    return f"reply to {match.group(1) if match else '?'}"


async def send_all(urls: list[str]) -> list[httpx.Response]:
    limit = asyncio.Semaphore(IN_FLIGHT)

    async def send(client: httpx.AsyncClient, i: int) -> httpx.Response:
        body = {
            "input": {
                "agentId": "business-advisor",
                "userId": f"user-{i % USERS}",
                "text": f"msg-{i}",
            }
        }
        async with limit:
            return await client.post(f"{urls[i % len(urls)]}/agent/input", json=body)

    async with httpx.AsyncClient(timeout=120) as client:
        return await asyncio.gather(*(send(client, i) for i in range(REQUESTS)))


async def stored_texts(database_url: str) -> Counter[tuple[str, str]]:
    engine = create_engine(database_url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(select(MemoryRecord.generator, MemoryRecord.content))
            return Counter((generator, json.loads(content)["text"]) for generator, content in rows)
    finally:
        await engine.dispose()


def test_two_processes_on_one_postgres_store_every_turn_once(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = ScriptedOpenAI()
    server.respond_with(answer)
    with server.serve() as base_url:
        env = {
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": "test",
            "DATABASE_URL": postgres_url,
            "LIZ_LLM_MAX_RETRIES": "0",
        }
        with (
            liz_serve(env, tmp_path, migrate=False) as first,
            liz_serve(env, tmp_path, migrate=False) as second,
        ):
            responses = asyncio.run(send_all([first, second]))
    served = sum(1 for r in responses if r.status_code == 200)
    texts = asyncio.run(stored_texts(postgres_url))
    with capsys.disabled():
        print(f"\nrequests served: {served}/{REQUESTS}; memory rows found: {sum(texts.values())}")
    assert served == REQUESTS, [r.text for r in responses if r.status_code != 200][:3]
    for i in range(REQUESTS):
        assert texts[("external", f"msg-{i}")] == 1
        assert texts[("llm", f"reply to msg-{i}")] == 1
    assert sum(texts.values()) == 2 * REQUESTS
