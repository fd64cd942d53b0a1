"""Reading a whole chat completion's JSON: the first choice's text and calls, and the usage.

Read here, not by the SDK: its reading builds a pydantic object for every part of an
answer, and a turn with tools reads two answers or more. What an answer leaves out is
read as absent (no text, no calls), as the SDK did; an answer that is not a JSON
object is an :class:`LLMOutputError` naming what came.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_core import from_json

from liz.llm.errors import LLMOutputError


@dataclass(frozen=True)
class RequestedCall:
    """A call the model asked for; ``arguments`` is the JSON text it wrote."""

    id: str
    name: str
    arguments: str

    def to_message(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class ChatAnswer:
    """A whole answer: the first choice's text, refusal and calls; what the call's record keeps."""

    text: str = ""
    refusal: str | None = None
    calls: list[RequestedCall] = field(default_factory=list)
    id: str | None = None
    model: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    usage: dict[str, Any] | None = None


def read_chat_answer(content: bytes, *, model: str) -> ChatAnswer:
    """The answer in ``content`` (the response body) of a request to ``model``."""
    try:
        answer = from_json(content)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        shown = content[:300].decode("utf-8", "replace")
        raise LLMOutputError(
            f"the model {model} answered with something that is not a JSON object: {shown!r}; "
            "check that OPENAI_BASE_URL is an OpenAI-compatible endpoint",
            output=shown,
        )
    choices = [c for c in _list(answer.get("choices")) if isinstance(c, dict)]
    message = _dict(choices[0].get("message")) if choices else {}
    usage = answer.get("usage")
    return ChatAnswer(
        text=_text(message.get("content")),
        refusal=_text(message.get("refusal")) or None,
        calls=[_call(call) for call in _list(message.get("tool_calls")) if _is_function(call)],
        id=_text(answer.get("id")) or None,
        model=_text(answer.get("model")) or None,
        finish_reasons=[c["finish_reason"] for c in choices if _text(c.get("finish_reason"))],
        usage=usage if isinstance(usage, dict) else None,
    )


def _is_function(call: Any) -> bool:
    return isinstance(call, dict) and call.get("type", "function") == "function"


def _call(call: dict[str, Any]) -> RequestedCall:
    function = _dict(call.get("function"))
    return RequestedCall(
        _text(call.get("id")), _text(function.get("name")), _text(function.get("arguments"))
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
