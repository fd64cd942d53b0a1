"""The `liz` command as a user runs it: a real process, a real SQLite file."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.serve_process import liz_serve
from tests.serve_process import run_liz as liz

pytestmark = pytest.mark.slow


def scripted_agent_llm(reply: str) -> ScriptedOpenAI:
    """The CLI is an internal source, so the router chooses between both routes."""
    server = ScriptedOpenAI()

    def answer(request: RecordedRequest) -> str | dict[str, object]:
        if request.schema_name == "RouteChoice":
            return {"route": "conversation", "confidence": 0.9, "reasoning": "a question"}
        if request.body.get("response_format"):
            return {"facts": []}
        return reply

    server.respond_with(answer)
    return server


def test_db_upgrade_creates_the_tables(tmp_path: Path) -> None:
    result = liz("db", "upgrade", env={"DATABASE_URL": "file:./prisma/dev.db"}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "database created" in result.stdout
    again = liz("db", "upgrade", env={"DATABASE_URL": "file:./prisma/dev.db"}, cwd=tmp_path)
    assert again.returncode == 0 and "database is up to date" in again.stdout
    with sqlite3.connect(tmp_path / "prisma" / "dev.db") as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"Memory", "Tweet"} <= tables


def test_a_bad_database_url_is_a_clear_error(tmp_path: Path) -> None:
    result = liz("db", "upgrade", env={"DATABASE_URL": "mysql://x/y"}, cwd=tmp_path)
    assert result.returncode == 2
    assert "error:" in result.stderr and "DATABASE_URL" in result.stderr


def test_chat_in_process_answers_each_line(tmp_path: Path) -> None:
    server = scripted_agent_llm("Sell more pie.")
    with server.serve() as base_url:
        env = {
            "OPENAI_BASE_URL": base_url,
            "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'chat.db'}",
        }
        result = liz(
            "chat",
            "--agent",
            "business-advisor",
            "--user",
            "ann",
            env=env,
            cwd=tmp_path,
            stdin="How do I grow?\nAnd then?\n",
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("Morgan> Sell more pie.") == 2
    with sqlite3.connect(tmp_path / "chat.db") as db:
        count = db.execute('SELECT count(*) FROM "Memory" WHERE "userId" = ?', ("ann",)).fetchone()
    assert count == (4,)


def test_chat_against_a_running_server(tmp_path: Path) -> None:
    server = ScriptedOpenAI()
    server.respond_with(
        lambda request: {"facts": []} if request.body.get("response_format") else "Hello there."
    )
    with server.serve() as base_url:
        env = {
            "OPENAI_BASE_URL": base_url,
            "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'remote.db'}",
        }
        with liz_serve(env, tmp_path) as url:
            result = liz(
                "chat",
                "--agent",
                "business-advisor",
                "--url",
                url,
                env={},
                cwd=tmp_path,
                stdin="Hi\n",
            )
    assert result.returncode == 0, result.stderr
    assert "Morgan> Hello there." in result.stdout


def test_chat_with_an_unknown_agent_names_the_known_ones(tmp_path: Path) -> None:
    env = {
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'x.db'}",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    result = liz("chat", "--agent", "nobody", env=env, cwd=tmp_path, stdin="hi\n")
    assert result.returncode == 2
    assert "unknown agent 'nobody'" in result.stderr and "business-advisor" in result.stderr


def test_serve_on_postgres_without_pgvector_names_the_fix(
    plain_postgres_url: str, tmp_path: Path
) -> None:
    env = {"DATABASE_URL": plain_postgres_url, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    result = liz("serve", "--port", "9", env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert "pgvector" in result.stderr and "LIZ_FACTS_ENABLED=false" in result.stderr


def test_serve_on_postgres_without_pgvector_runs_with_facts_off(
    plain_postgres_url: str, tmp_path: Path
) -> None:
    server = scripted_agent_llm("Fine without facts.")
    with server.serve() as base_url:
        env = {
            "DATABASE_URL": plain_postgres_url,
            "OPENAI_BASE_URL": base_url,
            "LIZ_FACTS_ENABLED": "false",
        }
        with liz_serve(env, tmp_path) as url:
            body = {"input": {"agentId": "business-advisor", "userId": "u", "text": "Hi"}}
            response = httpx.post(f"{url}/agent/input", json=body, timeout=30)
    assert response.status_code == 200 and response.json()["text"] == "Fine without facts."
    assert all(not r.body.get("response_format") for r in server.chat_requests)


def test_serve_without_an_llm_starts_warns_once_and_answers_503(tmp_path: Path) -> None:
    env = {
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'nollm.db'}",
        "OPENAI_API_KEY": "",
        "OPENAI_BASE_URL": "",
        "OPENROUTER_API_KEY": "",
    }
    with liz_serve(env, tmp_path) as url:
        assert httpx.get(f"{url}/health").json()["llm"] == "not configured"
        assert httpx.get(f"{url}/agents").status_code == 200
        body = {"input": {"agentId": "business-advisor", "userId": "u", "text": "Hi"}}
        response = httpx.post(f"{url}/agent/input", json=body)
        port = url.rsplit(":", 1)[1]
    assert response.status_code == 503 and "OPENAI_BASE_URL" in response.json()["error"]
    log = (tmp_path / f"serve-{port}.log").read_text()
    assert log.count("no LLM configured") == 1


def test_the_command_loads_no_library_it_does_not_need_to_start() -> None:
    """`liz --help` and every command's start: heavy libraries wait for the command
    that uses them (loading twitter-text and the settings tripled `liz --help`)."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, liz.cli; print(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    heavy = {"twitter_text", "pydantic_settings", "sqlalchemy", "openai", "starlette"}
    assert heavy.isdisjoint(loaded), sorted(heavy.intersection(loaded))
