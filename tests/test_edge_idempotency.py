"""Idempotency-Key on POST /agent/input: a retry gets the first answer and stores nothing twice."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from liz.agent import BaseAgent
from liz.db.idempotency import IdempotencyRecord
from liz.db.tables import MemoryRecord
from liz.http import create_app
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import RecordedRequest, ScriptedError, ScriptedOpenAI

pytestmark = pytest.mark.anyio
AGENT = "business-advisor"


def message(text: str = "Where do I start?", user: str = "u1") -> dict[str, Any]:
    return {"input": {"agentId": AGENT, "userId": user, "text": text}}


def keyed(key: str) -> dict[str, str]:
    return {"idempotency-key": key}


async def memory_count(runtime: Runtime) -> int:
    async with runtime.sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(MemoryRecord)) or 0)


async def age_keys(runtime: Runtime, by: timedelta, *, answered: bool = True) -> None:
    """Move every stored key back in time (and, with answered=False, drop its answer)."""
    async with runtime.sessions() as session, session.begin():
        for row in (await session.scalars(select(IdempotencyRecord))).all():
            row.created_at -= by
            if not answered:
                row.status, row.response = None, None


async def test_a_retry_gets_the_first_reply_and_stores_nothing_twice(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    scripted.reply("Know your margins.", "A different answer.")
    first = await client.post("/agent/input", json=message(), headers=keyed("order-1"))
    retries = [
        await client.post("/agent/input", json=message(), headers=keyed("order-1"))
        for _ in range(5)
    ]
    assert first.status_code == 200 and first.json()["text"] == "Know your margins."
    for retry in retries:
        assert retry.status_code == 200 and retry.json() == first.json()
        assert retry.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert await memory_count(runtime) == 2
    assert len(scripted.chat_requests) == 1


async def test_a_retry_after_a_5xx_runs_the_turn_again_and_stores_the_message_once(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    down = True
    scripted.respond_with(
        lambda request: ScriptedError(500, "down") if down else "Now I can answer."
    )
    first = await client.post("/agent/input", json=message(), headers=keyed("after-502"))
    assert first.status_code == 502
    assert await memory_count(runtime) == 1  # the message is kept through the outage
    down = False
    retry = await client.post("/agent/input", json=message(), headers=keyed("after-502"))
    assert retry.status_code == 200 and retry.json()["text"] == "Now I can answer."
    assert "idempotent-replayed" not in retry.headers
    again = await client.post("/agent/input", json=message(), headers=keyed("after-502"))
    assert again.json() == retry.json() and again.headers["idempotent-replayed"] == "true"
    async with runtime.sessions() as session:
        rows = (await session.scalars(select(MemoryRecord).order_by(MemoryRecord.created_at))).all()
    assert [(row.generator, json.loads(row.content)["text"]) for row in rows] == [
        ("external", "Where do I start?"),
        ("llm", "Now I can answer."),
    ]
    # The retry's prompt holds the message once: as the input, not also as history.
    prompt = json.dumps(scripted.chat_requests[-1].body["messages"])
    assert prompt.count("Where do I start?") == 1


async def test_the_same_key_with_another_body_is_a_422(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    scripted.reply("First.")
    await client.post("/agent/input", json=message("one"), headers=keyed("k"))
    other = await client.post("/agent/input", json=message("two"), headers=keyed("k"))
    assert other.status_code == 422
    assert "was first sent with a different request body" in other.json()["error"]
    assert await memory_count(runtime) == 2


async def test_keys_belong_to_their_user(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    scripted.reply("For ann.", "For bob.")
    ann = await client.post("/agent/input", json=message(user="ann"), headers=keyed("k"))
    bob = await client.post("/agent/input", json=message(user="bob"), headers=keyed("k"))
    assert ann.json()["text"] == "For ann." and bob.json()["text"] == "For bob."
    assert await memory_count(runtime) == 4


async def test_a_retry_while_the_first_still_runs_is_a_409_and_then_the_first_answer(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    release = asyncio.Event()
    arrived = asyncio.Event()

    async def slow(request: RecordedRequest) -> str:
        arrived.set()
        await release.wait()
        return "Done."

    scripted.respond_with(slow)
    first = asyncio.create_task(
        client.post("/agent/input", json=message(), headers=keyed("slow-1"))
    )
    await arrived.wait()
    early = await client.post("/agent/input", json=message(), headers=keyed("slow-1"))
    assert early.status_code == 409
    assert "still running" in early.json()["error"] and early.headers["retry-after"] == "1"
    release.set()
    answered = await first
    later = await client.post("/agent/input", json=message(), headers=keyed("slow-1"))
    assert later.json() == answered.json() == {**answered.json(), "text": "Done."}
    assert await memory_count(runtime) == 2


async def test_concurrent_duplicates_run_once(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    scripted.respond_with(lambda request: "Once.")
    answers = await asyncio.gather(
        *(client.post("/agent/input", json=message(), headers=keyed("burst")) for _ in range(8))
    )
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses.count(200) >= 1 and set(statuses) <= {200, 409}
    assert await memory_count(runtime) == 2
    assert len(scripted.chat_requests) == 1


async def test_a_streamed_request_is_replayed_as_its_final_event_or_as_json(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    scripted.reply("Streamed once.")
    sse = {"accept": "text/event-stream", **keyed("s-1")}
    first = await client.post("/agent/input", json=message(), headers=sse)
    assert first.text.endswith("\n\n") and "event: token" in first.text
    again = await client.post("/agent/input", json=message(), headers=sse)
    event, data = again.text.strip().split("\n")
    assert event == "event: reply"
    assert json.loads(data.removeprefix("data: "))["text"] == "Streamed once."
    as_json = await client.post("/agent/input", json=message(), headers=keyed("s-1"))
    assert as_json.json()["text"] == "Streamed once."
    assert await memory_count(runtime) == 2


async def test_a_claim_left_by_a_dead_process_is_taken_over(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    scripted.reply("Too late.", "Second run.")
    # A first request claimed the key and then its process died: the row has no answer.
    await client.post("/agent/input", json=message(), headers=keyed("orphan"))
    await age_keys(runtime, timedelta(hours=1), answered=False)
    retry = await client.post("/agent/input", json=message(), headers=keyed("orphan"))
    assert retry.status_code == 200 and retry.json()["text"] == "Second run."


async def test_an_expired_key_runs_again(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    scripted.reply("Yesterday.", "Today.")
    await client.post("/agent/input", json=message(), headers=keyed("daily"))
    await age_keys(runtime, timedelta(hours=25))
    again = await client.post("/agent/input", json=message("new"), headers=keyed("daily"))
    assert again.status_code == 200 and again.json()["text"] == "Today."


async def test_a_request_refused_before_it_runs_claims_no_key(
    runtime: Runtime, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    bare = Runtime(settings=runtime.settings, engine=runtime.engine, llm_client=None)
    app = create_app(build_framework(bare), {AGENT: agent})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        refused = await client.post("/agent/input", json=message(), headers=keyed("early"))
        bad = await client.post("/agent/input", json={"input": {}}, headers=keyed("early"))
    assert refused.status_code == 503 and bad.status_code == 400
    async with runtime.sessions() as session:
        keys = await session.scalar(select(func.count()).select_from(IdempotencyRecord))
    assert keys == 0
