"""``liz discord run --agent ID``: answer an agent's Discord conversations (DISCORD_* settings)."""

from __future__ import annotations

from typing import Annotated

import typer

from liz.cli.failing import reported
from liz.cli.options import (
    AgentsOption,
    LogLevelOption,
    ScriptedOption,
    TargetArgument,
    configure_logging,
    load,
    pick_agent,
)

discord_app = typer.Typer(
    help="Answer an agent's Discord conversations: `liz discord run [TARGET] --agent ID`.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@discord_app.command("run")
def run(
    target: TargetArgument = None,
    agent: Annotated[
        str,
        typer.Option("--agent", help="The agent id that answers; default: the only one."),
    ] = "",
    agents: AgentsOption = None,
    scripted: ScriptedOption = False,
    log_level: LogLevelOption = "info",
) -> None:
    """Connect to Discord's gateway and answer as the agent: direct messages, and server
    messages that mention the bot or reply to it."""
    import asyncio

    from liz.cli.scripted import scripted_llm_if_asked
    from liz.discord.run import run_discord

    configure_logging(log_level)
    with reported(), scripted_llm_if_asked(scripted):
        app = load(target, agents)
        chosen = pick_agent(app.agents, agent, doing="that answers on Discord")
        try:
            asyncio.run(run_discord(app, chosen))
        except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C or SIGTERM
            typer.echo("stopped")
