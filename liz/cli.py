"""The ``liz`` command: serve, chat, db, twitter, memory."""

from __future__ import annotations

import asyncio
import logging
import sys
import uuid
from pathlib import Path
from typing import Annotated

import httpx
import typer
import uvicorn

from liz.agents_cli import agents_app
from liz.config import Settings
from liz.errors import LizError
from liz.memory.cli import memory_app

app = typer.Typer(help="Run liz agents: an HTTP server, a chat prompt, the Twitter loop.")
db_app = typer.Typer(help="Manage the database schema.")
app.add_typer(db_app, name="db")
app.add_typer(memory_app, name="memory")
app.add_typer(agents_app, name="agents")

AgentsOption = Annotated[
    Path | None,
    typer.Option("--agents", help="Folder of agents (*.py, *.json); default: the bundled agents/."),
]


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # The HTTP clients under the openai SDK log every request at INFO.
    for noisy in ("httpx", "httpx2", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))


def fail(message: str) -> typer.Exit:
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    return typer.Exit(2)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind (SERVER_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind (SERVER_PORT).")] = None,
    agents: AgentsOption = None,
    migrate: Annotated[bool, typer.Option(help="Apply database migrations first.")] = True,
    log_level: Annotated[str, typer.Option(help="debug, info, warning, error")] = "info",
) -> None:
    """Serve the agents over HTTP: POST /agent/input, GET /agents, GET /health."""
    from liz.asgi import create_app_for
    from liz.db.migrate import upgrade

    configure_logging(log_level)
    settings = Settings()
    try:
        if migrate:
            upgrade(settings.database_url)
        application = create_app_for(settings, str(agents) if agents else None)
        asyncio.run(_check_runtime(settings))
    except LizError as exc:
        raise fail(exc.message) from exc
    uvicorn.run(
        application,
        host=host or settings.server_host,
        port=port or settings.server_port,
        log_level=log_level,
        log_config=None,
    )


async def _check_runtime(settings: Settings) -> None:
    """Open and close the runtime once, so a broken set-up fails here with a clear message."""
    from liz.bootstrap import open_runtime

    async with open_runtime(settings):
        pass


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Create or update the tables in DATABASE_URL to the latest schema."""
    from liz.db.migrate import upgrade
    from liz.db.url import describe

    configure_logging("warning")
    settings = Settings()
    try:
        upgrade(settings.database_url)
    except LizError as exc:
        raise fail(exc.message) from exc
    typer.echo(f"database is up to date: {describe(settings.database_url)}")


@app.command()
def chat(
    agent: Annotated[str, typer.Option("--agent", help="The agent id to talk to.")],
    url: Annotated[
        str | None, typer.Option(help="A running server (http://host:port); default: in-process.")
    ] = None,
    user: Annotated[str | None, typer.Option(help="Your user id; default: a new one.")] = None,
    agents: AgentsOption = None,
) -> None:
    """Talk to an agent at the prompt. An empty line or Ctrl-D ends the chat."""
    configure_logging("warning")
    user_id = user or f"cli-{uuid.uuid4().hex[:8]}"
    try:
        if url:
            asyncio.run(_chat_remote(url, agent, user_id))
        else:
            asyncio.run(_chat_local(agent, user_id, str(agents) if agents else None))
    except LizError as exc:
        raise fail(exc.message) from exc


def _prompt() -> str | None:
    if sys.stdin.isatty():
        sys.stdout.write("you> ")
        sys.stdout.flush()
    line = sys.stdin.readline()
    return line.strip() or None


async def _chat_local(agent_id: str, user_id: str, agents_dir: str | None) -> None:
    from liz.bootstrap import build_framework, load_agents, open_runtime
    from liz.db.migrate import upgrade
    from liz.types import InputObject, InputSource

    settings = Settings()
    agents = load_agents(agents_dir, prompts_dir=settings.liz_prompts_dir)
    if agent_id not in agents:
        raise LizError(f"unknown agent {agent_id!r}; known: {', '.join(agents)}")
    await asyncio.to_thread(upgrade, settings.database_url)
    async with open_runtime(settings) as runtime:
        framework = build_framework(runtime)
        while (text := await asyncio.to_thread(_prompt)) is not None:
            input = InputObject(
                source=InputSource.CLI, user_id=user_id, agent_id=agent_id, text=text
            )
            res = await framework.process(input, agents[agent_id])
            if res.reply is not None:
                typer.echo(f"{agents[agent_id].name}> {res.reply.text}")
            elif res.error is not None:
                typer.secho(f"error: {res.error.message}", err=True, fg=typer.colors.RED)


@app.command()
def twitter(
    agent: Annotated[str, typer.Option("--agent", help="The agent id that runs the account.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Write and log posts and replies; post nothing.")
    ] = False,
    agents: AgentsOption = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning, error")] = "info",
) -> None:
    """Run the agent's X account: scheduled posts and replies to mentions (TWITTER_* settings)."""
    from liz.twitter.cli import run_twitter

    configure_logging(log_level)
    try:
        asyncio.run(run_twitter(agent, dry_run=dry_run, agents_dir=str(agents) if agents else None))
    except LizError as exc:
        raise fail(exc.message) from exc
    except KeyboardInterrupt:
        typer.echo("stopped")


async def _chat_remote(url: str, agent_id: str, user_id: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        while (text := await asyncio.to_thread(_prompt)) is not None:
            body = {"input": {"agentId": agent_id, "userId": user_id, "text": text}}
            try:
                response = await client.post("/agent/input", json=body)
            except httpx.HTTPError as exc:
                raise LizError(f"cannot reach {url}: {exc}") from exc
            data = response.json()
            if response.is_success:
                typer.echo(f"{agent_id}> {data['text']}")
            else:
                typer.secho(f"error {response.status_code}: {data.get('error')}", err=True)
