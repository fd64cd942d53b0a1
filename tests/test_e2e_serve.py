"""`liz serve` as a process, the scripted LLM over real HTTP, a real SQLite file."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.serve_process import liz_serve

pytestmark = pytest.mark.slow


def numbered_replies() -> Callable[[RecordedRequest], str | dict[str, object]]:
    """Chat turns get "reply 1", "reply 2", ...; fact extraction (structured) gets no facts."""
    turns = itertools.count(1)

    def answer(request: RecordedRequest) -> str | dict[str, object]:
        if request.body.get("response_format"):
            return {"facts": []}
        return f"reply {next(turns)}"

    return answer


def test_three_messages_are_remembered_across_turns(tmp_path: Path) -> None:
    server = ScriptedOpenAI()
    server.respond_with(numbered_replies())
    with server.serve() as base_url:
        env = {
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": "test",
            "DATABASE_URL": f"file:{tmp_path / 'e2e.db'}",
            "LIZ_LLM_MAX_RETRIES": "0",
        }
        with liz_serve(env, tmp_path) as url:
            for text in ("I run a bakery.", "Rent went up 20%.", "What should I do?"):
                body = {"input": {"agentId": "business-advisor", "userId": "ann", "text": text}}
                response = httpx.post(f"{url}/agent/input", json=body, timeout=30)
                assert response.status_code == 200, response.text
    replies = [r for r in server.chat_requests if not r.body.get("response_format")]
    assert len(replies) == 3
    third = replies[2].prompt
    for said in ("I run a bakery.", "reply 1", "Rent went up 20%.", "reply 2", "What should I do?"):
        assert said in third
    assert third.index("I run a bakery.") < third.index("reply 1") < third.index("Rent went up")

    with sqlite3.connect(tmp_path / "e2e.db") as db:
        rows = db.execute('SELECT generator, count(*) FROM "Memory" GROUP BY generator').fetchall()
    assert dict(rows) == {"external": 3, "llm": 3}
