"""``liz init NAME``: a new project folder."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from liz.cli.failing import reported


def init(
    name: Annotated[str, typer.Argument(help="The folder to create (and the agent's name).")],
    source: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Install liz from this checkout of it; default: from the package index.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Create a project: app.py with one agent and one middleware, a test, pyproject.toml."""
    from liz.cli.scaffold import FILES, create_project

    with reported():
        created = create_project(Path(name), source)
    typer.echo(f"created {created}/ ({', '.join(FILES)})")
    folder = shlex.quote(str(created))
    typer.echo(
        f"next: cd {folder} && python -m venv .venv && . .venv/bin/activate && "
        'pip install -e ".[test]" && liz serve app:app --scripted   (and: python -m pytest)'
    )
    typer.echo(
        f"liz comes from {source.resolve() if source else 'the package index, as liz-agents'}"
    )
