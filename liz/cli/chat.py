"""``liz chat``: talk to an agent at the prompt, in-process or against a running server.

When the agent wants to run a tool that needs approval, the prompt asks: ``y`` runs the
call, ``n`` denies it, anything else leaves it waiting (``POST /agent/approvals/{id}``
can still decide it).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

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

    from liz.agent import BaseAgent
    from liz.app import App
    from liz.runtime.services import Runtime
    from liz.types import AgentReply

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


ANSWERS = {"y": True, "yes": True, "n": False, "no": False}


def _ask(name: str, pending: dict[str, Any]) -> bool | None:
    """Whether the user lets ``name`` make the call ``pending``; None leaves it waiting."""
    arguments = json.dumps(pending.get("arguments"), ensure_ascii=False)
    # Asked even when stdin is not a terminal: what is approved must be on the record.
    sys.stdout.write(f"{name} asks to run {pending.get('tool')}({arguments}). Allow it? [y/n] ")
    sys.stdout.flush()
    return ANSWERS.get(sys.stdin.readline().strip().lower())


def _left_waiting(pending: dict[str, Any]) -> None:
    typer.echo(f"(left waiting: approval {pending.get('id')}, until {pending.get('expiresAt')})")


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
                failures += await _decide_in_process(framework.runtime, agent, _pending(res.reply))
            elif res.error is not None:
                failures += 1
                _say_error(res.error.message)
    return failures


def _pending(reply: AgentReply) -> dict[str, Any] | None:
    """The call the reply waits on, as the server would send it."""
    pending = reply.pending_approval
    return None if pending is None else pending.model_dump(mode="json", by_alias=True)


async def _decide_in_process(
    runtime: Runtime, agent: BaseAgent, pending: dict[str, Any] | None
) -> int:
    """Ask about each call the agent waits on, and carry the decision out; 1 if that failed."""
    from liz.errors import LizError
    from liz.tools.approvals import claim_decision, load_approval, resume
    from liz.tools.turn import decision_turn

    while pending is not None:
        approve = await asyncio.to_thread(_ask, agent.name, pending)
        if approve is None:
            _left_waiting(pending)
            return 0
        try:
            approval = await load_approval(runtime, pending["id"])
            decision = await claim_decision(runtime, approval, approve)
            reply = await resume(decision_turn(runtime, agent, approval), runtime, decision)
        except LizError as exc:
            _say_error(exc.message)
            return 1
        typer.echo(f"{agent.name}> {reply.text}")
        pending = _pending(reply)
    return 0


async def chat_remote(url: str, agent_id: str, user_id: str) -> int:
    """Chat with a running server over HTTP; returns how many turns failed."""
    import httpx

    failures = 0
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        names = await _agent_names(client, url)
        agent_id = pick_agent(names, agent_id, doing=CHOOSING)
        label = names.get(agent_id, agent_id)
        while (text := await asyncio.to_thread(_prompt)) is not None:
            body = {"input": {"agentId": agent_id, "userId": user_id, "text": text}}
            data = await _post(client, url, "/agent/input", body)
            if data is None:
                failures += 1
                continue
            typer.echo(f"{label}> {data['text']}")
            failures += await _decide_remote(client, url, label, data.get("pendingApproval"))
    return failures


async def _decide_remote(
    client: httpx.AsyncClient, url: str, label: str, pending: dict[str, Any] | None
) -> int:
    """Ask about each call the agent waits on, and send the decision; 1 if that failed."""
    while pending is not None:
        approve = await asyncio.to_thread(_ask, label, pending)
        if approve is None:
            _left_waiting(pending)
            return 0
        path = f"/agent/approvals/{pending['id']}"
        decided = await _post(client, url, path, {"approve": approve})
        if decided is None:
            return 1
        typer.echo(f"{label}> {decided['text']}")
        pending = decided.get("pendingApproval")
    return 0


async def _post(
    client: httpx.AsyncClient, url: str, path: str, body: dict[str, Any]
) -> dict[str, Any] | None:
    """The server's JSON answer to ``body``; None, the error said, when it failed."""
    import httpx

    from liz.errors import LizError

    try:
        response = await client.post(path, json=body)
    except httpx.HTTPError as exc:
        raise LizError(f"cannot reach {url}: {exc}") from exc
    try:
        data: dict[str, Any] = response.json()
    except ValueError:
        data = {"error": response.text[:200]}
    if response.is_success:
        return data
    _say_error(f"{response.status_code}: {data.get('error')}")
    return None


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
