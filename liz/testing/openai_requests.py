"""What ScriptedOpenAI records of each request, and what a test scripts as its answer."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request


@dataclass(frozen=True)
class ScriptedError:
    """An answer that fails its request with ``status`` and OpenAI's error body."""

    status: int
    message: str = "scripted failure"
    retry_after: float | None = None


@dataclass(frozen=True)
class ScriptedCall:
    """One call the scripted model makes: a tool name and its arguments (a dict, or any
    text, to try arguments that are not JSON)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)

    @property
    def arguments_text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class ToolCalls:
    """An answer that calls tools (all at once, in parallel), with optional text before."""

    calls: tuple[ScriptedCall, ...]
    text: str = ""


def call_tool(
    name: str, arguments: dict[str, Any] | str | None = None, *, text: str = ""
) -> ToolCalls:
    """The scripted model calls the tool ``name`` with ``arguments``.

    >>> call_tool("weather", {"city": "Paris"})  # for ScriptedOpenAI.reply, before a text
    ToolCalls(calls=(ScriptedCall(name='weather', arguments={'city': 'Paris'}),), text='')
    """
    return ToolCalls((ScriptedCall(name, {} if arguments is None else arguments),), text)


def call_tools(*calls: tuple[str, dict[str, Any] | str], text: str = "") -> ToolCalls:
    """The scripted model calls several tools in one answer: ``call_tools(("a", {}), ...)``."""
    return ToolCalls(tuple(ScriptedCall(name, arguments) for name, arguments in calls), text)


Answer = str | dict[str, Any] | list[Any] | BaseModel | ScriptedError | ToolCalls
Responder = Callable[["RecordedRequest"], Answer | Awaitable[Answer]]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    body: dict[str, Any]
    headers: dict[str, str]

    @classmethod
    def of(cls, request: Request, body: dict[str, Any]) -> RecordedRequest:
        """The record of a Starlette ``request`` whose JSON body was ``body``."""
        return cls(request.method, request.url.path, body, dict(request.headers))

    @property
    def model(self) -> str | None:
        model = self.body.get("model")
        return model if isinstance(model, str) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages")
        if not isinstance(messages, list):
            return []
        return [message for message in messages if isinstance(message, dict)]

    @property
    def prompt(self) -> str:
        """The text of every message, joined by newlines (for ``in`` checks)."""
        return "\n".join(_text_of(message.get("content")) for message in self.messages)

    @property
    def image_urls(self) -> list[str]:
        """URLs of every ``image_url`` content part, in order."""
        return [
            part["image_url"]["url"]
            for message in self.messages
            if isinstance(message.get("content"), list)
            for part in message["content"]
            if isinstance(part, dict) and part.get("type") == "image_url"
        ]

    @property
    def response_format(self) -> dict[str, Any] | None:
        value = self.body.get("response_format")
        return value if isinstance(value, dict) else None

    @property
    def schema_name(self) -> str | None:
        """The json_schema name asked for, or None for other kinds of answer."""
        spec = (self.response_format or {}).get("json_schema")
        return spec.get("name") if isinstance(spec, dict) else None

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools the request offered the model."""
        tools = self.body.get("tools")
        return [
            t["function"]["name"]
            for t in tools or []
            if isinstance(t, dict) and isinstance(t.get("function"), dict)
        ]

    @property
    def tool_results(self) -> list[Any]:
        """The content of every ``tool`` message (parsed JSON), in order."""
        results = []
        for message in self.messages:
            if message.get("role") == "tool":
                try:
                    results.append(json.loads(message.get("content") or "null"))
                except ValueError:
                    results.append(message.get("content"))
        return results

    @property
    def inputs(self) -> list[str]:
        """The texts of an embeddings request."""
        value = self.body.get("input")
        return [value] if isinstance(value, str) else list(value or [])


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        ).strip()
    return ""
