"""``liz twitter``: run an agent's X account; ``liz twitter outbox``: what is held back."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperGroup

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
from liz.cli.twitter_outbox import show_outbox


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
    help="Run the agent's X account: `liz twitter [TARGET] [--agent ID] [--dry-run]` (the "
    "same as `liz twitter run ...`); `liz twitter outbox` lists the posts not confirmed on X.",
    rich_markup_mode=None,
)
twitter_app.command("outbox")(show_outbox)


@twitter_app.command("run")
def twitter(
    target: TargetArgument = None,
    agent: Annotated[
        str,
        typer.Option("--agent", help="The agent id that runs the account; default: the only one."),
    ] = "",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Write and log posts and replies; post nothing.")
    ] = False,
    agents: AgentsOption = None,
    scripted: ScriptedOption = False,
    log_level: LogLevelOption = "info",
) -> None:
    """Run the agent's X account: scheduled posts and replies to mentions (TWITTER_* settings)."""
    import asyncio

    from liz.cli.scripted import scripted_llm_if_asked
    from liz.cli.twitter_run import run_twitter

    configure_logging(log_level)
    with reported(), scripted_llm_if_asked(scripted):
        app = load(target, agents)
        chosen = pick_agent(app.agents, agent, doing="that runs the account")
        try:
            asyncio.run(run_twitter(app, chosen, dry_run=dry_run))
        except KeyboardInterrupt:
            typer.echo("stopped")
