"""The application object as a user runs it: their own app served, chatted with, scaffolded."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.serve_process import liz_serve
from tests.serve_process import run_liz as liz

pytestmark = pytest.mark.slow

USER_PROJECT = Path(__file__).parent / "data" / "user_project"


def scripted(reply: str) -> ScriptedOpenAI:
    server = ScriptedOpenAI()

    def answer(request: RecordedRequest) -> str | dict[str, object]:
        if request.schema_name == "RouteChoice":  # `liz chat` may also write posts
            return {"route": "conversation", "confidence": 0.9, "reasoning": "a question"}
        if request.schema_name is not None:
            return {"facts": []}
        return reply

    server.respond_with(answer)
    return server


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of a user's project with its own `middleware.py` and `agents/` package."""
    folder = tmp_path / "project"
    shutil.copytree(USER_PROJECT, folder)
    return folder


@pytest.fixture
def llm_env(tmp_path: Path) -> Iterator[tuple[ScriptedOpenAI, dict[str, str]]]:
    server = scripted("Brown the butter first.")
    with server.serve() as base_url:
        yield (
            server,
            {
                "OPENAI_BASE_URL": base_url,
                "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'app.db'}",
            },
        )


def say(url: str, text: str, agent: str = "chef") -> httpx.Response:
    body = {"input": {"agentId": agent, "userId": "ann", "text": text}}
    return httpx.post(f"{url}/agent/input", json=body, timeout=30)


@pytest.mark.parametrize("target", ["app:app", "app", "app.py", "app.py:app"])
def test_a_user_project_with_its_own_middleware_and_agents_modules_serves(
    project: Path, llm_env: tuple[ScriptedOpenAI, dict[str, str]], target: str
) -> None:
    server, env = llm_env
    with liz_serve(env, project, target=target) as url:
        agents = httpx.get(f"{url}/agents").json()["agents"]
        calm = say(url, "HOW DO I MAKE SAUCE")
        answered = say(url, "How do I make a sauce?")
    assert [a["agentId"] for a in agents] == ["chef"]
    # The app-wide step ran first and wraps everything; the agent's step short-circuits.
    assert calm.json()["text"] == "Let's keep it calm. [app]"
    assert answered.status_code == 200
    assert answered.json()["text"] == "Brown the butter first. [app>agent]"
    assert len(server.chat_requests) >= 1
    assert "Remy" in server.chat_requests[0].prompt + str(server.chat_requests[0].messages)


def test_uvicorn_serves_the_app_object_itself(
    project: Path, llm_env: tuple[ScriptedOpenAI, dict[str, str]]
) -> None:
    _, env = llm_env
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "uvicorn", "app:app", "--port", str(port)]
    process = subprocess.Popen(
        command, cwd=project, env={**os.environ, **env}, stderr=subprocess.PIPE
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None:
                break
            subprocess.run(["sleep", "0.1"], check=True)
        response = say(url, "A quick sauce?")
    finally:
        process.terminate()
        process.wait(timeout=15)
    assert response.status_code == 200
    assert response.json()["text"] == "Brown the butter first. [app>agent]"


def test_chat_runs_the_apps_own_chain(
    project: Path, llm_env: tuple[ScriptedOpenAI, dict[str, str]]
) -> None:
    _, env = llm_env
    result = liz("chat", "app:app", "--agent", "chef", env=env, cwd=project, stdin="STOP\nHi\n")
    assert result.returncode == 0, result.stderr
    assert "Remy> Let's keep it calm. [app]" in result.stdout
    assert "Remy> Brown the butter first. [app>agent]" in result.stdout


def test_chat_exits_non_zero_when_a_turn_failed(project: Path, tmp_path: Path) -> None:
    env = {
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",  # nothing listens there
        "LIZ_LLM_MAX_RETRIES": "0",
        "LIZ_FACTS_ENABLED": "false",
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'down.db'}",
    }
    result = liz("chat", "app:app", "--agent", "chef", env=env, cwd=project, stdin="Hi\n")
    assert result.returncode == 1
    assert "error:" in result.stderr


