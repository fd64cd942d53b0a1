"""MCP servers' tools in an agent's turns: over stdio and Streamable HTTP, killed mid-run,
configured in a character file, and a server that cannot start."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from liz.agent import BaseAgent
from liz.character import Character
from liz.routes import conversation
from liz.testing.openai_server import ScriptedOpenAI, call_tool
from liz.tools.mcp_servers import MCPServerError, http_server, stdio_server
from tests.tools_world import _no_facts, events_of, say, served, stream, tool_agent, tool_app

__all__ = ["_no_facts"]

CLERK = {"agentId": "clerk", "name": "Clerk", "system": "You help."}
SHOP = str(Path(__file__).parent / "data" / "mcp_shop_server.py")
NOISY = str(Path(__file__).parent / "data" / "mcp_noisy_server.py")


def shop_over_stdio() -> BaseAgent:
    agent = tool_agent()
    agent.add_mcp_server(stdio_server("shop", sys.executable, [SHOP]))
    return agent


@pytest.fixture
def shop_over_http() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, SHOP, "http", str(port)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the MCP server over HTTP did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.parametrize("streaming", [False, True])
def test_a_stdio_servers_tool_answers_in_a_turn(database_url: str, streaming: bool) -> None:
    scripted = ScriptedOpenAI()
    scripted.reply(call_tool("mcp__shop__stock", {"item": "tea"}), "We have 7.")
    with scripted.serve() as url, served(tool_app(shop_over_stdio(), database_url, url)) as client:
        if streaming:
            events = events_of(stream(client, "/agent/input", say()))
            assert events[-1][1]["text"] == "We have 7."
        else:
            assert client.post("/agent/input", json=say()).json()["text"] == "We have 7."
        assert client.get("/health").json()["mcp"]["clerk/shop"]["status"] == "running"
    assert "mcp__shop__stock" in scripted.chat_requests[0].tool_names
    assert scripted.chat_requests[1].tool_results == [{"result": "tea: 7 in stock"}]


def test_an_http_servers_tool_answers_in_a_turn(database_url: str, shop_over_http: str) -> None:
    agent = tool_agent()
    agent.add_mcp_server(http_server("shop", shop_over_http, {"X-Shop": "liz"}))
    scripted = ScriptedOpenAI()
    scripted.reply(call_tool("mcp__shop__stock", {"item": "rice"}), "Rice: 7.")
    with scripted.serve() as url, served(tool_app(agent, database_url, url)) as client:
        assert client.post("/agent/input", json=say()).json()["text"] == "Rice: 7."
    assert scripted.chat_requests[1].tool_results == [{"result": "rice: 7 in stock"}]


def test_a_killed_server_answers_with_an_error_then_comes_back(database_url: str) -> None:
    scripted = ScriptedOpenAI()
    with scripted.serve() as url, served(tool_app(shop_over_stdio(), database_url, url)) as client:
        scripted.reply(call_tool("mcp__shop__pid"), "Noted.")
        client.post("/agent/input", json=say())
        pid = scripted.chat_requests[-1].tool_results[0]["result"]
        os.kill(pid, signal.SIGKILL)

        scripted.reply(call_tool("mcp__shop__stock", {"item": "tea"}), "The shop is away.")
        events = events_of(stream(client, "/agent/input", say()))
        result = next(data for name, data in events if name == "tool_result")
        assert result["ok"] is False and result["error"]
        assert events[-1][1]["text"] == "The shop is away."

        health = {}
        for _ in range(200):  # restarted with backoff; /health says so
            health = client.get("/health").json()["mcp"]["clerk/shop"]
            if health["status"] == "running" and health["restarts"] >= 1:
                break
            time.sleep(0.05)
        assert health["status"] == "running" and health["restarts"] >= 1

        scripted.reply(call_tool("mcp__shop__stock", {"item": "tea"}), "Back: 7.")
        assert client.post("/agent/input", json=say()).json()["text"] == "Back: 7."
        assert scripted.chat_requests[-1].tool_results == [{"result": "tea: 7 in stock"}]


def test_a_character_files_mcp_servers_start_with_env_interpolated(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_SECRET", "s3cret")
    path = tmp_path / "clerk.json"
    servers = {
        "shop": {"command": sys.executable, "args": [SHOP], "env": {"SHOP_TOKEN": "${SHOP_SECRET}"}}
    }
    path.write_text(
        json.dumps(
            {"agentId": "clerk", "name": "Clerk", "system": "You help.", "mcpServers": servers}
        )
    )
    agent = BaseAgent(Character.from_json_file(path))
    agent.add_route(conversation)
    scripted = ScriptedOpenAI()
    scripted.reply(call_tool("mcp__shop__secret"), "Got it.")
    with scripted.serve() as url, served(tool_app(agent, database_url, url)) as client:
        client.post("/agent/input", json=say())
    assert scripted.chat_requests[-1].tool_results == [{"result": "s3cret"}]


def test_a_character_file_server_needs_a_command_or_a_url(tmp_path: Path) -> None:
    path = tmp_path / "clerk.json"
    path.write_text(
        json.dumps(
            {"agentId": "clerk", "name": "Clerk", "system": "You help.", "mcpServers": {"shop": {}}}
        )
    )
    with pytest.raises(ValueError, match="command"):
        Character.from_json_file(path)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("server", "words"),
    [
        (
            stdio_server("broken", sys.executable, ["-c", "import sys; sys.exit(3)"]),
            ["'broken'", "could not start"],
        ),
        (
            stdio_server("needs", "${NO_SUCH_VARIABLE_FOR_LIZ}"),
            ["'needs'", "NO_SUCH_VARIABLE_FOR_LIZ"],
        ),
    ],
)
async def test_a_server_that_cannot_start_is_named_in_one_line(
    database_url: str, server: object, words: list[str]
) -> None:
    agent = tool_agent()
    agent.add_mcp_server(server)  # type: ignore[arg-type]
    app = tool_app(agent, database_url, "http://127.0.0.1:9/v1")
    with pytest.raises(MCPServerError) as failed:
        async with app.open():
            pass
    message = str(failed.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_health_names_no_mcp_when_there_is_none(database_url: str) -> None:
    with (
        ScriptedOpenAI().serve() as url,
        served(tool_app(tool_agent(), database_url, url)) as client,
    ):
        assert "mcp" not in client.get("/health").json()


def test_a_server_writing_garbage_to_stdout_is_logged_at_a_bounded_rate_and_restarted(
    database_url: str,
) -> None:
    noisy = tool_agent()
    noisy.add_mcp_server(stdio_server("noisy", sys.executable, [NOISY]))
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    try:
        with scripted_url() as url, served(tool_app(noisy, database_url, url)) as client:
            health: dict[str, Any] = {}
            for _ in range(300):  # it is restarted, with backoff
                health = client.get("/health").json()["mcp"]["clerk/noisy"]
                if health["restarts"] >= 2:
                    break
                time.sleep(0.02)
            time.sleep(2)  # a couple of seconds more of garbage, a thousand lines each
    finally:
        logging.getLogger().removeHandler(handler)
    assert health["restarts"] >= 2
    written = log.getvalue()
    assert "Traceback" not in written
    # One line for the first bad line of each run of the server, not one per line.
    first_lines = written.count("wrote a line that is not JSON-RPC to its stdout")
    assert 1 <= first_lines <= written.count("restarting it") + 1
    assert "lines that are not JSON-RPC within 10 s" in written and "restarting it" in written
    # A handful of lines per restart, however many thousand lines the server wrote.
    assert len(written.encode()) < 400 * written.count("restarting it") + 2_000, written


@contextmanager
def scripted_url() -> Iterator[str]:
    with ScriptedOpenAI().serve() as url:
        yield url
