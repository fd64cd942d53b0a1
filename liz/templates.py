"""Prompt templates: Jinja2 files in ``liz/prompts/``, overridable from a folder.

A user overrides any prompt by putting a file of the same name in their own
folder (``LIZ_PROMPTS_DIR``, or the ``directory`` argument).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PackageLoader, StrictUndefined

BUILTIN_DIR = Path(__file__).parent / "prompts"


class PromptTemplates:
    """Renders prompt templates by name, the user's folder first."""

    def __init__(self, directory: str | Path | None = None) -> None:
        loaders: list[Any] = []
        if directory is not None:
            loaders.append(FileSystemLoader(str(directory)))
        loaders.append(PackageLoader("liz", "prompts"))
        self.environment = Environment(
            loader=ChoiceLoader(loaders),
            undefined=StrictUndefined,
            autoescape=False,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
        )

    def render(self, name: str, /, **values: Any) -> str:
        return self.environment.get_template(name).render(**values).strip()

    def names(self) -> list[str]:
        return sorted(self.environment.list_templates(extensions=["j2"]))


default_templates = PromptTemplates()
