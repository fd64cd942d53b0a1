"""A griffe extension for the API reference: the Sphinx roles of liz's docstrings
(:class:`liz.app.App`, :mod:`liz.runtime.turn_trace`) become links to the object's entry when the
reference documents it, and code (`liz.runtime.turn_trace`) when it does not; never raw roles."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe

ROLE = re.compile(
    r":(?:py:)?(?:mod|class|func|meth|attr|data|exc|obj):`(?P<tilde>~?)(?P<name>[^`]+)`"
)
REFERENCE = Path(__file__).parent.parent / "reference"
DOCUMENTED = re.compile(r"^::: ([\w.]+)", re.MULTILINE)


class SphinxRoles(griffe.Extension):
    def __init__(self) -> None:
        super().__init__()
        self.documented = {
            name for page in REFERENCE.glob("*.md") for name in DOCUMENTED.findall(page.read_text())
        }

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(self._link, obj.docstring.value)

    def _link(self, match: re.Match[str]) -> str:
        name = match.group("name").strip().removesuffix("()")
        shown = name.rsplit(".", 1)[-1] if match.group("tilde") else name
        if name in self.documented:
            return f"[`{shown}`][{name}]"
        return f"`{shown}`"
