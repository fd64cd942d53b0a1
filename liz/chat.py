"""``liz chat``: talk to an agent at the prompt, in-process or against a running server."""

from __future__ import annotations

import asyncio
import sys

import httpx
import typer

from liz.app import App
from liz.errors import LizError
from liz.types import InputObject, InputSource


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
    failures = 0
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
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
                typer.echo(f"{agent_id}> {data['text']}")
            else:
                failures += 1
                _say_error(f"{response.status_code}: {data.get('error')}")
    return failures
