"""Prompt templates: Jinja2 files in ``liz/prompts/``, overridable from a folder.

A user overrides any prompt by putting a file of the same name in their own
folder (``LIZ_PROMPTS_DIR``, or the ``directory`` argument).

Prompts are built from tagged sections (``<CURRENT_USER_INPUT>...</CURRENT_USER_INPUT>``).
Every value a template prints is neutralised first, so text a user controls (a
message, a userId, a tweet, a remembered fact) cannot close the section it sits in
or open one of its own: the angle brackets of anything shaped like a tag become
``‹`` and ``›``. What :meth:`PromptTemplates.render` returns is a :class:`PromptText`,
printed as is when a template includes it, so sections rendered by our own
templates nest intact. Wrap trusted text of your own in :func:`trusted` to print it
unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PackageLoader, StrictUndefined

from liz.prompts.conversation import conversation
from liz.prompts.text import PromptText, neutralize, one_line, trusted

__all__ = ["PromptTemplates", "PromptText", "default_templates", "neutralize", "trusted"]

BUILTIN_DIR = Path(__file__).parent  # the .j2 files sit beside this module


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
            finalize=neutralize,
            # Templates are read once per process, not checked on disk at every render.
            auto_reload=False,
        )
        # `{{ memories | conversation }}`: the messages as prompt lines (liz.prompts.conversation).
        self.environment.filters["conversation"] = conversation
        # `{{ text | one_line }}`: user text whose line breaks cannot start a prompt line.
        self.environment.filters["one_line"] = one_line

    def render(self, name: str, /, **values: Any) -> PromptText:
        return PromptText(self.environment.get_template(name).render(**values).strip())

    def names(self) -> list[str]:
        return sorted(self.environment.list_templates(extensions=["j2"]))


default_templates = PromptTemplates()
