"""The ``liz`` command: serve, chat, twitter, init, db, facts, agents.

Each command imports what it needs when it runs, so ``liz --help`` and shell
completion stay fast.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from liz.errors import LizError

if TYPE_CHECKING:
    from liz.app import App

# Plain help (no rich rendering): `liz --help` and shell completion start in a blink.
app = typer.Typer(
    help="Run liz agents: an HTTP server, a chat prompt, the Twitter loop.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(
    help="Manage the database schema.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(db_app, name="db")

TargetArgument = Annotated[
    str | None,
    typer.Argument(
        help="Your app, as MODULE:ATTRIBUTE (myapp:app) or a .py file; "
        "default: the agents of --agents with the standard chain.",
        show_default=False,
    ),
]
AgentsOption = Annotated[
    Path | None,
    typer.Option("--agents", help="Folder of agents (*.py, *.json); default: the bundled agents."),
]
LogLevelOption = Annotated[str, typer.Option(help="debug, info, warning, error")]


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # The HTTP clients under the openai SDK log every request at INFO.
    for noisy in ("httpx", "httpx2", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))


def fail(message: str, code: int = 2) -> NoReturn:
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"liz {version('liz')}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Run liz agents: an HTTP server, a chat prompt, the Twitter loop."""


def _load(target: str | None, agents: Path | None) -> App:
    from liz.target import load_app

    return load_app(target, agents_dir=agents)


@app.command()
def serve(
    target: TargetArgument = None,
    host: Annotated[str | None, typer.Option(help="Address to bind (SERVER_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind (SERVER_PORT).")] = None,
    agents: AgentsOption = None,
    migrate: Annotated[bool, typer.Option(help="Apply database migrations first.")] = True,
    log_level: LogLevelOption = "info",
) -> None:
    """Serve the app over HTTP: POST /agent/input, GET /agents, GET /health, the facts API."""
    from liz.serving import serve_app

    configure_logging(log_level)
    try:
        serve_app(_load(target, agents), host=host, port=port, migrate=migrate, log_level=log_level)
    except LizError as exc:
        fail(exc.message)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Create or update the tables in DATABASE_URL to the latest schema."""
    from liz.config import Settings
    from liz.db.migrate import upgrade
    from liz.db.url import describe
    from liz.settings_errors import load_settings

    configure_logging("warning")
    try:
        settings = load_settings(Settings)
        upgrade(settings.database_url)
    except LizError as exc:
        fail(exc.message)
    typer.echo(f"database is up to date: {describe(settings.database_url)}")


@app.command()
def chat(
    target: TargetArgument = None,
    agent: Annotated[str, typer.Option("--agent", help="The agent id to talk to.")] = "",
    url: Annotated[
        str | None, typer.Option(help="A running server (http://host:port); default: in-process.")
    ] = None,
    user: Annotated[str | None, typer.Option(help="Your user id; default: a new one.")] = None,
    agents: AgentsOption = None,
) -> None:
    """Talk to an agent at the prompt. An empty line or Ctrl-D ends the chat."""
    import asyncio
    import uuid

    from liz.chat import chat_local, chat_remote

    configure_logging("warning")
    if not agent:
        fail("name the agent to talk to with --agent ID (GET /agents or `liz agents check`)")
    user_id = user or f"cli-{uuid.uuid4().hex[:8]}"
    try:
        if url:
            failures = asyncio.run(chat_remote(url, agent, user_id))
        else:
            failures = asyncio.run(chat_local(_load(target, agents), agent, user_id))
    except LizError as exc:
        fail(exc.message)
    if failures:
        raise typer.Exit(1)


class _RunUnlessNamed(TyperGroup):
    """``liz twitter`` runs the bot, as it always did: arguments that name no command of
    the group (a TARGET, ``--agent``) are the ``run`` command's, so ``liz twitter outbox``
    could be added without changing ``liz twitter [TARGET] --agent ID``."""

    # ``ctx`` is typer's vendored click Context, a private type: hence Any.
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        asks_help = bool(args) and args[0] in ctx.help_option_names
        if not asks_help and (not args or args[0] not in self.commands):
            args = ["run", *args]
        return super().parse_args(ctx, args)


twitter_app = typer.Typer(
    cls=_RunUnlessNamed,
    help="Run the agent's X account: `liz twitter [TARGET] --agent ID [--dry-run]` (the "
    "same as `liz twitter run ...`); `liz twitter outbox` lists the posts not confirmed on X.",
    rich_markup_mode=None,
)
app.add_typer(twitter_app, name="twitter")


@twitter_app.command("run")
def twitter(
    target: TargetArgument = None,
    agent: Annotated[str, typer.Option("--agent", help="The agent id that runs the account.")] = "",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Write and log posts and replies; post nothing.")
    ] = False,
    agents: AgentsOption = None,
    log_level: LogLevelOption = "info",
) -> None:
    """Run the agent's X account: scheduled posts and replies to mentions (TWITTER_* settings)."""
    import asyncio

    from liz.twitter.cli import run_twitter

    configure_logging(log_level)
    if not agent:
        fail("name the agent that runs the account with --agent ID")
    try:
        asyncio.run(run_twitter(_load(target, agents), agent, dry_run=dry_run))
    except LizError as exc:
        fail(exc.message)
    except KeyboardInterrupt:
        typer.echo("stopped")


@app.command()
def init(
    name: Annotated[str, typer.Argument(help="The folder to create (and the agent's name).")],
) -> None:
    """Create a project: app.py with one agent and one middleware, .env.example, a test."""
    from liz.scaffold import create_project

    try:
        created = create_project(Path(name))
    except LizError as exc:
        fail(exc.message)
    typer.echo(f"created {created}/ (app.py, test_app.py, .env.example, README.md)")
    typer.echo(f"next: cd {created} && liz serve app:app   (and: python -m pytest)")


def _register_sub_apps() -> None:
    from liz.agents_cli import agents_app
    from liz.facts.cli import facts_app
    from liz.twitter.outbox_cli import show_outbox

    app.add_typer(facts_app, name="facts")
    app.add_typer(agents_app, name="agents")
    twitter_app.command("outbox")(show_outbox)


_register_sub_apps()
