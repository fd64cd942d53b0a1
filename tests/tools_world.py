"""What the tools tests share: an App with tools served over real HTTP (uvicorn, its
lifespan on), against the scripted model over real HTTP, and reading its SSE streams."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from jsonschema import Draft202012Validator

from liz.agent import BaseAgent
from liz.app import App
from liz.character import Character
from liz.config import Settings
from liz.routes import conversation
from liz.types import Clock


@pytest.fixture(autouse=True)
def _no_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    # Learning would ask the scripted model for facts after each turn, taking its answers.
    monkeypatch.setenv("LIZ_FACTS_ENABLED", "false")


def tool_agent(agent_id: str = "clerk") -> BaseAgent:
    agent = BaseAgent(Character(agent_id=agent_id, name="Clerk", system="You help with orders."))
    agent.add_route(conversation)
    return agent


def tool_app(
    agent: BaseAgent, database_url: str, llm_url: str, clock: Clock | None = None, **options: Any
) -> App:
    settings = Settings(
        _env_file=None,
        database_url=database_url,
        openai_base_url=llm_url,
        openai_api_key="scripted-key",
        **options,
    )
    return App([agent], settings=settings, migrate=False, clock=clock)


@contextmanager
def served(app: App) -> Iterator[httpx.Client]:
    """``app`` on uvicorn in a thread, its lifespan (MCP servers, the runtime) run; a client."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    config = uvicorn.Config(app, log_config=None, lifespan="on", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]})
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(10)
            raise RuntimeError("the app did not start")
        time.sleep(0.02)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            yield client
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()


def say(user: str = "ann", text: str = "Where is my order?") -> dict[str, Any]:
    return {"input": {"agentId": "clerk", "userId": user, "text": text}}


def events_of(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of a server-sent events body."""
    events = []
    for block in response.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


def stream(client: httpx.Client, path: str, body: dict[str, Any], **kw: Any) -> httpx.Response:
    headers = {"accept": "text/event-stream", **kw.pop("headers", {})}
    return client.post(path, json=body, headers=headers, **kw)


def matches(document: dict[str, Any], schema_name: str, body: Any) -> None:
    """Raise when ``body`` does not follow the API document's schema ``schema_name``."""
    root = {"$ref": f"#/components/schemas/{schema_name}", "components": document["components"]}
    Draft202012Validator(root).validate(body)
