"""Character folders as a user meets them: `liz agents check`, and `liz serve` at start."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.serve_process import free_port

pytestmark = pytest.mark.slow

CHARACTERS = Path(__file__).parent / "data" / "characters"
BAD = CHARACTERS / "bad"
LIZ = str(Path(sys.executable).parent / "liz")


def liz(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LIZ, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_lists_every_agent_with_its_format_and_ignored_fields(tmp_path: Path) -> None:
    result = liz("agents", "check", str(CHARACTERS), cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for agent_id, form in [
        ("juniper", "elizaos"),
        ("otto-brenner", "eliza-v1"),
        ("marisol", "eliza-v0"),
        ("tobias", "characterfile"),
        ("quill", "liz"),
        ("hearth", "liz-profile"),
    ]:
        assert f"ok   {agent_id}  " in out and f"format {form}  " in out
    assert "liz does not use: username, plugins, settings, knowledge, templates" in out
    assert "liz does not use: clients, modelProvider, settings, knowledge, people" in out
    assert "liz does not use: metadata" in out
    assert "6 agent(s) ready, 0 file(s) refused" in out


def test_check_lists_every_bad_file_and_exits_non_zero(tmp_path: Path) -> None:
    folder = tmp_path / "agents"
    shutil.copytree(BAD, folder)
    shutil.copy(CHARACTERS / "eliza_v1.json", folder)

    result = liz("agents", "check", str(folder), cwd=tmp_path)

    assert result.returncode == 1
    out = result.stdout
    assert "ok   otto-brenner  " in out
    for name, why in [
        ("no_name.json", "`name` is missing"),
        ("only_a_name.json", "nothing says who Nobody In Particular is"),
        ("broken_examples.json", "messageExamples[1] is not a conversation"),
        ("truncated.json", "not valid JSON"),
    ]:
        assert f"bad  {folder / name}: " in out and why in out
    assert "1 agent(s) ready, 4 file(s) refused" in out


def test_check_of_the_bundled_agents_passes_and_a_missing_folder_is_a_usage_error(
    tmp_path: Path,
) -> None:
    bundled = liz("agents", "check", cwd=tmp_path)
    assert bundled.returncode == 0, bundled.stdout + bundled.stderr
    assert "ok   business-advisor  name 'Morgan'  format python" in bundled.stdout

    missing = liz("agents", "check", str(tmp_path / "nope"), cwd=tmp_path)
    assert missing.returncode == 2
    assert "does not exist" in missing.stderr


def test_serve_refuses_to_start_and_names_every_bad_file(tmp_path: Path) -> None:
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'liz.db'}"}
    result = liz("serve", "--port", str(free_port()), "--agents", str(BAD), cwd=tmp_path, env=env)

    assert result.returncode != 0
    assert "4 agent files" in result.stderr
    for name in ("no_name.json", "only_a_name.json", "broken_examples.json", "truncated.json"):
        assert name in result.stderr


@contextmanager
def serving(agents: Path, env: dict[str, str], cwd: Path) -> Iterator[tuple[str, Path]]:
    """``liz serve --agents DIR`` until the block ends; yields its URL and its log file."""
    port = free_port()
    log = cwd / "serve.log"
    command = [LIZ, "serve", "--host", "127.0.0.1", "--port", str(port), "--agents", str(agents)]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=cwd, env={**os.environ, **env}, stdout=output, stderr=subprocess.STDOUT
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while process.poll() is None and time.monotonic() < deadline:
                try:
                    if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            else:
                raise RuntimeError(f"liz serve did not start:\n{log.read_text()}")
            yield url, log
        finally:
            process.terminate()
            process.wait(timeout=15)


def test_served_eliza_character_speaks_as_itself_and_start_lists_ignored_fields(
    tmp_path: Path,
) -> None:
    llm = ScriptedOpenAI()

    def answer(request: RecordedRequest) -> str | dict[str, object]:
        if request.response_format:  # the facts steps, when they are on
            return {"facts": []}
        return "Gulls everywhere, and the lamp to tend."

    llm.respond_with(answer)
    with llm.serve() as base_url:
        env = {
            "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'liz.db'}",
            "OPENAI_BASE_URL": base_url,
        }
        with serving(CHARACTERS, env, tmp_path) as (url, log):
            body = {"input": {"agentId": "juniper", "userId": "visitor", "text": "Hi there"}}
            response = httpx.post(f"{url}/agent/input", json=body, timeout=30)
        started = log.read_text()

    assert response.status_code == 200, response.text
    assert response.json()["text"] == "Gulls everywhere, and the lamp to tend."
    [reply_request] = [r for r in llm.chat_requests if not r.response_format]
    system = reply_request.messages[0]["content"]
    assert system.startswith("You are Juniper.")
    assert "Keeps the lighthouse on Gull Rock" in system
    assert "Alex: Is it lonely out there, Juniper?" in reply_request.prompt
    assert "{{" not in reply_request.prompt
    for name in ("elizaos_current.json", "eliza_v1.json", "eliza_v0.json", "liz_profile.json"):
        assert started.count(f"{name}: liz does not use the fields") == 1


def test_check_names_an_mcp_server_that_could_not_start(tmp_path: Path) -> None:
    """An unset ${VAR} or a command not on PATH is found by the check, not at serve time."""
    folder = tmp_path / "agents"
    folder.mkdir()
    servers = {
        "crm": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "${LIZ_TEST_CRM_KEY}"}},
        "files": {"command": "no-such-mcp-server-command", "args": ["/srv"]},
        "clock": {"command": sys.executable, "args": ["-m", "clock"]},
    }
    character = {"agentId": "shop", "name": "Shop", "system": "You help.", "mcpServers": servers}
    (folder / "shop.json").write_text(json.dumps(character))

    result = liz("agents", "check", str(folder), cwd=tmp_path)

    assert result.returncode == 1, result.stdout + result.stderr
    bad = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("bad")]
    assert bad == [
        "bad  shop.json: MCP server 'crm' uses ${LIZ_TEST_CRM_KEY}, but the variable "
        "LIZ_TEST_CRM_KEY is not set",
        "bad  shop.json: MCP server 'files': the command 'no-such-mcp-server-command' is not on "
        "PATH; install it or give its full path",
    ]