def test_a_bad_target_says_what_to_write(tmp_path: Path) -> None:
    missing = liz("serve", "nowhere:app", env={}, cwd=tmp_path)
    assert missing.returncode == 2
    assert "no module 'nowhere'" in missing.stderr and "Traceback" not in missing.stderr
    (tmp_path / "thing.py").write_text("app = 42\n")
    wrong = liz("serve", "thing:app", env={}, cwd=tmp_path)
    assert wrong.returncode == 2 and "not a liz.App" in wrong.stderr


def test_a_bad_setting_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    result = liz("db", "upgrade", env={"LIZ_LLM_TIMEOUT": "soon"}, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: bad setting LIZ_LLM_TIMEOUT='soon': Input should be a valid number, "
        "unable to parse string as a number"
    ]


def test_twitter_with_a_bad_transport_names_the_allowed_ones(tmp_path: Path) -> None:
    env = {"TWITTER_TRANSPORT": "bogus", "DATABASE_URL": f"sqlite:///{tmp_path / 't.db'}"}
    result = liz("twitter", "--agent", "business-advisor", env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert "TWITTER_TRANSPORT='bogus'" in result.stderr and "'api', 'twikit' or 'fake'" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr


def test_a_port_flag_wins_over_a_bad_server_port(
    llm_env: tuple[ScriptedOpenAI, dict[str, str]], tmp_path: Path
) -> None:
    _, env = llm_env
    with liz_serve({**env, "SERVER_PORT": "abc"}, tmp_path) as url:
        assert httpx.get(f"{url}/health").status_code == 200


def test_a_port_in_use_is_one_line_with_the_fix(
    llm_env: tuple[ScriptedOpenAI, dict[str, str]], tmp_path: Path
) -> None:
    _, env = llm_env
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = liz("serve", "--port", str(port), env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr
    assert "--port" in result.stderr and "Traceback" not in result.stderr


def test_version(tmp_path: Path) -> None:
    result = liz("--version", env={}, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("liz ")


def test_cors_is_off_by_default_and_on_for_the_listed_origins(
    llm_env: tuple[ScriptedOpenAI, dict[str, str]], tmp_path: Path
) -> None:
    _, env = llm_env
    preflight = {
        "origin": "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
    }
    with liz_serve(env, tmp_path) as url:
        closed = httpx.options(f"{url}/agent/input", headers=preflight)
    with liz_serve(
        {**env, "LIZ_CORS_ORIGINS": "https://app.example, https://b.example"}, tmp_path
    ) as url:
        opened = httpx.options(f"{url}/agent/input", headers=preflight)
        other = httpx.get(f"{url}/health", headers={"origin": "https://evil.example"})
    assert "access-control-allow-origin" not in closed.headers
    assert opened.status_code == 200
    assert opened.headers["access-control-allow-origin"] == "https://app.example"
    assert "access-control-allow-origin" not in other.headers


def test_init_creates_a_project_whose_own_test_passes(tmp_path: Path) -> None:
    created = liz("init", "bistro", env={}, cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    folder = tmp_path / "bistro"
    assert {p.name for p in folder.iterdir()} >= {"app.py", "test_app.py", ".env.example"}
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "default"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "2 passed" in tests.stdout
    again = liz("init", "bistro", env={}, cwd=tmp_path)
    assert again.returncode == 2 and "not empty" in again.stderr


def test_agents_check_reads_an_app_target_without_serving(project: Path) -> None:
    result = liz("agents", "check", "app:app", env={}, cwd=project)
    assert result.returncode == 0, result.stderr
    assert "ok   chef  name 'Remy'" in result.stdout
    missing = liz("agents", "check", "nowhere:app", env={}, cwd=project)
    assert missing.returncode == 2 and "no module 'nowhere'" in missing.stderr
