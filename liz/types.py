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
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, WithJsonSchema
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema

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


class Body(BaseModel):
    """An HTTP body liz writes: camelCase on the wire, read from the objects it describes.

    The body is ``model_dump(mode="json", by_alias=True)``; its schema in ``/openapi.json``
    is generated from the model, field descriptions included (:mod:`liz.http.bodies`).
    Fields are read by their Python names only: reading a dataclass's attributes is then
    one lookup a field, not a failed camelCase one first.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=False,
        from_attributes=True,
    )


def _is_none(value: object) -> bool:
    return value is None


def omitted_when_none(description: str) -> Any:
    """A field left out of the body, rather than sent as null, when it has no value."""
    return Field(None, description=description, exclude_if=_is_none)


# A time as liz has always written it (``datetime.isoformat``: ``+00:00``, not ``Z``).
Stamp = Annotated[
    datetime,
    PlainSerializer(datetime.isoformat, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]


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
    """One message to an agent, as Liz's `InputObject`. Fields not listed here are kept."""

    # Set by liz, never over HTTP: not in the API document.
    source: SkipJsonSchema[InputSource] = InputSource.NETWORK
    user_id: str = Field(description="Who is talking; the conversation and facts are kept per user")
    agent_id: str = Field(description="The agent to talk to (`GET /agents` lists them)")
    room_id: str | None = Field(
        None, description="The conversation's room; default one room per agent+user"
    )
    type: InputType = Field(InputType.TEXT, description="`text_and_image` when imageUrls are sent")
    text: str | None = Field(None, description="The message")
    image_urls: list[str] = Field(
        default_factory=list, description="Image URLs, with type `text_and_image`"
    )
    # Internal sources (the bot loop, the CLI) may name the route to take; the
    # router ignores this field for every other source.
    route: SkipJsonSchema[str | None] = None

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


class PendingApproval(Body):
    """A call waiting for the user's approval: `POST /agent/approvals/{id}` decides it."""

    id: str = Field(description="The approval's id")
    tool: str = Field(description="The tool that would run")
    arguments: Any = Field(description="The arguments as the model wrote them")
    text: str = Field(description="The model's text before the call")
    expires_at: Stamp = Field(description="After this, the approval can no longer be decided")


class ApprovalDecided(Body):
    """The decision a reply to `POST /agent/approvals/{id}` carried out."""

    id: str = Field(description="The approval's id")
    approved: bool = Field(description="true: the call ran; false: it was refused")


class AgentReply(CamelModel):
    """The agent's reply: what `POST /agent/input` answers (Liz's response body)."""

    text: str = Field(description="The reply")
    route: str | None = Field(description="The route that wrote the reply")
    agent_id: str = Field(description="The agent that answered")
    user_id: str = Field(description="The user it answered")
    room_id: str = Field(description="The room of the conversation")
    # The turn's trace (liz.http.bodies.Trace), added by the HTTP layer when asked for.
    trace: Annotated[Any, WithJsonSchema({"allOf": [{"$ref": "#/components/schemas/Trace"}]})] = (
        omitted_when_none("Only with `?trace=1`: what the turn did")
    )
    pending_approval: PendingApproval | None = omitted_when_none(
        "A tool call waits for the user's approval"
    )
    approval: ApprovalDecided | None = omitted_when_none(
        "Only in the answer to `POST /agent/approvals/{id}`: the decision carried out"
    )


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
