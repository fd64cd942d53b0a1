"""Learning per burst in a real `liz serve`: a burst still gathering when the process is
killed is learned, once, by the next; one gathering when it stops cleanly is learned
before it exits.

Real processes, a real SQLite file, the scripted LLM over loopback. Waits are bounded
real waits; nothing is asserted about time.
"""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.test_learning_crash import NUMBERED, serving

pytestmark = pytest.mark.slow

SAID = {"ann": ["I keep bees", "I play the cello", "I live in Turku"]}
SAID["bob"] = ["I run marathons", "I have a cat named Pip"]


class Extractions:
    """Learns one fact per message; records the messages of each extraction call."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, request: RecordedRequest) -> Any:
        if request.schema_name != "ExtractedFacts":
            return "Noted."
        numbered = NUMBERED.findall(request.prompt)
        self.calls.append([said for _, said in numbered])
        facts = [
            {"message": int(n), "text": f"User said {said}", "subject": "user"}
            | {"categories": ["a", "b"]}
            for n, said in numbered
        ]
        return {"facts": facts}


def talk(url: str) -> None:
    """Each user says their messages, one after the other, users interleaved."""
    with httpx.Client(timeout=30) as client:
        for turn in range(max(len(said) for said in SAID.values())):
            for user, said in SAID.items():
                if turn < len(said):
                    body = {"agentId": "business-advisor", "userId": user, "text": said[turn]}
                    response = client.post(f"{url}/agent/input", json={"input": body})
                    assert response.status_code == 200, response.text


def env_of(base_url: str, database: Path, idle: str) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "test",
        "DATABASE_URL": f"file:{database}",
        "LIZ_LLM_MAX_RETRIES": "0",
        "LIZ_FACTS_RECONCILE_THRESHOLD": "0.99",  # each fact stands alone
        "LIZ_LEARN_AFTER_IDLE": idle,
        "LIZ_LEARNING_POLL_SECONDS": "0.5",
    }


def facts_per_message(database: Path) -> list[int]:
    """How many facts were learned from each message the users said."""
    with sqlite3.connect(database) as db:
        rows = db.execute(
            'SELECT count(f.id) FROM "Memory" m LEFT JOIN "Fact" f ON f."sourceMemoryId" = m.id '
            "WHERE m.generator = 'external' GROUP BY m.id"
        ).fetchall()
    return [int(count) for (count,) in rows]


def wait_until_learned(url: str) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        learning: dict[str, Any] = httpx.get(f"{url}/health", timeout=5).json()["learning"]
        if learning["pending"] == 0:
            break
        time.sleep(0.2)
    return learning


def test_a_burst_gathering_when_the_process_is_killed_is_learned_once_by_the_next(
    tmp_path: Path,
) -> None:
    brain = Extractions()
    server = ScriptedOpenAI()
    server.respond_with(brain)
    database = tmp_path / "liz.db"
    with server.serve() as base_url:
        env = env_of(base_url, database, idle="2")
        with serving(env, tmp_path) as (process, url):
            talk(url)
            # Killed while the bursts gather (a few milliseconds of the two seconds).
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        assert brain.calls == []
        assert facts_per_message(database) == [0] * 5  # every message stored, none learned

        with serving(env, tmp_path) as (_, url):
            assert wait_until_learned(url)["pending"] == 0
    assert sorted(brain.calls) == sorted(SAID.values())  # each user's burst in one call
    assert facts_per_message(database) == [1] * 5  # each learned, once


def test_a_clean_stop_learns_the_bursts_gathering(tmp_path: Path) -> None:
    brain = Extractions()
    server = ScriptedOpenAI()
    server.respond_with(brain)
    database = tmp_path / "liz.db"
    with (
        server.serve() as base_url,
        serving(env_of(base_url, database, idle="3600"), tmp_path) as (process, url),
    ):
        talk(url)
        health = httpx.get(f"{url}/health", timeout=5).json()["learning"]
        assert health["pending"] == 5 and health["oldestPendingSeconds"] is not None
        # uvicorn shuts down gracefully, then ends the process with the signal it got.
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    assert sorted(brain.calls) == sorted(SAID.values())
    assert facts_per_message(database) == [1] * 5
