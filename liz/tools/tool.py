"""A tool as the call loop sees it: a name, a description, a JSON schema and a way to run it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from liz.tools.context import ToolContext

ToolRun = Callable[["ToolContext | None", dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Tool:
    """One function the model may call. ``run`` takes the turn and the model's arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
    run: ToolRun
    requires_approval: bool = False

    def spec(self) -> dict[str, Any]:
        """The tool as the chat completions API's ``tools`` list takes it."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }
