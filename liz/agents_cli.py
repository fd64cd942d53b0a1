"""``liz agents``: look at a folder of agents without serving it.

>>> liz agents check            # the bundled agents/
>>> liz agents check ./agents   # your own folder

``check`` loads every file as ``liz serve`` would and prints each agent (id, name,
format, the fields liz does not use) and each file that cannot be used, with why.
It exits 1 when any file is bad, so it can guard a commit or a deploy.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from liz.agent_files import AgentFile

agents_app = typer.Typer(
    help="Check agent folders: characters and Python agents.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

BAD_FILES_EXIT = 1
USAGE_EXIT = 2


@agents_app.command("check")
def check(
    directory: Annotated[
        Path | None,
        typer.Argument(help="Folder of agents (*.py, *.json); default: the bundled agents/."),
    ] = None,
) -> None:
    """Load every agent in DIRECTORY without serving; list each agent and each bad file."""
    from liz.agent_files import read_agents_folder
    from liz.errors import UsageError

    # Ignored fields are printed below; the log line serve writes would repeat them.
    logging.basicConfig(level=logging.ERROR)
    try:
        found = read_agents_folder(directory)
    except UsageError as exc:
        typer.secho(f"error: {exc.message}", err=True, fg=typer.colors.RED)
        raise typer.Exit(USAGE_EXIT) from exc
    typer.echo(f"agents in {found.folder}:")
    for item in found.loaded:
        typer.echo(_describe(item))
    for problem in found.problems:
        typer.secho(f"  bad  {problem}", fg=typer.colors.RED)
    summary = f"{len(found.loaded)} agent(s) ready, {len(found.problems)} file(s) refused"
    if not found.loaded and not found.problems:
        summary = "no agents: add a *.py or *.json agent to this folder"
    typer.echo(summary)
    if found.problems or not found.loaded:
        raise typer.Exit(BAD_FILES_EXIT)


def _describe(item: AgentFile) -> str:
    from liz.character_formats import FORMATS

    agent = item.agent
    form = FORMATS.get(item.format, "a Python module")
    lines = [
        f"  ok   {agent.agent_id}  name {agent.name!r}  format {item.format}  "
        f"from {item.path.name}  ({form})"
    ]
    if agent.character.system_was_composed:
        lines.append(
            "       system prompt: none in the file; composed from its name, bio and style"
        )
    if item.ignored:
        lines.append(f"       liz does not use: {', '.join(item.ignored)}")
    return "\n".join(lines)
