"""``liz telegram run`` and ``liz discord run``: answer an agent's chats on a platform.

Both commands are one shape: load the app, pick the agent, run the platform's bot until
Ctrl-C or SIGTERM. Each platform's runner is imported only when its command runs, so a
missing extra is one clear line, not an import error at start.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from importlib import import_module
from typing import TYPE_CHECKING, Annotated, Any

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

if TYPE_CHECKING:
    from liz.app import App

Runner = Callable[["App", str], Coroutine[Any, Any, None]]


def chat_bot_app(platform: str, chats: str, runner: str, what_it_answers: str) -> typer.Typer:
    """The ``liz <platform>`` command group; ``runner`` is ``MODULE:FUNCTION``."""
    group = typer.Typer(
        help=f"Answer an agent's {platform} {chats}: "
        f"`liz {platform.lower()} run [TARGET] --agent ID`.",
        no_args_is_help=True,
        rich_markup_mode=None,
    )

    @group.command("run", help=what_it_answers)
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
        import asyncio

        from liz.cli.scripted import scripted_llm_if_asked

        module, function = runner.split(":")
        run_bot: Runner = getattr(import_module(module), function)
        configure_logging(log_level)
        with reported(), scripted_llm_if_asked(scripted):
            app = load(target, agents)
            chosen = pick_agent(app.agents, agent, doing=f"that answers on {platform}")
            try:
                asyncio.run(run_bot(app, chosen))
            except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C or SIGTERM
                typer.echo("stopped")

    return group


telegram_app = chat_bot_app(
    "Telegram",
    "chats",
    "liz.telegram.run:run_telegram",
    "Poll Telegram (getUpdates) and answer as the agent: private chats, and group "
    "messages that mention the bot, reply to it or name it in a command.",
)
discord_app = chat_bot_app(
    "Discord",
    "conversations",
    "liz.discord.run:run_discord",
    "Connect to Discord's gateway and answer as the agent: direct messages, and server "
    "messages that mention the bot or reply to it.",
)
