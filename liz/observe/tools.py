"""A tool call, observed: a span ``execute_tool {name}`` as the GenAI conventions name it."""

from __future__ import annotations

from contextlib import AbstractContextManager

from opentelemetry.trace import Span, Status, StatusCode

from liz.observe.tracing import span, tracing_on


def tool_span(name: str, call_id: str) -> AbstractContextManager[Span | None]:
    if not tracing_on():
        return span(name)
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
    }
    return span(f"execute_tool {name}", attributes)


def tool_outcome(current: Span | None, ok: bool, error: str | None) -> None:
    """Mark a failed call on its span (its error text is the tool's, never the user's)."""
    if current is None:
        return
    current.set_attribute("liz.tool.ok", ok)
    if not ok:
        current.set_attribute("error.type", "tool_error")
        current.set_status(Status(StatusCode.ERROR, error or "the tool call failed"))
