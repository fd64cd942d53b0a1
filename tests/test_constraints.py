"""constraints.txt, the versions `make install` and CI install, pins every dependency
pyproject.toml names (a new one without `make upgrade` fails here) and never the project."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match[0]).lower()


def test_every_dependency_is_pinned_and_the_project_is_not() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pinned = {
        _name(line)
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line and not line.startswith((" ", "#"))
    }
    extras = project["optional-dependencies"].values()
    wanted = [*project["dependencies"], *(r for extra in extras for r in extra)]
    named = {_name(requirement) for requirement in wanted} - {_name(project["name"])}
    missing = sorted(named - pinned)
    assert not missing, f"run `make upgrade`: constraints.txt does not pin {', '.join(missing)}"
    assert _name(project["name"]) not in pinned, "constraints.txt must not pin the project itself"
