"""The framework's vocabulary: the clock and the data that flows. It imports nothing of liz.

The clock is where every part reads the time and waits. The data are pydantic models
whose field names follow Liz's JSON (camelCase) on the wire and are snake_case in
Python; both spellings are accepted on input. The callable types (middleware, route
handlers) live beside the request they take, in :mod:`liz.pipeline`.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

Next = Callable[[], Awaitable[None]]
TokenSink = Callable[[str], Awaitable[None]]
EventSink = Callable[[str, dict[str, Any]], Awaitable[None]]  # a named SSE event and its data


class Clock(Protocol):
    """Where liz reads the time and how it waits; tests pass a ``liz.testing.ManualClock``."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``; cancellable."""
        ...


class SystemClock:
    """The wall clock and ``asyncio.sleep``."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class CamelModel(BaseModel):
    """A model that reads and writes Liz's camelCase JSON."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class InputSource(StrEnum):
    """Where an input came from. Only internal sources may reach internal routes."""

    NETWORK = "NETWORK"  # HTTP: anyone on the network
    TWITTER = "TWITTER"  # a mention or reply on X, written by anyone
    TELEGRAM = "TELEGRAM"  # a Telegram chat message, written by anyone
    DISCORD = "DISCORD"  # a Discord message, written by anyone
    CLI = "CLI"  # the operator at `liz chat` in-process
    INTERNAL = "INTERNAL"  # the framework itself (the bot's scheduled posts)

    @property
    def is_internal(self) -> bool:
        return self in (InputSource.CLI, InputSource.INTERNAL)


class InputType(StrEnum):
    TEXT = "text"
    TEXT_AND_IMAGE = "text_and_image"


class InputObject(CamelModel):
    """One message to an agent, as Liz's `InputObject`. Extra fields are kept."""

    source: InputSource = InputSource.NETWORK
    user_id: str
    agent_id: str
    room_id: str | None = None
    type: InputType = InputType.TEXT
    text: str | None = None
    image_urls: list[str] = Field(default_factory=list)
    # Internal sources (the bot loop, the CLI) may name the route to take; the
    # router ignores this field for every other source.
    route: str | None = None

    @property
    def room(self) -> str:
        """The room this input belongs to: its own, or one per (agent, user)."""
        return self.room_id or f"{self.agent_id}:{self.user_id}"


Generator = Literal["llm", "external"]


class Memory(CamelModel):
    """One row of Liz's `Memory` table: a message said by a user or by the agent."""

    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    user_id: str
    agent_id: str
    room_id: str
    content: dict[str, Any]
    type: str
    generator: Generator
    created_at: datetime

    @property
    def text(self) -> str:
        value = self.content.get("text")
        return value if isinstance(value, str) else json.dumps(self.content)


class RouteChoice(BaseModel):
    """The router's answer, as structured output from the small model."""

    route: str = Field(description="The name of the chosen route, exactly as listed")
    confidence: float = Field(ge=0, le=1, description="How sure you are, from 0 to 1")
    reasoning: str = Field(description="One sentence on why this route fits")


class AgentReply(CamelModel):
    """What `POST /agent/input` answers: Liz's response body."""

    text: str
    route: str | None
    agent_id: str
    user_id: str
    room_id: str


# A tool as the call loop sees it (liz.tools declares them from functions).
ToolRun = Callable[[Any, dict[str, Any]], Awaitable[Any]]  # (the ToolContext or None, arguments)


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
