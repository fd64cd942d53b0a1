"""``liz init NAME``: a new project folder that serves and tests as generated."""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from liz.cli.distribution import DISTRIBUTION
from liz.errors import UsageError

TEMPLATES = Path(__file__).parents[1] / "project_template"
FILES = {
    "app.py": "app.py.j2",
    "test_app.py": "test_app.py.j2",
    ".env.example": "env.example.j2",
    "README.md": "README.md.j2",
    "pyproject.toml": "pyproject.toml.j2",
    ".gitignore": "gitignore.j2",
}


def create_project(folder: Path, source: Path | None = None) -> Path:
    """Write the project's files into ``folder`` (new or empty); returns it.

    The project installs liz from the package index, or from ``source``, a checkout of
    liz (``liz init NAME --from PATH``).
    """
    if source is not None and not (source / "pyproject.toml").is_file():
        raise UsageError(
            f"--from {str(source)!r} is not a checkout of liz (it has no pyproject.toml); "
            "give the folder you cloned liz into"
        )
    if folder.exists() and any(folder.iterdir()):
        raise UsageError(f"{str(folder)!r} exists and is not empty; pick a new folder name")
    name = folder.resolve().name
    if not re.fullmatch(r"[\w][\w .-]*", name):
        raise UsageError(f"{name!r}: use letters, digits, spaces, '.', '-' or '_' in the name")
    agent_id = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not agent_id:
        raise UsageError(f"{name!r} has no letters or digits to make an agent id from")
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined, keep_trailing_newline=True
    )
    folder.mkdir(parents=True, exist_ok=True)
    for target, template in FILES.items():
        text = environment.get_template(template).render(
            name=name,
            agent_id=agent_id,
            distribution=DISTRIBUTION,
            requirement=_requirement(source),
            source=str(source.resolve()) if source is not None else None,
        )
        (folder / target).write_text(text, encoding="utf-8")
    return folder


def _requirement(source: Path | None) -> str:
    """liz as the project's dependency: by name and version, or a local checkout's path."""
    if source is not None:
        return f"{DISTRIBUTION} @ {source.resolve().as_uri()}"
    try:
        return f"{DISTRIBUTION}>={version(DISTRIBUTION)}"
    except PackageNotFoundError:  # run from a source tree that was never installed
        return f"{DISTRIBUTION}>=0.1"
