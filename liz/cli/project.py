"""``liz init NAME``: a new project folder."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from liz.cli.failing import reported


def init(
    name: Annotated[str, typer.Argument(help="The folder to create (and the agent's name).")],
) -> None:
    """Create a project: app.py with one agent and one middleware, a test, pyproject.toml."""
    from liz.scaffold import FILES, create_project

    with reported():
        created = create_project(Path(name))
    typer.echo(f"created {created}/ ({', '.join(FILES)})")
    folder = shlex.quote(str(created))
    typer.echo(
        f"next: cd {folder} && pip install -e . && liz serve app:app   (and: python -m pytest)"
    )
