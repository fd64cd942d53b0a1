"""A ``liz serve`` process SIGKILLed in the middle of a keyed request: a retry gets a 409
with ``Retry-After`` until the dead process's claim runs out (one lease, as learning's
claims), then runs the turn again, adds the reply and stores the message once."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.test_learning_crash import serving

LEASE = 2.0
BODY = {"input": {"agentId": "business-advisor", "userId": "ann", "text": "Should I hire?"}}
KEY = {"Idempotency-Key": "hire-1"}


class HeldReplies:
    """Replies held while ``held``: the first process dies while waiting for one."""

    def __init__(self) -> None:
        self.held = True
        self.arrived = threading.Event()

    async def __call__(self, request: RecordedRequest) -> Any:
        if request.body.get("response_format"):
            return {"facts": []}
        self.arrived.set()
        while self.held:
            await asyncio.sleep(0.05)
        return "Hire when the work is steady."


def rows(database: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(database) as db:
        found = db.execute('SELECT generator, content FROM "Memory" ORDER BY "createdAt"')
        return [(generator, content) for generator, content in found.fetchall()]


def test_a_retry_after_a_sigkill_waits_one_lease_then_stores_the_message_once(
    tmp_path: Path,
) -> None:
    replies = HeldReplies()
    server = ScriptedOpenAI()
    server.respond_with(replies)
    database = tmp_path / "liz.db"
    with server.serve() as base_url:
        env = {
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": "test",
            "DATABASE_URL": f"file:{database}",
            "LIZ_LLM_MAX_RETRIES": "0",
            "LIZ_LEARNING_LEASE_SECONDS": str(LEASE),
        }
        with serving(env, tmp_path) as (process, url):
            first = threading.Thread(
                target=lambda: _post_ignoring_errors(url), name="first-request"
            )
            first.start()
            assert replies.arrived.wait(30)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
            first.join(timeout=30)
        assert [generator for generator, _ in rows(database)] == ["external"]

        replies.held = False
        with serving(env, tmp_path) as (_, url):
            early = httpx.post(f"{url}/agent/input", json=BODY, headers=KEY, timeout=30)
            if early.status_code == 409:  # the dead claim has not run out yet
                assert int(early.headers["retry-after"]) >= 1
                assert "still running" in early.json()["error"]
            deadline = time.monotonic() + 10 * LEASE + 30
            answer = early
            while answer.status_code == 409 and time.monotonic() < deadline:
                time.sleep(0.2)
                answer = httpx.post(f"{url}/agent/input", json=BODY, headers=KEY, timeout=30)
            assert answer.status_code == 200, answer.text
            assert answer.json()["text"] == "Hire when the work is steady."
            replayed = httpx.post(f"{url}/agent/input", json=BODY, headers=KEY, timeout=30)
            assert replayed.json() == answer.json()
    assert [generator for generator, _ in rows(database)] == ["external", "llm"]


def _post_ignoring_errors(url: str) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the process died under it
        httpx.post(f"{url}/agent/input", json=BODY, headers=KEY, timeout=60)
