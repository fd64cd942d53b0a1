"""What several commands share: the app argument, the agents folder, logging, the agent to run."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from liz.app import App

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
ScriptedOption = Annotated[
    bool,
    typer.Option(
        "--scripted",
        help="Answer with liz's scripted model instead of an LLM: no key needed "
        "(LIZ_SCRIPTED_LLM=true).",
    ),
]


def configure_logging(level: str) -> None:
    """Log at ``level`` to stderr, as ``LIZ_LOG_FORMAT`` says (from the environment or
    ``.env``); a bad setting ends the command in one line, before anything starts."""
    from liz.cli.failing import reported
    from liz.config import Settings
    from liz.config.loading import load_settings
    from liz.observe.logs import log_formatter

    with reported():
        settings = load_settings(Settings)
    handler = logging.StreamHandler()
    handler.setFormatter(log_formatter(settings.liz_log_format))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    # The HTTP clients under the openai SDK log every request at INFO.
    for noisy in ("httpx", "httpx2", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))


def load(target: str | None, agents: Path | None) -> App:
    from liz.cli.app_target import load_app

    return load_app(target, agents_dir=agents)


def pick_agent(agent_ids: Iterable[str], chosen: str, *, doing: str) -> str:
    """``chosen``, or the only agent there is; with several, a UsageError naming them."""
    from liz.errors import UsageError

    ids = sorted(agent_ids)
    if chosen:
        return chosen
    if len(ids) == 1:
        return ids[0]
    raise UsageError(
        f"name the agent {doing} with --agent ID; the agents are: {', '.join(ids) or 'none'}"
    )
