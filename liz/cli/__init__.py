"""The ``liz`` command: serve, chat, twitter, init, db, facts, agents, scripted-llm.

One module per command group. Each command imports what it needs when it runs, so
``liz --help`` and shell completion stay fast. A command fails one way
(:func:`liz.cli.failing.fail`) and opens the database one way
(:func:`liz.cli.session.with_session`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from liz.cli.agents import agents_app
from liz.cli.chat import chat
from liz.cli.chat_bots import discord_app, telegram_app
from liz.cli.db import db_app
from liz.cli.facts import facts_app
from liz.cli.project import init
from liz.cli.scripted import scripted_llm
from liz.cli.serve import serve
from liz.cli.twitter import twitter_app
from liz.cli.usage import show_usage

# Plain help (no rich rendering): `liz --help` and shell completion start in a blink.
app = typer.Typer(
    help="Run liz agents: an HTTP server, a chat prompt, the Twitter loop.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from liz.cli.distribution import installed_version

        typer.echo(f"liz {installed_version() or '(not installed)'}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """Run liz agents: an HTTP server, a chat prompt, the Twitter loop."""


app.command()(serve)
app.command()(chat)
app.command()(init)
app.command("scripted-llm")(scripted_llm)
app.command("usage")(show_usage)
app.add_typer(db_app, name="db")
app.add_typer(twitter_app, name="twitter")
app.add_typer(telegram_app, name="telegram")
app.add_typer(discord_app, name="discord")
app.add_typer(facts_app, name="facts")
app.add_typer(agents_app, name="agents")
