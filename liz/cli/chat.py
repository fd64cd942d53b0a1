"""``liz chat``: talk to an agent at the prompt, in-process or against a running server."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from liz.cli.failing import fail, reported
from liz.cli.options import (
    AgentsOption,
    ScriptedOption,
    TargetArgument,
    configure_logging,
    load,
    pick_agent,
)

if TYPE_CHECKING:
    import httpx

    from liz.app import App

CHOOSING = "to talk to"


def chat(
    target: TargetArgument = None,
    agent: Annotated[
        str, typer.Option("--agent", help="The agent id to talk to; default: the only one.")
    ] = "",
    url: Annotated[
        str | None, typer.Option(help="A running server (http://host:port); default: in-process.")
    ] = None,
    user: Annotated[str | None, typer.Option(help="Your user id; default: a new one.")] = None,
    agents: AgentsOption = None,
    scripted: ScriptedOption = False,
) -> None:
    """Talk to an agent at the prompt. An empty line or Ctrl-D ends the chat."""
    import uuid

    from liz.cli.scripted import scripted_llm_if_asked

    configure_logging("warning")
    if url and scripted:
        fail(
            "--scripted runs the agents in this process; a server at --url answers with its own LLM"
        )
    user_id = user or f"cli-{uuid.uuid4().hex[:8]}"
    with reported():
        if url:
            failures = asyncio.run(chat_remote(url, agent, user_id))
        else:
            with scripted_llm_if_asked(scripted):
                failures = asyncio.run(chat_local(load(target, agents), agent, user_id))
    if failures:
        raise typer.Exit(1)


def _prompt() -> str | None:
    if sys.stdin.isatty():
        sys.stdout.write("you> ")
        sys.stdout.flush()
    line = sys.stdin.readline()
    return line.strip() or None


def _say_error(message: str) -> None:
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)


async def chat_local(app: App, agent_id: str, user_id: str) -> int:
    """Chat through the app's own chain; returns how many turns failed."""
    from liz.types import InputObject, InputSource

    agent_id = pick_agent(app.agents, agent_id, doing=CHOOSING)
    agent = app.agent(agent_id)
    failures = 0
    async with app.open() as framework:
        while (text := await asyncio.to_thread(_prompt)) is not None:
            input = InputObject(
                source=InputSource.CLI, user_id=user_id, agent_id=agent_id, text=text
            )
            res = await framework.process(input, agent)
            if res.reply is not None:
                typer.echo(f"{agent.name}> {res.reply.text}")
            elif res.error is not None:
                failures += 1
                _say_error(res.error.message)
    return failures


async def chat_remote(url: str, agent_id: str, user_id: str) -> int:
    """Chat with a running server over HTTP; returns how many turns failed."""
    import httpx

    from liz.errors import LizError

    failures = 0
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        names = await _agent_names(client, url)
        agent_id = pick_agent(names, agent_id, doing=CHOOSING)
        label = names.get(agent_id, agent_id)
        while (text := await asyncio.to_thread(_prompt)) is not None:
            body = {"input": {"agentId": agent_id, "userId": user_id, "text": text}}
            try:
                response = await client.post("/agent/input", json=body)
            except httpx.HTTPError as exc:
                raise LizError(f"cannot reach {url}: {exc}") from exc
            try:
                data = response.json()
            except ValueError:
                data = {"error": response.text[:200]}
            if response.is_success:
                typer.echo(f"{label}> {data['text']}")
            else:
                failures += 1
                _say_error(f"{response.status_code}: {data.get('error')}")
    return failures


async def _agent_names(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    """The server's agents, id to name (GET /agents); none when it will not list them."""
    import httpx

    from liz.errors import LizError

    try:
        response = await client.get("/agents")
    except httpx.HTTPError as exc:
        raise LizError(f"cannot reach {url}: {exc}") from exc
    if not response.is_success:
        return {}
    listed = response.json().get("agents", [])
    return {agent["agentId"]: agent.get("name") or agent["agentId"] for agent in listed}
