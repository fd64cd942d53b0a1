"""``liz telegram run --agent ID``: answer an agent's Telegram chats (TELEGRAM_* settings)."""

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

telegram_app = typer.Typer(
    help="Answer an agent's Telegram chats: `liz telegram run [TARGET] --agent ID`.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@telegram_app.command("run")
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
    """Poll Telegram (getUpdates) and answer as the agent: private chats, and group
    messages that mention the bot, reply to it or name it in a command."""
    import asyncio

    from liz.cli.scripted import scripted_llm_if_asked
    from liz.telegram.run import run_telegram

    configure_logging(log_level)
    with reported(), scripted_llm_if_asked(scripted):
        app = load(target, agents)
        chosen = pick_agent(app.agents, agent, doing="that answers on Telegram")
        try:
            asyncio.run(run_telegram(app, chosen))
        except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C or SIGTERM
            typer.echo("stopped")
