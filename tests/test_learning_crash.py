"""kill -9 of a real `liz serve` while learning is pending, then a restart: every message
stored is learned from, each once.

Real processes, a real SQLite file, the scripted LLM over loopback. Waits are bounded
real waits; nothing is asserted about time.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.serve_process import free_port

pytestmark = pytest.mark.slow

USERS = 24
NUMBERED = re.compile(r'<MESSAGE number="(\d+)">\nuser: (.*)$', re.M)


class HeldLearning:
    """Replies at once; fact extraction waits while ``held`` (learning stays pending)."""

    def __init__(self) -> None:
        self.held = True

    async def __call__(self, request: RecordedRequest) -> Any:
        if request.schema_name == "ExtractedFacts":
            while self.held:
                await asyncio.sleep(0.05)
            facts = [
                {
                    "message": int(number),
                    "text": f"User wrote {said}",
                    "subject": "user",
                    "categories": ["a", "b"],
                }
                for number, said in NUMBERED.findall(request.prompt)
            ]
            return {"facts": facts}
        if request.schema_name == "RouteChoice":
            return {"route": "conversation", "confidence": 0.9, "reasoning": "chat"}
        return "Noted."


@contextmanager
def serving(env: dict[str, str], cwd: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A `liz serve` process and its URL; killed (if still running) when the block ends."""
    port = free_port()
    log = (cwd / f"serve-{port}.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "liz", "serve", "--port", str(port)],
        cwd=cwd,
        env={**os.environ, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not _healthy(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"liz serve did not start:\n{(cwd / log.name).read_text()}")
            time.sleep(0.1)
        yield process, url
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)
        log.close()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def send_burst(url: str, answered: list[str]) -> None:
    """Every user says one thing, 8 at a time; the users answered are appended."""

    async def burst() -> None:
        limit = asyncio.Semaphore(8)
        async with httpx.AsyncClient(timeout=30) as client:

            async def one(user: str) -> None:
                body = {"input": {"agentId": "business-advisor", "userId": user}}
                body["input"]["text"] = f"{user} keeps bees"
                async with limit:
                    try:
                        response = await client.post(f"{url}/agent/input", json=body)
                    except httpx.HTTPError:
                        return  # the server was killed under this request
                if response.status_code == 200:
                    answered.append(user)

            await asyncio.gather(*(one(f"user-{n}") for n in range(USERS)))

    asyncio.run(burst())


def facts_per_message(database: Path) -> dict[str, int]:
    with sqlite3.connect(database) as db:
        rows = db.execute(
            'SELECT m."userId", count(f.id) FROM "Memory" m '
            'LEFT JOIN "Fact" f ON f."sourceMemoryId" = m.id '
            "WHERE m.generator = 'external' GROUP BY m.id"
        ).fetchall()
    return dict(rows)


@pytest.mark.parametrize("kill", ["after_the_last_reply", "during_the_burst"])
def test_kill_9_then_restart_learns_every_stored_message_once(tmp_path: Path, kill: str) -> None:
    brain = HeldLearning()
    server = ScriptedOpenAI()
    server.respond_with(brain)
    database = tmp_path / "liz.db"
    with server.serve() as base_url:
        env = {
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": "test",
            "DATABASE_URL": f"file:{database}",
            "LIZ_LLM_MAX_RETRIES": "0",
            "LIZ_FACTS_RECONCILE_THRESHOLD": "0.99",  # each user's one fact stands alone
            # A dead process's claims and unanswered messages are taken over soon.
            "LIZ_LEARNING_LEASE_SECONDS": "2",
            "LIZ_LEARNING_REPLY_WAIT_SECONDS": "2",
            "LIZ_LEARNING_POLL_SECONDS": "0.5",
        }
        answered: list[str] = []
        with serving(env, tmp_path) as (process, url):
            sender = threading.Thread(target=send_burst, args=(url, answered))
            sender.start()
            wanted = USERS if kill == "after_the_last_reply" else USERS // 2
            deadline = time.monotonic() + 60
            while len(answered) < wanted and time.monotonic() < deadline:
                time.sleep(0.01)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
            sender.join(timeout=60)
        assert len(answered) >= wanted
        before = facts_per_message(database)
        assert sum(before.values()) == 0  # nothing was learned before the kill
        assert set(answered) <= set(before)  # every answered message was stored

        brain.held = False
        with serving(env, tmp_path) as (_, url):
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                learning = httpx.get(f"{url}/health", timeout=5).json()["learning"]
                if learning["pending"] == 0:
                    break
                time.sleep(0.2)
            assert learning | {"learnAfterIdleSeconds": 0} == {
                "pending": 0,
                "failed": 0,
                "oldestPendingSeconds": None,
                "learnAfterIdleSeconds": 0,
            }

    after = facts_per_message(database)
    assert set(after) == set(before)
    assert all(count == 1 for count in after.values()), after  # each learned, once


def test_after_a_kill_9_the_jobs_claimed_are_learned_within_a_minute_of_the_restart(
    tmp_path: Path, database_url: str
) -> None:
    # The default lease and poll: only the bound of the wait below is this test's own.
    brain = HeldLearning()
    server = ScriptedOpenAI()
    server.respond_with(brain)
    with server.serve() as base_url:
        env = {
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": "test",
            "DATABASE_URL": database_url,
            "LIZ_LLM_MAX_RETRIES": "0",
            "LIZ_FACTS_RECONCILE_THRESHOLD": "0.99",
        }
        answered: list[str] = []
        with serving(env, tmp_path) as (process, url):
            send_burst(url, answered)
            deadline = time.monotonic() + 60
            while not claimed_jobs(database_url) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert claimed_jobs(database_url)  # the killed process holds claims
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        assert sorted(answered) == sorted(f"user-{n}" for n in range(USERS))

        brain.held = False
        with serving(env, tmp_path) as (_, url):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                learning = httpx.get(f"{url}/health", timeout=5).json()["learning"]
                if learning["pending"] == 0:
                    break
                time.sleep(0.2)
            assert learning | {"learnAfterIdleSeconds": 0} == {
                "pending": 0,
                "failed": 0,
                "oldestPendingSeconds": None,
                "learnAfterIdleSeconds": 0,
            }

    after = dict(rows(database_url, FACTS_PER_MESSAGE))
    assert len(after) == USERS
    assert all(count == 1 for count in after.values()), after  # each learned, once


FACTS_PER_MESSAGE = (
    'SELECT m."userId", count(f.id) FROM "Memory" m '
    'LEFT JOIN "Fact" f ON f."sourceMemoryId" = m.id '
    "WHERE m.generator = 'external' GROUP BY m.id"
)


def rows(database_url: str, query: str) -> list[Any]:
    from sqlalchemy import text

    from liz.db.engine import create_engine

    async def read() -> list[Any]:
        engine = create_engine(database_url, pooled=False)
        try:
            async with engine.connect() as connection:
                return [tuple(row) for row in await connection.execute(text(query))]
        finally:
            await engine.dispose()

    return asyncio.run(read())


def claimed_jobs(database_url: str) -> int:
    query = 'SELECT count(*) FROM "LearningJob" WHERE "claimedBy" IS NOT NULL'
    return int(rows(database_url, query)[0][0])
