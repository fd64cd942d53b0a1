"""``liz agents``: look at a folder of agents without serving it.

For example::

    $ liz agents check            # the bundled agents/
    $ liz agents check ./agents   # your own folder
    $ liz agents check app:app    # the agents of your app (MODULE:ATTRIBUTE or a .py file)

``check`` loads every file as ``liz serve`` would and prints each agent (id, name,
format, the fields liz does not use) and each file that cannot be used, with why.
It exits 1 when any file is bad, so it can guard a commit or a deploy.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated

import typer

from liz.cli.failing import fail, reported

if TYPE_CHECKING:
    from liz.agent import BaseAgent
    from liz.character.agent_files import AgentFile

agents_app = typer.Typer(
    help="Check agent folders: characters and Python agents.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

BAD_FILES_EXIT = 1


@agents_app.command("check")
def check(
    target: Annotated[
        str | None,
        typer.Argument(
            help="A folder of agents (*.py, *.json), or your app as MODULE:ATTRIBUTE or a .py "
            "file; default: the bundled agents/.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Load every agent of TARGET without serving; list each agent and each bad file."""
    # Ignored fields are printed below; the log line serve writes would repeat them.
    logging.basicConfig(level=logging.ERROR)
    with reported():
        if target is not None and (":" in target or target.endswith(".py")):
            _check_app(target)
            return
        from liz.character.agent_files import read_agents_folder

        found = read_agents_folder(target)
    typer.echo(f"agents in {found.folder}:")
    for item in found.loaded:
        typer.echo(_describe(item))
    servers = [f"{item.path.name}: {p}" for item in found.loaded for p in _mcp_problems(item.agent)]
    problems = [*found.problems, *servers]
    for problem in problems:
        typer.secho(f"  bad  {problem}", fg=typer.colors.RED)
    summary = f"{len(found.loaded)} agent(s) ready, {len(found.problems)} file(s) refused"
    if servers:
        summary += f", {len(servers)} MCP server problem(s)"
    if not found.loaded and not found.problems:
        summary = "no agents: add a *.py or *.json agent to this folder"
    typer.echo(summary)
    if problems or not found.loaded:
        raise typer.Exit(BAD_FILES_EXIT)


def _mcp_problems(agent: BaseAgent) -> list[str]:
    """What would stop the agent's MCP servers from starting: unset ${VAR}s, missing commands."""
    return [p for server in agent.mcp_servers for p in server.connection.problems(server.name)]


def _check_app(target: str) -> None:
    """An app's agents are built by its own code: importing it is the check."""
    from liz.cli.app_target import load_app

    app = load_app(target)
    typer.echo(f"agents of {target}:")
    problems = []
    for agent in app.agents.values():
        routes = ", ".join(route.name for route in agent.get_routes())
        typer.echo(f"  ok   {agent.agent_id}  name {agent.name!r}  routes {routes}")
        problems += [f"{agent.agent_id}: {p}" for p in _mcp_problems(agent)]
    if not app.agents:
        fail("no agents: add one with app.add_agent(...)", BAD_FILES_EXIT)
    for problem in problems:
        typer.secho(f"  bad  {problem}", fg=typer.colors.RED)
    if problems:
        typer.echo(f"{len(app.agents)} agent(s), {len(problems)} problem(s)")
        raise typer.Exit(BAD_FILES_EXIT)
    typer.echo(f"{len(app.agents)} agent(s) ready")


def _describe(item: AgentFile) -> str:
    from liz.character.formats import FORMATS, describe_ignored

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
        lines.append(f"       liz does not use: {describe_ignored(item.ignored)}")
    return "\n".join(lines)
