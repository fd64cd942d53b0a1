"""A character file's ``mcpServers``: the shape Claude Desktop, Cursor and VS Code use.

``{"NAME": {"command": ..., "args": [...], "env": {...}}}`` starts a server over stdio;
``{"NAME": {"url": ..., "headers": {...}}}`` reaches one over Streamable HTTP. Values
may name environment variables as ``${NAME}``; they are read when the server starts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator

from liz.errors import UsageError

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class MCPServerConfig(BaseModel):
    """One entry of ``mcpServers``: a ``command`` or a ``url``, never both."""

    model_config = ConfigDict(extra="ignore")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_way_in(self) -> MCPServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                'give either "command" (a server started over stdio) or "url" '
                "(Streamable HTTP), not both or neither"
            )
        return self


def interpolate(text: str, where: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with each ``${NAME}`` replaced by the environment variable's value."""
    env = os.environ if environ is None else environ

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise UsageError(f"{where} uses ${{{name}}}, but the variable {name} is not set")
        return env[name]

    return _VARIABLE.sub(value, text)


def variables(text: str) -> list[str]:
    """The names ``text`` refers to as ``${NAME}``."""
    return _VARIABLE.findall(text)
