"""``liz init NAME``: a new project folder that serves and tests as generated."""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from liz.errors import UsageError

TEMPLATES = Path(__file__).parent / "project_template"
FILES = {
    "app.py": "app.py.j2",
    "test_app.py": "test_app.py.j2",
    ".env.example": "env.example.j2",
    "README.md": "README.md.j2",
    "pyproject.toml": "pyproject.toml.j2",
    ".gitignore": "gitignore.j2",
}


def create_project(folder: Path) -> Path:
    """Write the project's files into ``folder`` (new or empty); returns it."""
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
            name=name, agent_id=agent_id, liz_version=_liz_version()
        )
        (folder / target).write_text(text, encoding="utf-8")
    return folder


def _liz_version() -> str:
    try:
        return version("liz")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0.1"
